//! The cockpit's state and its one transition function.
//!
//! [`App::update`] takes a [`Msg`] (a key, a new fleet state, an action's outcome, a log
//! read, a resize, a clock tick) and returns the [`Command`]s the event loop carries out.
//! Nothing here does I/O, reads the clock or touches the terminal, so every behaviour is a
//! plain unit test (`tests/offline/tui_app.rs`).

pub mod command_line;
pub mod data;
pub mod dialog;
pub mod form;
pub mod help;
pub mod history;
pub mod input;
pub mod latest;
pub mod lists;
pub mod log;

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use nucleo::Matcher;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use self::command_line::Parsed;
use self::data::{Cell as GpuCell, Data};
use self::dialog::Dialog;
use self::form::{Field, SubmitForm};
use self::history::HistoryView;
use self::input::{Edit, TextInput, plain_char};
use self::latest::Latest;
use self::lists::{ClusterKeep, Cursor, GpuList, GpuSort, JobColumn, JobList, NodeColumn, NodeList, STATE_CYCLE};
use self::log::{LOG_FETCH_BYTES, LogBuffer, LogChunk, LogStream};
use super::TuiOptions;
use super::action::{Mode, UiAction};
use super::keymap::{Keymap, Resolution};
use super::theme::Theme;
use crate::fleet::{Action, ActionOutcome, BatchOutcome, FleetState};
use crate::model::{History, Job, JobRef, JobState, NodeRef};
use crate::model::{JobAction, LogHandle, Native, NodeAction, Verb};
use crate::spec::JobSpec;

/// Something that happened.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
    /// The fleet published a new state.
    Fleet(Arc<FleetState>),
    /// A new fleet state with its row cache already built (off the UI thread: at 100,000
    /// jobs that takes longer than a keystroke may wait).
    Prepared(Box<Data>),
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
    Quit,
    /// Give the terminal back and stop (Ctrl-Z); the loop restores the screen on `fg`.
    Suspend,
    /// A watched job changed: tell whoever is not looking (the terminal's notification, the
    /// configured command; see [`crate::notify`]).
    Notify(crate::fleet::follow::Event),
}

/// The screens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Overview,
    Jobs,
    Nodes,
    Gpus,
    /// Finished jobs (`sacct`), read on demand; not in the Tab cycle.
    History,
    Detail,
    Submit,
}

impl Screen {
    /// The screens Tab cycles through, in order.
    pub const MAIN: [Screen; 4] = [Screen::Overview, Screen::Jobs, Screen::Nodes, Screen::Gpus];

    pub fn mode(self) -> Mode {
        match self {
            Screen::Overview => Mode::Overview,
            Screen::Jobs => Mode::Jobs,
            Screen::Nodes => Mode::Nodes,
            Screen::Gpus => Mode::Gpus,
            Screen::History => Mode::History,
            Screen::Detail => Mode::Detail,
            Screen::Submit => Mode::Submit,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Screen::Overview => "Overview",
            Screen::Jobs => "Jobs",
            Screen::Nodes => "Nodes",
            Screen::Gpus => "GPUs",
            Screen::History => "History",
            Screen::Detail => "Detail",
            Screen::Submit => "Submit",
        }
    }
}

/// `hpc/1, hpc/2` or `hpc/1 and 4 more`.
fn names(jobs: &[JobRef]) -> String {
    let shown: Vec<String> = jobs.iter().take(3).map(ToString::to_string).collect();
    match jobs.len().saturating_sub(3) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// A message in the corner that goes away by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toast {
    pub text: String,
    pub error: bool,
    pub until: DateTime<Utc>,
    /// Kept until dismissed (`esc`): a batch's summary and every failed action, which an
    /// operator must not miss by looking away.
    pub sticky: bool,
}

/// How long toasts stay.
const TOAST_OK: Duration = Duration::seconds(4);
const TOAST_ERROR: Duration = Duration::seconds(10);
/// Passing toasts kept at once (the oldest go first); error toasts are never pushed out by
/// later ones, up to [`TOAST_HARD_MAX`], which only bounds memory.
const TOAST_MAX: usize = 5;
const TOAST_HARD_MAX: usize = 50;

/// A one-line prompt at the bottom.
#[derive(Debug, Clone)]
pub enum Input {
    /// The fuzzy filter of the jobs or nodes table, applied as it is typed.
    Filter { screen: Screen, text: TextInput },
    /// The `:` command line, with the candidates of the last Tab.
    Command { text: TextInput, candidates: Vec<String> },
}

/// The job detail screen.
#[derive(Debug)]
pub struct Detail {
    pub job: JobRef,
    /// The job as last seen (kept when it leaves the queue).
    pub last: Job,
    /// Snapshot time of `last`, for the elapsed time.
    pub taken_at: Option<DateTime<Utc>>,
    /// No longer in the cluster's queue.
    pub gone: bool,
    pub stream: LogStream,
    /// For a workload, the pod (index into its `pods`) whose log is read; `None` reads the
    /// job's own log (its leader, master or head: see the backend's `stdout`).
    pub pod: Option<usize>,
    /// What the backend added about the job's turn (see [`Command::FetchTurn`]).
    pub turn: Vec<String>,
    pub log: LogBuffer,
    pub follow: bool,
    /// Lines scrolled up from the end (0: the end is shown).
    pub scroll: usize,
    /// Reads that failed in a row while following, and when following tries again: the
    /// wait doubles per failure (1 s, 2 s, … 30 s), so a dead link is not asked every second.
    pub failures: u32,
    pub retry_at: Option<DateTime<Utc>>,
}

/// The longest wait between two follow reads after failures.
const FOLLOW_BACKOFF_MAX: Duration = Duration::seconds(30);

impl Detail {
    /// Indices of the workload's pods that have a log, when there are two or more to pick
    /// from.
    pub fn pods_with_logs(&self) -> Vec<usize> {
        let pods = self.last.workload.as_deref().map(|w| w.pods.as_slice()).unwrap_or(&[]);
        let with: Vec<usize> = pods.iter().enumerate().filter(|(_, p)| p.log.is_some()).map(|(i, _)| i).collect();
        if with.len() < 2 { Vec::new() } else { with }
    }

    /// The pod whose log is shown: the one picked, else the pod whose log is the job's own.
    pub fn shown_pod(&self) -> Option<usize> {
        let pods = &self.last.workload.as_deref()?.pods;
        self.pod.or_else(|| pods.iter().position(|p| p.log.is_some() && p.log == self.last.stdout))
    }

    /// The handle of the current stream, or why there is none to read.
    pub fn log_handle(&self) -> Result<&LogHandle, &'static str> {
        if let Some(pod) = self.pod.and_then(|i| self.last.workload.as_deref()?.pods.get(i)) {
            return match (self.stream, &pod.log) {
                (LogStream::Stdout, Some(log)) => Ok(log),
                (LogStream::Stdout, None) => Err("the cluster reports no log for this pod"),
                // A container's stderr is interleaved in its one log.
                (LogStream::Stderr, _) => Err("a pod's stderr goes to its one log"),
            };
        }
        match self.stream {
            LogStream::Stdout => self.last.stdout.as_ref().ok_or("the cluster reports no stdout file for this job"),
            LogStream::Stderr => match (&self.last.stderr, &self.last.stdout) {
                (Some(e), Some(o)) if e == o => Err("stderr goes to the stdout file"),
                (Some(e), _) => Ok(e),
                (None, _) => Err("stderr goes to the stdout file"),
            },
        }
    }
}

