//! What the watch caches keep of each object: only the fields the adapter reads, cut before
//! an object enters a reflector's store (`watch::run` applies [`Trim`] in the watcher's
//! `modify` step). A real pod is mostly what nothing here reads — `managedFields`, env,
//! volumes, probes, image digests, IPs — and 10,000 of them held whole cost hundreds of MB.
//!
//! Kept, by who reads it (`map`, `gpu`, `workloads::*`, `kueue`, the snapshot's index):
//! * metadata: everything but `managedFields`, `generateName` and finalizers; annotations only ours (`flightdeck.io/…`) and
//!   the mirror-pod mark the GPU ledger skips;
//! * pod spec: node, containers and init containers (name, resources, working dir, restart
//!   policy), pod-level resources, overhead, node selector, priority, deadline, scheduling
//!   gates;
//! * pod status: phase, reason, message, the `PodScheduled` and `Ready` conditions, start time, and per container its name,
//!   state, last state, restart count and readiness;
//! * node status: capacity, allocatable, conditions (not its image list or volumes);
//! * a Job's pod template: as a pod spec;
//! * workload and Kueue objects (dynamic): their pod templates lose env, volumes, mounts and
//!   probes; everything else stays, since their status readers walk the JSON freely.
//!
//! Reading back a live object as a spec (`job_spec`) or draining asks the server for the
//! whole object, never the cache.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStatus, Event, Node, NodeStatus, Pod, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::DynamicObject;
use serde_json::Value;

/// The mirror-pod annotation (`gpu::counts_on_node` leaves static pods out).
pub const MIRROR: &str = "kubernetes.io/config.mirror";

/// Cut an object down to what the adapter reads, in place.
pub trait Trim {
    fn trim(&mut self);
}

/// An annotation some reader looks at.
fn annotation_read(key: &str) -> bool {
    key.starts_with("flightdeck.io/") || key == MIRROR
}

pub fn meta(m: &mut ObjectMeta) {
    m.managed_fields = None;
    m.generate_name = None;
    m.finalizers = None;
    if let Some(a) = m.annotations.as_mut() {
        a.retain(|k, _| annotation_read(k));
        if a.is_empty() {
            m.annotations = None;
        }
    }
}

fn container(c: Container) -> Container {
    Container {
        name: c.name,
        resources: c.resources,
        working_dir: c.working_dir,
        restart_policy: c.restart_policy,
        ..Container::default()
    }
}

pub fn pod_spec(s: PodSpec) -> PodSpec {
    PodSpec {
        node_name: s.node_name,
        containers: s.containers.into_iter().map(container).collect(),
        init_containers: s.init_containers.map(|cs| cs.into_iter().map(container).collect()),
        resources: s.resources,
        overhead: s.overhead,
        node_selector: s.node_selector,
        priority: s.priority,
        active_deadline_seconds: s.active_deadline_seconds,
        scheduling_gates: s.scheduling_gates,
        ..PodSpec::default()
    }
}

fn container_state(s: Option<ContainerState>) -> Option<ContainerState> {
    s.map(|mut s| {
        if let Some(t) = s.terminated.as_mut() {
            t.container_id = None;
        }
        s
    })
}

fn container_status(c: ContainerStatus) -> ContainerStatus {
    ContainerStatus {
        name: c.name,
        state: container_state(c.state),
        last_state: container_state(c.last_state),
        restart_count: c.restart_count,
        ready: c.ready,
        ..ContainerStatus::default()
    }
}

/// The pod conditions anything reads: why a pod waits (`map::pod_pending_reason`) and
/// whether it is ready (`workloads::job`).
const POD_CONDITIONS_READ: [&str; 2] = ["PodScheduled", "Ready"];

fn pod_status(s: PodStatus) -> PodStatus {
    let statuses = |v: Option<Vec<ContainerStatus>>| v.map(|cs| cs.into_iter().map(container_status).collect());
    PodStatus {
        phase: s.phase,
        reason: s.reason,
        message: s.message,
        conditions: s
            .conditions
            .map(|cs| cs.into_iter().filter(|c| POD_CONDITIONS_READ.contains(&c.type_.as_str())).collect()),
        start_time: s.start_time,
        container_statuses: statuses(s.container_statuses),
        init_container_statuses: statuses(s.init_container_statuses),
        ..PodStatus::default()
    }
}

