//! Start estimates, asked of the scheduler on demand (`flightdeck advise`), never per refresh.
//!
//! * A spec: `sbatch --test-only` with the rendered batch script on standard input, the same
//!   script `submit` would send. Nothing is submitted; Slurm runs its planner once and
//!   prints, on stderr, `sbatch: Job 25 to start at 2026-12-03T14:28:20 using 1 processors on
//!   nodes h100-01 in partition gpu` (the job id is one it would have used, not a job). A spec
//!   that can never run there fails with Slurm's reason (`Requested node configuration is not
//!   available`), which becomes the error.
//! * A pending job: `squeue --start -j ID`, its backfill estimate (`N/A` when it has none,
//!   held jobs among them).
//!
//! Slurm prints times in the cluster's local zone without saying which; both commands run
//! under `TZ=UTC`, as the text refresh does, so the times read back as UTC.

use chrono::{DateTime, NaiveDateTime, Utc};

use super::{SlurmBackend, commands, script};
use crate::backend::{BackendError, StartEstimate};
use crate::model::JobRef;
use crate::spec::JobSpec;

use crate::backend::exec::{command_error, display_argv};

/// `env TZ=UTC sbatch --test-only …`: reads the script on standard input.
pub fn test_only_argv(extra: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = ["env", "TZ=UTC", "sbatch", "--test-only"].iter().map(|s| s.to_string()).collect();
    argv.extend(extra.iter().cloned());
    argv
}

/// `env TZ=UTC squeue --start -h -j ID -o …`, the id checked so it cannot become an option.
pub fn squeue_start_argv(job_id: &str) -> Result<Vec<String>, BackendError> {
    let id = commands::checked_job_id(job_id)?;
    Ok(["env", "TZ=UTC", "squeue", "--start", "-h", "-j", &id, "-o", "%i|%S|%P|%C|%Y"]
        .iter()
        .map(|s| s.to_string())
        .collect())
}

/// A time as Slurm prints it under `TZ=UTC` (`2026-12-03T14:28:20`); `N/A`, `Unknown` and
/// anything else unreadable are no time.
fn slurm_utc(text: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%dT%H:%M:%S").ok().map(|t| t.and_utc())
}

/// The estimate in `sbatch --test-only`'s words, from any line of its output that has one.
pub fn parse_test_only(output: &str) -> Option<StartEstimate> {
    output.lines().find_map(|line| {
        let (_, rest) = line.split_once(" to start at ")?;
        let mut words = rest.split_whitespace();
        let at = slurm_utc(words.next()?)?;
        let rest: Vec<&str> = words.collect();
        // `using 8 processors on nodes gpu-01 in partition gpu`: each part where it is.
        let after = |key: &[&str]| {
            rest.windows(key.len() + 1).find(|w| w[..key.len()] == *key).map(|w| w[key.len()].to_string())
        };
        Some(StartEstimate {
            at,
            processors: after(&["using"]).and_then(|n| n.parse().ok()),
            nodes: after(&["on", "nodes"]),
            partition: after(&["in", "partition"]),
        })
    })
}

/// The first record of `squeue --start` (format `%i|%S|%P|%C|%Y`) that has a start time.
pub fn parse_squeue_start(output: &str) -> Option<StartEstimate> {
    output.lines().find_map(|line| {
        let fields: Vec<&str> = line.trim().split('|').collect();
        let [_id, start, partition, cpus, nodes, ..] = fields.as_slice() else { return None };
        let word = |s: &str| {
            let s = s.trim();
            (!s.is_empty() && s != "(null)" && s != "N/A").then(|| s.to_string())
        };
        Some(StartEstimate {
            at: slurm_utc(start)?,
            nodes: word(nodes),
            partition: word(partition),
            processors: cpus.trim().parse().ok(),
        })
    })
}

