//! The SkyPilot task and dstack task dialects, offline, through the registry as `spec
//! convert` and `submit --from` use them: the fixtures of `tests/fixtures/dialects/{skypilot,
//! dstack}/` (checked by each tool's own parser: SkyPilot 0.14.1's
//! `load_chain_dag_from_yaml_str`, dstack 0.22.5's `parse_run_configuration`) import to the
//! specs written here, export, and import again to the same spec; every dialect claims its
//! own files and nobody else's; and no text, however hostile, panics an importer.

use std::collections::BTreeMap;
use std::path::PathBuf;

use flightdeck::backend::{DialectEntry, Registry};
use flightdeck::model::Dialect;
use flightdeck::spec::{Imported, JobSpec};

fn fixture(dialect: &str, name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/fixtures/dialects", dialect, name].iter().collect();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixtures(dialect: &str) -> Vec<(String, String)> {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/fixtures/dialects", dialect].iter().collect();
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert!(names.len() >= 4, "{names:?}");
    names.into_iter().map(|n| (fixture(dialect, &n), n)).collect()
}

fn dialect(name: &str) -> DialectEntry {
    Registry::builtin().dialect(name).unwrap_or_else(|| panic!("no dialect {name}")).clone()
}

fn import(name: &str, text: &str) -> Imported {
    (dialect(name).import)(text).unwrap_or_else(|e| panic!("{name} import: {e}\n{text}"))
}

/// import → export → import: the same spec, and the export is claimed by its own dialect.
fn round_trip(name: &str, text: &str) -> (Imported, String) {
    let d = dialect(name);
    let first = import(name, text);
    let native = (d.export)(&first.spec).unwrap_or_else(|e| panic!("{name} export of {:?}: {e}", first.spec));
    assert_eq!(native.dialect, d.dialect);
    let second = import(name, &native.text);
    assert_eq!(second.spec, first.spec, "{name} round trip through\n{}", native.text);
    assert_eq!(claimed_by(&native.text), vec![d.dialect], "who claims the export:\n{}", native.text);
    (first, native.text)
}

