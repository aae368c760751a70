//! Drawing. [`render`] lays out the header, the current screen, the footer (or the prompt
//! being typed) and the overlays (help, dialog, toasts). Views only read the `App`; tables
//! format only the rows that are on screen.
//!
//! One file per screen plus header, footer, toasts, dialog; render only the visible
//! rows. Backend text is cleaned where it is drawn: `put` (cells), `block` (every title),
//! `overview::cut_line` (the overview's, detail's and GPU map's lines), through `clean_line`.
//! Telemetry is read where drawn, from the cluster's `GpuUse` through `RowCache` (`node_readings`,
//! `gpu_reading`, `gpu_problems`, `is_problem`): `gpus` colours measured cells (`cell_look`: busy,
//! low, `▣` idle-allocated, a device problem) and names the selected GPU's figures (`reading_text`,
//! a sparkline from `widgets::text::sparkline`), `detail` lists the job's GPUs with their 15-minute
//! history and a waiting job's `size` (`fleet::why::size_line`), `overview`'s "waiting" line groups
//! scheduler messages in words (`fleet::why::waiting_words`), `nodes` puts GPU evidence in the
//! reason cell.

pub mod detail;
pub mod dialog;
pub mod footer;
pub mod gpus;
pub mod header;
pub mod help;
pub mod history;
pub mod jobs;
pub mod nodes;
pub mod overview;
pub mod submit;
pub mod toasts;
pub mod usage;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use super::app::lists::Cursor;
use super::app::{App, Screen};
use super::theme::Slot;
use super::widgets::{table, text};

/// Smallest terminal the cockpit draws in; below it, one line says so.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 8;

/// The rows of `list` a table of `height` rows shows, scrolled as little as keeps the cursor
/// in view; the offset and the page size are kept on the cursor for the keys that page.
pub fn scrolled(list: &Cursor, height: usize) -> (usize, &[u32]) {
    let (offset, window) = table::window(&list.visible, list.pos, list.offset.get(), height);
    list.offset.set(offset);
    list.height.set(height);
    (offset, window)
}

/// A bordered screen with `lines` above its table: the block, then the lines in at most half
/// the room (the last one shown saying how many more did not fit); the table's area, or `None`
/// when no header and row fit.
pub fn lines_above_table(
    app: &App,
    frame: &mut Frame,
    area: Rect,
    title: String,
    lines: &[(String, Slot)],
) -> Option<Rect> {
    let theme = app.theme();
    let b = block(app, title, true);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    if inner.height < 2 || inner.width <= table::GUTTER {
        return None;
    }
    let room = usize::from(inner.height.saturating_sub(2) / 2);
    let shown = lines.len().min(room);
    for (i, (line, slot)) in lines.iter().take(shown).enumerate() {
        let more = lines.len() - shown;
        let line = if i + 1 == shown && more > 0 { format!("{line} (and {more} more lines)") } else { line.clone() };
        put(frame.buffer_mut(), inner.x + 1, inner.y + i as u16, inner.width - 1, &line, theme.style(*slot));
    }
    let table_area = Rect { y: inner.y + shown as u16, height: inner.height - shown as u16, ..inner };
    (table_area.height >= 2).then_some(table_area)
}

/// Draw the whole screen.
pub fn render(app: &App, frame: &mut Frame) {
    let area = frame.area();
    if area.is_empty() {
        return;
    }
    let theme = app.theme();
    frame.buffer_mut().set_style(area, theme.style(Slot::Base));
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!("terminal too small: {}×{} (need {MIN_WIDTH}×{MIN_HEIGHT})", area.width, area.height);
        put(frame.buffer_mut(), area.x, area.y, area.width, &msg, theme.style(Slot::Warning));
        return;
    }
    let [top, body, bottom] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)]).areas(area);
    header::render(app, frame, top);
    match app.screen() {
        Screen::Overview => overview::render(app, frame, body),
        Screen::Jobs => jobs::render(app, frame, body),
        Screen::Nodes => nodes::render(app, frame, body),
        Screen::Gpus => gpus::render(app, frame, body),
        Screen::Usage => usage::render(app, frame, body),
        Screen::History => history::render(app, frame, body),
        Screen::Detail => detail::render(app, frame, body),
        Screen::Submit => submit::render(app, frame, body),
    }
    footer::render(app, frame, bottom);
    if app.help_open() {
        help::render(app, frame, body);
    }
    if app.dialog().is_some() {
        dialog::render(app, frame, body);
    }
    toasts::render(app, frame, body);
}

