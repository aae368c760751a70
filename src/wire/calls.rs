//! What the hub's calls carry beside the state: actions and their outcomes, portable specs
//! (as JSON), job output, native previews, imported specs, diagnoses and start estimates.
//!
//! What a user asks for is read strictly: an action with no kind, an unknown verb or a spec
//! that would be refused from a file is an `Err` naming the fault, never a guess.

use super::state::{time_from_ns, time_to_ns};
use super::{pb, serde_name, verb_from_name, verb_names};
use crate::model::StartEstimate;
use crate::model::{
    Action, ActionOutcome, Diagnosis, Dialect, Fact, JobAction, JobRef, LogChunk, Native, NodeAction, NodeRef, Verb,
};
use crate::spec::{Imported, JobSpec};

/// The spec's JSON: the same fields, names and omissions as its TOML form.
pub fn spec_to_json(spec: &JobSpec) -> String {
    // Strings, numbers, a string map: serialising cannot fail. Were it to, the empty text is
    // refused by name on the other side rather than sending a different job.
    serde_json::to_string(spec).unwrap_or_default()
}

/// A spec read from JSON and checked as a spec file is (`JobSpec::validate`); the error
/// names the field at fault (`` `memory`: … ``) or where the JSON stops making sense.
pub fn spec_from_json(text: &str) -> Result<JobSpec, String> {
    // serde would also take an array, field by field in declaration order: a positional
    // spec that means something else the day a field is added. Only an object is a spec.
    if !text.trim_start().starts_with('{') {
        return Err("cannot read the job spec JSON: expected an object (`{\"name\": …}`)".to_string());
    }
    let spec: JobSpec = serde_json::from_str(text).map_err(|e| format!("cannot read the job spec JSON: {e}"))?;
    spec.validate().map_err(|e| format!("invalid job spec: {e}"))?;
    Ok(spec)
}

fn job_action_name(a: JobAction) -> &'static str {
    serde_name(a.verb())
}

fn job_action_from_name(name: &str) -> Result<JobAction, String> {
    match verb_from_name(name) {
        Some(Verb::Cancel) => Ok(JobAction::Cancel),
        Some(Verb::Hold) => Ok(JobAction::Hold),
        Some(Verb::Release) => Ok(JobAction::Release),
        Some(Verb::Requeue) => Ok(JobAction::Requeue),
        Some(Verb::Delete) => Ok(JobAction::Delete),
        _ => Err(format!("`{name}` is not a job action (one of: cancel, hold, release, requeue, delete)")),
    }
}

fn node_action_from_pb(a: &pb::NodeAction) -> Result<NodeAction, String> {
    match verb_from_name(&a.verb) {
        Some(Verb::Drain) => Ok(NodeAction::Drain { reason: a.reason.clone(), force: a.force }),
        Some(Verb::Resume) => Ok(NodeAction::Resume),
        Some(Verb::Cordon) => Ok(NodeAction::Cordon),
        Some(Verb::Uncordon) => Ok(NodeAction::Uncordon),
        Some(Verb::Teardown) => Ok(NodeAction::Teardown),
        _ => Err(format!("`{}` is not a node action (one of: drain, resume, cordon, uncordon, teardown)", a.verb)),
    }
}

pub fn action_to_pb(a: &Action) -> pb::Action {
    use pb::action::Action as Kind;
    let kind = match a {
        Action::Submit { cluster, spec } => {
            Kind::Submit(pb::SubmitAction { cluster: cluster.clone(), spec_json: spec_to_json(spec) })
        }
        Action::Job { job, action, uid } => Kind::Job(pb::JobAction {
            cluster: job.cluster.clone(),
            id: job.id.clone(),
            verb: job_action_name(*action).to_string(),
            uid: uid.clone(),
        }),
        Action::Node { node, action } => {
            let (reason, force) = match action {
                NodeAction::Drain { reason, force } => (reason.clone(), *force),
                _ => (String::new(), false),
            };
            Kind::Node(pb::NodeAction {
                cluster: node.cluster.clone(),
                node: node.name.clone(),
                verb: serde_name(action.verb()).to_string(),
                reason,
                force,
            })
        }
        Action::Migrate { source, to, spec, uid, resume } => Kind::Migrate(pb::MigrateAction {
            source_cluster: source.cluster.clone(),
            source_id: source.id.clone(),
            to: to.clone(),
            spec_json: spec_to_json(spec),
            uid: uid.clone(),
            resume: resume.clone(),
        }),
    };
    pb::Action { action: Some(kind) }
}