/// Every shipped dialect that claims `text`.
fn claimed_by(text: &str) -> Vec<Dialect> {
    Registry::builtin().dialects().filter(|d| (d.detect)(text)).map(|d| d.dialect.clone()).collect()
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn said(imported: &Imported, names: &[&str]) {
    let all = imported.warnings.join("\n");
    for name in names {
        assert!(all.contains(name), "no warning naming {name} in:\n{all}");
    }
}

#[test]
fn skypilot_fixtures_import_to_these_specs() {
    let multinode = import("skypilot", &fixture("skypilot", "gpu-multinode.yaml"));
    assert_eq!(
        multinode.spec,
        JobSpec {
            name: "train-llm".into(),
            script: Some(
                "pip install -r requirements.txt\ncd ~/sky_workdir\ntorchrun --nnodes=$SKYPILOT_NUM_NODES \
                 --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE \\\n  --node_rank=$SKYPILOT_NODE_RANK train.py --epochs \
                 $EPOCHS\n"
                    .into()
            ),
            gpus: 8,
            gpu_type: Some("h100".into()),
            cpus: Some(32),
            memory: Some("256G".into()),
            nodes: Some(2),
            env: env(&[("WANDB_MODE", "offline"), ("EPOCHS", "3")]),
            ..JobSpec::default()
        }
    );
    said(&multinode, &["`setup`", "`resources.cpus`", "`resources.memory`"]);

    let container = import("skypilot", &fixture("skypilot", "container-env.yaml"));
    assert_eq!(
        container.spec,
        JobSpec {
            name: "finetune".into(),
            command: Some("python finetune.py --model llama --lr 0.0001".into()),
            gpus: 4,
            gpu_type: Some("a100-80gb".into()),
            memory: Some("512M".into()),
            workdir: Some("~/src/finetune".into()),
            image: Some("nvcr.io/nvidia/pytorch:24.01-py3".into()),
            env: env(&[("HF_HOME", "/cache/hf"), ("SEED", "42"), ("DEBUG", "False")]),
            ..JobSpec::default()
        }
    );
    assert!(container.warnings.is_empty(), "{:?}", container.warnings);

    let hostile = import("skypilot", &fixture("skypilot", "hostile.yaml"));
    assert_eq!(hostile.spec.name, "x-rm-rf-id-whoami-n-c-d-a-b-c-d-e", "made a SkyPilot task name");
    assert_eq!(hostile.spec.migrated_from.as_deref(), Some("hpc/123_4"));
    assert_eq!(hostile.spec.env.get("MULTI").map(String::as_str), Some("line one\nline two"));
    assert_eq!(hostile.spec.env.get("LOOKS_LIKE_YAML").map(String::as_str), Some("yes"));
    assert!(!hostile.spec.env.contains_key("FLIGHTDECK_MIGRATED_FROM"), "the tag is migrated_from, not env");
    assert!(hostile.spec.script.as_deref().unwrap().contains("\"trailing space \""));
    said(&hostile, &["`name`"]);

    let choices = import("skypilot", &fixture("skypilot", "choices.yaml"));
    assert_eq!((choices.spec.gpus, choices.spec.gpu_type.as_deref(), choices.spec.cpus), (1, Some("h100"), Some(8)));
    said(
        &choices,
        &[
            "`resources.any_of`: 2 choices",
            "`resources.cloud`",
            "`resources.use_spot`",
            "`resources.disk_size`",
            "`resources.ports`",
            "`resources.region`",
            "`file_mounts`",
            "`service`",
            "`secrets`",
        ],
    );
}

#[test]
fn dstack_fixtures_import_to_these_specs() {
    let gpu = import("dstack", &fixture("dstack", "task-gpu.dstack.yml"));
    assert_eq!(
        gpu.spec,
        JobSpec {
            name: "train-llm".into(),
            script: Some(
                "pip install -r requirements.txt\ntorchrun --nnodes=$DSTACK_NODES_NUM --node_rank=$DSTACK_NODE_RANK \
                 train.py --epochs $EPOCHS"
                    .into()
            ),
            gpus: 8,
            gpu_type: Some("h100".into()),
            cpus: Some(32),
            memory: Some("256G".into()),
            time_limit: Some("2h".into()),
            partition: Some("h100-fleet".into()),
            workdir: Some("/workflow".into()),
            nodes: Some(2),
            env: env(&[("WANDB_MODE", "offline"), ("EPOCHS", "3")]),
            ..JobSpec::default()
        }
    );
    assert!(gpu.warnings.is_empty(), "{:?}", gpu.warnings);

    let image = import("dstack", &fixture("dstack", "task-image.dstack.yml"));
    assert_eq!(
        image.spec,
        JobSpec {
            name: "finetune".into(),
            command: Some("python finetune.py --model llama --lr 0.0001".into()),
            gpus: 4,
            gpu_type: Some("a100-80gb".into()),
            memory: Some("500M".into()),
            time_limit: Some("1h30m".into()),
            image: Some("nvcr.io/nvidia/pytorch:24.01-py3".into()),
            env: env(&[("HF_HOME", "/cache/hf"), ("SEED", "42")]),
            ..JobSpec::default()
        }
    );
    said(&image, &["`resources.shm_size`", "`retry`", "`spot_policy`"]);

    let hostile = import("dstack", &fixture("dstack", "hostile.dstack.yml"));
    assert_eq!(hostile.spec.name, "train-llm-rm-rf-id", "made a dstack name");
    assert_eq!(hostile.spec.migrated_from.as_deref(), Some("hpc/123_4"));
    assert_eq!((hostile.spec.gpus, hostile.spec.gpu_type.as_deref()), (1, Some("l4")));
    assert_eq!(
        hostile.spec.script.as_deref(),
        Some(
            "echo \"$(cat /etc/passwd)\" '; rm -rf /' `id` $HOME\nprintf '%s\\n' \"tab\tinside\" \"trailing space \"\n: \
             'a: b' - [x] {y} # not a comment"
        )
    );
    said(&hostile, &["`name`", "`tags.team`"]);
}

/// The run spec the real dstack 0.22.5 server stored for a submitted task (`runs/get` →
/// `run_spec`, captured from the test bed; the SSH key shortened): its server defaults
/// (2 CPUs, 8 GB, a 100 GB disk, home `/root`, priority 0 …) are no warnings.
#[test]
fn a_stored_dstack_run_spec_reads_without_its_server_defaults() {
    let text = fixture("dstack", "run-spec.json");
    assert_eq!(claimed_by(&text), [flightdeck::backend::dstack::dialect::DSTACK_RUN_SPEC]);
    let got = import("dstack", &text);
    assert_eq!(
        got.spec,
        JobSpec {
            name: "probe-cloud-x1".into(),
            script: Some("echo one\necho two".into()),
            gpus: 2,
            gpu_type: Some("h100".into()),
            cpus: Some(4),
            memory: Some("32G".into()),
            time_limit: Some("2h".into()),
            partition: Some("f1".into()),
            workdir: Some("/work".into()),
            nodes: Some(2),
            env: env(&[("A", "b"), ("C", "1")]),
            migrated_from: Some("hpc/123".into()),
            ..JobSpec::default()
        }
    );
    assert_eq!(
        got.warnings,
        ["`retry`: no portable form (a dstack cluster's own `retry` setting adds one at submit); left out"]
    );
}

#[test]
fn fixtures_survive_export_and_import_unchanged() {
    for (text, name) in fixtures("skypilot") {
        let (_, exported) = round_trip("skypilot", &text);
        assert!(exported.starts_with("# POST /launch on cluster fd-"), "{name}:\n{exported}");
    }
    for (text, name) in fixtures("dstack") {
        let (_, exported) = round_trip("dstack", &text);
        assert!(exported.starts_with("type: task\nname: "), "{name}:\n{exported}");
    }
}

#[test]
fn specs_cross_between_the_cloud_dialects() {
    // dstack → SkyPilot → dstack keeps what both carry.
    let from_dstack = import("dstack", &fixture("dstack", "task-gpu.dstack.yml")).spec;
    let sky = (dialect("skypilot").export)(&from_dstack).unwrap();
    assert!(sky.warnings.iter().any(|w| w.starts_with("`time_limit`")), "{:?}", sky.warnings);
    let back = import("skypilot", &sky.text).spec;
    assert_eq!(back.partition.as_deref(), Some("h100-fleet"), "the fleet became the cluster:\n{}", sky.text);
    let mut want = from_dstack.clone();
    want.time_limit = None;
    assert_eq!(back, want);
}

#[test]
fn each_dialect_claims_its_own_files_and_no_other() {
    for (text, name) in fixtures("skypilot") {
        assert_eq!(claimed_by(&text), [flightdeck::backend::skypilot::dialect::SKYPILOT_TASK], "{name}");
    }
    for (text, name) in fixtures("dstack") {
        assert_eq!(claimed_by(&text), [flightdeck::backend::dstack::dialect::DSTACK_RUN_SPEC], "{name}");
    }
    let sky = dialect("skypilot");
    let dstack = dialect("dstack");
    for (what, text) in OTHERS {
        assert!(!(sky.detect)(text), "SkyPilot claims the {what}");
        assert!(!(dstack.detect)(text), "dstack claims the {what}");
    }
}

/// Other dialects' files and the portable TOML, as users write them.
const OTHERS: &[(&str, &str)] = &[
    (
        "sbatch script",
        "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --gres=gpu:h100:8\n#SBATCH --nodes=2\nrun: x\nsrun python train.py\n",
    ),
    ("sbatch script without #!", "#SBATCH -N 1\n#SBATCH -t 2:00:00\nsrun hostname\n"),
    (
        "Kubernetes Job",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec:\n  template:\n    spec:\n      containers:\n      \
         - name: main\n        image: pytorch\n        command: [python, train.py]\n        env:\n        - name: A\n          \
         value: b\n      restartPolicy: Never\n",
    ),
    ("Kubernetes Secret with a type", "apiVersion: v1\nkind: Secret\ntype: Opaque\nmetadata: {name: s}\n"),
    ("Kubernetes list", "apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: batch/v1\nkind: Job\n"),
    (
        "portable TOML",
        "name = \"train\"\ncommand = \"python train.py --run: x\"\ngpus = 4\ngpu_type = \"a100\"\n\n[env]\nWANDB_MODE = \"offline\"\n",
    ),
    ("portable TOML with a script", "name = \"t\"\nscript = \"\"\"\nrun: x\ntype: task\n\"\"\"\n"),
    ("dstack fleet", "type: fleet\nname: f\nnodes: 2\n"),
    ("empty file", ""),
    ("a YAML list", "- run: x\n- type: task\n"),
];

#[test]
fn what_cannot_be_said_is_refused_or_warned_by_name() {
    let base = JobSpec { name: "t".into(), command: Some("true".into()), ..JobSpec::default() };
    for kind in ["skypilot", "dstack"] {
        let export = dialect(kind).export;
        let array = JobSpec { array: Some("0-9".into()), ..base.clone() };
        let err = export(&array).unwrap_err().to_string();
        assert!(err.contains("`array`") && err.contains("no job arrays"), "{kind}: {err}");
        let tasks = JobSpec { tasks_per_node: Some(4), ..base.clone() };
        let native = export(&tasks).unwrap();
        assert!(native.warnings.iter().any(|w| w.starts_with("`tasks_per_node`")), "{kind}: {:?}", native.warnings);
        let one = JobSpec { tasks_per_node: Some(1), ..base.clone() };
        assert!(!export(&one).unwrap().warnings.iter().any(|w| w.starts_with("`tasks_per_node`")));
    }
    let err = (dialect("dstack").export)(&JobSpec { migrated_from: Some("hpc/1;x".into()), ..base.clone() })
        .unwrap_err()
        .to_string();
    assert!(err.contains("`migrated_from`") && err.contains("dstack tag"), "{err}");
    let tag = JobSpec { env: env(&[("FLIGHTDECK_MIGRATED_FROM", "x")]), ..base.clone() };
    let err = (dialect("skypilot").export)(&tag).unwrap_err().to_string();
    assert!(err.contains("`env.FLIGHTDECK_MIGRATED_FROM`"), "{err}");
    let managed = JobSpec { managed: true, ..base.clone() };
    let err = (dialect("dstack").export)(&managed).unwrap_err().to_string();
    assert!(err.contains("`managed`"), "{err}");
    let sky = (dialect("skypilot").export)(&managed).unwrap();
    assert!(sky.text.starts_with("# POST /jobs/launch as managed job t\n"), "{}", sky.text);
    assert!(import("skypilot", &sky.text).spec.managed);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    const MODELS: [&str; 9] = ["h100", "a100", "a100-80gb", "l4", "h100-nvl", "mi300x", "v100-32gb", "t4", "1g.10gb"];

    /// One line of anything printable (what `validate` lets through), not blank.
    fn line() -> impl Strategy<Value = String> {
        "[^\\p{C}\\p{Zl}\\p{Zp}]{1,24}".prop_filter("not blank", |s| !s.trim().is_empty())
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            "[^\\x00]{0,24}",
            Just("yes".to_string()),
            Just("null".to_string()),
            Just("~".to_string()),
            Just("0x1F".to_string()),
            Just("1e3".to_string()),
            Just("- a: b".to_string()),
            Just(" lead and trail ".to_string()),
            Just("'\"\\".to_string()),
            Just("line\nbreak\n".to_string()),
            Just("\r\n\t".to_string()),
        ]
    }

    fn body() -> impl Strategy<Value = (Option<String>, Option<String>)> {
        prop_oneof![
            "[^\\x00\\n]{1,40}".prop_filter("not blank", |s| !s.trim().is_empty()).prop_map(|c| (Some(c), None)),
            (line(), "[^\\x00]{0,40}", line())
                .prop_filter("no #! first line", |(a, _, _)| !a.starts_with("#!"))
                .prop_map(|(a, mid, z)| (None, Some(format!("{a}\n{mid}\n{z}")))),
        ]
    }

    /// A spec of what both cloud dialects carry, `name` still to be chosen per dialect.
    fn common() -> impl Strategy<Value = JobSpec> {
        let gpus = prop_oneof![
            Just((0u32, None)),
            (1u32..=16, prop::sample::select(&MODELS[..])).prop_map(|(n, m)| (n, Some(m.to_string())))
        ];
        let memory = prop_oneof![
            Just(None),
            (1u64..4_000_000).prop_map(|mib| Some(if mib % 1024 == 0 {
                format!("{}G", mib / 1024)
            } else {
                format!("{mib}M")
            }))
        ];
        (
            body(),
            gpus,
            prop::option::of(1u32..512),
            memory,
            prop::option::of(1u32..64),
            prop::collection::btree_map("[A-Z_][A-Z0-9_]{0,8}", value(), 0..5),
            prop::option::of(line()),
            prop::option::of(line()),
        )
            .prop_map(|((command, script), (gpus, gpu_type), cpus, memory, nodes, env, image, workdir)| JobSpec {
                name: String::new(),
                command,
                script,
                gpus,
                gpu_type,
                cpus,
                memory,
                nodes,
                env,
                image,
                workdir,
                ..JobSpec::default()
            })
            .prop_filter("not the tag's variable", |s| !s.env.contains_key("FLIGHTDECK_MIGRATED_FROM"))
    }

    fn cluster_name() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9._-]{0,20}[a-z0-9]".prop_filter("a choice, not the managed queue or a generated name", |c| {
            c != "managed-jobs" && !(c.starts_with("fd-") && c.ends_with("-xxxxx"))
        })
    }

    fn duration() -> impl Strategy<Value = String> {
        prop_oneof![
            (1u64..400).prop_map(|d| format!("{d}d")),
            (1u64..24).prop_map(|h| format!("{h}h")),
            (1u64..60).prop_filter("not hours", |m| m % 60 != 0).prop_map(|m| format!("{m}m")),
            (1u64..60).prop_map(|s| format!("{s}s")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn skypilot_carries_what_it_can_exactly(
            spec in common(),
            name in "[a-zA-Z0-9]{1,8}([._-]{1,2}[a-zA-Z0-9]{1,8}){0,3}",
            placement in prop_oneof![Just((None, false)), Just((None, true)), cluster_name().prop_map(|c| (Some(c), false))],
            origin in prop::option::of(line()),
        ) {
            let spec = JobSpec { name, partition: placement.0, managed: placement.1, migrated_from: origin, ..spec };
            let sky = dialect("skypilot");
            let native = (sky.export)(&spec).unwrap();
            prop_assert_eq!(claimed_by(&native.text), vec![flightdeck::backend::skypilot::dialect::SKYPILOT_TASK], "{}", native.text);
            let back = (sky.import)(&native.text).map_err(|e| TestCaseError::fail(format!("{e}\n{}", native.text)))?;
            prop_assert_eq!(&back.spec, &spec, "{}", native.text);
        }

        #[test]
        fn dstack_carries_what_it_can_exactly(
            spec in common(),
            name in "[a-z][a-z0-9-]{1,40}",
            fleet in prop::option::of(line()),
            limit in prop::option::of(duration()),
            origin in prop::option::of("[a-zA-Z0-9 .:/=_+@-]{1,40}"),
        ) {
            let spec = JobSpec { name, partition: fleet, time_limit: limit, migrated_from: origin, ..spec };
            let d = dialect("dstack");
            let native = (d.export)(&spec).unwrap();
            prop_assert_eq!(claimed_by(&native.text), vec![flightdeck::backend::dstack::dialect::DSTACK_RUN_SPEC], "{}", native.text);
            let back = (d.import)(&native.text).map_err(|e| TestCaseError::fail(format!("{e}\n{}", native.text)))?;
            prop_assert_eq!(&back.spec, &spec, "{}", native.text);
        }

        #[test]
        fn any_name_becomes_a_native_name_once(name in line()) {
            for d in [dialect("skypilot"), dialect("dstack")] {
                let spec = JobSpec { name: name.clone(), command: Some("true".into()), ..JobSpec::default() };
                let exported = (d.export)(&spec).unwrap();
                let first = (d.import)(&exported.text).unwrap().spec;
                prop_assert_eq!(first.name == name, !exported.warnings.iter().any(|w| w.starts_with("`name`")));
                let second = (d.import)(&(d.export)(&first).unwrap().text).unwrap().spec;
                prop_assert_eq!(first, second);
            }
        }

        #[test]
        fn no_text_panics_a_detector_or_an_importer(text in "\\PC{0,200}") {
            for d in [dialect("skypilot"), dialect("dstack")] {
                let _ = (d.detect)(&text);
                if let Ok(imported) = (d.import)(&text) {
                    prop_assert!(imported.spec.validate().is_ok());
                }
            }
        }

        #[test]
        fn no_task_shape_panics_an_importer(doc in hostile_doc()) {
            let text = serde_json::to_string(&doc).unwrap();
            for d in [dialect("skypilot"), dialect("dstack")] {
                let _ = (d.detect)(&text);
                if let Ok(imported) = (d.import)(&text) {
                    prop_assert!(imported.spec.validate().is_ok(), "{:?}", imported.spec);
                }
            }
        }
    }

    /// JSON (which is YAML) shaped like a task or a run spec, with any values where the
    /// importers read numbers, counts, ranges and names.
    fn hostile_doc() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::{Map, Value};
        let key = prop_oneof![
            Just("run".to_string()),
            Just("setup".to_string()),
            Just("name".to_string()),
            Just("envs".to_string()),
            Just("env".to_string()),
            Just("num_nodes".to_string()),
            Just("nodes".to_string()),
            Just("resources".to_string()),
            Just("accelerators".to_string()),
            Just("gpu".to_string()),
            Just("cpu".to_string()),
            Just("cpus".to_string()),
            Just("memory".to_string()),
            Just("count".to_string()),
            Just("min".to_string()),
            Just("max".to_string()),
            Just("any_of".to_string()),
            Just("commands".to_string()),
            Just("max_duration".to_string()),
            Just("fleets".to_string()),
            Just("tags".to_string()),
            Just("image_id".to_string()),
            Just("configuration".to_string()),
            "[a-zA-Z_]{1,8}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            prop_oneof![
                Just("task".to_string()),
                Just("H100:1e308".to_string()),
                Just("nvidia:24GB..:..".to_string()),
                Just("99999999999999999999+".to_string()),
                Just("-1..".to_string()),
                Just("1e400GB..".to_string()),
                Just("docker:".to_string()),
                Just("NaN".to_string()),
                Just("inf".to_string()),
                Just("1w".to_string()),
                ".{0,16}",
            ]
            .prop_map(Value::String),
        ];
        let tree = leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            ]
        });
        (tree, prop_oneof![Just(None), Just(Some("task")), Just(Some("service"))], any::<bool>()).prop_map(
            |(tree, kind, wrap)| {
                let mut doc = match tree {
                    Value::Object(m) => m,
                    other => Map::from_iter([("run".to_string(), other)]),
                };
                if let Some(kind) = kind {
                    doc.insert("type".into(), Value::from(kind));
                }
                if wrap {
                    Value::Object(Map::from_iter([("configuration".to_string(), Value::Object(doc))]))
                } else {
                    Value::Object(doc)
                }
            },
        )
    }
}
