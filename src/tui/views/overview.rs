//! The home screen: first the fleet line per canonical GPU model over every cluster (the
//! sum no single cluster's tool can show); then per cluster and GPU model, total / allocated / idle / unavailable as
//! bars; the queue (running, pending by reason); node health; and a banner for every stale
//! cluster with its age and error.

use crate::model::words::counted;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::block;
use crate::model::gpu_totals::GpuTotals;
use crate::model::{Health, JobState};
use crate::tui::app::App;
use crate::tui::app::row_cache::{ClusterSummary, ModelTotals};
use crate::tui::theme::{Slot, Theme};
use crate::tui::widgets::bar::{self, Segment};
use crate::tui::widgets::text;

const ALLOC: char = '█';

const UNAVAILABLE: char = '▒';
const IDLE: char = '░';

fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%H:%M:%S").to_string()
}

/// The two banner lines of a stale cluster (what and since when; the error), or `None`.
pub fn stale_banner(c: &ClusterSummary, now: chrono::DateTime<chrono::Utc>) -> Option<[String; 2]> {
    match &c.health {
        Health::Stale { since, error, last_ok } => {
            let data = match last_ok {
                Some(t) => format!("showing data from {}", time(*t)),
                None => "no data yet".to_string(),
            };
            Some([
                format!(
                    "⚠ {} STALE for {} — failing since {}, {data}",
                    c.name,
                    text::age((now - *since).num_seconds()),
                    time(*since)
                ),
                format!("  {}", error.lines().next().unwrap_or("")),
            ])
        }
        _ => None,
    }
}

/// The fleet's GPUs per model: `h100  26 total · 8 allocated · 10 idle · 8 unavailable
/// (fd22, lab, k8s-prod)`, the same text as `flightdeck status`.
fn fleet_lines<'a>(totals: &[GpuTotals], clusters: usize, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = vec![Line::from(vec![
        Span::styled("▌fleet ", theme.style(Slot::Title)),
        Span::styled(counted(clusters as u64, "cluster", "clusters"), theme.style(Slot::Dim)),
    ])];
    if totals.is_empty() {
        lines.push(Line::styled("  no GPUs", theme.style(Slot::Dim)));
    }
    let label_w = totals.iter().map(|t| text::width(&t.label())).max().unwrap_or(3).clamp(3, 20);
    for t in totals {
        lines.push(Line::from(vec![
            Span::raw(format!("  {}  ", text::fit(&text::clean(&t.label()), label_w, false))),
            Span::raw(t.counts_text()),
            Span::styled(format!("  ({})", text::clean(&t.clusters.join(", "))), theme.style(Slot::Dim)),
        ]));
    }
    lines
}

