//! Slurm's job reason codes in words: why a job waits, or why it ended.
//!
//! In the model rather than the Slurm adapter because the views read it (the job detail's
//! `reason`), and they see the model, never a backend.
//!
//! `squeue` says `Priority`, `QOSMaxGRESPerUser` or `AssocGrpCPURunMinutesLimit`; researchers
//! ask what that means for them. The codes are Slurm's `job_state_reason` table (its
//! `job_reason_string()`, renamed `job_state_reason_string()` in 24.11), listed from both
//! releases the test bed runs into `tests/fixtures/slurm-reasons/`; a test holds every one
//! of them to a translation here.
//!
//! About half the table is one grammar of accounting limits, so those are read rather than
//! listed: a scope (`Assoc`: the account/user association; `QOS`; none: a QOS limit per
//! account), a kind (`Grp`: all the scope's jobs together; `Max…PerJob|PerNode|PerUser|
//! PerAccount`; `Min`), a resource (`Cpu`, `Mem`, `GRES`, `Node`, `Billing`, …) and whether
//! it counts resources, resource-minutes used, or resource-minutes of running jobs.

/// What a reason means for the job's future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outlook {
    /// It waits its turn or for resources; nothing to do but wait.
    Waits,
    /// A limit is reached; it runs when usage drops below it (jobs end, time passes).
    Limited,
    /// Held, or waiting for something a person must do (release it, fix a node).
    NeedsAction,
    /// It cannot run as submitted (asks more than any limit or node allows, a bad account,
    /// a dependency that can no longer be met): change the job or ask an administrator.
    Blocked,
    /// Why it ended (a failure, a time limit); not a pending reason.
    Ended,
}

/// One reason code explained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    /// What the code says, in a sentence.
    pub words: String,
    pub outlook: Outlook,
}

impl Explained {
    fn new(words: impl Into<String>, outlook: Outlook) -> Self {
        Explained { words: words.into(), outlook }
    }
}

/// `code` in words, `None` for a code this table does not know (a newer Slurm's). What
/// `squeue` appends after the code (`ReqNodeNotAvail, UnavailableNodes:dgx03`) is left to
/// [`details`].
pub fn explain(code: &str) -> Option<Explained> {
    let code = code_of(code);
    listed(code).or_else(|| limit(code))
}

/// The code itself: `ReqNodeNotAvail` of `ReqNodeNotAvail, UnavailableNodes:dgx03`, `Priority`
/// of `(Priority)`.
pub fn code_of(reason: &str) -> &str {
    let reason = reason.trim().trim_start_matches('(').trim_end_matches(')');
    reason.split([',', ' ']).next().unwrap_or(reason)
}

/// What Slurm says after the code, where it says more (`UnavailableNodes:dgx03`).
pub fn details(reason: &str) -> Option<&str> {
    let reason = reason.trim().trim_start_matches('(').trim_end_matches(')');
    if reason.starts_with("Nodes_required_for_job_are_DOWN") {
        return None;
    }
    let (_, rest) = reason.split_once(',')?;
    Some(rest.trim()).filter(|r| !r.is_empty())
}

