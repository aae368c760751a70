//! What every TOML file of ours shares (the config, job specs, keymaps, themes): reading
//! it, the [`FileError`] the user reads (file, 1-based line, key), locating a `toml` error's
//! key ([`pos`]), `inherit = "…"` resolution for files that build on another
//! ([`inherit`]), and a document we write made safe to print ([`printable`]).

use std::path::{Path, PathBuf};

pub mod printable;

/// Why a TOML file of ours (the config, a keymap, a theme) was refused. `Display` is the
/// text the user reads: the file, the 1-based line and what is wrong there.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A file named explicitly (`--config FILE`, `keymap = "…"`) does not exist.
    #[error("{}: no such {what} file", path.display())]
    NotFound { what: &'static str, path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Syntax, unknown key, wrong type or bad value, at `line` (1-based).
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        /// The key at fault, where there is one (`hostt`, `port`, `C` in a keymap, `error.fg`
        /// in a theme).
        key: Option<String>,
        message: String,
    },
}

impl FileError {
    /// The 1-based line, for [`FileError::Invalid`].
    pub fn line(&self) -> Option<usize> {
        match self {
            FileError::Invalid { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The key at fault, for [`FileError::Invalid`].
    pub fn key(&self) -> Option<&str> {
        match self {
            FileError::Invalid { key, .. } => key.as_deref(),
            _ => None,
        }
    }

    pub(crate) fn invalid(path: &Path, problem: pos::Problem) -> FileError {
        FileError::Invalid { path: path.to_path_buf(), line: problem.line, key: problem.key, message: problem.message }
    }
}

/// Read a whole `what` file (`config`, `keymap`, `theme`), a missing one named as such.
pub(crate) fn read_file(path: &Path, what: &'static str) -> Result<String, FileError> {
    std::fs::read_to_string(path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound { what, path: path.to_path_buf() },
        _ => FileError::Io { path: path.to_path_buf(), source: err },
    })
}

/// Turning `toml` errors into `file:line: message naming the key`; shared by the config, job specs,
/// keymaps and themes.
///
/// `toml::de::Error` carries a byte span but not (publicly) the key path. The document is
/// parsed a second time with `toml::de::DeTable::parse_recoverable`, which keeps the spans of
/// every key and value even when the text has errors; the innermost entry whose key or value
/// covers the error's offset is the key at fault.
pub mod pos {
    use std::ops::Range;

    use toml::de::{DeTable, DeValue};

    /// One step of a key path: a table key or an array index.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Seg {
        Key(String),
        Index(usize),
    }

    /// A located problem: 1-based line, the key (if one is known) and the message.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Problem {
        pub line: usize,
        pub key: Option<String>,
        pub message: String,
    }

    impl Problem {
        pub fn new(line: usize, key: impl Into<String>, message: impl Into<String>) -> Problem {
            Problem { line, key: Some(key.into()), message: message.into() }
        }
    }

    /// The 1-based line holding byte `offset` of `text`.
    pub fn line_of(text: &str, offset: usize) -> usize {
        let end = offset.min(text.len());
        text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
    }

