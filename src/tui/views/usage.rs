//! The usage screen: who holds the GPUs, one row per user, as `flightdeck usage` prints
//! them: jobs and GPUs held now, how many of those read idle, $/h where every holder has a
//! price, GPU-hours over the window (`>=` where a source could not say all), idle GPU-hours
//! in it (at least; `?` where telemetry read none), the dollars the window's priced jobs
//! cost in it (`>=` where some had no price, `?` where none had; the column only where some
//! row has a price), and the models.
//! Above the table: the read in flight and what the window could not say. Below it, where
//! any queue has a GPU quota (Kueue ClusterQueues, Volcano Queues): the CLI's queue quota
//! table, the same rows (`model::usage::QueueQuotaRow`) from the latest refresh.

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::layout::Rect;

use crate::columns::Shape;
use crate::tui::app::App;
use crate::tui::app::history::age_text;
use crate::tui::theme::Slot;
use crate::tui::widgets::table::RowCells;
use crate::tui::widgets::text;

/// The columns of [`crate::model::usage::header`] by user.
pub const COLUMNS: [Shape; 9] = [
    Shape::new("USER", 6, 24, 0).content_first(),
    Shape::new("JOBS", 4, 7, 2).right(),
    Shape::new("GPUS", 4, 7, 0).right(),
    Shape::new("IDLE", 4, 7, 1).right(),
    Shape::new("$/H", 4, 10, 4).right(),
    Shape::new("GPU-H", 5, 12, 1).right(),
    Shape::new("IDLE-H", 6, 12, 2).right(),
    Shape::new("SPENT", 5, 12, 4).right().optional(),
    Shape::new("MODELS", 6, 40, 3),
];

/// The columns of [`crate::model::usage::QUEUE_QUOTA_HEADER`]: the queue and its GPUs
/// first, the cohort and workload counts dropped first.
pub const QUOTA_COLUMNS: [Shape; 11] = [
    Shape::new("CLUSTER", 4, 16, 1),
    Shape::new("QUEUE", 5, 24, 0).content_first(),
    Shape::new("COHORT", 6, 16, 4),
    Shape::new("FLAVOR", 6, 16, 2),
    Shape::new("RESOURCE", 8, 20, 5),
    Shape::new("NOMINAL", 7, 9, 0).right(),
    Shape::new("BORROW-LIMIT", 12, 12, 3).right(),
    Shape::new("USED", 4, 9, 0).right(),
    Shape::new("BORROWED", 8, 9, 2).right(),
    Shape::new("PENDING", 7, 8, 4).right(),
    Shape::new("ADMITTED", 8, 9, 4).right(),
];

/// Lines the usage table keeps however many queues there are: its header and three rows.
const USAGE_KEEPS: u16 = 4;

/// The title line: the window, the order, the counts, the filter.
pub fn title(app: &App) -> String {
    let u = app.usage();
    let mut t = format!(" Usage · GPU-hours of the last {} ", age_text(u.age()));
    t.push_str(&format!("· by {}{} ", u.sort.title(), if u.reverse { " (least first)" } else { "" }));
    let (shown, total) = (u.cursor.len(), u.rows.len());
    let users = if total == 1 { "user" } else { "users" };
    if shown == total {
        t.push_str(&format!("· {} {users} ", text::thousands(total)));
    } else {
        t.push_str(&format!("· {} of {} {users} ", text::thousands(shown), text::thousands(total)));
    }
    if !u.filter.is_empty() {
        t.push_str(&format!("· /{} ", u.filter));
    }
    text::clean(&t).into_owned()
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let u = app.usage();
    let lines: Vec<(String, Slot)> =
        u.info_lines().into_iter().map(|(line, busy)| (line, if busy { Slot::Warning } else { Slot::Dim })).collect();
    let Some(mut table_area) = super::lines_above_table(app, frame, area, title(app), &lines) else { return };
    // The quota table under the usage rows: a blank line, its title, its header and rows,
    // as many as fit once the usage table has its share.
    let quota_lines = u16::try_from(u.quota_cells.len()).unwrap_or(u16::MAX).saturating_add(3);
    let quota_height = quota_lines.min(table_area.height.saturating_sub(USAGE_KEEPS));
    if !u.quota_cells.is_empty() && quota_height >= 4 {
        table_area.height -= quota_height;
        let below = Rect { y: table_area.y + table_area.height, height: quota_height, ..table_area };
        render_quota(app, frame, below);
    }
    let list = &u.cursor;
    let height = (table_area.height - 1) as usize;
    let (offset, window) = super::scrolled(list, height);
    let base = theme.style(Slot::Base);
    let rows: Vec<RowCells> = window
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let is_cursor = offset + i == list.pos;
            let row = &u.cells[at as usize];
            RowCells {
                cells: row.iter().map(|c| Cow::Borrowed(c.as_str())).collect(),
                style: if is_cursor { theme.style(Slot::Selection) } else { base },
                cell_styles: vec![None; row.len()],
                gutter: [if is_cursor { '>' } else { ' ' }, ' '],
            }
        })
        .collect();
    let why =
        if u.rows.is_empty() { "no job holds a GPU, and none did in the window" } else { "no user matches the filter" };
    let empty = list.is_empty().then_some(why);
    super::draw_table(app, frame, table_area, &COLUMNS, &u.widths, &rows, empty);
}

/// The queue quota table in `area`: a blank line, its title, then the table (rows past the
/// area's bottom are left out, and the title says how many there are).
fn render_quota(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let u = app.usage();
    let shown = usize::from(area.height.saturating_sub(3));
    let mut heading = format!("{}:", crate::model::usage::QUEUE_QUOTA_TITLE);
    if shown < u.quota_cells.len() {
        heading = format!("{heading} {} of {} rows", shown, u.quota_cells.len());
    }
    super::put(
        frame.buffer_mut(),
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(1),
        &heading,
        theme.style(Slot::Title),
    );
    let base = theme.style(Slot::Base);
    let rows: Vec<RowCells> = u
        .quota_cells
        .iter()
        .take(shown)
        .map(|row| RowCells {
            cells: row.iter().map(|c| Cow::Borrowed(c.as_str())).collect(),
            style: base,
            cell_styles: vec![None; row.len()],
            gutter: [' ', ' '],
        })
        .collect();
    let table = Rect { y: area.y + 2, height: area.height - 2, ..area };
    super::draw_table(app, frame, table, &QUOTA_COLUMNS, &u.quota_widths, &rows, None);
}
