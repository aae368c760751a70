//! Throughput of the Slurm job parser on a 50,000-job `squeue --json` document.
//!
//! The document is built from real records (24.11: the test-bed capture and the slurmrestd
//! sample; 22.05: the test-bed capture), replicated with fresh job ids and pretty-printed as
//! Slurm does. `SLURM_BENCH_RECORDS=captures` uses the two test-bed captures only.
//! Four measurements, each reported in MB/s by criterion:
//!
//! * `ignored_any/slice`  – serde_json merely skipping the bytes (`IgnoredAny`) from a slice;
//! * `parse/slice`        – `parse_jobs_json`;
//! * `ignored_any/reader` – skipping from a buffered reader;
//! * `parse/reader`       – `parse_jobs_json_reader`.
//!
//! * `squeue_fields_50k/parse/reader` – the refresh's listing by field format
//!   (`parse::fields::read_squeue_fields`) on the same 50,000 jobs as text: the 24.11
//!   capture's records (`tests/fixtures/slurm/24.11/squeue-fields.txt`, the hostile one
//!   left out) with fresh job ids.
//!
//! Before criterion runs, one timed pass of each prints MB/s and the parse/skip ratios, and
//! a counting global allocator prints the peak heap of the reader path (excluding the input).
//! The field listing's bytes and time per job are printed beside the JSON's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use flightdeck::backend::slurm::parse::{parse_jobs_json, parse_jobs_json_reader};
use serde::de::{Deserialize, IgnoredAny};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const JOBS: usize = 50_000;

#[path = "support/squeue_doc.rs"]
mod squeue_doc;
use squeue_doc::{build_document, sources};

fn skip_slice(data: &[u8]) {
    let mut de = serde_json::Deserializer::from_slice(data);
    IgnoredAny::deserialize(&mut de).expect("valid JSON");
}

fn skip_reader<R: Read>(r: R) {
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 16, r));
    IgnoredAny::deserialize(&mut de).expect("valid JSON");
}

const FIELDS_MARK: &str = "~Fixture0";

/// `jobs` records of the field listing, from the 24.11 capture, each with a fresh job id.
fn build_fields_document(jobs: usize) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slurm/24.11/squeue-fields.txt");
    let text = std::fs::read_to_string(path).expect("the 24.11 field capture");
    let end = format!("{}\n", flightdeck::backend::slurm::parse::fields::record_end(FIELDS_MARK));
    let records: Vec<&str> = text.split(&end).filter(|r| !r.is_empty() && !r.contains("evil|name")).collect();
    let mut out = Vec::with_capacity(jobs * 300);
    for i in 0..jobs {
        let r = records[i % records.len()];
        let rest = &r[r.find('|').expect("a job id")..];
        out.extend_from_slice(format!("{}{rest}{end}", 1_000_000 + i).as_bytes());
    }
    out
}

fn parse_fields(data: &[u8]) -> usize {
    let read = flightdeck::backend::slurm::parse::fields::read_squeue_fields("bench", data, FIELDS_MARK, false)
        .expect("parse");
    read.jobs.len()
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

/// Best of three passes.
fn time(mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    // `cargo test --all-targets` runs this binary too (without `--bench`, and with libtest
    // flags criterion does not know): check the benchmark's inputs on a small document.
    if !std::env::args().any(|a| a == "--bench") {
        let data = build_document(500);
        let doc = parse_jobs_json("bench", &data).expect("parse");
        assert_eq!(doc.jobs.len(), 500);
        assert_eq!(doc, parse_jobs_json_reader("bench", &data[..]).expect("parse"));
        skip_slice(&data);
        skip_reader(&data[..]);
        assert_eq!(parse_fields(&build_fields_document(500)), 500);
        println!("slurm_parse bench: inputs check out (run `cargo bench --bench slurm_parse` to measure)");
        return;
    }
    let data = build_document(JOBS);
    let len = data.len();

    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let doc = parse_jobs_json_reader("bench", &data[..]).expect("parse");
    let reader_peak = PEAK.load(Ordering::Relaxed) - base;
    let jobs_heap = CURRENT.load(Ordering::Relaxed) - base;
    assert_eq!(doc.jobs.len(), JOBS);
    drop(doc);
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let doc = parse_jobs_json("bench", &data).expect("parse");
    let slice_peak = PEAK.load(Ordering::Relaxed) - base;
    drop(doc);

    let t_skip_slice = time(|| skip_slice(black_box(&data)));
    let t_parse_slice = time(|| drop(black_box(parse_jobs_json("bench", black_box(&data)).unwrap())));
    let t_skip_reader = time(|| skip_reader(black_box(&data[..])));
    let t_parse_reader = time(|| drop(black_box(parse_jobs_json_reader("bench", black_box(&data[..])).unwrap())));
    println!("document: {JOBS} jobs, {:.1} MB pretty-printed, records from {:?}", len as f64 / 1e6, sources());
    println!("single pass (best of 3):");
    println!("  ignored_any/slice  {:8.1} MB/s", mb_per_s(len, t_skip_slice));
    println!("  parse/slice        {:8.1} MB/s", mb_per_s(len, t_parse_slice));
    println!("  ignored_any/reader {:8.1} MB/s", mb_per_s(len, t_skip_reader));
    println!("  parse/reader       {:8.1} MB/s", mb_per_s(len, t_parse_reader));
    println!(
        "  parse/skip ratio: slice {:.2}, reader {:.2} (target >= 0.50)",
        t_skip_slice.as_secs_f64() / t_parse_slice.as_secs_f64(),
        t_skip_reader.as_secs_f64() / t_parse_reader.as_secs_f64()
    );
    println!(
        "peak heap beyond the input: reader {:.1} MB (target < 150 MB), slice {:.1} MB; the {JOBS} jobs hold {:.1} MB",
        reader_peak as f64 / 1e6,
        slice_peak as f64 / 1e6,
        jobs_heap as f64 / 1e6
    );

    let fields = build_fields_document(JOBS);
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    assert_eq!(parse_fields(&fields), JOBS);
    let fields_peak = PEAK.load(Ordering::Relaxed) - base;
    let t_fields = time(|| {
        black_box(parse_fields(black_box(&fields)));
    });
    println!(
        "field listing: {:.1} MB, {} B per job (JSON {} B); parse {:.1} ms ({:.2} µs per job; JSON reader {:.1} ms); peak heap {:.1} MB",
        fields.len() as f64 / 1e6,
        fields.len() / JOBS,
        len / JOBS,
        t_fields.as_secs_f64() * 1e3,
        t_fields.as_secs_f64() * 1e6 / JOBS as f64,
        t_parse_reader.as_secs_f64() * 1e3,
        fields_peak as f64 / 1e6
    );

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("squeue_json_50k");
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function("ignored_any/slice", |b| b.iter(|| skip_slice(black_box(&data))));
        g.bench_function("parse/slice", |b| b.iter(|| parse_jobs_json("bench", black_box(&data)).unwrap()));
        g.bench_function("ignored_any/reader", |b| b.iter(|| skip_reader(black_box(&data[..]))));
        g.bench_function("parse/reader", |b| b.iter(|| parse_jobs_json_reader("bench", black_box(&data[..])).unwrap()));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("squeue_fields_50k");
        g.throughput(Throughput::Bytes(fields.len() as u64));
        g.bench_function("parse/reader", |b| b.iter(|| parse_fields(black_box(&fields))));
        g.finish();
    }
    c.final_summary();
}
