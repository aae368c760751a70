//! Who holds the GPUs: per user, account, cluster or canonical model, what is held now (from
//! the snapshots the fleet publishes, idle where telemetry measured it, $/h where every holder
//! has a price) and the GPU-hours of a window (finished jobs' records clipped to it, plus the
//! running jobs' hours so far). Pure and one pass over the jobs: `flightdeck usage` and the
//! cockpit compute alike, each feeding one [`Tally`] job by job (the cockpit from the pass
//! that builds its rows). A figure no source can give is "not known", never a zero.
//!
//! Who holds the GPUs, pure: `compute(FleetState, UsageAsk)` → rows per user, account,
//! cluster or canonical model (`UsageBy`), most held first: GPUs held now by running jobs with
//! their models, idle where telemetry measured them (else counted as unmeasured), $/h only when
//! every holder has a price; with a window, GPU-hours of finished records clipped to it plus
//! running jobs' hours so far, and the dollars they cost in it (each job's price × its hours
//! inside; a lower bound where some job has no price, not known where none has); a source that cannot say (`WindowSource::gap`, a cluster with no
//! source) makes the rows it could touch lower bounds (`gpu_hours_complete: false`), named in
//! `not_known`; `window_answers`/`window_sources`/`window_gap` turn each cluster's history answer
//! into a window source (a failed read is a gap), `merge_window` puts a window's GPU-hours beside
//! what is held now, `UsageRow::cells` and `header` are the CLI's and the cockpit's table.

mod merge;

pub use self::merge::merge;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{FleetState, History, Job, JobGpuUse, JobRecord};
use crate::columns::natural::natural_cmp;

/// The row key of a job without an account.
pub const NO_ACCOUNT: &str = "(none)";
/// The model of GPUs no backend named.
pub const UNKNOWN_MODEL: &str = "(unknown)";

/// What the rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageBy {
    #[default]
    User,
    /// Slurm account, Kubernetes namespace, cloud project, as each backend fills `account`.
    Account,
    Cluster,
    /// Canonical GPU model ([`super::gpu_names`]).
    Model,
}

impl UsageBy {
    pub const ALL: [UsageBy; 4] = [UsageBy::User, UsageBy::Account, UsageBy::Cluster, UsageBy::Model];

    pub fn as_str(self) -> &'static str {
        match self {
            UsageBy::User => "user",
            UsageBy::Account => "account",
            UsageBy::Cluster => "cluster",
            UsageBy::Model => "model",
        }
    }

    /// The rows [`UsageBy::as_str`] names.
    pub fn from_name(name: &str) -> Option<UsageBy> {
        UsageBy::ALL.into_iter().find(|b| b.as_str() == name)
    }
}

/// What a usage read asks of a cluster that computes its own (a hub): the rows, and the
/// window (`since` absent: only what is held now; `until` absent: up to now).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageQuery {
    pub by: UsageBy,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

/// One cluster's finished jobs over the window.
#[derive(Debug, Clone, Copy)]
pub struct WindowSource<'a> {
    pub cluster: &'a str,
    pub records: &'a [JobRecord],
    /// What this source cannot say (its history failed, records were left out past a limit,
    /// it lists only some users' jobs): every row it could touch is then incomplete.
    pub gap: Option<&'a str>,
}

/// What to compute.
#[derive(Debug, Clone, Copy)]
pub struct UsageAsk<'a> {
    pub by: UsageBy,
    pub now: DateTime<Utc>,
    /// The window's start, with one source per cluster; `None`: only what is held now.
    pub window: Option<(DateTime<Utc>, &'a [WindowSource<'a>])>,
    /// A job whose GPUs read under this mean utilisation now counts as idle, as `jobs
    /// --idle` reads one reading; the telemetry's own idle flag (under it for the whole idle
    /// window) always does.
    pub idle_below_percent: Option<f32>,
}

/// GPUs of one model held now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCount {
    pub model: String,
    pub gpus: u32,
}

/// One user's (account's, cluster's, model's) GPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageRow {
    pub key: String,
    /// Jobs holding GPUs now.
    pub jobs_now: u32,
    pub gpus_now: u32,
    /// Of `gpus_now`, those telemetry reads idle.
    pub idle_gpus_now: u32,
    /// Of `gpus_now`, those no telemetry reading covers (their idleness is not known).
    pub unmeasured_gpus_now: u32,
    /// Dollars per hour of what is held now; `None` when it holds nothing or some holder has
    /// no price (not known, rather than a sum that leaves some out).
    pub cost_per_hour: Option<f64>,
    /// `gpus_now` by canonical model, most first.
    pub models: Vec<ModelCount>,
    /// GPU-hours in the window (finished and running jobs); `None` without a window.
    pub gpu_hours: Option<f64>,
    /// False when some source could not say all of it: `gpu_hours` is then a lower bound.
    pub gpu_hours_complete: bool,
    /// Idle GPU-hours in the window, at least: the running jobs' GPUs since telemetry first
    /// read them under the idle threshold without a break. Always a lower bound: the fleet
    /// keeps minutes of telemetry, not the window's, and nothing of finished jobs' idleness.
    /// `None` without a window.
    #[serde(default)]
    pub idle_gpu_hours_at_least: Option<f64>,
    /// Dollars the window's jobs cost inside it: each job's `cost_per_hour` × its hours
    /// inside the window (clipped as `gpu_hours` are), ended runs and running ones so far.
    /// `None` without a window, or where no such job has a price (not known, not $0).
    #[serde(default)]
    pub cost_window: Option<f64>,
    /// False when some job in the window has no price or some source could not say all of
    /// the window: `cost_window` is then a lower bound.
    #[serde(default)]
    pub cost_window_complete: bool,
}

/// One association's fair share as the scheduler weighs it (Slurm's `sshare`): an account
/// row (`user` empty) or a user's row under its account. A figure the scheduler leaves out is
/// `None`, never zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FairShare {
    pub cluster: String,
    pub account: String,
    pub user: Option<String>,
    /// Shares granted (`RawShares`).
    pub raw_shares: Option<u64>,
    /// Those shares as a fraction of the siblings' (`NormShares`).
    pub norm_shares: Option<f64>,
    /// Decayed usage in CPU-seconds (`RawUsage`).
    pub raw_usage: Option<u64>,
    /// Usage as a fraction of the cluster's (`EffectvUsage`).
    pub effective_usage: Option<f64>,
    /// The fair-share factor, 0 to 1: higher, sooner (`FairShare`).
    pub fair_share: Option<f64>,
}

