//! Telling someone a watched job changed when they are not looking: the terminal's own
//! notification, which travels over SSH like any output (OSC 9, read by iTerm2, WezTerm,
//! kitty, Windows Terminal, foot; OSC 777, read by rxvt-unicode, Konsole and the VTE
//! terminals; the bell where neither is wanted), and a configured command given the event as
//! JSON on its standard input, never through a shell.
//!
//! tmux swallows OSC sequences unless they are wrapped for passthrough, which it forwards
//! only with `allow-passthrough on`: so inside tmux the terminal notice is off unless the
//! config says passthrough is enabled (`[notify] tmux_passthrough = true`).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;

/// How long a notify command may run before it is killed: a hung notifier must not pile up.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// `[notify] terminal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TerminalSetting {
    /// OSC 9, or nothing inside tmux without passthrough.
    #[default]
    Auto,
    Osc9,
    Osc777,
    Bell,
    Off,
}

impl TerminalSetting {
    pub const NAMES: [&'static str; 5] = ["auto", "osc9", "osc777", "bell", "off"];

    pub fn from_name(name: &str) -> Option<TerminalSetting> {
        Some(match name {
            "auto" => TerminalSetting::Auto,
            "osc9" => TerminalSetting::Osc9,
            "osc777" => TerminalSetting::Osc777,
            "bell" => TerminalSetting::Bell,
            "off" => TerminalSetting::Off,
            _ => return None,
        })
    }
}

/// `[notify]` as configured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotifySettings {
    pub terminal: TerminalSetting,
    /// tmux forwards wrapped sequences (`set -g allow-passthrough on`).
    pub tmux_passthrough: bool,
    /// Run on each event with its JSON on stdin (`["notify-send", "flightdeck"]`); empty: none.
    pub command: Vec<String>,
}

/// What actually reaches the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    Off,
    Bell,
    Osc9 { tmux: bool },
    Osc777 { tmux: bool },
}

impl NotifySettings {
    /// The notice for a terminal inside tmux (`$TMUX` set) or not.
    pub fn notice(&self, in_tmux: bool) -> Notice {
        let wrap = in_tmux && self.tmux_passthrough;
        match self.terminal {
            TerminalSetting::Off => Notice::Off,
            TerminalSetting::Bell => Notice::Bell,
            // An OSC tmux would drop: the bell still gets through (tmux shows it).
            TerminalSetting::Osc9 | TerminalSetting::Osc777 if in_tmux && !wrap => Notice::Bell,
            TerminalSetting::Osc9 => Notice::Osc9 { tmux: wrap },
            TerminalSetting::Osc777 => Notice::Osc777 { tmux: wrap },
            TerminalSetting::Auto if in_tmux && !wrap => Notice::Off,
            TerminalSetting::Auto => Notice::Osc9 { tmux: wrap },
        }
    }
}

/// The bytes to write for `title` and `body`; empty for [`Notice::Off`]. Text is made
/// printable ([`crate::safe_text::printable`]: a job name cannot end the sequence early, start
/// another, or reorder the notification with bidi controls) and OSC 777's title loses `;`,
/// its field separator.
pub fn sequence(notice: Notice, title: &str, body: &str) -> Vec<u8> {
    let (osc, tmux) = match notice {
        Notice::Off => return Vec::new(),
        Notice::Bell => return b"\x07".to_vec(),
        Notice::Osc9 { tmux } => (format!("\x1b]9;{}: {}\x07", clean(title), clean(body)), tmux),
        Notice::Osc777 { tmux } => {
            (format!("\x1b]777;notify;{};{}\x07", clean(title).replace(';', ","), clean(body)), tmux)
        }
    };
    if !tmux {
        return osc.into_bytes();
    }
    // tmux passthrough: DCS tmux; the sequence with every ESC doubled; ST.
    let mut wrapped = b"\x1bPtmux;".to_vec();
    for b in osc.bytes() {
        if b == 0x1b {
            wrapped.push(0x1b);
        }
        wrapped.push(b);
    }
    wrapped.extend_from_slice(b"\x1b\\");
    wrapped
}

fn clean(text: &str) -> std::borrow::Cow<'_, str> {
    crate::safe_text::printable(text)
}

