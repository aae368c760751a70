use std::path::Path;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::*;

const FILE: &str = "/home/a/.config/flightdeck/my.toml";

fn parse(text: &str) -> Result<Keymap, KeymapError> {
    Keymap::from_toml_str(text, Path::new(FILE))
}

/// The error's text, after checking it names the file, the line and the key.
fn refused(text: &str, line: usize, key: &str) -> String {
    let err = parse(text).expect_err("keymap should be refused");
    let shown = err.to_string();
    assert_eq!(err.line(), Some(line), "{shown}");
    assert_eq!(err.key(), Some(key), "{shown}");
    assert!(shown.starts_with(&format!("{FILE}:{line}: ")), "{shown}");
    shown
}

fn ev(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    ev(KeyCode::Char(c))
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn act(a: UiAction) -> Resolution {
    Resolution::Action(a)
}

#[test]
fn builtins_load() {
    for name in Keymap::names() {
        let keymap = Keymap::builtin(name).unwrap_or_else(|| panic!("builtin keymap {name} must load"));
        assert_eq!(keymap.name(), *name);
    }
    assert!(Keymap::builtin("emacs").is_none());
}

#[test]
fn default_keys() {
    let k = Keymap::builtin("default").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('q')]), act(UiAction::Quit));
    assert_eq!(k.resolve(Mode::Jobs, &[ctrl('c')]), act(UiAction::Quit));
    assert_eq!(k.resolve(Mode::Jobs, &[ch(':')]), act(UiAction::CommandMode));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('/')]), act(UiAction::Filter));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('?')]), act(UiAction::Help));
    assert_eq!(k.resolve(Mode::Jobs, &[ev(KeyCode::Esc)]), act(UiAction::Back));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('j')]), act(UiAction::Down));
    assert_eq!(k.resolve(Mode::Jobs, &[ev(KeyCode::Down)]), act(UiAction::Down));
    assert_eq!(k.resolve(Mode::Jobs, &[ev(KeyCode::Enter)]), act(UiAction::Open));
    assert_eq!(k.resolve(Mode::Overview, &[ch('2')]), act(UiAction::ScreenJobs));
    assert_eq!(k.resolve(Mode::Jobs, &[ch(' ')]), act(UiAction::ToggleSelect));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('C')]), act(UiAction::Cancel));
    assert_eq!(k.resolve(Mode::Nodes, &[ch('D')]), act(UiAction::Drain));
    assert_eq!(k.resolve(Mode::Nodes, &[ch('R')]), act(UiAction::Resume));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('R')]), act(UiAction::Requeue));
    assert_eq!(k.resolve(Mode::Dialog, &[ch('y')]), act(UiAction::Confirm));
    assert_eq!(k.resolve(Mode::Dialog, &[ev(KeyCode::Esc)]), act(UiAction::Dismiss));
    assert_eq!(k.resolve(Mode::Submit, &[KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)]), act(UiAction::SubmitForm));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('~')]), Resolution::None);
    assert_eq!(k.resolve(Mode::Jobs, &[]), Resolution::None);
}

#[test]
fn every_action_has_a_key_in_default() {
    let k = Keymap::builtin("default").unwrap();
    for action in UiAction::ALL {
        let bound = Mode::ALL.iter().any(|m| k.hint(*m, *action).is_some());
        assert!(bound, "{action} has no key in the default keymap");
    }
}

#[test]
fn mode_table_wins_over_global() {
    let k = Keymap::builtin("default").unwrap();
    // tab is next_screen globally but switches logs in the detail view.
    assert_eq!(k.resolve(Mode::Jobs, &[ev(KeyCode::Tab)]), act(UiAction::NextScreen));
    assert_eq!(k.resolve(Mode::Detail, &[ev(KeyCode::Tab)]), act(UiAction::SwitchLog));
    // enter opens, except in a form (next field) and a dialog (confirm).
    assert_eq!(k.resolve(Mode::Submit, &[ev(KeyCode::Enter)]), act(UiAction::NextField));
    assert_eq!(k.resolve(Mode::Dialog, &[ev(KeyCode::Enter)]), act(UiAction::Confirm));
    // n is new_job globally, dismiss in a dialog.
    assert_eq!(k.resolve(Mode::Overview, &[ch('n')]), act(UiAction::NewJob));
    assert_eq!(k.resolve(Mode::Dialog, &[ch('n')]), act(UiAction::Dismiss));
}

