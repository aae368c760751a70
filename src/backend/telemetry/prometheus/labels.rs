//! The labels of one series, as the exporters and scrape configurations spell them.
//!
//! Label sets differ by exporter and version (dcgm-exporter 2.x `gpu`, `UUID`, `Hostname`,
//! `modelName`; 3.x/4.x adding `pci_bus_id`, `DCGM_FI_DRIVER_VERSION`, `hpc_job`; AMD's
//! `gpu_id`, `gpu_uuid`, `hostname`, `card_series`, `job_id`) and by what Prometheus added
//! (`instance`, `job`, `exported_pod` where a target label collided). Rather than assume
//! one, every spelling of what the reading needs is a slot here; the rest are skipped
//! without being kept. Values borrow from the answer's bytes (no allocation per label)
//! unless JSON escapes forced a copy.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};

/// A string from the answer, borrowed where it has no escapes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
pub(super) struct Text<'a>(#[serde(borrow)] pub Cow<'a, str>);

impl Text<'_> {
    pub(super) fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a host may be named, most specific first: the exporter's own idea of its machine,
/// then what relabelling attached, then the scrape target.
pub(super) const HOST_LABELS: [&str; 5] = ["Hostname", "hostname", "kubernetes_node", "node", "instance"];

/// Every label name a reading uses, in every spelling: [`Labels::slot`] places each, and the
/// query keeps only these (`max by (…)`), so Prometheus does not send the rest.
pub(super) const READ: [&str; 26] = [
    "__name__",
    "Hostname",
    "hostname",
    "kubernetes_node",
    "node",
    "instance",
    "gpu",
    "GPU",
    "gpu_id",
    "UUID",
    "uuid",
    "gpu_uuid",
    "modelName",
    "card_series",
    "card_model",
    "pod",
    "namespace",
    "exported_pod",
    "exported_namespace",
    "hpc_job",
    "slurm_job_id",
    "job_id",
    "jobid",
    "GPU_I_ID",
    // Not read, kept so MIG instances and AMD partitions stay apart until they are folded.
    "GPU_I_PROFILE",
    "gpu_partition_id",
];

/// The labels that tell one GPU's series from another's: where the values query groups
/// by only those of them an answer uses ([`KeyLabels`]), the identity query's series say
/// which GPU each value belongs to.
pub(super) const KEY: [&str; 14] = [
    "Hostname",
    "hostname",
    "kubernetes_node",
    "node",
    "instance",
    "gpu",
    "GPU",
    "gpu_id",
    "UUID",
    "uuid",
    "gpu_uuid",
    "GPU_I_ID",
    "GPU_I_PROFILE",
    "gpu_partition_id",
];

/// A set of [`KEY`] labels, one bit each in its order.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct KeyLabels(pub u16);

impl KeyLabels {
    pub const INDEX: KeyLabels = KeyLabels(0b111 << 5);
    pub const UUID: KeyLabels = KeyLabels(0b111 << 8);
    /// The MIG instance, and the partition an AMD GPU is split into.
    pub const PART: KeyLabels = KeyLabels(0b111 << 11);

    /// The host spelling at `spelling` in [`HOST_LABELS`], the start of [`KEY`].
    pub fn host(spelling: usize) -> KeyLabels {
        KeyLabels(1 << spelling)
    }

