//! The Slurm parsers against real output: slurmrestd samples of 23.02–25.11
//! (`tests/fixtures/slurm-rest`, see its PROVENANCE.md) and captures from live 22.05 and
//! 24.11 test clusters (`tests/fixtures/slurm/<release>`), where the JSON is checked against
//! the text and plain outputs of the same moment. Then property tests: no input panics.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use flightdeck::backend::slurm::parse::{
    JobsDoc, NodesDoc, PatternFields, expand_hostlist, expand_stdout_pattern, job_state_from_slurm,
    node_state_from_slurm, parse_gres, parse_jobs_json, parse_jobs_json_reader, parse_nodes_json,
    parse_nodes_json_reader, parse_sinfo_text, parse_squeue_text,
};
use flightdeck::model::{ExitStatus, GpuAllocation, Job, JobState, Node, NodeState};
use proptest::prelude::*;
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read(rel: &str) -> Vec<u8> {
    let path = fixtures().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_text(rel: &str) -> String {
    String::from_utf8(read(rel)).expect("utf-8")
}

fn jobs(rel: &str) -> JobsDoc {
    let bytes = read(rel);
    let doc = parse_jobs_json("c", &bytes).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let streamed = parse_jobs_json_reader("c", &bytes[..]).unwrap_or_else(|e| panic!("{rel} (reader): {e}"));
    assert_eq!(doc, streamed, "{rel}: slice and reader disagree");
    doc
}

fn nodes(rel: &str) -> NodesDoc {
    let bytes = read(rel);
    let doc = parse_nodes_json("c", &bytes).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let streamed = parse_nodes_json_reader("c", &bytes[..]).unwrap_or_else(|e| panic!("{rel} (reader): {e}"));
    assert_eq!(doc, streamed, "{rel}: slice and reader disagree");
    doc
}

fn job<'a>(doc: &'a JobsDoc, id: &str) -> &'a Job {
    doc.jobs.iter().find(|j| j.job_ref.id == id).unwrap_or_else(|| panic!("no job {id}"))
}

fn node<'a>(doc: &'a [Node], name: &str) -> &'a Node {
    doc.iter().find(|n| n.name == name).unwrap_or_else(|| panic!("no node {name}"))
}

/// Every GPU type a GRES or TRES string names in `text` (`gpu:a100:2`, `gres/gpu:h100=1`,
/// `Type=l40s` in a `gres.conf`).
fn gres_types(text: &str, into: &mut BTreeSet<String>) {
    let is_type_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    for marker in ["gpu:", "Name=gpu Type="] {
        for (i, _) in text.match_indices(marker) {
            let rest = &text[i + marker.len()..];
            let word: String = rest.chars().take_while(|c| is_type_char(*c)).collect();
            // Counts, and the words Slurm puts where a type would be, are not types.
            if !word.is_empty()
                && !word.bytes().all(|b| b.is_ascii_digit())
                && !["per_task", "no_consume"].contains(&word.as_str())
            {
                into.insert(word);
            }
        }
    }
}

/// Every GPU type in the captured and slurmrestd fixtures and in the test bed's `gres.conf`
/// goes through the alias table: each is a canonical model already, and parsing keeps it
/// as both the model and the product.
#[test]
fn every_gres_type_in_the_fixtures_is_a_canonical_model() {
    use flightdeck::model::gpu_names::canonical;
    let mut types = BTreeSet::new();
    let mut stack = vec![fixtures()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                gres_types(&text, &mut types);
            }
        }
    }
    let testbed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testbed/up.sh");
    gres_types(&std::fs::read_to_string(testbed).unwrap(), &mut types);
    let found: Vec<&str> = types.iter().map(String::as_str).collect();
    assert_eq!(
        found,
        ["a100", "h100", "h200", "l40s"],
        "a new GPU type in the fixtures: add it here and to the alias tests"
    );
    for t in &types {
        let name = canonical(t);
        assert_eq!((name.model.as_str(), name.shared), (t.as_str(), false), "{t}");
    }
    let doc = nodes("slurm-rest/24.11-v0.0.42/slurm-node-with-gpus-model-allocated.json");
    for n in &doc.nodes {
        for g in n.gpus.iter().filter(|g| g.model != "gpu") {
            assert_eq!(g.gpu_product.as_deref(), Some(g.model.as_str()), "{}", n.name);
        }
    }
}

fn gpus(n: &Node) -> Vec<(String, u32, u32)> {
    n.gpus.iter().map(|g| (g.model.clone(), g.allocated, g.total)).collect()
}

