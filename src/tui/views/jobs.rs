//! The jobs table: every job of every cluster, filtered and sorted; only the rows on screen
//! are formatted.

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::block;
use crate::tui::app::App;
use crate::tui::app::lists::{JobColumn, elapsed_secs, gpus_cell, limit_cell, nodes_cell};
use crate::tui::theme::Slot;
use crate::tui::widgets::table::{self, Column, RowCells};
use crate::tui::widgets::text;

/// Shapes, in [`JobColumn::ALL`] order.
pub const COLUMNS: [Column; 11] = [
    Column::new("CLUSTER", 7, 12, 2),
    Column::new("ID", 7, 14, 0),
    Column::new("NAME", 16, 50, 0),
    Column::new("USER", 6, 12, 1),
    Column::new("PARTITION", 9, 14, 6),
    Column::new("STATE", 7, 11, 0),
    Column::new("REASON", 10, 40, 4),
    Column::new("GPUS", 7, 16, 1),
    Column::new("NODES", 6, 20, 7),
    Column::new("ELAPSED", 7, 8, 3).right(),
    Column::new("LIMIT", 6, 7, 5).right(),
];

/// The title line: counts and every filter in force.
pub fn title(app: &App) -> String {
    let total = app.data.jobs.len();
    let shown = app.visible_job_count();
    let mut t = format!(" Jobs {} of {} ", text::thousands(shown), text::thousands(total));
    let (col, rev) = app.job_sort();
    t.push_str(&format!("· sort {}{} ", col.title().to_lowercase(), if rev { "↓" } else { "↑" }));
    if let Some(s) = app.state_filter() {
        t.push_str(&format!("· state {s} "));
    }
    if let Some(u) = app.user_filter() {
        t.push_str(&format!("· user {u} "));
    }
    if let Some(c) = app.cluster_filter() {
        t.push_str(&format!("· cluster {c} "));
    }
    if !app.job_filter_text().is_empty() {
        t.push_str(&format!("· /{} ", app.job_filter_text()));
    }
    if !app.jobs.marked.is_empty() {
        t.push_str(&format!("· {} marked ", app.jobs.marked.len()));
    }
    text::clean(&t).into_owned()
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let b = block(app, title(app), true);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    if inner.height < 2 {
        return;
    }
    let list = &app.jobs;
    let (offset, window) = table::window(&list.cursor, (inner.height - 1) as usize);

    let base = theme.style(Slot::Base);
    let rows: Vec<RowCells> = window
        .iter()
        .enumerate()
        .map(|(i, &row)| {
            let job = app.data.job(row);
            let taken = app.data.taken_at(app.data.jobs[row as usize].snap);
            let cells: Vec<Cow<str>> = JobColumn::ALL
                .iter()
                .map(|c| -> Cow<str> {
                    match c {
                        JobColumn::Cluster => Cow::Borrowed(job.job_ref.cluster.as_str()),
                        JobColumn::Id => Cow::Borrowed(job.job_ref.id.as_str()),
                        JobColumn::Name => Cow::Borrowed(job.name.as_str()),
                        JobColumn::User => Cow::Borrowed(job.user.as_str()),
                        JobColumn::Partition => Cow::Borrowed(job.partition.as_str()),
                        JobColumn::State => Cow::Borrowed(job.state.as_str()),
                        JobColumn::Reason => Cow::Borrowed(job.reason.as_deref().unwrap_or("")),
                        JobColumn::Gpus => Cow::Owned(gpus_cell(job)),
                        JobColumn::Nodes => Cow::Owned(nodes_cell(job)),
                        JobColumn::Elapsed => {
                            Cow::Owned(elapsed_secs(job, taken).map_or_else(|| "-".into(), text::duration))
                        }
                        JobColumn::Limit => Cow::Owned(limit_cell(job)),
                    }
                })
                .collect();
            let is_cursor = offset + i == list.cursor.pos;
            let marked = list.marked.contains(&job.job_ref);
            let style = if is_cursor {
                theme.style(Slot::Selection)
            } else if marked {
                theme.style(Slot::Marked)
            } else {
                base
            };
            let mut cell_styles = vec![None; cells.len()];
            if !is_cursor {
                cell_styles[JobColumn::State as usize] = Some(theme.job_state(job.state));
            }
            RowCells {
                cells,
                style,
                cell_styles,
                gutter: [if is_cursor { '>' } else { ' ' }, if marked { '*' } else { ' ' }],
            }
        })
        .collect();
    let empty = list.cursor.is_empty().then_some(if app.data.jobs.is_empty() {
        "no jobs"
    } else {
        "no job matches the filters"
    });
    super::draw_table(app, frame, inner, &COLUMNS, &app.data.job_widths, &rows, empty);
}
