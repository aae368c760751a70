//! What the cockpit's loop and the App exchange: what happened ([`Msg`]) and what to do ([`Command`]).

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ratatui::crossterm::event::KeyEvent;

use crate::fleet::{Action, ActionOutcome, BatchOutcome, FleetState};
use crate::model::{History, Job, JobRef, LogHandle, Native};
use crate::spec::JobSpec;
use crate::tui::app::log::{LogChunk, LogStream};
use crate::tui::app::prepared::Prepared;

/// Something that happened.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
    /// The fleet published a new state.
    Fleet(Arc<FleetState>),
    /// A new fleet state with its row cache already built, and the lists' rows for the view
    /// the App had (off the UI thread: at 100,000 jobs that takes longer than a keystroke
    /// may wait).
    Prepared(Box<Prepared>),
    /// A new fleet state that lists exactly what `base` listed (found off the UI thread:
    /// [`crate::tui::app::row_cache::same_listing`]), only its health and its snapshots'
    /// times moved: the rows built for `base` serve it as they are (no re-sort, no
    /// re-filter), and it is redrawn only where a cell on screen changed.
    Restamped {
        base: Arc<FleetState>,
        state: Arc<FleetState>,
    },
    /// Building that row cache failed (a bug); the last one stays.
    PrepareFailed(String),
    /// An action finished.
    Outcome(ActionOutcome),
    /// A batch of actions (everything one update asked for) finished, all of it.
    Batch(Arc<BatchOutcome>),
    /// This many outcomes finished faster than they could be shown (see the audit log).
    OutcomesLost(u64),
    /// The answer to [`Command::FetchLog`] number `seq`.
    Log {
        seq: u64,
        result: Result<LogChunk, String>,
    },
    /// The answer to [`Command::FetchTurn`] number `seq`: a line each.
    Turn {
        seq: u64,
        result: Result<Vec<String>, String>,
    },
    /// The answer to [`Command::Render`] number `seq`.
    Rendered {
        seq: u64,
        result: Result<Native, String>,
    },
    /// The answer to [`Command::PlanMigration`] number `seq`.
    Planned {
        seq: u64,
        plan: Box<crate::fleet::migrate::MigrationPlan>,
    },
    /// The answer to [`Command::FetchHistory`] number `seq`: every cluster's finished jobs,
    /// or why it could not say.
    History {
        seq: u64,
        results: Vec<(String, Result<History, String>)>,
    },
    /// The answer to [`Command::FetchUsage`] number `seq`: every user's GPU-hours over the
    /// window (and what it could not say), or why none could be computed.
    Usage {
        seq: u64,
        result: Result<Box<crate::model::usage::Usage>, String>,
    },
    /// The answer to [`Command::LoadSpec`].
    SpecLoaded {
        path: String,
        result: Result<Box<JobSpec>, String>,
    },
    Resize(u16, u16),
    /// The clock, passed in (toasts expire, followed logs are re-read).
    Tick(DateTime<Utc>),
}

/// Something for the event loop to do.
#[derive(Debug)]
pub enum Command {
    /// Hand an action to the fleet. Every `Fleet` command of one update goes to the fleet
    /// as one batch (a confirmed dialog is one); its outcome comes back as [`Msg::Batch`].
    Fleet(Action),
    /// Refresh one cluster (or every one) now.
    Refresh(Option<String>),
    /// Read a log file of `job` (on a task); answer with [`Msg::Log`] carrying `seq`.
    /// `from: None` reads the last `max_bytes`; `Some(offset)` reads on from there.
    FetchLog {
        job: JobRef,
        stream: LogStream,
        log: LogHandle,
        from: Option<u64>,
        max_bytes: u64,
        seq: u64,
    },
    /// Ask `job`'s backend what it adds about the job's turn (its priority's parts, its place
    /// in a Kueue queue): once, when the detail of a job that waits opens; answer with
    /// [`Msg::Turn`] carrying `seq`.
    FetchTurn {
        job: Box<Job>,
        seq: u64,
    },
    /// Read and validate a spec file (off the UI); answer with [`Msg::SpecLoaded`].
    LoadSpec(PathBuf),
    /// Ask `cluster` for its native form of `spec` (the submit form's preview); answer with
    /// [`Msg::Rendered`] carrying `seq`.
    Render {
        cluster: String,
        spec: Box<JobSpec>,
        seq: u64,
    },
    /// Plan moving `sources` to `to` (reads their specs, asks `to` to render them); answer
    /// with [`Msg::Planned`] carrying `seq`. Changes nothing.
    PlanMigration {
        sources: Vec<JobRef>,
        to: String,
        running: bool,
        /// `--gpu-type`'s choice, where one was made (`g` in the plan).
        gpu_type: Option<crate::fleet::migrate::GpuChoice>,
        seq: u64,
    },
    /// Read the jobs that ended since `since` of every cluster (one call each, at once, on a
    /// task: `sacct` on Slurm); answer with [`Msg::History`] carrying `seq`.
    FetchHistory {
        since: DateTime<Utc>,
        seq: u64,
    },
    /// Read every cluster's finished jobs since `since` (as [`Command::FetchHistory`]) and
    /// compute each user's GPU-hours over the window with the fleet's picture of now, off
    /// the UI thread; answer with [`Msg::Usage`] carrying `seq`.
    FetchUsage {
        since: DateTime<Utc>,
        seq: u64,
    },
    Quit,
    /// Give the terminal back and stop (Ctrl-Z); the loop restores the screen on `fg`.
    Suspend,
    /// A watched job changed: tell whoever is not looking (the terminal's notification, the
    /// configured command; see [`crate::notify`]).
    Notify(crate::fleet::follow::Event),
}
