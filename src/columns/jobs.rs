//! The columns of a jobs table.

use std::borrow::Cow;
use std::cmp::Ordering;

use chrono::{DateTime, Utc};

use super::Shape;
use super::format::{Duration, cost, elapsed};
use super::natural::natural_cmp;
use crate::model::{Job, JobGpuUse};

/// A column of a jobs table, and the sort key it stands for.
///
/// The cockpit's columns come first, in their order, so that a cockpit column's index in
/// [`JobColumn::COCKPIT`] is its discriminant (`JobColumn::State as usize`); the CLI-only
/// columns follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobColumn {
    Cluster,
    Id,
    /// The Kubernetes workload's kind (`PyTorchJob`); see [`Shape::optional`].
    Kind,
    Name,
    User,
    Partition,
    State,
    Reason,
    Gpus,
    /// `gpu-01+3`: the first node and how many more.
    Nodes,
    Elapsed,
    Limit,
    /// Dollars per hour, where the backend says (cloud runs); see [`Shape::optional`].
    Cost,
    /// Measured utilisation of the job's GPUs (`87%`, `idle(2%)`), where telemetry reads
    /// them; see [`Shape::optional`].
    GpuUse,
    /// `cluster/id`, as the CLI's action commands take it.
    Ref,
    /// Every node, comma-separated.
    NodeList,
}

/// What a job's cells need beside the job itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct JobContext<'a> {
    /// When its snapshot was taken (a running job's elapsed time is counted up to then).
    pub taken_at: Option<DateTime<Utc>>,
    /// How it uses its GPUs, where measured.
    pub gpu_use: Option<&'a JobGpuUse>,
}

impl JobContext<'_> {
    pub fn at(taken_at: Option<DateTime<Utc>>) -> Self {
        JobContext { taken_at, gpu_use: None }
    }
}

impl JobColumn {
    /// The cockpit's jobs table, left to right; also the cycle of its sort key.
    pub const COCKPIT: [JobColumn; 14] = [
        JobColumn::Cluster,
        JobColumn::Id,
        JobColumn::Kind,
        JobColumn::Name,
        JobColumn::User,
        JobColumn::Partition,
        JobColumn::State,
        JobColumn::Reason,
        JobColumn::Gpus,
        JobColumn::Nodes,
        JobColumn::Elapsed,
        JobColumn::Limit,
        JobColumn::Cost,
        JobColumn::GpuUse,
    ];

    /// The shapes of [`JobColumn::COCKPIT`], in its order (what table fitting reads).
    pub const COCKPIT_SHAPES: [Shape; 14] = {
        let mut out = [Shape::new("", 0, 0, 0); 14];
        let mut i = 0;
        while i < out.len() {
            out[i] = JobColumn::COCKPIT[i].shape();
            i += 1;
        }
        out
    };

    /// `flightdeck jobs`, left to right.
    pub const CLI: [JobColumn; 11] = [
        JobColumn::Ref,
        JobColumn::Kind,
        JobColumn::Name,
        JobColumn::User,
        JobColumn::Partition,
        JobColumn::State,
        JobColumn::Reason,
        JobColumn::Gpus,
        JobColumn::NodeList,
        JobColumn::Cost,
        JobColumn::GpuUse,
    ];

