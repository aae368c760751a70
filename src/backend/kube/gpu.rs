//! What pods hold on each node: GPUs (and CPU and memory), kept up to date one pod event at
//! a time.
//!
//! The scheduler charges a pod to its node for
//! `max(sum of app and sidecar containers, largest init container + the sidecars started
//! before it) + overhead`, per resource, where a container's demand is its request (or its
//! limit when it sets no request: the API server defaults requests to limits). Pods that
//! are not bound to a node yet, and pods that have finished (`Succeeded`, `Failed`), hold
//! nothing.
//!
//! [`Ledger`] keeps each pod's charge and each node's tally, so one pod event costs the
//! arithmetic of that pod alone (subtract its old charge, add its new one) instead of a
//! recount of every pod in the cluster; [`recount`] is the full recount, for checks and
//! for the benchmark.

use std::borrow::Cow;
use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const NVIDIA_GPU: &str = "nvidia.com/gpu";
pub const NVIDIA_SHARED: &str = "nvidia.com/gpu.shared";
pub const NVIDIA_MIG_PREFIX: &str = "nvidia.com/mig-";
pub const AMD_GPU: &str = "amd.com/gpu";
pub const INTEL_GPU_PREFIX: &str = "gpu.intel.com/";

/// Extended resources that are GPUs (whole, MIG slices, time-sliced shares).
pub fn is_gpu_resource(name: &str) -> bool {
    name == NVIDIA_GPU
        || name == NVIDIA_SHARED
        || name.starts_with(NVIDIA_MIG_PREFIX)
        || name == AMD_GPU
        || (name.starts_with(INTEL_GPU_PREFIX) && !name.ends_with("millicores") && !name.ends_with("memory.max"))
}

/// Resources the ledger keeps: CPU, memory and the GPUs.
pub fn is_tracked(name: &str) -> bool {
    name == CPU || name == MEMORY || is_gpu_resource(name)
}

/// A Kubernetes quantity (`500m`, `2`, `1.5Gi`, `64G`, `1e3`) in thousandths of its unit,
/// rounded up (as the API server rounds CPU to millicores); `None` when it does not parse.
/// Values beyond `i64` saturate.
pub fn parse_quantity_milli(text: &str) -> Option<i64> {
    let text = text.trim();
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let number_end = body.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return None;
    }
    // mantissa × 10^-frac_digits × base^exp × 1000; the digits are read in place (this runs
    // for every resource of every container of every pod at each snapshot).
    let digits = || whole.bytes().chain(fraction.bytes());
    if digits().skip_while(|&b| b == b'0').count() > 30 {
        return Some(if negative { i64::MIN } else { i64::MAX });
    }
    let mantissa: i128 = digits().fold(0, |m, b| m * 10 + i128::from(b - b'0'));
    let mut pow10: i32 = 3 - fraction.len() as i32;
    let mut pow2: u32 = 0;
    match suffix {
        "" => {}
        "n" => pow10 -= 9,
        "u" => pow10 -= 6,
        "m" => pow10 -= 3,
        "k" => pow10 += 3,
        "M" => pow10 += 6,
        "G" => pow10 += 9,
        "T" => pow10 += 12,
        "P" => pow10 += 15,
        "E" => pow10 += 18,
        "Ki" => pow2 = 10,
        "Mi" => pow2 = 20,
        "Gi" => pow2 = 30,
        "Ti" => pow2 = 40,
        "Pi" => pow2 = 50,
        "Ei" => pow2 = 60,
        s if s.starts_with(['e', 'E']) => pow10 = pow10.saturating_add(s[1..].parse::<i32>().ok()?),
        _ => return None,
    }
    let saturated = if negative { i64::MIN } else { i64::MAX };
    if mantissa == 0 {
        return Some(0);
    }
    // Anything past 10^±40 is beyond i64 or below one milli-unit: no need to loop there.
    let pow10 = pow10.clamp(-40, 40);
    let mut value = mantissa;
    if pow2 > 0 {
        value = match value.checked_mul(1i128 << pow2) {
            Some(v) => v,
            None => return Some(saturated),
        };
    }
    if pow10 >= 0 {
        for _ in 0..pow10 {
            value = match value.checked_mul(10) {
                Some(v) => v,
                None => return Some(saturated),
            };
        }
    } else {
        // Rounded up, so a tiny positive request still counts as one milli-unit.
        value = match 10i128.checked_pow(pow10.unsigned_abs()) {
            Some(divisor) => value.checked_add(divisor - 1).map_or(value / divisor + 1, |v| v / divisor),
            None => 1,
        };
    }
    let value = i64::try_from(value).unwrap_or(i64::MAX);
    Some(if negative { -value } else { value })
}

