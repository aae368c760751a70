//! Slurm through its CLI, run locally or on a login node over SSH.
//!
//! One refresh costs one job query and one node query: `squeue --Format` with only the
//! fields a job is made of (`parse::fields`, ~20× smaller than `squeue --json`) plus
//! `sinfo --json` (21.08/22.05) or `scontrol show node --json` (23.02+), run concurrently
//! over the same SSH master. The release is learnt once per connection. Where the field
//! listing fails the backend reads `squeue --json`, and where `--json` is missing or broken
//! pipe-separated text, for the rest of the connection.

pub mod batch;
pub mod commands;
pub mod config;
pub mod dialect;
pub mod discover;
pub mod estimate;
pub mod history;
pub mod jobspec;
pub mod parse;
pub mod per_node;
pub mod priority;
pub mod rpc_meter;
pub mod script;
pub mod sdiag;
pub mod sshare;
pub mod telemetry;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::Utc;
use tokio::sync::Mutex;

use crate::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, KindEntry, LogChunk, NodeAction};
use crate::config::ClusterConfig;
use crate::model::{Caveat, Partitions, Placement};
use crate::model::{FieldUse, JobRef, LogHandle, Native, Need, Snapshot, SpecFields};
use crate::spec::{Imported, JobSpec};

pub use self::config::{KnownHosts, SlurmConfig, TelemetryVia};
use self::parse::{JobsDoc, NodesDoc};
use crate::backend::exec::{self as transport, Transport, display_argv};

/// How the job list is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// `squeue --Format` with the model's fields (see [`parse::fields`]).
    Fields,
    /// `squeue --json`.
    Json,
    /// `squeue -o` with `|` (the oldest fallback).
    Text,
}

/// What one refresh moved over the link, for `doctor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RefreshCost {
    pub job_bytes: u64,
    pub node_bytes: u64,
    pub jobs: usize,
    pub nodes: usize,
}

/// How this connection reads jobs and nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Probe {
    generation: u64,
    release: Option<String>,
    /// `sinfo --json` still lists nodes one by one (21.08, 22.05).
    per_node_sinfo: bool,
    jobs: Listing,
    nodes_json: bool,
    /// Whether `srun` knows `--container-image` (pyxis); learnt on the first image submit.
    pyxis: Option<bool>,
}

impl Probe {
    /// The release prints a wrong default output path for array tasks in `squeue --Format`
    /// (22.05 and before; see `parse::fields`).
    fn old_output_paths(&self) -> bool {
        self.release.as_deref().is_some_and(|r| matches!(parse::slurm_release_family(r), parse::Family::A))
    }
}

pub struct SlurmBackend {
    name: String,
    transport: Transport,
    timeout: Duration,
    /// How the first refresh of a connection reads jobs (later ones fall back from it).
    listing: Listing,
    probe: Mutex<Option<Probe>>,
    /// Text records (squeue, sinfo) the last refresh left out because they did not check.
    text_dropped: (std::sync::atomic::AtomicUsize, std::sync::atomic::AtomicUsize),
    /// `nvidia-smi` on the busy nodes, for [`Backend::telemetry`].
    gpus: telemetry::GpuReader,
    /// Refreshes made, for `doctor`'s RPCs per refresh, and what the last one moved.
    meter: rpc_meter::RpcMeter,
    last_refresh: std::sync::Mutex<Option<RefreshCost>>,
}

/// What a Slurm cluster can do.
pub const CAPABILITIES: Capabilities = Capabilities {
    submit: true,
    cancel: true,
    hold_release: true,
    requeue: true,
    drain_resume: true,
    cordon_uncordon: false,
    delete: false,
    teardown: false,
};

/// Partitions are node sets a job stays in; the scheduler estimates starts; an image needs
/// pyxis, which no snapshot shows.
pub fn placement() -> Placement {
    Placement {
        partition: Partitions::NodeSets,
        start_estimates: true,
        caveats: vec![Caveat::new(
            "image",
            "the image runs only where the cluster has pyxis, which the snapshot does not say",
        )],
        ..Placement::default()
    }
}

