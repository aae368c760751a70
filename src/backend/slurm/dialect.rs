//! This kind's native job form, offline: recognise it, import it into a `JobSpec`, export
//! one (`flightdeck spec convert`, `submit` of a native file, migration plans).
//!
//! # Reading an sbatch script
//!
//! Directives are read the way sbatch reads them (`_opt_batch_script` in
//! `src/sbatch/opt.c`): lines starting with `#SBATCH` (or the old `#SLURM`) at the first
//! column, up to the first line that is neither blank nor a comment; each split into
//! arguments by [`split_directive`] (sbatch's own quoting); the arguments of every line
//! together read as sbatch's getopt reads its command line: `--opt=value`, `--opt value`
//! (also across lines), `-Xvalue`, `-X value`, clustered flags, unambiguous prefixes of long
//! names (`--part=gpu`), the last of an option winning.
//!
//! What the portable spec holds is taken out of the script; every other directive stays in
//! it, where it was, with a warning that names it and its line, so an sbatch → spec → sbatch
//! trip loses nothing. A directive whose value the spec can hold only in part (a node range,
//! GPUs beside other GRES, `--export=NONE`, `--time=UNLIMITED`) stays too, and what the
//! spec took from it is said. What sbatch itself refuses (an unmatched quote, a stray word,
//! an option without its value, a number that is not one) is an [`ImportError`] naming the
//! line.
//!
//! `export KEY='value'` lines right after the directives, in exactly the form flightdeck
//! writes them, become `env` again; the rest of the script is `spec.script`, always with a
//! `#!` line and a final newline, so that importing what [`export`] wrote gives the same spec.

use std::collections::BTreeMap;

use crate::backend::slurm::parse::gres::{gpu_spec, split_top_level};
use crate::backend::slurm::script::{
    DirectiveArg, SbatchOptions, directive_value, is_shell, leading_comment_block_len, migrated_from_of, read_export,
    render_sbatch, split_directive,
};
use crate::backend::{BackendError, DialectEntry};
use crate::model::{Dialect, Native};
use crate::spec::{
    ImportError, Imported, JobSpec, SpecError, duration_text, memory_text, parse_array, parse_memory_mb,
    parse_time_limit_secs,
};

pub fn entry() -> DialectEntry {
    DialectEntry { dialect: SBATCH, detect, import, export }
}

/// The name a script without `--job-name` gets: what Slurm calls a script read from
/// standard input.
pub const DEFAULT_NAME: &str = "sbatch";

/// The shell assumed for a script without a `#!` line (sbatch itself refuses one).
const DEFAULT_SHEBANG: &str = "#!/bin/bash";

/// Whether `text` is an sbatch script: a `#!` first line, or an `#SBATCH` (`#SLURM`) line
/// among the leading comments, where sbatch looks for directives. A YAML, JSON or TOML job
/// form starts with a key, `{` or `---`, so its first command line comes before any
/// `#SBATCH` it might quote in a string.
pub fn detect(text: &str) -> bool {
    let mut lines = text.split('\n');
    if lines.next().is_some_and(|first| first.starts_with("#!")) {
        return true;
    }
    for line in text.split('\n') {
        if is_magic(line).is_some() {
            return true;
        }
        let content = line.trim_start();
        if !(content.is_empty() || content.starts_with('#')) {
            return false;
        }
    }
    false
}

/// The text after the magic word of a directive line.
fn is_magic(line: &str) -> Option<(&'static str, &str)> {
    ["#SBATCH", "#SLURM"].into_iter().find_map(|magic| line.strip_prefix(magic).map(|rest| (magic, rest)))
}

/// Write `spec` as an sbatch script. A live cluster decides about pyxis when it submits;
/// offline, an `image` is written as pyxis's `--container-image` and said so.
pub fn export(spec: &JobSpec) -> Result<Native, BackendError> {
    let mut warnings = Vec::new();
    if let Some(image) = &spec.image {
        warnings.push(format!(
            "`image` ({image}): written as #SBATCH --container-image, which only a cluster with the pyxis plugin runs"
        ));
    }
    let text = render_sbatch(spec, &SbatchOptions { pyxis: spec.image.is_some() })?;
    warnings.extend(super::per_node::warnings(spec));
    Ok(Native { dialect: SBATCH, text, warnings })
}

// ---------------------------------------------------------------------------------------
// sbatch's options

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    Value,
    /// Only as `--opt=value` (getopt's optional argument).
    Optional,
}

/// The options the spec can hold, one per field sbatch keeps (the last one written wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Field {
    JobName,
    Partition,
    Account,
    Nodes,
    TasksPerNode,
    CpusPerTask,
    Gres,
    Gpus,
    GpusPerNode,
    Time,
    Mem,
    MemPerCpu,
    MemPerGpu,
    Chdir,
    Export,
    Image,
    Array,
    Comment,
    /// `-n`/`--ntasks`: never carried, but it decides whether `--mem-per-cpu` converts.
    Ntasks,
    /// Known to sbatch, no portable form.
    Other,
}

struct Opt {
    long: &'static str,
    short: Option<char>,
    takes: Takes,
    field: Field,
}

const fn opt(long: &'static str, short: Option<char>, takes: Takes, field: Field) -> Opt {
    Opt { long, short, takes, field }
}

use Field as F;
use Takes::{Nothing as N, Optional as O, Value as V};

/// A batch script with `#SBATCH` directives, sent to `sbatch` on its standard input.
pub const SBATCH: Dialect = Dialect::new("sbatch", "slurm", "an sbatch script", "sbatch script");

