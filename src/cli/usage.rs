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
use crate::model::usage::{self, Usage, UsageAsk, UsageBy, UsageRow};
use crate::model::{History, HistoryQuery};
use crate::output;

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
    let query = HistoryQuery { since, user: None, states: Vec::new(), limit: usage::WINDOW_LIMIT };
    let names = fleet.cluster_names();
    let answers = join_all(names.iter().map(|name| fleet.history(name, &query))).await;
    let answers: Vec<(String, Result<History, String>)> =
        names.into_iter().zip(answers).map(|(name, answer)| (name, answer.map_err(|e| e.to_string()))).collect();
    failed |= answers.iter().any(|(_, a)| a.is_err());
    let windows = usage::window_answers(answers);
    let sources = usage::window_sources(&windows);
    let idle_below_percent = Some(config.idle.below_percent);
    let mut computed = usage::compute(
        &state,
        &UsageAsk { by: ask.by, now: Utc::now(), window: Some((since, &sources)), idle_below_percent },
    );
    // Fair share beside the usage: one sshare per Slurm cluster, all at once.
    let shares = join_all(windows.iter().map(|(name, _, _)| fleet.fair_share(name))).await;
    for ((name, _, _), share) in windows.iter().zip(shares) {
        match share {
            Ok(Some(rows)) => computed.fair_share.extend(rows),
            Ok(None) => {}
            Err(e) => {
                failed = true;
                computed.not_known.push(format!("{name}: fair share: {e}"));
            }
        }
    }
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
pub fn table(u: &Usage) -> String {
    let header = usage::header(u.by);
    let mut rows: Vec<Vec<String>> = u.rows.iter().map(UsageRow::cells).collect();
    let mut total = u.total.cells();
    total[0] = "TOTAL".into();
    rows.push(total);
    let mut text = output::table(&header, &rows);
    if !u.fair_share.is_empty() {
        let shares: Vec<Vec<String>> = u.fair_share.iter().map(usage::FairShare::cells).collect();
        text.push_str("\nFair share (the scheduler's sshare):\n");
        text.push_str(&output::table(&usage::FAIR_SHARE_HEADER, &shares));
    }
    if !u.queue_quota.is_empty() {
        let quotas: Vec<Vec<String>> = u.queue_quota.iter().map(usage::QueueQuotaRow::cells).collect();
        text.push_str("\nQueue quota (GPUs granted, borrowed and used per flavor):\n");
        text.push_str(&output::table(&usage::QUEUE_QUOTA_HEADER, &quotas));
    }
    text
}
