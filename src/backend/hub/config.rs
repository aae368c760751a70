//! A hub's section of `[[cluster]]`: one entry for every cluster a `flightdeck serve`
//! serves.
//!
//! ```toml
//! [[cluster]]
//! name = "team-hub"                  # names the hub in messages; its clusters keep their own names
//! kind = "hub"
//! url = "https://hub.example:50051"  # or http:// on loopback, or unix:/run/flightdeck/hub.sock
//! token_env = "FLIGHTDECK_HUB_TOKEN" # or token_file = "~/.config/flightdeck/hub-token" (owner-only)
//! ca_file = "/etc/flightdeck/hub-ca.pem"   # optional: a private CA for the hub's certificate
//! clusters = ["fd22", "k8s-prod"]    # optional: only these of the hub's clusters
//! insecure = false                   # true: send the token over plain http:// to another machine
//! ```

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use crate::backend::http::TokenSource;
use crate::backend::hub_link::channel::HubUrl;
use crate::config::{ClusterConfig, ClusterKind, ClusterSection, FileError, KindConfig, KindSettings, Settings};

/// The kind's name in the config file.
pub const KIND: ClusterKind = ClusterKind::from_static("hub");

/// Where `--hub URL` reads its token from.
pub const TOKEN_ENV: &str = "FLIGHTDECK_HUB_TOKEN";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubConfig {
    pub url: HubUrl,
    /// `None`: no token sent (a hub on a Unix socket knows its callers by their uid).
    pub token: Option<TokenSource>,
    pub ca_file: Option<PathBuf>,
    /// Only these of the hub's clusters (all when empty).
    pub clusters: Vec<String>,
    /// Send the token over plain `http://` to another machine all the same (`--insecure`).
    pub insecure: bool,
}

impl KindSettings for HubConfig {
    const KIND: ClusterKind = KIND;
}

impl HubConfig {
    pub const KEYS: &'static [&'static str] = &["url", "token_env", "token_file", "ca_file", "clusters", "insecure"];

    /// What `--hub URL` means: every cluster of that hub, the token from
    /// `FLIGHTDECK_HUB_TOKEN` when it is set; `insecure` is `--insecure`.
    pub fn from_flag(url: &str, insecure: bool) -> Result<HubConfig, String> {
        let url: HubUrl = url.parse().map_err(|e| format!("--hub {url:?}: {e}"))?;
        let token = std::env::var_os(TOKEN_ENV).map(|_| TokenSource::Env(TOKEN_ENV.to_string()));
        check_clear_text(&url, token.as_ref(), insecure).map_err(|e| format!("--hub {url}: {e}"))?;
        Ok(HubConfig { url, token, ca_file: None, clusters: Vec::new(), insecure })
    }

    pub fn parse(section: &ClusterSection<'_>) -> Result<HubConfig, FileError> {
        let raw: Raw = section.deserialize()?;
        let url = raw.url.get_ref().parse::<HubUrl>().map_err(|why| section.bad_value("url", &raw.url, why))?;
        let token_env = raw.token_env.as_ref().map(|v| v.get_ref().clone());
        let token_file = match &raw.token_file {
            Some(value) => Some(section.file_path("token_file", value)?),
            None => None,
        };
        let token = match TokenSource::from_keys(token_env, token_file) {
            Ok(source) => source,
            Err(why) => {
                let (key, value) = match (&raw.token_env, &raw.token_file) {
                    (_, Some(file)) => ("token_file", file),
                    (Some(env), None) => ("token_env", env),
                    (None, None) => ("url", &raw.url),
                };
                return Err(section.bad_value(key, value, why));
            }
        };
        let ca_file = match &raw.ca_file {
            Some(value) => Some(section.file_path("ca_file", value)?),
            None => None,
        };
        let mut clusters = Vec::new();
        if let Some(list) = &raw.clusters {
            for name in list.get_ref() {
                crate::config::check_cluster_name(name).map_err(|why| section.bad_value("clusters", list, why))?;
                clusters.push(name.clone());
            }
        }
        let insecure = raw.insecure.as_ref().is_some_and(|v| *v.get_ref());
        check_clear_text(&url, token.as_ref(), insecure).map_err(|why| section.bad_value("url", &raw.url, why))?;
        Ok(HubConfig { url, token, ca_file, clusters, insecure })
    }
}

/// A bearer token is sent in clear text across a network only when asked for: anyone on
/// the path could read it and act as its user.
fn check_clear_text(url: &HubUrl, token: Option<&TokenSource>, insecure: bool) -> Result<(), String> {
    if token.is_some() && url.exposes_tokens() && !insecure {
        return Err(format!(
            "{url} is plain http:// to another machine, and the bearer token would cross the network in clear text; use https://, or give --insecure (insecure = true in a config entry) to send it anyway"
        ));
    }
    Ok(())
}

/// The config module's view of the kind. A hub is never part of the embedded default:
/// it is named in a config file or with `--hub`.
pub fn kind_config() -> KindConfig {
    KindConfig { kind: KIND, keys: HubConfig::KEYS, parse: |section| HubConfig::parse(section).map(Settings::new) }
}

/// The cluster entry `--hub URL` (and `--insecure`) stands for.
pub fn flag_cluster(url: &str, insecure: bool) -> Result<ClusterConfig, String> {
    Ok(ClusterConfig::new("hub", HubConfig::from_flag(url, insecure)?).erase())
}

#[derive(Deserialize)]
struct Raw {
    url: Spanned<String>,
    #[serde(default)]
    token_env: Option<Spanned<String>>,
    #[serde(default)]
    token_file: Option<Spanned<String>>,
    #[serde(default)]
    ca_file: Option<Spanned<String>>,
    #[serde(default)]
    clusters: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    insecure: Option<Spanned<bool>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> Option<TokenSource> {
        Some(TokenSource::Env(TOKEN_ENV.to_string()))
    }

    #[test]
    fn a_token_crosses_a_network_in_clear_text_only_when_asked() {
        let open: HubUrl = "http://10.0.0.5:50051".parse().unwrap();
        let err = check_clear_text(&open, token().as_ref(), false).unwrap_err();
        assert!(err.contains("clear text") && err.contains("--insecure"), "{err}");
        assert_eq!(check_clear_text(&open, token().as_ref(), true), Ok(()));
        // No token, nothing to leak (a hub that needs one refuses the call).
        assert_eq!(check_clear_text(&open, None, false), Ok(()));
        for url in [
            "http://127.0.0.1:50051",
            "http://[::1]:50051",
            "http://localhost:50051",
            "https://10.0.0.5:50051",
            "unix:/run/hub.sock",
        ] {
            let url: HubUrl = url.parse().unwrap();
            assert_eq!(check_clear_text(&url, token().as_ref(), false), Ok(()), "{url}");
        }
        assert!("http://hub.example.org:50051".parse::<HubUrl>().unwrap().exposes_tokens());
    }
}
