//! `flightdeck spec export|convert` and the reading of job files for `submit`: one job
//! file in any dialect the registry knows (detected by content, `--from` to force) or the
//! portable TOML, read into a [`JobSpec`] with every warning printed on stderr.

use std::path::Path;
use std::process::ExitCode;

use super::{Failure, start_fleet};
use crate::backend::{DialectEntry, Registry};
use crate::config::Config;
use crate::model::JobRef;
use crate::output;
use crate::spec::{Imported, JobSpec};

/// The name `--from`/`--to` use for the portable form.
pub const PORTABLE: &str = "toml";

/// Read a job file: the dialect named by `from`, else the one that claims its content,
/// else the portable TOML.
pub fn read_job_file(registry: &Registry, path: &Path, from: Option<&str>) -> Result<Imported, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure(format!("cannot read {}: {e}", path.display())))?;
    let dialect = match from {
        Some(PORTABLE) => None,
        Some(name) => Some(dialect_named(registry, name)?),
        None => registry.detect(&text),
    };
    match dialect {
        None if from.is_none() && !looks_like_toml(&text) => {
            Err(Failure(format!("{}: not a job file flightdeck knows: {}", path.display(), known_forms(registry))))
        }
        None => JobSpec::from_toml_str(&text, path)
            .map(|spec| Imported { spec, warnings: Vec::new() })
            .map_err(|e| Failure(e.to_string())),
        Some(entry) => (entry.import)(&text)
            .map_err(|e| Failure(format!("{}: cannot read it as {}: {e}", path.display(), entry.dialect.title()))),
    }
}

/// Whether a file no dialect claimed is meant as the portable TOML: it parses as TOML (a
/// spec with a wrong key is still reported at its line), or it fails to but is not some
/// other structured form either (a YAML mapping of a kind no dialect knows, a script), so a
/// TOML typo keeps its line and key rather than reading as "not a job file".
fn looks_like_toml(text: &str) -> bool {
    if text.parse::<toml::Table>().is_ok() {
        return true;
    }
    if text.trim_start().starts_with("#!") {
        return false;
    }
    let yaml_mapping = serde_saphyr::from_multiple::<serde_json::Value>(text)
        .map(|docs| !docs.is_empty() && docs.iter().all(serde_json::Value::is_object))
        .unwrap_or(false);
    !yaml_mapping
}

/// "a portable spec (TOML), an sbatch script, … or a dstack task": the forms the registry
/// can read, so a kind added at run time is named too.
fn known_forms(registry: &Registry) -> String {
    let mut forms = vec!["a portable spec (TOML)"];
    forms.extend(registry.dialects().map(|d| d.dialect.described()));
    match forms.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => forms.join(""),
    }
}

/// The dialect `--to`/`--from` names, or a message listing the names there are.
pub fn dialect_named<'r>(registry: &'r Registry, name: &str) -> Result<&'r DialectEntry, Failure> {
    registry.dialect(name).ok_or_else(|| {
        let mut names: Vec<&str> = registry.dialects().map(|d| d.dialect.kind_name()).collect();
        names.push(PORTABLE);
        Failure(format!("no job dialect named `{name}`: use one of {}", names.join(", ")))
    })
}

pub fn print_warnings(warnings: &[String]) {
    for warning in warnings {
        eprintln!("flightdeck: warning: {}", output::printable(warning));
    }
}

/// `--multi-node KIND`: the kind this job's several nodes become on Kubernetes, over the
/// cluster's setting and the file's own `multi_node`. Carried in the spec, so the hub, the
/// preview and the submit all see it; a kind that has no choice refuses it by name.
pub fn choose_multi_node(spec: &mut JobSpec, kind: Option<String>) {
    if kind.is_some() {
        spec.multi_node = kind;
    }
}

/// `spec convert FILE --to D [--multi-node KIND]`: the file's job in dialect `to` (or the
/// portable TOML).
pub fn convert(path: &Path, to: &str, from: Option<&str>, multi_node: Option<String>) -> Result<ExitCode, Failure> {
    let registry = Registry::builtin();
    let mut imported = read_job_file(&registry, path, from)?;
    choose_multi_node(&mut imported.spec, multi_node);
    print_warnings(&imported.warnings);
    if to == PORTABLE {
        print!("{}", imported.spec.to_toml().map_err(|e| Failure(e.to_string()))?);
        return Ok(ExitCode::SUCCESS);
    }
    let target = dialect_named(&registry, to)?;
    let native = (target.export)(&imported.spec).map_err(|e| Failure(e.to_string()))?;
    print_warnings(&native.warnings);
    print!("{}", native.text);
    if !native.text.ends_with('\n') {
        println!();
    }
    Ok(ExitCode::SUCCESS)
}

/// `spec export REF`: the portable TOML of a live job, read from its backend.
pub async fn export(config: &Config, job: &JobRef) -> Result<ExitCode, Failure> {
    let fleet = start_fleet(config, true, std::slice::from_ref(&job.cluster.to_string()), false).await?;
    let imported = fleet.job_spec(job).await.map_err(|e| Failure(format!("{job}: {e}")))?;
    print_warnings(&imported.warnings);
    print!("{}", imported.spec.to_toml().map_err(|e| Failure(e.to_string()))?);
    Ok(ExitCode::SUCCESS)
}