impl FairShare {
    /// The cells under [`FAIR_SHARE_HEADER`], `-` where a figure is not known.
    pub fn cells(&self) -> Vec<String> {
        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        vec![
            self.cluster.clone(),
            self.account.clone(),
            or_dash(self.user.clone()),
            or_dash(self.raw_shares.map(|v| v.to_string())),
            or_dash(self.norm_shares.map(|v| format!("{v:.3}"))),
            or_dash(self.raw_usage.map(|v| v.to_string())),
            or_dash(self.effective_usage.map(|v| format!("{v:.3}"))),
            or_dash(self.fair_share.map(|v| format!("{v:.3}"))),
        ]
    }
}

/// The column titles of the fair-share table.
pub const FAIR_SHARE_HEADER: [&str; 8] =
    ["CLUSTER", "ACCOUNT", "USER", "RAW-SHARES", "NORM-SHARES", "RAW-USAGE", "EFFECTIVE", "FAIRSHARE"];

/// One queue's GPU quota per flavor beside the usage (Kueue's ClusterQueues, Volcano's
/// Queues as the snapshot reads them): what it is granted, may borrow, uses and has
/// borrowed, in GPUs (a MIG slice or time-sliced share counts as one of its resource).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueQuotaRow {
    pub cluster: String,
    pub queue: String,
    /// The cohort it borrows within.
    pub cohort: Option<String>,
    pub flavor: String,
    pub resource: String,
    /// Granted (`nominalQuota`).
    pub nominal: f64,
    /// The most it may borrow from its cohort; `None`: no limit set.
    pub borrowing_limit: Option<f64>,
    /// In use by admitted workloads, borrowed included.
    pub used: f64,
    /// Of `used`, borrowed from the cohort.
    pub borrowed: f64,
    pub workloads_pending: u32,
    pub workloads_admitted: u32,
}

/// A quantity in milli-units as units.
fn units(milli: i64) -> f64 {
    milli as f64 / 1000.0
}

/// `16`, `0.5`: as few decimals as the figure needs, at most three.
fn figure(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl QueueQuotaRow {
    /// The cells under [`QUEUE_QUOTA_HEADER`], `-` where there is none.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.cluster.clone(),
            self.queue.clone(),
            self.cohort.clone().unwrap_or_else(|| "-".into()),
            self.flavor.clone(),
            self.resource.clone(),
            figure(self.nominal),
            self.borrowing_limit.map_or_else(|| "-".into(), figure),
            figure(self.used),
            figure(self.borrowed),
            self.workloads_pending.to_string(),
            self.workloads_admitted.to_string(),
        ]
    }
}

/// What the queue quota table is, above it in the CLI and on screen 5.
pub const QUEUE_QUOTA_TITLE: &str = "Queue quota (GPUs granted, borrowed and used per flavor)";

/// The column titles of the queue quota table.
pub const QUEUE_QUOTA_HEADER: [&str; 11] = [
    "CLUSTER",
    "QUEUE",
    "COHORT",
    "FLAVOR",
    "RESOURCE",
    "NOMINAL",
    "BORROW-LIMIT",
    "USED",
    "BORROWED",
    "PENDING",
    "ADMITTED",
];

/// Every queue's GPU quota in the fleet's current picture, by cluster, queue and flavor.
pub fn queue_quotas(state: &FleetState) -> Vec<QueueQuotaRow> {
    let mut rows = Vec::new();
    for cluster in &state.clusters {
        let Some(snapshot) = &cluster.snapshot else { continue };
        for q in &snapshot.queues {
            for r in q.quota.iter().filter(|r| r.is_gpu()) {
                rows.push(QueueQuotaRow {
                    cluster: cluster.name.clone(),
                    queue: q.name.clone(),
                    cohort: q.cohort.clone(),
                    flavor: r.flavor.clone(),
                    resource: r.resource.clone(),
                    nominal: units(r.nominal_milli),
                    borrowing_limit: r.borrowing_limit_milli.map(units),
                    used: units(r.used_milli),
                    borrowed: units(r.borrowed_milli),
                    workloads_pending: q.workloads_pending,
                    workloads_admitted: q.workloads_admitted,
                });
            }
        }
    }
    rows
}

/// The rows, most held first, and their total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub by: UsageBy,
    pub now: DateTime<Utc>,
    pub since: Option<DateTime<Utc>>,
    pub rows: Vec<UsageRow>,
    pub total: UsageRow,
    /// What the window lacks, per source (`fd22: …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_known: Vec<String>,
    /// Each scheduler's fair share beside the usage (Slurm's `sshare`), where asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fair_share: Vec<FairShare>,
    /// Each queue's GPU quota, borrowing and use beside the usage (Kueue's ClusterQueues).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue_quota: Vec<QueueQuotaRow>,
    /// The rows count only this user's jobs (a hub's viewer); the total counts everyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_of: Option<String>,
}

#[derive(Default)]
struct Acc<'a> {
    jobs_now: u32,
    gpus_now: u32,
    idle: u32,
    unmeasured: u32,
    cost: f64,
    unpriced: bool,
    models: Vec<(&'a str, u32)>,
    hours: f64,
    incomplete: bool,
    idle_hours: f64,
    /// Dollars inside the window, of the jobs that have a price.
    spent: f64,
    /// Some job in the window has a price; some job in it has none.
    spent_priced: bool,
    spent_unpriced: bool,
}

impl<'a> Acc<'a> {
    fn add_model(&mut self, model: &'a str, gpus: u32) {
        match self.models.iter_mut().find(|(m, _)| *m == model) {
            Some((_, n)) => *n = n.saturating_add(gpus),
            None => self.models.push((model, gpus)),
        }
    }

    /// A job's dollars inside the window: `hours` of it there at `price` per hour.
    fn add_spent(&mut self, price: Option<f64>, hours: f64) {
        match price.filter(|p| p.is_finite() && *p >= 0.0) {
            Some(p) => {
                self.spent += p * hours;
                self.spent_priced = true;
            }
            None => self.spent_unpriced = true,
        }
    }