impl Trim for Pod {
    fn trim(&mut self) {
        meta(&mut self.metadata);
        self.spec = self.spec.take().map(pod_spec);
        self.status = self.status.take().map(pod_status);
    }
}

impl Trim for Node {
    fn trim(&mut self) {
        meta(&mut self.metadata);
        self.status = self.status.take().map(|s| NodeStatus {
            capacity: s.capacity,
            allocatable: s.allocatable,
            conditions: s.conditions,
            ..NodeStatus::default()
        });
    }
}

impl Trim for Job {
    fn trim(&mut self) {
        meta(&mut self.metadata);
        if let Some(spec) = self.spec.as_mut() {
            if let Some(m) = spec.template.metadata.as_mut() {
                meta(m);
            }
            spec.template.spec = spec.template.spec.take().map(pod_spec);
        }
    }
}

impl Trim for Event {
    fn trim(&mut self) {
        meta(&mut self.metadata);
    }
}

impl Trim for DynamicObject {
    fn trim(&mut self) {
        meta(&mut self.metadata);
        templates(&mut self.data, 0);
    }
}

/// Container fields no status reader of a workload looks at.
const CONTAINER_UNREAD: [&str; 8] =
    ["env", "envFrom", "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"];

/// Pod templates nest at different depths per kind (`spec.pytorchReplicaSpecs.Worker.template
/// .spec`, `spec.replicatedJobs[].template.spec.template.spec`, Kueue's `podSets[].template`):
/// every object with a `containers` array is taken as a pod spec. Depth is bounded so a
/// hostile object cannot recurse without end.
fn templates(v: &mut Value, depth: usize) {
    if depth > 32 {
        return;
    }
    match v {
        Value::Object(map) => {
            if map.get("containers").is_some_and(Value::is_array) {
                map.remove("volumes");
                for key in ["containers", "initContainers"] {
                    if let Some(Value::Array(cs)) = map.get_mut(key) {
                        for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                            for k in CONTAINER_UNREAD {
                                c.remove(k);
                            }
                        }
                    }
                }
            }
            for child in map.values_mut() {
                templates(child, depth + 1);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|c| templates(c, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ml", "uid": "u", "resourceVersion": "7",
                "labels": {"app": "x"},
                "annotations": {"flightdeck.io/submitted-by": "alice", MIRROR: "m",
                    "kubectl.kubernetes.io/last-applied-configuration": "{…}"},
                "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]},
            "spec": {"nodeName": "n1", "priority": 5, "nodeSelector": {"nvidia.com/gpu.product": "H100"},
                "schedulingGates": [{"name": "g"}],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "tolerations": [{"key": "k", "operator": "Exists"}],
                "containers": [{"name": "main", "image": "img", "workingDir": "/w",
                    "env": [{"name": "A", "value": "b"}], "command": ["python"],
                    "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                    "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
                "initContainers": [{"name": "side", "restartPolicy": "Always", "env": [{"name": "B"}]}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "qosClass": "Guaranteed", "startTime": "2025-01-01T00:00:00Z",
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"},
                    {"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [{"name": "main", "image": "img", "imageID": "sha256:abc", "containerID": "c://1",
                    "ready": true, "restartCount": 3, "started": true,
                    "state": {"running": {"startedAt": "2025-01-01T00:00:01Z"}},
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "containerID": "c://0"}}}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_keeps_what_is_read_and_nothing_else() {
        let mut p = pod();
        p.trim();
        let m = &p.metadata;
        assert!(m.managed_fields.is_none());
        let kept: Vec<&str> = m.annotations.as_ref().unwrap().keys().map(String::as_str).collect();
        assert_eq!(kept, vec!["flightdeck.io/submitted-by", MIRROR]);
        assert_eq!(m.labels.as_ref().unwrap()["app"], "x");
        assert_eq!(m.resource_version.as_deref(), Some("7"));
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("n1"));
        assert_eq!(spec.priority, Some(5));
        assert!(spec.volumes.is_none() && spec.tolerations.is_none());
        assert_eq!(spec.scheduling_gates.as_ref().unwrap()[0].name, "g");
        let c = &spec.containers[0];
        assert!(c.env.is_none() && c.image.is_none() && c.volume_mounts.is_none() && c.command.is_none());
        assert_eq!(c.working_dir.as_deref(), Some("/w"));
        assert!(c.resources.as_ref().unwrap().limits.as_ref().unwrap().contains_key("nvidia.com/gpu"));
        let init = &spec.init_containers.as_ref().unwrap()[0];
        assert_eq!(init.restart_policy.as_deref(), Some("Always"));
        assert!(init.env.is_none());
        let st = p.status.as_ref().unwrap();
        assert!(st.pod_ip.is_none() && st.qos_class.is_none());
        assert_eq!(st.phase.as_deref(), Some("Running"));
        let kept: Vec<&str> = st.conditions.iter().flatten().map(|c| c.type_.as_str()).collect();
        assert_eq!(kept, vec!["Ready", "PodScheduled"]);
        let cs = &st.container_statuses.as_ref().unwrap()[0];
        assert_eq!((cs.name.as_str(), cs.restart_count, cs.ready), ("main", 3, true));
        assert!(cs.image.is_empty() && cs.image_id.is_empty() && cs.container_id.is_none() && cs.started.is_none());
        let last = cs.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!(
            (last.exit_code, last.reason.as_deref(), last.container_id.as_deref()),
            (137, Some("OOMKilled"), None)
        );
        assert!(cs.state.as_ref().unwrap().running.is_some());
    }

    #[test]
    fn annotations_nobody_reads_leave_no_empty_map() {
        let mut m = ObjectMeta { annotations: Some([("a".to_string(), "b".to_string())].into()), ..Default::default() };
        meta(&mut m);
        assert!(m.annotations.is_none());
    }

    #[test]
    fn workload_templates_lose_env_and_volumes_at_any_depth() {
        let mut o: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "ml", "managedFields": [{"manager": "m"}],
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {"parallelism": 4, "template": {"spec": {
                "nodeSelector": {"a": "b"},
                "volumes": [{"name": "v"}],
                "containers": [{"name": "c", "image": "i", "env": [{"name": "X"}], "livenessProbe": {},
                    "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}}]},
            "status": {"replicatedJobsStatus": [{"name": "w", "ready": 2}]}
        }))
        .unwrap();
        o.trim();
        assert!(o.metadata.managed_fields.is_none() && o.metadata.annotations.is_none());
        let pod = &o.data["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
        assert!(pod.get("volumes").is_none());
        assert_eq!(pod["nodeSelector"]["a"], "b");
        let c = &pod["containers"][0];
        assert!(c.get("env").is_none() && c.get("livenessProbe").is_none());
        assert_eq!((c["image"].as_str(), c["resources"]["limits"]["nvidia.com/gpu"].as_str()), (Some("i"), Some("8")));
        assert_eq!(o.data["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"], 4);
        assert_eq!(o.data["status"]["replicatedJobsStatus"][0]["ready"], 2);
    }

    #[test]
    fn a_node_drops_its_image_list() {
        let mut n: Node = serde_json::from_value(json!({
            "metadata": {"name": "n", "labels": {"nvidia.com/gpu.product": "H100"},
                "annotations": {"flightdeck.io/drain-reason": "hbm", "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "images": [{"names": ["a@sha256:1"], "sizeBytes": 1}], "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "",
                "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "", "kubeProxyVersion": "",
                "operatingSystem": "linux", "architecture": "amd64"}}
        }))
        .unwrap();
        n.trim();
        let st = n.status.as_ref().unwrap();
        assert!(st.images.is_none() && st.node_info.is_none());
        assert_eq!(st.capacity.as_ref().unwrap().len(), 1);
        assert_eq!(n.spec.as_ref().unwrap().taints.as_ref().unwrap().len(), 1);
        assert_eq!(n.metadata.annotations.as_ref().unwrap().len(), 1);
    }
}
