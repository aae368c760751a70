//! The job detail: what it shows of the job, its log reads (tail, follow with back-off, stream and pod), its turn.

use chrono::{DateTime, Duration, Utc};

use crate::model::{Job, JobRef, LogHandle};
use crate::tui::action::UiAction;
use crate::tui::app::log::{LOG_FETCH_BYTES, LogBuffer, LogChunk, LogStream};
use crate::tui::app::{App, Command, Screen};

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

impl App {
    pub(in crate::tui::app) fn open_detail(&mut self, row: u32, out: &mut Vec<Command>) {
        let job = self.rows.job(row).clone();
        let taken_at = self.rows.taken_at(self.rows.jobs[row as usize].snap);
        self.open_detail_of(job, taken_at, false, out);
    }

    /// The detail of `job` as last seen (`gone`: no longer in its cluster's queue), and a
    /// read of its log.
    pub(in crate::tui::app) fn open_detail_of(
        &mut self,
        job: Job,
        taken_at: Option<DateTime<Utc>>,
        gone: bool,
        out: &mut Vec<Command>,
    ) {
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
    pub(in crate::tui::app) fn fetch_turn(&mut self, out: &mut Vec<Command>) {
        let Some(d) = &mut self.detail else { return };
        if d.gone || !crate::fleet::why::asks_its_turn(d.last.state, d.last.reason.as_deref()) {
            return;
        }
        let seq = self.turn_ask.issue(());
        out.push(Command::FetchTurn { job: Box::new(d.last.clone()), seq });
    }

    /// Ask for the detail's current log: from the tail (`first`) or on from the last offset.
    pub(in crate::tui::app) fn fetch_log(&mut self, out: &mut Vec<Command>, first: bool) {
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

    pub(in crate::tui::app) fn on_log(&mut self, seq: u64, result: Result<LogChunk, String>) -> bool {
        let Some(d) = &mut self.detail else { return false };
        // `None`: an answer for a log no longer shown.
        let Some(first_read) = self.log_read.answer(seq) else { return false };
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
                grew
            }
            Err(e) => {
                let new = d.log.error.as_deref() != Some(e.as_str());
                if new {
                    d.log.error = Some(e);
                }
                new
            }
        }
    }

    pub(in crate::tui::app) fn detail_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
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
}