    fn row(self, key: String, windowed: bool) -> UsageRow {
        let mut models: Vec<ModelCount> =
            self.models.into_iter().map(|(m, gpus)| ModelCount { model: m.to_string(), gpus }).collect();
        models.sort_by(|a, b| b.gpus.cmp(&a.gpus).then_with(|| natural_cmp(&a.model, &b.model)));
        UsageRow {
            key,
            jobs_now: self.jobs_now,
            gpus_now: self.gpus_now,
            idle_gpus_now: self.idle,
            unmeasured_gpus_now: self.unmeasured,
            cost_per_hour: (self.gpus_now > 0 && !self.unpriced).then_some(self.cost),
            models,
            gpu_hours: windowed.then_some(self.hours),
            gpu_hours_complete: !windowed || !self.incomplete,
            idle_gpu_hours_at_least: windowed.then_some(self.idle_hours),
            // Not known only where every job in the window lacks a price.
            cost_window: (windowed && (self.spent_priced || !self.spent_unpriced)).then_some(self.spent),
            cost_window_complete: !windowed || !(self.spent_unpriced || self.incomplete),
        }
    }
}

/// A job's GPUs by canonical model: its per-node allocations, the rest under its own model
/// (the first named) or [`UNKNOWN_MODEL`]. At most a few entries; calls `f` per model.
fn for_each_model<'j>(job: &'j Job, gpus: u32, mut f: impl FnMut(&'j str, u32)) {
    let mut left = gpus;
    for a in &job.gpu_allocations {
        let n = a.count.min(left);
        if n == 0 {
            continue;
        }
        let model = a.model.as_deref().or_else(|| first_model(job)).unwrap_or(UNKNOWN_MODEL);
        f(model, n);
        left -= n;
    }
    if left > 0 {
        f(first_model(job).unwrap_or(UNKNOWN_MODEL), left);
    }
}

fn first_model(job: &Job) -> Option<&str> {
    job.gpu_model.as_deref().and_then(|m| m.split(',').next()).map(str::trim).filter(|m| !m.is_empty())
}

/// Hours of `[start, end]` inside `[since, now]`.
fn hours_inside(start: DateTime<Utc>, end: DateTime<Utc>, since: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    let (from, to) = (start.max(since), end.min(now));
    if to <= from { 0.0 } else { (to - from).num_milliseconds() as f64 / 3_600_000.0 }
}

/// A finished record's GPU-hours inside the window: its GPUs over its run clipped to the
/// window (a job that started before it counts only its part inside, as `sreport` does);
/// `None` when its times cannot place it.
fn record_hours(r: &JobRecord, since: DateTime<Utc>, now: DateTime<Utc>) -> Option<f64> {
    let gpus = r.job.gpus_allocated;
    if gpus == 0 {
        return Some(0.0);
    }
    Some(f64::from(gpus) * record_clock_hours(r, since, now)?)
}

/// A finished record's wall-clock hours inside the window (what its price per hour is
/// charged for); `None` when its times cannot place it.
fn record_clock_hours(r: &JobRecord, since: DateTime<Utc>, now: DateTime<Utc>) -> Option<f64> {
    let end = r.job.end_time?;
    let start = match r.job.start_time {
        Some(s) => s,
        // Never started (cancelled while pending) holds nothing.
        None if r.elapsed_secs.is_none() => return Some(0.0),
        None => end - chrono::TimeDelta::seconds(i64::try_from(r.elapsed_secs?).ok()?),
    };
    Some(hours_inside(start, end, since, now))
}

fn key_of<'j>(by: UsageBy, cluster: &'j str, job: &'j Job) -> &'j str {
    match by {
        UsageBy::User => &job.user,
        UsageBy::Account => job.account.as_deref().filter(|a| !a.is_empty()).unwrap_or(NO_ACCOUNT),
        UsageBy::Cluster => cluster,
        UsageBy::Model => UNKNOWN_MODEL, // split per model by the caller
    }
}

/// Whether a job's GPUs read idle, whether any reading covers them, and since when every
/// reading has been under the fleet's idle threshold; `used` is its telemetry, if any.
fn idleness(used: Option<&JobGpuUse>, below: Option<f32>) -> (bool, bool, Option<DateTime<Utc>>) {
    match used {
        Some(j) if j.idle || j.mean_utilisation.is_some() => {
            (j.idle || below.is_some_and(|b| j.mean_utilisation.is_some_and(|m| m < b)), true, j.below_since)
        }
        Some(j) => (false, false, j.below_since),
        None => (false, false, None),
    }
}

/// Whether `job` holds GPUs now, so that [`Tally::job`] counts it: a caller may skip the
/// telemetry lookup of every other job.
pub fn holds_gpus_now(job: &Job) -> bool {
    job.gpus_allocated > 0 && job.state.is_active()
}

/// What is held now, fed one job at a time: [`compute`] feeds it from the snapshots, and the
/// cockpit from its own pass over the jobs (one read of each job, not two), so both count
/// every job alike.
pub struct Tally<'a> {
    by: UsageBy,
    now: DateTime<Utc>,
    since: Option<DateTime<Utc>>,
    idle_below_percent: Option<f32>,
    /// Rows for this user's jobs alone; the total counts everyone's.
    rows_of: Option<&'a str>,
    // One lookup per running job (100,000 at scale): foldhash, not SipHash. The rows are
    // sorted at the end, so the map's order is never seen.
    acc: HashMap<&'a str, Acc<'a>, foldhash::fast::RandomState>,
    total: Acc<'a>,
}

