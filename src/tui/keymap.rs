//! What keys do: the effective bindings of every [`Mode`], built from keymap files.
//!
//! A keymap file has one table per mode, each mapping a key spec to an action name
//! (see [`UiAction`]):
//!
//! ```toml
//! inherit = "default"        # optional: "default" (what user files get anyway), "vim", "none", or a path
//!
//! [global]
//! "ctrl+c" = "quit"
//! "g g" = "top"              # a sequence: g, then g
//!
//! [jobs]
//! "C" = "cancel"             # same as "shift+c"
//! "x" = "none"               # unbind: in [jobs], x does nothing (not even a [global] binding)
//! ```
//!
//! A key in a mode's table wins over the same key in `[global]`. The text-entry modes
//! (`[submit]`, `[dialog]`) take from `[global]` only quit, help, back and refresh, and only
//! on keys that are not plain characters: typing `q` in a form does not quit, and the arrows,
//! home/end and ctrl+u stay with the text field. Their [`Resolution::None`] means "give the key
//! to the focused field".
//!
//! Files are refused, naming the file, the line and the key, for an unknown action, key or
//! table, for a key that is the prefix of another key in the same table (`g` and `g g`: the
//! second could never be typed), and for a destructive action on a bare Ctrl chord (see
//! [`UiAction::changes_work`]).

mod files;
mod keys;

pub(crate) use files::{Doc, Parent, Problem, cycle_text, describe_value, resolve_parent, suggestion};
pub(crate) use files::{identity_of_builtin, identity_of_file};
pub use keys::{KeyPress, KeySeq};

use std::path::{Path, PathBuf};

use ratatui::crossterm::event::{KeyEvent, KeyEventKind};
use toml::de::DeValue;

use super::action::{Mode, UiAction};

/// The shipped keymaps, embedded.
const BUILTIN: &[(&str, &str)] =
    &[("default", include_str!("../../keymaps/default.toml")), ("vim", include_str!("../../keymaps/vim.toml"))];

/// The names live in `config` (which checks `keymap = "…"` without knowing the cockpit).
const BUILTIN_NAMES: &[&str] = crate::config::BUILTIN_KEYMAPS;

/// The word that unbinds a key.
pub const UNBIND: &str = "none";

/// What the keys typed so far mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Do this (and forget the pending keys).
    Action(UiAction),
    /// The keys begin a longer binding: wait for the next key.
    Prefix,
    /// Nothing is bound (forget the pending keys).
    None,
}

/// Why a keymap file was refused (shared with the config file's errors).
pub type KeymapError = crate::tomlfile::FileError;

/// Where a binding was written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    path: PathBuf,
    line: usize,
}

#[derive(Debug, Clone)]
struct Binding {
    seq: KeySeq,
    /// `None`: explicitly unbound.
    action: Option<UiAction>,
    origin: Origin,
}

/// The effective bindings for every mode.
#[derive(Debug, Clone)]
pub struct Keymap {
    name: String,
    /// Indexed like [`Mode::ALL`]; bindings in the order first written.
    tables: Vec<Vec<Binding>>,
}

fn mode_index(mode: Mode) -> usize {
    Mode::ALL.iter().position(|m| *m == mode).unwrap_or(0)
}

fn action_index(action: UiAction) -> usize {
    UiAction::ALL.iter().position(|a| *a == action).unwrap_or(usize::MAX)
}

/// Modes where the user types text: plain characters never reach `[global]` there.
fn is_text_mode(mode: Mode) -> bool {
    matches!(mode, Mode::Submit | Mode::Dialog)
}

/// The `[global]` actions a text-entry mode still takes (on keys that are not plain
/// characters); every other key there belongs to the text field (arrows, home/end, ctrl+u …).
const TEXT_MODE_GLOBALS: &[UiAction] = &[UiAction::Quit, UiAction::Help, UiAction::Back, UiAction::Refresh];

/// One parsed `key = "action"` of the file being read.
struct Entry {
    mode: Mode,
    spec: String,
    seq: KeySeq,
    action: Option<UiAction>,
    line: usize,
}

impl Keymap {
    /// A shipped keymap: `"default"` or `"vim"` (see [`Keymap::names`]).
    pub fn builtin(name: &str) -> Option<Keymap> {
        let (name, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        let origin = PathBuf::from(format!("keymaps/{name}.toml"));
        let mut stack = vec![(identity_of_builtin(name), origin.display().to_string())];
        Self::build(text, &origin, name, Parent::Nothing, &mut stack).ok()
    }

    /// The names of the shipped keymaps.
    pub fn names() -> &'static [&'static str] {
        BUILTIN_NAMES
    }

