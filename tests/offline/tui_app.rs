//! `App::update` without a terminal: dialogs capture their targets, selection follows jobs
//! by id, filters survive refreshes, the command line, the help, logs, the submit form.
//! Fleet states are built by hand from model types; the clock is passed in.

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use flightdeck::backend::{JobAction, LogChunk, NodeAction};
use flightdeck::fleet::{Action, ActionOutcome, ClusterState, FleetState};
use flightdeck::model::{
    ArrayInfo, GpuAllocation, GpuSlot, Health, Job, JobRef, JobState, Node, NodeRef, NodeState, Snapshot, Verb,
};
use flightdeck::spec::JobSpec;
use flightdeck::tui::action::{Mode, UiAction};
use flightdeck::tui::app::dialog::Dialog;
use flightdeck::tui::app::form::Field;
use flightdeck::tui::app::log::LogStream;
use flightdeck::tui::app::row_cache::Cell;
use flightdeck::tui::keymap::Keymap;
use flightdeck::tui::theme::{ColorDepth, Theme};
use flightdeck::tui::{App, Command, Msg, Screen, TuiOptions};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).unwrap()
}

fn options(keymap: Keymap) -> TuiOptions {
    TuiOptions {
        keymap,
        theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
        read_only: false,
        user: "alice".into(),
        config_label: "test".into(),
        no_clusters: Vec::new(),
    }
}

fn app() -> App {
    let mut app = App::new(options(Keymap::builtin("default").unwrap()));
    app.update(Msg::Tick(t0()));
    app
}

fn job(cluster: &str, id: &str, state: JobState, user: &str, name: &str) -> Job {
    let mut j = Job::new(JobRef::new(cluster, id), state);
    j.user = user.into();
    j.name = name.into();
    j.partition = "gpu".into();
    j
}

fn node(cluster: &str, name: &str, state: NodeState, gpus: u32, allocated: u32) -> Node {
    let mut n = Node::new(cluster, name, state);
    n.gpus = vec![GpuSlot {
        model: "a100".into(),
        gpu_product: None,
        shared: false,
        total: gpus,
        allocated,
        unhealthy: 0,
        utilisation: None,
    }];
    n.cpus_total = 64;
    n.memory_total_mb = 512 * 1024;
    n
}

/// A fleet state of `(cluster, jobs, nodes)`.
fn fleet(version: u64, clusters: Vec<(&str, Vec<Job>, Vec<Node>)>) -> Msg {
    let clusters = clusters
        .into_iter()
        .map(|(name, jobs, nodes)| {
            let mut snap = Snapshot { cluster: name.into(), taken_at: Some(t0()), jobs, nodes, ..Snapshot::default() };
            snap.derive_queues();
            ClusterState {
                health: Health::Fresh { at: t0() },
                snapshot: Some(Arc::new(snap)),
                attempts: 1,
                placement: flightdeck::backend::Registry::builtin().placement(&"slurm".into()),
                ..ClusterState::new(name, "slurm")
            }
        })
        .collect();
    Msg::Fleet(Arc::new(FleetState { clusters, read_only: false, version }))
}

fn jobs(cluster: &str, ids: &[&str]) -> Vec<Job> {
    ids.iter().map(|id| job(cluster, id, JobState::Running, "bob", &format!("job-{id}"))).collect()
}

fn press(app: &mut App, key: KeyEvent) -> Vec<Command> {
    app.update(Msg::Key(key))
}

fn ch(app: &mut App, c: char) -> Vec<Command> {
    press(app, KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(app: &mut App, code: KeyCode) -> Vec<Command> {
    press(app, KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(app: &mut App, text: &str) -> Vec<Command> {
    text.chars().flat_map(|c| ch(app, c)).collect()
}

fn refs(cluster: &str, ids: &[&str]) -> Vec<JobRef> {
    ids.iter().map(|id| JobRef::new(cluster, *id)).collect()
}

/// The job actions among `commands`.
fn job_actions(commands: &[Command]) -> Vec<(JobRef, JobAction)> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Fleet(Action::Job { job, action, .. }) => Some((job.clone(), *action)),
            _ => None,
        })
        .collect()
}

fn on_jobs(app: &mut App) {
    ch(app, '2');
    assert_eq!(app.screen(), Screen::Jobs);
}

#[test]
fn cancel_sends_the_targets_captured_when_the_dialog_opened() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1", "2", "3", "4", "5"]), vec![])]));
    on_jobs(&mut app);
    ch(&mut app, 'j');
    ch(&mut app, 'j');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "3")));
    assert!(ch(&mut app, 'C').is_empty(), "opening the dialog sends nothing");
    let Some(Dialog::Jobs { action: JobAction::Cancel, targets, .. }) = app.dialog() else {
        panic!("no cancel dialog")
    };
    assert_eq!(targets, &refs("fd22", &["3"]));

    // A refresh reorders the list and removes the target; the cursor moves, the dialog not.
    app.update(fleet(2, vec![("fd22", jobs("fd22", &["5", "4", "2", "1", "9"]), vec![])]));
    assert_ne!(app.cursor_job(), Some(&JobRef::new("fd22", "3")));
    assert_eq!(app.dialog().unwrap().targets(), vec!["fd22/3".to_string()]);

    let sent = ch(&mut app, 'y');
    assert_eq!(job_actions(&sent), vec![(JobRef::new("fd22", "3"), JobAction::Cancel)]);
    assert_eq!(sent.len(), 1);
    assert!(app.dialog().is_none());
}

#[test]
fn dismissing_a_dialog_sends_nothing() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1", "2"]), vec![])]));
    on_jobs(&mut app);
    for dismiss in [KeyCode::Char('n'), KeyCode::Esc] {
        ch(&mut app, 'C');
        assert!(app.dialog().is_some());
        let sent = code(&mut app, dismiss);
        assert!(sent.is_empty(), "{dismiss:?} sent {sent:?}");
        assert!(app.dialog().is_none());
    }
    // Requeue is destructive too: it asks, and dismissing it sends nothing either.
    ch(&mut app, 'R');
    assert!(matches!(app.dialog(), Some(Dialog::Jobs { action: JobAction::Requeue, .. })));
    assert!(code(&mut app, KeyCode::Esc).is_empty());
}

#[test]
fn selection_follows_the_job_by_id() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1", "2", "3", "4", "5"]), vec![])]));
    on_jobs(&mut app);
    for _ in 0..3 {
        ch(&mut app, 'j');
    }
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "4")));

    // Reordered (sort by name: new names put job 4 first).
    let mut reordered = jobs("fd22", &["1", "2", "3", "4", "5"]);
    reordered[3].name = "aaa".into();
    app.update(fleet(2, vec![("fd22", reordered, vec![])]));
    ch(&mut app, 's'); // cluster → id
    ch(&mut app, 's'); // id → name
    assert_eq!(app.job_sort().0, flightdeck::columns::JobColumn::Name);
    assert_eq!(app.visible_jobs()[0], JobRef::new("fd22", "4"));
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "4")));

    // Jobs before it vanish: it is still selected, at a new index.
    app.update(fleet(3, vec![("fd22", jobs("fd22", &["4", "5", "6"]), vec![])]));
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "4")));

    // Back to sorting by id; the job itself vanishes: the same row index, clamped.
    // The cycle passes over the optional columns no row fills (KIND, $/H, GPU%).
    use flightdeck::columns::JobColumn;
    let mut cycle = Vec::new();
    for _ in 0..JobColumn::COCKPIT.len() {
        ch(&mut app, 's');
        cycle.push(app.job_sort().0);
        if app.job_sort().0 == JobColumn::Id {
            break;
        }
    }
    assert_eq!(app.job_sort().0, JobColumn::Id, "{cycle:?}");
    for hidden in [JobColumn::Kind, JobColumn::Cost, JobColumn::GpuUse] {
        assert!(!cycle.contains(&hidden), "{hidden:?} is not shown: {cycle:?}");
    }
    ch(&mut app, 'j');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "5")));
    app.update(fleet(4, vec![("fd22", jobs("fd22", &["4", "6", "7"]), vec![])]));
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "6")), "index 1 kept");
    app.update(fleet(5, vec![("fd22", jobs("fd22", &["4"]), vec![])]));
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "4")), "clamped to the last row");
    app.update(fleet(6, vec![("fd22", vec![], vec![])]));
    assert_eq!(app.cursor_job(), None);
    app.update(fleet(7, vec![("fd22", jobs("fd22", &["8"]), vec![])]));
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "8")));
}

#[test]
fn filters_survive_refreshes() {
    let mut app = app();
    let mut list = vec![
        job("fd22", "1", JobState::Running, "alice", "train-llm"),
        job("fd22", "2", JobState::Pending, "alice", "train-vit"),
        job("fd22", "3", JobState::Pending, "bob", "train-llm"),
        job("fd22", "4", JobState::Pending, "alice", "eval"),
    ];
    app.update(fleet(1, vec![("fd22", list.clone(), vec![])]));
    on_jobs(&mut app);
    ch(&mut app, '/');
    typed(&mut app, "train");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_jobs(), refs("fd22", &["1", "2", "3"]));
    ch(&mut app, 't'); // state: pending
    assert_eq!(app.state_filter(), Some(JobState::Pending));
    ch(&mut app, 'm'); // mine
    assert_eq!(app.visible_jobs(), refs("fd22", &["2"]));

    list.push(job("fd22", "5", JobState::Pending, "alice", "train-moe"));
    list.push(job("fd22", "6", JobState::Pending, "carol", "train-moe"));
    list.push(job("fd22", "7", JobState::Running, "alice", "train-moe"));
    list.push(job("fd22", "8", JobState::Pending, "alice", "sweep"));
    app.update(fleet(2, vec![("fd22", list.clone(), vec![])]));
    assert_eq!(app.visible_jobs(), refs("fd22", &["2", "5"]));
    assert_eq!(app.job_filter_text(), "train");

    // Esc clears the fuzzy filter; the quick filters stay.
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.visible_jobs(), refs("fd22", &["2", "4", "5", "8"]));
    // Fuzzy, not substring: `trmoe` matches train-moe.
    ch(&mut app, '/');
    typed(&mut app, "trmoe");
    assert_eq!(app.visible_jobs(), refs("fd22", &["5"]));
    // Editing back widens the result again.
    code(&mut app, KeyCode::Backspace);
    code(&mut app, KeyCode::Backspace);
    code(&mut app, KeyCode::Backspace);
    assert_eq!(app.visible_jobs(), refs("fd22", &["2", "5"]));
}

#[test]
fn cluster_filter_cycles_and_survives_refreshes() {
    let mut app = app();
    let two = |v| fleet(v, vec![("fd22", jobs("fd22", &["1", "2"]), vec![]), ("fd24", jobs("fd24", &["7"]), vec![])]);
    app.update(two(1));
    on_jobs(&mut app);
    assert_eq!(app.visible_job_count(), 3);
    ch(&mut app, 'c');
    assert_eq!(app.cluster_filter(), Some("fd22"));
    assert_eq!(app.visible_jobs(), refs("fd22", &["1", "2"]));
    app.update(two(2));
    assert_eq!(app.visible_jobs(), refs("fd22", &["1", "2"]));
    ch(&mut app, 'c');
    assert_eq!(app.visible_jobs(), refs("fd24", &["7"]));
    ch(&mut app, 'c');
    assert_eq!(app.cluster_filter(), None);
    assert_eq!(app.visible_job_count(), 3);
}

#[test]
fn multi_select_cancel_names_every_target() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1", "2", "3", "4"]), vec![])]));
    on_jobs(&mut app);
    ch(&mut app, ' '); // marks 1, moves to 2
    ch(&mut app, 'j'); // 3
    ch(&mut app, ' '); // marks 3
    assert_eq!(app.marked_jobs(), refs("fd22", &["1", "3"]));
    // Marks survive a refresh; a vanished job's mark is dropped.
    app.update(fleet(2, vec![("fd22", jobs("fd22", &["1", "2", "3", "4", "5"]), vec![])]));
    assert_eq!(app.marked_jobs(), refs("fd22", &["1", "3"]));
    ch(&mut app, ' '); // the cursor is on 4 now
    app.update(fleet(3, vec![("fd22", jobs("fd22", &["1", "2", "3", "5"]), vec![])]));
    assert_eq!(app.marked_jobs(), refs("fd22", &["1", "3"]));

    ch(&mut app, 'C');
    let dialog = app.dialog().expect("dialog");
    assert_eq!(dialog.targets(), vec!["fd22/1".to_string(), "fd22/3".to_string()]);
    assert_eq!(dialog.title(), "Cancel 2 jobs?");
    let sent = code(&mut app, KeyCode::Enter);
    assert_eq!(
        job_actions(&sent),
        vec![(JobRef::new("fd22", "1"), JobAction::Cancel), (JobRef::new("fd22", "3"), JobAction::Cancel)]
    );
    assert!(app.marked_jobs().is_empty(), "confirmed targets are unmarked");
}

#[test]
fn hold_and_release_act_at_once_and_results_come_back_as_toasts() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1", "2"]), vec![])]));
    on_jobs(&mut app);
    let sent = ch(&mut app, 'H');
    assert!(app.dialog().is_none());
    assert_eq!(job_actions(&sent), vec![(JobRef::new("fd22", "1"), JobAction::Hold)]);
    let sent = ch(&mut app, 'U');
    assert_eq!(job_actions(&sent), vec![(JobRef::new("fd22", "1"), JobAction::Release)]);

    app.update(Msg::Outcome(ActionOutcome { verb: Verb::Hold, target: "fd22/1".into(), result: Ok(String::new()) }));
    app.update(Msg::Outcome(ActionOutcome {
        verb: Verb::Release,
        target: "fd22/1".into(),
        result: Err("`scontrol release 1` failed (exit 1): Access/permission denied".into()),
    }));
    let toasts = app.toasts();
    assert_eq!(toasts.len(), 2);
    assert!(!toasts[0].error && toasts[0].text.contains("hold fd22/1"));
    assert!(toasts[1].error && toasts[1].text.contains("Access/permission denied"), "{}", toasts[1].text);

    // Toasts expire with the clock passed in; an idle tick changes nothing on screen.
    let generation = app.generation();
    app.update(Msg::Tick(t0() + chrono::Duration::seconds(1)));
    assert_eq!(app.generation(), generation, "an idle tick must not ask for a redraw");
    app.update(Msg::Tick(t0() + chrono::Duration::seconds(5)));
    assert_eq!(app.toasts().len(), 1, "the ok toast went first");
    assert!(app.generation() > generation);
    // A failed action's toast stays until dismissed: an operator who looked away still sees it.
    app.update(Msg::Tick(t0() + chrono::Duration::seconds(600)));
    assert_eq!(app.toasts().len(), 1);
    assert!(app.toasts()[0].sticky && app.toasts()[0].text.ends_with("(esc dismisses)"));
    code(&mut app, KeyCode::Esc);
    assert!(app.toasts().is_empty());
}

