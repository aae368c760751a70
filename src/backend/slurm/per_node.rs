//! A command for several nodes, as the other kinds run it: once on each node. A batch
//! script runs on the first node of its allocation only, so a spec's `command` with
//! `nodes > 1` is started through `srun`, one task per node, after torch's rendezvous in the
//! env the way the Kubernetes workloads carry it (`MASTER_ADDR` the first node, `MASTER_PORT`,
//! `WORLD_SIZE`, and torchrun's `PET_*` with the c10d rendezvous, which needs no node rank):
//!
//! ```text
//! export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
//! # flightdeck: the command runs once on each node (srun), torch's rendezvous on the first
//! …
//! srun --ntasks-per-node=1 torchrun train.py
//! ```
//!
//! A command that starts its own tasks across the nodes (`srun`, `mpirun`, `mpiexec`) is left
//! as it is. [`command_of`] reads the block back, so a spec survives the trip through sbatch
//! and a migrated job goes on to another kind as the command it was.

use crate::spec::JobSpec;

/// The first line of the block, by which it is known again.
const MARK: &str = "# flightdeck: the command runs once on each node (srun), torch's rendezvous on the first";

/// torch's default rendezvous port, as the Kubernetes workloads use it.
const PORT: &str = "29500";

/// The rendezvous, each line with the name it sets (a name the spec's `env` sets is left as
/// the spec has it, like on Kubernetes).
const LINES: [(&str, &str); 8] = [
    ("MASTER_ADDR", "export MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\""),
    ("MASTER_PORT", "export MASTER_PORT=29500"),
    ("WORLD_SIZE", "export WORLD_SIZE=\"$SLURM_JOB_NUM_NODES\""),
    ("PET_MASTER_ADDR", "export PET_MASTER_ADDR=\"$MASTER_ADDR\""),
    ("PET_MASTER_PORT", "export PET_MASTER_PORT=\"$MASTER_PORT\""),
    ("PET_NNODES", "export PET_NNODES=\"$WORLD_SIZE\""),
    ("PET_RDZV_BACKEND", "export PET_RDZV_BACKEND=c10d"),
    ("PET_RDZV_ENDPOINT", "export PET_RDZV_ENDPOINT=\"$MASTER_ADDR:$MASTER_PORT\""),
];

const SRUN: &str = "srun --ntasks-per-node=1 ";

/// How a command that needs a shell runs on each node.
const WRAP: &str = "bash -c ";

/// Programs that start the tasks on every node themselves.
fn launches_itself(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or("");
    let base = first.rsplit('/').next().unwrap_or(first);
    matches!(base, "srun" | "mpirun" | "mpiexec")
}

/// A command line that can stand on srun's line in the batch script as it is: words of
/// plain characters or single-quoted text, nothing the shell would expand or run (so each
/// node runs exactly it; anything else goes through `bash -c` on each node).
fn is_plain(command: &str) -> bool {
    let mut quoted = false;
    let plain = command.chars().all(|c| {
        if c == '\'' {
            quoted = !quoted;
            true
        } else {
            quoted || c.is_ascii_alphanumeric() || " _-./=:,+@%".contains(c)
        }
    });
    plain && !quoted && !command.trim().is_empty() && !command.starts_with(' ')
}

/// The body for `command` on `spec.nodes` nodes; `None` when it runs as it is (one node, or
/// a command that launches its own tasks).
pub fn body(spec: &JobSpec, command: &str) -> Option<String> {
    if spec.nodes.unwrap_or(1) < 2 || launches_itself(command) {
        return None;
    }
    // Not a comment first: sbatch's leading block of comments (and the dialect's reading of
    // the `export` lines before it) ends at the first command.
    let mut out = String::new();
    for (name, line) in LINES {
        if !spec.env.contains_key(name) {
            out.push_str(line);
            out.push('\n');
            if !out.contains(MARK) {
                out.push_str(MARK);
                out.push('\n');
            }
        }
    }
    if let Some(n) = spec.tasks_per_node.filter(|n| *n > 1 && !spec.env.contains_key("PET_NPROC_PER_NODE")) {
        out.push_str(&format!("export PET_NPROC_PER_NODE={n}\n"));
    }
    out.push_str(SRUN);
    if is_plain(command) && !command.starts_with(WRAP) {
        out.push_str(command);
    } else {
        out.push_str(WRAP);
        out.push_str(&super::script::shell_single_quote(command));
    }
    out.push('\n');
    Some(out)
}