/// `what` must not be empty: a reference with a blank part names nothing to act on.
fn named(what: &str, value: String) -> Result<String, String> {
    if value.is_empty() { Err(format!("the action names no {what}")) } else { Ok(value) }
}

/// The action a message asks for; `Err` says what is missing or wrong, by name.
pub fn action_from_pb(a: pb::Action) -> Result<Action, String> {
    use pb::action::Action as Kind;
    match a.action {
        None => Err("empty action: none of submit, job, node or migrate is set".to_string()),
        Some(Kind::Submit(s)) => {
            let cluster = named("cluster", s.cluster)?;
            let spec = spec_from_json(&s.spec_json).map_err(|e| format!("submit to {cluster}: {e}"))?;
            Ok(Action::Submit { cluster, spec: Box::new(spec) })
        }
        Some(Kind::Job(j)) => {
            let job = JobRef::new(named("cluster", j.cluster)?, named("job id", j.id)?);
            let action = job_action_from_name(&j.verb).map_err(|e| format!("{job}: {e}"))?;
            Ok(Action::Job { job, action, uid: j.uid })
        }
        Some(Kind::Node(n)) => {
            let action = node_action_from_pb(&n);
            let node = NodeRef { cluster: named("cluster", n.cluster)?, name: named("node", n.node)? };
            let action = action.map_err(|e| format!("{node}: {e}"))?;
            Ok(Action::Node { node, action })
        }
        Some(Kind::Migrate(m)) => {
            let source = JobRef::new(named("source cluster", m.source_cluster)?, named("source job id", m.source_id)?);
            let to = named("target cluster", m.to)?;
            let spec = spec_from_json(&m.spec_json).map_err(|e| format!("migrate {source} to {to}: {e}"))?;
            Ok(Action::Migrate { source, to, spec: Box::new(spec), uid: m.uid, resume: m.resume })
        }
    }
}

/// Outcome `index` of a request (its place among the actions asked for). An index past
/// `u32::MAX` (no request is that long) is sent as `u32::MAX`.
pub fn outcome_to_pb(index: usize, o: &ActionOutcome) -> pb::ActOutcome {
    let (ok, message) = match &o.result {
        Ok(m) => (true, m.clone()),
        Err(e) => (false, e.clone()),
    };
    pb::ActOutcome {
        index: u32::try_from(index).unwrap_or(u32::MAX),
        verb: serde_name(o.verb).to_string(),
        target: o.target.clone(),
        ok,
        message,
    }
}

/// The outcome a message reports (its `index` is the caller's to use); `Err` for a verb
/// this build does not know, since the outcome would be misreported under another.
pub fn outcome_from_pb(o: pb::ActOutcome) -> Result<ActionOutcome, String> {
    let verb = verb_from_name(&o.verb)
        .ok_or_else(|| format!("outcome for {}: unknown verb `{}` (one of: {})", o.target, o.verb, verb_names()))?;
    let result = if o.ok { Ok(o.message) } else { Err(o.message) };
    Ok(ActionOutcome { verb, target: o.target, result })
}

pub fn diagnosis_to_pb(d: &Diagnosis) -> pb::Diagnosis {
    pb::Diagnosis {
        transport: d.transport.clone(),
        latency_ms: d.latency_ms,
        release: d.release.clone(),
        facts: d.facts.iter().map(|f| pb::Fact { key: f.key.clone(), value: f.value.clone() }).collect(),
        notes: d.notes.clone(),
    }
}

pub fn diagnosis_from_pb(d: pb::Diagnosis) -> Diagnosis {
    Diagnosis {
        transport: d.transport,
        latency_ms: d.latency_ms,
        release: d.release,
        facts: d.facts.into_iter().map(|f| Fact { key: f.key, value: f.value }).collect(),
        notes: d.notes,
    }
}

pub fn log_chunk_to_pb(c: &LogChunk) -> pb::LogChunk {
    pb::LogChunk { data: c.data.clone(), offset: c.offset, dropped: c.dropped }
}

pub fn log_chunk_from_pb(c: pb::LogChunk) -> LogChunk {
    LogChunk { data: c.data, offset: c.offset, dropped: c.dropped }
}

pub fn native_to_pb(n: &Native) -> pb::Native {
    pb::Native {
        dialect: n.dialect.name().to_string(),
        text: n.text.clone(),
        warnings: n.warnings.clone(),
        dialect_kind_name: n.dialect.kind_name().to_string(),
        dialect_described: n.dialect.described().to_string(),
        dialect_title: n.dialect.title().to_string(),
    }
}