#[test]
fn a_batch_ends_in_one_summary_that_later_toasts_never_push_out() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1"]), vec![])]));
    on_jobs(&mut app);
    let outcome = |id: u32, result: Result<String, String>| ActionOutcome {
        verb: Verb::Cancel,
        target: format!("fd22/{id}"),
        result,
    };
    let mut outcomes: Vec<ActionOutcome> = (1..=1000).map(|i| outcome(i, Ok(String::new()))).collect();
    outcomes[40] = outcome(41, Err("Invalid job id specified".into()));
    app.update(Msg::Batch(Arc::new(flightdeck::model::BatchOutcome { outcomes })));
    assert_eq!(app.toasts().len(), 1, "one toast for the whole batch");
    let summary = &app.toasts()[0];
    assert!(summary.error && summary.sticky);
    assert_eq!(summary.text, "cancelled 999 of 1000; 1 failed: fd22/41 (Invalid job id specified) (esc dismisses)");
    // Twenty passing results later, and long after: the summary is still there.
    for i in 0..20 {
        app.update(Msg::Outcome(ActionOutcome {
            verb: Verb::Hold,
            target: format!("fd22/{i}"),
            result: Ok(String::new()),
        }));
    }
    app.update(Msg::Tick(t0() + chrono::Duration::hours(1)));
    assert_eq!(app.toasts().len(), 1);
    assert!(app.toasts()[0].text.starts_with("cancelled 999 of 1000"));
}

#[test]
fn read_only_still_sends_and_the_fleet_refusal_is_shown() {
    let mut opts = options(Keymap::builtin("default").unwrap());
    opts.read_only = true;
    let mut app = App::new(opts);
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1"]), vec![])]));
    assert!(app.read_only());
    on_jobs(&mut app);
    ch(&mut app, 'C');
    let sent = ch(&mut app, 'y');
    assert_eq!(job_actions(&sent).len(), 1, "the fleet is the authority");
    app.update(Msg::Outcome(ActionOutcome {
        verb: Verb::Cancel,
        target: "fd22/1".into(),
        result: Err("refused: flightdeck runs read-only".into()),
    }));
    assert!(app.toasts()[0].text.contains("read-only"));
}

fn cluster_with_nodes() -> Msg {
    fleet(
        1,
        vec![(
            "fd22",
            vec![],
            vec![
                node("fd22", "gpu-01", NodeState::Idle, 4, 0),
                node("fd22", "gpu-02", NodeState::Down, 4, 0),
                node("fd22", "gpu-03", NodeState::Mixed, 4, 2),
            ],
        )],
    )
}

#[test]
fn drain_needs_a_reason() {
    let mut app = app();
    app.update(cluster_with_nodes());
    ch(&mut app, '3');
    assert_eq!(app.screen(), Screen::Nodes);
    ch(&mut app, 'D');
    let Some(Dialog::Drain { targets, .. }) = app.dialog() else { panic!("no drain dialog") };
    assert_eq!(targets, &vec![NodeRef { cluster: "fd22".into(), name: "gpu-01".into() }]);
    // Empty (or blank) reason: refused, the dialog stays open and says why.
    assert!(code(&mut app, KeyCode::Enter).is_empty());
    typed(&mut app, "   ");
    assert!(code(&mut app, KeyCode::Enter).is_empty());
    assert!(app.dialog().unwrap().error().unwrap().contains("reason"));
    // `y` and `n` are text here, not confirm/dismiss.
    typed(&mut app, "bad nvlink, y n");
    assert!(app.dialog().is_some());
    let sent = code(&mut app, KeyCode::Enter);
    match sent.as_slice() {
        [Command::Fleet(Action::Node { node, action: NodeAction::Drain { reason, force: false } })] => {
            assert_eq!(node.to_string(), "fd22/gpu-01");
            assert_eq!(reason, "bad nvlink, y n");
        }
        other => panic!("{other:?}"),
    }
    // Resume needs no confirmation.
    let sent = ch(&mut app, 'R');
    assert!(matches!(sent.as_slice(), [Command::Fleet(Action::Node { action: NodeAction::Resume, .. })]));
}

#[test]
fn problem_nodes_filter() {
    let mut app = app();
    app.update(cluster_with_nodes());
    ch(&mut app, '3');
    assert_eq!(app.visible_nodes().len(), 3);
    ch(&mut app, 'p');
    let shown: Vec<String> = app.visible_nodes().iter().map(|n| n.name.clone()).collect();
    assert_eq!(shown, ["gpu-02"]);
    // A drained flag on an idle node is a problem too; the filter survives the refresh.
    let mut flagged = node("fd22", "gpu-01", NodeState::Idle, 4, 0);
    flagged.flags = vec!["DRAIN".into()];
    app.update(fleet(2, vec![("fd22", vec![], vec![flagged, node("fd22", "gpu-02", NodeState::Down, 4, 0)])]));
    assert_eq!(app.visible_nodes().len(), 2);
}

#[test]
fn command_mode_switches_screens_and_filters() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1"]), vec![]), ("fd24", jobs("fd24", &["2"]), vec![])]));
    ch(&mut app, ':');
    typed(&mut app, "nodes");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Nodes);
    assert!(app.input().is_none());

    ch(&mut app, ':');
    typed(&mut app, "cl");
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "fd2");
    code(&mut app, KeyCode::Tab); // ambiguous: fd22, fd24
    typed(&mut app, "2");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.cluster_filter(), Some("fd22"));
    ch(&mut app, ':');
    typed(&mut app, "jobs");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_jobs(), refs("fd22", &["1"]));

    // Unknown cluster: refused with a message, the filter unchanged.
    ch(&mut app, ':');
    typed(&mut app, "cluster nope");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.cluster_filter(), Some("fd22"));
    assert!(app.toasts().last().unwrap().text.contains("no cluster named `nope`"));

    ch(&mut app, ':');
    typed(&mut app, "theme light");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.theme().name(), "light");

    ch(&mut app, ':');
    typed(&mut app, "q");
    assert!(matches!(code(&mut app, KeyCode::Enter).as_slice(), [Command::Quit]));
}

#[test]
fn help_lists_the_keymap_bindings_and_follows_a_rebinding() {
    let default = app();
    let sections = default.help_sections();
    let jobs = sections.iter().find(|s| s.title == "Jobs").expect("jobs section");
    let cancel = jobs.entries.iter().find(|e| e.action == Some(UiAction::Cancel)).expect("cancel listed");
    assert_eq!(cancel.keys, "C");
    let everywhere = sections.iter().find(|s| s.title == "Everywhere").unwrap();
    assert!(everywhere.entries.iter().any(|e| e.action == Some(UiAction::Quit) && e.keys.contains('q')));
    // Every binding of the keymap appears in the help.
    let keymap = Keymap::builtin("default").unwrap();
    for mode in Mode::ALL {
        for (key, action) in keymap.bindings(mode) {
            assert!(
                sections
                    .iter()
                    .flat_map(|s| &s.entries)
                    .any(|e| e.action == Some(action) && e.keys.split(", ").any(|k| k == key)),
                "{mode:?} {key} {action} missing from the help"
            );
        }
    }

    let custom =
        Keymap::from_toml_str("[jobs]\n\"X\" = \"cancel\"\n\"C\" = \"none\"\n", std::path::Path::new("mine.toml"))
            .unwrap();
    let mut app = App::new(options(custom));
    let sections = app.help_sections();
    let jobs = sections.iter().find(|s| s.title == "Jobs").unwrap();
    let cancel = jobs.entries.iter().find(|e| e.action == Some(UiAction::Cancel)).expect("cancel listed");
    assert_eq!(cancel.keys, "X");
    // And the key does what the help says.
    app.update(fleet(1, vec![("fd22", jobs_of("fd22"), vec![])]));
    on_jobs(&mut app);
    ch(&mut app, 'C');
    assert!(app.dialog().is_none());
    ch(&mut app, 'X');
    assert!(app.dialog().is_some());
}

#[test]
fn key_sequences_of_the_vim_keymap() {
    let mut app = App::new(options(Keymap::builtin("vim").unwrap()));
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1", "2", "3", "4"]), vec![])]));
    on_jobs(&mut app);
    ch(&mut app, 'G');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "4")));
    ch(&mut app, 'g');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "4")), "`g` alone waits for the next key");
    ch(&mut app, 'g');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "1")));
    // A prefix that leads nowhere: the second key still counts on its own.
    ch(&mut app, 'g');
    ch(&mut app, 'j');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "2")));
    ch(&mut app, 'Z');
    assert!(matches!(ch(&mut app, 'Z').as_slice(), [Command::Quit]));
}

fn jobs_of(cluster: &str) -> Vec<Job> {
    jobs(cluster, &["1", "2"])
}

#[test]
fn gpu_map_names_the_job_holding_a_cell() {
    let mut app = app();
    let mut by_index = job("fd22", "10", JobState::Running, "alice", "exact");
    by_index.gpus_allocated = 2;
    by_index.gpu_allocations =
        vec![GpuAllocation { node: "gpu-01".into(), model: Some("a100".into()), count: 2, indices: vec![1, 3] }];
    let mut by_count = job("fd22", "11", JobState::Running, "bob", "counted");
    by_count.gpus_allocated = 1;
    by_count.nodes = vec!["gpu-01".into()];
    let nodes = vec![node("fd22", "gpu-01", NodeState::Mixed, 4, 3), node("fd22", "gpu-02", NodeState::Down, 2, 0)];
    app.update(fleet(1, vec![("fd22", vec![by_index, by_count], nodes)]));
    ch(&mut app, '4');
    assert_eq!(app.screen(), Screen::Gpus);
    let mut seen = Vec::new();
    for _ in 0..4 {
        let (node, index, cell, job) = app.gpu_selection().unwrap();
        assert_eq!(node.name, "gpu-01");
        seen.push((index, cell, job.map(|j| j.job_ref.id.clone())));
        code(&mut app, KeyCode::Right);
    }
    assert_eq!(seen[1].2.as_deref(), Some("10"));
    assert_eq!(seen[3].2.as_deref(), Some("10"));
    assert_eq!(seen[0].2.as_deref(), Some("11"), "the count-only job fills the first free slot");
    assert_eq!(seen[2].1, Cell::Free);
    // The down node's GPUs are unavailable.
    ch(&mut app, 'j');
    let (node, _, cell, _) = app.gpu_selection().unwrap();
    assert_eq!((node.name.as_str(), cell), ("gpu-02", Cell::Unavailable));
    // Enter on a held cell opens that job.
    ch(&mut app, 'k');
    code(&mut app, KeyCode::Home);
    code(&mut app, KeyCode::Left);
    code(&mut app, KeyCode::Left);
    code(&mut app, KeyCode::Left);
    code(&mut app, KeyCode::Right);
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Detail);
    assert_eq!(app.detail().unwrap().job, JobRef::new("fd22", "10"));
}

fn fetches(commands: &[Command]) -> Vec<(Option<u64>, u64, String)> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::FetchLog { from, seq, log, .. } => Some((*from, *seq, log.to_string())),
            _ => None,
        })
        .collect()
}

#[test]
fn detail_reads_and_follows_the_log() {
    let mut app = app();
    let mut j = job("fd22", "1", JobState::Running, "alice", "train");
    j.stdout = Some("/home/alice/train.out".into());
    j.stderr = Some("/home/alice/train.err".into());
    app.update(fleet(1, vec![("fd22", vec![j], vec![])]));
    on_jobs(&mut app);
    let sent = code(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Detail);
    let f = fetches(&sent);
    assert_eq!(f.len(), 1);
    let (from, seq, path) = f[0].clone();
    assert_eq!((from, path.as_str()), (None, "/home/alice/train.out"));
    // Nothing more while the read is in flight, even in follow mode.
    assert!(fetches(&ch(&mut app, 'f')).is_empty());
    assert!(fetches(&app.update(Msg::Tick(t0()))).is_empty());

    app.update(Msg::Log {
        seq,
        result: Ok(LogChunk { data: "epoch 1\nepoch 2\npart".into(), offset: 20, dropped: 0 }),
    });
    let d = app.detail().unwrap();
    assert_eq!(d.log.len(), 3);
    assert_eq!(d.log.line(2), Some("part"));
    // Following: the next tick reads on from the offset.
    let f = fetches(&app.update(Msg::Tick(t0())));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0, Some(20));
    // An answer to an older read is ignored.
    app.update(Msg::Log { seq, result: Ok(LogChunk { data: "stale\n".into(), offset: 99, dropped: 0 }) });
    assert_eq!(app.detail().unwrap().log.len(), 3);
    app.update(Msg::Log { seq: f[0].1, result: Ok(LogChunk { data: "ial\n".into(), offset: 24, dropped: 0 }) });
    assert_eq!(app.detail().unwrap().log.line(2), Some("partial"));

    // stderr: a fresh read of the other file.
    let f = fetches(&code(&mut app, KeyCode::Tab));
    assert_eq!(f[0].0, None);
    assert_eq!(f[0].2, "/home/alice/train.err");
    assert_eq!(app.detail().unwrap().stream, LogStream::Stderr);

    // The job leaves the queue: the detail keeps it and says so.
    app.update(fleet(2, vec![("fd22", vec![], vec![])]));
    assert!(app.detail().unwrap().gone);
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.screen(), Screen::Jobs);
}