/// Every `*.json` of the slurmrestd samples, relative to `tests/fixtures`.
fn rest_files() -> Vec<String> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(fixtures().join("slurm-rest")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "json") {
                out.push(f.strip_prefix(fixtures()).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------
// slurmrestd samples, 23.02 – 25.11

#[test]
fn every_rest_sample_parses_with_all_its_records() {
    let files = rest_files();
    assert!(files.len() >= 60, "expected the 64 samples, found {}", files.len());
    for rel in &files {
        let v: Value = serde_json::from_slice(&read(rel)).unwrap();
        let release = v["meta"]["slurm"]["release"].as_str().or(v["meta"]["Slurm"]["release"].as_str()).unwrap();
        let folder_release = rel.split('/').nth(1).unwrap().split('-').next().unwrap();
        assert!(release.starts_with(folder_release), "{rel}: {release}");
        if let Some(records) = v["jobs"].as_array() {
            let doc = jobs(rel);
            assert_eq!(doc.jobs.len(), records.len(), "{rel}");
            assert_eq!(doc.release.as_deref(), Some(release), "{rel}");
            for (j, r) in doc.jobs.iter().zip(records) {
                assert!(
                    j.job_ref.id.starts_with(&r["job_id"].to_string()),
                    "{rel}: {} vs {}",
                    j.job_ref.id,
                    r["job_id"]
                );
                assert_ne!(j.state, JobState::Unknown, "{rel}: job {}", j.job_ref.id);
            }
        } else if let Some(records) = v["nodes"].as_array() {
            let doc = nodes(rel);
            assert_eq!(doc.nodes.len(), records.len(), "{rel}");
            assert_eq!(doc.release.as_deref(), Some(release), "{rel}");
            for (n, r) in doc.nodes.iter().zip(records) {
                assert_eq!(n.name, r["name"].as_str().unwrap(), "{rel}");
                assert_eq!(n.cpus_total as u64, r["cpus"].as_u64().unwrap(), "{rel}");
            }
        } else {
            panic!("{rel}: neither jobs nor nodes");
        }
    }
}

#[test]
fn rest_23_02_jobs() {
    let doc = jobs("slurm-rest/23.02-v0.0.39/slurm-jobs.json");
    assert_eq!(doc.release.as_deref(), Some("23.02.8"));
    assert_eq!(doc.jobs.len(), 30);
    let j = job(&doc, "310");
    assert_eq!(j.state, JobState::Running);
    assert_eq!(j.nodes.len(), 16);
    assert_eq!((j.nodes[0].as_str(), j.nodes[15].as_str()), ("cn052", "cn067"));
    assert_eq!((j.node_count, j.cpus), (16, 32));
    assert_eq!(j.time_limit_secs, Some(3600));
    assert_eq!(j.user, "cgross");
    assert_eq!(j.stdout.as_deref(), Some("/home/cgross/slurm-310.out"));
    assert_eq!(j.start_time.unwrap().timestamp(), 1727358533);
    let p = job(&doc, "326");
    assert_eq!((p.state, p.reason.as_deref()), (JobState::Pending, Some("Resources")));
    assert!(p.nodes.is_empty());
    let c = job(&doc, "307");
    assert_eq!((c.state, c.exit), (JobState::Completed, Some(ExitStatus { code: 0, signal: None })));
    assert_eq!(c.nodes.len(), 64);
}

#[test]
fn rest_exit_codes_of_ended_jobs() {
    for (rel, timeout, failed) in [
        ("slurm-rest/23.11-v0.0.40/slurm-jobs.json", "776", "778"),
        ("slurm-rest/24.05-v0.0.41/slurm-jobs.json", "649717", "649719"),
        ("slurm-rest/24.11-v0.0.42/slurm-jobs.json", "6357", "6359"),
        ("slurm-rest/25.05-v0.0.43/slurm-jobs.json", "4730", "4732"),
        ("slurm-rest/25.11-v0.0.44/slurm-jobs.json", "5737", "5739"),
    ] {
        let doc = jobs(rel);
        let t = job(&doc, timeout);
        assert_eq!(t.state, JobState::Timeout, "{rel}");
        assert_eq!(t.reason.as_deref(), Some("TimeLimit"), "{rel}");
        assert_eq!(t.exit, Some(ExitStatus { code: 0, signal: Some(15) }), "{rel}");
        let f = job(&doc, failed);
        assert_eq!(f.state, JobState::Failed, "{rel}");
        assert_eq!(f.reason.as_deref(), Some("NonZeroExitCode"), "{rel}");
        assert_eq!(f.exit, Some(ExitStatus { code: 1, signal: None }), "{rel}");
        for j in &doc.jobs {
            assert_eq!(j.exit.is_some(), j.state.is_finished(), "{rel}: job {} {:?}", j.job_ref.id, j.state);
        }
    }
}

#[test]
fn rest_24_11_gpu_requests_on_ended_jobs() {
    let doc = jobs("slurm-rest/24.11-v0.0.42/slurm-jobs.json");
    let j = job(&doc, "6355");
    assert_eq!((j.state, j.gpus_requested, j.gpus_allocated), (JobState::Cancelled, 1, 0));
    let j = job(&doc, "6356");
    assert_eq!((j.gpus_requested, j.gpu_model.as_deref()), (2, Some("h100,h200")));
    assert_eq!(j.exit, Some(ExitStatus { code: 0, signal: Some(15) }));
}

#[test]
fn rest_gpu_jobs() {
    let doc = jobs("slurm-rest/24.11-v0.0.42/slurm-job-gpus-multi-types.json");
    let j = job(&doc, "6356");
    assert_eq!((j.gpus_requested, j.gpus_allocated), (2, 2));
    assert_eq!(
        j.gpu_allocations,
        vec![
            GpuAllocation { node: "ia1".into(), model: Some("h100".into()), count: 1, indices: vec![0] },
            GpuAllocation { node: "ia1".into(), model: Some("h200".into()), count: 1, indices: vec![2] },
        ]
    );
    assert_eq!(j.gpu_model.as_deref(), Some("h100,h200"));

    let doc = jobs("slurm-rest/24.11-v0.0.42/slurm-job-gpus-per-node.json");
    let j = job(&doc, "6377");
    assert_eq!(j.nodes, vec!["ia1", "ia2"]);
    assert_eq!((j.gpus_requested, j.gpus_allocated), (2, 2));
    let per_node: Vec<_> = j.gpu_allocations.iter().map(|a| (a.node.as_str(), a.count, a.indices.clone())).collect();
    assert_eq!(per_node, vec![("ia1", 1, vec![0]), ("ia2", 1, vec![0])]);

    let doc = jobs("slurm-rest/24.11-v0.0.42/slurm-job-gpus-per-task.json");
    let j = job(&doc, "6383");
    assert_eq!((j.gpus_requested, j.gpus_allocated), (4, 4), "gres/gpu=2 per task, 2 tasks");

    let doc = jobs("slurm-rest/24.11-v0.0.42/slurm-job-gpus-type.json");
    let j = job(&doc, "6375");
    assert_eq!((j.gpus_requested, j.gpus_allocated, j.gpu_model.as_deref()), (1, 1, Some("h100")));

    for rel in
        ["slurm-rest/25.11-v0.0.44/slurm-job-gpus-per-node.json", "slurm-rest/25.11-v0.0.44/slurm-job-gpus-type.json"]
    {
        let doc = jobs(rel);
        let j = &doc.jobs[0];
        assert_eq!(j.gpus_allocated, j.gpu_allocations.iter().map(|a| a.count).sum::<u32>(), "{rel}");
        assert!(j.gpus_allocated >= 1 && j.gpus_requested == j.gpus_allocated, "{rel}: {j:?}");
    }
}

#[test]
fn rest_25_prefers_expanded_output_paths() {
    let doc = jobs("slurm-rest/25.11-v0.0.44/slurm-job-running.json");
    let j = job(&doc, "5748");
    assert_eq!(j.stdout.as_deref(), Some("/home/vhartman/slurm-5748.out"));
    assert_eq!(j.stderr.as_deref(), Some("/home/vhartman/slurm-5748.out"), "empty stderr goes to stdout");
    assert_eq!(j.workdir.as_deref(), Some("/home/vhartman"));
    assert_eq!((j.cpus, j.memory_mb), (1, Some(512)));
}

#[test]
fn rest_sacct_records() {
    let doc = jobs("slurm-rest/24.11-v0.0.42/slurmdb-job-gpus-running.json");
    let j = job(&doc, "6374");
    assert_eq!(j.state, JobState::Running);
    assert_eq!((j.user.as_str(), j.partition.as_str(), j.account.as_deref()), ("vhartman", "ia", Some("biology")));
    assert_eq!(j.nodes, vec!["ia1"]);
    assert_eq!(j.time_limit_secs, Some(60));
    assert_eq!(j.stdout.as_deref(), Some("/home/vhartman/slurm-6374.out"));
    let doc = jobs("slurm-rest/23.02-v0.0.39/slurmdb-job-completed.json");
    let j = job(&doc, "307");
    assert_eq!((j.state, j.cpus, j.node_count), (JobState::Completed, 128, 64));
    assert_eq!(j.exit, Some(ExitStatus { code: 0, signal: None }));
}

#[test]
fn rest_nodes_with_gpus() {
    let doc = nodes("slurm-rest/24.11-v0.0.42/slurm-node-with-gpus-model-allocated.json");
    let n = node(&doc.nodes, "ia1");
    assert_eq!(n.state, NodeState::Allocated);
    assert_eq!(gpus(n), vec![("h100".into(), 2, 2), ("h200".into(), 4, 4)]);
    assert_eq!((n.gpus_total(), n.gpus_allocated(), n.gpus_unhealthy()), (6, 6, 0));
    assert_eq!(n.memory_total_mb, 524288);

    let doc = nodes("slurm-rest/25.11-v0.0.44/slurm-node-with-gpus-model-allocated.json");
    assert_eq!(gpus(node(&doc.nodes, "gpu1")), vec![("h100".into(), 4, 4)]);

    let doc = nodes("slurm-rest/25.11-v0.0.44/slurm-nodes.json");
    assert_eq!(gpus(node(&doc.nodes, "gpu1")), vec![("h100".into(), 0, 4)]);
    assert_eq!(gpus(node(&doc.nodes, "gpu3")), vec![("gpu".into(), 0, 4)], "untyped gres is model `gpu`");
    let cn3 = node(&doc.nodes, "cn3");
    assert_eq!((cn3.state, cn3.cpus_allocated, cn3.cpus_total), (NodeState::Allocated, 64, 64));
    assert_eq!(cn3.memory_allocated_mb, 32768);

    let doc = nodes("slurm-rest/23.11-v0.0.40/slurm-nodes.json");
    assert!(node(&doc.nodes, "cn1").gpus.is_empty(), "no gres and `gpu:0` used: no GPUs");
    assert_eq!(gpus(node(&doc.nodes, "ia1")), vec![("h100".into(), 0, 2), ("h200".into(), 0, 4)]);
    let cn2 = node(&doc.nodes, "cn2");
    assert_eq!((cn2.state, cn2.cpus_allocated), (NodeState::Mixed, 45));

    let doc = nodes("slurm-rest/24.11-v0.0.42/slurm-nodes.json");
    let ia1 = node(&doc.nodes, "ia1");
    assert_eq!((ia1.state, ia1.flags.clone()), (NodeState::Completing, vec!["COMPLETING".to_string()]));
}

#[test]
fn rest_drained_and_down_nodes_with_reasons() {
    for family in ["23.02-v0.0.39", "23.11-v0.0.40", "24.05-v0.0.41", "24.11-v0.0.42", "25.05-v0.0.43", "25.11-v0.0.44"]
    {
        for (file, state, reason) in [
            ("slurm-node-drain.json", NodeState::Drained, "ECC memory error"),
            ("slurm-node-down.json", NodeState::Down, "CPU dead"),
        ] {
            let rel = format!("slurm-rest/{family}/{file}");
            let v: Value = serde_json::from_slice(&read(&rel)).unwrap();
            let raw = &v["nodes"][0];
            let changed = raw["reason_changed_at"]["number"].as_i64().or(raw["reason_changed_at"].as_i64()).unwrap();
            let doc = nodes(&rel);
            let n = &doc.nodes[0];
            assert_eq!(n.state, state, "{rel}");
            assert_eq!(n.reason.as_deref(), Some(reason), "{rel}");
            assert_eq!(n.reason_user.as_deref(), Some("root"), "{rel}");
            assert_eq!(n.reason_time.map(|t| t.timestamp()), Some(changed), "{rel}");
            assert_eq!(n.has_flag("DRAIN"), state == NodeState::Drained, "{rel}");
            assert!(n.is_unavailable(), "{rel}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Live captures: 22.05 (family A) and 24.11 (family C)

const LIVE: [&str; 2] = ["22.05", "24.11"];

/// `squeue --all --states=all --json` of a capture. 22.05 ignores every filter in `--json`,
/// so its `squeue.json` already holds every job and may stand in for `squeue-all.json`.
fn all_jobs(rel: &str) -> JobsDoc {
    let all = format!("slurm/{rel}/squeue-all.json");
    if fixtures().join(&all).exists() { jobs(&all) } else { jobs(&format!("slurm/{rel}/squeue.json")) }
}

fn gpu_model(release: &str) -> &'static str {
    if release == "22.05" { "a100" } else { "l40s" }
}

/// Expand the pending array parent `16_[2-5%2]` into the ids text output prints with `-r`.
fn text_ids_of(job: &Job) -> Vec<String> {
    match &job.array {
        Some(a) if a.task_id.is_none() => {
            let range = a.pending_tasks.as_deref().unwrap().split('%').next().unwrap();
            let (lo, hi) = range.split_once('-').unwrap();
            let (lo, hi): (u32, u32) = (lo.parse().unwrap(), hi.parse().unwrap());
            (lo..=hi).map(|t| format!("{}_{t}", a.array_id)).collect()
        }
        _ => vec![job.job_ref.id.clone()],
    }
}

#[test]
fn live_json_jobs_match_the_fixture_notes() {
    for rel in LIVE {
        let doc = all_jobs(rel);
        let release = read_text(&format!("slurm/{rel}/scontrol-version.txt"));
        assert_eq!(doc.release.as_deref(), release.split_whitespace().nth(1), "{rel}");
        assert_eq!(doc.jobs.len(), 26, "{rel}");
        let model = gpu_model(rel);

        let j = job(&doc, "9");
        assert_eq!(
            (j.name.as_str(), j.state, j.gpus_requested, j.gpus_allocated),
            ("train-llama-70b", JobState::Running, 4, 4)
        );
        assert_eq!(j.gpu_model.as_deref(), Some(model));
        assert_eq!(j.gpu_allocations.len(), 1);
        assert_eq!(j.gpu_allocations[0].indices, vec![0, 1, 2, 3]);
        assert_eq!(j.gpu_allocations[0].node, j.nodes[0]);
        assert_eq!((j.cpus, j.memory_mb, j.time_limit_secs), (4, Some(8000), Some(2 * 86400)));

        let j = job(&doc, "10");
        assert_eq!(
            (j.name.as_str(), j.gpus_requested, j.gpus_allocated),
            ("finetune-h100", 1, 1),
            "{rel}: --gpus=h100:1"
        );
        assert_eq!((j.gpu_model.as_deref(), j.nodes.as_slice()), (Some("h100"), ["h100-01".to_string()].as_slice()));

        let j = job(&doc, "11");
        assert_eq!((j.name.as_str(), j.gpus_requested, j.gpus_allocated), ("eval-gpus-per-node", 2, 2), "{rel}");

        let j = job(&doc, "12");
        assert_eq!(
            (j.state, j.reason.as_deref(), j.gpus_requested, j.gpus_allocated),
            (JobState::Pending, Some("Resources"), 4, 0)
        );
        assert!(j.start_time.is_some(), "{rel}: a backfill estimate");
        assert_eq!(job(&doc, "14").reason.as_deref(), Some("Dependency"), "{rel}");

        let j = job(&doc, "15");
        assert_eq!(
            (j.name.as_str(), j.state, j.reason.as_deref()),
            ("held-by-user", JobState::Held, Some("JobHeldUser"))
        );

        for t in [0, 1] {
            let j = job(&doc, &format!("16_{t}"));
            assert_eq!(j.state, JobState::Running, "{rel}");
            let a = j.array.as_ref().unwrap();
            assert_eq!((a.array_id.as_str(), a.task_id, a.pending_tasks.as_deref()), ("16", Some(t), None), "{rel}");
            assert_eq!(j.stdout.as_deref(), Some(format!("/tmp/fd-fixture-16_{t}.out").as_str()), "{rel}");
        }
        let parent = job(&doc, "16_[2-5%2]");
        assert_eq!((parent.state, parent.reason.as_deref()), (JobState::Pending, Some("JobArrayTaskLimit")));
        let a = parent.array.as_ref().unwrap();
        assert_eq!((a.array_id.as_str(), a.task_id, a.pending_tasks.as_deref()), ("16", None, Some("2-5%2")));

        assert_eq!(job(&doc, "17").partition, "debug", "{rel}");
        let j = job(&doc, "18");
        assert_eq!((j.name.as_str(), j.node_count, j.nodes.len()), ("mpi-2node", 2, 2), "{rel}");
        assert_eq!(job(&doc, "19").name, "weird \"double\" 'single' ünïcødé ✓ 🚀 with  spaces", "{rel}");

        let j = job(&doc, "20");
        assert_eq!(
            (j.name.as_str(), j.state, j.reason.as_deref()),
            ("fail-exit3", JobState::Failed, Some("NonZeroExitCode"))
        );
        assert_eq!(j.exit, Some(ExitStatus { code: 3, signal: None }), "{rel}");
        let j = job(&doc, "21");
        assert_eq!((j.state, j.exit), (JobState::Completed, Some(ExitStatus { code: 0, signal: None })), "{rel}");
        let j = job(&doc, "22");
        assert_eq!((j.state, j.exit), (JobState::Cancelled, Some(ExitStatus { code: 0, signal: Some(15) })), "{rel}");
        assert_eq!(job(&doc, "23").state, JobState::Suspended, "{rel}");
        let j = job(&doc, "24");
        assert_eq!((j.name.as_str(), j.state), ("requeue-hold-me", JobState::Held), "{rel}");

        // 22.05 prints the raw pattern `/tmp/fd-fixture-%A_%a.out`; 24.11 the expanded one.
        // Both must read the same.
        assert_eq!(job(&doc, "9").stdout.as_deref(), Some("/tmp/fd-fixture-9_4294967294.out"), "{rel}");
        assert_eq!(job(&doc, "1").stdout.as_deref(), Some("/tmp/fd-smoke-1.out"), "{rel}");
        assert_eq!(job(&doc, "1").user, "root");
    }
}

#[test]
fn live_families_agree_with_each_other() {
    let a = all_jobs("22.05");
    let c = all_jobs("24.11");
    let ids = |d: &JobsDoc| d.jobs.iter().map(|j| j.job_ref.id.clone()).collect::<BTreeSet<_>>();
    assert_eq!(ids(&a), ids(&c));
    for ja in &a.jobs {
        let jc = job(&c, &ja.job_ref.id);
        let what = &ja.job_ref.id;
        assert_eq!(ja.state, jc.state, "{what}");
        assert_eq!(ja.reason, jc.reason, "{what}");
        assert_eq!(ja.name.replace("a100", "l40s"), jc.name, "{what}");
        assert_eq!((ja.gpus_requested, ja.gpus_allocated), (jc.gpus_requested, jc.gpus_allocated), "{what}");
        assert_eq!((ja.cpus, ja.memory_mb, ja.node_count), (jc.cpus, jc.memory_mb, jc.node_count), "{what}");
        assert_eq!(ja.exit, jc.exit, "{what}");
        assert_eq!(ja.array, jc.array, "{what}");
        assert_eq!(ja.stdout, jc.stdout, "{what}");
        assert_eq!(ja.priority, jc.priority, "{what}");
    }
}

#[test]
fn live_json_jobs_match_text_output() {
    for rel in LIVE {
        let doc = all_jobs(rel);
        let text = parse_squeue_text("c", &read_text(&format!("slurm/{rel}/squeue-all.txt"))).unwrap();
        let mut by_text_id: BTreeMap<String, &Job> = BTreeMap::new();
        for j in &doc.jobs {
            for id in text_ids_of(j) {
                by_text_id.insert(id, j);
            }
        }
        let text_ids: BTreeSet<_> = text.iter().map(|j| j.job_ref.id.clone()).collect();
        assert_eq!(text_ids, by_text_id.keys().cloned().collect::<BTreeSet<_>>(), "{rel}");
        // The GPU comparison below must not pass by reading zero everywhere.
        assert!(text.iter().any(|t| t.gpus_requested > 0 && t.gpu_model.is_some()), "{rel}: no GPU job read from text");
        for t in &text {
            let j = by_text_id[&t.job_ref.id];
            let what = format!("{rel} {}", t.job_ref.id);
            assert_eq!(t.state, j.state, "{what}");
            assert_eq!(t.name, j.name, "{what}");
            assert_eq!((t.user.as_str(), t.partition.as_str()), (j.user.as_str(), j.partition.as_str()), "{what}");
            assert_eq!(t.account, j.account, "{what}");
            assert_eq!(t.nodes, j.nodes, "{what}");
            assert_eq!((t.node_count, t.cpus), (j.node_count, j.cpus), "{what}");
            assert_eq!(t.time_limit_secs, j.time_limit_secs, "{what}");
            assert_eq!(t.priority, j.priority, "{what}");
            assert_eq!(t.submit_time, j.submit_time, "{what}");
            if j.state.is_active() || j.state.is_finished() {
                assert_eq!(t.start_time, j.start_time, "{what}");
            }
            if t.gpus_requested > 0 {
                // `%b` is the per-node request; a per-job request (`--gpus`) shows as N/A.
                assert_eq!(t.gpus_requested, j.gpus_requested, "{what}");
                assert_eq!(t.gpu_model, j.gpu_model, "{what}");
            }
            if j.state == JobState::Running {
                assert_eq!(t.reason, None, "{what}");
            }
        }
        // The default (pending + running) selection: 24.11 filters on the server, 22.05
        // ignores filters in --json; either way the text lists the same jobs.
        let active = parse_squeue_text("c", &read_text(&format!("slurm/{rel}/squeue.txt"))).unwrap();
        let filtered = jobs(&format!("slurm/{rel}/squeue.json"));
        let mut expected: BTreeSet<String> = BTreeSet::new();
        for j in filtered.jobs.iter().filter(|j| j.state.is_waiting() || j.state.is_active()) {
            expected.extend(text_ids_of(j));
        }
        assert_eq!(active.iter().map(|j| j.job_ref.id.clone()).collect::<BTreeSet<_>>(), expected, "{rel}");
    }
}

/// Rows of squeue's default output, cut at the header's right-aligned column ends.
fn plain_squeue(text: &str) -> Vec<BTreeMap<&'static str, String>> {
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let names = ["JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES"];
    let ends: Vec<usize> = names.iter().map(|n| header.find(n).unwrap() + n.len()).collect();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let chars: Vec<char> = l.chars().collect();
            let mut row = BTreeMap::new();
            let mut start = 0;
            for (name, end) in names.iter().zip(&ends) {
                row.insert(*name, chars[start..*end].iter().collect::<String>().trim().to_string());
                start = end + 1;
            }
            row.insert("NODELIST(REASON)", chars[start..].iter().collect::<String>().trim().to_string());
            row
        })
        .collect()
}

#[test]
fn live_json_jobs_match_plain_squeue() {
    for rel in LIVE {
        let doc = all_jobs(rel);
        let rows = plain_squeue(&read_text(&format!("slurm/{rel}/squeue-all-plain.txt")));
        assert_eq!(rows.len(), doc.jobs.len(), "{rel}");
        let mut counts: BTreeMap<JobState, usize> = BTreeMap::new();
        for row in &rows {
            let j = job(&doc, &row["JOBID"]);
            let what = format!("{rel} {}", row["JOBID"]);
            let st = job_state_from_slurm(&[row["ST"].as_str()]);
            let expected = if j.state == JobState::Held { JobState::Pending } else { j.state };
            assert_eq!(st, expected, "{what}");
            *counts.entry(st).or_default() += 1;
            assert_eq!(row["PARTITION"], j.partition, "{what}");
            assert!(j.name.starts_with(&row["NAME"]), "{what}");
            assert_eq!(row["NODES"].parse::<u32>().unwrap(), j.node_count, "{what}");
            let last = &row["NODELIST(REASON)"];
            match last.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
                Some(reason) if j.state == JobState::Pending || j.state == JobState::Failed => {
                    assert_eq!(Some(reason), j.reason.as_deref(), "{what}")
                }
                Some(_) => assert_eq!(j.state, JobState::Held, "{what}"),
                None => assert_eq!(expand_hostlist(last), j.nodes, "{what}"),
            }
        }
        let expected: BTreeMap<JobState, usize> = [
            (JobState::Running, 8),
            (JobState::Pending, 6),
            (JobState::Completed, 9),
            (JobState::Failed, 1),
            (JobState::Cancelled, 1),
            (JobState::Suspended, 1),
        ]
        .into();
        assert_eq!(counts, expected, "{rel}");
    }
}

/// The node document of one capture: 22.05 `sinfo --json`, 24.11 `scontrol show node --json`.
fn live_nodes(rel: &str) -> Vec<Node> {
    if rel == "22.05" { nodes("slurm/22.05/sinfo.json").nodes } else { nodes("slurm/24.11/scontrol-node.json").nodes }
}

#[test]
fn live_nodes_match_the_fixture_notes() {
    for rel in LIVE {
        let ns = live_nodes(rel);
        let h = node(&ns, "h100-01");
        assert_eq!(h.state, NodeState::Draining, "{rel}: drained while a job runs");
        assert!(h.has_flag("DRAIN"));
        assert_eq!(h.reason.as_deref(), Some("fixture: GPU 1 fell off the bus"), "{rel}");
        assert_eq!(h.reason_user.as_deref(), Some("root"), "{rel}");
        assert!(h.reason_time.is_some(), "{rel}");
        assert_eq!(gpus(h), vec![("h100".into(), 1, 2)], "{rel}");
        assert_eq!(h.features, vec!["h100", "hbm3"], "{rel}");
        let m = gpu_model(rel);
        let first = node(&ns, &format!("{m}-01"));
        assert_eq!(first.state, NodeState::Mixed, "{rel}");
        assert_eq!(first.partitions, vec!["gpu", "debug"], "{rel}");
        assert_eq!(gpus(first), vec![(m.to_string(), 4, 4)], "{rel}");
        assert_eq!((first.cpus_allocated, first.cpus_total, first.memory_total_mb), (7, 8, 16000), "{rel}");
    }
    let ns = live_nodes("22.05");
    let dead = node(&ns, "dead-01");
    assert_eq!((dead.state, dead.flags.clone()), (NodeState::Down, vec!["NOT_RESPONDING".to_string()]));
    assert_eq!(dead.reason.as_deref(), Some("test bed: no slurmd"));
    assert_eq!(dead.native_state, "down,NOT_RESPONDING");
    let ns = live_nodes("24.11");
    let planned = node(&ns, "l40s-02");
    assert_eq!((planned.state, planned.flags.clone()), (NodeState::Mixed, vec!["PLANNED".to_string()]));
}

#[test]
fn live_aggregated_sinfo_agrees_with_scontrol() {
    let per_node = nodes("slurm/24.11/scontrol-node.json").nodes;
    let aggregated = nodes("slurm/24.11/sinfo.json").nodes;
    assert_eq!(aggregated.len(), per_node.len());
    for n in &per_node {
        let a = node(&aggregated, &n.name);
        assert_eq!((a.state, &a.flags, &a.reason), (n.state, &n.flags, &n.reason), "{}", n.name);
        assert_eq!(
            (a.cpus_total, a.cpus_allocated, a.memory_total_mb),
            (n.cpus_total, n.cpus_allocated, n.memory_total_mb)
        );
        assert_eq!(gpus(a), gpus(n), "{}", n.name);
        let (mut pa, mut pn) = (a.partitions.clone(), n.partitions.clone());
        pa.sort();
        pn.sort();
        assert_eq!(pa, pn, "{}", n.name);
    }
}

#[test]
fn live_json_nodes_match_text_output() {
    for rel in LIVE {
        let json_nodes = live_nodes(rel);
        let text = parse_sinfo_text("c", &read_text(&format!("slurm/{rel}/sinfo.txt"))).unwrap();
        assert_eq!(text.len(), json_nodes.len(), "{rel}");
        for t in &text {
            let j = node(&json_nodes, &t.name);
            let what = format!("{rel} {}", t.name);
            assert_eq!(t.state, j.state, "{what}");
            assert_eq!(t.flags, j.flags, "{what}");
            assert_eq!(t.partitions, j.partitions, "{what}");
            assert_eq!(t.reason, j.reason, "{what}");
            assert_eq!(t.features, j.features, "{what}");
            assert_eq!(
                (t.cpus_allocated, t.cpus_total, t.memory_total_mb),
                (j.cpus_allocated, j.cpus_total, j.memory_total_mb)
            );
            assert_eq!(t.gpus_total(), j.gpus_total(), "{what}");
            assert_eq!(t.gpu_model(), j.gpu_model(), "{what}");
        }
    }
}

#[test]
fn live_json_nodes_match_plain_sinfo() {
    for rel in LIVE {
        let json_nodes = live_nodes(rel);
        let text = read_text(&format!("slurm/{rel}/sinfo-plain.txt"));
        let mut seen = BTreeSet::new();
        for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (partition, count, state, list) = (cols[0].trim_end_matches('*'), cols[3], cols[4], cols[5]);
            let names = expand_hostlist(list);
            assert_eq!(names.len(), count.parse::<usize>().unwrap(), "{rel}: {line}");
            let (expected, _) = node_state_from_slurm(&[state]);
            for name in names {
                let n = node(&json_nodes, &name);
                assert_eq!(n.state, expected, "{rel}: {line}");
                assert!(n.partitions.iter().any(|p| p == partition), "{rel}: {line}");
                seen.insert(name);
            }
        }
        assert_eq!(seen, json_nodes.iter().map(|n| n.name.clone()).collect(), "{rel}");
    }
}

