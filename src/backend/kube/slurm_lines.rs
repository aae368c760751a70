//! What of Slurm a job's command or script still holds when it goes to Kubernetes: lines
//! that start `srun`, `sbatch` or `salloc` (no pod has them: the command fails there), and
//! `#SBATCH` directives (a comment in a pod: what they ask for is not asked). Said in the
//! preview, the migration plan and `spec convert` as warnings naming the lines, with what to
//! do instead, since a job copied from a Slurm cluster often carries them.

use crate::spec::JobSpec;

/// Slurm's programs, as a command line's first word names them (`/usr/bin/srun` too).
const PROGRAMS: [&str; 3] = ["srun", "sbatch", "salloc"];

/// Words a command may stand behind on its line (`exec srun …`, `time srun …`).
const PREFIXES: [&str; 4] = ["exec", "time", "nohup", "command"];

/// At most this many line numbers are named per warning; the count says the rest.
const SHOWN: usize = 5;

/// The warnings for `spec`'s command or script: one for Slurm programs run, one for
/// `#SBATCH` lines; none when it holds neither.
pub fn warnings(spec: &JobSpec) -> Vec<String> {
    let (field, text) = match (&spec.command, &spec.script) {
        (Some(command), _) => ("command", command.as_str()),
        (None, Some(script)) => ("script", script.as_str()),
        (None, None) => return Vec::new(),
    };
    let mut runs: Vec<(usize, &str)> = Vec::new();
    let mut directives = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("#SBATCH") {
            directives.push(n + 1);
        } else if let Some(program) = slurm_program(line) {
            runs.push((n + 1, program));
        }
    }
    let mut out = Vec::new();
    if !runs.is_empty() {
        let mut programs: Vec<&str> = runs.iter().map(|(_, p)| *p).collect();
        programs.sort_unstable();
        programs.dedup();
        let named = programs.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
        out.push(format!(
            "`{field}`: {} {named}, which no Kubernetes pod has: the command fails there. Each pod runs the {field} once, so run the program itself (`srun python train.py` → `python train.py`; with several nodes, torchrun reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and NODE_RANK from the env)",
            lines_text(&runs.iter().map(|(n, _)| *n).collect::<Vec<_>>(), "runs")
        ));
    }
    if !directives.is_empty() {
        out.push(format!(
            "`{field}`: {} `#SBATCH`, a comment in a pod: nothing there reads it; set what it asks for in the spec (nodes, gpus, memory, time_limit), which the manifest carries",
            lines_text(&directives, "has")
        ));
    }
    out
}

/// "line 3 runs", "lines 3, 7 and 9 run", "lines 1, 2, 3, 4, 5 and 4 more have".
fn lines_text(lines: &[usize], verb: &str) -> String {
    let plural = match verb {
        "runs" => "run",
        "has" => "have",
        other => other,
    };
    match lines {
        [one] => format!("line {one} {verb}"),
        _ => {
            let shown: Vec<String> = lines.iter().take(SHOWN).map(ToString::to_string).collect();
            let list = if lines.len() > SHOWN {
                format!("{} and {} more", shown.join(", "), lines.len() - SHOWN)
            } else {
                let (last, rest) = shown.split_last().expect("two or more");
                format!("{} and {last}", rest.join(", "))
            };
            format!("lines {list} {plural}")
        }
    }
}

/// The Slurm program a shell line runs, at the start of the line or of a command after
/// `;`, `&&`, `||` or `|`, behind `VAR=value` assignments and [`PREFIXES`]. Comments and
/// quoted text are not looked into beyond where a command starts.
fn slurm_program(line: &str) -> Option<&'static str> {
    if line.starts_with('#') {
        return None;
    }
    let code = line.split(" #").next().unwrap_or(line);
    code.split([';', '|', '&', '(', ')', '`']).find_map(|command| {
        let first = command
            .split_whitespace()
            .find(|w| !PREFIXES.contains(w) && !is_assignment(w) && !matches!(*w, "then" | "do" | "else" | "{"))?;
        let base = first.rsplit('/').next().unwrap_or(first);
        PROGRAMS.into_iter().find(|p| *p == base)
    })
}

/// `NAME=value`, as a shell reads a word before the command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(text: &str) -> JobSpec {
        JobSpec { name: "t".into(), script: Some(text.into()), ..JobSpec::default() }
    }

    #[test]
    fn srun_lines_and_directives_are_named_with_what_to_do() {
        let spec = script(
            "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:8\nmodule load cuda\nsrun python train.py\n  OMP_NUM_THREADS=4 /usr/bin/srun -n 2 hostname\ncd /x && sbatch next.sh\n",
        );
        let w = warnings(&spec);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with("`script`: lines 5, 6 and 7 run `sbatch`, `srun`, which no Kubernetes pod has"),
            "{w:?}"
        );
        assert!(w[0].contains("`srun python train.py` → `python train.py`") && w[0].contains("NODE_RANK"), "{w:?}");
        assert!(w[1].starts_with("`script`: lines 2 and 3 have `#SBATCH`, a comment in a pod"), "{w:?}");
    }

    #[test]
    fn a_command_of_one_srun_is_named_too() {
        let spec = JobSpec { name: "t".into(), command: Some("exec srun torchrun t.py".into()), ..JobSpec::default() };
        let w = warnings(&spec);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("`command`: line 1 runs `srun`"), "{w:?}");
    }

    #[test]
    fn words_that_only_look_like_slurm_are_left_alone() {
        for text in [
            "python train.py --srun\n",
            "echo srun is not here\n",
            "# srun python train.py (a comment)\n",
            "./srun_wrapper.sh\n",
            "python train.py # then srun\n",
            "SBATCH_LIKE=1 python x.py\n",
        ] {
            assert_eq!(warnings(&script(text)), Vec::<String>::new(), "{text:?}");
        }
    }

    #[test]
    fn many_lines_are_counted_past_the_first_five() {
        let text: String = (0..8).map(|i| format!("srun step{i}\n")).collect();
        let w = warnings(&script(&text));
        assert!(w[0].starts_with("`script`: lines 1, 2, 3, 4, 5 and 3 more run `srun`"), "{w:?}");
    }
}