#[test]
fn submit_form_validates_on_the_field_and_confirms() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", vec![], vec![]), ("fd24", vec![], vec![])]));
    ch(&mut app, 'n');
    assert_eq!(app.screen(), Screen::Submit);
    // `q` is text here, not quit.
    assert!(typed(&mut app, "q-train").is_empty());
    assert_eq!(app.form().value(Field::Name), "q-train");
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "python train.py");
    code(&mut app, KeyCode::Tab);
    assert_eq!(app.form().focused(), Field::Image);
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "x");
    assert_eq!(app.form().problem_on(Field::Gpus), Some("\"x\" is not a whole number"));
    code(&mut app, KeyCode::Backspace);
    typed(&mut app, "2");
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "a100");
    code(&mut app, KeyCode::Tab);
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "lots");
    assert!(app.form().problem_on(Field::Memory).unwrap().contains("cannot read \"lots\" as memory"));
    let sent = press(&mut app, KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE));
    assert!(sent.is_empty() && app.dialog().is_none(), "an invalid form is not submitted");
    assert_eq!(app.form().focused(), Field::Memory);
    for _ in 0..4 {
        code(&mut app, KeyCode::Backspace);
    }
    typed(&mut app, "64");
    // Every edit of a valid form asks the target cluster for its own form of the job.
    let sent = typed(&mut app, "G");
    let [Command::Render { cluster, spec, seq }] = sent.as_slice() else { panic!("no render asked: {sent:?}") };
    assert_eq!((cluster.as_str(), spec.gpus, spec.memory.as_deref()), ("fd22", 2, Some("64G")));
    assert!(app.form().render.is_open());
    // An older answer is dropped (and asks no redraw); the one asked for is shown.
    let generation = app.generation();
    app.update(Msg::Rendered { seq: seq - 1, result: Ok(native("old")) });
    assert!(app.form().preview.is_err());
    assert_eq!(app.generation(), generation, "a stale preview asks no redraw");
    app.update(Msg::Rendered { seq: *seq, result: Ok(native("#SBATCH --gres=gpu:a100:2")) });
    assert_eq!(app.form().preview.as_ref().unwrap().text, "#SBATCH --gres=gpu:a100:2");
    assert!(app.generation() > generation);
    assert!(!app.form().render.is_open());
    // Nothing changed: nothing asked again.
    assert!(app.update(Msg::Tick(t0())).iter().all(|c| !matches!(c, Command::Render { .. })));
    // The cluster field cycles the configured clusters with left/right.
    while app.form().focused() != Field::Cluster {
        code(&mut app, KeyCode::Tab);
    }
    assert_eq!(app.form().value(Field::Cluster), "fd22");
    code(&mut app, KeyCode::Right);
    assert_eq!(app.form().value(Field::Cluster), "fd24");

    press(&mut app, KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE));
    assert_eq!(app.dialog().unwrap().targets(), vec!["q-train on fd24".to_string()]);
    let sent = ch(&mut app, 'y');
    match sent.as_slice() {
        [Command::Fleet(Action::Submit { cluster, spec })] => {
            assert_eq!(cluster, "fd24");
            assert_eq!(spec.gpus, 2);
            assert_eq!(spec.memory.as_deref(), Some("64G"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn loading_a_spec_goes_through_a_command() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", vec![], vec![])]));
    ch(&mut app, 'n');
    let sent = press(&mut app, KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    assert!(sent.is_empty());
    typed(&mut app, "job.toml");
    let sent = code(&mut app, KeyCode::Enter);
    assert!(matches!(sent.as_slice(), [Command::LoadSpec(p)] if p.to_str() == Some("job.toml")));
    let spec = JobSpec {
        name: "loaded".into(),
        script: Some("#!/bin/bash\necho hi\n".into()),
        gpus: 1,
        account: Some("ml".into()),
        ..JobSpec::default()
    };
    let sent = app.update(Msg::SpecLoaded { path: "job.toml".into(), result: Ok(Box::new(spec)) });
    assert_eq!(app.form().value(Field::Name), "loaded");
    assert_eq!(app.form().value(Field::Account), "ml");
    assert!(app.form().script.is_some());
    assert!(
        matches!(sent.as_slice(), [Command::Render { spec, .. }] if spec.account.as_deref() == Some("ml") && spec.script.is_some()),
        "{sent:?}"
    );
    app.update(Msg::SpecLoaded {
        path: "bad.toml".into(),
        result: Err("bad.toml:3: `cpus`: must be 1 or more".into()),
    });
    assert!(app.toasts().last().unwrap().error);
}

#[test]
fn quit_and_suspend() {
    let mut app = app();
    assert!(matches!(ch(&mut app, 'q').as_slice(), [Command::Quit]));
    let ctrl_z = KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL);
    assert!(matches!(press(&mut app, ctrl_z).as_slice(), [Command::Suspend]));
    // While typing, q is text, but Ctrl-C still quits.
    ch(&mut app, ':');
    assert!(ch(&mut app, 'q').is_empty());
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(matches!(press(&mut app, ctrl_c).as_slice(), [Command::Quit]));
}

/// 100,000 jobs: each keystroke re-filters them all, narrowing and widening correctly.
/// (How fast is measured in `benches/cockpit.rs`, not here.)
#[test]
fn fuzzy_filter_of_100k_jobs() {
    let users = ["alice", "bob", "carol", "dave"];
    let names = ["train-llm", "eval-vit", "sweep-lr", "preprocess", "finetune-qwen"];
    let list: Vec<Job> = (0..100_000)
        .map(|i| {
            let mut j = job(
                "fd22",
                &i.to_string(),
                if i % 3 == 0 { JobState::Pending } else { JobState::Running },
                users[i % 4],
                names[i % 5],
            );
            j.reason = (i % 3 == 0).then(|| "Resources".to_string());
            j
        })
        .collect();
    let mut app = app();
    app.update(fleet(1, vec![("fd22", list, vec![])]));
    on_jobs(&mut app);
    ch(&mut app, '/');
    // Fuzzy: f(d22) … n … q(wen) … w, only the finetune-qwen jobs.
    for c in "fnqw".chars() {
        ch(&mut app, c);
    }
    assert_eq!(app.visible_job_count(), 20_000);
    // Widening again (not narrowing: a full pass over every row) and back.
    for _ in 0..3 {
        code(&mut app, KeyCode::Backspace);
    }
    assert_eq!(app.visible_job_count(), 100_000, "every job is on fd22, so `f` matches all");
    for c in "nqw".chars() {
        ch(&mut app, c);
    }
    assert_eq!(app.visible_job_count(), 20_000);
    assert!(app.visible_jobs().iter().all(|r| r.id.parse::<usize>().unwrap() % 5 == 4));
}

// ----- the event loop, over a fake terminal and a fleet of one scripted backend -----

mod event_loop {
    use std::io;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use flightdeck::backend::{Capabilities, LogChunk};
    use flightdeck::fleet::{Fleet, FleetOptions, Member};
    use flightdeck::model::{Job, JobRef, JobState};
    use flightdeck::tui::event_loop::{self, Signal, Surface};
    use flightdeck::tui::{App, Screen};
    use futures_util::Stream;

    use crate::memory::MemoryCluster;
    use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
    use tokio::sync::mpsc;

    /// The one cluster of the loop's fleet: jobs 1 (its log answers) and 2 (its log read
    /// hangs), a history of one ended job, cancel allowed.
    fn sim() -> MemoryCluster {
        let mut job = Job::new(JobRef::new("sim", "1"), JobState::Running);
        job.stdout = Some("/out".into());
        let mut hung = Job::new(JobRef::new("sim", "2"), JobState::Running);
        hung.stdout = Some("/hang".into());
        MemoryCluster::new("sim")
            .capabilities(Capabilities { cancel: true, ..Capabilities::default() })
            .jobs(vec![job, hung])
            .history(|query| {
                let mut job = Job::new(JobRef::new("sim", "50"), JobState::Completed);
                job.end_time = Some(query.since + chrono::Duration::hours(1));
                let record = flightdeck::model::JobRecord::from_job(job);
                Some(flightdeck::model::History::newest("simacct", vec![record], query.limit))
            })
            .logs(|path| {
                (path.as_str() != "/hang").then(|| LogChunk { data: "hello\nworld\n".into(), offset: 12, dropped: 0 })
            })
    }

    /// What the fake terminal saw.
    #[derive(Default)]
    struct Seen {
        draws: u32,
        suspends: u32,
        screens: Vec<Screen>,
        log_lines: Vec<usize>,
        toasts: Vec<String>,
        history: Vec<JobRef>,
        /// The last frame showed a cluster's snapshot.
        has_data: bool,
    }

    struct Fake {
        seen: Arc<Mutex<Seen>>,
        alive: Arc<AtomicBool>,
    }

    impl Surface for Fake {
        fn draw(&mut self, app: &App) -> io::Result<()> {
            let mut seen = self.seen.lock().unwrap();
            seen.draws += 1;
            seen.screens.push(app.screen());
            seen.log_lines.push(app.detail().map_or(0, |d| d.log.len()));
            seen.toasts = app.toasts().iter().map(|t| t.text.clone()).collect();
            seen.history = app.visible_history();
            seen.has_data = app.fleet().clusters.iter().any(|c| c.snapshot.is_some());
            Ok(())
        }
        fn suspend(&mut self) -> io::Result<()> {
            self.seen.lock().unwrap().suspends += 1;
            Ok(())
        }
        fn resume(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn size(&self) -> io::Result<(u16, u16)> {
            Ok((80, 24))
        }
        fn alive(&mut self) -> bool {
            self.alive.load(Ordering::SeqCst)
        }
    }

    struct Harness {
        keys: mpsc::UnboundedSender<io::Result<Event>>,
        signals: mpsc::UnboundedSender<Signal>,
        seen: Arc<Mutex<Seen>>,
        alive: Arc<AtomicBool>,
        sim: Arc<MemoryCluster>,
        done: tokio::task::JoinHandle<color_eyre::Result<()>>,
    }

    fn events(rx: mpsc::UnboundedReceiver<io::Result<Event>>) -> impl Stream<Item = io::Result<Event>> + Unpin {
        Box::pin(futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) }))
    }

    fn start() -> Harness {
        let sim = Arc::new(sim());
        let fleet = Fleet::start(
            vec![Member {
                backend: sim.clone(),
                kind: "sim".into(),
                refresh: Duration::from_secs(3600),
                timeout: Duration::from_secs(5),
            }],
            FleetOptions { read_only: false, poll: true, audit: None, actor: "test".into() },
        );
        let app = App::new(super::options(flightdeck::tui::keymap::Keymap::builtin("default").unwrap()));
        let (keys, key_rx) = mpsc::unbounded_channel();
        let (signals, signal_rx) = mpsc::unbounded_channel();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let alive = Arc::new(AtomicBool::new(true));
        let mut surface = Fake { seen: seen.clone(), alive: alive.clone() };
        let done = tokio::spawn(async move {
            event_loop::run(Arc::new(fleet), app, &mut surface, events(key_rx), signal_rx, TICK).await
        });
        Harness { keys, signals, seen, alive, sim, done }
    }

    impl Harness {
        fn key(&self, code: KeyCode) {
            self.keys.send(Ok(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))).unwrap();
        }
        fn draws(&self) -> u32 {
            self.seen.lock().unwrap().draws
        }
    }

    /// A fast clock: 60 ticks take 0.6 s.
    const TICK: Duration = Duration::from_millis(10);

    /// Wait until `done` holds (or fail after 10 s).
    async fn until(what: &str, done: impl Fn() -> bool) {
        let start = std::time::Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn an_idle_minute_draws_nothing_and_keys_draw_once() {
        let h = start();
        until("the first refresh", || h.seen.lock().unwrap().has_data).await;
        assert_eq!(h.sim.snapshots(), 1);
        let drawn = h.draws();
        tokio::time::sleep(TICK * 60).await;
        assert_eq!(h.draws(), drawn, "60 idle ticks must not draw");
        h.key(KeyCode::Char('2'));
        until("the jobs screen", || h.seen.lock().unwrap().screens.last() == Some(&Screen::Jobs)).await;
        tokio::time::sleep(TICK * 10).await;
        assert_eq!(h.draws(), drawn + 1, "one key, one frame");
        h.key(KeyCode::Char('q'));
        let result = tokio::time::timeout(Duration::from_secs(10), h.done).await.expect("quits");
        assert!(result.unwrap().is_ok());
    }

    #[tokio::test]
    async fn actions_logs_and_suspend_go_through_the_loop() {
        let h = start();
        until("the first refresh", || h.seen.lock().unwrap().has_data).await;
        // Cancel through the dialog: the backend is called, the outcome becomes a toast.
        h.key(KeyCode::Char('2'));
        h.key(KeyCode::Char('C'));
        h.key(KeyCode::Char('y'));
        until("the cancel toast", || h.seen.lock().unwrap().toasts.iter().any(|t| t == "cancel sim/1: done")).await;
        assert_eq!(h.sim.calls(), ["cancel sim/1"]);
        // Open the job: its log is read on a task and shown.
        h.key(KeyCode::Enter);
        until("the log", || h.seen.lock().unwrap().log_lines.last() == Some(&2)).await;
        // Ctrl-Z suspends through the surface, then the loop goes on.
        h.keys.send(Ok(Event::Key(KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL)))).unwrap();
        until("the suspend", || h.seen.lock().unwrap().suspends == 1).await;
        assert!(!h.done.is_finished());
        h.signals.send(Signal::Terminate).unwrap();
        let result = tokio::time::timeout(Duration::from_secs(10), h.done).await.expect("ends");
        assert!(result.unwrap().is_ok());
    }

    #[tokio::test]
    async fn the_history_is_read_through_the_loop_once_per_ask() {
        let h = start();
        until("the first refresh", || h.seen.lock().unwrap().has_data).await;
        h.key(KeyCode::Char('2'));
        h.key(KeyCode::Char('e'));
        until("the history rows", || h.seen.lock().unwrap().history == [JobRef::new("sim", "50")]).await;
        assert_eq!(h.sim.histories(), 1);
        tokio::time::sleep(TICK * 20).await;
        assert_eq!(h.sim.histories(), 1, "ticks and refreshes read no history");
        h.key(KeyCode::Char('r'));
        until("the second read", || h.sim.histories() == 2).await;
        h.key(KeyCode::Char('q'));
        let result = tokio::time::timeout(Duration::from_secs(10), h.done).await.expect("quits");
        assert!(result.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_hung_log_read_does_not_hold_up_keys() {
        let h = start();
        until("the first refresh", || h.seen.lock().unwrap().has_data).await;
        h.key(KeyCode::Char('2'));
        h.key(KeyCode::Char('j'));
        h.key(KeyCode::Enter); // job 2: its log read never answers
        until("the detail", || h.seen.lock().unwrap().screens.last() == Some(&Screen::Detail)).await;
        h.key(KeyCode::Esc);
        until("back on the jobs screen", || h.seen.lock().unwrap().screens.last() == Some(&Screen::Jobs)).await;
        h.key(KeyCode::Char('3'));
        until("the nodes screen", || h.seen.lock().unwrap().screens.last() == Some(&Screen::Nodes)).await;
        h.key(KeyCode::Char('q'));
        let result = tokio::time::timeout(Duration::from_secs(10), h.done).await.expect("quits");
        assert!(result.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_lost_terminal_ends_the_loop() {
        let h = start();
        h.alive.store(false, Ordering::SeqCst);
        let err = tokio::time::timeout(Duration::from_secs(10), h.done).await.expect("ends").unwrap().unwrap_err();
        assert!(err.to_string().contains("lost the terminal"), "{err}");

        // The input stream ending (EOF on the tty) ends it too.
        let h = start();
        drop(h.keys);
        let result = tokio::time::timeout(Duration::from_secs(10), h.done).await.expect("ends");
        assert!(result.unwrap().is_err());

        // So does a hang-up.
        let h = start();
        h.signals.send(Signal::HangUp).unwrap();
        let result = tokio::time::timeout(Duration::from_secs(10), h.done).await.expect("ends");
        let err = result.unwrap().unwrap_err();
        assert!(err.downcast_ref::<event_loop::TerminalLost>().is_some(), "{err}");
    }
}

#[test]
fn keymap_switches_at_run_time() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1", "2", "3"]), vec![])]));
    on_jobs(&mut app);
    ch(&mut app, 'G');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "1")), "`G` means nothing in the default keymap");
    ch(&mut app, ':');
    typed(&mut app, "keym");
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "v");
    code(&mut app, KeyCode::Tab);
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.keymap().name(), "vim");
    ch(&mut app, 'G');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "3")), "vim's `G` goes to the bottom");
    ch(&mut app, ':');
    typed(&mut app, "keymap emacs");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.keymap().name(), "vim");
    assert!(app.toasts().last().unwrap().text.contains("no keymap named `emacs`"));
}

