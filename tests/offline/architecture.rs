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
//! * outside `backend/`, nothing names a kind (`backend::slurm`, `"dstack"`,
//!   `ClusterKind::SLURM`), test code excepted: see "Nothing above the kinds names one" below.
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

/// A line up to its comment: the first `//` outside a string literal (`"https://…"` is no
/// comment). A string is followed through its escapes, and the char `'"'` opens none. Lines
/// are read alone, so the middle of a string spanning lines reads as code: rare in `src/`.
fn code_of(line: &str) -> &str {
    let mut in_string = false;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '\'' if !in_string && line[i..].starts_with("'\"'") => {
                chars.nth(1);
            }
            '"' => in_string = !in_string,
            '/' if !in_string && chars.peek().is_some_and(|(_, next)| *next == '/') => return &line[..i],
            _ => {}
        }
    }
    line
}

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
    let code = code_of(line);
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
    let code: Vec<char> = code_of(line).chars().collect();
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

// ---------------------------------------------------------------------------------------
// Nothing above the kinds names one (issue #28): outside `src/backend/`, no code names
// `backend::<kind>`, holds a kind's name as a string literal, or uses a kind's constant
// (`ClusterKind::SLURM`, declared in the kind's folder). Code above the kinds asks the
// registry's `KindEntry` (capabilities, placement, dialects) instead, so adding or removing a
// kind touches its folder and one registry line. Test code (`#[cfg(test)]` items) is excepted:
// fixtures name kinds. Comments and doc comments are prose, not code.

/// Parts of `src/` outside `backend/` that still name kinds, each with why, until the step
/// that removes them: (a file, or a folder ending in `/`; why). An entry that no longer
/// covers anything fails the test, so this list only shrinks.
const NAMING_ALLOWED_FOR_NOW: &[(&str, &str)] = &[];

/// What counts as naming a kind: the folders under `src/backend/` that are kinds, and every
/// name a kind goes by in a config (`kubernetes` is the folder `kube`).
struct KindNames {
    folders: Vec<String>,
    names: Vec<String>,
}

/// The folders under `src/backend/` that hold a kind: every folder but the shared ones.
fn kind_folders(files: &[(PathBuf, String)]) -> std::collections::BTreeSet<String> {
    let folder = |relative: &Path| -> Option<String> {
        let mut parts = relative.components().filter_map(|c| c.as_os_str().to_str());
        (parts.next()? == "backend").then_some(())?;
        let second = parts.next()?;
        parts.next().map(|_| second.to_string())
    };
    files.iter().filter_map(|(p, _)| folder(p)).filter(|k| !BACKEND_SHARED.contains(&k.as_str())).collect()
}

/// What the naming rule reads of one file's tokens: the lines of its `#[cfg(test)]` items,
/// and, outside them, each string literal's text and each `ClusterKind::CONSTANT`, by line.
#[derive(Default)]
struct Read {
    test_lines: Vec<std::ops::RangeInclusive<usize>>,
    literals: Vec<(usize, String)>,
    kind_constants: Vec<(usize, String)>,
}

impl Read {
    fn in_test(&self, line: usize) -> bool {
        self.test_lines.iter().any(|r| r.contains(&line))
    }
}

/// Whether `tokens[at..]` starts an outer attribute whose bracket group is exactly `name`
/// (`cfg(test)`) or starts with it (`doc`): the index after the attribute if so.
fn attribute(tokens: &[proc_macro2::TokenTree], at: usize, matches: impl Fn(&str) -> bool) -> Option<usize> {
    use proc_macro2::{Delimiter, TokenTree};
    let TokenTree::Punct(hash) = tokens.get(at)? else { return None };
    if hash.as_char() != '#' {
        return None;
    }
    let mut next = at + 1;
    if matches!(tokens.get(next), Some(TokenTree::Punct(p)) if p.as_char() == '!') {
        next += 1;
    }
    let TokenTree::Group(group) = tokens.get(next)? else { return None };
    let inside: String = group.stream().to_string().split_whitespace().collect();
    (group.delimiter() == Delimiter::Bracket && matches(&inside)).then_some(next + 1)
}

/// The text of a string literal token (`"x"`, `r"x"`, `r#"x"#`); `None` for other literals.
fn string_text(literal: &str) -> Option<&str> {
    let body = literal.strip_prefix('r').map_or(literal, |raw| raw.trim_matches('#'));
    body.strip_prefix('"')?.strip_suffix('"')
}

