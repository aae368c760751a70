//! Series → one [`GpuSample`] per GPU.
//!
//! Each series is one metric of one GPU (or of one MIG instance of it). The GPU is found by
//! its host (matched to a snapshot node once per distinct label value) and its device index,
//! then the value lands in that GPU's table of figures. Nothing per series is kept beyond
//! that table, and label text stays borrowed from the answer until the samples are made.

use crate::model::words::counted;
use std::borrow::Cow;
use std::collections::hash_map::Entry;

use foldhash::{HashMap, HashMapExt};

use super::answer::Sink;
use super::hosts::{Hosts, without_port};
use super::labels::{KeyLabels, Labels, Text};
use super::metrics::{self, FIELDS, Field, Fold};
use super::xid;
use crate::backend::http::clean_message;
use crate::model::{GpuOwner, GpuSample};

/// Where DCGM's "blank" values start (`DCGM_INT32_BLANK` is 0x7ffffff0; the 64-bit and
/// floating-point blanks are larger): a field the device does not report, not a figure.
/// No metric read here comes near it (memory is in MiB, power in watts).
const DCGM_BLANK: f64 = 2_147_483_632.0;

/// Device indices looked up directly rather than hashed (a node has at most a few dozen
/// GPUs, or MIG-less indices up to 63 at worst).
const DIRECT_INDICES: u32 = 64;

/// Host names a note lists before "and N more".
const EXAMPLES: usize = 3;

/// A GPU on its host: by index where the exporter gives one, else by UUID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Device<'a> {
    Index(u32),
    Uuid(Cow<'a, str>),
}

/// What a host label value stands for: a snapshot node, or a host the cluster does not
/// list (numbered in order of appearance).
#[derive(Debug, Clone, Copy)]
enum Slot {
    Node(u32),
    Unknown(u32),
}

enum Owner<'a> {
    Pod { namespace: Text<'a>, name: Text<'a> },
    Job(Text<'a>),
}

/// One GPU's figures so far.
struct Gpu<'a> {
    /// A node index, or the snapshot's node count plus an unknown host's number.
    host: u32,
    device: Device<'a>,
    uuid: Option<Text<'a>>,
    product: Option<Text<'a>>,
    owner: Option<Owner<'a>>,
    mig: bool,
    value: [f64; FIELDS],
    /// Series folded into each figure (0: none came).
    seen: [u16; FIELDS],
}

impl<'a> Gpu<'a> {
    fn new(host: u32, device: Device<'a>) -> Self {
        Gpu {
            host,
            device,
            uuid: None,
            product: None,
            owner: None,
            mig: false,
            value: [0.0; FIELDS],
            seen: [0; FIELDS],
        }
    }

    fn apply(&mut self, field: Field, v: f64, mig: bool) {
        let i = field as usize;
        self.mig |= mig;
        // A repeated series of a whole GPU (scraped twice) replaces the figure; MIG
        // instances fold into it.
        if !mig || self.seen[i] == 0 {
            self.value[i] = v;
            self.seen[i] = 1;
            return;
        }
        self.seen[i] = self.seen[i].saturating_add(1);
        match field.fold() {
            Fold::Sum | Fold::Mean => self.value[i] += v,
            Fold::Max => self.value[i] = self.value[i].max(v),
        }
    }

    fn get(&self, field: Field) -> Option<f64> {
        let i = field as usize;
        match self.seen[i] {
            0 => None,
            n if field.fold() == Fold::Mean => Some(self.value[i] / f64::from(n)),
            _ => Some(self.value[i]),
        }
    }
}