/// sbatch's options (24.11's `sbatch --help`, 22.05's extras, and pyxis's `--container-*`)
/// with how each takes its value: needed to know which word belongs to which option even for
/// the options the spec does not hold.
const OPTIONS: &[Opt] = &[
    opt("job-name", Some('J'), V, F::JobName),
    opt("partition", Some('p'), V, F::Partition),
    opt("account", Some('A'), V, F::Account),
    opt("nodes", Some('N'), V, F::Nodes),
    opt("ntasks-per-node", None, V, F::TasksPerNode),
    opt("cpus-per-task", Some('c'), V, F::CpusPerTask),
    opt("gres", None, V, F::Gres),
    opt("gpus", Some('G'), V, F::Gpus),
    opt("gpus-per-node", None, V, F::GpusPerNode),
    opt("time", Some('t'), V, F::Time),
    opt("mem", None, V, F::Mem),
    opt("mem-per-cpu", None, V, F::MemPerCpu),
    opt("mem-per-gpu", None, V, F::MemPerGpu),
    opt("chdir", Some('D'), V, F::Chdir),
    opt("export", None, O, F::Export),
    opt("container-image", None, V, F::Image),
    opt("array", Some('a'), V, F::Array),
    opt("comment", None, V, F::Comment),
    opt("ntasks", Some('n'), V, F::Ntasks),
    // Known, with no portable form.
    opt("acctg-freq", None, V, F::Other),
    opt("batch", None, V, F::Other),
    opt("bb", None, V, F::Other),
    opt("bbf", None, V, F::Other),
    opt("begin", Some('b'), V, F::Other),
    opt("cluster-constraint", None, V, F::Other),
    opt("clusters", Some('M'), V, F::Other),
    opt("constraint", Some('C'), V, F::Other),
    opt("container", None, V, F::Other),
    opt("container-id", None, V, F::Other),
    opt("container-mounts", None, V, F::Other),
    opt("container-workdir", None, V, F::Other),
    opt("container-name", None, V, F::Other),
    opt("container-save", None, V, F::Other),
    opt("container-env", None, V, F::Other),
    opt("container-mount-home", None, N, F::Other),
    opt("no-container-mount-home", None, N, F::Other),
    opt("container-remap-root", None, N, F::Other),
    opt("no-container-remap-root", None, N, F::Other),
    opt("container-entrypoint", None, N, F::Other),
    opt("no-container-entrypoint", None, N, F::Other),
    opt("container-entrypoint-log", None, N, F::Other),
    opt("container-writable", None, N, F::Other),
    opt("container-readonly", None, N, F::Other),
    opt("contiguous", None, N, F::Other),
    opt("core-spec", Some('S'), V, F::Other),
    opt("cores-per-socket", None, V, F::Other),
    opt("cpu-freq", None, V, F::Other),
    opt("cpus-per-gpu", None, V, F::Other),
    opt("deadline", None, V, F::Other),
    opt("delay-boot", None, V, F::Other),
    opt("dependency", Some('d'), V, F::Other),
    opt("distribution", Some('m'), V, F::Other),
    opt("error", Some('e'), V, F::Other),
    opt("exclude", Some('x'), V, F::Other),
    opt("exclusive", None, O, F::Other),
    opt("export-file", None, V, F::Other),
    opt("extra", None, V, F::Other),
    opt("extra-node-info", Some('B'), V, F::Other),
    opt("get-user-env", None, O, F::Other),
    opt("gid", None, V, F::Other),
    opt("gpu-bind", None, V, F::Other),
    opt("gpu-freq", None, V, F::Other),
    opt("gpus-per-socket", None, V, F::Other),
    opt("gpus-per-task", None, V, F::Other),
    opt("gres-flags", None, V, F::Other),
    opt("help", Some('h'), N, F::Other),
    opt("hint", None, V, F::Other),
    opt("hold", Some('H'), N, F::Other),
    opt("ignore-pbs", None, N, F::Other),
    opt("immediate", Some('I'), O, F::Other),
    opt("input", Some('i'), V, F::Other),
    opt("kill-on-invalid-dep", None, V, F::Other),
    opt("licenses", Some('L'), V, F::Other),
    opt("mail-type", None, V, F::Other),
    opt("mail-user", None, V, F::Other),
    opt("mcs-label", None, V, F::Other),
    opt("mem-bind", None, V, F::Other),
    opt("mincpus", None, V, F::Other),
    opt("network", None, V, F::Other),
    opt("nice", None, O, F::Other),
    opt("no-kill", Some('k'), O, F::Other),
    opt("no-requeue", None, N, F::Other),
    opt("nodefile", Some('F'), V, F::Other),
    opt("nodelist", Some('w'), V, F::Other),
    opt("ntasks-per-core", None, V, F::Other),
    opt("ntasks-per-gpu", None, V, F::Other),
    opt("ntasks-per-socket", None, V, F::Other),
    opt("oom-kill-step", None, O, F::Other),
    opt("open-mode", None, V, F::Other),
    opt("output", Some('o'), V, F::Other),
    opt("overcommit", Some('O'), N, F::Other),
    opt("oversubscribe", Some('s'), N, F::Other),
    opt("parsable", None, N, F::Other),
    opt("power", None, V, F::Other),
    opt("prefer", None, V, F::Other),
    opt("priority", None, V, F::Other),
    opt("profile", None, V, F::Other),
    opt("propagate", None, O, F::Other),
    opt("qos", Some('q'), V, F::Other),
    opt("quiet", Some('Q'), N, F::Other),
    opt("reboot", None, N, F::Other),
    opt("requeue", None, N, F::Other),
    opt("reservation", None, V, F::Other),
    opt("resv-ports", None, O, F::Other),
    opt("segment", None, V, F::Other),
    opt("signal", None, V, F::Other),
    opt("sockets-per-node", None, V, F::Other),
    opt("spread-job", None, N, F::Other),
    opt("switches", None, V, F::Other),
    opt("test-only", None, N, F::Other),
    opt("thread-spec", None, V, F::Other),
    opt("threads-per-core", None, V, F::Other),
    opt("time-min", None, V, F::Other),
    opt("tmp", None, V, F::Other),
    opt("tres-bind", None, V, F::Other),
    opt("tres-per-task", None, V, F::Other),
    opt("uid", None, V, F::Other),
    opt("usage", Some('u'), N, F::Other),
    opt("use-min-nodes", None, N, F::Other),
    opt("verbose", Some('v'), N, F::Other),
    opt("version", Some('V'), N, F::Other),
    opt("wait", Some('W'), N, F::Other),
    opt("wait-all-nodes", None, V, F::Other),
    opt("wckey", None, V, F::Other),
    opt("wrap", None, V, F::Other),
];

/// getopt_long's lookup: the exact name, else the one option `prefix` abbreviates.
fn long_option(name: &str) -> Result<&'static Opt, usize> {
    if let Some(o) = OPTIONS.iter().find(|o| o.long == name) {
        return Ok(o);
    }
    let mut matches = OPTIONS.iter().filter(|o| !name.is_empty() && o.long.starts_with(name));
    match (matches.next(), matches.next()) {
        (Some(o), None) => Ok(o),
        (None, _) => Err(0),
        (Some(_), Some(_)) => Err(2 + matches.count()),
    }
}

