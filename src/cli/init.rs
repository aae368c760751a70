//! `flightdeck init`: a commented config written from what this machine can reach.
//!
//! Every kind of the registry looks, asking what answers (`KindEntry::discover` with
//! `Look::ask`: local Slurm's release, a login node behind each `--probe HOST`, kubeconfig
//! contexts, the cloud clients' servers, this machine's GPUs, the hosts of `~/.ssh/config`
//! worth probing); `render` turns what they found into TOML that reads back as a valid
//! config: what answered is active, the rest is written commented out with why. No kind is
//! named here. Nothing is overwritten without `--force`, and a replaced file is kept beside it.

mod render;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use crate::backend::registry::Probe;
use crate::backend::registry::{Look, Registry};
pub use render::render;

use super::Failure;

/// What `flightdeck init` was asked.
#[derive(Debug, Default)]
pub struct InitRequest {
    /// Where to write (`--config`, else the default path).
    pub path: Option<PathBuf>,
    /// Print instead of writing.
    pub print: bool,
    /// Replace an existing file (kept as `NAME.bak`).
    pub force: bool,
    pub probe: Probe,
    /// `~/.ssh/config` unless given.
    pub ssh_config: Option<PathBuf>,
}

pub async fn init(ask: InitRequest) -> Result<ExitCode, Failure> {
    let target = match (&ask.path, ask.print) {
        (_, true) => None,
        (Some(p), false) => Some(p.clone()),
        (None, false) => Some(crate::config::default_config_path().ok_or_else(|| {
            Failure("no home directory and no XDG_CONFIG_HOME: give the file with --config FILE, or --print".into())
        })?),
    };
    if let Some(path) = &target
        && path.exists()
        && !ask.force
    {
        return Err(Failure(format!(
            "{} exists; flightdeck init does not overwrite it (--force replaces it and keeps the old one as {}, --print shows what it would write)",
            path.display(),
            backup_path(path).display()
        )));
    }
    let ssh_config = ask.ssh_config.clone().unwrap_or_else(|| crate::config::expand_tilde("~/.ssh/config"));
    let look = Look { ask: true, probe: ask.probe.clone(), ssh_config: Some(ssh_config), ..Look::here() };
    let written = written(&Registry::builtin(), &look).await?;
    match target {
        None => {
            print!("{}", written.text);
            let _ = std::io::stdout().flush();
        }
        Some(path) => {
            write_config(&path, &written.text, ask.force).map_err(Failure)?;
            eprintln!(
                "wrote {} ({} cluster{} active, {} commented out); `flightdeck doctor` checks each",
                path.display(),
                written.active,
                if written.active == 1 { "" } else { "s" },
                written.commented_out
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The config `init` writes, and how many clusters it holds live and commented out.
#[derive(Debug, Clone)]
pub struct Written {
    pub text: String,
    pub active: usize,
    pub commented_out: usize,
}

/// What every kind of `registry` finds as `look` allows, written as a config and read back
/// through the same registry: a config that would not load is a bug here, said before
/// anything is written.
pub async fn written(registry: &Registry, look: &Look) -> Result<Written, Failure> {
    let discoveries = registry.discover(look).await;
    let text = render(&discoveries);
    crate::config::Config::from_toml_str(&text, Path::new("flightdeck init"), registry).map_err(|e| {
        Failure(format!("flightdeck init made a config that does not read back ({e}); please report it"))
    })?;
    let (active, commented_out) = discoveries
        .iter()
        .flat_map(|d| &d.discovery.found)
        .fold((0, 0), |(on, off), f| if f.active { (on + 1, off) } else { (on, off + 1) });
    Ok(Written { text, active, commented_out })
}

fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".bak");
    path.with_file_name(name)
}

/// Write through a temporary file and a rename, so a crash leaves the old file or the new
/// one, never half of one; the file is the user's own (0600).
fn write_config(path: &Path, text: &str, force: bool) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = path.with_extension("toml.new");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|_| file.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    if force && path.exists() {
        let backup = backup_path(path);
        std::fs::copy(path, &backup).map_err(|e| format!("cannot keep the old config as {}: {e}", backup.display()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot move {} to {}: {e}", tmp.display(), path.display()))
}
