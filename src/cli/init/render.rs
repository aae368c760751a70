//! What every kind found, as a commented config file that reads back as it says.

use std::fmt::Write;

use crate::backend::registry::discovery::Names;
use crate::backend::registry::{KindDiscovery, Line};

/// The file: a header saying where it came from and how to go on, then one `[[cluster]]`
/// per cluster found, in the registry's order (commented out where it did not answer or is
/// not the current one), then the kinds' notes, then what was looked for and missing.
pub fn render(discoveries: &[KindDiscovery]) -> String {
    let mut out = String::new();
    out.push_str(
        "# flightdeck config, written by `flightdeck init`.\n\
         # Each [[cluster]] below is something this machine found; the ones that did not answer\n\
         # (or are not your current choice) are commented out with the reason. Uncomment, edit,\n\
         # then `flightdeck doctor` checks every cluster. Every key: README.md, \"Configuration\".\n\
         \n\
         read_only = false\n\
         \n\
         # A job whose GPUs stay under below_percent for `minutes` is flagged idle.\n\
         [idle]\n\
         below_percent = 5\n\
         minutes = 20\n",
    );
    let mut names = Names::default();
    for found in discoveries.iter().flat_map(|d| &d.discovery.found) {
        let name = names.pick(&found.names);
        let prefix = if found.active { "" } else { "# " };
        let _ = writeln!(out, "\n# {}", comment(&found.why));
        let _ = writeln!(out, "{prefix}[[cluster]]");
        let _ = writeln!(out, "{prefix}name = {}", quote(&toml::Value::String(name)));
        let _ = writeln!(out, "{prefix}kind = {}", quote(&toml::Value::String(found.kind().as_str().to_string())));
        for line in &found.section {
            let _ = match line {
                Line::Key(key, value) => writeln!(out, "{prefix}{key} = {}", quote(value)),
                Line::Comment(text) => writeln!(out, "{prefix}# {}", comment(text)),
            };
        }
    }
    for note in discoveries.iter().flat_map(|d| &d.discovery.notes) {
        out.push('\n');
        for line in note.lines() {
            let _ = writeln!(out, "# {}", comment(line));
        }
    }
    let missing: Vec<&String> = discoveries.iter().flat_map(|d| &d.discovery.missing).collect();
    if !missing.is_empty() {
        out.push_str("\n# Looked for and not found:\n");
        for m in missing {
            let _ = writeln!(out, "#   {}", comment(m));
        }
    }
    out
}

/// A TOML value: whatever a context or host is called, it stays one value, and its C1 or
/// bidi controls are escapes, not raw text for the terminal (`--print`) or an editor.
fn quote(value: &toml::Value) -> String {
    crate::tomlfile::printable::document(&value.to_string())
}

/// Text that stays inside its `#` comment: no line breaks, other controls or bidi controls.
fn comment(text: &str) -> String {
    text.chars().map(|c| if crate::safe_text::is_unsafe(c) { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_and_comments_hold_no_raw_c1_or_bidi_control() {
        let hostile = "ctx\u{9b}2J\u{202E}x\u{1b}]0;t\u{7}";
        let quoted = quote(&toml::Value::String(hostile.into()));
        assert!(!quoted.chars().any(crate::safe_text::is_unsafe), "{quoted:?}");
        let back: toml::Table = toml::from_str(&format!("v = {quoted}")).unwrap();
        assert_eq!(back["v"].as_str(), Some(hostile));
        assert_eq!(comment(hostile), "ctx 2J x ]0;t ");
    }

    #[test]
    fn comments_cannot_break_out_of_their_line() {
        assert_eq!(comment("a\nkind = \"x\"\r"), "a kind = \"x\" ");
    }
}
