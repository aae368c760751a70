//! Who holds the GPUs over the whole fleet, for `flightdeck usage` and screen 5: each cluster
//! whose backend computes its own (a hub, where the caller's role decides the rows) asked
//! once, the rest computed here from the fleet's picture, one history read (one `sacct` per
//! Slurm cluster) and one fair-share read per cluster; the parts merged
//! (`model::usage::merge`). A hub that cannot answer (an older one without the call, or one
//! that failed) is counted here from what it lists, and the answer says so.
//!
//! The hub uses the same pieces for its own clusters: [`Fleet::usage_reads`] (which it
//! caches) and [`usage_of`].

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::future::join_all;

use super::Fleet;
use crate::model::usage::{self, FairShare, Usage, UsageAsk, UsageQuery, WindowSource};
use crate::model::{FleetState, History, HistoryQuery};

/// The fleet's usage, and whether some read failed (the CLI's exit status).
pub struct FleetUsage {
    pub usage: Usage,
    pub failed: bool,
}

/// What one cluster's accounting says for a window: its finished jobs and its fair share,
/// or why not.
#[derive(Clone)]
pub struct UsageReads {
    pub cluster: String,
    pub history: Result<History, String>,
    pub fair_share: Result<Option<Vec<FairShare>>, String>,
}

impl UsageReads {
    pub fn failed(&self) -> bool {
        self.history.is_err() || self.fair_share.is_err()
    }
}

impl Fleet {
    /// Who holds the GPUs of every cluster (see the module's doc). Each read is bounded by
    /// `bound` where given.
    pub async fn usage(&self, query: &UsageQuery, bound: Option<Duration>) -> FleetUsage {
        let names = self.cluster_names();
        let asked = join_all(names.iter().map(|name| self.remote_usage(name, query))).await;
        let (mut parts, mut here, mut notes, mut failed) = (Vec::new(), Vec::new(), Vec::new(), false);
        for (name, answer) in names.into_iter().zip(asked) {
            match answer {
                Ok(Some(part)) => parts.push(part),
                Ok(None) => here.push(name),
                Err(e) => {
                    // An older hub without the call is no failure: its part is counted here.
                    failed |= !matches!(e, crate::backend::BackendError::Unsupported(_));
                    notes.push(format!("{name}: {e}"));
                    here.push(name);
                }
            }
        }
        if !here.is_empty() || parts.is_empty() {
            let since = query.since;
            let reads = join_all(here.iter().map(|name| self.usage_reads(name, since, bound))).await;
            failed |= reads.iter().any(UsageReads::failed);
            let (state, query, idle) = (only(&self.state(), &here), *query, self.idle_below_percent);
            // Up to a window limit of records per cluster: summed off the async threads.
            let summed = tokio::task::spawn_blocking(move || usage_of(&state, &reads, &query, idle, None)).await;
            let mut part = summed
                .unwrap_or_else(|e| Usage { not_known: vec![format!("the sum failed: {e}")], ..Usage::default() });
            notes.append(&mut part.not_known);
            part.not_known = notes;
            parts.push(part);
        }
        FleetUsage { usage: usage::merge(query.by, parts), failed }
    }

    /// One cluster's accounting for a window from `since` (nothing read without one): its
    /// history (every user, every end state) and its fair share, at once.
    pub async fn usage_reads(
        &self,
        cluster: &str,
        since: Option<DateTime<Utc>>,
        bound: Option<Duration>,
    ) -> UsageReads {
        let Some(since) = since else {
            return UsageReads { cluster: cluster.to_string(), history: Ok(History::default()), fair_share: Ok(None) };
        };
        let query = HistoryQuery { since, user: None, states: Vec::new(), limit: usage::WINDOW_LIMIT };
        let (history, fair_share) = tokio::join!(
            bounded(bound, "finished jobs", self.history(cluster, &query)),
            bounded(bound, "fair share", self.fair_share(cluster)),
        );
        UsageReads {
            cluster: cluster.to_string(),
            history,
            fair_share: fair_share.map_err(|e| format!("fair share: {e}")),
        }
    }
}

/// A read bounded by `bound` where given, its failure in words.
async fn bounded<T>(
    bound: Option<Duration>,
    what: &str,
    read: impl std::future::Future<Output = Result<T, crate::backend::BackendError>>,
) -> Result<T, String> {
    match bound {
        None => read.await.map_err(|e| e.to_string()),
        Some(bound) => match tokio::time::timeout(bound, read).await {
            Ok(answer) => answer.map_err(|e| e.to_string()),
            Err(_) => Err(format!("{what}: no answer in {} s", bound.as_secs())),
        },
    }
}

/// `state` with only the clusters `names` lists.
pub fn only(state: &FleetState, names: &[String]) -> FleetState {
    FleetState {
        clusters: state.clusters.iter().filter(|c| names.contains(&c.name)).cloned().collect(),
        read_only: state.read_only,
        version: state.version,
    }
}

/// Usage over `state` (the clusters `reads` are of) as `query` asks: the window's GPU-hours
/// from `reads` when it has a start, the fair share beside it (only `user`'s and the
/// accounts' lines where the rows are `user`'s alone), rows of `user`'s jobs only where given.
pub fn usage_of(
    state: &FleetState,
    reads: &[UsageReads],
    query: &UsageQuery,
    idle_below_percent: f32,
    user: Option<&str>,
) -> Usage {
    let now = query.until.unwrap_or_else(Utc::now);
    // Borrowed, not copied: a hub answers many callers from one cached read.
    let gaps: Vec<Option<String>> = reads
        .iter()
        .map(|r| match &r.history {
            Ok(history) => usage::window_gap(history),
            Err(e) => Some(format!("history: {e}")),
        })
        .collect();
    let sources: Vec<WindowSource<'_>> = reads
        .iter()
        .zip(&gaps)
        .map(|(r, gap)| WindowSource {
            cluster: &r.cluster,
            records: r.history.as_ref().map_or(&[][..], |h| &h.records[..]),
            gap: gap.as_deref(),
        })
        .collect();
    let ask = UsageAsk {
        by: query.by,
        now,
        window: query.since.map(|since| (since, &sources[..])),
        idle_below_percent: Some(idle_below_percent),
    };
    let mut computed = usage::compute_rows_of(state, &ask, user);
    for r in reads {
        match &r.fair_share {
            Ok(Some(rows)) => computed.fair_share.extend(
                rows.iter().filter(|f| user.is_none() || f.user.is_none() || f.user.as_deref() == user).cloned(),
            ),
            Ok(None) => {}
            Err(e) => computed.not_known.push(format!("{}: {e}", r.cluster)),
        }
    }
    computed
}