fn read_tokens(stream: proc_macro2::TokenStream, out: &mut Read) {
    use proc_macro2::{Delimiter, TokenTree};
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut at = 0;
    while at < tokens.len() {
        if let Some(item) = attribute(&tokens, at, |a| a == "cfg(test)") {
            // The item runs to its body (`mod tests { … }`) or its `;`.
            let end = (item..tokens.len())
                .find(|&i| match &tokens[i] {
                    TokenTree::Group(g) => g.delimiter() == Delimiter::Brace,
                    TokenTree::Punct(p) => p.as_char() == ';',
                    _ => false,
                })
                .unwrap_or(tokens.len() - 1);
            out.test_lines.push(tokens[at].span().start().line..=tokens[end].span().end().line);
            at = end + 1;
            continue;
        }
        if let Some(after) = attribute(&tokens, at, |a| a.starts_with("doc=")) {
            at = after;
            continue;
        }
        let line = tokens[at].span().start().line;
        match &tokens[at] {
            TokenTree::Group(g) => read_tokens(g.stream(), out),
            TokenTree::Literal(l) => {
                if let Some(text) = string_text(&l.to_string()) {
                    out.literals.push((line, text.to_string()));
                }
            }
            TokenTree::Ident(i) if i == "ClusterKind" => {
                if let [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(name), ..] = &tokens[at + 1..] {
                    let name = name.to_string();
                    let constant = name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                    if a.as_char() == ':' && b.as_char() == ':' && constant {
                        out.kind_constants.push((line, name));
                    }
                }
            }
            _ => {}
        }
        at += 1;
    }
}

/// Every place outside `src/backend/` where non-test code names a kind, as (file, line,
/// message). A file that is not Rust the lexer accepts is reported too, rather than passed.
fn naming_violations(files: &[(PathBuf, String)], kinds: &KindNames) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for (relative, text) in files {
        let module = module_path(relative);
        if module.first().is_some_and(|m| m == "backend") {
            continue;
        }
        let file = relative.display().to_string();
        let stream = match text.parse::<proc_macro2::TokenStream>() {
            Ok(stream) => stream,
            Err(e) => {
                out.push((file.clone(), 0, format!("src/{file}: cannot be read as Rust tokens: {e}")));
                continue;
            }
        };
        let mut read = Read::default();
        read_tokens(stream, &mut read);
        let lines: Vec<&str> = text.lines().collect();
        let mut found = Vec::new();
        for (n, line) in lines.iter().enumerate() {
            for path in two_segment_paths(line, &module) {
                let mut segments = path.split("::");
                if segments.next() == Some("backend")
                    && let Some(kind) = segments.next().filter(|k| kinds.folders.iter().any(|f| f == k))
                {
                    found.push((n + 1, format!("names `backend::{kind}`")));
                }
            }
        }
        for (line, text) in &read.literals {
            if kinds.names.iter().chain(&kinds.folders).any(|k| k == text) {
                found.push((*line, format!("holds the kind name {text:?} as a string literal")));
            }
        }
        for (line, name) in &read.kind_constants {
            found.push((*line, format!("uses the kind constant `ClusterKind::{name}`")));
        }
        found.retain(|(line, _)| !read.in_test(*line));
        // `use crate::backend::slurm::{a, b}` names the kind once.
        found.sort();
        found.dedup();
        for (line, what) in found {
            let code = lines.get(line - 1).map_or("", |l| l.trim());
            out.push((
                file.clone(),
                line,
                format!("src/{file}:{line}: {what} outside `src/backend/`; ask the registry's `KindEntry` ({code})"),
            ));
        }
    }
    out
}

#[test]
fn nothing_above_the_kinds_names_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &root, &mut files);
    let registry = flightdeck::backend::Registry::builtin();
    let kinds = KindNames {
        folders: kind_folders(&files).into_iter().collect(),
        names: registry.entries().iter().map(|e| e.config.kind.to_string()).collect(),
    };
    assert!(
        kinds.folders.len() >= 6 && kinds.names.len() >= 6,
        "found the kinds: {:?} {:?}",
        kinds.folders,
        kinds.names
    );
    let found = naming_violations(&files, &kinds);
    let allowed = |file: &str| {
        NAMING_ALLOWED_FOR_NOW.iter().find(|(part, _)| file == *part || (part.ends_with('/') && file.starts_with(part)))
    };
    let broken: Vec<&str> =
        found.iter().filter(|(file, ..)| allowed(file).is_none()).map(|(.., shown)| shown.as_str()).collect();
    assert!(broken.is_empty(), "code above the kinds names a kind:\n{}", broken.join("\n"));
    let stale: Vec<&str> = NAMING_ALLOWED_FOR_NOW
        .iter()
        .filter(|entry| !found.iter().any(|(file, ..)| allowed(file) == Some(*entry)))
        .map(|(part, _)| *part)
        .collect();
    assert!(stale.is_empty(), "allowed for now but names no kind any more; take them off the list: {stale:?}");
}

