//! Text that reaches a terminal, through the real binary: whatever a backend, a hub or a file
//! puts in a string, what flightdeck prints holds no control character (C0, DEL, C1) and no
//! bidi control, and the rest of the text is still there to read.

use std::path::Path;
use std::process::{Command, Output};

/// A hostile string: an OSC title change ended by BEL, a CSI in its 8-bit (C1) form, a
/// right-to-left override and an isolate.
const HOSTILE: &str = "a\u{1b}]0;pwned\u{7}b\u{9b}31mc\u{202E}d\u{2066}e";

fn flightdeck(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("FLIGHTDECK_CONFIG")
        .env_remove("FLIGHTDECK_HUB")
        .output()
        .unwrap()
}

/// No control or bidi character in `bytes`, which must be UTF-8 (a lone C1 byte would not be).
fn assert_terminal_safe(what: &str, bytes: &[u8]) -> String {
    let text = String::from_utf8(bytes.to_vec()).unwrap_or_else(|e| panic!("{what} is not UTF-8: {e}"));
    let bad: Vec<String> = text
        .chars()
        .filter(|&c| c != '\n' && flightdeck::safe_text::is_unsafe(c))
        .map(|c| format!("U+{:04X}", c as u32))
        .collect();
    assert!(bad.is_empty(), "{what} holds {bad:?}: {text:?}");
    text
}

#[test]
fn the_error_line_of_the_binary_shows_hostile_text_neutralised() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let file = home.path().join(HOSTILE);
    let out = flightdeck(
        home.path(),
        &["--config", config.to_str().unwrap(), "spec", "convert", file.to_str().unwrap(), "--to", "toml"],
    );
    assert!(!out.status.success());
    let err = assert_terminal_safe("stderr", &out.stderr);
    assert!(err.starts_with("flightdeck: cannot read "), "{err}");
    assert!(err.contains("a\u{FFFD}]0;pwned\u{FFFD}b\u{FFFD}31mc\u{FFFD}d\u{FFFD}e"), "{err}");
}

#[test]
fn a_spec_printed_as_toml_keeps_c1_and_bidi_controls_escaped() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    // The file names them by escape only; the value holds the characters themselves.
    let file = home.path().join("job.toml");
    std::fs::write(&file, "name = \"j\"\nscript = \"echo \\u009B2J \\u001B]0;t\\u0007 \\u202Eevil\\u2066\\n\"\n")
        .unwrap();
    let out = flightdeck(
        home.path(),
        &["--config", config.to_str().unwrap(), "spec", "convert", file.to_str().unwrap(), "--to", "toml"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = assert_terminal_safe("stdout", &out.stdout);
    assert!(text.contains("\\u009B2J") && text.contains("\\u202Eevil\\u2066"), "{text}");
    let spec = flightdeck::spec::JobSpec::from_toml_str(&text, Path::new("out.toml")).unwrap();
    assert_eq!(spec.script.as_deref(), Some("echo \u{9b}2J \u{1b}]0;t\u{7} \u{202E}evil\u{2066}\n"));
}