/// The kind's line in the backend registry.
pub fn kind_entry() -> KindEntry {
    KindEntry {
        config: config::kind_config(),
        build: |cluster| {
            let cluster = crate::backend::registry::typed::<SlurmConfig>(cluster)?;
            Ok(Arc::new(SlurmBackend::new(&cluster)))
        },
        capabilities: CAPABILITIES,
        placement: placement(),
        dialects: vec![dialect::entry()],
        expand: None,
        discover: discover::discover,
    }
}

/// How this cluster's commands run: on this machine without `host`, else over SSH to it.
pub fn transport_for(cfg: &ClusterConfig<SlurmConfig>) -> Transport {
    match cfg.settings.ssh_target(cfg.timeout) {
        None => Transport::local(),
        Some(target) => Transport::ssh(target),
    }
}

impl SlurmBackend {
    pub fn new(cfg: &ClusterConfig<SlurmConfig>) -> Self {
        Self {
            name: cfg.name.clone(),
            transport: transport_for(cfg),
            timeout: cfg.timeout,
            listing: Listing::Fields,
            probe: Mutex::new(None),
            text_dropped: Default::default(),
            gpus: telemetry::GpuReader::new(
                cfg.settings.telemetry_via,
                cfg.settings.telemetry_max_nodes,
                &cfg.settings.nvidia_smi,
            ),
            meter: Default::default(),
            last_refresh: Default::default(),
        }
    }

    /// A backend that reads the pipe-separated text formats only (`squeue -o`, `sinfo -o`),
    /// as it does by itself when a cluster's field listing and `--json` are missing or broken.
    pub fn text_only(cfg: &ClusterConfig<SlurmConfig>) -> Self {
        Self { listing: Listing::Text, ..Self::new(cfg) }
    }

    /// A backend that lists jobs with `squeue --json` (the listing before the field format;
    /// what it falls back to), to hold the two to one result.
    pub fn json_listing(cfg: &ClusterConfig<SlurmConfig>) -> Self {
        Self { listing: Listing::Json, ..Self::new(cfg) }
    }

