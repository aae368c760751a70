//! One GPU vocabulary for the whole fleet: every backend's native GPU name → a canonical
//! model, so GPUs can be added up and matched across clusters.
//!
//! The same board has a different name on every system: a Slurm site writes `h100` in its
//! `gres.conf`, Slurm's NVML auto-detection writes `nvidia_h100_80gb_hbm3`, the Kubernetes
//! GPU Feature Discovery label says `NVIDIA-H100-80GB-HBM3`, AMD's labeller
//! `AMD_Instinct_MI300X_OAM`, the clouds `H100`, `H100-80GB` or `nvidia-h100-80gb`. The
//! canonical model is the short lower-case name Slurm sites write: `h100`, `h200`, `a100`,
//! `l40s`, `a10g`, `t4`, `mi300x`, `gb200`.
//!
//! How a name becomes a model ([`canonical`]):
//!
//! * a trailing `-SHARED` (GFD's mark of a time-sliced GPU) is taken off and becomes the
//!   `shared` flag: a share is not a whole GPU, so the front ends keep shares apart;
//! * a MIG profile (`1g.10gb`, `mig-3g.40gb`, GFD's `NVIDIA-A100-SXM4-80GB-MIG-1g.10gb`) is
//!   the profile alone: a slice is scheduled by its profile whatever board it is cut from;
//! * otherwise the name is split into words (at `-`, `_`, space), the vendor words (`nvidia`,
//!   `tesla`, `amd`, `instinct`) are dropped, and the first word left is looked up in
//!   [`FAMILIES`]. Form factor, memory type and packaging words (`sxm4`, `pcie`, `hbm3`,
//!   `oam`, `80gb`) are ignored, except where one board name covers two memory sizes that
//!   jobs must tell apart: `a100` (40 GB) vs `a100-80gb`, `v100` (16 GB) vs `v100-32gb`,
//!   and `h100` (80 GB, SXM or PCIe) vs `h100-nvl` (94 GB, a different board);
//! * anything else passes through lower-cased and otherwise untouched, so an unknown site
//!   name (`rtx6000`, `gpu`) still reads as the site wrote it.
//!
//! The native string is kept beside the model (`gpu_product` on slots and jobs), so nothing
//! is lost by the mapping.

use std::borrow::Cow;

/// A GPU as the fleet names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GpuName {
    /// The canonical model (`h100`, `a100-80gb`, `1g.10gb`), or the native name lower-cased.
    pub model: String,
    /// A time-sliced share of a GPU (`-SHARED`), not a whole one.
    pub shared: bool,
}

/// A board family: the word that names it, the model it becomes, and the words that pick a
/// variant which jobs must tell apart (a different memory size under the same name).
pub struct Family {
    pub word: &'static str,
    pub model: &'static str,
    pub variants: &'static [(&'static str, &'static str)],
}

const fn family(word: &'static str) -> Family {
    Family { word, model: word, variants: &[] }
}

/// Every family flightdeck knows by name. A family's canonical model is its own word.
pub const FAMILIES: &[Family] = &[
    // NVIDIA data-centre boards, newest first.
    family("gb300"),
    family("gb200"),
    family("b300"),
    family("b200"),
    family("b100"),
    family("gh200"),
    family("h200"),
    Family { word: "h100", model: "h100", variants: &[("nvl", "h100-nvl")] },
    family("h800"),
    family("h20"),
    family("l40s"),
    family("l40"),
    family("l4"),
    Family { word: "a100", model: "a100", variants: &[("80gb", "a100-80gb"), ("80g", "a100-80gb")] },
    family("a800"),
    family("a40"),
    family("a30"),
    family("a10g"),
    family("a10"),
    family("a16"),
    family("a2"),
    family("t4"),
    Family { word: "v100", model: "v100", variants: &[("32gb", "v100-32gb"), ("32g", "v100-32gb")] },
    family("v100s"),
    family("p100"),
    family("p40"),
    family("p4"),
    family("k80"),
    // AMD Instinct.
    family("mi355x"),
    family("mi325x"),
    family("mi300x"),
    family("mi300a"),
    family("mi250x"),
    family("mi250"),
    family("mi210"),
    family("mi100"),
];

/// Words that name the vendor or the product line, not the board.
const VENDOR_WORDS: [&str; 4] = ["nvidia", "tesla", "amd", "instinct"];

