//! How the scriptable CLI prints jobs, nodes and the fleet summary: aligned tables for
//! people, stable JSON objects for scripts.

use std::io::Write;

use serde::Serialize;

use crate::columns::{JobColumn, JobContext, NodeColumn};
use crate::fleet::FleetState;
use crate::model::gpu_totals::{GpuTotals, gpu_totals};
use crate::model::{Health, Job, JobGpuUse, JobRecord, Node};

/// A job as `flightdeck jobs --output json` prints it. Field names are a public contract.
#[derive(Debug, Serialize)]
pub struct JobRow<'a> {
    #[serde(rename = "ref")]
    pub job_ref: String,
    pub cluster: &'a str,
    pub id: &'a str,
    pub name: &'a str,
    pub user: &'a str,
    pub account: Option<&'a str>,
    pub partition: &'a str,
    pub state: &'static str,
    pub native_state: &'a str,
    pub reason: Option<&'a str>,
    pub gpus: u32,
    pub gpus_requested: u32,
    pub gpus_allocated: u32,
    /// Canonical model (`h100`); `gpu_product` is the backend's own name for it.
    pub gpu_type: Option<&'a str>,
    pub gpu_product: Option<&'a str>,
    pub nodes: &'a [String],
    pub cpus: u32,
    pub memory_mb: Option<u64>,
    pub submit_time: Option<String>,
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    pub time_limit_secs: Option<u64>,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
    pub array_id: Option<&'a str>,
    pub array_task_id: Option<u32>,
    pub stdout: Option<&'a str>,
    pub stderr: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
    /// Measured use of its GPUs, where its cluster's telemetry read them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_use: Option<GpuUseRow>,
    /// The workload's kind (`PyTorchJob`, `JobSet`), where the job stands for a Kubernetes
    /// workload object rather than one batch Job or pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'a str>,
    /// Its replicas ready and in all, where it is a workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicasRow>,
    /// Its pods, where it is a workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods: Option<Vec<PodRow<'a>>>,
}

/// A workload's replicas in `--output json`.
#[derive(Debug, Serialize)]
pub struct ReplicasRow {
    pub ready: u32,
    pub total: u32,
}

/// One pod of a workload in `--output json`.
#[derive(Debug, Serialize)]
pub struct PodRow<'a> {
    pub name: &'a str,
    pub role: Option<&'a str>,
    pub state: &'static str,
    pub native_state: &'a str,
    pub node: Option<&'a str>,
    pub gpus: u32,
    pub reason: Option<&'a str>,
}

/// A job's measured GPU use in `--output json`.
#[derive(Debug, Serialize)]
pub struct GpuUseRow {
    /// GPUs of the job that were read.
    pub gpus_measured: u32,
    /// Mean utilisation of those GPUs, 0–100, in the last reading.
    pub utilisation: Option<f32>,
    /// Since when every reading has been under the idle threshold (RFC 3339).
    pub below_threshold_since: Option<String>,
    /// Under the threshold for the whole idle window: allocated but idle.
    pub idle: bool,
}

impl<'a> JobRow<'a> {
    /// The row with its cluster's telemetry reading, where one was taken: the job's part of
    /// it, or, for a job the reading holds nothing of (pending, no GPUs), no GPU measured,
    /// so a script tells "measured: none" from "no reading" (no `gpu_use` at all).
    pub fn with_reading(self, reading: Option<&crate::model::GpuUse>, used: Option<&JobGpuUse>) -> Self {
        let mut row = self.with_gpu_use(used);
        if row.gpu_use.is_none() && reading.is_some() {
            row.gpu_use =
                Some(GpuUseRow { gpus_measured: 0, utilisation: None, below_threshold_since: None, idle: false });
        }
        row
    }

    /// The row with the job's measured GPU use.
    pub fn with_gpu_use(mut self, used: Option<&JobGpuUse>) -> Self {
        self.gpu_use = used.map(|u| GpuUseRow {
            gpus_measured: u.gpus,
            utilisation: u.mean_utilisation,
            below_threshold_since: u.below_since.map(|t| t.to_rfc3339()),
            idle: u.idle,
        });
        self
    }
}

