//! One job: every field, then the tail of its stdout or stderr (followed while `follow` is
//! on).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{block, put};
use crate::columns::jobs::elapsed_secs;
use crate::model::{GpuReading, Job, JobState, Workload, slurm_reasons};
use crate::tui::app::log::SKIP_MARK;
use crate::tui::app::{App, Detail};
use crate::tui::theme::Slot;
use crate::tui::widgets::text;

fn when(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map_or_else(|| "-".into(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string())
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "-".into())
}

/// The canonical model with the backend's own name beside it where they differ:
/// `h100 (NVIDIA-H100-80GB-HBM3)`.
pub fn gpu_model_text(job: &Job) -> String {
    match (&job.gpu_model, &job.gpu_product) {
        (Some(m), Some(p)) if !p.eq_ignore_ascii_case(m) => format!("{m} ({p})"),
        (Some(m), _) => m.clone(),
        (None, Some(p)) => p.clone(),
        (None, None) => "-".into(),
    }
}

/// The backend's reason, and what it means where it is a Slurm code (`Priority: jobs of
/// higher priority are ahead of it in the partition`).
fn reason_text(job: &Job) -> String {
    match &job.reason {
        None => "-".into(),
        Some(code) => match slurm_reasons::explain(code) {
            Some(explained) => format!("{code}: {}", explained.words),
            None => code.clone(),
        },
    }
}

/// `PyTorchJob (kubeflow.org/v1)`; just the kind when its API version is not known.
fn workload_kind_text(w: &Workload) -> String {
    if w.api_version.is_empty() { w.kind.clone() } else { format!("{} ({})", w.kind, w.api_version) }
}

/// `Master 1×8 GPU · Worker 3×8 GPU (2 ready)`; a group without GPUs is `head 1`.
fn workload_groups_text(w: &Workload) -> String {
    if w.groups.is_empty() {
        return "-".into();
    }
    let groups: Vec<String> = w
        .groups
        .iter()
        .map(|g| {
            let mut s = if g.gpus_per_replica > 0 {
                format!("{} {}×{} GPU", g.name, g.replicas, g.gpus_per_replica)
            } else {
                format!("{} {}", g.name, g.replicas)
            };
            if let Some(r) = g.ready {
                s.push_str(&format!(" ({r} ready)"));
            }
            s
        })
        .collect();
    groups.join(" · ")
}

/// What cancel and hold/release do to the object: `cancel deletes the PyTorchJob (background
/// propagation) · hold/release: spec.runPolicy.suspend`.
fn workload_actions_text(w: &Workload) -> String {
    let article = if w.kind.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    let cancel = if w.cancel {
        format!("cancel deletes the {} (background propagation)", w.kind)
    } else {
        format!("shown only: use kubectl for {article} {}", w.kind)
    };
    match (&w.suspend, w.cancel) {
        (Some(how), _) => format!("{cancel} · hold/release: {how}"),
        (None, true) => format!("{cancel} · cannot be held"),
        // Nothing is managed here: hold is no more offered than cancel.
        (None, false) => cancel,
    }
}

/// Rows of the field grid laid out across the whole width, below the columns: their values
/// are long.
const WIDE_FIELDS: [&str; 4] = ["size", "groups", "actions", "turn"];

/// What a piece of a pod line is, for its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PodCell {
    Name,
    Role,
    State(JobState),
    Node,
    Gpus,
    Reason,
    More,
    Gap,
}

/// The widest a pod line's name, role and node columns grow.
const POD_NAME_MAX: usize = 40;
const POD_ROLE_MAX: usize = 16;
const POD_NODE_MAX: usize = 24;

