//! Objects shaped like what a real cluster returns: GPU nodes (GPU Feature Discovery labels,
//! MIG, time-slicing, AMD, unhealthy, cordoned, NotReady), pods (init containers, native
//! sidecars, overhead, terminal pods, pending pods, DaemonSet and mirror pods, emptyDir,
//! unmanaged), a batch Job and its pods, Kueue (v1beta2) ClusterQueue / LocalQueue / Workloads,
//! scheduling events, and [`standard_cluster`], a realistic mix whose GPU allocation per node
//! is hand-computed in [`STANDARD_GPU_ALLOCATION`].
//!
//! Every object carries a fixed uid (owner references point at them) and fixed timestamps, so
//! snapshots are stable. The fake keeps a uid it is given.

use serde_json::{Value, json};

/// Fixed times, RFC 3339, as a real server writes them.
pub const T_CREATED: &str = "2025-06-02T08:00:00Z";
pub const T_STARTED: &str = "2025-06-02T08:00:05Z";
pub const T_RUNNING: &str = "2025-06-02T08:01:12Z";
pub const T_HEARTBEAT: &str = "2025-06-02T12:00:00Z";
pub const T_NOT_READY: &str = "2025-06-02T11:42:31Z";

/// A deterministic uid for a fixture object (`kind/namespace/name`), shaped like a UUIDv4.
pub fn uid(kind: &str, namespace: &str, name: &str) -> String {
    // FNV-1a, twice with different seeds, is plenty for fixtures.
    let h = |seed: u64| {
        let mut x = seed;
        for b in kind.bytes().chain([b'/']).chain(namespace.bytes()).chain([b'/']).chain(name.bytes()) {
            x ^= u64::from(b);
            x = x.wrapping_mul(0x0100_0000_01b3);
        }
        x
    };
    let (a, b) = (h(0xcbf2_9ce4_8422_2325), h(0x8422_2325_cbf2_9ce4));
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        (a >> 32) as u32,
        (a >> 16) as u16,
        a & 0xfff,
        0x8000 | ((b >> 48) as u16 & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

// ----- nodes -------------------------------------------------------------------------------------

fn condition(kind: &str, status: &str, reason: &str, message: &str, transition: &str) -> Value {
    json!({
        "type": kind,
        "status": status,
        "lastHeartbeatTime": T_HEARTBEAT,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    })
}

fn healthy_conditions() -> Vec<Value> {
    vec![
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
            T_CREATED,
        ),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", T_CREATED),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available", T_CREATED),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", T_CREATED),
    ]
}

/// A node: `gpu` are extra (device plugin) resources `(name, capacity, allocatable)`.
fn node(name: &str, instance_type: &str, labels: Value, gpu: &[(&str, u32, u32)], cpu: u32, mem_ki: u64) -> Value {
    let mut capacity = json!({
        "cpu": cpu.to_string(),
        "ephemeral-storage": "3750000000Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": format!("{mem_ki}Ki"),
        "pods": "110",
    });
    let mut allocatable = json!({
        "cpu": format!("{}m", cpu * 1000 - 500),
        "ephemeral-storage": "3455966548101",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": format!("{}Ki", mem_ki - 2 * 1024 * 1024),
        "pods": "110",
    });
    for (res, cap, alloc) in gpu {
        capacity[*res] = json!(cap.to_string());
        allocatable[*res] = json!(alloc.to_string());
    }
    let mut all_labels = json!({
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/region": "us-east-2",
        "topology.kubernetes.io/zone": "us-east-2b",
    });
    if let (Some(all), Some(extra)) = (all_labels.as_object_mut(), labels.as_object()) {
        for (k, v) in extra {
            all.insert(k.clone(), v.clone());
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid("Node", "", name),
            "creationTimestamp": T_CREATED,
            "labels": all_labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "nfd.node.kubernetes.io/feature-labels": "nvidia.com/gpu.present,pci-10de.present",
            },
        },
        "spec": {
            "podCIDR": "10.244.3.0/24",
            "podCIDRs": ["10.244.3.0/24"],
            "providerID": format!("aws:///us-east-2b/i-0{:016x}", name.len() * 7919),
        },
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": healthy_conditions(),
            "addresses": [
                {"type": "InternalIP", "address": format!("10.0.{}.{}", name.len(), name.len() * 3)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": "ec2a6b3a1f4e4b1e9d0c6a7f5b2e8d41",
                "systemUUID": "ec2a6b3a-1f4e-4b1e-9d0c-6a7f5b2e8d41",
                "bootID": "5c1c0e7e-9b7d-4d8e-a0e1-6f7a2b9c3d10",
                "kernelVersion": "6.8.0-1021-aws",
                "osImage": "Ubuntu 22.04.5 LTS",
                "containerRuntimeVersion": "containerd://1.7.27",
                "kubeletVersion": "v1.32.3",
                "kubeProxyVersion": "v1.32.3",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    })
}

fn nvidia_labels(product: &str, count: u32, memory_mb: u32, family: &str, major: u32, minor: u32) -> Value {
    json!({
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": count.to_string(),
        "nvidia.com/gpu.memory": memory_mb.to_string(),
        "nvidia.com/gpu.family": family,
        "nvidia.com/gpu.compute.major": major.to_string(),
        "nvidia.com/gpu.compute.minor": minor.to_string(),
        "nvidia.com/gpu.machine": "p5.48xlarge",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/cuda.driver-version.full": "550.127.08",
        "nvidia.com/cuda.driver.major": "550",
        "nvidia.com/cuda.runtime-version.full": "12.4",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    })
}

/// 8×H100 80GB, all healthy: `nvidia.com/gpu` capacity 8, allocatable 8. GFD labels
/// `nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3`, `gpu.count=8`, `gpu.memory=81559`,
/// `gpu.family=hopper`.
pub fn node_h100(name: &str) -> Value {
    node(
        name,
        "p5.48xlarge",
        nvidia_labels("NVIDIA-H100-80GB-HBM3", 8, 81559, "hopper", 9, 0),
        &[("nvidia.com/gpu", 8, 8)],
        192,
        2_097_152_000,
    )
}

/// 8×H200 141GB, all healthy: GFD label `nvidia.com/gpu.product=NVIDIA-H200` (not part of
/// [`standard_cluster`]; for the GPU-name scenarios).
pub fn node_h200(name: &str) -> Value {
    node(
        name,
        "p5en.48xlarge",
        nvidia_labels("NVIDIA-H200", 8, 143771, "hopper", 9, 0),
        &[("nvidia.com/gpu", 8, 8)],
        192,
        2_097_152_000,
    )
}