pub struct App {
    pub(crate) keymap: Keymap,
    pub(crate) theme: Theme,
    pub(crate) read_only: bool,
    pub(crate) user: String,
    pub(crate) config_label: String,
    /// What the overview says without any cluster ([`TuiOptions::no_clusters`]).
    pub(crate) no_clusters: Vec<String>,
    pub(crate) now: DateTime<Utc>,
    pub(crate) size: (u16, u16),
    pub(crate) data: Data,
    /// The row cache a refresh replaced, for the event loop to free off the UI thread.
    retired: Option<Box<Data>>,
    pub(crate) screen: Screen,
    /// Where Back goes from the detail or the submit form.
    pub(crate) back_to: Screen,
    /// The detail was opened from the history screen: Back returns there.
    detail_from_history: bool,
    /// Show one cluster only (jobs, nodes, GPU map, overview).
    pub(crate) cluster: Option<String>,
    pub(crate) jobs: JobList,
    pub(crate) nodes: NodeList,
    pub(crate) gpus: GpuList,
    pub(crate) overview_scroll: usize,
    pub(crate) history: HistoryView,
    pub(crate) detail: Option<Detail>,
    pub(crate) form: SubmitForm,
    /// The help overlay, with its scroll position.
    pub(crate) help: Option<usize>,
    pub(crate) dialog: Option<Dialog>,
    pub(crate) input: Option<Input>,
    pub(crate) toasts: Vec<Toast>,
    pub(crate) pending: Vec<KeyEvent>,
    /// Fuzzy matchers, one per filtering thread.
    matchers: Vec<Matcher>,
    generation: u64,
    /// The detail's log read in flight; what it asked: a read from the tail (`from: None`).
    /// Kept on the App, not the detail, so that a new detail never takes an old one's answer.
    pub(crate) log_read: Latest<bool>,
    /// The detail's question about the job's turn ([`Command::FetchTurn`]).
    pub(crate) turn_ask: Latest<()>,
    /// The migration dialog's plan ([`Command::PlanMigration`]).
    pub(crate) plan: Latest<()>,
    /// Jobs watched with `w`, in the order asked, and what was last seen of them.
    pub(crate) watched: Vec<JobRef>,
    follow: crate::fleet::follow::Watcher,
    /// How a watched job's change is told (the event loop reads it).
    pub(crate) notify: crate::notify::NotifySettings,
}

impl App {
    pub fn new(opts: TuiOptions) -> App {
        let mut form = SubmitForm::default();
        form.recheck(&FleetState::default());
        App {
            keymap: opts.keymap,
            theme: opts.theme,
            read_only: opts.read_only,
            user: opts.user,
            config_label: opts.config_label,
            no_clusters: opts.no_clusters,
            watched: Vec::new(),
            follow: crate::fleet::follow::Watcher::default(),
            notify: crate::notify::NotifySettings::default(),
            now: DateTime::<Utc>::UNIX_EPOCH,
            size: (80, 24),
            data: Data::empty(),
            retired: None,
            screen: Screen::Overview,
            back_to: Screen::Jobs,
            detail_from_history: false,
            cluster: None,
            jobs: JobList::default(),
            nodes: NodeList::default(),
            gpus: GpuList::default(),
            overview_scroll: 0,
            history: HistoryView::default(),
            detail: None,
            form,
            help: None,
            dialog: None,
            input: None,
            toasts: Vec::new(),
            pending: Vec::new(),
            matchers: vec![Matcher::new(nucleo::Config::DEFAULT)],
            generation: 1,
            log_read: Latest::default(),
            turn_ask: Latest::default(),
            plan: Latest::default(),
        }
    }

    // ----- read access (views and tests) -----

