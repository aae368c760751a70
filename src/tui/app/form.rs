//! The submit form: fields, the `JobSpec` they make, the first problem shown on its field,
//! and the live preview of what the target cluster will really get (its native form, asked
//! of the fleet: an sbatch script, a Kubernetes Job manifest …).
//!
//! Which fields a cluster needs and what it calls them come from its [`SpecFields`], and
//! which of `nodes`, `tasks per node` and `array` it takes from its [`ShapeFields`]: the
//! form knows no cluster kind by name.
//!
//! Beside the preview, the placement advice: every cluster ranked for the spec being
//! edited ([`crate::fleet::advice`]), computed from the fleet state the App already holds
//! (no network, no estimate), again only when the spec's placement or the state changed.

use super::input::TextInput;
use super::latest::Latest;
use crate::fleet::advice::{self, Advice};
use crate::model::{FieldUse, FleetState, Native, Need, ShapeFields, SpecFields};
use crate::spec::{JobSpec, SpecError};

/// The form's fields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Command,
    Image,
    Gpus,
    Model,
    Cpus,
    Memory,
    Time,
    Nodes,
    TasksPerNode,
    Array,
    Partition,
    Account,
    Env,
    Cluster,
}

/// What the target cluster says of the fields whose meaning differs by kind.
#[derive(Debug, Clone, Default)]
pub struct TargetFields {
    pub spec: SpecFields,
    pub shape: ShapeFields,
}

impl TargetFields {
    /// The cluster's, or every field optional under its portable name for an unknown one.
    pub fn of(fleet: &FleetState, cluster: &str) -> Self {
        fleet
            .cluster(cluster)
            .map(|c| TargetFields { spec: c.spec_fields.clone(), shape: c.shape_fields.clone() })
            .unwrap_or_default()
    }
}

impl Field {
    pub const ALL: [Field; 15] = [
        Field::Name,
        Field::Command,
        Field::Image,
        Field::Gpus,
        Field::Model,
        Field::Cpus,
        Field::Memory,
        Field::Time,
        Field::Nodes,
        Field::TasksPerNode,
        Field::Array,
        Field::Partition,
        Field::Account,
        Field::Env,
        Field::Cluster,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Command => "command",
            Field::Gpus => "GPUs",
            Field::Model => "GPU model",
            Field::Cpus => "CPUs",
            Field::Memory => "memory",
            Field::Time => "time limit",
            Field::Nodes => "nodes",
            Field::TasksPerNode => "tasks/node",
            Field::Array => "array",
            Field::Partition => "partition",
            Field::Image => "image",
            Field::Account => "account",
            Field::Env => "env",
            Field::Cluster => "cluster",
        }
    }

    /// How the target cluster uses this field, for the fields whose meaning differs by kind.
    pub fn usage(self, fields: &TargetFields) -> Option<&FieldUse> {
        match self {
            Field::Image => Some(&fields.spec.image),
            Field::Account => Some(&fields.spec.account),
            Field::Partition => Some(&fields.spec.partition),
            Field::Nodes => Some(&fields.shape.nodes),
            Field::TasksPerNode => Some(&fields.shape.tasks_per_node),
            Field::Array => Some(&fields.shape.array),
            _ => None,
        }
    }

    /// The label on the target cluster (`queue` for a Kueue queue, `namespace` …).
    pub fn label_on(self, fields: &TargetFields) -> &str {
        self.usage(fields).map_or(self.label(), |u| u.label.as_str())
    }

    /// The hint on the target cluster; a required field says so.
    pub fn hint_on(self, fields: &TargetFields) -> String {
        match self.usage(fields) {
            Some(u) if u.need == Need::Required => format!("required: {}", u.hint),
            Some(u) if u.need == Need::Ignored && self.is_shape() => format!("not here: {}", u.hint),
            Some(u) if u.need == Need::Ignored => "ignored by this cluster".to_string(),
            Some(u) => u.hint.clone(),
            None => self.hint().to_string(),
        }
    }

    pub fn hint(self) -> &'static str {
        match self {
            Field::Name => "one line",
            Field::Command => "run by the job's shell",
            Field::Gpus => "per node, 0 for none",
            Field::Model => "a100, h100, 1g.10gb",
            Field::Cpus => "CPUs per task",
            Field::Memory => "32G, 500M",
            Field::Time => "2h, 90m, 1-00:00:00",
            Field::Nodes => "machines, all at once",
            Field::TasksPerNode => "tasks per node",
            Field::Array => "0-99%10: one job per index",
            Field::Partition => "",
            Field::Image => "container image",
            Field::Account => "",
            Field::Env => "KEY=value KEY2='two words'",
            Field::Cluster => "",
        }
    }

    /// A field of the job's shape: a value in it where the cluster does not take it is refused
    /// (a spec field the cluster ignores is only greyed).
    fn is_shape(self) -> bool {
        matches!(self, Field::Nodes | Field::TasksPerNode | Field::Array)
    }

    /// The form field a spec key belongs to (`validate` names spec keys).
    fn of_spec_key(key: &str) -> Option<Field> {
        Some(match key {
            "name" => Field::Name,
            "command" | "script" => Field::Command,
            "gpus" => Field::Gpus,
            "gpu_type" => Field::Model,
            "cpus" => Field::Cpus,
            "memory" => Field::Memory,
            "time_limit" => Field::Time,
            "nodes" => Field::Nodes,
            "tasks_per_node" => Field::TasksPerNode,
            "array" => Field::Array,
            "partition" => Field::Partition,
            "image" => Field::Image,
            "account" => Field::Account,
            "env" => Field::Env,
            _ if key.starts_with("env.") => Field::Env,
            _ => return None,
        })
    }
}