/// 8×H100 with one GPU marked unhealthy by the device plugin: capacity 8, allocatable 7.
pub fn node_h100_degraded(name: &str) -> Value {
    node(
        name,
        "p5.48xlarge",
        nvidia_labels("NVIDIA-H100-80GB-HBM3", 8, 81559, "hopper", 9, 0),
        &[("nvidia.com/gpu", 8, 7)],
        192,
        2_097_152_000,
    )
}

/// 2×A100 80GB in MIG mixed mode: GPU 0 split into 7×`1g.10gb`, GPU 1 into 2×`3g.40gb`.
/// `nvidia.com/gpu` is 0; `nvidia.com/mig-1g.10gb` 7; `nvidia.com/mig-3g.40gb` 2.
pub fn node_a100_mig(name: &str) -> Value {
    let mut labels = nvidia_labels("NVIDIA-A100-SXM4-80GB", 2, 81920, "ampere", 8, 0);
    labels["nvidia.com/gpu.machine"] = json!("p4de.24xlarge");
    labels["nvidia.com/mig.strategy"] = json!("mixed");
    labels["nvidia.com/mig.config"] = json!("custom-7x1g-2x3g");
    labels["nvidia.com/mig.config.state"] = json!("success");
    labels["nvidia.com/mig-1g.10gb.count"] = json!("7");
    labels["nvidia.com/mig-1g.10gb.memory"] = json!("9728");
    labels["nvidia.com/mig-1g.10gb.product"] = json!("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb");
    labels["nvidia.com/mig-3g.40gb.count"] = json!("2");
    labels["nvidia.com/mig-3g.40gb.memory"] = json!("40192");
    labels["nvidia.com/mig-3g.40gb.product"] = json!("NVIDIA-A100-SXM4-80GB-MIG-3g.40gb");
    node(
        name,
        "p4de.24xlarge",
        labels,
        &[("nvidia.com/gpu", 0, 0), ("nvidia.com/mig-1g.10gb", 7, 7), ("nvidia.com/mig-3g.40gb", 2, 2)],
        96,
        1_178_599_424,
    )
}

/// 1×T4 shared by time-slicing into 4 replicas: `nvidia.com/gpu` 4, labels
/// `nvidia.com/gpu.replicas=4`, `nvidia.com/gpu.product=Tesla-T4-SHARED`, `gpu.count=1`.
pub fn node_t4_timeslice(name: &str) -> Value {
    let mut labels = nvidia_labels("Tesla-T4-SHARED", 1, 15360, "turing", 7, 5);
    labels["nvidia.com/gpu.machine"] = json!("g4dn.xlarge");
    labels["nvidia.com/gpu.replicas"] = json!("4");
    labels["nvidia.com/gpu.sharing-strategy"] = json!("time-slicing");
    labels["nvidia.com/mig.capable"] = json!("false");
    node(name, "g4dn.xlarge", labels, &[("nvidia.com/gpu", 4, 4)], 4, 16_161_384)
}

/// 8×AMD Instinct MI300X: `amd.com/gpu` 8, label `amd.com/gpu.product-name`.
pub fn node_mi300(name: &str) -> Value {
    let labels = json!({
        "feature.node.kubernetes.io/amd-gpu": "true",
        "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM",
        "amd.com/gpu.family": "AI",
        "amd.com/gpu.device-id": "74a1",
        "amd.com/gpu.vram": "192G",
        "amd.com/gpu.driver-version": "6.8.5",
        "amd.com/gpu.compute-partitioning": "spx",
        "amd.com/gpu.memory-partitioning": "nps1",
    });
    node(name, "Standard_ND96isr_MI300X_v5", labels, &[("amd.com/gpu", 8, 8)], 96, 1_900_000_000)
}

/// 8×H100, cordoned (`spec.unschedulable`, taint `node.kubernetes.io/unschedulable:NoSchedule`)
/// and under memory pressure (`MemoryPressure=True`, taint `node.kubernetes.io/memory-pressure`).
pub fn node_cordoned(name: &str) -> Value {
    let mut n = node_h100(name);
    n["spec"]["unschedulable"] = json!(true);
    n["spec"]["taints"] = json!([
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2025-06-02T11:05:00Z"},
        {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule", "timeAdded": "2025-06-02T10:58:13Z"},
    ]);
    n["status"]["conditions"][0] = condition(
        "MemoryPressure",
        "True",
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
        "2025-06-02T10:58:13Z",
    );
    n
}

/// 8×H100 whose kubelet stopped reporting: `Ready=Unknown` (NodeStatusUnknown), unreachable
/// taints (NoSchedule and NoExecute).
pub fn node_not_ready(name: &str) -> Value {
    let mut n = node_h100(name);
    let unknown = |kind: &str| {
        condition(kind, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.", T_NOT_READY)
    };
    n["status"]["conditions"] =
        json!([unknown("MemoryPressure"), unknown("DiskPressure"), unknown("PIDPressure"), unknown("Ready")]);
    n["spec"]["taints"] = json!([
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": T_NOT_READY},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2025-06-02T11:42:36Z"},
    ]);
    n
}

/// A CPU-only node (for paging and selector tests): no GPU resources, no GPU labels.
pub fn node_cpu(name: &str) -> Value {
    node(name, "m6i.4xlarge", json!({}), &[], 16, 65_024_000)
}

// ----- pods --------------------------------------------------------------------------------------

/// A container whose requests equal its limits. `gpus` are `(resource, count)`.
pub fn container(name: &str, image: &str, cpu: &str, memory: &str, gpus: &[(&str, u32)]) -> Value {
    let mut limits = json!({"cpu": cpu, "memory": memory});
    for (res, n) in gpus {
        limits[*res] = json!(n.to_string());
    }
    json!({
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"limits": limits.clone(), "requests": limits},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
    })
}

fn container_status(c: &Value, running: bool, init: bool) -> Value {
    let name = c["name"].as_str().unwrap_or("");
    let image = c["image"].as_str().unwrap_or("");
    let state = if init && c.get("restartPolicy").is_none() {
        json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": T_STARTED, "finishedAt": T_RUNNING, "containerID": format!("containerd://{:064x}", name.len())}})
    } else if running {
        json!({"running": {"startedAt": T_RUNNING}})
    } else {
        json!({"waiting": {"reason": "ContainerCreating"}})
    };
    json!({
        "name": name,
        "image": image,
        "imageID": format!("{image}@sha256:{:064x}", image.len()),
        "containerID": format!("containerd://{:064x}", name.len() * 31),
        "ready": running && !(init && c.get("restartPolicy").is_none()),
        "started": running,
        "restartCount": 0,
        "state": state,
    })
}

