//! Key presses and key sequences: parsing the spec language of keymap files, normalising what
//! the terminal reports, and writing keys back out for the help screen and the footer.
//!
//! A spec is one or more presses separated by spaces (`"g g"`); a press is optional modifiers
//! and a key joined by `+` (`"ctrl+r"`, `"alt+enter"`, `"shift+G"`). Letters are
//! case-sensitive and `shift+g` is the same key as `G`.

use std::fmt;
use std::str::FromStr;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The modifiers a binding can name. Others (super, hyper, meta) never match a binding.
const KEPT: KeyModifiers = KeyModifiers::CONTROL.union(KeyModifiers::ALT).union(KeyModifiers::SHIFT);

/// Named keys, as written in specs and shown on screen (the first name is the one shown).
const NAMED: &[(&str, KeyCode)] = &[
    ("enter", KeyCode::Enter),
    ("return", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("escape", KeyCode::Esc),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("space", KeyCode::Char(' ')),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("del", KeyCode::Delete),
    ("insert", KeyCode::Insert),
    ("ins", KeyCode::Insert),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pageup", KeyCode::PageUp),
    ("pgup", KeyCode::PageUp),
    ("pagedown", KeyCode::PageDown),
    ("pgdown", KeyCode::PageDown),
    ("pgdn", KeyCode::PageDown),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
];

/// The key names a spec accepts, for error messages.
pub(crate) const KEY_NAMES_HELP: &str = "a single character, or one of: enter, esc, tab, backtab, space, backspace, \
     delete, insert, home, end, pageup, pagedown, up, down, left, right, f1..f24; \
     with optional ctrl+, alt+, shift+ in front";

/// One key press: a key and the modifiers held, normalised so that the same physical key
/// compares equal however the terminal reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyPress {
    code: KeyCode,
    modifiers: KeyModifiers,
}

impl KeyPress {
    /// A normalised press.
    ///
    /// * Shift on a character is folded into the character: `shift+g` is `G`, and `?` is `?`
    ///   whether or not the terminal also reported Shift.
    /// * `shift+tab` is `backtab`, and `backtab` never carries Shift.
    /// * Only Ctrl, Alt and Shift are kept; a press with Super/Hyper/Meta keeps a marker so
    ///   it matches no binding.
    pub fn new(code: KeyCode, modifiers: KeyModifiers) -> KeyPress {
        let extra = modifiers.difference(KEPT);
        let mut modifiers = modifiers.intersection(KEPT);
        let code = match code {
            KeyCode::Char(c) if modifiers.contains(KeyModifiers::SHIFT) => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::Char(upper(c))
            }
            KeyCode::Tab if modifiers.contains(KeyModifiers::SHIFT) => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            KeyCode::BackTab => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        if !extra.is_empty() {
            // Keep the press distinct from every bindable one.
            modifiers.insert(KeyModifiers::SUPER);
        }
        KeyPress { code, modifiers }
    }

    /// The press a terminal event stands for.
    pub fn from_event(event: &KeyEvent) -> KeyPress {
        KeyPress::new(event.code, event.modifiers)
    }

    pub fn code(&self) -> KeyCode {
        self.code
    }

    pub fn modifiers(&self) -> KeyModifiers {
        self.modifiers
    }

    /// Ctrl with a character and without Alt: the chords terminals, shells and tmux claim
    /// (`ctrl+c`, `ctrl+z`, `ctrl+d`, `ctrl+s`, `ctrl+q`, `ctrl+b`, `ctrl+\` …).
    pub fn is_bare_ctrl_chord(&self) -> bool {
        matches!(self.code, KeyCode::Char(_))
            && self.modifiers.contains(KeyModifiers::CONTROL)
            && !self.modifiers.contains(KeyModifiers::ALT)
    }

    /// A character typed without Ctrl or Alt: text, when a text field has the focus.
    pub fn is_plain_char(&self) -> bool {
        matches!(self.code, KeyCode::Char(_)) && self.modifiers.is_empty()
    }

