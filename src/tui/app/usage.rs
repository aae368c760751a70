//! The usage screen: who holds the GPUs, one row per user. What each user holds now comes
//! with every refresh (the row cache computes it off the UI thread); the GPU-hours of the
//! window are read on demand, one history read per cluster when the screen first opens or
//! on `r`, and computed off the UI thread by the event loop, never per refresh (through a
//! hub, by the hub: a viewer's window holds their own row alone, and so do the rows shown).
//! Pure: the rows, their order, the filter.

use chrono::{DateTime, Duration, Utc};

use super::latest::Latest;
use super::lists::Cursor;
use crate::model::usage::{self, Usage, UsageBy, UsageRow};
use crate::safe_text::printable;

/// How far back the GPU-hours look unless told (`:usage 1d`), as `flightdeck usage` does.
pub const DEFAULT_AGE: Duration = Duration::days(7);

/// What the rows are ordered by, most first (`s` cycles, `S` reverses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UsageSort {
    #[default]
    GpusNow,
    GpuHours,
    IdleNow,
    /// Idle GPU-hours of the window, at least (`model::usage`).
    IdleHours,
}

impl UsageSort {
    pub const ALL: [UsageSort; 4] = [UsageSort::GpusNow, UsageSort::GpuHours, UsageSort::IdleNow, UsageSort::IdleHours];

    pub fn title(self) -> &'static str {
        match self {
            UsageSort::GpusNow => "GPUs held now",
            UsageSort::GpuHours => "GPU-hours",
            UsageSort::IdleNow => "idle GPUs now",
            UsageSort::IdleHours => "idle GPU-hours",
        }
    }

    /// The figure a row is ordered by.
    fn figure(self, r: &UsageRow) -> f64 {
        match self {
            UsageSort::GpusNow => f64::from(r.gpus_now),
            UsageSort::GpuHours => r.gpu_hours.unwrap_or(0.0),
            UsageSort::IdleNow => f64::from(r.idle_gpus_now),
            UsageSort::IdleHours => r.idle_gpu_hours_at_least.unwrap_or(0.0),
        }
    }
}

/// What the usage screen holds.
#[derive(Debug, Default)]
pub struct UsageView {
    /// How far back the GPU-hours look (`None`: [`DEFAULT_AGE`]).
    pub age: Option<Duration>,
    /// The window the last read asked for starts here.
    pub since: Option<DateTime<Utc>>,
    /// The window's read in flight.
    pub read: Latest<()>,
    /// The last window computed (every user's GPU-hours, what it could not say).
    pub window: Option<Usage>,
    pub sort: UsageSort,
    pub reverse: bool,
    /// Words every shown user name contains (`/`), case-insensitive.
    pub filter: String,
    /// Every user's row: held now beside the window's hours, sorted.
    pub rows: Vec<UsageRow>,
    /// Over indices into `rows` (the filter applied).
    pub cursor: Cursor,
    /// Each row's cells (`UsageRow::cells`, made printable), taken once per rebuild rather
    /// than per frame.
    pub cells: Vec<Vec<String>>,
    /// Widest cell of each column over the shown rows (and the header).
    pub widths: Vec<usize>,
    /// Each queue's GPU quota beside the rows, as `flightdeck usage` prints it
    /// (`QueueQuotaRow::cells`, made printable), from the latest refresh.
    pub quota_cells: Vec<Vec<String>>,
    /// Widest cell of each quota column (and its header).
    pub quota_widths: Vec<usize>,
}

impl UsageView {
    pub fn age(&self) -> Duration {
        self.age.unwrap_or(DEFAULT_AGE)
    }

    /// The row under the cursor.
    pub fn current(&self) -> Option<&UsageRow> {
        self.rows.get(self.cursor.current()? as usize)
    }

