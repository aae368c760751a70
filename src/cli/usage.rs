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
/// The window's dollars (`SPENT`) only where some row has a price, as `jobs` shows `$/H`.
pub fn table(u: &Usage) -> String {
    let mut header = usage::header(u.by).to_vec();
    let mut rows: Vec<Vec<String>> = u.rows.iter().map(UsageRow::cells).collect();
    let mut total = u.total.cells();
    total[0] = "TOTAL".into();
    rows.push(total);
    if u.rows.iter().chain([&u.total]).all(|r| r.cost_window.is_none()) {
        header.remove(usage::SPENT_COLUMN);
        for row in &mut rows {
            row.remove(usage::SPENT_COLUMN);
        }
    }
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
    fn the_windows_dollars_are_a_column_only_where_some_row_has_a_price() {
        let row = |key: &str, cost: Option<f64>, complete| UsageRow {
            key: key.into(),
            gpu_hours: Some(2.0),
            gpu_hours_complete: true,
            idle_gpu_hours_at_least: Some(0.0),
            cost_window: cost,
            cost_window_complete: complete,
            ..UsageRow::default()
        };
        let slurm =
            Usage { rows: vec![row("alice", None, false)], total: row("total", None, false), ..Usage::default() };
        let text = table(&slurm);
        let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header, ["USER", "JOBS", "GPUS", "IDLE", "$/H", "GPU-H", "IDLE-H", "MODELS"], "{text}");
        assert!(text.lines().all(|l| l.split_whitespace().count() == 8), "every row without it: {text}");
        let mixed = Usage {
            rows: vec![row("erin", Some(6.75), true), row("alice", None, false)],
            total: row("total", Some(6.75), false),
            ..Usage::default()
        };
        let text = table(&mixed);
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
        let at = lines[0].iter().position(|t| *t == "SPENT").expect(&text);
        assert_eq!((lines[1][at], lines[2][at], lines[3][at]), ("6.75", "?", ">=6.75"), "{text}");
    }

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