#[test]
fn an_unmoved_cursor_stays_on_the_first_row_as_clusters_arrive() {
    let mut app = app();
    on_jobs(&mut app);
    // fd24 answers first; then fd22, whose jobs sort before it.
    app.update(fleet(1, vec![("fd24", jobs("fd24", &["7", "8"]), vec![])]));
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd24", "7")));
    app.update(fleet(2, vec![("fd22", jobs("fd22", &["1"]), vec![]), ("fd24", jobs("fd24", &["7", "8"]), vec![])]));
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "1")), "still the first row");
    // Once the user moves, the cursor follows its job instead.
    ch(&mut app, 'j');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd24", "7")));
    app.update(fleet(
        3,
        vec![("fd22", jobs("fd22", &["1", "2", "3"]), vec![]), ("fd24", jobs("fd24", &["7", "8"]), vec![])],
    ));
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd24", "7")));
}

#[test]
fn cordon_and_uncordon_act_at_once_on_the_cursor_node() {
    let mut app = app();
    app.update(cluster_with_nodes());
    ch(&mut app, '3');
    let node = NodeRef { cluster: "fd22".into(), name: "gpu-01".into() };
    match ch(&mut app, 'O').as_slice() {
        [Command::Fleet(Action::Node { node: n, action: NodeAction::Cordon })] => assert_eq!(n, &node),
        other => panic!("cordon sent {other:?}"),
    }
    assert!(app.dialog().is_none(), "cordon is undone by uncordon: no confirmation");
    match ch(&mut app, 'U').as_slice() {
        [Command::Fleet(Action::Node { node: n, action: NodeAction::Uncordon })] => assert_eq!(n, &node),
        other => panic!("uncordon sent {other:?}"),
    }
}

/// `fd22` (Slurm, can do everything) beside `k8s` (Kubernetes: no requeue, as its backend says).
fn slurm_and_kubernetes() -> Msg {
    let Msg::Fleet(state) =
        fleet(1, vec![("fd22", jobs("fd22", &["1", "2"]), vec![]), ("k8s", jobs("k8s", &["ml:a", "ml:b"]), vec![])])
    else {
        unreachable!()
    };
    let mut state = (*state).clone();
    state.clusters[1].kind = "kubernetes".into();
    state.clusters[1].capabilities =
        flightdeck::model::Capabilities { requeue: false, ..flightdeck::model::Capabilities::ALL };
    Msg::Fleet(Arc::new(state))
}

#[test]
fn a_key_the_rows_cluster_cannot_honour_says_why_and_sends_nothing() {
    let mut app = app();
    app.update(slurm_and_kubernetes());
    on_jobs(&mut app);
    while app.cursor_job().is_some_and(|j| j.cluster != "k8s") {
        ch(&mut app, 'j');
    }
    assert_eq!(app.unavailable(UiAction::Requeue).as_deref(), Some("cluster k8s (kubernetes) cannot requeue"));
    assert_eq!(app.unavailable(UiAction::Cancel), None);
    let sent = ch(&mut app, 'R');
    assert!(sent.is_empty() && app.dialog().is_none(), "no dialog, nothing sent: {sent:?}");
    let toast = app.toasts().last().expect("a toast says why");
    assert!(toast.error);
    assert_eq!(toast.text, "cluster k8s (kubernetes) cannot requeue");
    // The help marks the key for this row.
    let marked: Vec<_> = app
        .help_sections()
        .into_iter()
        .flat_map(|s| s.entries)
        .filter(|e| e.action == Some(UiAction::Requeue))
        .map(|e| e.unavailable)
        .collect();
    assert!(!marked.is_empty() && marked.iter().all(|u| u.is_some()), "{marked:?}");

    // On a Slurm row the same key asks for confirmation.
    for _ in 0..4 {
        if app.cursor_job().is_some_and(|j| j.cluster == "fd22") {
            break;
        }
        ch(&mut app, 'k');
    }
    assert_eq!(app.cursor_job().map(|j| j.cluster.as_str()), Some("fd22"));
    assert_eq!(app.unavailable(UiAction::Requeue), None);
    ch(&mut app, 'R');
    assert!(matches!(app.dialog(), Some(Dialog::Jobs { action: JobAction::Requeue, .. })));
}

#[test]
fn a_mixed_selection_acts_where_it_can_and_says_what_was_left_out() {
    let mut app = app();
    app.update(slurm_and_kubernetes());
    on_jobs(&mut app);
    ch(&mut app, 'a');
    assert_eq!(app.marked_jobs().len(), 4);
    ch(&mut app, 'R');
    let Some(Dialog::Jobs { action: JobAction::Requeue, targets, .. }) = app.dialog() else {
        panic!("no requeue dialog")
    };
    assert!(targets.iter().all(|t| t.cluster == "fd22"), "{targets:?}");
    assert_eq!(targets.len(), 2);
    let toast = app.toasts().last().expect("toast");
    assert_eq!(toast.text, "cluster k8s (kubernetes) cannot requeue; 2 left out");
}

#[test]
fn whether_a_job_key_confirms_comes_from_its_verb() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1"]), vec![])]));
    on_jobs(&mut app);
    for (key, action) in
        [('C', JobAction::Cancel), ('R', JobAction::Requeue), ('H', JobAction::Hold), ('U', JobAction::Release)]
    {
        let sent = ch(&mut app, key);
        if action.is_destructive() {
            assert!(sent.is_empty(), "{key}: confirms first");
            assert!(matches!(app.dialog(), Some(Dialog::Jobs { action: a, .. }) if *a == action), "{key}");
            code(&mut app, KeyCode::Esc);
        } else {
            assert_eq!(job_actions(&sent), vec![(JobRef::new("fd22", "1"), action)], "{key}: sent at once");
            assert!(app.dialog().is_none());
        }
    }
}

fn native(text: &str) -> flightdeck::model::Native {
    flightdeck::model::Native {
        dialect: flightdeck::backend::slurm::dialect::SBATCH,
        text: text.into(),
        warnings: vec![],
    }
}

#[test]
fn the_submit_form_follows_the_target_clusters_fields() {
    use flightdeck::model::{FieldUse, Need, SpecFields};
    let Msg::Fleet(state) = slurm_and_kubernetes() else { unreachable!() };
    let mut state = (*state).clone();
    state.clusters[1].spec_fields = SpecFields {
        image: FieldUse::new("image", Need::Required, "a Kubernetes job runs in a container"),
        account: FieldUse::new("namespace", Need::Optional, ""),
        partition: FieldUse::new("queue", Need::Optional, "a Kueue LocalQueue"),
    };
    let mut app = app();
    app.update(Msg::Fleet(Arc::new(state)));
    ch(&mut app, 'n');
    typed(&mut app, "train");
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "python train.py");
    while app.form().focused() != Field::Cluster {
        code(&mut app, KeyCode::Tab);
    }
    code(&mut app, KeyCode::Right);
    assert_eq!(app.form().value(Field::Cluster), "k8s");
    assert_eq!(
        app.form().problem_on(Field::Image),
        Some("`image` is required on k8s: a Kubernetes job runs in a container")
    );
    assert!(app.form().wanted.is_none(), "no preview for a form the cluster would refuse");
    let sent = press(&mut app, KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE));
    assert!(sent.is_empty() && app.dialog().is_none());
    assert_eq!(app.form().focused(), Field::Image, "the cursor goes to what is missing");
    let sent = typed(&mut app, "pytorch:24");
    let asked: Vec<_> = sent
        .iter()
        .filter_map(|c| match c {
            Command::Render { cluster, spec, .. } => Some((cluster.clone(), spec.image.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(asked.last(), Some(&("k8s".to_string(), Some("pytorch:24".to_string()))));
    // Back on the Slurm cluster the image is optional again.
    while app.form().focused() != Field::Cluster {
        code(&mut app, KeyCode::Tab);
    }
    code(&mut app, KeyCode::Left);
    assert_eq!(app.form().value(Field::Cluster), "fd22");
    assert!(app.form().problem.is_none());
}

/// `nodes`, `tasks/node` and `array` reach the spec, and where the target kind does not take
/// one (its `ShapeFields`) the form says so on that field and asks for no preview.
#[test]
fn the_submit_form_offers_nodes_tasks_and_arrays_where_the_kind_takes_them() {
    use flightdeck::model::{FieldUse, Need, ShapeFields};
    let Msg::Fleet(state) = slurm_and_kubernetes() else { unreachable!() };
    let mut state = (*state).clone();
    state.clusters[1].shape_fields = ShapeFields {
        array: FieldUse::new("array", Need::Ignored, "this kind has no job arrays"),
        ..ShapeFields::default()
    };
    let mut app = app();
    app.update(Msg::Fleet(Arc::new(state)));
    ch(&mut app, 'n');
    typed(&mut app, "pretrain");
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "torchrun train.py");
    while app.form().focused() != Field::Nodes {
        code(&mut app, KeyCode::Tab);
    }
    typed(&mut app, "x");
    assert_eq!(app.form().problem_on(Field::Nodes), Some("\"x\" is not a whole number"));
    code(&mut app, KeyCode::Backspace);
    typed(&mut app, "2");
    code(&mut app, KeyCode::Tab);
    assert_eq!(app.form().focused(), Field::TasksPerNode);
    let sent = typed(&mut app, "8");
    let Some(Command::Render { spec, .. }) = sent.last() else { panic!("no render asked: {sent:?}") };
    assert_eq!((spec.nodes, spec.tasks_per_node, spec.array.as_deref()), (Some(2), Some(8), None));
    code(&mut app, KeyCode::Tab);
    assert_eq!(app.form().focused(), Field::Array);
    let sent = typed(&mut app, "0-3");
    let Some(Command::Render { spec, cluster, .. }) = sent.last() else { panic!("no render asked: {sent:?}") };
    assert_eq!((cluster.as_str(), spec.array.as_deref()), ("fd22", Some("0-3")));
    // On a kind without arrays, the field says why and nothing is previewed or submitted.
    while app.form().focused() != Field::Cluster {
        code(&mut app, KeyCode::Tab);
    }
    code(&mut app, KeyCode::Right);
    assert_eq!(app.form().value(Field::Cluster), "k8s");
    assert_eq!(app.form().problem_on(Field::Array), Some("`array` is not taken on k8s: this kind has no job arrays"));
    assert!(app.form().wanted.is_none());
    let sent = press(&mut app, KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE));
    assert!(sent.is_empty() && app.dialog().is_none());
    assert_eq!(app.form().focused(), Field::Array, "the cursor goes to the field");
    for _ in 0..3 {
        code(&mut app, KeyCode::Backspace);
    }
    assert!(app.form().problem.is_none(), "{:?}", app.form().problem);
    assert_eq!(app.form().wanted.as_ref().map(|(c, s)| (c.as_str(), s.nodes)), Some(("k8s", Some(2))));
}

/// The overview's text at 120×40.
fn overview_text(app: &mut App) -> String {
    screen_text(app, 120, 40)
}

/// The current screen's text at `w`×`h`.
fn screen_text(app: &mut App, w: u16, h: u16) -> String {
    app.update(Msg::Resize(w, h));
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| flightdeck::tui::views::render(app, f)).unwrap();
    let buf = terminal.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Pods the Kubernetes scheduler passed over, each with its own message: the overview's
/// "waiting" line says them in words, grouped by reason, not as the raw messages.
#[test]
fn the_overview_words_scheduler_messages_and_groups_them() {
    let mut a = app();
    let waiting = |id: &str, reason: &str| {
        let mut j = job("k8s", id, JobState::Pending, "bob", id);
        j.reason = Some(reason.into());
        j
    };
    a.update(fleet(
        1,
        vec![(
            "k8s",
            vec![
                waiting(
                    "ml:a",
                    "Unschedulable: 0/5 nodes are available: 1 node(s) were unschedulable, 4 Insufficient nvidia.com/gpu",
                ),
                waiting("ml:b", "0/5 nodes are available: 1 node(s) were unschedulable, 4 Insufficient nvidia.com/gpu."),
                waiting("ml:c", "Priority"),
            ],
            vec![node("k8s", "k1", NodeState::Idle, 4, 0)],
        )],
    ));
    let text = overview_text(&mut a);
    assert!(text.contains("waiting: no node fits (1 cordoned, 4 short of nvidia.com/gpu) 2, Priority 1"), "{text}");
    assert!(!text.contains("nodes are available"), "{text}");
}

/// The detail of a waiting job shows its size against the nodes that could hold it, the
/// line `flightdeck why` gives first.
#[test]
fn the_detail_of_a_waiting_job_says_what_its_size_waits_for() {
    let mut a = app();
    let mut wide = job("fd22", "20", JobState::Pending, "alice", "wide");
    wide.reason = Some("ReqNodeNotAvail, UnavailableNodes:ghost01".into());
    (wide.node_count, wide.gpus_requested, wide.gpu_model) = (3, 24, Some("a100".into()));
    let nodes: Vec<Node> = [("g1", NodeState::Idle), ("g2", NodeState::Idle), ("ghost01", NodeState::Down)]
        .into_iter()
        .map(|(name, state)| {
            let mut n = node("fd22", name, state, 8, 0);
            n.partitions = vec!["gpu".into()];
            n
        })
        .collect();
    a.update(fleet(1, vec![("fd22", vec![wide], nodes)]));
    on_jobs(&mut a);
    code(&mut a, KeyCode::Enter);
    assert_eq!(a.screen(), Screen::Detail);
    let text = screen_text(&mut a, 160, 40);
    assert!(
        text.contains(
            "size       needs 3 nodes with 8 a100 each; the partition has 3 such nodes, one of them (ghost01) down: it \
             cannot start until ghost01 returns"
        ),
        "{text}"
    );
}

#[test]
fn the_overview_starts_with_the_fleet_line_per_model() {
    let mut a = app();
    let mut drained = node("lab", "l2", NodeState::Drained, 8, 0);
    drained.flags = vec!["DRAIN".into()];
    a.update(fleet(
        1,
        vec![
            ("fd22", vec![], vec![node("fd22", "g1", NodeState::Mixed, 8, 6)]),
            ("lab", vec![], vec![node("lab", "l1", NodeState::Idle, 4, 0), drained]),
        ],
    ));
    let text = overview_text(&mut a);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[2].contains("▌fleet 2 clusters"), "{text}");
    assert!(lines[3].contains("  a100  20 total · 6 allocated · 6 idle · 8 unavailable  (fd22, lab)"), "{text}");
    // The per-cluster bars count the same way.
    assert!(text.contains("] 0/12 alloc · 4 idle · 8 unavail"), "{text}");

    // One cluster: nothing to add up.
    let mut one = app();
    one.update(fleet(1, vec![("fd22", vec![], vec![node("fd22", "g1", NodeState::Mixed, 8, 6)])]));
    assert!(!overview_text(&mut one).contains("▌fleet"));
}