fn cluster_lines<'a>(
    c: &ClusterSummary,
    theme: &Theme,
    width: u16,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    let status = match &c.health {
        Health::Connecting => Span::styled("connecting…", theme.style(Slot::Dim)),
        // No clock here: a fresh cluster's line changes only when its data does.
        Health::Fresh { .. } => Span::styled("fresh", theme.style(Slot::Dim)),
        Health::Stale { since, .. } => {
            Span::styled(format!("STALE {} ago", text::age((now - *since).num_seconds())), theme.style(Slot::Error))
        }
    };
    let mut head = vec![
        Span::styled(format!("▌{} ", c.name), theme.style(Slot::Title)),
        Span::styled(format!("{} ", c.kind), theme.style(Slot::Dim)),
    ];
    if let Some(r) = &c.release {
        head.push(Span::styled(format!("{r} "), theme.style(Slot::Dim)));
    }
    head.push(Span::raw("· "));
    head.push(status);
    if let Some(cost) = c.cost_per_hour {
        head.push(Span::raw(format!(" · ${}/h", crate::columns::format::cost(cost))));
    }
    lines.push(Line::from(head));
    for note in &c.notes {
        lines.push(Line::styled(format!("  note: {}", text::clean(note)), theme.style(Slot::Warning)));
    }
    if !c.has_snapshot {
        return lines;
    }

    // GPU bars, one per model.
    let label_w = c.models.iter().map(|m| text::width(&m.model)).max().unwrap_or(3).clamp(3, 14);
    let counts_w = 40usize;
    let bar_w = (width as usize).saturating_sub(label_w + counts_w + 6).clamp(8, 60);
    if c.models.is_empty() {
        // The same words for every kind: where the backend knows why (this machine's GPU
        // sources), its note above says so.
        lines.push(Line::styled("  no GPUs", theme.style(Slot::Dim)));
    }
    // Several models: the cluster's total first.
    let total = (c.models.len() > 1).then(|| ModelTotals {
        model: "all".into(),
        total: c.models.iter().map(|m| m.total).sum(),
        allocated: c.models.iter().map(|m| m.allocated).sum(),
        unavailable: c.models.iter().map(|m| m.unavailable).sum(),
    });
    for m in total.iter().chain(&c.models) {
        let mut spans = vec![Span::raw(format!("  {} [", text::fit(&m.model, label_w, false)))];
        spans.extend(bar::bar(
            &[
                Segment { value: m.allocated, symbol: ALLOC, style: theme.style(Slot::GpuAllocated) },
                Segment { value: m.unavailable, symbol: UNAVAILABLE, style: theme.style(Slot::GpuUnavailable) },
                Segment { value: m.idle(), symbol: IDLE, style: theme.style(Slot::GpuFree) },
            ],
            bar_w,
        ));
        spans.push(Span::raw(format!(
            "] {}/{} alloc · {} idle · {} unavail",
            m.allocated,
            m.total,
            m.idle(),
            m.unavailable
        )));
        lines.push(Line::from(spans));
    }

    // The queue.
    let count = |s: JobState| c.jobs_by_state.get(&s).copied().unwrap_or(0);
    let mut q = vec![
        Span::raw("  jobs: "),
        Span::styled(format!("{} running", count(JobState::Running)), theme.job_state(JobState::Running)),
        Span::raw(" · "),
        Span::styled(format!("{} pending", count(JobState::Pending)), theme.job_state(JobState::Pending)),
    ];
    if count(JobState::Held) > 0 {
        q.push(Span::raw(" · "));
        q.push(Span::styled(format!("{} held", count(JobState::Held)), theme.job_state(JobState::Held)));
    }
    let others: u32 = c
        .jobs_by_state
        .iter()
        .filter(|(s, _)| !matches!(s, JobState::Running | JobState::Pending | JobState::Held))
        .map(|(_, n)| n)
        .sum();
    if others > 0 {
        q.push(Span::raw(format!(" · {others} other")));
    }
    lines.push(Line::from(q));
    if !c.pending_by_reason.is_empty() {
        let reasons: Vec<String> = c.pending_by_reason.iter().map(|(r, n)| format!("{r} {n}")).collect();
        lines.push(Line::from(vec![
            Span::raw("  waiting: "),
            Span::styled(text::clean(&reasons.join(", ")).into_owned(), theme.style(Slot::Dim)),
        ]));
    }

    for line in &c.quota_lines {
        lines.push(Line::styled(format!("  {}", text::clean(line)), theme.style(Slot::Dim)));
    }

    // Node health.
    let mut n = vec![Span::raw(format!("  nodes {}: ", c.nodes_total))];
    let parts: Vec<(String, Style)> =
        c.nodes_by_state.iter().map(|(s, k)| (format!("{k} {s}"), theme.node_state(*s))).collect();
    for (i, (t, st)) in parts.into_iter().enumerate() {
        if i > 0 {
            n.push(Span::raw(" · "));
        }
        n.push(Span::styled(t, st));
    }
    if c.problem_nodes > 0 {
        n.push(Span::styled(format!(" — {} need attention", c.problem_nodes), theme.style(Slot::Warning)));
    }
    if c.unhealthy_gpus > 0 {
        n.push(Span::styled(
            format!(" · {}", counted(c.unhealthy_gpus, "unhealthy GPU", "unhealthy GPUs")),
            theme.style(Slot::Error),
        ));
    }
    lines.push(Line::from(n));
    if let Some(t) = &c.telemetry {
        lines.push(telemetry_line(t, theme));
    }
    lines
}

