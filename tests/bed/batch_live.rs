//! A thousand pending jobs on the real test bed (Slurm 22.05 behind sshd), cancelled as one
//! confirmed batch: from the cockpit's `App` (select all, cancel, confirm, the commands of
//! that update handed to the fleet as one batch, as the event loop does) and from the CLI
//! (`flightdeck cancel` with a thousand refs). Every job is gone afterwards, the audit log
//! holds one intent and one outcome per job, and the wall time is printed for the note.

use crate::common;

use std::process::Command as Process;
use std::time::{Duration, Instant};

use common::{CancelByName, backend, cluster_lock, remote, testbed_config, testbed_config_path, wait_snapshot};
use flightdeck::fleet::{Action, AuditLog, Fleet, FleetOptions};
use flightdeck::tui::keymap::Keymap;
use flightdeck::tui::theme::{ColorDepth, Theme};
use flightdeck::tui::{App, Command, Msg, TuiOptions};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const CLUSTER: &str = "fd22";
const JOBS: usize = 1000;

/// Submit `JOBS` held jobs named `name` in one remote shell loop; their ids.
async fn submit_held(name: &str) -> Vec<String> {
    let b = backend(CLUSTER);
    let script = format!(
        "i=0; while [ $i -lt {JOBS} ]; do sbatch --hold --parsable -J {name} -o /dev/null --wrap true || exit 1; i=$((i+1)); done"
    );
    let started = Instant::now();
    let out = remote(&b, &["sh", "-c", &script]).await;
    let ids: Vec<String> = out.lines().map(|l| l.split(';').next().unwrap_or(l).trim().to_string()).collect();
    assert_eq!(ids.len(), JOBS, "{out}");
    eprintln!("submitted {JOBS} held jobs in {:.1} s", started.elapsed().as_secs_f64());
    ids
}

/// A job name of this run only (jobs of an earlier run may still be listed).
fn unique(what: &str) -> String {
    format!("fdbatch-{what}-{}", std::process::id())
}

/// Wait until the cluster shows none of the jobs named `name`.
async fn wait_all_gone(name: &str) {
    let b = backend(CLUSTER);
    wait_snapshot(&b, Duration::from_secs(60), "every batch job to be gone", |s| {
        !s.jobs.iter().any(|j| j.name == name && !j.state.is_finished())
    })
    .await;
}

fn audit_counts(log: &AuditLog, ids: &[String]) {
    let records = log.read_all().unwrap();
    for outcome in ["intent", "ok"] {
        let mut targets: Vec<String> =
            records.iter().filter(|r| r.outcome == outcome).map(|r| r.target.clone()).collect();
        targets.sort();
        let mut want: Vec<String> = ids.iter().map(|id| format!("{CLUSTER}/{id}")).collect();
        want.sort();
        assert_eq!(targets, want, "one `{outcome}` record per job");
    }
    assert_eq!(records.len(), 2 * ids.len(), "nothing else recorded");
    let entries = flightdeck::fleet::audit::entries(records);
    assert!(entries.iter().all(|e| e.outcome == "ok"), "every intent paired with its outcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_jobs_cancelled_from_the_cockpit_as_one_batch() {
    let _lock = cluster_lock(CLUSTER);
    let name = unique("app");
    let _clean = CancelByName { cluster: CLUSTER, name: name.clone() };
    let ids = submit_held(&name).await;

    let config = testbed_config();
    let state = tempfile::tempdir().unwrap();
    let log = AuditLog::new(state.path().join("audit.jsonl"));
    let fleet = Fleet::builder(&config)
        .only(&[CLUSTER.to_string()])
        .start(FleetOptions { read_only: false, poll: true, audit: Some(log.clone()), actor: "tester@bed".into() })
        .expect("fleet over the test bed");
    let seen = fleet
        .wait_for(Duration::from_secs(60), |s| {
            s.clusters[0]
                .snapshot
                .as_ref()
                .is_some_and(|snap| snap.jobs.iter().filter(|j| j.name == name).count() == JOBS)
        })
        .await;

    let mut app = App::new(TuiOptions {
        keymap: Keymap::builtin("default").unwrap(),
        theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
        read_only: false,
        user: "root".into(),
        config_label: "test bed".into(),
        no_clusters: Vec::new(),
    });
    app.update(Msg::Tick(chrono::Utc::now()));
    app.update(Msg::Fleet(seen));
    let key = |app: &mut App, code: KeyCode| app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('/'));
    for c in name.chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Char('a'));
    assert_eq!(app.marked_jobs().len(), JOBS, "select all marks exactly the batch's jobs");
    assert!(key(&mut app, KeyCode::Char('C')).is_empty(), "nothing before the confirmation");
    let confirmed = key(&mut app, KeyCode::Char('y'));
    // What the event loop does with one update's commands: one batch for the fleet.
    let batch: Vec<Action> = confirmed
        .into_iter()
        .filter_map(|c| match c {
            Command::Fleet(a) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(batch.len(), JOBS);

    let started = Instant::now();
    let outcome = fleet.perform_batch(batch).await;
    let took = started.elapsed();
    eprintln!("cockpit: cancelled {JOBS} jobs as one batch in {:.2} s", took.as_secs_f64());
    assert_eq!(outcome.failed(), 0, "{}", outcome.summary());
    assert_eq!(outcome.summary(), format!("cancelled {JOBS} of {JOBS}"));
    app.update(Msg::Batch(std::sync::Arc::new(outcome)));
    assert_eq!(app.toasts().len(), 1);
    assert!(app.toasts()[0].sticky, "the summary stays until dismissed");

    wait_all_gone(&name).await;
    audit_counts(&log, &ids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_jobs_cancelled_from_the_cli_in_one_command() {
    let _lock = cluster_lock(CLUSTER);
    let name = unique("cli");
    let _clean = CancelByName { cluster: CLUSTER, name: name.clone() };
    let ids = submit_held(&name).await;
    let _ = testbed_config();
    let state = tempfile::tempdir().unwrap();
    let refs: Vec<String> = ids.iter().map(|id| format!("{CLUSTER}/{id}")).collect();
    let started = Instant::now();
    let out = Process::new(env!("CARGO_BIN_EXE_flightdeck"))
        .arg("--config")
        .arg(testbed_config_path())
        .arg("cancel")
        .args(&refs)
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck");
    let took = started.elapsed();
    eprintln!("cli: cancelled {JOBS} jobs in one command in {:.2} s", took.as_secs_f64());
    let said = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(said.lines().filter(|l| l.starts_with("cancelled fd22/")).count(), JOBS, "{said}");
    assert!(err.contains(&format!("cancelled {JOBS} of {JOBS}")), "{err}");

    wait_all_gone(&name).await;
    audit_counts(&AuditLog::new(state.path().join("flightdeck/audit.jsonl")), &ids);
}
