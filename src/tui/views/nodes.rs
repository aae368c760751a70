//! The nodes table: state and flags, GPUs per model, broken GPUs, CPU and memory in use,
//! and the reason a node is out of service with who set it. The columns and their text are
//! `crate::columns::NodeColumn`'s, the same as `flightdeck nodes`.

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::block;
use crate::columns::NodeColumn;
use crate::tui::app::App;
use crate::tui::theme::Slot;
use crate::tui::widgets::table::RowCells;
use crate::tui::widgets::text;

pub fn title(app: &App) -> String {
    let mut t =
        format!(" Nodes {} of {} ", text::thousands(app.nodes.cursor.len()), text::thousands(app.rows.nodes.len()));
    let (col, rev) = app.node_sort();
    t.push_str(&format!("· sort {}{} ", col.title().to_lowercase(), if rev { "↓" } else { "↑" }));
    if app.problem_nodes_only() {
        t.push_str("· problems only ");
    }
    if let Some(c) = app.cluster_filter() {
        t.push_str(&format!("· cluster {c} "));
    }
    if !app.nodes.fuzzy.is_empty() {
        t.push_str(&format!("· /{} ", app.nodes.fuzzy));
    }
    if !app.nodes.marked.is_empty() {
        t.push_str(&format!("· {} marked ", app.nodes.marked.len()));
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
    let list = &app.nodes;
    let (offset, window) = super::scrolled(&list.cursor, (inner.height - 1) as usize);
    let rows: Vec<RowCells> = window
        .iter()
        .enumerate()
        .map(|(i, &row)| {
            let node = app.rows.node(row);
            let bad = node.gpus_unhealthy();
            let mut cells: Vec<Cow<str>> = NodeColumn::COCKPIT.iter().map(|c| c.cell(node)).collect();
            // What telemetry says of the node's GPUs is evidence beside the scheduler's reason.
            let gpu_problems = app.rows.gpu_problems(row);
            if !gpu_problems.is_empty() {
                let reason = &mut cells[NodeColumn::Reason as usize];
                let evidence = gpu_problems.join(" · ");
                *reason = Cow::Owned(if reason.is_empty() { evidence } else { format!("{reason} · {evidence}") });
            }
            let is_cursor = offset + i == list.cursor.pos;
            let marked = list.marked.iter().any(|r| r.cluster == node.cluster && r.name == node.name);
            let style = if is_cursor {
                theme.style(Slot::Selection)
            } else if marked {
                theme.style(Slot::Marked)
            } else {
                theme.style(Slot::Base)
            };
            let mut cell_styles = vec![None; cells.len()];
            if !is_cursor {
                cell_styles[NodeColumn::State as usize] = Some(theme.node_state(node.state));
                if bad > 0 {
                    cell_styles[NodeColumn::Unhealthy as usize] = Some(theme.style(Slot::Error));
                }
                if !gpu_problems.is_empty() {
                    cell_styles[NodeColumn::Reason as usize] = Some(theme.style(Slot::Error));
                }
                let pct = |used: u64, total: u64| (used * 100).checked_div(total).unwrap_or(0);
                let bar = |p: u64| {
                    theme.style(if p >= 90 {
                        Slot::BarHigh
                    } else if p >= 60 {
                        Slot::BarMid
                    } else {
                        Slot::BarLow
                    })
                };
                cell_styles[NodeColumn::Cpu as usize] =
                    Some(bar(pct(u64::from(node.cpus_allocated), u64::from(node.cpus_total))));
                cell_styles[NodeColumn::Memory as usize] =
                    Some(bar(pct(node.memory_allocated_mb, node.memory_total_mb)));
            }
            RowCells {
                cells,
                style,
                cell_styles,
                gutter: [if is_cursor { '>' } else { ' ' }, if marked { '*' } else { ' ' }],
            }
        })
        .collect();
    let empty = list.cursor.is_empty().then_some(if app.rows.nodes.is_empty() {
        "no nodes"
    } else {
        "no node matches the filters"
    });
    super::draw_table(app, frame, inner, &NodeColumn::COCKPIT_SHAPES, &app.rows.node_widths, &rows, empty);
}
