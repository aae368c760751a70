//! JobSpec to sbatch script.
//!
//! The script goes to `sbatch` on standard input, so none of it is a shell argument. Its
//! `#SBATCH` lines are read by sbatch's own directive parser (no shell), and the user's
//! `command` or `script` is run by the job's shell, which is intended.
//!
//! # How values are written in `#SBATCH` lines
//!
//! sbatch splits a directive line into arguments with its own small parser
//! (`_get_argument` in `src/sbatch/opt.c`): whitespace separates arguments; `'…'` and `"…"`
//! group; a backslash makes the next character literal (inside quotes too); an unquoted `#`
//! starts a comment; a line break ends the line. So a value is written bare when it holds only
//! `[A-Za-z0-9_.,:/@%+=-]`, and otherwise inside double quotes with `\`, `"` and `#` escaped by
//! a backslash. That turns the job name `x'; touch /tmp/pwned; echo '$(id)` into
//! `#SBATCH --job-name="x'; touch /tmp/pwned; echo '$(id)"`, which sbatch reads back as exactly
//! that name (checked with the sbatch of Slurm 22.05.8 and 24.11.5: `sbatch -vv` prints the
//! parsed `job-name`; the ignored test `sbatch_reads_rendered_directives` in
//! `tests/offline/config_spec.rs` repeats the check wherever `sbatch` is installed). Written bare, the
//! same name would lose its quotes. Older parsers are covered too: before 15.08 only `"`
//! grouped and `#` ended the argument even inside quotes (hence `\#`), and 17.11–19.05 blank
//! the word `packjob` anywhere in a directive line and start a new heterogeneous-job component
//! there, so the `j` of `packjob`/`hetjob` inside a value is escaped (`pack\job`), which the
//! parser turns back into the plain word.
//!
//! A line break, carriage return or NUL in a value would end the directive and inject the rest
//! as a new one: such values are refused ([`BackendError::InvalidSpec`]), never escaped.
//!
//! The same rules, read the other way, are [`split_directive`]: the dialect's importer
//! (`super::dialect`) reads directive lines with it, and the tests here check every value this
//! module writes against it. A migrated job carries where it came from in `--comment`, as
//! [`MIGRATED_FROM_TAG`] and the origin (`flightdeck-migrated-from=hpc/123`); the job parsers
//! read it back into `Job::migrated_from`.
//!
//! Belt and braces for the one value flightdeck identifies jobs by: [`sbatch_argv`] passes the
//! name again as a command-line argument (`--job-name=…`, one argv element, quoted by the
//! transport). sbatch ranks command-line options above script directives, so the name is exact
//! whatever a site's sbatch does with directives, and it also wins over a `#SBATCH --job-name`
//! inside the user's own `script`.

use crate::backend::BackendError;
use crate::spec::JobSpec;

/// What the target cluster supports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SbatchOptions {
    /// The pyxis SPANK plugin is installed (`--container-image` exists).
    pub pyxis: bool,
}