    /// A span-keeping parse of the document, for locating keys.
    pub struct Doc<'t> {
        root: DeTable<'t>,
    }

    struct Entry {
        path: Vec<Seg>,
        key_span: Range<usize>,
        value_span: Range<usize>,
        /// A `[table]` or `[[array]]` header rather than `key = value`.
        is_header: bool,
    }

    impl<'t> Doc<'t> {
        pub fn parse(text: &'t str) -> Self {
            let (root, _errors) = DeTable::parse_recoverable(text);
            Self { root: root.into_inner() }
        }

        /// The string at `path`, if there is one.
        pub fn string_at(&self, path: &[Seg]) -> Option<String> {
            let (first, rest) = path.split_first()?;
            let Seg::Key(first) = first else { return None };
            let mut value: &DeValue<'_> = self.root.get(first.as_str())?.get_ref();
            for seg in rest {
                value = match (seg, value) {
                    (Seg::Key(k), DeValue::Table(t)) => t.get(k.as_str())?.get_ref(),
                    (Seg::Index(i), DeValue::Array(a)) => a.get(*i)?.get_ref(),
                    _ => return None,
                };
            }
            value.as_str().map(str::to_string)
        }

        /// Where the key at `path` is written (byte offset of the key).
        pub fn key_offset(&self, path: &[Seg]) -> Option<usize> {
            let mut entries = Vec::new();
            collect(&self.root, &mut Vec::new(), &mut entries);
            entries.into_iter().find(|e| e.path == path).map(|e| e.key_span.start)
        }

        /// What covers `offset`: the innermost key or value; else a table header (a missing
        /// key is reported on `[[cluster]]`); else the last header before it (a key the
        /// recoverable parse dropped, such as a duplicate, still belongs to that table).
        fn locate(&self, offset: usize) -> Option<(Vec<Seg>, Hit)> {
            let mut entries = Vec::new();
            collect(&self.root, &mut Vec::new(), &mut entries);
            let deepest = |hit: &dyn Fn(&Entry) -> bool| entries.iter().filter(|e| hit(e)).max_by_key(|e| e.path.len());
            if let Some(e) =
                deepest(&|e| e.key_span.contains(&offset) || (!e.is_header && e.value_span.contains(&offset)))
            {
                return Some((e.path.clone(), Hit::Key));
            }
            if let Some(e) = deepest(&|e| e.is_header && e.value_span.contains(&offset)) {
                return Some((e.path.clone(), Hit::Header));
            }
            entries
                .iter()
                .filter(|e| e.is_header && e.value_span.start <= offset)
                .max_by_key(|e| e.value_span.start)
                .map(|e| (e.path.clone(), Hit::Before))
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Hit {
        /// A `key = value` entry (or a table's key) covers the offset.
        Key,
        /// A `[table]` / `[[array]]` header covers the offset.
        Header,
        /// Nothing covers it; the path is the table the offset lies in.
        Before,
    }

    fn collect(table: &DeTable<'_>, prefix: &mut Vec<Seg>, out: &mut Vec<Entry>) {
        for (key, value) in table.iter() {
            prefix.push(Seg::Key(key.get_ref().to_string()));
            let key_span = key.span();
            let value_span = value.span();
            match value.get_ref() {
                DeValue::Table(inner) => {
                    // A `[table]` header's span starts before its key; an inline table's
                    // span starts after the `=`.
                    let is_header = value_span.start <= key_span.start;
                    out.push(Entry { path: prefix.clone(), key_span: key_span.clone(), value_span, is_header });
                    collect(inner, prefix, out);
                }
                DeValue::Array(items) => {
                    let is_header = value_span.start <= key_span.start;
                    out.push(Entry { path: prefix.clone(), key_span: key_span.clone(), value_span, is_header });
                    for (index, item) in items.iter().enumerate() {
                        prefix.push(Seg::Index(index));
                        let item_span = item.span();
                        if let DeValue::Table(inner) = item.get_ref() {
                            out.push(Entry {
                                path: prefix.clone(),
                                key_span: item_span.start..item_span.start,
                                value_span: item_span,
                                is_header,
                            });
                            collect(inner, prefix, out);
                        } else {
                            out.push(Entry {
                                path: prefix.clone(),
                                key_span: item_span.start..item_span.start,
                                value_span: item_span,
                                is_header: false,
                            });
                        }
                        prefix.pop();
                    }
                }
                _ => out.push(Entry { path: prefix.clone(), key_span, value_span, is_header: false }),
            }
            prefix.pop();
        }
    }

    /// The last key in a path (`port` for cluster.0.port).
    fn last_key(path: &[Seg]) -> Option<String> {
        path.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.clone()),
            Seg::Index(_) => None,
        })
    }

    /// The names between backticks after `expected` in a serde message, in order.
    fn expected_names(message: &str) -> Vec<String> {
        let Some(at) = message.find("expected") else { return Vec::new() };
        message[at..].split('`').skip(1).step_by(2).map(str::to_string).collect()
    }

    fn first_backticked(message: &str) -> Option<String> {
        message.split('`').nth(1).map(str::to_string)
    }

    /// Describe a `toml` error as a [`Problem`]. `section` names the table a path lies in
    /// (`[[cluster]] "hpc"`, `[env]`), `None` for the top level.
    pub fn describe(
        text: &str,
        err: &toml::de::Error,
        section: &dyn Fn(&Doc<'_>, &[Seg]) -> Option<String>,
    ) -> Problem {
        let raw = err.message().trim().to_string();
        let Some(span) = err.span() else {
            return Problem { line: 1, key: None, message: raw };
        };
        let offset = span.start;
        let line = line_of(text, offset);
        let doc = Doc::parse(text);
        let located = doc.locate(offset);

        // The table the problem is in, and the key (when a key or header covers the offset).
        let (table_path, located_key): (Vec<Seg>, Option<String>) = match &located {
            Some((path, Hit::Key | Hit::Header)) => {
                let mut table = path.clone();
                // Drop the key itself (and a trailing index for array elements).
                while matches!(table.last(), Some(Seg::Index(_))) {
                    table.pop();
                }
                let key = last_key(&table);
                table.pop();
                (table, key)
            }
            Some((path, Hit::Before)) => (path.clone(), None),
            None => (Vec::new(), None),
        };
        let in_section = section(&doc, &table_path).map(|s| format!(" in {s}")).unwrap_or_default();
        let spanned_text = text.get(span.clone()).unwrap_or("").trim().to_string();

        if let Some(rest) = raw.strip_prefix("unknown field ") {
            let key = first_backticked(rest).unwrap_or(spanned_text);
            let expected = expected_names(rest);
            let hint = if expected.is_empty() {
                String::new()
            } else {
                format!(" (expected one of: {})", expected.join(", "))
            };
            return Problem { line, message: format!("unknown key `{key}`{in_section}{hint}"), key: Some(key) };
        }
        if let Some(rest) = raw.strip_prefix("missing field ") {
            let key = first_backticked(rest).unwrap_or_default();
            // A missing key is reported on the table; the table is the located path itself.
            let in_table = match &located {
                Some((path, Hit::Header)) => section(&doc, path).map(|s| format!(" in {s}")).unwrap_or_default(),
                _ => in_section.clone(),
            };
            return Problem { line, message: format!("missing key `{key}`{in_table}"), key: Some(key) };
        }
        if raw.starts_with("duplicate key") {
            let key = if spanned_text.is_empty() {
                located_key.clone()
            } else {
                Some(spanned_text.trim_matches('"').to_string())
            };
            let key_text = key.as_deref().map(|k| format!(" `{k}`")).unwrap_or_default();
            // The duplicate was dropped by the recoverable parse: its table is the located one.
            let table = match &located {
                Some((path, Hit::Before)) => section(&doc, path).map(|s| format!(" in {s}")).unwrap_or_default(),
                _ => in_section,
            };
            return Problem { line, message: format!("duplicate key{key_text}{table}"), key };
        }
        if let Some(key) = located_key.clone() {
            if let Some(rest) = raw.strip_prefix("invalid type: ") {
                // "string \"22\", expected u16"
                let (found, expected) = match rest.split_once(", expected ") {
                    Some((found, expected)) => (found, expected),
                    None => (rest, ""),
                };
                let message = if expected.is_empty() {
                    format!("bad value for `{key}`{in_section}: found {found}")
                } else if expected == "a sequence" && found == "map" {
                    format!(
                        "bad value for `{key}`{in_section}: expected an array of tables (write each as [[{key}]]), found a table"
                    )
                } else {
                    format!("bad value for `{key}`{in_section}: expected {}, found {found}", friendly_type(expected))
                };
                return Problem { line, key: Some(key), message };
            }
            if let Some(rest) = raw.strip_prefix("invalid value: ") {
                let message = match rest.split_once(", expected ") {
                    Some((found, expected)) => {
                        format!(
                            "bad value for `{key}`{in_section}: expected {}, found {found}",
                            friendly_type(expected)
                        )
                    }
                    None => format!("bad value for `{key}`{in_section}: {rest}"),
                };
                return Problem { line, key: Some(key), message };
            }
            if let Some(rest) = raw.strip_prefix("unknown variant ") {
                let expected = expected_names(rest);
                let value = first_backticked(rest).unwrap_or_default();
                return Problem {
                    line,
                    message: format!(
                        "bad value for `{key}`{in_section}: unknown value {value:?} (expected one of: {})",
                        expected.join(", ")
                    ),
                    key: Some(key),
                };
            }
            if is_semantic(&raw) {
                return Problem { line, message: format!("bad value for `{key}`{in_section}: {raw}"), key: Some(key) };
            }
        }
        // TOML syntax: name the key written on that line, when there is one.
        let key = located_key.or_else(|| key_written_on_line(text, line));
        let near = key.as_deref().map(|k| format!(" (at key `{k}`)")).unwrap_or_default();
        Problem { line, key, message: format!("TOML syntax error{near}: {raw}") }
    }

    /// Messages produced by our own `deserialize_with` helpers rather than the TOML parser.
    fn is_semantic(message: &str) -> bool {
        message.starts_with("expected ")
    }

    fn friendly_type(expected: &str) -> String {
        match expected {
            // The only u16 is a port, where 0 is refused as well.
            "u16" => "an integer from 1 to 65535".into(),
            "u32" | "u64" => "a whole number (0 or more)".into(),
            "a boolean" => "true or false".into(),
            "a map" => "a table".into(),
            other if other.starts_with("struct ") => "a table".into(),
            other => other.to_string(),
        }
    }

    /// `foo` for a line reading `foo = …` (or `"foo" = …`).
    fn key_written_on_line(text: &str, line: usize) -> Option<String> {
        let content = text.lines().nth(line.checked_sub(1)?)?.trim_start();
        let (key, _) = content.split_once('=')?;
        let key = key.trim().trim_matches('"').trim_matches('\'');
        (!key.is_empty() && !key.starts_with('[') && !key.starts_with('#') && !key.contains(char::is_whitespace))
            .then(|| key.to_string())
    }
}