#[test]
fn text_modes_keep_plain_characters_from_global() {
    let k = Keymap::builtin("default").unwrap();
    assert_eq!(k.resolve(Mode::Submit, &[ch('q')]), Resolution::None);
    assert_eq!(k.resolve(Mode::Dialog, &[ch('1')]), Resolution::None);
    // Quit, help, back and refresh on non-text keys still reach [global].
    assert_eq!(k.resolve(Mode::Submit, &[ctrl('c')]), act(UiAction::Quit));
    assert_eq!(k.resolve(Mode::Submit, &[ev(KeyCode::Esc)]), act(UiAction::Back));
    assert_eq!(k.resolve(Mode::Submit, &[ev(KeyCode::F(1))]), act(UiAction::Help));
    assert_eq!(k.resolve(Mode::Dialog, &[ctrl('r')]), act(UiAction::Refresh));
    // Editing keys stay with the text field.
    assert_eq!(k.resolve(Mode::Submit, &[ev(KeyCode::Left)]), Resolution::None);
    assert_eq!(k.resolve(Mode::Submit, &[ev(KeyCode::Home)]), Resolution::None);
    let vim = Keymap::builtin("vim").unwrap();
    assert_eq!(vim.resolve(Mode::Submit, &[ch('g')]), Resolution::None);
    assert_eq!(vim.resolve(Mode::Submit, &[ctrl('u')]), Resolution::None);
    assert_eq!(vim.resolve(Mode::Jobs, &[ctrl('u')]), act(UiAction::PageUp));
    // A global sequence for an allowed action still waits for its second key.
    let k = parse("[global]\n\"ctrl+x ctrl+q\" = \"quit\"\n\"ctrl+x ctrl+u\" = \"page_up\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Submit, &[ctrl('x')]), Resolution::Prefix);
    assert_eq!(k.resolve(Mode::Submit, &[ctrl('x'), ctrl('q')]), act(UiAction::Quit));
    assert_eq!(k.resolve(Mode::Submit, &[ctrl('x'), ctrl('u')]), Resolution::None);
    let effective = Keymap::builtin("default").unwrap().effective_bindings(Mode::Submit);
    assert!(effective.contains(&("esc".to_string(), UiAction::Back)));
    assert!(!effective.iter().any(|(_, a)| *a == UiAction::Left), "{effective:?}");
}

#[test]
fn sequences_wait_for_more_keys() {
    let vim = Keymap::builtin("vim").unwrap();
    assert_eq!(vim.resolve(Mode::Jobs, &[ch('g')]), Resolution::Prefix);
    assert_eq!(vim.resolve(Mode::Jobs, &[ch('g'), ch('g')]), act(UiAction::Top));
    assert_eq!(vim.resolve(Mode::Jobs, &[ch('g'), ch('x')]), Resolution::None);
    assert_eq!(vim.resolve(Mode::Jobs, &[ch('Z'), ch('Z')]), act(UiAction::Quit));
    assert_eq!(vim.resolve(Mode::Jobs, &[ch('G')]), act(UiAction::Bottom));
    assert_eq!(vim.resolve(Mode::Jobs, &[ctrl('d')]), act(UiAction::PageDown));
    assert_eq!(vim.resolve(Mode::Jobs, &[ch('h')]), act(UiAction::Left));
    // vim keeps everything default had.
    assert_eq!(vim.resolve(Mode::Jobs, &[ch('C')]), act(UiAction::Cancel));
    assert_eq!(vim.resolve(Mode::Jobs, &[ch(':')]), act(UiAction::CommandMode));
    // Release events do not count.
    let release = KeyEvent { kind: KeyEventKind::Release, ..ch('g') };
    assert_eq!(vim.resolve(Mode::Jobs, &[ch('g'), release]), Resolution::Prefix);
}

#[test]
fn shift_is_normalised() {
    let k = parse("[jobs]\n\"shift+x\" = \"cancel\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('X')]), act(UiAction::Cancel));
    assert_eq!(k.resolve(Mode::Jobs, &[KeyEvent::new(KeyCode::Char('X'), KeyModifiers::SHIFT)]), act(UiAction::Cancel));
    assert_eq!(k.resolve(Mode::Jobs, &[KeyEvent::new(KeyCode::Char('x'), KeyModifiers::SHIFT)]), act(UiAction::Cancel));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('x')]), Resolution::None);
    assert_eq!(k.hint(Mode::Jobs, UiAction::Cancel).as_deref(), Some("C"));
    let back = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
    assert_eq!(k.resolve(Mode::Jobs, &[back]), act(UiAction::PrevScreen));
    let shifted_question = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::SHIFT);
    assert_eq!(k.resolve(Mode::Jobs, &[shifted_question]), act(UiAction::Help));
}

