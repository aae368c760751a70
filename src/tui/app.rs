//! The cockpit's state and its one transition function.
//!
//! [`App::update`] takes a [`Msg`] (a key, a new fleet state, an action's outcome, a log
//! read, a resize, a clock tick) and returns the [`Command`]s the event loop carries out.
//! Nothing here does I/O, reads the clock or touches the terminal, so every behaviour is a
//! plain unit test (`tests/offline/tui_app.rs`). `update` alone marks a redraw, from whether
//! the message changed what is drawn: a stale answer or an idle tick does not.
//!
//! Here: the `App`, its screens, the transition and the keys every screen shares. Each
//! screen's own keys are in `screens/`; a new fleet state is applied in `refresh`; the read
//! access views use is in `read`.

mod cluster_filter;
pub mod command_line;
pub mod dialog;
pub mod form;
pub mod haystack;
pub mod help;
pub mod history;
pub mod input;
pub mod latest;
pub mod lists;
pub mod log;
mod messages;
mod permitted;
pub mod prepared;
mod read;
mod refresh;
pub mod row_cache;
mod row_index;
mod screens;
mod toasts;
pub mod usage;
mod watch;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use nucleo::Matcher;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use self::dialog::Dialog;
use self::form::{Field, SubmitForm};
use self::history::HistoryView;
use self::input::TextInput;
use self::latest::Latest;
use self::lists::{Cursor, GpuList, JobList, NodeList};
use self::row_cache::RowCache;
use super::TuiOptions;
use super::action::{Mode, UiAction};
use super::keymap::{Keymap, Resolution};
use super::theme::Theme;
use crate::fleet::{BatchOutcome, FleetState};
use crate::model::JobRef;

pub use self::messages::{Command, Msg};
pub use self::screens::detail::Detail;
pub use self::toasts::Toast;

/// The screens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Overview,
    Jobs,
    Nodes,
    Gpus,
    /// Who holds the GPUs, per user.
    Usage,
    /// Finished jobs (`sacct`), read on demand; not in the Tab cycle.
    History,
    Detail,
    Submit,
}

impl Screen {
    /// The screens Tab cycles through, in order.
    pub const MAIN: [Screen; 5] = [Screen::Overview, Screen::Jobs, Screen::Nodes, Screen::Gpus, Screen::Usage];

    pub fn mode(self) -> Mode {
        match self {
            Screen::Overview => Mode::Overview,
            Screen::Jobs => Mode::Jobs,
            Screen::Nodes => Mode::Nodes,
            Screen::Gpus => Mode::Gpus,
            Screen::Usage => Mode::Usage,
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
            Screen::Usage => "Usage",
            Screen::History => "History",
            Screen::Detail => "Detail",
            Screen::Submit => "Submit",
        }
    }
}

/// A one-line prompt at the bottom.
#[derive(Debug, Clone)]
pub enum Input {
    /// The fuzzy filter of the jobs or nodes table, applied as it is typed.
    Filter { screen: Screen, text: TextInput },
    /// The `:` command line, with the candidates of the last Tab.
    Command { text: TextInput, candidates: Vec<String> },
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
    pub(crate) rows: RowCache,
    /// What a refresh replaced (a row cache, or a fleet state holding the last snapshots),
    /// for the event loop to free off the UI thread.
    retired: Option<Box<dyn std::any::Any + Send>>,
    /// Times the lists were rebuilt for a new fleet state (see [`App::list_passes`]).
    list_passes: u64,
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
    pub(crate) usage: usage::UsageView,
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
            rows: RowCache::empty(),
            retired: None,
            list_passes: 0,
            screen: Screen::Overview,
            back_to: Screen::Jobs,
            detail_from_history: false,
            cluster: None,
            jobs: JobList::default(),
            nodes: NodeList::default(),
            gpus: GpuList::default(),
            overview_scroll: 0,
            history: HistoryView::default(),
            usage: usage::UsageView::default(),
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

    // ----- the transition -----