/// A quantity in milli-units (unreadable ones count as zero).
pub fn quantity_milli(q: &Quantity) -> i64 {
    parse_quantity_milli(&q.0).unwrap_or(0)
}

/// A quantity in whole units, rounded up (GPU counts, CPUs).
pub fn whole_units(milli: i64) -> u64 {
    if milli <= 0 { 0 } else { (milli as u64).div_ceil(1000) }
}

/// Amounts per resource, in milli-units; a handful of entries, sorted by name. The common
/// resource names are held as the constants above, not copies: every pod's demand is read
/// at each snapshot, so a copy per key was most of that cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Amounts(Vec<(Cow<'static, str>, i64)>);

/// `resource` as a key: the constant where it is a common one.
fn key(resource: &str) -> Cow<'static, str> {
    match resource {
        CPU => Cow::Borrowed(CPU),
        MEMORY => Cow::Borrowed(MEMORY),
        NVIDIA_GPU => Cow::Borrowed(NVIDIA_GPU),
        NVIDIA_SHARED => Cow::Borrowed(NVIDIA_SHARED),
        AMD_GPU => Cow::Borrowed(AMD_GPU),
        other => Cow::Owned(other.to_string()),
    }
}

impl Amounts {
    pub fn get(&self, resource: &str) -> i64 {
        self.0.binary_search_by(|(k, _)| (**k).cmp(resource)).map(|i| self.0[i].1).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.0.iter().map(|(k, v)| (&**k, *v))
    }

    fn slot(&mut self, resource: &str) -> &mut i64 {
        let i = match self.0.binary_search_by(|(k, _)| (**k).cmp(resource)) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (key(resource), 0));
                i
            }
        };
        &mut self.0[i].1
    }

    pub fn add(&mut self, resource: &str, milli: i64) {
        if milli != 0 {
            let slot = self.slot(resource);
            *slot = slot.saturating_add(milli);
        }
    }

    /// Add every amount of `other` (negated when `sign` is -1); entries that reach zero go.
    pub fn merge(&mut self, other: &Amounts, sign: i64) {
        for (k, v) in other.iter() {
            self.add(k, v.saturating_mul(sign));
        }
        self.0.retain(|(_, v)| *v != 0);
    }

    /// Per resource, the larger of the two.
    fn max_with(&mut self, other: &Amounts) {
        for (k, v) in other.iter() {
            let slot = self.slot(k);
            *slot = (*slot).max(v);
        }
    }

    /// Whole GPUs of every GPU resource together.
    pub fn gpus(&self) -> u64 {
        self.iter().filter(|(k, _)| is_gpu_resource(k)).map(|(_, v)| whole_units(v)).sum()
    }

    /// The GPU resources held, `(resource, whole count)`.
    pub fn gpu_resources(&self) -> impl Iterator<Item = (&str, u64)> {
        self.iter().filter(|(k, _)| is_gpu_resource(k)).map(|(k, v)| (k, whole_units(v)))
    }
}

/// What one container asks for: its requests, and its limits where it sets no request.
fn container_demand(resources: Option<&ResourceRequirements>) -> Amounts {
    let mut out = Amounts::default();
    add_container_demand(&mut out, resources);
    out
}

