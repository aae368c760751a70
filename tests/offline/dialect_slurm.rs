//! The sbatch dialect offline: real-looking scripts (`tests/fixtures/dialects/slurm/`) read
//! into job specs with hand-checked values and warnings, written back and read again to the
//! same spec (the real `sbatch` reading them back is `bed::sbatch_real`); detection
//! of scripts and nothing else; property tests that no input panics the reader and that
//! whatever it reads survives a trip through the writer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use flightdeck::backend::slurm::dialect::{detect, export, import};
use flightdeck::backend::slurm::script::split_directive;
use flightdeck::spec::{Imported, JobSpec};
use proptest::prelude::*;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dialects/slurm")
}

fn fixtures() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sbatch"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    assert!(out.len() >= 8, "fixtures missing: {out:?}");
    out
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(name)).unwrap()
}

fn imported(name: &str) -> Imported {
    import(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `import` → `export` → `import`, checked to give the same spec; returns both and the text.
fn round_trip(text: &str) -> (Imported, String, Imported) {
    let first = import(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let native = export(&first.spec).unwrap_or_else(|e| panic!("{e}\n{:?}", first.spec));
    assert_eq!(native.dialect, flightdeck::backend::slurm::dialect::SBATCH);
    let second = import(&native.text).unwrap_or_else(|e| panic!("{e}\n{}", native.text));
    assert_eq!(second.spec, first.spec, "a second import differs; the exported script:\n{}", native.text);
    // And the writer is at a fixed point from there on.
    assert_eq!(export(&second.spec).unwrap().text, native.text);
    (first, native.text, second)
}

fn has_warning(i: &Imported, words: &[&str]) -> bool {
    i.warnings.iter().any(|w| words.iter().all(|word| w.contains(word)))
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn gres_with_a_model_and_env_through_export() {
    let i = imported("gres_a100_export.sbatch");
    let s = &i.spec;
    assert_eq!(s.name, "finetune-llama");
    assert_eq!((s.partition.as_deref(), s.account.as_deref()), (Some("gpu"), Some("ml-research")));
    assert_eq!((s.gpus, s.gpu_type.as_deref(), s.cpus), (4, Some("a100"), Some(32)));
    assert_eq!((s.memory.as_deref(), s.time_limit.as_deref()), (Some("256G"), Some("1d12h")));
    assert_eq!(s.workdir.as_deref(), Some("/scratch/alice/finetune"));
    assert_eq!(s.env, env(&[("WANDB_MODE", "offline"), ("HF_HOME", "/scratch/alice/hf"), ("NCCL_DEBUG", "INFO")]));
    assert_eq!(s.command, None);
    let script = s.script.as_deref().unwrap();
    assert!(script.starts_with(
        "#!/bin/bash\n#SBATCH --output=logs/%x-%j.out\n#SBATCH --mail-type=END,FAIL\n#SBATCH --mail-user=alice@example.org\n\n# Fine-tune"
    ), "{script}");
    assert!(script.ends_with("    --epochs 3\n"));
    assert_eq!(i.warnings.len(), 3, "{:?}", i.warnings);
    assert!(has_warning(&i, &["#SBATCH --output=logs/%x-%j.out (line 11)", "--output has no portable form", "kept"]));
    assert!(has_warning(&i, &["#SBATCH --mail-type=END,FAIL (line 12)"]));
    assert!(has_warning(&i, &["#SBATCH --mail-user=alice@example.org (line 13)"]));
}

#[test]
fn gpus_per_node_on_several_nodes() {
    let i = imported("gpus_per_node_multinode.sbatch");
    let s = &i.spec;
    assert_eq!((s.name.as_str(), s.partition.as_deref()), ("ddp-h100", Some("gpu")));
    assert_eq!((s.nodes, s.tasks_per_node, s.cpus), (Some(2), Some(4), Some(16)));
    assert_eq!((s.gpus, s.gpu_type.as_deref()), (4, Some("h100")));
    assert_eq!((s.memory.as_deref(), s.time_limit.as_deref()), (Some("480G"), Some("2d12h")));
    // Its exports are not flightdeck's form (a command substitution, a bare word): script.
    assert!(s.env.is_empty());
    assert!(s.script.as_deref().unwrap().starts_with("#!/bin/bash -l\n#SBATCH --exclusive\n#SBATCH --constraint=ib\n"));
    assert!(has_warning(&i, &["--exclusive (line 10)"]) && has_warning(&i, &["--constraint=ib (line 11)"]));
    assert!(has_warning(&i, &["-o %x-%j.log (line 12)"]));
}

#[test]
fn arrays_with_a_limit_and_memory_per_cpu() {
    let i = imported("array_throttle.sbatch");
    let s = &i.spec;
    assert_eq!(s.array.as_deref(), Some("0-99%10"));
    assert_eq!((s.gpus, s.gpu_type.as_deref(), s.cpus), (1, None, Some(4)));
    assert_eq!(s.memory.as_deref(), Some("16G"), "4G per CPU × 4 CPUs");
    assert!(has_warning(&i, &["--mem-per-cpu=4G (line 6)", "converted", "4G per CPU × 4 = 16G"]), "{:?}", i.warnings);
    assert_eq!(s.time_limit.as_deref(), Some("45m30s"), "MM:SS");
    assert!(has_warning(&i, &["--requeue (line 9)"]));
}

#[test]
fn a_pyxis_image_and_the_migration_tag() {
    let i = imported("pyxis_container.sbatch");
    let s = &i.spec;
    assert_eq!(
        (s.name.as_str(), s.account.as_deref(), s.partition.as_deref()),
        ("nemo-pretrain", Some("proj42"), Some("batch"))
    );
    assert_eq!((s.nodes, s.tasks_per_node, s.gpus, s.gpu_type.as_deref()), (Some(4), Some(8), 8, None));
    assert_eq!(s.time_limit.as_deref(), Some("4h"));
    assert_eq!(s.image.as_deref(), Some("nvcr.io#nvidia/nemo:24.05"));
    assert_eq!(s.migrated_from.as_deref(), Some("hpc/4711"));
    assert!(has_warning(&i, &["--container-mounts=/lustre/proj42:/workspace/data (line 7)"]));
    let native = export(s).unwrap();
    assert!(native.text.contains("\n#SBATCH --container-image=\"nvcr.io\\#nvidia/nemo:24.05\"\n"), "{}", native.text);
    assert!(native.text.contains("\n#SBATCH --comment=flightdeck-migrated-from=hpc/4711\n"));
    assert!(native.warnings.iter().any(|w| w.contains("`image`") && w.contains("pyxis")), "{:?}", native.warnings);
}

#[test]
fn a_hostile_name_and_quoted_values_are_read_exactly() {
    let i = imported("hostile_name.sbatch");
    let s = &i.spec;
    assert_eq!(s.name, "x'; touch /tmp/pwned; echo '$(id)");
    assert_eq!(s.workdir.as_deref(), Some("/tmp/dir with spaces"));
    assert_eq!(s.time_limit.as_deref(), Some("1h30m"));
    assert_eq!((s.gpus, s.gpu_type.as_deref()), (1, Some("h100")));
    assert_eq!(s.migrated_from, None, "another comment is not the tag");
    assert!(has_warning(
        &i,
        &["--comment nightly \"build\" # not a comment (line 5)", "a comment has no portable form"]
    ));
    assert_eq!(
        s.script.as_deref(),
        Some("#!/bin/sh\n#SBATCH --comment \"nightly \\\"build\\\" # not a comment\"\n\necho \"$SLURM_JOB_NAME\"\n")
    );
    let (_, text, _) = round_trip(&fixture("hostile_name.sbatch"));
    assert!(text.contains("#SBATCH --job-name=\"x'; touch /tmp/pwned; echo '$(id)\"\n"), "{text}");
}

#[test]
fn total_gpus_node_ranges_and_unknown_options() {
    let i = imported("total_gpus_unknown_options.sbatch");
    let s = &i.spec;
    assert_eq!(s.nodes, Some(2));
    assert!(has_warning(&i, &["--nodes=2-4 (line 4)", "node range", "asks for 2", "kept"]));
    assert_eq!((s.gpus, s.gpu_type.as_deref()), (4, Some("l40s")), "8 over the least nodes");
    assert!(has_warning(&i, &["--qos=high (line 6)"]) && has_warning(&i, &["--nice=100 (line 6)"]));
    assert!(has_warning(&i, &["--site-plugin-opt=fast (line 7)", "not an sbatch option flightdeck knows"]));
    assert!(has_warning(&i, &["--dependency=afterok:1234 (line 8)"]) && has_warning(&i, &["-e bench-%j.err (line 9)"]));
    assert!(has_warning(&i, &["--hold (line 11)"]));
    assert_eq!(s.env, env(&[("OMP_NUM_THREADS", "8")]), "flightdeck's own export form");
    assert_eq!(
        s.script.as_deref(),
        Some(
            "#!/bin/bash\n# Site template v3\n#SBATCH --nodes=2-4\n#SBATCH --qos=high --nice=100\n#SBATCH --site-plugin-opt=fast\n\
             #SBATCH --dependency=afterok:1234\n#SBATCH -e bench-%j.err\n\n#SBATCH --hold\nsrun ./bench\n"
        )
    );
}

#[test]
fn a_python_script_keeps_its_export_directive() {
    let i = imported("python_export.sbatch");
    assert!(i.spec.env.is_empty());
    assert!(
        i.spec
            .script
            .as_deref()
            .unwrap()
            .starts_with("#!/usr/bin/env python3\n#SBATCH --export=ALL,PYTHONUNBUFFERED=1\n")
    );
    assert!(has_warning(&i, &["--export=ALL,PYTHONUNBUFFERED=1 (line 3)", "not a shell script"]));
    assert_eq!(i.spec.time_limit.as_deref(), Some("10m"));
}

#[test]
fn defaults_are_said() {
    let i = imported("no_shebang_no_name.sbatch");
    assert_eq!(i.spec.name, "sbatch");
    assert!(has_warning(&i, &["no --job-name", "\"sbatch\""]));
    assert!(has_warning(&i, &["no #! line", "/bin/bash"]));
    assert_eq!(i.spec.script.as_deref(), Some("#!/bin/bash\nhostname\n"));
    assert_eq!(
        (i.spec.partition.as_deref(), i.spec.nodes, i.spec.time_limit.as_deref()),
        (Some("debug"), Some(1), Some("30s"))
    );
}

#[test]
fn every_fixture_round_trips() {
    for (name, text) in fixtures() {
        assert!(detect(&text), "{name} not detected");
        let (first, exported, second) = round_trip(&text);
        assert_eq!(first.spec.validate().map_err(|e| e.to_string()), Ok(()), "{name}");
        // What stayed in the script came through untouched, and no new warnings appeared
        // beyond those about what stayed.
        for w in &second.warnings {
            assert!(first.warnings.contains(w) || w.contains("kept in the script"), "{name}: new warning {w}");
        }
        assert!(exported.starts_with("#!"), "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// Detection

#[test]
fn detection_claims_scripts_and_no_other_job_form() {
    for yes in [
        "#!/bin/bash\necho hi\n",
        "#SBATCH --nodes=1\nhostname\n",
        "\n# job\n#SBATCH -J x\nsrun x\n",
        "#!/usr/bin/env python3\nprint(1)\n",
    ] {
        assert!(detect(yes), "{yes:?}");
    }
    let kube = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec:\n  template:\n    spec:\n      containers:\n      - name: main\n        image: busybox\n        command: [\"sh\", \"-c\", \"#SBATCH\"]\n";
    let skypilot = "name: train\nresources:\n  accelerators: A100:4\nrun: |\n  #SBATCH --nodes=1\n  python train.py\n";
    let skypilot_commented = "# SkyPilot task\nresources:\n  accelerators: H100:8\nrun: python train.py\n";
    let dstack = "type: task\nname: train\ncommands:\n  - python train.py\nresources:\n  gpu: 24GB\n";
    let toml =
        "name = \"train\"\nscript = \"\"\"\n#!/bin/bash\n#SBATCH --gres=gpu:1\npython train.py\n\"\"\"\ngpus = 1\n";
    let toml_commented = "# a portable spec\n\nname = \"x\"\ncommand = \"true\"\n";
    let json = "{\"apiVersion\": \"batch/v1\", \"kind\": \"Job\"}\n";
    for no in [
        kube,
        skypilot,
        skypilot_commented,
        dstack,
        toml,
        toml_commented,
        json,
        "",
        "\n\n",
        "echo\n#SBATCH -N 1\n",
        " #SBATCH -N 1\n",
    ] {
        assert!(!detect(no), "{no:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Property tests

/// Words a directive line may hold: options flightdeck reads and some it keeps, values
/// with every character sbatch's splitter treats specially, and stray words.
fn directive_word() -> impl Strategy<Value = String> {
    let option = prop::sample::select(vec![
        "--job-name",
        "-J",
        "--partition",
        "-p",
        "--account",
        "-A",
        "--nodes",
        "-N",
        "--ntasks-per-node",
        "-c",
        "--cpus-per-task",
        "--gres",
        "--gpus",
        "-G",
        "--gpus-per-node",
        "--time",
        "-t",
        "--mem",
        "--mem-per-cpu",
        "--mem-per-gpu",
        "--chdir",
        "-D",
        "--export",
        "--container-image",
        "--array",
        "-a",
        "--comment",
        "--ntasks",
        "--mail-type",
        "-o",
        "--exclusive",
        "--hold",
        "-H",
        "--qos",
        "--part",
        "--x-unknown",
        "--",
        "-Hc",
    ]);
    let value = prop::sample::select(vec![
        "1",
        "2-4",
        "0",
        "gpu:a100:2",
        "gpu:2,nvme:1",
        "a100:3",
        "1-00:00:00",
        "90",
        "45:30",
        "UNLIMITED",
        "32G",
        "4G",
        "0-9%2",
        "ALL,A=b",
        "NONE",
        "/tmp/x",
        "rel",
        "flightdeck-migrated-from=hpc/1",
        "x y",
    ]);
    let raw = "[ -~\\t\u{e9}]{0,12}";
    prop_oneof![
        1 => option.clone().prop_map(str::to_string),
        4 => (option.clone(), value.clone()).prop_map(|(o, v)| format!("{o}={v}")),
        2 => (option.clone(), value).prop_map(|(o, v)| format!("{o} {v}")),
        1 => (option, raw).prop_map(|(o, v)| format!("{o}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))),
        1 => raw.prop_map(|s| s.to_string()),
    ]
}

fn directive_script() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        6 => prop::collection::vec(directive_word(), 0..4).prop_map(|w| format!("#SBATCH {}", w.join(" "))),
        1 => "[ -~]{0,20}".prop_map(|s| format!("# {s}")),
        1 => Just(String::new()),
    ];
    let export = prop_oneof![
        "[a-z]{1,8}=[ -~]{0,8}".prop_map(|s| format!("export {s}\n")),
        ("[a-zA-Z_]{1,6}", "[ -~\n]{0,8}").prop_map(|(k, v)| format!("export {k}='{}'\n", v.replace('\'', "'\\''"))),
    ];
    let shebang = prop::sample::select(vec!["#!/bin/bash\n", "#!/bin/sh\n", "#!/usr/bin/env python3\n", ""]);
    (shebang, prop::collection::vec(line, 0..8), prop::collection::vec(export, 0..3), "[ -~\n]{0,30}")
        .prop_map(|(s, lines, exports, body)| format!("{s}{}\n{}{body}", lines.join("\n"), exports.concat()))
}

/// The round-trip property below is not vacuous: a good share of the generated scripts read.
#[test]
fn generated_directive_scripts_often_read() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = directive_script();
    let (mut read, mut taken) = (0, 0);
    for _ in 0..500 {
        let text = strategy.new_tree(&mut runner).unwrap().current();
        if let Ok(i) = import(&text) {
            read += 1;
            if i.spec != (JobSpec { name: i.spec.name.clone(), script: i.spec.script.clone(), ..JobSpec::default() }) {
                taken += 1;
            }
        }
    }
    assert!(read >= 100 && taken >= 40, "{read} of 500 read, {taken} with fields");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        let _ = detect(&text);
        let _ = import(&text);
        let _ = split_directive(&text);
    }

    #[test]
    fn arbitrary_bytes_as_text_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = detect(&text);
        let _ = import(&text);
    }

    /// Whatever reads as a spec is a valid one, and writing it and reading it back gives
    /// the same spec again.
    #[test]
    fn directive_scripts_read_or_refuse_and_survive_a_trip(text in directive_script()) {
        if let Ok(first) = import(&text) {
            prop_assert!(first.spec.validate().is_ok());
            let native = export(&first.spec);
            prop_assert!(native.is_ok(), "{:?}\n{:?}", native, first.spec);
            let native = native.unwrap();
            let second = import(&native.text);
            prop_assert!(second.is_ok(), "{:?}\n{}", second, native.text);
            prop_assert_eq!(&second.unwrap().spec, &first.spec, "{}", native.text);
        }
    }

    /// Any spec flightdeck can write reads back as itself.
    #[test]
    fn specs_survive_a_trip(
        name in "[ -~]{1,16}",
        partition in proptest::option::of("[a-z][a-z0-9,]{0,6}"),
        gpus in 0u32..9,
        gpu_type in proptest::option::of("[a-z0-9][a-z0-9._-]{0,8}"),
        cpus in proptest::option::of(1u32..64),
        nodes in proptest::option::of(1u32..9),
        tasks in proptest::option::of(1u32..9),
        mem in proptest::option::of(1u64..1_000_000),
        time in proptest::option::of(1u64..10_000_000),
        env_value in "[ -~\\n]{0,12}",
        workdir in proptest::option::of("/[ -~]{0,12}"),
        array in proptest::option::of(prop::sample::select(vec!["0-9", "1,3,5-7", "0-20:2", "0-99%10"])),
        origin in proptest::option::of("[a-z]{1,5}/[0-9]{1,5}"),
        body in "[a-z][ -~\\n]{0,39}",
    ) {
        let spec = JobSpec {
            name: name.trim().to_string(),
            script: Some(format!("#!/bin/bash\n{body}")),
            gpus,
            gpu_type: gpu_type.filter(|_| gpus > 0),
            cpus,
            nodes,
            tasks_per_node: tasks,
            memory: mem.map(|m| format!("{m}M")),
            time_limit: time.map(|t| format!("{t}s")),
            partition,
            workdir,
            array: array.map(str::to_string),
            migrated_from: origin,
            env: [("SOME_VAR".to_string(), env_value)].into_iter().collect(),
            ..JobSpec::default()
        };
        prop_assume!(spec.validate().is_ok());
        let native = export(&spec).unwrap();
        let back = import(&native.text);
        prop_assert!(back.is_ok(), "{:?}\n{}", back, native.text);
        let back = back.unwrap().spec;
        prop_assert_eq!(&back.name, &spec.name);
        prop_assert_eq!((back.gpus, &back.gpu_type, back.cpus, back.nodes, back.tasks_per_node), (spec.gpus, &spec.gpu_type, spec.cpus, spec.nodes, spec.tasks_per_node));
        prop_assert_eq!(back.memory_mb(), spec.memory_mb());
        // Slurm counts whole minutes; the writer writes seconds, which the reader reads back.
        prop_assert_eq!(back.time_limit_secs(), spec.time_limit_secs());
        prop_assert_eq!((&back.partition, &back.workdir, &back.array, &back.migrated_from, &back.env), (&spec.partition, &spec.workdir, &spec.array, &spec.migrated_from, &spec.env));
    }
}
