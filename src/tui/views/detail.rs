//! One job: every field, then the tail of its stdout or stderr (followed while `follow` is
//! on).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{block, put};
use crate::columns::jobs::elapsed_secs;
use crate::model::{GpuReading, Job, slurm_reasons};
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
        ("elapsed", elapsed_secs(job, taken_at).map_or_else(|| "-".into(), text::duration)),
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
    // Said only where it is so: `flightdeck migrate` left its origin on the job.
    if let Some(origin) = &job.migrated_from {
        fields.insert(1, ("migrated from", origin.clone()));
    }
    fields
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let Some(d) = app.detail() else { return };
    let theme = app.theme();
    let fields = fields(&d.last, d.taken_at);
    let cols = ((area.width.saturating_sub(2)) / 38).clamp(1, 3) as usize;
    let rows = fields.len().div_ceil(cols);
    let fields_h = (rows as u16 + 2).min(area.height * 3 / 5).max(3);
    let readings = job_readings(app, d);
    // The job's GPUs, one line each, when telemetry measured them: at most 8 lines, the
    // rest counted.
    let gpus_h = if readings.is_empty() { 0 } else { readings.len().min(MAX_GPU_LINES) as u16 + 2 };
    let [top, gpus, bottom] =
        Layout::vertical([Constraint::Length(fields_h), Constraint::Length(gpus_h), Constraint::Min(3)]).areas(area);

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
    for (i, (label, value)) in fields.iter().enumerate() {
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
    if !readings.is_empty() {
        render_gpus(app, &readings, frame, gpus);
    }
    render_log(app, d, frame, bottom);
}

const MAX_GPU_LINES: usize = 8;

/// The measured GPUs serving the job, in node and device order.
fn job_readings<'a>(app: &'a App, d: &Detail) -> Vec<&'a GpuReading> {
    let cluster = app.data.fleet.clusters.iter().find(|c| c.name == d.job.cluster);
    let Some(used) = cluster.and_then(|c| c.gpu_use.as_deref()) else { return Vec::new() };
    used.gpus.iter().filter(|r| r.job.as_deref() == Some(d.job.id.as_str())).collect()
}

/// `h100-01 GPU 0  util 87% ▂▅▇█ · mem 70.1/79.6 GiB · 650 W · 64 °C`, with the last 15
/// minutes of utilisation as a sparkline.
fn render_gpus(app: &App, readings: &[&GpuReading], frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let cluster = app.detail().map(|d| d.job.cluster.as_str()).unwrap_or_default();
    let used = app.data.fleet.clusters.iter().find(|c| c.name == cluster).and_then(|c| c.gpu_use.as_deref());
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
            format!("… {} more GPUs", readings.len() - (MAX_GPU_LINES - 1)),
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
    if d.log.waiting.is_some() {
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
            Some(format!("… {} lines dropped", text::thousands(dropped as usize)))
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
        if n == 0 && d.log.waiting.is_none() && d.log.error.is_none() && d.log.offset.is_some() {
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
}
