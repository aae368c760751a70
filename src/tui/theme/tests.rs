use std::path::Path;

use ratatui::style::{Color, Modifier, Style};

use super::*;

const FILE: &str = "/home/a/.config/flightdeck/themes/mine.toml";

fn parse(text: &str) -> Result<Theme, ThemeError> {
    Theme::from_toml_str(text, Path::new(FILE), ColorDepth::TrueColor)
}

/// The error's text, after checking it names the file, the line and the key.
fn refused(text: &str, line: usize, key: &str) -> String {
    let err = parse(text).expect_err("theme should be refused");
    let shown = err.to_string();
    assert_eq!(err.line(), Some(line), "{shown}");
    assert_eq!(err.key(), Some(key), "{shown}");
    assert!(shown.starts_with(&format!("{FILE}:{line}: ")), "{shown}");
    shown
}

fn has_color(style: Style) -> bool {
    style.fg.is_some() || style.bg.is_some()
}

#[test]
fn builtins_load_at_every_depth() {
    for name in Theme::names() {
        for depth in [ColorDepth::TrueColor, ColorDepth::Ansi256, ColorDepth::None] {
            let theme = Theme::builtin(name, depth).unwrap_or_else(|| panic!("builtin theme {name} must load"));
            assert_eq!(theme.name(), *name);
            assert_eq!(theme.depth(), depth);
        }
    }
    assert!(Theme::builtin("solarized", ColorDepth::TrueColor).is_none());
    assert_eq!(Theme::names(), &["default", "light", "high-contrast", "mono"]);
}

#[test]
fn coloured_builtins_write_every_slot() {
    for name in ["default", "light", "high-contrast"] {
        let specs = builtin_specs(name).unwrap();
        for slot in Slot::ALL {
            let spec = specs[*slot as usize];
            assert!(spec != SlotSpec::default(), "{name} leaves [{slot}] unset");
        }
    }
}

#[test]
fn slot_names_round_trip() {
    for slot in Slot::ALL {
        assert_eq!(Slot::from_name(slot.name()), Some(*slot));
        assert_eq!(Slot::ALL[*slot as usize], *slot, "index order");
    }
}

#[test]
fn styles_follow_the_depth() {
    let true_color = Theme::builtin("default", ColorDepth::TrueColor).unwrap();
    assert_eq!(true_color.style(Slot::Error).fg, Some(Color::Rgb(0xe0, 0x6c, 0x75)));
    assert!(true_color.style(Slot::Error).add_modifier.contains(Modifier::BOLD));
    assert_eq!(true_color.style(Slot::Base).fg, Some(Color::Reset));
    let ansi = Theme::builtin("default", ColorDepth::Ansi256).unwrap();
    assert_eq!(ansi.style(Slot::Error).fg, Some(Color::Indexed(rgb_to_ansi256(0xe0, 0x6c, 0x75))));
    for slot in Slot::ALL {
        if let Some(color) = ansi.style(*slot).fg {
            assert!(matches!(color, Color::Indexed(_) | Color::Reset), "{slot}: {color:?}");
        }
    }
}

#[test]
fn mono_has_no_colours() {
    for depth in [ColorDepth::TrueColor, ColorDepth::Ansi256, ColorDepth::None] {
        let mono = Theme::builtin("mono", depth).unwrap();
        for slot in Slot::ALL {
            assert!(!has_color(mono.style(*slot)), "mono [{slot}] has a colour");
        }
        assert!(mono.style(Slot::Selection).add_modifier.contains(Modifier::REVERSED));
    }
}

#[test]
fn no_color_gives_the_mono_look_for_every_theme() {
    let mono = Theme::builtin("mono", ColorDepth::None).unwrap();
    for name in Theme::names() {
        let theme = Theme::builtin(name, ColorDepth::None).unwrap();
        for slot in Slot::ALL {
            assert!(!has_color(theme.style(*slot)), "{name} [{slot}] has a colour without colour");
            assert_eq!(theme.style(*slot), mono.style(*slot), "{name} [{slot}]");
        }
    }
    let user = Theme::from_toml_str("[error]\nfg = \"red\"\n", Path::new(FILE), ColorDepth::None).unwrap();
    assert_eq!(user.style(Slot::Error), mono.style(Slot::Error));
    // A colourless theme keeps its own modifiers.
    let plain = Theme::from_toml_str("inherit = \"mono\"\n[error]\nitalic = true\n", Path::new(FILE), ColorDepth::None)
        .unwrap();
    assert!(plain.style(Slot::Error).add_modifier.contains(Modifier::ITALIC));
}