    pub const fn title(self) -> &'static str {
        match self {
            JobColumn::Cluster => "CLUSTER",
            JobColumn::Id => "ID",
            JobColumn::Kind => "KIND",
            JobColumn::Name => "NAME",
            JobColumn::User => "USER",
            JobColumn::Partition => "PARTITION",
            JobColumn::State => "STATE",
            JobColumn::Reason => "REASON",
            JobColumn::Gpus => "GPUS",
            JobColumn::Nodes | JobColumn::NodeList => "NODES",
            JobColumn::Elapsed => "ELAPSED",
            JobColumn::Limit => "LIMIT",
            JobColumn::Ref => "REF",
            JobColumn::Cost => "$/H",
            JobColumn::GpuUse => "GPU%",
        }
    }

    /// How the column fits a narrow terminal.
    pub const fn shape(self) -> Shape {
        let t = self.title();
        match self {
            JobColumn::Cluster => Shape::new(t, 7, 12, 2),
            // Kubernetes ids (`ml:pod:train-0`) are long and useless when cut.
            JobColumn::Id => Shape::new(t, 7, 32, 0).content_first(),
            JobColumn::Kind => Shape::new(t, 4, 16, 3).optional(),
            JobColumn::Name => Shape::new(t, 16, 50, 0),
            JobColumn::User => Shape::new(t, 6, 12, 1),
            JobColumn::Partition => Shape::new(t, 9, 14, 6),
            JobColumn::State => Shape::new(t, 7, 11, 0),
            JobColumn::Reason => Shape::new(t, 10, 40, 4),
            JobColumn::Gpus => Shape::new(t, 7, 16, 1),
            JobColumn::Nodes => Shape::new(t, 6, 20, 7),
            JobColumn::Elapsed => Shape::new(t, 7, 8, 3).right(),
            JobColumn::Limit => Shape::new(t, 6, 7, 5).right(),
            JobColumn::Ref => Shape::new(t, 10, 40, 0).content_first(),
            JobColumn::NodeList => Shape::new(t, 6, 60, 7),
            JobColumn::Cost => Shape::new(t, 4, 8, 6).right().optional(),
            JobColumn::GpuUse => Shape::new(t, 4, 9, 2).right().optional(),
        }
    }

    /// The cell's text for `job`, seen in `cx`.
    pub fn cell<'j>(self, job: &'j Job, cx: JobContext<'_>) -> Cow<'j, str> {
        let mut text = String::new();
        match self.cell_into(job, cx, &mut text) {
            Some(own) => Cow::Borrowed(own),
            None => Cow::Owned(text),
        }
    }

    /// The cell's text: the job's own (`Some`), or else written into `out` (cleared first).
    /// A pass over every job measures its cells through one `out`, allocating nothing per cell.
    pub fn cell_into<'j>(self, job: &'j Job, cx: JobContext<'_>, out: &mut String) -> Option<&'j str> {
        use std::fmt::Write;
        out.clear();
        // Writing to a String cannot fail.
        let mut put = |args: std::fmt::Arguments<'_>| {
            let _ = out.write_fmt(args);
            None
        };
        match self {
            JobColumn::Cluster => Some(&job.job_ref.cluster),
            JobColumn::Id => Some(&job.job_ref.id),
            JobColumn::Kind => Some(kind_of(job)),
            JobColumn::Name => Some(&job.name),
            JobColumn::User => Some(&job.user),
            JobColumn::Partition => Some(&job.partition),
            JobColumn::State => Some(job.state.as_str()),
            JobColumn::Reason => Some(job.reason.as_deref().unwrap_or("")),
            // `a100×4` (four A100s); the count alone when the model is unknown; `-` for none.
            JobColumn::Gpus => match (job.gpus(), &job.gpu_model) {
                (0, _) => Some("-"),
                (n, Some(model)) => put(format_args!("{model}×{n}")),
                (n, None) => put(format_args!("{n}")),
            },
            // `gpu-01`, `gpu-01+3`, `(2)` while pending, `-`.
            JobColumn::Nodes => match job.nodes.as_slice() {
                [] if job.node_count > 0 => put(format_args!("({})", job.node_count)),
                [] => Some("-"),
                [one] => Some(one),
                [first, rest @ ..] => put(format_args!("{first}+{}", rest.len())),
            },
            JobColumn::Elapsed => match elapsed_secs(job, cx.taken_at) {
                Some(secs) => put(format_args!("{}", elapsed(secs))),
                None => Some("-"),
            },
            // `∞` when there is none.
            JobColumn::Limit => match job.time_limit_secs {
                Some(secs) => put(format_args!("{}", Duration(secs))),
                None => Some("∞"),
            },
            JobColumn::Ref => put(format_args!("{}", job.job_ref)),
            JobColumn::Cost => match job.cost_per_hour {
                Some(c) => put(format_args!("{}", cost(c))),
                None => Some(""),
            },
            JobColumn::GpuUse => match cx.gpu_use {
                Some(u) => put(format_args!("{}", GpuUseText(u))),
                None => Some(""),
            },
            JobColumn::NodeList => match job.nodes.as_slice() {
                [] => Some("-"),
                [one] => Some(one),
                [first, rest @ ..] => {
                    out.push_str(first);
                    for n in rest {
                        out.push(',');
                        out.push_str(n);
                    }
                    None
                }
            },
        }
    }

    /// The column's width when it does not depend on the jobs: elapsed times change every
    /// refresh, so that column is as wide as its longest form (`999d23h`) from the start.
    pub fn steady_width(self) -> Option<usize> {
        (self == JobColumn::Elapsed).then_some(7)
    }

    /// The width before any job is seen: the state column starts wide enough for every
    /// common state (`completing`), so a job changing state does not move the columns after it.
    pub fn initial_width(self) -> usize {
        match self {
            JobColumn::State => "completing".len(),
            c => c.steady_width().unwrap_or(0),
        }
    }

    /// Order `a` before or after `b` by this column, then by cluster and (natural) id so
    /// that the order is total and stable across refreshes.
    pub fn compare(self, a: &Job, a_cx: JobContext<'_>, b: &Job, b_cx: JobContext<'_>) -> Ordering {
        let (a_taken, b_taken) = (a_cx.taken_at, b_cx.taken_at);
        let utilisation = |cx: JobContext<'_>| cx.gpu_use.and_then(|u| u.mean_utilisation).unwrap_or(-1.0);
        let primary = match self {
            JobColumn::Cluster | JobColumn::Ref => Ordering::Equal,
            JobColumn::Id => natural_cmp(&a.job_ref.id, &b.job_ref.id),
            JobColumn::Kind => kind_of(a).cmp(kind_of(b)),
            JobColumn::Name => a.name.cmp(&b.name),
            JobColumn::User => a.user.cmp(&b.user),
            JobColumn::Partition => a.partition.cmp(&b.partition),
            JobColumn::State => a.state.cmp(&b.state),
            JobColumn::Reason => a.reason.cmp(&b.reason),
            JobColumn::Gpus => a.gpus().cmp(&b.gpus()).then_with(|| a.gpu_model.cmp(&b.gpu_model)),
            JobColumn::Nodes | JobColumn::NodeList => {
                a.node_count.cmp(&b.node_count).then_with(|| a.nodes.cmp(&b.nodes))
            }
            JobColumn::Elapsed => elapsed_secs(a, a_taken).cmp(&elapsed_secs(b, b_taken)),
            JobColumn::Limit => a.time_limit_secs.unwrap_or(u64::MAX).cmp(&b.time_limit_secs.unwrap_or(u64::MAX)),
            JobColumn::Cost => a.cost_per_hour.unwrap_or(-1.0).total_cmp(&b.cost_per_hour.unwrap_or(-1.0)),
            JobColumn::GpuUse => utilisation(a_cx).total_cmp(&utilisation(b_cx)),
        };
        primary
            .then_with(|| a.job_ref.cluster.cmp(&b.job_ref.cluster))
            .then_with(|| natural_cmp(&a.job_ref.id, &b.job_ref.id))
    }
}