/// [`container_demand`] added into `out`: each resource appears once per container, so this
/// is the same sum as merging the container's own amounts, without building them first
/// (every pod's containers are read at each snapshot).
fn add_container_demand(out: &mut Amounts, resources: Option<&ResourceRequirements>) {
    let Some(r) = resources else { return };
    if let Some(requests) = &r.requests {
        for (k, q) in requests {
            if is_tracked(k) {
                out.add(k, quantity_milli(q));
            }
        }
    }
    if let Some(limits) = &r.limits {
        for (k, q) in limits {
            if is_tracked(k) && r.requests.as_ref().is_none_or(|req| !req.contains_key(k)) {
                out.add(k, quantity_milli(q));
            }
        }
    }
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// What a pod asks of its node (see the module documentation), whether or not it is bound.
pub fn pod_demand(pod: &Pod) -> Amounts {
    pod.spec.as_ref().map(spec_demand).unwrap_or_default()
}

/// [`pod_demand`] of a pod spec alone (a workload's pod template, read without making a pod
/// of it).
pub fn spec_demand(spec: &PodSpec) -> Amounts {
    // Room for CPU, memory and a GPU resource or two without growing.
    let mut app = Amounts(Vec::with_capacity(4));
    for c in &spec.containers {
        add_container_demand(&mut app, c.resources.as_ref());
    }
    // As `merge` leaves it: amounts that summed to zero go.
    app.0.retain(|(_, v)| *v != 0);
    let mut sidecars = Amounts::default();
    let mut init_peak = Amounts::default();
    for c in spec.init_containers.iter().flatten() {
        let own = container_demand(c.resources.as_ref());
        if is_sidecar(c) {
            sidecars.merge(&own, 1);
            init_peak.max_with(&sidecars);
        } else {
            let mut while_running = own;
            while_running.merge(&sidecars, 1);
            init_peak.max_with(&while_running);
        }
    }
    let mut total = app;
    total.merge(&sidecars, 1);
    total.max_with(&init_peak);
    // Pod-level resources (`spec.resources`, CPU and memory only) replace the containers' sum.
    let pod_level = container_demand(spec.resources.as_ref());
    for (k, v) in pod_level.iter() {
        *total.slot(k) = v;
    }
    if let Some(overhead) = &spec.overhead {
        for (k, q) in overhead {
            if is_tracked(k) {
                total.add(k, quantity_milli(q));
            }
        }
    }
    total.0.retain(|(_, v)| *v != 0);
    total
}

/// Whether two pods' demands are the same by construction: every field [`pod_demand`] reads
/// is equal. Pods made from one template (a workload's replicas) are, and comparing those
/// fields costs less than reading the quantities again.
pub fn same_demand(a: &Pod, b: &Pod) -> bool {
    match (&a.spec, &b.spec) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let init = |s: &PodSpec| s.init_containers.as_deref().unwrap_or(&[]).len();
            a.containers.len() == b.containers.len()
                && a.containers.iter().zip(&b.containers).all(|(x, y)| x.resources == y.resources)
                && init(a) == init(b)
                && a.init_containers
                    .iter()
                    .flatten()
                    .zip(b.init_containers.iter().flatten())
                    .all(|(x, y)| x.resources == y.resources && x.restart_policy == y.restart_policy)
                && a.resources == b.resources
                && a.overhead == b.overhead
        }
        _ => false,
    }
}

/// The phase says the pod will never run again.
pub fn is_terminated(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
}

/// A pod that `kubectl drain` leaves alone: a mirror (static) pod or a DaemonSet's pod.
pub fn is_node_bound(pod: &Pod) -> bool {
    let mirror = pod.metadata.annotations.as_ref().is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    let daemon =
        pod.metadata.owner_references.iter().flatten().any(|o| o.kind == "DaemonSet" && o.controller == Some(true));
    mirror || daemon
}

/// What one pod holds on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodCharge {
    pub node: Box<str>,
    pub amounts: Amounts,
    /// Counts towards "work still running here" (not a mirror or DaemonSet pod).
    pub workload: bool,
}

/// What the pod holds now: `None` when it is not bound or has finished.
pub fn pod_charge(pod: &Pod) -> Option<PodCharge> {
    let node = holding_node(pod)?;
    Some(PodCharge { node: node.into(), amounts: pod_demand(pod), workload: !is_node_bound(pod) })
}

/// The node a pod holds now: bound to it and not terminated.
pub fn holding_node(pod: &Pod) -> Option<&str> {
    let node = pod.spec.as_ref()?.node_name.as_deref().filter(|n| !n.is_empty())?;
    (!is_terminated(pod)).then_some(node)
}