    /// Take a new picture of what is held now (or a new window, order or filter): the rows
    /// merged, sorted and filtered again; the cursor stays on the user it was on.
    pub fn rebuild(&mut self, now: &Usage) {
        let selected = self.current().map(|r| r.key.clone());
        self.rows = usage::merge_window(now, self.window.as_ref());
        // A hub that answers a viewer with their own rows: the rows held now are theirs too.
        if let Some(user) = self.window.as_ref().and_then(|w| w.rows_of.as_deref()) {
            self.rows.retain(|r| r.key == user);
        }
        let sort = self.sort;
        // Ties by name, so equal figures keep one order from refresh to refresh.
        self.rows.sort_by(|a, b| {
            let most_first = sort.figure(b).total_cmp(&sort.figure(a));
            let most_first = if self.reverse { most_first.reverse() } else { most_first };
            most_first.then_with(|| a.key.cmp(&b.key))
        });
        let words: Vec<String> = self.filter.split_whitespace().map(str::to_lowercase).collect();
        self.cursor.visible = (0..self.rows.len() as u32)
            .filter(|&i| {
                let key = self.rows[i as usize].key.to_lowercase();
                words.iter().all(|w| key.contains(w.as_str()))
            })
            .collect();
        let row = selected.and_then(|k| self.cursor.visible.iter().copied().find(|&i| self.rows[i as usize].key == k));
        self.cursor.place(row);
        self.cells = self.rows.iter().map(|r| printable_cells(r.cells())).collect();
        let shown: Vec<&Vec<String>> = self.cursor.visible.iter().map(|&i| &self.cells[i as usize]).collect();
        self.widths = widths(&usage::header(UsageBy::User), shown);
        // The window's dollars only where some row has a price, as `flightdeck usage` prints
        // them: an optional column of no width is left out.
        if self.rows.iter().all(|r| r.cost_window.is_none()) {
            self.widths[usage::SPENT_COLUMN] = 0;
        }
        self.quota_cells = now.queue_quota.iter().map(|q| printable_cells(q.cells())).collect();
        self.quota_widths = widths(&usage::QUEUE_QUOTA_HEADER, &self.quota_cells);
    }

    /// The lines above the table: the read in flight, what the window could not say.
    pub fn info_lines(&self) -> Vec<(String, bool)> {
        let mut lines = Vec::new();
        if self.read.is_open() {
            lines.push(("reading finished jobs for the GPU-hours…".to_string(), true));
        }
        if let Some(w) = &self.window {
            lines.extend(w.not_known.iter().map(|n| (format!("not known: {n}"), false)));
        }
        lines
    }
}

/// Cells as the screen may show them: backend text with its controls neutralised.
fn printable_cells(cells: Vec<String>) -> Vec<String> {
    cells.into_iter().map(|c| printable(&c).into_owned()).collect()
}

