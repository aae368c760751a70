//! A dstack server's section of `[[cluster]]`: where the server is, which project, where the
//! token comes from, and what a submission asks for on no capacity.
//!
//! ```toml
//! [[cluster]]
//! name = "dstack-main"
//! kind = "dstack"
//! url = "http://127.0.0.1:3000"
//! project = "main"              # optional (default: main)
//! token_env = "DSTACK_TOKEN"    # or token_file = "~/.dstack/token" (owner-only); never inline
//! retry = "1h"                  # optional: submissions wait this long for capacity
//! refresh_seconds = 10
//! timeout_seconds = 30
//! ```
//!
//! With no config file, the embedded default adds the default project of the dstack CLI's
//! own `~/.dstack/config.yml` (its url, project and token), when that file exists
//! (`discover.rs`).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::backend::http::TokenSource;
use crate::config::{ClusterKind, ClusterSection, FileError, KindConfig, KindSettings, Settings};

/// The kind's name in the config file.
pub const KIND: ClusterKind = ClusterKind::from_static("dstack");

/// The project when none is named (dstack's own default).
pub const DEFAULT_PROJECT: &str = "main";

/// Where the bearer token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFrom {
    /// `token_env` or `token_file`.
    Source(TokenSource),
    /// The `token` of `project` in a dstack CLI config file (`~/.dstack/config.yml`), read
    /// when the backend is built: the embedded default.
    CliConfig { path: PathBuf, project: String },
}

/// One project on one dstack server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DstackConfig {
    /// `http://host:port`, without a trailing `/`.
    pub url: String,
    pub project: String,
    /// `None`: no token (a server that wants one answers 401, reported as such).
    pub token: Option<TokenFrom>,
    /// With a duration in seconds, submissions carry `retry: {on_events: [no-capacity,
    /// interruption], duration}`: they wait for capacity instead of failing at once.
    pub retry_secs: Option<u64>,
}

impl Default for DstackConfig {
    fn default() -> Self {
        Self { url: String::new(), project: DEFAULT_PROJECT.into(), token: None, retry_secs: None }
    }
}

impl KindSettings for DstackConfig {
    const KIND: ClusterKind = KIND;
}

impl DstackConfig {
    /// The keys of the section, as written in the file.
    pub const KEYS: &'static [&'static str] = &["url", "project", "token_env", "token_file", "retry"];

    /// A server and project with a token from the environment (tests, embedding).
    pub fn new(url: &str, project: &str, token_env: Option<&str>) -> Self {
        Self {
            url: url.trim_end_matches('/').to_string(),
            project: project.to_string(),
            token: token_env.map(|name| TokenFrom::Source(TokenSource::Env(name.to_string()))),
            retry_secs: None,
        }
    }

    /// Read and check the section.
    pub fn parse(section: &ClusterSection<'_>) -> Result<DstackConfig, FileError> {
        let raw: Raw = section.deserialize()?;
        let mut out = DstackConfig::default();
        let url = &raw.url;
        out.url = check_url(url.get_ref()).map_err(|why| section.bad_value("url", url, why))?;
        if let Some(project) = &raw.project {
            check_project(project.get_ref()).map_err(|why| section.bad_value("project", project, why))?;
            out.project = project.get_ref().clone();
        }
        let token_env = raw.token_env.as_ref().map(|v| v.get_ref().clone());
        let token_file = match &raw.token_file {
            Some(value) => Some(section.file_path("token_file", value)?),
            None => None,
        };
        match TokenSource::from_keys(token_env, token_file) {
            Ok(source) => out.token = source.map(TokenFrom::Source),
            // Both keys, or an unusable variable name: named at the later (or only) key.
            Err(why) => {
                let at = match (&raw.token_env, &raw.token_file) {
                    (Some(_), Some(file)) | (None, Some(file)) => Some(("token_file", file)),
                    (Some(env), None) => Some(("token_env", env)),
                    (None, None) => None,
                };
                if let Some((key, value)) = at {
                    return Err(section.bad_value(key, value, why));
                }
            }
        }
        if let Some(retry) = &raw.retry {
            let secs = crate::spec::parse_time_limit_secs(retry.get_ref())
                .map_err(|why| section.bad_value("retry", retry, why))?;
            if secs == 0 {
                return Err(section.bad_value("retry", retry, "must be longer than 0 s"));
            }
            out.retry_secs = Some(secs);
        }
        Ok(out)
    }
}

/// The config module's view of the kind (its line in the backend registry).
pub fn kind_config() -> KindConfig {
    KindConfig {
        kind: KIND,
        keys: DstackConfig::KEYS,
        parse: |section| DstackConfig::parse(section).map(Settings::new),
    }
}

/// One project of a dstack CLI config file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CliProject {
    pub name: String,
    pub url: String,
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub default: bool,
}

#[derive(Deserialize)]
struct CliFile {
    #[serde(default)]
    projects: Vec<CliProject>,
}

/// The projects of a dstack CLI config file (`~/.dstack/config.yml`), if it reads.
pub fn cli_projects(path: &Path) -> Option<Vec<CliProject>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    serde_saphyr::from_str::<CliFile>(&text).ok().map(|f| f.projects)
}

/// The section as written (shared keys are read by the config module).
#[derive(Deserialize)]
struct Raw {
    /// Required: the server, like `http://127.0.0.1:3000`.
    url: Spanned<String>,
    #[serde(default)]
    project: Option<Spanned<String>>,
    #[serde(default)]
    token_env: Option<Spanned<String>>,
    #[serde(default)]
    token_file: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "text_or_minutes")]
    retry: Option<Spanned<String>>,
}