#[test]
fn user_file_inherits_default_and_overrides() {
    let k = parse("[jobs]\n\"x\" = \"cancel\"\n\"C\" = \"none\"\n").unwrap();
    assert_eq!(k.name(), "my");
    assert_eq!(k.resolve(Mode::Jobs, &[ch('x')]), act(UiAction::Cancel));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('C')]), Resolution::None);
    assert_eq!(k.resolve(Mode::Jobs, &[ch('q')]), act(UiAction::Quit), "the rest of default is kept");
    assert_eq!(k.hint(Mode::Jobs, UiAction::Cancel).as_deref(), Some("x"));
    assert!(!k.bindings(Mode::Jobs).iter().any(|(key, _)| key == "C"));
}

#[test]
fn unbinding_in_a_mode_shadows_global() {
    let k = parse("[jobs]\n\"q\" = \"none\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('q')]), Resolution::None);
    assert_eq!(k.resolve(Mode::Nodes, &[ch('q')]), act(UiAction::Quit));
    assert_eq!(k.hint(Mode::Jobs, UiAction::Quit).as_deref(), Some("ctrl+c"));
    assert_eq!(k.hint(Mode::Nodes, UiAction::Quit).as_deref(), Some("q"));
    let k = parse("[global]\n\"q\" = \"none\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('q')]), Resolution::None);
}

#[test]
fn unbinding_a_prefix_blocker_frees_the_sequence() {
    let text = "[jobs]\n\"c\" = \"none\"\n\"c c\" = \"filter_cluster\"\n";
    let k = parse(text).unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('c')]), Resolution::Prefix);
    assert_eq!(k.resolve(Mode::Jobs, &[ch('c'), ch('c')]), act(UiAction::FilterCluster));
}