    /// A user keymap file, layered over its parent (`default` unless it says `inherit`).
    pub fn load(path: &Path) -> Result<Keymap, KeymapError> {
        let text = read(path)?;
        Self::from_toml_str(&text, path)
    }

    /// A user keymap from text; `origin` names the file in messages (and relative `inherit`
    /// paths are taken from its directory).
    pub fn from_toml_str(text: &str, origin: &Path) -> Result<Keymap, KeymapError> {
        let name = origin.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "custom".into());
        let mut stack = vec![(identity_of_file(origin), origin.display().to_string())];
        Self::build(text, origin, &name, Parent::Builtin("default"), &mut stack)
    }

    /// The keymap's name: the builtin name or the file's stem.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the keys typed so far (oldest first) mean in `mode`: the mode's own table first,
    /// then `[global]`. Key-release events are ignored.
    pub fn resolve(&self, mode: Mode, pending: &[KeyEvent]) -> Resolution {
        let presses: Vec<KeyPress> =
            pending.iter().filter(|e| e.kind != KeyEventKind::Release).map(KeyPress::from_event).collect();
        self.resolve_presses(mode, &presses)
    }

    /// [`Keymap::resolve`] for presses already normalised.
    pub fn resolve_presses(&self, mode: Mode, presses: &[KeyPress]) -> Resolution {
        if presses.is_empty() {
            return Resolution::None;
        }
        if let Some(found) = lookup(self.table(mode), presses) {
            return found;
        }
        if mode == Mode::Global {
            return Resolution::None;
        }
        let found = if is_text_mode(mode) {
            if presses.iter().any(KeyPress::is_plain_char) {
                return Resolution::None;
            }
            lookup_among(self.table(Mode::Global), presses, |a| TEXT_MODE_GLOBALS.contains(&a))
        } else {
            lookup(self.table(Mode::Global), presses)
        };
        found.unwrap_or(Resolution::None)
    }

    /// The bindings of `mode`'s own table (not `[global]`'s), grouped by action in the order
    /// of [`UiAction::ALL`], keys of one action in the order written.
    pub fn bindings(&self, mode: Mode) -> Vec<(String, UiAction)> {
        self.sorted(mode).into_iter().map(|b| (b.seq.to_string(), b.action.expect("bound"))).collect()
    }

    /// Every binding that works in `mode`: its own table, then the `[global]` bindings it does
    /// not shadow. For a help screen that shows one list per screen.
    pub fn effective_bindings(&self, mode: Mode) -> Vec<(String, UiAction)> {
        let mut out = self.bindings(mode);
        if mode != Mode::Global {
            for b in self.sorted(Mode::Global) {
                let action = b.action.expect("bound");
                if self.resolve_presses(mode, b.seq.presses()) == Resolution::Action(action) {
                    out.push((b.seq.to_string(), action));
                }
            }
        }
        out
    }

    /// The first key that does `action` in `mode` (its own table first, then `[global]`), for
    /// footer hints such as `C cancel`.
    pub fn hint(&self, mode: Mode, action: UiAction) -> Option<String> {
        let own = self.sorted(mode);
        let global = if mode == Mode::Global { Vec::new() } else { self.sorted(Mode::Global) };
        own.into_iter()
            .chain(global)
            .filter(|b| b.action == Some(action))
            .find(|b| self.resolve_presses(mode, b.seq.presses()) == Resolution::Action(action))
            .map(|b| b.seq.to_string())
    }

    fn table(&self, mode: Mode) -> &[Binding] {
        &self.tables[mode_index(mode)]
    }

    fn sorted(&self, mode: Mode) -> Vec<&Binding> {
        let mut bound: Vec<(usize, &Binding)> =
            self.table(mode).iter().filter(|b| b.action.is_some()).enumerate().collect();
        bound.sort_by_key(|(pos, b)| (b.action.map(action_index), *pos));
        bound.into_iter().map(|(_, b)| b).collect()
    }

    fn empty(name: &str) -> Keymap {
        Keymap { name: name.to_string(), tables: vec![Vec::new(); Mode::ALL.len()] }
    }

    /// Parse `text`, build its parent (`inherit`, else `implicit`), and lay the file over it.
    fn build(
        text: &str,
        origin: &Path,
        name: &str,
        implicit: Parent,
        stack: &mut Vec<(String, String)>,
    ) -> Result<Keymap, KeymapError> {
        let refuse = |problem: Problem| KeymapError::invalid(origin, problem);
        let doc = Doc::parse(text).map_err(refuse)?;
        let (inherit, entries) = parse_entries(&doc).map_err(refuse)?;

        let (parent, inherit_line) =
            resolve_parent(inherit, origin, BUILTIN_NAMES, implicit, "keymap").map_err(refuse)?;
        let mut keymap = match parent {
            Parent::Nothing => Keymap::empty(name),
            Parent::Builtin(parent_name) => {
                let (_, parent_text) = BUILTIN.iter().find(|(n, _)| *n == parent_name).expect("builtin keymap");
                let parent_origin = PathBuf::from(format!("keymaps/{parent_name}.toml"));
                let id = identity_of_builtin(parent_name);
                with_parent(stack, id, &parent_origin, origin, inherit_line, |stack| {
                    Self::build(parent_text, &parent_origin, parent_name, Parent::Nothing, stack)
                })?
            }
            Parent::File(parent_path) => {
                let id = identity_of_file(&parent_path);
                with_parent(stack, id, &parent_path, origin, inherit_line, |stack| {
                    let parent_text = read(&parent_path).map_err(|err| {
                        refuse(Problem::new(inherit_line, "inherit", format!("cannot inherit: {err}")))
                    })?;
                    Self::build(&parent_text, &parent_path, name, Parent::Builtin("default"), stack)
                })?
            }
        };
        keymap.name = name.to_string();

        for entry in &entries {
            let table = &mut keymap.tables[mode_index(entry.mode)];
            let binding = Binding {
                seq: entry.seq.clone(),
                action: entry.action,
                origin: Origin { path: origin.to_path_buf(), line: entry.line },
            };
            match table.iter_mut().find(|b| b.seq == entry.seq) {
                Some(existing) => *existing = binding,
                None => table.push(binding),
            }
        }
        keymap.check_prefixes(origin, &entries).map_err(refuse)?;
        Ok(keymap)
    }

    /// A bound key that is a proper prefix of another bound key in the same table hides it.
    fn check_prefixes(&self, origin: &Path, entries: &[Entry]) -> Result<(), Problem> {
        for entry in entries.iter().filter(|e| e.action.is_some()) {
            for other in self.table(entry.mode).iter().filter(|b| b.action.is_some() && b.seq != entry.seq) {
                let (short, long) = if entry.seq.is_proper_prefix_of(other.seq.presses()) {
                    (&entry.seq, &other.seq)
                } else if other.seq.is_proper_prefix_of(entry.seq.presses()) {
                    (&other.seq, &entry.seq)
                } else {
                    continue;
                };
                // Both from this file: report once, at the later line.
                if other.origin.path == origin && other.origin.line > entry.line {
                    continue;
                }
                let other_action = other.action.expect("bound");
                let where_other = if other.origin.path == origin {
                    format!("line {}", other.origin.line)
                } else {
                    format!("{}:{}", other.origin.path.display(), other.origin.line)
                };
                return Err(Problem::new(
                    entry.line,
                    entry.spec.clone(),
                    format!(
                        "key {:?} in [{}] conflicts with {:?} = {:?} ({where_other}): \"{short}\" acts as soon as it is \
                         typed, so \"{long}\" could never be completed; unbind one of them with = \"{UNBIND}\"",
                        entry.spec,
                        entry.mode.as_str(),
                        other.seq.to_string(),
                        other_action.name(),
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Look `presses` up in one table: a bound key acts, a prefix of a bound key waits, an
/// unbound key stops the search; `None` when the table does not know the keys at all.
fn lookup(table: &[Binding], presses: &[KeyPress]) -> Option<Resolution> {
    lookup_among(table, presses, |_| true)
}

/// [`lookup`] seeing only the bindings whose action passes `allowed`.
fn lookup_among(table: &[Binding], presses: &[KeyPress], allowed: impl Fn(UiAction) -> bool) -> Option<Resolution> {
    let allowed = |b: &&Binding| b.action.is_some_and(&allowed);
    if let Some(action) = table.iter().filter(allowed).find(|b| b.seq.presses() == presses).and_then(|b| b.action) {
        return Some(Resolution::Action(action));
    }
    let typed = KeySeq::new(presses.to_vec());
    if table.iter().filter(allowed).any(|b| typed.is_proper_prefix_of(b.seq.presses())) {
        return Some(Resolution::Prefix);
    }
    if table.iter().any(|b| b.seq.presses() == presses) {
        return Some(Resolution::None);
    }
    None
}

/// Run `build` for a parent, with the parent on the inheritance stack; refuse a cycle.
fn with_parent<T>(
    stack: &mut Vec<(String, String)>,
    id: String,
    parent_origin: &Path,
    origin: &Path,
    inherit_line: usize,
    build: impl FnOnce(&mut Vec<(String, String)>) -> Result<T, KeymapError>,
) -> Result<T, KeymapError> {
    if stack.iter().any(|(seen, _)| *seen == id) {
        return Err(KeymapError::invalid(
            origin,
            Problem::new(inherit_line, "inherit", format!("inheritance cycle: {}", cycle_text(stack, &id))),
        ));
    }
    stack.push((id, parent_origin.display().to_string()));
    let result = build(stack);
    stack.pop();
    result
}

fn read(path: &Path) -> Result<String, KeymapError> {
    crate::tomlfile::read_file(path, "keymap")
}

fn mode_names() -> impl Iterator<Item = &'static str> {
    Mode::ALL.iter().map(|m| m.as_str())
}

/// The `inherit` value (with its line) and every binding of the file, checked one by one.
#[allow(clippy::type_complexity)]
fn parse_entries(doc: &Doc<'_>) -> Result<(Option<(String, usize)>, Vec<Entry>), Problem> {
    let mut inherit = None;
    let mut entries: Vec<Entry> = Vec::new();
    for item in doc.items(doc.root()) {
        if item.key == "inherit" {
            match item.value.get_ref() {
                DeValue::String(s) => inherit = Some((s.to_string(), item.line)),
                other => {
                    return Err(Problem::new(
                        item.line,
                        "inherit",
                        format!("bad value for `inherit`: expected a keymap name, found {}", describe_value(other)),
                    ));
                }
            }
            continue;
        }
        let Some(mode) = Mode::ALL.iter().copied().find(|m| m.as_str() == item.key) else {
            let hint = suggestion(item.key, mode_names());
            let message = match item.value.get_ref() {
                DeValue::Table(_) => format!(
                    "unknown table [{}]{hint} (expected inherit, or one of the tables: {})",
                    item.key,
                    mode_names().collect::<Vec<_>>().join(", ")
                ),
                _ => format!(
                    "unknown key `{}`{hint} (expected inherit, or one of the tables: {})",
                    item.key,
                    mode_names().collect::<Vec<_>>().join(", ")
                ),
            };
            return Err(Problem::new(item.line, item.key, message));
        };
        let DeValue::Table(table) = item.value.get_ref() else {
            return Err(Problem::new(
                item.line,
                item.key,
                format!(
                    "bad value for `{}`: expected a table of key = \"action\" (write it as [{}]), found {}",
                    item.key,
                    item.key,
                    describe_value(item.value.get_ref())
                ),
            ));
        };
        let section = mode.as_str();
        for binding in doc.items(table) {
            let spec = binding.key;
            if spec == "inherit" {
                return Err(Problem::new(
                    binding.line,
                    spec,
                    format!(
                        "`inherit` inside [{section}]: write `inherit` at the top of the file, before the first [table]"
                    ),
                ));
            }
            let seq = KeySeq::parse(spec).map_err(|why| {
                Problem::new(
                    binding.line,
                    spec,
                    format!("unknown key {spec:?} in [{section}]: {why} (a key is {})", keys::KEY_NAMES_HELP),
                )
            })?;
            let action = match binding.value.get_ref() {
                DeValue::String(name) if *name == UNBIND => None,
                DeValue::String(name) => match UiAction::from_name(name) {
                    Some(action) => Some(action),
                    None => {
                        let hint = suggestion(name, UiAction::ALL.iter().map(|a| a.name()));
                        return Err(Problem::new(
                            binding.line,
                            spec,
                            format!("unknown action {name:?} for key {spec:?} in [{section}]{hint}"),
                        ));
                    }
                },
                other => {
                    return Err(Problem::new(
                        binding.line,
                        spec,
                        format!(
                            "bad value for key {spec:?} in [{section}]: expected an action name, or \"{UNBIND}\" to \
                             unbind the key; found {}",
                            describe_value(other)
                        ),
                    ));
                }
            };
            if let Some(action) = action
                && action.changes_work()
                && let Some(chord) = seq.presses().iter().find(|p| p.is_bare_ctrl_chord())
            {
                return Err(Problem::new(
                    binding.line,
                    spec,
                    format!(
                        "key {spec:?} in [{section}] puts the destructive action {:?} on the bare Ctrl chord \"{chord}\"; \
                         terminals, shells and tmux claim those (ctrl+c interrupt, ctrl+z suspend, ctrl+d end of \
                         input, ctrl+s/ctrl+q flow control, ctrl+b the tmux prefix), so a press meant for them would \
                         {}; use a capital letter (\"C\"), alt+…, or a function key",
                        action.name(),
                        action.help(),
                    ),
                ));
            }
            if let Some(same) = entries.iter().find(|e| e.mode == mode && e.seq == seq) {
                return Err(Problem::new(
                    binding.line,
                    spec,
                    format!(
                        "key {spec:?} in [{section}] is the same key as {:?} (line {}); bind it once",
                        same.spec, same.line
                    ),
                ));
            }
            entries.push(Entry { mode, spec: spec.to_string(), seq, action, line: binding.line });
        }
    }
    Ok((inherit, entries))
}

#[cfg(test)]
mod tests;
