//! How the cockpit looks: one ratatui [`Style`] per semantic [`Slot`], read from theme files.
//!
//! A theme file has one table per slot:
//!
//! ```toml
//! inherit = "default"     # optional: a builtin name (what user files get anyway), "none", or a path
//!
//! [error]
//! fg = "#e06c75"          # "#rrggbb", a colour name ("red", "light_blue"), "ansi:NN", or "reset"
//! bold = true             # also: italic, underline, reversed, dim
//! ```
//!
//! A slot's keys override the parent's one by one (`bold = false` turns an inherited bold
//! off). Colours follow the terminal's [`ColorDepth`]: `#rrggbb` becomes the nearest entry
//! of the 256-colour palette unless the terminal has true colour; with no colour at all
//! (`NO_COLOR`, `TERM=dumb`) a theme that uses colour is shown with the `mono` look, since
//! colour alone is what tells its slots apart (the cursor row, say).
//!
//! Files are refused, naming the file, the line and the key, for an unknown slot or key, a
//! bad colour, an unknown `inherit`, or an inheritance cycle.

mod color;

pub use color::{ColorDepth, detect_color_depth, rgb_to_ansi256};

use std::path::{Path, PathBuf};

use ratatui::style::{Modifier, Style};
use toml::de::DeValue;

use self::color::{COLOR_HELP, ThemeColor};
use super::keymap::{
    Doc, Parent, Problem, cycle_text, describe_value, identity_of_builtin, identity_of_file, resolve_parent, suggestion,
};
use crate::model::{JobState, NodeState};

/// The shipped themes, embedded, in the order `cycle_theme` visits them.
const BUILTIN: &[(&str, &str)] = &[
    ("default", include_str!("../../themes/default.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
    ("mono", include_str!("../../themes/mono.toml")),
];

/// The names live in `config` (which checks `theme = "…"` without knowing the cockpit).
const BUILTIN_NAMES: &[&str] = crate::config::BUILTIN_THEMES;

/// The theme shown when there is no colour.
const MONO: &str = "mono";

macro_rules! slots {
    ($($variant:ident => $name:literal;)*) => {
        /// A place on screen that has its own look.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Slot { $($variant),* }

        impl Slot {
            pub const ALL: &'static [Slot] = &[$(Slot::$variant),*];

            /// The table name in theme files.
            pub fn name(self) -> &'static str {
                match self { $(Slot::$variant => $name),* }
            }

            pub fn from_name(name: &str) -> Option<Slot> {
                match name { $($name => Some(Slot::$variant),)* _ => None }
            }
        }
    };
}

slots! {
    Base => "base";
    Border => "border";
    BorderFocused => "border_focused";
    Title => "title";
    Header => "header";
    Selection => "selection";
    Marked => "marked";
    Footer => "footer";
    FooterKey => "footer_key";
    Warning => "warning";
    Error => "error";
    ToastOk => "toast_ok";
    ToastError => "toast_error";
    StaleBanner => "stale_banner";
    Dim => "dim";
    JobPending => "job_pending";
    JobHeld => "job_held";
    JobRunning => "job_running";
    JobCompleting => "job_completing";
    JobCompleted => "job_completed";
    JobFailed => "job_failed";
    JobCancelled => "job_cancelled";
    JobOther => "job_other";
    NodeIdle => "node_idle";
    NodeMixed => "node_mixed";
    NodeAllocated => "node_allocated";
    NodeDraining => "node_draining";
    NodeDrained => "node_drained";
    NodeDown => "node_down";
    NodeOther => "node_other";
    GpuAllocated => "gpu_allocated";
    GpuFree => "gpu_free";
    GpuUnavailable => "gpu_unavailable";
    GpuBusy => "gpu_busy";
    GpuLow => "gpu_low";
    GpuIdle => "gpu_idle";
    BarLow => "bar_low";
    BarMid => "bar_mid";
    BarHigh => "bar_high";
}

impl std::fmt::Display for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The modifiers a slot may set, as written in files.
const MODIFIERS: &[(&str, Modifier)] = &[
    ("bold", Modifier::BOLD),
    ("italic", Modifier::ITALIC),
    ("underline", Modifier::UNDERLINED),
    ("reversed", Modifier::REVERSED),
    ("dim", Modifier::DIM),
];

const SLOT_KEYS: &str = "fg, bg, bold, italic, underline, reversed, dim";

/// Why a theme file was refused (shared with the config file's errors).
pub type ThemeError = crate::tomlfile::FileError;

/// One slot as written, before the colour depth is applied; unset fields are inherited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SlotSpec {
    fg: Option<ThemeColor>,
    bg: Option<ThemeColor>,
    /// Per entry of [`MODIFIERS`]: `Some(true)` adds, `Some(false)` removes.
    modifiers: [Option<bool>; 5],
}

