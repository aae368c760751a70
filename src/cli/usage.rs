//! `flightdeck usage [--since 7d] [--by user|account|cluster|model]`: who holds the GPUs now
//! (one refresh and one telemetry reading) and the GPU-hours of the window (each cluster's
//! history: one `sacct` per Slurm cluster, what other clusters still list), computed by
//! `model::usage`. What a source cannot say is named on stderr and in the JSON's `not_known`.

use std::process::ExitCode;
use std::time::Duration;

use chrono::Utc;
use futures_util::future::join_all;

use super::{Failure, OutputFormat, exit, first_refresh, first_telemetry};
use crate::config::Config;
use crate::fleet::{Fleet, FleetOptions};
use crate::model::usage::{self, Usage, UsageAsk, UsageBy, UsageRow, WindowSource};
use crate::model::{History, HistoryQuery};
use crate::output;

/// The most finished jobs read per cluster for a window: more are counted as left out, and
/// the window is then a lower bound.
pub const WINDOW_LIMIT: usize = 100_000;

/// `--by`: what the rows are.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum By {
    #[default]
    User,
    /// Slurm account, Kubernetes namespace, cloud project.
    Account,
    Cluster,
    /// Canonical GPU model.
    Model,
}

impl From<By> for UsageBy {
    fn from(by: By) -> Self {
        match by {
            By::User => UsageBy::User,
            By::Account => UsageBy::Account,
            By::Cluster => UsageBy::Cluster,
            By::Model => UsageBy::Model,
        }
    }
}

/// What `usage` was asked.
pub(super) struct UsageRequest<'a> {
    pub clusters: &'a [String],
    pub since: &'a str,
    pub by: UsageBy,
    pub format: OutputFormat,
}

pub(super) async fn usage(config: &Config, read_only: bool, ask: UsageRequest<'_>) -> Result<ExitCode, Failure> {
    let since = super::history::parse_since(ask.since, Utc::now()).map_err(Failure)?;
    let opts = FleetOptions {
        read_only,
        poll: true,
        audit: Some(super::audit_log()),
        actor: crate::fleet::audit::current_actor(),
    };
    let fleet = Fleet::builder(config).only(ask.clusters).connect(opts).await.map_err(|e| Failure(e.to_string()))?;
    let (_, mut failed) = first_refresh(config, &fleet).await;
    let longest = config.clusters.iter().map(|c| c.timeout).max().unwrap_or(Duration::from_secs(30));
    let state = first_telemetry(&fleet, longest, false).await;
    // Every end state, every user the source shows; one call per cluster, all at once.
    let query = HistoryQuery { since, user: None, states: Vec::new(), limit: WINDOW_LIMIT };
    let names = fleet.cluster_names();
    let answers = join_all(names.iter().map(|name| fleet.history(name, &query))).await;
    let windows: Vec<(String, History, Option<String>)> = names
        .into_iter()
        .zip(answers)
        .map(|(name, answer)| match answer {
            Ok(history) => {
                let gap = window_gap(&history);
                (name, history, gap)
            }
            Err(e) => {
                failed = true;
                (name, History::default(), Some(format!("history: {e}")))
            }
        })
        .collect();
    let sources: Vec<WindowSource> = windows
        .iter()
        .map(|(name, history, gap)| WindowSource { cluster: name, records: &history.records, gap: gap.as_deref() })
        .collect();
    let idle_below_percent = Some(config.idle.below_percent);
    let computed = usage::compute(
        &state,
        &UsageAsk { by: ask.by, now: Utc::now(), window: Some((since, &sources)), idle_below_percent },
    );
    for line in &computed.not_known {
        eprintln!("{}", output::printable(&format!("flightdeck: not known: {line}")));
    }
    match ask.format {
        OutputFormat::Table => print!("{}", table(&computed)),
        OutputFormat::Json => println!("{}", output::json(&computed)),
    }
    Ok(exit(failed))
}

/// What a cluster's history cannot say of the window: jobs past the limit, lines it could
/// not read, or (a kind without accounting) the finished jobs it no longer lists.
fn window_gap(history: &History) -> Option<String> {
    let mut gaps: Vec<String> = Vec::new();
    if history.source != "sacct" {
        gaps.push(format!("finished jobs counted only as {} still lists them", history.source));
    }
    if history.left_out > 0 {
        gaps.push(format!("{} older finished jobs past {WINDOW_LIMIT} left out", history.left_out));
    }
    gaps.extend(history.notes.iter().filter(|n| n.contains("did not read")).cloned());
    (!gaps.is_empty()).then(|| gaps.join("; "))
}

/// The usage table: one row per key, most held first, then the total. `?` is not known;
/// `>=` a lower bound (a source could not say all of it).
pub fn table(u: &Usage) -> String {
    let key = match u.by {
        UsageBy::User => "USER",
        UsageBy::Account => "ACCOUNT",
        UsageBy::Cluster => "CLUSTER",
        UsageBy::Model => "MODEL",
    };
    let header = [key, "JOBS", "GPUS", "IDLE", "$/H", "GPU-H", "MODELS"];
    let mut rows: Vec<Vec<String>> = u.rows.iter().map(cells).collect();
    let mut total = cells(&u.total);
    total[0] = "TOTAL".into();
    rows.push(total);
    output::table(&header, &rows)
}

fn cells(r: &UsageRow) -> Vec<String> {
    let idle = match (r.gpus_now, r.unmeasured_gpus_now) {
        (0, _) => "-".to_string(),
        (held, unmeasured) if unmeasured >= held => "?".to_string(),
        (_, 0) => r.idle_gpus_now.to_string(),
        _ => format!("{}+?", r.idle_gpus_now),
    };
    let cost = match (r.cost_per_hour, r.gpus_now) {
        (Some(c), _) => format!("{c:.2}"),
        (None, 0) => "-".to_string(),
        (None, _) => "?".to_string(),
    };
    let hours = match r.gpu_hours {
        None => "-".to_string(),
        Some(h) if r.gpu_hours_complete => format!("{h:.2}"),
        Some(h) if h > 0.0 => format!(">={h:.2}"),
        Some(_) => "?".to_string(),
    };
    let models: Vec<String> = r.models.iter().map(|m| format!("{}×{}", m.model, m.gpus)).collect();
    vec![
        if r.key.is_empty() { "-".into() } else { r.key.clone() },
        r.jobs_now.to_string(),
        r.gpus_now.to_string(),
        idle,
        cost,
        hours,
        if models.is_empty() { "-".into() } else { models.join(",") },
    ]
}