/// The [`Sink`] that builds samples, and counts what it had to leave out.
pub(super) struct Assembler<'de, 's> {
    hosts: &'s Hosts<'s>,
    slots: HashMap<Cow<'de, str>, Slot>,
    /// Unknown hosts by number: their names without a port.
    unknown: Vec<String>,
    unknown_by_name: HashMap<String, u32>,
    /// GPUs by snapshot node and device index, for the usual small indices: `[node][index]` is the
    /// GPU's place in `gpus` plus one (0: not seen yet). No hashing per series.
    by_index: Vec<Vec<u32>>,
    /// The rest: GPUs known by UUID, or with indices past [`DIRECT_INDICES`].
    index: HashMap<(u32, Device<'de>), u32>,
    gpus: Vec<Gpu<'de>>,
    series: usize,
    no_host: usize,
    no_device: usize,
    no_value: usize,
    bad_values: usize,
    bad_example: Option<String>,
    utilisation: bool,
    /// The last metric name and what it measures: an answer comes sorted by name, so one
    /// comparison finds the next series' field.
    last_name: Option<(Text<'de>, Option<Field>)>,
    keys: KeyLabels,
}

impl<'de, 's> Assembler<'de, 's> {
    /// `expected_gpus` pre-sizes the tables (the snapshot's GPU count is a fair guess).
    pub(super) fn new(hosts: &'s Hosts<'s>, expected_gpus: usize) -> Self {
        Assembler {
            hosts,
            slots: HashMap::with_capacity(hosts.len() * 2),
            unknown: Vec::new(),
            unknown_by_name: HashMap::new(),
            by_index: vec![Vec::new(); hosts.len()],
            index: HashMap::new(),
            gpus: Vec::with_capacity(expected_gpus),
            series: 0,
            no_host: 0,
            no_device: 0,
            no_value: 0,
            bad_values: 0,
            bad_example: None,
            utilisation: false,
            last_name: None,
            keys: KeyLabels::default(),
        }
    }

    fn field(&mut self, name: &Text<'de>) -> Option<Field> {
        match &self.last_name {
            Some((last, field)) if last == name => *field,
            _ => {
                let field = metrics::field_of(name.as_str());
                self.last_name = Some((name.clone(), field));
                field
            }
        }
    }

    /// The host key of a series: the first host label that names a snapshot node, else the
    /// first one given (an unknown host); and which spelling that was.
    fn host(&mut self, labels: &Labels<'de>) -> Option<(u32, KeyLabels)> {
        let mut unknown = None;
        for (spelling, text) in labels.hosts.iter().enumerate() {
            let Some(text) = text else { continue };
            match self.slot(text) {
                Slot::Node(i) => return Some((i, KeyLabels::host(spelling))),
                Slot::Unknown(j) => {
                    unknown.get_or_insert((j, spelling));
                }
            }
        }
        let nodes = u32::try_from(self.hosts.len()).unwrap_or(u32::MAX);
        unknown.map(|(j, spelling)| (nodes.saturating_add(j), KeyLabels::host(spelling)))
    }

    /// The labels a values query must keep for its series to land on the GPUs read so far:
    /// the host spelling each GPU was found by, its device's spellings, its MIG or partition
    /// labels. Empty when no GPU was read.
    pub(super) fn value_keys(&self) -> KeyLabels {
        self.keys
    }

    fn slot(&mut self, text: &Text<'de>) -> Slot {
        if let Some(slot) = self.slots.get(text.as_str()) {
            return *slot;
        }
        let slot = match self.hosts.resolve(text.as_str()) {
            Some(i) => Slot::Node(u32::try_from(i).unwrap_or(u32::MAX)),
            None => {
                let name = without_port(text.as_str()).to_string();
                let next = u32::try_from(self.unknown.len()).unwrap_or(u32::MAX);
                let j = *self.unknown_by_name.entry(name.clone()).or_insert(next);
                if j == next {
                    self.unknown.push(name);
                }
                Slot::Unknown(j)
            }
        };
        self.slots.insert(text.0.clone(), slot);
        slot
    }

    /// The GPU's place in `gpus`, made on its first series; labels fill what it lacks.
    fn gpu(&mut self, host: u32, device: Device<'de>, labels: &Labels<'de>) -> usize {
        let next = self.gpus.len();
        let next_u32 = u32::try_from(next).unwrap_or(u32::MAX);
        let i = match device {
            // A snapshot node's (unknown hosts are few, or left out, and go by hash).
            Device::Index(index) if index < DIRECT_INDICES && (host as usize) < self.by_index.len() => {
                let (h, d) = (host as usize, index as usize);
                let row = &mut self.by_index[h];
                if row.len() <= d {
                    row.resize(d + 1, 0);
                }
                match row[d] {
                    0 => {
                        row[d] = next_u32.saturating_add(1);
                        self.gpus.push(Gpu::new(host, device));
                        next
                    }
                    known => known as usize - 1,
                }
            }
            device => match self.index.entry((host, device)) {
                Entry::Occupied(e) => *e.get() as usize,
                Entry::Vacant(e) => {
                    let device = e.key().1.clone();
                    e.insert(next_u32);
                    self.gpus.push(Gpu::new(host, device));
                    next
                }
            },
        };
        let gpu = &mut self.gpus[i];
        if gpu.uuid.is_none() {
            gpu.uuid = labels.uuid.clone();
        }
        if gpu.product.is_none() {
            gpu.product = labels.product.clone().or_else(|| labels.part.clone());
        }
        if gpu.owner.is_none() {
            gpu.owner = owner(labels);
        }
        i
    }

    /// The samples, and notes on what was left out and why.
    pub(super) fn finish(self) -> (Vec<GpuSample>, Vec<String>) {
        let nodes = self.hosts.len();
        let keep_unknown = self.hosts.is_empty();
        let numbered = number_by_uuid(&self.gpus);
        let mut samples = Vec::with_capacity(self.gpus.len());
        let mut left_out = 0usize;
        let mut left_hosts: Vec<u32> = Vec::new();
        let mut split = 0usize;
        for (i, gpu) in self.gpus.into_iter().enumerate() {
            let host = gpu.host as usize;
            let node = if host < nodes {
                self.hosts.name(host).to_string()
            } else if keep_unknown {
                self.unknown[host - nodes].clone()
            } else {
                left_out += 1;
                left_hosts.push(gpu.host);
                continue;
            };
            let index = match gpu.device {
                Device::Index(index) => index,
                Device::Uuid(_) => numbered.get(&i).copied().unwrap_or(0),
            };
            split += usize::from(gpu.mig);
            samples.push(sample(node, index, gpu));
        }

        let mut notes = Vec::new();
        if self.series == 0 {
            notes.push(
                "Prometheus holds none of the GPU metrics asked for (dcgm-exporter's DCGM_FI_*, AMD's gpu_*): \
                 is a GPU exporter scraped?"
                    .to_string(),
            );
        }
        if left_out > 0 {
            left_hosts.sort_unstable();
            left_hosts.dedup();
            let names: Vec<&str> = left_hosts.iter().map(|h| self.unknown[*h as usize - nodes].as_str()).collect();
            notes.push(format!(
                "{} on {} this cluster does not list {} left out: {}",
                counted(left_out as u64, "GPU", "GPUs"),
                counted(names.len() as u64, "host", "hosts"),
                if left_out == 1 { "was" } else { "were" },
                examples(&names)
            ));
        }
        if self.no_host > 0 {
            notes.push(format!(
                "{} series named no host (Hostname, hostname, kubernetes_node, node or instance) and {} left out",
                self.no_host,
                if self.no_host == 1 { "was" } else { "were" }
            ));
        }
        if self.no_device > 0 {
            notes.push(format!(
                "{} series named no device (gpu, GPU, gpu_id, UUID or gpu_uuid) and {} left out",
                self.no_device,
                if self.no_device == 1 { "was" } else { "were" }
            ));
        }
        if !numbered.is_empty() {
            notes.push(format!(
                "{} no device index (gpu, GPU or gpu_id): numbered by UUID after their host's others",
                counted(numbered.len() as u64, "GPU carried", "GPUs carried")
            ));
        }
        if self.no_value > 0 {
            notes.push(format!("{} series carried no sample value", self.no_value));
        }
        if self.bad_values > 0 {
            notes.push(format!(
                "{} values were not finite numbers and were left out (first: {})",
                self.bad_values,
                self.bad_example.unwrap_or_default()
            ));
        }
        if split > 0 {
            notes.push(format!(
                "{} split into MIG instances: their memory is summed, their activity averaged, the first \
                 instance's owner kept",
                counted(split as u64, "GPU is", "GPUs are")
            ));
        }
        if !samples.is_empty() && !self.utilisation {
            notes.push(format!(
                "no utilisation metric ({}) came back: idle GPUs cannot be told",
                metrics::UTILISATION_METRICS
            ));
        }
        (samples, notes)
    }
}

impl<'de> Sink<'de> for Assembler<'de, '_> {
    fn series(&mut self, labels: &Labels<'de>, value: Option<Text<'de>>) {
        self.series += 1;
        // A series without a name is the identity query's (`group by`): one per GPU, its
        // labels without a figure. Of named ones, only the metrics asked for come back;
        // anything else (a server that ignored the selector) is not a GPU figure.
        let field = match &labels.name {
            None => None,
            Some(name) => match self.field(name) {
                Some(field) => Some(field),
                None => return,
            },
        };
        let Some((host, spelling)) = self.host(labels) else {
            self.no_host += 1;
            return;
        };
        let Some(device) = device(labels) else {
            self.no_device += 1;
            return;
        };
        let by = if matches!(device, Device::Index(_)) { KeyLabels::INDEX } else { KeyLabels::UUID };
        self.keys = self.keys | spelling | labels.keys.of(by) | labels.keys.of(KeyLabels::PART);
        let mig = labels.mig.is_some();
        // The GPU is listed even when this figure is unusable: it exists.
        let gpu = self.gpu(host, device, labels);
        let Some(field) = field else { return };
        self.utilisation |= matches!(field, Field::Util | Field::EngineActive);
        let Some(text) = value else {
            self.no_value += 1;
            return;
        };
        let v = match text.as_str().parse::<f64>() {
            Ok(v) if v.is_finite() => v,
            _ => {
                self.bad_values += 1;
                if self.bad_example.is_none() {
                    self.bad_example = Some(bad_example(labels, text.as_str()));
                }
                return;
            }
        };
        if v >= DCGM_BLANK {
            return;
        }
        self.gpus[gpu].apply(field, v, mig);
    }
}

/// The device a series names: its index label, else its UUID.
fn device<'a>(labels: &Labels<'a>) -> Option<Device<'a>> {
    if let Some(index) = labels.index.as_ref().and_then(|t| t.as_str().parse::<u32>().ok()) {
        return Some(Device::Index(index));
    }
    labels.uuid.as_ref().map(|u| Device::Uuid(u.0.clone()))
}

