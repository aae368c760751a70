//! Slurm job and node states onto the unified [`JobState`] / [`NodeState`].
//!
//! Input tokens come as Slurm wrote them in any family: a JSON array (`["PENDING",
//! "REQUEUED"]`, `["IDLE", "DRAIN"]`), 22.05's lower-case node state plus `state_flags`, the
//! `+`-joined form of `scontrol` (`IDLE+DRAIN`), or sinfo's long text states with their
//! suffixes (`drained*`, `idle~`, `mixed-`). Case does not matter.

use crate::model::{Job, JobState, NodeState};

/// The unified job state for Slurm's state tokens (base state plus flags).
///
/// `COMPLETING` (and `STAGE_OUT`) win over the base state, since the job still holds its
/// nodes; `REQUEUE_HOLD`, `SPECIAL_EXIT` and `RESV_DEL_HOLD` are [`JobState::Held`];
/// `STOPPED` is [`JobState::Suspended`]; otherwise the first base state decides
/// (`BOOT_FAIL` and `DEADLINE` are failures); a token list with flags only
/// (`REQUEUED`, `CONFIGURING` …, as `squeue %T` prints them) maps sensibly;
/// anything else is [`JobState::Unknown`].
pub fn job_state_from_slurm(states: &[&str]) -> JobState {
    let tokens = || states.iter().flat_map(|s| s.split(['+', ','])).map(str::trim).filter(|s| !s.is_empty());
    let has = |name: &str| tokens().any(|t| t.eq_ignore_ascii_case(name));
    if has("COMPLETING") || has("STAGE_OUT") {
        return JobState::Completing;
    }
    if has("REQUEUE_HOLD") || has("SPECIAL_EXIT") || has("RESV_DEL_HOLD") {
        return JobState::Held;
    }
    if has("STOPPED") {
        return JobState::Suspended;
    }
    for t in tokens() {
        if let Some(s) = job_base_state(t) {
            return s;
        }
    }
    for t in tokens() {
        let s = match t.to_ascii_uppercase().as_str() {
            "REQUEUED" | "REQUEUE_FED" => JobState::Pending,
            "CONFIGURING" | "RESIZING" | "SIGNALING" | "POWER_UP_NODE" => JobState::Running,
            "REVOKED" => JobState::Cancelled,
            "LAUNCH_FAILED" => JobState::Failed,
            _ => continue,
        };
        return s;
    }
    JobState::Unknown
}

fn job_base_state(t: &str) -> Option<JobState> {
    Some(match t.to_ascii_uppercase().as_str() {
        "PENDING" | "PD" => JobState::Pending,
        "RUNNING" | "R" => JobState::Running,
        "SUSPENDED" | "S" => JobState::Suspended,
        "COMPLETED" | "CD" => JobState::Completed,
        "CANCELLED" | "CANCELED" | "CA" => JobState::Cancelled,
        "FAILED" | "F" | "BOOT_FAIL" | "BF" | "DEADLINE" | "DL" => JobState::Failed,
        "TIMEOUT" | "TO" => JobState::Timeout,
        "NODE_FAIL" | "NF" => JobState::NodeFail,
        "PREEMPTED" | "PR" => JobState::Preempted,
        "OUT_OF_MEMORY" | "OOM" => JobState::OutOfMemory,
        _ => return None,
    })
}

/// [`job_state_from_slurm`], with a pending job counted as [`JobState::Held`] when Slurm's
/// reason says so (`JobHeldUser`, `JobHeldAdmin`) or the job's `hold` flag is set.
pub fn job_state_with_reason(states: &[&str], reason: Option<&str>, hold: bool) -> JobState {
    let state = job_state_from_slurm(states);
    let held_reason = reason.is_some_and(|r| {
        let r = r.trim();
        r.eq_ignore_ascii_case("JobHeldUser") || r.eq_ignore_ascii_case("JobHeldAdmin")
    });
    if state == JobState::Pending && (hold || held_reason) { JobState::Held } else { state }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    Idle,
    Mixed,
    Allocated,
    Down,
    Future,
    Unknown,
}