/// The workload's pods, one line each in aligned columns (name, role, state, node, GPUs,
/// reason), cut to `width` columns; at most `max_lines` lines, the last of them `… N more
/// pods` when they do not all fit.
fn pod_cells(w: &Workload, width: usize, max_lines: usize) -> Vec<Vec<(String, PodCell)>> {
    if max_lines == 0 || w.pods.is_empty() {
        return Vec::new();
    }
    let more = w.pods.len() > max_lines;
    let shown = &w.pods[..if more { max_lines - 1 } else { w.pods.len() }];
    let gpus = |n: u32| if n == 0 { "-".to_string() } else { format!("{n} GPU") };
    let col =
        |f: &dyn Fn(&crate::model::WorkloadPod) -> usize, max: usize| shown.iter().map(f).max().unwrap_or(0).min(max);
    let name_w = col(&|p| text::width(&text::clean(&p.name)), POD_NAME_MAX);
    let role_w = col(&|p| p.role.as_deref().map_or(1, |r| text::width(&text::clean(r))), POD_ROLE_MAX);
    let state_w = col(&|p| p.state.as_str().len(), usize::MAX);
    let node_w = col(&|p| p.node.as_deref().map_or(1, |n| text::width(&text::clean(n))), POD_NODE_MAX);
    let gpus_w = col(&|p| gpus(p.gpus).len(), usize::MAX);
    let mut lines: Vec<Vec<(String, PodCell)>> = shown
        .iter()
        .map(|p| {
            let mut cells = vec![
                (text::fit(&p.name, name_w, false), PodCell::Name),
                (text::fit(p.role.as_deref().unwrap_or("-"), role_w, false), PodCell::Role),
                (text::fit(p.state.as_str(), state_w, false), PodCell::State(p.state)),
                (text::fit(p.node.as_deref().unwrap_or("-"), node_w, false), PodCell::Node),
                (text::fit(&gpus(p.gpus), gpus_w, true), PodCell::Gpus),
            ];
            if let Some(r) = p.reason.as_deref().filter(|r| !r.is_empty()) {
                cells.push((text::clean(r).into_owned(), PodCell::Reason));
            }
            // Two spaces between columns, then cut to the width (the reason first).
            let mut out = Vec::with_capacity(cells.len() * 2);
            let mut left = width;
            for (i, (t, kind)) in cells.into_iter().enumerate() {
                if i > 0 {
                    if left <= 2 {
                        break;
                    }
                    out.push(("  ".to_string(), PodCell::Gap));
                    left -= 2;
                }
                let t = text::truncate(&t, left).into_owned();
                left -= text::width(&t);
                out.push((t, kind));
                if left == 0 {
                    break;
                }
            }
            out
        })
        .collect();
    if more {
        let n = w.pods.len() - shown.len();
        lines.push(vec![(
            text::truncate(&format!("… {}", crate::model::words::counted(n as u64, "more pod", "more pods")), width)
                .into_owned(),
            PodCell::More,
        )]);
    }
    lines
}

/// [`pod_cells`] as plain text, one string a line.
#[cfg(test)]
fn pod_lines(w: &Workload, width: usize, max_lines: usize) -> Vec<String> {
    pod_cells(w, width, max_lines).into_iter().map(|cells| cells.into_iter().map(|(t, _)| t).collect()).collect()
}