/// The fleet's name for a backend's GPU name (see the module comment for the rules).
pub fn canonical(native: &str) -> GpuName {
    let native = native.trim();
    // Lower-cased on the stack where it fits (every product label does): this runs for every
    // GPU pod of every snapshot.
    let mut stack = [0u8; 64];
    let heap;
    let lower: &str = match stack.get_mut(..native.len()) {
        Some(bytes) => {
            bytes.copy_from_slice(native.as_bytes());
            bytes.make_ascii_lowercase();
            // ASCII lower-casing keeps UTF-8 valid, so this never falls back.
            std::str::from_utf8(bytes).unwrap_or_default()
        }
        None => {
            heap = native.to_ascii_lowercase();
            &heap
        }
    };
    let (base, shared) = match lower.strip_suffix("-shared") {
        Some(base) => (base, true),
        None => (lower, false),
    };
    let model = mig_profile(base).or_else(|| family_model(base)).unwrap_or_else(|| base.to_string());
    GpuName { model, shared }
}

/// The canonical model alone.
pub fn canonical_model(native: &str) -> String {
    canonical(native).model
}

/// How a model is shown: `t4 (shared)` for time-sliced shares, the model otherwise.
pub fn label(model: &str, shared: bool) -> Cow<'_, str> {
    if shared { Cow::Owned(format!("{model} (shared)")) } else { Cow::Borrowed(model) }
}

/// `1g.10gb` from `1g.10gb`, `mig-1g.10gb` or `nvidia-a100-sxm4-80gb-mig-1g.10gb` (lower-case).
fn mig_profile(name: &str) -> Option<String> {
    let profile = match name.rfind("-mig-") {
        Some(i) => &name[i + "-mig-".len()..],
        None => name.strip_prefix("mig-").unwrap_or(name),
    };
    is_mig_profile(profile).then(|| profile.to_string())
}