/// Run `argv` with `json` (and a newline) on its standard input, bounded by
/// [`COMMAND_LIMIT`]; what went wrong, in words.
pub async fn run_command(argv: &[String], json: &[u8]) -> Result<(), String> {
    let Some((program, args)) = argv.split_first() else { return Ok(()) };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is its own business.
        let _ = stdin.write_all(json).await;
        let _ = stdin.write_all(b"\n").await;
    }
    match tokio::time::timeout(COMMAND_LIMIT, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("{program}: {status}")),
        Ok(Err(e)) => Err(format!("{program}: {e}")),
        Err(_) => Err(format!("{program} ran over {} s and was killed", COMMAND_LIMIT.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(terminal: TerminalSetting, tmux_passthrough: bool) -> NotifySettings {
        NotifySettings { terminal, tmux_passthrough, command: Vec::new() }
    }

    #[test]
    fn auto_is_osc9_outside_tmux_and_off_inside_without_passthrough() {
        assert_eq!(settings(TerminalSetting::Auto, false).notice(false), Notice::Osc9 { tmux: false });
        assert_eq!(settings(TerminalSetting::Auto, false).notice(true), Notice::Off);
        assert_eq!(settings(TerminalSetting::Auto, true).notice(true), Notice::Osc9 { tmux: true });
        assert_eq!(settings(TerminalSetting::Osc777, false).notice(true), Notice::Bell, "tmux shows a bell");
        assert_eq!(settings(TerminalSetting::Off, true).notice(false), Notice::Off);
    }

    #[test]
    fn the_sequences_terminals_read() {
        assert_eq!(
            sequence(Notice::Osc9 { tmux: false }, "flightdeck", "hpc/7  pending → running"),
            "\x1b]9;flightdeck: hpc/7  pending → running\x07".as_bytes()
        );
        assert_eq!(
            sequence(Notice::Osc777 { tmux: false }, "flight;deck", "hpc/7 ended"),
            b"\x1b]777;notify;flight,deck;hpc/7 ended\x07"
        );
        assert_eq!(sequence(Notice::Bell, "t", "b"), b"\x07");
        assert!(sequence(Notice::Off, "t", "b").is_empty());
        assert_eq!(sequence(Notice::Osc9 { tmux: true }, "fd", "x"), b"\x1bPtmux;\x1b\x1b]9;fd: x\x07\x1b\\");
    }

    #[test]
    fn a_hostile_job_name_cannot_end_the_sequence() {
        let bytes = sequence(Notice::Osc9 { tmux: false }, "flightdeck", "evil\x07\x1b]0;pwned\x07\u{9b}x");
        assert_eq!(bytes, "\x1b]9;flightdeck: evil\u{FFFD}\u{FFFD}]0;pwned\u{FFFD}\u{FFFD}x\x07".as_bytes());
    }

    #[test]
    fn bidi_and_c1_controls_never_reach_the_payload() {
        let hostile = "job\u{202E}gnp.exe\u{2066}\u{200F}\u{061C}\u{85}\u{9d}0;t\u{9c}";
        for notice in [Notice::Osc9 { tmux: false }, Notice::Osc777 { tmux: false }, Notice::Osc9 { tmux: true }] {
            let bytes = sequence(notice, hostile, hostile);
            let text = String::from_utf8(bytes).unwrap();
            // Only the sequence's own framing is a control: ESC at the start (doubled inside
            // tmux's wrapping), BEL and ST at the end.
            let inner = text.trim_start_matches(['\x1b']).trim_end_matches(['\x07', '\x1b', '\\']);
            let inner = inner.strip_prefix("Ptmux;").map_or(inner, |s| s.trim_start_matches('\x1b'));
            assert!(!inner.chars().any(crate::safe_text::is_unsafe), "{notice:?}: {inner:?}");
            assert!(inner.contains("job\u{FFFD}gnp.exe"), "{notice:?}: {inner:?}");
        }
    }

    #[tokio::test]
    async fn the_command_gets_the_json_and_failures_are_words() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got");
        let argv = vec!["sh".into(), "-c".into(), format!("cat > {}", out.display())];
        run_command(&argv, br#"{"job":"hpc/7"}"#).await.unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "{\"job\":\"hpc/7\"}\n");
        let err = run_command(&["/nonexistent/notifier".into()], b"{}").await.unwrap_err();
        assert!(err.starts_with("/nonexistent/notifier: "), "{err}");
        let err = run_command(&["false".into()], b"{}").await.unwrap_err();
        assert!(err.contains("exit status: 1"), "{err}");
        assert_eq!(run_command(&[], b"{}").await, Ok(()));
    }
}
