//! The event loop: it only awaits channels — terminal events, the fleet's state watch, the
//! action outcomes, answers of its own background reads, signals and a clock tick — feeds
//! each to `App::update` and carries out the commands that come back. Log reads and spec
//! loads run on tasks, so a hung backend never holds up a key press.
//!
//! Frames are drawn only when the App's generation moved since the last frame: an idle
//! cockpit writes nothing to the terminal.
//!
//! Awaits only channels (terminal events, fleet watch, outcomes, task results, signals,
//! a 1 s tick); a new fleet state is compared on a blocking thread with the last one handed to the
//! App (`same_listing`: `Msg::Restamped`) or else prepared there (`Prepared` for the App's
//! `list_view()`); draws only when the App's generation moved; every `Command::Fleet` of one update
//! goes to the fleet as one batch (a confirmed dialog of 1,000 jobs is one request), its summary
//! one toast that stays until `esc`; `Command::FetchTurn` asks `Fleet::priority_details` once for a
//! waiting job's detail (a Kueue position, Slurm's sprio/sshare); `Command::FetchHistory` reads
//! `Fleet::history` of every cluster at once on a task (each bounded) and answers `Msg::History`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::{Stream, StreamExt};
use ratatui::crossterm::event::Event;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use super::App;
use super::app::lists::ListView;
use super::app::prepared::Prepared;
use super::app::row_cache;
use super::app::{Command, Msg};
use crate::fleet::{Action, ActionOutcome, BatchOutcome, Fleet, FleetState};
use crate::spec::JobSpec;

/// How often the clock ticks (toasts expire, followed logs are re-read, the terminal is
/// checked).
pub const TICK: Duration = Duration::from_secs(1);
/// A log read that takes longer is given up (the detail shows the error and may retry).
pub const LOG_TIMEOUT: Duration = Duration::from_secs(60);
/// A cluster's history read that takes longer is given up (the history screen names it).
pub const HISTORY_TIMEOUT: Duration = Duration::from_secs(120);

/// Where frames go, and what the terminal can do. The real one is
/// [`super::terminal::TerminalGuard`]; tests use a `TestBackend`.
pub trait Surface {
    fn draw(&mut self, app: &App) -> io::Result<()>;
    /// Give the terminal back and stop until continued (Ctrl-Z).
    fn suspend(&mut self) -> io::Result<()>;
    /// Take the terminal again after being continued, and redraw everything next frame.
    fn resume(&mut self) -> io::Result<()>;
    fn size(&self) -> io::Result<(u16, u16)>;
    /// False once the terminal is gone (hang-up).
    fn alive(&mut self) -> bool;
    /// Write a notification sequence (OSC 9/777, the bell) to the terminal between frames.
    /// A surface that is no terminal has nowhere to put it.
    fn notify(&mut self, bytes: &[u8]) -> io::Result<()> {
        let _ = bytes;
        Ok(())
    }
}

/// The terminal went away (hang-up, end of input, a dead descriptor). Nobody is left to
/// read a message, so [`super::run`] ends quietly on it (after logging it).
#[derive(Debug, thiserror::Error)]
#[error("lost the terminal: {0}")]
pub struct TerminalLost(pub String);

fn lost(why: impl std::fmt::Display) -> color_eyre::Report {
    TerminalLost(why.to_string()).into()
}

/// Process signals the loop reacts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `SIGCONT`: continued after a stop we did not ask for; take the terminal back.
    Continue,
    /// `SIGHUP`: the terminal is gone; end without drawing.
    HangUp,
    /// `SIGTERM` / `SIGINT`: end cleanly.
    Terminate,
}

/// Listen for the signals of [`Signal`] (Unix); the receiver yields them as they come.
pub fn signals() -> io::Result<mpsc::UnboundedReceiver<Signal>> {
    let (tx, rx) = mpsc::unbounded_channel();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            (SignalKind::hangup(), Signal::HangUp),
            (SignalKind::terminate(), Signal::Terminate),
            (SignalKind::interrupt(), Signal::Terminate),
            (SignalKind::from_raw(libc::SIGCONT), Signal::Continue),
        ];
        for (kind, what) in kinds {
            let mut stream = signal(kind)?;
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(what).is_err() {
                        break;
                    }
                }
            });
        }
    }
    Ok(rx)
}