/// `retry = "1h"` or `retry = 90` (minutes, as job specs write time limits).
fn text_or_minutes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Spanned<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum TextOrInt {
        Text(String),
        Int(u64),
    }
    let value: Option<Spanned<TextOrInt>> = Option::deserialize(d)?;
    Ok(value.map(|v| {
        let span = v.span();
        let text = match v.into_inner() {
            TextOrInt::Text(t) => t,
            TextOrInt::Int(n) => n.to_string(),
        };
        Spanned::new(span, text)
    }))
}

/// An `http://` or `https://` URL with a host and nothing after the port (the API paths
/// are added to it); returned without a trailing `/`.
pub fn check_url(value: &str) -> Result<String, String> {
    let trimmed = value.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        return Err("the value is empty".into());
    }
    if trimmed.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!("{value:?} contains a space or a control character"));
    }
    let Some(rest) = trimmed.strip_prefix("http://").or_else(|| trimmed.strip_prefix("https://")) else {
        return Err(format!("{value:?} is not an http:// or https:// URL"));
    };
    if rest.is_empty() || rest.starts_with([':', '/']) {
        return Err(format!("{value:?} has no host"));
    }
    if rest.contains(['?', '#', '@']) {
        return Err(format!("{value:?} may not carry a query, a fragment or credentials"));
    }
    Ok(trimmed.to_string())
}

/// A dstack project name: what its API paths can hold.
pub(super) fn check_project(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("the value is empty".into());
    }
    if value.len() > 50 {
        return Err(format!("{value:?} is longer than 50 characters"));
    }
    if let Some(bad) = value.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))) {
        return Err(format!("{value:?} contains {bad:?}; a dstack project name is letters, digits, '-' and '_'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::registry::testing::{parse, refused_naming_key as refused};

    /// Another kind's section, made up here: a kind's tests name no other kind's folder.
    #[derive(Debug, Clone, PartialEq)]
    struct OtherKind;

    impl crate::config::KindSettings for OtherKind {
        const KIND: ClusterKind = ClusterKind::from_static("other");
    }

    const BASE: &str = "[[cluster]]\nname = \"d\"\nkind = \"dstack\"\nurl = \"http://127.0.0.1:3000\"\n";

    #[test]
    fn dstack_clusters() {
        let text = "[[cluster]]\nname = \"dstack-main\"\nkind = \"dstack\"\nurl = \"http://127.0.0.1:3000/\"\n\
                    project = \"team_a\"\ntoken_env = \"DSTACK_TOKEN\"\nretry = \"1h\"\ntimeout_seconds = 5\n\n\
                    [[cluster]]\nname = \"other\"\nkind = \"dstack\"\nurl = \"https://dstack.example.org\"\n\
                    token_file = \"/etc/dstack/token\"\nretry = 90\n";
        let config = parse(text).unwrap();
        let main = &config.clusters[0];
        assert_eq!(main.kind(), KIND);
        assert_eq!(main.timeout, Duration::from_secs(5));
        assert_eq!(
            main.section::<DstackConfig>(),
            Some(&DstackConfig {
                url: "http://127.0.0.1:3000".into(),
                project: "team_a".into(),
                token: Some(TokenFrom::Source(TokenSource::Env("DSTACK_TOKEN".into()))),
                retry_secs: Some(3600),
            })
        );
        assert!(main.section::<OtherKind>().is_none());
        let other = config.clusters[1].section::<DstackConfig>().unwrap();
        assert_eq!(other.project, DEFAULT_PROJECT);
        assert_eq!(other.token, Some(TokenFrom::Source(TokenSource::File(PathBuf::from("/etc/dstack/token")))));
        assert_eq!(other.retry_secs, Some(90 * 60));
    }

    #[test]
    fn dstack_keys_are_checked() {
        let shown = refused("[[cluster]]\nname = \"d\"\nkind = \"dstack\"\nproject = \"main\"\n", 1, "url");
        assert!(shown.contains("missing key `url`"), "{shown}");
        refused("[[cluster]]\nname = \"d\"\nkind = \"dstack\"\nurl = \"127.0.0.1:3000\"\n", 4, "url");
        refused("[[cluster]]\nname = \"d\"\nkind = \"dstack\"\nurl = \"http://a b\"\n", 4, "url");
        refused("[[cluster]]\nname = \"d\"\nkind = \"dstack\"\nurl = \"http://u:p@host\"\n", 4, "url");
        let shown = refused(&format!("{BASE}project = \"a/b\"\n"), 5, "project");
        assert!(shown.contains("'/'"), "{shown}");
        let shown = refused(&format!("{BASE}token_env = \"A\"\ntoken_file = \"/t\"\n"), 6, "token_file");
        assert!(shown.contains("not both"), "{shown}");
        refused(&format!("{BASE}token_env = \"\"\n"), 5, "token_env");
        refused(&format!("{BASE}retry = \"soon\"\n"), 5, "retry");
        refused(&format!("{BASE}retry = 0\n"), 5, "retry");
        // A token written into the config is no key at all: refused, never read.
        let shown = refused(&format!("{BASE}token = \"s3cret\"\n"), 5, "token");
        assert!(shown.contains("unknown key `token`") && !shown.contains("s3cret"), "{shown}");
        let shown = refused(&format!("{BASE}host = \"login\"\n"), 5, "host");
        assert!(shown.contains("does not apply to a dstack cluster"), "{shown}");
        assert!(shown.contains("url, project, token_env, token_file, retry"), "{shown}");
    }
}