/// One node's tally.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeTally {
    pub amounts: Amounts,
    /// Active pods bound to the node.
    pub pods: u32,
    /// Of those, the ones that are neither mirror nor DaemonSet pods.
    pub workload_pods: u32,
}

impl NodeTally {
    fn charge(&mut self, c: &PodCharge, sign: i64) {
        self.amounts.merge(&c.amounts, sign);
        if sign > 0 {
            self.pods += 1;
            self.workload_pods += u32::from(c.workload);
        } else {
            self.pods = self.pods.saturating_sub(1);
            self.workload_pods = self.workload_pods.saturating_sub(u32::from(c.workload));
        }
    }
}

/// The key a pod is filed under: `namespace/name`.
pub fn pod_key(pod: &Pod) -> String {
    format!("{}/{}", pod.metadata.namespace.as_deref().unwrap_or(""), pod.metadata.name.as_deref().unwrap_or(""))
}

/// Every pod's charge and every node's tally, updated per pod event.
#[derive(Debug, Default)]
pub struct Ledger {
    pods: HashMap<String, PodCharge>,
    nodes: HashMap<Box<str>, NodeTally>,
}

impl Ledger {
    /// A pod was added or changed. Returns whether any tally moved.
    pub fn apply(&mut self, pod: &Pod) -> bool {
        let charge = pod_charge(pod);
        let key = pod_key(pod);
        if self.pods.get(&key) == charge.as_ref() {
            return false;
        }
        let old = match charge {
            Some(c) => {
                self.nodes.entry(c.node.clone()).or_default().charge(&c, 1);
                self.pods.insert(key, c)
            }
            None => self.pods.remove(&key),
        };
        if let Some(old) = old {
            self.uncharge(&old);
        }
        true
    }

    /// A pod was deleted.
    pub fn remove(&mut self, key: &str) -> bool {
        match self.pods.remove(key) {
            Some(old) => {
                self.uncharge(&old);
                true
            }
            None => false,
        }
    }

    fn uncharge(&mut self, old: &PodCharge) {
        if let Some(t) = self.nodes.get_mut(&old.node) {
            t.charge(old, -1);
            if t.pods == 0 && t.amounts.is_empty() {
                self.nodes.remove(&old.node);
            }
        }
    }

    /// After a re-list: forget the pods `keep` says are gone.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        let gone: Vec<String> = self.pods.keys().filter(|k| !keep(k)).cloned().collect();
        for k in gone {
            self.remove(&k);
        }
    }

    pub fn node(&self, name: &str) -> Option<&NodeTally> {
        self.nodes.get(name)
    }

    pub fn nodes(&self) -> &HashMap<Box<str>, NodeTally> {
        &self.nodes
    }

    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }
}

