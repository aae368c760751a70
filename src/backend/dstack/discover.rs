//! What dstack this machine reaches: the projects of the dstack CLI's own
//! `~/.dstack/config.yml`, its default one (else its first) active.

use std::path::Path;

use futures_util::future::BoxFuture;

use super::config::{DstackConfig, TokenFrom, check_project, check_url, cli_projects};
use crate::backend::registry::{Discovery, Found, Line, Look};
use crate::config::Settings;

/// The variable `init` writes for the token, which it leaves in the CLI's file.
const TOKEN_ENV: &str = "DSTACK_TOKEN";

/// The kind's discovery (its `KindEntry::discover`): one file read, nothing asked.
pub fn discover(_look: &Look) -> BoxFuture<'static, Discovery> {
    Box::pin(async { projects(&crate::config::expand_tilde("~/.dstack/config.yml")) })
}

/// One cluster per usable project of the CLI config at `path`. The embedded default reads
/// the token from that file; a written config names [`TOKEN_ENV`] instead, since the file
/// holds every project's token.
fn projects(path: &Path) -> Discovery {
    let mut out = Discovery::default();
    let projects = cli_projects(path).unwrap_or_default();
    if projects.is_empty() {
        out.missing.push(format!("dstack (no projects in {})", path.display()));
        return out;
    }
    let chosen = projects.iter().position(|p| p.default).unwrap_or(0);
    for (i, p) in projects.iter().enumerate() {
        let url = match check_url(&p.url).and_then(|url| check_project(&p.name).map(|()| url)) {
            Ok(url) => url,
            Err(why) => {
                out.missing.push(format!("dstack project {:?} left out: {why}", p.name));
                continue;
            }
        };
        let token =
            p.token.is_some().then(|| TokenFrom::CliConfig { path: path.to_path_buf(), project: p.name.clone() });
        out.found.push(Found {
            names: vec![format!("dstack-{}", p.name), "dstack".into()],
            why: format!(
                "dstack project {} at {url}{}; the token is in ~/.dstack/config.yml: export it as {TOKEN_ENV}",
                p.name,
                if i == chosen { " (the CLI's default)" } else { "" }
            ),
            active: i == chosen,
            settings: Settings::new(DstackConfig {
                url: url.clone(),
                project: p.name.clone(),
                token,
                retry_secs: None,
            }),
            section: vec![Line::text("url", url), Line::text("project", &p.name), Line::text("token_env", TOKEN_ENV)],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_config_gives_its_projects_and_the_default_is_active() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yml");
        std::fs::write(
            &path,
            "projects:\n- default: false\n  name: other\n  token: t1\n  url: http://10.0.0.1:3000\n\
             - default: true\n  name: main\n  token: t2\n  url: http://127.0.0.1:3300/\n\
             - name: a/b\n  url: http://10.0.0.2:3000\nrepos: []\n",
        )
        .unwrap();
        let found = projects(&path);
        let active: Vec<&Found> = found.found.iter().filter(|f| f.active).collect();
        assert_eq!(active.len(), 1);
        let main = active[0];
        assert_eq!(main.names, ["dstack-main", "dstack"]);
        let c = main.settings.get::<DstackConfig>().unwrap();
        assert_eq!((c.url.as_str(), c.project.as_str()), ("http://127.0.0.1:3300", "main"));
        assert_eq!(c.token, Some(TokenFrom::CliConfig { path: path.clone(), project: "main".into() }));
        assert!(!main.why.contains("t2"), "the token stays in its file: {}", main.why);
        assert_eq!(found.found.len(), 2, "the unusable project is said, not found");
        assert!(found.missing[0].starts_with("dstack project \"a/b\" left out: "), "{:?}", found.missing);
        std::fs::write(&path, "not: [yaml").unwrap();
        assert!(projects(&path).found.is_empty());
        let absent = projects(&dir.path().join("absent.yml"));
        assert!(absent.missing[0].starts_with("dstack (no projects in "), "{:?}", absent.missing);
    }
}
