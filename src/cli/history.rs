//! `flightdeck jobs --since 1d`: the jobs that ended in a window, from each cluster's own
//! long memory (Slurm's accounting: one `sacct` call per cluster), with end time, exit code,
//! elapsed, max RSS and GPU hours.

use std::process::ExitCode;

use chrono::{DateTime, NaiveDate, Utc};
use futures_util::future::join_all;
use serde::Serialize;

use super::{Failure, OutputFormat, exit, start_fleet};
use crate::config::Config;
use crate::model::{History, HistoryQuery, JobRecord, JobState};
use crate::output::{self, JobRow};

/// What `jobs --since` was asked.
pub(super) struct HistoryRequest<'a> {
    pub clusters: &'a [String],
    pub user: Option<&'a str>,
    pub states: &'a [JobState],
    pub since: &'a str,
    pub limit: usize,
    pub format: OutputFormat,
}

/// `1d`, `6h`, `90m`, `2w`, `45s` back from `now`, or a date (`2026-12-01`, midnight UTC)
/// or an RFC 3339 time.
pub fn parse_since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    let bad = || format!("`{text}` is not a time: give an age (90m, 6h, 1d, 2w) or a date (2026-12-01)");
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc());
    }
    let age = crate::model::history::parse_age(text).map_err(|_| bad())?;
    now.checked_sub_signed(age).ok_or_else(bad)
}

/// A finished job as `jobs --since --output json` prints it: the job's fields, then what it used.
#[derive(Serialize)]
struct HistoryRow<'a> {
    #[serde(flatten)]
    job: JobRow<'a>,
    elapsed_secs: Option<u64>,
    max_rss_mb: Option<u64>,
    gpu_hours: Option<f64>,
}

pub(super) async fn history(config: &Config, read_only: bool, ask: HistoryRequest<'_>) -> Result<ExitCode, Failure> {
    let since = parse_since(ask.since, Utc::now()).map_err(Failure)?;
    if let Some(live) = ask.states.iter().find(|s| !s.is_finished()) {
        return Err(Failure(format!(
            "--since lists jobs that ended; {live} jobs are listed without it (flightdeck jobs --state {live})"
        )));
    }
    let query =
        HistoryQuery { since, user: ask.user.map(str::to_string), states: ask.states.to_vec(), limit: ask.limit };
    // No polling: a Slurm history is one sacct call and no refresh.
    let fleet = start_fleet(config, read_only, ask.clusters, false).await?;
    let names = fleet.cluster_names();
    let answers = join_all(names.iter().map(|name| fleet.history(name, &query))).await;
    let mut failed = false;
    let mut histories: Vec<History> = Vec::new();
    for (name, answer) in names.iter().zip(answers) {
        match answer {
            Ok(history) => {
                for note in &history.notes {
                    eprintln!("{}", output::printable(&format!("flightdeck: {name}: {note}")));
                }
                histories.push(history);
            }
            Err(e) => {
                failed = true;
                eprintln!("{}", output::printable(&format!("flightdeck: {name}: history: {e}")));
            }
        }
    }
    let records: Vec<&JobRecord> = histories.iter().flat_map(|h| &h.records).collect();
    match ask.format {
        OutputFormat::Table => print!("{}", output::history_table(&records)),
        OutputFormat::Json => {
            let rows: Vec<HistoryRow> = records
                .iter()
                .map(|r| HistoryRow {
                    job: JobRow::from(&r.job),
                    elapsed_secs: r.elapsed_secs,
                    max_rss_mb: r.max_rss_mb,
                    gpu_hours: r.gpu_hours,
                })
                .collect();
            output::print_json(&rows);
        }
    }
    Ok(exit(failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_dates_and_times_are_read_and_the_rest_named() {
        let now = DateTime::parse_from_rfc3339("2026-12-04T12:00:00Z").unwrap().with_timezone(&Utc);
        let at = |s: &str| parse_since(s, now).map(|t| t.to_rfc3339());
        assert_eq!(at("1d").unwrap(), "2026-12-03T12:00:00+00:00");
        assert_eq!(at("90m").unwrap(), "2026-12-04T10:30:00+00:00");
        assert_eq!(at("2w").unwrap(), "2026-11-20T12:00:00+00:00");
        assert_eq!(at("2026-12-01").unwrap(), "2026-12-01T00:00:00+00:00");
        assert_eq!(at("2026-12-04T11:00:00+01:00").unwrap(), "2026-12-04T10:00:00+00:00");
        for bad in ["", "d", "1y", "-1d", "yesterday", "99999999999999999999d"] {
            assert!(at(bad).unwrap_err().contains("is not a time"), "{bad}");
        }
    }
}
