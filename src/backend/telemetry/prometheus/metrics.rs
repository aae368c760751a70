//! The metrics asked of Prometheus, from both exporters, and what each one measures.
//!
//! dcgm-exporter names its metrics after DCGM fields (`DCGM_FI_DEV_GPU_UTIL`); AMD's
//! device-metrics-exporter uses lower-case names (`gpu_gfx_activity`), sometimes behind an
//! `amd_` prefix that a site's exporter configuration or relabelling adds. Both sets go into
//! the same query: a cluster has one vendor or the other (or both), and one request costs
//! the same either way.

use super::labels::{KeyLabels, READ};

/// What a metric measures, whichever exporter sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// Busy percentage, 0–100: "a kernel was running" (NVIDIA), the graphics engine (AMD).
    Util,
    /// The graphics engine's active ratio, 0–1 (DCGM profiling): the better idle signal.
    EngineActive,
    MemUsed,
    MemFree,
    MemReserved,
    MemTotal,
    Power,
    /// AMD's socket power, where `gpu_power_usage` is absent.
    PackagePower,
    Temp,
    /// AMD MI2xx's edge temperature, where the junction's is absent.
    EdgeTemp,
    /// The last XID the driver reported (0: none).
    Xid,
    /// Uncorrectable (double-bit) ECC errors.
    EccUncorrectable,
    /// Non-zero when row remapping has failed.
    RowRemapFailure,
}

/// How many [`Field`]s there are (the size of a GPU's figure table).
pub(super) const FIELDS: usize = 13;

/// How the figures of a GPU's MIG instances make the GPU's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fold {
    /// Memory: the instances' shares add up to the device.
    Sum,
    /// Activity: the device is as busy as its instances on average.
    Mean,
    /// Device-wide figures every instance repeats (power, temperature, errors).
    Max,
}

impl Field {
    pub(super) fn fold(self) -> Fold {
        match self {
            Field::MemUsed | Field::MemFree | Field::MemReserved | Field::MemTotal => Fold::Sum,
            Field::Util | Field::EngineActive => Fold::Mean,
            _ => Fold::Max,
        }
    }
}

/// dcgm-exporter's metrics (`etc/default-counters.csv`, plus the profiling, ECC and memory
/// fields sites commonly enable).
const NVIDIA: &[(&str, Field)] = &[
    ("DCGM_FI_DEV_GPU_UTIL", Field::Util),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", Field::EngineActive),
    ("DCGM_FI_DEV_FB_USED", Field::MemUsed),
    ("DCGM_FI_DEV_FB_FREE", Field::MemFree),
    ("DCGM_FI_DEV_FB_RESERVED", Field::MemReserved),
    ("DCGM_FI_DEV_FB_TOTAL", Field::MemTotal),
    ("DCGM_FI_DEV_POWER_USAGE", Field::Power),
    ("DCGM_FI_DEV_GPU_TEMP", Field::Temp),
    ("DCGM_FI_DEV_XID_ERRORS", Field::Xid),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Field::EccUncorrectable),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", Field::RowRemapFailure),
];

/// AMD device-metrics-exporter's metrics (its `metricslist.md`), without a prefix.
const AMD: &[(&str, Field)] = &[
    ("gpu_gfx_activity", Field::Util),
    ("gpu_used_vram", Field::MemUsed),
    ("gpu_free_vram", Field::MemFree),
    ("gpu_total_vram", Field::MemTotal),
    ("gpu_power_usage", Field::Power),
    ("gpu_package_power", Field::PackagePower),
    ("gpu_average_package_power", Field::PackagePower),
    ("gpu_junction_temperature", Field::Temp),
    ("gpu_edge_temperature", Field::EdgeTemp),
    ("gpu_ecc_uncorrect_total", Field::EccUncorrectable),
];

/// The prefix some AMD deployments put before every metric name.
const AMD_PREFIX: &str = "amd_";

/// The metrics that say how busy a GPU is (a note names them when none came back).
pub(super) const UTILISATION_METRICS: &str = "DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_GR_ENGINE_ACTIVE, gpu_gfx_activity";

/// What `name` measures, if it is one of the metrics asked for.
pub(super) fn field_of(name: &str) -> Option<Field> {
    let find = |table: &[(&str, Field)], name: &str| table.iter().find(|(n, _)| *n == name).map(|(_, f)| *f);
    if name.starts_with("DCGM_") {
        return find(NVIDIA, name);
    }
    find(AMD, name.strip_prefix(AMD_PREFIX).unwrap_or(name))
}

/// How the metrics are named in a query: one selector, or `a or b or …` for servers that
/// refuse a selector without a metric name (some multi-tenant front ends do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    Selector,
    Alternation,
}

