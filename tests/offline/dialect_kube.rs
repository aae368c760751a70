//! The Kubernetes dialect (a `batch/v1` Job manifest, YAML or JSON) offline: detection,
//! import of hand-written and server-made manifests into the spec each is checked against
//! (`tests/fixtures/dialects/kubernetes/NAME.toml`, written by hand), export, and round trips
//! import → export → import that must give the same spec; property tests that no text
//! panics the reader and that whatever it reads survives the trip.

use std::path::{Path, PathBuf};

use flightdeck::backend::Registry;
use flightdeck::backend::kube::dialect;
use flightdeck::model::Native;
use flightdeck::spec::{Imported, JobSpec};
use k8s_openapi::api::core::v1::Pod;
use proptest::prelude::*;
use serde_json::{Value, json};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dialects/kubernetes");

/// Fixtures that are Jobs flightdeck reads (the others are refused on purpose).
const READABLE: [&str; 7] = [
    "gpu-product.yaml",
    "mig.json",
    "indexed-array.yaml",
    "amd-script.yaml",
    "hostile.yaml",
    "flightdeck-made.yaml",
    "everything-else.yaml",
];

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn imported(name: &str) -> Imported {
    dialect::import(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The spec a fixture must read as, from the TOML beside it.
fn expected(name: &str) -> JobSpec {
    let toml = Path::new(name).with_extension("toml");
    let toml = toml.to_str().unwrap();
    JobSpec::from_toml_str(&fixture(toml), &path(toml)).unwrap_or_else(|e| panic!("{e}"))
}

fn warned(warnings: &[String], prefix: &str) -> bool {
    warnings.iter().any(|w| w.starts_with(prefix))
}

/// export → import gives the spec back, and exporting that gives the same text.
fn round_trip(spec: &JobSpec) -> Native {
    let native = dialect::export(spec).unwrap_or_else(|e| panic!("export of {spec:?}: {e}"));
    assert_eq!(native.dialect, flightdeck::backend::kube::dialect::KUBERNETES_JOB);
    assert!(dialect::detect(&native.text), "an export is detected:\n{}", native.text);
    let back = dialect::import(&native.text).unwrap_or_else(|e| panic!("import of\n{}\n: {e}", native.text));
    assert_eq!(&back.spec, spec, "through\n{}", native.text);
    assert!(back.warnings.is_empty(), "an export reads back without warnings: {:?}\n{}", back.warnings, native.text);
    let again = dialect::export(&back.spec).unwrap();
    assert_eq!(again.text, native.text);
    native
}

/// A Job manifest around one container (JSON text).
fn job_with(container: Value) -> String {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}
    })
    .to_string()
}

fn spec_of_argv(command: Value, args: Option<Value>) -> JobSpec {
    let mut c = json!({"name": "main", "image": "busybox", "command": command});
    if let Some(args) = args {
        c["args"] = args;
    }
    dialect::import(&job_with(c)).unwrap_or_else(|e| panic!("{e}")).spec
}

#[test]
fn fixtures_read_as_their_hand_written_specs() {
    for name in READABLE {
        let got = imported(name);
        if name == "mig.json" {
            continue; // checked field by field below
        }
        assert_eq!(got.spec, expected(name), "{name}; warnings {:?}", got.warnings);
    }
}

#[test]
fn every_readable_fixture_round_trips() {
    for name in READABLE {
        let first = imported(name);
        round_trip(&first.spec);
    }
}

#[test]
fn plain_manifests_read_without_warnings() {
    for name in ["gpu-product.yaml", "indexed-array.yaml", "amd-script.yaml", "hostile.yaml"] {
        let got = imported(name);
        assert!(got.warnings.is_empty(), "{name}: {:?}", got.warnings);
    }
}

#[test]
fn a_job_flightdeck_made_reads_back_as_its_spec_without_warnings() {
    let got = imported("flightdeck-made.yaml");
    assert_eq!(got.spec.name, "Fine-tune 7B", "the suffix is taken off, the written name used");
    assert_eq!(got.spec.migrated_from.as_deref(), Some("hpc/88123"));
    assert!(got.warnings.is_empty(), "server defaults and bookkeeping are no warnings: {:?}", got.warnings);

    // The suffix comes off only where flightdeck said it put one.
    let text = fixture("flightdeck-made.yaml").replace("    flightdeck.io/name-suffix: x7k2p\n", "");
    let got = dialect::import(&text).unwrap();
    assert_eq!(got.spec.name, "fine-tune-7b-x7k2p");
    assert!(
        warned(&got.warnings, "`metadata.annotations.flightdeck.io/name`: \"Fine-tune 7B\" is not the name"),
        "{:?}",
        got.warnings
    );
    // A renamed Job keeps its new name.
    let text = fixture("flightdeck-made.yaml")
        .replace("name: fine-tune-7b-x7k2p\n  namespace", "name: other-x7k2p\n  namespace");
    assert_eq!(dialect::import(&text).unwrap().spec.name, "other");
}

#[test]
fn mig_json_reads_argv_mig_and_decimal_quantities() {
    let got = imported("mig.json");
    let s = &got.spec;
    assert_eq!(s.name, "eval-mmlu");
    assert_eq!((s.gpus, s.gpu_type.as_deref()), (1, Some("1g.10gb")));
    assert_eq!(s.cpus, Some(4), "3500m rounded up");
    // 40G = 40,000,000,000 bytes = 38,146.97 MiB.
    assert_eq!(s.memory.as_deref(), Some("38147M"));
    assert_eq!(s.time_limit.as_deref(), Some("1h30m"));
    assert_eq!(s.image.as_deref(), Some("ghcr.io/example/eval:1.4"));
    assert_eq!(
        shlex::split(s.command.as_deref().unwrap()).unwrap(),
        ["python", "-m", "eval.run", "--tasks", "mmlu,gsm8k", "--output", "/results/run 1", "--note", "it's $HOME"]
    );
    assert!(
        warned(
            &got.warnings,
            "`spec.template.spec.containers[0].resources.requests.cpu`: \"3500m\": the spec counts whole CPUs; rounded up to 4"
        ),
        "{:?}",
        got.warnings
    );
    assert!(
        warned(
            &got.warnings,
            "`spec.template.spec.containers[0].resources.limits.memory`: \"40G\" is not a whole number of MiB; rounded up to 38147M"
        ),
        "{:?}",
        got.warnings
    );
    assert_eq!(got.warnings.len(), 2, "{:?}", got.warnings);
}