/// The unified node state and the upper-case flags for Slurm's node state tokens.
///
/// `DOWN` stays [`NodeState::Down`] (a `DRAIN` flag is kept); `DRAIN` (or `FAIL`) makes
/// [`NodeState::Draining`] while jobs run (base `ALLOCATED`/`MIXED`, or `COMPLETING`) and
/// [`NodeState::Drained`] otherwise; then `FUTURE`; powered-down nodes; an idle node in a
/// maintenance or other reservation; an idle node still completing; finally the base.
/// Flags are upper-case, without the base state, without repeats: `DRAIN`,
/// `NOT_RESPONDING`, `INVALID_REG`, `COMPLETING`, `MAINTENANCE`, `RESERVED`,
/// `POWERED_DOWN`, `DYNAMIC_NORM` … sinfo suffixes become flags too (`*` →
/// `NOT_RESPONDING`, `~` → `POWERED_DOWN`, `#` → `POWERING_UP`, `%` → `POWERING_DOWN`,
/// `!` → `POWER_DOWN`, `@` → `REBOOT_REQUESTED`, `^` → `REBOOT_ISSUED`, `$` →
/// `MAINTENANCE`, `-` → `PLANNED`).
pub fn node_state_from_slurm(states: &[&str]) -> (NodeState, Vec<String>) {
    let mut base: Option<Base> = None;
    let mut flags: Vec<String> = Vec::new();
    fn flag(flags: &mut Vec<String>, f: &str) {
        if !flags.iter().any(|x| x == f) {
            flags.push(f.to_string());
        }
    }
    for raw in states.iter().flat_map(|s| s.split(['+', ','])) {
        let mut tok = raw.trim();
        while let Some(c) = tok.chars().last() {
            let f = match c {
                '*' => "NOT_RESPONDING",
                '~' => "POWERED_DOWN",
                '#' => "POWERING_UP",
                '%' => "POWERING_DOWN",
                '!' => "POWER_DOWN",
                '@' => "REBOOT_REQUESTED",
                '^' => "REBOOT_ISSUED",
                '$' => "MAINTENANCE",
                '-' => "PLANNED",
                _ => break,
            };
            flag(&mut flags, f);
            tok = &tok[..tok.len() - c.len_utf8()];
        }
        if tok.is_empty() {
            continue;
        }
        let upper = tok.to_ascii_uppercase();
        let mut set_base = |b: Base, only_if_none: bool| {
            if base.is_none() || !only_if_none {
                base = Some(b);
            }
        };
        match upper.as_str() {
            "IDLE" => set_base(Base::Idle, false),
            "MIXED" | "MIX" => set_base(Base::Mixed, false),
            "ALLOCATED" | "ALLOC" => set_base(Base::Allocated, false),
            "DOWN" => set_base(Base::Down, false),
            "FUTURE" | "FUTR" => set_base(Base::Future, false),
            "UNKNOWN" | "UNK" | "ERROR" => set_base(Base::Unknown, true),
            "DRAINED" => {
                set_base(Base::Idle, true);
                flag(&mut flags, "DRAIN");
            }
            "DRAINING" | "DRNG" => {
                set_base(Base::Allocated, true);
                flag(&mut flags, "DRAIN");
            }
            "DRAIN" | "DRAN" => flag(&mut flags, "DRAIN"),
            "FAIL" => {
                set_base(Base::Idle, true);
                flag(&mut flags, "FAIL");
            }
            "FAILING" | "FAILG" => {
                set_base(Base::Allocated, true);
                flag(&mut flags, "FAIL");
            }
            "COMPLETING" | "COMP" => flag(&mut flags, "COMPLETING"),
            "MAINT" | "MAINTENANCE" => flag(&mut flags, "MAINTENANCE"),
            "RESERVED" | "RESV" => flag(&mut flags, "RESERVED"),
            "INVAL" | "INVALID_REG" => flag(&mut flags, "INVALID_REG"),
            "NPC" | "PERFCTRS" => flag(&mut flags, "PERFCTRS"),
            "NOT_RESPONDING" | "NO_RESPOND" => flag(&mut flags, "NOT_RESPONDING"),
            "POWERED_DOWN" | "POWER_SAVE" => flag(&mut flags, "POWERED_DOWN"),
            "POWER_DOWN" | "POW_DN" => flag(&mut flags, "POWER_DOWN"),
            "POWERING_DOWN" => flag(&mut flags, "POWERING_DOWN"),
            "POWERING_UP" | "POWER_UP" | "POW_UP" => flag(&mut flags, "POWERING_UP"),
            "PLANNED" | "PLND" => {
                set_base(Base::Idle, true);
                flag(&mut flags, "PLANNED");
            }
            "REBOOT" | "REBOOT_REQUESTED" => flag(&mut flags, "REBOOT_REQUESTED"),
            "BOOT" | "REBOOT_ISSUED" => flag(&mut flags, "REBOOT_ISSUED"),
            "BLOCK" | "BLOCKED" => flag(&mut flags, "BLOCKED"),
            other => flag(&mut flags, other),
        }
    }
    let has = |f: &str| flags.iter().any(|x| x == f);
    let state = match base {
        Some(Base::Down) => NodeState::Down,
        b if has("DRAIN") || has("FAIL") => {
            if matches!(b, Some(Base::Allocated | Base::Mixed)) || has("COMPLETING") {
                NodeState::Draining
            } else {
                NodeState::Drained
            }
        }
        Some(Base::Future) => NodeState::Future,
        Some(Base::Idle) | None if has("POWERED_DOWN") || has("POWERING_DOWN") => NodeState::PoweredDown,
        Some(Base::Idle) | None if has("MAINTENANCE") => NodeState::Maintenance,
        Some(Base::Idle) | None if has("RESERVED") => NodeState::Reserved,
        Some(Base::Idle) | None if has("COMPLETING") => NodeState::Completing,
        Some(Base::Idle) => NodeState::Idle,
        Some(Base::Mixed) => NodeState::Mixed,
        Some(Base::Allocated) => NodeState::Allocated,
        _ => NodeState::Unknown,
    };
    (state, flags)
}