impl<'a> From<&'a Job> for JobRow<'a> {
    fn from(j: &'a Job) -> Self {
        JobRow {
            job_ref: j.job_ref.to_string(),
            cluster: &j.job_ref.cluster,
            id: &j.job_ref.id,
            name: &j.name,
            user: &j.user,
            account: j.account.as_deref(),
            partition: &j.partition,
            state: j.state.as_str(),
            native_state: &j.native_state,
            reason: j.reason.as_deref(),
            gpus: j.gpus(),
            gpus_requested: j.gpus_requested,
            gpus_allocated: j.gpus_allocated,
            gpu_type: j.gpu_model.as_deref(),
            gpu_product: j.gpu_product.as_deref(),
            nodes: &j.nodes,
            cpus: j.cpus,
            memory_mb: j.memory_mb,
            submit_time: j.submit_time.map(|t| t.to_rfc3339()),
            start_time: j.start_time.map(|t| t.to_rfc3339()),
            end_time: j.end_time.map(|t| t.to_rfc3339()),
            time_limit_secs: j.time_limit_secs,
            exit_code: j.exit.map(|e| e.code),
            exit_signal: j.exit.and_then(|e| e.signal),
            array_id: j.array.as_ref().map(|a| a.array_id.as_str()),
            array_task_id: j.array.as_ref().and_then(|a| a.task_id),
            stdout: j.stdout.as_deref(),
            stderr: j.stderr.as_deref(),
            cost_per_hour: j.cost_per_hour,
            gpu_use: None,
            kind: j.workload.as_deref().map(|w| w.kind_label()),
            replicas: j.workload.as_deref().map(|w| ReplicasRow { ready: w.replicas_ready, total: w.replicas_total }),
            pods: j.workload.as_deref().map(|w| {
                w.pods
                    .iter()
                    .map(|p| PodRow {
                        name: &p.name,
                        role: p.role.as_deref(),
                        state: p.state.as_str(),
                        native_state: &p.native_state,
                        node: p.node.as_deref(),
                        gpus: p.gpus,
                        reason: p.reason.as_deref(),
                    })
                    .collect()
            }),
        }
    }
}

/// A node as `flightdeck nodes --output json` prints it.
#[derive(Debug, Serialize)]
pub struct NodeRow<'a> {
    pub cluster: &'a str,
    pub name: &'a str,
    pub state: &'static str,
    pub flags: &'a [String],
    pub native_state: &'a str,
    pub gpus_total: u32,
    pub gpus_allocated: u32,
    pub gpus_unhealthy: u32,
    /// Canonical models (`h200`), joined with `,`; `gpu_product` the labels they came from.
    pub gpu_type: Option<String>,
    pub gpu_product: Option<String>,
    /// Some of the GPUs are time-sliced shares.
    pub gpu_shared: bool,
    pub reason: Option<&'a str>,
    pub reason_user: Option<&'a str>,
    pub cpus_total: u32,
    pub cpus_allocated: u32,
    pub memory_total_mb: u64,
    pub memory_allocated_mb: u64,
    pub partitions: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
}

impl<'a> From<&'a Node> for NodeRow<'a> {
    fn from(n: &'a Node) -> Self {
        NodeRow {
            cluster: &n.cluster,
            name: &n.name,
            state: n.state.as_str(),
            flags: &n.flags,
            native_state: &n.native_state,
            gpus_total: n.gpus_total(),
            gpus_allocated: n.gpus_allocated(),
            gpus_unhealthy: n.gpus_unhealthy(),
            gpu_type: n.gpu_model(),
            gpu_product: node_products(n),
            gpu_shared: n.gpus.iter().any(|g| g.shared),
            reason: n.reason.as_deref(),
            reason_user: n.reason_user.as_deref(),
            cpus_total: n.cpus_total,
            cpus_allocated: n.cpus_allocated,
            memory_total_mb: n.memory_total_mb,
            memory_allocated_mb: n.memory_allocated_mb,
            partitions: &n.partitions,
            cost_per_hour: n.cost_per_hour,
        }
    }
}