#[test]
fn user_theme_overrides_key_by_key() {
    let theme = parse("[error]\nfg = \"red\"\n\n[selection]\nbold = false\nunderline = true\n").unwrap();
    assert_eq!(theme.name(), "mine");
    let error = theme.style(Slot::Error);
    assert_eq!(error.fg, Some(Color::Red));
    assert!(error.add_modifier.contains(Modifier::BOLD), "bold inherited from default");
    let selection = theme.style(Slot::Selection);
    assert_eq!(selection.bg, Some(Color::Rgb(0x3b, 0x42, 0x52)), "bg inherited");
    assert!(selection.sub_modifier.contains(Modifier::BOLD));
    assert!(!selection.add_modifier.contains(Modifier::BOLD));
    assert!(selection.add_modifier.contains(Modifier::UNDERLINED));
    let default = Theme::builtin("default", ColorDepth::TrueColor).unwrap();
    assert_eq!(theme.style(Slot::Header), default.style(Slot::Header));
}

#[test]
fn colour_forms() {
    let theme = parse(
        "[error]\nfg = \"ansi:202\"\nbg = \"reset\"\n[warning]\nfg = \"light_magenta\"\n[title]\nfg = \"#0000FF\"\n",
    )
    .unwrap();
    assert_eq!(theme.style(Slot::Error).fg, Some(Color::Indexed(202)));
    assert_eq!(theme.style(Slot::Error).bg, Some(Color::Reset));
    assert_eq!(theme.style(Slot::Warning).fg, Some(Color::LightMagenta));
    assert_eq!(theme.style(Slot::Title).fg, Some(Color::Rgb(0, 0, 255)));
}

#[test]
fn inherit_another_builtin_or_nothing() {
    let theme = parse("inherit = \"light\"\n[error]\nbold = false\n").unwrap();
    let light = Theme::builtin("light", ColorDepth::TrueColor).unwrap();
    assert_eq!(theme.style(Slot::Base), light.style(Slot::Base));
    assert_eq!(theme.style(Slot::Error).fg, light.style(Slot::Error).fg);
    let bare = parse("inherit = \"none\"\n[error]\nfg = \"red\"\n").unwrap();
    assert_eq!(bare.style(Slot::Error), Style::default().fg(Color::Red));
    assert_eq!(bare.style(Slot::Header), Style::default());
}

#[test]
fn job_and_node_states() {
    let theme = Theme::builtin("default", ColorDepth::TrueColor).unwrap();
    assert_eq!(theme.job_state(JobState::Running), theme.style(Slot::JobRunning));
    assert_eq!(theme.job_state(JobState::OutOfMemory), theme.style(Slot::JobFailed));
    assert_eq!(theme.job_state(JobState::Suspended), theme.style(Slot::JobHeld));
    assert_eq!(theme.job_state(JobState::Unknown), theme.style(Slot::JobOther));
    assert_eq!(theme.node_state(NodeState::Down), theme.style(Slot::NodeDown));
    assert_eq!(theme.node_state(NodeState::PoweredDown), theme.style(Slot::NodeOther));
    for state in JobState::ALL {
        let _ = theme.job_state(state);
    }
}

#[test]
fn load_and_relative_parent() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.toml");
    std::fs::write(&base, "inherit = \"high-contrast\"\n[title]\nfg = \"#123456\"\n").unwrap();
    let mine = dir.path().join("mine.toml");
    std::fs::write(&mine, "inherit = \"./base.toml\"\n[error]\nfg = \"green\"\n").unwrap();
    let theme = Theme::load(&mine, ColorDepth::TrueColor).unwrap();
    assert_eq!(theme.name(), "mine");
    assert_eq!(theme.style(Slot::Title).fg, Some(Color::Rgb(0x12, 0x34, 0x56)));
    assert_eq!(theme.style(Slot::Error).fg, Some(Color::Green));
    let hc = Theme::builtin("high-contrast", ColorDepth::TrueColor).unwrap();
    assert_eq!(theme.style(Slot::Base), hc.style(Slot::Base));

    let missing = dir.path().join("nope.toml");
    let err = Theme::load(&missing, ColorDepth::TrueColor).unwrap_err();
    assert!(matches!(err, ThemeError::NotFound { .. }));
    assert_eq!(err.to_string(), format!("{}: no such theme file", missing.display()));

    std::fs::write(&mine, "# mine\ninherit = \"gone.toml\"\n").unwrap();
    let err = Theme::load(&mine, ColorDepth::TrueColor).unwrap_err();
    assert_eq!((err.line(), err.key()), (Some(2), Some("inherit")));
    assert!(err.to_string().contains("cannot inherit: ") && err.to_string().contains("no such theme file"), "{err}");

    // An error in the parent names the parent.
    std::fs::write(&mine, "inherit = \"base.toml\"\n").unwrap();
    std::fs::write(&base, "[title]\nfg = \"#12345\"\n").unwrap();
    let err = Theme::load(&mine, ColorDepth::TrueColor).unwrap_err();
    assert!(err.to_string().starts_with(&format!("{}:2: bad colour \"#12345\"", base.display())), "{err}");
}