/// Every field of the job, as label/value pairs.
pub fn fields(job: &Job, taken_at: Option<chrono::DateTime<chrono::Utc>>) -> Vec<(&'static str, String)> {
    let allocs: Vec<String> = job
        .gpu_allocations
        .iter()
        .map(|a| {
            let mut s = format!("{}:{}×{}", a.node, a.model.as_deref().unwrap_or("gpu"), a.count);
            if !a.indices.is_empty() {
                let idx: Vec<String> = a.indices.iter().map(u32::to_string).collect();
                s.push_str(&format!("[{}]", idx.join(",")));
            }
            s
        })
        .collect();
    let mut fields = vec![
        ("job", job.job_ref.to_string()),
        ("name", job.name.clone()),
        ("user", job.user.clone()),
        ("state", format!("{} ({})", job.state, job.native_state)),
        ("reason", reason_text(job)),
        ("partition", job.partition.clone()),
        ("GPUs", format!("{} requested, {} allocated", job.gpus_requested, job.gpus_allocated)),
        ("GPU model", gpu_model_text(job)),
        ("GPU slots", if allocs.is_empty() { "-".into() } else { allocs.join(" ") }),
        ("nodes", if job.nodes.is_empty() { format!("({})", job.node_count) } else { job.nodes.join(",") }),
        ("CPUs", job.cpus.to_string()),
        ("memory", job.memory_mb.map_or_else(|| "-".into(), |m| format!("{m} MiB"))),
        ("submitted", when(job.submit_time)),
        ("started", when(job.start_time)),
        ("elapsed", elapsed_secs(job, taken_at).map_or_else(|| "-".into(), crate::columns::format::elapsed)),
        ("time limit", job.time_limit_secs.map_or_else(|| "unlimited".into(), text::duration)),
        // Until a job has ended, its end time is the one it must end by (start + limit).
        (if job.state.is_finished() { "ended" } else { "ends by" }, when(job.end_time)),
        ("exit", job.exit.map_or_else(|| "-".into(), |e| e.to_string())),
        ("stdout", job.stdout.as_ref().map_or_else(|| "-".into(), ToString::to_string)),
        ("stderr", job.stderr.as_ref().map_or_else(|| "-".into(), ToString::to_string)),
        ("workdir", opt(&job.workdir)),
        ("account", opt(&job.account)),
        ("priority", job.priority.map_or_else(|| "-".into(), |p| p.to_string())),
        (
            "array",
            job.array.as_ref().map_or_else(
                || "-".into(),
                |a| {
                    let mut s = a.array_id.clone();
                    if let Some(t) = a.task_id {
                        s.push_str(&format!(" task {t}"));
                    }
                    if let Some(p) = &a.pending_tasks {
                        s.push_str(&format!(" pending {p}"));
                    }
                    s
                },
            ),
        ),
    ];
    // A Kubernetes workload shown as this job: its kind and readiness beside the state, its
    // groups and what cancel and hold do to it at the end (laid out full width).
    if let Some(w) = job.workload.as_deref() {
        let at = fields.iter().position(|(k, _)| *k == "reason").map_or(fields.len(), |i| i + 1);
        fields.insert(at, ("kind", workload_kind_text(w)));
        fields.insert(at + 1, ("replicas", format!("{}/{} ready", w.replicas_ready, w.replicas_total)));
        fields.push(("groups", workload_groups_text(w)));
        fields.push(("actions", workload_actions_text(w)));
    }
    // Said only where it is so: `flightdeck migrate` left its origin on the job.
    if let Some(origin) = job.origin() {
        fields.insert(1, ("migrated from", origin.to_string()));
    }
    fields
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let Some(d) = app.detail() else { return };
    let theme = app.theme();
    let mut fields = fields(&d.last, d.taken_at);
    // A waiting job's size against the nodes that could hold it (`why`'s first line).
    let snapshot = app.rows.fleet.clusters.iter().find(|c| c.name == d.job.cluster).and_then(|c| c.snapshot.as_deref());
    if let Some(line) = snapshot.and_then(|s| crate::fleet::why::size_line(s, &d.last)) {
        fields.push(("size", line));
    }
    // What the backend added about the job's turn (a Kueue position, priority parts).
    if app.turn_ask.is_open() {
        fields.push(("turn", "asking…".into()));
    } else if !d.turn.is_empty() {
        fields.push(("turn", d.turn.join(" · ")));
    }
    let (wide, grid): (Vec<_>, Vec<_>) = fields.iter().partition(|(label, _)| WIDE_FIELDS.contains(label));
    let cols = ((area.width.saturating_sub(2)) / 38).clamp(1, 3) as usize;
    let rows = grid.len().div_ceil(cols);
    let fields_h = ((rows + wide.len()) as u16 + 2).min(area.height * 3 / 5).max(3);
    let readings = job_readings(app, d);
    // The job's GPUs, one line each, when telemetry measured them: at most 8 lines, the
    // rest counted.
    let gpus_h = if readings.is_empty() { 0 } else { readings.len().min(MAX_GPU_LINES) as u16 + 2 };
    // A workload's pods, one line each, taken from the log's share: at most a third of the
    // screen, and not below three lines (one pod) while the log keeps its own three.
    let workload = d.last.workload.as_deref().filter(|w| !w.pods.is_empty());
    let pods_h = workload.map_or(0, |w| {
        let left = area.height.saturating_sub(fields_h + gpus_h).saturating_sub(3);
        let h = (w.pods.len() as u16 + 2).min((area.height / 3).max(3)).min(left);
        if h < 3 { 0 } else { h }
    });
    let [top, gpus, pods, bottom] = Layout::vertical([
        Constraint::Length(fields_h),
        Constraint::Length(gpus_h),
        Constraint::Length(pods_h),
        Constraint::Min(3),
    ])
    .areas(area);

    let mut title = format!(" {} · {} ", d.job, text::truncate(&d.last.name, 40));
    if d.gone {
        title.push_str("· no longer in the queue ");
    }
    let b = block(app, title, false);
    let inner = b.inner(top);
    frame.render_widget(b, top);
    let col_w = inner.width / cols as u16;
    let label_w = 10u16;
    let buf = frame.buffer_mut();
    for (i, (label, value)) in grid.iter().enumerate() {
        let (c, r) = (i / rows, i % rows);
        if r as u16 >= inner.height {
            continue;
        }
        let x = inner.x + c as u16 * col_w;
        let y = inner.y + r as u16;
        put(buf, x, y, label_w.min(col_w), label, theme.style(Slot::Dim));
        let vw = col_w.saturating_sub(label_w + 2);
        let style = if *label == "state" { theme.job_state(d.last.state) } else { theme.style(Slot::Base) };
        put(buf, x + label_w + 1, y, vw, value, style);
    }
    for (i, (label, value)) in wide.iter().enumerate() {
        let r = rows + i;
        if r as u16 >= inner.height {
            break;
        }
        let y = inner.y + r as u16;
        put(buf, inner.x, y, label_w.min(inner.width), label, theme.style(Slot::Dim));
        let vw = inner.width.saturating_sub(label_w + 1);
        put(buf, inner.x + label_w + 1, y, vw, value, theme.style(Slot::Base));
    }
    if !readings.is_empty() {
        render_gpus(app, &readings, frame, gpus);
    }
    if let Some(w) = workload.filter(|_| pods_h > 0) {
        render_pods(app, w, d.shown_pod(), frame, pods);
    }
    render_log(app, d, frame, bottom);
}

