//! The module map's import rules (ARCHITECTURE.md, "Rules the code keeps"), checked on the
//! source itself: a forbidden `crate::…` path fails the build's tests, naming file and line.
//!
//! * `backend` never reaches `tui` or `cli` (adapters know nothing of front ends);
//! * `model`, `spec`, `config` and `tomlfile` reach none of `backend`, `tui`, `fleet` (the
//!   vocabulary and the files stand on their own);
//! * `tui` never reaches `backend` (the cockpit speaks to the fleet only);
//! * `fleet` never reaches `tui` or `cli`.

use std::path::{Path, PathBuf};

/// (module, the modules it must not import).
const RULES: &[(&str, &[&str])] = &[
    ("backend", &["tui", "cli"]),
    ("model", &["backend", "tui", "fleet"]),
    ("spec", &["backend", "tui", "fleet"]),
    ("config", &["backend", "tui", "fleet"]),
    ("tomlfile", &["backend", "tui", "fleet"]),
    ("tui", &["backend"]),
    ("fleet", &["tui", "cli"]),
    ("hub", &["tui", "cli"]),
];

/// The top-level module a source file belongs to: `src/tui/app/form.rs` → `tui`,
/// `src/model.rs` → `model`.
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    Some(first.strip_suffix(".rs").unwrap_or(first).to_string())
}

/// Every top-level module a line names through `crate::`: `crate::backend::X`,
/// `crate::{backend, model::Job}`. Comments are not code and are skipped.
fn crate_paths(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        // `flightdeck_crate::` or `my_crate::` are other names.
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // A group: the first identifier of each comma-separated item at depth 0.
            let mut depth = 0usize;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        item_start = false;
                        let ident: String =
                            group[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        found.push(ident);
                    }
                    _ => {}
                }
            }
        } else {
            let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !ident.is_empty() {
                found.push(ident);
            }
        }
    }
    found
}

/// Every broken rule in these files, as `src/FILE:LINE: MODULE imports FORBIDDEN (…)`.
fn violations(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (relative, text) in files {
        let Some(module) = module_of(relative) else { continue };
        let Some((_, forbidden)) = RULES.iter().find(|(m, _)| *m == module) else { continue };
        for (n, line) in text.lines().enumerate() {
            for target in crate_paths(line) {
                if forbidden.contains(&target.as_str()) {
                    out.push(format!(
                        "src/{}:{}: `{module}` imports `{target}`, which it must not ({})",
                        relative.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    out
}

fn source_files(dir: &Path, root: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            source_files(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("read file");
            out.push((path.strip_prefix(root).unwrap().to_path_buf(), text));
        }
    }
}

#[test]
fn the_source_keeps_the_import_rules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &root, &mut files);
    assert!(files.len() > 50, "read the whole tree ({} files)", files.len());
    let broken = violations(&files);
    assert!(broken.is_empty(), "import rules broken:\n{}", broken.join("\n"));
}

#[test]
fn a_forbidden_import_is_named_with_file_and_line() {
    let files = vec![
        (PathBuf::from("config.rs"), "use std::path::Path;\nuse crate::tui::theme::Theme;\n".to_string()),
        (
            PathBuf::from("tui/app/form.rs"),
            "// crate::backend in a comment is fine\nuse crate::{model::Job, backend::slurm::script};\n".to_string(),
        ),
        (
            PathBuf::from("backend/kube/mod.rs"),
            "fn f() { crate::cli::run(); }\nuse crate::model::{Job, tui_like};\n".to_string(),
        ),
        (PathBuf::from("fleet/mod.rs"), "use crate::model::Job;\nuse crate::backend::Backend;\n".to_string()),
        (PathBuf::from("model/action.rs"), "use crate::spec::JobSpec;\nlet x = my_crate::tui::X;\n".to_string()),
    ];
    assert_eq!(
        violations(&files),
        vec![
            "src/config.rs:2: `config` imports `tui`, which it must not (use crate::tui::theme::Theme;)",
            "src/tui/app/form.rs:2: `tui` imports `backend`, which it must not (use crate::{model::Job, backend::slurm::script};)",
            "src/backend/kube/mod.rs:1: `backend` imports `cli`, which it must not (fn f() { crate::cli::run(); })",
        ]
    );
}