/// A problem with the form: on a field, or (for spec keys the form does not show, from a
/// loaded file) on the form as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: Option<Field>,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct SubmitForm {
    pub values: [TextInput; 15],
    pub focus: usize,
    /// A loaded spec's script (it stands in for `command` until cleared with Backspace).
    pub script: Option<String>,
    /// The loaded spec, for the keys the form has no field for (workdir, script …).
    pub base: JobSpec,
    pub loaded_from: Option<String>,
    /// The `load spec` path prompt, while open.
    pub path_prompt: Option<TextInput>,
    /// Recomputed after every edit.
    pub problem: Option<Problem>,
    /// The target cluster's native form of the spec, or why there is none (the form's
    /// problem, or the cluster's refusal).
    pub preview: Result<Native, String>,
    /// The cluster and spec a preview should be shown for (set while the form is valid).
    pub wanted: Option<(String, JobSpec)>,
    /// What the last preview was asked for; differs from `wanted` until it is asked again.
    pub requested: Option<(String, JobSpec)>,
    /// The preview asked for and not come back; older answers are ignored.
    pub render: Latest<()>,
    /// Every cluster ranked for the spec being edited (empty until a field is filled in).
    pub advice: Vec<Advice>,
    /// What the advice was computed for: the fleet state (its address and version), the
    /// target cluster and the spec's placement key.
    advised: Option<(usize, u64, String, JobSpec)>,
    /// The pending jobs of the state advised on, counted once per state (the costly part).
    pending: Option<((usize, u64), advice::PendingIndex)>,
}

impl Default for SubmitForm {
    fn default() -> Self {
        Self {
            values: Default::default(),
            focus: 0,
            script: None,
            base: JobSpec::default(),
            loaded_from: None,
            path_prompt: None,
            problem: None,
            preview: Err(String::new()),
            wanted: None,
            requested: None,
            render: Latest::default(),
            advice: Vec::new(),
            advised: None,
            pending: None,
        }
    }
}

impl SubmitForm {
    pub fn value(&self, f: Field) -> &str {
        self.values[f as usize].text()
    }

    pub fn input_mut(&mut self, f: Field) -> &mut TextInput {
        &mut self.values[f as usize]
    }

    pub fn focused(&self) -> Field {
        Field::ALL[self.focus]
    }

    /// Fill the fields from a spec (a loaded file).
    pub fn load(&mut self, spec: JobSpec, from: String, fleet: &FleetState) {
        let keep_cluster = self.value(Field::Cluster).to_string();
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        self.values = [
            TextInput::new(spec.name.clone()),
            TextInput::new(opt(&spec.command)),
            TextInput::new(opt(&spec.image)),
            TextInput::new(if spec.gpus > 0 { spec.gpus.to_string() } else { String::new() }),
            TextInput::new(opt(&spec.gpu_type)),
            TextInput::new(spec.cpus.map(|c| c.to_string()).unwrap_or_default()),
            TextInput::new(opt(&spec.memory)),
            TextInput::new(opt(&spec.time_limit)),
            TextInput::new(spec.nodes.map(|n| n.to_string()).unwrap_or_default()),
            TextInput::new(spec.tasks_per_node.map(|n| n.to_string()).unwrap_or_default()),
            TextInput::new(opt(&spec.array)),
            TextInput::new(opt(&spec.partition)),
            TextInput::new(opt(&spec.account)),
            TextInput::new(env_text(&spec.env)),
            TextInput::new(keep_cluster),
        ];
        self.script = spec.script.clone();
        self.base = spec;
        self.loaded_from = Some(from);
        self.focus = 0;
        self.recheck(fleet);
    }