/// The command [`body`] wrote, when `text` is exactly such a block.
pub fn command_of(text: &str) -> Option<String> {
    let mut rest = text;
    let mut known = LINES.iter().map(|(_, l)| *l);
    let mut marked = false;
    while !rest.starts_with(SRUN) {
        let (line, after) = rest.split_once('\n')?;
        let proc = line
            .strip_prefix("export PET_NPROC_PER_NODE=")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if line == MARK && !marked {
            marked = true;
        } else if !proc && !known.any(|k| k == line) {
            return None;
        }
        rest = after;
    }
    if !marked {
        return None;
    }
    // The srun line runs to the end: a quoted command may span lines.
    let run = rest.strip_prefix(SRUN)?.strip_suffix('\n')?;
    match run.strip_prefix(WRAP) {
        Some(quoted) => match shlex::split(quoted)?.as_slice() {
            [command] if super::script::shell_single_quote(command) == quoted => Some(command.clone()),
            _ => None,
        },
        None => is_plain(run).then(|| run.to_string()),
    }
}

/// What the rendezvous means on Slurm, for the preview's and export's warnings; none where
/// the command runs as it is.
pub fn warnings(spec: &JobSpec) -> Vec<String> {
    let wrapped = spec.command.as_deref().is_some_and(|c| body(spec, c).is_some());
    if !wrapped {
        return Vec::new();
    }
    vec![format!(
        "`nodes`: the command runs once on each of the {} nodes through `srun --ntasks-per-node=1`, with MASTER_ADDR (the first node), MASTER_PORT={PORT}, WORLD_SIZE and torchrun's c10d rendezvous (PET_*) set; NODE_RANK is not (torchrun's rendezvous assigns ranks; SLURM_NODEID is each node's)",
        spec.nodes.unwrap_or(1)
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str) -> JobSpec {
        JobSpec { name: "t".into(), command: Some(command.into()), nodes: Some(2), ..JobSpec::default() }
    }

    #[test]
    fn a_command_runs_on_each_node_and_reads_back() {
        for command in
            ["torchrun --nnodes 2 train.py", "python -c 'print(1)' && echo \"$X\"", "a\nb", "t '--x=1'", "bash -c 'x'"]
        {
            let s = JobSpec { tasks_per_node: Some(8), ..spec(command) };
            let text = body(&s, command).unwrap();
            assert!(text.contains("srun --ntasks-per-node=1 "), "{text}");
            assert!(text.contains("export PET_NPROC_PER_NODE=8\n"), "{text}");
            assert_eq!(command_of(&text).as_deref(), Some(command), "{text}");
        }
        let text = body(&spec("torchrun train.py"), "torchrun train.py").unwrap();
        assert!(text.ends_with("\nsrun --ntasks-per-node=1 torchrun train.py\n"), "{text}");
        // The spec's own value stands, and the block without that line still reads back.
        let s = JobSpec { env: [("MASTER_PORT".to_string(), "1234".to_string())].into(), ..spec("x") };
        let text = body(&s, "x").unwrap();
        assert!(!text.contains("MASTER_PORT=29500"), "{text}");
        assert_eq!(command_of(&text).as_deref(), Some("x"));
    }

    #[test]
    fn one_node_and_own_launchers_are_left_alone() {
        assert_eq!(body(&JobSpec { nodes: Some(1), ..spec("x") }, "x"), None);
        for c in ["srun python x.py", "mpirun -np 16 ./a.out", "/usr/bin/mpiexec a"] {
            assert_eq!(body(&spec(c), c), None, "{c}");
        }
        // Anything else after the block is the user's script.
        let text = body(&spec("x"), "x").unwrap();
        assert_eq!(command_of(&format!("{text}echo done\n")), None);
        assert_eq!(command_of(&text.replace("c10d", "etcd")), None);
        assert_eq!(command_of("srun --ntasks-per-node=1 x\n"), None);
        assert!(text.starts_with("export MASTER_ADDR="), "no comment before the first command: {text}");
    }
}