/// `  telemetry (nvidia-smi via srun): 16 GPUs read, mean 41% · 12 GPUs idle-allocated: 3 jobs`.
fn telemetry_line(t: &crate::tui::app::row_cache::TelemetryLine, theme: &crate::tui::theme::Theme) -> Line<'static> {
    let mut spans = vec![Span::raw(text::clean(&format!("  telemetry ({}): ", t.source)).into_owned())];
    if t.gpus_read > 0 || t.error.is_none() {
        let mean = t.mean_utilisation.map(|m| format!(", mean {m:.0}%")).unwrap_or_default();
        spans.push(Span::raw(format!("{} read{mean}", counted(t.gpus_read as u64, "GPU", "GPUs"))));
    }
    if t.idle_jobs > 0 {
        let (gpus, jobs) = (counted(t.idle_gpus, "GPU", "GPUs"), counted(t.idle_jobs as u64, "job", "jobs"));
        spans.push(Span::styled(format!(" · {gpus} idle-allocated: {jobs}"), theme.style(Slot::Warning)));
    }
    if let Some(error) = &t.error {
        spans.push(Span::styled(text::clean(&format!(" — failed: {error}")).into_owned(), theme.style(Slot::Error)));
    }
    Line::from(spans)
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let title = match app.cluster_filter() {
        Some(c) => format!(" Overview · cluster {c} "),
        None => " Overview ".to_string(),
    };
    let b = block(app, title, true);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    let now = app.now();
    let shown: Vec<&ClusterSummary> =
        app.rows.summaries.iter().filter(|c| app.cluster_filter().is_none_or(|f| f == c.name)).collect();
    let mut lines: Vec<Line> = Vec::new();
    // Two clusters or more, none singled out: the fleet first.
    if app.cluster_filter().is_none() && app.rows.summaries.len() > 1 {
        lines.extend(fleet_lines(&app.rows.fleet_gpus, app.rows.summaries.len(), theme));
        lines.push(Line::raw(""));
    }
    let before_banners = lines.len();
    for c in &shown {
        if let Some(banner) = stale_banner(c, now) {
            for line in banner {
                lines.push(Line::styled(text::clean(&line).into_owned(), theme.style(Slot::StaleBanner)));
            }
        }
    }
    if lines.len() > before_banners {
        lines.push(Line::raw(""));
    }
    if shown.is_empty() {
        lines.push(Line::styled("no clusters configured", theme.style(Slot::Dim)));
        // No cluster at all (not one filtered away): what was looked for, how to add one.
        if app.rows.summaries.is_empty() {
            for help in &app.no_clusters {
                for line in wrap(&text::clean(help), inner.width as usize) {
                    lines.push(Line::styled(line, theme.style(Slot::Dim)));
                }
            }
        }
    }
    for (i, c) in shown.iter().enumerate() {
        if i > 0 {
            lines.push(Line::raw(""));
        }
        lines.extend(cluster_lines(c, theme, inner.width, now));
    }
    let max_scroll = lines.len().saturating_sub(inner.height as usize);
    let scroll = app.overview_scroll.min(max_scroll);
    // Lines are cut, never wrapped: each is cut with `…` to the width.
    let cut: Vec<Line> =
        lines.into_iter().skip(scroll).take(inner.height as usize).map(|l| cut_line(l, inner.width as usize)).collect();
    frame.render_widget(Paragraph::new(cut), inner);
}

/// `text` in lines of at most `width` columns, broken at spaces; a line's leading spaces
/// are kept on each of its pieces (an indented item stays indented). A word longer than the
/// width is left for [`cut_line`].
fn wrap(text: &str, width: usize) -> Vec<String> {
    let indent: String = text.chars().take_while(|c| *c == ' ').collect();
    let mut out: Vec<String> = Vec::new();
    let mut line = indent.clone();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let fits = text::width(&line) + usize::from(line.len() > indent.len()) + text::width(word) <= width;
        if !fits && line.len() > indent.len() {
            out.push(std::mem::replace(&mut line, indent.clone()));
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.len() > indent.len() || out.is_empty() {
        out.push(line);
    }
    out
}

/// A line cleaned ([`super::clean_line`]) and cut to `width` columns, ending in `…` when cut.
pub fn cut_line(line: Line<'_>, width: usize) -> Line<'_> {
    // The overview's, the detail's and the GPU map's lines pass here on their way to the
    // screen: cluster names, kinds and releases are backend (or hub) text, so they are
    // cleaned here, once, before they are measured.
    let line = super::clean_line(line);
    let total: usize = line.spans.iter().map(|s| text::width(&s.content)).sum();
    if total <= width {
        return line;
    }
    let mut left = width;
    let mut spans = Vec::new();
    for s in line.spans {
        if left == 0 {
            break;
        }
        let w = text::width(&s.content);
        if w < left {
            left -= w;
            spans.push(s);
        } else {
            let t = text::truncate(&s.content, left).into_owned();
            spans.push(Span::styled(t, s.style));
            left = 0;
        }
    }
    Line::from(spans).style(line.style)
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn help_text_wraps_at_spaces_and_keeps_its_indent() {
        assert_eq!(wrap("  nvidia-smi not found on PATH", 16), ["  nvidia-smi not", "  found on PATH"]);
        assert_eq!(wrap("short", 80), ["short"]);
        assert_eq!(wrap("a verylongwordhere b", 6), ["a", "verylongwordhere", "b"]);
        assert_eq!(wrap("", 10), [""]);
    }
}
