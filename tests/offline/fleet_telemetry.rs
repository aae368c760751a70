//! The fleet's telemetry loop over a scripted backend, in paused time: the cadence, the
//! join to jobs published on the cluster's state, idle detection through the fleet, a
//! failing reading kept beside the last good one, a source preferred to the backend, and a
//! backend that cannot measure costing nothing after its first answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use flightdeck::backend::BackendError;
use flightdeck::backend::telemetry::TelemetrySource;
use flightdeck::config::IdleRule;
use flightdeck::fleet::{Fleet, FleetOptions, Member, TelemetryOptions};
use flightdeck::model::{FleetState, GpuAllocation, GpuSample, Job, JobRef, JobState, Snapshot, Telemetry};

use crate::memory::MemoryCluster;

/// A cluster `gpu` with one job (`7`) on GPUs 0–1 of node `g1`, whose GPUs read at
/// `utilisation` percent; time in the readings follows tokio's (paused) clock. The cluster
/// is a [`MemoryCluster`] measured by [`Gpus::measure`].
struct Gpus {
    measures: bool,
    utilisation: AtomicU32,
    failing: AtomicBool,
    readings: AtomicU32,
    started: tokio::time::Instant,
}

impl Gpus {
    fn new(measures: bool, utilisation: u32) -> Arc<Self> {
        Arc::new(Gpus {
            measures,
            utilisation: AtomicU32::new(utilisation),
            failing: AtomicBool::new(false),
            readings: AtomicU32::new(0),
            started: tokio::time::Instant::now(),
        })
    }

    fn now(&self) -> DateTime<Utc> {
        let epoch = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        epoch + chrono::TimeDelta::from_std(self.started.elapsed()).unwrap()
    }

    fn reading(&self, source: &str) -> Telemetry {
        let utilisation = self.utilisation.load(Ordering::SeqCst) as f32;
        let gpus = (0..2).map(|i| GpuSample { utilisation: Some(utilisation), ..GpuSample::new("g1", i) }).collect();
        Telemetry { taken_at: self.now(), source: source.into(), gpus, notes: Vec::new() }
    }

    /// The cluster's own reach (nvidia-smi over its link): counted, failing on cue.
    fn measure(&self) -> Result<Option<Telemetry>, BackendError> {
        self.readings.fetch_add(1, Ordering::SeqCst);
        if !self.measures {
            return Ok(None);
        }
        if self.failing.load(Ordering::SeqCst) {
            return Err(BackendError::Connect { target: "g1".into(), message: "nvidia-smi: no route".into() });
        }
        Ok(Some(self.reading("scripted")))
    }

    /// The cluster itself, in memory, measured through [`Gpus::measure`].
    fn cluster(self: &Arc<Self>) -> MemoryCluster {
        let mut job = Job::new(JobRef::new("gpu", "7"), JobState::Running);
        job.gpus_allocated = 2;
        job.nodes = vec!["g1".into()];
        job.gpu_allocations =
            vec![GpuAllocation { node: "g1".into(), model: Some("h100".into()), count: 2, indices: vec![0, 1] }];
        let gpus = self.clone();
        MemoryCluster::new("gpu").jobs(vec![job]).telemetry(move |_| gpus.measure())
    }
}

/// A Prometheus-like source for the same cluster.
struct Source(Arc<Gpus>, AtomicU32);

#[async_trait]
impl TelemetrySource for Source {
    async fn read(&self, _snapshot: &Snapshot) -> Result<Telemetry, BackendError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(self.0.reading("prometheus test"))
    }
}

const EVERY: Duration = Duration::from_secs(30);

fn fleet(gpus: Arc<Gpus>, telemetry: TelemetryOptions) -> Fleet {
    Fleet::start_with_telemetry(
        vec![Member {
            backend: Arc::new(gpus.cluster()),
            kind: "slurm".into(),
            refresh: Duration::from_secs(10),
            timeout: Duration::from_secs(5),
        }],
        FleetOptions { read_only: false, poll: true, audit: None, actor: "tester".into() },
        telemetry,
    )
}

fn options(idle: IdleRule) -> TelemetryOptions {
    TelemetryOptions { idle, every: [("gpu".to_string(), EVERY)].into(), ..TelemetryOptions::default() }
}

fn state(f: &Fleet) -> Arc<FleetState> {
    f.subscribe().borrow().clone()
}

const TWO_MINUTES: IdleRule = IdleRule { below_percent: 5.0, window: Duration::from_secs(120) };

