//! The module map's import rules (ARCHITECTURE.md, "Rules the code keeps"), checked on the
//! source itself: a forbidden path fails the build's tests, naming file and line.
//!
//! * `backend` never reaches `tui`, `cli`, `output`, `fleet` or `serve` (adapters know
//!   nothing of front ends, of the fleet above them, or of the hub's server: a hub client
//!   speaks `wire`);
//! * `wire` (the hub's protobuf vocabulary) never reaches `serve`, `fleet`, `cli`, `tui` or
//!   `output`, so the client side needs nothing of the server;
//! * `model`, `spec`, `config` and `tomlfile` reach none of `backend`, `tui`, `fleet` (the
//!   vocabulary and the files stand on their own), and `model` none of `serve`, `cli` or
//!   `output` either;
//! * `system` (what the operating system says) reaches nothing above it;
//! * `tui` never reaches `backend` (the cockpit speaks to the fleet only);
//! * `fleet` and `serve` never reach `tui` or `cli`.
//!
//! A path names a module through `crate::` or through a `super::` chain that climbs to the
//! crate root (`super::serve` in `src/backend/mod.rs`, `super::super::super::fleet` in
//! `src/backend/kube/map.rs`).

use std::path::{Path, PathBuf};

/// (module, the modules it must not import).
const RULES: &[(&str, &[&str])] = &[
    ("backend", &["tui", "cli", "output", "fleet", "serve"]),
    ("wire", &["serve", "fleet", "cli", "tui", "output"]),
    ("model", &["backend", "tui", "fleet", "serve", "cli", "output"]),
    ("spec", &["backend", "tui", "fleet"]),
    ("config", &["backend", "tui", "fleet"]),
    ("tomlfile", &["backend", "tui", "fleet"]),
    ("system", &["backend", "wire", "serve", "fleet", "cli", "tui", "output"]),
    ("tui", &["backend"]),
    ("fleet", &["tui", "cli"]),
    ("serve", &["tui", "cli"]),
];

/// The module path a source file is: `src/backend/kube/map.rs` → `backend::kube::map`,
/// `src/backend/mod.rs` → `backend`, `src/model.rs` → `model`, `src/lib.rs` → the root.
fn module_path(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> = relative
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .map(|c| c.trim_end_matches(".rs").to_string())
        .collect();
    if path.last().is_some_and(|last| last == "mod") || (path.len() == 1 && (path[0] == "lib" || path[0] == "main")) {
        path.pop();
    }
    path
}

/// The identifiers a path continues with after the root it was resolved to: one
/// (`serve::X`) or, for a group, the first identifier of each comma-separated item at depth
/// 0 (`{serve, model::Job}`).
fn heads(rest: &str) -> Vec<String> {
    let ident = |text: &str| -> String { text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let Some(group) = rest.strip_prefix('{') else {
        return Some(ident(rest)).filter(|i| !i.is_empty()).into_iter().collect();
    };
    let mut found = Vec::new();
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
                found.push(ident(&group[i..]));
            }
            _ => {}
        }
    }
    found
}

/// Every top-level module a line of the file at `file` (its module path) names: through
/// `crate::` (`crate::backend::X`, `crate::{backend, model::Job}`), or through `super::`
/// chains that reach the crate root. Comments are not code and are skipped. A `super` inside
/// an inline `mod` (a test module) is counted from the file, which can only make a path look
/// nearer the root than it is: a rule may be reported wrongly, never missed.
fn crate_paths(file: &[String], line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let Some(offset) = rest.find(|c: char| c.is_alphanumeric() || c == '_') else { break };
        let start = at + offset;
        let word: String = code[start..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        at = start + word.len();
        // `flightdeck_crate::` or `my_crate::` are other names; the second `super` of a
        // chain is read with the first.
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c == ':') || (word != "crate" && word != "super") {
            continue;
        }
        let mut after = &code[at..];
        let Some(tail) = after.strip_prefix("::") else { continue };
        after = tail;
        let mut climbed = 1;
        if word == "super" {
            while let Some(tail) = after.strip_prefix("super::") {
                after = tail;
                climbed += 1;
            }
            // Below the root, a path stays inside the file's own top-level module.
            if climbed != file.len() {
                continue;
            }
        }
        found.extend(heads(after));
    }
    found
}