/// The reasons that are not accounting limits.
fn listed(code: &str) -> Option<Explained> {
    use Outlook::*;
    let (words, outlook) = match code {
        "None" => ("no reason given: the scheduler has not looked at the job yet", Waits),
        "Priority" => ("jobs of higher priority are ahead of it in the partition", Waits),
        "Resources" => ("it waits for enough free resources (GPUs, CPUs, memory or nodes) at once", Waits),
        "Dependency" => ("it waits for the jobs it depends on", Waits),
        "DependencyNeverSatisfied" => {
            ("a job it depends on ended in a way that can never satisfy the dependency", Blocked)
        }
        "BeginTime" => ("its start time (--begin) has not come yet", Waits),
        "DeadLine" => ("its deadline (--deadline) passed before it could run", Ended),
        "Licenses" => ("it waits for licenses it asked for (-L)", Waits),
        "Reservation" => ("it waits for its advanced reservation to start", Waits),
        "ReservationDeleted" => ("the reservation it asked for was deleted", Blocked),
        "ReservationInvalid" => ("the reservation it asked for is not valid for it", Blocked),
        "ReqNodeNotAvail" => ("a node it needs is down, drained, reserved or not responding", NeedsAction),
        "NodeDown" => ("a node it needs is down", NeedsAction),
        // `Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions`:
        // one code, with commas in it.
        "Nodes_required_for_job_are_DOWN" => {
            ("the nodes it needs are down, drained or reserved for jobs of higher-priority partitions", NeedsAction)
        }
        "PartitionDown" => ("its partition is down", NeedsAction),
        "PartitionInactive" => ("its partition is inactive", NeedsAction),
        "PartitionNodeLimit" => ("it asks for more or fewer nodes than its partition allows", Blocked),
        "PartitionTimeLimit" => ("its time limit is over its partition's maximum", Blocked),
        "PartitionConfig" => ("it asks for something its partition's configuration does not allow", Blocked),
        "JobHeldUser" => ("held by its owner: `scontrol release` lets it run", NeedsAction),
        "JobHeldAdmin" => ("held by an administrator: only an administrator can release it", NeedsAction),
        "JobHoldMaxRequeue" => ("held after being requeued too many times", NeedsAction),
        "BadConstraints" => ("its constraints (--constraint, features, GRES) match no node", Blocked),
        "Constraints" => ("its constraints (--constraint, features) are not met by the free nodes", Waits),
        "SchedDefer" => {
            ("scheduling was deferred (SchedulerParameters=defer): the next scheduler pass takes it", Waits)
        }
        "FrontEndDown" => ("no front-end node is available", NeedsAction),
        "Cleaning" => ("it is being requeued and still cleans up from its last run", Waits),
        "Prolog" => ("its prolog is running", Waits),
        "BurstBufferResources" => ("it waits for burst buffer space", Waits),
        "BurstBufferStageIn" => ("its burst buffer data is being staged in", Waits),
        "BurstBufferOperation" => ("a burst buffer operation failed", Blocked),
        "FedJobLock" => ("it waits for the federation to agree which cluster runs it", Waits),
        "JobArrayTaskLimit" => ("its array already runs as many tasks at once as its `%N` allows", Limited),
        "MaxPoweredUpNodes" => ("the cluster's limit on powered-up nodes is reached", Limited),
        "MpiPortsBusy" => ("the MPI ports it needs are all in use", Waits),
        "PowerNotAvail" => ("not enough power is available for it", Waits),
        "PowerReserved" => ("the power it needs is reserved", Waits),
        "BlockFreeAction" => ("its block (BlueGene) is being freed", Waits),
        "BlockMaxError" => ("its block (BlueGene) has too many errors", Blocked),
        "InvalidAccount" => ("its account is not valid (missing, or not one its user may use)", Blocked),
        "InvalidQOS" => ("its QOS is not valid for its account or partition", Blocked),
        "AccountNotAllowed" => ("its account may not use this partition", Blocked),
        "QOSNotAllowed" => ("its QOS may not be used in this partition", Blocked),
        "AccountingPolicy" => ("an accounting policy limit holds it", Limited),
        "AssociationJobLimit" => ("its association's limit on jobs is reached", Limited),
        "AssociationResourceLimit" => ("its association's limit on resources is reached", Limited),
        "AssociationTimeLimit" => ("its association's time limit is reached", Limited),
        "QOSJobLimit" => ("its QOS's limit on jobs is reached", Limited),
        "QOSResourceLimit" => ("its QOS's limit on resources is reached", Limited),
        "QOSTimeLimit" => ("its QOS's time limit is reached", Limited),
        "QOSUsageThreshold" => ("its association's fair-share usage is over the QOS's usage threshold", Limited),
        "MaxMemPerLimit" => ("it asks for more memory per CPU or node than allowed", Blocked),
        "QOSMinCpuNotSatisfied" => ("it asks for fewer CPUs than its QOS's minimum", Blocked),
        // Why a job ended.
        "SystemFailure" => ("a node or the Slurm daemons failed under it", Ended),
        "JobLaunchFailure" => ("it could not be started (a path, a prolog or a node failed)", Ended),
        "NonZeroExitCode" => ("it exited with a non-zero code", Ended),
        "RaisedSignal" => ("it was ended by a signal", Ended),
        "TimeLimit" => ("it ran out of its time limit", Ended),
        "InactiveLimit" => ("it was inactive (its srun lost) for longer than the cluster allows", Ended),
        "OutOfMemory" => ("it ran out of memory", Ended),
        _ => return None,
    };
    Some(Explained::new(words, outlook))
}