#[test]
fn the_filter_finds_a_job_by_its_native_gpu_product() {
    let mut app = app();
    let mut gfd = job("k8s", "ml:a", JobState::Running, "alice", "train");
    gfd.gpu_model = Some("h100".into());
    gfd.gpu_product = Some("NVIDIA-H100-80GB-HBM3".into());
    let mut slurm = job("fd22", "1", JobState::Running, "alice", "train");
    slurm.gpu_model = Some("h100".into());
    slurm.gpu_product = Some("h100".into());
    app.update(fleet(1, vec![("fd22", vec![slurm], vec![]), ("k8s", vec![gfd], vec![])]));
    on_jobs(&mut app);
    ch(&mut app, '/');
    typed(&mut app, "HBM3");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_jobs(), vec![JobRef::new("k8s", "ml:a")]);
    code(&mut app, KeyCode::Esc);
    ch(&mut app, '/');
    typed(&mut app, "h100");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_jobs().len(), 2, "the canonical model matches both");
}

#[test]
fn a_drain_reason_with_control_characters_is_refused_in_the_dialog() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", vec![], vec![node("fd22", "gpu-01", NodeState::Idle, 4, 0)])]));
    ch(&mut app, '3');
    ch(&mut app, 'D');
    // A paste with an escape sequence is refused whole, with the reason.
    app.update(Msg::Paste("XID 79 \u{1b}[2J".into()));
    let toast = app.toasts().last().expect("a toast");
    assert!(toast.error && toast.text.contains("not pasted") && toast.text.contains("(U+001B)"), "{}", toast.text);
    assert_eq!(app.dialog().and_then(|d| d.reason()).map(|r| r.text()), Some(""));
    app.update(Msg::Paste("XID 79\n".into()));
    let sent = code(&mut app, KeyCode::Enter);
    assert!(
        matches!(sent.as_slice(), [Command::Fleet(Action::Node { action: NodeAction::Drain { reason, .. }, .. })] if reason == "XID 79"),
        "{sent:?}"
    );
}

#[test]
fn finished_jobs_come_after_live_ones_and_hide_on_a_key() {
    let mut app = app();
    let states = [
        ("1", JobState::Completed),
        ("2", JobState::Running),
        ("3", JobState::Cancelled),
        ("10", JobState::Pending),
        ("5", JobState::Failed),
    ];
    let all: Vec<Job> = states.iter().map(|(id, st)| job("fd22", id, *st, "bob", "x")).collect();
    app.update(fleet(1, vec![("fd22", all.clone(), vec![])]));
    on_jobs(&mut app);
    assert_eq!(app.visible_jobs(), refs("fd22", &["2", "10", "1", "3", "5"]), "live first, then finished, by id");
    ch(&mut app, 'S');
    assert_eq!(app.visible_jobs(), refs("fd22", &["10", "2", "5", "3", "1"]), "reversed within each group");
    ch(&mut app, 'S');

    ch(&mut app, 'f');
    assert!(app.finished_hidden());
    assert_eq!(app.visible_jobs(), refs("fd22", &["2", "10"]));
    assert!(flightdeck::tui::views::jobs::title(&app).contains("· finished hidden"));
    // Hidden across a refresh, and a job that finishes leaves the table.
    let mut later = all.clone();
    later[1].state = JobState::Completed;
    app.update(fleet(2, vec![("fd22", later, vec![])]));
    assert_eq!(app.visible_jobs(), refs("fd22", &["10"]));
    // A state filter asks for those jobs by name: it wins over hiding.
    for _ in 0..7 {
        ch(&mut app, 't');
    }
    assert_eq!(app.state_filter(), Some(JobState::Completed));
    assert_eq!(app.visible_jobs(), refs("fd22", &["1", "2"]));
    ch(&mut app, 't');
    ch(&mut app, 't');
    assert_eq!(app.state_filter(), None);
    ch(&mut app, 'f');
    assert!(!app.finished_hidden());
    assert!(!flightdeck::tui::views::jobs::title(&app).contains("finished"));
    assert_eq!(app.visible_jobs().len(), 5);
}

#[test]
fn the_vim_keymap_hides_finished_jobs_too() {
    let mut app = App::new(options(Keymap::builtin("vim").unwrap()));
    app.update(Msg::Tick(t0()));
    let all = vec![job("fd22", "1", JobState::Completed, "bob", "x"), job("fd22", "2", JobState::Running, "bob", "y")];
    app.update(fleet(1, vec![("fd22", all, vec![])]));
    on_jobs(&mut app);
    assert_eq!(app.keymap().hint(Mode::Jobs, UiAction::HideFinished).as_deref(), Some("f"));
    ch(&mut app, 'f');
    assert_eq!(app.visible_jobs(), refs("fd22", &["2"]));
}

#[test]
fn following_a_log_backs_off_while_reads_fail() {
    let mut app = app();
    let mut j = job("fd22", "7", JobState::Running, "alice", "train");
    j.stdout = Some("/home/alice/train.out".into());
    app.update(fleet(1, vec![("fd22", vec![j], vec![])]));
    on_jobs(&mut app);
    let first = fetches(&code(&mut app, KeyCode::Enter));
    app.update(Msg::Log { seq: first[0].1, result: Ok(LogChunk { data: "a\n".into(), offset: 2, dropped: 0 }) });
    let at = |ms: i64| t0() + chrono::Duration::milliseconds(ms);
    let follow = fetches(&ch(&mut app, 'f'));
    assert_eq!(follow.len(), 1, "following reads on at once");
    // The link is down: each failure doubles the wait before the next read.
    let mut seq = follow[0].1;
    let mut asked_at = Vec::new();
    for ms in (500..=7000).step_by(500) {
        if seq != 0 {
            app.update(Msg::Log { seq, result: Err("cannot reach fd22: link down".into()) });
            seq = 0;
        }
        if let Some(f) = fetches(&app.update(Msg::Tick(at(ms)))).first() {
            asked_at.push(ms);
            seq = f.1;
        }
    }
    assert_eq!(asked_at, [1000, 3000, 7000], "1 s, then 2 s, then 4 s after each failure");
    // A good read ends the back-off: the next tick reads again.
    app.update(Msg::Log { seq, result: Ok(LogChunk { data: "b\n".into(), offset: 4, dropped: 0 }) });
    assert_eq!(fetches(&app.update(Msg::Tick(at(7500)))).len(), 1);
}

/// `sky` (a cloud kind that can tear its clusters down) beside `fd22` (Slurm, which cannot).
fn slurm_and_cloud_nodes() -> Msg {
    let Msg::Fleet(state) = fleet(
        1,
        vec![
            ("fd22", vec![], vec![node("fd22", "gpu-01", NodeState::Idle, 4, 0)]),
            ("sky", vec![], vec![node("sky", "train-head", NodeState::Idle, 8, 0)]),
        ],
    ) else {
        unreachable!()
    };
    let mut state = (*state).clone();
    state.clusters[0].capabilities =
        flightdeck::model::Capabilities { teardown: false, ..flightdeck::model::Capabilities::ALL };
    state.clusters[1].kind = "skypilot".into();
    state.clusters[1].capabilities = flightdeck::model::Capabilities {
        submit: true,
        cancel: true,
        teardown: true,
        ..flightdeck::model::Capabilities::default()
    };
    Msg::Fleet(Arc::new(state))
}

#[test]
fn teardown_confirms_naming_what_it_deletes_and_only_where_the_kind_can() {
    let mut app = app();
    app.update(slurm_and_cloud_nodes());
    ch(&mut app, '3');
    assert_eq!(app.screen(), Screen::Nodes);
    while app.cursor_node().is_some_and(|n| n.cluster != "fd22") {
        ch(&mut app, 'j');
    }
    assert!(ch(&mut app, 'T').is_empty());
    assert!(app.dialog().is_none());
    assert_eq!(app.toasts().last().map(|t| t.text.as_str()), Some("cluster fd22 (slurm) cannot tear down"));

    while app.cursor_node().is_some_and(|n| n.cluster != "sky") {
        ch(&mut app, 'j');
    }
    assert!(ch(&mut app, 'T').is_empty(), "nothing is sent before the confirmation");
    let dialog = app.dialog().expect("a confirmation");
    assert_eq!(dialog.title(), "Tear down 1 cloud cluster?");
    assert_eq!(dialog.targets(), ["sky/train-head"]);
    assert!(dialog.warning().is_some_and(|w| w.contains("every machine and disk")));
    let sent = ch(&mut app, 'y');
    match sent.as_slice() {
        [Command::Fleet(Action::Node { node, action: NodeAction::Teardown })] => {
            assert_eq!(node.to_string(), "sky/train-head")
        }
        other => panic!("teardown sent {other:?}"),
    }
}