fn short_option(c: char) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.short == Some(c))
}

// ---------------------------------------------------------------------------------------
// Reading the directives

/// One directive line of the script.
struct DirLine {
    /// Index of the line in the script (0-based).
    index: usize,
    magic: &'static str,
    /// The text after the magic word.
    rest: String,
    args: Vec<DirectiveArg>,
    comment_at: Option<usize>,
}

/// One option as getopt reads it.
struct Given {
    opt: Option<&'static Opt>,
    /// As written, for messages (`--mail-type=END`, `-o out.log`).
    shown: String,
    value: Option<String>,
    /// The arguments it is made of: (directive line, argument) indices.
    args: Vec<(usize, usize)>,
    /// 1-based script line where it starts.
    line: usize,
    /// Within a word of clustered short options (`-Hc4`), the letters (and attached value)
    /// that are this option's (`c4`), so that the word can be written again without it.
    piece: Option<String>,
}

/// Whether a given option leaves the script (the spec holds it) or stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Taken,
    Kept,
}

/// Walk every directive argument as getopt would.
fn read_options(lines: &[DirLine]) -> Result<Vec<Given>, ImportError> {
    let all: Vec<(usize, usize)> =
        lines.iter().enumerate().flat_map(|(l, d)| (0..d.args.len()).map(move |a| (l, a))).collect();
    let text = |(l, a): (usize, usize)| lines[l].args[a].text.as_str();
    let line_of = |(l, _): (usize, usize)| lines[l].index + 1;
    let mut given = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let here = all[i];
        let arg = text(here);
        let line = line_of(here);
        i += 1;
        if arg == "--" {
            if let Some(&next) = all.get(i) {
                return Err(ImportError::at(
                    line_of(next),
                    format!("`{}` after `--` is not an option: sbatch refuses it as an invalid directive", text(next)),
                ));
            }
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            let opt = match long_option(name) {
                Ok(o) => o,
                Err(_) => {
                    // Unknown here (a SPANK plugin's option, or one newer than this list):
                    // kept, taken to need no value.
                    given.push(Given {
                        opt: None,
                        shown: arg.to_string(),
                        value: inline,
                        args: vec![here],
                        line,
                        piece: None,
                    });
                    continue;
                }
            };
            let mut args = vec![here];
            let value = match (opt.takes, inline) {
                (Takes::Nothing, Some(_)) => {
                    return Err(ImportError::at(
                        line,
                        format!("`{arg}`: --{} takes no value, and sbatch refuses one", opt.long),
                    ));
                }
                (Takes::Nothing | Takes::Optional, None) => None,
                (_, Some(v)) => Some(v),
                (Takes::Value, None) => match all.get(i) {
                    Some(&next) => {
                        i += 1;
                        args.push(next);
                        Some(text(next).to_string())
                    }
                    None => return Err(missing_value(line, &format!("--{}", opt.long))),
                },
            };
            let shown = match args.as_slice() {
                [_, next] => format!("{arg} {}", text(*next)),
                _ => arg.to_string(),
            };
            given.push(Given { opt: Some(opt), shown, value, args, line, piece: None });
            continue;
        }
        if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            // `-Hc4`: flags in a row, the first that takes a value taking the rest.
            for (at, c) in cluster.char_indices() {
                let attached = &cluster[at + c.len_utf8()..];
                let mut part = |opt, value: Option<&str>, next: Option<(usize, usize)>, piece: &str| {
                    let shown = match next {
                        Some(next) => format!("-{c} {}", text(next)),
                        None => format!("-{piece}"),
                    };
                    given.push(Given {
                        opt,
                        shown,
                        value: value.map(str::to_string),
                        args: std::iter::once(here).chain(next).collect(),
                        line,
                        piece: Some(piece.to_string()),
                    });
                };
                let Some(opt) = short_option(c) else {
                    part(None, None, None, &cluster[at..at + c.len_utf8()]);
                    continue;
                };
                match opt.takes {
                    Takes::Optional | Takes::Value if !attached.is_empty() => {
                        part(Some(opt), Some(attached), None, &cluster[at..]);
                        break;
                    }
                    Takes::Nothing | Takes::Optional => part(Some(opt), None, None, &cluster[at..at + c.len_utf8()]),
                    Takes::Value => {
                        let Some(&next) = all.get(i) else { return Err(missing_value(line, &format!("-{c}"))) };
                        i += 1;
                        part(Some(opt), Some(text(next)), Some(next), &cluster[at..at + c.len_utf8()]);
                        break;
                    }
                }
            }
            continue;
        }
        return Err(ImportError::at(
            line,
            format!(
                "`{arg}` is not an option: sbatch refuses it as an invalid directive (write `#SBATCH --option=value`)"
            ),
        ));
    }
    Ok(given)
}

fn missing_value(line: usize, option: &str) -> ImportError {
    ImportError::at(line, format!("`{option}` needs a value, and sbatch refuses it without one"))
}

/// What the directives say, field by field, while they are read.
#[derive(Default)]
struct Reading {
    spec: JobSpec,
    warnings: Vec<String>,
    /// 1-based line of the directive that set each spec field, for validation messages.
    lines: BTreeMap<&'static str, usize>,
}

impl Reading {
    fn set_line(&mut self, field: &'static str, line: usize) {
        self.lines.insert(field, line);
    }

    fn keep(&mut self, g: &Given, why: impl std::fmt::Display) -> Fate {
        self.warnings.push(format!("#SBATCH {} (line {}): {why}; kept in the script", g.shown, g.line));
        Fate::Kept
    }
}

/// A GPU request as written: `[type:]count` per node or for the whole job.
#[derive(Debug, Clone)]
struct GpuAsk {
    count: u64,
    gpu_type: Option<String>,
    per_job: bool,
    line: usize,
    shown: String,
}

fn bad_value(g: &Given, what: &str) -> ImportError {
    ImportError::at(g.line, format!("`#SBATCH {}`: {what}", g.shown))
}

/// sbatch's `parse_int`: digits only, at least `min`.
fn whole(g: &Given, min: u32) -> Result<u32, ImportError> {
    let v = g.value.as_deref().unwrap_or("").trim();
    match v.parse::<u32>() {
        Ok(n) if n >= min && v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(bad_value(g, &format!("{v:?} is not a whole number of {min} or more"))),
    }
}