/// Every broken rule in these files, as `src/FILE:LINE: MODULE imports FORBIDDEN (…)`.
fn violations(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (relative, text) in files {
        let file = module_path(relative);
        let Some(module) = file.first() else { continue };
        let Some((_, forbidden)) = RULES.iter().find(|(m, _)| m == module) else { continue };
        for (n, line) in text.lines().enumerate() {
            for target in crate_paths(&file, line) {
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
        (
            PathBuf::from("backend/kube/map.rs"),
            "use super::super::gpu::Amounts;\nuse super::super::super::serve::auth;\n".to_string(),
        ),
        (PathBuf::from("backend/mod.rs"), "use super::{model::Job, fleet::Fleet};\n".to_string()),
        (PathBuf::from("wire/state.rs"), "use super::pb;\nuse crate::{model::Job, serve};\n".to_string()),
        (PathBuf::from("model/usage.rs"), "let s = crate::output::printable(x);\n".to_string()),
        (PathBuf::from("lib.rs"), "pub mod serve;\nuse crate::tui;\n".to_string()),
    ];
    assert_eq!(
        violations(&files),
        vec![
            "src/config.rs:2: `config` imports `tui`, which it must not (use crate::tui::theme::Theme;)",
            "src/tui/app/form.rs:2: `tui` imports `backend`, which it must not (use crate::{model::Job, backend::slurm::script};)",
            "src/backend/kube/mod.rs:1: `backend` imports `cli`, which it must not (fn f() { crate::cli::run(); })",
            "src/backend/kube/map.rs:2: `backend` imports `serve`, which it must not (use super::super::super::serve::auth;)",
            "src/backend/mod.rs:1: `backend` imports `fleet`, which it must not (use super::{model::Job, fleet::Fleet};)",
            "src/wire/state.rs:2: `wire` imports `serve`, which it must not (use crate::{model::Job, serve};)",
            "src/model/usage.rs:1: `model` imports `output`, which it must not (let s = crate::output::printable(x);)",
        ]
    );
}

// ---------------------------------------------------------------------------------------
// A kind is one folder (issue #28): files under `src/backend/<kind>/` import only `backend`'s
// shared modules and items, `model`, `spec`, `config` and `safe_text`, never another kind's
// folder. Kept apart from the rules above, with its own path reader, so each can change alone.

/// `backend`'s folders and files that every kind may use; every other folder under
/// `src/backend/` is a kind.
const BACKEND_SHARED: &[&str] =
    &["exec", "http", "hub_link", "loose_value", "naming", "registry", "telemetry", "unreached"];

/// What a kind may import outside `backend`. `wire` is the hub's vocabulary once it stands
/// apart from the server (`src/wire/`): the hub kind speaks it; `system` is this machine's
/// facts (user names by uid), below everything.
const KIND_MAY_IMPORT: &[&str] = &["backend", "model", "spec", "config", "safe_text", "system", "wire"];

/// Imports that break the rule today, left for a later step of issue #28, each with why:
/// (the file, the path imported, cut to two segments). An entry that no longer matches
/// anything fails the test, so this list only shrinks.
const KIND_ALLOWED_FOR_NOW: &[(&str, &str)] = &[];

/// Every path a line names from the crate root, cut to its first two segments:
/// `crate::backend::kube::manifest::x` → `backend::kube`; `crate::{model, backend::{exec,
/// http}}` → `model`, `backend::exec`, `backend::http`; `super::` chains resolved against the
/// file's `module` (`super::super::kube` in `backend/dstack/api.rs` → `backend::kube`).
/// Comments are not code and are skipped.
fn two_segment_paths(line: &str, module: &[String]) -> Vec<String> {
    let code: Vec<char> = line.split("//").next().unwrap_or("").chars().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let starts_word = at == 0 || !(code[at - 1].is_alphanumeric() || code[at - 1] == '_' || code[at - 1] == ':');
        let rest: String = code[at..].iter().take(7).collect();
        if starts_word && rest == "crate::" {
            at += 7;
            use_tree(&code, &mut at, Vec::new(), &mut found);
        } else if starts_word && rest == "super::" {
            let mut base = module.to_vec();
            while code[at..].iter().take(7).collect::<String>() == "super::" {
                base.pop();
                at += 7;
            }
            use_tree(&code, &mut at, base, &mut found);
        } else {
            at += 1;
        }
    }
    found.into_iter().map(|p| p.iter().take(2).cloned().collect::<Vec<_>>().join("::")).collect()
}

/// One use tree (`a::b::{c, d::e}`) read from `code[*at..]` under `prefix`, each whole path
/// pushed to `out`.
fn use_tree(code: &[char], at: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        if code.get(*at) == Some(&'{') {
            *at += 1;
            loop {
                while code.get(*at).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    *at += 1;
                }
                match code.get(*at) {
                    None => return,
                    Some('}') => {
                        *at += 1;
                        return;
                    }
                    Some(_) => {
                        let before = *at;
                        use_tree(code, at, path.clone(), out);
                        if *at == before {
                            *at += 1; // `*` or another token that is no path
                        }
                    }
                }
            }
        }
        let ident: String = code[*at..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').collect();
        if ident.is_empty() {
            break;
        }
        *at += ident.chars().count();
        if ident != "self" {
            path.push(ident);
        }
        if code.get(*at) == Some(&':') && code.get(*at + 1) == Some(&':') {
            *at += 2;
        } else {
            break;
        }
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// Every import by a kind's file of another kind's folder or of a module outside
/// [`KIND_MAY_IMPORT`], as (file, line, path, message).
fn kind_violations(files: &[(PathBuf, String)]) -> Vec<(String, usize, String, String)> {
    let folder = |relative: &Path| -> Option<String> {
        let mut parts = relative.components().filter_map(|c| c.as_os_str().to_str());
        (parts.next()? == "backend").then_some(())?;
        let second = parts.next()?;
        parts.next().map(|_| second.to_string())
    };
    let kinds: std::collections::BTreeSet<String> =
        files.iter().filter_map(|(p, _)| folder(p)).filter(|k| !BACKEND_SHARED.contains(&k.as_str())).collect();
    let mut out = Vec::new();
    for (relative, text) in files {
        let Some(kind) = folder(relative).filter(|k| kinds.contains(k)) else { continue };
        let module = module_path(relative);
        for (n, line) in text.lines().enumerate() {
            for path in two_segment_paths(line, &module) {
                let mut segments = path.split("::");
                let top = segments.next().unwrap_or_default();
                let second = segments.next();
                let why = if top == "backend" {
                    match second {
                        Some(other) if other != kind && kinds.contains(other) => "another kind's folder",
                        _ => continue,
                    }
                } else if KIND_MAY_IMPORT.contains(&top) {
                    continue;
                } else {
                    "not below the kinds"
                };
                let file = relative.display().to_string();
                let shown = format!("src/{file}:{}: kind `{kind}` imports `{path}`, {why} ({})", n + 1, line.trim());
                out.push((file, n + 1, path, shown));
            }
        }
    }
    out
}

#[test]
fn each_kind_imports_only_what_lies_below_the_kinds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &root, &mut files);
    let found = kind_violations(&files);
    let allowed = |file: &str, path: &str| KIND_ALLOWED_FOR_NOW.iter().any(|(f, p)| *f == file && *p == path);
    let broken: Vec<&str> =
        found.iter().filter(|(file, _, path, _)| !allowed(file, path)).map(|(.., shown)| shown.as_str()).collect();
    assert!(broken.is_empty(), "a kind imports past its folder:\n{}", broken.join("\n"));
    let stale: Vec<String> = KIND_ALLOWED_FOR_NOW
        .iter()
        .filter(|(f, p)| !found.iter().any(|(file, _, path, _)| file == f && path == p))
        .map(|(f, p)| format!("src/{f}: `{p}`"))
        .collect();
    assert!(stale.is_empty(), "allowed for now but no longer imported; take them off the list:\n{}", stale.join("\n"));
}