/// `inherit = "…"`: a builtin name, `"none"`, or a path relative to the file that names it;
/// shared by keymaps and themes.
pub(crate) mod inherit {
    use std::path::{Path, PathBuf};

    use super::pos::Problem;

    /// What `inherit = "…"` names.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Parent {
        /// `"none"`: start from nothing.
        Nothing,
        /// One of the shipped files.
        Builtin(&'static str),
        /// Another file; relative paths are taken from the directory of the file that names it.
        File(PathBuf),
    }

    /// Read an `inherit` value. `None` when it names neither a builtin, `"none"`, nor a path.
    pub(crate) fn parse_parent(value: &str, origin: &Path, builtins: &'static [&'static str]) -> Option<Parent> {
        if value == "none" {
            return Some(Parent::Nothing);
        }
        if let Some(name) = builtins.iter().find(|name| **name == value) {
            return Some(Parent::Builtin(name));
        }
        if value.contains('/') || value.ends_with(".toml") {
            let path = match value.strip_prefix("~/") {
                Some(rest) => match directories::BaseDirs::new() {
                    Some(dirs) => dirs.home_dir().join(rest),
                    None => PathBuf::from(value),
                },
                None => PathBuf::from(value),
            };
            let path =
                if path.is_absolute() { path } else { origin.parent().map(|dir| dir.join(&path)).unwrap_or(path) };
            return Some(Parent::File(path));
        }
        None
    }

    /// `(expected one of: default, vim, none, or a path to a .toml file)`.
    pub(crate) fn expected_parents(builtins: &[&str]) -> String {
        format!("expected one of: {}, none, or a path to a .toml file", builtins.join(", "))
    }

    /// The parent a `what` file (`keymap`, `theme`) builds on, with the line of its `inherit`:
    /// what the file names, else `implicit` (line 1).
    pub(crate) fn resolve_parent(
        inherit: Option<(String, usize)>,
        origin: &Path,
        builtins: &'static [&'static str],
        implicit: Parent,
        what: &str,
    ) -> Result<(Parent, usize), Problem> {
        let Some((value, line)) = inherit else { return Ok((implicit, 1)) };
        match parse_parent(&value, origin, builtins) {
            Some(parent) => Ok((parent, line)),
            None => Err(Problem::new(
                line,
                "inherit",
                format!("unknown {what} {value:?} for `inherit` ({})", expected_parents(builtins)),
            )),
        }
    }

    /// How a file is known on the inheritance stack: builtins by name, files by their
    /// canonical path when it exists.
    pub(crate) fn identity_of_file(path: &Path) -> String {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        format!("file:{}", path.display())
    }

    pub(crate) fn identity_of_builtin(name: &str) -> String {
        format!("builtin:{name}")
    }

    /// `a.toml → b.toml → a.toml` for a cycle message.
    pub(crate) fn cycle_text(stack: &[(String, String)], again: &str) -> String {
        let start = stack.iter().position(|(id, _)| id == again).unwrap_or(0);
        let mut names: Vec<&str> = stack[start..].iter().map(|(_, shown)| shown.as_str()).collect();
        names.push(stack[start].1.as_str());
        names.join(" → ")
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn parents() {
            let origin = Path::new("/home/a/.config/flightdeck/my.toml");
            let builtins: &'static [&'static str] = &["default", "vim"];
            assert_eq!(parse_parent("none", origin, builtins), Some(Parent::Nothing));
            assert_eq!(parse_parent("vim", origin, builtins), Some(Parent::Builtin("vim")));
            assert_eq!(
                parse_parent("base.toml", origin, builtins),
                Some(Parent::File(PathBuf::from("/home/a/.config/flightdeck/base.toml")))
            );
            assert_eq!(parse_parent("/etc/x.toml", origin, builtins), Some(Parent::File(PathBuf::from("/etc/x.toml"))));
            assert_eq!(parse_parent("emacs", origin, builtins), None);
        }

        #[test]
        fn cycles_are_spelled_out() {
            let stack = vec![
                ("x".to_string(), "x.toml".to_string()),
                ("a".into(), "a.toml".into()),
                ("b".into(), "b.toml".into()),
            ];
            assert_eq!(cycle_text(&stack, "a"), "a.toml → b.toml → a.toml");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pos::line_of;

    #[test]
    fn line_of_counts_from_one() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 4), 3);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
