//! Text that fits: display widths, control characters made harmless, truncation with `…`.
//!
//! Everything a backend reports (job names, reasons, log lines) can hold escape sequences;
//! drawn raw they would reach the terminal. [`clean`] replaces every control character before
//! anything is measured or drawn.

use std::borrow::Cow;

use ratatui::text::Span;

/// Display width of one character (0 for combining marks, 2 for wide CJK and emoji).
pub fn char_width(c: char) -> usize {
    if c.is_ascii() {
        return usize::from(!c.is_ascii_control());
    }
    let mut buf = [0u8; 4];
    // `Span::width` measures with unicode-width without allocating for a borrowed str.
    Span::raw(&*c.encode_utf8(&mut buf)).width()
}

/// Display width of a string.
pub fn width(s: &str) -> usize {
    // Most cells are printable ASCII, one column a byte: told in one pass over the bytes.
    if s.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        s.len()
    } else if s.is_ascii() {
        s.bytes().filter(|b| !b.is_ascii_control()).count()
    } else {
        s.chars().map(char_width).sum()
    }
}

/// `s` with tabs as one space and every other control or bidi character as `�`, so nothing
/// a backend sends can move the cursor, change the terminal's state or reorder what is shown
/// (see [`crate::safe_text`]).
pub fn clean(s: &str) -> Cow<'_, str> {
    crate::safe_text::printable(s)
}

/// `s` without ANSI escape sequences (colours and cursor moves in program output): CSI
/// (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC \\`) and two-character escapes are dropped.
/// What remains still goes through [`clean`] when drawn.
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    Cow::Owned(out)
}

/// `s` cleaned and cut to at most `max` columns; a cut string ends with `…`.
pub fn truncate(s: &str, max: usize) -> Cow<'_, str> {
    let s = clean(s);
    if width(&s) <= max {
        return s;
    }
    if max == 0 {
        return Cow::Borrowed("");
    }
    let mut out = String::with_capacity(max + 3);
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w > max - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    Cow::Owned(out)
}

/// `s` truncated to `width` columns and padded with spaces to exactly `width`, left or
/// right aligned.
pub fn fit(s: &str, cols: usize, right: bool) -> String {
    let t = truncate(s, cols);
    let pad = cols.saturating_sub(width(&t));
    if right { format!("{}{t}", " ".repeat(pad)) } else { format!("{t}{}", " ".repeat(pad)) }
}

/// The compact duration of the tables (`7m05s`); defined with the columns they fill.
pub use crate::columns::format::duration;

/// An age for banners: coarse on purpose (whole minutes past one minute), so that a
/// screen showing it only changes once a minute.
pub fn age(secs: i64) -> String {
    let secs = secs.max(0) as u64;
    if secs < 60 {
        "<1m".to_string()
    } else if secs < 3_600 {
        format!("{}m", secs / 60)
    } else if secs < 86_400 {
        format!("{}h{:02}m", secs / 3_600, secs / 60 % 60)
    } else {
        format!("{}d{:02}h", secs / 86_400, secs / 3_600 % 24)
    }
}

/// Thousands separated with `,` (`100,000`).
/// Percentages (0–100) as one block character each, oldest first; the newest `width` are
/// kept when there are more.
pub fn sparkline(values: &[f32], width: usize) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let skip = values.len().saturating_sub(width);
    values[skip..]
        .iter()
        .map(|v| {
            let v = if v.is_finite() { v.clamp(0.0, 100.0) } else { 0.0 };
            BLOCKS[((v / 100.0) * 7.0).round() as usize]
        })
        .collect()
}

pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparklines_scale_percentages_and_keep_the_newest() {
        assert_eq!(sparkline(&[0.0, 50.0, 100.0], 10), "▁▅█");
        assert_eq!(sparkline(&[0.0, 50.0, 100.0], 2), "▅█");
        // Out of range and NaN figures stay on the scale.
        assert_eq!(sparkline(&[-5.0, 250.0, f32::NAN], 3), "▁█▁");
        assert_eq!(sparkline(&[], 4), "");
    }

    #[test]
    fn truncation_keeps_width() {
        assert_eq!(truncate("hello", 5), "hello");
        assert_eq!(truncate("hello!", 5), "hell…");
        assert_eq!(truncate("hello", 1), "…");
        assert_eq!(truncate("hello", 0), "");
        assert_eq!(truncate("日本語テキスト", 5), "日本…");
        assert_eq!(width(&truncate("日本語テキスト", 6)), 5);
        assert_eq!(fit("ab", 4, true), "  ab");
        assert_eq!(fit("abcdef", 4, false), "abc…");
    }

    #[test]
    fn widths_count_columns_not_bytes() {
        assert_eq!(width("gpu00042"), 8);
        assert_eq!(width("a\tb\u{7f}"), 2, "controls take no column");
        assert_eq!(width("h100×8"), 6);
        assert_eq!(width("日本"), 4);
        assert_eq!(width(""), 0);
    }

    #[test]
    fn control_characters_are_neutralised() {
        assert_eq!(clean("a\u{1b}[2Jb\tc"), "a\u{FFFD}[2Jb c");
        assert_eq!(truncate("x\ny", 10), "x\u{FFFD}y");
        assert!(matches!(clean("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn ansi_sequences_are_stripped() {
        assert_eq!(strip_ansi("\u{1b}[32mok\u{1b}[0m done"), "ok done");
        assert_eq!(strip_ansi("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(strip_ansi("a\u{1b}]8;;http://x\u{1b}\\link"), "alink");
        assert_eq!(strip_ansi("plain"), "plain");
        assert_eq!(strip_ansi("cut\u{1b}["), "cut");
    }

    #[test]
    fn durations_and_numbers() {
        assert_eq!(duration(42), "42s");
        assert_eq!(duration(425), "7m05s");
        assert_eq!(duration(5 * 3600 + 7 * 60), "5h07m");
        assert_eq!(duration(3 * 86_400 + 4 * 3600), "3d04h");
        assert_eq!(age(59), "<1m");
        assert_eq!(age(61), "1m");
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
