//! The Kubernetes workload forms (JobSet, PyTorchJob, MPIJob, RayJob, Volcano Job) offline:
//! the projects' own examples (`tests/fixtures/dialects/workloads/`, each naming where it
//! came from) read with hand-checked values and warnings, each claimed by its own dialect
//! only, converted to Slurm through the binary (`#SBATCH --nodes` and the command once per
//! node through `srun`), `--to KIND` picking the kind, and property tests that a spec keeps
//! through each form what that form holds.

use std::path::{Path, PathBuf};

use flightdeck::backend::{DialectEntry, Registry};
use flightdeck::model::Dialect;
use flightdeck::spec::{Imported, JobSpec};
use proptest::prelude::*;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dialects/workloads");

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn dialect(name: &str) -> DialectEntry {
    Registry::builtin().dialect(name).unwrap_or_else(|| panic!("no dialect {name}")).clone()
}

/// The dialects that claim `text`.
fn claimed_by(text: &str) -> Vec<Dialect> {
    Registry::builtin().dialects().filter(|d| (d.detect)(text)).map(|d| d.dialect.clone()).collect()
}

fn read(name: &str, as_: &str) -> Imported {
    let text = fixture(name);
    let d = dialect(as_);
    assert_eq!(claimed_by(&text), vec![d.dialect], "{name}");
    (d.import)(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn warned(i: &Imported, prefix: &str) -> bool {
    i.warnings.iter().any(|w| w.starts_with(prefix))
}

#[test]
fn the_projects_examples_read_as_specs() {
    // Kubeflow's simple PyTorchJob: a Master and a Worker running the same pod.
    let i = read("pytorchjob-simple.yaml", "pytorchjob");
    let s = &i.spec;
    assert_eq!((s.name.as_str(), s.account.as_deref(), s.nodes), ("pytorch-simple", Some("kubeflow"), Some(2)));
    assert_eq!(s.command.as_deref(), Some("python3 /opt/mnist/src/mnist.py '--epochs=1'"));
    assert_eq!(s.image.as_deref(), Some("docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"));
    assert!(warned(&i, "`spec.pytorchReplicaSpecs.Master.restartPolicy`"), "{:?}", i.warnings);
    assert!(warned(&i, "`kind`: the spec names no workload kind"), "{:?}", i.warnings);
    assert!(!i.warnings.iter().any(|w| w.contains("differs")), "same pod in both roles: {:?}", i.warnings);

    // A team's PyTorchJob: 4 nodes × 8 GPUs, queued in Kueue, 2 hours, 8 processes per node.
    let i = read("pytorchjob-gpu.yaml", "pytorchjob");
    let s = &i.spec;
    assert_eq!((s.nodes, s.gpus, s.tasks_per_node), (Some(4), 8, Some(8)));
    assert_eq!((s.partition.as_deref(), s.time_limit.as_deref()), (Some("team-a"), Some("2h")));
    assert_eq!(s.command.as_deref(), Some("torchrun train.py '--backend=nccl'"));
    assert!(!warned(&i, "`spec.runPolicy.suspend`"), "suspended for Kueue is not held: {:?}", i.warnings);

    // JobSet's ResNet example: 4 pods of one replicated Job, the env it sets itself kept.
    let i = read("jobset-resnet.yaml", "jobset");
    let s = &i.spec;
    assert_eq!((s.name.as_str(), s.nodes), ("pytorch", Some(4)));
    assert_eq!(s.env.get("MASTER_PORT").map(String::as_str), Some("3389"));
    assert!(s.command.as_deref().unwrap().contains("torchrun --nproc_per_node=1"), "{:?}", s.command);
    assert!(warned(&i, "`spec.replicatedJobs[0].template.spec.template.spec.containers[0].ports`"), "{:?}", i.warnings);

    // mpi-operator's pi: the launcher's mpirun is the command, the 2 workers are the nodes.
    let i = read("mpijob-pi.yaml", "mpijob");
    let s = &i.spec;
    assert_eq!((s.name.as_str(), s.nodes, s.cpus, s.memory.as_deref()), ("pi", Some(2), Some(1), Some("1G")));
    assert_eq!(s.command.as_deref(), Some("mpirun -n 2 /unknown"));
    assert!(warned(&i, "`spec.sshAuthMountPath`"), "{:?}", i.warnings);
    assert!(warned(&i, "`spec.runPolicy.ttlSecondsAfterFinished`"), "{:?}", i.warnings);
    assert!(warned(&i, "`spec.mpiReplicaSpecs`: the Launcher's command"), "{:?}", i.warnings);

    // KubeRay's PyTorch MNIST: the entrypoint on a head and 2 workers.
    let i = read("rayjob-pytorch-mnist.yaml", "rayjob");
    let s = &i.spec;
    assert_eq!((s.nodes, s.image.as_deref()), (Some(3), Some("rayproject/ray:2.45.0")));
    assert_eq!(
        s.command.as_deref(),
        Some("python ray-operator/config/samples/pytorch-mnist/ray_train_pytorch_mnist.py")
    );
    assert!(warned(&i, "`spec.runtimeEnvYAML`"), "{:?}", i.warnings);
    assert!(warned(&i, "`spec.shutdownAfterJobFinishes`"), "{:?}", i.warnings);
    assert!(warned(&i, "`spec.rayClusterSpec.workerGroupSpecs[0].template`: its pod differs"), "{:?}", i.warnings);

    // Volcano's MPI example: the master task's script, 3 pods, the workers' own pod named.
    let i = read("volcano-mpi.yaml", "volcano");
    let s = &i.spec;
    assert_eq!((s.name.as_str(), s.nodes, s.workdir.as_deref()), ("lm-mpi-job", Some(3), Some("/home")));
    assert!(s.command.as_deref().unwrap().contains("mpiexec --allow-run-as-root"), "{:?}", s.command);
    assert!(warned(&i, "`spec.plugins.ssh`"), "{:?}", i.warnings);
    assert!(warned(&i, "`spec.tasks[0].policies`"), "{:?}", i.warnings);
    assert!(warned(&i, "`spec.tasks[1].template`: its pod differs"), "{:?}", i.warnings);
}

#[test]
fn near_misses_are_nobodys_and_wrong_kinds_are_refused_by_name() {
    for text in [
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec: {}\n",
        "apiVersion: ray.io/v1\nkind: RayCluster\nspec: {}\n",
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: Job\n",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: []}}}\n",
        "kind: PyTorchJob\n",
    ] {
        let claimed: Vec<Dialect> =
            claimed_by(text).into_iter().filter(|d| *d != flightdeck::backend::kube::dialect::KUBERNETES_JOB).collect();
        assert!(claimed.is_empty(), "{text:?} claimed by {claimed:?}");
    }
    let e = (dialect("pytorchjob").import)(&fixture("jobset-resnet.yaml")).unwrap_err();
    assert!(e.message.contains("not a PyTorchJob"), "{e}");
    let e =
        (dialect("rayjob").import)("apiVersion: ray.io/v1\nkind: RayJob\nspec: {rayClusterSpec: {}}\n").unwrap_err();
    assert!(e.message.contains("`spec.entrypoint`"), "{e}");
    // A file that does not parse but says what it is goes to its reader, which names the line.
    let broken = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {x: [\n";
    assert_eq!(claimed_by(broken), vec![flightdeck::backend::kube::workloads::dialect::PYTORCH_JOB]);
    assert!((dialect("pytorchjob").import)(broken).unwrap_err().line.is_some());
}

fn flightdeck(args: &[&str]) -> (String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flightdeck")).args(args).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into());
    assert!(out.status.success(), "{args:?}: {stderr}");
    (stdout, stderr)
}

#[test]
fn a_pytorchjob_converts_to_a_multi_node_sbatch_script() {
    let file = path("pytorchjob-gpu.yaml");
    let (script, stderr) = flightdeck(&["spec", "convert", file.to_str().unwrap(), "--to", "slurm"]);
    assert!(script.contains("#SBATCH --nodes=4\n"), "{script}");
    assert!(script.contains("#SBATCH --gres=gpu:8\n"), "{script}");
    assert!(script.contains("#SBATCH --ntasks-per-node=8\n"), "{script}");
    assert!(script.contains("export PET_NPROC_PER_NODE=8\n"), "{script}");
    assert!(script.ends_with("\nsrun --ntasks-per-node=1 torchrun train.py '--backend=nccl'\n"), "{script}");
    assert!(stderr.contains("`nodes`: the command runs once on each of the 4 nodes"), "{stderr}");
    // And back: the sbatch script reads as the same command on 4 nodes.
    let back = (dialect("slurm").import)(&script).unwrap().spec;
    assert_eq!((back.nodes, back.command.as_deref()), (Some(4), Some("torchrun train.py '--backend=nccl'")));
    assert_eq!(back.script, None);
    // MPI's launcher starts its own ranks: no srun around it.
    let file = path("mpijob-pi.yaml");
    let (script, _) = flightdeck(&["spec", "convert", file.to_str().unwrap(), "--to", "slurm"]);
    assert!(script.ends_with("\nmpirun -n 2 /unknown\n") && !script.contains("srun"), "{script}");
}

#[test]
fn to_kind_picks_the_workload() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        "name = \"pretrain\"\ncommand = \"torchrun train.py\"\nimage = \"nvcr.io/nvidia/pytorch:25.01-py3\"\nnodes = 2\ngpus = 8\n",
    )
    .unwrap();
    for (to, api, kind) in [
        ("kubernetes", "jobset.x-k8s.io/v1alpha2", "JobSet"),
        ("jobset", "jobset.x-k8s.io/v1alpha2", "JobSet"),
        ("pytorchjob", "kubeflow.org/v1", "PyTorchJob"),
        ("mpijob", "kubeflow.org/v2beta1", "MPIJob"),
        ("rayjob", "ray.io/v1", "RayJob"),
        ("volcano", "batch.volcano.sh/v1alpha1", "Job"),
    ] {
        let (text, _) = flightdeck(&["spec", "convert", spec.to_str().unwrap(), "--to", to]);
        let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!((doc["apiVersion"].as_str(), doc["kind"].as_str()), (Some(api), Some(kind)), "{to}:\n{text}");
        // Read back through its own dialect, by content.
        let written = dir.path().join(format!("{to}.yaml"));
        std::fs::write(&written, &text).unwrap();
        let (toml, _) = flightdeck(&["spec", "convert", written.to_str().unwrap(), "--to", "toml"]);
        assert!(toml.contains("nodes = 2") && toml.contains("gpus = 8"), "{to}:\n{toml}");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["spec", "convert", spec.to_str().unwrap(), "--to", "tfjob"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("pytorchjob") && stderr.contains("volcano"), "{stderr}");
}

fn flightdeck_fails(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flightdeck")).args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into()
}

/// `spec convert --to kubernetes` writes a JobSet for several nodes (the done-when test is
/// `dialect_kube::a_two_node_spec_converts_to_a_jobset_with_the_rendezvous`); `--multi-node
/// KIND` (or the spec's own `multi_node`) writes that kind instead, and a word that is no
/// kind, or a kind for a target that takes none, is refused by name.
#[test]
fn multi_node_picks_the_kind_a_conversion_to_kubernetes_writes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    let body = "name = \"pretrain\"\ncommand = \"torchrun train.py\"\nimage = \"nvcr.io/nvidia/pytorch:25.01-py3\"\nnodes = 2\ngpus = 8\n";
    std::fs::write(&spec, body).unwrap();
    let file = spec.to_str().unwrap();
    let (text, stderr) = flightdeck(&["spec", "convert", file, "--to", "kubernetes"]);
    assert!(text.contains("kind: JobSet"), "{text}");
    assert!(stderr.contains("`--to KIND` or `--multi-node KIND` writes another"), "{stderr}");

    let (text, stderr) = flightdeck(&["spec", "convert", file, "--to", "kubernetes", "--multi-node", "pytorchjob"]);
    let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!((doc["apiVersion"].as_str(), doc["kind"].as_str()), (Some("kubeflow.org/v1"), Some("PyTorchJob")));
    let specs = &doc["spec"]["pytorchReplicaSpecs"];
    assert_eq!(
        (&specs["Master"]["replicas"], &specs["Worker"]["replicas"]),
        (&serde_json::json!(1), &serde_json::json!(1))
    );
    assert_eq!(specs["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "8");
    assert!(stderr.contains("nodes are written as a PyTorchJob (as the spec's `multi_node` says)"), "{stderr}");
    // The flag is kept in the portable form, and the file's own key does the same.
    let (toml, _) = flightdeck(&["spec", "convert", file, "--to", "toml", "--multi-node", "mpijob"]);
    assert!(toml.contains("multi_node = \"mpijob\""), "{toml}");
    std::fs::write(&spec, toml).unwrap();
    let (text, _) = flightdeck(&["spec", "convert", file, "--to", "kubernetes"]);
    assert!(text.contains("kind: MPIJob"), "{text}");
    // `--to KIND` names the kind itself, and says what it overrode.
    let (text, stderr) = flightdeck(&["spec", "convert", file, "--to", "volcano"]);
    assert!(text.contains("apiVersion: batch.volcano.sh/v1alpha1"), "{text}");
    assert!(
        stderr.contains("`multi_node`: the spec asks for \"mpijob\"; written as a Job, as `--to` says"),
        "{stderr}"
    );

    let err = flightdeck_fails(&["spec", "convert", file, "--to", "kubernetes", "--multi-node", "tfjob"]);
    assert!(
        err.contains("`multi_node`: \"tfjob\" is no kind") && err.contains("jobset, pytorchjob, mpijob, volcano"),
        "{err}"
    );
    let err = flightdeck_fails(&["spec", "convert", file, "--to", "slurm", "--multi-node", "jobset"]);
    assert!(err.contains("`multi_node`: Slurm runs a job of several nodes itself"), "{err}");
}

/// An sbatch script sent to Kubernetes with its `srun` line and `#SBATCH` directives left in
/// it: each is named by line with what to do instead.
#[test]
fn srun_and_sbatch_lines_going_to_kubernetes_are_warned_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        "name = \"t\"\nimage = \"pytorch:25\"\nnodes = 2\nscript = \"\"\"#!/bin/bash\n#SBATCH --mail-type=END\nsrun python train.py\n\"\"\"\n",
    )
    .unwrap();
    for to in ["kubernetes", "pytorchjob"] {
        let (_, stderr) = flightdeck(&["spec", "convert", spec.to_str().unwrap(), "--to", to]);
        assert!(stderr.contains("`script`: line 3 runs `srun`, which no Kubernetes pod has"), "{to}: {stderr}");
        assert!(stderr.contains("`script`: line 2 has `#SBATCH`, a comment in a pod"), "{to}: {stderr}");
    }
    // Slurm runs them as they are: no such warning there.
    let (_, stderr) = flightdeck(&["spec", "convert", spec.to_str().unwrap(), "--to", "slurm"]);
    assert!(!stderr.contains("no Kubernetes pod"), "{stderr}");
}

/// A shell's own `$$` and `$(…)` in the command come back as they were from every form: the
/// kubelet expands them in a container's command (escaped on the way out), never in a
/// RayJob's entrypoint (proptest found `a$$` read back as `a$`).
#[test]
fn dollar_signs_in_the_command_come_back_from_every_form() {
    let spec = JobSpec {
        name: "dollars".into(),
        nodes: Some(2),
        command: Some("kill -0 $$ && echo $(hostname) $HOME".into()),
        image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
        ..JobSpec::default()
    };
    for name in ["jobset", "pytorchjob", "mpijob", "rayjob", "volcano"] {
        let d = dialect(name);
        let native = (d.export)(&spec).unwrap();
        let back = (d.import)(&native.text).unwrap().spec;
        assert_eq!(back.command, spec.command, "{name}:\n{}", native.text);
    }
}

/// A spec each workload form can hold whole.
fn workload_spec() -> impl Strategy<Value = JobSpec> {
    (
        "[a-z][a-z0-9-]{0,20}[a-z0-9]",
        2u32..9,
        0u32..9,
        prop::option::of(1u32..64),
        prop::option::of((1u64..512).prop_map(|g| format!("{g}G"))),
        prop::option::of((1u64..24).prop_map(|h| format!("{h}h"))),
        prop::option::of("[a-z]([a-z0-9-]{0,9}[a-z0-9])?"),
        prop::option::of("[a-z]([a-z0-9-]{0,9}[a-z0-9])?"),
        prop::collection::btree_map("[A-Z][A-Z0-9_]{0,8}", "[ -~]{0,12}", 0..3),
        prop_oneof![Just("torchrun train.py".to_string()), "[a-z][ -~]{0,30}".prop_map(|c| c.trim().to_string())],
    )
        .prop_map(|(name, nodes, gpus, cpus, memory, time_limit, account, partition, env, command)| JobSpec {
            name,
            nodes: Some(nodes),
            gpus,
            cpus,
            memory,
            time_limit,
            account,
            partition,
            env: env
                .into_iter()
                .filter(|(k, _)| !k.starts_with("PET_") && !k.starts_with("MASTER") && k != "WORLD_SIZE")
                .collect(),
            command: Some(command),
            image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
            ..JobSpec::default()
        })
        .prop_filter("valid", |s| s.validate().is_ok())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn specs_keep_what_each_form_holds(spec in workload_spec(), tasks in prop::option::of(2u32..9)) {
        for name in ["jobset", "pytorchjob", "mpijob", "rayjob", "volcano"] {
            let d = dialect(name);
            // An MPIJob's slots equal to the GPUs are the default it writes anyway.
            let spec = JobSpec { tasks_per_node: tasks.filter(|t| name != "rayjob" && (name != "mpijob" || *t != spec.gpus.max(1))), ..spec.clone() };
            let native = (d.export)(&spec).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
            prop_assert_eq!(claimed_by(&native.text), vec![d.dialect], "{}", native.text);
            let back = (d.import)(&native.text).map_err(|e| TestCaseError::fail(format!("{name}: {e}\n{}", native.text)))?;
            prop_assert_eq!(&back.spec, &spec, "{}:\n{}", name, native.text);
            // What it says on the way back is about kinds, never a field it lost.
            for w in &back.warnings {
                prop_assert!(w.starts_with("`kind`") || w.starts_with("`spec.entrypoint`") || w.starts_with("`spec.mpiReplicaSpecs`"), "{}: {}", name, w);
            }
        }
    }

    #[test]
    fn a_command_on_several_nodes_survives_sbatch(spec in workload_spec()) {
        let spec = JobSpec { image: None, ..spec };
        let slurm = dialect("slurm");
        let native = (slurm.export)(&spec).unwrap();
        let back = (slurm.import)(&native.text).map_err(|e| TestCaseError::fail(format!("{e}\n{}", native.text)))?.spec;
        prop_assert_eq!((&back.command, back.nodes, &back.env), (&spec.command, spec.nodes, &spec.env), "{}", native.text);
    }

    #[test]
    fn no_text_panics_a_workload_reader(text in "\\PC{0,200}", head in 0usize..5) {
        let heads = ["", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n", "apiVersion: ray.io/v1\nkind: RayJob\n",
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n", "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n"];
        let text = format!("{}{text}", heads[head]);
        for name in ["jobset", "pytorchjob", "mpijob", "rayjob", "volcano"] {
            let d = dialect(name);
            let _ = (d.detect)(&text);
            if let Ok(i) = (d.import)(&text) {
                prop_assert!(i.spec.validate().is_ok());
            }
        }
    }
}

/// A status read takes from a pod template only what a replica asks for and the GPU its node
/// selector names (`status::Group`); the whole template is read when the workload is read
/// back as a spec.
#[test]
fn a_status_read_takes_the_demand_and_an_import_the_whole_template() {
    use flightdeck::backend::kube::workloads::{WorkloadKind, status};
    let obj: kube::core::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "tf", "namespace": "ml"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 4, "template": {"spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            "initContainers": [{"name": "side", "restartPolicy": "Always", "image": "proxy:1",
                "resources": {"requests": {"cpu": "1"}}}],
            "containers": [{"name": "tf", "image": "tensorflow:2.16", "command": ["python", "train.py"],
                "env": [{"name": "EPOCHS", "value": "3"}],
                "resources": {"requests": {"cpu": "4"}, "limits": {"nvidia.com/gpu": "2"}}}]}}}}}
    }))
    .expect("a TFJob");
    let s = status::read(WorkloadKind::TfJob, &obj);
    let g = &s.groups[0];
    assert_eq!((g.name.as_str(), g.pods, g.demand.gpus()), ("Worker", 4, 2));
    assert_eq!(g.demand.get("cpu"), 5000, "the sidecar's CPU counts with the app's");
    assert_eq!(g.product.as_deref(), Some("NVIDIA-H100-80GB-HBM3"));
    let spec = g.pod_spec().expect("the template's pod spec");
    assert_eq!(spec.containers[0].image.as_deref(), Some("tensorflow:2.16"));
    let imported = status::import(WorkloadKind::TfJob, &obj).expect("imported");
    assert_eq!(
        (imported.spec.image.as_deref(), imported.spec.nodes, imported.spec.gpus),
        (Some("tensorflow:2.16"), Some(4), 2)
    );
}