/// The workload kind of a job, empty for a job that is not a workload.
fn kind_of(job: &Job) -> &str {
    job.workload.as_deref().map_or("", |w| w.kind_label())
}

/// The GPUs of a job, in the one form both front ends write: the model, `×`, the count
/// (`a100×4`, read "four A100s"); the count alone when the model is unknown (`4`); `-`
/// for none.
pub fn gpus_cell(job: &Job) -> String {
    JobColumn::Gpus.cell(job, JobContext::default()).into_owned()
}

/// `87%`; `idle(2%)` once flagged idle (one word, so CLI rows keep their word count); `?`
/// when its GPUs were read without a figure.
pub fn gpu_use_cell(used: &JobGpuUse) -> String {
    GpuUseText(used).to_string()
}

/// [`gpu_use_cell`] as a value to format: a pass over every job writes it into one buffer.
struct GpuUseText<'a>(&'a JobGpuUse);

impl std::fmt::Display for GpuUseText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.0.mean_utilisation, self.0.idle) {
            (Some(u), false) => write!(f, "{u:.0}%"),
            (Some(u), true) => write!(f, "idle({u:.0}%)"),
            (None, true) => f.write_str("idle"),
            (None, false) => f.write_str("?"),
        }
    }
}

/// `gpu-01`, `gpu-01+3`, `(2)` while pending, `-`.
pub fn nodes_cell(job: &Job) -> String {
    JobColumn::Nodes.cell(job, JobContext::default()).into_owned()
}

/// The time limit, `∞` when there is none.
pub fn limit_cell(job: &Job) -> String {
    JobColumn::Limit.cell(job, JobContext::default()).into_owned()
}

/// Seconds the job has run, as of the snapshot (`taken_at`), or until it ended.
pub fn elapsed_secs(job: &Job, taken_at: Option<DateTime<Utc>>) -> Option<u64> {
    if job.state.is_waiting() {
        return None;
    }
    let start = job.start_time?;
    let end = if job.state.is_finished() { job.end_time.or(taken_at)? } else { taken_at? };
    Some((end - start).num_seconds().max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobRef, JobState};

    #[test]
    fn cockpit_columns_are_indexed_by_their_discriminant() {
        for (i, c) in JobColumn::COCKPIT.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?}");
            assert_eq!(c.shape().title, c.title());
        }
    }

    #[test]
    fn gpu_cells() {
        let mut j = Job::new(JobRef::new("c", "1"), JobState::Pending);
        assert_eq!(JobColumn::Gpus.cell(&j, JobContext::default()), "-");
        j.gpus_requested = 4;
        assert_eq!(JobColumn::Gpus.cell(&j, JobContext::default()), "4");
        j.gpu_model = Some("a100".into());
        assert_eq!(JobColumn::Gpus.cell(&j, JobContext::default()), "a100×4");
    }

    #[test]
    fn ids_sort_naturally_within_a_cluster() {
        let a = Job::new(JobRef::new("c", "9"), JobState::Pending);
        let b = Job::new(JobRef::new("c", "10"), JobState::Pending);
        let other = Job::new(JobRef::new("b", "99"), JobState::Pending);
        assert_eq!(JobColumn::Id.compare(&a, JobContext::default(), &b, JobContext::default()), Ordering::Less);
        assert_eq!(JobColumn::Cluster.compare(&a, JobContext::default(), &b, JobContext::default()), Ordering::Less);
        assert_eq!(
            JobColumn::Cluster.compare(&other, JobContext::default(), &a, JobContext::default()),
            Ordering::Less
        );
    }
}