/// `[type:]count` of `--gpus` / `--gpus-per-node`.
fn gpu_ask(g: &Given, per_job: bool) -> Result<GpuAsk, ImportError> {
    let v = g.value.as_deref().unwrap_or("").trim();
    let (gpu_type, count) = match v.rsplit_once(':') {
        Some((t, c)) => (Some(t), c),
        None => (None, v),
    };
    let count: u64 = count.parse().map_err(|_| bad_value(g, &format!("cannot read {v:?} as [TYPE:]COUNT")))?;
    Ok(GpuAsk {
        count,
        gpu_type: gpu_type.map(|t| t.strip_prefix("gpu:").unwrap_or(t).to_string()),
        per_job,
        line: g.line,
        shown: g.shown.clone(),
    })
}

/// Memory in sbatch's words: a number and K, M (the default), G or T.
fn memory(g: &Given) -> Result<Option<u64>, ImportError> {
    let v = g.value.as_deref().unwrap_or("").trim();
    let number = v.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if !number.is_empty() && number.bytes().all(|b| b == b'0') {
        return Ok(None); // 0: all of each node's memory
    }
    parse_memory_mb(v).map(Some).map_err(|why| bad_value(g, &why))
}

/// Read a script's directives into a spec. `Ok` carries every option's fate, in order.
fn apply(given: &[Given], shell: bool) -> Result<(Reading, Vec<Fate>), ImportError> {
    let mut r = Reading::default();
    let mut fates = vec![Fate::Kept; given.len()];
    // The last of each field wins, as in sbatch; earlier ones never took effect and leave.
    let mut last: BTreeMap<Field, usize> = BTreeMap::new();
    for (i, g) in given.iter().enumerate() {
        if let Some(o) = g.opt.filter(|o| o.field != Field::Other) {
            last.insert(o.field, i);
        }
    }
    for (i, g) in given.iter().enumerate() {
        match g.opt {
            None => {
                fates[i] = r.keep(g, "not an sbatch option flightdeck knows");
            }
            Some(o) if o.field == Field::Other => {
                fates[i] = r.keep(g, format!("--{} has no portable form", o.long));
            }
            Some(o) if last.get(&o.field) != Some(&i) => fates[i] = Fate::Taken,
            Some(_) => {}
        }
    }
    let at = |f: Field| last.get(&f).map(|&i| (i, &given[i]));
    let value = |g: &Given| g.value.clone().unwrap_or_default();

    for (field, name) in [
        (Field::JobName, "name"),
        (Field::Partition, "partition"),
        (Field::Account, "account"),
        (Field::Chdir, "workdir"),
        (Field::Image, "image"),
    ] {
        let Some((i, g)) = at(field) else { continue };
        let v = value(g);
        match field {
            Field::JobName => r.spec.name = v,
            Field::Partition => r.spec.partition = Some(v),
            Field::Account => r.spec.account = Some(v),
            Field::Chdir => {
                if !v.starts_with('/') {
                    r.warnings.push(format!(
                        "#SBATCH {} (line {}): a relative directory, which sbatch takes from where it is run",
                        g.shown, g.line
                    ));
                }
                r.spec.workdir = Some(v)
            }
            _ => r.spec.image = Some(v),
        }
        r.set_line(name, g.line);
        fates[i] = Fate::Taken;
    }

    if let Some((i, g)) = at(Field::Nodes) {
        let v = value(g);
        let (min, max) = match v.split_once('-') {
            Some((a, b)) => (a.trim(), Some(b.trim())),
            None => (v.trim(), None),
        };
        let number = |s: &str| s.parse::<u32>().ok().filter(|n| *n > 0 && s.bytes().all(|b| b.is_ascii_digit()));
        let min_n =
            number(min).ok_or_else(|| bad_value(g, &format!("cannot read {v:?} as a node count (N or MIN-MAX)")))?;
        match max {
            None => fates[i] = Fate::Taken,
            Some(max) => {
                let max_n = number(max)
                    .filter(|m| *m >= min_n)
                    .ok_or_else(|| bad_value(g, &format!("cannot read {v:?} as a node count (N or MIN-MAX)")))?;
                if max_n == min_n {
                    fates[i] = Fate::Taken;
                } else {
                    fates[i] =
                        r.keep(g, format!("a node range has no portable form: the spec asks for {min_n} (the least)"));
                }
            }
        }
        r.spec.nodes = Some(min_n);
        r.set_line("nodes", g.line);
    }
    if let Some((i, g)) = at(Field::TasksPerNode) {
        r.spec.tasks_per_node = Some(whole(g, 1)?);
        r.set_line("tasks_per_node", g.line);
        fates[i] = Fate::Taken;
    }
    if let Some((i, g)) = at(Field::CpusPerTask) {
        r.spec.cpus = Some(whole(g, 1)?);
        r.set_line("cpus", g.line);
        fates[i] = Fate::Taken;
    }

    // GPUs: one of --gres, --gpus, --gpus-per-node.
    let mut gpu_options: Vec<(usize, &Given)> =
        [Field::Gres, Field::Gpus, Field::GpusPerNode].into_iter().filter_map(at).collect();
    gpu_options.sort_by_key(|(i, _)| *i);
    if let [first, second, ..] = gpu_options.as_slice() {
        return Err(ImportError::at(
            second.1.line,
            format!(
                "GPUs are asked for twice (`{}` on line {}, `{}` on line {}): keep one",
                first.1.shown, first.1.line, second.1.shown, second.1.line
            ),
        ));
    }
    let mut ask: Option<GpuAsk> = None;
    if let Some(&(i, g)) = gpu_options.first() {
        match g.opt.map(|o| o.field) {
            Some(Field::Gres) => {
                let v = value(g);
                let mut gpus = Vec::new();
                let mut others = Vec::new();
                for item in split_top_level(&v) {
                    match gpu_spec(item) {
                        Some((model, count)) => gpus.push((model.map(str::to_string), count.unwrap_or(1))),
                        None => others.push(item.to_string()),
                    }
                }
                match gpus.as_slice() {
                    [] => {
                        fates[i] = r.keep(g, "GRES other than GPUs have no portable form");
                    }
                    [(model, count)] => {
                        ask = Some(GpuAsk {
                            count: *count,
                            gpu_type: model.clone(),
                            per_job: false,
                            line: g.line,
                            shown: g.shown.clone(),
                        });
                        fates[i] = if others.is_empty() {
                            Fate::Taken
                        } else {
                            r.keep(g, format!("the spec holds its GPUs; {} has no portable form", others.join(",")))
                        };
                    }
                    _ => {
                        fates[i] = r.keep(g, "GPUs of several types have no portable form (the spec holds one type)");
                    }
                }
            }
            Some(Field::Gpus) => {
                ask = Some(gpu_ask(g, true)?);
                fates[i] = Fate::Taken;
            }
            _ => {
                ask = Some(gpu_ask(g, false)?);
                fates[i] = Fate::Taken;
            }
        }
    }
    if let Some(ask) = ask {
        let nodes = u64::from(r.spec.nodes.unwrap_or(1));
        let per_node = if ask.per_job {
            let per = ask.count.div_ceil(nodes);
            if ask.count % nodes != 0 {
                r.warnings.push(format!(
                    "#SBATCH {} (line {}): {} GPUs do not divide evenly over {nodes} nodes; the spec asks for {per} per node ({} in all)",
                    ask.shown,
                    ask.line,
                    ask.count,
                    per * nodes
                ));
            }
            per
        } else {
            ask.count
        };
        let per_node = u32::try_from(per_node).map_err(|_| {
            ImportError::at(ask.line, format!("`#SBATCH {}`: {per_node} GPUs per node is not a count", ask.shown))
        })?;
        if per_node > 0 {
            r.spec.gpus = per_node;
            r.spec.gpu_type = ask.gpu_type.filter(|t| !t.is_empty());
            r.set_line("gpus", ask.line);
            r.set_line("gpu_type", ask.line);
        }
    }

    if let Some((i, g)) = at(Field::Time) {
        let v = value(g);
        let t = v.trim();
        if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite") || t == "0" || t == "-1" {
            fates[i] = r.keep(g, "no time limit has no portable form (the spec leaves it to the cluster)");
        } else if t.ends_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(bad_value(
                g,
                &format!(
                    "cannot read {v:?} as a time limit (sbatch takes MIN, MIN:SS, H:MM:SS, D-H, D-H:MM, D-H:MM:SS)"
                ),
            ));
        } else {
            let secs = parse_time_limit_secs(t).map_err(|why| bad_value(g, &why))?;
            r.spec.time_limit = Some(duration_text(secs));
            r.set_line("time_limit", g.line);
            fates[i] = Fate::Taken;
        }
    }

    // Memory: --mem, or --mem-per-cpu / --mem-per-gpu converted where the counts are known.
    let mut mem_options: Vec<(usize, &Given)> =
        [Field::Mem, Field::MemPerCpu, Field::MemPerGpu].into_iter().filter_map(at).collect();
    mem_options.sort_by_key(|(i, _)| *i);
    if let [first, second, ..] = mem_options.as_slice() {
        return Err(ImportError::at(
            second.1.line,
            format!(
                "`{}` (line {}) and `{}` (line {}): sbatch takes only one of --mem, --mem-per-cpu and --mem-per-gpu",
                first.1.shown, first.1.line, second.1.shown, second.1.line
            ),
        ));
    }
    if let Some(&(i, g)) = mem_options.first() {
        let field = g.opt.map(|o| o.field);
        match memory(g)? {
            None => fates[i] = r.keep(g, "memory 0 (all of each node's) has no portable form"),
            Some(mib) if field == Some(Field::Mem) => {
                r.spec.memory = Some(memory_text(mib));
                r.set_line("memory", g.line);
                fates[i] = Fate::Taken;
            }
            Some(mib) => {
                let tasks_known = at(Field::Ntasks).is_none();
                let (per, count, what) = if field == Some(Field::MemPerCpu) {
                    let count = match (r.spec.cpus, tasks_known) {
                        (Some(cpus), true) => Some(u64::from(cpus) * u64::from(r.spec.tasks_per_node.unwrap_or(1))),
                        _ => None,
                    };
                    ("CPU", count, "--cpus-per-task (and no --ntasks)")
                } else {
                    ("GPU", (r.spec.gpus > 0).then_some(u64::from(r.spec.gpus)), "GPUs per node")
                };
                match count.and_then(|c| c.checked_mul(mib).map(|m| (c, m))) {
                    Some((count, total)) => {
                        r.spec.memory = Some(memory_text(total));
                        r.set_line("memory", g.line);
                        r.warnings.push(format!(
                            "#SBATCH {} (line {}): converted to memory per node: {} per {per} × {count} = {} (written as --mem)",
                            g.shown,
                            g.line,
                            memory_text(mib),
                            memory_text(total)
                        ));
                        fates[i] = Fate::Taken;
                    }
                    None => {
                        fates[i] = r.keep(g, format!("memory per {per} needs {what} to become memory per node"));
                    }
                }
            }
        }
    }

    if let Some((i, g)) = at(Field::Export) {
        let v = g.value.clone().unwrap_or_else(|| "ALL".into());
        let mut items = v.split(',');
        let all = items.next().is_some_and(|first| first.trim().eq_ignore_ascii_case("ALL"));
        let mut env = BTreeMap::new();
        let mut odd: Option<String> = None;
        for item in items {
            match item.split_once('=') {
                Some((k, val)) if crate::spec::is_identifier(k) => {
                    env.insert(k.to_string(), val.to_string());
                }
                // A bare name is exported from the submitting shell, which ALL does anyway.
                None if crate::spec::is_identifier(item) => {}
                _ => {
                    odd.get_or_insert_with(|| item.to_string());
                }
            }
        }
        fates[i] = if !all {
            r.keep(g, "only ALL (the submitting shell's environment, plus KEY=VALUE) has a portable form")
        } else if let Some(item) = odd {
            r.keep(g, format!("{item:?} is not KEY=VALUE"))
        } else if !shell && !env.is_empty() {
            r.keep(g, "the script is not a shell script, so the spec cannot set its variables")
        } else {
            r.spec.env = env;
            Fate::Taken
        };
    }

    if let Some((i, g)) = at(Field::Array) {
        let v = value(g);
        parse_array(&v).map_err(|why| bad_value(g, &why))?;
        r.spec.array = Some(v);
        r.set_line("array", g.line);
        fates[i] = Fate::Taken;
    }

    if let Some((i, g)) = at(Field::Comment) {
        match migrated_from_of(&value(g)) {
            Some(origin) => {
                r.spec.migrated_from = Some(origin.to_string());
                r.set_line("migrated_from", g.line);
                fates[i] = Fate::Taken;
            }
            None => fates[i] = r.keep(g, "a comment has no portable form"),
        }
    }

    if let Some((i, g)) = at(Field::Ntasks) {
        fates[i] = r.keep(g, "a task count per job has no portable form (the spec has tasks per node)");
    }
    Ok((r, fates))
}