/// `Err` for a native form without a dialect name. A peer that sent only the name (an
/// older hub) gives a dialect known by its name alone, which the caller may look up.
pub fn native_from_pb(n: pb::Native) -> Result<Native, String> {
    if n.dialect.is_empty() {
        return Err("a native form without its dialect".into());
    }
    let dialect = if n.dialect_title.is_empty() {
        Dialect::named(n.dialect)
    } else {
        Dialect::owned(n.dialect, n.dialect_kind_name, n.dialect_described, n.dialect_title)
    };
    Ok(Native { dialect, text: n.text, warnings: n.warnings })
}

pub fn imported_to_pb(i: &Imported) -> pb::ImportedSpec {
    pb::ImportedSpec { spec_json: spec_to_json(&i.spec), warnings: i.warnings.clone() }
}

/// The spec is checked as every dialect's reader checks what it imports.
pub fn imported_from_pb(i: pb::ImportedSpec) -> Result<Imported, String> {
    Ok(Imported { spec: spec_from_json(&i.spec_json)?, warnings: i.warnings })
}

pub fn estimate_to_pb(e: Option<&StartEstimate>) -> pb::EstimateReply {
    pb::EstimateReply {
        estimate: e.map(|e| pb::StartEstimate {
            at_ns: time_to_ns(e.at),
            nodes: e.nodes.clone(),
            partition: e.partition.clone(),
            processors: e.processors,
        }),
    }
}