    /// Parse one press (`"ctrl+r"`, `"G"`, `"shift+up"`, `"+"`).
    pub fn parse(spec: &str) -> Result<KeyPress, String> {
        if spec.is_empty() {
            return Err("empty key".into());
        }
        // The key itself may be `+`: `+`, `ctrl++`.
        let (mods_text, key_text) = if spec == "+" {
            ("", "+")
        } else if let Some(mods) = spec.strip_suffix("++") {
            (mods, "+")
        } else {
            match spec.rsplit_once('+') {
                Some((mods, key)) => (mods, key),
                None => ("", spec),
            }
        };
        let mut modifiers = KeyModifiers::NONE;
        if !mods_text.is_empty() {
            for part in mods_text.split('+') {
                let flag = match part.to_ascii_lowercase().as_str() {
                    "ctrl" | "control" => KeyModifiers::CONTROL,
                    "alt" => KeyModifiers::ALT,
                    "shift" => KeyModifiers::SHIFT,
                    "" => return Err("empty modifier (a doubled `+`?)".into()),
                    other => return Err(format!("unknown modifier {other:?} (use ctrl, alt or shift)")),
                };
                if modifiers.contains(flag) {
                    return Err(format!("modifier {part:?} given twice"));
                }
                modifiers.insert(flag);
            }
        }
        if key_text.is_empty() {
            return Err("no key after the modifiers".into());
        }
        let mut chars = key_text.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => {
                if c.is_control() {
                    return Err(format!("{c:?} is a control character; name the key instead"));
                }
                if modifiers.contains(KeyModifiers::SHIFT) && !c.is_alphabetic() {
                    return Err(format!(
                        "shift+ applies to letters and named keys only; write the character itself (e.g. \"?\" rather than \"shift+/\"), not shift+{c}"
                    ));
                }
                KeyCode::Char(c)
            }
            _ => {
                let lower = key_text.to_ascii_lowercase();
                if let Some((_, code)) = NAMED.iter().find(|(name, _)| *name == lower) {
                    *code
                } else if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
                    if !(1..=24).contains(&n) {
                        return Err(format!("no function key {key_text:?} (f1..f24)"));
                    }
                    KeyCode::F(n)
                } else {
                    return Err(format!("unknown key name {key_text:?}"));
                }
            }
        };
        Ok(KeyPress::new(code, modifiers))
    }
}

fn upper(c: char) -> char {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

impl fmt::Display for KeyPress {
    /// `ctrl+alt+shift+key`, with the key as a spec would name it (`G`, `space`, `pageup`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl+")?;
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            f.write_str("alt+")?;
        }
        if self.modifiers.contains(KeyModifiers::SHIFT) {
            f.write_str("shift+")?;
        }
        if self.modifiers.contains(KeyModifiers::SUPER) {
            f.write_str("super+")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::F(n) => write!(f, "f{n}"),
            code => match NAMED.iter().find(|(_, named)| *named == code) {
                Some((name, _)) => f.write_str(name),
                None => write!(f, "{code:?}"),
            },
        }
    }
}

/// A sequence of presses typed one after another (`"g g"`); most are one press long.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeySeq(Vec<KeyPress>);

impl KeySeq {
    pub fn new(presses: Vec<KeyPress>) -> KeySeq {
        KeySeq(presses)
    }

    /// Parse a spec: presses separated by whitespace.
    pub fn parse(spec: &str) -> Result<KeySeq, String> {
        let presses = spec.split_whitespace().map(KeyPress::parse).collect::<Result<Vec<_>, _>>()?;
        if presses.is_empty() {
            return Err("empty key".into());
        }
        Ok(KeySeq(presses))
    }

    /// The sequence typed as these terminal events.
    pub fn from_events(events: &[KeyEvent]) -> KeySeq {
        KeySeq(events.iter().map(KeyPress::from_event).collect())
    }

    pub fn presses(&self) -> &[KeyPress] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `self` is a proper prefix of `other` (`g` of `g g`).
    pub fn is_proper_prefix_of(&self, other: &[KeyPress]) -> bool {
        self.0.len() < other.len() && other.starts_with(&self.0)
    }
}

impl FromStr for KeySeq {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KeySeq::parse(s)
    }
}