impl SlotSpec {
    fn overlay(&mut self, over: &SlotSpec) {
        self.fg = over.fg.or(self.fg);
        self.bg = over.bg.or(self.bg);
        for (mine, theirs) in self.modifiers.iter_mut().zip(over.modifiers) {
            *mine = theirs.or(*mine);
        }
    }

    fn has_color(&self) -> bool {
        self.fg.is_some() || self.bg.is_some()
    }

    fn style(&self, depth: ColorDepth) -> Style {
        let mut style = Style {
            fg: self.fg.and_then(|c| c.at_depth(depth)),
            bg: self.bg.and_then(|c| c.at_depth(depth)),
            ..Style::default()
        };
        for ((_, modifier), set) in MODIFIERS.iter().zip(self.modifiers) {
            style = match set {
                Some(true) => style.add_modifier(*modifier),
                Some(false) => style.remove_modifier(*modifier),
                None => style,
            };
        }
        style
    }
}

/// The slots of a theme as written (after inheritance).
type Specs = Vec<SlotSpec>;

/// A resolved theme: one style per slot, for one colour depth.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    name: String,
    depth: ColorDepth,
    styles: Vec<Style>,
}

impl Theme {
    /// A shipped theme (see [`Theme::names`]) at `depth`.
    pub fn builtin(name: &str, depth: ColorDepth) -> Option<Theme> {
        let name = BUILTIN_NAMES.iter().find(|n| **n == name)?;
        let specs = builtin_specs(name).ok()?;
        Some(Theme::resolve(name, specs, depth))
    }

    /// The names of the shipped themes, in the order `cycle_theme` visits them.
    pub fn names() -> &'static [&'static str] {
        BUILTIN_NAMES
    }

    /// A user theme file, layered over its parent (`default` unless it says `inherit`).
    pub fn load(path: &Path, depth: ColorDepth) -> Result<Theme, ThemeError> {
        let text = read(path)?;
        Theme::from_toml_str(&text, path, depth)
    }

    /// A user theme from text; `origin` names the file in messages (and relative `inherit`
    /// paths are taken from its directory). The theme is named after the file's stem.
    pub fn from_toml_str(text: &str, origin: &Path, depth: ColorDepth) -> Result<Theme, ThemeError> {
        let name = origin.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "custom".into());
        let mut stack = vec![(identity_of_file(origin), origin.display().to_string())];
        let specs = build(text, origin, Parent::Builtin("default"), &mut stack)?;
        Ok(Theme::resolve(&name, specs, depth))
    }

    /// The builtin name or the file's stem.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The colour depth the styles were made for.
    pub fn depth(&self) -> ColorDepth {
        self.depth
    }

    pub fn style(&self, slot: Slot) -> Style {
        self.styles[slot as usize]
    }

    /// The look of a job state.
    pub fn job_state(&self, state: JobState) -> Style {
        self.style(job_slot(state))
    }

    /// The look of a node state.
    pub fn node_state(&self, state: NodeState) -> Style {
        self.style(node_slot(state))
    }

    fn resolve(name: &str, specs: Specs, depth: ColorDepth) -> Theme {
        let specs = if depth == ColorDepth::None && specs.iter().any(SlotSpec::has_color) {
            builtin_specs(MONO).unwrap_or(specs)
        } else {
            specs
        };
        Theme { name: name.to_string(), depth, styles: specs.iter().map(|s| s.style(depth)).collect() }
    }
}