    pub fn update(&mut self, msg: Msg) -> Vec<Command> {
        let mut out = Vec::new();
        // The one place that marks a redraw: each message says whether it changed what is
        // drawn (an idle tick or a stale answer does not).
        if self.handle(msg, &mut out) {
            self.generation += 1;
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

    /// Carry out `msg`: true when what is drawn may have changed. Every key, paste and
    /// resize counts; an answer counts when it was still wanted; a tick only when something
    /// on screen expired or aged.
    fn handle(&mut self, msg: Msg, out: &mut Vec<Command>) -> bool {
        match msg {
            Msg::Key(key) => {
                if key.kind == KeyEventKind::Release {
                    return false;
                }
                self.on_key(key, out);
                true
            }
            Msg::Paste(text) => {
                self.on_paste(&text);
                true
            }
            // Both run: `|`, not `||`.
            // The event loop checks the listing off the UI thread (`Restamped`); a state
            // handed in directly (the first, tests) is checked here.
            Msg::Fleet(state) if row_cache::same_listing(&self.rows.fleet, &state) => self.on_restamp(state),
            Msg::Fleet(state) => self.on_rows(RowCache::new(state), None) | self.follow_watched(out),
            Msg::Prepared(p) => {
                let p = *p;
                self.on_rows(p.rows, p.lists) | self.follow_watched(out)
            }
            Msg::Restamped { base, state } if Arc::ptr_eq(&self.rows.fleet, &base) => self.on_restamp(state),
            // Checked against a state no longer shown (cannot happen in the event loop,
            // which checks against the last state it handed over): build the rows here.
            Msg::Restamped { state, .. } => self.on_rows(RowCache::new(state), None) | self.follow_watched(out),
            Msg::PrepareFailed(why) => {
                self.toast(why, true);
                true
            }
            Msg::Outcome(outcome) => {
                self.on_batch(&BatchOutcome { outcomes: vec![outcome] });
                true
            }
            Msg::Batch(batch) => {
                self.on_batch(&batch);
                true
            }
            Msg::OutcomesLost(n) => {
                let results = crate::model::words::counted(n, "action result", "action results");
                self.toast(format!("{results} not shown: too many finished at once (see the audit log)"), true);
                true
            }
            Msg::Log { seq, result } => self.on_log(seq, result),
            Msg::Turn { seq, result } => {
                let Some(d) = self.detail.as_mut() else { return false };
                if self.turn_ask.answer(seq).is_none() {
                    return false;
                }
                d.turn = result.unwrap_or_else(|e| vec![format!("not asked: {e}")]);
                true
            }
            Msg::History { seq, results } => {
                if self.history.read.answer(seq).is_none() {
                    return false;
                }
                self.history.load(results, self.cluster.as_deref());
                true
            }
            Msg::Usage { seq, result } => {
                if self.usage.read.answer(seq).is_none() {
                    return false;
                }
                match result {
                    Ok(window) => self.usage.window = Some(*window),
                    Err(e) => self.toast(format!("GPU-hours not read: {e}"), true),
                }
                self.usage.rebuild(&self.rows.usage);
                true
            }
            Msg::SpecLoaded { path, result } => {
                match result {
                    Ok(spec) => {
                        self.form.load(*spec, path.clone(), &self.rows.fleet);
                        self.toast(format!("loaded {path}"), false);
                    }
                    Err(e) => self.toast(e, true),
                }
                true
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                true
            }
            Msg::Tick(now) => self.on_tick(now, out),
            Msg::Rendered { seq, result } => self.form.rendered(seq, result),
            Msg::Planned { seq, plan } => {
                let Some(Dialog::Migrate { plan: slot, .. }) = &mut self.dialog else { return false };
                if self.plan.answer(seq).is_none() {
                    return false;
                }
                *slot = Some(*plan);
                true
            }
        }
    }

    /// The clock moved: true when a toast expired or an age on screen turned a minute.
    fn on_tick(&mut self, now: DateTime<Utc>, out: &mut Vec<Command>) -> bool {
        let before = self.now;
        self.now = now;
        let n = self.toasts.len();
        self.toasts.retain(|t| t.sticky || t.until > now);
        let expired = self.toasts.len() != n;
        // Ages on screen are whole minutes: redraw when the minute turns, and only then.
        let ages_shown = self.rows.fleet.clusters.iter().any(|c| !c.health.is_fresh());
        let aged = ages_shown && before.timestamp().div_euclid(60) != now.timestamp().div_euclid(60);
        if self.screen == Screen::Detail
            && self
                .detail
                .as_ref()
                .is_some_and(|d| d.follow && !self.log_read.is_open() && d.retry_at.is_none_or(|t| now >= t))
        {
            self.fetch_log(out, false);
        }
        expired || aged
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
                self.form.recheck(&self.rows.fleet);
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

    // ----- actions -----

    fn act(&mut self, action: UiAction, out: &mut Vec<Command>) {
        match action {
            UiAction::Quit => out.push(Command::Quit),
            UiAction::Help => self.help = Some(0),
            UiAction::CommandMode => {
                self.input = Some(Input::Command { text: TextInput::default(), candidates: Vec::new() })
            }
            UiAction::Filter if matches!(self.screen, Screen::Jobs | Screen::Nodes | Screen::Usage) => {
                let current = match self.screen {
                    Screen::Nodes => &self.nodes.fuzzy,
                    Screen::Usage => &self.usage.filter,
                    _ => &self.jobs.fuzzy,
                };
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
            UiAction::ScreenUsage => self.open_usage(None, out),
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
                Screen::Usage => self.usage_action(action, out),
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
            Screen::Usage if !self.usage.filter.is_empty() => {
                self.usage.filter.clear();
                self.usage.rebuild(&self.rows.usage);
            }
            _ => {}
        }
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
}