impl fmt::Display for KeySeq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, press) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{press}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(spec: &str) -> KeyPress {
        KeyPress::parse(spec).unwrap()
    }

    #[test]
    fn shift_on_letters_folds_into_the_letter() {
        let g = KeyPress::new(KeyCode::Char('G'), KeyModifiers::NONE);
        assert_eq!(KeyPress::new(KeyCode::Char('G'), KeyModifiers::SHIFT), g);
        assert_eq!(KeyPress::new(KeyCode::Char('g'), KeyModifiers::SHIFT), g);
        assert_eq!(press("shift+g"), g);
        assert_eq!(press("shift+G"), g);
        assert_eq!(press("G"), g);
        assert_ne!(press("g"), g);
        assert_eq!(g.to_string(), "G");
        assert_eq!(press("ctrl+shift+a").to_string(), "ctrl+A");
    }

    #[test]
    fn shift_on_symbols_is_dropped_from_events_but_refused_in_specs() {
        assert_eq!(KeyPress::new(KeyCode::Char('?'), KeyModifiers::SHIFT), press("?"));
        let err = KeyPress::parse("shift+/").unwrap_err();
        assert!(err.contains("write the character itself"), "{err}");
    }

    #[test]
    fn backtab_and_shift_tab() {
        let back = press("backtab");
        assert_eq!(KeyPress::new(KeyCode::BackTab, KeyModifiers::SHIFT), back);
        assert_eq!(KeyPress::new(KeyCode::Tab, KeyModifiers::SHIFT), back);
        assert_eq!(press("shift+tab"), back);
        assert_eq!(back.to_string(), "backtab");
    }

    #[test]
    fn named_keys_and_function_keys() {
        assert_eq!(press("space").code(), KeyCode::Char(' '));
        assert_eq!(press("Enter").code(), KeyCode::Enter);
        assert_eq!(press("escape").to_string(), "esc");
        assert_eq!(press("pgdn").to_string(), "pagedown");
        assert_eq!(press("F5").code(), KeyCode::F(5));
        assert_eq!(press("alt+enter").to_string(), "alt+enter");
        assert_eq!(press("shift+up").to_string(), "shift+up");
        assert_eq!(press("CTRL+r").to_string(), "ctrl+r");
        assert_eq!(press("+").code(), KeyCode::Char('+'));
        assert_eq!(press("ctrl++").to_string(), "ctrl++");
        assert!(KeyPress::parse("f25").unwrap_err().contains("f1..f24"));
        assert!(KeyPress::parse("foo").unwrap_err().contains("unknown key name \"foo\""));
        assert!(KeyPress::parse("hyper+x").unwrap_err().contains("unknown modifier \"hyper\""));
        assert!(KeyPress::parse("ctrl+").unwrap_err().contains("no key"));
        assert!(KeyPress::parse("ctrl+ctrl+x").unwrap_err().contains("twice"));
    }

    #[test]
    fn extra_modifiers_match_nothing() {
        let with_super = KeyPress::new(KeyCode::Char('j'), KeyModifiers::SUPER);
        assert_ne!(with_super, press("j"));
    }

    #[test]
    fn sequences() {
        let gg = KeySeq::parse("g  g").unwrap();
        assert_eq!(gg.len(), 2);
        assert_eq!(gg.to_string(), "g g");
        assert!(KeySeq::parse("g").unwrap().is_proper_prefix_of(gg.presses()));
        assert!(!gg.is_proper_prefix_of(gg.presses()));
        assert!(KeySeq::parse("  ").is_err());
        assert_eq!("Z Z".parse::<KeySeq>().unwrap().to_string(), "Z Z");
    }

    #[test]
    fn bare_ctrl_chords() {
        assert!(press("ctrl+k").is_bare_ctrl_chord());
        assert!(press("ctrl+K").is_bare_ctrl_chord());
        assert!(press("ctrl+\\").is_bare_ctrl_chord());
        assert!(!press("ctrl+alt+k").is_bare_ctrl_chord());
        assert!(!press("ctrl+up").is_bare_ctrl_chord());
        assert!(!press("K").is_bare_ctrl_chord());
    }
}