/// `1g.10gb`, `3g.40gb`, `1g.10gb+me`, `1c.2g.20gb` (a compute instance of a GPU instance).
pub fn is_mig_profile(s: &str) -> bool {
    let core = s.split('+').next().unwrap_or(s);
    let parts: Vec<&str> = core.split('.').collect();
    let number_then = |p: &str, unit: &str| {
        p.strip_suffix(unit).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    match parts.as_slice() {
        [g, mem] => number_then(g, "g") && number_then(mem, "gb"),
        [c, g, mem] => number_then(c, "c") && number_then(g, "g") && number_then(mem, "gb"),
        _ => false,
    }
}

fn family_model(name: &str) -> Option<String> {
    let mut words = name.split(['-', '_', ' ']).filter(|w| !w.is_empty()).skip_while(|w| VENDOR_WORDS.contains(w));
    let first = words.next()?;
    let family = FAMILIES.iter().find(|f| f.word == first)?;
    // The words after the family's are walked again per variant, not collected: this runs
    // for every GPU pod of every snapshot, and most families have no variants at all.
    let variant = family.variants.iter().find(|(word, _)| words.clone().any(|w| w == *word)).map(|(_, model)| *model);
    Some(variant.unwrap_or(family.model).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(s: &str) -> String {
        canonical(s).model
    }

    #[test]
    fn kubernetes_gfd_and_amd_labels() {
        for (native, want) in [
            ("NVIDIA-H100-80GB-HBM3", "h100"),
            ("NVIDIA-H100-PCIe", "h100"),
            ("NVIDIA-H100-NVL", "h100-nvl"),
            ("NVIDIA-H200", "h200"),
            ("NVIDIA-H200-141GB-HBM3e", "h200"),
            ("NVIDIA-A100-SXM4-40GB", "a100"),
            ("NVIDIA-A100-PCIE-40GB", "a100"),
            ("NVIDIA-A100-SXM4-80GB", "a100-80gb"),
            ("NVIDIA-A100-80GB-PCIe", "a100-80gb"),
            ("NVIDIA-L40S", "l40s"),
            ("NVIDIA-L4", "l4"),
            ("NVIDIA-A10G", "a10g"),
            ("NVIDIA-A10", "a10"),
            ("Tesla-T4", "t4"),
            ("Tesla-V100-SXM2-16GB", "v100"),
            ("Tesla-V100-SXM2-32GB", "v100-32gb"),
            ("NVIDIA-GB200", "gb200"),
            ("NVIDIA-GH200-480GB", "gh200"),
            ("NVIDIA-B200", "b200"),
            ("AMD_Instinct_MI300X_OAM", "mi300x"),
            ("Instinct MI300X", "mi300x"),
            ("MI300X", "mi300x"),
            ("AMD Instinct MI250X", "mi250x"),
        ] {
            assert_eq!(canonical(native), GpuName { model: want.into(), shared: false }, "{native}");
        }
    }

    #[test]
    fn cloud_and_slurm_autodetect_names() {
        for (native, want) in [
            ("H100", "h100"),
            ("H100-80GB", "h100"),
            ("H100-MEGA-80GB", "h100"),
            ("nvidia-h100-80gb", "h100"),
            ("nvidia-tesla-a100", "a100"),
            ("A100-80GB", "a100-80gb"),
            ("nvidia-a100-80gb", "a100-80gb"),
            ("nvidia-tesla-t4", "t4"),
            ("A10G", "a10g"),
            ("L40S", "l40s"),
            ("nvidia_h100_80gb_hbm3", "h100"),
            ("nvidia_a100-sxm4-80gb", "a100-80gb"),
            ("nvidia_a100-sxm4-40gb", "a100"),
            ("tesla_v100-sxm2-32gb", "v100-32gb"),
            ("a100_80gb", "a100-80gb"),
        ] {
            assert_eq!(model(native), want, "{native}");
        }
    }

    /// Every GPU type in the Slurm fixtures, the slurmrestd captures and the test bed's
    /// `gres.conf` is already canonical, and stays as it is.
    #[test]
    fn slurm_site_names_are_canonical_already() {
        for name in ["h100", "h200", "a100", "l40s", "a100-80gb", "h100-nvl", "v100-32gb", "t4", "mi300x", "gb200"] {
            assert_eq!(canonical(name), GpuName { model: name.into(), shared: false }, "{name}");
            assert_eq!(model(&name.to_ascii_uppercase()), name, "upper-case {name}");
        }
    }

    #[test]
    fn time_sliced_shares_keep_the_model_and_say_shared() {
        assert_eq!(canonical("Tesla-T4-SHARED"), GpuName { model: "t4".into(), shared: true });
        assert_eq!(canonical("NVIDIA-H100-80GB-HBM3-SHARED"), GpuName { model: "h100".into(), shared: true });
        assert_eq!(canonical("gpu-SHARED"), GpuName { model: "gpu".into(), shared: true });
        assert_eq!(label("t4", true), "t4 (shared)");
        assert_eq!(label("t4", false), "t4");
    }

    #[test]
    fn mig_profiles_are_the_profile() {
        for (native, want) in [
            ("1g.10gb", "1g.10gb"),
            ("3g.40gb", "3g.40gb"),
            ("mig-1g.5gb", "1g.5gb"),
            ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "1g.10gb"),
            ("NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", "3g.40gb"),
            ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb+me", "1g.10gb+me"),
            ("1c.2g.20gb", "1c.2g.20gb"),
        ] {
            assert_eq!(model(native), want, "{native}");
        }
        let shared = canonical("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED");
        assert_eq!((shared.model.as_str(), shared.shared), ("1g.5gb", true));
        for not in ["1g", "g.10gb", "1g.10", "xg.10gb", "1g.10gb.5", ""] {
            assert!(!is_mig_profile(not), "{not}");
        }
    }

    #[test]
    fn unknown_names_pass_through_lower_cased() {
        for (native, want) in [
            ("gpu", "gpu"),
            ("RTX6000", "rtx6000"),
            ("NVIDIA-RTX-A6000", "nvidia-rtx-a6000"),
            ("nvidia_geforce_rtx_3090", "nvidia_geforce_rtx_3090"),
            ("intel-xe", "intel-xe"),
            ("  Weird Name ", "weird name"),
            ("", ""),
            ("NVIDIA", "nvidia"),
            ("-SHARED", ""),
        ] {
            assert_eq!(model(native), want, "{native:?}");
        }
    }

    #[test]
    fn canonical_is_idempotent() {
        for f in FAMILIES {
            assert_eq!(model(f.model), f.model);
            for (_, v) in f.variants {
                assert_eq!(model(v), *v);
            }
        }
    }
}
