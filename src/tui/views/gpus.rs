//! The GPU map: every GPU slot of every node as one cell, grouped by cluster and node, with
//! the selected cell's holder named below.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{block, put, put_spans};
use crate::model::{GpuReading, JobGpuUse};
use crate::tui::app::App;
use crate::tui::app::row_cache::Cell;
use crate::tui::theme::Slot;
use crate::tui::widgets::table;
use crate::tui::widgets::text;

pub const ALLOCATED: char = '■';
pub const FREE: char = '□';
pub const UNAVAILABLE: char = '×';
/// An allocated GPU whose job telemetry flags idle: the cell operators hunt for.
pub const IDLE_ALLOCATED: char = '▣';

/// Utilisation at or above which a measured cell is drawn busy, and under which low.
const BUSY_PERCENT: f32 = 70.0;
const LOW_PERCENT: f32 = 30.0;

/// A cell's symbol and colour: the scheduler's view, refined by telemetry where it measured
/// the GPU (busy, low, idle-allocated, or a device problem).
pub fn cell_look(cell: Cell, reading: Option<(&GpuReading, Option<&JobGpuUse>)>) -> (char, Slot) {
    let base = match cell {
        Cell::Allocated(_) => (ALLOCATED, Slot::GpuAllocated),
        Cell::Free => (FREE, Slot::GpuFree),
        Cell::Unavailable => (UNAVAILABLE, Slot::GpuUnavailable),
    };
    let Some((reading, used)) = reading else { return base };
    if !reading.sample.problems.is_empty() {
        return (base.0, Slot::Error);
    }
    match (cell, reading.sample.utilisation) {
        (Cell::Allocated(_), _) if used.is_some_and(|u| u.idle) => (IDLE_ALLOCATED, Slot::GpuIdle),
        (Cell::Allocated(_), Some(u)) if u >= BUSY_PERCENT => (ALLOCATED, Slot::GpuBusy),
        (Cell::Allocated(_), Some(u)) if u < LOW_PERCENT => (ALLOCATED, Slot::GpuLow),
        _ => base,
    }
}

/// `util 87% ▂▅▇█ · mem 70.1/79.6 GiB · 650 W · 64 °C · XID 79`: one measured GPU.
pub fn reading_text(reading: &GpuReading, spark_width: usize) -> String {
    let s = &reading.sample;
    let mut parts = Vec::new();
    match s.utilisation {
        Some(u) => {
            let spark = text::sparkline(&reading.history, spark_width);
            parts.push(if spark.is_empty() { format!("util {u:.0}%") } else { format!("util {u:.0}% {spark}") });
        }
        None => parts.push("util ?".to_string()),
    }
    let gib = |mb: u64| mb as f64 / 1024.0;
    match (s.memory_used_mb, s.memory_total_mb) {
        (Some(u), Some(t)) => parts.push(format!("mem {:.1}/{:.1} GiB", gib(u), gib(t))),
        (Some(u), None) => parts.push(format!("mem {:.1} GiB", gib(u))),
        _ => {}
    }
    if let Some(w) = s.power_watts {
        parts.push(format!("{w:.0} W"));
    }
    if let Some(t) = s.temperature_c {
        parts.push(format!("{t:.0} °C"));
    }
    if let Some(x) = s.last_xid.filter(|x| *x != 0) {
        parts.push(format!("XID {x}"));
    }
    if !s.processes.is_empty() {
        parts.push(format!("{} processes", s.processes.len()));
    }
    parts.join(" · ")
}

enum MapLine {
    /// Cluster heading: snapshot index.
    Heading(u16),
    /// Position in the visible list.
    Node(usize),
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let list = &app.gpus;
    let mut title = format!(
        " GPU map · {} · sort {}",
        crate::model::words::counted(list.cursor.len() as u64, "node", "nodes"),
        list.sort.title()
    );
    if list.reverse {
        title.push('↓');
    }
    if list.problems_only {
        title.push_str(" · problems only");
    }
    if let Some(c) = app.cluster_filter() {
        title.push_str(&format!(" · cluster {c}"));
    }
    title.push(' ');
    let b = block(app, title, true);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    if inner.height < 3 {
        return;
    }
    let [map, info] = Layout::vertical([Constraint::Min(1), Constraint::Length(3)]).areas(inner);

    // Headings interleaved with node lines: indices only; only visible lines are formatted.
    let data = &app.rows;
    let mut lines: Vec<MapLine> = Vec::with_capacity(list.cursor.len() + 8);
    let mut last_snap = None;
    let mut cursor_line = 0;
    for (pos, &g) in list.cursor.visible.iter().enumerate() {
        let snap = data.nodes[data.gpu_nodes[g as usize].node as usize].snap;
        if last_snap != Some(snap) {
            lines.push(MapLine::Heading(snap));
            last_snap = Some(snap);
        }
        if pos == list.cursor.pos {
            cursor_line = lines.len();
        }
        lines.push(MapLine::Node(pos));
    }
    let height = map.height as usize;
    list.cursor.height.set(height.saturating_sub(1).max(1));
    let offset = table::scroll(list.cursor.offset.get(), cursor_line, height, lines.len());
    list.cursor.offset.set(offset);