/// Who a limit belongs to.
#[derive(Clone, Copy)]
enum Scope {
    Assoc,
    Qos,
}

impl Scope {
    fn words(self) -> &'static str {
        match self {
            Scope::Assoc => "its association (account and user)",
            Scope::Qos => "its QOS",
        }
    }
}

/// What a limit counts.
#[derive(Clone, Copy, PartialEq)]
enum Measure {
    /// Resources in use at once.
    Held,
    /// Resource-minutes used, ended jobs included (a budget).
    Minutes,
    /// Resource-minutes still to run of the jobs running now.
    RunMinutes,
}

/// The accounting limits: `Assoc…`, `QOS…` and the per-account `Max…` codes.
fn limit(code: &str) -> Option<Explained> {
    use Outlook::*;
    let (scope, rest) = if let Some(rest) = code.strip_prefix("Assoc") {
        (Some(Scope::Assoc), rest)
    } else if let Some(rest) = code.strip_prefix("QOS") {
        (Some(Scope::Qos), rest)
    } else {
        (None, code)
    };
    let rest = rest.strip_suffix("Limit").unwrap_or(rest);
    if let Some(rest) = rest.strip_prefix("Grp") {
        let owner = scope?.words();
        let (resource, measure) = resource_and_measure(rest)?;
        let words = match (resource, measure) {
            ("Jobs", Measure::Held) => format!("{owner} already runs as many jobs at once as it may"),
            ("SubmitJobs", Measure::Held) => format!("{owner} already has as many jobs queued and running as it may"),
            ("Wall", Measure::Held) => format!("{owner} has used its wall-time budget"),
            (r, Measure::Held) => format!("{owner} already holds as many {} as it may at once", noun(r)?.0),
            (r, Measure::Minutes) => format!("{owner} has used its budget of {}-minutes", noun(r)?.1),
            (r, Measure::RunMinutes) => {
                format!("the running jobs of {owner} hold as many {}-minutes as it may (frees as they run)", noun(r)?.1)
            }
        };
        return Some(Explained::new(words, Limited));
    }
    if let Some(rest) = rest.strip_prefix("Min") {
        let owner = scope?.words();
        let (resource, _) = resource_and_measure(rest)?;
        return Some(Explained::new(
            format!("it asks for fewer {} than the minimum of {owner}", noun(resource)?.0),
            Blocked,
        ));
    }
    let rest = rest.strip_prefix("Max")?;
    // Per-account limits without a scope are the QOS's (MaxTRESPerAccount and kin).
    let owner = scope.unwrap_or(Scope::Qos).words();
    let Some((body, per)) =
        ["PerJob", "PerNode", "PerUser", "PerAccount"].iter().find_map(|per| rest.strip_suffix(per).map(|b| (b, *per)))
    else {
        // The association's own MaxJobs and MaxSubmitJobs (per user).
        let words = match (scope?, rest) {
            (Scope::Assoc, "Jobs") => format!("{owner} already runs as many jobs at once as it may (MaxJobs)"),
            (Scope::Assoc, "SubmitJob") => {
                format!("{owner} already has as many jobs queued and running as it may (MaxSubmitJobs)")
            }
            _ => return None,
        };
        return Some(Explained::new(words, Limited));
    };
    let who = match per {
        "PerUser" => "its user",
        "PerAccount" => "its account",
        _ => "",
    };
    let (resource, measure) = match body.strip_suffix("RunMins") {
        Some(r) => (r, Measure::RunMinutes),
        None => resource_and_measure(body)?,
    };
    let explained = match (resource, measure, who) {
        ("WallDuration", Measure::Held, "") => {
            Explained::new(format!("its time limit is over the maximum per job of {owner}"), Blocked)
        }
        ("Jobs", Measure::Held, who) if !who.is_empty() => {
            Explained::new(format!("{who} already runs as many jobs as {owner} allows {}", per_words(per)), Limited)
        }
        ("SubmitJob" | "SubmitJobs", Measure::Held, who) if !who.is_empty() => Explained::new(
            format!("{who} already has as many jobs queued and running as {owner} allows {}", per_words(per)),
            Limited,
        ),
        (r, measure, who) => {
            let (plural, unit) = noun(r)?;
            let what = match measure {
                Measure::Held => plural.to_string(),
                Measure::Minutes => format!("{unit}-minutes"),
                Measure::RunMinutes => format!("{unit}-minutes in running jobs"),
            };
            if who.is_empty() {
                Explained::new(format!("it asks for more {what} than {owner} allows {}", per_words(per)), Blocked)
            } else {
                Explained::new(format!("{who} already holds the {what} {owner} allows {}", per_words(per)), Limited)
            }
        }
    };
    Some(explained)
}