fn pod_condition(kind: &str, status: &str) -> Value {
    json!({"type": kind, "status": status, "lastProbeTime": null, "lastTransitionTime": T_RUNNING})
}

/// The parts of a pod fixture.
pub struct PodSpec<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// `None`: not scheduled.
    pub node: Option<&'a str>,
    pub containers: Vec<Value>,
    pub init_containers: Vec<Value>,
    /// The controller: `(apiVersion, kind, name, uid)`, see [`owner`].
    pub owner: Option<(String, String, String, String)>,
    pub labels: Value,
    /// `Running`, `Pending`, `Succeeded`, `Failed`.
    pub phase: &'a str,
}

impl<'a> PodSpec<'a> {
    pub fn new(namespace: &'a str, name: &'a str, node: Option<&'a str>, containers: Vec<Value>) -> PodSpec<'a> {
        PodSpec {
            namespace,
            name,
            node,
            containers,
            init_containers: Vec::new(),
            owner: None,
            labels: json!({}),
            phase: if node.is_some() { "Running" } else { "Pending" },
        }
    }

    pub fn build(self) -> Value {
        let running = self.phase == "Running";
        let mut meta = json!({
            "name": self.name,
            "namespace": self.namespace,
            "uid": uid("Pod", self.namespace, self.name),
            "creationTimestamp": T_CREATED,
            "labels": self.labels,
        });
        if let Some((av, kind, name, owner_uid)) = &self.owner {
            meta["ownerReferences"] = json!([{
                "apiVersion": av, "kind": kind, "name": name, "uid": owner_uid,
                "controller": true, "blockOwnerDeletion": true,
            }]);
            if kind == "ReplicaSet" || kind == "StatefulSet" || kind == "DaemonSet" {
                meta["generateName"] = json!(format!("{name}-"));
            }
        }
        let mut spec = json!({
            "containers": self.containers,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            ]}}],
        });
        if !self.init_containers.is_empty() {
            spec["initContainers"] = json!(self.init_containers);
        }
        let mut status = json!({"phase": self.phase, "qosClass": "Guaranteed"});
        match self.node {
            Some(node) => {
                spec["nodeName"] = json!(node);
                let ready = if running { "True" } else { "False" };
                status["conditions"] = json!([
                    pod_condition("PodReadyToStartContainers", "True"),
                    pod_condition("Initialized", "True"),
                    pod_condition("Ready", ready),
                    pod_condition("ContainersReady", ready),
                    pod_condition("PodScheduled", "True"),
                ]);
                status["hostIP"] = json!("10.0.12.36");
                status["hostIPs"] = json!([{"ip": "10.0.12.36"}]);
                status["podIP"] = json!(format!("10.244.3.{}", 10 + self.name.len()));
                status["podIPs"] = json!([{"ip": format!("10.244.3.{}", 10 + self.name.len())}]);
                status["startTime"] = json!(T_STARTED);
                let statuses: Vec<Value> = spec["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| container_status(c, running, false))
                    .collect();
                status["containerStatuses"] = json!(statuses);
                if !self.init_containers.is_empty() {
                    let init: Vec<Value> =
                        self.init_containers.iter().map(|c| container_status(c, running, true)).collect();
                    status["initContainerStatuses"] = json!(init);
                }
            }
            None => {
                status["conditions"] = json!([pod_condition("PodScheduled", "False")]);
            }
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
    }
}

/// A plain pod with one container holding `gpus` of `resource` (for ad-hoc tests).
pub fn gpu_pod(namespace: &str, name: &str, node: Option<&str>, resource: &str, gpus: u32) -> Value {
    let c = container("main", "nvcr.io/nvidia/pytorch:25.01-py3", "8", "64Gi", &[(resource, gpus)]);
    PodSpec::new(namespace, name, node, vec![c]).build()
}

/// A controller reference for [`PodSpec::owner`], with the fixture uid of that object (the
/// ReplicaSets, StatefulSets and DaemonSets themselves are not part of the fixtures).
pub fn owner(api_version: &str, kind: &str, name: &str, namespace: &str) -> Option<(String, String, String, String)> {
    Some((api_version.to_owned(), kind.to_owned(), name.to_owned(), uid(kind, namespace, name)))
}

/// `research/featurizer-0` (StatefulSet): init container `warmup` with 3 GPUs, app container
/// `featurize` with 1 GPU. Effective request: max(1, 3) = **3** `nvidia.com/gpu`.
pub fn pod_init_heavy(node: &str) -> Value {
    let mut p = PodSpec::new(
        "research",
        "featurizer-0",
        Some(node),
        vec![container("featurize", "ghcr.io/acme/featurize:2.3", "8", "64Gi", &[("nvidia.com/gpu", 1)])],
    );
    p.init_containers = vec![container("warmup", "ghcr.io/acme/warmup:2.3", "4", "32Gi", &[("nvidia.com/gpu", 3)])];
    p.owner = owner("apps/v1", "StatefulSet", "featurizer", "research");
    p.labels = json!({"app": "featurizer", "statefulset.kubernetes.io/pod-name": "featurizer-0", "apps.kubernetes.io/pod-index": "0"});
    p.build()
}

/// `inference/vllm-llama-6f7d9c8b5-x2k4n` (ReplicaSet) with a native sidecar: init containers
/// `gpu-monitor` (`restartPolicy: Always`, 1 GPU) then `prefetch-weights` (2 GPUs); app
/// container `vllm` (1 GPU). Effective request: max(app 1 + sidecar 1 = 2, prefetch 2 + the
/// sidecar started before it 1 = 3) = **3** `nvidia.com/gpu`.
pub fn pod_native_sidecar(node: &str) -> Value {
    let mut sidecar =
        container("gpu-monitor", "ghcr.io/acme/gpu-monitor:0.9", "500m", "512Mi", &[("nvidia.com/gpu", 1)]);
    sidecar["restartPolicy"] = json!("Always");
    let mut p = PodSpec::new(
        "inference",
        "vllm-llama-6f7d9c8b5-x2k4n",
        Some(node),
        vec![container("vllm", "vllm/vllm-openai:v0.8.5", "16", "128Gi", &[("nvidia.com/gpu", 1)])],
    );
    p.init_containers = vec![
        sidecar,
        container("prefetch-weights", "ghcr.io/acme/prefetch:1.4", "4", "16Gi", &[("nvidia.com/gpu", 2)]),
    ];
    p.owner = owner("apps/v1", "ReplicaSet", "vllm-llama-6f7d9c8b5", "inference");
    p.labels = json!({"app": "vllm-llama", "pod-template-hash": "6f7d9c8b5"});
    p.build()
}