#[test]
fn a_confirmed_cancel_carries_the_identity_each_job_had_when_the_dialog_opened() {
    let mut app = app();
    let mut with_uid = jobs("k8s", &["ml:a", "ml:b"]);
    with_uid[0].uid = Some("uid-a-1".into());
    app.update(fleet(1, vec![("k8s", with_uid, vec![])]));
    on_jobs(&mut app);
    ch(&mut app, 'a');
    ch(&mut app, 'C');
    // A refresh while the dialog is open: ml:a is now another object of the same name.
    let mut renewed = jobs("k8s", &["ml:a", "ml:b"]);
    renewed[0].uid = Some("uid-a-2".into());
    app.update(fleet(2, vec![("k8s", renewed, vec![])]));
    let sent = ch(&mut app, 'y');
    let uids: Vec<(String, Option<String>)> = sent
        .iter()
        .filter_map(|c| match c {
            Command::Fleet(Action::Job { job, uid, .. }) => Some((job.to_string(), uid.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(uids, vec![("k8s/ml:a".to_string(), Some("uid-a-1".to_string())), ("k8s/ml:b".to_string(), None)]);
}

/// The moves a plan would hold, as the fleet's planner returns them.
fn plan_of(sources: &[JobRef], to: &str) -> flightdeck::fleet::migrate::MigrationPlan {
    use flightdeck::fleet::migrate::{MigrationPlan, PlannedMove};
    let moves = sources
        .iter()
        .map(|s| PlannedMove {
            source: s.clone(),
            source_state: JobState::Pending,
            to: to.to_string(),
            spec: Some(flightdeck::spec::JobSpec {
                name: "train".into(),
                command: Some("true".into()),
                migrated_from: Some(s.to_string()),
                ..Default::default()
            }),
            native: Some(flightdeck::model::Native {
                dialect: flightdeck::backend::kube::dialect::KUBERNETES_JOB,
                text: "apiVersion: batch/v1\nkind: Job\n".into(),
                warnings: vec![],
            }),
            warnings: vec!["`account`: \"ml\" is a slurm account, which means nothing on k8s".into()],
            refused: None,
            uid: None,
            advice: None,
        })
        .collect();
    MigrationPlan { moves }
}

#[test]
fn migrate_shows_the_plan_first_switches_targets_and_sends_exactly_the_planned_moves() {
    let mut app = app();
    app.update(fleet(
        1,
        vec![("fd22", jobs("fd22", &["1", "2", "3"]), vec![]), ("fd24", vec![], vec![]), ("k8s", vec![], vec![])],
    ));
    on_jobs(&mut app);
    ch(&mut app, ' ');
    ch(&mut app, ' ');
    let asked = ch(&mut app, 'M');
    let [Command::PlanMigration { sources, to, running: false, gpu_type: None, seq }] = asked.as_slice() else {
        panic!("one plan asked for: {asked:?}")
    };
    assert_eq!(sources, &refs("fd22", &["1", "2"]));
    assert_eq!(to, "fd24", "the first other cluster that takes submissions");
    // Before the plan comes back nothing can be confirmed.
    assert!(ch(&mut app, 'y').is_empty());
    assert!(app.dialog().is_some(), "confirming an unplanned move keeps the dialog");
    // Tab: plan for the next cluster; the answer to the old plan is ignored.
    let stale = *seq;
    let asked = code(&mut app, KeyCode::Tab);
    let [Command::PlanMigration { to, seq, .. }] = asked.as_slice() else { panic!("{asked:?}") };
    assert_eq!(to, "k8s");
    let seq = *seq;
    app.update(Msg::Planned { seq: stale, plan: Box::new(plan_of(&refs("fd22", &["1", "2"]), "fd24")) });
    assert!(matches!(app.dialog(), Some(Dialog::Migrate { plan: None, .. })));
    app.update(Msg::Planned { seq, plan: Box::new(plan_of(&refs("fd22", &["1", "2"]), "k8s")) });
    let dialog = app.dialog().unwrap();
    assert_eq!(dialog.title(), "Migrate 2 jobs to k8s?");
    let lines = dialog.targets().join("\n");
    assert!(lines.contains("fd22/1 (pending) → k8s") && lines.contains("warning: `account`"), "{lines}");
    assert!(lines.contains("Kubernetes Job manifest of fd22/1:") && lines.contains("kind: Job"), "{lines}");
    // `r`: running jobs too, planned again.
    let asked = ch(&mut app, 'r');
    let [Command::PlanMigration { running: true, seq, .. }] = asked.as_slice() else { panic!("{asked:?}") };
    let seq = *seq;
    app.update(Msg::Planned { seq, plan: Box::new(plan_of(&refs("fd22", &["1", "2"]), "k8s")) });
    let sent = ch(&mut app, 'y');
    let moves: Vec<(JobRef, String)> = sent
        .iter()
        .filter_map(|c| match c {
            Command::Fleet(Action::Migrate { source, to, spec, .. }) => {
                assert_eq!(spec.migrated_from.as_deref(), Some(source.to_string().as_str()));
                Some((source.clone(), to.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(moves, vec![(JobRef::new("fd22", "1"), "k8s".into()), (JobRef::new("fd22", "2"), "k8s".into())]);
    assert!(app.dialog().is_none());
}

/// `g` in the migration plan cycles the GPU model asked for on the target: as the source
/// asked, each model the target's nodes hold, then any; each is planned again, the title
/// says which, and another target starts over from the source's model.
#[test]
fn g_in_the_migration_plan_cycles_the_targets_gpu_models() {
    use flightdeck::fleet::migrate::GpuChoice;
    let mut app = app();
    let mut h200 = node("fd24", "b1", NodeState::Idle, 8, 0);
    h200.gpus[0].model = "h200".into();
    let mut l40s = node("fd24", "b2", NodeState::Idle, 4, 0);
    l40s.gpus[0].model = "l40s".into();
    app.update(fleet(
        1,
        vec![("fd22", jobs("fd22", &["1"]), vec![]), ("fd24", vec![], vec![h200, l40s]), ("k8s", vec![], vec![])],
    ));
    on_jobs(&mut app);
    let asked = ch(&mut app, 'M');
    assert!(matches!(asked.as_slice(), [Command::PlanMigration { gpu_type: None, .. }]), "{asked:?}");
    let mut seen = Vec::new();
    for _ in 0..4 {
        let asked = ch(&mut app, 'g');
        let [Command::PlanMigration { to, gpu_type, .. }] = asked.as_slice() else { panic!("{asked:?}") };
        assert_eq!(to, "fd24");
        seen.push((gpu_type.clone(), app.dialog().unwrap().title()));
    }
    assert_eq!(
        seen,
        [
            (Some(GpuChoice::Model("h200".into())), "Migrate 1 job to fd24 as h200?".to_string()),
            (Some(GpuChoice::Model("l40s".into())), "Migrate 1 job to fd24 as l40s?".to_string()),
            (Some(GpuChoice::Any), "Migrate 1 job to fd24, any GPU model?".to_string()),
            (None, "Migrate 1 job to fd24?".to_string()),
        ]
    );
    ch(&mut app, 'g');
    let asked = code(&mut app, KeyCode::Tab);
    assert!(matches!(asked.as_slice(), [Command::PlanMigration { gpu_type: None, .. }]), "{asked:?}");
    // `r` keeps the choice for the same target.
    let asked = ch(&mut app, 'g');
    assert!(matches!(asked.as_slice(), [Command::PlanMigration { gpu_type: Some(GpuChoice::Any), .. }]), "{asked:?}");
    let asked = ch(&mut app, 'r');
    assert!(
        matches!(asked.as_slice(), [Command::PlanMigration { running: true, gpu_type: Some(GpuChoice::Any), .. }]),
        "{asked:?}"
    );
}

/// The submit form ranks every cluster for the spec being edited, from the state the App
/// holds: again when the spec's placement or the fleet changes, never by asking anyone.
#[test]
fn the_submit_form_shows_where_the_job_could_start() {
    use flightdeck::fleet::advice::Verdict;
    let mut app = app();
    let fd22 = vec![node("fd22", "a1", NodeState::Mixed, 4, 3)];
    let fd24 = vec![node("fd24", "b1", NodeState::Idle, 8, 0), node("fd24", "b2", NodeState::Mixed, 8, 6)];
    app.update(fleet(1, vec![("fd22", vec![], fd22.clone()), ("fd24", vec![], fd24.clone())]));
    ch(&mut app, 'n');
    assert!(app.form().advice.is_empty(), "nothing to advise on an empty form");
    code(&mut app, KeyCode::Tab);
    code(&mut app, KeyCode::Tab);
    code(&mut app, KeyCode::Tab);
    assert_eq!(app.form().focused(), Field::Gpus);
    let sent = typed(&mut app, "4");
    assert!(sent.iter().all(|c| matches!(c, Command::Render { .. })), "advice asks nobody: {sent:?}");
    let ranked: Vec<(&str, Verdict)> = app.form().advice.iter().map(|a| (a.cluster.as_str(), a.verdict)).collect();
    assert_eq!(ranked, [("fd24", Verdict::Now), ("fd22", Verdict::Queued)]);
    assert_eq!(app.form().advice[0].reason, "10 of 16 GPUs idle");
    code(&mut app, KeyCode::Tab);
    typed(&mut app, "h100");
    assert!(app.form().advice.iter().all(|a| a.verdict == Verdict::Cannot), "{:?}", app.form().advice);
    assert_eq!(app.form().advice[0].reason, "no node has h100 (models: a100)");
    for _ in 0..4 {
        code(&mut app, KeyCode::Backspace);
    }
    typed(&mut app, "a100");
    assert_eq!(app.form().advice[0].reason, "10 of 16 a100 idle");

    // A new state: fd24 is drained, and the advice follows it without a keystroke.
    let drained: Vec<Node> = fd24
        .into_iter()
        .map(|mut n| {
            n.state = NodeState::Drained;
            n.flags = vec!["DRAIN".into()];
            n
        })
        .collect();
    app.update(fleet(2, vec![("fd22", vec![], fd22), ("fd24", vec![], drained)]));
    let ranked: Vec<(&str, Verdict)> = app.form().advice.iter().map(|a| (a.cluster.as_str(), a.verdict)).collect();
    assert_eq!(ranked, [("fd22", Verdict::Queued), ("fd24", Verdict::Queued)]);
    assert!(app.form().advice[1].reason.contains("out of service (b1 drained, b2 drained)"), "{:?}", app.form().advice);
    // An unreadable number: no advice rather than a wrong one.
    while app.form().focused() != Field::Gpus {
        code(&mut app, KeyCode::Tab);
    }
    typed(&mut app, "x");
    assert!(app.form().advice.is_empty());
}

/// The notifications among `commands`, as their one-line summaries.
fn notices(commands: &[Command]) -> Vec<String> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Notify(event) => Some(event.summary()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_watched_job_tells_each_change_until_it_ends() {
    let mut app = app();
    let running =
        |state| vec![job("hpc", "7", state, "alice", "train"), job("hpc", "8", JobState::Running, "bob", "x")];
    app.update(fleet(1, vec![("hpc", running(JobState::Pending), vec![])]));
    ch(&mut app, '2');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("hpc", "7")));
    assert!(ch(&mut app, 'w').is_empty(), "watching asks nothing of anyone");
    assert!(app.toasts().last().unwrap().text.starts_with("watching hpc/7"), "{:?}", app.toasts());

    // The same state again: no news.
    assert!(notices(&app.update(fleet(2, vec![("hpc", running(JobState::Pending), vec![])]))).is_empty());
    let started = app.update(fleet(3, vec![("hpc", running(JobState::Running), vec![])]));
    assert_eq!(notices(&started), ["hpc/7  pending → running"]);
    assert_eq!(app.toasts().last().unwrap().text, "hpc/7  pending → running");

    let mut failed = job("hpc", "7", JobState::Failed, "alice", "train");
    failed.exit = Some(flightdeck::model::ExitStatus { code: 3, signal: None });
    let ended = app.update(fleet(4, vec![("hpc", vec![failed.clone()], vec![])]));
    assert_eq!(notices(&ended), ["hpc/7  running → failed  exit 3"]);
    assert!(app.toasts().last().unwrap().error, "a failure is an error toast");
    // Ended: no longer watched, so a later listing says nothing.
    assert!(notices(&app.update(fleet(5, vec![("hpc", vec![], vec![])]))).is_empty());
}

#[test]
fn w_again_stops_watching() {
    let mut app = app();
    app.update(fleet(1, vec![("hpc", jobs("hpc", &["1"]), vec![])]));
    ch(&mut app, '2');
    ch(&mut app, 'w');
    ch(&mut app, 'w');
    assert!(app.toasts().last().unwrap().text.starts_with("stopped watching hpc/1"));
    let mut done = jobs("hpc", &["1"]);
    done[0].state = JobState::Completed;
    assert!(notices(&app.update(fleet(2, vec![("hpc", done, vec![])]))).is_empty());
}

// ----- the history screen -----

/// A finished job that ended `ended` minutes before `t0`, as a history record.
fn record(cluster: &str, id: &str, state: JobState, ended: i64) -> flightdeck::model::JobRecord {
    let mut j = job(cluster, id, state, "alice", &format!("run-{id}"));
    j.start_time = Some(t0() - chrono::Duration::minutes(ended + 60));
    j.end_time = Some(t0() - chrono::Duration::minutes(ended));
    j.exit = Some(flightdeck::model::ExitStatus { code: i32::from(state != JobState::Completed), signal: None });
    j.gpus_allocated = 2;
    j.stdout = Some(format!("/home/alice/slurm-{id}.out").into());
    flightdeck::model::JobRecord { job: j, elapsed_secs: Some(3600), max_rss_mb: Some(2048), gpu_hours: Some(2.0) }
}

fn history_of(records: Vec<flightdeck::model::JobRecord>) -> flightdeck::model::History {
    flightdeck::model::History { records, source: "sacct".into(), left_out: 0, notes: Vec::new() }
}

/// The history reads among `commands`, as `(since, seq)`.
fn history_reads(commands: &[Command]) -> Vec<(DateTime<Utc>, u64)> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::FetchHistory { since, seq } => Some((*since, *seq)),
            _ => None,
        })
        .collect()
}

/// The jobs screen over two clusters, then the history key: the one read it asks for.
fn on_history(app: &mut App) -> u64 {
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1"]), vec![]), ("fd24", jobs("fd24", &["9"]), vec![])]));
    on_jobs(app);
    let sent = ch(app, 'e');
    let reads = history_reads(&sent);
    assert_eq!(sent.len(), 1, "only the read: {sent:?}");
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].0, t0() - chrono::Duration::hours(24), "the last 24 h, by the clock passed in");
    reads[0].1
}

#[test]
fn the_history_key_opens_the_screen_with_one_read_and_no_refresh() {
    let mut app = app();
    let seq = on_history(&mut app);
    assert_eq!(app.screen(), Screen::History);
    assert_eq!(app.history().read.ticket(), Some(seq));
    assert!(app.visible_history().is_empty());
    // Fleet refreshes do not read the history again.
    assert!(history_reads(&app.update(fleet(2, vec![("fd22", jobs("fd22", &["1", "2"]), vec![])]))).is_empty());
    assert!(history_reads(&app.update(Msg::Tick(t0() + chrono::Duration::seconds(5)))).is_empty());
    // Not in the Tab cycle: tab goes on from the jobs screen.
    code(&mut app, KeyCode::Tab);
    assert_eq!(app.screen(), Screen::Nodes);
}

#[test]
fn history_rows_come_newest_first_across_clusters_with_each_failure_named() {
    let mut app = app();
    let seq = on_history(&mut app);
    // An answer to another read is not this one.
    app.update(Msg::History {
        seq: seq + 7,
        results: vec![("fd22".into(), Ok(history_of(vec![record("fd22", "5", JobState::Completed, 1)])))],
    });
    assert!(app.visible_history().is_empty() && app.history().read.ticket() == Some(seq), "a stale answer is ignored");

    let mut fd24 =
        history_of(vec![record("fd24", "30", JobState::Failed, 5), record("fd24", "31", JobState::Timeout, 90)]);
    fd24.left_out = 12;
    fd24.notes.push("MaxRSS is read from the batch step".into());
    app.update(Msg::History {
        seq,
        results: vec![
            (
                "fd22".into(),
                Ok(history_of(vec![
                    record("fd22", "7", JobState::Completed, 2),
                    record("fd22", "6", JobState::Completed, 60),
                ])),
            ),
            ("fd24".into(), Ok(fd24)),
            ("lab".into(), Err("sacct: Slurm accounting storage is disabled".into())),
        ],
    });
    assert_eq!(app.history().read.ticket(), None);
    let order: Vec<String> = app.visible_history().iter().map(ToString::to_string).collect();
    assert_eq!(order, ["fd22/7", "fd24/30", "fd22/6", "fd24/31"]);
    assert_eq!(app.history().errors, ["lab: sacct: Slurm accounting storage is disabled"]);
    let notes = app.history().notes.join("\n");
    assert!(notes.contains("fd24: MaxRSS is read from the batch step"), "{notes}");
    assert!(notes.contains("fd24: 12 older finished jobs left out"), "{notes}");

    // The cursor moves like every list's.
    ch(&mut app, 'j');
    assert_eq!(app.cursor_history(), Some(&JobRef::new("fd24", "30")));
    code(&mut app, KeyCode::End);
    assert_eq!(app.cursor_history(), Some(&JobRef::new("fd24", "31")));
    code(&mut app, KeyCode::Home);
    assert_eq!(app.cursor_history(), Some(&JobRef::new("fd22", "7")));
    // The cluster filter applies here too.
    ch(&mut app, 'c');
    assert_eq!(app.cluster_filter(), Some("fd22"));
    assert_eq!(app.visible_history(), refs("fd22", &["7", "6"]));
}

#[test]
fn r_on_the_history_reads_again_and_only_the_newest_answer_counts() {
    let mut app = app();
    let first = on_history(&mut app);
    let answer = |seq, ids: &[&str]| Msg::History {
        seq,
        results: vec![(
            "fd22".into(),
            Ok(history_of(
                ids.iter().enumerate().map(|(i, id)| record("fd22", id, JobState::Completed, i as i64)).collect(),
            )),
        )],
    };
    app.update(answer(first, &["1", "2"]));
    ch(&mut app, 'j');
    app.update(Msg::Tick(t0() + chrono::Duration::minutes(10)));
    let sent = ch(&mut app, 'r');
    assert_eq!(sent.len(), 1, "a history read, no fleet refresh: {sent:?}");
    let reads = history_reads(&sent);
    let (since, second) = reads[0];
    assert!(second > first);
    assert_eq!(since, t0() + chrono::Duration::minutes(10) - chrono::Duration::hours(24));
    // The first read's answer arriving late changes nothing.
    app.update(answer(first, &["9"]));
    assert_eq!(app.visible_history(), refs("fd22", &["1", "2"]));
    assert_eq!(app.history().read.ticket(), Some(second));
    // The new one keeps the cursor on the job it was on.
    app.update(answer(second, &["3", "1", "2"]));
    assert_eq!(app.visible_history(), refs("fd22", &["3", "1", "2"]));
    assert_eq!(app.cursor_history(), Some(&JobRef::new("fd22", "2")));
}

#[test]
fn history_from_the_command_line_takes_an_age() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", jobs("fd22", &["1"]), vec![])]));
    ch(&mut app, ':');
    typed(&mut app, "history 6h");
    let reads = history_reads(&code(&mut app, KeyCode::Enter));
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].0, t0() - chrono::Duration::hours(6));
    assert_eq!(app.screen(), Screen::History);
    // `r` keeps the span asked for.
    assert_eq!(history_reads(&ch(&mut app, 'r'))[0].0, t0() - chrono::Duration::hours(6));
    ch(&mut app, ':');
    typed(&mut app, "history 2d");
    assert_eq!(history_reads(&code(&mut app, KeyCode::Enter))[0].0, t0() - chrono::Duration::days(2));
    // A bad age reads nothing and says how to write one.
    ch(&mut app, ':');
    typed(&mut app, "history soon");
    assert!(history_reads(&code(&mut app, KeyCode::Enter)).is_empty());
    assert!(app.toasts().last().unwrap().text.contains("30m, 6h, 2d or 1w"), "{:?}", app.toasts());
    // `:h` is still help.
    ch(&mut app, ':');
    typed(&mut app, "h");
    code(&mut app, KeyCode::Enter);
    assert!(app.help_open());
}