fn per_words(per: &str) -> &'static str {
    match per {
        "PerJob" => "per job",
        "PerNode" => "per node",
        "PerUser" => "per user",
        _ => "per account",
    }
}

/// `CpuRunMinutes` → (`Cpu`, run minutes); `GRESMinutes` → (`GRES`, minutes); `Mem` → held.
fn resource_and_measure(text: &str) -> Option<(&str, Measure)> {
    if let Some(r) = text.strip_suffix("RunMinutes") {
        return Some((r, Measure::RunMinutes));
    }
    if let Some(r) = text.strip_suffix("Minutes") {
        return Some((r, Measure::Minutes));
    }
    (!text.is_empty()).then_some((text, Measure::Held))
}

/// A TRES name in words: as a quantity, and as the unit of a `-minutes` figure.
fn noun(resource: &str) -> Option<(&'static str, &'static str)> {
    Some(match resource {
        "Cpu" | "CPU" => ("CPUs", "CPU"),
        "Mem" | "Memory" => ("memory", "memory"),
        "Node" => ("nodes", "node"),
        "GRES" => ("GPUs or other generic resources (GRES)", "GRES"),
        "BB" => ("burst buffer", "burst-buffer"),
        "Billing" => ("billing units", "billing"),
        "Energy" => ("energy", "energy"),
        "License" => ("licenses", "license"),
        "Unknown" => ("units of an unnamed resource", "unnamed-resource"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(code: &str) -> String {
        explain(code).unwrap_or_else(|| panic!("{code} is not explained")).words
    }

    fn outlook(code: &str) -> Outlook {
        explain(code).unwrap().outlook
    }

    #[test]
    fn the_common_reasons_read_as_sentences() {
        assert_eq!(words("Priority"), "jobs of higher priority are ahead of it in the partition");
        assert_eq!(outlook("Resources"), Outlook::Waits);
        assert_eq!(outlook("JobHeldUser"), Outlook::NeedsAction);
        assert!(words(" ReqNodeNotAvail ").contains("drained"));
        assert_eq!(outlook("TimeLimit"), Outlook::Ended);
    }

    #[test]
    fn limits_are_read_from_their_parts() {
        let gres = "GPUs or other generic resources (GRES)";
        assert_eq!(words("QOSMaxGRESPerUser"), format!("its user already holds the {gres} its QOS allows per user"));
        assert_eq!(outlook("QOSMaxGRESPerUser"), Outlook::Limited);
        assert_eq!(
            words("AssocGrpGRES"),
            format!("its association (account and user) already holds as many {gres} as it may at once")
        );
        assert_eq!(
            words("AssocGrpCPURunMinutesLimit"),
            "the running jobs of its association (account and user) hold as many CPU-minutes as it may (frees as they run)"
        );
        assert_eq!(words("QOSGrpMemoryMinutes"), "its QOS has used its budget of memory-minutes");
        assert_eq!(words("QOSMaxNodePerJobLimit"), "it asks for more nodes than its QOS allows per job");
        assert_eq!(outlook("QOSMaxNodePerJobLimit"), Outlook::Blocked);
        assert_eq!(
            words("AssocMaxCpuMinutesPerJobLimit"),
            "it asks for more CPU-minutes than its association (account and user) allows per job"
        );
        assert_eq!(
            words("AssocMaxWallDurationPerJobLimit"),
            "its time limit is over the maximum per job of its association (account and user)"
        );
        assert_eq!(
            words("MaxGRESRunMinsPerUser"),
            "its user already holds the GRES-minutes in running jobs its QOS allows per user"
        );
        assert_eq!(
            words("MaxSubmitJobsPerAccount"),
            "its account already has as many jobs queued and running as its QOS allows per account"
        );
        assert_eq!(words("QOSMaxJobsPerUserLimit"), "its user already runs as many jobs as its QOS allows per user");
        assert_eq!(words("QOSMinGRES"), format!("it asks for fewer {gres} than the minimum of its QOS"));
        assert_eq!(
            words("AssocGrpJobsLimit"),
            "its association (account and user) already runs as many jobs at once as it may"
        );
        assert_eq!(outlook("AssocMaxSubmitJobLimit"), Outlook::Limited);
        assert!(words("AssocMaxJobsLimit").ends_with("(MaxJobs)"));
    }

    /// Every code of both releases' tables (`tests/fixtures/slurm-reasons/`, listed from their
    /// libslurm by `extract.sh`) is explained, none by repeating its own name.
    #[test]
    fn every_code_of_both_releases_is_explained() {
        for release in ["22.05", "24.11"] {
            let path = format!("{}/tests/fixtures/slurm-reasons/{release}.tsv", env!("CARGO_MANIFEST_DIR"));
            let table = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let codes: Vec<&str> = table.lines().filter_map(|l| l.split('\t').nth(1)).collect();
            assert!(codes.len() > 180, "{release}: {} codes", codes.len());
            for code in codes {
                let explained = explain(code).unwrap_or_else(|| panic!("{release}: {code} is not explained"));
                assert!(!explained.words.contains(code), "{release}: {code} explained by itself");
                assert!(explained.words.split(' ').count() >= 4, "{release}: {code}: {:?}", explained.words);
            }
        }
    }

    #[test]
    fn what_squeue_adds_after_the_code_is_kept_apart() {
        let reason = "ReqNodeNotAvail, UnavailableNodes:dead-01";
        assert_eq!(code_of(reason), "ReqNodeNotAvail");
        assert_eq!(details(reason), Some("UnavailableNodes:dead-01"));
        assert_eq!(outlook(reason), Outlook::NeedsAction);
        assert_eq!(code_of("(Priority)"), "Priority");
        assert_eq!(details("Priority"), None);
    }

    #[test]
    fn unknown_codes_are_none() {
        for code in ["", "Foo", "QOSGrp", "AssocMaxFooPerJob", "MaxCpu", "QOSMaxCpuPerGalaxy", "InvaildReason"] {
            assert_eq!(explain(code), None, "{code}");
        }
    }
}