/// `notebooks/kata-notebook-7d9f6c5b8-q8r2t` (ReplicaSet) in a Kata VM: `runtimeClassName:
/// kata-qemu-nvidia-gpu`, `spec.overhead {cpu: 250m, memory: 160Mi}`, one container with 1 GPU.
/// Effective request: **1** `nvidia.com/gpu` (+250m CPU, +160Mi memory of overhead).
pub fn pod_with_overhead(node: &str) -> Value {
    let mut p = PodSpec::new(
        "notebooks",
        "kata-notebook-7d9f6c5b8-q8r2t",
        Some(node),
        vec![container(
            "notebook",
            "quay.io/jupyter/pytorch-notebook:cuda12-2025-05-26",
            "2",
            "8Gi",
            &[("nvidia.com/gpu", 1)],
        )],
    );
    p.owner = owner("apps/v1", "ReplicaSet", "kata-notebook-7d9f6c5b8", "notebooks");
    p.labels = json!({"app": "kata-notebook", "pod-template-hash": "7d9f6c5b8"});
    let mut pod = p.build();
    pod["spec"]["runtimeClassName"] = json!("kata-qemu-nvidia-gpu");
    pod["spec"]["overhead"] = json!({"cpu": "250m", "memory": "160Mi"});
    pod
}

/// `research/eval-mmlu-h7x9k`: a finished (Succeeded) Job pod still carrying 2 GPUs in its
/// limits. It holds **0** GPUs: terminal pods are excluded.
pub fn pod_succeeded_holding_gpus(node: &str) -> Value {
    let mut p = PodSpec::new(
        "research",
        "eval-mmlu-h7x9k",
        Some(node),
        vec![container("eval", "ghcr.io/acme/eval:1.0", "8", "64Gi", &[("nvidia.com/gpu", 2)])],
    );
    p.phase = "Succeeded";
    p.owner = owner("batch/v1", "Job", "eval-mmlu", "research");
    p.labels = json!({"batch.kubernetes.io/job-name": "eval-mmlu", "job-name": "eval-mmlu"});
    let mut pod = p.build();
    pod["spec"]["restartPolicy"] = json!("Never");
    pod["status"]["conditions"][2] = json!({"type": "Ready", "status": "False", "reason": "PodCompleted", "lastProbeTime": null, "lastTransitionTime": "2025-06-02T09:30:00Z"});
    pod["status"]["conditions"][3] = json!({"type": "ContainersReady", "status": "False", "reason": "PodCompleted", "lastProbeTime": null, "lastTransitionTime": "2025-06-02T09:30:00Z"});
    pod["status"]["containerStatuses"][0]["state"] = json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": T_RUNNING, "finishedAt": "2025-06-02T09:30:00Z"}});
    pod["status"]["containerStatuses"][0]["ready"] = json!(false);
    pod["status"]["containerStatuses"][0]["started"] = json!(false);
    pod
}

/// The FailedScheduling message of [`pod_pending_unschedulable`] (sorted reasons, as the
/// scheduler writes them).
pub const UNSCHEDULABLE_MESSAGE: &str = "0/7 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector, 3 Insufficient nvidia.com/gpu. preemption: 0/7 nodes are available: 3 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling.";

/// `research/big-train-pending`: not scheduled, 8 GPUs, node affinity on H100/A100 products;
/// `PodScheduled=False reason Unschedulable` with [`UNSCHEDULABLE_MESSAGE`]. Unmanaged. Holds
/// **0** GPUs on any node.
pub fn pod_pending_unschedulable() -> Value {
    let p = PodSpec::new(
        "research",
        "big-train-pending",
        None,
        vec![container("train", "nvcr.io/nvidia/pytorch:25.01-py3", "96", "1Ti", &[("nvidia.com/gpu", 8)])],
    );
    let mut pod = p.build();
    pod["metadata"]["labels"] = json!({"app": "big-train"});
    pod["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"]}]}
    ]}}});
    pod["status"] = json!({
        "phase": "Pending",
        "qosClass": "Guaranteed",
        "conditions": [{
            "type": "PodScheduled", "status": "False", "lastProbeTime": null,
            "lastTransitionTime": "2025-06-02T11:10:00Z", "reason": "Unschedulable",
            "message": UNSCHEDULABLE_MESSAGE,
        }],
    });
    pod
}

/// A core v1 Event about `involved` (`{kind, namespace?, name, uid, apiVersion}`).
#[allow(clippy::too_many_arguments)]
pub fn event(
    namespace: &str,
    name: &str,
    involved: Value,
    kind: &str,
    reason: &str,
    message: &str,
    component: &str,
    count: u32,
) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace, "uid": uid("Event", namespace, name), "creationTimestamp": "2025-06-02T11:10:00Z"},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": component},
        "firstTimestamp": "2025-06-02T11:10:00Z",
        "lastTimestamp": "2025-06-02T11:58:00Z",
        "count": count,
        "eventTime": null,
        "reportingComponent": component,
        "reportingInstance": "",
    })
}

/// The `FailedScheduling` Warning about [`pod_pending_unschedulable`].
pub fn event_failed_scheduling() -> Value {
    event(
        "research",
        "big-train-pending.1845f3a2b7c9d001",
        json!({"kind": "Pod", "namespace": "research", "name": "big-train-pending", "uid": uid("Pod", "research", "big-train-pending"), "apiVersion": "v1", "resourceVersion": "1001"}),
        "Warning",
        "FailedScheduling",
        UNSCHEDULABLE_MESSAGE,
        "default-scheduler",
        12,
    )
}

/// Node events (namespace `default`, as the node controller writes them): `NodeNotSchedulable`
/// for the cordoned node, `NodeNotReady` for the NotReady one.
pub fn node_events(cordoned: &str, not_ready: &str) -> Vec<Value> {
    let node_ref = |n: &str| json!({"kind": "Node", "name": n, "uid": n, "apiVersion": "v1"});
    vec![
        event(
            "default",
            &format!("{cordoned}.1845f1c0a1b2c3d4"),
            node_ref(cordoned),
            "Normal",
            "NodeNotSchedulable",
            &format!("Node {cordoned} status is now: NodeNotSchedulable"),
            "kubelet",
            1,
        ),
        event(
            "default",
            &format!("{not_ready}.1845f2d1e2f3a4b5"),
            node_ref(not_ready),
            "Normal",
            "NodeNotReady",
            &format!("Node {not_ready} status is now: NodeNotReady"),
            "node-controller",
            1,
        ),
    ]
}