#[test]
fn a_kind_named_above_the_kinds_is_reported_with_file_and_line() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let kinds = KindNames {
        folders: ["dstack", "hub", "kube", "slurm"].map(String::from).to_vec(),
        names: ["dstack", "hub", "kubernetes", "slurm"].map(String::from).to_vec(),
    };
    let files = vec![
        file("fleet/x.rs", "use std::sync::Arc;\nuse crate::backend::slurm::x;\n"),
        file("cli/advise.rs", "fn managed(kind: &str) -> bool {\n    kind == \"dstack\"\n}\n"),
        file("tui/views/overview.rs", "let k = ClusterKind::SLURM;\nlet k = ClusterKind::from_static(name);\n"),
        file(
            "output.rs",
            concat!(
                "// \"slurm\" and crate::backend::kube in a comment\n",
                "/// `backend::kube` and \"hub\" in a doc comment\n",
                "let s = \"slurmctld\"; let url = \"https://x\"; use crate::backend::kube::Y;\n",
                "#[cfg(test)]\n",
                "mod tests {\n",
                "    use crate::backend::kube::X;\n",
                "    const K: &str = \"kubernetes\";\n",
                "}\n",
                "const AFTER: &str = r#\"hub\"#;\n",
            ),
        ),
        file("serve/peers.rs", "use super::super::backend::{hub_link::Link, hub::config};\n"),
        file("backend/registry.rs", "use crate::backend::slurm;\nconst K: &str = \"slurm\";\n"),
        file(
            "backend/slurm/config.rs",
            "impl ClusterKind { pub const SLURM: ClusterKind = ClusterKind::from_static(\"slurm\"); }\n",
        ),
        file("cli/init/discover.rs", "use crate::backend::dstack::config::{cli_projects, check_url};\n"),
        file("model.rs", "const BROKEN: &str = \"unclosed;\n"),
    ];
    let shown: Vec<String> = naming_violations(&files, &kinds).into_iter().map(|(.., s)| s).collect();
    assert_eq!(
        shown,
        vec![
            "src/fleet/x.rs:2: names `backend::slurm` outside `src/backend/`; ask the registry's `KindEntry` (use crate::backend::slurm::x;)",
            "src/cli/advise.rs:2: holds the kind name \"dstack\" as a string literal outside `src/backend/`; ask the registry's `KindEntry` (kind == \"dstack\")",
            "src/tui/views/overview.rs:1: uses the kind constant `ClusterKind::SLURM` outside `src/backend/`; ask the registry's `KindEntry` (let k = ClusterKind::SLURM;)",
            "src/output.rs:3: names `backend::kube` outside `src/backend/`; ask the registry's `KindEntry` (let s = \"slurmctld\"; let url = \"https://x\"; use crate::backend::kube::Y;)",
            "src/output.rs:9: holds the kind name \"hub\" as a string literal outside `src/backend/`; ask the registry's `KindEntry` (const AFTER: &str = r#\"hub\"#;)",
            "src/serve/peers.rs:1: names `backend::hub` outside `src/backend/`; ask the registry's `KindEntry` (use super::super::backend::{hub_link::Link, hub::config};)",
            "src/cli/init/discover.rs:1: names `backend::dstack` outside `src/backend/`; ask the registry's `KindEntry` (use crate::backend::dstack::config::{cli_projects, check_url};)",
            "src/model.rs: cannot be read as Rust tokens: cannot parse string into token stream",
        ]
    );
}

/// Issue #28's rules, pair by pair, each broken once on a synthetic file: `backend`, `wire`
/// and `model` importing any of `serve`, `fleet`, `cli`, `tui`, `output` is reported; a kind
/// importing anything outside what lies below the kinds is reported, and what lies below is
/// not.
#[test]
fn every_pair_the_issue_forbids_is_reported() {
    for module in ["backend", "wire", "model"] {
        for target in ["serve", "fleet", "cli", "tui", "output"] {
            let files = vec![(PathBuf::from(format!("{module}/x.rs")), format!("use crate::{target}::X;\n"))];
            assert_eq!(violations(&files).len(), 1, "`{module}` importing `{target}` is reported");
        }
    }
    for target in ["serve", "fleet", "cli", "tui", "output", "columns", "notify", "tomlfile"] {
        let files = vec![(PathBuf::from("backend/slurm/x.rs"), format!("use crate::{target}::X;\n"))];
        assert_eq!(kind_violations(&files).len(), 1, "a kind importing `{target}` is reported");
    }
    for target in KIND_MAY_IMPORT {
        let files = vec![(PathBuf::from("backend/slurm/x.rs"), format!("use crate::{target}::X;\n"))];
        assert!(kind_violations(&files).is_empty(), "a kind may import `{target}`");
    }
    for shared in BACKEND_SHARED {
        let files = vec![(PathBuf::from("backend/slurm/x.rs"), format!("use crate::backend::{shared}::X;\n"))];
        assert!(kind_violations(&files).is_empty(), "a kind may import `backend::{shared}`");
    }
}