    pub fn of(self, part: KeyLabels) -> KeyLabels {
        KeyLabels(self.0 & part.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The names, in [`KEY`]'s order.
    pub fn names(self) -> Vec<&'static str> {
        KEY.iter().enumerate().filter(|(i, _)| self.0 & (1 << i) != 0).map(|(_, n)| *n).collect()
    }
}

impl std::ops::BitOr for KeyLabels {
    type Output = KeyLabels;
    fn bitor(self, other: KeyLabels) -> KeyLabels {
        KeyLabels(self.0 | other.0)
    }
}

/// The labels a reading uses. Empty values count as absent (Prometheus itself drops them;
/// a proxy might not).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Labels<'a> {
    /// The [`KEY`] labels the series carries, empty or not.
    pub keys: KeyLabels,
    /// `__name__`.
    pub name: Option<Text<'a>>,
    /// In the order of [`HOST_LABELS`].
    pub hosts: [Option<Text<'a>>; HOST_LABELS.len()],
    /// Device index: `gpu` (dcgm-exporter), `GPU`, `gpu_id` (AMD).
    pub index: Option<Text<'a>>,
    /// `UUID` (dcgm-exporter), `uuid`, `gpu_uuid` (AMD).
    pub uuid: Option<Text<'a>>,
    /// `modelName` (dcgm-exporter), `card_series` (AMD).
    pub product: Option<Text<'a>>,
    /// `card_model` (AMD's part number), when there is no series name.
    pub part: Option<Text<'a>>,
    pub pod: Option<Text<'a>>,
    pub namespace: Option<Text<'a>>,
    /// The workload's pod where the scrape target's own `pod` label took the name.
    pub exported_pod: Option<Text<'a>>,
    pub exported_namespace: Option<Text<'a>>,
    /// A scheduler's job: `hpc_job` (dcgm-exporter's HPC job mapping), `slurm_job_id`,
    /// `job_id` (AMD), `jobid`. Never Prometheus's own `job`, which names the scrape job.
    pub job: Option<Text<'a>>,
    /// `GPU_I_ID`: the series is one MIG instance of the GPU.
    pub mig: Option<Text<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Labels<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(LabelsVisitor)
    }
}

struct LabelsVisitor;

impl<'de> Visitor<'de> for LabelsVisitor {
    type Value = Labels<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series' labels (an object of strings)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels<'de>, A::Error> {
        let mut labels = Labels::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match labels.slot(key.as_str()) {
                Some(slot) => fill(slot, map.next_value()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(labels)
    }
}

impl<'a> Labels<'a> {
    /// Where the label `name` goes; `None` for a label the reading does not use.
    pub(super) fn slot(&mut self, name: &str) -> Option<&mut Option<Text<'a>>> {
        let (key, slot) = match name {
            "__name__" => (None, &mut self.name),
            "Hostname" => (Some(0), &mut self.hosts[0]),
            "hostname" => (Some(1), &mut self.hosts[1]),
            "kubernetes_node" => (Some(2), &mut self.hosts[2]),
            "node" => (Some(3), &mut self.hosts[3]),
            "instance" => (Some(4), &mut self.hosts[4]),
            "gpu" => (Some(5), &mut self.index),
            "GPU" => (Some(6), &mut self.index),
            "gpu_id" => (Some(7), &mut self.index),
            "UUID" => (Some(8), &mut self.uuid),
            "uuid" => (Some(9), &mut self.uuid),
            "gpu_uuid" => (Some(10), &mut self.uuid),
            "modelName" | "card_series" => (None, &mut self.product),
            "card_model" => (None, &mut self.part),
            "pod" => (None, &mut self.pod),
            "namespace" => (None, &mut self.namespace),
            "exported_pod" => (None, &mut self.exported_pod),
            "exported_namespace" => (None, &mut self.exported_namespace),
            "hpc_job" | "slurm_job_id" | "job_id" | "jobid" => (None, &mut self.job),
            "GPU_I_ID" => (Some(11), &mut self.mig),
            // Kept apart, never read.
            "GPU_I_PROFILE" => {
                self.keys.0 |= 1 << 12;
                return None;
            }
            "gpu_partition_id" => {
                self.keys.0 |= 1 << 13;
                return None;
            }
            _ => return None,
        };
        if let Some(bit) = key {
            self.keys.0 |= 1 << bit;
        }
        Some(slot)
    }
}

/// The first non-empty spelling wins where several map to one slot.
pub(super) fn fill<'a>(slot: &mut Option<Text<'a>>, value: Text<'a>) {
    if slot.is_none() && !value.0.is_empty() {
        *slot = Some(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_lands_in_its_slot_and_borrows() {
        let json = br#"{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"3","UUID":"GPU-1","Hostname":"dgx01",
            "modelName":"NVIDIA H100 80GB HBM3","pod":"","namespace":"ml","hpc_job":"42",
            "instance":"10.0.0.5:9400","job":"dcgm","pci_bus_id":"00000000:07:00.0","GPU_I_ID":"2"}"#;
        let labels: Labels = serde_json::from_slice(json).unwrap();
        let text = |t: &Option<Text>| t.as_ref().map(|t| t.as_str().to_string());
        assert_eq!(text(&labels.name).as_deref(), Some("DCGM_FI_DEV_GPU_UTIL"));
        assert!(matches!(labels.name, Some(Text(Cow::Borrowed(_)))), "no copy without escapes");
        assert_eq!(text(&labels.hosts[0]).as_deref(), Some("dgx01"));
        assert_eq!(text(&labels.hosts[4]).as_deref(), Some("10.0.0.5:9400"));
        assert_eq!(text(&labels.index).as_deref(), Some("3"));
        assert_eq!(text(&labels.job).as_deref(), Some("42"), "hpc_job, not Prometheus's job");
        assert_eq!(labels.pod, None, "an empty value is no value");
        assert_eq!(text(&labels.mig).as_deref(), Some("2"));
    }

    #[test]
    fn amd_spellings_and_escaped_values() {
        let json = br#"{"gpu_id":"7","gpu_uuid":"ccff","hostname":"mi01","card_series":"AMD Instinct MI300X OAM",
            "card_model":"102-G30211-0C","job_id":"9","exported_pod":"a\u002db","exported_namespace":"x"}"#;
        let labels: Labels = serde_json::from_slice(json).unwrap();
        assert_eq!(labels.index.unwrap().as_str(), "7");
        assert_eq!(labels.hosts[1].as_ref().unwrap().as_str(), "mi01");
        assert_eq!(labels.product.unwrap().as_str(), "AMD Instinct MI300X OAM");
        assert_eq!(labels.exported_pod.unwrap().as_str(), "a-b");
        assert_eq!(labels.job.unwrap().as_str(), "9");
    }