/// `gpu-operator/nvidia-dcgm-exporter-{suffix}` (DaemonSet), no GPU request.
pub fn pod_daemonset(node: &str, suffix: &str) -> Value {
    let name = format!("nvidia-dcgm-exporter-{suffix}");
    let mut p = PodSpec::new(
        "gpu-operator",
        &name,
        Some(node),
        vec![container(
            "nvidia-dcgm-exporter",
            "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04",
            "100m",
            "512Mi",
            &[],
        )],
    );
    p.owner = owner("apps/v1", "DaemonSet", "nvidia-dcgm-exporter", "gpu-operator");
    p.labels =
        json!({"app": "nvidia-dcgm-exporter", "controller-revision-hash": "7c5b8d9f4", "pod-template-generation": "3"});
    let mut pod = p.build();
    pod["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    ]}}});
    pod
}

/// `kube-system/gpu-health-probe-{node}`: a static pod's mirror (annotation
/// `kubernetes.io/config.mirror`, owned by the Node). No GPU request.
pub fn pod_mirror(node: &str) -> Value {
    let name = format!("gpu-health-probe-{node}");
    let mut p = PodSpec::new(
        "kube-system",
        &name,
        Some(node),
        vec![container("probe", "ghcr.io/acme/gpu-health-probe:0.4", "50m", "64Mi", &[])],
    );
    p.owner = owner("v1", "Node", node, "");
    p.labels = json!({"component": "gpu-health-probe", "tier": "node"});
    let mut pod = p.build();
    pod["metadata"]["annotations"] = json!({
        "kubernetes.io/config.hash": "0d3c9b1e6f2a4c58b7e9d1f3a5c7e9b1",
        "kubernetes.io/config.mirror": "0d3c9b1e6f2a4c58b7e9d1f3a5c7e9b1",
        "kubernetes.io/config.seen": "2025-06-02T08:00:01.123456789Z",
        "kubernetes.io/config.source": "file",
    });
    pod["spec"]["priorityClassName"] = json!("system-node-critical");
    pod["spec"]["priority"] = json!(2_000_001_000);
    pod
}

/// `research/scratch-cache-5d8f7b6c9-kq4zm` (ReplicaSet) with an `emptyDir` volume `scratch`,
/// 2 GPUs. Drain refuses it without "delete emptyDir data".
pub fn pod_emptydir(node: &str) -> Value {
    let mut p = PodSpec::new(
        "research",
        "scratch-cache-5d8f7b6c9-kq4zm",
        Some(node),
        vec![container("cache", "ghcr.io/acme/scratch-cache:3.1", "4", "32Gi", &[("nvidia.com/gpu", 2)])],
    );
    p.owner = owner("apps/v1", "ReplicaSet", "scratch-cache-5d8f7b6c9", "research");
    p.labels = json!({"app": "scratch-cache", "pod-template-hash": "5d8f7b6c9"});
    let mut pod = p.build();
    pod["spec"]["volumes"]
        .as_array_mut()
        .expect("volumes")
        .push(json!({"name": "scratch", "emptyDir": {"sizeLimit": "200Gi"}}));
    pod["spec"]["containers"][0]["volumeMounts"]
        .as_array_mut()
        .expect("mounts")
        .push(json!({"name": "scratch", "mountPath": "/scratch"}));
    pod
}

/// `research/debug-shell`: no ownerReferences (a bare pod), 1 GPU. Drain refuses it without
/// "force".
pub fn pod_unmanaged(node: &str) -> Value {
    let mut p = PodSpec::new(
        "research",
        "debug-shell",
        Some(node),
        vec![container("shell", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "2", "8Gi", &[("nvidia.com/gpu", 1)])],
    );
    p.labels = json!({"run": "debug-shell"});
    p.build()
}

// ----- batch Jobs --------------------------------------------------------------------------------

/// A batch/v1 Job: `parallelism` indexed pods of `gpus_per_pod` `nvidia.com/gpu`, submitted to
/// the Kueue LocalQueue `queue` (label `kueue.x-k8s.io/queue-name`) when given.
pub fn job(
    namespace: &str,
    name: &str,
    parallelism: u32,
    gpus_per_pod: u32,
    queue: Option<&str>,
    suspended: bool,
) -> Value {
    let mut labels = json!({});
    if let Some(q) = queue {
        labels["kueue.x-k8s.io/queue-name"] = json!(q);
    }
    let job_uid = uid("Job", namespace, name);
    let active = if suspended { 0 } else { parallelism };
    let mut status = json!({"active": active, "ready": active, "terminating": 0, "uncountedTerminatedPods": {}});
    if suspended {
        status["conditions"] = json!([{"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended", "lastProbeTime": "2025-06-02T11:20:00Z", "lastTransitionTime": "2025-06-02T11:20:00Z"}]);
    } else {
        status["startTime"] = json!(T_STARTED);
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "uid": job_uid, "creationTimestamp": T_CREATED, "labels": labels, "generation": 1},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "completionMode": "Indexed",
            "backoffLimit": 6,
            "backoffLimitPerIndex": null,
            "manualSelector": false,
            "podReplacementPolicy": "TerminatingOrFailed",
            "suspend": suspended,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": job_uid}},
            "template": {
                "metadata": {"labels": {"batch.kubernetes.io/controller-uid": job_uid, "batch.kubernetes.io/job-name": name, "controller-uid": job_uid, "job-name": name}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container("train", "nvcr.io/nvidia/pytorch:25.01-py3", "48", "512Gi", &[("nvidia.com/gpu", gpus_per_pod)])],
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                },
            },
        },
        "status": status,
    })
}

