//! Moving jobs between clusters without losing one or running one twice.
//!
//! A migration is planned first ([`Fleet::plan_migration`]): per job the source's spec is
//! read back from its backend, adapted to the target ([`adapt`]: fields that mean nothing
//! there are dropped *by name*, the origin tag is set), and rendered by the target, so the
//! user sees exactly what will be submitted and every warning before anything happens.
//!
//! Carrying one out ([`Action::Migrate`], in the fleet's runner) keeps one order, always:
//! the intent (with the spec) is fsynced to the audit log; the job is submitted to the
//! target; the fleet waits until the target lists it and it has not been rejected; the new
//! ref is recorded (`submitted`); only then is the source cancelled. Any failure before the
//! cancel leaves the source as it was; a failed cancel reports both jobs by ref. Because the
//! new job carries `migrated_from` in its backend's own place, a second migration of the
//! same source is refused, and `flightdeck migrate --resume` ([`unfinished`]) can finish an
//! interrupted one from the audit log and the clusters' own listings.
//!
//! The tag also carries the migration's id (its audit id, `hpc/12 migration=ID`). A submit
//! that fails without a clear refusal ([`outcome_unknown`]: a timeout, a lost link) may have
//! been taken, so the target's next fresh listing is searched for the copy: found, the move
//! carries on; not found, or no fresh listing, it stops [`INTERRUPTED`] and `--resume`
//! finishes it. A copy is adopted only by [`CopyRules`]: on the planned target, owned by the
//! user the target acts as, with this migration's id, submitted after its intent.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::advice::{self, Advice, Verdict};
use super::audit::AuditRecord;
use super::{Fleet, Runner};
use crate::backend::BackendError;
use crate::model::{Action, ClusterState, FleetState, Job, JobAction, JobRef, JobState, Native, Verb};
use crate::spec::{Imported, JobSpec};

/// How long a migration waits for the target to list the job it accepted before it leaves
/// the source alone and says so (`--resume` finishes it once the job shows).
pub const CONFIRM_WAIT: Duration = Duration::from_secs(60);
/// Sources whose specs are read at once while planning.
const PLAN_CONCURRENCY: usize = 16;

/// The audit outcome that records the target's new job between submit and cancel.
pub const SUBMITTED: &str = "submitted";
/// The audit outcome of a migration stopped where nobody can say how far it got (a submit
/// whose answer was lost, a target whose listing is stale): `--resume` finishes it.
pub const INTERRUPTED: &str = "interrupted";

/// How a migration stopped: the sentence, and whether it is [`INTERRUPTED`] rather than
/// ended (an `error` with nothing submitted needs no resuming).
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub message: String,
    pub interrupted: bool,
}

impl Stop {
    fn interrupted(message: String) -> Self {
        Self { message, interrupted: true }
    }
}

impl From<String> for Stop {
    fn from(message: String) -> Self {
        Self { message, interrupted: false }
    }
}

/// Whether a failed submit may still have reached the target (a timeout, a lost link, an
/// answer that could not be read, a server error), as opposed to a clear refusal (the
/// scheduler's non-zero exit, an invalid spec, a 4xx).
pub fn outcome_unknown(e: &BackendError) -> bool {
    match e {
        BackendError::Timeout { .. }
        | BackendError::Connect { .. }
        | BackendError::Internal(_)
        | BackendError::Remote(_)
        | BackendError::Parse { .. } => true,
        // ssh's own failure is 255; no status at all is a killed command.
        BackendError::Command { status, .. } => matches!(status, None | Some(255)),
        BackendError::Http { status, .. } => *status >= 500 || *status == 408,
        _ => false,
    }
}

/// What makes a job on the target the copy a migration may adopt: on the planned target,
/// owned by the user the target acts as, tagged with the source *and* this migration's id
/// (no id for a migration recorded by a flightdeck that wrote none), submitted after the
/// migration's intent, not ended.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyRules {
    pub source: JobRef,
    pub to: String,
    /// This migration's id as the tag carries it; `None`: an intent from before ids.
    pub id: Option<String>,
    /// The user the target acts as; `None` where its kind has no owner per job.
    pub user: Option<String>,
    /// The migration's (first) intent.
    pub since: chrono::DateTime<chrono::Utc>,
}

impl CopyRules {
    /// Whether `job` is this migration's copy. Submit times are compared at whole seconds
    /// (Slurm's resolution), so a copy submitted in the intent's second still counts.
    pub fn adopts(&self, job: &Job) -> bool {
        use chrono::DurationRound;
        let since = self.since.duration_trunc(chrono::TimeDelta::seconds(1)).unwrap_or(self.since);
        let origin = self.source.to_string();
        job.job_ref.cluster == self.to
            && !job.state.is_finished()
            && job.origin() == Some(origin.as_str())
            && job.migration_id() == self.id.as_deref()
            && self.user.as_ref().is_none_or(|u| &job.user == u)
            && job.submit_time.is_some_and(|t| t >= since)
    }

    /// Whether `job` meets every rule but the time: it carries this migration's id yet says
    /// it was submitted before the intent (or says nothing of when). Never adopted; but a
    /// target whose clock runs behind ours would show our own copy so, so nothing is
    /// submitted beside it either.
    pub fn doubtful(&self, job: &Job) -> bool {
        let origin = self.source.to_string();
        self.id.is_some()
            && job.job_ref.cluster == self.to
            && !job.state.is_finished()
            && job.origin() == Some(origin.as_str())
            && job.migration_id() == self.id.as_deref()
            && self.user.as_ref().is_none_or(|u| &job.user == u)
            && !self.adopts(job)
    }
}

