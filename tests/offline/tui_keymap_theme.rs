//! Keymaps and themes through the public API, with the shipped files read from disk.

use std::path::{Path, PathBuf};

use flightdeck::model::{JobState, NodeState};
use flightdeck::tui::action::{Mode, UiAction};
use flightdeck::tui::keymap::{KeyPress, KeySeq, Keymap, KeymapError, Resolution};
use flightdeck::tui::theme::{ColorDepth, Slot, Theme, ThemeError, detect_color_depth, rgb_to_ansi256};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The `.toml` stems in a shipped directory.
fn shipped(dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn ch(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, modifiers)
}

fn act(a: UiAction) -> Resolution {
    Resolution::Action(a)
}

fn user_keymap(text: &str) -> Result<Keymap, KeymapError> {
    Keymap::from_toml_str(text, Path::new("keymaps/my.toml"))
}

fn user_theme(text: &str) -> Result<Theme, ThemeError> {
    Theme::from_toml_str(text, Path::new("themes/my.toml"), ColorDepth::TrueColor)
}

#[test]
fn every_shipped_keymap_is_builtin_and_loads_from_disk() {
    let mut names: Vec<String> = Keymap::names().iter().map(|s| s.to_string()).collect();
    names.sort();
    assert_eq!(shipped("keymaps"), names, "keymaps/ and Keymap::names() disagree");
    for name in Keymap::names() {
        let builtin = Keymap::builtin(name).unwrap();
        let loaded = Keymap::load(&repo(&format!("keymaps/{name}.toml"))).unwrap();
        for mode in Mode::ALL {
            assert_eq!(builtin.bindings(mode), loaded.bindings(mode), "{name} [{}]", mode.as_str());
        }
    }
}

#[test]
fn every_shipped_theme_is_builtin_and_loads_from_disk() {
    let mut names: Vec<String> = Theme::names().iter().map(|s| s.to_string()).collect();
    names.sort();
    assert_eq!(shipped("themes"), names, "themes/ and Theme::names() disagree");
    for name in Theme::names() {
        for depth in [ColorDepth::TrueColor, ColorDepth::Ansi256, ColorDepth::None] {
            let builtin = Theme::builtin(name, depth).unwrap();
            let loaded = Theme::load(&repo(&format!("themes/{name}.toml")), depth).unwrap();
            for slot in Slot::ALL {
                assert_eq!(builtin.style(*slot), loaded.style(*slot), "{name} [{slot}] at {depth:?}");
            }
        }
    }
}

#[test]
fn default_keymap_documents_unbinding() {
    let text = std::fs::read_to_string(repo("keymaps/default.toml")).unwrap();
    assert!(text.contains("\"C\" = \"none\""), "the unbind syntax is documented at the top");
}