#[test]
fn what_has_no_portable_form_is_named_once_each() {
    let got = imported("everything-else.yaml");
    assert_eq!(got.spec, expected("everything-else.yaml"));
    let w = &got.warnings;
    for prefix in [
        "`metadata.labels`: \"team\" has no portable form",
        "`metadata.annotations`: \"owner\" has no portable form",
        "`spec.backoffLimit`: failed pods are retried up to 3 times here",
        "`spec.ttlSecondsAfterFinished`: 600: no portable form; dropped",
        "`spec.podFailurePolicy`: \"rules\": no portable form; dropped",
        "`spec.template.metadata.labels`: \"sidecar.istio.io/inject\" has no portable form",
        "`spec.template.spec.restartPolicy`: \"OnFailure\": the container is started again",
        "`spec.template.spec.serviceAccountName`: \"etl-runner\": no portable form",
        "`spec.template.spec.priorityClassName`: \"batch-low\"",
        "`spec.template.spec.imagePullSecrets`: \"regcred\"",
        "`spec.template.spec.securityContext`: \"fsGroup\", \"runAsUser\"",
        "`spec.template.spec.nodeSelector`: \"topology.kubernetes.io/zone\" has no portable form",
        "`spec.template.spec.affinity`: \"podAntiAffinity\": no portable form",
        "`spec.template.spec.tolerations`: 1 entry: no portable form",
        "`spec.template.spec.volumes`: \"data\", \"scratch\": no portable form",
        "`spec.template.spec.initContainers`: \"fetch\": no portable form",
        "`spec.template.spec.containers`: only the first container (\"prep\") is carried; \"log-shipper\" dropped",
        "`spec.template.spec.containers[0].ports`: \"metrics\"",
        "`spec.template.spec.containers[0].envFrom`: 1 entry",
        "`spec.template.spec.containers[0].env.DB_PASSWORD`: set from secretKeyRef (valueFrom)",
        "`spec.template.spec.containers[0].env.MY-VAR`: not a portable variable name",
        "`spec.template.spec.containers[0].volumeMounts`: \"data\": no portable form",
        "`spec.template.spec.containers[0].resources.limits.cpu`: a cap of \"4\" CPUs",
        "`spec.template.spec.containers[0].resources.requests.ephemeral-storage`: \"10Gi\" has no portable form",
    ] {
        assert!(warned(w, prefix), "no warning {prefix:?} in\n{}", w.join("\n"));
    }
    assert_eq!(w.len(), 24, "one warning per field:\n{}", w.join("\n"));
}

#[test]
fn a_bare_pod_reads_like_a_job_without_its_admission_defaults() {
    let pod: Pod = serde_json::from_str(&fixture("bare-pod.json")).unwrap();
    let got = dialect::import_pod(&pod).unwrap();
    let want = JobSpec {
        name: "debug-gpu".into(),
        command: Some("nvidia-smi -L".into()),
        gpus: 1,
        account: Some("research".into()),
        image: Some("nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04".into()),
        migrated_from: Some("hpc/31337".into()),
        ..JobSpec::default()
    };
    assert_eq!(got.spec, want);
    assert!(got.warnings.is_empty(), "token volume, default tolerations, node name: {:?}", got.warnings);
    // The pod is no Job manifest for a file.
    assert!(!dialect::detect(&fixture("bare-pod.json")));
}

#[test]
fn container_command_forms() {
    let command = |argv: Value, args: Option<Value>| spec_of_argv(argv, args).command;
    let script = |argv: Value, args: Option<Value>| spec_of_argv(argv, args).script;
    // `sh -c LINE`, in one list or split into command and args: the line itself.
    assert_eq!(command(json!(["/bin/sh", "-c", "echo $HOME && ls"]), None).as_deref(), Some("echo $HOME && ls"));
    assert_eq!(command(json!(["sh", "-c"]), Some(json!(["make -j8"]))).as_deref(), Some("make -j8"));
    // Another shell keeps its shell as a #! line.
    assert_eq!(
        script(json!(["/bin/bash", "-c", "[[ -f x ]] && echo y"]), None).as_deref(),
        Some("#!/bin/bash\n[[ -f x ]] && echo y")
    );
    assert_eq!(script(json!(["zsh", "-c", "print -l a b"]), None).as_deref(), Some("#!/usr/bin/env zsh\nprint -l a b"));
    // A script under the interpreter its #! line names.
    assert_eq!(
        script(json!(["/bin/bash", "-c", "#!/bin/bash\necho hi\n"]), None).as_deref(),
        Some("#!/bin/bash\necho hi\n")
    );
    // ... but not when the #! line names something else: under sh it is a comment.
    assert_eq!(
        command(json!(["/bin/sh", "-c", "#!/bin/bash\necho hi"]), None).as_deref(),
        Some("#!/bin/bash\necho hi")
    );
    // Flags beside -c, positional parameters, plain programs: the argv, quoted.
    assert_eq!(
        command(json!(["bash", "-lc", "conda activate x && python t.py"]), None).as_deref(),
        Some("bash -lc 'conda activate x && python t.py'")
    );
    assert_eq!(
        command(json!(["sh", "-c", "echo $0 $1", "a", "b c"]), None).as_deref(),
        Some("sh -c 'echo $0 $1' a 'b c'")
    );
    assert_eq!(
        command(json!(["python"]), Some(json!(["train.py", "--lr", "3e-4"]))).as_deref(),
        Some("python train.py --lr 3e-4")
    );
    assert_eq!(command(json!(["echo", ""]), None).as_deref(), Some("echo ''"));
}