/// The slot that colours a job state.
pub fn job_slot(state: JobState) -> Slot {
    match state {
        JobState::Pending => Slot::JobPending,
        JobState::Held | JobState::Suspended => Slot::JobHeld,
        JobState::Running => Slot::JobRunning,
        JobState::Completing => Slot::JobCompleting,
        JobState::Completed => Slot::JobCompleted,
        JobState::Failed | JobState::Timeout | JobState::NodeFail | JobState::OutOfMemory => Slot::JobFailed,
        JobState::Cancelled => Slot::JobCancelled,
        JobState::Preempted | JobState::Unknown => Slot::JobOther,
    }
}

/// The slot that colours a node state.
pub fn node_slot(state: NodeState) -> Slot {
    match state {
        NodeState::Idle => Slot::NodeIdle,
        NodeState::Mixed => Slot::NodeMixed,
        NodeState::Allocated | NodeState::Completing => Slot::NodeAllocated,
        NodeState::Draining => Slot::NodeDraining,
        NodeState::Drained => Slot::NodeDrained,
        NodeState::Down => Slot::NodeDown,
        NodeState::Reserved
        | NodeState::Maintenance
        | NodeState::Future
        | NodeState::PoweredDown
        | NodeState::Unknown => Slot::NodeOther,
    }
}

fn builtin_specs(name: &str) -> Result<Specs, ThemeError> {
    let (name, text) = BUILTIN.iter().find(|(n, _)| *n == name).expect("builtin theme");
    let origin = PathBuf::from(format!("themes/{name}.toml"));
    let mut stack = vec![(identity_of_builtin(name), origin.display().to_string())];
    build(text, &origin, Parent::Nothing, &mut stack)
}

fn read(path: &Path) -> Result<String, ThemeError> {
    crate::tomlfile::read_file(path, "theme")
}

/// Parse `text`, build its parent (`inherit`, else `implicit`), and lay the file over it.
fn build(text: &str, origin: &Path, implicit: Parent, stack: &mut Vec<(String, String)>) -> Result<Specs, ThemeError> {
    let refuse = |problem: Problem| ThemeError::invalid(origin, problem);
    let doc = Doc::parse(text).map_err(refuse)?;
    let (inherit, own) = parse_slots(&doc).map_err(refuse)?;

    let (parent, inherit_line) = resolve_parent(inherit, origin, BUILTIN_NAMES, implicit, "theme").map_err(refuse)?;
    let (id, parent_origin) = match &parent {
        Parent::Nothing => (None, PathBuf::new()),
        Parent::Builtin(name) => (Some(identity_of_builtin(name)), PathBuf::from(format!("themes/{name}.toml"))),
        Parent::File(path) => (Some(identity_of_file(path)), path.clone()),
    };
    let mut specs: Specs = match id {
        None => vec![SlotSpec::default(); Slot::ALL.len()],
        Some(id) => {
            if stack.iter().any(|(seen, _)| *seen == id) {
                return Err(refuse(Problem::new(
                    inherit_line,
                    "inherit",
                    format!("inheritance cycle: {}", cycle_text(stack, &id)),
                )));
            }
            stack.push((id, parent_origin.display().to_string()));
            let result = match &parent {
                Parent::Builtin(name) => {
                    let (_, text) = BUILTIN.iter().find(|(n, _)| n == name).expect("builtin theme");
                    build(text, &parent_origin, Parent::Nothing, stack)
                }
                _ => match read(&parent_origin) {
                    Ok(text) => build(&text, &parent_origin, Parent::Builtin("default"), stack),
                    Err(err) => Err(refuse(Problem::new(inherit_line, "inherit", format!("cannot inherit: {err}")))),
                },
            };
            stack.pop();
            result?
        }
    };
    for (slot, spec) in own {
        specs[slot as usize].overlay(&spec);
    }
    Ok(specs)
}

