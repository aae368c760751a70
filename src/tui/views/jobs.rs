//! The jobs table: every job of every cluster, filtered and sorted, live jobs first and
//! finished ones dimmed after them; only the rows on screen are formatted. The columns and
//! their text are `crate::columns::JobColumn`'s, the same as `flightdeck jobs`.

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::block;
use crate::columns::{JobColumn, JobContext};
use crate::tui::app::App;
use crate::tui::app::row_cache::NO_ARRAY;
use crate::tui::theme::Slot;
use crate::tui::widgets::table::RowCells;
use crate::tui::widgets::text;

/// The title line: counts and every filter in force.
pub fn title(app: &App) -> String {
    let total = app.rows.jobs.len();
    let shown = app.visible_job_count();
    let mut t = format!(" Jobs {} of {} ", text::thousands(shown), text::thousands(total));
    let (col, rev) = app.job_sort();
    t.push_str(&format!("· sort {}{} ", col.title().to_lowercase(), if rev { "↓" } else { "↑" }));
    if let Some(s) = app.state_filter() {
        t.push_str(&format!("· state {s} "));
    }
    if app.finished_hidden() {
        t.push_str("· finished hidden ");
    }
    if app.jobs.idle_only {
        t.push_str("· idle GPUs only ");
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
    let (offset, window) = super::scrolled(&list.cursor, (inner.height - 1) as usize);

    let base = theme.style(Slot::Base);
    let dim = theme.style(Slot::Dim);
    let rows: Vec<RowCells> = window
        .iter()
        .enumerate()
        .map(|(i, &row)| {
            let array = app.rows.array_at(row);
            let job = app.rows.row_job(row);
            let cx = match array {
                Some(a) => JobContext { taken_at: app.rows.taken_at(a.snap), gpu_use: None },
                None => app.rows.job_context(row),
            };
            let mut cells: Vec<Cow<str>> = JobColumn::COCKPIT.iter().map(|c| c.cell(job, cx)).collect();
            let id = &mut cells[JobColumn::Id as usize];
            // `▸ 12_[0-99]` folded, `▾ 12_[0-99]` unfolded with its tasks under it as `  └ 12_3`.
            if let Some(a) = array {
                let sign = if list.expanded.contains(&a.key) { '▾' } else { '▸' };
                *id = Cow::Owned(format!("{sign} {id}"));
            } else if app.rows.job_array.get(row as usize).is_some_and(|g| *g != NO_ARRAY) {
                *id = Cow::Owned(format!("  └ {id}"));
            }
            let is_cursor = offset + i == list.cursor.pos;
            // A parent row is marked when every task is (`+`: some are).
            let (marked, some_marked) = match array {
                Some(a) if !list.marked.is_empty() => {
                    let mut tasks = a.rows.iter().map(|r| list.marked.contains(&app.rows.job(*r).job_ref));
                    let first = tasks.next().unwrap_or(false);
                    let mixed = tasks.any(|m| m != first);
                    (first && !mixed, first || mixed)
                }
                Some(_) => (false, false),
                None => {
                    let m = list.marked.contains(&job.job_ref);
                    (m, m)
                }
            };
            let style = if is_cursor {
                theme.style(Slot::Selection)
            } else if marked {
                theme.style(Slot::Marked)
            } else if job.state.is_finished() {
                base.patch(dim)
            } else {
                base
            };
            let mut cell_styles = vec![None; cells.len()];
            if !is_cursor {
                cell_styles[JobColumn::State as usize] = Some(theme.job_state(job.state));
                // Allocated but idle: the GPUs operators hunt for stand out.
                if cx.gpu_use.is_some_and(|u| u.idle) {
                    cell_styles[JobColumn::GpuUse as usize] = Some(theme.style(Slot::Warning));
                }
            }
            RowCells {
                cells,
                style,
                cell_styles,
                gutter: [
                    if is_cursor { '>' } else { ' ' },
                    if marked {
                        '*'
                    } else if some_marked {
                        '+'
                    } else {
                        ' '
                    },
                ],
            }
        })
        .collect();
    let empty = list.cursor.is_empty().then_some(if app.rows.jobs.is_empty() {
        "no jobs"
    } else {
        "no job matches the filters"
    });
    super::draw_table(app, frame, inner, &JobColumn::COCKPIT_SHAPES, &app.rows.job_widths, &rows, empty);
}