/// The quoted command line runs the argv: what `sh -c LINE` prints is what the program
/// prints when it is started with the argv itself.
#[test]
fn hostile_argv_is_quoted_so_a_shell_runs_exactly_it() {
    let text = fixture("hostile.yaml");
    let got = dialect::import(&text).unwrap();
    assert_eq!(got.spec.name, "x'; touch /tmp/pwned; echo '$(id)");
    let line = got.spec.command.clone().unwrap();
    let doc: Value = serde_saphyr::from_str(&text).unwrap();
    let argv: Vec<String> =
        serde_json::from_value(doc["spec"]["template"]["spec"]["containers"][0]["command"].clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let direct = std::process::Command::new(&argv[0]).args(&argv[1..]).current_dir(dir.path()).output().unwrap();
    let shell = std::process::Command::new("/bin/sh").arg("-c").arg(&line).current_dir(dir.path()).output().unwrap();
    assert!(direct.status.success() && shell.status.success(), "{line}");
    assert_eq!(String::from_utf8_lossy(&shell.stdout), String::from_utf8_lossy(&direct.stdout), "{line}");
    assert!(String::from_utf8_lossy(&direct.stdout).contains("$(id)"), "printed, not run");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing ran that writes");

    // The export carries the same text, escaped for YAML: no raw control characters.
    let native = round_trip(&got.spec);
    assert!(!native.text.contains('\u{1b}'), "{}", native.text);
    assert!(
        warned(
            &native.warnings,
            "`name`: \"x'; touch /tmp/pwned; echo '$(id)\" is not a Kubernetes name; the Job is named x-touch-tmp-pwned-echo-id"
        ),
        "{:?}",
        native.warnings
    );
}

#[test]
fn detection_is_for_batch_v1_jobs_only() {
    for name in READABLE {
        assert!(dialect::detect(&fixture(name)), "{name}");
    }
    // Claimed, so that reading them says why not: a List, a stream of documents.
    assert!(dialect::detect(&fixture("list.yaml")));
    assert!(dialect::detect(&fixture("two-documents.yaml")));
    assert!(!dialect::detect(&fixture("cronjob.yaml")));
    let others = [
        // sbatch
        "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --gres=gpu:4\n#SBATCH --time=02:00:00\nsrun python train.py\n",
        "#!/bin/bash\n# apiVersion: batch/v1\n# kind: Job\necho 'kind: Job'\n",
        // SkyPilot task
        "name: train\nresources:\n  accelerators: H100:8\n  cloud: aws\nnum_nodes: 2\nsetup: pip install -r requirements.txt\nrun: |\n  torchrun train.py\n",
        // dstack task
        "type: task\nname: train\nimage: nvcr.io/nvidia/pytorch:24.01-py3\ncommands:\n  - python train.py\nresources:\n  gpu: H100:8\n",
        // the portable TOML
        "name = \"train\"\ncommand = \"python train.py\"\ngpus = 4\n\n[env]\nSEED = \"7\"\n",
        "name = \"kind: Job\"\ncommand = \"apiVersion: batch/v1\"\n",
        // Other Kubernetes objects and near misses.
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
        "apiVersion: batch/v1beta1\nkind: Job\n",
        "apiVersion: batch/v1\nkind: JobSet\n",
        "{\"apiVersion\": \"v1\", \"kind\": \"Job\"}",
        "",
        "---\n",
        "[1, 2, 3]",
    ];
    for text in others {
        assert!(!dialect::detect(text), "claimed: {text:?}");
    }
    assert!(dialect::detect("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\"}"));
    // A Job that does not parse is still claimed, so its reader's error is what is shown.
    let broken = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: [x\n";
    assert!(dialect::detect(broken));
    assert!(dialect::import(broken).unwrap_err().line.is_some());
    assert!(dialect::detect("{\"apiVersion\": \"batch/v1\", \"kind\": \"Job\",,}"));
    assert!(!dialect::detect(
        "#!/bin/bash\ncat <<EOF | kubectl create -f -\napiVersion: batch/v1\nkind: Job\nmetadata: {name: [\nEOF\n"
    ));
    assert!(dialect::detect("\u{feff}apiVersion: batch/v1\nkind: Job\n"));
    // Through the registry: the Kubernetes line claims it.
    let registry = Registry::builtin();
    let found = registry.detect(&fixture("gpu-product.yaml")).expect("a dialect claims it");
    assert_eq!(found.dialect, flightdeck::backend::kube::dialect::KUBERNETES_JOB);
    assert_eq!(
        registry.dialect("kubernetes").map(|d| d.dialect.clone()),
        Some(flightdeck::backend::kube::dialect::KUBERNETES_JOB)
    );
}

#[test]
fn lists_streams_and_other_objects_are_refused_by_what_they_are() {
    let err = dialect::import(&fixture("list.yaml")).unwrap_err().to_string();
    assert!(err.starts_with("a \"List\" of 2 objects: flightdeck reads one Job at a time"), "{err}");
    let err = dialect::import(&fixture("two-documents.yaml")).unwrap_err().to_string();
    assert!(err.starts_with("2 YAML documents: flightdeck reads one Job at a time"), "{err}");
    let err = dialect::import(&fixture("cronjob.yaml")).unwrap_err().to_string();
    assert_eq!(err, "a \"batch/v1\" \"CronJob\", not a batch/v1 Job");
    let err = dialect::import("").unwrap_err().to_string();
    assert_eq!(err, "no Kubernetes object in the text");
    let err = dialect::import("just words").unwrap_err().to_string();
    assert!(err.starts_with("not a Kubernetes object"), "{err}");
}

#[test]
fn import_errors_name_the_problem_and_the_line() {
    let job = |extra: &str| format!("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n{extra}");
    let fail = |text: &str| dialect::import(text).unwrap_err();

    let err = fail(&job(
        "spec:\n  template:\n    spec:\n      containers:\n        - name: main\n          image: busybox\n          args: [serve]\n",
    ));
    assert!(err.to_string().contains("`spec.template.spec.containers[0].command`: not set, so the container runs its image's entrypoint with `args`"), "{err}");
    let err = fail(&job("spec:\n  template:\n    spec:\n      containers: []\n"));
    assert_eq!(err.to_string(), "`spec.template.spec.containers`: the pod has no container");
    let err = fail(&job(
        "spec:\n  completionMode: Indexed\n  template:\n    spec:\n      containers: [{name: m, command: [\"true\"]}]\n",
    ));
    assert!(err.to_string().starts_with("`spec.completions`: an Indexed Job needs"), "{err}");
    let err = fail(&job(
        "spec:\n  completionMode: Indexed\n  completions: 5000000\n  template:\n    spec:\n      containers: [{name: m, command: [\"true\"]}]\n",
    ));
    assert!(err.to_string().starts_with("`spec.completions`: 5000000: "), "{err}");
    let err = fail(&job(
        "spec:\n  template:\n    spec:\n      containers:\n        - name: m\n          command: [\"true\"]\n          env:\n            NAME: value\n",
    ));
    assert_eq!(err.line, Some(12), "{err}");
    assert!(err.to_string().starts_with("line 12: not a valid batch/v1 Job: "), "{err}");
    let err = fail(&job("spec:\n  completions: many\n"));
    assert_eq!(err.line, Some(6), "{err}");
    let err = fail("apiVersion: batch/v1\nkind: Job\nmetadata: {name: [unclosed\n");
    assert!(err.line.is_some() && err.to_string().contains("not valid YAML"), "{err}");
    let err = fail("{\"apiVersion\": \"batch/v1\",\n \"kind\": \"Job\",,}");
    assert_eq!(err.line, Some(2), "{err}");
    assert!(err.to_string().starts_with("line 2: not valid JSON: "), "{err}");
    let err = fail(&job_with(json!({"name": "m", "command": ["echo", "a\u{0}b"]})));
    assert!(err.to_string().contains("NUL"), "{err}");
    let err = fail(&job_with(json!({"name": "m", "command": ["sh", "-c", "   "]})));
    assert!(
        err.to_string().starts_with("`spec.template.spec.containers[0].command` (the spec's `command`): is empty"),
        "{err}"
    );
    let text = job_with(json!({"name": "m", "command": ["true"]})).replace("\"probe\"", "\"a\\u001b[2Jb\"");
    let err = fail(&text);
    assert!(
        err.to_string().starts_with("`metadata.name` (the spec's `name`): contains the control character"),
        "{err}"
    );
    let err = fail(
        "apiVersion: batch/v1\nkind: Job\nspec: {template: {spec: {containers: [{name: m, command: [\"true\"]}]}}}\n",
    );
    assert!(err.to_string().starts_with("`metadata.name`: the Job has no name"), "{err}");
}

/// YAML read without a type turns `N`, `no` and `on` into booleans and `0123` into a number
/// (the "Norway problem"); a Job's string fields keep the text as written.
#[test]
fn yaml_scalars_keep_the_text_a_string_field_was_given() {
    let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      containers:\n        - name: m\n          image: busybox\n          command: [echo, no, 0123, on]\n          env:\n            - {name: N, value: no}\n            - {name: Y, value: on}\n            - {name: OCTAL, value: 0123}\n            - {name: FLOAT, value: 1e3}\n            - {name: NULLISH, value: ~}\n";
    let got = dialect::import(text).unwrap();
    assert_eq!(got.spec.command.as_deref(), Some("echo no 0123 on"));
    let env: Vec<(&str, &str)> = got.spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(env, [("FLOAT", "1e3"), ("N", "no"), ("NULLISH", ""), ("OCTAL", "0123"), ("Y", "on")]);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    // A misspelt field is named, not lost.
    let text =
        text.replace("    spec:\n      containers", "    spec:\n      activeDeadlineSecond: 60\n      containers");
    let got = dialect::import(&text).unwrap();
    assert!(
        warned(&got.warnings, "`spec.template.spec.activeDeadlineSecond`: not a field Kubernetes knows here"),
        "{:?}",
        got.warnings
    );
}

/// The kubelet expands `$(NAME)` in command, args and env values and turns `$$` into `$`:
/// the spec gets what the container gets, and an export escapes so the shell gets the text.
#[test]
fn kubelet_expansion_is_read_as_the_container_sees_it() {
    let c = json!({
        "name": "m",
        "image": "busybox",
        "command": ["sh", "-c", "echo $(GREETING) $$ $$(literal) $(UNKNOWN) $(python -c 'x') $( $"],
        "env": [
            {"name": "WHO", "value": "world"},
            {"name": "GREETING", "value": "hello $(WHO) $(LATER)"},
            {"name": "LATER", "value": "x"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        ],
    });
    let got = dialect::import(&job_with(c.clone())).unwrap();
    assert_eq!(
        got.spec.command.as_deref(),
        Some("echo hello world $(LATER) $ $(literal) $(UNKNOWN) $(python -c 'x') $( $")
    );
    assert_eq!(
        got.spec.env.get("GREETING").map(String::as_str),
        Some("hello world $(LATER)"),
        "only earlier variables"
    );
    let mut with_secret = c;
    with_secret["command"] = json!(["echo", "$(TOKEN)"]);
    let got = dialect::import(&job_with(with_secret)).unwrap();
    assert_eq!(got.spec.command.as_deref(), Some("echo '$(TOKEN)'"));
    assert!(
        warned(
            &got.warnings,
            "`spec.template.spec.containers[0].command`: refers to $(TOKEN), whose value is set at run time"
        ),
        "{:?}",
        got.warnings
    );

    // Exported, the shell's own `$$` and `$(…)` are escaped, and read back unchanged.
    let spec = JobSpec {
        name: "pid".into(),
        command: Some("echo $$ $(date) $$(x) $".into()),
        image: Some("busybox".into()),
        env: [("A".to_string(), "$(B) $$".to_string()), ("B".to_string(), "b".to_string())].into(),
        ..JobSpec::default()
    };
    let native = round_trip(&spec);
    let doc: Value = serde_saphyr::from_str(&native.text).unwrap();
    assert_eq!(doc["spec"]["template"]["spec"]["containers"][0]["command"][2], json!("echo $$$ $$(date) $$$$(x) $"));
    assert_eq!(doc["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"], json!("$$(B) $$$"));
}

#[test]
fn odd_values_become_warnings_not_failures() {
    let c = json!({
        "name": "m",
        "image": "busybox",
        "command": ["true"],
        "resources": {"limits": {"nvidia.com/gpu": "lots", "memory": "0"}, "requests": {"cpu": "-1"}},
    });
    let mut doc: Value = serde_json::from_str(&job_with(c)).unwrap();
    doc["metadata"]["namespace"] = json!("Not_A_Namespace");
    doc["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "bad queue"});
    doc["metadata"]["annotations"] = json!({"flightdeck.io/migrated-from": "a\nb"});
    doc["spec"]["activeDeadlineSeconds"] = json!(-5);
    doc["spec"]["template"]["spec"]["nodeSelector"] = json!({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"});
    let got = dialect::import(&doc.to_string()).unwrap();
    assert_eq!((got.spec.gpus, &got.spec.gpu_type, &got.spec.memory, got.spec.cpus), (0, &None, &None, None));
    assert_eq!(
        (&got.spec.account, &got.spec.partition, &got.spec.migrated_from, &got.spec.time_limit),
        (&None, &None, &None, &None)
    );
    let w = &got.warnings;
    for prefix in [
        "`metadata.namespace`: ",
        "`metadata.labels.kueue.x-k8s.io/queue-name`: ",
        "`metadata.annotations.flightdeck.io/migrated-from`: \"a\\nb\" is no job reference",
        "`spec.activeDeadlineSeconds`: -5 is no time limit",
        "`spec.template.spec.containers[0].resources.limits.nvidia.com/gpu`: \"lots\" is not a Kubernetes quantity",
        "`spec.template.spec.containers[0].resources.limits.memory`: \"0\" is no usable amount",
        "`spec.template.spec.containers[0].resources.requests.cpu`: \"-1\" is not a Kubernetes quantity",
        "`spec.template.spec.nodeSelector.nvidia.com/gpu.product`: a GPU model for a pod that asks for no GPUs",
    ] {
        assert!(warned(w, prefix), "no warning {prefix:?} in\n{}", w.join("\n"));
    }
    round_trip(&got.spec);

    // Several GPU models in the affinity submit writes: the spec names one model.
    let c =
        json!({"name": "m", "image": "busybox", "command": ["true"], "resources": {"limits": {"nvidia.com/gpu": 2}}});
    let mut doc: Value = serde_json::from_str(&job_with(c)).unwrap();
    let affinity = |values: Value| {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": values}]}]}}})
    };
    doc["spec"]["template"]["spec"]["affinity"] = affinity(json!(["NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe"]));
    let got = dialect::import(&doc.to_string()).unwrap();
    assert_eq!(got.spec.gpu_type.as_deref(), Some("h100"), "{:?}", got.warnings);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    doc["spec"]["template"]["spec"]["affinity"] = affinity(json!(["NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"]));
    let got = dialect::import(&doc.to_string()).unwrap();
    assert_eq!(got.spec.gpu_type, None);
    assert!(
        warned(&got.warnings, "`spec.template.spec.affinity`: several GPU models (a100-80gb, h100)"),
        "{:?}",
        got.warnings
    );
}

#[test]
fn export_says_what_it_assumed() {
    let spec = JobSpec {
        name: "Train LLM".into(),
        command: Some("python train.py".into()),
        gpus: 4,
        image: Some("nvcr.io#nvidia/pytorch:24.01-py3".into()),
        ..JobSpec::default()
    };
    let native = dialect::export(&spec).unwrap();
    let doc: Value = serde_saphyr::from_str(&native.text).unwrap();
    assert!(doc["metadata"].get("namespace").is_none(), "kubectl's context picks it");
    assert_eq!(doc["metadata"]["name"], json!("train-llm"));
    assert_eq!(doc["spec"]["template"]["spec"]["containers"][0]["image"], json!("nvcr.io/nvidia/pytorch:24.01-py3"));
    assert_eq!(doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], json!("4"));
    let w = &native.warnings;
    assert!(warned(w, "`account`: not set, so the manifest names no namespace"), "{w:?}");
    assert!(warned(w, "`gpus`: 4 as nvidia.com/gpu limits (NVIDIA's device plugin assumed"), "{w:?}");
    assert!(warned(w, "`name`: \"Train LLM\" is not a Kubernetes name; the Job is named train-llm"), "{w:?}");

    let queued = JobSpec {
        account: Some("ml".into()),
        partition: Some("team-a".into()),
        gpu_type: Some("h100".into()),
        ..spec.clone()
    };
    let native = dialect::export(&queued).unwrap();
    let doc: Value = serde_saphyr::from_str(&native.text).unwrap();
    assert_eq!(doc["metadata"]["namespace"], json!("ml"));
    assert_eq!(doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], json!("team-a"));
    assert_eq!(doc["spec"]["suspend"], json!(true));
    assert_eq!(doc["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"], json!("h100"));
    assert!(
        warned(&native.warnings, "`partition`: \"team-a\" becomes the Kueue LocalQueue label"),
        "{:?}",
        native.warnings
    );
    assert!(
        warned(
            &native.warnings,
            "`gpu_type`: written as the node selector nvidia.com/gpu.product=h100, but nodes carry the full product name"
        ),
        "{:?}",
        native.warnings
    );

    let amd = JobSpec { gpu_type: Some("mi300x".into()), ..spec.clone() };
    let doc: Value = serde_saphyr::from_str(&dialect::export(&amd).unwrap().text).unwrap();
    assert_eq!(doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"], json!("4"));
    assert_eq!(doc["spec"]["template"]["spec"]["nodeSelector"]["amd.com/gpu.product-name"], json!("mi300x"));
    let mig = JobSpec { gpu_type: Some("3g.40gb".into()), ..spec.clone() };
    let doc: Value = serde_saphyr::from_str(&dialect::export(&mig).unwrap().text).unwrap();
    assert_eq!(
        doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"],
        json!("4")
    );
    assert!(doc["spec"]["template"]["spec"].get("nodeSelector").is_none());

    // What a Job cannot hold is left out, by name.
    let odd = JobSpec { account: Some("ML_Group".into()), partition: Some("gpu,debug".into()), ..spec.clone() };
    let native = dialect::export(&odd).unwrap();
    let doc: Value = serde_saphyr::from_str(&native.text).unwrap();
    assert!(
        doc["metadata"].get("namespace").is_none()
            && doc["metadata"]["labels"].get("kueue.x-k8s.io/queue-name").is_none()
    );
    assert!(warned(&native.warnings, "`account`: the namespace of a Kubernetes Job, but "), "{:?}", native.warnings);
    assert!(warned(&native.warnings, "`partition`: a Kueue LocalQueue name here, but "), "{:?}", native.warnings);

    // ... and what it cannot run is refused, by name.
    for (bad, field) in [
        (JobSpec { array: Some("1-10".into()), ..spec.clone() }, "`array`"),
        (JobSpec { image: None, ..spec.clone() }, "`image`"),
        (JobSpec { managed: true, ..spec.clone() }, "`managed`"),
        (JobSpec { memory: Some("lots".into()), ..spec.clone() }, "`memory`"),
    ] {
        let err = dialect::export(&bad).unwrap_err().to_string();
        assert!(err.contains(field), "{field}: {err}");
    }
    let per_node = dialect::export(&JobSpec { tasks_per_node: Some(4), ..spec.clone() }).unwrap();
    assert!(warned(&per_node.warnings, "`tasks_per_node`: "), "{:?}", per_node.warnings);
}

/// The done-when line of multi-node submission: `spec convert spec.toml --to kubernetes` for
/// `nodes = 2, gpus = 8` prints a JobSet of 2 pods of 8 GPUs each, with torch's rendezvous.
#[test]
fn a_two_node_spec_converts_to_a_jobset_with_the_rendezvous() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        "name = \"pretrain\"\ncommand = \"torchrun train.py\"\nimage = \"nvcr.io/nvidia/pytorch:25.01-py3\"\nnodes = 2\ngpus = 8\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["spec", "convert", spec.to_str().unwrap(), "--to", "kubernetes"])
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env_remove("FLIGHTDECK_CONFIG")
        .env_remove("FLIGHTDECK_HUB")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(out.status.success(), "{stderr}");
    let doc: Value = serde_saphyr::from_str(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    assert_eq!((&doc["apiVersion"], &doc["kind"]), (&json!("jobset.x-k8s.io/v1alpha2"), &json!("JobSet")));
    assert_eq!(doc["metadata"]["name"], "pretrain");
    let job = &doc["spec"]["replicatedJobs"][0]["template"]["spec"];
    let pods = job["parallelism"].as_u64().unwrap() * doc["spec"]["replicatedJobs"][0]["replicas"].as_u64().unwrap();
    assert_eq!((pods, &job["completions"]), (2, &json!(2)));
    let c = &job["template"]["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], json!("8"));
    let env: std::collections::BTreeMap<&str, &Value> =
        c["env"].as_array().unwrap().iter().map(|e| (e["name"].as_str().unwrap(), e)).collect();
    assert_eq!(env["MASTER_ADDR"]["value"], "pretrain-node-0-0.pretrain");
    assert_eq!(env["MASTER_PORT"]["value"], "29500");
    assert_eq!(env["WORLD_SIZE"]["value"], "2");
    assert_eq!(
        env["NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    assert!(stderr.contains("`nodes`: 2 nodes are written as a JobSet"), "{stderr}");
    assert!(!stderr.contains("random suffix"), "no suffix offline: {stderr}");
}

#[test]
fn arrays_and_migrations_survive_the_trip() {
    let spec = JobSpec {
        name: "sweep".into(),
        command: Some("python sweep.py --index $JOB_COMPLETION_INDEX".into()),
        image: Some("python:3.12".into()),
        array: Some("0-99%10".into()),
        migrated_from: Some("hpc/123".into()),
        ..JobSpec::default()
    };
    let native = round_trip(&spec);
    let doc: Value = serde_saphyr::from_str(&native.text).unwrap();
    assert_eq!(doc["spec"]["completionMode"], json!("Indexed"));
    assert_eq!((&doc["spec"]["completions"], &doc["spec"]["parallelism"]), (&json!(100), &json!(10)));
    assert_eq!(doc["metadata"]["annotations"]["flightdeck.io/migrated-from"], json!("hpc/123"));
    for array in ["0", "0-1", "0-7%1", "0-3999999%100"] {
        round_trip(&JobSpec { array: Some(array.into()), ..spec.clone() });
    }
    // An Indexed Job without parallelism runs one pod at a time.
    let text = native.text.replace("  parallelism: 10\n", "");
    assert_ne!(text, native.text);
    assert_eq!(dialect::import(&text).unwrap().spec.array.as_deref(), Some("0-99%1"));
}

// ----- properties ----------------------------------------------------------------------

/// Text that stresses a reader: hostile characters, YAML and shell syntax.
fn nasty_text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        "[ -~]{0,40}",
        prop::sample::select(vec![
            "",
            " ",
            "'",
            "\"",
            "$(id)",
            "`id`",
            "a\nb",
            "\u{1b}[2J",
            "\u{202e}",
            "\0",
            "---",
            "- x",
            ": y",
            "#",
            "*a",
            "&a",
            "!!binary",
            "~",
            "null",
            "true",
            "0x1F",
            "1e3",
            "0123",
            "%",
            "{}",
            "[]",
            "\\",
            "naïve",
        ])
        .prop_map(str::to_string),
    ]
}

fn quantity() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..100_000).prop_map(|n| json!(n)),
        (0u64..5000).prop_map(|n| json!(format!("{n}m"))),
        (1u64..1024).prop_map(|n| json!(format!("{n}Gi"))),
        (1u64..100_000).prop_map(|n| json!(format!("{n}M"))),
        (1u64..1000).prop_map(|n| json!(format!("{n}.5"))),
        nasty_text().prop_map(|s| json!(s)),
        Just(json!("99999999999999999999Ei")),
        Just(json!(-3)),
        Just(json!(0.25)),
    ]
}

/// Job manifests of every shape the reader has to take: real fields with odd values.
fn manifest() -> impl Strategy<Value = Value> {
    let argv = || prop::collection::vec(nasty_text(), 0..5);
    let shells = prop::sample::select(vec!["sh", "/bin/sh", "bash", "/bin/bash", "/usr/bin/env", "python3", "-c"]);
    let command = prop_oneof![
        argv(),
        (shells, nasty_text()).prop_map(|(s, body)| vec![s.to_string(), "-c".into(), body]),
        (nasty_text()).prop_map(|body| vec!["/bin/bash".into(), "-c".into(), format!("#!/bin/bash\n{body}")]),
    ];
    let env =
        prop::collection::vec((prop_oneof!["[A-Z_][A-Z0-9_]{0,6}", nasty_text()], nasty_text(), any::<bool>()), 0..4);
    let resources = || {
        prop::collection::btree_map(
            prop::sample::select(vec![
                "nvidia.com/gpu",
                "amd.com/gpu",
                "nvidia.com/mig-1g.10gb",
                "nvidia.com/gpu.shared",
                "cpu",
                "memory",
                "ephemeral-storage",
                "gpu.intel.com/i915",
            ]),
            quantity(),
            0..4,
        )
    };
    let product = prop::option::of(prop::sample::select(vec![
        "NVIDIA-H100-80GB-HBM3",
        "NVIDIA-A100-SXM4-80GB",
        "Tesla-T4-SHARED",
        "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
        "AMD_Instinct_MI300X_OAM",
        "weird value!",
        "",
    ]));
    (
        (
            prop_oneof!["[a-z][a-z0-9-]{0,20}", nasty_text()],
            prop::option::of(prop_oneof!["[a-z][a-z0-9-]{0,10}", nasty_text()]),
        ),
        command,
        prop::option::of(argv()),
        env,
        (resources(), resources()),
        product,
        (
            prop::option::of(-5i64..200_000),
            prop::option::of(prop::sample::select(vec!["Indexed", "NonIndexed", "Other"])),
        ),
        (prop::option::of(-2i32..50), prop::option::of(-2i32..50)),
        (
            prop::option::of(nasty_text()),
            prop::option::of(nasty_text()),
            prop::option::of(nasty_text()),
            prop::option::of(nasty_text()),
        ),
    )
        .prop_map(
            |(
                (name, namespace),
                command,
                args,
                env,
                (limits, requests),
                product,
                (deadline, mode),
                (completions, parallelism),
                (queue, origin, written, workdir),
            )| {
                let env: Vec<Value> = env
                    .into_iter()
                    .map(|(k, v, from)| {
                        if from {
                            json!({"name": k, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
                        } else {
                            json!({"name": k, "value": v})
                        }
                    })
                    .collect();
                let mut container = json!({"name": "main", "image": "busybox:1", "command": command, "env": env,
                    "resources": {"limits": limits, "requests": requests}});
                if let Some(args) = args {
                    container["args"] = json!(args);
                }
                if let Some(dir) = workdir {
                    container["workingDir"] = json!(dir);
                }
                let mut job = json!({"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": name, "labels": {}, "annotations": {}},
                    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}});
                if let Some(ns) = namespace {
                    job["metadata"]["namespace"] = json!(ns);
                }
                if let Some(q) = queue {
                    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!(q);
                }
                if let Some(o) = origin {
                    job["metadata"]["annotations"]["flightdeck.io/migrated-from"] = json!(o);
                }
                if let Some(w) = written {
                    job["metadata"]["annotations"]["flightdeck.io/name"] = json!(w);
                }
                if let Some(p) = product {
                    job["spec"]["template"]["spec"]["nodeSelector"] = json!({"nvidia.com/gpu.product": p});
                }
                for (key, value) in [
                    ("activeDeadlineSeconds", deadline.map(|d| json!(d))),
                    ("completionMode", mode.map(|m| json!(m))),
                    ("completions", completions.map(|c| json!(c))),
                    ("parallelism", parallelism.map(|p| json!(p))),
                ] {
                    if let Some(v) = value {
                        job["spec"][key] = v;
                    }
                }
                job
            },
        )
}

/// Specs a Kubernetes Job can run, with hostile text wherever text goes.
fn kube_spec() -> impl Strategy<Value = JobSpec> {
    let body = prop_oneof![
        "[ -~]{1,30}".prop_filter("not blank", |s| !s.trim().is_empty()),
        Just("echo \"it's\" $(id) `uname` && exit 0".to_string()),
        Just("#!/bin/bash\nset -e\necho hi\n".to_string()),
        Just("#!/usr/bin/env python3\nprint('x')\n".to_string()),
        Just("line one\nline two\n\ttabbed".to_string()),
    ];
    (
        (
            prop_oneof!["[a-zA-Z0-9 ._'$-]{1,30}", Just("x'; touch /tmp/pwned; echo '$(id)".to_string())]
                .prop_filter("named", |n| !n.trim().is_empty()),
            body,
            any::<bool>(),
        ),
        (0u32..17, prop::option::of(prop::sample::select(vec!["h100", "a100-80gb", "1g.10gb", "mi300x", "t4"]))),
        (
            prop::option::of(1u32..512),
            prop::option::of(prop::sample::select(vec!["500M", "64G", "1T", "1536K", "3", "61036M"])),
        ),
        prop::option::of(prop::sample::select(vec!["2h", "90m", "30s", "1-00:00:00", "01:30:00", "5"])),
        (prop::option::of("[a-z]([a-z0-9-]{0,10}[a-z0-9])?"), prop::option::of("[a-z][a-zA-Z0-9._-]{0,12}[a-z0-9]")),
        prop::option::of("/[a-zA-Z0-9 _./-]{0,20}"),
        prop::collection::btree_map("[A-Z_][A-Z0-9_]{0,8}", "[ -~\n]{0,20}", 0..4),
        prop::option::of(prop::sample::select(vec!["0", "0-9", "0-99%10", "0-3%1"])),
        prop::option::of("[a-z]{2,6}/[0-9]{1,6}"),
    )
        .prop_map(
            |(
                (name, body, as_script),
                (gpus, gpu_type),
                (cpus, memory),
                time_limit,
                (account, partition),
                workdir,
                env,
                array,
                migrated_from,
            )| {
                let (command, script) = if as_script { (None, Some(body)) } else { (Some(body), None) };
                JobSpec {
                    name,
                    command,
                    script,
                    gpus,
                    gpu_type: gpu_type.filter(|_| gpus > 0).map(str::to_string),
                    cpus,
                    memory: memory.map(str::to_string),
                    time_limit: time_limit.map(str::to_string),
                    account,
                    partition,
                    workdir,
                    image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
                    env,
                    array: array.map(str::to_string),
                    migrated_from,
                    ..JobSpec::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// No text panics detection or import; what is read is a valid spec.
    #[test]
    fn any_text_is_read_or_refused(text in prop_oneof![".{0,400}", "[ -~\n\t]{0,400}"]) {
        let _ = dialect::detect(&text);
        if let Ok(got) = dialect::import(&text) {
            prop_assert!(got.spec.validate().is_ok());
        }
    }

    /// Damaged fixtures: cut, spliced, lines repeated. Read or refused, never a panic; what
    /// is read survives the round trip.
    #[test]
    fn damaged_manifests_are_read_or_refused(
        which in 0..READABLE.len(),
        cut in any::<prop::sample::Index>(),
        len in 0usize..40,
        insert in nasty_text(),
    ) {
        let text = fixture(READABLE[which]);
        let at = cut.index(text.len() + 1);
        let at = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        let end = (at + len).min(text.len());
        let end = (end..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
        let damaged = format!("{}{insert}{}", &text[..at], &text[end..]);
        let _ = dialect::detect(&damaged);
        if let Ok(got) = dialect::import(&damaged) {
            prop_assert!(got.spec.validate().is_ok());
            if let Ok(native) = dialect::export(&got.spec) {
                let back = dialect::import(&native.text).map_err(|e| TestCaseError::fail(format!("{e}\n{}", native.text)))?;
                prop_assert_eq!(back.spec, got.spec);
            }
        }
    }

    /// Generated manifests, as JSON and as YAML: what is read validates, exports, and reads
    /// back as the same spec.
    #[test]
    fn generated_manifests_round_trip(job in manifest(), as_yaml in any::<bool>()) {
        let text = if as_yaml { serde_saphyr::to_string(&job).unwrap() } else { serde_json::to_string_pretty(&job).unwrap() };
        prop_assert!(dialect::detect(&text), "{}", text);
        match dialect::import(&text) {
            Ok(got) => {
                prop_assert!(got.spec.validate().is_ok());
                if let Ok(native) = dialect::export(&got.spec) {
                    let back = dialect::import(&native.text).map_err(|e| TestCaseError::fail(format!("{e}\n{}", native.text)))?;
                    prop_assert_eq!(&back.spec, &got.spec, "{}", native.text);
                    prop_assert!(back.warnings.is_empty(), "{:?}", back.warnings);
                }
            }
            Err(err) => prop_assert!(!err.message.is_empty()),
        }
    }

    /// Whatever text a command or variable holds, the manifest gives it to the container as
    /// it was, `$` and all.
    #[test]
    fn dollars_survive_escape_and_expansion(text in "[$()a-z ]{0,24}", value in "[$()a-z]{0,8}") {
        let spec = JobSpec {
            name: "d".into(),
            command: Some(format!("x{text}")),
            image: Some("busybox".into()),
            env: [("a".to_string(), value.clone()), ("b".to_string(), text.clone())].into(),
            ..JobSpec::default()
        };
        let native = dialect::export(&spec).unwrap();
        let back = dialect::import(&native.text).unwrap();
        prop_assert_eq!(back.spec, spec);
    }

    /// Specs through a manifest and back: every value a Job carries comes back the same, and
    /// the second trip changes nothing.
    #[test]
    fn specs_survive_a_manifest(spec in kube_spec()) {
        prop_assume!(spec.validate().is_ok());
        let native = dialect::export(&spec).map_err(|e| TestCaseError::fail(format!("{e}: {spec:?}")))?;
        let got = dialect::import(&native.text).map_err(|e| TestCaseError::fail(format!("{e}\n{}", native.text)))?.spec;
        prop_assert_eq!(&got.name, &spec.name);
        prop_assert_eq!(got.gpus, spec.gpus);
        prop_assert_eq!(got.gpu_type.as_deref(), spec.gpu_type.as_deref());
        prop_assert_eq!(got.cpus, spec.cpus);
        prop_assert_eq!(got.memory_mb(), spec.memory_mb());
        prop_assert_eq!(got.time_limit_secs(), spec.time_limit_secs());
        prop_assert_eq!(&got.account, &spec.account);
        prop_assert_eq!(&got.partition, &spec.partition);
        prop_assert_eq!(&got.workdir, &spec.workdir);
        prop_assert_eq!(&got.env, &spec.env);
        prop_assert_eq!(&got.migrated_from, &spec.migrated_from);
        prop_assert_eq!(
            got.array.as_deref().map(|a| flightdeck::spec::parse_array(a).unwrap().indices().collect::<Vec<_>>()),
            spec.array.as_deref().map(|a| flightdeck::spec::parse_array(a).unwrap().indices().collect::<Vec<_>>())
        );
        // The program text itself comes back, as the command or as the script.
        let body = spec.command.clone().or(spec.script.clone());
        prop_assert_eq!(got.command.clone().or(got.script.clone()), body);
        let again = dialect::export(&got).unwrap();
        let back = dialect::import(&again.text).unwrap().spec;
        prop_assert_eq!(back, got);
    }
}
