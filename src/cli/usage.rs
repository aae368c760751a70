//! `flightdeck usage [--since 7d] [--by user|account|cluster|model]`: who holds the GPUs now
//! (one refresh and one telemetry reading) and the GPU-hours of the window (each cluster's
//! history: one `sacct` per Slurm cluster, what other clusters still list), computed by
//! `model::usage`; through a hub, the hub's part comes from its `Usage` call
//! (`fleet::usage`). What a source cannot say is named on stderr and in the JSON's `not_known`.

use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Failure, OutputFormat, exit, first_refresh, first_telemetry};
use crate::config::Config;
use crate::fleet::{Fleet, FleetOptions};
use crate::model::usage::{self, Usage, UsageBy, UsageQuery, UsageRow};
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
    /// The window's end (`None`: now).
    pub until: Option<&'a str>,
    pub by: UsageBy,
    pub format: OutputFormat,
}

pub(super) async fn usage(config: &Config, read_only: bool, ask: UsageRequest<'_>) -> Result<ExitCode, Failure> {
    let started = Utc::now();
    let since = super::history::parse_since(ask.since, started).map_err(Failure)?;
    let until = ask.until.map(|u| super::history::parse_since(u, started)).transpose().map_err(Failure)?;
    if let Some(until) = until {
        window_order(since, until, started).map_err(Failure)?;
    }
    let opts = FleetOptions {
        read_only,
        poll: true,
        audit: Some(super::audit_log()),
        actor: crate::fleet::audit::current_actor(),
    };
    let fleet = Fleet::builder(config).only(ask.clusters).connect(opts).await.map_err(|e| Failure(e.to_string()))?;
    let (_, mut failed) = first_refresh(config, &fleet).await;
    let longest = config.clusters.iter().map(|c| c.timeout).max().unwrap_or(Duration::from_secs(30));
    first_telemetry(&fleet, longest, false).await;
    // Through a hub, the hub computes its clusters' part (a viewer's rows their own); the
    // rest is summed here from one history and one sshare per cluster, all at once. The
    // window ends at `until`: records and running jobs are clipped to it.
    let query = UsageQuery { by: ask.by, since: Some(since), until };
    let answer = fleet.usage(&query, None).await;
    failed |= answer.failed;
    let computed = answer.usage;
    for line in &computed.not_known {
        eprintln!("{}", output::printable(&format!("flightdeck: not known: {line}")));
    }
    match ask.format {
        OutputFormat::Table => print!("{}", table(&computed)),
        OutputFormat::Json => output::print_json(&computed),
    }
    Ok(exit(failed))
}

/// A window that ends after it starts and not in the future, or why not.
pub fn window_order(since: DateTime<Utc>, until: DateTime<Utc>, now: DateTime<Utc>) -> Result<(), String> {
    if until <= since {
        return Err(format!("--until {until} is not after --since {since}: the window would be empty"));
    }
    if until > now {
        return Err(format!("--until {until} is in the future: the window ends now at the latest"));
    }
    Ok(())
}

/// The usage table with its total, then the fair share and the queue quota where known.
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
        text.push_str(&format!("\n{}:\n", usage::QUEUE_QUOTA_TITLE));
        text.push_str(&output::table(&usage::QUEUE_QUOTA_HEADER, &quotas));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_ends_after_it_starts_and_not_after_now() {
        let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        let now = at("2026-12-07T17:30:00Z");
        assert!(window_order(at("2026-12-07T14:00:00Z"), at("2026-12-07T17:00:00Z"), now).is_ok());
        let empty = window_order(at("2026-12-07T17:00:00Z"), at("2026-12-07T17:00:00Z"), now).unwrap_err();
        assert!(empty.contains("not after --since"), "{empty}");
        let future = window_order(at("2026-12-07T14:00:00Z"), at("2026-12-07T18:00:00Z"), now).unwrap_err();
        assert!(future.contains("in the future"), "{future}");
    }
}