/// Read an sbatch script into a spec; see the module notes.
pub fn import(text: &str) -> Result<Imported, ImportError> {
    read_script(text).map(|(imported, _)| imported)
}

/// [`import`], and the long names of the known options that stayed in the script (a live
/// job's record must not override what the script still says for itself).
pub(crate) fn read_script(text: &str) -> Result<(Imported, Vec<&'static str>), ImportError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (n, line) in lines.iter().enumerate() {
        if line.contains('\0') {
            return Err(ImportError::at(n + 1, "a NUL character: this is not a script"));
        }
        if line.contains('\r') {
            return Err(ImportError::at(
                n + 1,
                "a carriage return (DOS line ends), which sbatch refuses: convert the script to Unix line ends",
            ));
        }
    }
    let mut warnings = Vec::new();
    // A preview from `Backend::render` starts with the sbatch call it stands for, as a
    // comment above the `#!` line: not part of the script.
    let start = usize::from(
        lines.first().is_some_and(|l| l.starts_with("# sbatch ") && l.trim_end().ends_with("< this script"))
            && lines.get(1).is_some_and(|l| l.starts_with("#!")),
    );
    let has_shebang = lines.get(start).is_some_and(|l| l.starts_with("#!"));
    let shebang = if has_shebang {
        lines[start].trim_end_matches('\n').to_string()
    } else {
        warnings.push(format!(
            "no #! line (sbatch needs one): the script runs with {}",
            DEFAULT_SHEBANG.trim_start_matches("#!")
        ));
        DEFAULT_SHEBANG.to_string()
    };
    let first_body = start + usize::from(has_shebang);

    // The leading block sbatch reads directives from.
    let mut directives: Vec<DirLine> = Vec::new();
    let mut body_start = lines.len();
    let mut warned_slurm = false;
    for (index, line) in lines.iter().enumerate().skip(first_body) {
        let content = line.trim_end_matches('\n');
        if let Some((magic, rest)) = is_magic(content) {
            if magic == "#SLURM" && !warned_slurm {
                warned_slurm = true;
                warnings.push(format!(
                    "line {}: #SLURM lines are read like #SBATCH (sbatch asks for #SBATCH instead)",
                    index + 1
                ));
            }
            let split = split_directive(rest).map_err(|why| ImportError::at(index + 1, why))?;
            // 22.05+ start a heterogeneous job's next component at an argument `hetjob`
            // (`packjob` before 20.02); the word inside a value or a comment is just text.
            if split
                .args
                .iter()
                .any(|a| a.text.eq_ignore_ascii_case("hetjob") || a.text.eq_ignore_ascii_case("packjob"))
            {
                return Err(ImportError::at(
                    index + 1,
                    "`hetjob` starts a heterogeneous job's next component, and a job spec has one",
                ));
            }
            // `--container-image=nvcr.io#nvidia/x`: sbatch reads `nvcr.io` and a comment.
            if let Some(at) = split.comment_at
                && split.args.last().is_some_and(|a| a.span.end == at)
            {
                let cut = &split.args[split.args.len() - 1].text;
                warnings.push(format!(
                    "line {}: the unquoted `#` right after `{cut}` starts a comment, so sbatch reads `{cut}` \
                     (write `\\#` or quote the value to keep the rest)",
                    index + 1
                ));
            }
            directives.push(DirLine {
                index,
                magic,
                rest: rest.to_string(),
                args: split.args,
                comment_at: split.comment_at,
            });
            continue;
        }
        let trimmed = content.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        body_start = index;
        break;
    }

    let shell = is_shell(&shebang);
    let given = read_options(&directives)?;
    let (mut reading, fates) = apply(&given, shell)?;
    warnings.append(&mut reading.warnings);
    let kept: Vec<&'static str> = given
        .iter()
        .zip(&fates)
        .filter(|(_, f)| **f == Fate::Kept)
        .filter_map(|(g, _)| g.opt.map(|o| o.long))
        .collect();

    // What becomes of each argument: the fates of the options made of it (several for a
    // word of clustered short options), with their pieces of the word.
    let mut uses: Uses = BTreeMap::new();
    for (g, fate) in given.iter().zip(&fates) {
        for &arg in &g.args {
            uses.entry(arg).or_default().push((g.piece.as_deref(), *fate));
        }
    }

    let mut script = String::with_capacity(text.len());
    script.push_str(&shebang);
    script.push('\n');
    let mut next_directive = directives.iter().enumerate().peekable();
    for (index, line) in lines.iter().enumerate().take(body_start).skip(first_body) {
        match next_directive.peek() {
            Some(&(l, d)) if d.index == index => {
                next_directive.next();
                script.push_str(&kept_directive(l, d, &uses));
            }
            _ => script.push_str(line),
        }
    }
    if !script.ends_with('\n') {
        script.push('\n');
    }

    // flightdeck's own `export KEY='value'` lines, right after the directives.
    let body: String = lines[body_start.min(lines.len())..].concat();
    let mut body = body.as_str();
    if shell {
        let mut taken = BTreeMap::new();
        let mut rest = body;
        while let Some((key, value, len)) = read_export(rest) {
            taken.insert(key, value);
            rest = &rest[len..];
        }
        // Taken only where writing them back puts them in the same place: before a command
        // or at the end, not before more comments (which would join the leading block).
        if !taken.is_empty() && leading_comment_block_len(rest) == 0 {
            reading.spec.env.extend(taken);
            body = rest;
        }
    }
    // A command flightdeck started on each node (`per_node`), where nothing else of the
    // script is left to keep, is that command again.
    let per_node = (reading.spec.nodes.unwrap_or(1) > 1 && script == format!("{DEFAULT_SHEBANG}\n"))
        .then(|| super::per_node::command_of(body))
        .flatten();
    if let Some(command) = per_node {
        reading.spec.command = Some(command);
    } else {
        script.push_str(body);
        if !script.ends_with('\n') {
            script.push('\n');
        }
        reading.spec.script = Some(script);
    }

    if !reading.lines.contains_key("name") {
        reading.spec.name = DEFAULT_NAME.to_string();
        warnings
            .push(format!("no --job-name: named {DEFAULT_NAME:?}, as Slurm names a script read from standard input"));
    }
    reading.spec.validate().map_err(|e| match e {
        SpecError::Invalid { field, message } => {
            let line = reading.lines.get(field.as_str()).copied();
            ImportError { line, message: format!("`{field}`: {message}") }
        }
        other => ImportError::new(other.to_string()),
    })?;
    Ok((Imported { spec: reading.spec, warnings }, kept))
}