/// Show the text cursor at `pos` as a reversed cell. The cockpit draws its own cursor and
/// keeps the terminal's hidden, so a frame is fully described by its cells (and an unchanged
/// frame is not sent at all).
pub fn text_cursor(frame: &mut Frame, pos: ratatui::layout::Position) {
    let area = frame.area();
    if area.contains(pos) {
        let cell = &mut frame.buffer_mut()[pos];
        cell.set_style(cell.style().add_modifier(ratatui::style::Modifier::REVERSED));
    }
}

/// Write `s` (cleaned, cut with `…` to `width`) at `x, y`.
pub fn put(buf: &mut Buffer, x: u16, y: u16, width: u16, s: &str, style: Style) -> u16 {
    let t = text::truncate(s, width as usize);
    let (end, _) = buf.set_stringn(x, y, &t, width as usize, style);
    end - x
}

/// Spans laid out on one line, cut with `…` when they do not fit.
pub fn put_spans(buf: &mut Buffer, area: Rect, spans: &[Span<'_>]) {
    let mut x = area.x;
    let end = area.x + area.width;
    for span in spans {
        if x >= end {
            break;
        }
        let w = put(buf, x, area.y, end - x, &span.content, span.style);
        x += w;
    }
}

/// A bordered block with a title, in the theme's colours. Titles name clusters (a hub's
/// names among them), jobs and filters: cleaned here, where every title is drawn.
pub fn block<'a>(app: &App, title: impl Into<Line<'a>>, focused: bool) -> Block<'a> {
    let theme = app.theme();
    Block::bordered()
        .border_style(theme.style(if focused { Slot::BorderFocused } else { Slot::Border }))
        .title_style(theme.style(Slot::Title))
        .title(clean_line(title.into()))
}

/// `line` with every span's text through [`text::clean`]; spans with nothing to clean are
/// kept as they are.
pub fn clean_line(line: Line<'_>) -> Line<'_> {
    let spans: Vec<Span<'_>> = line
        .spans
        .into_iter()
        .map(|s| {
            if s.content.chars().any(crate::safe_text::is_unsafe) {
                Span::styled(text::clean(&s.content).into_owned(), s.style)
            } else {
                s
            }
        })
        .collect();
    Line { spans, ..line }
}

/// A centered rectangle of at most `w`×`h` inside `area`.
/// Fit `columns` to `area` and draw `rows` with their header; `empty` is shown when there is
/// no row. `widths` come from every row of the table, not just the ones on screen, so that
/// scrolling or a refresh that changes one row does not move every column (and redraw the
/// whole table).
pub fn draw_table(
    app: &App,
    frame: &mut Frame,
    area: Rect,
    columns: &[table::Column],
    widths: &[usize],
    rows: &[table::RowCells],
    empty: Option<&str>,
) {
    let theme = app.theme();
    let fitted = table::fit(columns, widths, area.width.saturating_sub(table::GUTTER));
    table::render(frame.buffer_mut(), area, columns, &fitted, theme.style(Slot::Header), rows);
    if let Some(msg) = empty {
        let gutter = table::GUTTER;
        put(frame.buffer_mut(), area.x + gutter, area.y + 1, area.width - gutter, msg, theme.style(Slot::Dim));
    }
}

pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}
