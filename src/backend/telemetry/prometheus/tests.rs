//! `read_answer` over small hand-written answers: what each label and figure becomes.
//! The recorded exporter answers, the HTTP side and the fleet are `tests/fakes/telemetry_prometheus.rs`.

use serde_json::{Value, json};

use super::labels::KeyLabels;
use super::*;
use crate::model::{GpuOwner, GpuSample, Node, NodeState};

fn snapshot(nodes: &[&str]) -> Snapshot {
    Snapshot { nodes: nodes.iter().map(|n| Node::new("c", *n, NodeState::Mixed)).collect(), ..Snapshot::default() }
}

/// A vector answer of `(labels, value)` series.
fn answer(series: &[(Value, &str)]) -> Vec<u8> {
    let result: Vec<Value> = series.iter().map(|(m, v)| json!({"metric": m, "value": [1_700_000_000.5, v]})).collect();
    serde_json::to_vec(&json!({"status": "success", "data": {"resultType": "vector", "result": result}})).unwrap()
}

fn dcgm(name: &str, host: &str, gpu: &str) -> Value {
    json!({"__name__": name, "Hostname": host, "gpu": gpu, "UUID": format!("GPU-{host}-{gpu}"),
           "modelName": "NVIDIA H100 80GB HBM3", "instance": "10.0.0.5:9400", "job": "dcgm-exporter"})
}

fn read(series: &[(Value, &str)], nodes: &[&str]) -> Reading {
    read_answer(&answer(series), &snapshot(nodes)).unwrap()
}

fn gpu<'r>(r: &'r Reading, node: &str, index: u32) -> &'r GpuSample {
    r.gpus.iter().find(|g| g.node == node && g.index == index).unwrap_or_else(|| panic!("{node}/{index}: {r:?}"))
}

