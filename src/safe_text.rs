//! Text that reaches terminals, and text users type: one rule for both.
//!
//! Anything a backend returns (job names, reasons, release strings, error messages) may
//! hold control characters (an escape sequence can retitle a terminal or move its cursor)
//! or Unicode bidirectional controls (U+202A–202E, U+2066–2069: `gpu-01\u{202E}niard` shows
//! as something it is not, the "Trojan Source" trick). [`printable`] neutralises both before
//! the CLI or the cockpit shows a string. What users type and flightdeck stores where others
//! will read it (a drain reason lands in every admin's `sinfo -R`) is refused instead, with
//! [`check_typed`] naming the character.

use std::borrow::Cow;

/// A character that must not reach a terminal as is: a control character (C0, DEL and C1,
/// U+0080–U+009F: `char::is_control` is Unicode's `Cc`, all three) or a bidi control.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// Unicode's explicit directional formatting characters, and the invisible marks that steer
/// them.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// `s` safe to print: tabs become one space, every other unsafe character `�` (U+FFFD).
/// Borrowed when there is nothing to change, which is almost always.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| {
                if c == '\t' {
                    ' '
                } else if is_unsafe(c) {
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect(),
    )
}

/// A one-line value a user typed (`what`: `drain reason`), refused when it holds a control
/// or bidi character, with the character and its position.
pub fn check_typed(what: &str, value: &str) -> Result<(), String> {
    match value.chars().enumerate().find(|(_, c)| is_unsafe(*c)) {
        None => Ok(()),
        Some((_, '\n' | '\r')) => Err(format!("the {what} must be one line")),
        Some((at, c)) => Err(format!(
            "the {what} contains {} (U+{:04X}) at character {}; type plain text",
            if is_bidi_control(c) { "a bidirectional control" } else { "a control character" },
            c as u32,
            at + 1
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_bidi_controls_never_print() {
        assert!(matches!(printable("train-llm 4×a100"), Cow::Borrowed(_)));
        assert_eq!(printable("a\u{1b}]0;pwned\u{7}b"), "a\u{FFFD}]0;pwned\u{FFFD}b");
        assert_eq!(printable("gpu-01\u{202E}niard"), "gpu-01\u{FFFD}niard");
        assert_eq!(printable("x\u{2066}y\u{2069}"), "x\u{FFFD}y\u{FFFD}");
        assert_eq!(printable("a\tb\nc"), "a b\u{FFFD}c");
    }

    #[test]
    fn c1_controls_and_every_bidi_mark_never_print() {
        // C1 (U+0080–U+009F): U+009B is CSI and U+009D OSC on terminals that read 8-bit
        // controls, so they are as dangerous as ESC [ and ESC ].
        for c in ('\u{80}'..='\u{9F}').chain(['\u{7F}', '\u{200E}', '\u{200F}', '\u{061C}']) {
            assert!(is_unsafe(c), "U+{:04X}", c as u32);
        }
        for c in ('\u{202A}'..='\u{202E}').chain('\u{2066}'..='\u{2069}') {
            assert!(is_unsafe(c), "U+{:04X}", c as u32);
        }
        assert_eq!(printable("a\u{9b}31mb\u{9d}0;x\u{9c}"), "a\u{FFFD}31mb\u{FFFD}0;x\u{FFFD}");
        assert_eq!(printable("\u{200F}\u{061C}ok"), "\u{FFFD}\u{FFFD}ok");
        // What is not a control stays: accents, CJK, the replacement character itself.
        assert!(matches!(printable("café 東京 \u{FFFD}"), Cow::Borrowed(_)));
    }

    #[test]
    fn typed_text_with_controls_is_refused_by_name() {
        assert_eq!(check_typed("drain reason", "XID 79 on GPU 3"), Ok(()));
        assert_eq!(check_typed("drain reason", "a\nb").unwrap_err(), "the drain reason must be one line");
        assert_eq!(
            check_typed("drain reason", "ok\u{1b}[31m").unwrap_err(),
            "the drain reason contains a control character (U+001B) at character 3; type plain text"
        );
        assert!(check_typed("drain reason", "x\u{202E}y").unwrap_err().contains("bidirectional control (U+202E)"));
    }
}