/// The widest cell of each column over `rows` and the column's title.
fn widths<'a>(header: &[&str], rows: impl IntoIterator<Item = &'a Vec<String>>) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|t| t.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(crate::tui::widgets::text::width(c));
        }
    }
    widths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, gpus: u32, idle: u32) -> UsageRow {
        UsageRow { key: key.into(), jobs_now: 1, gpus_now: gpus, idle_gpus_now: idle, ..UsageRow::default() }
    }

    fn now(rows: Vec<UsageRow>) -> Usage {
        Usage { rows, ..Usage::default() }
    }

    fn keys(v: &UsageView) -> Vec<&str> {
        v.cursor.visible.iter().map(|i| v.rows[*i as usize].key.as_str()).collect()
    }

    #[test]
    fn rows_sort_by_the_chosen_figure_most_first_and_the_window_adds_users_holding_nothing_now() {
        let mut v = UsageView::default();
        let held = now(vec![row("alice", 8, 0), row("bob", 2, 2)]);
        v.rebuild(&held);
        assert_eq!(keys(&v), ["alice", "bob"]);
        v.sort = UsageSort::IdleNow;
        v.rebuild(&held);
        assert_eq!(keys(&v), ["bob", "alice"]);

        let mut carol = row("carol", 0, 0);
        carol.jobs_now = 0;
        carol.gpu_hours = Some(40.0);
        carol.gpu_hours_complete = true;
        let mut alice = row("alice", 0, 0);
        alice.gpu_hours = Some(3.0);
        alice.gpu_hours_complete = true;
        v.window = Some(Usage { rows: vec![carol, alice], since: Some(DateTime::UNIX_EPOCH), ..Usage::default() });
        v.sort = UsageSort::GpuHours;
        v.rebuild(&held);
        assert_eq!(keys(&v), ["carol", "alice", "bob"]);
        let carol = &v.rows[v.cursor.visible[0] as usize];
        assert_eq!((carol.gpus_now, carol.gpu_hours), (0, Some(40.0)), "nothing held now, hours from the window");
        let bob = v.rows.iter().find(|r| r.key == "bob").unwrap();
        assert_eq!(bob.gpu_hours, Some(0.0), "a user the window does not name used no GPU-hours in it");
        v.reverse = true;
        v.rebuild(&held);
        assert_eq!(keys(&v), ["bob", "alice", "carol"]);
        // By idle GPU-hours: from the window's rows.
        let mut w = v.window.take().unwrap();
        w.rows[1].idle_gpu_hours_at_least = Some(2.5);
        v.window = Some(w);
        (v.sort, v.reverse) = (UsageSort::IdleHours, false);
        v.rebuild(&held);
        assert_eq!(keys(&v)[0], "alice");
        assert_eq!(v.rows[v.cursor.visible[0] as usize].idle_gpu_hours_at_least, Some(2.5));
    }

    #[test]
    fn the_windows_dollars_are_a_column_only_where_some_row_has_a_price() {
        let mut v = UsageView::default();
        let held = now(vec![row("alice", 8, 0)]);
        v.rebuild(&held);
        assert_eq!(v.widths[usage::SPENT_COLUMN], 0, "no window: no column");
        let mut alice = row("alice", 8, 0);
        (alice.gpu_hours, alice.cost_window, alice.cost_window_complete) = (Some(16.0), Some(47.84), false);
        v.window = Some(Usage { rows: vec![alice], since: Some(DateTime::UNIX_EPOCH), ..Usage::default() });
        v.rebuild(&held);
        assert_eq!(v.cells[0][usage::SPENT_COLUMN], ">=47.84");
        assert_eq!(v.widths[usage::SPENT_COLUMN], ">=47.84".len());
        v.window.as_mut().unwrap().rows[0].cost_window = None;
        v.rebuild(&held);
        assert_eq!(v.widths[usage::SPENT_COLUMN], 0, "no price anywhere (Slurm's): left out");
    }

    #[test]
    fn a_hubs_answer_to_a_viewer_keeps_the_rows_held_now_to_their_own() {
        let mut v = UsageView::default();
        let held = now(vec![row("alice", 8, 0), row("bob", 2, 0)]);
        v.rebuild(&held);
        assert_eq!(keys(&v), ["alice", "bob"]);
        let mut bob = row("bob", 2, 0);
        bob.gpu_hours = Some(5.0);
        v.window = Some(Usage { rows: vec![bob], rows_of: Some("bob".into()), ..Usage::default() });
        v.rebuild(&held);
        assert_eq!(keys(&v), ["bob"], "alice's row is not the viewer's to see");
        assert_eq!(v.rows[0].gpu_hours, Some(5.0));
    }

    #[test]
    fn the_filter_keeps_users_whose_name_holds_every_word_and_the_cursor_follows_its_user() {
        let mut v = UsageView::default();
        let held = now(vec![row("alice", 8, 0), row("bob", 4, 0), row("alina", 2, 0)]);
        v.rebuild(&held);
        v.cursor.move_by(1);
        assert_eq!(v.current().unwrap().key, "bob");
        // Bob takes more: he moves to the top, and the cursor with him.
        let held = now(vec![row("alice", 8, 0), row("bob", 16, 0), row("alina", 2, 0)]);
        v.rebuild(&held);
        assert_eq!(v.current().unwrap().key, "bob");
        v.filter = "AL".into();
        v.rebuild(&held);
        assert_eq!(keys(&v), ["alice", "alina"]);
        v.filter = "al ina".into();
        v.rebuild(&held);
        assert_eq!(keys(&v), ["alina"]);
    }
}