/// Who the exporter says uses the GPU: a pod (the workload's, `exported_pod` where the
/// scrape target's own `pod` label took the name), else a scheduler's job.
fn owner<'a>(labels: &Labels<'a>) -> Option<Owner<'a>> {
    let (pod, namespace) = match &labels.exported_pod {
        Some(pod) => (Some(pod), labels.exported_namespace.as_ref().or(labels.namespace.as_ref())),
        // Prometheus drops the exporter's empty `pod` label on an unused GPU, and a
        // ServiceMonitor's target labels then put the exporter's own pod there.
        None => (labels.pod.as_ref().filter(|p| !is_exporter(p.as_str())), labels.namespace.as_ref()),
    };
    if let (Some(pod), Some(namespace)) = (pod, namespace) {
        return Some(Owner::Pod { namespace: namespace.clone(), name: pod.clone() });
    }
    labels.job.clone().map(Owner::Job)
}

fn is_exporter(pod: &str) -> bool {
    pod.contains("dcgm-exporter") || pod.contains("metrics-exporter")
}

/// Indices for GPUs known only by UUID: after the highest index on their host, in UUID
/// order, so a reading numbers them the same way each time.
fn number_by_uuid(gpus: &[Gpu<'_>]) -> HashMap<usize, u32> {
    let mut numbered = HashMap::new();
    if !gpus.iter().any(|g| matches!(g.device, Device::Uuid(_))) {
        return numbered;
    }
    let mut next: HashMap<u32, u32> = HashMap::new();
    for g in gpus {
        if let Device::Index(i) = g.device {
            let n = next.entry(g.host).or_default();
            *n = (*n).max(i.saturating_add(1));
        }
    }
    let mut by_uuid: Vec<(u32, &str, usize)> = gpus
        .iter()
        .enumerate()
        .filter_map(|(i, g)| match &g.device {
            Device::Uuid(u) => Some((g.host, u.as_ref(), i)),
            Device::Index(_) => None,
        })
        .collect();
    by_uuid.sort_unstable();
    for (host, _, i) in by_uuid {
        let n = next.entry(host).or_default();
        numbered.insert(i, *n);
        *n = n.saturating_add(1);
    }
    numbered
}

fn sample(node: String, index: u32, gpu: Gpu<'_>) -> GpuSample {
    let mut s = GpuSample::new(node, index);
    // The engine's active ratio is the better idle signal: "a kernel ran" counts a GPU
    // that spins one tiny kernel as 100 % busy.
    s.utilisation =
        gpu.get(Field::EngineActive).map(|r| (r * 100.0) as f32).or_else(|| gpu.get(Field::Util).map(|u| u as f32));
    let used = gpu.get(Field::MemUsed);
    let total = gpu.get(Field::MemTotal).or_else(|| {
        let free = gpu.get(Field::MemFree)?;
        Some(used? + free + gpu.get(Field::MemReserved).unwrap_or(0.0))
    });
    s.memory_used_mb = used.map(megabytes);
    s.memory_total_mb = total.map(megabytes);
    s.power_watts = gpu.get(Field::Power).or_else(|| gpu.get(Field::PackagePower)).map(|w| w as f32);
    s.temperature_c = gpu.get(Field::Temp).or_else(|| gpu.get(Field::EdgeTemp)).map(|c| c as f32);
    if let Some(code) = gpu.get(Field::Xid).filter(|x| *x >= 1.0) {
        let code = code as u32;
        s.last_xid = Some(code);
        s.problems.push(xid::describe(code));
    }
    if let Some(errors) = gpu.get(Field::EccUncorrectable).filter(|n| *n >= 1.0) {
        let errors = errors as u64;
        let plural = if errors == 1 { "" } else { "s" };
        s.problems.push(format!("{errors} uncorrectable ECC error{plural}"));
    }
    if gpu.get(Field::RowRemapFailure).is_some_and(|f| f >= 1.0) {
        s.problems.push("row remapping failed: the GPU needs a reset or replacement".into());
    }
    s.uuid = gpu.uuid.map(|t| t.0.into_owned());
    s.product = gpu.product.map(|t| t.0.into_owned());
    s.owner = gpu.owner.map(|o| match o {
        Owner::Pod { namespace, name } => {
            GpuOwner::Pod { namespace: namespace.0.into_owned(), name: name.0.into_owned() }
        }
        Owner::Job(id) => GpuOwner::Job(id.0.into_owned()),
    });
    s
}

/// MiB (dcgm-exporter) or MB (AMD) as whole numbers; `as` saturates and takes NaN to 0.
fn megabytes(v: f64) -> u64 {
    v.round() as u64
}

fn bad_example(labels: &Labels<'_>, value: &str) -> String {
    let name = labels.name.as_ref().map_or("?", |n| n.as_str());
    let host = labels.hosts.iter().flatten().next().map_or("?", |h| h.as_str());
    let device = labels.index.as_ref().or(labels.uuid.as_ref()).map_or("?", |d| d.as_str());
    clean_message(&format!("{name} = {value:?} on {host} GPU {device}"))
}

fn examples(names: &[&str]) -> String {
    let shown: Vec<String> = names.iter().take(EXAMPLES).map(|n| clean_message(n)).collect();
    match names.len().saturating_sub(EXAMPLES) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}