/// The `inherit` value (with its line) and every slot the file writes.
#[allow(clippy::type_complexity)]
fn parse_slots(doc: &Doc<'_>) -> Result<(Option<(String, usize)>, Vec<(Slot, SlotSpec)>), Problem> {
    let mut inherit = None;
    let mut slots = Vec::new();
    for item in doc.items(doc.root()) {
        if item.key == "inherit" {
            match item.value.get_ref() {
                DeValue::String(s) => inherit = Some((s.to_string(), item.line)),
                other => {
                    return Err(Problem::new(
                        item.line,
                        "inherit",
                        format!("bad value for `inherit`: expected a theme name, found {}", describe_value(other)),
                    ));
                }
            }
            continue;
        }
        let Some(slot) = Slot::from_name(item.key) else {
            let hint = suggestion(item.key, Slot::ALL.iter().map(|s| s.name()));
            return Err(Problem::new(
                item.line,
                item.key,
                format!(
                    "unknown slot `{}`{hint} (expected inherit or a slot: {})",
                    item.key,
                    Slot::ALL.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        let DeValue::Table(table) = item.value.get_ref() else {
            return Err(Problem::new(
                item.line,
                item.key,
                format!(
                    "bad value for `{}`: expected a table such as {{ fg = \"red\", bold = true }}, found {}",
                    item.key,
                    describe_value(item.value.get_ref())
                ),
            ));
        };
        let mut spec = SlotSpec::default();
        for field in doc.items(table) {
            let key = format!("{}.{}", slot.name(), field.key);
            match field.key {
                "fg" | "bg" => {
                    let color = match field.value.get_ref() {
                        DeValue::String(text) => ThemeColor::parse(text).ok_or_else(|| {
                            Problem::new(
                                field.line,
                                key.clone(),
                                format!("bad colour {text:?} for `{}` in [{slot}]: {COLOR_HELP}", field.key),
                            )
                        })?,
                        other => {
                            return Err(Problem::new(
                                field.line,
                                key,
                                format!(
                                    "bad colour for `{}` in [{slot}]: {COLOR_HELP}; found {}",
                                    field.key,
                                    describe_value(other)
                                ),
                            ));
                        }
                    };
                    if field.key == "fg" {
                        spec.fg = Some(color);
                    } else {
                        spec.bg = Some(color);
                    }
                }
                name => {
                    let Some(index) = MODIFIERS.iter().position(|(n, _)| *n == name) else {
                        let hint = if name == "inherit" {
                            " (write `inherit` at the top of the file, before the first [table])".to_string()
                        } else {
                            suggestion(name, ["fg", "bg"].into_iter().chain(MODIFIERS.iter().map(|(n, _)| *n)))
                        };
                        return Err(Problem::new(
                            field.line,
                            key,
                            format!("unknown key `{name}` in [{slot}]{hint} (expected one of: {SLOT_KEYS})"),
                        ));
                    };
                    let DeValue::Boolean(on) = field.value.get_ref() else {
                        return Err(Problem::new(
                            field.line,
                            key,
                            format!(
                                "bad value for `{name}` in [{slot}]: expected true or false, found {}",
                                describe_value(field.value.get_ref())
                            ),
                        ));
                    };
                    spec.modifiers[index] = Some(*on);
                }
            }
        }
        slots.push((slot, spec));
    }
    Ok((inherit, slots))
}

#[cfg(test)]
mod tests;