impl<'a> Tally<'a> {
    /// Rows `by` of what is held `now`, without a window (the cockpit's usage screen).
    pub fn held_now(by: UsageBy, now: DateTime<Utc>, idle_below_percent: Option<f32>) -> Tally<'a> {
        let ask = UsageAsk { by, now, window: None, idle_below_percent };
        Tally::new(&ask, None)
    }

    fn new(ask: &UsageAsk<'_>, rows_of: Option<&'a str>) -> Tally<'a> {
        Tally {
            by: ask.by,
            now: ask.now,
            since: ask.window.map(|(s, _)| s),
            idle_below_percent: ask.idle_below_percent,
            rows_of,
            acc: HashMap::default(),
            total: Acc::default(),
        }
    }

    /// Count `job` of the cluster named `cluster` if it holds GPUs now ([`holds_gpus_now`]);
    /// `used` is its telemetry (`None`: its GPUs were not measured).
    pub fn job(&mut self, cluster: &'a str, job: &'a Job, used: Option<&JobGpuUse>) {
        let gpus = job.gpus_allocated;
        if !holds_gpus_now(job) {
            return;
        }
        let (by, now, since) = (self.by, self.now, self.since);
        let (idle, measured, low_since) = idleness(used, self.idle_below_percent);
        let clock_hours = since.map(|s| job.start_time.map(|t| hours_inside(t, now, s, now)));
        let running_hours = clock_hours.map(|h| h.map(|h| f64::from(gpus) * h));
        // Idle since its readings went under the threshold, as far as the window reaches.
        let idle_hours = match (since, low_since) {
            (Some(s), Some(low)) => f64::from(gpus) * hours_inside(low, now, s, now),
            _ => 0.0,
        };
        let add = |a: &mut Acc<'_>, n: u32, share: f64| {
            a.jobs_now += 1;
            a.gpus_now = a.gpus_now.saturating_add(n);
            if !measured {
                a.unmeasured = a.unmeasured.saturating_add(n);
            } else if idle {
                a.idle = a.idle.saturating_add(n);
            }
            match job.cost_per_hour {
                Some(c) => a.cost += c * share,
                None => a.unpriced = true,
            }
            a.idle_hours += idle_hours * share;
            match running_hours {
                Some(Some(h)) => a.hours += h * share,
                Some(None) => a.incomplete = true,
                None => {}
            }
            // Its cost so far inside the window; a start not known is already a gap.
            if let Some(Some(h)) = clock_hours {
                a.add_spent(job.cost_per_hour.map(|c| c * share), h);
            }
        };
        add(&mut self.total, gpus, 1.0);
        for_each_model(job, gpus, |m, n| self.total.add_model(m, n));
        if self.rows_of.is_some_and(|u| u != job.user) {
            return;
        }
        if by == UsageBy::Model {
            for_each_model(job, gpus, |m, n| {
                let a = self.acc.entry(m).or_default();
                add(a, n, f64::from(n) / f64::from(gpus));
                a.add_model(m, n);
            });
        } else {
            let a = self.acc.entry(key_of(by, cluster, job)).or_default();
            add(a, gpus, 1.0);
            for_each_model(job, gpus, |m, n| a.add_model(m, n));
        }
    }

    /// The rows, most held first, and their total, beside `state`'s queue quotas.
    pub fn finish(self, state: &FleetState) -> Usage {
        self.into_usage(state, Vec::new())
    }

    fn into_usage(self, state: &FleetState, not_known: Vec<String>) -> Usage {
        let windowed = self.since.is_some();
        let mut rows: Vec<UsageRow> = self.acc.into_iter().map(|(k, a)| a.row(k.to_string(), windowed)).collect();
        rows.sort_by(|a, b| {
            b.gpus_now
                .cmp(&a.gpus_now)
                .then_with(|| b.gpu_hours.unwrap_or(0.0).total_cmp(&a.gpu_hours.unwrap_or(0.0)))
                .then_with(|| natural_cmp(&a.key, &b.key))
        });
        Usage {
            by: self.by,
            now: self.now,
            since: self.since,
            rows,
            total: self.total.row("total".into(), windowed),
            not_known,
            fair_share: Vec::new(),
            queue_quota: queue_quotas(state),
            rows_of: self.rows_of.map(str::to_string),
        }
    }
}

/// Usage over the fleet's current picture and, with a window, its sources' records.
pub fn compute(state: &FleetState, ask: &UsageAsk<'_>) -> Usage {
    compute_rows_of(state, ask, None)
}

/// [`compute`] with rows for `user`'s jobs alone (`None`: everyone's), as a hub answers a
/// viewer: the total still counts every job, so it is the true total.
pub fn compute_rows_of(state: &FleetState, ask: &UsageAsk<'_>, user: Option<&str>) -> Usage {
    let by = ask.by;
    let now = ask.now;
    let mut tally = Tally::new(ask, user);
    for cluster in &state.clusters {
        let Some(snapshot) = &cluster.snapshot else { continue };
        let used = cluster.gpu_use.as_deref();
        for job in snapshot.jobs.iter().filter(|j| holds_gpus_now(j)) {
            tally.job(&cluster.name, job, used.and_then(|u| u.job(&job.job_ref.id)));
        }
    }
    let Tally { acc, total, .. } = &mut tally;

    let mut not_known = Vec::new();
    if let Some((since, sources)) = ask.window {
        // Clusters whose window is not fully known: every row they could add to is a lower
        // bound (a cluster row only for its own cluster).
        let mut gaps: Vec<&str> = Vec::new();
        for source in sources {
            let mut lacks = source.gap.is_some();
            if let Some(gap) = source.gap {
                not_known.push(format!("{}: {gap}", source.cluster));
            }
            let mut unplaced = 0usize;
            for r in source.records {
                let Some(hours) = record_hours(r, since, now) else {
                    unplaced += 1;
                    continue;
                };
                if hours <= 0.0 {
                    continue;
                }
                let gpus = r.job.gpus_allocated;
                // Placed, as its GPU-hours were: its hours are those over its GPUs.
                let clock = hours / f64::from(gpus);
                let price = r.job.cost_per_hour;
                total.hours += hours;
                total.add_spent(price, clock);
                if user.is_some_and(|u| u != r.job.user) {
                    continue;
                }
                if by == UsageBy::Model {
                    for_each_model(&r.job, gpus, |m, n| {
                        let share = f64::from(n) / f64::from(gpus);
                        let a = acc.entry(m).or_default();
                        a.hours += hours * share;
                        a.add_spent(price.map(|p| p * share), clock);
                    });
                } else {
                    let a = acc.entry(key_of(by, source.cluster, &r.job)).or_default();
                    a.hours += hours;
                    a.add_spent(price, clock);
                }
            }
            if unplaced > 0 {
                lacks = true;
                not_known.push(format!(
                    "{}: {} without start or end time, not counted",
                    source.cluster,
                    super::words::counted(unplaced as u64, "finished job", "finished jobs")
                ));
            }
            if lacks {
                gaps.push(source.cluster);
            }
        }
        // A cluster with a snapshot but no source says nothing of its finished jobs.
        for cluster in state.clusters.iter().filter(|c| !sources.iter().any(|s| s.cluster == c.name)) {
            gaps.push(&cluster.name);
            not_known.push(format!("{}: no finished jobs were read", cluster.name));
        }
        if !gaps.is_empty() {
            total.incomplete = true;
            if by == UsageBy::Cluster {
                for gap in &gaps {
                    acc.entry(gap).or_default().incomplete = true;
                }
            } else {
                for a in acc.values_mut() {
                    a.incomplete = true;
                }
            }
        }
    }

    tally.into_usage(state, not_known)
}

