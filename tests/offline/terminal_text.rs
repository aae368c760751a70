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

/// Shell conventions: a completion script per shell, naming the subcommands, and a man page;
/// neither needs a config.
#[test]
fn completions_for_each_shell_name_the_subcommands_and_the_man_page_renders() {
    let home = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = flightdeck(home.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
        let script = String::from_utf8(out.stdout).unwrap();
        for sub in ["jobs", "migrate", "submit", "completions", "man"] {
            assert!(script.contains(sub), "{shell} completion lacks `{sub}`:\n{script}");
        }
        assert!(script.contains("flightdeck"), "{shell}:\n{script}");
    }
    assert!(script_flag(home.path(), "fish", "gpu-type"), "a subcommand's flags are completed too");
    let bad = flightdeck(home.path(), &["completions", "tcsh"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("tcsh"));

    let out = flightdeck(home.path(), &["man"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH flightdeck 1"), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "{section} missing:\n{page}");
    }
    assert!(page.contains("flightdeck\\-migrate"), "every subcommand listed:\n{page}");
}

fn script_flag(home: &Path, shell: &str, flag: &str) -> bool {
    let out = flightdeck(home, &["completions", shell]);
    String::from_utf8_lossy(&out.stdout).contains(flag)
}

/// A YAML file no dialect claims is named as such, not read as a TOML error at line 1; a
/// TOML spec with a typo still gets its line.
#[test]
fn a_job_file_no_dialect_knows_is_reported_as_such() {
    let home = tempfile::tempdir().unwrap();
    let train = home.path().join("train.yaml");
    std::fs::write(&train, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n").unwrap();
    let path = train.to_str().unwrap();
    let out = flightdeck(home.path(), &["spec", "convert", path, "--to", "slurm"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!(
            "{path}: not a job file flightdeck knows: a portable spec (TOML), an sbatch script, \
             a Kubernetes Job, a JobSet, a PyTorchJob, an MPIJob, a RayJob, a Volcano Job, a SkyPilot task or a \
             dstack task"
        )),
        "{err}"
    );
    assert!(!err.contains("syntax error"), "{err}");

    let typo = home.path().join("train.toml");
    std::fs::write(&typo, "name = \"t\"\ncommand = [\"true\"\n").unwrap();
    let out = flightdeck(home.path(), &["spec", "convert", typo.to_str().unwrap(), "--to", "slurm"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success());
    assert!(!err.contains("not a job file"), "a TOML typo stays a TOML error: {err}");
    assert!(err.contains("train.toml:2:"), "{err}");
}
