//! `flightdeck why REF...`: why each job waits, in words, with the evidence of one refresh
//! (see `fleet::why`), and for a pending job the scheduler's start estimate: the planned start
//! its record already carries, else asked for that one job (Slurm `squeue --start -j`, never
//! part of a refresh). Where the record carries the plan, a `why` costs the controller only
//! the refresh's RPCs (3, as `sdiag` counts them on both releases). A job waiting on
//! `Priority` or `Resources` also gets its priority's parts and its user's fair share
//! (Slurm `sprio -j`, `sshare -u`: one RPC each, for that job only).

use std::process::ExitCode;
use std::time::Duration;

use super::{Failure, OutputFormat, exit, first_refresh, start_fleet};
use crate::config::Config;
use crate::fleet::why::{Why, why};
use crate::model::JobRef;
use crate::output;

pub async fn explain(
    config: &Config,
    read_only: bool,
    jobs: &[JobRef],
    format: OutputFormat,
) -> Result<ExitCode, Failure> {
    let clusters: Vec<String> = jobs.iter().map(|j| j.cluster.clone()).collect();
    // An unknown cluster is refused by the fleet builder, by name.
    let fleet = start_fleet(config, read_only, &clusters, true).await?;
    let (state, mut failed) = first_refresh(config, &fleet).await;
    let mut answers = Vec::new();
    for job in jobs {
        let snapshot = state.cluster(&job.cluster).and_then(|c| c.snapshot.as_deref());
        match snapshot.and_then(|s| s.job(&job.id).map(|j| (s, j))) {
            Some((snapshot, found)) => {
                let mut answer = why(snapshot, found);
                if answer.wants_priority() {
                    let limit = config.cluster(&job.cluster).map_or(Duration::from_secs(30), |c| c.timeout);
                    match tokio::time::timeout(limit, fleet.priority_details(found)).await {
                        Ok(Ok(lines)) => answer.evidence.extend(lines),
                        Ok(Err(error)) => tracing::info!(%job, %error, "no priority details"),
                        Err(_) => tracing::info!(%job, "the priority details timed out"),
                    }
                }
                if answer.wants_estimate() {
                    let limit = config.cluster(&job.cluster).map_or(Duration::from_secs(30), |c| c.timeout);
                    // An estimate is a courtesy: a backend without one, or one that fails,
                    // leaves the answer as it is (the failure goes to the log).
                    match tokio::time::timeout(limit, fleet.estimate_job_start(job)).await {
                        Ok(Ok(estimate)) => answer.expected_start = estimate,
                        Ok(Err(error)) => tracing::info!(%job, %error, "no start estimate"),
                        Err(_) => tracing::info!(%job, "the start estimate timed out"),
                    }
                }
                answers.push(answer);
            }
            None => {
                eprintln!("{job}: no such job in the cluster's last snapshot (it may have ended)");
                failed = true;
            }
        }
    }
    match format {
        OutputFormat::Json => output::print_json(&answers),
        OutputFormat::Table => print!("{}", text(&answers)),
    }
    Ok(exit(failed))
}

/// Each job: its state and reason, what the reason means, then the evidence indented.
fn text(answers: &[Why]) -> String {
    let mut out = String::new();
    for w in answers {
        let reason = w.reason.as_deref().map(output::printable).unwrap_or_else(|| "no reason given".into());
        out.push_str(&format!("{}  {}  {reason}\n", w.job, w.state));
        if let Some(meaning) = &w.meaning {
            out.push_str(&format!("  {meaning} ({})\n", w.outlook.unwrap_or("")));
        }
        for line in &w.evidence {
            out.push_str(&format!("  - {}\n", output::printable(line)));
        }
        if let Some(start) = &w.expected_start {
            let on = start.nodes.as_deref().map(|n| format!(" on {}", output::printable(n))).unwrap_or_default();
            out.push_str(&format!(
                "  expected start: {}{on} (the scheduler's estimate: it moves as jobs end early or others arrive)\n",
                start.at.format("%Y-%m-%d %H:%M UTC")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobState;

    #[test]
    fn the_text_names_the_job_the_meaning_and_the_evidence() {
        let answers = [Why {
            job: "hpc/7".into(),
            state: JobState::Pending,
            reason: Some("Priority".into()),
            meaning: Some("jobs of higher priority are ahead of it in the partition".into()),
            outlook: Some("waits"),
            evidence: vec!["3 pending jobs in partition gpu have a higher priority than its 10\u{1b}[2J".into()],
            expected_start: Some(crate::model::StartEstimate {
                at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
                nodes: Some("gpu-[01-02]".into()),
                partition: None,
                processors: None,
            }),
        }];
        assert_eq!(
            text(&answers),
            "hpc/7  pending  Priority\n  jobs of higher priority are ahead of it in the partition (waits)\n  - 3 pending \
             jobs in partition gpu have a higher priority than its 10\u{fffd}[2J\n  expected start: 2027-01-15 08:00 UTC on \
             gpu-[01-02] (the scheduler's estimate: it moves as jobs end early or others arrive)\n"
        );
    }
}