#[test]
fn sequences_prefix_then_action() {
    let vim = Keymap::builtin("vim").unwrap();
    assert_eq!(vim.resolve(Mode::Nodes, &[ch('g')]), Resolution::Prefix);
    assert_eq!(vim.resolve(Mode::Nodes, &[ch('g'), ch('g')]), act(UiAction::Top));
    assert_eq!(vim.resolve(Mode::Nodes, &[ch('g'), ch('q')]), Resolution::None);
    let k = user_keymap("[jobs]\n\"d d\" = \"cancel\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('d')]), Resolution::Prefix);
    assert_eq!(k.resolve(Mode::Jobs, &[ch('d'), ch('d')]), act(UiAction::Cancel));
    assert_eq!(k.resolve(Mode::Nodes, &[ch('d')]), Resolution::None);
    assert_eq!(k.hint(Mode::Jobs, UiAction::Cancel).as_deref(), Some("C"));
    assert!(k.bindings(Mode::Jobs).contains(&("d d".to_string(), UiAction::Cancel)));
}

#[test]
fn mode_table_over_global() {
    let k = user_keymap("[global]\n\"x\" = \"refresh\"\n[jobs]\n\"x\" = \"hold\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('x')]), act(UiAction::Hold));
    assert_eq!(k.resolve(Mode::Nodes, &[ch('x')]), act(UiAction::Refresh));
    assert_eq!(k.hint(Mode::Jobs, UiAction::Refresh).as_deref(), Some("r"));
    assert_eq!(k.hint(Mode::Nodes, UiAction::Refresh).as_deref(), Some("r"));
}

#[test]
fn unbinding() {
    let k = user_keymap("[global]\n\"r\" = \"none\"\n[nodes]\n\"D\" = \"none\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('r')]), Resolution::None);
    assert_eq!(k.resolve(Mode::Jobs, &[key(KeyCode::Char('r'), KeyModifiers::CONTROL)]), act(UiAction::Refresh));
    assert_eq!(k.hint(Mode::Jobs, UiAction::Refresh).as_deref(), Some("ctrl+r"));
    assert_eq!(k.resolve(Mode::Nodes, &[ch('D')]), Resolution::None);
    assert_eq!(k.hint(Mode::Nodes, UiAction::Drain), None);
}

#[test]
fn shift_normalisation() {
    let k = Keymap::builtin("default").unwrap();
    for event in [ch('C'), key(KeyCode::Char('C'), KeyModifiers::SHIFT), key(KeyCode::Char('c'), KeyModifiers::SHIFT)] {
        assert_eq!(k.resolve(Mode::Jobs, &[event]), act(UiAction::Cancel), "{event:?}");
    }
    assert_eq!(k.resolve(Mode::Jobs, &[ch('c')]), act(UiAction::FilterCluster));
    assert_eq!(KeySeq::parse("shift+c").unwrap(), KeySeq::parse("C").unwrap());
    assert_eq!(KeyPress::from_event(&key(KeyCode::Char('c'), KeyModifiers::SHIFT)).to_string(), "C");
}

#[test]
fn keymap_error_messages() {
    let cases: &[(&str, usize, &str, &str)] = &[
        (
            "[jobs]\n\"C\" = \"cancle\"\n",
            2,
            "C",
            "keymaps/my.toml:2: unknown action \"cancle\" for key \"C\" in [jobs] (did you mean \"cancel\"?)",
        ),
        (
            "[jobs]\n\"ctrl+k\" = \"cancel\"\n",
            2,
            "ctrl+k",
            "keymaps/my.toml:2: key \"ctrl+k\" in [jobs] puts the destructive action \"cancel\" on the bare Ctrl chord",
        ),
        ("[jobz]\n", 1, "jobz", "keymaps/my.toml:1: unknown table [jobz] (did you mean \"jobs\"?)"),
        (
            "[gpus]\n\"meta+x\" = \"up\"\n",
            2,
            "meta+x",
            "keymaps/my.toml:2: unknown key \"meta+x\" in [gpus]: unknown modifier \"meta\"",
        ),
        (
            "[detail]\n\"f\" = \"follow\"\n\"f f\" = \"switch_log\"\n",
            3,
            "f f",
            "keymaps/my.toml:3: key \"f f\" in [detail] conflicts with \"f\" = \"follow\" (line 2)",
        ),
    ];
    for (text, line, key, start) in cases {
        let err = user_keymap(text).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with(start), "{shown}\n  should start with\n{start}");
        assert!(matches!(&err, KeymapError::Invalid { line: l, key: Some(k), .. } if l == line && k == key), "{err:?}");
    }
}

#[test]
fn theme_error_messages() {
    let cases: &[(&str, usize, &str, &str)] = &[
        ("\n[bordr]\nbold = true\n", 2, "bordr", "themes/my.toml:2: unknown slot `bordr` (did you mean \"border\"?)"),
        ("[title]\nfg = \"#12345g\"\n", 2, "title.fg", "themes/my.toml:2: bad colour \"#12345g\" for `fg` in [title]"),
        ("inherit = \"dark\"\n", 1, "inherit", "themes/my.toml:1: unknown theme \"dark\" for `inherit`"),
        ("[title]\nblink = true\n", 2, "title.blink", "themes/my.toml:2: unknown key `blink` in [title]"),
    ];
    for (text, line, key, start) in cases {
        let err = user_theme(text).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with(start), "{shown}\n  should start with\n{start}");
        assert!(matches!(&err, ThemeError::Invalid { line: l, key: Some(k), .. } if l == line && k == key), "{err:?}");
    }
}

#[test]
fn theme_inheritance_cycle_through_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    std::fs::write(&a, "inherit = \"sub/b.toml\"\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/b.toml"), "inherit = \"../a.toml\"\n").unwrap();
    let err = Theme::load(&a, ColorDepth::Ansi256).unwrap_err();
    assert!(err.to_string().contains(": inheritance cycle: "), "{err}");
    assert!(matches!(&err, ThemeError::Invalid { line: 1, key: Some(k), .. } if k == "inherit"), "{err:?}");
}

#[test]
fn hex_to_256() {
    assert_eq!(rgb_to_ansi256(0xff, 0x00, 0x00), 196);
    assert_eq!(rgb_to_ansi256(0x00, 0x00, 0x00), 16);
    assert_eq!(rgb_to_ansi256(0x80, 0x80, 0x80), 244);
    assert_eq!(rgb_to_ansi256(0xff, 0xff, 0xff), 231);
    assert_eq!(rgb_to_ansi256(0xff, 0x87, 0x00), 208);
    let theme = Theme::from_toml_str("[error]\nfg = \"#ff0000\"\n", Path::new("x.toml"), ColorDepth::Ansi256).unwrap();
    assert_eq!(theme.style(Slot::Error).fg, Some(Color::Indexed(196)));
}

#[test]
fn colour_depth_detection() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    };
    assert_eq!(detect_color_depth(env(&[("NO_COLOR", "1"), ("COLORTERM", "truecolor")])), ColorDepth::None);
    assert_eq!(detect_color_depth(env(&[("TERM", "dumb")])), ColorDepth::None);
    assert_eq!(detect_color_depth(env(&[("COLORTERM", "truecolor")])), ColorDepth::TrueColor);
    assert_eq!(detect_color_depth(env(&[("COLORTERM", "24bit"), ("TERM", "xterm")])), ColorDepth::TrueColor);
    assert_eq!(detect_color_depth(env(&[("TERM", "xterm-256color")])), ColorDepth::Ansi256);
    assert_eq!(detect_color_depth(env(&[])), ColorDepth::Ansi256);
}

#[test]
fn no_colour_anywhere_without_colour() {
    for name in Theme::names() {
        let theme = Theme::builtin(name, ColorDepth::None).unwrap();
        for slot in Slot::ALL {
            let style = theme.style(*slot);
            assert_eq!((style.fg, style.bg), (None, None), "{name} [{slot}]");
        }
        assert!(theme.style(Slot::Selection).add_modifier.contains(Modifier::REVERSED), "{name}: cursor row visible");
        for state in JobState::ALL {
            assert_eq!(theme.job_state(state).fg, None);
        }
        assert_eq!(theme.node_state(NodeState::Down).fg, None);
    }
    let mono = Theme::builtin("mono", ColorDepth::TrueColor).unwrap();
    for slot in Slot::ALL {
        assert_eq!((mono.style(*slot).fg, mono.style(*slot).bg), (None, None), "mono [{slot}]");
    }
}