#[test]
fn inheritance_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, "inherit = \"b.toml\"\n[error]\nbold = true\n").unwrap();
    std::fs::write(&b, "inherit = \"a.toml\"\n").unwrap();
    let err = Theme::load(&a, ColorDepth::TrueColor).unwrap_err();
    assert_eq!((err.line(), err.key()), (Some(1), Some("inherit")));
    assert_eq!(
        err.to_string(),
        format!("{}:1: inheritance cycle: {} → {} → {}", b.display(), a.display(), b.display(), a.display())
    );
    // A file that inherits itself.
    std::fs::write(&a, "\n\ninherit = \"a.toml\"\n").unwrap();
    let err = Theme::load(&a, ColorDepth::TrueColor).unwrap_err();
    assert_eq!(err.to_string(), format!("{}:3: inheritance cycle: {} → {}", a.display(), a.display(), a.display()));
}

#[test]
fn unknown_slot() {
    let shown = refused("[error]\nfg = \"red\"\n\n[errror]\nfg = \"red\"\n", 4, "errror");
    assert!(
        shown.starts_with(&format!(
            "{FILE}:4: unknown slot `errror` (did you mean \"error\"?) (expected inherit or a slot: base, border,"
        )),
        "{shown}"
    );
    let shown = refused("name = \"x\"\n", 1, "name");
    assert!(shown.contains("unknown slot `name`"), "{shown}");
}

#[test]
fn bad_colours() {
    let shown = refused("[error]\nbold = true\nfg = \"#ff00\"\n", 3, "error.fg");
    assert_eq!(
        shown,
        format!(
            "{FILE}:3: bad colour \"#ff00\" for `fg` in [error]: expected \"#rrggbb\", a colour name (black, red, green, \
             yellow, blue, magenta, cyan, gray, dark_gray, light_red, light_green, light_yellow, light_blue, \
             light_magenta, light_cyan, white), \"ansi:0\"..\"ansi:255\" or \"reset\""
        )
    );
    refused("[base]\nbg = \"purple\"\n", 2, "base.bg");
    refused("[base]\nbg = \"ansi:300\"\n", 2, "base.bg");
    let shown = refused("[base]\nbg = 12\n", 2, "base.bg");
    assert!(shown.contains("found integer 12"), "{shown}");
}

#[test]
fn bad_slot_contents() {
    let shown = refused("[error]\nbolt = true\n", 2, "error.bolt");
    assert_eq!(
        shown,
        format!(
            "{FILE}:2: unknown key `bolt` in [error] (did you mean \"bold\"?) (expected one of: fg, bg, bold, italic, \
             underline, reversed, dim)"
        )
    );
    let shown = refused("[error]\nbold = \"yes\"\n", 2, "error.bold");
    assert_eq!(
        shown,
        format!("{FILE}:2: bad value for `bold` in [error]: expected true or false, found string \"yes\"")
    );
    let shown = refused("error = \"red\"\n", 1, "error");
    assert!(shown.contains("expected a table such as { fg = \"red\", bold = true }, found string \"red\""), "{shown}");
}

#[test]
fn inherit_inside_a_table() {
    let shown = refused("[error]\nbold = true\ninherit = \"light\"\n", 3, "error.inherit");
    assert!(shown.contains("write `inherit` at the top of the file, before the first [table]"), "{shown}");
}

#[test]
fn unknown_inherit() {
    let shown = refused("\ninherit = \"solarized\"\n", 2, "inherit");
    assert_eq!(
        shown,
        format!(
            "{FILE}:2: unknown theme \"solarized\" for `inherit` (expected one of: default, light, high-contrast, mono, \
             none, or a path to a .toml file)"
        )
    );
    let shown = refused("inherit = true\n", 1, "inherit");
    assert!(shown.contains("expected a theme name, found boolean true"), "{shown}");
}

#[test]
fn syntax_error_names_the_line() {
    let err = parse("[error]\nfg = \"red\nbold = true\n").unwrap_err();
    assert!(err.to_string().starts_with(&format!("{FILE}:2: TOML syntax error")), "{err}");
}