// ---------------------------------------------------------------------------------------
// Robustness

#[test]
fn wrong_typed_fields_degrade_without_losing_records() {
    let bytes = read("slurm/24.11/squeue.json");
    let clean = parse_jobs_json("c", &bytes).unwrap();
    let mut v: Value = serde_json::from_slice(&bytes).unwrap();
    let recs = v["jobs"].as_array_mut().unwrap();
    let victim = recs[0]["job_id"].as_u64().unwrap().to_string();
    let r = recs[0].as_object_mut().unwrap();
    r.insert("partition".into(), json!(12));
    r.insert("nodes".into(), json!({"x": [1, 2]}));
    r.insert("job_state".into(), json!(5));
    r.insert("time_limit".into(), json!("soon"));
    r.insert("exit_code".into(), json!([]));
    r.insert("gres_detail".into(), json!("oops"));
    r.insert("submit_time".into(), json!({"set": "maybe", "number": [1]}));
    r.insert("job_resources".into(), json!(null));
    recs.insert(1, json!(42));
    recs.insert(2, json!("not a job"));
    recs.insert(3, json!([{"job_id": 1}]));
    recs.push(json!({"name": "no id"}));
    let bytes = serde_json::to_vec(&v).unwrap();
    let doc = parse_jobs_json("c", &bytes).unwrap();
    assert_eq!(doc.jobs.len(), clean.jobs.len());
    assert_eq!(doc.jobs[1..], clean.jobs[1..]);
    let j = &doc.jobs[0];
    assert_eq!(j.job_ref.id, victim);
    assert_eq!((j.partition.as_str(), j.state, j.nodes.len()), ("12", JobState::Unknown, 0));
    assert_eq!((j.time_limit_secs, j.submit_time), (None, None));
    assert_eq!(j.name, clean.jobs[0].name);
    assert_eq!(parse_jobs_json_reader("c", &bytes[..]).unwrap(), doc);
}