/// The node's GPU products, without repeats, joined with `,`.
fn node_products(n: &Node) -> Option<String> {
    let mut products: Vec<&str> = Vec::new();
    for p in n.gpus.iter().filter_map(|g| g.gpu_product.as_deref()) {
        if !products.contains(&p) {
            products.push(p);
        }
    }
    (!products.is_empty()).then(|| products.join(","))
}

/// Left-aligned columns separated by two spaces, like `kubectl get`. Cells are made
/// printable first: a job name with a newline or an escape sequence must not redraw
/// someone's terminal.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| printable(c)).collect()).collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, cell) in cells.enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            l.push_str(cell);
            let pad = widths.get(i).copied().unwrap_or(0).saturating_sub(cell.chars().count());
            l.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in &rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// Text from a backend made safe to print (see [`crate::safe_text::printable`]).
pub fn printable(s: &str) -> String {
    crate::safe_text::printable(s).into_owned()
}

/// `value` as the pretty JSON `--output json` prints, with every control and bidi character
/// as a `\uXXXX` escape (see [`EscapingWriter`]).
pub fn json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    // Our rows are plain structs and maps with string keys, and a Vec takes every byte:
    // serialising cannot fail.
    write_json(&mut out, value).expect("JSON rows serialise");
    String::from_utf8(out).expect("serde_json writes UTF-8 and the escapes are ASCII")
}

/// `value` as pretty JSON and a line break on stdout, streamed: 50,000 jobs never sit in
/// memory as one 40 MB text. A reader that went away (`| head`) ends the output quietly.
pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let written = write_json(&mut out, value).and_then(|()| {
        out.write_all(b"\n")?;
        out.flush()
    });
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("flightdeck: writing the JSON output failed: {e}");
    }
}

/// `value` as pretty JSON into `out`, through an [`EscapingWriter`].
pub fn write_json<W: Write, T: Serialize + ?Sized>(out: W, value: &T) -> std::io::Result<()> {
    let mut escaping = EscapingWriter::new(out);
    serde_json::to_writer_pretty(&mut escaping, value).map_err(std::io::Error::other)?;
    escaping.finish()
}

/// A sequence serialised one item at a time as `row` makes it, so that a listing is never
/// held as a second vector of rows.
pub struct SeqOf<'a, T, F>(&'a [T], F);

impl<'a, T, F> SeqOf<'a, T, F> {
    /// `items` serialised as `row` makes each one.
    pub fn new<R: Serialize>(items: &'a [T], row: F) -> Self
    where
        F: Fn(&'a T) -> R,
    {
        SeqOf(items, row)
    }
}

impl<'a, T, F, R> Serialize for SeqOf<'a, T, F>
where
    F: Fn(&'a T) -> R,
    R: Serialize,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(&self.1))
    }
}

/// Writes serde_json's text on, with every control and bidi character as a `\uXXXX`
/// escape: serde_json escapes only C0, so DEL, C1 and bidi controls in backend text would
/// reach the terminal raw. A parser reads the same value. Outside strings JSON holds only
/// punctuation, spaces and the line breaks of the layout (a line break inside a string is
/// already `\n`), so every other such character found is inside a string. A character split
/// across two writes waits for its last bytes.
pub struct EscapingWriter<W> {
    out: W,
    /// The first bytes of a character whose rest has not been written yet (at most 3).
    partial: Vec<u8>,
}

impl<W: Write> EscapingWriter<W> {
    pub fn new(out: W) -> Self {
        EscapingWriter { out, partial: Vec::new() }
    }