#[test]
fn inherit_none_starts_empty() {
    let k = parse("inherit = \"none\"\n[global]\n\"x\" = \"quit\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('q')]), Resolution::None);
    assert_eq!(k.resolve(Mode::Jobs, &[ch('x')]), act(UiAction::Quit));
    assert_eq!(k.bindings(Mode::Global), vec![("x".to_string(), UiAction::Quit)]);
    assert!(k.bindings(Mode::Jobs).is_empty());
}

#[test]
fn inherit_vim() {
    let k = parse("inherit = \"vim\"\n[jobs]\n\"x\" = \"cancel\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('g'), ch('g')]), act(UiAction::Top));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('x')]), act(UiAction::Cancel));
}

#[test]
fn bindings_are_grouped_by_action() {
    let k = Keymap::builtin("default").unwrap();
    let global = k.bindings(Mode::Global);
    assert_eq!(global[0], ("q".to_string(), UiAction::Quit));
    assert_eq!(global[1], ("ctrl+c".to_string(), UiAction::Quit));
    let up = global.iter().position(|(_, a)| *a == UiAction::Up).unwrap();
    assert_eq!(global[up].0, "k");
    assert_eq!(global[up + 1].0, "up");
    let jobs = k.bindings(Mode::Jobs);
    assert!(jobs.contains(&("space".to_string(), UiAction::ToggleSelect)));
    assert!(jobs.contains(&("C".to_string(), UiAction::Cancel)));
    assert!(!jobs.iter().any(|(_, a)| *a == UiAction::Quit), "global keys are not in a mode's own table");
    let effective = k.effective_bindings(Mode::Detail);
    assert!(effective.contains(&("tab".to_string(), UiAction::SwitchLog)));
    assert!(!effective.contains(&("tab".to_string(), UiAction::NextScreen)), "shadowed");
    assert!(effective.contains(&("q".to_string(), UiAction::Quit)));
    let vim = Keymap::builtin("vim").unwrap();
    assert!(vim.bindings(Mode::Global).contains(&("g g".to_string(), UiAction::Top)));
}

#[test]
fn hints() {
    let k = Keymap::builtin("default").unwrap();
    assert_eq!(k.hint(Mode::Jobs, UiAction::Cancel).as_deref(), Some("C"));
    assert_eq!(k.hint(Mode::Jobs, UiAction::Refresh).as_deref(), Some("r"));
    assert_eq!(k.hint(Mode::Jobs, UiAction::Quit).as_deref(), Some("q"));
    assert_eq!(k.hint(Mode::Submit, UiAction::Quit).as_deref(), Some("ctrl+c"), "q is text in a form");
    assert_eq!(k.hint(Mode::Submit, UiAction::SubmitForm).as_deref(), Some("alt+enter"));
    assert_eq!(k.hint(Mode::Detail, UiAction::NextScreen), None, "tab is switch_log there");
    assert_eq!(k.hint(Mode::Overview, UiAction::Cancel), None);
    let vim = Keymap::builtin("vim").unwrap();
    assert_eq!(vim.hint(Mode::Jobs, UiAction::Top).as_deref(), Some("home"));
}

#[test]
fn load_reads_a_file_and_its_relative_parent() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.toml");
    std::fs::write(&base, "inherit = \"none\"\n[global]\n\"x\" = \"quit\"\n").unwrap();
    let mine = dir.path().join("mine.toml");
    std::fs::write(&mine, "inherit = \"base.toml\"\n[jobs]\n\"y\" = \"hold\"\n").unwrap();
    let k = Keymap::load(&mine).unwrap();
    assert_eq!(k.name(), "mine");
    assert_eq!(k.resolve(Mode::Jobs, &[ch('x')]), act(UiAction::Quit));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('y')]), act(UiAction::Hold));
    assert_eq!(k.resolve(Mode::Jobs, &[ch('q')]), Resolution::None);

    let missing = dir.path().join("nope.toml");
    let err = Keymap::load(&missing).unwrap_err();
    assert!(matches!(err, KeymapError::NotFound { .. }));
    assert_eq!(err.to_string(), format!("{}: no such keymap file", missing.display()));

    // An error in the parent names the parent.
    std::fs::write(&base, "[global]\n\"x\" = \"quitt\"\n").unwrap();
    let shown = Keymap::load(&mine).unwrap_err().to_string();
    assert!(shown.starts_with(&format!("{}:2: unknown action \"quitt\"", base.display())), "{shown}");

    // A missing parent is reported on the inherit line.
    std::fs::write(&mine, "\ninherit = \"gone.toml\"\n").unwrap();
    let err = Keymap::load(&mine).unwrap_err();
    assert_eq!(err.line(), Some(2));
    assert_eq!(err.key(), Some("inherit"));
    assert!(err.to_string().contains("cannot inherit: ") && err.to_string().contains("no such keymap file"), "{err}");
}