#[test]
fn esc_leaves_the_history_for_the_jobs_and_enter_opens_the_finished_jobs_detail() {
    let mut app = app();
    let seq = on_history(&mut app);
    app.update(Msg::History {
        seq,
        results: vec![(
            "fd22".into(),
            Ok(history_of(vec![
                record("fd22", "41", JobState::Failed, 3),
                record("fd22", "40", JobState::Completed, 9),
            ])),
        )],
    });
    ch(&mut app, 'j');
    let sent = code(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Detail);
    let d = app.detail().expect("a detail");
    assert_eq!(d.job, JobRef::new("fd22", "40"));
    assert!(d.gone, "no longer in the queue");
    assert_eq!(d.last.exit.map(|e| e.code), Some(0));
    // Its log is read at once, from the handle the record carries.
    assert!(
        sent.iter().any(|c| matches!(c, Command::FetchLog { job, log, .. }
            if *job == JobRef::new("fd22", "40") && log.to_string() == "/home/alice/slurm-40.out")),
        "{sent:?}"
    );
    // Back from the detail returns to the history, then to the jobs.
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.screen(), Screen::History);
    assert_eq!(app.cursor_history(), Some(&JobRef::new("fd22", "40")));
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.screen(), Screen::Jobs);
    // From the jobs screen the detail goes back to the jobs as before.
    code(&mut app, KeyCode::Enter);
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.screen(), Screen::Jobs);
}

#[test]
fn a_history_record_still_in_the_queue_opens_its_live_row() {
    let mut app = app();
    let mut done = job("fd22", "1", JobState::Completed, "bob", "job-1");
    done.stdout = Some("/home/bob/slurm-1.out".into());
    app.update(fleet(1, vec![("fd22", vec![done], vec![])]));
    on_jobs(&mut app);
    let seq = history_reads(&ch(&mut app, 'e'))[0].1;
    app.update(Msg::History {
        seq,
        results: vec![("fd22".into(), Ok(history_of(vec![record("fd22", "1", JobState::Completed, 1)])))],
    });
    code(&mut app, KeyCode::Enter);
    let d = app.detail().expect("a detail");
    assert!(!d.gone, "the queue still lists it");
    assert_eq!(d.last.user, "bob", "the live row, not the record");
}

// ----- Slurm arrays: one folded parent row per array -----

/// Array 12 of 10 tasks: 0-2 running (2 GPUs each), 3-4 completed, 5-9 pending as one
/// `12_[5-9]` row (1 GPU each); a plain job 7 and array 20 with one row only.
fn array_jobs() -> Vec<Job> {
    let task = |id: &str, task: Option<u32>, pending: Option<&str>, state: JobState| {
        let mut j = job("fd22", id, state, "bob", "sweep");
        j.array = Some(ArrayInfo {
            array_id: id.split('_').next().unwrap().into(),
            task_id: task,
            pending_tasks: pending.map(Into::into),
        });
        j
    };
    let mut out = vec![job("fd22", "7", JobState::Running, "alice", "plain")];
    for t in 0..3 {
        let mut j = task(&format!("12_{t}"), Some(t), None, JobState::Running);
        (j.gpus_requested, j.gpus_allocated) = (2, 2);
        j.nodes = vec![format!("gpu-0{t}")];
        out.push(j);
    }
    for t in 3..5 {
        out.push(task(&format!("12_{t}"), Some(t), None, JobState::Completed));
    }
    let mut pending = task("12_[5-9]", None, Some("5-9"), JobState::Pending);
    pending.gpus_requested = 1;
    out.push(pending);
    out.push(task("20_0", Some(0), None, JobState::Running));
    out
}

fn array_app() -> App {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", array_jobs(), vec![])]));
    on_jobs(&mut app);
    app
}

fn array12() -> JobRef {
    flightdeck::tui::app::row_cache::array_key("fd22", "12")
}

#[test]
fn an_array_folds_into_one_parent_row_with_its_counts() {
    let app = array_app();
    assert_eq!(app.visible_jobs(), vec![JobRef::new("fd22", "7"), array12(), JobRef::new("fd22", "20_0")]);
    let parent = app.array_parent(&array12()).expect("a parent row");
    assert_eq!(parent.job_ref.id, "12_[0-9]");
    assert_eq!(parent.name, "sweep");
    assert_eq!(parent.state, JobState::Running, "the most live state of its tasks");
    assert_eq!(parent.reason.as_deref(), Some("R 3 · PD 5 · CD 2"));
    assert_eq!(parent.gpus(), 3 * 2 + 5, "live tasks' GPUs, the pending range per task");
    assert_eq!(parent.nodes, vec!["gpu-00", "gpu-01", "gpu-02"]);
    assert_eq!(app.visible_job_count(), 8, "the title counts jobs, not rows");
    assert!(app.array_parent(&flightdeck::tui::app::row_cache::array_key("fd22", "20")).is_none(), "one row: no fold");
}

#[test]
fn the_fold_key_unfolds_and_folds_back_and_survives_a_refresh() {
    let mut app = array_app();
    ch(&mut app, 'j');
    assert_eq!(app.cursor_job(), Some(&array12()));
    ch(&mut app, 'z');
    let mut unfolded = vec![JobRef::new("fd22", "7"), array12()];
    unfolded.extend(refs("fd22", &["12_0", "12_1", "12_2", "12_[5-9]", "12_3", "12_4"]));
    unfolded.push(JobRef::new("fd22", "20_0"));
    assert_eq!(app.visible_jobs(), unfolded, "tasks follow their parent, in the table's order");
    assert_eq!(app.cursor_job(), Some(&array12()), "the cursor stays on the parent");

    // A new fleet state: still unfolded, the cursor on the same row.
    ch(&mut app, 'j');
    ch(&mut app, 'j');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "12_1")));
    let mut later = array_jobs();
    later.insert(0, job("fd22", "3", JobState::Running, "bob", "new"));
    app.update(fleet(2, vec![("fd22", later.clone(), vec![])]));
    assert_eq!(app.expanded_arrays(), vec![array12()]);
    assert_eq!(app.visible_jobs()[3], JobRef::new("fd22", "12_0"), "a new job above it");
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "12_1")), "the cursor follows the task");

    // `z` on a task folds its array, the cursor on the parent.
    ch(&mut app, 'z');
    assert_eq!(
        app.visible_jobs(),
        vec![JobRef::new("fd22", "3"), JobRef::new("fd22", "7"), array12(), JobRef::new("fd22", "20_0")]
    );
    assert_eq!(app.cursor_job(), Some(&array12()));
    app.update(fleet(3, vec![("fd22", later, vec![])]));
    assert!(app.expanded_arrays().is_empty());
    assert_eq!(app.cursor_job(), Some(&array12()), "the parent row is followed across refreshes");
    assert_eq!(app.visible_jobs().len(), 4, "still folded");

    // A plain job and a one-row array do not fold.
    ch(&mut app, 'k');
    ch(&mut app, 'z');
    assert_eq!(app.visible_jobs().len(), 4);
    ch(&mut app, 'j');
    ch(&mut app, 'j');
    assert_eq!(app.cursor_job(), Some(&JobRef::new("fd22", "20_0")));
    ch(&mut app, 'z');
    assert_eq!(app.visible_jobs().len(), 4);
    assert!(app.expanded_arrays().is_empty());
}

#[test]
fn a_filter_matching_one_task_shows_its_parent() {
    let mut app = array_app();
    ch(&mut app, '/');
    typed(&mut app, "12_4");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_jobs(), vec![array12()]);
    assert_eq!(app.visible_job_count(), 1);
    ch(&mut app, 'z');
    assert_eq!(app.visible_jobs(), vec![array12(), JobRef::new("fd22", "12_4")], "unfolded: the matching task only");
    // A quick filter: pending jobs only.
    code(&mut app, KeyCode::Esc);
    ch(&mut app, 't');
    assert_eq!(app.visible_jobs(), vec![array12(), JobRef::new("fd22", "12_[5-9]")]);
    ch(&mut app, 'z');
    assert_eq!(app.visible_jobs(), vec![array12()]);
}