pub fn estimate_from_pb(r: pb::EstimateReply) -> Option<StartEstimate> {
    r.estimate.map(|e| StartEstimate {
        at: time_from_ns(e.at_ns),
        nodes: e.nodes,
        partition: e.partition,
        processors: e.processors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        JobSpec { name: "t".into(), command: Some("python train.py".into()), ..JobSpec::default() }
    }

    fn err_of(a: pb::Action) -> String {
        action_from_pb(a).expect_err("the action should be refused")
    }

    #[test]
    fn an_action_without_a_kind_is_refused() {
        let e = err_of(pb::Action { action: None });
        assert!(e.contains("empty action") && e.contains("submit"), "{e}");
    }

    #[test]
    fn unknown_verbs_are_refused_by_name() {
        use pb::action::Action as Kind;
        let job = |verb: &str| pb::Action {
            action: Some(Kind::Job(pb::JobAction {
                cluster: "hpc".into(),
                id: "12".into(),
                verb: verb.into(),
                uid: None,
            })),
        };
        let e = err_of(job("obliterate"));
        assert!(e.starts_with("hpc/12: `obliterate` is not a job action"), "{e}");
        // A real verb, but not one a job takes.
        assert!(err_of(job("drain")).contains("`drain` is not a job action"));
        assert!(err_of(job("")).contains("`` is not a job action"));
        let node = pb::Action {
            action: Some(Kind::Node(pb::NodeAction {
                cluster: "k8s".into(),
                node: "gpu-1".into(),
                verb: "cancel".into(),
                ..pb::NodeAction::default()
            })),
        };
        assert!(err_of(node).starts_with("k8s/gpu-1: `cancel` is not a node action"));
        let blank_id = pb::Action {
            action: Some(Kind::Job(pb::JobAction {
                cluster: "hpc".into(),
                verb: "cancel".into(),
                ..Default::default()
            })),
        };
        assert_eq!(err_of(blank_id), "the action names no job id");
    }

    #[test]
    fn both_spellings_of_teardown_are_understood() {
        use pb::action::Action as Kind;
        for verb in ["teardown", "tear down"] {
            let a = pb::Action {
                action: Some(Kind::Node(pb::NodeAction {
                    cluster: "sky".into(),
                    node: "c1".into(),
                    verb: verb.into(),
                    ..pb::NodeAction::default()
                })),
            };
            assert!(matches!(action_from_pb(a), Ok(Action::Node { action: NodeAction::Teardown, .. })), "{verb}");
        }
        let sent = action_to_pb(&Action::Node {
            node: NodeRef { cluster: "sky".into(), name: "c1".into() },
            action: NodeAction::Teardown,
        });
        assert!(matches!(sent.action, Some(Kind::Node(n)) if n.verb == "teardown"), "one word, as the proto says");
    }

    #[test]
    fn bad_specs_are_refused_naming_the_fault() {
        use pb::action::Action as Kind;
        let submit = |json: &str| pb::Action {
            action: Some(Kind::Submit(pb::SubmitAction { cluster: "hpc".into(), spec_json: json.into() })),
        };
        let e = err_of(submit("{not json"));
        assert!(err_of(submit(r#"["t", "x"]"#)).ends_with("expected an object (`{\"name\": …}`)"));
        assert!(e.starts_with("submit to hpc: cannot read the job spec JSON: "), "{e}");
        assert!(e.contains("line 1 column"), "says where: {e}");
        let e = err_of(submit(r#"{"name": "t", "command": "x", "memory": "lots"}"#));
        assert!(e.starts_with("submit to hpc: invalid job spec: `memory`: "), "{e}");
        let e = err_of(submit(r#"{"name": "t", "comand": "x"}"#));
        assert!(e.contains("unknown field `comand`"), "{e}");
        let e = err_of(submit(r#"{"name": "t"}"#));
        assert!(e.contains("`command`: set `command` or `script`"), "{e}");
        let migrate = pb::Action {
            action: Some(Kind::Migrate(pb::MigrateAction {
                source_cluster: "hpc".into(),
                source_id: "12".into(),
                to: "k8s".into(),
                spec_json: String::new(),
                uid: None,
                resume: None,
            })),
        };
        let e = err_of(migrate);
        assert!(e.starts_with("migrate hpc/12 to k8s: cannot read the job spec JSON"), "{e}");
    }

    #[test]
    fn spec_json_reads_numbers_as_the_toml_reader_does() {
        let read = spec_from_json(r#"{"name": "t", "command": "x", "memory": 4096, "time_limit": 90}"#).unwrap();
        assert_eq!(read.memory.as_deref(), Some("4096"));
        assert_eq!(read.time_limit_secs(), Some(90 * 60));
        let full = JobSpec {
            env: [("A".to_string(), "1".to_string())].into(),
            gpus: 2,
            gpu_type: Some("h100".into()),
            managed: true,
            ..spec()
        };
        assert_eq!(spec_from_json(&spec_to_json(&full)), Ok(full));
    }

    #[test]
    fn outcomes_keep_their_index_result_and_verb() {
        let o = ActionOutcome { verb: Verb::Teardown, target: "sky/c1".into(), result: Err("busy".into()) };
        let wire = outcome_to_pb(7, &o);
        assert_eq!((wire.index, wire.ok, wire.verb.as_str()), (7, false, "teardown"));
        assert_eq!(outcome_from_pb(wire), Ok(o));
        assert_eq!(
            outcome_to_pb(
                usize::MAX,
                &ActionOutcome { verb: Verb::Submit, target: "hpc".into(), result: Ok("hpc/1".into()) }
            )
            .index,
            u32::MAX
        );
        let e = outcome_from_pb(pb::ActOutcome { verb: "fly".into(), target: "hpc/1".into(), ..Default::default() })
            .unwrap_err();
        assert!(e.contains("unknown verb `fly`") && e.contains("teardown"), "{e}");
    }

    #[test]
    fn natives_carry_their_dialects_words() {
        let sbatch = Dialect::new("sbatch", "slurm", "an sbatch script", "sbatch script");
        let n =
            Native { dialect: sbatch.clone(), text: "#!/bin/bash\n".into(), warnings: vec!["`image`: ignored".into()] };
        let wire = native_to_pb(&n);
        assert_eq!(serde_json::to_value(&sbatch).unwrap(), wire.dialect.as_str());
        let back = native_from_pb(wire.clone()).unwrap();
        assert_eq!(back, n);
        assert_eq!((back.dialect.kind_name(), back.dialect.title()), ("slurm", "sbatch script"));
        // An older hub sends the name alone.
        let old = pb::Native {
            dialect_kind_name: String::new(),
            dialect_described: String::new(),
            dialect_title: String::new(),
            ..wire
        };
        assert_eq!(native_from_pb(old).unwrap().dialect.title(), "sbatch");
        let e = native_from_pb(pb::Native::default()).unwrap_err();
        assert!(e.contains("without its dialect"), "{e}");
    }

    #[test]
    fn imported_specs_are_checked() {
        let i = Imported { spec: spec(), warnings: vec!["#SBATCH --mail-type=END (line 7): kept".into()] };
        assert_eq!(imported_from_pb(imported_to_pb(&i)), Ok(i));
        let bad = pb::ImportedSpec { spec_json: r#"{"name": ""}"#.into(), warnings: vec![] };
        assert!(imported_from_pb(bad).unwrap_err().contains("`name`"));
    }

    #[test]
    fn estimates_cross_or_stay_absent() {
        assert_eq!(estimate_from_pb(estimate_to_pb(None)), None);
        let e = StartEstimate {
            at: time_from_ns(1_780_000_000_000_000_001),
            nodes: Some("gpu-[01-02]".into()),
            partition: None,
            processors: Some(64),
        };
        assert_eq!(estimate_from_pb(estimate_to_pb(Some(&e))), Some(e));
    }
}
