//! A TOML document safe to print: the `toml` crate escapes C0 controls and DEL in basic
//! strings, but writes C1 controls (U+0080–U+009F: `U+009B` is CSI to a terminal that reads
//! 8-bit controls) and bidi controls as they are, and picks literal strings (`'…'`, which
//! have no escapes at all) for text without quotes. A spec read back from a cluster holds
//! whatever the job's owner wrote, so [`document`] rewrites those characters as `\uXXXX`
//! escapes: the same document for any TOML reader, and nothing raw for the terminal.

use crate::safe_text::is_unsafe;

/// What must not reach the terminal raw; tabs and line breaks are TOML's own and harmless.
fn raw(c: char) -> bool {
    is_unsafe(c) && c != '\n' && c != '\t'
}

/// `text`, a document the `toml` crate wrote, with every character [`raw`] finds inside a
/// string escaped (a literal string that holds one becomes a basic string). Outside strings
/// `toml` writes only keys, numbers and punctuation; should anything raw be there anyway, or
/// a string not end, it is shown as `�` rather than printed.
pub fn document(text: &str) -> String {
    if !text.chars().any(raw) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    while let Some(open) = rest.find(['"', '\'']) {
        push_outside(&mut out, &rest[..open]);
        rest = &rest[open..];
        let quote = if rest.starts_with('"') { '"' } else { '\'' };
        let multi_line = rest.chars().take(3).all(|c| c == quote) && rest.len() >= 3;
        let delimiter = if multi_line { 3 } else { 1 };
        let Some(len) = body_len(&rest[delimiter..], quote, multi_line) else { break };
        let body = &rest[delimiter..delimiter + len];
        match (quote, multi_line) {
            ('"', _) => {
                out.push_str(&rest[..delimiter]);
                push_escaped(&mut out, body, false);
                out.push_str(&rest[..delimiter]);
            }
            // A literal string cannot escape: the same text as a basic string, which can.
            (_, false) if body.chars().any(raw) => {
                out.push('"');
                push_escaped(&mut out, body, true);
                out.push('"');
            }
            // Both kinds of multi-line string drop a line break right after the opening
            // delimiter: kept as it is, it is dropped from the basic string alike.
            (_, true) if body.chars().any(raw) => {
                out.push_str("\"\"\"");
                push_escaped(&mut out, body, true);
                out.push_str("\"\"\"");
            }
            _ => out.push_str(&rest[..delimiter * 2 + len]),
        }
        rest = &rest[delimiter * 2 + len..];
    }
    push_outside(&mut out, rest);
    out
}

/// Text outside strings, where no escape exists.
fn push_outside(out: &mut String, text: &str) {
    out.extend(text.chars().map(|c| if raw(c) { '\u{FFFD}' } else { c }));
}

/// The length of a string's body up to its closing delimiter, in bytes; `None` if it has
/// none. In a multi-line string up to two quotes just before the delimiter are the body's.
fn body_len(text: &str, quote: char, multi_line: bool) -> Option<usize> {
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '\\' && quote == '"' {
            chars.next();
        } else if c == quote && !multi_line {
            return Some(at);
        } else if c == quote {
            let run = text[at..].chars().take_while(|&c| c == quote).count();
            if run >= 3 {
                return Some(at + run.min(5) - 3);
            }
            for _ in 1..run {
                chars.next();
            }
        }
    }
    None
}

/// `body` with every [`raw`] character as `\uXXXX`. From a literal string (`literal`) its
/// backslashes and double quotes are escaped too, since they now sit in a basic string.
fn push_escaped(out: &mut String, body: &str, literal: bool) {
    for c in body.chars() {
        match c {
            '\\' | '"' if literal => {
                out.push('\\');
                out.push(c);
            }
            c if raw(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A one-entry table written by `toml`, made printable, read back.
    fn trip(key: &str, value: &str) -> (String, toml::Table) {
        let mut table = toml::Table::new();
        table.insert(key.to_string(), toml::Value::String(value.to_string()));
        let text = document(&toml::to_string(&table).unwrap());
        let back = toml::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        (text, back)
    }

    #[test]
    fn c1_and_bidi_controls_become_escapes_in_every_kind_of_string() {
        for value in [
            "plain \u{9b}31m \u{202E}evil",            // a literal string
            "it's \u{9d}0;t\u{9c} \u{2066}x\u{2069}",  // a basic string (a single quote)
            "line\u{85}\nnext \u{200F}\u{061C}\n",     // a multi-line literal
            "it's\n\"q\" \\ \u{202A}\n''' \"\"\" \t.", // multi-line basic
        ] {
            let (text, back) = trip("k", value);
            assert!(!text.chars().any(raw), "{text:?}");
            assert_eq!(back["k"].as_str(), Some(value), "{text}");
        }
        let (text, _) = trip("k", "a\u{9b}b");
        assert_eq!(text, "k = \"a\\u009Bb\"\n");
        // Nothing to do: the text as `toml` wrote it.
        let plain = "name = 'it\\'s'\n";
        assert_eq!(document(plain), plain);
    }

    #[test]
    fn a_quoted_key_is_escaped_like_a_value() {
        let (text, back) = trip("k\u{202E}ey", "v");
        assert!(!text.chars().any(raw), "{text:?}");
        assert_eq!(back.get("k\u{202E}ey").and_then(|v| v.as_str()), Some("v"));
    }

    proptest! {
        #[test]
        fn any_text_reads_back_the_same_with_nothing_raw(
            key in "[a-z'\"\\\\ \u{85}\u{202E}]{1,6}",
            value in "[a-z'\"\\\\\t\n \u{1b}\u{7f}\u{80}\u{9b}\u{9f}\u{200E}\u{202E}\u{2066}\u{061C}]{0,24}",
        ) {
            let (text, back) = trip(&key, &value);
            prop_assert!(!text.chars().any(raw), "{:?}", text);
            prop_assert_eq!(back.get(&key).and_then(|v| v.as_str()), Some(value.as_str()));
        }
    }
}