/// What the user chose on the command line or in the plan screen.
#[derive(Debug, Clone, Default)]
pub struct MigrateOptions {
    /// Running jobs may be moved: they are killed and start again from scratch.
    pub running: bool,
    /// The container image the moved jobs run in: `Some(Some(image))` sets it where the job
    /// has none (a Slurm job going to Kubernetes), `Some(None)` drops the source's (a
    /// Kubernetes job going to a Slurm without pyxis, to run on the nodes' own software).
    pub image: Option<Option<String>>,
    /// The GPU model the moved jobs ask for on the target (`--gpu-type`), where the source's
    /// model is not there.
    pub gpu_type: Option<GpuChoice>,
}

/// `--gpu-type MODEL` or `--gpu-type any`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuChoice {
    /// Ask for this model instead (as the target's scheduler names it: `h200`, `a100-80gb`).
    Model(String),
    /// Leave the model open: any GPU the target has. The target's dialect decides whether it
    /// can (Slurm `--gres=gpu:N`, a Kubernetes GPU limit without a model selector, dstack
    /// `gpu: N`); SkyPilot's render refuses, since a cloud is asked for a model by name.
    Any,
}

impl GpuChoice {
    /// What the user typed, checked as a spec's `gpu_type` is: nothing reaches a
    /// scheduler's command line that is not a plain name.
    pub fn parse(text: &str) -> Result<GpuChoice, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("any") {
            return Ok(GpuChoice::Any);
        }
        if text.is_empty() || !text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')) {
            return Err(format!(
                "--gpu-type {text:?} is not a GPU model: use letters, digits, '_', '.' and '-' (h200, a100-80gb), or `any`"
            ));
        }
        Ok(GpuChoice::Model(text.to_string()))
    }
}

impl std::fmt::Display for GpuChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuChoice::Model(model) => f.write_str(model),
            GpuChoice::Any => f.write_str("any"),
        }
    }
}

/// The GPU models a cluster's nodes hold, canonical, sorted (`h200`, `l4`).
pub fn gpu_models(target: &ClusterState) -> Vec<String> {
    let models: std::collections::BTreeSet<&str> = target
        .snapshot
        .iter()
        .flat_map(|s| s.nodes.iter())
        .flat_map(|n| n.gpus.iter())
        .filter(|g| g.total > 0 && !g.shared)
        .map(|g| g.model.as_str())
        .collect();
    models.into_iter().map(str::to_string).collect()
}

/// One job's move, as planned and shown before anything happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedMove {
    pub source: JobRef,
    pub source_state: JobState,
    pub to: String,
    /// What will be submitted, when the move can go ahead.
    pub spec: Option<JobSpec>,
    /// The target's own form of it (an sbatch script, a Job manifest …).
    pub native: Option<Native>,
    /// Every field dropped or changed, by name, from reading, adapting and rendering.
    pub warnings: Vec<String>,
    /// Why this job will not be moved (nothing is done for it).
    pub refused: Option<String>,
    /// The object identity the source had when planned (Kubernetes UID), for the cancel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Whether the target can start it now, and why (placement advice for the target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<Advice>,
}

impl PlannedMove {
    fn refused(source: JobRef, state: JobState, to: &str, why: String) -> Self {
        Self {
            source,
            source_state: state,
            to: to.to_string(),
            spec: None,
            native: None,
            warnings: Vec::new(),
            refused: Some(why),
            uid: None,
            advice: None,
        }
    }

