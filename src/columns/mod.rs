//! The columns of every jobs and nodes table, for the CLI (`output.rs`) and the cockpit
//! (`tui/views`): header, cell text, width hints and sort order, defined once so that a
//! column is added in one place and both front ends show the same text for the same job.
//!
//! Cell text is plain and unpadded; each front end cleans control characters and lays the
//! cells out its own way (the CLI in aligned columns, the cockpit fitted to the terminal).
//! An absent value is an empty cell where the cockpit shows a blank (a job's reason) and
//! `-` where an empty cell would read as a bug (no GPUs, no nodes); the CLI writes `-` for
//! every empty cell.

pub mod format;
pub mod jobs;
pub mod natural;
pub mod nodes;

pub use self::jobs::{JobColumn, JobContext};
pub use self::natural::natural_cmp;
pub use self::nodes::NodeColumn;

/// How a column wants to be laid out in a table that must fit the terminal: the cockpit's
/// table fitting (`tui::widgets::table::fit`) reads these, the CLI (natural widths) does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub title: &'static str,
    /// Never narrower than this (the column is dropped instead).
    pub min: u16,
    /// Never wider than this, however long its values.
    pub max: u16,
    /// 0 is the most important; higher numbers are dropped first when space runs out.
    pub priority: u8,
    /// Right-aligned (numbers).
    pub right: bool,
    /// Grows to its content (up to `max`) before the other columns share what is left: an
    /// identifier cut short (`ml:pod:trai…`) is useless, a long name cut short is not.
    pub content_first: bool,
    /// Shown only when some row has a value: a `$/H` column of blanks on a fleet without
    /// cloud clusters is noise.
    pub optional: bool,
}

impl Shape {
    pub const fn new(title: &'static str, min: u16, max: u16, priority: u8) -> Self {
        Self { title, min, max, priority, right: false, content_first: false, optional: false }
    }

    pub const fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    pub const fn right(mut self) -> Self {
        self.right = true;
        self
    }

    pub const fn content_first(mut self) -> Self {
        self.content_first = true;
        self
    }
}