/// `train-worker-0  Worker  running  gpu-01  8 GPU  reason`, one line a pod, the last one
/// counting those that do not fit; the name of the pod whose log is shown (`shown`) is
/// highlighted.
fn render_pods(app: &App, w: &Workload, shown: Option<usize>, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let title = format!(" pods · {} · {}/{} ready ", w.pods.len(), w.replicas_ready, w.replicas_total);
    let b = block(app, text::clean(&title).into_owned(), false);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    let lines: Vec<Line> = pod_cells(w, inner.width as usize, inner.height as usize)
        .into_iter()
        .enumerate()
        .map(|(i, cells)| {
            let spans: Vec<Span> = cells
                .into_iter()
                .map(|(t, cell)| {
                    let style = match cell {
                        PodCell::Name if shown == Some(i) => theme.style(Slot::Selection),
                        PodCell::State(s) => theme.job_state(s),
                        PodCell::Role | PodCell::Reason | PodCell::More | PodCell::Gap => theme.style(Slot::Dim),
                        PodCell::Name | PodCell::Node | PodCell::Gpus => theme.style(Slot::Base),
                    };
                    Span::styled(t, style)
                })
                .collect();
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

const MAX_GPU_LINES: usize = 8;

/// The measured GPUs serving the job, in node and device order.
fn job_readings<'a>(app: &'a App, d: &Detail) -> Vec<&'a GpuReading> {
    let cluster = app.rows.fleet.clusters.iter().find(|c| c.name == d.job.cluster);
    let Some(used) = cluster.and_then(|c| c.gpu_use.as_deref()) else { return Vec::new() };
    used.gpus.iter().filter(|r| r.job.as_deref() == Some(d.job.id.as_str())).collect()
}

/// `h100-01 GPU 0  util 87% ▂▅▇█ · mem 70.1/79.6 GiB · 650 W · 64 °C`, with the last 15
/// minutes of utilisation as a sparkline.
fn render_gpus(app: &App, readings: &[&GpuReading], frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let cluster = app.detail().map(|d| d.job.cluster.as_str()).unwrap_or_default();
    let used = app.rows.fleet.clusters.iter().find(|c| c.name == cluster).and_then(|c| c.gpu_use.as_deref());
    let mut title = format!(" GPUs · {}", used.map_or("", |u| u.source.as_str()));
    if let Some(u) = used {
        title.push_str(&format!(" · {} ago", text::age((app.now() - u.taken_at).num_seconds().max(0))));
    }
    if let Some(j) = app.detail().and_then(|d| used.and_then(|u| u.job(&d.job.id))) {
        if let Some(m) = j.mean_utilisation {
            title.push_str(&format!(" · mean {m:.0}%"));
        }
        if j.idle {
            title.push_str(" · IDLE");
        }
    }
    title.push(' ');
    let b = block(app, text::clean(&title).into_owned(), false);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    let spark = (inner.width as usize / 3).clamp(8, 90);
    let mut lines: Vec<Line> = readings
        .iter()
        .take(MAX_GPU_LINES - usize::from(readings.len() > MAX_GPU_LINES))
        .map(|r| {
            let label = format!("{} GPU {:<2} ", r.sample.node, r.sample.index);
            let mut t = super::gpus::reading_text(r, spark);
            for p in &r.sample.problems {
                t.push_str(&format!(" · {p}"));
            }
            let style = if r.sample.problems.is_empty() { theme.style(Slot::Base) } else { theme.style(Slot::Error) };
            Line::from(vec![
                Span::styled(text::clean(&label).into_owned(), theme.style(Slot::Dim)),
                Span::styled(t, style),
            ])
        })
        .collect();
    if readings.len() > MAX_GPU_LINES {
        lines.push(Line::styled(
            format!(
                "… {}",
                crate::model::words::counted((readings.len() - (MAX_GPU_LINES - 1)) as u64, "more GPU", "more GPUs")
            ),
            theme.style(Slot::Dim),
        ));
    }
    let lines: Vec<Line> = lines.into_iter().map(|l| super::overview::cut_line(l, inner.width as usize)).collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn render_log(app: &App, d: &Detail, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let path = d.log_handle();
    let mut title = format!(" {}", d.stream.as_str());
    if let Ok(p) = path {
        title.push_str(&format!(": {p}"));
    }
    if d.follow {
        title.push_str(" · following");
    }
    if app.log_read.is_open() {
        title.push_str(" · reading…");
    }
    title.push(' ');
    let b = block(app, text::clean(&title).into_owned(), true);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    if inner.height == 0 {
        return;
    }
    let mut lines: Vec<Line> = Vec::new();
    let mut height = inner.height as usize;
    if let Err(why) = path {
        lines.push(Line::styled(why, theme.style(Slot::Dim)));
    } else if let Some(e) = &d.log.error {
        lines.push(Line::styled(format!("cannot read the log: {}", text::clean(e)), theme.style(Slot::Error)));
        height = height.saturating_sub(1);
    }
    if path.is_ok() {
        let dropped = d.log.dropped_lines;
        let skipped = d.log.skipped_before;
        let marker = if dropped > 0 {
            Some(format!(
                "… {} {} dropped",
                text::thousands(dropped as usize),
                if dropped == 1 { "line" } else { "lines" }
            ))
        } else if skipped > 0 {
            Some(format!("… {} earlier bytes not loaded", text::thousands(skipped as usize)))
        } else {
            None
        };
        // The marker stays on the first line of the pane, whatever the scroll.
        if let Some(m) = marker {
            lines.push(Line::styled(m, theme.style(Slot::Dim)));
            height = height.saturating_sub(1);
        }
        let n = d.log.len();
        let end = n - d.scroll.min(n);
        let start = end.saturating_sub(height);
        if n == 0 && !app.log_read.is_open() && d.log.error.is_none() && d.log.offset.is_some() {
            lines.push(Line::styled("(empty)", theme.style(Slot::Dim)));
        }
        for i in start..end {
            let Some(line) = d.log.line(i) else { continue };
            if let Some(mark) = line.strip_prefix(SKIP_MARK) {
                lines.push(Line::styled(mark.to_string(), theme.style(Slot::Dim)));
            } else {
                let line = text::strip_ansi(line);
                lines.push(Line::from(Span::raw(text::truncate(&line, inner.width as usize).into_owned())));
            }
        }
    }
    let lines: Vec<Line> = lines.into_iter().take(inner.height as usize).collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobRef, JobState};

    #[test]
    fn the_native_product_shows_beside_the_model() {
        let mut job = Job::new(JobRef::new("k8s", "ml:train"), JobState::Running);
        assert_eq!(gpu_model_text(&job), "-");
        job.gpu_model = Some("h100".into());
        job.gpu_product = Some("NVIDIA-H100-80GB-HBM3".into());
        assert_eq!(gpu_model_text(&job), "h100 (NVIDIA-H100-80GB-HBM3)");
        let row = fields(&job, None).into_iter().find(|(k, _)| *k == "GPU model").unwrap();
        assert_eq!(row.1, "h100 (NVIDIA-H100-80GB-HBM3)");
        // A Slurm site that already writes the canonical name: once.
        job.gpu_product = Some("H100".into());
        assert_eq!(gpu_model_text(&job), "h100");
    }

    #[test]
    fn a_slurm_reason_is_said_in_words_and_others_as_given() {
        let mut job = Job::new(JobRef::new("hpc", "7"), JobState::Pending);
        let reason = |job: &Job| fields(job, None).into_iter().find(|(k, _)| *k == "reason").unwrap().1;
        assert_eq!(reason(&job), "-");
        job.reason = Some("QOSMaxGRESPerUser".into());
        assert_eq!(
            reason(&job),
            "QOSMaxGRESPerUser: its user already holds the GPUs or other generic resources (GRES) its QOS allows per user"
        );
        job.reason = Some("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.".into());
        assert_eq!(reason(&job), "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
    }

    #[test]
    fn a_migrated_job_says_where_it_came_from() {
        let mut job = Job::new(JobRef::new("k8s", "ml:train-x"), JobState::Pending);
        assert!(fields(&job, None).iter().all(|(k, _)| *k != "migrated from"), "only where it is so");
        job.migrated_from = Some("hpc/123".into());
        assert_eq!(fields(&job, None)[1], ("migrated from", "hpc/123".to_string()));
    }

    fn end_label(state: JobState) -> (&'static str, String) {
        let mut job = Job::new(JobRef::new("fd22", "1"), state);
        job.end_time = chrono::DateTime::from_timestamp(1_777_000_000, 0);
        fields(&job, None).into_iter().find(|(l, _)| l.starts_with("end")).expect("an end field")
    }

    #[test]
    fn a_live_job_ends_by_its_end_time_and_a_finished_one_ended() {
        assert_eq!(end_label(JobState::Running).0, "ends by");
        assert_eq!(end_label(JobState::Pending).0, "ends by");
        assert_eq!(end_label(JobState::Completed).0, "ended");
        assert_eq!(end_label(JobState::Cancelled).0, "ended");
        assert_ne!(end_label(JobState::Running).1, "-");
    }

    /// A PyTorchJob of one master and four workers of 8 GPUs, three workers ready, the last
    /// pending for want of GPUs.
    fn pytorchjob() -> Workload {
        use crate::model::{ReplicaGroup, WorkloadPod};
        let pod = |name: &str, role: &str, state: JobState, node: Option<&str>, reason: Option<&str>| WorkloadPod {
            name: name.into(),
            role: Some(role.into()),
            state,
            native_state: state.as_str().into(),
            node: node.map(Into::into),
            gpus: 8,
            reason: reason.map(Into::into),
            log: None,
        };
        Workload {
            kind: "PyTorchJob".into(),
            api_version: "kubeflow.org/v1".into(),
            replicas_ready: 4,
            replicas_total: 5,
            groups: vec![
                ReplicaGroup { name: "Master".into(), replicas: 1, ready: None, gpus_per_replica: 8 },
                ReplicaGroup { name: "Worker".into(), replicas: 4, ready: Some(3), gpus_per_replica: 8 },
            ],
            pods: vec![
                pod("train-master-0", "Master", JobState::Running, Some("gpu-01"), None),
                pod("train-worker-0", "Worker", JobState::Running, Some("gpu-02"), None),
                pod("train-worker-1", "Worker", JobState::Running, Some("gpu-03"), None),
                pod("train-worker-2", "Worker", JobState::Running, Some("gpu-04"), None),
                pod(
                    "train-worker-3",
                    "Worker",
                    JobState::Pending,
                    None,
                    Some("0/3 nodes are available: 3 Insufficient nvidia.com/gpu."),
                ),
            ],
            suspend: Some("spec.runPolicy.suspend".into()),
            cancel: true,
        }
    }

    fn row(job: &Job, label: &str) -> Option<String> {
        fields(job, None).into_iter().find(|(k, _)| *k == label).map(|(_, v)| v)
    }

    #[test]
    fn a_workload_says_its_kind_replicas_groups_and_actions() {
        let mut job = Job::new(JobRef::new("k8s", "ml:train"), JobState::Running);
        let plain = fields(&job, None);
        assert!(["kind", "replicas", "groups", "actions"].iter().all(|l| row(&job, l).is_none()));
        job.workload = Some(std::sync::Arc::new(pytorchjob()));
        let rows = fields(&job, None);
        assert_eq!(rows.len(), plain.len() + 4);
        let reason = rows.iter().position(|(k, _)| *k == "reason").unwrap();
        assert_eq!(rows[reason + 1], ("kind", "PyTorchJob (kubeflow.org/v1)".to_string()));
        assert_eq!(rows[reason + 2], ("replicas", "4/5 ready".to_string()));
        assert_eq!(rows[rows.len() - 2], ("groups", "Master 1×8 GPU · Worker 4×8 GPU (3 ready)".to_string()));
        assert_eq!(
            rows[rows.len() - 1],
            (
                "actions",
                "cancel deletes the PyTorchJob (background propagation) · hold/release: spec.runPolicy.suspend"
                    .to_string()
            )
        );
        // The rows the job had stay as they were.
        let kept: Vec<_> =
            rows.iter().filter(|(k, _)| !["kind", "replicas", "groups", "actions"].contains(k)).collect();
        assert_eq!(kept, plain.iter().collect::<Vec<_>>());

        // A StatefulSet owning GPU pods, known only from an owner reference: shown, not managed.
        let w = std::sync::Arc::make_mut(job.workload.as_mut().unwrap());
        w.kind = "StatefulSet".into();
        w.api_version = String::new();
        w.cancel = false;
        w.suspend = None;
        w.groups =
            vec![crate::model::ReplicaGroup { name: "vllm".into(), replicas: 2, ready: None, gpus_per_replica: 0 }];
        assert_eq!(row(&job, "kind").unwrap(), "StatefulSet");
        assert_eq!(row(&job, "groups").unwrap(), "vllm 2");
        assert_eq!(row(&job, "actions").unwrap(), "shown only: use kubectl for a StatefulSet");

        // A RayCluster is cancelled but cannot be held; no groups at all is a dash.
        let w = std::sync::Arc::make_mut(job.workload.as_mut().unwrap());
        w.kind = "RayCluster".into();
        w.api_version = "ray.io/v1".into();
        w.cancel = true;
        w.groups =
            vec![crate::model::ReplicaGroup { name: "head".into(), replicas: 1, ready: Some(1), gpus_per_replica: 0 }];
        assert_eq!(row(&job, "groups").unwrap(), "head 1 (1 ready)");
        assert_eq!(
            row(&job, "actions").unwrap(),
            "cancel deletes the RayCluster (background propagation) · cannot be held"
        );
        std::sync::Arc::make_mut(job.workload.as_mut().unwrap()).groups.clear();
        assert_eq!(row(&job, "groups").unwrap(), "-");
    }

    #[test]
    fn pods_are_listed_one_a_line_and_the_rest_counted() {
        let w = pytorchjob();
        let all = pod_lines(&w, 200, 10);
        assert_eq!(
            all,
            [
                "train-master-0  Master  running  gpu-01  8 GPU",
                "train-worker-0  Worker  running  gpu-02  8 GPU",
                "train-worker-1  Worker  running  gpu-03  8 GPU",
                "train-worker-2  Worker  running  gpu-04  8 GPU",
                "train-worker-3  Worker  pending  -       8 GPU  0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            ]
        );
        // Three lines for five pods: two, then the count of the other three.
        assert_eq!(
            pod_lines(&w, 200, 3),
            [
                "train-master-0  Master  running  gpu-01  8 GPU",
                "train-worker-0  Worker  running  gpu-02  8 GPU",
                "… 3 more pods",
            ]
        );
        // The reason is cut to the width, then the other columns.
        assert_eq!(pod_lines(&w, 60, 5)[4], "train-worker-3  Worker  pending  -       8 GPU  0/3 nodes a…");
        assert_eq!(pod_lines(&w, 20, 5)[0], "train-master-0  Mas…");
        assert_eq!(pod_lines(&w, 200, 1), ["… 5 more pods"]);
        assert!(pod_lines(&w, 200, 0).is_empty());
    }

    /// The detail of a job standing for `workload`, drawn at `w`×`h`.
    fn detail_screen(workload: Workload, w: u16, h: u16) -> String {
        use std::sync::Arc;

        use ratatui::Terminal;
        use ratatui::backend::TestBackend;
        use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

        use crate::model::{ClusterState, FleetState, Health, Snapshot};
        use crate::tui::keymap::Keymap;
        use crate::tui::theme::{ColorDepth, Theme};
        use crate::tui::{Msg, TuiOptions};

        let now = chrono::DateTime::from_timestamp(1_777_000_000, 0).unwrap();
        let mut job = Job::new(JobRef::new("k8s", "ml:train"), JobState::Running);
        job.name = "train".into();
        job.user = "alice".into();
        job.partition = "ml".into();
        job.native_state = "Running".into();
        job.gpus_requested = 40;
        job.gpus_allocated = 32;
        job.workload = Some(std::sync::Arc::new(workload));
        let clusters = vec![ClusterState {
            health: Health::Fresh { at: now },
            snapshot: Some(Arc::new(Snapshot {
                cluster: "k8s".into(),
                taken_at: Some(now),
                jobs: vec![job],
                ..Snapshot::default()
            })),
            ..ClusterState::new("k8s", "kubernetes")
        }];
        let mut app = App::new(TuiOptions {
            keymap: Keymap::builtin("default").unwrap(),
            theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
            read_only: false,
            user: "alice".into(),
            config_label: "test".into(),
            no_clusters: Vec::new(),
        });
        app.update(Msg::Tick(now));
        app.update(Msg::Fleet(Arc::new(FleetState { clusters, read_only: false, version: 1 })));
        for code in [KeyCode::Char('2'), KeyCode::Enter] {
            app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
        }
        assert!(app.detail().is_some(), "the detail is open");
        app.update(Msg::Resize(w, h));
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| crate::tui::views::render(&app, f)).unwrap();
        terminal.backend().to_string()
    }

    #[test]
    fn the_detail_of_a_workload_lists_its_pods_above_the_log() {
        let big = detail_screen(pytorchjob(), 160, 48);
        assert!(big.contains("pods · 5 · 4/5 ready"), "{big}");
        for line in pod_lines(&pytorchjob(), 156, 5) {
            assert!(big.contains(&line), "{line}:\n{big}");
        }
        assert!(big.contains("groups     Master 1×8 GPU · Worker 4×8 GPU (3 ready)"), "full width:\n{big}");
        assert!(big.contains("cancel deletes the PyTorchJob (background propagation) · hold/release"), "{big}");
        let pods = big.find("pods · 5").unwrap();
        let log = big.find("┌ stdout").unwrap();
        assert!(pods < log, "the pods come before the log:\n{big}");

        // On a small screen the pods get what is left above the log's three lines, the rest
        // counted.
        let small = detail_screen(pytorchjob(), 80, 24);
        assert!(small.contains("pods · 5"), "{small}");
        assert!(small.contains("train-master-0  Master  running  gpu-01  8 GPU"), "{small}");
        assert!(small.contains("more pods"), "{small}");
        eprintln!("{small}");
        assert!(small.contains("┌ stdout"), "the log keeps its pane:\n{small}");
    }
}