    /// Bumped whenever what is on screen may have changed; the event loop draws only when it
    /// differs from the generation it drew last.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn screen(&self) -> Screen {
        self.screen
    }

    pub fn keymap(&self) -> &Keymap {
        &self.keymap
    }

    pub fn theme(&self) -> &Theme {
        &self.theme
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    pub fn fleet(&self) -> &FleetState {
        &self.data.fleet
    }

    /// Read-only, by the options or by the fleet.
    pub fn read_only(&self) -> bool {
        self.read_only || self.data.fleet.read_only
    }

    pub fn cluster_filter(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    pub fn user_filter(&self) -> Option<&str> {
        self.jobs.user.as_deref()
    }

    pub fn state_filter(&self) -> Option<crate::model::JobState> {
        self.jobs.state
    }

    /// Finished jobs are left out of the jobs table (`hide_finished`).
    pub fn finished_hidden(&self) -> bool {
        self.jobs.hide_finished
    }

    pub fn job_filter_text(&self) -> &str {
        &self.jobs.fuzzy
    }

    /// The jobs table's rows, in order (builds a list: for tests and small tables). An
    /// array's parent row is its [`data::array_key`] (`cluster/12_[*]`).
    pub fn visible_jobs(&self) -> Vec<JobRef> {
        self.jobs.cursor.visible.iter().map(|r| self.data.row_ref(*r).clone()).collect()
    }

    /// The jobs the filters keep (an array's tasks counted one by one, folded or not).
    pub fn visible_job_count(&self) -> usize {
        self.jobs.matched.len()
    }

    /// The row under the jobs table's cursor: a job, or an array's [`data::array_key`].
    pub fn cursor_job(&self) -> Option<&JobRef> {
        self.jobs.cursor.current().map(|r| self.data.row_ref(r))
    }

    /// An array's parent row, by its [`data::array_key`], as the jobs table shows it.
    pub fn array_parent(&self, key: &JobRef) -> Option<&Job> {
        self.data.array_index.get(key).map(|g| &self.data.arrays[*g as usize].job)
    }

    /// The arrays shown unfolded, by key.
    pub fn expanded_arrays(&self) -> Vec<JobRef> {
        self.jobs.expanded.iter().cloned().collect()
    }

    pub fn marked_jobs(&self) -> Vec<JobRef> {
        self.jobs.marked.iter().cloned().collect()
    }

    pub fn visible_nodes(&self) -> Vec<NodeRef> {
        self.nodes.cursor.visible.iter().map(|r| lists::node_ref(&self.data, *r)).collect()
    }

    pub fn cursor_node(&self) -> Option<NodeRef> {
        self.nodes.cursor.current().map(|r| lists::node_ref(&self.data, r))
    }

    /// The GPU map's selected node, cell index, and what the cell holds (with the job).
    pub fn gpu_selection(&self) -> Option<(NodeRef, usize, GpuCell, Option<&Job>)> {
        let g = &self.data.gpu_nodes[self.gpus.cursor.current()? as usize];
        let cell = *g.cells.get(self.gpus.cell)?;
        let job = match cell {
            GpuCell::Allocated(Some(row)) => Some(self.data.job(row)),
            _ => None,
        };
        Some((lists::node_ref(&self.data, g.node), self.gpus.cell, cell, job))
    }

    pub fn dialog(&self) -> Option<&Dialog> {
        self.dialog.as_ref()
    }

    pub fn input(&self) -> Option<&Input> {
        self.input.as_ref()
    }

    pub fn toasts(&self) -> &[Toast] {
        &self.toasts
    }

    pub fn detail(&self) -> Option<&Detail> {
        self.detail.as_ref()
    }

    /// The history screen's state: records, error and note lines, the read in flight.
    pub fn history(&self) -> &HistoryView {
        &self.history
    }

    /// The history table's rows, in order (the cluster filter applied).
    pub fn visible_history(&self) -> Vec<JobRef> {
        self.history.cursor.visible.iter().map(|i| self.history.records[*i as usize].job.job_ref.clone()).collect()
    }

    /// The job under the history screen's cursor.
    pub fn cursor_history(&self) -> Option<&JobRef> {
        self.history.current().map(|r| &r.job.job_ref)
    }

    pub fn form(&self) -> &SubmitForm {
        &self.form
    }

    pub fn help_open(&self) -> bool {
        self.help.is_some()
    }

    /// The help screen's content: the keymap's bindings grouped by screen, this screen's
    /// own first.
    pub fn help_sections(&self) -> Vec<help::HelpSection> {
        let mut sections = help::sections(&self.keymap);
        for entry in sections.iter_mut().flat_map(|s| s.entries.iter_mut()) {
            entry.unavailable = entry.action.and_then(|a| self.unavailable(a));
        }
        let own = help::mode_title(self.screen.mode());
        if let Some(i) = sections.iter().position(|s| s.title == own) {
            let s = sections.remove(i);
            sections.insert(0, s);
        }
        sections
    }

    pub fn job_sort(&self) -> (JobColumn, bool) {
        (self.jobs.sort, self.jobs.reverse)
    }

    pub fn node_sort(&self) -> (NodeColumn, bool) {
        (self.nodes.sort, self.nodes.reverse)
    }

    pub fn problem_nodes_only(&self) -> bool {
        self.nodes.problems_only
    }

    // ----- the transition -----

    pub fn update(&mut self, msg: Msg) -> Vec<Command> {
        let mut out = Vec::new();
        match msg {
            Msg::Key(key) => {
                if key.kind != KeyEventKind::Release {
                    self.on_key(key, &mut out);
                    self.touch();
                }
            }
            Msg::Paste(text) => {
                self.on_paste(&text);
                self.touch();
            }
            Msg::Fleet(state) => {
                self.on_data(Data::new(state));
                self.follow_watched(&mut out);
            }
            Msg::Prepared(data) => {
                self.on_data(*data);
                self.follow_watched(&mut out);
            }
            Msg::PrepareFailed(why) => self.toast(why, true),
            Msg::Outcome(outcome) => self.on_batch(&BatchOutcome { outcomes: vec![outcome] }),
            Msg::Batch(batch) => self.on_batch(&batch),
            Msg::OutcomesLost(n) => {
                let results = crate::model::words::counted(n, "action result", "action results");
                self.toast(format!("{results} not shown: too many finished at once (see the audit log)"), true)
            }
            Msg::Log { seq, result } => self.on_log(seq, result),
            Msg::Turn { seq, result } => {
                if let Some(d) = self.detail.as_mut()
                    && self.turn_ask.answer(seq).is_some()
                {
                    d.turn = result.unwrap_or_else(|e| vec![format!("not asked: {e}")]);
                }
            }
            Msg::History { seq, results } => {
                if self.history.read.answer(seq).is_some() {
                    self.history.load(results, self.cluster.as_deref());
                    self.touch();
                }
            }
            Msg::SpecLoaded { path, result } => match result {
                Ok(spec) => {
                    self.form.load(*spec, path.clone(), &self.data.fleet);
                    self.toast(format!("loaded {path}"), false);
                }
                Err(e) => self.toast(e, true),
            },
            Msg::Resize(w, h) => {
                self.size = (w, h);
                self.touch();
            }
            Msg::Tick(now) => self.on_tick(now, &mut out),
            Msg::Rendered { seq, result } => {
                self.form.rendered(seq, result);
                self.touch();
            }
            Msg::Planned { seq, plan } => {
                if let Some(Dialog::Migrate { plan: slot, .. }) = &mut self.dialog
                    && self.plan.answer(seq).is_some()
                {
                    *slot = Some(*plan);
                    self.touch();
                }
            }
        }
        // The submit form's preview comes from the target cluster itself: ask again when
        // the spec or the cluster changed.
        if self.screen == Screen::Submit
            && let Some((seq, cluster, spec)) = self.form.next_render()
        {
            out.push(Command::Render { cluster, spec: Box::new(spec), seq });
        }
        out
    }

    fn touch(&mut self) {
        self.generation += 1;
    }

    /// How a watched job's change is told; the cockpit sets it from the config.
    pub fn set_notify(&mut self, notify: crate::notify::NotifySettings) {
        self.notify = notify;
    }

    pub fn notify_settings(&self) -> &crate::notify::NotifySettings {
        &self.notify
    }

    /// What each watched job is now, against what was seen: a toast and a
    /// [`Command::Notify`] per change; an ended job stops being watched.
    fn follow_watched(&mut self, out: &mut Vec<Command>) {
        if self.watched.is_empty() {
            return;
        }
        let fleet = self.data.fleet.clone();
        let looked: Vec<(JobRef, Option<&Job>)> = self
            .watched
            .iter()
            .filter_map(|r| {
                // A cluster with no snapshot yet says nothing about its jobs.
                let snapshot = fleet.cluster(&r.cluster)?.snapshot.as_deref()?;
                Some((r.clone(), snapshot.job(&r.id)))
            })
            .collect();
        let events = self.follow.observe(&looked, self.now);
        if events.is_empty() {
            return;
        }
        for event in events {
            let failed = matches!(event.to, Some(JobState::Failed | JobState::Timeout | JobState::NodeFail) | None);
            self.toast(event.summary(), failed);
            out.push(Command::Notify(event));
        }
        let follow = &mut self.follow;
        self.watched.retain(|r| {
            let ended = follow.ended(r).is_some();
            if ended {
                follow.forget(r);
            }
            !ended
        });
        self.touch();
    }

    /// `w`: watch these jobs, or stop watching them if all already are.
    fn toggle_watch(&mut self, jobs: Vec<JobRef>) {
        if jobs.is_empty() {
            return;
        }
        if jobs.iter().all(|r| self.watched.contains(r)) {
            for r in &jobs {
                self.follow.forget(r);
            }
            self.watched.retain(|r| !jobs.contains(r));
            self.toast(format!("stopped watching {}", names(&jobs)), false);
            return;
        }
        let fleet = self.data.fleet.clone();
        let mut looked = Vec::new();
        let new: Vec<JobRef> = jobs.iter().filter(|r| !self.watched.contains(r)).cloned().collect();
        for r in &new {
            self.watched.push(r.clone());
            let job = fleet.cluster(&r.cluster).and_then(|c| c.snapshot.as_deref()).and_then(|s| s.job(&r.id));
            looked.push((r.clone(), job));
        }
        // The state they are in now is the start, not news.
        let found: Vec<(JobRef, Option<&Job>)> = looked.into_iter().filter(|(_, j)| j.is_some()).collect();
        self.follow.observe(&found, self.now);
        self.toast(format!("watching {} (w again stops)", names(&jobs)), false);
    }

    fn toast(&mut self, text: String, error: bool) {
        self.push_toast(text, error, false);
    }

    /// One toast for a finished batch: its summary, kept until dismissed when the batch
    /// had more than one action or anything failed.
    fn on_batch(&mut self, batch: &BatchOutcome) {
        let failed = batch.failed() > 0;
        let sticky = failed || batch.outcomes.len() > 1;
        let mut text = batch.summary();
        if sticky {
            text.push_str(" (esc dismisses)");
        }
        self.push_toast(text, failed, sticky);
    }

    fn push_toast(&mut self, text: String, error: bool, sticky: bool) {
        let until = self.now + if error { TOAST_ERROR } else { TOAST_OK };
        self.toasts.push(Toast { text, error, until, sticky });
        // Too many: the oldest passing, non-sticky one goes; errors and summaries stay.
        while self.toasts.len() > TOAST_MAX {
            match self.toasts.iter().position(|t| !t.error && !t.sticky) {
                Some(i) => drop(self.toasts.remove(i)),
                None if self.toasts.len() > TOAST_HARD_MAX => drop(self.toasts.remove(0)),
                None => break,
            }
        }
        self.touch();
    }

    /// `esc` on a screen with toasts to dismiss: they go first.
    fn dismiss_toasts(&mut self) -> bool {
        let n = self.toasts.len();
        self.toasts.retain(|t| !t.sticky && !t.error);
        let dismissed = self.toasts.len() != n;
        if dismissed {
            self.touch();
        }
        dismissed
    }

    fn cluster_keep(&self) -> ClusterKeep {
        ClusterKeep::resolve(&self.data, self.cluster.as_deref())
    }

    /// The row cache replaced by the last refresh, if any; dropping it frees every row and,
    /// often, the last reference to the old snapshots, so the event loop drops it elsewhere.
    pub fn take_retired(&mut self) -> Option<Box<Data>> {
        self.retired.take()
    }

    fn on_data(&mut self, data: Data) {
        if Arc::ptr_eq(&self.data.fleet, &data.fleet) {
            return;
        }
        self.retired = Some(Box::new(std::mem::replace(&mut self.data, data)));
        let keep = self.cluster_keep();
        self.jobs.resort(&self.data);
        self.jobs.refilter(&self.data, keep, &mut self.matchers, false);
        self.jobs.prune(&self.data);
        self.nodes.resort(&self.data);
        self.nodes.refilter(&self.data, keep, &mut self.matchers, false);
        self.nodes.prune(&self.data);
        self.gpus.refilter(&self.data, keep);
        if let Some(d) = &mut self.detail {
            match self.data.job_index.get(&d.job) {
                Some(row) => {
                    d.last = self.data.job(*row).clone();
                    d.taken_at = self.data.taken_at(self.data.jobs[*row as usize].snap);
                    d.gone = false;
                }
                None => d.gone = true,
            }
        }
        self.form.recheck(&self.data.fleet);
        self.touch();
    }

    fn on_tick(&mut self, now: DateTime<Utc>, out: &mut Vec<Command>) {
        let before = self.now;
        self.now = now;
        let n = self.toasts.len();
        self.toasts.retain(|t| t.sticky || t.until > now);
        if self.toasts.len() != n {
            self.touch();
        }
        // Ages on screen are whole minutes: redraw when the minute turns, and only then.
        let ages_shown = self.data.fleet.clusters.iter().any(|c| !c.health.is_fresh());
        if ages_shown && before.timestamp().div_euclid(60) != now.timestamp().div_euclid(60) {
            self.touch();
        }
        if self.screen == Screen::Detail
            && self
                .detail
                .as_ref()
                .is_some_and(|d| d.follow && !self.log_read.is_open() && d.retry_at.is_none_or(|t| now >= t))
        {
            self.fetch_log(out, false);
        }
    }

    fn on_log(&mut self, seq: u64, result: Result<LogChunk, String>) {
        let Some(d) = &mut self.detail else { return };
        // `None`: an answer for a log no longer shown.
        let Some(first_read) = self.log_read.answer(seq) else { return };
        match &result {
            Ok(_) => (d.failures, d.retry_at) = (0, None),
            Err(_) => {
                d.failures = d.failures.saturating_add(1);
                let wait = Duration::seconds(1i64 << d.failures.saturating_sub(1).min(5)).min(FOLLOW_BACKOFF_MAX);
                d.retry_at = Some(self.now + wait);
            }
        }
        match result {
            Ok(chunk) => {
                let grew = !chunk.data.is_empty() || chunk.dropped > 0 || first_read;
                d.log.push(chunk, first_read);
                if grew {
                    self.touch();
                }
            }
            Err(e) => {
                if d.log.error.as_deref() != Some(e.as_str()) {
                    d.log.error = Some(e);
                    self.touch();
                }
            }
        }
    }

    fn on_paste(&mut self, text: &str) {
        // A paste with escapes or bidi controls is refused whole, and said so, rather than
        // quietly stripped into something other than what was copied. (A trailing line
        // break, as terminals add, is dropped.)
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        if let Err(why) = crate::safe_text::check_typed("pasted text", text) {
            self.toast(format!("not pasted: {why}"), true);
            return;
        }
        if let Some(Dialog::Drain { reason, error, .. }) = &mut self.dialog {
            reason.insert_str(text);
            *error = None;
        } else if self.dialog.is_some() {
        } else if let Some(input) = &mut self.input {
            match input {
                Input::Filter { text: t, .. } | Input::Command { text: t, .. } => t.insert_str(text),
            }
            if matches!(self.input, Some(Input::Filter { .. })) {
                self.apply_filter_input(false);
            }
        } else if self.screen == Screen::Submit {
            if let Some(prompt) = &mut self.form.path_prompt {
                prompt.insert_str(text);
            } else if !(self.form.focused() == Field::Command && self.form.script.is_some()) {
                let f = self.form.focused();
                self.form.input_mut(f).insert_str(text);
                self.form.recheck(&self.data.fleet);
            }
        }
    }

    // ----- keys -----

    fn on_key(&mut self, key: KeyEvent, out: &mut Vec<Command>) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // The two keys a terminal program owes its user, whatever the keymap says.
        if ctrl && key.code == KeyCode::Char('c') {
            out.push(Command::Quit);
            return;
        }
        if ctrl && key.code == KeyCode::Char('z') {
            self.pending.clear();
            out.push(Command::Suspend);
            return;
        }
        if self.dialog.is_some() {
            self.dialog_key(key, out);
        } else if self.input.is_some() {
            self.input_key(key, out);
        } else if self.help.is_some() {
            self.help_key(key, out);
        } else if self.screen == Screen::Submit && self.form_text_key(&key, out) {
        } else if let Some(action) = self.resolve(self.screen.mode(), key) {
            self.act(action, out);
        }
    }

    /// Feed a key to the keymap: an action, or `None` (unbound, or waiting for more keys).
    fn resolve(&mut self, mode: Mode, key: KeyEvent) -> Option<UiAction> {
        self.pending.push(key);
        match self.keymap.resolve(mode, &self.pending) {
            Resolution::Action(a) => {
                self.pending.clear();
                Some(a)
            }
            Resolution::Prefix => None,
            Resolution::None => {
                let retry = self.pending.len() > 1;
                self.pending.clear();
                // `g x`: the prefix led nowhere; `x` may still mean something alone.
                if retry { self.resolve(mode, key) } else { None }
            }
        }
    }

    fn dialog_key(&mut self, key: KeyEvent, out: &mut Vec<Command>) {
        if let Some(Dialog::Drain { reason, error, .. }) = &mut self.dialog
            && (plain_char(&key).is_some() || reason.edit(&key) != Edit::Ignored)
        {
            if plain_char(&key).is_some() {
                reason.edit(&key);
            }
            *error = None;
            return;
        }
        match self.resolve(Mode::Dialog, key) {
            Some(UiAction::NextTarget) => self.replan(1, false, out),
            Some(UiAction::PrevTarget) => self.replan(-1, false, out),
            Some(UiAction::ToggleRunning) => self.replan(0, true, out),
            Some(UiAction::CycleGpuType) => self.cycle_gpu_type(out),
            Some(UiAction::Confirm) => self.confirm(out),
            Some(UiAction::Dismiss | UiAction::Back) => self.dialog = None,
            Some(UiAction::Quit) => out.push(Command::Quit),
            _ if key.code == KeyCode::Esc => self.dialog = None,
            _ => {}
        }
    }

    fn confirm(&mut self, out: &mut Vec<Command>) {
        let Some(dialog) = self.dialog.take() else { return };
        match dialog.actions() {
            Ok(actions) => {
                if let Dialog::Jobs { targets, .. } | Dialog::Migrate { sources: targets, .. } = &dialog {
                    for t in targets {
                        self.jobs.marked.remove(t);
                    }
                }
                if let Dialog::Drain { targets, .. } = &dialog {
                    for t in targets {
                        self.nodes.marked.remove(t);
                    }
                }
                out.extend(actions.into_iter().map(Command::Fleet));
            }
            Err(why) => {
                let mut dialog = dialog;
                if let Dialog::Drain { error, .. } = &mut dialog {
                    *error = Some(why);
                }
                self.dialog = Some(dialog);
            }
        }
    }

    fn input_key(&mut self, key: KeyEvent, out: &mut Vec<Command>) {
        let Some(input) = &mut self.input else { return };
        match (input, key.code) {
            (Input::Filter { .. }, KeyCode::Enter) => self.input = None,
            (Input::Filter { text, .. }, KeyCode::Esc) => {
                text.clear();
                self.apply_filter_input(false);
                self.input = None;
            }
            (Input::Filter { text, .. }, _) => {
                let old = text.text().to_string();
                if text.edit(&key) == Edit::Changed {
                    let narrow = lists::narrows(&old, text.text());
                    self.apply_filter_input(narrow);
                }
            }
            (Input::Command { .. }, KeyCode::Esc) => self.input = None,
            (Input::Command { text, .. }, KeyCode::Enter) => {
                let line = text.text().to_string();
                self.input = None;
                self.run_command(&line, out);
            }
            (Input::Command { text, candidates }, KeyCode::Tab) => {
                let users = &self.data.users;
                let (new, found) =
                    command_line::complete(text.text(), &self.data.cluster_names(), users, Theme::names());
                text.set(new);
                *candidates = found;
            }
            (Input::Command { text, candidates }, _) => {
                // Backspace on an empty command line closes it, as in vim.
                if key.code == KeyCode::Backspace && text.text().is_empty() {
                    self.input = None;
                } else if text.edit(&key) == Edit::Changed {
                    candidates.clear();
                }
            }
        }
    }

    /// Copy the filter prompt's text to its table and re-filter.
    fn apply_filter_input(&mut self, narrow: bool) {
        let Some(Input::Filter { screen, text }) = &self.input else { return };
        let keep = self.cluster_keep();
        match screen {
            Screen::Nodes => {
                self.nodes.fuzzy = text.text().to_string();
                self.nodes.refilter(&self.data, keep, &mut self.matchers, narrow);
            }
            _ => {
                self.jobs.fuzzy = text.text().to_string();
                self.jobs.refilter(&self.data, keep, &mut self.matchers, narrow);
            }
        }
    }

    fn help_key(&mut self, key: KeyEvent, out: &mut Vec<Command>) {
        let scroll = self.help.unwrap_or(0);
        let page = usize::from(self.size.1.saturating_sub(6)).max(1);
        self.help = match self.resolve(self.screen.mode(), key) {
            Some(UiAction::Up) => Some(scroll.saturating_sub(1)),
            Some(UiAction::Down) => Some(scroll + 1),
            Some(UiAction::PageUp) => Some(scroll.saturating_sub(page)),
            Some(UiAction::PageDown) => Some(scroll + page),
            Some(UiAction::Top) => Some(0),
            Some(UiAction::Bottom) => Some(usize::MAX / 2),
            Some(UiAction::Help | UiAction::Back | UiAction::Dismiss) => None,
            Some(UiAction::Quit) => {
                out.push(Command::Quit);
                None
            }
            _ if key.code == KeyCode::Esc => None,
            _ => Some(scroll),
        };
    }

    /// Typing in the submit form: characters and editing keys go to the focused field (or the
    /// path prompt). Returns false for keys the keymap should see.
    fn form_text_key(&mut self, key: &KeyEvent, out: &mut Vec<Command>) -> bool {
        if let Some(prompt) = &mut self.form.path_prompt {
            match key.code {
                KeyCode::Enter => {
                    let path = prompt.text().trim().to_string();
                    self.form.path_prompt = None;
                    if !path.is_empty() {
                        out.push(Command::LoadSpec(PathBuf::from(path)));
                    }
                }
                KeyCode::Esc => self.form.path_prompt = None,
                _ => {
                    prompt.edit(key);
                }
            }
            return true;
        }
        let field = self.form.focused();
        if field == Field::Command && self.form.script.is_some() {
            if key.code == KeyCode::Backspace {
                self.form.script = None;
                self.form.recheck(&self.data.fleet);
                return true;
            }
            return plain_char(key).is_some();
        }
        if field == Field::Cluster && matches!(key.code, KeyCode::Left | KeyCode::Right) {
            self.form.cycle_cluster(&self.data.cluster_names(), if key.code == KeyCode::Left { -1 } else { 1 });
            self.form.recheck(&self.data.fleet);
            return true;
        }
        match self.form.input_mut(field).edit(key) {
            Edit::Changed => {
                self.form.recheck(&self.data.fleet);
                true
            }
            Edit::Moved => true,
            Edit::Ignored => false,
        }
    }

    // ----- actions -----

    fn act(&mut self, action: UiAction, out: &mut Vec<Command>) {
        match action {
            UiAction::Quit => out.push(Command::Quit),
            UiAction::Help => self.help = Some(0),
            UiAction::CommandMode => {
                self.input = Some(Input::Command { text: TextInput::default(), candidates: Vec::new() })
            }
            UiAction::Filter if matches!(self.screen, Screen::Jobs | Screen::Nodes) => {
                let current = if self.screen == Screen::Nodes { &self.nodes.fuzzy } else { &self.jobs.fuzzy };
                self.input = Some(Input::Filter { screen: self.screen, text: TextInput::new(current.clone()) });
            }
            UiAction::Back => self.back(),
            UiAction::Refresh => {
                let cluster = match (&self.detail, self.screen) {
                    (Some(d), Screen::Detail) => Some(d.job.cluster.clone()),
                    _ => self.cluster.clone(),
                };
                out.push(Command::Refresh(cluster));
                if self.screen == Screen::Detail && self.detail.is_some() && !self.log_read.is_open() {
                    self.fetch_log(out, true);
                }
            }
            UiAction::ScreenOverview => self.switch(Screen::Overview),
            UiAction::ScreenJobs => self.switch(Screen::Jobs),
            UiAction::ScreenNodes => self.switch(Screen::Nodes),
            UiAction::ScreenGpus => self.switch(Screen::Gpus),
            UiAction::ScreenHistory => self.open_history(None, out),
            UiAction::NextScreen | UiAction::PrevScreen => {
                let from = if Screen::MAIN.contains(&self.screen) { self.screen } else { self.back_to };
                let at = Screen::MAIN.iter().position(|s| *s == from).unwrap_or(0);
                let step = if action == UiAction::NextScreen { 1 } else { Screen::MAIN.len() - 1 };
                self.switch(Screen::MAIN[(at + step) % Screen::MAIN.len()]);
            }
            UiAction::CycleTheme => {
                let names = Theme::names();
                let at = names.iter().position(|n| *n == self.theme.name());
                let next = names[at.map_or(0, |i| (i + 1) % names.len())];
                self.set_theme(next);
            }
            UiAction::NewJob => self.open_form(),
            _ => match self.screen {
                Screen::Jobs => self.jobs_action(action, out),
                Screen::Nodes => self.nodes_action(action, out),
                Screen::Gpus => self.gpus_action(action, out),
                Screen::History => self.history_action(action, out),
                Screen::Overview => self.overview_action(action),
                Screen::Detail => self.detail_action(action, out),
                Screen::Submit => self.form_action(action),
            },
        }
    }

    fn set_theme(&mut self, name: &str) -> bool {
        match Theme::builtin(name, self.theme.depth()) {
            Some(theme) => {
                self.theme = theme;
                self.toast(format!("theme {name}"), false);
                true
            }
            None => {
                self.toast(format!("no theme named `{name}` (themes: {})", Theme::names().join(", ")), true);
                false
            }
        }
    }

    fn switch(&mut self, screen: Screen) {
        if Screen::MAIN.contains(&screen) {
            self.back_to = screen;
        }
        self.screen = screen;
        self.pending.clear();
    }

    /// Esc: close what is open, clear what is set, or go back.
    fn back(&mut self) {
        if self.dismiss_toasts() {
            return;
        }
        match self.screen {
            Screen::Detail if std::mem::take(&mut self.detail_from_history) => self.screen = Screen::History,
            Screen::History => self.screen = Screen::Jobs,
            Screen::Detail | Screen::Submit => {
                self.screen = self.back_to;
                if self.screen == Screen::Detail || self.screen == Screen::Submit {
                    self.screen = Screen::Jobs;
                }
            }
            Screen::Jobs if !self.jobs.fuzzy.is_empty() => {
                self.jobs.fuzzy.clear();
                self.refilter_jobs();
            }
            Screen::Jobs if !self.jobs.marked.is_empty() => self.jobs.marked.clear(),
            Screen::Nodes if !self.nodes.fuzzy.is_empty() => {
                self.nodes.fuzzy.clear();
                self.refilter_nodes();
            }
            Screen::Nodes if !self.nodes.marked.is_empty() => self.nodes.marked.clear(),
            _ => {}
        }
    }

    fn refilter_jobs(&mut self) {
        let keep = self.cluster_keep();
        self.jobs.refilter(&self.data, keep, &mut self.matchers, false);
    }

    fn refilter_nodes(&mut self) {
        let keep = self.cluster_keep();
        self.nodes.refilter(&self.data, keep, &mut self.matchers, false);
    }

    fn refilter_all(&mut self) {
        self.refilter_jobs();
        self.refilter_nodes();
        self.history.refilter(self.cluster.as_deref(), None);
        let keep = self.cluster_keep();
        self.gpus.refilter(&self.data, keep);
    }

    fn set_cluster(&mut self, cluster: Option<String>) {
        self.cluster = cluster;
        self.refilter_all();
    }

    /// The next cluster filter: all → first → … → last → all.
    fn cycle_cluster(&mut self) {
        let names = self.data.cluster_names();
        let next = match self.cluster.as_ref().and_then(|c| names.iter().position(|n| n == c)) {
            None => names.first().cloned(),
            Some(i) => names.get(i + 1).cloned(),
        };
        self.set_cluster(next);
    }

    /// Move a cursor for a movement action; false when `action` is no movement.
    fn move_cursor(cursor: &mut Cursor, action: UiAction) -> bool {
        let page = cursor.page() as isize;
        match action {
            UiAction::Up => cursor.move_by(-1),
            UiAction::Down => cursor.move_by(1),
            UiAction::PageUp => cursor.move_by(-page),
            UiAction::PageDown => cursor.move_by(page),
            UiAction::Top => cursor.top(),
            UiAction::Bottom => cursor.bottom(),
            _ => return false,
        }
        true
    }

    fn jobs_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.jobs.cursor, action) {
            self.jobs.sync_anchor(&self.data);
            return;
        }
        match action {
            UiAction::Open => {
                // An array's parent row opens its first task.
                if let Some(row) = self.jobs.cursor.current() {
                    let row = self.data.array_at(row).map_or(row, |a| a.rows[0]);
                    self.open_detail(row, out);
                }
            }
            UiAction::ToggleFold => {
                self.jobs.toggle_fold(&self.data);
            }
            UiAction::ToggleSelect => {
                // An array's parent row marks (or, when all are marked, unmarks) every task.
                if let Some(row) = self.jobs.cursor.current() {
                    let jobs = self.data.row_targets(row);
                    if jobs.iter().all(|j| self.jobs.marked.contains(j)) {
                        for j in &jobs {
                            self.jobs.marked.remove(j);
                        }
                    } else {
                        self.jobs.marked.extend(jobs);
                    }
                    self.jobs.cursor.move_by(1);
                    self.jobs.sync_anchor(&self.data);
                }
            }
            UiAction::SelectAll => {
                for &row in &self.jobs.cursor.visible {
                    if let Some(a) = self.data.array_at(row) {
                        self.jobs.marked.extend(a.rows.iter().map(|r| self.data.job(*r).job_ref.clone()));
                    } else {
                        self.jobs.marked.insert(self.data.job(row).job_ref.clone());
                    }
                }
            }
            UiAction::ClearSelection => self.jobs.marked.clear(),
            UiAction::SortNext | UiAction::SortReverse => {
                if action == UiAction::SortNext {
                    // The next column that is shown: an optional one (KIND, $/H, GPU%) with
                    // no value in any row is not on screen, so sorting by it would look like
                    // nothing happened.
                    let columns = JobColumn::COCKPIT;
                    let at = columns.iter().position(|c| *c == self.jobs.sort).unwrap_or(0);
                    let shown =
                        |i: usize| !columns[i].shape().optional || self.data.job_widths.get(i).is_some_and(|w| *w > 0);
                    let next = (1..=columns.len()).map(|k| (at + k) % columns.len()).find(|i| shown(*i));
                    self.jobs.sort = columns[next.unwrap_or(0)];
                } else {
                    self.jobs.reverse = !self.jobs.reverse;
                }
                self.jobs.resort(&self.data);
                self.refilter_jobs();
            }
            UiAction::FilterMine => {
                self.jobs.user =
                    if self.jobs.user.as_deref() == Some(self.user.as_str()) { None } else { Some(self.user.clone()) };
                self.refilter_jobs();
            }
            UiAction::FilterState => {
                self.jobs.state = match self.jobs.state.and_then(|s| STATE_CYCLE.iter().position(|c| *c == s)) {
                    None => Some(STATE_CYCLE[0]),
                    Some(i) => STATE_CYCLE.get(i + 1).copied(),
                };
                self.refilter_jobs();
            }
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::HideFinished => {
                self.jobs.hide_finished = !self.jobs.hide_finished;
                self.refilter_jobs();
            }
            UiAction::Watch => {
                let targets = self.job_targets();
                self.toggle_watch(targets);
            }
            UiAction::Migrate => {
                let targets = self.job_targets();
                self.open_migration(targets, out);
            }
            _ => {
                if let Some(job_action) = action.job_action() {
                    let targets = self.job_targets();
                    self.ask_job_action(job_action, targets, out);
                }
            }
        }
    }

    /// Clusters a migration of `sources` can go to: they take submissions, and are not the
    /// one cluster every source is on.
    fn migration_targets(&self, sources: &[JobRef]) -> Vec<String> {
        self.data
            .fleet
            .clusters
            .iter()
            .filter(|c| c.capabilities.allows(Verb::Submit))
            .filter(|c| !sources.iter().all(|j| j.cluster == c.name))
            .map(|c| c.name.clone())
            .collect()
    }

    /// The migration dialog for `sources` (where their clusters can cancel), planned for the
    /// first cluster that can take them; tab moves the plan to the next.
    fn open_migration(&mut self, sources: Vec<JobRef>, out: &mut Vec<Command>) {
        let sources = self.permitted(Verb::Cancel, sources, |j| &j.cluster);
        if sources.is_empty() {
            return;
        }
        let Some(to) = self.migration_targets(&sources).into_iter().next() else {
            self.toast("no other cluster here takes submissions: nowhere to move these jobs".into(), true);
            return;
        };
        let seq = self.plan.issue(());
        out.push(Command::PlanMigration {
            sources: sources.clone(),
            to: to.clone(),
            running: false,
            gpu_type: None,
            seq,
        });
        self.dialog = Some(Dialog::Migrate { sources, to, running: false, gpu_type: None, plan: None });
    }

    /// Plan the open migration again, for another target (`step`) or with running jobs
    /// moved or not.
    fn replan(&mut self, step: isize, toggle_running: bool, out: &mut Vec<Command>) {
        let Some(Dialog::Migrate { sources, to, running, gpu_type, .. }) = &self.dialog else { return };
        let targets = self.migration_targets(sources);
        let at = targets.iter().position(|t| t == to).unwrap_or(0) as isize;
        let n = targets.len().max(1) as isize;
        let Some(next) = targets.get((at + step).rem_euclid(n) as usize).cloned() else { return };
        // Another target has other models: the choice made for the last one is dropped.
        let gpu_type = if next == *to { gpu_type.clone() } else { None };
        let (sources, running) = (sources.clone(), *running != toggle_running);
        let seq = self.plan.issue(());
        out.push(Command::PlanMigration {
            sources: sources.clone(),
            to: next.clone(),
            running,
            gpu_type: gpu_type.clone(),
            seq,
        });
        self.dialog = Some(Dialog::Migrate { sources, to: next, running, gpu_type, plan: None });
    }

    /// The GPU model the open migration asks for on its target, one step on: as the source
    /// asked, each model the target's nodes hold, then any model; planned again.
    fn cycle_gpu_type(&mut self, out: &mut Vec<Command>) {
        use crate::fleet::migrate::{GpuChoice, gpu_models};
        let Some(Dialog::Migrate { sources, to, running, gpu_type, .. }) = &self.dialog else { return };
        let models = self.data.fleet.cluster(to).map(gpu_models).unwrap_or_default();
        let mut choices: Vec<Option<GpuChoice>> = vec![None];
        choices.extend(models.into_iter().map(|m| Some(GpuChoice::Model(m))));
        choices.push(Some(GpuChoice::Any));
        let at = choices.iter().position(|c| c == gpu_type).unwrap_or(0);
        let next = choices[(at + 1) % choices.len()].clone();
        let (sources, to, running) = (sources.clone(), to.clone(), *running);
        let seq = self.plan.issue(());
        out.push(Command::PlanMigration {
            sources: sources.clone(),
            to: to.clone(),
            running,
            gpu_type: next.clone(),
            seq,
        });
        self.dialog = Some(Dialog::Migrate { sources, to, running, gpu_type: next, plan: None });
    }

    /// The identity `job` has in the data on screen (see [`crate::model::Job::uid`]).
    fn job_uid(&self, job: &JobRef) -> Option<String> {
        let row = *self.data.job_index.get(job)?;
        self.data.job(row).uid.clone()
    }

    /// Ask for `action` on `targets`: left out (and said why) where the job's cluster cannot
    /// do it; confirmed first when the verb is destructive, sent at once otherwise.
    fn ask_job_action(&mut self, action: JobAction, targets: Vec<JobRef>, out: &mut Vec<Command>) {
        let targets = self.permitted(action.verb(), targets, |j| &j.cluster);
        if targets.is_empty() {
            return;
        }
        if action.is_destructive() {
            let uids = targets.iter().filter_map(|job| Some((job.clone(), self.job_uid(job)?))).collect();
            self.dialog = Some(Dialog::Jobs { action, targets, uids });
        } else {
            let uids: Vec<Option<String>> = targets.iter().map(|job| self.job_uid(job)).collect();
            out.extend(
                targets.into_iter().zip(uids).map(|(job, uid)| Command::Fleet(Action::Job { job, action, uid })),
            );
        }
    }

    /// The targets whose cluster can do `verb`; for the rest a toast says which cluster
    /// cannot, in the words the CLI and the fleet use.
    fn permitted<T>(&mut self, verb: Verb, targets: Vec<T>, cluster_of: impl Fn(&T) -> &str) -> Vec<T> {
        let state = self.data.fleet.clone();
        let mut refused: Vec<String> = Vec::new();
        let mut left_out = 0usize;
        let kept: Vec<T> = targets
            .into_iter()
            .filter(|t| match state.check(cluster_of(t), verb) {
                Ok(()) => true,
                Err(why) => {
                    left_out += 1;
                    if !refused.contains(&why) {
                        refused.push(why);
                    }
                    false
                }
            })
            .collect();
        if !refused.is_empty() {
            let text = if kept.is_empty() {
                refused.join("; ")
            } else {
                format!("{}; {left_out} left out", refused.join("; "))
            };
            self.toast(text, true);
        }
        kept
    }

    /// The cluster of the row an action key would act on: the detail's job, or the row under
    /// the cursor on the jobs and nodes screens.
    fn selected_cluster(&self) -> Option<String> {
        match self.screen {
            Screen::Detail => self.detail.as_ref().map(|d| d.job.cluster.clone()),
            Screen::Jobs => self.cursor_job().map(|j| j.cluster.clone()),
            Screen::Nodes => self.cursor_node().map(|n| n.cluster),
            Screen::Submit => Some(self.form.value(Field::Cluster).to_string()).filter(|c| !c.is_empty()),
            _ => None,
        }
    }

    /// Why the selected row's cluster cannot do what `action` asks, if it cannot: the
    /// footer leaves such keys out and the help screen marks them.
    pub fn unavailable(&self, action: UiAction) -> Option<String> {
        if action == UiAction::NextPod {
            let several = self.detail.as_ref().is_some_and(|d| !d.pods_with_logs().is_empty());
            return (!several).then(|| "only a workload of several pods has other logs to read".to_string());
        }
        let verb = action.verb()?;
        let cluster = self.selected_cluster()?;
        self.data.fleet.check(&cluster, verb).err()
    }

    /// What a job action applies to: the marked jobs if any, else the row under the cursor
    /// (an array's parent row: every task of the array).
    fn job_targets(&self) -> Vec<JobRef> {
        if self.jobs.marked.is_empty() {
            self.jobs.cursor.current().map(|r| self.data.row_targets(r)).unwrap_or_default()
        } else {
            self.marked_jobs()
        }
    }

    fn nodes_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.nodes.cursor, action) {
            self.nodes.sync_anchor(&self.data);
            return;
        }
        match action {
            UiAction::ToggleSelect => {
                if let Some(node) = self.cursor_node() {
                    if !self.nodes.marked.remove(&node) {
                        self.nodes.marked.insert(node);
                    }
                    self.nodes.cursor.move_by(1);
                    self.nodes.sync_anchor(&self.data);
                }
            }
            UiAction::SelectAll => {
                let all = self.visible_nodes();
                self.nodes.marked.extend(all);
            }
            UiAction::ClearSelection => self.nodes.marked.clear(),
            UiAction::SortNext | UiAction::SortReverse => {
                if action == UiAction::SortNext {
                    let at = NodeColumn::COCKPIT.iter().position(|c| *c == self.nodes.sort).unwrap_or(0);
                    self.nodes.sort = NodeColumn::COCKPIT[(at + 1) % NodeColumn::COCKPIT.len()];
                } else {
                    self.nodes.reverse = !self.nodes.reverse;
                }
                self.nodes.resort(&self.data);
                self.refilter_nodes();
            }
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::ProblemNodes => {
                self.nodes.problems_only = !self.nodes.problems_only;
                self.refilter_nodes();
            }
            UiAction::Open => {
                // The node's GPUs on the map.
                if let Some(row) = self.nodes.cursor.current()
                    && let Some(pos) = self.data.gpu_nodes.iter().position(|g| g.node == row)
                {
                    self.gpus.anchor = Some(lists::node_ref(&self.data, self.data.gpu_nodes[pos].node));
                    self.gpus.problems_only = false;
                    let keep = self.cluster_keep();
                    self.gpus.refilter(&self.data, keep);
                    self.switch(Screen::Gpus);
                }
            }
            UiAction::Drain => {
                let targets = self.node_targets();
                let targets = self.permitted(Verb::Drain, targets, |n| &n.cluster);
                if !targets.is_empty() {
                    // Always a dialog: a drain needs a reason, and it is destructive.
                    self.dialog = Some(Dialog::Drain { targets, reason: TextInput::default(), error: None });
                }
            }
            UiAction::Teardown => {
                let targets = self.node_targets();
                let targets = self.permitted(Verb::Teardown, targets, |n| &n.cluster);
                if !targets.is_empty() {
                    self.dialog = Some(Dialog::Nodes { action: NodeAction::Teardown, targets });
                }
            }
            UiAction::Resume | UiAction::Cordon | UiAction::Uncordon => {
                let act = match action {
                    UiAction::Resume => NodeAction::Resume,
                    UiAction::Cordon => NodeAction::Cordon,
                    _ => NodeAction::Uncordon,
                };
                let targets = self.node_targets();
                for node in self.permitted(act.verb(), targets, |n| &n.cluster) {
                    out.push(Command::Fleet(Action::Node { node, action: act.clone() }));
                }
            }
            _ => {}
        }
    }

    fn node_targets(&self) -> Vec<NodeRef> {
        if self.nodes.marked.is_empty() {
            self.cursor_node().into_iter().collect()
        } else {
            self.nodes.marked.iter().cloned().collect()
        }
    }

    fn gpus_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.gpus.cursor, action) {
            self.gpus.sync(&self.data);
            return;
        }
        match action {
            UiAction::Left => self.gpus.cell = self.gpus.cell.saturating_sub(1),
            UiAction::Right => {
                self.gpus.cell += 1;
                self.gpus.sync(&self.data);
            }
            UiAction::Open => {
                if let Some((_, _, GpuCell::Allocated(Some(_)), Some(job))) = self.gpu_selection() {
                    let job = job.job_ref.clone();
                    if let Some(row) = self.data.job_index.get(&job).copied() {
                        self.open_detail(row, out);
                    }
                }
            }
            UiAction::SortNext | UiAction::SortReverse => {
                if action == UiAction::SortNext {
                    let at = GpuSort::ALL.iter().position(|c| *c == self.gpus.sort).unwrap_or(0);
                    self.gpus.sort = GpuSort::ALL[(at + 1) % GpuSort::ALL.len()];
                } else {
                    self.gpus.reverse = !self.gpus.reverse;
                }
                let keep = self.cluster_keep();
                self.gpus.refilter(&self.data, keep);
            }
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::ProblemNodes => {
                self.gpus.problems_only = !self.gpus.problems_only;
                let keep = self.cluster_keep();
                self.gpus.refilter(&self.data, keep);
            }
            _ => {}
        }
    }

    fn overview_action(&mut self, action: UiAction) {
        match action {
            UiAction::Up => self.overview_scroll = self.overview_scroll.saturating_sub(1),
            UiAction::Down => self.overview_scroll += 1,
            UiAction::PageUp => self.overview_scroll = self.overview_scroll.saturating_sub(10),
            UiAction::PageDown => self.overview_scroll += 10,
            UiAction::Top => self.overview_scroll = 0,
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::Open => self.switch(Screen::Jobs),
            _ => {}
        }
    }

    fn open_detail(&mut self, row: u32, out: &mut Vec<Command>) {
        let job = self.data.job(row).clone();
        let taken_at = self.data.taken_at(self.data.jobs[row as usize].snap);
        self.open_detail_of(job, taken_at, false, out);
    }

    /// The detail of `job` as last seen (`gone`: no longer in its cluster's queue), and a
    /// read of its log.
    fn open_detail_of(&mut self, job: Job, taken_at: Option<DateTime<Utc>>, gone: bool, out: &mut Vec<Command>) {
        self.detail_from_history = self.screen == Screen::History;
        self.detail = Some(Detail {
            job: job.job_ref.clone(),
            taken_at,
            last: job,
            gone,
            stream: LogStream::Stdout,
            pod: None,
            turn: Vec::new(),
            log: LogBuffer::default(),
            follow: false,
            scroll: 0,
            failures: 0,
            retry_at: None,
        });
        self.screen = Screen::Detail;
        // The last detail's questions are not this one's.
        self.log_read.forget();
        self.turn_ask.forget();
        self.fetch_log(out, true);
        self.fetch_turn(out);
    }

    /// Ask once, for a job that waits, what its backend adds about its turn.
    fn fetch_turn(&mut self, out: &mut Vec<Command>) {
        let Some(d) = &mut self.detail else { return };
        if d.gone || !crate::fleet::why::asks_its_turn(d.last.state, d.last.reason.as_deref()) {
            return;
        }
        let seq = self.turn_ask.issue(());
        out.push(Command::FetchTurn { job: Box::new(d.last.clone()), seq });
    }

    /// Ask for the detail's current log: from the tail (`first`) or on from the last offset.
    fn fetch_log(&mut self, out: &mut Vec<Command>, first: bool) {
        let Some(d) = &mut self.detail else { return };
        let Ok(log) = d.log_handle() else { return };
        let log = log.clone();
        let from = if first { None } else { d.log.offset };
        let seq = self.log_read.issue(from.is_none());
        out.push(Command::FetchLog {
            job: d.job.clone(),
            stream: d.stream,
            log,
            from,
            max_bytes: LOG_FETCH_BYTES,
            seq,
        });
    }

    fn detail_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        let page = usize::from(self.size.1 / 2).max(1);
        if action == UiAction::Watch {
            if let Some(job) = self.detail.as_ref().map(|d| d.job.clone()) {
                self.toggle_watch(vec![job]);
            }
            return;
        }
        let Some(d) = &mut self.detail else { return };
        let max = d.log.len();
        match action {
            UiAction::Up => d.scroll = (d.scroll + 1).min(max),
            UiAction::Down => d.scroll = d.scroll.saturating_sub(1),
            UiAction::PageUp => d.scroll = (d.scroll + page).min(max),
            UiAction::PageDown => d.scroll = d.scroll.saturating_sub(page),
            UiAction::Top => d.scroll = max,
            UiAction::Bottom => d.scroll = 0,
            UiAction::Follow => {
                d.follow = !d.follow;
                if d.follow {
                    d.scroll = 0;
                    if !self.log_read.is_open() {
                        let first = d.log.offset.is_none();
                        self.fetch_log(out, first);
                    }
                }
            }
            UiAction::SwitchLog => {
                d.stream = d.stream.other();
                d.log = LogBuffer::default();
                d.scroll = 0;
                self.log_read.forget();
                self.fetch_log(out, true);
            }
            UiAction::NextPod => {
                let with = d.pods_with_logs();
                if with.is_empty() {
                    return;
                }
                let at = d.shown_pod().and_then(|shown| with.iter().position(|i| *i == shown));
                d.pod = Some(with[at.map_or(0, |a| (a + 1) % with.len())]);
                d.stream = LogStream::Stdout;
                d.log = LogBuffer::default();
                d.scroll = 0;
                self.log_read.forget();
                self.fetch_log(out, true);
            }
            _ => {
                if let Some(job_action) = action.job_action() {
                    let job = d.job.clone();
                    self.ask_job_action(job_action, vec![job], out);
                }
            }
        }
    }

    /// Open the history screen and read the jobs that ended in the last `age` (the last
    /// one asked, else 24 h): one read of every cluster, now.
    fn open_history(&mut self, age: Option<Duration>, out: &mut Vec<Command>) {
        if let Some(age) = age {
            self.history.age = Some(age);
        }
        self.switch(Screen::History);
        self.fetch_history(out);
    }

    /// Ask every cluster for its finished jobs since the history's age before now.
    fn fetch_history(&mut self, out: &mut Vec<Command>) {
        let since = self.now - self.history.age();
        let seq = self.history.read.issue(());
        self.history.since = Some(since);
        out.push(Command::FetchHistory { since, seq });
    }

    fn history_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.history.cursor, action) {
            return;
        }
        match action {
            UiAction::ReloadHistory => self.fetch_history(out),
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::Open => {
                let Some(record) = self.history.current() else { return };
                let job = record.job.clone();
                // Still in the queue (ended moments ago): the live row, kept up to date.
                match self.data.job_index.get(&job.job_ref).copied() {
                    Some(row) => self.open_detail(row, out),
                    None => self.open_detail_of(job, None, true, out),
                }
            }
            _ => {}
        }
    }

    fn open_form(&mut self) {
        if Screen::MAIN.contains(&self.screen) {
            self.back_to = self.screen;
        }
        if let Some(c) = &self.cluster
            && self.form.value(Field::Cluster).is_empty()
        {
            self.form.input_mut(Field::Cluster).set(c.clone());
        }
        self.form.recheck(&self.data.fleet);
        self.screen = Screen::Submit;
    }

    fn form_action(&mut self, action: UiAction) {
        let n = Field::ALL.len();
        match action {
            UiAction::NextField | UiAction::Down => self.form.focus = (self.form.focus + 1) % n,
            UiAction::PrevField | UiAction::Up => self.form.focus = (self.form.focus + n - 1) % n,
            UiAction::LoadSpec => {
                let last = self.form.loaded_from.clone().unwrap_or_default();
                self.form.path_prompt = Some(TextInput::new(last));
            }
            UiAction::SubmitForm => {
                self.form.recheck(&self.data.fleet);
                match (self.form.wanted.clone(), self.form.problem.clone()) {
                    (Some((cluster, spec)), _) => {
                        if let Some(cluster) = self.permitted(Verb::Submit, vec![cluster], |c| c).pop() {
                            self.dialog = Some(Dialog::Submit { cluster, spec: Box::new(spec) });
                        }
                    }
                    (None, problem) => {
                        let problem =
                            problem.unwrap_or(form::Problem { field: None, message: "the form is empty".into() });
                        if let Some(f) = problem.field {
                            self.form.focus = f as usize;
                        }
                        self.toast(format!("cannot submit: {}", problem.message), true);
                    }
                }
            }
            _ => {}
        }
    }

    fn run_command(&mut self, line: &str, out: &mut Vec<Command>) {
        match command_line::parse(line) {
            Ok(Parsed::Screen(name)) => self.switch(match name {
                "jobs" => Screen::Jobs,
                "nodes" => Screen::Nodes,
                "gpus" => Screen::Gpus,
                _ => Screen::Overview,
            }),
            Ok(Parsed::Cluster(None)) => self.set_cluster(None),
            Ok(Parsed::Cluster(Some(name))) => {
                if self.data.fleet.cluster(&name).is_some() {
                    self.set_cluster(Some(name));
                } else {
                    let names = self.data.cluster_names().join(", ");
                    self.toast(format!("no cluster named `{name}` (clusters: {names})"), true);
                }
            }
            Ok(Parsed::User(user)) => {
                self.jobs.user = user;
                self.refilter_jobs();
                if !matches!(self.screen, Screen::Jobs) {
                    self.switch(Screen::Jobs);
                }
            }
            Ok(Parsed::Idle) => {
                self.jobs.idle_only = !self.jobs.idle_only;
                self.refilter_jobs();
                let what = if self.jobs.idle_only { "jobs with idle GPUs only" } else { "every job" };
                self.toast(what.to_string(), false);
                if !matches!(self.screen, Screen::Jobs) {
                    self.switch(Screen::Jobs);
                }
            }
            Ok(Parsed::Theme(name)) => {
                self.set_theme(&name);
            }
            Ok(Parsed::Keymap(name)) => match Keymap::builtin(&name) {
                Some(keymap) => {
                    self.keymap = keymap;
                    self.toast(format!("keymap {name}"), false);
                }
                None => self.toast(format!("no keymap named `{name}` (keymaps: {})", Keymap::names().join(", ")), true),
            },
            Ok(Parsed::History(age)) => self.open_history(age, out),
            Ok(Parsed::Submit) => self.open_form(),
            Ok(Parsed::Help) => self.help = Some(0),
            Ok(Parsed::Quit) => out.push(Command::Quit),
            Err(e) => self.toast(e, true),
        }
    }
}
