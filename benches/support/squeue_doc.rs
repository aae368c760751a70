//! A `squeue --json` document of any size built from real captured job records, shared by
//! the benchmarks.

use std::path::Path;

use serde_json::Value;

/// The job records of one fixture, each pretty-printed as Slurm prints it inside `jobs`,
/// with the job id replaced by a marker.
fn records(rel: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel);
    let Ok(bytes) = std::fs::read(path) else { return Vec::new() };
    let doc: Value = serde_json::from_slice(&bytes).expect("fixture is JSON");
    let Some(jobs) = doc.get("jobs").and_then(Value::as_array) else { return Vec::new() };
    jobs.iter()
        .map(|j| {
            let mut j = j.clone();
            j["job_id"] = Value::from(MARKER);
            let text = serde_json::to_string_pretty(&j).expect("serialise");
            text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
        })
        .collect()
}

const MARKER: u64 = 987_654_321_987;

/// Where the records come from: every real 24.11 job record (the test-bed capture, 8-core
/// nodes, and the slurmrestd sample of a site with 64-core nodes, whose `job_resources` are
/// larger) and the 22.05 capture. `SLURM_BENCH_RECORDS=captures` keeps only the two test-bed
/// captures (the smallest records, where per-record work weighs most).
pub fn sources() -> Vec<&'static str> {
    let captures_only = std::env::var("SLURM_BENCH_RECORDS").is_ok_and(|v| v == "captures");
    let mut v = vec!["slurm/24.11/squeue-all.json", "slurm/22.05/squeue.json"];
    if !captures_only {
        v.push("slurm-rest/24.11-v0.0.42/slurm-jobs.json");
    }
    v
}

/// A pretty-printed `squeue --json` document of `jobs` real records (see [`sources`]),
/// replicated round-robin with distinct job ids.
pub fn build_document(jobs: usize) -> Vec<u8> {
    let mut recs: Vec<String> = sources().iter().flat_map(|r| records(r)).collect();
    if recs.is_empty() {
        recs = records("slurm-rest/24.11-v0.0.42/slurm-jobs.json");
    }
    assert!(!recs.is_empty(), "no job fixtures found under tests/fixtures");
    let marker = MARKER.to_string();
    let mut out = String::new();
    out.push_str("{\n  \"jobs\": [\n");
    for i in 0..jobs {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&recs[i % recs.len()].replace(&marker, &(100_000 + i).to_string()));
    }
    out.push_str("\n  ],\n");
    out.push_str(r#"  "last_backfill": {"set": true, "infinite": false, "number": 1796228700},
  "meta": {"slurm": {"version": {"major": "24", "micro": "5", "minor": "11"}, "release": "24.11.5", "cluster": "bench"}},
  "errors": [],
  "warnings": []
}
"#);
    out.into_bytes()
}
