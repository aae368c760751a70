//! A Kubernetes cluster's section of `[[cluster]]`: which kubeconfig context, which
//! namespaces, which Kueue queue. Several contexts are several `[[cluster]]` entries.
//!
//! ```toml
//! [[cluster]]
//! name = "k8s-prod"
//! kind = "kubernetes"
//! context = "prod"             # optional: a kubeconfig context (default: the current one)
//! kubeconfig = "~/.kube/config" # optional (default: $KUBECONFIG, else ~/.kube/config)
//! namespaces = ["ml", "infer"] # optional (default: every namespace the user may list)
//! queue = "team-a"             # optional: Kueue LocalQueue for submissions
//! multi_node = "jobset"        # what a spec of several nodes becomes: jobset (default), pytorchjob, mpijob, volcano
//! refresh_seconds = 10         # how often the (watched) picture is re-read at the latest
//! timeout_seconds = 30         # bound on every request and action
//! ```

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::workloads::submit::MultiNode;
use crate::config::{ClusterKind, ClusterSection, FileError, KindConfig, KindSettings, Settings};

// The kind's name lives in its folder, not in `model` (which names no kind): removing the
// kind removes the constant with it.
impl ClusterKind {
    pub const KUBERNETES: ClusterKind = ClusterKind::from_static("kubernetes");
}

/// Which part of which Kubernetes cluster to watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeConfig {
    /// The kubeconfig context; `None` is the current one.
    pub context: Option<String>,
    /// The kubeconfig file (`~` already expanded); `None` is `$KUBECONFIG`, else
    /// `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// The namespaces to watch; empty means every namespace the user may list.
    pub namespaces: Vec<String>,
    /// The Kueue LocalQueue that submissions go to.
    pub queue: Option<String>,
    /// The workload a spec of several nodes is submitted as.
    pub multi_node: MultiNode,
}

impl KindSettings for KubeConfig {
    const KIND: ClusterKind = ClusterKind::KUBERNETES;
}

impl KubeConfig {
    /// The keys of the section, as written in the file.
    pub const KEYS: &'static [&'static str] = &["context", "kubeconfig", "multi_node", "namespaces", "queue"];

    /// A context of a kubeconfig file, every other setting at its default.
    pub fn context_of(kubeconfig: impl Into<PathBuf>, context: impl Into<String>) -> Self {
        Self { context: Some(context.into()), kubeconfig: Some(kubeconfig.into()), ..Self::default() }
    }

    /// Read and check the section.
    pub fn parse(section: &ClusterSection<'_>) -> Result<KubeConfig, FileError> {
        let raw: Raw = section.deserialize()?;
        let mut out = KubeConfig::default();

        // context, queue: one word each.
        if let Some(value) = &raw.context {
            check_context(value.get_ref()).map_err(|why| section.bad_value("context", value, why))?;
            out.context = Some(value.get_ref().clone());
        }
        if let Some(value) = &raw.queue {
            check_k8s_name(value.get_ref(), 63, true).map_err(|why| section.bad_value("queue", value, why))?;
            out.queue = Some(value.get_ref().clone());
        }
        if let Some(value) = &raw.multi_node {
            out.multi_node = MultiNode::parse(value.get_ref()).ok_or_else(|| {
                section.bad_value(
                    "multi_node",
                    value,
                    format!(
                        "{:?} is no workload kind flightdeck submits; one of {}",
                        value.get_ref(),
                        MultiNode::NAMES.join(", ")
                    ),
                )
            })?;
        }
        if let Some(value) = &raw.kubeconfig {
            out.kubeconfig = Some(section.file_path("kubeconfig", value)?);
        }
        if let Some(list) = &raw.namespaces {
            if list.get_ref().is_empty() {
                return Err(section.bad_value(
                    "namespaces",
                    list,
                    "the list is empty (leave `namespaces` out to watch every namespace you may list)",
                ));
            }
            for ns in list.get_ref() {
                let value = ns.get_ref();
                let why = check_k8s_name(value, 63, false)
                    .err()
                    .or_else(|| out.namespaces.contains(value).then(|| format!("{value:?} is listed twice")));
                if let Some(why) = why {
                    return Err(section.bad_value("namespaces", ns, why));
                }
                out.namespaces.push(value.clone());
            }
        }
        Ok(out)
    }
}

/// The config module's view of the kind (its line in the backend registry).
pub fn kind_config() -> KindConfig {
    KindConfig {
        kind: ClusterKind::KUBERNETES,
        keys: KubeConfig::KEYS,
        parse: |section| KubeConfig::parse(section).map(Settings::new),
    }
}

/// The section as written (shared keys are read by the config module).
#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    context: Option<Spanned<String>>,
    #[serde(default)]
    kubeconfig: Option<Spanned<String>>,
    #[serde(default)]
    multi_node: Option<Spanned<String>>,
    #[serde(default)]
    namespaces: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    queue: Option<Spanned<String>>,
}

/// A kubeconfig context name: non-empty, no control characters.
fn check_context(value: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err("the value is empty".into());
    }
    if value.chars().any(char::is_control) {
        return Err(format!("{value:?} contains a control character"));
    }
    Ok(())
}