/// A waiting job's end is the scheduler's estimate, and 22.05 may print garbage there: kept
/// only when it follows a known start.
pub(crate) fn drop_unsure_end(job: &mut Job) {
    if job.state.is_waiting() && !matches!((job.start_time, job.end_time), (Some(start), Some(end)) if end >= start) {
        job.end_time = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_base_states() {
        assert_eq!(job_state_from_slurm(&["PENDING"]), JobState::Pending);
        assert_eq!(job_state_from_slurm(&["RUNNING"]), JobState::Running);
        assert_eq!(job_state_from_slurm(&["SUSPENDED"]), JobState::Suspended);
        assert_eq!(job_state_from_slurm(&["COMPLETED"]), JobState::Completed);
        assert_eq!(job_state_from_slurm(&["FAILED"]), JobState::Failed);
        assert_eq!(job_state_from_slurm(&["CANCELLED"]), JobState::Cancelled);
        assert_eq!(job_state_from_slurm(&["TIMEOUT"]), JobState::Timeout);
        assert_eq!(job_state_from_slurm(&["PREEMPTED"]), JobState::Preempted);
        assert_eq!(job_state_from_slurm(&["NODE_FAIL"]), JobState::NodeFail);
        assert_eq!(job_state_from_slurm(&["OUT_OF_MEMORY"]), JobState::OutOfMemory);
        assert_eq!(job_state_from_slurm(&["BOOT_FAIL"]), JobState::Failed);
        assert_eq!(job_state_from_slurm(&["DEADLINE"]), JobState::Failed);
        assert_eq!(job_state_from_slurm(&["running"]), JobState::Running);
        assert_eq!(job_state_from_slurm(&["WHATEVER"]), JobState::Unknown);
        assert_eq!(job_state_from_slurm(&[]), JobState::Unknown);
    }

    #[test]
    fn job_flags() {
        assert_eq!(job_state_from_slurm(&["PENDING", "REQUEUED"]), JobState::Pending);
        assert_eq!(job_state_from_slurm(&["REQUEUED"]), JobState::Pending);
        assert_eq!(job_state_from_slurm(&["COMPLETED", "COMPLETING"]), JobState::Completing);
        assert_eq!(job_state_from_slurm(&["COMPLETING"]), JobState::Completing);
        assert_eq!(job_state_from_slurm(&["PENDING", "REQUEUE_HOLD"]), JobState::Held);
        assert_eq!(job_state_from_slurm(&["SPECIAL_EXIT"]), JobState::Held);
        assert_eq!(job_state_from_slurm(&["RUNNING", "CONFIGURING"]), JobState::Running);
        assert_eq!(job_state_from_slurm(&["CONFIGURING"]), JobState::Running);
        assert_eq!(job_state_from_slurm(&["RESIZING"]), JobState::Running);
        assert_eq!(job_state_from_slurm(&["RUNNING", "STOPPED"]), JobState::Suspended);
        assert_eq!(job_state_from_slurm(&["PENDING,REQUEUED"]), JobState::Pending);
    }

    #[test]
    fn held_by_reason_or_flag() {
        assert_eq!(job_state_with_reason(&["PENDING"], Some("JobHeldUser"), false), JobState::Held);
        assert_eq!(job_state_with_reason(&["PENDING"], Some("JobHeldAdmin"), false), JobState::Held);
        assert_eq!(job_state_with_reason(&["PENDING"], Some("Priority"), true), JobState::Held);
        assert_eq!(job_state_with_reason(&["PENDING"], Some("Resources"), false), JobState::Pending);
        assert_eq!(job_state_with_reason(&["RUNNING"], Some("JobHeldUser"), true), JobState::Running);
    }

    fn node(states: &[&str]) -> (NodeState, Vec<String>) {
        node_state_from_slurm(states)
    }

    #[test]
    fn node_bases() {
        assert_eq!(node(&["IDLE"]), (NodeState::Idle, vec![]));
        assert_eq!(node(&["MIXED"]), (NodeState::Mixed, vec![]));
        assert_eq!(node(&["ALLOCATED"]), (NodeState::Allocated, vec![]));
        assert_eq!(node(&["DOWN"]), (NodeState::Down, vec![]));
        assert_eq!(node(&["FUTURE"]), (NodeState::Future, vec![]));
        assert_eq!(node(&["UNKNOWN"]), (NodeState::Unknown, vec![]));
        assert_eq!(node(&[]), (NodeState::Unknown, vec![]));
    }

    #[test]
    fn node_drain_depends_on_work() {
        assert_eq!(node(&["IDLE", "DRAIN"]), (NodeState::Drained, vec!["DRAIN".into()]));
        assert_eq!(node(&["MIXED", "DRAIN"]), (NodeState::Draining, vec!["DRAIN".into()]));
        assert_eq!(node(&["ALLOCATED", "DRAIN"]), (NodeState::Draining, vec!["DRAIN".into()]));
        assert_eq!(node(&["IDLE", "DRAIN", "COMPLETING"]).0, NodeState::Draining);
        assert_eq!(node(&["DOWN", "DRAIN"]), (NodeState::Down, vec!["DRAIN".into()]));
        assert_eq!(node(&["idle", "DRAIN"]), (NodeState::Drained, vec!["DRAIN".into()]));
        assert_eq!(node(&["IDLE+DRAIN"]), (NodeState::Drained, vec!["DRAIN".into()]));
    }

    #[test]
    fn node_other_flags() {
        assert_eq!(node(&["IDLE", "COMPLETING"]), (NodeState::Completing, vec!["COMPLETING".into()]));
        assert_eq!(node(&["ALLOCATED", "COMPLETING"]), (NodeState::Allocated, vec!["COMPLETING".into()]));
        assert_eq!(node(&["IDLE", "POWERED_DOWN"]).0, NodeState::PoweredDown);
        assert_eq!(node(&["IDLE", "MAINTENANCE", "RESERVED"]).0, NodeState::Maintenance);
        assert_eq!(node(&["IDLE", "RESERVED"]).0, NodeState::Reserved);
        assert_eq!(node(&["MIXED", "RESERVED"]).0, NodeState::Mixed);
        assert_eq!(
            node(&["IDLE", "NOT_RESPONDING", "INVALID_REG", "DYNAMIC_NORM"]),
            (NodeState::Idle, vec!["NOT_RESPONDING".into(), "INVALID_REG".into(), "DYNAMIC_NORM".into()])
        );
    }

    #[test]
    fn sinfo_long_text_states() {
        assert_eq!(node(&["drained"]), (NodeState::Drained, vec!["DRAIN".into()]));
        assert_eq!(node(&["draining"]), (NodeState::Draining, vec!["DRAIN".into()]));
        assert_eq!(node(&["down*"]), (NodeState::Down, vec!["NOT_RESPONDING".into()]));
        assert_eq!(node(&["idle~"]), (NodeState::PoweredDown, vec!["POWERED_DOWN".into()]));
        assert_eq!(node(&["drained*"]), (NodeState::Drained, vec!["NOT_RESPONDING".into(), "DRAIN".into()]));
        assert_eq!(node(&["mixed-"]), (NodeState::Mixed, vec!["PLANNED".into()]));
        assert_eq!(node(&["inval"]), (NodeState::Unknown, vec!["INVALID_REG".into()]));
        assert_eq!(node(&["completing"]), (NodeState::Completing, vec!["COMPLETING".into()]));
        assert_eq!(node(&["maint"]), (NodeState::Maintenance, vec!["MAINTENANCE".into()]));
        assert_eq!(node(&["reserved"]), (NodeState::Reserved, vec!["RESERVED".into()]));
        assert_eq!(node(&["fail"]), (NodeState::Drained, vec!["FAIL".into()]));
        assert_eq!(node(&["failing"]), (NodeState::Draining, vec!["FAIL".into()]));
        assert_eq!(node(&["idle$"]).0, NodeState::Maintenance);
        assert_eq!(node(&["*"]), (NodeState::Unknown, vec!["NOT_RESPONDING".into()]));
    }
}