/// The full recount: every node's tally from scratch.
pub fn recount<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> HashMap<Box<str>, NodeTally> {
    let mut nodes: HashMap<Box<str>, NodeTally> = HashMap::new();
    for pod in pods {
        if let Some(c) = pod_charge(pod) {
            nodes.entry(c.node.clone()).or_default().charge(&c, 1);
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_quantities_neither_panic_nor_spin() {
        assert_eq!(parse_quantity_milli("1e2147483647"), Some(i64::MAX));
        assert_eq!(parse_quantity_milli("2e-42"), Some(1));
        assert_eq!(parse_quantity_milli("0e999999999"), Some(0));
        assert_eq!(parse_quantity_milli("-3e-2147483648"), Some(-1));
        assert_eq!(parse_quantity_milli("1.5Gi"), Some(1_610_612_736_000));
    }
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn gpu_pod(name: &str, node: &str, gpus: &str) -> Pod {
        pod(json!({
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
            "status": {"phase": "Running"}
        }))
    }

    #[test]
    fn quantities() {
        let q = |s| parse_quantity_milli(s);
        assert_eq!(q("1"), Some(1000));
        assert_eq!(q("500m"), Some(500));
        assert_eq!(q("0.5"), Some(500));
        assert_eq!(q(".5"), Some(500));
        assert_eq!(q("0.0001"), Some(1), "rounded up to a milli-unit");
        assert_eq!(q("1Ki"), Some(1024 * 1000));
        assert_eq!(q("1.5Gi"), Some(3 * (1 << 29) * 1000));
        assert_eq!(q("64G"), Some(64_000_000_000 * 1000));
        assert_eq!(q("1e3"), Some(1_000_000));
        assert_eq!(q("1E-3"), Some(1));
        assert_eq!(q("100n"), Some(1));
        assert_eq!(q("-2"), Some(-2000));
        assert_eq!(q("8Ei"), Some(i64::MAX));
        assert_eq!(q(""), None);
        assert_eq!(q("abc"), None);
        assert_eq!(q("1Q"), None);
        assert_eq!(q("1.2.3"), None);
        assert_eq!(whole_units(1), 1);
        assert_eq!(whole_units(2000), 2);
        assert_eq!(whole_units(-5), 0);
    }

    #[test]
    fn gpu_resource_names() {
        for r in
            ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared", "amd.com/gpu", "gpu.intel.com/i915"]
        {
            assert!(is_gpu_resource(r), "{r}");
        }
        for r in ["cpu", "memory", "nvidia.com/gpu.product", "gpu.intel.com/millicores", "example.com/fpga"] {
            assert!(!is_gpu_resource(r), "{r}");
        }
    }

    #[test]
    fn limits_stand_in_for_missing_requests() {
        let p = pod(json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "2"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m", "example.com/foo": "3"}}}
        ]}}));
        let d = pod_demand(&p);
        assert_eq!(d.get(CPU), 1250);
        assert_eq!(d.get(MEMORY), (1 << 30) * 1000);
        assert_eq!(d.get(NVIDIA_GPU), 2000);
        assert_eq!(d.get("example.com/foo"), 0, "untracked resources are left out");
        assert_eq!(d.gpus(), 2);
    }

    #[test]
    fn same_demand_only_where_every_field_read_is_equal() {
        let spec = |gpus: &str, extra: serde_json::Value| {
            let mut v = json!({"metadata": {"name": "p"}, "spec": {"containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": gpus}}}
            ]}});
            for (k, x) in extra.as_object().into_iter().flatten() {
                v["spec"][k] = x.clone();
            }
            pod(v)
        };
        let a = spec("8", json!({}));
        assert!(same_demand(&a, &spec("8", json!({"nodeName": "elsewhere"}))), "fields it does not read differ");
        assert!(!same_demand(&a, &spec("4", json!({}))));
        assert!(!same_demand(&a, &spec("8", json!({"overhead": {"cpu": "100m"}}))));
        let side = |policy: &str| {
            spec(
                "8",
                json!({"initContainers": [{"name": "s", "restartPolicy": policy, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}),
            )
        };
        assert!(same_demand(&side("Always"), &side("Always")));
        assert!(!same_demand(&side("Always"), &side("Never")), "a sidecar and an init container charge apart");
        assert!(!same_demand(&a, &side("Always")));
        assert!(!same_demand(&a, &pod(json!({"metadata": {"name": "bare"}}))));
        for (x, y) in [(&a, &a), (&side("Always"), &side("Always"))] {
            assert!(same_demand(x, y) && pod_demand(x) == pod_demand(y));
        }
    }

    #[test]
    fn init_containers_sidecars_and_overhead() {
        // app: 2 GPUs; sidecar 1 GPU (started first); init "big" 4 GPUs after the sidecar
        // → init peak 4 + 1 = 5 > app + sidecars = 3; overhead adds CPU only.
        let p = pod(json!({"spec": {
            "overhead": {"cpu": "100m"},
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "100m"}}},
                {"name": "big", "resources": {"limits": {"nvidia.com/gpu": "4"}, "requests": {"cpu": "2"}}}
            ],
            "containers": [{"name": "app", "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "1"}}}]
        }}));
        let d = pod_demand(&p);
        assert_eq!(d.get(NVIDIA_GPU), 5000);
        // CPU: app 1 + sidecar 0.1 = 1.1 vs init 2 + 0.1 = 2.1 → 2.1, plus 0.1 overhead.
        assert_eq!(d.get(CPU), 2200);

        // An init container before the sidecar does not add the sidecar.
        let p = pod(json!({"spec": {
            "initContainers": [
                {"name": "big", "resources": {"limits": {"nvidia.com/gpu": "4"}}},
                {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
            "containers": [{"name": "app", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
        }}));
        assert_eq!(pod_demand(&p).get(NVIDIA_GPU), 4000);
        // Sidecars larger than the init peak: app + sidecars wins.
        let p = pod(json!({"spec": {
            "initContainers": [
                {"name": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
            ],
            "containers": [{"name": "app", "resources": {"limits": {"nvidia.com/gpu": "3"}}}]
        }}));
        assert_eq!(pod_demand(&p).get(NVIDIA_GPU), 5000);
    }

    #[test]
    fn pod_level_resources_replace_the_containers_sum() {
        let p = pod(json!({"spec": {
            "resources": {"requests": {"cpu": "8", "memory": "16Gi"}},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]
        }}));
        let d = pod_demand(&p);
        assert_eq!(d.get(CPU), 8000);
        assert_eq!(d.get(NVIDIA_GPU), 1000);
    }

    #[test]
    fn unbound_and_finished_pods_hold_nothing() {
        let mut p = gpu_pod("a", "n1", "2");
        assert_eq!(pod_charge(&p).unwrap().amounts.gpus(), 2);
        p.spec.as_mut().unwrap().node_name = None;
        assert!(pod_charge(&p).is_none());
        let mut p = gpu_pod("a", "n1", "2");
        for phase in ["Succeeded", "Failed"] {
            p.status.as_mut().unwrap().phase = Some(phase.into());
            assert!(pod_charge(&p).is_none(), "{phase}");
        }
        p.status.as_mut().unwrap().phase = Some("Pending".into());
        assert!(pod_charge(&p).is_some(), "bound but not started still holds its GPUs");
    }

    #[test]
    fn ledger_follows_events_and_matches_a_recount() {
        let mut ledger = Ledger::default();
        let mut pods = vec![gpu_pod("a", "n1", "2"), gpu_pod("b", "n1", "1"), gpu_pod("c", "n2", "4")];
        for p in &pods {
            assert!(ledger.apply(p));
        }
        assert!(!ledger.apply(&pods[0]), "an unchanged pod moves nothing");
        assert_eq!(ledger.node("n1").unwrap().amounts.gpus(), 3);
        assert_eq!(ledger.node("n1").unwrap().pods, 2);
        assert_eq!(ledger.node("n2").unwrap().amounts.gpus(), 4);

        // b finishes; c moves (a re-created pod of the same name on another node).
        pods[1].status.as_mut().unwrap().phase = Some("Succeeded".into());
        ledger.apply(&pods[1]);
        pods[2].spec.as_mut().unwrap().node_name = Some("n1".into());
        ledger.apply(&pods[2]);
        assert_eq!(ledger.node("n1").unwrap().amounts.gpus(), 6);
        assert!(ledger.node("n2").is_none(), "an emptied node's tally goes");
        assert_eq!(ledger.nodes(), &recount(&pods));

        assert!(ledger.remove("ml/a"));
        assert!(!ledger.remove("ml/a"));
        assert_eq!(ledger.node("n1").unwrap().amounts.gpus(), 4);
        ledger.retain(|k| k != "ml/c");
        assert!(ledger.node("n1").is_none());
        assert_eq!(ledger.pod_count(), 0);
    }

    #[test]
    fn daemonset_and_mirror_pods_are_not_workload() {
        let mut p = gpu_pod("ds", "n1", "0");
        p.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "u", "controller": true
            }))
            .unwrap(),
        ]);
        assert!(is_node_bound(&p));
        assert!(!pod_charge(&p).unwrap().workload);
        let mut m = gpu_pod("static", "n1", "0");
        m.metadata.annotations = Some([("kubernetes.io/config.mirror".to_string(), "x".to_string())].into());
        assert!(is_node_bound(&m));
        let mut ledger = Ledger::default();
        ledger.apply(&p);
        ledger.apply(&m);
        ledger.apply(&gpu_pod("w", "n1", "1"));
        let t = ledger.node("n1").unwrap();
        assert_eq!((t.pods, t.workload_pods), (3, 1));
    }
}