/// Finished jobs a window reads per cluster at most; past it the oldest are left out and the
/// window says so.
pub const WINDOW_LIMIT: usize = 100_000;

/// What one cluster's history cannot say of a window: finished jobs only as far as the
/// backend still lists them, older ones left out past [`WINDOW_LIMIT`], accounting not read.
pub fn window_gap(history: &History) -> Option<String> {
    let mut gaps: Vec<String> = Vec::new();
    if history.source != "sacct" {
        gaps.push(format!("finished jobs counted only as {} still lists them", history.source));
    }
    if history.left_out > 0 {
        gaps.push(format!("{} older finished jobs past {WINDOW_LIMIT} left out", history.left_out));
    }
    gaps.extend(history.notes.iter().filter(|n| n.contains("did not read")).cloned());
    (!gaps.is_empty()).then(|| gaps.join("; "))
}

/// Each cluster's answer for a window (its history, or why it has none) as the window's
/// sources: a failed read is an empty history whose gap says why.
pub fn window_answers(answers: Vec<(String, Result<History, String>)>) -> Vec<(String, History, Option<String>)> {
    answers
        .into_iter()
        .map(|(name, answer)| match answer {
            Ok(history) => {
                let gap = window_gap(&history);
                (name, history, gap)
            }
            Err(e) => (name, History::default(), Some(format!("history: {e}"))),
        })
        .collect()
}

/// The sources [`compute`] reads, borrowed from [`window_answers`].
pub fn window_sources(answers: &[(String, History, Option<String>)]) -> Vec<WindowSource<'_>> {
    answers
        .iter()
        .map(|(name, history, gap)| WindowSource { cluster: name, records: &history.records, gap: gap.as_deref() })
        .collect()
}

/// The column titles of a usage table whose rows are `by`.
pub fn header(by: UsageBy) -> [&'static str; 9] {
    let key = match by {
        UsageBy::User => "USER",
        UsageBy::Account => "ACCOUNT",
        UsageBy::Cluster => "CLUSTER",
        UsageBy::Model => "MODEL",
    };
    [key, "JOBS", "GPUS", "IDLE", "$/H", "GPU-H", "IDLE-H", "SPENT", "MODELS"]
}

/// Where [`header`] puts the window's dollars (`SPENT`), a column the CLI leaves out when
/// no row has a price.
pub const SPENT_COLUMN: usize = 7;

impl UsageRow {
    /// The cells under [`header`]: `?` where a figure is not known, `-` where there is none,
    /// `>=N` for GPU-hours some source could not fully say; idle GPU-hours are always at least
    /// (`>=N`), and `?` where no telemetry read any held GPU under the threshold (not zero);
    /// the window's dollars alike: `>=N` where some job has no price or a source could not
    /// say all, `?` where none has a price (Slurm's), `-` without a window.
    pub fn cells(&self) -> Vec<String> {
        let idle = match (self.gpus_now, self.unmeasured_gpus_now) {
            (0, _) => "-".to_string(),
            (held, unmeasured) if unmeasured >= held => "?".to_string(),
            (_, 0) => self.idle_gpus_now.to_string(),
            _ => format!("{}+?", self.idle_gpus_now),
        };
        let cost = match (self.cost_per_hour, self.gpus_now) {
            (Some(c), _) => format!("{c:.2}"),
            (None, 0) => "-".to_string(),
            (None, _) => "?".to_string(),
        };
        let hours = match self.gpu_hours {
            None => "-".to_string(),
            Some(h) if self.gpu_hours_complete => format!("{h:.2}"),
            Some(h) if h > 0.0 => format!(">={h:.2}"),
            Some(_) => "?".to_string(),
        };
        let idle_hours = match self.idle_gpu_hours_at_least {
            None => "-".to_string(),
            Some(h) if h > 0.0 => format!(">={h:.2}"),
            Some(_) => "?".to_string(),
        };
        let spent = match self.cost_window {
            None if self.gpu_hours.is_none() => "-".to_string(),
            None => "?".to_string(),
            Some(c) if self.cost_window_complete => format!("{c:.2}"),
            Some(c) if c > 0.0 => format!(">={c:.2}"),
            Some(_) => "?".to_string(),
        };
        let models: Vec<String> = self.models.iter().map(|m| format!("{}×{}", m.model, m.gpus)).collect();
        vec![
            if self.key.is_empty() { "-".into() } else { self.key.clone() },
            self.jobs_now.to_string(),
            self.gpus_now.to_string(),
            idle,
            cost,
            hours,
            idle_hours,
            spent,
            if models.is_empty() { "-".into() } else { models.join(",") },
        ]
    }
}