/// The terminal events the App cares about.
fn to_msg(event: Event) -> Option<Msg> {
    match event {
        Event::Key(key) => Some(Msg::Key(key)),
        Event::Paste(text) => Some(Msg::Paste(text)),
        Event::Resize(w, h) => Some(Msg::Resize(w, h)),
        _ => None,
    }
}

fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), directories::BaseDirs::new()) {
        (Ok(rest), Some(dirs)) => dirs.home_dir().join(rest),
        _ => path.to_path_buf(),
    }
}

/// Make ready `state` on a blocking thread: when it lists what `base` (the last state handed
/// to the App) listed, it comes back as `Msg::Restamped` and costs the App next to nothing;
/// else its row cache is built, with the lists' rows for `view` (the App's when it arrived),
/// and comes back as `Msg::Prepared`.
fn prepare(base: Option<Arc<FleetState>>, state: Arc<FleetState>, view: ListView, tx: &mpsc::UnboundedSender<Msg>) {
    let tx = tx.clone();
    tokio::task::spawn_blocking(move || {
        // A bug in building the cache must not leave the cockpit waiting for it forever.
        let made = std::panic::catch_unwind(|| match base {
            Some(base) if row_cache::same_listing(&base, &state) => Msg::Restamped { base, state },
            _ => Msg::Prepared(Box::new(Prepared::new(state, Some(view)))),
        });
        let msg = match made {
            Ok(msg) => msg,
            Err(_) => {
                Msg::PrepareFailed("could not read the new fleet state (see the log); showing the last one".into())
            }
        };
        let _ = tx.send(msg);
    });
}