    /// Writes what is left; bytes of an unfinished character go out as they are.
    pub fn finish(mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.partial);
        self.out.write_all(&rest)?;
        self.out.flush()
    }

    fn escape_into_out(&mut self, text: &str) -> std::io::Result<()> {
        let mut clean_from = 0;
        for (at, c) in text.char_indices() {
            if c != '\n' && crate::safe_text::is_unsafe(c) {
                self.out.write_all(&text.as_bytes()[clean_from..at])?;
                write!(self.out, "\\u{:04x}", c as u32)?;
                clean_from = at + c.len_utf8();
            }
        }
        self.out.write_all(&text.as_bytes()[clean_from..])
    }
}

impl<W: Write> Write for EscapingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let joined;
        let bytes: &[u8] = if self.partial.is_empty() {
            buf
        } else {
            joined = [std::mem::take(&mut self.partial).as_slice(), buf].concat();
            &joined
        };
        let mut bytes = bytes;
        loop {
            match std::str::from_utf8(bytes) {
                Ok(text) => break self.escape_into_out(text)?,
                Err(e) => {
                    let (valid, rest) = bytes.split_at(e.valid_up_to());
                    self.escape_into_out(std::str::from_utf8(valid).expect("checked valid"))?;
                    match e.error_len() {
                        // An unfinished character at the end: keep it for the next write.
                        None => break self.partial.extend_from_slice(rest),
                        // Bytes that are no UTF-8 at all (serde_json never writes them): pass
                        // them on as they are.
                        Some(bad) => {
                            self.out.write_all(&rest[..bad])?;
                            bytes = &rest[bad..];
                        }
                    }
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// A table of `columns` over `items`, an empty cell written `-` so that every row has as
/// many words as the header.
fn columns_table<T, C: Copy>(
    columns: &[C],
    items: &[&T],
    title: impl Fn(C) -> &'static str,
    optional: impl Fn(C) -> bool,
    cell: impl Fn(C, &T) -> String,
) -> String {
    // An optional column (`$/H`) is left out when no row has a value for it.
    let columns: Vec<C> = columns
        .iter()
        .copied()
        .filter(|c| !optional(*c) || items.iter().any(|item| !cell(*c, item).is_empty()))
        .collect();
    let columns = columns.as_slice();
    let header: Vec<&str> = columns.iter().map(|c| title(*c)).collect();
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|item| {
            columns
                .iter()
                .map(|c| {
                    let text = cell(*c, item);
                    if text.is_empty() { "-".to_string() } else { text }
                })
                .collect()
        })
        .collect();
    table(&header, &rows)
}

/// `flightdeck jobs`: the [`JobColumn::CLI`] columns, with the cockpit's cell text; each
/// job with its measured GPU use, where there is one.
pub fn jobs_table(jobs: &[(&Job, Option<&JobGpuUse>)]) -> String {
    let rows: Vec<&(&Job, Option<&JobGpuUse>)> = jobs.iter().collect();
    columns_table(
        &JobColumn::CLI,
        &rows,
        JobColumn::title,
        |c| c.shape().optional,
        |c, (job, gpu_use)| c.cell(job, JobContext { taken_at: None, gpu_use: *gpu_use }).into_owned(),
    )
}

/// `flightdeck jobs --since`: finished jobs with what they used.
pub fn history_table(records: &[&JobRecord]) -> String {
    let header = ["JOB", "NAME", "USER", "PARTITION", "STATE", "EXIT", "END", "ELAPSED", "MAXRSS", "GPUS", "GPU-H"];
    let rows: Vec<Vec<String>> = records.iter().map(|r| history_cells(r, "%Y-%m-%d %H:%M")).collect();
    table(&header, &rows)
}

/// A finished job's cells as the CLI's history table and the cockpit's history screen show
/// them (the end time as `end_format`), `-` where there is no value; backend text as given.
pub fn history_cells(r: &JobRecord, end_format: &str) -> Vec<String> {
    let j = &r.job;
    [
        j.job_ref.to_string(),
        j.name.clone(),
        j.user.clone(),
        j.partition.clone(),
        j.state.as_str().to_string(),
        j.exit.map(|e| e.to_string()).unwrap_or_default(),
        j.end_time.map(|t| t.format(end_format).to_string()).unwrap_or_default(),
        r.elapsed_secs.map(elapsed).unwrap_or_default(),
        r.max_rss_mb
            .map(|mb| if mb >= 1024 { format!("{:.1}G", mb as f64 / 1024.0) } else { format!("{mb}M") })
            .unwrap_or_default(),
        if j.gpus_allocated > 0 { j.gpus_allocated.to_string() } else { String::new() },
        r.gpu_hours.map(|h| format!("{h:.2}")).unwrap_or_default(),
    ]
    .into_iter()
    .map(|c| if c.is_empty() { "-".to_string() } else { c })
    .collect()
}

/// `D-HH:MM:SS` as Slurm writes elapsed times, without the days when there are none.
pub fn elapsed(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 { format!("{d}-{h:02}:{m:02}:{s:02}") } else { format!("{h:02}:{m:02}:{s:02}") }
}

/// `flightdeck nodes`: the [`NodeColumn::CLI`] columns, with the cockpit's cell text.
pub fn nodes_table(nodes: &[&Node]) -> String {
    columns_table(&NodeColumn::CLI, nodes, NodeColumn::title, |c| c.shape().optional, |c, n| c.cell(n).into_owned())
}

/// The fleet at a glance: health, then GPUs by model, then the queue by state.
pub fn summary(state: &FleetState) -> String {
    let mut out = String::new();
    if state.clusters.is_empty() {
        out.push_str("No clusters configured and no local Slurm found.\n");
        out.push_str("Write a config file (see README.md) or pass --config FILE.\n");
        return out;
    }
    out.push_str(&fleet_lines(state));
    for c in &state.clusters {
        let health = match &c.health {
            Health::Connecting => "connecting".to_string(),
            Health::Fresh { .. } => "fresh".to_string(),
            Health::Stale { since, error, .. } => format!("STALE since {} — {error}", since.format("%H:%M:%S")),
        };
        // `(slurm 24.11.1)`, or the kind alone where the backend names no release.
        let kind = match c.snapshot.as_ref().and_then(|s| s.release.as_deref()) {
            Some(release) => format!("{} {release}", c.kind),
            None => c.kind.to_string(),
        };
        // Name, kind and release come from the backend (or a hub) like the error: the whole
        // line is made printable once.
        out.push_str(&printable(&format!("{} ({kind}): {health}", c.name)));
        out.push('\n');
        let Some(snap) = &c.snapshot else { continue };
        for note in &snap.notes {
            out.push_str(&format!("  note: {}\n", printable(note)));
        }
        let rows: Vec<Vec<String>> = gpu_totals([&**snap])
            .iter()
            .map(|t| {
                vec![
                    format!("  {}", t.label()),
                    t.total.to_string(),
                    t.allocated.to_string(),
                    t.idle().to_string(),
                    t.unavailable.to_string(),
                ]
            })
            .collect();
        out.push_str(&table(&["  GPU", "TOTAL", "ALLOCATED", "IDLE", "UNAVAILABLE"], &rows));
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for j in &snap.jobs {
            *counts.entry(j.state.as_str()).or_default() += 1;
        }
        let jobs: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        let problem = snap.nodes.iter().filter(|n| n.is_unavailable()).count();
        let cost =
            snap.cost_per_hour().map(|c| format!("; ${}/h", crate::columns::format::cost(c))).unwrap_or_default();
        out.push_str(&format!(
            "  jobs: {}; nodes: {} ({} unavailable){cost}\n",
            if jobs.is_empty() { "none".into() } else { jobs.join(", ") },
            snap.nodes.len(),
            problem
        ));
    }
    out
}

/// With two clusters or more: each GPU model over the whole fleet, one line each
/// (`h100  26 total · 8 allocated · 10 idle · 8 unavailable  (fd22, lab, k8s-prod)`).
pub fn fleet_lines(state: &FleetState) -> String {
    let snaps: Vec<&crate::model::Snapshot> = state.clusters.iter().filter_map(|c| c.snapshot.as_deref()).collect();
    if state.clusters.len() < 2 || snaps.is_empty() {
        return String::new();
    }
    let totals = gpu_totals(snaps.iter().copied());
    let mut out =
        format!("fleet ({}):\n", crate::model::words::counted(state.clusters.len() as u64, "cluster", "clusters"));
    if totals.is_empty() {
        out.push_str("  no GPUs\n");
    }
    let width = totals.iter().map(|t| t.label().chars().count()).max().unwrap_or(0);
    for t in &totals {
        out.push_str(&printable(&fleet_line(t, width)));
        out.push('\n');
    }
    out
}

/// `  h100  26 total · … unavailable  (fd22, lab)`, the label padded to `width`.
fn fleet_line(t: &GpuTotals, width: usize) -> String {
    format!("  {:width$}  {}  ({})", t.label(), t.counts_text(), t.clusters.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::{ClusterState, GpuSlot, NodeState, Snapshot};
    use std::sync::Arc;

    fn slot(model: &str, product: &str, total: u32, allocated: u32) -> GpuSlot {
        GpuSlot {
            model: model.into(),
            gpu_product: Some(product.into()),
            shared: false,
            total,
            allocated,
            unhealthy: 0,
            utilisation: None,
        }
    }

    fn cluster(name: &str, kind: &str, nodes: Vec<Node>) -> ClusterState {
        let snapshot = Snapshot { cluster: name.into(), nodes, ..Snapshot::default() };
        ClusterState { snapshot: Some(Arc::new(snapshot)), ..ClusterState::new(name, kind) }
    }

    fn gpu_node(cluster: &str, state: NodeState, gpus: Vec<GpuSlot>) -> Node {
        let mut n = Node::new(cluster, "n", state);
        n.gpus = gpus;
        n
    }

    #[test]
    fn summary_starts_with_the_fleet_line_per_model() {
        let mut drained = gpu_node("fd22", NodeState::Drained, vec![slot("h100", "h100", 8, 0)]);
        drained.flags = vec!["DRAIN".into()];
        let state = FleetState {
            clusters: vec![
                cluster(
                    "fd22",
                    "slurm",
                    vec![gpu_node("fd22", NodeState::Mixed, vec![slot("h100", "h100", 8, 6)]), drained],
                ),
                cluster(
                    "k8s-prod",
                    "kubernetes",
                    vec![gpu_node(
                        "k8s-prod",
                        NodeState::Mixed,
                        vec![slot("h100", "NVIDIA-H100-80GB-HBM3", 8, 2), slot("l40s", "NVIDIA-L40S", 4, 0)],
                    )],
                ),
                ClusterState::new("lab", "slurm"),
            ],
            ..FleetState::default()
        };
        let text = summary(&state);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "fleet (3 clusters):");
        assert_eq!(lines[1], "  h100  24 total · 8 allocated · 8 idle · 8 unavailable  (fd22, k8s-prod)");
        assert_eq!(lines[2], "  l40s  4 total · 0 allocated · 4 idle · 0 unavailable  (k8s-prod)");
        assert!(lines[3].starts_with("fd22 (slurm"), "{text}");
        // Per cluster the same counting: the drained node's GPUs are unavailable.
        assert!(text.contains("\n  h100  16     6          2     8\n"), "{text}");
        assert!(!text.contains("NVIDIA-H100"), "the canonical model, not the label: {text}");

        // One cluster: no fleet line.
        let one = FleetState { clusters: vec![state.clusters[0].clone()], ..FleetState::default() };
        assert!(summary(&one).starts_with("fd22 (slurm"));
    }

    #[test]
    fn summary_prints_a_hostile_name_kind_release_and_error_readably() {
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{9b}31m\u{202E}c\u{2066}";
        let mut c = cluster(&format!("hub-{hostile}"), &format!("slurm{hostile}"), Vec::new());
        let snapshot = Snapshot { release: Some(format!("24.11 {hostile}")), ..Snapshot::default() };
        c.snapshot = Some(Arc::new(snapshot));
        c.health = Health::Stale { since: chrono::Utc::now(), error: format!("down {hostile}"), last_ok: None };
        let text = summary(&FleetState { clusters: vec![c], ..FleetState::default() });
        assert!(!text.chars().any(|c| c != '\n' && crate::safe_text::is_unsafe(c)), "{text:?}");
        let seen = "a\u{FFFD}]0;pwned\u{FFFD}b\u{FFFD}31m\u{FFFD}c\u{FFFD}";
        let head = text.lines().next().unwrap();
        assert!(head.starts_with(&format!("hub-{seen} (slurm{seen} 24.11 {seen}): STALE since ")), "{head}");
        assert!(head.ends_with(&format!(" — down {seen}")), "{head}");
    }

    #[test]
    fn json_output_escapes_del_c1_and_bidi_controls_and_reads_back() {
        let mut j = sample_job();
        j.name = "a\u{1b}]0;pwned\u{7}b\u{7f}\u{9b}2J\u{202E}c\u{2066}\u{200F}\u{061C}\nd".into();
        let text = json(&[JobRow::from(&j)]);
        assert!(!text.chars().any(|c| c != '\n' && crate::safe_text::is_unsafe(c)), "{text}");
        assert!(
            text.contains(r#""name": "a\u001b]0;pwned\u0007b\u007f\u009b2J\u202ec\u2066\u200f\u061c\nd""#),
            "{text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back[0]["name"].as_str(), Some(j.name.as_str()));
        assert_eq!(
            json(&[1, 2]),
            serde_json::to_string_pretty(&[1, 2]).unwrap(),
            "nothing to escape: as serde_json wrote it"
        );
    }

    #[test]
    fn escaping_writer_escapes_a_character_split_across_writes_once_it_is_whole() {
        // U+202E is three bytes, U+009B two: fed a byte at a time, each still becomes one
        // escape, and text around them passes as written.
        let text = "x\u{202E}y\u{9b}z é";
        let mut out = Vec::new();
        let mut writer = EscapingWriter::new(&mut out);
        for byte in text.as_bytes() {
            writer.write_all(std::slice::from_ref(byte)).unwrap();
        }
        writer.finish().unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "x\\u202ey\\u009bz é");
    }

    #[test]
    fn streamed_rows_read_as_the_vector_of_rows() {
        let mut a = sample_job();
        a.name = "one\u{7f}".into();
        let jobs = [a, sample_job()];
        let rows: Vec<JobRow> = jobs.iter().map(JobRow::from).collect();
        assert_eq!(json(&SeqOf::new(&jobs, JobRow::from)), json(&rows));
    }

    #[test]
    fn json_rows_carry_the_canonical_model_and_the_product() {
        let n = gpu_node("k", NodeState::Idle, vec![slot("h200", "NVIDIA-H200", 8, 0)]);
        let v = serde_json::to_value(NodeRow::from(&n)).unwrap();
        assert_eq!((v["gpu_type"].as_str(), v["gpu_product"].as_str()), (Some("h200"), Some("NVIDIA-H200")));
        assert_eq!(v["gpu_shared"], serde_json::json!(false));
        let mut j = Job::new(crate::model::JobRef::new("k", "ml:a"), crate::model::JobState::Running);
        j.gpu_model = Some("h200".into());
        j.gpu_product = Some("NVIDIA-H200".into());
        let v = serde_json::to_value(JobRow::from(&j)).unwrap();
        assert_eq!((v["gpu_type"].as_str(), v["gpu_product"].as_str()), (Some("h200"), Some("NVIDIA-H200")));
    }

    #[test]
    fn table_aligns_and_sanitises() {
        let t =
            table(&["A", "BB"], &[vec!["long value".into(), "x\x1b[2Jy".into()], vec!["s\u{202e}".into(), "t".into()]]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "A           BB");
        assert_eq!(lines[1], "long value  x\u{FFFD}[2Jy");
        assert_eq!(lines[2], "s\u{FFFD}          t");
    }

    fn sample_job() -> Job {
        use crate::model::{JobRef, JobState};
        let mut j = Job::new(JobRef::new("fd22", "41"), JobState::Running);
        j.name = "train".into();
        j.user = "alice".into();
        j.partition = "gpu".into();
        j.gpus_requested = 4;
        j.gpus_allocated = 4;
        j.gpu_model = Some("a100".into());
        j.nodes = vec!["gpu-01".into(), "gpu-02".into()];
        j.node_count = 2;
        j
    }

    #[test]
    fn jobs_table_uses_the_shared_columns() {
        let j = sample_job();
        let t = jobs_table(&[(&j, None)]);
        let lines: Vec<&str> = t.lines().collect();
        let header: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(header, ["REF", "NAME", "USER", "PARTITION", "STATE", "REASON", "GPUS", "NODES"]);
        let row: Vec<&str> = lines[1].split_whitespace().collect();
        // No reason: `-`, so that the row has as many words as the header.
        assert_eq!(row, ["fd22/41", "train", "alice", "gpu", "running", "-", "a100×4", "gpu-01,gpu-02"]);
    }

    #[test]
    fn gpu_use_column_and_json_appear_only_where_measured() {
        let j = sample_job();
        assert!(!jobs_table(&[(&j, None)]).contains("GPU%"));
        let used = JobGpuUse {
            job: "41".into(),
            gpus: 4,
            mean_utilisation: Some(2.4),
            below_since: chrono::DateTime::from_timestamp(1_800_000_000, 0),
            idle: true,
        };
        let t = jobs_table(&[(&j, Some(&used))]);
        let header: Vec<&str> = t.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header.last(), Some(&"GPU%"));
        assert!(t.lines().nth(1).unwrap().ends_with("idle(2%)"), "{t}");
        let json = serde_json::to_value(JobRow::from(&j).with_gpu_use(Some(&used))).unwrap();
        assert_eq!(json["gpu_use"]["idle"], true);
        assert_eq!(json["gpu_use"]["gpus_measured"], 4);
        assert_eq!(json["gpu_use"]["below_threshold_since"], "2027-01-15T08:00:00+00:00");
        assert!(serde_json::to_value(JobRow::from(&j)).unwrap().get("gpu_use").is_none());
    }

    #[test]
    fn cost_column_appears_only_when_a_job_has_a_price() {
        let mut j = sample_job();
        assert!(!jobs_table(&[(&j, None)]).contains("$/H"));
        j.cost_per_hour = Some(2.494);
        let t = jobs_table(&[(&j, None)]);
        let header: Vec<&str> = t.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header.last(), Some(&"$/H"));
        assert!(t.lines().nth(1).unwrap().ends_with("2.49"), "{t}");
        let json = serde_json::to_value(JobRow::from(&j)).unwrap();
        assert_eq!(json["cost_per_hour"], 2.494);
    }

    #[test]
    fn nodes_table_uses_the_shared_columns() {
        use crate::model::{GpuSlot, NodeState};
        let mut n = Node::new("fd22", "gpu-01", NodeState::Drained);
        n.flags = vec!["DRAIN".into()];
        n.gpus = vec![GpuSlot {
            model: "h100".into(),
            total: 8,
            allocated: 2,
            unhealthy: 0,
            utilisation: None,
            gpu_product: None,
            shared: false,
        }];
        n.cpus_total = 64;
        n.cpus_allocated = 16;
        n.reason = Some("ECC".into());
        n.reason_user = Some("root".into());
        let t = nodes_table(&[&n]);
        let lines: Vec<&str> = t.lines().collect();
        let header: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(header, ["NODE", "STATE", "GPUS", "GPU_TYPE", "CPU", "PARTITIONS", "REASON"]);
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["fd22/gpu-01", "drained", "2/8", "h100", "16/64", "-", "ECC", "·", "by", "root"]
        );
    }
}