/// What is held now (`now`, taken afresh at every refresh) beside the GPU-hours of the last
/// window read (`window`, read on demand): one row per key of either, in `now`'s order, then
/// the keys only the window knows (nothing held now), most hours first.
pub fn merge_window(now: &Usage, window: Option<&Usage>) -> Vec<UsageRow> {
    let Some(window) = window else { return now.rows.clone() };
    let hours: HashMap<&str, &UsageRow> = window.rows.iter().map(|r| (r.key.as_str(), r)).collect();
    let mut rows: Vec<UsageRow> = now
        .rows
        .iter()
        .map(|r| {
            let mut row = r.clone();
            let known = hours.get(r.key.as_str());
            row.gpu_hours = Some(known.and_then(|w| w.gpu_hours).unwrap_or(0.0));
            // A key the window has no row for was in no source: as complete as the window.
            row.gpu_hours_complete = known.map_or(window.total.gpu_hours_complete, |w| w.gpu_hours_complete);
            row.idle_gpu_hours_at_least = Some(known.and_then(|w| w.idle_gpu_hours_at_least).unwrap_or(0.0));
            // A key with no row in the window spent nothing in any source that could say.
            row.cost_window = known.map_or(Some(0.0), |w| w.cost_window);
            row.cost_window_complete = known.map_or(window.total.gpu_hours_complete, |w| w.cost_window_complete);
            row
        })
        .collect();
    let held: std::collections::HashSet<&str> = now.rows.iter().map(|r| r.key.as_str()).collect();
    for w in window.rows.iter().filter(|w| !held.contains(w.key.as_str())) {
        // Nothing held now.
        rows.push(UsageRow {
            key: w.key.clone(),
            gpu_hours: w.gpu_hours,
            gpu_hours_complete: w.gpu_hours_complete,
            idle_gpu_hours_at_least: w.idle_gpu_hours_at_least,
            cost_window: w.cost_window,
            cost_window_complete: w.cost_window_complete,
            ..UsageRow::default()
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{ClusterState, GpuAllocation, GpuUse, JobRef, JobState, Snapshot};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn job(cluster: &str, id: &str, user: &str, account: Option<&str>, gpus: u32, model: &str) -> Job {
        let mut j = Job::new(JobRef::new(cluster, id), JobState::Running);
        j.user = user.into();
        j.account = account.map(Into::into);
        j.gpus_allocated = gpus;
        j.gpus_requested = gpus;
        j.gpu_model = Some(model.into());
        j.start_time = Some(at("2026-12-04T10:00:00Z"));
        j
    }

    fn cluster(name: &str, jobs: Vec<Job>, used: Option<GpuUse>) -> ClusterState {
        let mut c = ClusterState::new(name, "slurm");
        c.snapshot = Some(Arc::new(Snapshot { jobs, ..Snapshot::default() }));
        c.gpu_use = used.map(Arc::new);
        c
    }

    fn reading(jobs: &[(&str, Option<f32>, bool)]) -> GpuUse {
        let mut jobs: Vec<JobGpuUse> = jobs
            .iter()
            .map(|(id, mean, idle)| JobGpuUse {
                job: id.to_string(),
                gpus: 1,
                mean_utilisation: *mean,
                // A job reading under 5% has done so since 11:00.
                below_since: mean.is_some_and(|m| m < 5.0).then(|| at("2026-12-04T11:00:00Z")),
                idle: *idle,
            })
            .collect();
        jobs.sort_by(|a, b| a.job.cmp(&b.job));
        GpuUse { taken_at: at("2026-12-04T12:00:00Z"), source: "t".into(), gpus: vec![], jobs, notes: vec![] }
    }

    fn fleet() -> FleetState {
        let mut split = job("fd22", "3", "bob", Some("physics"), 3, "h100");
        split.gpu_allocations = vec![
            GpuAllocation { node: "n1".into(), model: Some("h100".into()), count: 2, indices: vec![] },
            GpuAllocation { node: "n2".into(), model: Some("a100".into()), count: 1, indices: vec![] },
        ];
        let mut pending = job("fd22", "4", "bob", Some("physics"), 0, "h100");
        pending.state = JobState::Pending;
        let mut ended = job("fd22", "5", "bob", Some("physics"), 8, "h100");
        ended.state = JobState::Completed;
        let mut priced = job("sky", "r1", "carol", None, 1, "l4");
        priced.cost_per_hour = Some(0.7);
        let mut priced2 = job("sky", "r2", "carol", None, 2, "l4");
        priced2.cost_per_hour = Some(1.4);
        FleetState {
            clusters: vec![
                cluster(
                    "fd22",
                    vec![
                        job("fd22", "1", "alice", Some("ml"), 4, "h100"),
                        job("fd22", "2", "alice", Some("ml"), 2, "h100"),
                        split,
                        pending,
                        ended,
                    ],
                    Some(reading(&[("1", Some(1.0), false), ("3", Some(80.0), false)])),
                ),
                cluster("sky", vec![priced, priced2], None),
            ],
            read_only: false,
            version: 1,
        }
    }

    /// The tests' window: from midnight to noon of one day, nothing idle-measured.
    fn midnight_to_noon<'a>(by: UsageBy, sources: &'a [WindowSource<'a>]) -> UsageAsk<'a> {
        UsageAsk {
            by,
            now: at("2026-12-04T12:00:00Z"),
            window: Some((at("2026-12-04T00:00:00Z"), sources)),
            idle_below_percent: None,
        }
    }

    fn now_only(by: UsageBy) -> Usage {
        let ask = UsageAsk { by, now: at("2026-12-04T12:00:00Z"), window: None, idle_below_percent: Some(5.0) };
        compute(&fleet(), &ask)
    }

    #[test]
    fn users_hold_what_their_running_jobs_hold_most_first_idle_where_measured() {
        let u = now_only(UsageBy::User);
        let keys: Vec<(&str, u32, u32, u32)> =
            u.rows.iter().map(|r| (r.key.as_str(), r.gpus_now, r.idle_gpus_now, r.unmeasured_gpus_now)).collect();
        // alice: job 1 idle (1% < 5%), job 2 unmeasured; bob's pending and ended jobs hold nothing.
        assert_eq!(keys, vec![("alice", 6, 4, 2), ("bob", 3, 0, 0), ("carol", 3, 0, 3)]);
        assert_eq!(u.rows[0].jobs_now, 2);
        assert_eq!(
            u.rows[1].models,
            vec![ModelCount { model: "h100".into(), gpus: 2 }, ModelCount { model: "a100".into(), gpus: 1 }]
        );
        assert_eq!((u.total.gpus_now, u.total.idle_gpus_now, u.total.jobs_now), (12, 4, 5));
        assert_eq!(u.rows[0].gpu_hours, None);
        assert!(u.rows[0].gpu_hours_complete);
    }

    #[test]
    fn a_price_is_summed_only_when_every_holder_has_one() {
        let u = now_only(UsageBy::User);
        let carol = u.rows.iter().find(|r| r.key == "carol").unwrap();
        assert!((carol.cost_per_hour.unwrap() - 2.1).abs() < 1e-9);
        assert_eq!(u.rows[0].cost_per_hour, None, "slurm jobs have no price: not known, not $0");
        assert_eq!(u.total.cost_per_hour, None);
    }

    #[test]
    fn accounts_clusters_and_models_group_alike() {
        let keys = |by| now_only(by).rows.into_iter().map(|r| (r.key, r.gpus_now)).collect::<Vec<_>>();
        assert_eq!(
            keys(UsageBy::Account),
            vec![("ml".to_string(), 6), ("(none)".to_string(), 3), ("physics".to_string(), 3)]
        );
        assert_eq!(keys(UsageBy::Cluster), vec![("fd22".to_string(), 9), ("sky".to_string(), 3)]);
        assert_eq!(keys(UsageBy::Model), vec![("h100".to_string(), 8), ("l4".to_string(), 3), ("a100".to_string(), 1)]);
    }

    fn record(id: &str, user: &str, gpus: u32, start: &str, end: &str) -> JobRecord {
        let mut j = job("fd22", id, user, Some("ml"), gpus, "h100");
        j.state = JobState::Completed;
        j.start_time = Some(at(start));
        j.end_time = Some(at(end));
        JobRecord::from_job(j)
    }

    #[test]
    fn the_window_clips_finished_jobs_and_adds_running_hours_so_far() {
        let records = vec![
            // Inside: 2 GPUs × 1 h.
            record("10", "alice", 2, "2026-12-04T06:00:00Z", "2026-12-04T07:00:00Z"),
            // Started 1 h before the window: only its 30 min inside count, × 4 GPUs.
            record("11", "bob", 4, "2026-12-03T23:00:00Z", "2026-12-04T00:30:00Z"),
            // No GPUs.
            record("12", "dave", 0, "2026-12-04T06:00:00Z", "2026-12-04T07:00:00Z"),
        ];
        let fd22 = [WindowSource { cluster: "fd22", records: &records, gap: None }];
        let mut sources = fd22.to_vec();
        sources.push(WindowSource { cluster: "sky", records: &[], gap: None });
        let ask = midnight_to_noon(UsageBy::User, &sources);
        let u = compute(&fleet(), &ask);
        let hours = |k: &str| u.rows.iter().find(|r| r.key == k).and_then(|r| r.gpu_hours).unwrap();
        // alice: 2 GPU-h finished + (4 + 2) GPUs × 2 h running.
        assert!((hours("alice") - 14.0).abs() < 1e-9);
        // bob: 2 GPU-h clipped + 3 GPUs × 2 h running.
        assert!((hours("bob") - 8.0).abs() < 1e-9);
        assert!(u.rows.iter().all(|r| r.key != "dave"));
        assert!(u.rows.iter().all(|r| r.gpu_hours_complete) && u.not_known.is_empty());
        assert!((u.total.gpu_hours.unwrap() - (14.0 + 8.0 + 6.0)).abs() < 1e-9);
        // Idle GPU-hours: only alice's job 1, low since 11:00 (4 GPUs × 1 h), at least.
        let idle = |k: &str| u.rows.iter().find(|r| r.key == k).and_then(|r| r.idle_gpu_hours_at_least).unwrap();
        assert!((idle("alice") - 4.0).abs() < 1e-9 && idle("bob") == 0.0, "{:?}", u.rows);
        let alice = u.rows.iter().find(|r| r.key == "alice").unwrap().cells();
        assert_eq!(alice[6], ">=4.00", "a lower bound, always: {alice:?}");
        let bob = u.rows.iter().find(|r| r.key == "bob").unwrap().cells();
        assert_eq!(bob[6], "?", "no idle reading is not known, not zero: {bob:?}");

        // A source that cannot say makes every user's figure a lower bound, and says why.
        let gappy = [fd22[0], WindowSource { cluster: "sky", records: &[], gap: Some("history: timed out") }];
        let u = compute(&fleet(), &UsageAsk { window: Some((at("2026-12-04T00:00:00Z"), &gappy)), ..ask });
        assert!(u.rows.iter().all(|r| !r.gpu_hours_complete) && !u.total.gpu_hours_complete);
        assert_eq!(u.not_known, vec!["sky: history: timed out"]);
        // By cluster, only that cluster's row.
        let u = compute(
            &fleet(),
            &UsageAsk { by: UsageBy::Cluster, window: Some((at("2026-12-04T00:00:00Z"), &fd22)), ..ask },
        );
        let complete: Vec<(&str, bool)> = u.rows.iter().map(|r| (r.key.as_str(), r.gpu_hours_complete)).collect();
        assert_eq!(complete, vec![("fd22", true), ("sky", false)]);
        assert_eq!(u.not_known, vec!["sky: no finished jobs were read"]);
    }

    /// A cloud run of `gpus` GPUs at `price` dollars an hour, ended.
    fn priced(id: &str, user: &str, gpus: u32, price: Option<f64>, start: &str, end: &str) -> JobRecord {
        let mut r = record(id, user, gpus, start, end);
        r.job.cost_per_hour = price;
        r
    }

    /// Usage by user over `records` of one cluster `sky` (fd22 has no source: nothing of its
    /// finished jobs is counted), in the window from midnight to noon.
    fn spent_over(records: &[JobRecord]) -> Usage {
        let sources = [
            WindowSource { cluster: "sky", records, gap: None },
            WindowSource { cluster: "fd22", records: &[], gap: None },
        ];
        let ask = midnight_to_noon(UsageBy::User, &sources);
        compute(&FleetState::default(), &ask)
    }

    fn row<'u>(u: &'u Usage, key: &str) -> &'u UsageRow {
        u.rows.iter().find(|r| r.key == key).unwrap_or_else(|| panic!("no row {key}: {:?}", u.rows))
    }

    #[test]
    fn the_window_costs_each_priced_run_its_price_times_its_hours_inside() {
        let u = spent_over(&[
            // 2 h at $3/h (the price is the run's, not per GPU).
            priced("r1", "erin", 4, Some(3.0), "2026-12-04T06:00:00Z", "2026-12-04T08:00:00Z"),
            // 30 min at $1.5/h.
            priced("r2", "erin", 1, Some(1.5), "2026-12-04T09:00:00Z", "2026-12-04T09:30:00Z"),
        ]);
        let erin = row(&u, "erin");
        assert_eq!((erin.cost_window, erin.cost_window_complete), (Some(6.75), true));
        assert_eq!((u.total.cost_window, u.total.cost_window_complete), (Some(6.75), true));
        assert_eq!(erin.cells()[SPENT_COLUMN], "6.75");
        let text = serde_json::to_string(&u).unwrap();
        assert!(text.contains("\"cost_window\":6.75,\"cost_window_complete\":true"), "{text}");
    }

    #[test]
    fn runs_without_a_price_are_not_known_never_zero_dollars() {
        // Slurm's records carry no price.
        let u = spent_over(&[record("10", "alice", 2, "2026-12-04T06:00:00Z", "2026-12-04T07:00:00Z")]);
        let alice = row(&u, "alice");
        assert_eq!((alice.cost_window, alice.cost_window_complete), (None, false));
        assert_eq!(alice.cells()[SPENT_COLUMN], "?");
        assert_eq!(u.total.cost_window, None);
        // No window: no figure at all.
        assert_eq!(now_only(UsageBy::User).rows[0].cells()[SPENT_COLUMN], "-");
        assert_eq!(now_only(UsageBy::User).rows[0].cost_window, None);
    }

    #[test]
    fn some_runs_priced_and_some_not_give_a_lower_bound() {
        let u = spent_over(&[
            priced("r1", "erin", 8, Some(20.0), "2026-12-04T06:00:00Z", "2026-12-04T07:00:00Z"),
            priced("r2", "erin", 8, None, "2026-12-04T08:00:00Z", "2026-12-04T09:00:00Z"),
            priced("r3", "frank", 1, Some(1.0), "2026-12-04T08:00:00Z", "2026-12-04T10:00:00Z"),
        ]);
        let erin = row(&u, "erin");
        assert_eq!((erin.cost_window, erin.cost_window_complete), (Some(20.0), false));
        assert_eq!(erin.cells()[SPENT_COLUMN], ">=20.00");
        let frank = row(&u, "frank");
        assert_eq!((frank.cost_window, frank.cost_window_complete), (Some(2.0), true));
        assert_eq!((u.total.cost_window, u.total.cost_window_complete), (Some(22.0), false));
        // A source that cannot say all of the window makes every figure a lower bound.
        let sources = [WindowSource {
            cluster: "sky",
            records: &[priced("r3", "frank", 1, Some(1.0), "2026-12-04T08:00:00Z", "2026-12-04T10:00:00Z")],
            gap: Some("history: timed out"),
        }];
        let ask = midnight_to_noon(UsageBy::User, &sources);
        let gappy = compute(&FleetState::default(), &ask);
        assert_eq!(row(&gappy, "frank").cells()[SPENT_COLUMN], ">=2.00");
    }

    #[test]
    fn a_run_that_started_before_the_window_costs_only_its_hours_inside() {
        // Ran 22:00 → 02:00 at $10/h: 2 h of it inside the window that starts at midnight.
        let u = spent_over(&[priced("r1", "erin", 2, Some(10.0), "2026-12-03T22:00:00Z", "2026-12-04T02:00:00Z")]);
        let erin = row(&u, "erin");
        assert_eq!((erin.cost_window, erin.gpu_hours), (Some(20.0), Some(4.0)));
        // By model, a run's price is split as its GPUs are.
        let mut split = priced("r2", "erin", 4, Some(8.0), "2026-12-04T06:00:00Z", "2026-12-04T07:00:00Z");
        split.job.gpu_allocations = vec![
            GpuAllocation { node: "n1".into(), model: Some("h100".into()), count: 3, indices: vec![] },
            GpuAllocation { node: "n2".into(), model: Some("a100".into()), count: 1, indices: vec![] },
        ];
        let sources = [WindowSource { cluster: "sky", records: std::slice::from_ref(&split), gap: None }];
        let ask = midnight_to_noon(UsageBy::Model, &sources);
        let by_model = compute(&FleetState::default(), &ask);
        assert_eq!(row(&by_model, "h100").cost_window, Some(6.0));
        assert_eq!(row(&by_model, "a100").cost_window, Some(2.0));
    }

    #[test]
    fn running_priced_jobs_add_their_cost_so_far_and_slurm_ones_make_it_a_lower_bound() {
        let sources = [
            WindowSource { cluster: "fd22", records: &[], gap: None },
            WindowSource { cluster: "sky", records: &[], gap: None },
        ];
        let ask = midnight_to_noon(UsageBy::User, &sources);
        let u = compute(&fleet(), &ask);
        // carol's two sky runs, $0.7/h and $1.4/h, both running since 10:00.
        let carol = row(&u, "carol");
        assert!((carol.cost_window.unwrap() - 4.2).abs() < 1e-9 && carol.cost_window_complete, "{carol:?}");
        assert_eq!(row(&u, "alice").cost_window, None, "slurm jobs have no price");
        assert_eq!(u.total.cells()[SPENT_COLUMN], ">=4.20");
    }

    #[test]
    fn each_queues_gpu_quota_stands_beside_the_usage_cpu_and_memory_left_out() {
        use crate::model::{Queue, QueueQuota};
        let mut state = fleet();
        let quota = |resource: &str, nominal, limit, used, borrowed| QueueQuota {
            flavor: "h100".into(),
            resource: resource.into(),
            nominal_milli: nominal,
            borrowing_limit_milli: limit,
            used_milli: used,
            borrowed_milli: borrowed,
        };
        let queue = Queue {
            name: "gpu-cq".into(),
            cohort: Some("team".into()),
            quota: vec![
                quota("cpu", 600_000, None, 144_000, 0),
                quota("nvidia.com/gpu", 16_000, Some(4_000), 18_000, 2_000),
            ],
            workloads_pending: 1,
            workloads_admitted: 2,
            ..Queue::default()
        };
        let snapshot = Arc::make_mut(state.clusters[0].snapshot.as_mut().unwrap());
        snapshot.queues = vec![queue, Queue { name: "gpu".into(), gpus_total: 8, ..Queue::default() }];
        let ask =
            UsageAsk { by: UsageBy::User, now: at("2026-12-04T12:00:00Z"), window: None, idle_below_percent: None };
        let u = compute(&state, &ask);
        assert_eq!(u.queue_quota.len(), 1, "{:?}", u.queue_quota);
        let q = &u.queue_quota[0];
        assert_eq!((q.cluster.as_str(), q.queue.as_str(), q.cohort.as_deref()), ("fd22", "gpu-cq", Some("team")));
        assert_eq!((q.nominal, q.borrowing_limit, q.used, q.borrowed), (16.0, Some(4.0), 18.0, 2.0));
        assert_eq!(q.cells(), ["fd22", "gpu-cq", "team", "h100", "nvidia.com/gpu", "16", "4", "18", "2", "1", "2"]);
        let text = serde_json::to_string(&u).unwrap();
        assert!(text.contains("\"queue_quota\":[{\"cluster\":\"fd22\""), "{text}");
        assert!(!serde_json::to_string(&now_only(UsageBy::User)).unwrap().contains("queue_quota"), "none: left out");
    }

    #[test]
    fn the_usage_round_trips_as_json() {
        let u = now_only(UsageBy::Model);
        let text = serde_json::to_string(&u).unwrap();
        assert!(text.contains("\"by\":\"model\"") && text.contains("\"cost_per_hour\":null"), "{text}");
        assert_eq!(serde_json::from_str::<Usage>(&text).unwrap(), u);
    }
}