    /// The spec the form describes, or its first problem.
    pub fn spec(&self) -> Result<JobSpec, Problem> {
        let spec = self.draft()?;
        spec.validate().map_err(|e| match e {
            SpecError::Invalid { field, message } => {
                Problem { field: Field::of_spec_key(&field), message: format!("`{field}`: {message}") }
            }
            other => Problem { field: None, message: other.to_string() },
        })?;
        Ok(spec)
    }

    /// The fields read into a spec, not validated yet (the advice needs no name or command).
    fn draft(&self) -> Result<JobSpec, Problem> {
        let on = |field: Field, message: String| Problem { field: Some(field), message };
        let text = |f: Field| {
            let v = self.value(f).trim();
            (!v.is_empty()).then(|| v.to_string())
        };
        let number = |f: Field| -> Result<Option<u32>, Problem> {
            text(f).map(|v| v.parse::<u32>().map_err(|_| on(f, format!("{v:?} is not a whole number")))).transpose()
        };
        let mut spec = self.base.clone();
        spec.name = self.value(Field::Name).trim().to_string();
        match &self.script {
            Some(script) => {
                spec.script = Some(script.clone());
                spec.command = None;
            }
            None => {
                spec.command = text(Field::Command);
                spec.script = None;
            }
        }
        spec.gpus = number(Field::Gpus)?.unwrap_or(0);
        spec.gpu_type = text(Field::Model);
        spec.cpus = number(Field::Cpus)?;
        spec.memory = text(Field::Memory);
        spec.time_limit = text(Field::Time);
        spec.nodes = number(Field::Nodes)?;
        spec.tasks_per_node = number(Field::TasksPerNode)?;
        spec.array = text(Field::Array);
        spec.partition = text(Field::Partition);
        spec.image = text(Field::Image);
        spec.account = text(Field::Account);
        spec.env = parse_env(self.value(Field::Env)).map_err(|message| on(Field::Env, message))?;
        Ok(spec)
    }

    /// The target cluster, or the problem with it.
    pub fn cluster(&self, clusters: &[String]) -> Result<String, Problem> {
        let want = self.value(Field::Cluster).trim();
        let problem = |message: String| Problem { field: Some(Field::Cluster), message };
        if want.is_empty() {
            return Err(problem(format!("pick a cluster: {}", clusters.join(", "))));
        }
        if !clusters.iter().any(|c| c == want) {
            return Err(problem(format!("no cluster named `{want}` (configured: {})", clusters.join(", "))));
        }
        Ok(want.to_string())
    }

    /// Recompute the problem after an edit, and what a preview is wanted for: the App asks
    /// the fleet for it ([`crate::tui::app::Command::Render`]) when that changes.
    pub fn recheck(&mut self, fleet: &FleetState) {
        let clusters: Vec<String> = fleet.clusters.iter().map(|c| c.name.clone()).collect();
        if self.value(Field::Cluster).trim().is_empty()
            && let Some(first) = clusters.first()
        {
            self.values[Field::Cluster as usize].set(first.clone());
        }
        let checked = self.spec().and_then(|spec| {
            let cluster = self.cluster(&clusters)?;
            required_fields(&spec, &TargetFields::of(fleet, &cluster), &cluster)?;
            Ok((cluster, spec))
        });
        match checked {
            Ok(wanted) => {
                self.problem = None;
                self.wanted = Some(wanted);
            }
            Err(problem) => {
                self.preview = Err(problem.message.clone());
                self.problem = Some(problem);
                self.wanted = None;
                self.requested = None;
                self.render.forget();
            }
        }
        self.readvise(fleet);
    }

    /// Rank the clusters for the spec being edited, when its placement, the target or the
    /// fleet state changed since the last time. The pending jobs are counted once per state
    /// (at 100,000 jobs that walk is most of the cost); an edit then costs a pass over the
    /// nodes.
    fn readvise(&mut self, fleet: &FleetState) {
        let untouched =
            self.loaded_from.is_none() && self.values.iter().take(Field::Cluster as usize).all(|v| v.text().is_empty());
        let Some(spec) = self.draft().ok().filter(|_| !untouched) else {
            self.advice.clear();
            self.advised = None;
            return;
        };
        let target = self.value(Field::Cluster).trim().to_string();
        // The address tells one published state from the next (the App holds the current
        // one while this runs, so it cannot be reused for another); the version, edits of it.
        let state = (fleet as *const FleetState as usize, fleet.version);
        let key = (state.0, state.1, target, advice::placement_key(&spec));
        if self.advised.as_ref() == Some(&key) {
            return;
        }
        let pending = match self.pending.take() {
            Some((at, pending)) if at == state => pending,
            _ => advice::PendingIndex::of(fleet),
        };
        // The partition is the target cluster's: elsewhere the default applies.
        let opts = advice::Options { exclude: None, partition_on: Some(key.2.as_str()) };
        self.advice = advice::advise_indexed(fleet, &pending, &spec, &opts);
        self.pending = Some((state, pending));
        self.advised = Some(key);
    }

