//! Reads follow the caller, like actions: a viewer reads only its own jobs, an operator any
//! job, and every read through the hub goes on the audit log, allowed or refused.
//!
//! A job is a viewer's when the hub's current picture lists it under the viewer's user
//! name. A job the picture does not list is refused to a viewer: the hub cannot tell whose
//! it is, and a guessed id must not be a way around the rule.

use chrono::Utc;

use super::auth::{Caller, Role};
use crate::fleet::AuditRecord;
use crate::model::{FleetState, JobRef};

/// What a read asked for, as the audit log names it (beside the actions' verbs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Subscribe,
    ReadLog,
    JobSpec,
    Render,
    Diagnose,
    EstimateStart,
    Usage,
}

impl Read {
    pub fn as_str(&self) -> &'static str {
        match self {
            Read::Subscribe => "subscribe",
            Read::ReadLog => "read-log",
            Read::JobSpec => "job-spec",
            Read::Render => "render",
            Read::Diagnose => "diagnose",
            Read::EstimateStart => "estimate-start",
            Read::Usage => "usage",
        }
    }
}

/// The user the hub's picture says `job` belongs to, if the picture lists the job.
pub fn job_user<'a>(state: &'a FleetState, job: &JobRef) -> Option<&'a str> {
    let snapshot = state.cluster(&job.cluster)?.snapshot.as_deref()?;
    snapshot.jobs.iter().find(|j| j.job_ref.id == job.id).map(|j| j.user.as_str())
}

/// Whether `caller` may read `job`'s data (its output, its script, its start estimate);
/// the refusal is the sentence the caller reads.
pub fn may_read_job(caller: &Caller, state: &FleetState, job: &JobRef) -> Result<(), String> {
    if caller.role == Role::Operator {
        return Ok(());
    }
    match job_user(state, job) {
        Some(user) if user == caller.user => Ok(()),
        Some(_) => {
            Err(format!("permission denied: job {job} is not {}'s, and viewers read only their own jobs", caller.user))
        }
        None => Err(format!(
            "permission denied: job {job} is not in the hub's current picture, and viewers read only their own jobs"
        )),
    }
}

/// The audit record of one read: who asked, what, of which target; `refused` holds why
/// when it was refused (outcome `refused`), else the outcome is `allowed`.
pub fn record(caller: &Caller, read: Read, target: &str, detail: Option<String>, refused: Option<&str>) -> AuditRecord {
    AuditRecord {
        id: String::new(),
        time: Utc::now(),
        who: super::service::actor(caller),
        action: read.as_str().to_string(),
        target: target.to_string(),
        detail,
        outcome: if refused.is_some() { "refused" } else { "allowed" }.to_string(),
        message: refused.unwrap_or_default().to_string(),
        spec: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClusterState, Job, JobState, Snapshot};
    use std::sync::Arc;

    fn state() -> FleetState {
        let mut c = ClusterState::new("hpc", "slurm");
        let mut mine = Job::new(JobRef::new("hpc", "1"), JobState::Running);
        mine.user = "bob".into();
        let mut theirs = Job::new(JobRef::new("hpc", "2"), JobState::Running);
        theirs.user = "root".into();
        c.snapshot =
            Some(Arc::new(Snapshot { cluster: "hpc".into(), jobs: vec![mine, theirs], ..Snapshot::default() }));
        FleetState { clusters: vec![c], read_only: false, version: 1 }
    }

    #[test]
    fn viewers_read_their_own_jobs_and_operators_any() {
        let state = state();
        let bob = Caller { user: "bob".into(), role: Role::Viewer };
        let root = Caller { user: "root".into(), role: Role::Operator };
        assert_eq!(may_read_job(&bob, &state, &JobRef::new("hpc", "1")), Ok(()));
        let err = may_read_job(&bob, &state, &JobRef::new("hpc", "2")).unwrap_err();
        assert!(err.contains("job hpc/2") && err.contains("viewers read only their own jobs"), "{err}");
        let err = may_read_job(&bob, &state, &JobRef::new("hpc", "99")).unwrap_err();
        assert!(err.contains("job hpc/99 is not in the hub's current picture"), "{err}");
        assert!(may_read_job(&bob, &state, &JobRef::new("elsewhere", "1")).is_err());
        for id in ["1", "2", "99"] {
            assert_eq!(may_read_job(&root, &state, &JobRef::new("hpc", id)), Ok(()));
        }
    }

    #[test]
    fn a_read_is_recorded_allowed_or_refused() {
        let bob = Caller { user: "bob".into(), role: Role::Viewer };
        let allowed = record(&bob, Read::ReadLog, "hpc/1", None, None);
        assert_eq!((allowed.who.as_str(), allowed.action.as_str()), ("bob@hub", "read-log"));
        assert_eq!((allowed.target.as_str(), allowed.outcome.as_str()), ("hpc/1", "allowed"));
        let refused = record(&bob, Read::JobSpec, "hpc/2", None, Some("no"));
        assert_eq!((refused.outcome.as_str(), refused.message.as_str()), ("refused", "no"));
    }
}
