//! What this process's refreshes cost the controller, for `doctor`: `sdiag`'s counters
//! read between two diagnoses, over the refreshes made in between, without a refresh of
//! the diagnosis's own (a hub's viewers ask every refresh interval: each would be one more
//! job query).
//!
//! A count is taken only while no refresh is under way, and kept only if none started
//! while `sdiag` ran: a refresh's job query reaches the controller before the refresh ends,
//! so a count taken mid-refresh would charge its query to the wrong side of the mark
//! (0 job queries for one refresh, then 2 for the next).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Mutex;

use super::sdiag::RpcCounts;
use crate::backend::BackendError;

/// How often a diagnosis looks whether the refresh under way has ended.
const POLL: Duration = Duration::from_millis(20);

/// Tries at a count no refresh started during.
const TRIES: usize = 3;

/// Refreshes started and ended, and the counters at the last diagnosis.
#[derive(Default)]
pub struct RpcMeter {
    started: AtomicU64,
    ended: AtomicU64,
    mark: Mutex<Option<Mark>>,
}

struct Mark {
    /// Refreshes ended when `counts` was read.
    ended: u64,
    counts: RpcCounts,
    /// What the last diagnosis measured, said again until another refresh ends.
    last: Measured,
}

/// What a diagnosis can say about the refreshes' cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// The first diagnosis beside a poller: counted from here on.
    From,
    /// Over the last `refreshes` refreshes: query RPCs and job queries in all.
    Over { refreshes: u64, queries: u64, job_queries: u64 },
    /// Around one refresh the diagnosis made itself (nothing else here refreshes).
    Around { queries: u64, job_queries: u64 },
}

impl Measured {
    /// The doctor line: per refresh, and how it was measured.
    pub fn text(&self) -> String {
        match *self {
            Measured::From => {
                "measured from the next doctor on, over the refreshes this process makes until then".into()
            }
            Measured::Around { queries, job_queries } => {
                format!("{queries} ({job_queries} job queries; measured with sdiag around one refresh)")
            }
            Measured::Over { refreshes: n, queries, job_queries } => {
                let per = |v: u64| {
                    if v.is_multiple_of(n) { (v / n).to_string() } else { format!("{:.1}", v as f64 / n as f64) }
                };
                let how = if n == 1 {
                    "measured with sdiag over this process's last refresh".to_string()
                } else {
                    format!("measured with sdiag over this process's last {n} refreshes")
                };
                format!(
                    "{} ({} job queries; {how}, everyone's RPCs in that time counted)",
                    per(queries),
                    per(job_queries)
                )
            }
        }
    }
}

/// Held by a refresh from its first command to its end, however it ends.
pub struct Refreshing<'a>(&'a RpcMeter);

impl Drop for Refreshing<'_> {
    fn drop(&mut self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
    }
}