/// Pod `index` of an indexed Job (as the Job controller names and labels it), on `node`.
pub fn job_pod(namespace: &str, job_name: &str, index: u32, suffix: &str, node: &str, gpus: u32) -> Value {
    let name = format!("{job_name}-{index}-{suffix}");
    let job_uid = uid("Job", namespace, job_name);
    let mut p = PodSpec::new(
        namespace,
        &name,
        Some(node),
        vec![container("train", "nvcr.io/nvidia/pytorch:25.01-py3", "48", "512Gi", &[("nvidia.com/gpu", gpus)])],
    );
    p.owner = owner("batch/v1", "Job", job_name, namespace);
    p.labels = json!({
        "batch.kubernetes.io/controller-uid": job_uid,
        "batch.kubernetes.io/job-name": job_name,
        "batch.kubernetes.io/job-completion-index": index.to_string(),
        "controller-uid": job_uid,
        "job-name": job_name,
        "kueue.x-k8s.io/podset": "main",
    });
    let mut pod = p.build();
    pod["metadata"]["generateName"] = json!(format!("{job_name}-{index}-"));
    pod["metadata"]["annotations"] = json!({"batch.kubernetes.io/job-completion-index": index.to_string()});
    // A real Job pod also carries the `batch.kubernetes.io/job-tracking` finalizer, which the
    // Job controller removes; the fake has no controller, so the fixture leaves it out (with it,
    // an evicted pod would stay Terminating for ever).
    pod["spec"]["restartPolicy"] = json!("Never");
    pod["spec"]["hostname"] = json!(format!("{job_name}-{index}"));
    pod
}

/// `train/llm-pretrain`: an indexed Job with 3 pods × 4 GPUs, queued on `team-train`.
pub fn job_llm_pretrain() -> Value {
    job("train", "llm-pretrain", 3, 4, Some("team-train"), false)
}

/// The three pods of [`job_llm_pretrain`] on the given nodes (index 0, 1, 2).
pub fn job_llm_pretrain_pods(nodes: [&str; 3]) -> Vec<Value> {
    let suffixes = ["k7x2p", "q9w4d", "m3v8r"];
    (0..3).map(|i| job_pod("train", "llm-pretrain", i as u32, suffixes[i], nodes[i], 4)).collect()
}

// ----- Kueue (v1beta2) ---------------------------------------------------------------------------

/// A ResourceFlavor selecting nodes by GPU product.
pub fn resource_flavor(name: &str, product: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "uid": uid("ResourceFlavor", "", name), "creationTimestamp": T_CREATED, "generation": 1, "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
        "spec": {"nodeLabels": {"nvidia.com/gpu.product": product}},
    })
}

/// ClusterQueue `gpu-cluster-queue` (v1beta2 field names): one resource group covering cpu,
/// memory, `nvidia.com/gpu`, flavor `h100` with a quota of **16** GPUs (600 CPU, 6Ti). Status:
/// 12 GPUs reserved and used (the admitted `llm-pretrain`), 1 pending, 1 reserving, 1 admitted.
pub fn cluster_queue() -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "gpu-cluster-queue", "uid": uid("ClusterQueue", "", "gpu-cluster-queue"), "creationTimestamp": T_CREATED, "generation": 1, "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
        "spec": {
            "cohortName": "gpu-cohort",
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "stopPolicy": "None",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"}, "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [{
                    "name": "h100",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "600"},
                        {"name": "memory", "nominalQuota": "6Ti"},
                        {"name": "nvidia.com/gpu", "nominalQuota": "16"},
                    ],
                }],
            }],
        },
        "status": {
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads", "lastTransitionTime": T_CREATED, "observedGeneration": 1}],
            "flavorsReservation": [{"name": "h100", "resources": [
                {"name": "cpu", "total": "144", "borrowed": "0"},
                {"name": "memory", "total": "1536Gi", "borrowed": "0"},
                {"name": "nvidia.com/gpu", "total": "12", "borrowed": "0"},
            ]}],
            "flavorsUsage": [{"name": "h100", "resources": [
                {"name": "cpu", "total": "144", "borrowed": "0"},
                {"name": "memory", "total": "1536Gi", "borrowed": "0"},
                {"name": "nvidia.com/gpu", "total": "12", "borrowed": "0"},
            ]}],
            "pendingWorkloads": 1,
            "reservingWorkloads": 1,
            "admittedWorkloads": 1,
        },
    })
}

/// A LocalQueue pointing at `gpu-cluster-queue`.
pub fn local_queue(namespace: &str, name: &str, pending: u32, admitted: u32, gpus_used: u32) -> Value {
    let usage = json!([{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": gpus_used.to_string()}]}]);
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace, "uid": uid("LocalQueue", namespace, name), "creationTimestamp": T_CREATED, "generation": 1},
        "spec": {"clusterQueue": "gpu-cluster-queue", "stopPolicy": "None"},
        "status": {
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can submit new workloads to localQueue", "lastTransitionTime": T_CREATED, "observedGeneration": 1}],
            "pendingWorkloads": pending,
            "reservingWorkloads": admitted,
            "admittedWorkloads": admitted,
            "flavorsReservation": usage.clone(),
            "flavorsUsage": usage,
        },
    })
}

fn workload(namespace: &str, name: &str, job_name: &str, queue: &str, count: u32, gpus: u32) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid("Workload", namespace, name),
            "creationTimestamp": T_CREATED,
            "generation": 1,
            "labels": {"kueue.x-k8s.io/job-uid": uid("Job", namespace, job_name)},
            // A real Workload also carries the `kueue.x-k8s.io/resource-in-use` finalizer, which
            // Kueue removes; without a Kueue controller it would keep a deleted Workload around.
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": uid("Job", namespace, job_name), "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "active": true,
            "queueName": queue,
            "priority": 0,
            "podSets": [{
                "name": "main",
                "count": count,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [container("train", "nvcr.io/nvidia/pytorch:25.01-py3", "48", "512Gi", &[("nvidia.com/gpu", gpus)])],
                }},
            }],
        },
    })
}

/// `train/job-llm-pretrain-5c8d2`: admitted to `gpu-cluster-queue` on flavor `h100`
/// (3 pods × 4 GPUs = 12), `QuotaReserved=True`, `Admitted=True`.
pub fn workload_admitted() -> Value {
    let mut wl = workload("train", "job-llm-pretrain-5c8d2", "llm-pretrain", "team-train", 3, 4);
    wl["status"] = json!({
        "admission": {"clusterQueue": "gpu-cluster-queue", "podSetAssignments": [{
            "name": "main",
            "count": 3,
            "flavors": {"cpu": "h100", "memory": "h100", "nvidia.com/gpu": "h100"},
            "resourceUsage": {"cpu": "144", "memory": "1536Gi", "nvidia.com/gpu": "12"},
        }]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue gpu-cluster-queue", "lastTransitionTime": "2025-06-02T08:00:02Z", "observedGeneration": 1},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted", "lastTransitionTime": "2025-06-02T08:00:02Z", "observedGeneration": 1},
        ],
    });
    wl
}