    /// What the last refresh moved over the link (`None` before the first).
    pub fn last_refresh(&self) -> Option<RefreshCost> {
        *self.last_refresh.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Learn the release once per connection (`sinfo --version` costs no controller RPC).
    async fn probe(&self) -> Result<Probe, BackendError> {
        {
            let probe = self.probe.lock().await;
            if let Some(p) = probe.as_ref().filter(|p| p.generation == self.transport.generation()) {
                return Ok(p.clone());
            }
        }
        let argv = commands::version();
        let out = self.transport.output(&argv, None, self.timeout).await?.into_result(&argv)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let release = text.split_whitespace().nth(1).map(str::to_string);
        let per_node_sinfo =
            release.as_deref().is_some_and(|r| matches!(parse::slurm_release_family(r), parse::Family::A));
        let p = Probe {
            generation: self.transport.generation(),
            release,
            per_node_sinfo,
            jobs: self.listing,
            nodes_json: self.listing != Listing::Text,
            pyxis: None,
        };
        tracing::info!(cluster = %self.name, release = ?p.release, "slurm release detected");
        *self.probe.lock().await = Some(p.clone());
        Ok(p)
    }

    async fn update_probe(&self, f: impl FnOnce(&mut Probe)) {
        if let Some(p) = self.probe.lock().await.as_mut() {
            f(p);
        }
    }

    /// The job list and the bytes it took: the field listing, else `--json`, else `-o` text.
    async fn fetch_jobs(&self, probe: &Probe) -> Result<(JobsDoc, u64), BackendError> {
        use std::sync::atomic::AtomicU64;
        if probe.jobs == Listing::Fields {
            let mark = parse::fields::listing_mark();
            let argv = commands::jobs_fields(&mark);
            let (cluster, old) = (self.name.clone(), probe.old_output_paths());
            let res = self
                .transport
                .stream_with_stderr(&argv, self.timeout, move |r| {
                    parse::fields::read_squeue_fields(
                        &cluster,
                        std::io::BufReader::with_capacity(1 << 16, r),
                        &mark,
                        old,
                    )
                })
                .await;
            match res {
                // A release without one of the fields says so on stderr, prints nothing and
                // exits 0: that is no empty queue.
                Ok((_, stderr)) if format_refused(&stderr) => {
                    tracing::warn!(cluster = %self.name, stderr = %stderr.trim(), "squeue --Format refused a field; using --json");
                }
                Ok((Ok(read), _)) => {
                    self.text_dropped.0.store(read.dropped, std::sync::atomic::Ordering::Relaxed);
                    return Ok((JobsDoc { release: None, jobs: read.jobs }, read.bytes));
                }
                Ok((Err(e), _)) => {
                    tracing::warn!(cluster = %self.name, error = %e, "squeue --Format unreadable; using --json");
                }
                Err(BackendError::Command { stderr, .. }) if format_refused(&stderr) => {
                    tracing::warn!(cluster = %self.name, stderr = %stderr.trim(), "squeue --Format refused; using --json");
                }
                Err(e) => return Err(e),
            }
            self.update_probe(|p| p.jobs = Listing::Json).await;
        }
        if matches!(probe.jobs, Listing::Fields | Listing::Json) {
            let argv = commands::jobs_json();
            let cluster = self.name.clone();
            let bytes = Arc::new(AtomicU64::new(0));
            let counted = bytes.clone();
            let res = self
                .transport
                .stream(&argv, self.timeout, move |r| {
                    let r = transport::Counting::new(r, counted);
                    parse::parse_jobs_json_reader(&cluster, std::io::BufReader::with_capacity(1 << 16, r))
                })
                .await;
            match res {
                Ok(Ok(doc)) => return Ok((doc, bytes.load(std::sync::atomic::Ordering::Relaxed))),
                Ok(Err(e)) => {
                    tracing::warn!(cluster = %self.name, error = %e, "squeue --json unreadable; using text output");
                }
                Err(e) if json_unsupported(&e) => {
                    tracing::warn!(cluster = %self.name, error = %e, "squeue --json unsupported; using text output");
                }
                Err(e) => return Err(e),
            }
            self.update_probe(|p| p.jobs = Listing::Text).await;
        }
        let mark = parse::record_mark();
        let argv = commands::jobs_text(&mark);
        let out = self.transport.output(&argv, None, self.timeout).await?.into_result(&argv)?;
        let (jobs, dropped) = parse::parse_squeue_records(&self.name, &String::from_utf8_lossy(&out.stdout), &mark)
            .map_err(|e| BackendError::Parse { what: display_argv(&argv), message: e.to_string() })?;
        self.text_dropped.0.store(dropped, std::sync::atomic::Ordering::Relaxed);
        Ok((JobsDoc { release: None, jobs }, out.stdout.len() as u64))
    }

    /// The node list and the bytes it took.
    async fn fetch_nodes(&self, probe: &Probe) -> Result<(NodesDoc, u64), BackendError> {
        if probe.nodes_json {
            let argv = commands::nodes_json(probe.per_node_sinfo);
            let cluster = self.name.clone();
            let bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let counted = bytes.clone();
            let res = self
                .transport
                .stream(&argv, self.timeout, move |r| {
                    let r = transport::Counting::new(r, counted);
                    parse::parse_nodes_json_reader(&cluster, std::io::BufReader::with_capacity(1 << 16, r))
                })
                .await;
            match res {
                Ok(Ok(doc)) => return Ok((doc, bytes.load(std::sync::atomic::Ordering::Relaxed))),
                Ok(Err(e)) => {
                    tracing::warn!(cluster = %self.name, error = %e, "node JSON unreadable; using text output")
                }
                Err(e) if json_unsupported(&e) => {
                    tracing::warn!(cluster = %self.name, error = %e, "node JSON unsupported; using text output")
                }
                Err(e) => return Err(e),
            }
            self.update_probe(|p| p.nodes_json = false).await;
        }
        let mark = parse::record_mark();
        let argv = commands::nodes_text(&mark);
        let out = self.transport.output(&argv, None, self.timeout).await?.into_result(&argv)?;
        let (nodes, dropped) = parse::parse_sinfo_records(&self.name, &String::from_utf8_lossy(&out.stdout), &mark)
            .map_err(|e| BackendError::Parse { what: display_argv(&argv), message: e.to_string() })?;
        self.text_dropped.1.store(dropped, std::sync::atomic::Ordering::Relaxed);
        Ok((NodesDoc { release: None, nodes, gpu_use: Vec::new() }, out.stdout.len() as u64))
    }

    async fn pyxis(&self) -> Result<bool, BackendError> {
        if let Some(known) = self.probe().await?.pyxis {
            return Ok(known);
        }
        let argv = commands::srun_help();
        let out = self.transport.output(&argv, None, self.timeout).await?;
        let found = String::from_utf8_lossy(&out.stdout).contains("--container-image");
        self.update_probe(|p| p.pyxis = Some(found)).await;
        Ok(found)
    }

    /// The script `sbatch` gets for `spec`: a container image only where pyxis is there
    /// (asked once per connection, and only when the spec has an image).
    async fn sbatch_script(&self, spec: &JobSpec) -> Result<String, BackendError> {
        spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
        let pyxis = if spec.image.is_some() { self.pyxis().await? } else { false };
        script::render_sbatch(spec, &script::SbatchOptions { pyxis })
    }

    /// The records of job `id` (an array job's tasks included): the JSON from 23.02 on, the
    /// text where there is none (21.08/22.05's `scontrol` has no `--json`) or it fails.
    async fn job_records(&self, job: &JobRef, id: &str) -> Result<Vec<jobspec::JobRecord>, BackendError> {
        let probe = self.probe().await?;
        let old = probe.release.as_deref().is_some_and(|r| matches!(parse::slurm_release_family(r), parse::Family::A));
        if probe.jobs != Listing::Text && !old {
            let argv = commands::show_job(id, true)?;
            let out = self.transport.output(&argv, None, self.timeout).await?;
            if out.success() {
                match jobspec::parse_show_job_json(&out.stdout) {
                    Ok(records) => return Ok(records),
                    Err(e) => {
                        tracing::warn!(cluster = %self.name, error = %e, "scontrol show job --json unreadable; using text")
                    }
                }
            } else {
                let e = self.job_query_error(job, &argv, &out);
                if !json_unsupported(&e) {
                    return Err(e);
                }
            }
        }
        let argv = commands::show_job(id, false)?;
        let out = self.transport.output(&argv, None, self.timeout).await?;
        if !out.success() {
            return Err(self.job_query_error(job, &argv, &out));
        }
        Ok(jobspec::parse_show_job_text(&String::from_utf8_lossy(&out.stdout)))
    }

    /// A failed `scontrol` about one job: an unknown id is "not found", in words.
    fn job_query_error(&self, job: &JobRef, argv: &[String], out: &transport::CmdOutput) -> BackendError {
        if out.stderr.contains("Invalid job id") {
            return BackendError::NotFound(format!("{job}: Slurm does not know this job (any more)"));
        }
        transport::command_error(argv, out.status, &out.stderr, &out.stdout)
    }

    /// Run an action command; Slurm's own complaint becomes the error.
    async fn act(&self, argv: Vec<String>, stdin: Option<&[u8]>) -> Result<String, BackendError> {
        let out = self.transport.output(&argv, stdin, self.timeout).await?;
        // scancel reports some failures ("Invalid job id specified") on stderr with exit 0
        // on older releases: an `error:` line is a failure whatever the status says.
        if out.success() && !out.stderr.contains("error:") {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        Err(transport::command_error(&argv, out.status, &out.stderr, &out.stdout))
    }

    /// Controller RPC counters (sdiag), for `doctor` and the load tests.
    pub async fn rpc_counts(&self) -> Result<sdiag::RpcCounts, BackendError> {
        let argv = commands::sdiag();
        let out = self.transport.output(&argv, None, self.timeout).await?.into_result(&argv)?;
        Ok(sdiag::parse_sdiag(&String::from_utf8_lossy(&out.stdout)))
    }
}

/// The most one log read asks for: well inside the transport's bound on captured output.
pub const MAX_LOG_READ: u64 = 8 << 20;

/// What [`commands::read_log`] printed: `SIZE START` on a line, then the bytes. The window
/// is computed here too, by the same rule, and must agree with the remote side's.
fn parse_log_read(argv: &[String], stdout: &[u8], from: Option<u64>, max_bytes: u64) -> Result<LogChunk, BackendError> {
    let bad = |message: &str| BackendError::Parse { what: display_argv(argv), message: message.to_string() };
    let nl = stdout.iter().position(|&b| b == b'\n').ok_or_else(|| bad("no size line"))?;
    let head = std::str::from_utf8(&stdout[..nl]).map_err(|_| bad("size line is not text"))?;
    let (size, start) = head.split_once(' ').ok_or_else(|| bad("size line has no start"))?;
    let size: u64 = size.trim().parse().map_err(|_| bad("not a file size"))?;
    let start: u64 = start.trim().parse().map_err(|_| bad("not an offset"))?;
    let (want_start, len, dropped) = crate::backend::log_window(size, from, max_bytes);
    if start != want_start {
        return Err(bad("the remote side chose another window"));
    }
    let data = &stdout[nl + 1..];
    let data = &data[..data.len().min(len as usize)];
    Ok(LogChunk { data: String::from_utf8_lossy(data).into_owned(), offset: start + data.len() as u64, dropped })
}

/// squeue's words for a `--Format` it cannot print (a field this release lacks, or no
/// `--Format` at all): the field listing is then left for `--json` on this connection. Any
/// other failure (the controller down) is the refresh's failure, not the format's.
fn format_refused(stderr: &str) -> bool {
    let s = stderr.to_ascii_lowercase();
    s.contains("invalid job format") || s.contains("unrecognized option") || s.contains("invalid option")
}

/// The job or node query failed in a way that says this Slurm cannot print JSON
/// (built without the data_parser plugins, or too old for `--json`).
fn json_unsupported(e: &BackendError) -> bool {
    match e {
        BackendError::Command { stderr, .. } => {
            let s = stderr.to_ascii_lowercase();
            s.contains("json")
                || s.contains("data_parser")
                || s.contains("serializer")
                || s.contains("unrecognized option")
        }
        BackendError::Parse { .. } => true,
        _ => false,
    }
}

#[async_trait]
impl Backend for SlurmBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.transport.commands_run())
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn spec_fields(&self) -> SpecFields {
        SpecFields {
            image: FieldUse::new("image", Need::Optional, "runs under pyxis, where the cluster has it"),
            account: FieldUse::new("account", Need::Optional, "Slurm account to charge"),
            partition: FieldUse::new("partition", Need::Optional, "default: the cluster's default"),
        }
    }

    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        let _refreshing = self.meter.refreshing();
        let probe = self.probe().await?;
        let (jobs, nodes) = tokio::join!(self.fetch_jobs(&probe), self.fetch_nodes(&probe));
        let ((mut jobs, job_bytes), (nodes, node_bytes)) = (jobs?, nodes?);
        let listing = self.probe.lock().await.as_ref().map_or(probe.jobs, |p| p.jobs);
        if listing == Listing::Fields {
            parse::fields::allocations_from_nodes(&mut jobs.jobs, &nodes.gpu_use);
        }
        let cost = RefreshCost { job_bytes, node_bytes, jobs: jobs.jobs.len(), nodes: nodes.nodes.len() };
        *self.last_refresh.lock().unwrap_or_else(|e| e.into_inner()) = Some(cost);
        let mut snap = Snapshot {
            cluster: self.name.clone(),
            taken_at: Some(Utc::now()),
            release: jobs.release.or(nodes.release).or(probe.release),
            jobs: jobs.jobs,
            nodes: nodes.nodes,
            queues: Vec::new(),
            notes: Vec::new(),
        };
        if let Some(p) = self.probe.lock().await.as_ref() {
            if p.jobs == Listing::Text {
                snap.notes.push("squeue --json unavailable: jobs read from text output".into());
            }
            if !p.nodes_json {
                snap.notes
                    .push("node JSON unavailable: allocated GPUs and memory are not in sinfo's text output".into());
            }
            for (what, count, used) in [
                ("squeue", &self.text_dropped.0, p.jobs != Listing::Json),
                ("sinfo", &self.text_dropped.1, !p.nodes_json),
            ] {
                let n = count.load(std::sync::atomic::Ordering::Relaxed);
                if used && n > 0 {
                    snap.notes.push(format!("{n} {what} text records did not check and were left out"));
                }
            }
        }
        snap.derive_queues();
        Ok(snap)
    }

    /// The login the cluster's commands run as (`id -un` over the same link): squeue names
    /// it as the owner of every job flightdeck submits.
    async fn acting_user(&self) -> Result<Option<String>, BackendError> {
        let argv: Vec<String> = vec!["id".into(), "-un".into()];
        let out = self.transport.output(&argv, None, self.timeout).await?.into_result(&argv)?;
        let user = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if user.is_empty() || user.contains(char::is_whitespace) {
            return Err(BackendError::Parse { what: "id -un".into(), message: format!("no login name in {user:?}") });
        }
        Ok(Some(user))
    }

    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError> {
        let script = self.sbatch_script(spec).await?;
        let argv = commands::sbatch_checked(&script::sbatch_argv(spec), script.len());
        let out = self.transport.output(&argv, Some(script.as_bytes()), self.timeout).await?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The exit status and a job id decide. An `error:` line beside both (a plugin's
        // complaint) is a warning: calling that a failure would invite a duplicate submit.
        match script::parse_sbatch_output(&stdout) {
            Some(id) if out.success() => {
                if !out.stderr.trim().is_empty() {
                    tracing::warn!(cluster = %self.name, job = %id, stderr = %out.stderr.trim(), "sbatch warned");
                }
                Ok(JobRef::new(self.name.clone(), id))
            }
            _ if out.status == Some(commands::SHORT_SCRIPT_EXIT) => {
                Err(BackendError::Connect { target: self.transport.describe(), message: out.stderr.trim().to_string() })
            }
            None if out.success() => {
                Err(BackendError::Parse { what: "sbatch".into(), message: format!("no job id in `{}`", stdout.trim()) })
            }
            _ => Err(transport::command_error(
                &commands::sbatch(&script::sbatch_argv(spec)),
                out.status,
                &out.stderr,
                &out.stdout,
            )),
        }
    }

    async fn render(&self, spec: &JobSpec) -> Result<Native, BackendError> {
        let mut text = self.sbatch_script(spec).await?;
        // The name also travels as one argv element (`--job-name=…`): show the whole call.
        let call = display_argv(&commands::sbatch(&script::sbatch_argv(spec)));
        text.insert_str(0, &format!("# {call} < this script\n"));
        Ok(Native { dialect: dialect::SBATCH, text, warnings: per_node::warnings(spec) })
    }

    async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        // An array is read whole, through its array job id.
        let id = commands::checked_job_id(&job.id)?;
        let base = id.split('_').next().unwrap_or(&id).to_string();
        let records = self.job_records(job, &base).await?;
        jobspec::check_batch(job, &records)?;
        let argv = commands::batch_script(&base)?;
        let out = self.transport.output(&argv, None, self.timeout).await?;
        if !out.success() {
            return Err(self.job_query_error(job, &argv, &out));
        }
        // A job whose script Slurm lost (or never had) prints an error, on some releases
        // with exit status 0.
        if out.stdout.is_empty() {
            return Err(BackendError::Unsupported(format!(
                "{job}: Slurm gives no batch script for it ({})",
                out.stderr.trim()
            )));
        }
        let script = String::from_utf8(out.stdout).map_err(|_| BackendError::Parse {
            what: display_argv(&argv),
            message: "the batch script is not UTF-8 text".into(),
        })?;
        jobspec::job_spec(job, &script, &records)
    }

    async fn estimate_start(&self, spec: &JobSpec) -> Result<Option<crate::backend::StartEstimate>, BackendError> {
        estimate::for_spec(self, spec).await
    }

    async fn estimate_job_start(&self, job: &JobRef) -> Result<Option<crate::backend::StartEstimate>, BackendError> {
        estimate::for_job(self, job).await
    }

    async fn priority_details(&self, job: &crate::model::Job) -> Result<Vec<String>, BackendError> {
        priority::explain(self, job).await
    }

    async fn history(&self, query: &crate::model::HistoryQuery) -> Result<Option<crate::model::History>, BackendError> {
        history::read(self, query).await.map(Some)
    }

    async fn fair_share(&self) -> Result<Option<Vec<crate::model::usage::FairShare>>, BackendError> {
        let argv = sshare::argv();
        let out = self.transport.output(&argv, None, self.timeout).await?.into_result(&argv)?;
        let (rows, skipped) = sshare::parse(&self.name, &String::from_utf8_lossy(&out.stdout));
        if skipped > 0 {
            tracing::warn!(cluster = %self.name, skipped, "sshare lines with another number of fields were skipped");
        }
        Ok(Some(rows))
    }

    async fn telemetry(&self, snapshot: &Snapshot) -> Result<Option<crate::model::Telemetry>, BackendError> {
        self.gpus.read(&self.transport, self.timeout, snapshot).await.map(Some)
    }

    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError> {
        let argv = match action {
            JobAction::Cancel => commands::scancel(&job.id)?,
            JobAction::Hold => commands::scontrol_job("hold", &job.id)?,
            JobAction::Release => commands::scontrol_job("release", &job.id)?,
            JobAction::Requeue => commands::scontrol_job("requeue", &job.id)?,
            JobAction::Delete => {
                return Err(BackendError::Unsupported(
                    "Slurm keeps no job records to delete: a finished job leaves the queue by itself".into(),
                ));
            }
        };
        self.act(argv, None).await.map(drop)
    }

    async fn job_actions(&self, jobs: &[JobRef], action: JobAction) -> Vec<Result<(), BackendError>> {
        let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        let commands = match batch::commands(action, &ids) {
            Ok(commands) => commands,
            Err(e) => return jobs.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut results = Vec::with_capacity(jobs.len());
        // One chunk after the other: each is one burst of RPCs for the controller.
        for (argv, chunk) in commands {
            match self.transport.output(&argv, None, self.timeout).await {
                Ok(out) => {
                    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), out.stderr);
                    let whole = transport::command_error(&argv, out.status, &out.stderr, &out.stdout).to_string();
                    for r in batch::results(&chunk, &text, !out.success(), &whole) {
                        results.push(r.map_err(|message| BackendError::Command {
                            command: display_argv(&argv[..argv.len().min(3)]),
                            status: out.status,
                            stderr: message,
                        }));
                    }
                }
                Err(e) => results.extend(chunk.iter().map(|_| Err(e.clone()))),
            }
        }
        results
    }

    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        let argv = match action {
            NodeAction::Drain { reason, .. } => commands::drain(node, reason)?,
            NodeAction::Resume => commands::resume(node)?,
            NodeAction::Cordon | NodeAction::Uncordon => {
                return Err(BackendError::Unsupported(format!(
                    "Slurm has no {}: use drain (with a reason) and resume",
                    action.verb()
                )));
            }
            NodeAction::Teardown => {
                return Err(BackendError::Unsupported(format!(
                    "{node} is a Slurm node, not a cloud cluster: it cannot be torn down from here"
                )));
            }
        };
        self.act(argv, None).await.map(|_| String::new())
    }

    async fn read_log(&self, log: &LogHandle, from: Option<u64>, max_bytes: u64) -> Result<LogChunk, BackendError> {
        // Slurm's handle is the output file's path on the cluster, written where the job's
        // user chose: read it only if it is that user's own regular file (never through a
        // link), size and bytes in one round trip.
        let path = log.as_str();
        let Some(owner) = log.owner() else {
            return Err(BackendError::Unsupported(format!("not reading {path}: the job's user is not known")));
        };
        let max_bytes = max_bytes.clamp(1, MAX_LOG_READ);
        let argv = commands::read_log(path, owner, from, max_bytes)?;
        let out = self.transport.output(&argv, None, self.timeout).await?;
        if out.status == Some(commands::REFUSED_READ_EXIT) {
            let why = out.stderr.lines().find_map(|l| l.strip_prefix("flightdeck: ")).unwrap_or("refused");
            return Err(BackendError::Unsupported(why.trim().to_string()));
        }
        let out = out.into_result(&argv)?;
        parse_log_read(&argv, &out.stdout, from, max_bytes)
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        let mut d = Diagnosis { transport: self.transport.describe(), ..Diagnosis::default() };
        let started = Instant::now();
        let probe = self.probe().await?;
        d.latency_ms = Some(started.elapsed().as_millis() as u64);
        d.release = probe.release.clone();
        // RPCs per refresh: where something in this process refreshes (a poller, as in a hub
        // or a cockpit), over its refreshes since the last `doctor` (`rpc_meter`); else
        // around one refresh made here (a `flightdeck doctor` of its own).
        let (snap, rpcs) = if self.meter.polled() {
            (None, self.meter.measure(self.timeout, || self.rpc_counts()).await.map(|m| m.text()))
        } else {
            let before = self.rpc_counts().await;
            let snap = self.snapshot().await;
            let rpcs = match (before, self.rpc_counts().await) {
                (Ok(b), Ok(a)) => Ok(rpc_meter::Measured::Around {
                    queries: a.queries_since(&b),
                    job_queries: a.count_since(&b, "REQUEST_JOB_INFO"),
                }
                .text()),
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            (Some(snap), rpcs)
        };
        let probe = self.probe.lock().await.clone().unwrap_or(probe);
        d.fact(
            "JSON output",
            if probe.jobs != Listing::Text && probe.nodes_json { "yes" } else { "no (text fallback)" },
        );
        let (listing, jobs) = match probe.jobs {
            Listing::Fields => (
                "squeue --Format: the job fields only (JSON for nodes and a job's detail)",
                commands::jobs_fields("~MARK"),
            ),
            Listing::Json => ("squeue --json (the field listing failed)", commands::jobs_json()),
            Listing::Text => ("squeue -o text (no field listing, no JSON)", commands::jobs_text("MARK")),
        };
        d.fact("job listing", listing);
        let nodes =
            if probe.nodes_json { commands::nodes_json(probe.per_node_sinfo) } else { commands::nodes_text("MARK") };
        for argv in [jobs, nodes] {
            d.fact("refresh runs", display_argv(&argv));
        }
        match rpcs {
            Ok(text) => d.fact("controller RPCs per refresh", text),
            Err(e) => {
                d.fact("controller RPCs per refresh", "not measured");
                d.notes.push(format!("sdiag unavailable, RPC cost not measured: {e}"));
            }
        }
        let snap = snap.transpose()?;
        if let Some(cost) = self.last_refresh() {
            d.fact(
                "bytes one refresh moved",
                format!(
                    "{} ({} for jobs, {} for nodes)",
                    cost.job_bytes + cost.node_bytes,
                    cost.job_bytes,
                    cost.node_bytes
                ),
            );
            d.fact(
                "bytes per job",
                if cost.jobs == 0 {
                    "no jobs listed".to_string()
                } else {
                    (cost.job_bytes / cost.jobs as u64).to_string()
                },
            );
            d.notes.push(format!("one refresh read {} jobs and {} nodes", cost.jobs, cost.nodes));
        }
        // Telemetry: how it runs, and how its last reading went (one now, on this refresh's
        // jobs, when this process has not read yet: a `flightdeck doctor` of its own).
        d.fact("GPU telemetry", self.gpus.describe());
        d.fact("GPU telemetry controller cost", self.gpus.cost());
        if let (None, Some(snap)) = (self.gpus.last(), &snap) {
            let _ = self.gpus.read(&self.transport, self.timeout, snap).await;
        }
        if let Some(last) = self.gpus.last() {
            let at = last.at.format("%Y-%m-%d %H:%M:%S UTC");
            d.fact(
                "GPU telemetry last reading",
                match &last.outcome {
                    Ok(r) if r.nodes_asked == 0 => format!("nothing to measure at {at} (no running job holds GPUs)"),
                    Ok(r) => {
                        format!("worked at {at}: {} of {} nodes read, {} GPUs", r.nodes_read, r.nodes_asked, r.gpus)
                    }
                    Err(e) => format!("failed at {at}: {e}"),
                },
            );
            if last.outcome.is_ok() {
                d.notes.extend(last.notes.iter().map(|n| format!("GPU telemetry: {n}")));
            }
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_squeues_words_about_the_format_leave_the_field_listing() {
        assert!(format_refused("squeue: error: Invalid job format specification: tres-per-task\n"));
        assert!(format_refused("squeue: unrecognized option '--Format=JobID'\n"));
        assert!(!format_refused("slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"));
        assert!(!format_refused(""));
    }

    #[test]
    fn a_log_read_is_a_size_line_then_bytes() {
        let argv = vec!["sh".to_string()];
        let c = parse_log_read(&argv, b"1000 900\nabc", None, 100).unwrap();
        assert_eq!((c.data.as_str(), c.offset, c.dropped), ("abc", 903, 0));
        let c = parse_log_read(&argv, b"2000 1900\n", Some(1000), 100).unwrap();
        assert_eq!((c.offset, c.dropped), (1900, 900));
        assert!(parse_log_read(&argv, b"1000 0\nabc", None, 100).is_err(), "a window that disagrees");
        assert!(parse_log_read(&argv, b"garbage", None, 100).is_err());
    }
}
