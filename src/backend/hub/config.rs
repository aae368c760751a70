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
//! ```

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::channel::HubUrl;
use crate::backend::http::TokenSource;
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
}

impl KindSettings for HubConfig {
    const KIND: ClusterKind = KIND;
}

impl HubConfig {
    pub const KEYS: &'static [&'static str] = &["url", "token_env", "token_file", "ca_file", "clusters"];

    /// What `--hub URL` means: every cluster of that hub, the token from
    /// `FLIGHTDECK_HUB_TOKEN` when it is set.
    pub fn from_flag(url: &str) -> Result<HubConfig, String> {
        let url: HubUrl = url.parse().map_err(|e| format!("--hub {url:?}: {e}"))?;
        let token = std::env::var_os(TOKEN_ENV).map(|_| TokenSource::Env(TOKEN_ENV.to_string()));
        Ok(HubConfig { url, token, ca_file: None, clusters: Vec::new() })
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
        Ok(HubConfig { url, token, ca_file, clusters })
    }
}

/// The config module's view of the kind. A hub is never part of the embedded default:
/// it is named in a config file or with `--hub`.
pub fn kind_config() -> KindConfig {
    KindConfig {
        kind: KIND,
        keys: HubConfig::KEYS,
        parse: |section| HubConfig::parse(section).map(Settings::new),
        defaults: |_| Vec::new(),
    }
}

/// The cluster entry `--hub URL` stands for.
pub fn flag_cluster(url: &str) -> Result<ClusterConfig, String> {
    Ok(ClusterConfig::new("hub", HubConfig::from_flag(url)?).erase())
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
}