/// The `QuotaReserved=False` message of [`workload_pending`]: 2 pods × 8 GPUs = 16 wanted, 4
/// free of the 16 quota, so 12 more needed.
pub const PENDING_WORKLOAD_MESSAGE: &str = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 12 more needed";

/// `research/job-big-sweep-7f3a1`: pending in `team-research` (2 pods × 8 GPUs),
/// `QuotaReserved=False` reason `Pending` with [`PENDING_WORKLOAD_MESSAGE`].
pub fn workload_pending() -> Value {
    let mut wl = workload("research", "job-big-sweep-7f3a1", "big-sweep", "team-research", 2, 8);
    wl["status"] = json!({
        "conditions": [{
            "type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": PENDING_WORKLOAD_MESSAGE,
            "lastTransitionTime": "2025-06-02T11:20:01Z", "observedGeneration": 1,
        }],
        "resourceRequests": [{"name": "main", "resources": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "16"}}],
    });
    wl
}

pub fn namespace(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "uid": uid("Namespace", "", name), "creationTimestamp": T_CREATED, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

// ----- the standard cluster ----------------------------------------------------------------------

pub const NODE_H100_A: &str = "gpu-h100-a";
pub const NODE_H100_B: &str = "gpu-h100-b";
pub const NODE_A100_MIG: &str = "gpu-a100-mig";
pub const NODE_T4: &str = "gpu-t4-shared";
pub const NODE_MI300: &str = "gpu-mi300";
pub const NODE_CORDONED: &str = "gpu-h100-cordoned";
pub const NODE_NOT_READY: &str = "gpu-h100-notready";

/// One node's GPU resource in [`standard_cluster`]: capacity and allocatable from the node,
/// `allocated` = sum over the node's non-terminal pods of max(app + sidecars, largest init +
/// sidecars before it) + overhead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpectedGpu {
    pub node: &'static str,
    pub resource: &'static str,
    pub capacity: u32,
    pub allocatable: u32,
    pub allocated: u32,
}

/// Hand-computed GPU allocation of [`standard_cluster`], one row per node and GPU resource:
///
/// | node | resource | cap | alloc | allocated | from |
/// |---|---|---|---|---|---|
/// | gpu-h100-a | nvidia.com/gpu | 8 | 8 | 7 | llm-pretrain-0 4 + featurizer-0 3 (init 3 > app 1); eval-mmlu (Succeeded, 2) excluded; dcgm 0 |
/// | gpu-h100-b | nvidia.com/gpu | 8 | 7 | 7 | llm-pretrain-1 4 + vllm-llama 3 (max(1+1, 2+1)); dcgm 0 |
/// | gpu-a100-mig | nvidia.com/gpu | 0 | 0 | 0 | |
/// | gpu-a100-mig | nvidia.com/mig-1g.10gb | 7 | 7 | 2 | embed-small 2 |
/// | gpu-a100-mig | nvidia.com/mig-3g.40gb | 2 | 2 | 1 | rerank-large 1 |
/// | gpu-t4-shared | nvidia.com/gpu | 4 | 4 | 2 | jupyter-alice-0 1 + kata-notebook 1 (overhead is cpu/memory only) |
/// | gpu-mi300 | amd.com/gpu | 8 | 8 | 2 | vllm-mi300 2 |
/// | gpu-h100-cordoned | nvidia.com/gpu | 8 | 8 | 7 | llm-pretrain-2 4 + scratch-cache 2 + debug-shell 1; dcgm, mirror 0 |
/// | gpu-h100-notready | nvidia.com/gpu | 8 | 8 | 1 | tensorboard 1 |
///
/// Cluster totals: `nvidia.com/gpu` capacity 44, allocatable 43, allocated 24; the pending
/// `big-train-pending` (8) holds nothing.
pub const STANDARD_GPU_ALLOCATION: &[ExpectedGpu] = &[
    ExpectedGpu { node: NODE_H100_A, resource: "nvidia.com/gpu", capacity: 8, allocatable: 8, allocated: 7 },
    ExpectedGpu { node: NODE_H100_B, resource: "nvidia.com/gpu", capacity: 8, allocatable: 7, allocated: 7 },
    ExpectedGpu { node: NODE_A100_MIG, resource: "nvidia.com/gpu", capacity: 0, allocatable: 0, allocated: 0 },
    ExpectedGpu { node: NODE_A100_MIG, resource: "nvidia.com/mig-1g.10gb", capacity: 7, allocatable: 7, allocated: 2 },
    ExpectedGpu { node: NODE_A100_MIG, resource: "nvidia.com/mig-3g.40gb", capacity: 2, allocatable: 2, allocated: 1 },
    ExpectedGpu { node: NODE_T4, resource: "nvidia.com/gpu", capacity: 4, allocatable: 4, allocated: 2 },
    ExpectedGpu { node: NODE_MI300, resource: "amd.com/gpu", capacity: 8, allocatable: 8, allocated: 2 },
    ExpectedGpu { node: NODE_CORDONED, resource: "nvidia.com/gpu", capacity: 8, allocatable: 8, allocated: 7 },
    ExpectedGpu { node: NODE_NOT_READY, resource: "nvidia.com/gpu", capacity: 8, allocatable: 8, allocated: 1 },
];

/// What a drain of [`NODE_CORDONED`] meets, by pod (`namespace/name`): evict, skip or refuse.
pub const CORDONED_NODE_PODS: &[(&str, &str)] = &[
    ("train/llm-pretrain-2-m3v8r", "evict (Job pod)"),
    ("research/scratch-cache-5d8f7b6c9-kq4zm", "refuse unless emptyDir data may be deleted"),
    ("research/debug-shell", "refuse unless forced (no controller)"),
    ("gpu-operator/nvidia-dcgm-exporter-c4d7n", "skip (DaemonSet)"),
    ("kube-system/gpu-health-probe-gpu-h100-cordoned", "skip (mirror pod)"),
];