#[test]
fn paths_are_read_to_two_segments_through_groups_and_super() {
    let module: Vec<String> = ["backend", "dstack", "api"].map(String::from).to_vec();
    assert_eq!(two_segment_paths("let s = crate::backend::kube::manifest::name_suffix();", &module), ["backend::kube"]);
    assert_eq!(
        two_segment_paths("use crate::{model::Job, backend::{exec::{self, Transport}, http}, spec};", &module),
        ["model::Job", "backend::exec", "backend::exec", "backend::http", "spec"]
    );
    assert_eq!(two_segment_paths("use super::super::kube::map;", &module), ["backend::kube"]);
    assert_eq!(
        two_segment_paths("use super::manifest::{run_name, Target};", &module),
        ["backend::dstack", "backend::dstack"]
    );
    assert_eq!(two_segment_paths("use super::super::super::fleet::*;", &module), ["fleet"]);
    assert!(two_segment_paths("// crate::backend::kube in a comment", &module).is_empty());
    assert!(two_segment_paths("let x = my_crate::backend::kube::X;", &module).is_empty());
}

#[test]
fn a_kind_reaching_past_its_folder_is_named_with_file_and_line() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let files = vec![
        file("backend/kube/mod.rs", "use crate::backend::{Backend, exec::Transport, naming};\n"),
        file("backend/kube/workloads/job.rs", "use super::super::gpu;\nuse super::super::super::slurm::script;\n"),
        file(
            "backend/dstack/mod.rs",
            "// crate::backend::kube::x is a comment\nlet s = crate::backend::kube::manifest::name_suffix();\n",
        ),
        file("backend/local/reader.rs", "use crate::{model::Job, backend::{exec::Transport, skypilot}};\n"),
        file("backend/slurm/mod.rs", "use crate::fleet::Fleet;\nuse crate::{config::ClusterConfig, safe_text};\n"),
        file("backend/skypilot/mod.rs", "use super::api;\n"),
        file("backend/registry.rs", "use crate::backend::{dstack, kube, slurm};\n"),
        file("backend/exec/mod.rs", "use crate::backend::slurm::X;\n"),
        file("backend/telemetry/prometheus/query.rs", "use crate::backend::kube::X;\n"),
    ];
    let shown: Vec<String> = kind_violations(&files).into_iter().map(|(.., s)| s).collect();
    assert_eq!(
        shown,
        vec![
            "src/backend/kube/workloads/job.rs:2: kind `kube` imports `backend::slurm`, another kind's folder (use super::super::super::slurm::script;)",
            "src/backend/dstack/mod.rs:2: kind `dstack` imports `backend::kube`, another kind's folder (let s = crate::backend::kube::manifest::name_suffix();)",
            "src/backend/local/reader.rs:1: kind `local` imports `backend::skypilot`, another kind's folder (use crate::{model::Job, backend::{exec::Transport, skypilot}};)",
            "src/backend/slurm/mod.rs:1: kind `slurm` imports `fleet::Fleet`, not below the kinds (use crate::fleet::Fleet;)",
        ]
    );
}