    /// The next preview to ask for, if the wanted one has not been asked yet: its number,
    /// cluster and spec.
    pub fn next_render(&mut self) -> Option<(u64, String, JobSpec)> {
        let wanted = self.wanted.clone()?;
        if self.requested.as_ref() == Some(&wanted) {
            return None;
        }
        self.requested = Some(wanted.clone());
        Some((self.render.issue(()), wanted.0, wanted.1))
    }

    /// The fleet's answer to preview number `seq`; a stale one is dropped (false).
    pub fn rendered(&mut self, seq: u64, result: Result<Native, String>) -> bool {
        let wanted = self.wanted.is_some() && self.render.answer(seq).is_some();
        if wanted {
            self.preview = result;
        }
        wanted
    }

    /// The message to show on `field`, if the current problem is there.
    pub fn problem_on(&self, field: Field) -> Option<&str> {
        self.problem.as_ref().filter(|p| p.field == Some(field)).map(|p| p.message.as_str())
    }

    /// Cycle the cluster field through the configured clusters.
    pub fn cycle_cluster(&mut self, clusters: &[String], step: isize) {
        if clusters.is_empty() {
            return;
        }
        let at = clusters.iter().position(|c| c == self.value(Field::Cluster).trim());
        let next = match at {
            Some(i) => (i as isize + step).rem_euclid(clusters.len() as isize) as usize,
            None => 0,
        };
        self.values[Field::Cluster as usize].set(clusters[next].clone());
    }
}

/// What the target cluster requires and the spec lacks, or a shape it does not take, as a
/// problem on that field.
fn required_fields(spec: &JobSpec, fields: &TargetFields, cluster: &str) -> Result<(), Problem> {
    let shape = [
        (Field::Nodes, spec.nodes.filter(|n| *n > 1).is_some()),
        (Field::TasksPerNode, spec.tasks_per_node.filter(|n| *n > 1).is_some()),
        (Field::Array, spec.array.is_some()),
    ];
    for (field, set) in shape {
        if let Some(usage) = field.usage(fields).filter(|u| set && u.need == Need::Ignored) {
            return Err(Problem {
                field: Some(field),
                message: format!("`{}` is not taken on {cluster}: {}", usage.label, usage.hint),
            });
        }
    }
    for (field, value) in
        [(Field::Image, &spec.image), (Field::Account, &spec.account), (Field::Partition, &spec.partition)]
    {
        let Some(usage) = field.usage(fields) else { continue };
        if usage.need == Need::Required && value.as_deref().is_none_or(|v| v.trim().is_empty()) {
            return Err(Problem {
                field: Some(field),
                message: format!("`{}` is required on {cluster}: {}", usage.label, usage.hint),
            });
        }
    }
    Ok(())
}

/// `KEY=value KEY2='two words'` → the environment; words are split the way a shell would.
pub fn parse_env(text: &str) -> Result<std::collections::BTreeMap<String, String>, String> {
    let words =
        shlex::split(text).ok_or_else(|| format!("cannot split {text:?} into KEY=value words (an open quote?)"))?;
    let mut env = std::collections::BTreeMap::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(format!("{word:?} is not KEY=value"));
        };
        env.insert(key.to_string(), value.to_string());
    }
    Ok(env)
}

/// The environment as the env field shows it (values quoted where a shell would need it).
pub fn env_text(env: &std::collections::BTreeMap<String, String>) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={}", shlex::try_quote(v).map(|q| q.into_owned()).unwrap_or_else(|_| v.clone())))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_words_round_trip_through_the_field() {
        let env = parse_env("A=1 B='two words' C=").unwrap();
        assert_eq!(env["B"], "two words");
        assert_eq!(env["C"], "");
        assert_eq!(parse_env(&env_text(&env)).unwrap(), env);
        assert!(parse_env("NOEQUALS").unwrap_err().contains("KEY=value"));
        assert!(parse_env("A='open").is_err());
    }
}