/// A realistic cluster, in an order a real server could have created it:
///
/// * 7 namespaces: default, kube-system, gpu-operator, train, research, inference, notebooks.
/// * 7 nodes: [`NODE_H100_A`] (8×H100), [`NODE_H100_B`] (8×H100, one unhealthy: allocatable 7),
///   [`NODE_A100_MIG`] (MIG mixed), [`NODE_T4`] (time-sliced ×4), [`NODE_MI300`] (AMD),
///   [`NODE_CORDONED`] (cordoned, MemoryPressure), [`NODE_NOT_READY`].
/// * 20 pods: see [`STANDARD_GPU_ALLOCATION`] for where the GPUs go and [`CORDONED_NODE_PODS`]
///   for the drain target; plus `research/big-train-pending` (Unschedulable) with its
///   FailedScheduling event, and NodeNotSchedulable/NodeNotReady node events.
/// * batch Jobs `train/llm-pretrain` (3×4 GPUs, running, owns 3 pods) and `research/big-sweep`
///   (suspended, waiting on Kueue).
/// * Kueue: ResourceFlavor `h100`, ClusterQueue `gpu-cluster-queue` (16 GPUs), LocalQueues
///   `train/team-train` and `research/team-research`, Workloads `job-llm-pretrain-5c8d2`
///   (admitted) and `job-big-sweep-7f3a1` (pending, QuotaReserved=False).
pub fn standard_cluster() -> Vec<Value> {
    let mut objs: Vec<Value> =
        ["default", "kube-system", "gpu-operator", "train", "research", "inference", "notebooks"]
            .into_iter()
            .map(namespace)
            .collect();
    objs.extend([
        node_h100(NODE_H100_A),
        node_h100_degraded(NODE_H100_B),
        node_a100_mig(NODE_A100_MIG),
        node_t4_timeslice(NODE_T4),
        node_mi300(NODE_MI300),
        node_cordoned(NODE_CORDONED),
        node_not_ready(NODE_NOT_READY),
    ]);

    // gpu-h100-a: 4 + 3 = 7 of 8.
    objs.extend(job_llm_pretrain_pods([NODE_H100_A, NODE_H100_B, NODE_CORDONED]));
    objs.push(pod_init_heavy(NODE_H100_A));
    objs.push(pod_succeeded_holding_gpus(NODE_H100_A));
    objs.push(pod_daemonset(NODE_H100_A, "h7k2m"));

    // gpu-h100-b: 4 + 3 = 7 of 7.
    objs.push(pod_native_sidecar(NODE_H100_B));
    objs.push(pod_daemonset(NODE_H100_B, "p4z8s"));

    // gpu-a100-mig: 2×1g.10gb, 1×3g.40gb.
    let mut small =
        gpu_pod("inference", "embed-small-84c7d9f6b-wn5xz", Some(NODE_A100_MIG), "nvidia.com/mig-1g.10gb", 2);
    small["metadata"]["ownerReferences"] = owner_ref("apps/v1", "ReplicaSet", "embed-small-84c7d9f6b", "inference");
    small["metadata"]["labels"] = json!({"app": "embed-small", "pod-template-hash": "84c7d9f6b"});
    objs.push(small);
    let mut large =
        gpu_pod("inference", "rerank-large-6b9f8c7d5-tj2lm", Some(NODE_A100_MIG), "nvidia.com/mig-3g.40gb", 1);
    large["metadata"]["ownerReferences"] = owner_ref("apps/v1", "ReplicaSet", "rerank-large-6b9f8c7d5", "inference");
    large["metadata"]["labels"] = json!({"app": "rerank-large", "pod-template-hash": "6b9f8c7d5"});
    objs.push(large);
    objs.push(pod_daemonset(NODE_A100_MIG, "x9v3b"));

    // gpu-t4-shared: 1 + 1 = 2 of 4.
    let mut alice = gpu_pod("notebooks", "jupyter-alice-0", Some(NODE_T4), "nvidia.com/gpu", 1);
    alice["metadata"]["ownerReferences"] = owner_ref("apps/v1", "StatefulSet", "jupyter-alice", "notebooks");
    alice["metadata"]["labels"] =
        json!({"app": "jupyter", "user": "alice", "statefulset.kubernetes.io/pod-name": "jupyter-alice-0"});
    objs.push(alice);
    objs.push(pod_with_overhead(NODE_T4));

    // gpu-mi300: 2 of 8 amd.com/gpu.
    let mut mi = gpu_pod("inference", "vllm-mi300-5f6d7c8b9-r4t6y", Some(NODE_MI300), "amd.com/gpu", 2);
    mi["metadata"]["ownerReferences"] = owner_ref("apps/v1", "ReplicaSet", "vllm-mi300-5f6d7c8b9", "inference");
    mi["metadata"]["labels"] = json!({"app": "vllm-mi300", "pod-template-hash": "5f6d7c8b9"});
    mi["spec"]["containers"][0]["image"] = json!("rocm/vllm:rocm6.3.1_vllm_0.8.5");
    objs.push(mi);

    // gpu-h100-cordoned (the drain target): 4 + 2 + 1 = 7 of 8.
    objs.push(pod_emptydir(NODE_CORDONED));
    objs.push(pod_unmanaged(NODE_CORDONED));
    objs.push(pod_daemonset(NODE_CORDONED, "c4d7n"));
    objs.push(pod_mirror(NODE_CORDONED));

    // gpu-h100-notready: 1 of 8 (a pod the node controller has not evicted yet).
    let mut tb = gpu_pod("research", "tensorboard-7b8c9d6f5-zz7wq", Some(NODE_NOT_READY), "nvidia.com/gpu", 1);
    tb["metadata"]["ownerReferences"] = owner_ref("apps/v1", "ReplicaSet", "tensorboard-7b8c9d6f5", "research");
    tb["metadata"]["labels"] = json!({"app": "tensorboard", "pod-template-hash": "7b8c9d6f5"});
    tb["status"]["conditions"][2]["status"] = json!("False");
    objs.push(tb);

    // Pending, and why.
    objs.push(pod_pending_unschedulable());
    objs.push(event_failed_scheduling());
    objs.extend(node_events(NODE_CORDONED, NODE_NOT_READY));

    // Jobs and Kueue.
    objs.push(job_llm_pretrain());
    objs.push(job("research", "big-sweep", 2, 8, Some("team-research"), true));
    objs.push(resource_flavor("h100", "NVIDIA-H100-80GB-HBM3"));
    objs.push(cluster_queue());
    objs.push(local_queue("train", "team-train", 0, 1, 12));
    objs.push(local_queue("research", "team-research", 1, 0, 0));
    objs.push(workload_admitted());
    objs.push(workload_pending());
    objs
}

/// `metadata.ownerReferences` with one controller reference (fixture uid).
pub fn owner_ref(api_version: &str, kind: &str, name: &str, namespace: &str) -> Value {
    json!([{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid(kind, namespace, name), "controller": true, "blockOwnerDeletion": true}])
}