/// `sbatch --test-only` for `spec`, with the script `submit` would send.
pub(super) async fn for_spec(backend: &SlurmBackend, spec: &JobSpec) -> Result<Option<StartEstimate>, BackendError> {
    let script = backend.sbatch_script(spec).await?;
    let argv = test_only_argv(&script::sbatch_argv(spec));
    let out = backend.transport.output(&argv, Some(script.as_bytes()), backend.timeout).await?;
    if !out.success() {
        return Err(command_error(&argv, out.status, &out.stderr, &out.stdout));
    }
    let text = format!("{}\n{}", out.stderr, String::from_utf8_lossy(&out.stdout));
    match parse_test_only(&text) {
        Some(estimate) => Ok(Some(estimate)),
        None => Err(BackendError::Parse {
            what: display_argv(&argv),
            message: format!("no start time in `{}`", text.trim().chars().take(300).collect::<String>()),
        }),
    }
}

/// `squeue --start` for a pending job; `None` when Slurm has no estimate for it (`N/A`:
/// held, or not planned yet) or the job is no longer pending.
pub(super) async fn for_job(backend: &SlurmBackend, job: &JobRef) -> Result<Option<StartEstimate>, BackendError> {
    let argv = squeue_start_argv(&job.id)?;
    let out = backend.transport.output(&argv, None, backend.timeout).await?.into_result(&argv)?;
    Ok(parse_squeue_start(&String::from_utf8_lossy(&out.stdout)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn test_only_lines_of_both_releases() {
        // Captured from the test bed (22.05.8 and 24.11.5 print the same sentence).
        let e = parse_test_only(
            "sbatch: Job 2026 to start at 2026-12-03T14:28:19 using 1 processors on nodes h100-01 in partition gpu\n",
        )
        .unwrap();
        assert_eq!(e.at, Utc.with_ymd_and_hms(2026, 12, 3, 14, 28, 19).unwrap());
        assert_eq!(e.processors, Some(1));
        assert_eq!(e.nodes.as_deref(), Some("h100-01"));
        assert_eq!(e.partition.as_deref(), Some("gpu"));
        let e = parse_test_only(
            "noise\nsbatch: Job 7 to start at 2026-12-03T15:04:05 using 16 processors on nodes gpu-[01-02] in partition big",
        )
        .unwrap();
        assert_eq!((e.processors, e.nodes.as_deref()), (Some(16), Some("gpu-[01-02]")));
        // Parts missing: the time alone is enough.
        let e = parse_test_only("sbatch: Job 7 to start at 2026-12-03T15:04:05").unwrap();
        assert_eq!((e.nodes, e.partition, e.processors), (None, None, None));
        for bad in ["", "allocation failure: Requested node configuration is not available", "Job 1 to start at soon"] {
            assert_eq!(parse_test_only(bad), None, "{bad}");
        }
    }

    #[test]
    fn squeue_start_records() {
        let e = parse_squeue_start("2022|2026-12-03T16:00:00|gpu|8|h100-01\n").unwrap();
        assert_eq!(e.at, Utc.with_ymd_and_hms(2026, 12, 3, 16, 0, 0).unwrap());
        assert_eq!((e.partition.as_deref(), e.processors, e.nodes.as_deref()), (Some("gpu"), Some(8), Some("h100-01")));
        // Held or not planned: no estimate; `(null)` sched nodes are none.
        assert_eq!(parse_squeue_start("2022|N/A|gpu|1|(null)\n"), None);
        let e = parse_squeue_start("5_[0-3]|N/A|gpu|1|(null)\n5_4|2026-12-03T16:00:00|gpu|1|(null)\n").unwrap();
        assert_eq!(e.nodes, None);
        assert_eq!(parse_squeue_start(""), None);
        assert_eq!(parse_squeue_start("garbage"), None);
    }

    #[test]
    fn argv_checks_the_id_and_sets_the_zone() {
        assert!(squeue_start_argv("--help").is_err());
        assert!(squeue_start_argv("12 -u root").is_err());
        let argv = squeue_start_argv("12_3").unwrap();
        assert_eq!(&argv[..4], ["env", "TZ=UTC", "squeue", "--start"]);
        assert!(argv.contains(&"12_3".to_string()));
        let argv = test_only_argv(&["--job-name=x; rm -rf /".into()]);
        assert_eq!(argv, ["env", "TZ=UTC", "sbatch", "--test-only", "--job-name=x; rm -rf /"]);
    }
}
