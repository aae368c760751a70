//! The submit form: fields, the `JobSpec` they make, the first problem shown on its field,
//! and the live sbatch preview.

use super::input::TextInput;
use crate::backend::slurm::script::{SbatchOptions, render_sbatch};
use crate::spec::{JobSpec, SpecError};

/// The form's fields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Command,
    Gpus,
    Model,
    Cpus,
    Memory,
    Time,
    Partition,
    Cluster,
}

impl Field {
    pub const ALL: [Field; 9] = [
        Field::Name,
        Field::Command,
        Field::Gpus,
        Field::Model,
        Field::Cpus,
        Field::Memory,
        Field::Time,
        Field::Partition,
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
            Field::Partition => "partition",
            Field::Cluster => "cluster",
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
            Field::Partition => "",
            Field::Cluster => "",
        }
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
            "partition" => Field::Partition,
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
    pub values: [TextInput; 9],
    pub focus: usize,
    /// A loaded spec's script (it stands in for `command` until cleared with Backspace).
    pub script: Option<String>,
    /// The loaded spec, for the keys the form has no field for (account, env, image …).
    pub base: JobSpec,
    pub loaded_from: Option<String>,
    /// The `load spec` path prompt, while open.
    pub path_prompt: Option<TextInput>,
    /// Recomputed after every edit.
    pub problem: Option<Problem>,
    pub preview: Result<String, String>,
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
    pub fn load(&mut self, spec: JobSpec, from: String, clusters: &[String]) {
        let keep_cluster = self.value(Field::Cluster).to_string();
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        self.values = [
            TextInput::new(spec.name.clone()),
            TextInput::new(opt(&spec.command)),
            TextInput::new(if spec.gpus > 0 { spec.gpus.to_string() } else { String::new() }),
            TextInput::new(opt(&spec.gpu_type)),
            TextInput::new(spec.cpus.map(|c| c.to_string()).unwrap_or_default()),
            TextInput::new(opt(&spec.memory)),
            TextInput::new(opt(&spec.time_limit)),
            TextInput::new(opt(&spec.partition)),
            TextInput::new(keep_cluster),
        ];
        self.script = spec.script.clone();
        self.base = spec;
        self.loaded_from = Some(from);
        self.focus = 0;
        self.recheck(clusters);
    }

    /// The spec the form describes, or its first problem.
    pub fn spec(&self) -> Result<JobSpec, Problem> {
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
        spec.partition = text(Field::Partition);
        spec.validate().map_err(|e| match e {
            SpecError::Invalid { field, message } => {
                Problem { field: Field::of_spec_key(&field), message: format!("`{field}`: {message}") }
            }
            other => Problem { field: None, message: other.to_string() },
        })?;
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

    /// Recompute the problem and the preview after an edit.
    pub fn recheck(&mut self, clusters: &[String]) {
        if self.value(Field::Cluster).trim().is_empty()
            && let Some(first) = clusters.first()
        {
            self.values[Field::Cluster as usize].set(first.clone());
        }
        match self.spec() {
            Ok(spec) => {
                self.problem = self.cluster(clusters).err();
                self.preview = render_sbatch(&spec, &SbatchOptions::default()).map_err(|e| e.to_string());
            }
            Err(problem) => {
                self.preview = Err(problem.message.clone());
                self.problem = Some(problem);
            }
        }
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