impl Form {
    /// Every metric, `{__name__=~"DCGM_FI_DEV_GPU_UTIL|…|(amd_)?(gpu_gfx_activity|…)"}`
    /// (Prometheus anchors the regular expression, so nothing else matches), or the same
    /// as `DCGM_FI_DEV_GPU_UTIL or … or amd_gpu_gfx_activity or …`.
    pub(super) fn vector(self) -> String {
        match self {
            Form::Selector => {
                let nvidia: Vec<&str> = NVIDIA.iter().map(|(n, _)| *n).collect();
                let amd: Vec<&str> = AMD.iter().map(|(n, _)| *n).collect();
                format!("{{__name__=~\"{}|({AMD_PREFIX})?({})\"}}", nvidia.join("|"), amd.join("|"))
            }
            Form::Alternation => NVIDIA
                .iter()
                .map(|(n, _)| n.to_string())
                .chain(AMD.iter().flat_map(|(n, _)| [n.to_string(), format!("{AMD_PREFIX}{n}")]))
                .collect::<Vec<_>>()
                .join(" or "),
        }
    }
}

/// A reading is two queries. The first, `group by (Hostname, …, UUID, modelName, pod, …)
/// (VECTOR)`, names every GPU once with all it is known by (host, device, model, owner),
/// and no figure; the second ([`values_query`]) carries the figures with only the labels
/// that tell GPUs apart. At 10,000 GPUs and eight metrics that is 10,000 series with the
/// long labels and 80,000 with the short ones, where one query carrying everything would
/// repeat the UUID, model and owner on every metric: half the bytes, and the time to read
/// them. A label named that a series lacks is simply absent, so every exporter's spellings
/// are asked for at once; labels that are not read (`DCGM_FI_DRIVER_VERSION`, `device`,
/// `pci_bus_id`, `job`: a third of a full series) never leave Prometheus.
pub(super) fn identity_query(form: Form) -> String {
    let labels: Vec<&str> = READ.iter().copied().filter(|l| *l != "__name__").collect();
    format!("group by ({}) ({})", labels.join(", "), form.vector())
}

/// `max by (__name__, Hostname, gpu) (VECTOR)`: each metric of each GPU, keyed by the
/// labels the identity answer showed it is found by ([`super::samples::Assembler::value_keys`]);
/// series those labels do not tell apart (one GPU scraped by two jobs) become one.
pub(super) fn values_query(form: Form, keys: KeyLabels) -> String {
    format!("max by (__name__, {}) ({})", keys.names().join(", "), form.vector())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_found_with_and_without_the_amd_prefix() {
        for (name, field) in NVIDIA.iter().chain(AMD) {
            assert_eq!(field_of(name), Some(*field), "{name}");
        }
        assert_eq!(field_of("amd_gpu_gfx_activity"), Some(Field::Util));
        assert_eq!(field_of("amd_DCGM_FI_DEV_GPU_UTIL"), None);
        assert_eq!(field_of("DCGM_FI_DEV_SM_CLOCK"), None);
        assert_eq!(field_of("up"), None);
    }

    #[test]
    fn both_query_forms_name_every_metric() {
        let selector = Form::Selector.vector();
        let alternation = Form::Alternation.vector();
        assert!(selector.starts_with("{__name__=~\"DCGM_FI_DEV_GPU_UTIL|"), "{selector}");
        assert!(selector.ends_with("|gpu_ecc_uncorrect_total)\"}"), "{selector}");
        for (name, _) in NVIDIA.iter().chain(AMD) {
            assert!(selector.contains(name), "{name}");
            assert!(alternation.split(" or ").any(|n| n == *name), "{name}");
        }
        assert!(alternation.split(" or ").any(|n| n == "amd_gpu_used_vram"));
        assert_eq!(FIELDS, Field::RowRemapFailure as usize + 1);
    }

    #[test]
    fn the_identity_query_keeps_every_read_label_and_the_values_query_only_the_keys() {
        let identity = identity_query(Form::Selector);
        assert!(
            identity.starts_with("group by (Hostname, hostname, kubernetes_node, node, instance, gpu, "),
            "{identity}"
        );
        assert!(identity.contains(", UUID, uuid, gpu_uuid, modelName, ") && identity.contains(", hpc_job, "));
        assert!(!identity.contains("__name__,"), "one series per GPU, not per metric: {identity}");
        assert!(identity.ends_with(&format!(") ({})", Form::Selector.vector())));
        let keys = KeyLabels::host(0) | KeyLabels(1 << 5);
        let values = values_query(Form::Alternation, keys);
        assert_eq!(values, format!("max by (__name__, Hostname, gpu) ({})", Form::Alternation.vector()));
    }
}
