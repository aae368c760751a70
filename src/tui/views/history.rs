//! The history screen: every cluster's finished jobs, newest end first, with the columns of
//! `flightdeck jobs --since` (end time, exit code, elapsed, max RSS, GPU hours). Above the
//! table, one line each: the read in flight, clusters that could not answer, what the
//! answers note (how many older ones were left out), where the rows came from.

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::layout::Rect;

use crate::tui::app::App;
use crate::tui::app::history::{self, COLUMNS, STATE_COLUMN};
use crate::tui::theme::Slot;
use crate::tui::widgets::table::RowCells;
use crate::tui::widgets::text;

/// The title line: the span looked at, counts, the cluster filter.
pub fn title(app: &App) -> String {
    let h = app.history();
    let mut t = format!(" History · ended in the last {} ", history::age_text(h.age()));
    if let Some(since) = h.since {
        t.push_str(&format!("(since {}) ", since.format("%Y-%m-%d %H:%M")));
    }
    if h.loaded {
        let (shown, total) = (h.cursor.len(), h.records.len());
        if shown == total {
            t.push_str(&format!("· {} {} ", text::thousands(total), if total == 1 { "job" } else { "jobs" }));
        } else {
            let jobs = if total == 1 { "job" } else { "jobs" };
            t.push_str(&format!("· {} of {} {jobs} ", text::thousands(shown), text::thousands(total)));
        }
    }
    if let Some(c) = app.cluster_filter() {
        t.push_str(&format!("· cluster {c} "));
    }
    text::clean(&t).into_owned()
}

/// The lines above the table, with their look.
pub fn info_lines(app: &App) -> Vec<(String, Slot)> {
    let h = app.history();
    let mut lines = Vec::new();
    if h.read.is_open() {
        lines.push(("reading finished jobs…".to_string(), Slot::Warning));
    }
    lines.extend(h.errors.iter().map(|e| (e.clone(), Slot::Error)));
    lines.extend(h.notes.iter().map(|n| (n.clone(), Slot::Dim)));
    if h.loaded && !h.sources.is_empty() {
        lines.push((format!("read from: {}", h.sources.join(" · ")), Slot::Dim));
    }
    lines
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let Some(table_area) = super::lines_above_table(app, frame, area, title(app), &info_lines(app)) else { return };
    let h = app.history();
    let list = &h.cursor;
    let height = (table_area.height - 1) as usize;
    let (offset, window) = super::scrolled(list, height);
    let base = theme.style(Slot::Base);
    let rows: Vec<RowCells> = window
        .iter()
        .enumerate()
        .map(|(i, &row)| {
            let record = &h.records[row as usize];
            let cells: Vec<Cow<str>> = history::cells(record).into_iter().map(Cow::Owned).collect();
            let is_cursor = offset + i == list.pos;
            let mut cell_styles = vec![None; cells.len()];
            if !is_cursor {
                cell_styles[STATE_COLUMN] = Some(theme.job_state(record.job.state));
            }
            RowCells {
                cells,
                style: if is_cursor { theme.style(Slot::Selection) } else { base },
                cell_styles,
                gutter: [if is_cursor { '>' } else { ' ' }, ' '],
            }
        })
        .collect();
    let empty = (h.loaded && list.is_empty()).then(|| {
        if h.records.is_empty() {
            format!("no job ended in the last {}", history::age_text(h.age()))
        } else {
            "no finished job of this cluster".to_string()
        }
    });
    super::draw_table(app, frame, table_area, &COLUMNS, &h.widths, &rows, empty.as_deref());
}