#[test]
fn broken_documents_are_errors_that_say_where() {
    let bytes = read("slurm/22.05/squeue.json");
    for cut in [1, 100, bytes.len() / 2, bytes.len() - 3] {
        let e = parse_jobs_json("c", &bytes[..cut]).unwrap_err();
        assert!(e.line().is_some(), "cut {cut}: {e}");
        assert!(e.to_string().starts_with("cannot read Slurm job JSON"), "{e}");
        assert!(parse_jobs_json_reader("c", &bytes[..cut]).is_err());
    }
    let e = parse_jobs_json(
        "c",
        br#"{"meta": {}, "errors": [{"error": "x", "description": "Unable to contact slurm controller"}]}"#,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("no `jobs` array") && e.to_string().contains("Unable to contact slurm controller"),
        "{e}"
    );
    assert!(parse_jobs_json("c", b"[]").is_err());
    assert!(parse_jobs_json("c", b"").is_err());
    assert!(parse_nodes_json("c", br#"{"jobs": []}"#).is_err());
    assert!(parse_jobs_json("c", br#"{"jobs": []}"#).unwrap().jobs.is_empty());
    assert!(
        parse_nodes_json("c", br#"{"nodes": [], "meta": {"Slurm": {"release": "22.05.8"}}}"#).unwrap().nodes.is_empty()
    );
}

#[test]
fn deep_nesting_never_crashes() {
    // Skipped values are skipped iteratively: any depth is fine and the job is kept.
    let deep = format!(r#"{{"jobs": [{{"job_id": 1, "name": {}1{}}}]}}"#, "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(parse_jobs_json("c", deep.as_bytes()).unwrap().jobs[0].name, "");
    assert_eq!(parse_jobs_json_reader("c", deep.as_bytes()).unwrap().jobs.len(), 1);
    // Values that are decoded recurse, and serde_json's depth limit stops them with an error.
    let nested =
        format!(r#"{{"jobs": [{{"job_id": 1, "cpus": {}1{}}}]}}"#, r#"{"number":"#.repeat(10_000), "}".repeat(10_000));
    assert!(parse_jobs_json("c", nested.as_bytes()).is_err());
    assert!(parse_jobs_json_reader("c", nested.as_bytes()).is_err());
    let deep = format!(r#"{{"nodes": [{}]}}"#, r#"{"a":"#.repeat(10_000));
    assert!(parse_nodes_json("c", deep.as_bytes()).is_err());
}

#[test]
fn release_from_version_numbers_only() {
    let d =
        parse_jobs_json("c", br#"{"meta": {"Slurm": {"version": {"major": 21, "minor": 8, "micro": 8}}}, "jobs": []}"#)
            .unwrap();
    assert_eq!(d.release.as_deref(), Some("21.08.8"));
    let d = parse_jobs_json(
        "c",
        br#"{"jobs": [], "meta": {"slurm": {"release": {"major": "24", "minor": "11", "micro": "5"}}}}"#,
    )
    .unwrap();
    assert_eq!(d.release.as_deref(), Some("24.11.5"));
}

// ---------------------------------------------------------------------------------------
// Property tests: no input makes a parser panic.

/// Small real documents for the fuzzers (jobs first, then nodes).
const SMALL: [&str; 10] = [
    "slurm/22.05/squeue.json",
    "slurm-rest/23.02-v0.0.39/slurm-job-pending.json",
    "slurm-rest/24.11-v0.0.42/slurm-job-gpus-multi-types.json",
    "slurm-rest/25.11-v0.0.44/slurm-job-running.json",
    "slurm-rest/24.11-v0.0.42/slurmdb-job-gpus-running.json",
    "slurm/22.05/sinfo.json",
    "slurm/24.11/sinfo.json",
    "slurm/24.11/scontrol-node.json",
    "slurm-rest/23.11-v0.0.40/slurm-nodes.json",
    "slurm-rest/24.11-v0.0.42/slurm-node-drain.json",
];

fn small_docs() -> &'static Vec<Vec<u8>> {
    static DOCS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    DOCS.get_or_init(|| SMALL.iter().map(|r| read(r)).collect())
}

fn parse_everything(bytes: &[u8]) {
    let _ = parse_jobs_json("c", bytes);
    let _ = parse_jobs_json_reader("c", bytes);
    let _ = parse_nodes_json("c", bytes);
    let _ = parse_nodes_json_reader("c", bytes);
}

/// Every JSON pointer below the record arrays (`/jobs/3/nodes`, `/nodes/0/gres` …).
fn record_paths(v: &Value, path: String, depth: usize, out: &mut Vec<String>) {
    if depth >= 3 {
        out.push(path.clone());
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                record_paths(x, format!("{path}/{}", k.replace('~', "~0").replace('/', "~1")), depth + 1, out)
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                record_paths(x, format!("{path}/{i}"), depth + 1, out)
            }
        }
        _ => {}
    }
}

fn any_json_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1.0e12f64..1.0e12).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        Just(json!({})),
        Just(json!([1, "x", null, {"a": []}])),
        Just(json!({"set": true, "infinite": false, "number": "x"})),
        Just(json!({"set": true, "infinite": false, "number": 4294967294u64})),
    ]
}

fn pipe_line(min: usize, max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof!["[0-9]{1,4}", "[a-z_]{0,6}", ".{0,8}", "[a-z]+\\[[0-9,-]{0,8}\\]", "gpu:[a-z0-9.]{0,5}:[0-9]"],
        min..max,
    )
    .prop_map(|f| f.join("|"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        parse_everything(&bytes);
    }

    #[test]
    fn arbitrary_json_text_never_panics(s in r#"[\[\]{}":,0-9a-z_ .\-]{0,200}"#) {
        parse_everything(s.as_bytes());
        parse_everything(format!(r#"{{"jobs": [{s}], "nodes": [{s}], "sinfo": [{s}]}}"#).as_bytes());
    }

    #[test]
    fn truncated_documents_are_errors(doc in 0..SMALL.len(), at in any::<prop::sample::Index>()) {
        let bytes = &small_docs()[doc];
        let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace()).unwrap();
        let cut = at.index(end);
        parse_everything(&bytes[..cut]);
        prop_assert!(parse_jobs_json("c", &bytes[..cut]).is_err());
        prop_assert!(parse_nodes_json_reader("c", &bytes[..cut]).is_err());
    }

    #[test]
    fn mutated_documents_never_panic(
        doc in 0..SMALL.len(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = small_docs()[doc].clone();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        parse_everything(&bytes);
    }

    #[test]
    fn values_of_the_wrong_type_never_fail_the_document(
        doc in 0..SMALL.len(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any_json_value()), 1..6),
    ) {
        let mut v: Value = serde_json::from_slice(&small_docs()[doc]).unwrap();
        let mut paths = Vec::new();
        record_paths(&v, String::new(), 0, &mut paths);
        for (at, replacement) in &edits {
            let p = &paths[at.index(paths.len())];
            if let Some(slot) = v.pointer_mut(p) {
                *slot = replacement.clone();
            }
        }
        let bytes = serde_json::to_vec(&v).unwrap();
        let is_jobs = v.get("jobs").is_some();
        if is_jobs {
            let before = parse_jobs_json("c", &small_docs()[doc]).unwrap().jobs.len();
            let after = parse_jobs_json("c", &bytes);
            prop_assert!(after.is_ok(), "{:?}", after.err());
            let after = after.unwrap().jobs.len();
            prop_assert!(after <= before && after + edits.len() >= before, "{} -> {}", before, after);
            prop_assert!(parse_jobs_json_reader("c", &bytes[..]).is_ok());
        } else {
            let after = parse_nodes_json("c", &bytes);
            prop_assert!(after.is_ok(), "{:?}", after.err());
            prop_assert!(parse_nodes_json_reader("c", &bytes[..]).is_ok());
        }
    }

    #[test]
    fn text_parsers_never_panic(s in ".{0,300}", lines in prop::collection::vec(pipe_line(7, 24), 0..6)) {
        let _ = parse_squeue_text("c", &s);
        let _ = parse_sinfo_text("c", &s);
        let joined = lines.join("\n");
        let _ = parse_squeue_text("c", &joined);
        let _ = parse_sinfo_text("c", &joined);
    }

    #[test]
    fn gres_hostlist_pattern_and_states_never_panic(
        s in ".{0,80}",
        gres in "(gres[/:])?gpu(:[a-z0-9.]{0,6})?(:[0-9]{0,12})?(=[0-9]{0,3})?(\\((IDX|S):[0-9N/A,-]{0,12}\\))?",
        hosts in "[a-z]{1,4}(\\[[0-9]{0,4}(-[0-9]{0,12})?(,[0-9]{1,3})?\\])?(,[a-z0-9\\[\\]-]{0,8})?",
        pattern in "([a-z/._-]|%[0-9]{0,3}[jJxAaNuts%q])*",
    ) {
        let _ = parse_gres(&s);
        for item in parse_gres(&gres) {
            prop_assert!(item.indices.len() <= 4096);
        }
        let _ = expand_hostlist(&s);
        let names = expand_hostlist(&hosts);
        prop_assert!(names.len() <= 100_000);
        let f = PatternFields { job_id: 7, array_job_id: Some(5), array_task_id: Some(2), name: &s, user: "u", first_node: None };
        let _ = expand_stdout_pattern(&pattern, &f);
        let _ = expand_stdout_pattern(&s, &PatternFields::default());
        let _ = job_state_from_slurm(&[&s]);
        let _ = node_state_from_slurm(&[&s, &gres]);
    }
}

// The job listing by field format (`squeue --Format`, `parse::fields`) against `squeue --json`
// of the same moment, both releases: captured by `tests/testbed/capture-squeue-fields.sh`
// (`squeue-fields.txt` with the mark `~Fixture0`, `squeue-fields.json`, `nodes-fields.json`).

const FIXTURE_MARK: &str = "~Fixture0";

/// The field listing read as a refresh reads it: device indices from the node listing.
fn field_jobs(release: &str) -> (Vec<Job>, usize) {
    use flightdeck::backend::slurm::parse::fields::{allocations_from_nodes, parse_squeue_fields};
    let text = read_text(&format!("slurm/{release}/squeue-fields.txt"));
    let old = release == "22.05";
    let (mut jobs, dropped) = parse_squeue_fields("c", &text, FIXTURE_MARK, old).unwrap();
    let nodes = nodes(&format!("slurm/{release}/nodes-fields.json"));
    allocations_from_nodes(&mut jobs, &nodes.gpu_use);
    (jobs, dropped)
}

/// What the field listing cannot say the way the JSON does, made equal on the JSON's side:
/// the state's flags beside the base state (`PENDING,REQUEUED`), and device indices on
/// nodes several GPU jobs share (the text has no `gres_detail`; those are counted only).
/// And where the JSON is wrong: 22.05's JSON gives a job that ended before it ever ran 0
/// CPUs, squeue the CPUs it asked for.
fn as_the_text_sees_it(mut json: Job, text: &Job) -> Job {
    if json.cpus == 0 && json.nodes.is_empty() && json.state.is_finished() {
        json.cpus = text.cpus;
    }
    // As many CPUs as nodes: the text cannot tell memory per CPU from per node (see
    // `fields::memory_mb`), and 22.05's JSON itself says per node for such a job while it
    // waits and per CPU once it runs.
    if json.node_count > 1 && json.cpus == json.node_count {
        json.memory_mb = text.memory_mb;
    }
    // 22.05's JSON gives a job that never ran its memory per CPU as if per node (700 for
    // `--mem-per-cpu=700 -c 2`); the text's total, which the TRES confirms, is kept.
    if json.nodes.is_empty() && json.memory_mb.map(|m| m * u64::from(json.cpus.max(1))) == text.memory_mb {
        json.memory_mb = text.memory_mb;
    }
    if let Some(base) = json.native_state.split(',').next()
        && base != json.native_state
        && base == text.native_state
    {
        json.native_state = base.to_string();
    }
    for (j, t) in json.gpu_allocations.iter_mut().zip(&text.gpu_allocations) {
        if t.indices.is_empty() {
            j.indices.clear();
        }
    }
    json
}

#[test]
fn the_field_listing_reads_as_the_json_on_both_releases() {
    for release in ["22.05", "24.11"] {
        let (text, dropped) = field_jobs(release);
        let json = jobs(&format!("slurm/{release}/squeue-fields.json")).jobs;
        assert_eq!(dropped, 0, "{release}: every record read");
        let ids = |jobs: &[Job]| jobs.iter().map(|j| j.job_ref.id.clone()).collect::<BTreeSet<_>>();
        assert_eq!(ids(&text), ids(&json), "{release}: the same jobs");
        let mut indexed = 0;
        for t in &text {
            let j = json.iter().find(|j| j.job_ref == t.job_ref).unwrap();
            let j = as_the_text_sees_it(j.clone(), t);
            assert_eq!(t, &j, "{release}: job {} differs", t.job_ref.id);
            indexed += t.gpu_allocations.iter().filter(|a| !a.indices.is_empty()).count();
        }
        assert!(indexed > 0, "{release}: some running job's device indices came from the nodes");
        // The hostile name stays one job's name, line break, `|` and forged row included.
        let evil = text.iter().find(|j| j.name.starts_with("evil|name\n999|")).expect("the hostile job");
        assert!(evil.migrated_from.is_none(), "a comment that only mentions the tag is no tag");
        assert!(!text.iter().any(|j| j.job_ref.id == "999"), "no phantom job");
        let migrated = text.iter().find(|j| j.name == "fields-migrated").unwrap();
        assert_eq!(migrated.migrated_from.as_deref(), Some("hpc/12 migration=abc-1"));
    }
}

/// The point of the field listing: bytes per job on both releases, against the JSON's. The
/// capture's hostile job (a name of 150 bytes made to look like a row) is left out of the
/// budget, not of the count of what it costs.
#[test]
fn the_field_listing_is_under_300_bytes_a_job() {
    for release in ["22.05", "24.11"] {
        let text = read_text(&format!("slurm/{release}/squeue-fields.txt"));
        let json = read(&format!("slurm/{release}/squeue-fields.json")).len();
        let jobs = field_jobs(release).0;
        let hostile: usize = jobs.iter().filter(|j| j.name.starts_with("evil|name")).map(|j| j.name.len() + 300).sum();
        let n = jobs.len();
        let (per_text, per_json) = ((text.len() - hostile) / (n - 1), json / n);
        eprintln!("{release}: {} B per job ({per_text} without the hostile job), JSON {per_json}", text.len() / n);
        assert!(per_text <= 300, "{release}: {per_text} B per job");
        assert!(per_json > 10 * per_text, "{release}: JSON {per_json} B per job, text {per_text}");
    }
}

/// One job as both listings print it: a `squeue --json` record of family A (22.05) or C
/// (24.11) and a field-listing record, from the same values.
#[derive(Debug, Clone)]
struct Both {
    id: u32,
    /// `(array id, Ok(task) | Err(pending tasks))`.
    array: Option<(u32, Result<u32, String>)>,
    state: &'static str,
    reason: &'static str,
    user: String,
    partition: String,
    nodes: Vec<String>,
    cpus: u32,
    mem: u64,
    mem_per_cpu: bool,
    gpus_per_node: u32,
    model: Option<&'static str>,
    times: (i64, i64, i64),
    limit_min: Option<u32>,
    priority: u32,
    exit: (i32, i32),
    name: String,
    comment: Option<String>,
    stdout: Option<String>,
    family_c: bool,
}

fn both() -> impl Strategy<Value = Both> {
    let array = prop_oneof![
        Just(None),
        (1u32..9999, 0u32..64).prop_map(|(a, t)| Some((a, Ok(t)))),
        (1u32..9999, "[0-9]{1,2}-[0-9]{2}(%[1-4])?").prop_map(|(a, p)| Some((a, Err(p)))),
    ];
    let state = prop::sample::select(vec!["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"]);
    let reason = prop::sample::select(vec!["None", "Priority", "Resources", "JobHeldUser", "Dependency"]);
    (
        (1u32..9_999_999, array, state, reason, "[a-z][a-z0-9_]{0,8}", "[a-z]{1,6}"),
        (prop::collection::vec(1u32..40, 0..3), 1u32..128, 1u64..100_000, any::<bool>(), 0u32..8),
        (
            prop::option::of(prop::sample::select(vec!["a100", "h100", "l40s", "1g.10gb"])),
            1_600_000_000i64..1_900_000_000,
        ),
        (prop::option::of(1u32..100_000), 0u32..100_000, (0i32..255, prop::sample::select(vec![0, 9, 15]))),
        ("[^\u{0}~]{0,24}", prop::option::of("[^\u{0}~]{0,24}"), prop::option::of("/[a-z%]{1,10}/[a-zA-Z%_.-]{1,12}")),
        any::<bool>(),
    )
        .prop_map(|(a, b, c, d, e, family_c)| {
            let (id, array, state, reason, user, partition) = a;
            let (node_numbers, cpus, mem, mem_per_cpu, gpus_per_node) = b;
            let (model, submit) = c;
            let (limit_min, priority, exit) = d;
            let (name, comment, stdout) = e;
            let running = !matches!(state, "PENDING");
            let mut nodes: Vec<String> = node_numbers.iter().map(|n| format!("n{n:02}")).collect();
            nodes.sort();
            nodes.dedup();
            if !running || nodes.is_empty() {
                nodes = if running { vec!["n01".into()] } else { Vec::new() };
            }
            let reason = if running { "None" } else { reason };
            Both {
                id,
                array,
                state,
                reason,
                user,
                partition,
                nodes,
                cpus,
                mem,
                mem_per_cpu,
                gpus_per_node,
                model,
                times: (submit, submit + 10, submit + 3600),
                limit_min,
                priority: if reason == "JobHeldUser" { 0 } else { priority.max(1) },
                exit,
                name,
                comment: comment
                    .map(|c| if c.len() % 2 == 0 { format!("flightdeck-migrated-from=hpc/{c}") } else { c }),
                stdout,
                family_c,
            }
        })
}

impl Both {
    fn node_list(&self) -> String {
        self.nodes.join(",")
    }

    fn gres(&self) -> String {
        match self.model {
            Some(m) => format!("gpu:{m}:{}", self.gpus_per_node),
            None => format!("gpu:{}", self.gpus_per_node),
        }
    }

    fn tres(&self) -> String {
        let nodes = self.nodes.len().max(1) as u64;
        let mem = if self.mem_per_cpu { self.mem * u64::from(self.cpus) } else { self.mem * nodes };
        let mut t = format!("cpu={},mem={mem}M,node={nodes},billing={}", self.cpus, self.cpus);
        if self.gpus_per_node > 0 {
            t.push_str(&format!(",gres/gpu={}", u64::from(self.gpus_per_node) * nodes));
        }
        t
    }

    /// Indices per node: the first `gpus_per_node` devices.
    fn detail(&self) -> Vec<String> {
        if self.gpus_per_node == 0 || self.state != "RUNNING" {
            return Vec::new();
        }
        let idx = if self.gpus_per_node == 1 { "0".to_string() } else { format!("0-{}", self.gpus_per_node - 1) };
        self.nodes.iter().map(|_| format!("{}(IDX:{idx})", self.gres())).collect()
    }

    fn json(&self) -> Value {
        let (array_job_id, task, task_string) = match &self.array {
            None => (0, None, None),
            Some((a, Ok(t))) => (*a, Some(*t), None),
            Some((a, Err(p))) => (*a, None, Some(p.clone())),
        };
        let flex = |v: Option<i64>| match (self.family_c, v) {
            (true, Some(n)) => json!({"set": true, "infinite": false, "number": n}),
            (true, None) => json!({"set": false, "infinite": false, "number": 0}),
            (false, v) => json!(v),
        };
        let time = |t: i64| if self.family_c { flex(Some(t)) } else { json!(t) };
        let exit = if self.family_c {
            json!({"status": [if self.exit.1 > 0 { "SIGNALED" } else { "EXITED" }], "return_code": flex(Some(i64::from(self.exit.0))), "signal": {"id": flex(Some(i64::from(self.exit.1)))}})
        } else {
            json!(if self.exit.1 > 0 { i64::from(self.exit.1) } else { i64::from(self.exit.0) << 8 })
        };
        let no_task = if self.family_c { flex(None) } else { json!(null) };
        json!({"jobs": [{
            "job_id": if matches!(self.array, Some((_, Ok(_)))) { self.id + 100_000_000 } else { self.array.as_ref().map_or(self.id, |a| a.0) },
            "array_job_id": if self.family_c { flex(Some(i64::from(array_job_id))) } else { json!(array_job_id) },
            "array_task_id": task.map_or(no_task, |t| if self.family_c { flex(Some(i64::from(t))) } else { json!(t) }),
            "array_task_string": task_string.unwrap_or_default(),
            "job_state": if self.family_c { json!([self.state]) } else { json!(self.state) },
            "state_reason": self.reason,
            "hold": self.priority == 0,
            "user_name": self.user,
            "account": "",
            "partition": self.partition,
            "nodes": self.node_list(),
            "node_count": if self.family_c { flex(Some(self.nodes.len().max(1) as i64)) } else { json!(self.nodes.len().max(1)) },
            "cpus": if self.family_c { flex(Some(i64::from(self.cpus))) } else { json!(self.cpus) },
            "memory_per_cpu": if self.mem_per_cpu { flex(Some(self.mem as i64)) } else { flex(None) },
            "memory_per_node": if self.mem_per_cpu { flex(None) } else { flex(Some(self.mem as i64)) },
            "tres_per_node": if self.gpus_per_node > 0 { format!("{}{}", if self.family_c { "gres/" } else { "gres:" }, self.gres()) } else { String::new() },
            "tres_alloc_str": self.tres(),
            "tres_req_str": self.tres(),
            "gres_detail": self.detail(),
            "submit_time": time(self.times.0),
            "start_time": time(self.times.1),
            "end_time": time(self.times.2),
            "time_limit": flex(self.limit_min.map(i64::from)),
            "priority": if self.family_c { flex(Some(i64::from(self.priority))) } else { json!(self.priority) },
            "exit_code": exit,
            "batch_flag": true,
            "name": self.name,
            "comment": self.comment.clone().unwrap_or_default(),
            "current_working_directory": "/w",
            "standard_output": self.stdout.clone().unwrap_or_default(),
            "standard_error": "",
        }]})
    }

    fn text(&self, mark: &str) -> String {
        let (array_job_id, task) = match &self.array {
            None => (self.id.to_string(), "N/A".to_string()),
            Some((a, Ok(t))) => (a.to_string(), t.to_string()),
            Some((a, Err(p))) => (a.to_string(), p.clone()),
        };
        let job_id = if matches!(self.array, Some((_, Ok(_)))) {
            self.id + 100_000_000
        } else {
            self.array.as_ref().map_or(self.id, |a| a.0)
        };
        let per_node = if self.gpus_per_node > 0 {
            format!("{}{}", if self.family_c { "gres/" } else { "gres:" }, self.gres())
        } else {
            "N/A".into()
        };
        let limit = self.limit_min.map_or("UNLIMITED".to_string(), |m| format!("{}:{:02}:00", m / 60, m % 60));
        let exit = if self.family_c {
            format!("{}:{}", self.exit.0, self.exit.1)
        } else if self.exit.1 > 0 {
            self.exit.1.to_string()
        } else {
            (self.exit.0 << 8).to_string()
        };
        let mem =
            if self.mem.is_multiple_of(1024) { format!("{}G", self.mem / 1024) } else { format!("{}M", self.mem) };
        let fixed = [
            job_id.to_string(),
            array_job_id,
            task,
            self.state.to_string(),
            self.reason.to_string(),
            self.user.clone(),
            "(null)".into(),
            self.partition.clone(),
            self.node_list(),
            self.nodes.len().max(1).to_string(),
            self.cpus.to_string(),
            mem,
            "1".into(),
            per_node,
            "N/A".into(),
            "N/A".into(),
            "N/A".into(),
            self.tres(),
            self.times.0.to_string(),
            self.times.1.to_string(),
            self.times.2.to_string(),
            limit,
            self.priority.to_string(),
            exit,
            "1".into(),
        ];
        let stdout = self.stdout.clone().unwrap_or_else(|| "(null)".into());
        let comment = self.comment.clone().unwrap_or_else(|| "(null)".into());
        let end = flightdeck::backend::slurm::parse::fields::record_end(mark);
        format!("{}|{}{mark}{comment}{mark}/w{mark}{stdout}{mark}(null){end}\n", fixed.join("|"), self.name)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// The field listing and the JSON read one job the same, whatever its values: names and
    /// comments with `|`, line breaks and any text; arrays; per-CPU memory; GPUs; both
    /// families' shapes.
    #[test]
    fn the_field_listing_and_the_json_are_one_job(b in both()) {
        use flightdeck::backend::slurm::parse::fields::{allocations_from_nodes, node_gpu_use, parse_squeue_fields, listing_mark};
        let mark = listing_mark();
        let secret = &mark[1..];
        // As many CPUs as nodes with memory per node: the one case the text reads as per CPU
        // (see `fields::memory_mb`).
        prop_assume!(b.mem_per_cpu || b.nodes.len() < 2 || b.cpus as usize != b.nodes.len());
        prop_assume!(!b.name.contains(secret) && !b.comment.as_deref().unwrap_or("").contains(secret));
        let json = parse_jobs_json("c", b.json().to_string().as_bytes()).unwrap().jobs;
        let (mut text, dropped) = parse_squeue_fields("c", &b.text(&mark), &mark, false).unwrap();
        prop_assert_eq!(dropped, 0);
        let used: Vec<_> = b.nodes.iter().zip(b.detail()).filter_map(|(n, d)| node_gpu_use(n, &d)).collect();
        allocations_from_nodes(&mut text, &used);
        prop_assert_eq!(text.len(), 1);
        prop_assert_eq!(&text[0], &json[0]);
    }
}