#[test]
fn inheritance_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, "inherit = \"b.toml\"\n").unwrap();
    std::fs::write(&b, "# b\ninherit = \"a.toml\"\n").unwrap();
    let err = Keymap::load(&a).unwrap_err();
    let shown = err.to_string();
    assert_eq!(err.key(), Some("inherit"));
    assert_eq!(
        shown,
        format!(
            "{}:2: inheritance cycle: {} → {} → {}",
            b.display(),
            a.display(),
            b.display(),
            dir.path().join("./a.toml").display()
        )
        .replace("/./", "/")
    );
}

#[test]
fn unknown_action_with_suggestion() {
    let text = "[global]\n\"q\" = \"quit\"\n\n[jobs]\n\"x\" = \"hold\"\n\n\"C\" = \"cancle\"\n";
    let shown = refused(text, 7, "C");
    assert_eq!(
        shown,
        format!("{FILE}:7: unknown action \"cancle\" for key \"C\" in [jobs] (did you mean \"cancel\"?)")
    );
    let shown = refused("[jobs]\n\"x\" = \"explode\"\n", 2, "x");
    assert_eq!(shown, format!("{FILE}:2: unknown action \"explode\" for key \"x\" in [jobs]"));
}

#[test]
fn unknown_key_spec() {
    let shown = refused("[nodes]\n\"ctrl+foo\" = \"drain\"\n", 2, "ctrl+foo");
    assert!(
        shown
            .starts_with(&format!("{FILE}:2: unknown key \"ctrl+foo\" in [nodes]: unknown key name \"foo\" (a key is")),
        "{shown}"
    );
    let shown = refused("[nodes]\n\"hyper+x\" = \"up\"\n", 2, "hyper+x");
    assert!(shown.contains("unknown modifier \"hyper\""), "{shown}");
    let shown = refused("[nodes]\n\"shift+?\" = \"help\"\n", 2, "shift+?");
    assert!(shown.contains("write the character itself"), "{shown}");
}

#[test]
fn inherit_inside_a_table() {
    let shown = refused("[jobs]\n\"x\" = \"hold\"\ninherit = \"vim\"\n", 3, "inherit");
    assert_eq!(
        shown,
        format!("{FILE}:3: `inherit` inside [jobs]: write `inherit` at the top of the file, before the first [table]")
    );
}

#[test]
fn unknown_table() {
    let shown = refused("[global]\n\"q\" = \"quit\"\n[job]\n\"x\" = \"hold\"\n", 3, "job");
    assert_eq!(
        shown,
        format!(
            "{FILE}:3: unknown table [job] (did you mean \"jobs\"?) (expected inherit, or one of the tables: global, \
             overview, jobs, nodes, gpus, usage, history, detail, submit, dialog)"
        )
    );
    let shown = refused("name = \"mine\"\n", 1, "name");
    assert!(shown.contains("unknown key `name`"), "{shown}");
    let shown = refused("jobs = \"cancel\"\n", 1, "jobs");
    assert!(shown.contains("expected a table of key = \"action\""), "{shown}");
}

#[test]
fn bad_values() {
    let shown = refused("[jobs]\n\"x\" = false\n", 2, "x");
    assert_eq!(
        shown,
        format!(
            "{FILE}:2: bad value for key \"x\" in [jobs]: expected an action name, or \"none\" to unbind the key; found \
             boolean false"
        )
    );
    let shown = refused("inherit = 3\n", 1, "inherit");
    assert!(shown.contains("bad value for `inherit`"), "{shown}");
    let shown = refused("\ninherit = \"emacs\"\n", 2, "inherit");
    assert_eq!(
        shown,
        format!(
            "{FILE}:2: unknown keymap \"emacs\" for `inherit` (expected one of: default, vim, none, or a path to a .toml file)"
        )
    );
}

