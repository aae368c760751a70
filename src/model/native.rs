//! A job in a backend's own words: what will really be sent when a portable spec is
//! submitted (an sbatch script, a Kubernetes Job manifest …), for previews and, later,
//! `spec convert`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// A native form a job can take (an sbatch script, a Kubernetes Job …). Open rather than an
/// enum, like `ClusterKind`: each kind declares its forms in its own folder and registers
/// them through its registry line (`KindEntry.dialects`), so a kind added at run time brings
/// its own. Serialised as its `name` alone; two dialects are the same when their names are.
#[derive(Debug, Clone)]
pub struct Dialect {
    name: Cow<'static, str>,
    kind_name: Cow<'static, str>,
    described: Cow<'static, str>,
    title: Cow<'static, str>,
}

impl Dialect {
    /// A form as its kind declares it: its `name` (what JSON and the hub's wire say,
    /// `kubernetes_job`), the word `--to`/`--from` take (`kubernetes`, `pytorchjob`), how a
    /// sentence names it ("a Kubernetes Job") and how a preview is titled.
    pub const fn new(
        name: &'static str,
        kind_name: &'static str,
        described: &'static str,
        title: &'static str,
    ) -> Self {
        Dialect {
            name: Cow::Borrowed(name),
            kind_name: Cow::Borrowed(kind_name),
            described: Cow::Borrowed(described),
            title: Cow::Borrowed(title),
        }
    }

    /// A form known only by its name (read back from JSON, or from a peer that sent no
    /// more): each of its words is the name.
    pub fn named(name: impl Into<String>) -> Self {
        let name: String = name.into();
        Dialect {
            kind_name: Cow::Owned(name.clone()),
            described: Cow::Owned(name.clone()),
            title: Cow::Owned(name.clone()),
            name: Cow::Owned(name),
        }
    }

    /// A form with every word given (a peer's).
    pub fn owned(name: String, kind_name: String, described: String, title: String) -> Self {
        Dialect {
            name: Cow::Owned(name),
            kind_name: Cow::Owned(kind_name),
            described: Cow::Owned(described),
            title: Cow::Owned(title),
        }
    }

    /// Its name in JSON and on the wire (`sbatch`, `kubernetes_job`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The word `--to` / `--from` name it by: a kind's own form by the kind (`slurm`,
    /// `kubernetes`), another form by its own word (`pytorchjob`), as the cluster's
    /// `multi_node` setting names them.
    pub fn kind_name(&self) -> &str {
        &self.kind_name
    }

    /// The form as a sentence names one: "an sbatch script", "a Kubernetes Job".
    pub fn described(&self) -> &str {
        &self.described
    }

    /// How a preview is titled.
    pub fn title(&self) -> &str {
        &self.title
    }
}

impl PartialEq for Dialect {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Dialect {}

impl std::hash::Hash for Dialect {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl Serialize for Dialect {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name)
    }
}

impl<'de> Deserialize<'de> for Dialect {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Dialect::named)
    }
}

/// A rendered job: its dialect, the text, and what of the spec it could not carry (by name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Native {
    pub dialect: Dialect,
    pub text: String,
    /// Spec fields the target ignores or changes, one sentence each, naming the field.
    pub warnings: Vec<String>,
}

/// How a cluster uses the spec fields that mean different things (or nothing) on different
/// kinds: the submit form labels, requires and greys its fields from this, so a new kind
/// says it in its own module instead of the form knowing every kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecFields {
    pub image: FieldUse,
    pub account: FieldUse,
    pub partition: FieldUse,
}

/// How a cluster takes a job's shape, for the submit form's `nodes`, `tasks per node` and
/// `array` fields: offered (optional, with what it becomes there) or not (`Need::Ignored`,
/// its hint saying why; the form refuses a value in it). Apart from [`SpecFields`] so that a
/// kind that says nothing (the default: all three optional) needs no change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShapeFields {
    pub nodes: FieldUse,
    pub tasks_per_node: FieldUse,
    pub array: FieldUse,
}

impl Default for ShapeFields {
    fn default() -> Self {
        Self {
            nodes: FieldUse::new("nodes", Need::Optional, "machines, all at once"),
            tasks_per_node: FieldUse::new("tasks/node", Need::Optional, "tasks per node"),
            array: FieldUse::new("array", Need::Optional, "0-99%10: one job per index"),
        }
    }
}

/// One field's use on a cluster: what it is called there and whether it is needed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldUse {
    /// The cluster's own word for it (`partition`, `queue`, `namespace`).
    pub label: String,
    pub need: Need,
    /// What it does there, for the form's hint (`a Kueue LocalQueue`).
    pub hint: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    Required,
    Optional,
    /// The cluster does nothing with it: shown greyed, left out of the submission's meaning.
    Ignored,
}

impl FieldUse {
    pub fn new(label: &str, need: Need, hint: &str) -> Self {
        Self { label: label.into(), need, hint: hint.into() }
    }
}

impl Default for SpecFields {
    /// Every field optional, under its portable name.
    fn default() -> Self {
        Self {
            image: FieldUse::new("image", Need::Optional, "container image"),
            account: FieldUse::new("account", Need::Optional, ""),
            partition: FieldUse::new("partition", Need::Optional, ""),
        }
    }
}
