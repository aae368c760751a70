//! What Kubernetes this machine reaches: every context of the user's kubeconfig
//! (`$KUBECONFIG`, else `~/.kube/config`), the current one active.

use futures_util::future::BoxFuture;

use super::config::KubeConfig;
use crate::backend::registry::discovery::cluster_name;
use crate::backend::registry::{Discovery, Found, Line, Look};
use crate::config::Settings;

/// The kind's discovery (its `KindEntry::discover`): the kubeconfig is read, nothing asked.
pub fn discover(_look: &Look) -> BoxFuture<'static, Discovery> {
    Box::pin(async { contexts(::kube::config::Kubeconfig::read().map_err(|e| e.to_string())) })
}

/// One cluster per context of `kubeconfig`; a name the config would refuse is said, not
/// written.
fn contexts(kubeconfig: Result<::kube::config::Kubeconfig, String>) -> Discovery {
    let mut out = Discovery::default();
    let k = match kubeconfig {
        Ok(k) if !k.contexts.is_empty() => k,
        Ok(_) => {
            out.missing.push("Kubernetes (the kubeconfig names no context)".into());
            return out;
        }
        Err(e) => {
            out.missing.push(format!("Kubernetes (no kubeconfig: {e})"));
            return out;
        }
    };
    let current = k.current_context.clone().unwrap_or_default();
    for c in &k.contexts {
        let context = &c.name;
        if context.is_empty() || context.chars().any(char::is_control) {
            out.missing.push(format!(
                "Kubernetes context {context:?} left out: its name is empty or holds control characters"
            ));
            continue;
        }
        let is_current = *context == current;
        // Named after the context; `-k8s` where another kind (the local Slurm's `local`)
        // took that name.
        let base = cluster_name(context).unwrap_or_else(|| "kubernetes".into());
        out.found.push(Found {
            names: vec![base.clone(), format!("{base}-k8s")],
            why: format!(
                "kubeconfig context {context} ({})",
                if is_current { "the current one" } else { "not the current one" }
            ),
            active: is_current,
            settings: Settings::new(KubeConfig { context: Some(context.clone()), ..KubeConfig::default() }),
            section: vec![Line::text("context", context)],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECONFIG: &str = r#"apiVersion: v1
kind: Config
current-context: "arn:aws:eks:us-west-2:1234:cluster/prod"
clusters: []
users: []
contexts:
- name: "arn:aws:eks:us-west-2:1234:cluster/prod"
  context: {cluster: c, user: u}
- name: "///"
  context: {cluster: c, user: u}
- name: "bad\u0007"
  context: {cluster: c, user: u}
"#;

    #[test]
    fn every_context_is_found_and_the_current_one_is_active() {
        let k = ::kube::config::Kubeconfig::from_yaml(KUBECONFIG).unwrap();
        let found = contexts(Ok(k));
        let seen: Vec<(&str, bool)> = found.found.iter().map(|f| (f.names[0].as_str(), f.active)).collect();
        assert_eq!(seen, [("arn-aws-eks-us-west-2-1234-cluster-prod", true), ("kubernetes", false)]);
        let prod = &found.found[0];
        assert_eq!(prod.names[1], "arn-aws-eks-us-west-2-1234-cluster-prod-k8s");
        assert_eq!(prod.why, "kubeconfig context arn:aws:eks:us-west-2:1234:cluster/prod (the current one)");
        let settings = prod.settings.get::<KubeConfig>().unwrap();
        assert_eq!(settings.context.as_deref(), Some("arn:aws:eks:us-west-2:1234:cluster/prod"));
        assert_eq!(found.missing.len(), 1);
        assert!(found.missing[0].contains("left out"), "{:?}", found.missing);
        let none = contexts(Err("no file".into()));
        assert_eq!(none.missing, ["Kubernetes (no kubeconfig: no file)"]);
    }
}