    #[test]
    fn every_name_the_query_keeps_has_a_slot_and_no_other_has_one() {
        let mut labels = Labels::default();
        let kept_unread = ["GPU_I_PROFILE", "gpu_partition_id"];
        for name in READ.iter().filter(|n| !kept_unread.contains(n)) {
            assert!(labels.slot(name).is_some(), "{name} is kept but not read");
        }
        for name in ["job", "device", "pci_bus_id", "DCGM_FI_DRIVER_VERSION", "container", "Gpu"] {
            assert!(labels.slot(name).is_none(), "{name}");
        }
        assert!(kept_unread.iter().all(|n| READ.contains(n) && Labels::default().slot(n).is_none()));
    }

    #[test]
    fn key_labels_are_placed_by_their_own_bit() {
        assert_eq!(KEY[..HOST_LABELS.len()], HOST_LABELS);
        assert!(KEY.iter().all(|k| READ.contains(k)));
        let json = br#"{"__name__":"x","Hostname":"h","instance":"i:9400","gpu_id":"0","UUID":"u","GPU_I_PROFILE":"1g.10gb","pod":"p"}"#;
        let labels: Labels = serde_json::from_slice(json).unwrap();
        assert_eq!(labels.keys.names(), ["Hostname", "instance", "gpu_id", "UUID", "GPU_I_PROFILE"]);
        assert_eq!(labels.keys.of(KeyLabels::INDEX).names(), ["gpu_id"]);
        assert_eq!(labels.keys.of(KeyLabels::PART).names(), ["GPU_I_PROFILE"]);
        assert_eq!((KeyLabels::host(4) | labels.keys.of(KeyLabels::UUID)).names(), ["instance", "UUID"]);
    }

    #[test]
    fn a_label_that_is_not_a_string_is_refused_by_name() {
        let err = serde_json::from_slice::<Labels>(br#"{"gpu":0}"#).unwrap_err().to_string();
        assert!(err.contains("invalid type: integer"), "{err}");
        assert!(serde_json::from_slice::<Labels>(b"[]").is_err());
    }
}