impl RpcMeter {
    /// A refresh begins: it counts as ended when the guard drops.
    pub fn refreshing(&self) -> Refreshing<'_> {
        self.started.fetch_add(1, Ordering::SeqCst);
        Refreshing(self)
    }

    /// Whether anything in this process has refreshed (or is refreshing).
    pub fn polled(&self) -> bool {
        self.started.load(Ordering::SeqCst) > 0
    }

    /// The cost since the last diagnosis, beside the refreshes this process makes; `sdiag`
    /// reads the counters. No `sdiag` runs while no refresh has started since the last one:
    /// its answer is said again. `wait` bounds the wait for a refresh under way.
    pub async fn measure<F, Fut>(&self, wait: Duration, sdiag: F) -> Result<Measured, BackendError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<RpcCounts, BackendError>>,
    {
        // One diagnosis at a time: another waiting meanwhile reads what this one measured.
        let mut mark = self.mark.lock().await;
        let idle_since =
            |m: &&Mark| self.started.load(Ordering::SeqCst) == m.ended && self.ended.load(Ordering::SeqCst) == m.ended;
        if let Some(m) = mark.as_ref().filter(idle_since) {
            return Ok(m.last);
        }
        let (ended, counts) = self.quiet_counts(wait, sdiag).await?;
        let measured = match mark.as_ref() {
            Some(m) if ended > m.ended => Measured::Over {
                refreshes: ended - m.ended,
                queries: counts.queries_since(&m.counts),
                job_queries: counts.count_since(&m.counts, "REQUEST_JOB_INFO"),
            },
            Some(m) => m.last,
            None => Measured::From,
        };
        *mark = Some(Mark { ended, counts, last: measured });
        Ok(measured)
    }

    /// The counters with the refreshes ended when they were read, taken while none ran
    /// (the best of a few tries where refreshes follow each other without a pause).
    async fn quiet_counts<F, Fut>(&self, wait: Duration, sdiag: F) -> Result<(u64, RpcCounts), BackendError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<RpcCounts, BackendError>>,
    {
        let deadline = tokio::time::Instant::now() + wait;
        let mut tries = 0;
        loop {
            while self.started.load(Ordering::SeqCst) != self.ended.load(Ordering::SeqCst)
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(POLL).await;
            }
            let ended = self.ended.load(Ordering::SeqCst);
            let counts = sdiag().await?;
            tries += 1;
            if self.started.load(Ordering::SeqCst) == ended || tries >= TRIES {
                return Ok((ended, counts));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn counts(job_info: u64, partition: u64) -> RpcCounts {
        let mut c = RpcCounts::default();
        c.by_type.insert("REQUEST_JOB_INFO".into(), job_info);
        c.by_type.insert("REQUEST_PARTITION_INFO".into(), partition);
        c
    }

    /// A controller whose counters a refresh bumps when its job query is sent.
    #[derive(Default)]
    struct Controller(std::sync::Mutex<(u64, u64)>, AtomicU64);

    impl Controller {
        fn query(&self) {
            let mut c = self.0.lock().unwrap();
            c.0 += 1;
            c.1 += 2;
        }
        async fn sdiag(&self) -> Result<RpcCounts, BackendError> {
            self.1.fetch_add(1, Ordering::SeqCst);
            let c = *self.0.lock().unwrap();
            Ok(counts(c.0, c.1))
        }
    }

    #[tokio::test]
    async fn the_first_diagnosis_marks_the_next_measures() {
        let (meter, slurm) = (RpcMeter::default(), Controller::default());
        for _ in 0..2 {
            let _r = meter.refreshing();
            slurm.query();
        }
        assert_eq!(meter.measure(Duration::from_secs(1), || slurm.sdiag()).await.unwrap(), Measured::From);
        for _ in 0..3 {
            let _r = meter.refreshing();
            slurm.query();
        }
        let m = meter.measure(Duration::from_secs(1), || slurm.sdiag()).await.unwrap();
        assert_eq!(m, Measured::Over { refreshes: 3, queries: 9, job_queries: 3 });
        assert_eq!(
            m.text(),
            "3 (1 job queries; measured with sdiag over this process's last 3 refreshes, everyone's RPCs in that time counted)"
        );
        // No refresh since: the same answer, and no sdiag.
        let asked = slurm.1.load(Ordering::SeqCst);
        assert_eq!(meter.measure(Duration::from_secs(1), || slurm.sdiag()).await.unwrap(), m);
        assert_eq!(slurm.1.load(Ordering::SeqCst), asked);
    }

    /// A diagnosis that comes while a refresh's query has reached the controller but the
    /// refresh has not ended waits for its end: the query is charged to that refresh.
    #[tokio::test(start_paused = true)]
    async fn a_count_waits_for_the_refresh_under_way() {
        let (meter, slurm) = (Arc::new(RpcMeter::default()), Arc::new(Controller::default()));
        {
            let _r = meter.refreshing();
            slurm.query();
        }
        meter.measure(Duration::from_secs(5), || slurm.sdiag()).await.unwrap();
        let (m, s) = (meter.clone(), slurm.clone());
        let refresh = tokio::spawn(async move {
            let _r = m.refreshing();
            s.query();
            tokio::time::sleep(Duration::from_millis(300)).await;
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Mid-refresh: the count waits, then charges the one query to the one refresh.
        let measured = meter.measure(Duration::from_secs(5), || slurm.sdiag()).await.unwrap();
        assert_eq!(measured, Measured::Over { refreshes: 1, queries: 3, job_queries: 1 });
        refresh.await.unwrap();
        {
            let _r = meter.refreshing();
            slurm.query();
        }
        let next = meter.measure(Duration::from_secs(5), || slurm.sdiag()).await.unwrap();
        assert_eq!(next, Measured::Over { refreshes: 1, queries: 3, job_queries: 1 });
    }

    /// A refresh that starts while sdiag runs (its query counted, its end not yet) makes
    /// the count a retry, after that refresh's end.
    #[tokio::test(start_paused = true)]
    async fn a_refresh_starting_during_the_count_is_waited_out() {
        let (meter, slurm) = (Arc::new(RpcMeter::default()), Arc::new(Controller::default()));
        {
            let _r = meter.refreshing();
            slurm.query();
        }
        meter.measure(Duration::from_secs(5), || slurm.sdiag()).await.unwrap();
        {
            let _r = meter.refreshing();
            slurm.query();
        }
        let first = std::sync::atomic::AtomicBool::new(true);
        let measured = meter
            .measure(Duration::from_secs(5), || {
                if first.swap(false, Ordering::SeqCst) {
                    meter.started.fetch_add(1, Ordering::SeqCst);
                    slurm.query();
                    let m = meter.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        m.ended.fetch_add(1, Ordering::SeqCst);
                    });
                }
                slurm.sdiag()
            })
            .await
            .unwrap();
        assert_eq!(measured, Measured::Over { refreshes: 2, queries: 6, job_queries: 2 });
    }
}