#[test]
fn cancel_on_a_folded_parent_targets_every_task() {
    let mut app = array_app();
    ch(&mut app, 'j');
    assert_eq!(app.cursor_job(), Some(&array12()));
    assert!(ch(&mut app, 'C').is_empty());
    let Some(Dialog::Jobs { action: JobAction::Cancel, targets, .. }) = app.dialog() else {
        panic!("no cancel dialog: {:?}", app.dialog());
    };
    let every = refs("fd22", &["12_0", "12_1", "12_2", "12_3", "12_4", "12_[5-9]"]);
    assert_eq!(targets, &every);
    assert_eq!(app.dialog().unwrap().targets(), every.iter().map(ToString::to_string).collect::<Vec<_>>());
    let sent = job_actions(&ch(&mut app, 'y'));
    assert_eq!(sent, every.iter().map(|r| (r.clone(), JobAction::Cancel)).collect::<Vec<_>>());

    // Marking the parent marks its tasks; hold goes to each at once.
    ch(&mut app, 'k');
    ch(&mut app, 'j');
    ch(&mut app, ' ');
    assert_eq!(app.marked_jobs().len(), 6);
    let held = job_actions(&ch(&mut app, 'H'));
    assert_eq!(held.len(), 6);
    assert!(held.iter().all(|(_, a)| *a == JobAction::Hold));
    // Marked again: unmarked.
    ch(&mut app, 'k');
    ch(&mut app, ' ');
    assert!(app.marked_jobs().is_empty());
}

#[test]
fn enter_on_a_parent_opens_its_first_task() {
    let mut app = array_app();
    ch(&mut app, 'j');
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Detail);
    assert_eq!(app.detail().map(|d| &d.job), Some(&JobRef::new("fd22", "12_0")));
}

/// A PyTorchJob of a master and two workers, each pod with its own log; the job's own log
/// is the master's.
fn pytorchjob() -> Job {
    use flightdeck::model::{Workload, WorkloadPod};
    let mut j = job("k8s", "ml:pytorchjob:llm", JobState::Running, "alice", "llm");
    let pod = |name: &str, role: &str| WorkloadPod {
        name: name.into(),
        role: Some(role.into()),
        state: JobState::Running,
        native_state: "Running".into(),
        node: Some("gpu-01".into()),
        gpus: 2,
        reason: None,
        log: Some(format!("pod/ml/{name}/pytorch").into()),
    };
    let pods = vec![pod("llm-master-0", "master"), pod("llm-worker-0", "worker"), pod("llm-worker-1", "worker")];
    j.stdout = pods[0].log.clone();
    j.workload = Some(std::sync::Arc::new(Workload {
        kind: "PyTorchJob".into(),
        api_version: "kubeflow.org/v1".into(),
        replicas_ready: 3,
        replicas_total: 3,
        pods,
        cancel: true,
        ..Workload::default()
    }));
    j
}

#[test]
fn a_workloads_detail_reads_each_pods_log_in_turn() {
    let mut app = app();
    let plain = job("k8s", "ml:solo", JobState::Running, "alice", "solo");
    app.update(fleet(1, vec![("k8s", vec![pytorchjob(), plain], vec![])]));
    on_jobs(&mut app);
    let f = fetches(&code(&mut app, KeyCode::Enter));
    assert_eq!(app.detail().unwrap().job, JobRef::new("k8s", "ml:pytorchjob:llm"));
    assert_eq!(f[0].2, "pod/ml/llm-master-0/pytorch", "the master's log first");
    assert_eq!(app.detail().unwrap().shown_pod(), Some(0));
    assert_eq!(app.unavailable(UiAction::NextPod), None, "the footer offers the next pod");
    let mut read = Vec::new();
    for _ in 0..3 {
        let f = fetches(&ch(&mut app, 'p'));
        assert_eq!(f.len(), 1, "one fresh read per pod");
        assert_eq!(f[0].0, None, "from the pod log's tail");
        read.push(f[0].2.clone());
    }
    assert_eq!(read, ["pod/ml/llm-worker-0/pytorch", "pod/ml/llm-worker-1/pytorch", "pod/ml/llm-master-0/pytorch"]);
    // A pod's stderr is in its one log: switching streams says so instead of reading.
    assert!(fetches(&code(&mut app, KeyCode::Tab)).is_empty());
    assert!(app.detail().unwrap().log_handle().unwrap_err().contains("one log"));

    // A job of one log has no other pod to read.
    code(&mut app, KeyCode::Esc);
    ch(&mut app, 'j');
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.detail().unwrap().job, JobRef::new("k8s", "ml:solo"));
    assert!(fetches(&ch(&mut app, 'p')).is_empty());
    assert!(app.unavailable(UiAction::NextPod).is_some());
}

/// The detail of a job that waits asks its backend once what it adds about its turn (a
/// Kueue position, a priority's parts) and shows the answer; a running job asks nothing.
#[test]
fn a_waiting_jobs_detail_asks_once_for_its_turn() {
    let mut app = app();
    let mut queued = job("k8s", "research:big-sweep", JobState::Pending, "alice", "big-sweep");
    queued.reason = Some("Kueue Pending: couldn't assign flavors to pod set main".into());
    let running = job("k8s", "train:llm", JobState::Running, "alice", "llm");
    app.update(fleet(1, vec![("k8s", vec![queued, running], vec![])]));
    on_jobs(&mut app);
    let sent = code(&mut app, KeyCode::Enter);
    let asked: Vec<u64> = sent
        .iter()
        .filter_map(|c| match c {
            Command::FetchTurn { job, seq } if job.job_ref == JobRef::new("k8s", "research:big-sweep") => Some(*seq),
            _ => None,
        })
        .collect();
    assert_eq!(asked.len(), 1, "{sent:?}");
    let generation = app.generation();
    app.update(Msg::Turn { seq: asked[0] + 1, result: Ok(vec!["stale".into()]) });
    assert!(app.detail().unwrap().turn.is_empty(), "an answer to another question is dropped");
    assert_eq!(app.generation(), generation, "a stale answer asks no redraw");
    app.update(Msg::Turn { seq: asked[0], result: Ok(vec!["position 2 of 3 in ClusterQueue gpu".into()]) });
    assert_eq!(app.detail().unwrap().turn, ["position 2 of 3 in ClusterQueue gpu"]);
    assert!(app.generation() > generation, "the answer is drawn");
    assert!(app.update(Msg::Tick(t0())).iter().all(|c| !matches!(c, Command::FetchTurn { .. })), "asked once");

    code(&mut app, KeyCode::Esc);
    ch(&mut app, 'j');
    let sent = code(&mut app, KeyCode::Enter);
    assert_eq!(app.detail().unwrap().job, JobRef::new("k8s", "train:llm"));
    assert!(!sent.iter().any(|c| matches!(c, Command::FetchTurn { .. })), "{sent:?}");
}

/// A running job of `user` holding `gpus`.
fn holding(cluster: &str, id: &str, user: &str, gpus: u32) -> Job {
    let mut j = job(cluster, id, JobState::Running, user, &format!("job-{id}"));
    j.gpus_allocated = gpus;
    j.gpus_requested = gpus;
    j.start_time = Some(t0() - chrono::Duration::hours(1));
    j
}

/// The usage reads among `commands`, as `(since, seq)`.
fn usage_reads(commands: &[Command]) -> Vec<(DateTime<Utc>, u64)> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::FetchUsage { since, seq } => Some((*since, *seq)),
            _ => None,
        })
        .collect()
}

fn usage_keys(app: &App) -> Vec<String> {
    let u = app.usage();
    u.cursor.visible.iter().map(|i| u.rows[*i as usize].key.clone()).collect()
}

#[test]
fn the_usage_screen_reads_its_window_once_and_follows_every_refresh_for_what_is_held_now() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", vec![holding("fd22", "1", "bob", 2), holding("fd22", "2", "ann", 8)], vec![])]));
    let sent = ch(&mut app, '5');
    assert_eq!(app.screen(), Screen::Usage);
    let reads = usage_reads(&sent);
    assert_eq!(reads.len(), 1, "one window read: {sent:?}");
    assert_eq!(reads[0].0, t0() - chrono::Duration::days(7), "seven days back by default");
    assert_eq!(usage_keys(&app), ["ann", "bob"], "most GPUs held first, before any window came");

    // A refresh changes what is held now, with no new read.
    app.update(fleet(2, vec![("fd22", vec![holding("fd22", "1", "bob", 16), holding("fd22", "2", "ann", 8)], vec![])]));
    assert_eq!(usage_keys(&app), ["bob", "ann"]);
    assert!(usage_reads(&ch(&mut app, 'j')).is_empty());

    // A stale answer is dropped; the open one fills the GPU-hours, a user holding nothing now
    // comes in from the window.
    let window = |hours: &[(&str, f64)]| flightdeck::model::usage::Usage {
        rows: hours
            .iter()
            .map(|(k, h)| flightdeck::model::usage::UsageRow {
                key: (*k).into(),
                gpu_hours: Some(*h),
                gpu_hours_complete: true,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    app.update(Msg::Usage { seq: reads[0].1 + 7, result: Ok(Box::new(window(&[("zed", 1.0)]))) });
    assert!(app.usage().window.is_none(), "an answer to no open read is stale");
    app.update(Msg::Usage { seq: reads[0].1, result: Ok(Box::new(window(&[("cat", 90.0), ("ann", 3.0)]))) });
    assert_eq!(usage_keys(&app), ["bob", "ann", "cat"]);
    ch(&mut app, 's');
    assert_eq!(usage_keys(&app), ["cat", "ann", "bob"], "by GPU-hours");

    // `r` reads the window again; opening the screen again does not.
    assert_eq!(usage_reads(&ch(&mut app, 'r')).len(), 1);
    ch(&mut app, '2');
    assert!(usage_reads(&ch(&mut app, '5')).is_empty(), "a read is still open");

    // `/` narrows the rows to names holding the words; esc clears it.
    ch(&mut app, '/');
    typed(&mut app, "AN");
    code(&mut app, KeyCode::Enter);
    assert_eq!(usage_keys(&app), ["ann"]);
    code(&mut app, KeyCode::Esc);
    assert_eq!(usage_keys(&app).len(), 3);
}

#[test]
fn enter_on_a_user_in_the_usage_screen_shows_just_their_jobs() {
    let mut app = app();
    app.update(fleet(1, vec![("fd22", vec![holding("fd22", "1", "bob", 2), holding("fd22", "2", "ann", 8)], vec![])]));
    ch(&mut app, '5');
    ch(&mut app, 'j');
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Jobs);
    assert_eq!(app.user_filter(), Some("bob"));
    assert_eq!(app.visible_jobs(), refs("fd22", &["1"]));
}

/// A refresh that lists what the last one did (new snapshots, equal records) is no work for
/// the cockpit: no re-sort, no re-filter, no redraw. Its later `taken_at` still counts the
/// elapsed times (the old snapshot is not kept frozen), and a redraw comes when one on
/// screen turns a minute, or when a cluster's health changes.
#[test]
fn an_unchanged_refresh_costs_no_pass_and_no_redraw_yet_elapsed_times_move_on() {
    let listing = |version: u64, taken_at: DateTime<Utc>, health: Health| -> Msg {
        let mut a = job("fd22", "1", JobState::Running, "bob", "train");
        a.start_time = Some(t0() - chrono::Duration::minutes(10));
        let mut b = job("fd22", "2", JobState::Running, "bob", "eval");
        b.start_time = Some(t0() - chrono::Duration::hours(2));
        let c = job("fd22", "3", JobState::Pending, "carol", "sweep");
        let snap =
            Snapshot { cluster: "fd22".into(), taken_at: Some(taken_at), jobs: vec![a, b, c], ..Snapshot::default() };
        let cluster = ClusterState { health, snapshot: Some(Arc::new(snap)), ..ClusterState::new("fd22", "slurm") };
        Msg::Fleet(Arc::new(FleetState { clusters: vec![cluster], read_only: false, version }))
    };
    let at = |secs: i64| t0() + chrono::Duration::seconds(secs);
    let mut app = app();
    app.update(listing(1, t0(), Health::Fresh { at: t0() }));
    on_jobs(&mut app);
    app.update(Msg::Key(KeyEvent::new(KeyCode::Char('/'), KeyModifiers::NONE)));
    typed(&mut app, "bob");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_jobs(), refs("fd22", &["1", "2"]));
    assert!(screen_text(&mut app, 160, 20).contains("10m"));
    let (passes, generation) = (app.list_passes(), app.generation());

    // Five seconds on: `10m` and `2h00m` read the same. Nothing to do, nothing to draw.
    app.update(listing(2, at(5), Health::Fresh { at: at(5) }));
    assert_eq!(app.fleet().version, 2, "the new state is the one held");
    assert_eq!(app.list_passes(), passes, "no re-sort, no re-filter");
    assert_eq!(app.generation(), generation, "no redraw");
    assert_eq!(app.visible_jobs(), refs("fd22", &["1", "2"]), "the filter still holds");

    // A minute on, from the same kind of refresh: job 1 reads `11m`, so that is drawn.
    app.update(listing(3, at(60), Health::Fresh { at: at(60) }));
    assert_eq!(app.list_passes(), passes);
    assert!(app.generation() > generation, "an elapsed time on screen turned a minute");
    let screen = screen_text(&mut app, 160, 20);
    assert!(screen.contains("11m") && !screen.contains("10m"), "{screen}");

    // The cluster goes stale with its last snapshot: no new rows, but the screen says so.
    let generation = app.generation();
    let stale = Health::Stale { since: at(70), error: "ssh: timed out".into(), last_ok: Some(at(60)) };
    app.update(listing(4, at(60), stale));
    assert_eq!(app.list_passes(), passes);
    assert!(app.generation() > generation, "health is drawn");

    // A record that changed is a new listing: the lists are rebuilt.
    let Msg::Fleet(state) = listing(5, at(75), Health::Fresh { at: at(75) }) else { unreachable!() };
    let mut state = (*state).clone();
    let mut snap = (**state.clusters[0].snapshot.as_ref().unwrap()).clone();
    snap.jobs[2].user = "bob".into();
    state.clusters[0].snapshot = Some(Arc::new(snap));
    app.update(Msg::Fleet(Arc::new(state)));
    assert_eq!(app.list_passes(), passes + 1);
    assert_eq!(app.visible_jobs(), refs("fd22", &["1", "2", "3"]));
}