#[test]
fn prefix_conflict_in_one_file() {
    let text = "[jobs]\n\"g\" = \"top\"\n\"x\" = \"hold\"\n\"g g\" = \"bottom\"\n";
    let shown = refused(text, 4, "g g");
    assert_eq!(
        shown,
        format!(
            "{FILE}:4: key \"g g\" in [jobs] conflicts with \"g\" = \"top\" (line 2): \"g\" acts as soon as it is typed, \
             so \"g g\" could never be completed; unbind one of them with = \"none\""
        )
    );
    // The other order is reported at the later line too.
    let text = "[jobs]\n\"g g\" = \"bottom\"\n\"g\" = \"top\"\n";
    let shown = refused(text, 3, "g");
    assert!(shown.contains("conflicts with \"g g\" = \"bottom\" (line 2)"), "{shown}");
}

#[test]
fn prefix_conflict_with_the_parent_names_the_parent() {
    let shown = refused("inherit = \"vim\"\n[global]\n\"g\" = \"screen_gpus\"\n", 3, "g");
    assert!(shown.contains("conflicts with \"g g\" = \"top\" (keymaps/vim.toml:"), "{shown}");
    // Unbinding the inherited sequence resolves it.
    let k = parse("inherit = \"vim\"\n[global]\n\"g g\" = \"none\"\n\"g\" = \"screen_gpus\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('g')]), act(UiAction::ScreenGpus));
}

#[test]
fn mode_and_global_sequences_do_not_conflict() {
    // A screen may shadow a global sequence's first key: the screen's table wins.
    let k = parse("inherit = \"vim\"\n[jobs]\n\"g\" = \"screen_gpus\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('g')]), act(UiAction::ScreenGpus));
    assert_eq!(k.resolve(Mode::Nodes, &[ch('g')]), Resolution::Prefix);
}

#[test]
fn same_key_written_twice() {
    let shown = refused("[jobs]\n\"G\" = \"bottom\"\n\"shift+g\" = \"top\"\n", 3, "shift+g");
    assert_eq!(shown, format!("{FILE}:3: key \"shift+g\" in [jobs] is the same key as \"G\" (line 2); bind it once"));
}

#[test]
fn destructive_action_on_bare_ctrl_chord() {
    let shown = refused("[jobs]\n\"ctrl+k\" = \"cancel\"\n", 2, "ctrl+k");
    assert!(
        shown.starts_with(&format!(
            "{FILE}:2: key \"ctrl+k\" in [jobs] puts the destructive action \"cancel\" on the bare Ctrl chord \"ctrl+k\"; \
             terminals, shells and tmux claim those"
        )),
        "{shown}"
    );
    assert!(shown.contains("ctrl+b the tmux prefix"), "{shown}");
    refused("[submit]\n\"ctrl+s\" = \"submit_form\"\n", 2, "ctrl+s");
    refused("[dialog]\n\"ctrl+y\" = \"confirm\"\n", 2, "ctrl+y");
    refused("[nodes]\n\"g ctrl+d\" = \"drain\"\n", 2, "g ctrl+d");
    refused("[jobs]\n\"ctrl+shift+r\" = \"requeue\"\n", 2, "ctrl+shift+r");
    // Non-destructive actions may use Ctrl; destructive ones may use other chords.
    parse("[jobs]\n\"ctrl+a\" = \"select_all\"\n\"alt+ctrl+k\" = \"cancel\"\n\"f8\" = \"cancel\"\n").unwrap();
}

#[test]
fn syntax_errors_name_the_line() {
    let err = parse("[jobs]\n\"x\" = \"hold\n").unwrap_err();
    let shown = err.to_string();
    assert!(shown.starts_with(&format!("{FILE}:2: TOML syntax error")), "{shown}");
    let err = parse("[jobs]\n\"x\" = \"hold\"\n\"x\" = \"release\"\n").unwrap_err();
    assert_eq!(err.line(), Some(3), "{err}");
    assert!(err.to_string().contains("duplicate key"), "{err}");
}

#[test]
fn inline_and_dotted_tables() {
    let k = parse("jobs = { \"x\" = \"hold\" }\nnodes.y = \"drain\"\n").unwrap();
    assert_eq!(k.resolve(Mode::Jobs, &[ch('x')]), act(UiAction::Hold));
    assert_eq!(k.resolve(Mode::Nodes, &[ch('y')]), act(UiAction::Drain));
}