#[test]
fn figures_land_on_their_gpu_in_the_nodes_name() {
    let r = read(
        &[
            (dcgm("DCGM_FI_DEV_GPU_UTIL", "dgx01.cluster.local", "0"), "85"),
            (dcgm("DCGM_FI_DEV_FB_USED", "dgx01.cluster.local", "0"), "40000"),
            (dcgm("DCGM_FI_DEV_FB_FREE", "dgx01.cluster.local", "0"), "41000"),
            (dcgm("DCGM_FI_DEV_FB_RESERVED", "dgx01.cluster.local", "0"), "559"),
            (dcgm("DCGM_FI_DEV_POWER_USAGE", "dgx01.cluster.local", "0"), "512.25"),
            (dcgm("DCGM_FI_DEV_GPU_TEMP", "dgx01.cluster.local", "0"), "61"),
            (dcgm("DCGM_FI_DEV_XID_ERRORS", "dgx01.cluster.local", "0"), "0"),
            (dcgm("DCGM_FI_DEV_GPU_UTIL", "dgx01.cluster.local", "1"), "3"),
        ],
        &["dgx01"],
    );
    assert_eq!(r.gpus.len(), 2);
    let g = gpu(&r, "dgx01", 0);
    assert_eq!(g.utilisation, Some(85.0));
    assert_eq!((g.memory_used_mb, g.memory_total_mb), (Some(40000), Some(81559)));
    assert_eq!((g.power_watts, g.temperature_c), (Some(512.25), Some(61.0)));
    assert_eq!(g.uuid.as_deref(), Some("GPU-dgx01.cluster.local-0"));
    assert_eq!(g.product.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!((g.last_xid, g.problems.len(), g.owner.as_ref()), (None, 0, None));
    assert_eq!(gpu(&r, "dgx01", 1).memory_total_mb, None, "no total without both used and free");
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

#[test]
fn the_engine_ratio_is_preferred_as_percent() {
    let r = read(
        &[
            (dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "0"), "100"),
            (dcgm("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "n1", "0"), "0.125"),
            (dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "1"), "40"),
        ],
        &["n1"],
    );
    assert_eq!(gpu(&r, "n1", 0).utilisation, Some(12.5));
    assert_eq!(gpu(&r, "n1", 1).utilisation, Some(40.0));
}

#[test]
fn xid_and_ecc_become_problems() {
    let r = read(
        &[
            (dcgm("DCGM_FI_DEV_XID_ERRORS", "n1", "0"), "79"),
            (dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "n1", "1"), "2"),
            (dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE", "n1", "1"), "1"),
            (dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "n1", "2"), "0"),
        ],
        &["n1"],
    );
    let fallen = gpu(&r, "n1", 0);
    assert_eq!(fallen.last_xid, Some(79));
    assert_eq!(fallen.problems, ["XID 79: GPU has fallen off the bus"]);
    assert_eq!(
        gpu(&r, "n1", 1).problems,
        ["2 uncorrectable ECC errors", "row remapping failed: the GPU needs a reset or replacement"]
    );
    assert!(gpu(&r, "n1", 2).problems.is_empty());
}

#[test]
fn owners_from_pods_exported_pods_and_job_labels() {
    let with = |mut m: Value, extra: Value| {
        m.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        m
    };
    let util = |gpu: &str| dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", gpu);
    let r = read(
        &[
            (with(util("0"), json!({"pod": "train-0", "namespace": "ml", "container": "main"})), "1"),
            (
                with(
                    util("1"),
                    json!({"pod": "nvidia-dcgm-exporter-x7k2p", "namespace": "gpu-operator",
                           "exported_pod": "infer-1", "exported_namespace": "serve"}),
                ),
                "1",
            ),
            // An idle GPU on a ServiceMonitor target: the exporter's own pod, not a workload.
            (with(util("2"), json!({"pod": "nvidia-dcgm-exporter-x7k2p", "namespace": "gpu-operator"})), "1"),
            (with(util("3"), json!({"hpc_job": "4242"})), "1"),
            (with(util("4"), json!({"slurm_job_id": "77"})), "1"),
        ],
        &["n1"],
    );
    let pod = |ns: &str, name: &str| Some(GpuOwner::Pod { namespace: ns.into(), name: name.into() });
    assert_eq!(gpu(&r, "n1", 0).owner, pod("ml", "train-0"));
    assert_eq!(gpu(&r, "n1", 1).owner, pod("serve", "infer-1"));
    assert_eq!(gpu(&r, "n1", 2).owner, None);
    assert_eq!(gpu(&r, "n1", 3).owner, Some(GpuOwner::Job("4242".into())));
    assert_eq!(gpu(&r, "n1", 4).owner, Some(GpuOwner::Job("77".into())));
}

#[test]
fn hosts_are_found_by_any_label_and_unknown_ones_left_out_with_a_note() {
    let r = read(
        &[
            // The exporter's pod name as Hostname; relabelling gave the node.
            (
                json!({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "dcgm-exporter-abc", "kubernetes_node": "n2", "gpu": "0"}),
                "5",
            ),
            (json!({"__name__": "DCGM_FI_DEV_GPU_UTIL", "instance": "10.1.2.3:9400", "gpu": "0"}), "5"),
            (json!({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "other01", "gpu": "0"}), "5"),
            (json!({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "other01", "gpu": "1"}), "5"),
            (json!({"__name__": "DCGM_FI_DEV_GPU_UTIL", "instance": "other02:9400", "gpu": "0"}), "5"),
            (json!({"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0"}), "5"),
            (json!({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n2"}), "5"),
        ],
        &["n2", "ip-10-1-2-3"],
    );
    let nodes: Vec<(&str, u32)> = r.gpus.iter().map(|g| (g.node.as_str(), g.index)).collect();
    assert_eq!(nodes, [("n2", 0), ("ip-10-1-2-3", 0)]);
    assert_eq!(
        r.notes,
        [
            "3 GPUs on 2 hosts this cluster does not list were left out: other01, other02",
            "1 series named no host (Hostname, hostname, kubernetes_node, node or instance) and was left out",
            "1 series named no device (gpu, GPU, gpu_id, UUID or gpu_uuid) and was left out",
        ]
    );
    // A cluster that lists no nodes keeps the names as the exporter wrote them.
    let r = read(&[(dcgm("DCGM_FI_DEV_GPU_UTIL", "dgx9", "0"), "5")], &[]);
    assert_eq!(r.gpus[0].node, "dgx9");
}

#[test]
fn bad_values_are_notes_and_blanks_are_nothing() {
    let r = read(
        &[
            (dcgm("DCGM_FI_DEV_POWER_USAGE", "n1", "0"), "NaN"),
            (dcgm("DCGM_FI_DEV_GPU_TEMP", "n1", "0"), "+Inf"),
            (dcgm("DCGM_FI_DEV_FB_USED", "n1", "0"), "lots"),
            // DCGM's blank: the field is not supported on this device.
            (dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "0"), "9223372036854775794"),
        ],
        &["n1"],
    );
    let g = gpu(&r, "n1", 0);
    assert_eq!((g.power_watts, g.temperature_c, g.memory_used_mb, g.utilisation), (None, None, None, None));
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert_eq!(
        r.notes[0],
        "3 values were not finite numbers and were left out (first: DCGM_FI_DEV_POWER_USAGE = \"NaN\" on n1 GPU 0)"
    );
}

#[test]
fn mig_instances_fold_into_their_gpu() {
    let mig = |name: &str, instance: &str| {
        let mut m = dcgm(name, "n1", "0");
        m["GPU_I_ID"] = json!(instance);
        m["GPU_I_PROFILE"] = json!("3g.40gb");
        m
    };
    let r = read(
        &[
            (mig("DCGM_FI_DEV_FB_USED", "1"), "1000"),
            (mig("DCGM_FI_DEV_FB_USED", "2"), "3000"),
            (mig("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "1"), "0.2"),
            (mig("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "2"), "0.6"),
            (mig("DCGM_FI_DEV_GPU_TEMP", "1"), "50"),
            (mig("DCGM_FI_DEV_GPU_TEMP", "2"), "52"),
        ],
        &["n1"],
    );
    assert_eq!(r.gpus.len(), 1);
    let g = &r.gpus[0];
    assert_eq!(g.memory_used_mb, Some(4000));
    assert!((g.utilisation.unwrap() - 40.0).abs() < 1e-3, "{:?}", g.utilisation);
    assert_eq!(g.temperature_c, Some(52.0));
    assert!(r.notes[0].starts_with("1 GPU is split into MIG instances"), "{:?}", r.notes);
}

#[test]
fn amd_series_read_like_nvidia_ones() {
    let amd = |name: &str, gpu: &str| {
        json!({"__name__": name, "gpu_id": gpu, "gpu_uuid": format!("ccff-{gpu}"), "hostname": "mi01",
               "card_series": "AMD Instinct MI300X OAM", "card_model": "102-G30211-0C", "job_id": "12"})
    };
    let r = read(
        &[
            (amd("gpu_gfx_activity", "0"), "97"),
            (amd("gpu_used_vram", "0"), "150000"),
            (amd("gpu_total_vram", "0"), "196592"),
            (amd("amd_gpu_power_usage", "0"), "640"),
            (amd("gpu_junction_temperature", "0"), "71"),
            (amd("gpu_ecc_uncorrect_total", "0"), "1"),
            (amd("gpu_edge_temperature", "1"), "45"),
            (amd("gpu_package_power", "1"), "120"),
        ],
        &["mi01"],
    );
    let g = gpu(&r, "mi01", 0);
    assert_eq!((g.utilisation, g.memory_used_mb, g.memory_total_mb), (Some(97.0), Some(150000), Some(196592)));
    assert_eq!((g.power_watts, g.temperature_c), (Some(640.0), Some(71.0)));
    assert_eq!(g.product.as_deref(), Some("AMD Instinct MI300X OAM"));
    assert_eq!(g.owner, Some(GpuOwner::Job("12".into())));
    assert_eq!(g.problems, ["1 uncorrectable ECC error"]);
    let older = gpu(&r, "mi01", 1);
    assert_eq!((older.temperature_c, older.power_watts), (Some(45.0), Some(120.0)));
}

#[test]
fn gpus_known_only_by_uuid_are_numbered_after_the_indexed_ones() {
    let by_uuid = |uuid: &str| json!({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n1", "UUID": uuid});
    let r = read(
        &[(by_uuid("GPU-b"), "1"), (dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "3"), "1"), (by_uuid("GPU-a"), "1")],
        &["n1"],
    );
    let mut numbered: Vec<(u32, Option<&str>)> = r.gpus.iter().map(|g| (g.index, g.uuid.as_deref())).collect();
    numbered.sort();
    assert_eq!(numbered, [(3, Some("GPU-n1-3")), (4, Some("GPU-a")), (5, Some("GPU-b"))]);
    assert!(r.notes[0].starts_with("2 GPUs carried no device index"), "{:?}", r.notes);
}

#[test]
fn empty_and_refused_and_foreign_answers() {
    let empty = read(&[], &["n1"]);
    assert!(empty.gpus.is_empty());
    assert!(empty.notes[0].starts_with("Prometheus holds none of the GPU metrics"), "{:?}", empty.notes);

    let only_power = read(&[(dcgm("DCGM_FI_DEV_POWER_USAGE", "n1", "0"), "100")], &["n1"]);
    assert_eq!(
        only_power.notes,
        [
            "no utilisation metric (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_GR_ENGINE_ACTIVE, gpu_gfx_activity) came back: idle GPUs cannot be told"
        ]
    );

    let refused = br#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\""}"#;
    assert_eq!(
        read_answer(refused, &snapshot(&[])).unwrap_err(),
        AnswerError::Refused { error_type: "bad_data".into(), message: "invalid parameter \"query\"".into() }
    );
    let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
    assert_eq!(
        read_answer(matrix, &snapshot(&[])).unwrap_err().to_string(),
        "the answer is a matrix, not an instant vector"
    );
    let html = b"<!DOCTYPE html><html><body>Sign in</body></html>";
    let err = read_answer(html, &snapshot(&[])).unwrap_err().to_string();
    assert!(
        err.starts_with("not a Prometheus answer: expected value at line 1 column 1; it begins: <!DOCTYPE html>"),
        "{err}"
    );
    assert_eq!(read_answer(b"", &snapshot(&[])).unwrap_err().to_string(), "not a Prometheus answer: the body is empty");
    let warned =
        br#"{"status":"success","data":{"resultType":"vector","result":[]},"warnings":["partial \u001b[31mresponse"]}"#;
    let r = read_answer(warned, &snapshot(&[])).unwrap();
    assert_eq!(r.notes.last().map(String::as_str), Some("Prometheus warns: partial response"));
}

/// What Prometheus answers `query` (`group by (…) (V)` or `max by (…) (V)`) when V holds
/// `series`: each series with only the labels named (empty ones dropped), those that are
/// then alike made one (`group`: value 1; `max`: the largest).
fn evaluate(query: &str, series: &[(Value, &str)]) -> Vec<u8> {
    let (group, rest) = match query.split_once(" by (") {
        Some(("group", rest)) => (true, rest),
        Some(("max", rest)) => (false, rest),
        _ => panic!("not a query a reading sends: {query}"),
    };
    let kept: Vec<&str> = rest.split_once(')').unwrap().0.split(", ").collect();
    let mut out: Vec<(Value, String)> = Vec::new();
    for (metric, value) in series {
        let mut labels = serde_json::Map::new();
        for (k, v) in metric.as_object().unwrap() {
            if kept.contains(&k.as_str()) && v.as_str().is_some_and(|v| !v.is_empty()) {
                labels.insert(k.clone(), v.clone());
            }
        }
        let labels = Value::Object(labels);
        let value = if group { "1".to_string() } else { value.to_string() };
        match out.iter_mut().find(|(l, _)| *l == labels) {
            Some((_, v)) if !group && value.parse::<f64>().unwrap_or(f64::NAN) > v.parse().unwrap_or(f64::NAN) => {
                *v = value
            }
            Some(_) => {}
            None => out.push((labels, value)),
        }
    }
    let borrowed: Vec<(Value, &str)> = out.iter().map(|(l, v)| (l.clone(), v.as_str())).collect();
    answer(&borrowed)
}

/// A reading as the source takes it: the identity query, then the values query its answer
/// keys, both answered from `series`.
fn read_in_two(series: &[(Value, &str)], nodes: &[&str]) -> (Reading, String) {
    let snapshot = snapshot(nodes);
    let hosts = Hosts::new(&snapshot);
    let identity = evaluate(&metrics::identity_query(Form::Selector), series);
    let mut reader = Reader::new(&hosts, &snapshot);
    reader.read(&identity).unwrap();
    let query = metrics::values_query(Form::Selector, reader.value_keys());
    let values = evaluate(&query, series);
    reader.read(&values).unwrap();
    let keys = query.split_once(" (").unwrap().1.split_once(')').unwrap().0.to_string();
    (reader.finish(), keys)
}

#[test]
fn two_answers_read_as_one_with_only_the_labels_that_find_each_gpu() {
    let relabelled = |name: &str, gpu: &str| {
        json!({"__name__": name, "Hostname": "dcgm-exporter-abc", "kubernetes_node": "n2", "gpu": gpu,
               "UUID": format!("GPU-{gpu}"), "pod": format!("train-{gpu}"), "namespace": "ml", "instance": "10.0.0.9:9400"})
    };
    let mig = |name: &str, instance: &str| {
        let mut m = dcgm(name, "n1", "0");
        m["GPU_I_ID"] = json!(instance);
        m["GPU_I_PROFILE"] = json!("3g.40gb");
        m
    };
    let by_uuid =
        |name: &str, uuid: &str| json!({"__name__": name, "hostname": "n1", "gpu_uuid": uuid, "card_series": "MI300X"});
    // The series, the cluster's nodes, and what the values query keeps.
    type Case<'a> = (Vec<(Value, &'a str)>, &'a [&'a str], &'a str);
    let cases: Vec<Case> = vec![
        (
            vec![
                (dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "0"), "85"),
                (dcgm("DCGM_FI_DEV_FB_USED", "n1", "0"), "40000"),
                (dcgm("DCGM_FI_DEV_XID_ERRORS", "n1", "1"), "79"),
                (dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "1"), "3"),
            ],
            &["n1"],
            "__name__, Hostname, gpu",
        ),
        (
            vec![
                (relabelled("DCGM_FI_DEV_GPU_UTIL", "0"), "10"),
                (relabelled("DCGM_FI_DEV_GPU_UTIL", "1"), "90"),
                (relabelled("DCGM_FI_DEV_POWER_USAGE", "1"), "300"),
            ],
            &["n2"],
            "__name__, kubernetes_node, gpu",
        ),
        (
            vec![
                (mig("DCGM_FI_DEV_FB_USED", "1"), "1000"),
                (mig("DCGM_FI_DEV_FB_USED", "2"), "3000"),
                (mig("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "1"), "0.2"),
                (mig("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "2"), "0.6"),
            ],
            &["n1"],
            "__name__, Hostname, gpu, GPU_I_ID, GPU_I_PROFILE",
        ),
        (
            vec![(by_uuid("gpu_gfx_activity", "ccff-a"), "50"), (by_uuid("gpu_used_vram", "ccff-b"), "7")],
            &["n1"],
            "__name__, hostname, gpu_uuid",
        ),
    ];
    for (series, nodes, expected_keys) in cases {
        let whole = read(&series, nodes);
        let (in_two, keys) = read_in_two(&series, nodes);
        assert_eq!(keys, expected_keys);
        assert_eq!(in_two, whole, "{series:?}");
        assert!(!whole.gpus.is_empty());
    }
    // Nothing to key by: no values query is written.
    let snapshot = snapshot(&["n1"]);
    let hosts = Hosts::new(&snapshot);
    let nothing = evaluate(&metrics::identity_query(Form::Selector), &[]);
    let mut reader = Reader::new(&hosts, &snapshot);
    reader.read(&nothing).unwrap();
    assert!(reader.value_keys().is_empty());
}

#[test]
fn a_values_answer_the_scanner_declines_is_read_again_with_the_identity_answer() {
    let series = [(dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "0"), "85"), (dcgm("DCGM_FI_DEV_FB_USED", "n1", "0"), "400")];
    let snapshot = snapshot(&["n1"]);
    let identity = evaluate(&metrics::identity_query(Form::Selector), &series);
    let values = evaluate(&metrics::values_query(Form::Selector, KeyLabels::host(0) | KeyLabels(1 << 5)), &series);
    // Deeper than the scanner follows, in a field nobody reads: serde reads it.
    let deep = format!(r#""stats":{}1{}"#, "[".repeat(80), "]".repeat(80));
    let values = String::from_utf8(values).unwrap().replacen(r#""data":{"#, &format!(r#""data":{{{deep},"#), 1);
    let r = read_answers(&[&identity, values.as_bytes()], &snapshot).unwrap();
    let g = gpu(&r, "n1", 0);
    assert_eq!((g.utilisation, g.memory_used_mb, g.uuid.as_deref()), (Some(85.0), Some(400), Some("GPU-n1-0")));
    assert_eq!(r, read(&series, &["n1"]));
}