/// The batch script for `spec`, to be fed to `sbatch` on standard input.
///
/// Layout: the `#!` line (the user's own, or `#!/bin/bash`), the `#SBATCH` lines, then the
/// body. For `command`: `export KEY='value'` lines, then the command as written. For `script`:
/// the user's script unchanged after its `#!` line, with the `export` lines placed after its
/// leading block of comments, so that `#SBATCH` lines the script carries itself are still read
/// (sbatch stops reading directives at the first command); those come after ours and so take
/// precedence, except for the job name (see [`sbatch_argv`]).
pub fn render_sbatch(spec: &JobSpec, opts: &SbatchOptions) -> Result<String, BackendError> {
    spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
    spec.refuse_managed("Slurm").map_err(BackendError::InvalidSpec)?;
    spec.refuse_multi_node("Slurm").map_err(BackendError::InvalidSpec)?;
    if let (Some(image), false) = (&spec.image, opts.pyxis) {
        return Err(BackendError::Unsupported(format!(
            "the job spec sets `image` ({image}), but running a container image under Slurm needs the pyxis plugin, \
             which this cluster does not have (`srun --help` lists no --container-image); \
             remove `image` or submit to a cluster with pyxis"
        )));
    }

    let mut directives: Vec<String> = Vec::new();
    let mut directive = |option: &str, field: &str, value: &str| -> Result<(), BackendError> {
        directives.push(format!("#SBATCH --{option}={}", directive_value(field, value)?));
        Ok(())
    };
    directive("job-name", "name", &spec.name)?;
    if let Some(partition) = &spec.partition {
        directive("partition", "partition", partition)?;
    }
    if let Some(account) = &spec.account {
        directive("account", "account", account)?;
    }
    if let Some(nodes) = spec.nodes {
        directive("nodes", "nodes", &nodes.to_string())?;
    }
    if let Some(tasks) = spec.tasks_per_node {
        directive("ntasks-per-node", "tasks_per_node", &tasks.to_string())?;
    }
    if let Some(cpus) = spec.cpus {
        directive("cpus-per-task", "cpus", &cpus.to_string())?;
    }
    if spec.gpus > 0 {
        let gres = match &spec.gpu_type {
            Some(gpu_type) => format!("gpu:{gpu_type}:{}", spec.gpus),
            None => format!("gpu:{}", spec.gpus),
        };
        directive("gres", "gpu_type", &gres)?;
    }
    if let Some(mb) = spec.memory_mb() {
        directive("mem", "memory", &format!("{mb}M"))?;
    }
    if let Some(secs) = spec.time_limit_secs() {
        directive("time", "time_limit", &slurm_time(secs))?;
    }
    if let Some(workdir) = &spec.workdir {
        directive("chdir", "workdir", workdir)?;
    }
    if let Some(image) = &spec.image {
        directive("container-image", "image", image)?;
    }
    if let Some(array) = &spec.array {
        directive("array", "array", array)?;
    }
    if let Some(origin) = &spec.migrated_from {
        directive("comment", "migrated_from", &migrated_from_comment(origin))?;
    }

    let exports: Vec<String> =
        spec.env.iter().map(|(key, value)| format!("export {key}={}", shell_single_quote(value))).collect();

    fn push_lines(out: &mut String, lines: &[String]) {
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
    }
    let mut out = String::new();
    match (&spec.command, &spec.script) {
        (Some(command), _) => {
            refuse_carriage_returns("command", command)?;
            push_lines(&mut out, &["#!/bin/bash".to_string()]);
            push_lines(&mut out, &directives);
            push_lines(&mut out, &exports);
            // Several nodes: once on each, as every other kind runs it (`per_node`).
            match super::per_node::body(spec, command) {
                Some(body) => out.push_str(&body),
                None => out.push_str(command),
            }
        }
        (None, Some(script)) => {
            refuse_carriage_returns("script", script)?;
            let (shebang, rest) = match script.strip_prefix("#!") {
                Some(_) => script.split_once('\n').unwrap_or((script.as_str(), "")),
                None => ("#!/bin/bash", script.as_str()),
            };
            if !exports.is_empty() && !is_shell(shebang) {
                return Err(BackendError::InvalidSpec(format!(
                    "`env` is set, but the script runs with `{shebang}`, not a shell: \
                     set the variables inside the script, or start it with #!/bin/bash"
                )));
            }
            let split = leading_comment_block_len(rest);
            push_lines(&mut out, &[shebang.to_string()]);
            push_lines(&mut out, &directives);
            out.push_str(&rest[..split]);
            if !exports.is_empty() {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                push_lines(&mut out, &exports);
            }
            out.push_str(&rest[split..]);
        }
        // validate() guarantees one of the two.
        (None, None) => return Err(BackendError::InvalidSpec("set `command` or `script`".into())),
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The arguments `sbatch` needs besides the script on standard input (after the backend's own
/// `sbatch --parsable`): the job name again, so that it is exact on every Slurm release (see
/// the module notes). Argument-vector elements; the transport quotes them.
pub fn sbatch_argv(spec: &JobSpec) -> Vec<String> {
    vec![format!("--job-name={}", spec.name)]
}

/// The job id in sbatch's output: `Submitted batch job 123` (also `… on cluster X`) or the
/// `--parsable` forms `123` and `123;cluster`.
pub fn parse_sbatch_output(stdout: &str) -> Option<String> {
    stdout.lines().map(str::trim).filter(|line| !line.is_empty()).find_map(|line| {
        let candidate = match line.strip_prefix("Submitted batch job ") {
            Some(rest) => rest.split_whitespace().next()?,
            None => match line.split_once(';') {
                Some((id, cluster)) if !cluster.is_empty() && !cluster.contains(char::is_whitespace) => id,
                Some(_) => return None,
                None => line,
            },
        };
        (!candidate.is_empty() && candidate.chars().all(|c| c.is_ascii_digit())).then(|| candidate.to_string())
    })
}

/// A duration in Slurm's `--time` format: `HH:MM:SS`, or `D-HH:MM:SS` from one day on.
/// (Slurm counts whole minutes and rounds seconds up.)
pub fn slurm_time(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (hours, minutes, seconds) = (rest / 3_600, rest % 3_600 / 60, rest % 60);
    if days > 0 {
        format!("{days}-{hours:02}:{minutes:02}:{seconds:02}")
    } else {
        format!("{hours:02}:{minutes:02}:{seconds:02}")
    }
}

/// A value as sbatch's directive parser must see it to read it back unchanged (see the module
/// notes); line breaks and NUL are refused.
pub(crate) fn directive_value(field: &str, value: &str) -> Result<String, BackendError> {
    if value.contains(['\n', '\r', '\0']) {
        return Err(BackendError::InvalidSpec(format!(
            "`{field}` contains a line break or NUL, which would end the #SBATCH line; use one line"
        )));
    }
    let escaped_js = het_separator_js(value);
    let bare = !value.is_empty()
        && escaped_js.is_empty()
        && value.chars().all(|c| c.is_ascii_alphanumeric() || "_.,:/@%+=-".contains(c));
    if bare {
        return Ok(value.to_string());
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for (index, c) in value.char_indices() {
        if matches!(c, '\\' | '"' | '#') || escaped_js.contains(&index) {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(out)
}

/// Byte positions of the `j` in every `hetjob` / `packjob` (any case) in `value`.
fn het_separator_js(value: &str) -> Vec<usize> {
    let lower = value.to_ascii_lowercase();
    let mut positions = Vec::new();
    for (word, j_at) in [("hetjob", 3), ("packjob", 4)] {
        positions.extend(lower.match_indices(word).map(|(start, _)| start + j_at));
    }
    positions
}

/// `'…'` for the shell, with each `'` written as `'\''`.
pub(crate) fn shell_single_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// The inverse of the `export KEY='value'` lines [`render_sbatch`] writes: at the start of
/// `text`, one such statement exactly as written there (an identifier, the value in
/// [`shell_single_quote`]'s form, possibly over several lines, then the end of the line).
/// Returns the key, the value and the bytes it takes, its line end included. Anything else
/// (double quotes, a bare word, `$`, a second command on the line) is `None`: such a line
/// means what the shell makes of it and stays in the script.
pub(crate) fn read_export(text: &str) -> Option<(String, String, usize)> {
    let rest = text.strip_prefix("export ")?;
    let (key, rest) = rest.split_once('=')?;
    if !crate::spec::is_identifier(key) {
        return None;
    }
    let mut at = "export ".len() + key.len() + 1;
    let mut rest = rest.strip_prefix('\'')?;
    at += 1;
    let mut value = String::new();
    loop {
        let close = rest.find('\'')?;
        value.push_str(&rest[..close]);
        rest = &rest[close + 1..];
        at += close + 1;
        match rest.strip_prefix("\\''") {
            Some(more) => {
                value.push('\'');
                rest = more;
                at += 3;
            }
            None => break,
        }
    }
    match rest.chars().next() {
        None => Some((key.to_string(), value, at)),
        Some('\n') => Some((key.to_string(), value, at + 1)),
        Some(_) => None,
    }
}

/// What `--comment` carries for a migrated job: `flightdeck-migrated-from=` and the origin
/// (`hpc/123`): plain enough that no other tool's comment is taken for it.
pub const MIGRATED_FROM_TAG: &str = "flightdeck-migrated-from=";

/// The `--comment` value for a job migrated from `origin`.
pub fn migrated_from_comment(origin: &str) -> String {
    format!("{MIGRATED_FROM_TAG}{origin}")
}

/// The origin in a job's comment when the comment is flightdeck's tag (and only then: the
/// whole comment, surrounding blanks aside); `None` for any other comment.
pub fn migrated_from_of(comment: &str) -> Option<&str> {
    let origin = comment.trim().strip_prefix(MIGRATED_FROM_TAG)?.trim();
    (!origin.is_empty() && !origin.contains(char::is_control)).then_some(origin)
}

/// One argument of an `#SBATCH` line as sbatch reads it, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectiveArg {
    /// The argument after sbatch's unquoting.
    pub text: String,
    /// Byte range of the argument as written, within the text given to [`split_directive`].
    pub span: std::ops::Range<usize>,
}

/// The arguments of one directive line, and where a trailing `#` comment starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DirectiveLine {
    pub args: Vec<DirectiveArg>,
    /// Byte offset of an unquoted `#` that ends the arguments (the rest is a comment).
    pub comment_at: Option<usize>,
}

/// Split the text after `#SBATCH` the way sbatch's `_get_argument` (`src/sbatch/opt.c`,
/// 22.05–24.11) does: C `isspace` separates arguments; `'…'` and `"…"` group (whitespace
/// and `#` inside are kept); a backslash makes the next character literal, inside quotes
/// too; an unquoted `#` ends the line's arguments. Two of its rules end the line early, as
/// sbatch does: an argument that comes out empty (`""`) stops the scan, and so does the
/// comment. Errors are the two sbatch stops on with a fatal error: an unmatched quote, and
/// an argument starting with `:` (its heterogeneous-job separator).
pub fn split_directive(line: &str) -> Result<DirectiveLine, String> {
    // C's isspace in the C locale; Rust's char::is_ascii_whitespace leaves out \v.
    fn c_space(c: char) -> bool {
        matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
    }
    let mut out = DirectiveLine::default();
    let mut chars = line.char_indices().peekable();
    loop {
        while chars.peek().is_some_and(|&(_, c)| c_space(c)) {
            chars.next();
        }
        let Some(&(start, first)) = chars.peek() else { return Ok(out) };
        if first == ':' {
            return Err("an argument starts with `:`, which sbatch refuses (a heterogeneous-job separator)".into());
        }
        let mut text = String::new();
        let mut quote: Option<char> = None;
        let mut escape = false;
        let mut end = line.len();
        let mut comment = false;
        while let Some(&(at, c)) = chars.peek() {
            if quote.is_none() && c_space(c) {
                end = at;
                break;
            }
            if escape {
                escape = false;
            } else if c == '\\' {
                escape = true;
                chars.next();
                continue;
            } else if let Some(q) = quote {
                if c == q {
                    quote = None;
                    chars.next();
                    continue;
                }
            } else if c == '"' || c == '\'' {
                quote = Some(c);
                chars.next();
                continue;
            } else if c == '#' {
                end = at;
                comment = true;
                break;
            }
            text.push(c);
            chars.next();
        }
        if let Some(q) = quote {
            return Err(format!("unmatched `{q}`, which sbatch refuses"));
        }
        if text.is_empty() {
            // sbatch's _get_argument returns NULL for an argument with no characters, and
            // its caller stops reading the line there.
            out.comment_at = comment.then_some(end);
            return Ok(out);
        }
        out.args.push(DirectiveArg { text, span: start..end });
        if comment {
            out.comment_at = Some(end);
            return Ok(out);
        }
    }
}

/// sbatch refuses scripts with DOS line ends; say so before it does, naming the field.
fn refuse_carriage_returns(field: &str, text: &str) -> Result<(), BackendError> {
    if text.contains('\r') {
        return Err(BackendError::InvalidSpec(format!(
            "`{field}` contains carriage returns (DOS line ends), which sbatch refuses; convert it to Unix line ends"
        )));
    }
    Ok(())
}

/// Whether a `#!` line names a POSIX-style shell (directly or through `env`).
pub(crate) fn is_shell(shebang: &str) -> bool {
    let mut words = shebang.trim_start_matches("#!").split_whitespace();
    let Some(interpreter) = words.next() else { return false };
    let mut program = interpreter.rsplit('/').next().unwrap_or(interpreter);
    if program == "env" {
        program = words.find(|w| !w.starts_with('-')).unwrap_or("");
        program = program.rsplit('/').next().unwrap_or(program);
    }
    matches!(program, "sh" | "bash" | "zsh" | "ksh" | "dash" | "ash" | "mksh")
}

/// Length in bytes of the leading lines sbatch still scans for `#SBATCH`: blank lines and
/// lines whose first non-blank character is `#`.
pub(crate) fn leading_comment_block_len(text: &str) -> usize {
    let mut len = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_start();
        if content.is_empty() || content.starts_with('#') {
            len += line.len();
        } else {
            break;
        }
    }
    len
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const HOSTILE: &str = "x'; touch /tmp/pwned; echo '$(id)";

    fn spec(name: &str, command: &str) -> JobSpec {
        JobSpec { name: name.into(), command: Some(command.into()), ..JobSpec::default() }
    }

    fn render(spec: &JobSpec) -> String {
        render_sbatch(spec, &SbatchOptions::default()).unwrap()
    }

    #[test]
    fn managed_is_refused_by_name() {
        let managed = JobSpec { managed: true, ..spec("t", "true") };
        let err = render_sbatch(&managed, &SbatchOptions::default()).unwrap_err().to_string();
        assert!(err.contains("`managed`: Slurm has no managed jobs"), "{err}");
        // Read from a spec file like every other key.
        let read: JobSpec = toml::from_str("name = \"t\"\ncommand = \"true\"\nmanaged = true\n").unwrap();
        assert!(read.managed);
    }

    #[test]
    fn a_multi_node_kind_is_refused_by_name() {
        let asked = JobSpec { multi_node: Some("pytorchjob".into()), nodes: Some(2), ..spec("t", "true") };
        let err = render_sbatch(&asked, &SbatchOptions::default()).unwrap_err().to_string();
        assert!(err.contains("`multi_node`: Slurm runs a job of several nodes itself"), "{err}");
        assert!(err.contains("\"pytorchjob\"") && err.contains("--multi-node"), "{err}");
    }

    fn sbatch_split(line: &str) -> Vec<String> {
        split_directive(line).unwrap_or_else(|e| panic!("{line}: {e}")).args.into_iter().map(|a| a.text).collect()
    }

    fn directive_args(script: &str) -> Vec<String> {
        script.lines().filter_map(|l| l.strip_prefix("#SBATCH")).flat_map(sbatch_split).collect()
    }

    #[test]
    fn golden_minimal_command() {
        assert_eq!(render(&spec("hello", "echo hello")), "#!/bin/bash\n#SBATCH --job-name=hello\necho hello\n");
    }

    #[test]
    fn golden_full_command() {
        let mut env = BTreeMap::new();
        env.insert("WANDB_MODE".to_string(), "offline".to_string());
        env.insert("GREETING".to_string(), "it's \"quoted\" $(not run)".to_string());
        let spec = JobSpec {
            name: "train-llm".into(),
            command: Some("python train.py --epochs 3 > log.txt".into()),
            gpus: 4,
            gpu_type: Some("a100".into()),
            cpus: Some(16),
            memory: Some("64G".into()),
            time_limit: Some("1-12:00:00".into()),
            partition: Some("gpu".into()),
            account: Some("ml-team".into()),
            workdir: Some("/scratch/alice/run 1".into()),
            nodes: Some(2),
            env,
            ..JobSpec::default()
        };
        assert_eq!(
            render(&spec),
            r#"#!/bin/bash
#SBATCH --job-name=train-llm
#SBATCH --partition=gpu
#SBATCH --account=ml-team
#SBATCH --nodes=2
#SBATCH --cpus-per-task=16
#SBATCH --gres=gpu:a100:4
#SBATCH --mem=65536M
#SBATCH --time=1-12:00:00
#SBATCH --chdir="/scratch/alice/run 1"
export GREETING='it'\''s "quoted" $(not run)'
export WANDB_MODE='offline'
export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
# flightdeck: the command runs once on each node (srun), torch's rendezvous on the first
export MASTER_PORT=29500
export WORLD_SIZE="$SLURM_JOB_NUM_NODES"
export PET_MASTER_ADDR="$MASTER_ADDR"
export PET_MASTER_PORT="$MASTER_PORT"
export PET_NNODES="$WORLD_SIZE"
export PET_RDZV_BACKEND=c10d
export PET_RDZV_ENDPOINT="$MASTER_ADDR:$MASTER_PORT"
srun --ntasks-per-node=1 bash -c 'python train.py --epochs 3 > log.txt'
"#
        );
    }

    #[test]
    fn golden_script_with_shebang_and_own_directives() {
        let mut env = BTreeMap::new();
        env.insert("X".to_string(), "1".to_string());
        let spec = JobSpec {
            name: "s".into(),
            script: Some("#!/bin/bash -l\n# my job\n#SBATCH --mail-type=END\n\nset -e\necho $X\n".into()),
            gpus: 1,
            time_limit: Some("30m".into()),
            env,
            ..JobSpec::default()
        };
        assert_eq!(
            render(&spec),
            "#!/bin/bash -l\n#SBATCH --job-name=s\n#SBATCH --gres=gpu:1\n#SBATCH --time=00:30:00\n\
             # my job\n#SBATCH --mail-type=END\n\nexport X='1'\nset -e\necho $X\n"
        );
    }

    #[test]
    fn golden_script_without_shebang() {
        let spec = JobSpec { name: "s".into(), script: Some("echo one\necho two".into()), ..JobSpec::default() };
        assert_eq!(render(&spec), "#!/bin/bash\n#SBATCH --job-name=s\necho one\necho two\n");
    }

    #[test]
    fn script_of_comments_only_gets_exports_at_the_end() {
        let mut env = BTreeMap::new();
        env.insert("A".to_string(), "b".to_string());
        let spec = JobSpec { name: "s".into(), script: Some("#!/bin/sh\n# nothing".into()), env, ..JobSpec::default() };
        assert_eq!(render(&spec), "#!/bin/sh\n#SBATCH --job-name=s\n# nothing\nexport A='b'\n");
    }

    #[test]
    fn env_with_non_shell_script_is_refused() {
        let mut env = BTreeMap::new();
        env.insert("A".to_string(), "b".to_string());
        let spec = JobSpec {
            name: "py".into(),
            script: Some("#!/usr/bin/env python3\nprint(1)\n".into()),
            env: env.clone(),
            ..JobSpec::default()
        };
        let err = render_sbatch(&spec, &SbatchOptions::default()).unwrap_err();
        assert!(matches!(err, BackendError::InvalidSpec(_)));
        assert!(err.to_string().contains("python3"), "{err}");
        // Without env a Python script is fine, and keeps its interpreter.
        let spec = JobSpec { env: BTreeMap::new(), ..spec };
        assert!(render(&spec).starts_with("#!/usr/bin/env python3\n#SBATCH --job-name=py\n"));
        let spec = JobSpec { script: Some("#!/usr/bin/env bash\necho\n".into()), env, ..spec };
        render(&spec);
    }

    #[test]
    fn hostile_name_survives_verbatim() {
        let script = render(&spec(HOSTILE, "true"));
        let line = script.lines().nth(1).unwrap();
        assert_eq!(line, r#"#SBATCH --job-name="x'; touch /tmp/pwned; echo '$(id)""#);
        assert_eq!(directive_args(&script), vec![format!("--job-name={HOSTILE}")]);
        assert_eq!(sbatch_argv(&spec(HOSTILE, "true")), vec![format!("--job-name={HOSTILE}")]);
    }

    #[test]
    fn awkward_values_survive_sbatch_parsing() {
        for value in [
            "a b",
            "tab\tless",
            "back\\slash",
            "dq\"inside",
            "hash#tag",
            "#start",
            "semi;colon & amp | pipe",
            "$HOME and `cmd`",
            "packjob",
            "my-HetJob-7",
            "x PACKJOB hetjob y",
            " leading and trailing ",
            "-dash",
            ":colon",
            "ünïcödé",
        ] {
            if value.contains('\t') {
                continue; // control characters are refused by validate()
            }
            let script = render(&spec(value, "true"));
            let directive_lines: Vec<&str> = script.lines().filter(|l| l.starts_with("#SBATCH")).collect();
            assert_eq!(directive_lines.len(), 1, "{script}");
            let lower = directive_lines[0].to_ascii_lowercase();
            assert!(!lower.contains("hetjob") && !lower.contains("packjob"), "{script}");
            assert_eq!(directive_args(&script), vec![format!("--job-name={value}")], "{script}");
        }
    }

    #[test]
    fn line_breaks_are_refused_not_escaped() {
        for name in ["a\nb", "a\rb", "a\0b", "a\n#SBATCH --uid=0"] {
            let err = render_sbatch(&spec(name, "true"), &SbatchOptions::default()).unwrap_err();
            assert!(matches!(err, BackendError::InvalidSpec(_)), "{name:?}: {err}");
            assert!(err.to_string().contains("`name`"), "{err}");
        }
        // directive_value refuses on its own, too.
        let err = directive_value("workdir", "/a\n#SBATCH --x").unwrap_err();
        assert!(err.to_string().contains("`workdir`"), "{err}");
        assert!(err.to_string().contains("line break"), "{err}");
    }

    #[test]
    fn dos_line_ends_are_refused() {
        let err = render_sbatch(&spec("a", "echo\r\n"), &SbatchOptions::default()).unwrap_err();
        assert!(err.to_string().contains("`command`") && err.to_string().contains("DOS"), "{err}");
        let spec = JobSpec { name: "a".into(), script: Some("#!/bin/bash\r\necho\r\n".into()), ..JobSpec::default() };
        let err = render_sbatch(&spec, &SbatchOptions::default()).unwrap_err();
        assert!(err.to_string().contains("`script`"), "{err}");
    }

    #[test]
    fn invalid_spec_is_refused() {
        let err = render_sbatch(&spec("", "true"), &SbatchOptions::default()).unwrap_err();
        assert_eq!(err.to_string(), "invalid job spec: `name`: the job needs a name");
        let both = JobSpec { script: Some("x".into()), ..spec("a", "b") };
        assert!(matches!(render_sbatch(&both, &SbatchOptions::default()), Err(BackendError::InvalidSpec(_))));
        let neither = JobSpec { name: "a".into(), ..JobSpec::default() };
        assert!(matches!(render_sbatch(&neither, &SbatchOptions::default()), Err(BackendError::InvalidSpec(_))));
        let bad_mem = JobSpec { memory: Some("1X".into()), ..spec("a", "b") };
        assert!(render_sbatch(&bad_mem, &SbatchOptions::default()).unwrap_err().to_string().contains("`memory`"));
    }

    #[test]
    fn gpus_with_and_without_type() {
        let with_type = JobSpec { gpus: 2, gpu_type: Some("h100".into()), ..spec("g", "true") };
        assert!(render(&with_type).contains("\n#SBATCH --gres=gpu:h100:2\n"));
        let mig = JobSpec { gpus: 1, gpu_type: Some("1g.10gb".into()), ..spec("g", "true") };
        assert!(render(&mig).contains("\n#SBATCH --gres=gpu:1g.10gb:1\n"));
        let untyped = JobSpec { gpus: 8, ..spec("g", "true") };
        assert!(render(&untyped).contains("\n#SBATCH --gres=gpu:8\n"));
        assert!(!render(&spec("g", "true")).contains("gres"));
    }

    #[test]
    fn time_formats() {
        for (written, slurm) in [
            ("2h", "02:00:00"),
            ("90m", "01:30:00"),
            ("30s", "00:00:30"),
            ("1-00:00:00", "1-00:00:00"),
            ("36:00:00", "1-12:00:00"),
            ("01:02:03", "01:02:03"),
            ("45:30", "00:45:30"),
            ("90", "01:30:00"),
            ("2-3", "2-03:00:00"),
            ("1d1s", "1-00:00:01"),
        ] {
            let spec = JobSpec { time_limit: Some(written.into()), ..spec("t", "true") };
            assert!(render(&spec).contains(&format!("\n#SBATCH --time={slurm}\n")), "{written}");
        }
        assert_eq!(slurm_time(0), "00:00:00");
        assert_eq!(slurm_time(86_399), "23:59:59");
        assert_eq!(slurm_time(10 * 86_400 + 1), "10-00:00:01");
    }

    #[test]
    fn memory_in_mib() {
        for (written, mem) in
            [("32G", "32768M"), ("500M", "500M"), ("1T", "1048576M"), ("4096", "4096M"), ("1536K", "2M")]
        {
            let spec = JobSpec { memory: Some(written.into()), ..spec("m", "true") };
            assert!(render(&spec).contains(&format!("\n#SBATCH --mem={mem}\n")), "{written}");
        }
    }

    #[test]
    fn image_needs_pyxis() {
        let spec = JobSpec { image: Some("nvcr.io#nvidia/pytorch:24.01-py3".into()), ..spec("c", "python -V") };
        let err = render_sbatch(&spec, &SbatchOptions { pyxis: false }).unwrap_err();
        assert!(matches!(err, BackendError::Unsupported(_)));
        let text = err.to_string();
        assert!(text.contains("image") && text.contains("pyxis"), "{text}");
        let script = render_sbatch(&spec, &SbatchOptions { pyxis: true }).unwrap();
        assert_eq!(
            script,
            "#!/bin/bash\n#SBATCH --job-name=c\n#SBATCH --container-image=\"nvcr.io\\#nvidia/pytorch:24.01-py3\"\npython -V\n"
        );
        assert_eq!(
            directive_args(&script),
            vec!["--job-name=c".to_string(), "--container-image=nvcr.io#nvidia/pytorch:24.01-py3".to_string()]
        );
    }

    #[test]
    fn shells() {
        for yes in [
            "#!/bin/bash",
            "#!/bin/sh",
            "#!/usr/bin/env bash",
            "#!/bin/bash -l",
            "#!/usr/bin/env -S bash -e",
            "#! /bin/zsh",
        ] {
            assert!(is_shell(yes), "{yes}");
        }
        for no in ["#!/usr/bin/python3", "#!/usr/bin/env python3", "#!", "#!/usr/bin/env"] {
            assert!(!is_shell(no), "{no}");
        }
    }

    #[test]
    fn sbatch_output() {
        assert_eq!(parse_sbatch_output("Submitted batch job 123\n").as_deref(), Some("123"));
        assert_eq!(parse_sbatch_output("Submitted batch job 77 on cluster east\n").as_deref(), Some("77"));
        assert_eq!(parse_sbatch_output("123\n").as_deref(), Some("123"));
        assert_eq!(parse_sbatch_output("  4567;hpc  \n").as_deref(), Some("4567"));
        assert_eq!(parse_sbatch_output("\n\n99\n").as_deref(), Some("99"));
        for bad in ["", "\n", "Submitted batch job\n", "Submitted batch job abc\n", "12a\n", "1;\n", ";x", "1 2", "-5"]
        {
            assert_eq!(parse_sbatch_output(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn array_tasks_per_node_and_the_migration_tag() {
        let full = JobSpec {
            array: Some("0-99%10".into()),
            tasks_per_node: Some(8),
            nodes: Some(2),
            migrated_from: Some("hpc/123".into()),
            ..spec("a", "true")
        };
        assert_eq!(
            render(&full),
            "#!/bin/bash\n#SBATCH --job-name=a\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --array=0-99%10\n\
             #SBATCH --comment=flightdeck-migrated-from=hpc/123\n"
                .to_string()
                + &crate::backend::slurm::per_node::body(&full, "true").unwrap()
        );
        // One task per node, the 8 per node started by the command (torchrun's PET_NPROC_PER_NODE).
        assert!(render(&full).ends_with("export PET_NPROC_PER_NODE=8\nsrun --ntasks-per-node=1 true\n"));
        assert_eq!(
            render(&JobSpec { nodes: Some(1), ..full.clone() }),
            "#!/bin/bash\n#SBATCH --job-name=a\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=8\n#SBATCH --array=0-99%10\n\
             #SBATCH --comment=flightdeck-migrated-from=hpc/123\ntrue\n"
        );
        let odd = JobSpec { migrated_from: Some("my cluster/7".into()), ..spec("a", "true") };
        let script = render(&odd);
        assert!(directive_args(&script).contains(&"--comment=flightdeck-migrated-from=my cluster/7".to_string()));
        assert_eq!(migrated_from_of("flightdeck-migrated-from=hpc/123"), Some("hpc/123"));
        assert_eq!(migrated_from_of(" flightdeck-migrated-from=my cluster/7 "), Some("my cluster/7"));
        for other in ["", "(null)", "nightly", "flightdeck-migrated-from=", "see flightdeck-migrated-from=hpc/1"] {
            assert_eq!(migrated_from_of(other), None, "{other:?}");
        }
    }

    #[test]
    fn export_lines_read_back_exactly() {
        let mut env = BTreeMap::new();
        for (k, v) in [("A", "it's"), ("B", "two\nlines"), ("C", ""), ("D", "'''"), ("E", "$(id) `x` \\ \"q\"")] {
            env.insert(k.to_string(), v.to_string());
        }
        let script = render(&JobSpec { env: env.clone(), ..spec("e", "true") });
        let mut rest = &script[script.find("export ").unwrap()..];
        let mut back = BTreeMap::new();
        while let Some((k, v, len)) = read_export(rest) {
            back.insert(k, v);
            rest = &rest[len..];
        }
        assert_eq!(back, env);
        assert_eq!(rest, "true\n");
        for not_ours in
            ["export A=b\n", "export A=\"b\"\n", "export A='b'; rm x\n", "export A-B='b'\n", "export A='b\n"]
        {
            assert_eq!(read_export(not_ours), None, "{not_ours:?}");
        }
    }

    #[test]
    fn the_splitter_keeps_where_each_argument_was_written() {
        let line = r#" -J "a b" --x='c'\#d  # rest"#;
        let split = split_directive(line).unwrap();
        let shown: Vec<(&str, &str)> = split.args.iter().map(|a| (a.text.as_str(), &line[a.span.clone()])).collect();
        assert_eq!(shown, [("-J", "-J"), ("a b", "\"a b\""), ("--x=c#d", "--x='c'\\#d")]);
        assert_eq!(split.comment_at.map(|at| &line[at..]), Some("# rest"));
        assert_eq!(split_directive(" --a \"\" --b").unwrap().args.len(), 1, "an empty argument ends the line");
        assert!(split_directive(" -J 'x").unwrap_err().contains("unmatched"));
        assert!(split_directive(" : -J x").unwrap_err().contains("`:`"));
        // \v is C's whitespace too.
        assert_eq!(sbatch_split("a\u{b}b"), ["a", "b"]);
    }

    #[test]
    fn quoting_helpers() {
        assert_eq!(directive_value("f", "plain-1.2_3:4/5@6%7+8=9,10").unwrap(), "plain-1.2_3:4/5@6%7+8=9,10");
        assert_eq!(directive_value("f", "").unwrap(), "\"\"");
        assert_eq!(directive_value("f", "a\\b\"c#d").unwrap(), r#""a\\b\"c\#d""#);
        assert_eq!(directive_value("f", "MyHetJob").unwrap(), r#""MyHet\Job""#);
        assert_eq!(directive_value("f", "packjob").unwrap(), r#""pack\job""#);
        assert_eq!(shell_single_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_single_quote(""), "''");
        assert_eq!(leading_comment_block_len("# a\n\n  #b\ncmd\n# c\n"), 10);
        assert_eq!(leading_comment_block_len("cmd"), 0);
    }
}