    let name_w = list
        .cursor
        .visible
        .iter()
        .map(|&g| text::width(&data.node(data.gpu_nodes[g as usize].node).name))
        .max()
        .unwrap_or(4)
        .clamp(4, 20);
    let buf = frame.buffer_mut();
    for (i, line) in lines.iter().skip(offset).take(height).enumerate() {
        let y = map.y + i as u16;
        let row = Rect { y, height: 1, ..map };
        match line {
            MapLine::Heading(snap) => {
                let (ci, _) = &data.snaps[*snap as usize];
                let name = &data.fleet.clusters[*ci].name;
                let (mut a, mut f, mut u) = (0, 0, 0);
                for g in data.gpu_nodes.iter().filter(|g| data.nodes[g.node as usize].snap == *snap) {
                    a += g.count(Cell::Allocated(None));
                    f += g.count(Cell::Free);
                    u += g.count(Cell::Unavailable);
                }
                let idle = data.cluster_gpu_use(*snap).map_or(0, |used| used.idle().1);
                let stale = match &data.fleet.clusters[*ci].health {
                    crate::model::Health::Stale { since, .. } => {
                        format!("STALE {} ", text::age((app.now() - *since).num_seconds()))
                    }
                    _ => String::new(),
                };
                put_spans(
                    buf,
                    row,
                    &[
                        Span::styled(format!("▌{name} "), theme.style(Slot::Title)),
                        Span::styled(stale, theme.style(Slot::Error)),
                        Span::styled(format!("{ALLOCATED} {a} allocated  "), theme.style(Slot::GpuAllocated)),
                        Span::styled(format!("{FREE} {f} free  "), theme.style(Slot::GpuFree)),
                        Span::styled(format!("{UNAVAILABLE} {u} unavailable"), theme.style(Slot::GpuUnavailable)),
                        Span::styled(
                            if idle > 0 { format!("  {IDLE_ALLOCATED} {idle} idle-allocated") } else { String::new() },
                            theme.style(Slot::GpuIdle),
                        ),
                    ],
                );
            }
            MapLine::Node(pos) => {
                let g = &data.gpu_nodes[list.cursor.visible[*pos] as usize];
                let node = data.node(g.node);
                let selected = *pos == list.cursor.pos;
                let name_style = if selected { theme.style(Slot::Selection) } else { theme.node_state(node.state) };
                put(buf, row.x, y, 2, if selected { "> " } else { "  " }, name_style);
                put(buf, row.x + 2, y, name_w as u16, &text::fit(&node.name, name_w, false), name_style);
                let x0 = row.x + 3 + name_w as u16;
                let room = (row.x + row.width).saturating_sub(x0) as usize;
                // Two columns per GPU when they fit, else one.
                let step = if g.cells.len() * 2 <= room { 2 } else { 1 };
                let fits = if step == 1 { room } else { room / 2 };
                let shown = if g.cells.len() > fits { fits.saturating_sub(4) } else { g.cells.len() };
                for (k, cell) in g.cells.iter().take(shown).enumerate() {
                    let (sym, slot) = cell_look(*cell, data.gpu_reading(g.node, k));
                    let mut style = theme.style(slot);
                    if selected && k == list.cell {
                        style = style.add_modifier(Modifier::REVERSED);
                    }
                    buf.set_string(x0 + (k * step) as u16, y, sym.to_string(), style);
                }
                if shown < g.cells.len() {
                    let more = format!("+{}", g.cells.len() - shown);
                    put(buf, x0 + (shown * step) as u16, y, 4, &more, theme.style(Slot::Dim));
                } else {
                    // The model split after the cells, when there is room.
                    let after = x0 + (shown * step) as u16 + 1;
                    let w = (row.x + row.width).saturating_sub(after);
                    if w > 6 {
                        let models: Vec<String> =
                            node.gpus.iter().map(|m| format!("{} {}/{}", m.model, m.allocated, m.total)).collect();
                        put(buf, after, y, w, &models.join(", "), theme.style(Slot::Dim));
                    }
                }
            }
        }
    }
    if list.cursor.is_empty() {
        put(buf, map.x, map.y, map.width, "no GPUs to show", theme.style(Slot::Dim));
    }

    // The selected cell.
    let info_lines: Vec<Line> = match app.gpu_selection() {
        None => vec![],
        Some((node, index, cell, job)) => {
            let g = &data.gpu_nodes[list.cursor.current().unwrap_or(0) as usize];
            let n = data.node(g.node);
            let model = g.models.get(index).and_then(|m| n.gpus.get(*m as usize)).map_or("gpu", |s| s.model.as_str());
            let head = format!("{node} · GPU {index} ({model}): ");
            let what = match (cell, job) {
                (Cell::Allocated(_), Some(job)) => format!(
                    "held by {} {} ({}, {})",
                    job.job_ref,
                    job.name,
                    if job.user.is_empty() { "?" } else { &job.user },
                    job.state
                ),
                (Cell::Allocated(_), None) => "allocated (the cluster does not say to which job)".into(),
                (Cell::Free, _) => "free".into(),
                (Cell::Unavailable, _) => {
                    if n.is_unavailable() {
                        format!("unavailable: node is {}", crate::columns::nodes::state_cell(n))
                    } else {
                        "unavailable: unhealthy".into()
                    }
                }
            };
            let measured = match data.gpu_reading(g.node, index) {
                Some((reading, _)) => {
                    let mut t = reading_text(reading, 30);
                    for p in &reading.sample.problems {
                        t.push_str(&format!(" · {p}"));
                    }
                    Line::styled(
                        t,
                        theme.style(if reading.sample.problems.is_empty() { Slot::Base } else { Slot::Error }),
                    )
                }
                None => Line::default(),
            };
            let mut lines = vec![Line::from(vec![Span::styled(head, theme.style(Slot::Title)), Span::raw(what)])];
            if !measured.spans.is_empty() {
                lines.push(measured);
            }
            lines.push(Line::styled(
                n.reason.as_deref().map(|r| format!("reason: {r}")).unwrap_or_default(),
                theme.style(Slot::Dim),
            ));
            lines
        }
    };
    let info_lines: Vec<Line> =
        info_lines.into_iter().map(|l| super::overview::cut_line(l, info.width as usize)).collect();
    frame.render_widget(Paragraph::new(info_lines), info);
}