#[tokio::test(start_paused = true)]
async fn readings_come_at_the_cadence_and_join_the_jobs() {
    let gpus = Gpus::new(true, 80);
    let f = fleet(gpus.clone(), options(TWO_MINUTES));
    tokio::time::sleep(Duration::from_secs(95)).await;
    assert_eq!(gpus.readings.load(Ordering::SeqCst), 4, "at 0, 30, 60 and 90 s");
    let s = state(&f);
    let used = s.clusters[0].gpu_use.as_ref().expect("a reading is published");
    assert_eq!(used.source, "scripted");
    assert_eq!(used.gpus.len(), 2);
    assert!(used.gpus.iter().all(|g| g.job.as_deref() == Some("7")));
    assert_eq!(used.gpus[0].history, vec![80.0; 4]);
    let job = used.job("7").unwrap();
    assert_eq!((job.gpus, job.mean_utilisation, job.idle), (2, Some(80.0), false));
}

#[tokio::test(start_paused = true)]
async fn an_idle_job_is_flagged_after_the_window_and_cleared_when_it_works_again() {
    let gpus = Gpus::new(true, 1);
    let f = fleet(gpus.clone(), options(TWO_MINUTES));
    tokio::time::sleep(Duration::from_secs(95)).await;
    assert!(!state(&f).clusters[0].gpu_use.as_ref().unwrap().job("7").unwrap().idle, "90 s is under the window");
    tokio::time::sleep(Duration::from_secs(30)).await;
    let s = state(&f);
    let used = s.clusters[0].gpu_use.as_ref().unwrap();
    assert!(used.job("7").unwrap().idle, "under 5 % for 120 s");
    assert_eq!(used.idle(), (1, 2));
    gpus.utilisation.store(60, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(!state(&f).clusters[0].gpu_use.as_ref().unwrap().job("7").unwrap().idle);
}

#[tokio::test(start_paused = true)]
async fn a_failed_reading_keeps_the_last_one_and_says_why() {
    let gpus = Gpus::new(true, 50);
    let f = fleet(gpus.clone(), options(TWO_MINUTES));
    tokio::time::sleep(Duration::from_secs(5)).await;
    let first = state(&f).clusters[0].gpu_use.clone().expect("first reading");
    gpus.failing.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let s = state(&f);
    assert_eq!(s.clusters[0].gpu_use.as_ref(), Some(&first), "the last good reading stays");
    let error = s.clusters[0].telemetry_error.as_deref().expect("the failure is shown");
    assert!(error.contains("nvidia-smi: no route"), "{error}");
    gpus.failing.store(false, Ordering::SeqCst);
    // Back-off doubled the wait after the failure: 60 s more at most.
    tokio::time::sleep(Duration::from_secs(61)).await;
    let s = state(&f);
    assert_eq!(s.clusters[0].telemetry_error, None);
    assert!(s.clusters[0].gpu_use.as_ref().unwrap().taken_at > first.taken_at);
}

#[tokio::test(start_paused = true)]
async fn a_configured_source_is_read_instead_of_the_backend() {
    let gpus = Gpus::new(true, 50);
    let source = Arc::new(Source(gpus.clone(), AtomicU32::new(0)));
    let mut telemetry = options(TWO_MINUTES);
    telemetry.sources.insert("gpu".into(), source.clone());
    let f = fleet(gpus.clone(), telemetry);
    tokio::time::sleep(Duration::from_secs(65)).await;
    assert_eq!(source.1.load(Ordering::SeqCst), 3);
    assert_eq!(gpus.readings.load(Ordering::SeqCst), 0, "the backend's own reach is not used");
    assert_eq!(state(&f).clusters[0].gpu_use.as_ref().unwrap().source, "prometheus test");
}

#[tokio::test(start_paused = true)]
async fn a_backend_that_cannot_measure_is_asked_once() {
    let gpus = Gpus::new(false, 0);
    let f = fleet(gpus.clone(), options(TWO_MINUTES));
    tokio::time::sleep(Duration::from_secs(300)).await;
    assert_eq!(gpus.readings.load(Ordering::SeqCst), 1);
    let s = state(&f);
    assert!(s.clusters[0].snapshot.is_some(), "the cluster itself is polled");
    assert_eq!((s.clusters[0].gpu_use.as_ref(), s.clusters[0].telemetry_error.as_ref()), (None, None));
}
