//! `flightdeck advise SPEC|REF`: every cluster ranked for one job (see `fleet::advice`), from
//! one refresh of the fleet, plus the scheduler's own start estimate for the best Slurm
//! clusters, asked once, a few at a time, each bounded by its cluster's timeout. Where the
//! scheduler answers that it would refuse the job, that overrules the snapshot: `cannot`.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use super::{Failure, OutputFormat, exit, first_refresh, spec, start_fleet};
use crate::backend::{BackendError, Registry};
use crate::config::Config;
use crate::fleet::Fleet;
use crate::fleet::advice::{self, Advice, Options, Verdict};
use crate::model::JobRef;
use crate::output;
use crate::spec::JobSpec;

/// Slurm clusters asked for an estimate: the best-ranked ones only, since each answer costs
/// the scheduler a planning pass.
pub const ESTIMATES: usize = 3;

/// What `advise` was given.
enum Target {
    File(Box<JobSpec>),
    Job(JobRef),
}

pub async fn advise(config: &Config, read_only: bool, what: &str, format: OutputFormat) -> Result<ExitCode, Failure> {
    let target = target(config, what)?;
    let fleet = start_fleet(config, read_only, &[], true).await?;
    let (state, failed) = first_refresh(config, &fleet).await;
    let (spec, job) = match &target {
        Target::File(spec) => ((**spec).clone(), None),
        Target::Job(job) => {
            let found = state.cluster(&job.cluster).and_then(|c| c.snapshot.as_deref()).and_then(|s| s.job(&job.id));
            let Some(found) = found else {
                return Err(Failure(format!("{job}: no such job in the cluster's last snapshot")));
            };
            (advice::spec_of_job(found), Some((job.clone(), found.state.is_waiting())))
        }
    };
    let opts =
        Options { exclude: job.as_ref().map(|(r, _)| r), partition_on: job.as_ref().map(|(r, _)| r.cluster.as_str()) };
    let mut ranked = advice::advise_with(&state, &spec, &opts);
    estimates(config, &fleet, &mut ranked, &spec, job.as_ref()).await;
    match format {
        OutputFormat::Json => {
            output::print_json(&ranked);
        }
        OutputFormat::Table => print!("{}", table(&ranked)),
    }
    Ok(exit(failed))
}

/// A file that exists is a job file (any dialect, or the portable TOML); otherwise a
/// `CLUSTER/ID` of a configured cluster.
fn target(config: &Config, what: &str) -> Result<Target, Failure> {
    let path = Path::new(what);
    if path.is_file() {
        let imported = spec::read_job_file(&Registry::builtin(), path, None)?;
        spec::print_warnings(&imported.warnings);
        return Ok(Target::File(Box::new(imported.spec)));
    }
    match what.parse::<JobRef>() {
        Ok(job) if config.clusters.iter().any(|c| c.name == job.cluster) => Ok(Target::Job(job)),
        Ok(job) if !path.exists() && !what.ends_with(".toml") => {
            let names: Vec<&str> = config.clusters.iter().map(|c| c.name.as_str()).collect();
            Err(Failure(format!(
                "`{what}` is neither a job file nor a job of a configured cluster (no cluster `{}`; configured: {})",
                job.cluster,
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            )))
        }
        _ => Err(Failure(format!("cannot read {what}: no such file (give a job file or CLUSTER/ID)"))),
    }
}