/// A Kubernetes name: a namespace (DNS-1123 label: `[a-z0-9-]`, starting and ending with a
/// letter or digit) or, with `label_value`, a label value (also `A-Z`, `_`, `.`), at most
/// `max` characters.
pub(super) fn check_k8s_name(value: &str, max: usize, label_value: bool) -> Result<(), String> {
    let what = if label_value { "a queue name" } else { "a namespace name" };
    if value.is_empty() {
        return Err("the value is empty".into());
    }
    if value.len() > max {
        return Err(format!("{value:?} is longer than {max} characters"));
    }
    let allowed = |c: char| {
        c.is_ascii_digit()
            || c == '-'
            || c.is_ascii_lowercase()
            || (label_value && (c.is_ascii_uppercase() || c == '_' || c == '.'))
    };
    if let Some(bad) = value.chars().find(|c| !allowed(*c)) {
        return Err(format!("{value:?} contains {bad:?}, which {what} cannot hold"));
    }
    if !value.starts_with(|c: char| c.is_ascii_alphanumeric()) || !value.ends_with(|c: char| c.is_ascii_alphanumeric())
    {
        return Err(format!("{what} starts and ends with a letter or digit, {value:?} does not"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::backend::registry::testing::{parse, refused_naming_key as refused};
    use crate::config::ClusterConfig;

    /// Another kind's section, made up here: a kind's tests name no other kind's folder.
    #[derive(Debug, Clone, PartialEq)]
    struct OtherKind;

    impl crate::config::KindSettings for OtherKind {
        const KIND: ClusterKind = ClusterKind::from_static("other");
    }

    const BASE: &str = "[[cluster]]\nname = \"k\"\nkind = \"kubernetes\"\n";

    #[test]
    fn kubernetes_clusters() {
        let text = "[[cluster]]\nname = \"prod\"\nkind = \"kubernetes\"\ncontext = \"gke_proj_zone_prod\"\n\
                    kubeconfig = \"/etc/kube/config\"\nnamespaces = [\"ml\", \"infer\"]\nqueue = \"team-a\"\n\
                    multi_node = \"PyTorchJob\"\ntimeout_seconds = 5\n\n[[cluster]]\nname = \"dev\"\nkind = \"kubernetes\"\n";
        let config = parse(text).unwrap();
        let prod = &config.clusters[0];
        assert_eq!(prod.kind(), ClusterKind::KUBERNETES);
        assert_eq!(prod.timeout, Duration::from_secs(5));
        assert_eq!(
            prod.section::<KubeConfig>(),
            Some(&KubeConfig {
                context: Some("gke_proj_zone_prod".into()),
                kubeconfig: Some(PathBuf::from("/etc/kube/config")),
                namespaces: vec!["ml".to_string(), "infer".to_string()],
                queue: Some("team-a".into()),
                multi_node: MultiNode::PyTorchJob,
            })
        );
        assert!(prod.section::<OtherKind>().is_none(), "a kubernetes cluster has no other kind's section");
        assert_eq!(config.clusters[1], ClusterConfig::new("dev", KubeConfig::default()).erase());
        assert_eq!(ClusterKind::KUBERNETES.to_string(), "kubernetes");
    }

    #[test]
    fn kubernetes_keys_are_checked() {
        let shown = refused(&format!("{BASE}host = \"login\"\n"), 4, "host");
        assert!(shown.contains("`host` does not apply to a kubernetes cluster in [[cluster]] \"k\""), "{shown}");
        assert!(shown.contains("context, kubeconfig, multi_node, namespaces, queue"), "{shown}");
        let shown = refused(&format!("{BASE}multi_node = \"tfjob\"\n"), 4, "multi_node");
        assert!(
            shown.contains(
                "\"tfjob\" is no workload kind flightdeck submits; one of jobset, pytorchjob, mpijob, volcano"
            ),
            "{shown}"
        );
        let shown = refused("[[cluster]]\nname = \"s\"\nkind = \"slurm\"\nqueue = \"a\"\n", 4, "queue");
        assert!(shown.contains("`queue` does not apply to a slurm cluster"), "{shown}");
        let shown = refused(&format!("{BASE}namespaces = []\n"), 4, "namespaces");
        assert!(shown.contains("the list is empty"), "{shown}");
        let shown = refused(&format!("{BASE}namespaces = [\n  \"ml\",\n  \"ML_x\",\n]\n"), 6, "namespaces");
        assert!(shown.contains("\"ML_x\" contains 'M'"), "{shown}");
        let shown = refused(&format!("{BASE}namespaces = [\"ml\", \"ml\"]\n"), 4, "namespaces");
        assert!(shown.contains("listed twice"), "{shown}");
        refused(&format!("{BASE}namespaces = [\"-ml\"]\n"), 4, "namespaces");
        refused(&format!("{BASE}queue = \"team a\"\n"), 4, "queue");
        refused(&format!("{BASE}context = \"\"\n"), 4, "context");
        refused(&format!("{BASE}kubeconfig = \"\"\n"), 4, "kubeconfig");
        let shown = refused(&format!("{BASE}namespaces = \"ml\"\n"), 4, "namespaces");
        assert!(shown.contains("namespaces"), "{shown}");
        let ok = parse(&format!("{BASE}kubeconfig = \"~/.kube/other\"\nqueue = \"Team_A.1\"\n")).unwrap();
        let kube = ok.clusters[0].section::<KubeConfig>().unwrap();
        assert!(kube.kubeconfig.as_ref().unwrap().ends_with(".kube/other"));
    }
}