/// Run until the App says quit, the terminal goes away, or a terminating signal arrives.
pub async fn run<S, E>(
    fleet: Arc<Fleet>,
    mut app: App,
    surface: &mut S,
    mut events: E,
    mut signals: mpsc::UnboundedReceiver<Signal>,
    tick: Duration,
) -> color_eyre::Result<()>
where
    S: Surface,
    E: Stream<Item = io::Result<Event>> + Unpin,
{
    let mut states = fleet.subscribe();
    let mut outcomes = fleet.outcomes();
    // tmux drops OSC sequences unless wrapped (see `notify`).
    let in_tmux = std::env::var_os("TMUX").is_some();
    let (results_tx, mut results) = mpsc::unbounded_channel::<Msg>();
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);

    let (w, h) = surface.size().map_err(lost)?;
    app.update(Msg::Resize(w, h));
    app.update(Msg::Tick(Utc::now()));
    let first = states.borrow_and_update().clone();
    // The state the App was last handed: what the next one is compared with.
    let mut handed = Some(first.clone());
    app.update(Msg::Fleet(first));

    let mut drawn = 0u64;
    let (mut fleet_open, mut outcomes_open, mut signals_open) = (true, true, true);
    // The row cache for a new fleet state is built on a blocking thread, one at a time; a
    // state that arrives meanwhile waits, and only the newest is built next.
    let mut building = false;
    let mut waiting = false;
    loop {
        if app.generation() != drawn {
            surface.draw(&app).map_err(|e| lost(format!("cannot draw: {e}")))?;
            drawn = app.generation();
        }
        let msg = tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => match to_msg(event) {
                    Some(msg) => msg,
                    None => continue,
                },
                Some(Err(e)) => return Err(lost(e)),
                None => return Err(lost("no more input")),
            },
            changed = states.changed(), if fleet_open => {
                match changed {
                    Ok(()) if building => waiting = true,
                    Ok(()) => {
                        building = true;
                        let state = states.borrow_and_update().clone();
                        prepare(handed.replace(state.clone()), state, app.list_view(), &results_tx);
                    }
                    Err(_) => fleet_open = false,
                }
                continue;
            }
            outcome = outcomes.recv(), if outcomes_open => match outcome {
                Ok(batch) => Msg::Batch(batch),
                Err(RecvError::Lagged(n)) => Msg::OutcomesLost(n),
                Err(RecvError::Closed) => {
                    outcomes_open = false;
                    continue;
                }
            },
            Some(msg) = results.recv() => {
                if matches!(msg, Msg::Prepared(_) | Msg::Restamped { .. } | Msg::PrepareFailed(_)) {
                    if matches!(msg, Msg::PrepareFailed(_)) {
                        // The App kept its last rows: the next state is built in full.
                        handed = None;
                    }
                    building = waiting;
                    if std::mem::take(&mut waiting) {
                        let state = states.borrow_and_update().clone();
                        prepare(handed.replace(state.clone()), state, app.list_view(), &results_tx);
                    }
                }
                msg
            }
            signal = signals.recv(), if signals_open => match signal {
                Some(Signal::Continue) => {
                    // A hang-up brings SIGCONT along with SIGHUP: failing here means the same.
                    surface.resume().map_err(|e| lost(format!("cannot take it back: {e}")))?;
                    drawn = 0;
                    continue;
                }
                Some(Signal::HangUp) => return Err(lost("hang-up (SIGHUP)")),
                Some(Signal::Terminate) => return Ok(()),
                None => {
                    signals_open = false;
                    continue;
                }
            },
            _ = ticker.tick() => {
                if !surface.alive() {
                    return Err(lost("it no longer answers"));
                }
                Msg::Tick(Utc::now())
            }
        };
        let commands = app.update(msg);
        if let Some(old) = app.take_retired() {
            tokio::task::spawn_blocking(move || drop(old));
        }
        // Every action of one update is one batch: the fleet carries it out whole.
        let (asked, commands): (Vec<Command>, Vec<Command>) =
            commands.into_iter().partition(|c| matches!(c, Command::Fleet(_)));
        let batch: Vec<Action> = asked
            .into_iter()
            .filter_map(|c| match c {
                Command::Fleet(action) => Some(action),
                _ => None,
            })
            .collect();
        if !batch.is_empty() {
            let refused: Vec<ActionOutcome> = batch
                .iter()
                .map(|a| ActionOutcome {
                    verb: a.verb(),
                    target: a.target(),
                    result: Err("the fleet is busy (its action queue is full); nothing was done; try again".into()),
                })
                .collect();
            if !fleet.request_batch(batch) {
                let _ = results_tx.send(Msg::Batch(Arc::new(BatchOutcome { outcomes: refused })));
            }
        }
        for command in commands {
            match command {
                Command::Quit => return Ok(()),
                Command::Suspend => {
                    // Failing to stop is harmless; failing to take the terminal back is not.
                    if let Err(e) = surface.suspend() {
                        tracing::warn!(error = %e, "cannot suspend");
                        if !surface.alive() {
                            return Err(lost(format!("cannot take it back after Ctrl-Z: {e}")));
                        }
                        surface.resume().map_err(|e| lost(format!("cannot take it back after Ctrl-Z: {e}")))?;
                    }
                    drawn = 0;
                    if let Ok((w, h)) = surface.size() {
                        app.update(Msg::Resize(w, h));
                    }
                }
                Command::Fleet(_) => {}
                Command::Notify(event) => {
                    let settings = app.notify_settings();
                    let bytes = crate::notify::sequence(settings.notice(in_tmux), "flightdeck", &event.summary());
                    if !bytes.is_empty()
                        && let Err(e) = surface.notify(&bytes)
                    {
                        tracing::warn!(error = %e, "cannot write the notification");
                    }
                    if !settings.command.is_empty() {
                        let argv = settings.command.clone();
                        let json = serde_json::to_vec(&event).expect("an event serialises");
                        tokio::spawn(async move {
                            // The screen is the cockpit's: a failing notifier goes to the log.
                            if let Err(why) = crate::notify::run_command(&argv, &json).await {
                                tracing::warn!(job = %event.job, %why, "notify_command failed");
                            }
                        });
                    }
                }
                Command::Refresh(cluster) => fleet.refresh_now(cluster.as_deref()),
                Command::FetchLog { job, stream: _, log, from, max_bytes, seq } => {
                    let fleet = fleet.clone();
                    let tx = results_tx.clone();
                    tokio::spawn(async move {
                        let read = fleet.read_log(&job.cluster, &log, from, max_bytes);
                        let result = match tokio::time::timeout(LOG_TIMEOUT, read).await {
                            Ok(r) => r.map_err(|e| e.to_string()),
                            Err(_) => Err(format!("no answer in {} s", LOG_TIMEOUT.as_secs())),
                        };
                        let _ = tx.send(Msg::Log { seq, result });
                    });
                }
                Command::FetchTurn { job, seq } => {
                    let fleet = fleet.clone();
                    let tx = results_tx.clone();
                    tokio::spawn(async move {
                        let asked = fleet.priority_details(&job);
                        let result = match tokio::time::timeout(LOG_TIMEOUT, asked).await {
                            Ok(r) => r.map_err(|e| e.to_string()),
                            Err(_) => Err(format!("no answer in {} s", LOG_TIMEOUT.as_secs())),
                        };
                        let _ = tx.send(Msg::Turn { seq, result });
                    });
                }
                Command::Render { cluster, spec, seq } => {
                    let fleet = fleet.clone();
                    let tx = results_tx.clone();
                    tokio::spawn(async move {
                        let render = fleet.render(&cluster, &spec);
                        let result = match tokio::time::timeout(LOG_TIMEOUT, render).await {
                            Ok(r) => r.map_err(|e| e.to_string()),
                            Err(_) => Err(format!("{cluster}: no answer in {} s", LOG_TIMEOUT.as_secs())),
                        };
                        let _ = tx.send(Msg::Rendered { seq, result });
                    });
                }
                Command::PlanMigration { sources, to, running, gpu_type, seq } => {
                    let fleet = fleet.clone();
                    let tx = results_tx.clone();
                    tokio::spawn(async move {
                        let opts = crate::fleet::migrate::MigrateOptions { running, gpu_type, ..Default::default() };
                        let plan = fleet.plan_migration(&sources, &to, &opts).await;
                        let _ = tx.send(Msg::Planned { seq, plan: Box::new(plan) });
                    });
                }
                Command::FetchHistory { since, seq } => {
                    let fleet = fleet.clone();
                    let tx = results_tx.clone();
                    tokio::spawn(async move {
                        let results = read_histories(&fleet, since, crate::model::history::DEFAULT_LIMIT).await;
                        let _ = tx.send(Msg::History { seq, results });
                    });
                }
                Command::FetchUsage { since, seq } => {
                    let fleet = fleet.clone();
                    let tx = results_tx.clone();
                    tokio::spawn(async move {
                        use crate::model::usage::{UsageBy, UsageQuery};
                        // A hub's clusters from its `Usage` call, the rest read and summed
                        // here (the sum off the async threads).
                        let query = UsageQuery { by: UsageBy::User, since: Some(since), until: None };
                        let answer = fleet.usage(&query, Some(HISTORY_TIMEOUT)).await;
                        let _ = tx.send(Msg::Usage { seq, result: Ok(Box::new(answer.usage)) });
                    });
                }
                Command::LoadSpec(path) => {
                    let tx = results_tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let result = JobSpec::load(&expand_home(&path)).map(Box::new).map_err(|e| e.to_string());
                        let _ = tx.send(Msg::SpecLoaded { path: path.display().to_string(), result });
                    });
                }
            }
        }
    }
}

/// Every cluster's jobs that ended since `since` (at most `limit` each), one read per
/// cluster, all at once, so a slow one holds up no other; each bounded by
/// [`HISTORY_TIMEOUT`].
async fn read_histories(
    fleet: &Fleet,
    since: chrono::DateTime<chrono::Utc>,
    limit: usize,
) -> Vec<(String, Result<crate::model::History, String>)> {
    let query = crate::model::HistoryQuery { since, user: None, states: Vec::new(), limit };
    let reads = fleet.cluster_names().into_iter().map(|name| {
        let query = &query;
        async move {
            let read = fleet.history(&name, query);
            let result = match tokio::time::timeout(HISTORY_TIMEOUT, read).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err(format!("no answer in {} s", HISTORY_TIMEOUT.as_secs())),
            };
            (name, result)
        }
    });
    futures_util::future::join_all(reads).await
}