/// The scheduler's estimate for the [`ESTIMATES`] best clusters whose kind estimates starts
/// (`Placement::start_estimates`: Slurm) that could take the job, all at once, each within its cluster's timeout. A live job on its own cluster is
/// asked about itself (`squeue --start`); elsewhere its spec (`sbatch --test-only`) is.
async fn estimates(
    config: &Config,
    fleet: &Fleet,
    ranked: &mut [Advice],
    spec: &JobSpec,
    job: Option<&(JobRef, bool)>,
) {
    let state = fleet.state();
    let estimates_start = |cluster: &str| state.cluster(cluster).is_some_and(|c| c.placement.start_estimates);
    let chosen: Vec<usize> = ranked
        .iter()
        .enumerate()
        .filter(|(_, a)| estimates_start(&a.cluster) && matches!(a.verdict, Verdict::Now | Verdict::Queued))
        .map(|(i, _)| i)
        .take(ESTIMATES)
        .collect();
    let asks = chosen.iter().map(|&i| {
        let cluster = ranked[i].cluster.clone();
        let limit = config
            .clusters
            .iter()
            .find(|c| c.name == cluster)
            .map_or(Duration::from_secs(30), |c| c.timeout)
            .saturating_add(Duration::from_secs(5));
        // A live job's partition is its own cluster's: elsewhere the default applies.
        let mut spec = spec.clone();
        if job.is_some_and(|(r, _)| r.cluster != cluster) {
            spec.partition = None;
        }
        async move {
            let asked = async {
                match job {
                    Some((r, waiting)) if r.cluster == cluster => {
                        if *waiting {
                            fleet.estimate_job_start(r).await
                        } else {
                            Ok(None)
                        }
                    }
                    _ => fleet.estimate_start(&cluster, &spec).await,
                }
            };
            match tokio::time::timeout(limit, asked).await {
                Ok(result) => result,
                Err(_) => Err(BackendError::Timeout { what: "the start estimate".into(), secs: limit.as_secs() }),
            }
        }
    });
    let answers = futures_util::future::join_all(asks).await;
    let mut refused = false;
    for (i, answer) in chosen.into_iter().zip(answers) {
        match answer {
            Ok(estimate) => ranked[i].estimate = estimate,
            // The scheduler itself answered that it would refuse the job (`sbatch
            // --test-only` exits 1: "Requested node configuration is not available"): its
            // word beats what the snapshot suggested.
            Err(BackendError::Command { status: Some(1), stderr, .. }) => {
                let a = &mut ranked[i];
                a.reason = format!("the scheduler refuses it: {}", stderr.trim());
                a.verdict = Verdict::Cannot;
                refused = true;
            }
            Err(e) => ranked[i].estimate_error = Some(e.to_string()),
        }
    }
    if refused {
        // Stable: the order within each verdict stays the ranking's.
        ranked.sort_by_key(|a| a.verdict);
        for (i, a) in ranked.iter_mut().enumerate() {
            a.rank = i + 1;
        }
    }
}

/// `RANK CLUSTER VERDICT REASON $/H` (and `START` where an estimate was asked), then each
/// cluster's caveats and estimate errors.
pub fn table(ranked: &[Advice]) -> String {
    let with_start = ranked.iter().any(|a| a.estimate.is_some() || a.estimate_error.is_some());
    let mut header = vec!["RANK", "CLUSTER", "VERDICT", "REASON", "$/H"];
    if with_start {
        header.push("START");
    }
    let rows: Vec<Vec<String>> = ranked
        .iter()
        .map(|a| {
            let mut row = vec![
                a.rank.to_string(),
                a.cluster.clone(),
                a.verdict.to_string(),
                a.reason.clone(),
                a.price_per_hour.map(crate::columns::format::cost).unwrap_or_else(|| "-".into()),
            ];
            if with_start {
                row.push(match (&a.estimate, &a.estimate_error) {
                    (Some(e), _) => e.at.format("%Y-%m-%d %H:%M UTC").to_string(),
                    (None, Some(_)) => "?".into(),
                    (None, None) => "-".into(),
                });
            }
            row
        })
        .collect();
    let mut out = output::table(&header, &rows);
    if ranked.is_empty() {
        out.push_str("no clusters configured\n");
    }
    for a in ranked {
        for caveat in &a.caveats {
            out.push_str(&output::printable(&format!("{}: note: {caveat}", a.cluster)));
            out.push('\n');
        }
        if let Some(e) = &a.estimate_error {
            out.push_str(&output::printable(&format!("{}: no start estimate: {e}", a.cluster)));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hub_supplied_cluster_name_prints_readably_in_every_line() {
        let name = "hub-\u{1b}]0;pwned\u{7}\u{9b}2J\u{202E}x";
        let advice = Advice {
            rank: 1,
            cluster: name.into(),
            kind: "slurm".into(),
            verdict: Verdict::Now,
            reason: "8 idle".into(),
            partition: None,
            idle_gpus: 8,
            total_gpus: 8,
            ahead: 0,
            price_per_hour: None,
            stale: false,
            caveats: vec!["pyxis \u{85}unknown".into()],
            estimate: None,
            estimate_error: Some("timed out \u{2066}".into()),
        };
        let text = table(&[advice]);
        assert!(!text.chars().any(|c| c != '\n' && crate::safe_text::is_unsafe(c)), "{text:?}");
        let seen = "hub-\u{FFFD}]0;pwned\u{FFFD}\u{FFFD}2J\u{FFFD}x";
        assert!(text.contains(&format!("{seen}: note: pyxis \u{FFFD}unknown\n")), "{text}");
        assert!(text.contains(&format!("{seen}: no start estimate: timed out \u{FFFD}\n")), "{text}");
    }
}