    /// The action that carries this move out; `None` for a refused one.
    pub fn action(&self) -> Option<Action> {
        let spec = self.spec.clone().filter(|_| self.refused.is_none())?;
        Some(Action::Migrate {
            source: self.source.clone(),
            to: self.to.clone(),
            spec: Box::new(spec),
            uid: self.uid.clone(),
            resume: None,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MigrationPlan {
    pub moves: Vec<PlannedMove>,
}

impl MigrationPlan {
    pub fn actions(&self) -> Vec<Action> {
        self.moves.iter().filter_map(PlannedMove::action).collect()
    }

    pub fn refused(&self) -> usize {
        self.moves.iter().filter(|m| m.refused.is_some()).count()
    }
}

/// The job that already carries `source` as its origin, on any cluster: a second migration
/// of the same source would run it twice.
pub fn already_migrated<'a>(state: &'a FleetState, source: &JobRef) -> Option<&'a Job> {
    let tag = source.to_string();
    state
        .clusters
        .iter()
        .filter_map(|c| c.snapshot.as_ref())
        .flat_map(|s| s.jobs.iter())
        .find(|j| j.origin() == Some(tag.as_str()) && !j.state.is_finished())
}

/// Why `job` (of the source cluster) may not be moved, before its spec is read.
pub fn source_refusal(job: &Job, opts: &MigrateOptions) -> Option<String> {
    let state = job.state;
    if state.is_finished() {
        return Some(format!("{} has ended ({state}): there is nothing to move", job.job_ref));
    }
    if state.is_active() && !opts.running {
        return Some(format!(
            "{} is {state}: moving it kills it and starts it again from scratch on the target; pass --running to do that",
            job.job_ref
        ));
    }
    None
}

/// The source's spec made fit for `target`: the origin tag set, and what means nothing on
/// the target (a partition it does not have, an account of another kind) dropped with a
/// warning naming the field. Pure, so planning a thousand moves costs only this and the
/// target's render.
pub fn adapt(
    imported: Imported,
    source: &JobRef,
    source_kind: &str,
    target: &ClusterState,
    opts: &MigrateOptions,
) -> (JobSpec, Vec<String>) {
    let Imported { mut spec, mut warnings } = imported;
    spec.migrated_from = Some(source.to_string());
    match &opts.image {
        Some(Some(image)) if spec.image.is_none() => spec.image = Some(image.clone()),
        Some(None) => {
            if let Some(image) = spec.image.take() {
                warnings.push(format!("`image`: {image} dropped as asked; the job runs on the target's own software"));
            }
        }
        _ => {}
    }
    if let Some(choice) = &opts.gpu_type {
        map_gpu_type(&mut spec, choice, &mut warnings);
    }
    let same_kind = target.kind.as_str() == source_kind;
    if let Some(partition) = spec.partition.take() {
        let known = target.snapshot.as_ref().is_some_and(|s| {
            s.queues.iter().any(|q| q.name == partition) || s.jobs.iter().any(|j| j.partition == partition)
        });
        if known {
            spec.partition = Some(partition);
        } else {
            warnings.push(format!(
                "`partition`: {target} has no partition or queue named {partition:?}; its default is used",
                target = target.name
            ));
        }
    }
    if !same_kind && let Some(account) = spec.account.take() {
        warnings.push(format!(
            "`account`: {account:?} is a {source_kind} account, which means nothing on {} ({}); left out",
            target.name, target.kind
        ));
    }
    (spec, warnings)
}

/// `--gpu-type`: the spec's model changed as asked, said as a changed field.
fn map_gpu_type(spec: &mut JobSpec, choice: &GpuChoice, warnings: &mut Vec<String>) {
    if spec.gpus == 0 {
        warnings.push(format!("`gpu_type`: the job asks for no GPUs, so --gpu-type {choice} changes nothing"));
        return;
    }
    let was = spec.gpu_type.clone().unwrap_or_else(|| "any model".to_string());
    match choice {
        GpuChoice::Model(model) if spec.gpu_type.as_deref() == Some(model.as_str()) => {}
        GpuChoice::Model(model) => {
            warnings.push(format!("`gpu_type`: changed from {was} to {model}, as asked (--gpu-type)"));
            spec.gpu_type = Some(model.clone());
        }
        GpuChoice::Any if spec.gpu_type.is_none() => {}
        GpuChoice::Any => {
            warnings.push(format!("`gpu_type`: changed from {was} to any model, as asked (--gpu-type any)"));
            spec.gpu_type = None;
        }
    }
}

/// Why a move should not go ahead although the target would take the submission: the
/// placement says it can never start there as the cluster stands. Judged only from a fresh
/// listing that shows nodes (a cluster that lists none, an autoscaler's or a cloud's, or
/// a stale one, cannot say "never"); the model the target lacks is named with the way out.
pub fn placement_refusal(advice: &Advice, spec: &JobSpec, target: &ClusterState) -> Option<String> {
    let has_nodes = target.snapshot.as_ref().is_some_and(|s| !s.nodes.is_empty());
    if advice.verdict != Verdict::Cannot || advice.stale || !has_nodes {
        return None;
    }
    let mut why = format!("it can never start on {}: {}", target.name, advice.reason);
    let models = gpu_models(target);
    let lacking = spec
        .gpu_type
        .as_deref()
        .filter(|_| spec.gpus > 0)
        .map(crate::model::gpu_names::canonical_model)
        .is_some_and(|want| !models.contains(&want));
    if lacking && !models.is_empty() {
        why.push_str(&format!(
            "; --gpu-type MODEL asks for another ({} here), or --gpu-type any for whichever it has",
            models.join(", ")
        ));
    }
    Some(why)
}

impl Fleet {
    /// Plan moving `sources` to cluster `to`: nothing is changed. Every source gets a
    /// [`PlannedMove`], refused ones with the reason.
    pub async fn plan_migration(&self, sources: &[JobRef], to: &str, opts: &MigrateOptions) -> MigrationPlan {
        use futures_util::StreamExt;
        let state = self.state();
        // What waits where, counted once for the whole plan (advice per move reads it).
        let pending = Arc::new(advice::PendingIndex::of(&state));
        let moves = futures_util::stream::iter(sources.iter().cloned())
            .map(|source| {
                let (state, pending) = (state.clone(), pending.clone());
                let opts = opts.clone();
                async move { self.plan_one(&state, &pending, source, to, &opts).await }
            })
            .buffered(PLAN_CONCURRENCY)
            .collect()
            .await;
        MigrationPlan { moves }
    }

    async fn plan_one(
        &self,
        state: &FleetState,
        pending: &advice::PendingIndex,
        source: JobRef,
        to: &str,
        opts: &MigrateOptions,
    ) -> PlannedMove {
        let unknown = JobState::Unknown;
        let Some(target) = state.cluster(to) else {
            return PlannedMove::refused(source, unknown, to, format!("no cluster named `{to}` is configured"));
        };
        if !target.capabilities.allows(Verb::Submit) {
            let why = crate::model::action::cannot(to, target.kind.as_str(), Verb::Submit);
            return PlannedMove::refused(source, unknown, to, why);
        }
        let Some(from) = state.cluster(&source.cluster) else {
            let why = format!("no cluster named `{}` is configured", source.cluster);
            return PlannedMove::refused(source, unknown, to, why);
        };
        if source.cluster == to {
            let why = format!("{source} is already on {to}");
            return PlannedMove::refused(source, unknown, to, why);
        }
        let Some(job) = from.snapshot.as_ref().and_then(|s| s.jobs.iter().find(|j| j.job_ref == source)) else {
            let why = format!("{source} is not in {}'s listing (ended, or not refreshed yet)", source.cluster);
            return PlannedMove::refused(source, unknown, to, why);
        };
        let job_state = job.state;
        if !from.capabilities.allows(Verb::Cancel) {
            let why = crate::model::action::cannot(&from.name, from.kind.as_str(), Verb::Cancel);
            return PlannedMove::refused(source, job_state, to, why);
        }
        if let Some(why) = source_refusal(job, opts) {
            return PlannedMove::refused(source, job_state, to, why);
        }
        if let Some(copy) = already_migrated(state, &source) {
            let why = format!("{source} was already migrated: {} carries it as its origin", copy.job_ref);
            return PlannedMove::refused(source, job_state, to, why);
        }
        let uid = job.uid.clone();
        let imported = match self.job_spec(&source).await {
            Ok(imported) => imported,
            Err(e) => return PlannedMove::refused(source, job_state, to, format!("cannot read its spec: {e}")),
        };
        let (spec, mut warnings) = adapt(imported, &source, from.kind.as_str(), target, opts);
        let only_target = FleetState { clusters: vec![target.clone()], ..FleetState::default() };
        let placement = advice::Options { exclude: Some(&source), partition_on: Some(to) };
        let advice = advice::advise_indexed(&only_target, pending, &spec, &placement).into_iter().next();
        let never = advice.as_ref().and_then(|a| placement_refusal(a, &spec, target));
        match self.render(to, &spec).await {
            Ok(native) => {
                warnings.extend(native.warnings.iter().cloned());
                PlannedMove {
                    source,
                    source_state: job_state,
                    to: to.to_string(),
                    spec: Some(spec),
                    native: Some(native),
                    warnings,
                    refused: never,
                    uid,
                    advice,
                }
            }
            Err(e) => {
                let why = match &opts.gpu_type {
                    Some(GpuChoice::Any) if spec.gpus > 0 => {
                        format!("{to} cannot take it with the GPU model left open (--gpu-type any): {e}")
                    }
                    _ => format!("{to} cannot take it: {e}"),
                };
                let mut refused = PlannedMove::refused(source, job_state, to, why);
                refused.warnings = warnings;
                refused
            }
        }
    }
}

/// A migration the audit log shows as not finished: the target may or may not have the job,
/// the source may or may not still be there. `--resume` turns each into an
/// [`Action::Migrate`] with `resume` set.
#[derive(Debug, Clone, PartialEq)]
pub struct Unfinished {
    pub id: String,
    pub source: JobRef,
    pub to: String,
    pub spec: JobSpec,
    /// The target's job, when the log recorded one.
    pub submitted: Option<JobRef>,
    /// When its first intent was written: a copy submitted before is not its copy.
    pub since: chrono::DateTime<chrono::Utc>,
}

impl Unfinished {
    pub fn action(&self) -> Action {
        Action::Migrate {
            source: self.source.clone(),
            to: self.to.clone(),
            spec: Box::new(self.spec.clone()),
            uid: None,
            resume: Some(self.id.clone()),
        }
    }
}

/// The migrations in `records` that did not finish: the last word on them is the intent,
/// `submitted`, [`INTERRUPTED`], or an error after the target had accepted the job. A migration whose target
/// refused it (nothing submitted, source untouched) is finished: there is nothing to resume.
pub fn unfinished(records: &[AuditRecord]) -> Vec<Unfinished> {
    struct Story {
        intent: Option<AuditRecord>,
        submitted: Option<JobRef>,
        last: String,
    }
    let mut stories: BTreeMap<&str, Story> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for r in records.iter().filter(|r| r.action == Verb::Migrate.as_str() && !r.id.is_empty()) {
        let story = stories.entry(&r.id).or_insert_with(|| {
            order.push(&r.id);
            Story { intent: None, submitted: None, last: String::new() }
        });
        match r.outcome.as_str() {
            "intent" if story.intent.is_none() => story.intent = Some(r.clone()),
            SUBMITTED => story.submitted = r.message.parse().ok(),
            _ => {}
        }
        story.last = r.outcome.clone();
    }
    order
        .into_iter()
        .filter_map(|id| {
            let story = stories.remove(id)?;
            let open = match story.last.as_str() {
                "intent" | SUBMITTED | INTERRUPTED => true,
                "error" => story.submitted.is_some(),
                _ => false,
            };
            let intent = story.intent.filter(|_| open)?;
            let spec = *intent.spec?;
            let source = intent.target.parse().ok()?;
            let to = intent.detail.as_deref()?.split_whitespace().find_map(|w| w.strip_prefix("to="))?.to_string();
            let since = intent.time;
            Some(Unfinished { id: id.to_string(), source, to, spec, submitted: story.submitted, since })
        })
        .collect()
}

/// Migrations an older flightdeck recorded without an id whose intent no outcome follows:
/// `(source, to)` as the intent names them. They cannot be paired with their steps, so
/// `--resume` names them rather than guessing (the user looks for the copy by its tag).
pub fn without_id(records: &[AuditRecord]) -> Vec<(String, String)> {
    let mut open: Vec<(String, String)> = Vec::new();
    for r in records.iter().filter(|r| r.action == Verb::Migrate.as_str() && r.id.is_empty()) {
        let to = r.detail.as_deref().and_then(|d| d.split_whitespace().find_map(|w| w.strip_prefix("to=")));
        if r.outcome == "intent" {
            open.push((r.target.clone(), to.unwrap_or("?").to_string()));
        } else if let Some(at) = open.iter().position(|(source, _)| source == &r.target) {
            open.remove(at);
        }
    }
    open
}

/// What the runner found on a cluster when it looked for a job.
enum Sighting {
    Listed(JobState),
    Absent,
    /// The cluster has no fresh picture: nobody can say.
    Unknown,
}

/// What the runner found when it looked for a migration's copy on the target.
enum Look {
    Found(JobRef),
    /// A fresh listing taken after the look began holds no copy.
    Absent,
    /// No fresh listing came (why): nobody can say whether the copy is there.
    Stale(String),
    /// No copy, but a job of this user carrying this migration's id submitted before its
    /// intent (clocks apart, or planted): neither adopted nor submitted beside.
    Doubtful(JobRef, String),
}

impl Runner {
    /// Carry out one [`Action::Migrate`]: the intent is already on disk under `id`.
    pub(super) async fn migrate(&self, action: &Action, id: &str) -> Result<String, Stop> {
        let Action::Migrate { source, to, spec, uid, resume } = action else {
            return Err(BackendError::Internal("not a migration".into()).to_string().into());
        };
        let (Some(target), Some(origin)) = (self.backends.get(to.as_str()), self.backends.get(&source.cluster)) else {
            return Err(format!("{source} → {to}: a cluster is no longer configured").into());
        };
        // A copy is this migration's only when its tag carries the id its intent tagged the spec with.
        let tag_id = spec.migrated_from.as_deref().and_then(|t| crate::model::split_migration_tag(t).1);
        let mut since = chrono::Utc::now();
        // Resuming: the target's job is the one the log recorded, else the one copy the
        // rules adopt ([`CopyRules`]) in a fresh listing of the target.
        let mut submitted: Option<JobRef> = None;
        if let Some(original) = resume {
            let story = self.opts.audit.as_ref().and_then(|log| {
                let mut records = Vec::new();
                log.read_each(|r| {
                    if r.action == Verb::Migrate.as_str() {
                        records.push(r)
                    }
                })
                .ok()?;
                unfinished(&records).into_iter().find(|u| &u.id == original)
            });
            let Some(story) = story else {
                return Err(format!(
                    "the audit log holds no unfinished migration {original} of {source}: nothing to resume"
                )
                .into());
            };
            since = story.since;
            submitted = story.submitted;
            if submitted.is_none() {
                let rules = self.rules(source, to, tag_id, since).await?;
                match self.look_for_copy(&rules).await {
                    Look::Found(copy) => submitted = Some(self.adopted(action, id, copy).await?),
                    Look::Absent => {}
                    Look::Doubtful(job, at) => return Err(doubtful(&job, &at, source, since)),
                    Look::Stale(why) => {
                        return Err(Stop::interrupted(format!(
                            "{to} has no fresh listing ({why}): a copy of {source} may be there unseen, so nothing \
                             is submitted again; {source} is left as it was (`flightdeck migrate --resume` once {to} answers)"
                        )));
                    }
                }
            }
            if submitted.is_none() && matches!(self.sighting(source).await, Sighting::Absent) {
                return Err(format!(
                    "{source} is gone and {to} holds no copy of it from this migration: nothing to finish"
                )
                .into());
            }
        } else if let Some(copy) = already_migrated(&self.state.borrow(), source) {
            return Err(format!("{source} was already migrated: {} carries it as its origin", copy.job_ref).into());
        }

        let new = match submitted {
            Some(new) => new,
            None => {
                let asked = {
                    let _turn = self.turn(to).await;
                    target.submit(spec).await
                };
                match asked {
                    Ok(new) => {
                        self.write(vec![self.step(action, id, SUBMITTED, &new.to_string())])
                            .await
                            .map_err(|e| format!("{new} submitted, but {e}; {source} is untouched (both exist)"))?;
                        new
                    }
                    Err(e) if !outcome_unknown(&e) => {
                        return Err(format!("{to} refused it: {e}; {source} is untouched").into());
                    }
                    // The target may have taken it and the answer was lost: look before saying anything.
                    Err(e) => {
                        let rules = self.rules(source, to, tag_id, since).await?;
                        match self.look_for_copy(&rules).await {
                            Look::Found(copy) => self.adopted(action, id, copy).await?,
                            Look::Doubtful(job, at) => return Err(doubtful(&job, &at, source, since)),
                            Look::Absent => {
                                return Err(Stop::interrupted(format!(
                                    "{to} gave no answer to the submit ({e}) and lists no copy of {source} yet; \
                                     {source} is left as it was (`flightdeck migrate --resume` adopts the copy if {to} \
                                     lists one, else submits it)"
                                )));
                            }
                            Look::Stale(why) => {
                                return Err(Stop::interrupted(format!(
                                    "{to} gave no answer to the submit ({e}) and has no fresh listing ({why}): whether \
                                     it took {source} is not known; {source} is left as it was \
                                     (`flightdeck migrate --resume` finishes it once {to} answers)"
                                )));
                            }
                        }
                    }
                }
            }
        };

        match self.confirm(&new).await {
            Sighting::Listed(state) if state.is_finished() && state != JobState::Completed => {
                return Err(
                    format!("{new} ended at once on {to} ({state}); {source} is left as it was (both exist)").into()
                );
            }
            Sighting::Listed(_) => {}
            Sighting::Absent | Sighting::Unknown => {
                return Err(format!(
                    "{new} was submitted but {to} does not list it yet; {source} is left as it was (both exist: \
                     `flightdeck migrate --resume` finishes it once {new} shows)"
                )
                .into());
            }
        }

        if matches!(self.sighting(source).await, Sighting::Absent) {
            return Ok(format!("{source} → {new} ({source} had already left its queue)"));
        }
        let cancelled = {
            let _turn = self.turn(&source.cluster).await;
            origin.job_action_if(source, JobAction::Cancel, uid.as_deref()).await
        };
        if let Some(w) = self.wakes.get(&source.cluster) {
            w.notify_one();
        }
        match cancelled {
            Ok(()) => Ok(format!("{source} → {new}")),
            Err(e) => Err(format!(
                "{new} submitted, but cancelling {source} failed: {e}; both exist: {source} and {new} \
                 (`flightdeck migrate --resume` finishes it)"
            )
            .into()),
        }
    }

    /// The rules a copy of `source` on `to` must meet, the target asked which user it acts as.
    async fn rules(
        &self,
        source: &JobRef,
        to: &str,
        id: Option<&str>,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<CopyRules, Stop> {
        let Some(target) = self.backends.get(to) else {
            return Err(format!("{source} → {to}: a cluster is no longer configured").into());
        };
        let user = target.acting_user().await.map_err(|e| {
            Stop::interrupted(format!(
                "cannot ask {to} which user it acts as ({e}), so no copy of {source} can be told apart; \
                 {source} is left as it was (`flightdeck migrate --resume` once {to} answers)"
            ))
        })?;
        Ok(CopyRules { source: source.clone(), to: to.to_string(), id: id.map(str::to_string), user, since })
    }

    /// The copy `rules` adopt recorded as the target's job (`submitted`).
    async fn adopted(&self, action: &Action, id: &str, copy: JobRef) -> Result<JobRef, Stop> {
        self.write(vec![self.step(action, id, SUBMITTED, &copy.to_string())]).await.map_err(|e| {
            Stop::interrupted(format!("{copy} is the copy, but {e}; nothing was cancelled (both exist)"))
        })?;
        Ok(copy)
    }

    /// Look for the copy `rules` adopt in the first fresh listing of the target taken after
    /// now (its poller is woken), waiting at most [`CONFIRM_WAIT`]; a refresh that fails
    /// meanwhile ends the wait as stale. Without pollers the target is asked directly.
    async fn look_for_copy(&self, rules: &CopyRules) -> Look {
        let found = |s: &crate::model::Snapshot| {
            if let Some(j) = s.jobs.iter().find(|j| rules.adopts(j)) {
                return Look::Found(j.job_ref.clone());
            }
            match s.jobs.iter().find(|j| rules.doubtful(j)) {
                Some(j) => {
                    let at = j.submit_time.map_or_else(|| "at an unknown time".to_string(), |t| format!("at {t}"));
                    Look::Doubtful(j.job_ref.clone(), at)
                }
                None => Look::Absent,
            }
        };
        if !self.opts.poll {
            let Some(backend) = self.backends.get(&rules.to) else { return Look::Stale("not configured".into()) };
            return match backend.snapshot().await {
                Ok(s) => found(&s),
                Err(e) => Look::Stale(e.to_string()),
            };
        }
        let mut rx = self.state.clone();
        // Refreshes of the target finished before now; the second one after now began after now.
        let before = rx.borrow().cluster(&rules.to).map_or(0, |c| c.attempts);
        let deadline = tokio::time::Instant::now() + CONFIRM_WAIT;
        if let Some(w) = self.wakes.get(&rules.to) {
            w.notify_one();
        }
        loop {
            let seen = {
                let state = rx.borrow_and_update();
                match state.cluster(&rules.to) {
                    None => Some(Look::Stale("not in the fleet".into())),
                    Some(c) => match (&c.health, c.snapshot.as_ref()) {
                        (crate::model::Health::Stale { error, .. }, _) if c.attempts > before => {
                            Some(Look::Stale(error.clone()))
                        }
                        (crate::model::Health::Fresh { .. }, Some(s)) if c.attempts > before => match found(s) {
                            Look::Found(copy) => Some(Look::Found(copy)),
                            look if c.attempts >= before + 2 => Some(look),
                            _ => None,
                        },
                        _ => None,
                    },
                }
            };
            if let Some(look) = seen {
                return look;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return Look::Stale(format!("no fresh listing within {} s", CONFIRM_WAIT.as_secs())),
            }
        }
    }

    /// Wait until the target lists `job` (its poller is woken), at most [`CONFIRM_WAIT`];
    /// without pollers the target is asked for a snapshot directly.
    async fn confirm(&self, job: &JobRef) -> Sighting {
        if !self.opts.poll {
            return self.sighting_now(job).await;
        }
        let mut rx = self.state.clone();
        let asked_at = chrono::Utc::now();
        let deadline = tokio::time::Instant::now() + CONFIRM_WAIT;
        if let Some(w) = self.wakes.get(&job.cluster) {
            w.notify_one();
        }
        loop {
            let seen = {
                let state = rx.borrow_and_update();
                sighting_in(&state, job, Some(asked_at))
            };
            if let Sighting::Listed(state) = seen {
                return Sighting::Listed(state);
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return seen,
            }
        }
    }

    /// Is `job` in its cluster's latest picture?
    async fn sighting(&self, job: &JobRef) -> Sighting {
        if !self.opts.poll {
            return self.sighting_now(job).await;
        }
        sighting_in(&self.state.borrow(), job, None)
    }

    async fn sighting_now(&self, job: &JobRef) -> Sighting {
        let Some(backend) = self.backends.get(&job.cluster) else { return Sighting::Unknown };
        match backend.snapshot().await {
            Ok(s) => s.jobs.iter().find(|j| &j.job_ref == job).map_or(Sighting::Absent, |j| Sighting::Listed(j.state)),
            Err(_) => Sighting::Unknown,
        }
    }

    async fn turn(&self, cluster: &str) -> Option<tokio::sync::OwnedSemaphorePermit> {
        match self.limits.get(cluster) {
            Some(limit) => limit.clone().acquire_owned().await.ok(),
            None => None,
        }
    }

    fn step(&self, action: &Action, id: &str, outcome: &str, message: &str) -> AuditRecord {
        let mut record = self.record(action, id, outcome, message);
        record.spec = None;
        record
    }
}

/// The stop for a job that carries the migration's id but says it came before the intent.
fn doubtful(job: &JobRef, at: &str, source: &JobRef, since: chrono::DateTime<chrono::Utc>) -> Stop {
    Stop::interrupted(format!(
        "{job} carries this migration's id but says it was submitted {at}, before the migration began ({since}): \
         a clock that runs behind, or a job someone else tagged; it is not taken as the copy and nothing is \
         submitted beside it; {source} is left as it was (cancel {job} if it is not the copy, then \
         `flightdeck migrate --resume`)"
    ))
}

/// `job` in `state`: listed, absent from a fresh picture (taken after `since`, when given),
/// or unknown (no fresh picture).
fn sighting_in(state: &FleetState, job: &JobRef, since: Option<chrono::DateTime<chrono::Utc>>) -> Sighting {
    let Some(cluster) = state.cluster(&job.cluster) else { return Sighting::Unknown };
    let Some(snapshot) = cluster.snapshot.as_ref() else { return Sighting::Unknown };
    if let Some(j) = snapshot.jobs.iter().find(|j| &j.job_ref == job) {
        return Sighting::Listed(j.state);
    }
    let fresh = match cluster.health {
        crate::model::Health::Fresh { at } => since.is_none_or(|t| at > t),
        _ => false,
    };
    if fresh { Sighting::Absent } else { Sighting::Unknown }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClusterKind, Queue, Snapshot};

    fn record(id: &str, outcome: &str, message: &str, spec: bool) -> AuditRecord {
        AuditRecord {
            id: id.into(),
            time: chrono::Utc::now(),
            who: "a@b".into(),
            action: "migrate".into(),
            target: "hpc/12".into(),
            detail: Some("to=k8s".into()),
            outcome: outcome.into(),
            message: message.into(),
            spec: spec
                .then(|| Box::new(JobSpec { name: "t".into(), command: Some("true".into()), ..JobSpec::default() })),
        }
    }

    #[test]
    fn the_log_says_which_migrations_are_unfinished() {
        let records = vec![
            // 1: the target refused it: finished, the source untouched.
            record("1", "intent", "", true),
            record("1", "error", "k8s refused it", false),
            // 2: submitted, then the cancel failed: unfinished, with the target's job.
            record("2", "intent", "", true),
            record("2", SUBMITTED, "k8s/ml:t-abcde", false),
            record("2", "error", "cancelling hpc/12 failed", false),
            // 3: the process died after the intent: unfinished, nothing known of the target.
            record("3", "intent", "", true),
            // 4: done.
            record("4", "intent", "", true),
            record("4", SUBMITTED, "k8s/ml:t-fghij", false),
            record("4", "ok", "hpc/12 → k8s/ml:t-fghij", false),
            // 6: a submit whose answer was lost, no copy listed: interrupted, to resume.
            record("6", "intent", "", true),
            record("6", INTERRUPTED, "k8s gave no answer to the submit", false),
            // 5: unfinished, then resumed to the end (same id).
            record("5", "intent", "", true),
            record("5", SUBMITTED, "k8s/ml:t-klmno", false),
            record("5", "intent", "", true),
            record("5", "ok", "done", false),
        ];
        let open = unfinished(&records);
        let ids: Vec<&str> = open.iter().map(|u| u.id.as_str()).collect();
        assert_eq!(ids, ["2", "3", "6"]);
        assert_eq!(open[0].submitted, Some(JobRef::new("k8s", "ml:t-abcde")));
        assert_eq!(open[0].to, "k8s");
        assert_eq!(open[0].source, JobRef::new("hpc", "12"));
        assert_eq!(open[1].submitted, None);
        let Action::Migrate { resume, .. } = open[1].action() else { panic!() };
        assert_eq!(resume.as_deref(), Some("3"));
    }

    #[test]
    fn an_older_migration_without_an_id_is_named_not_resumed() {
        let records = vec![
            record("", "intent", "", true),
            record("", "ok", "hpc/12 → k8s/ml:t-1", false),
            record("", "intent", "", true),
        ];
        assert!(unfinished(&records).is_empty());
        assert_eq!(without_id(&records), [("hpc/12".to_string(), "k8s".to_string())]);
    }

    #[test]
    fn a_tag_names_its_origin_and_migration_and_only_that_copy_is_adopted() {
        use crate::model::{migration_tag, split_migration_tag};
        let tag = migration_tag("my cluster/7", "18c2f-3a-0");
        assert_eq!(split_migration_tag(&tag), ("my cluster/7", Some("18c2f-3a-0")));
        assert_eq!(split_migration_tag("hpc/12"), ("hpc/12", None), "a tag from before ids");
        assert_eq!(split_migration_tag("hpc/12 migration=a;b"), ("hpc/12 migration=a;b", None));
        let since = chrono::Utc::now();
        let rules = CopyRules {
            source: JobRef::new("hpc", "12"),
            to: "k8s".into(),
            id: Some("m-1".into()),
            user: Some("alice".into()),
            since,
        };
        let job = |cluster: &str, tag: &str, user: &str, at: chrono::DateTime<chrono::Utc>| {
            let mut j = Job::new(JobRef::new(cluster, "1"), JobState::Pending);
            (j.migrated_from, j.user, j.submit_time) = (Some(tag.into()), user.into(), Some(at));
            j
        };
        let ours = migration_tag("hpc/12", "m-1");
        // Slurm's whole second: submitted in the intent's second counts as after it.
        let same_second = chrono::DurationRound::duration_trunc(since, chrono::TimeDelta::seconds(1)).unwrap();
        assert!(rules.adopts(&job("k8s", &ours, "alice", same_second)));
        assert!(!rules.adopts(&job("hpc", &ours, "alice", since)), "not on the target");
        assert!(!rules.adopts(&job("k8s", &ours, "bob", since)), "another user's");
        assert!(!rules.adopts(&job("k8s", &migration_tag("hpc/12", "m-2"), "alice", since)), "another migration");
        assert!(!rules.adopts(&job("k8s", "hpc/12", "alice", since)), "no id");
        let older = job("k8s", &ours, "alice", since - chrono::TimeDelta::seconds(2));
        assert!(!rules.adopts(&older), "older");
        assert!(rules.doubtful(&older), "older, with our id: neither adopted nor submitted beside");
        assert!(!rules.doubtful(&job("k8s", &ours, "bob", since - chrono::TimeDelta::seconds(2))));
        assert!(!rules.doubtful(&job("k8s", &ours, "alice", since)), "adopted, not doubtful");
        let mut ended = job("k8s", &ours, "alice", since);
        ended.state = JobState::Cancelled;
        assert!(!rules.adopts(&ended));
        // An intent from before ids adopts an id-less tag; a kind without owners skips the owner.
        let legacy = CopyRules { id: None, user: None, ..rules };
        assert!(legacy.adopts(&job("k8s", "hpc/12", "whoever", since)));
        assert!(!legacy.adopts(&job("k8s", &ours, "alice", since)));
    }

    #[test]
    fn adapting_tags_the_origin_and_drops_what_the_target_lacks_by_name() {
        let spec = JobSpec {
            name: "t".into(),
            command: Some("true".into()),
            partition: Some("gpu".into()),
            account: Some("ml".into()),
            ..JobSpec::default()
        };
        let mut target = ClusterState::new("k8s", ClusterKind::KUBERNETES);
        target.snapshot = Some(Arc::new(Snapshot::default()));
        let source = JobRef::new("hpc", "12");
        let (out, warnings) = adapt(
            Imported { spec: spec.clone(), warnings: vec!["w0".into()] },
            &source,
            "slurm",
            &target,
            &MigrateOptions::default(),
        );
        assert_eq!(out.migrated_from.as_deref(), Some("hpc/12"));
        assert_eq!((out.partition, out.account), (None, None));
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[1].starts_with("`partition`: k8s has no partition or queue named \"gpu\""), "{warnings:?}");
        assert!(warnings[2].starts_with("`account`: \"ml\" is a slurm account"), "{warnings:?}");

        // Slurm to Slurm: a partition the target has and the account stay.
        let mut target = ClusterState::new("fd24", ClusterKind::SLURM);
        let mut snapshot = Snapshot::default();
        snapshot.queues.push(Queue { name: "gpu".into(), ..Queue::default() });
        target.snapshot = Some(Arc::new(snapshot));
        let (out, warnings) =
            adapt(Imported { spec, warnings: Vec::new() }, &source, "slurm", &target, &MigrateOptions::default());
        assert_eq!((out.partition.as_deref(), out.account.as_deref()), (Some("gpu"), Some("ml")));
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