/// Per argument ((directive line, argument) indices): the options made of it, each with its
/// piece of a clustered word and its fate.
type Uses<'a> = BTreeMap<(usize, usize), Vec<(Option<&'a str>, Fate)>>;

/// What stays of an argument: `None` when it leaves, else its text as written, or for a
/// word of clustered flags of which some leave (`-Hc4` when `c4` is taken), the word
/// written again from the flags that stay (`-H`): a flag left in a kept word would be read
/// after flightdeck's own directives and undo them.
fn kept_word(raw: &str, uses: &[(Option<&str>, Fate)]) -> Option<String> {
    if uses.iter().all(|(_, f)| *f == Fate::Kept) {
        return Some(raw.to_string());
    }
    if uses.iter().all(|(_, f)| *f == Fate::Taken) {
        return None;
    }
    let pieces: Option<String> = uses
        .iter()
        .filter(|(_, f)| *f == Fate::Kept)
        .map(|(piece, _)| *piece)
        .collect::<Option<Vec<_>>>()
        .map(|p| p.concat());
    // Mixed fates only happen inside a cluster, where every option has its piece.
    let word = format!("-{}", pieces.unwrap_or_default());
    Some(directive_value("directive", &word).unwrap_or(word))
}

/// A directive line with the arguments that left taken out: the line as written when all
/// stay, nothing when none does, else the magic word and what stays of each argument (and
/// the line's comment).
fn kept_directive(l: usize, d: &DirLine, uses: &Uses) -> String {
    let words: Vec<Option<String>> = d
        .args
        .iter()
        .enumerate()
        .map(|(a, arg)| {
            let raw = &d.rest[arg.span.clone()];
            uses.get(&(l, a)).map_or(Some(raw.to_string()), |u| kept_word(raw, u))
        })
        .collect();
    if words.iter().enumerate().all(|(a, w)| w.as_deref() == Some(&d.rest[d.args[a].span.clone()])) {
        return format!("{}{}\n", d.magic, d.rest);
    }
    if words.iter().all(Option::is_none) {
        return String::new();
    }
    let mut out = d.magic.to_string();
    for word in words.into_iter().flatten() {
        out.push(' ');
        out.push_str(&word);
    }
    if let Some(at) = d.comment_at {
        out.push(' ');
        out.push_str(&d.rest[at..]);
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imported(text: &str) -> Imported {
        import(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn detects_scripts_and_nothing_else() {
        assert!(detect("#!/bin/bash\necho\n"));
        assert!(detect("#SBATCH -N 1\necho\n"));
        assert!(detect("# a comment\n\n#SBATCH --gres=gpu:1\nsrun x\n"));
        assert!(!detect("name = \"x\"\nscript = \"\"\"\n#SBATCH -N 1\n\"\"\"\n"));
        assert!(!detect("apiVersion: batch/v1\nkind: Job\n"));
        assert!(!detect("echo\n#SBATCH -N 1\n"));
        assert!(!detect(""));
        assert!(!detect("  #SBATCH -N 1\n"));
    }

    #[test]
    fn options_as_getopt_reads_them() {
        let i = imported("#!/bin/bash\n#SBATCH -J a -pgpu --account ml\n#SBATCH --part=debug -N2 -c 4\necho\n");
        assert_eq!(i.spec.name, "a");
        assert_eq!(i.spec.partition.as_deref(), Some("debug"), "the last --partition wins, by its prefix");
        assert_eq!(i.spec.account.as_deref(), Some("ml"));
        assert_eq!((i.spec.nodes, i.spec.cpus), (Some(2), Some(4)));
        assert_eq!(i.spec.script.as_deref(), Some("#!/bin/bash\necho\n"));
        assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    }

    #[test]
    fn a_value_on_the_next_line_and_clustered_flags() {
        let i = imported("#!/bin/sh\n#SBATCH --time\n#SBATCH 10 -Hc4\ntrue\n");
        assert_eq!(i.spec.time_limit.as_deref(), Some("10m"));
        assert_eq!(i.spec.cpus, Some(4));
        // -H (hold) stays, written again without the -c4 it shared a word with.
        assert_eq!(i.spec.script.as_deref(), Some("#!/bin/sh\n#SBATCH -H\ntrue\n"));
        assert!(i.warnings.iter().any(|w| w.contains("-H (line 3)") && w.contains("--hold")), "{:?}", i.warnings);
    }

    #[test]
    fn mixed_lines_keep_what_stays_as_written() {
        let i = imported("#!/bin/bash\n#SBATCH -J x --mail-type=END  -o 'out %j.log' # notify\necho\n");
        assert_eq!(
            i.spec.script.as_deref(),
            Some("#!/bin/bash\n#SBATCH --mail-type=END -o 'out %j.log' # notify\necho\n")
        );
        assert_eq!(i.warnings.len(), 2, "{:?}", i.warnings);
        assert!(i.warnings[0].starts_with("#SBATCH --mail-type=END (line 2): --mail-type has no portable form"));
        assert!(i.warnings[1].starts_with("#SBATCH -o out %j.log (line 2)"), "{:?}", i.warnings);
    }

    #[test]
    fn an_unquoted_hash_cuts_the_value_as_in_sbatch_and_is_said() {
        let i = imported("#!/bin/bash\n#SBATCH -J c --container-image=nvcr.io#nvidia/pytorch:24.01\nx\n");
        assert_eq!(i.spec.image.as_deref(), Some("nvcr.io"));
        assert!(
            i.warnings[0].starts_with("line 2: the unquoted `#` right after `--container-image=nvcr.io`"),
            "{:?}",
            i.warnings
        );
        let i = imported("#!/bin/bash\n#SBATCH -J c --container-image=nvcr.io\\#nvidia/pytorch:24.01 # a comment\nx\n");
        assert_eq!(i.spec.image.as_deref(), Some("nvcr.io#nvidia/pytorch:24.01"));
        assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    }

    #[test]
    fn what_sbatch_refuses_is_an_error_naming_the_line() {
        for (text, line, words) in [
            ("#!/bin/bash\n#SBATCH foo\n", 2, "invalid directive"),
            ("#!/bin/bash\n\n#SBATCH --job-name=\"x\n", 3, "unmatched"),
            ("#!/bin/bash\n#SBATCH -J a : -J b\n", 2, "`:`"),
            ("#!/bin/bash\n#SBATCH --comment \"\" -J x\n", 2, "needs a value"),
            ("#!/bin/bash\n#SBATCH --hold=yes\n", 2, "takes no value"),
            ("#!/bin/bash\n#SBATCH -N x\n", 2, "node count"),
            ("#!/bin/bash\n#SBATCH -c 0\n", 2, "whole number"),
            ("#!/bin/bash\n#SBATCH -t 2h\n", 2, "time limit"),
            ("#!/bin/bash\n#SBATCH --array=5-1\n", 2, "backwards"),
            ("#!/bin/bash\n#SBATCH -J a\n#SBATCH hetjob\n", 3, "heterogeneous"),
            ("#!/bin/bash\n#SBATCH -J a\n#SBATCH -N 1 PackJob\n", 3, "heterogeneous"),
            ("#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH --gpus=2\n", 3, "twice"),
            ("#!/bin/bash\n#SBATCH --mem=1G --mem-per-cpu=1G\n", 2, "only one"),
            ("#!/bin/bash\r\necho\r\n", 1, "carriage return"),
            ("#!/bin/bash\n#SBATCH -J \"a\\\u{1b}b\"\n", 2, "`name`"),
        ] {
            let err = import(text).expect_err(text);
            assert_eq!(err.line, Some(line), "{text:?}: {err}");
            assert!(err.to_string().contains(words), "{text:?}: {err}");
        }
    }

    #[test]
    fn hetjob_inside_a_value_or_a_comment_is_text() {
        let i = imported("#!/bin/bash\n#SBATCH --job-name=my-hetjob-7 # not a hetjob\nx\n");
        assert_eq!(i.spec.name, "my-hetjob-7");
    }

    #[test]
    fn a_preview_reads_without_its_call_line() {
        let i = imported("# sbatch --parsable '--job-name=p' < this script\n#!/bin/sh\n#SBATCH --job-name=p\nx\n");
        assert_eq!((i.spec.name.as_str(), i.spec.script.as_deref()), ("p", Some("#!/bin/sh\nx\n")));
        assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    }

    #[test]
    fn gres_forms() {
        for (gres, count, gpu_type) in [
            ("gpu:1g.10gb:1", 1, Some("1g.10gb")),
            ("gpu:2", 2, None),
            ("gpu", 1, None),
            ("gres/gpu:a100:3", 3, Some("a100")),
            ("gpu:nvidia_a100-sxm4-80gb:8", 8, Some("nvidia_a100-sxm4-80gb")),
        ] {
            let i = imported(&format!("#!/bin/bash\n#SBATCH -J g --gres={gres}\nx\n"));
            assert_eq!((i.spec.gpus, i.spec.gpu_type.as_deref()), (count, gpu_type), "{gres}");
            assert!(i.warnings.is_empty(), "{gres}: {:?}", i.warnings);
        }
        let i = imported("#!/bin/bash\n#SBATCH -J g --gres=gpu:a100:2,nvme:1\nx\n");
        assert_eq!(i.spec.gpus, 2);
        assert!(i.warnings[0].contains("nvme:1 has no portable form; kept"), "{:?}", i.warnings);
        let i = imported("#!/bin/bash\n#SBATCH -J g --gres=gpu:a100:0\nx\n");
        assert_eq!((i.spec.gpus, i.spec.gpu_type.as_deref()), (0, None));
    }

    #[test]
    fn gpus_per_job_over_nodes() {
        let i = imported("#!/bin/bash\n#SBATCH -J g -N 2 --gpus=a100:8\nx\n");
        assert_eq!((i.spec.gpus, i.spec.gpu_type.as_deref()), (4, Some("a100")));
        assert!(i.warnings.is_empty());
        let i = imported("#!/bin/bash\n#SBATCH -J g -N 2 -G 3\nx\n");
        assert_eq!(i.spec.gpus, 2);
        assert!(i.warnings[0].contains("do not divide evenly over 2 nodes"), "{:?}", i.warnings);
    }

    #[test]
    fn memory_per_cpu_converts_when_cpus_are_known() {
        let i = imported("#!/bin/bash\n#SBATCH -c 8 --ntasks-per-node=2 --mem-per-cpu=2G\nx\n");
        assert_eq!(i.spec.memory.as_deref(), Some("32G"));
        assert!(i.warnings[0].contains("2G per CPU × 16 = 32G"), "{:?}", i.warnings);
        let i = imported("#!/bin/bash\n#SBATCH --mem-per-cpu=2G\nx\n");
        assert_eq!(i.spec.memory, None);
        assert!(i.spec.script.as_deref().unwrap().contains("#SBATCH --mem-per-cpu=2G\n"));
        let i = imported("#!/bin/bash\n#SBATCH --gres=gpu:4 --mem-per-gpu=10G\nx\n");
        assert_eq!(i.spec.memory.as_deref(), Some("40G"));
    }

    #[test]
    fn exports_read_back_only_where_written() {
        let i = imported("#!/bin/bash\n#SBATCH -J e\nexport A='it'\\''s'\nexport B='two\nlines'\necho\n");
        assert_eq!(i.spec.env.get("A").map(String::as_str), Some("it's"));
        assert_eq!(i.spec.env.get("B").map(String::as_str), Some("two\nlines"));
        assert_eq!(i.spec.script.as_deref(), Some("#!/bin/bash\necho\n"));
        // Before more comments they would move on the way back: left in the script.
        let i = imported("#!/bin/bash\nexport A='1'\n# c\necho\n");
        assert!(i.spec.env.is_empty());
        // Other forms are the shell's business.
        let i = imported("#!/bin/bash\nexport A=\"$HOME\"\necho\n");
        assert!(i.spec.env.is_empty());
    }
}
