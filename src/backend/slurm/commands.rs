//! Argument vectors for every Slurm command flightdeck runs, and the checks on the
//! identifiers that go into them.
//!
//! Quoting is the transport's job; this module makes sure that what a user typed as a job
//! id or node name cannot be read by a Slurm command as an option (`--help`, `-u root`).

use crate::backend::BackendError;
use crate::backend::slurm::parse::fields::squeue_fields_format;
use crate::backend::slurm::parse::{SINFO_TEXT_FORMAT, squeue_text_format};

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

pub fn version() -> Vec<String> {
    argv(&["sinfo", "--version"])
}

/// Every job the controller still keeps, in every state. One RPC on every release.
pub fn jobs_json() -> Vec<String> {
    argv(&["squeue", "--all", "--states=all", "--json"])
}

/// Every job the controller keeps, each as the fields a job is made of (see
/// [`super::parse::fields`]), times as epoch seconds. One job RPC (and one partition RPC,
/// which every text squeue makes) on every release.
pub fn jobs_fields(mark: &str) -> Vec<String> {
    let format = format!("--Format={}", squeue_fields_format(mark));
    argv(&["env", "SLURM_TIME_FORMAT=%s", "squeue", "--all", "--states=all", "--noheader", &format])
}

/// Text output prints times in the cluster's local zone without saying which; `TZ=UTC`
/// makes them UTC, which is how the parser reads them.
/// `mark` ends every record (see [`super::parse::record_mark`]).
pub fn jobs_text(mark: &str) -> Vec<String> {
    let format = squeue_text_format(mark);
    argv(&["env", "TZ=UTC", "squeue", "--all", "--states=all", "-r", "-h", "-o", &format])
}

/// Per-node records. On 21.08/22.05 `sinfo --json` still lists nodes one by one; from 23.02
/// it is aggregated and `scontrol show node --json` is the per-node source.
pub fn nodes_json(per_node_sinfo: bool) -> Vec<String> {
    if per_node_sinfo { argv(&["sinfo", "--json"]) } else { argv(&["scontrol", "show", "node", "--json"]) }
}

/// `mark` ends every record (see [`super::parse::record_mark`]).
pub fn nodes_text(mark: &str) -> Vec<String> {
    let format = format!("{SINFO_TEXT_FORMAT}|{mark}");
    argv(&["env", "TZ=UTC", "sinfo", "--all", "-N", "-h", "-o", &format])
}

/// Reads the batch script on standard input; `--parsable` prints `id[;cluster]`.
pub fn sbatch(extra: &[String]) -> Vec<String> {
    let mut v = argv(&["sbatch", "--parsable"]);
    v.extend(extra.iter().cloned());
    v
}

/// Exit status of [`sbatch_checked`] when the script arrived short (a link that dropped
/// mid-write): nothing was submitted.
pub const SHORT_SCRIPT_EXIT: i32 = 97;

/// `sbatch` behind a check that the whole batch script arrived: the remote side reads
/// exactly `len` bytes from standard input into a private temporary file, compares the count,
/// and only then runs `sbatch … < file`. A link that drops mid-write can then never submit a
/// truncated script. The shell text is fixed; `len` and sbatch's arguments travel as its
/// positional parameters (quoted one by one by the transport like any argv).
pub fn sbatch_checked(extra: &[String], len: usize) -> Vec<String> {
    const CHECK: &str = r#"n=$1; shift
f=$(mktemp) || exit 1
trap 'rm -f "$f"' EXIT
head -c "$n" >"$f"
got=$(wc -c <"$f" | tr -d ' ')
if [ "$got" != "$n" ]; then
  echo "flightdeck: the batch script arrived short ($got of $n bytes); nothing was submitted" >&2
  exit 97
fi
"$@" <"$f""#;
    let mut v = argv(&["sh", "-c", CHECK, "flightdeck-sbatch"]);
    v.push(len.to_string());
    v.extend(sbatch(extra));
    v
}

/// `--verbose` because a plain `scancel` of an unknown job id prints nothing and exits 0;
/// verbose, it says `error: … Invalid job id specified`, which the user should see.
pub fn scancel(job_id: &str) -> Result<Vec<String>, BackendError> {
    Ok(vec!["scancel".into(), "--verbose".into(), checked_job_id(job_id)?])
}

/// `scontrol hold|release|requeue ID`.
pub fn scontrol_job(verb: &str, job_id: &str) -> Result<Vec<String>, BackendError> {
    Ok(vec!["scontrol".into(), verb.into(), checked_job_id(job_id)?])
}

pub fn drain(node: &str, reason: &str) -> Result<Vec<String>, BackendError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(BackendError::InvalidSpec("draining a node needs a reason".to_string()));
    }
    // Stored where every admin's `sinfo -R` prints it: no escapes, no bidi tricks.
    crate::safe_text::check_typed("drain reason", reason).map_err(BackendError::InvalidSpec)?;
    Ok(vec![
        "scontrol".into(),
        "update".into(),
        format!("NodeName={}", checked_node(node)?),
        "State=DRAIN".into(),
        format!("Reason={reason}"),
    ])
}

pub fn resume(node: &str) -> Result<Vec<String>, BackendError> {
    Ok(vec!["scontrol".into(), "update".into(), format!("NodeName={}", checked_node(node)?), "State=RESUME".into()])
}

/// Exit status of [`read_log`] when the file is not one flightdeck may show (a symbolic
/// link, not a regular file, another user's): its stderr says why.
pub const REFUSED_READ_EXIT: i32 = 96;

/// One round trip for a piece of a job's output file: the remote side refuses a symbolic
/// link (checked without following it), opens the file once, and checks on the *opened* file
/// (`stat -` is fstat of standard input, so a link swapped in after the first check changes
/// nothing) that it is a regular file owned by `owner`. It then prints `SIZE START` on one
/// line and the bytes of the window [`crate::backend::log_window`] picks (the same rule,
/// in shell arithmetic), read from the open descriptor with a bounded `dd`.
///
/// The shell text is fixed; path, offsets and owner travel as positional parameters,
/// quoted one by one by the transport like any argv. `from` empty means "the tail".
pub fn read_log(path: &str, owner: &str, from: Option<u64>, max_bytes: u64) -> Result<Vec<String>, BackendError> {
    const READ: &str = r#"p=$1 want=$2 from=$3 max=$4
refuse() { echo "flightdeck: not reading $p: $1" >&2; exit 96; }
kind=$(stat -c %F -- "$p") || exit 1
[ "$kind" = "symbolic link" ] && refuse "it is a symbolic link"
case $kind in "regular file"|"regular empty file") ;; *) refuse "it is a $kind, not a regular file" ;; esac
# Opening a FIFO blocks until someone writes: one swapped in after the check above must not
# hold the command (and the SSH session) until its timeout. A watchdog ends the shell if the
# open has not returned in 5 s; its output goes nowhere, so it never holds the streams.
( sleep 5; kill -s ALRM $$ ) </dev/null >/dev/null 2>&1 & guard=$!
exec 3<"$p" || exit 1
kill "$guard" 2>/dev/null
info=$(stat -c '%U %s %F' - <&3) || exit 1
owner=${info%% *}; rest=${info#* }; size=${rest%% *}; kind=${rest#* }
case $kind in "regular file"|"regular empty file") ;; *) refuse "it is a $kind, not a regular file" ;; esac
[ "$owner" = "$want" ] || refuse "it is owned by $owner, not $want"
if [ -z "$from" ]; then w=$((size > max ? size - max : 0))
elif [ "$from" -le "$size" ]; then w=$from
else w=0; fi
start=$((size > max && size - max > w ? size - max : w))
echo "$size $start"
exec dd bs=65536 iflag=skip_bytes,count_bytes skip="$start" count=$((size - start)) status=none <&3"#;
    let owner = checked_owner(owner)?;
    Ok(vec![
        "sh".into(),
        "-c".into(),
        READ.into(),
        "flightdeck-log".into(),
        checked_path(path)?.into(),
        owner.into(),
        from.map(|f| f.to_string()).unwrap_or_default(),
        max_bytes.to_string(),
    ])
}

/// The user a log file must belong to: a plain login name, so the comparison the remote
/// side makes is exact (an empty or odd name would never be anyone's file anyway).
fn checked_owner(owner: &str) -> Result<&str, BackendError> {
    let ok = !owner.is_empty()
        && !owner.starts_with('-')
        && owner.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'));
    if ok {
        Ok(owner)
    } else {
        Err(BackendError::Unsupported(format!(
            "flightdeck does not read this job's output: its owner `{owner}` is not a plain user name"
        )))
    }
}

/// Output paths come from Slurm (any user's `--output`) and are absolute; anything else is
/// refused. Characters that a non-POSIX login shell (csh, tcsh) would still expand inside
/// our quoting (`` ` ``, `$`, `!`, `\`, `"`) are refused too: such a log is not read.
pub fn checked_path(path: &str) -> Result<&str, BackendError> {
    if !path.starts_with('/') || path.contains(['\0', '\n', '\r']) {
        return Err(BackendError::NotFound(format!("`{path}` is not an absolute file path")));
    }
    if path.contains(['`', '$', '!', '\\', '"']) {
        return Err(BackendError::Unsupported(format!(
            "flightdeck does not read `{path}`: its name holds characters a login shell could expand"
        )));
    }
    Ok(path)
}

/// The job record of `job_id` (all its tasks, for an array): `--json` from 23.02 on.
pub fn show_job(job_id: &str, json: bool) -> Result<Vec<String>, BackendError> {
    let mut v = argv(&["scontrol", "show", "job"]);
    if json {
        v.push("--json".into());
    }
    v.push(checked_job_id(job_id)?);
    Ok(v)
}

/// The batch script of `job_id`, on standard output (`-`).
pub fn batch_script(job_id: &str) -> Result<Vec<String>, BackendError> {
    Ok(vec!["scontrol".into(), "write".into(), "batch_script".into(), checked_job_id(job_id)?, "-".into()])
}

/// How long a command on a GPU node may run on the login node before coreutils `timeout`
/// ends it (and, 2 s later, kills it): inside the cluster's own timeout, so a slow or hung
/// node ends as that node's failure rather than as a command the transport gives up on
/// (which it takes for a half-dead link and reconnects).
pub fn node_command_limit(timeout: std::time::Duration) -> u64 {
    let secs = timeout.as_secs();
    secs.saturating_sub(secs / 4 + 2).max(1)
}

/// Exit status of a command that [`srun_on_node`] / [`ssh_to_node`] ended at its limit
/// (`timeout`'s own; 137 when it had to kill).
pub const NODE_COMMAND_TIMED_OUT: [i32; 2] = [124, 137];

/// `program` run as one task on `node` inside job `job_id`'s allocation, beside whatever
/// runs there (`--overlap`): the step gets the job's GPUs on that node and nothing else.
/// `job_id` is the numeric id Slurm keeps (an array task's own, not `ID_TASK`: 22.05 refuses
/// that, 24.11 reads the array's id and would step into another task).
pub fn srun_on_node(
    job_id: &str,
    node: &str,
    program: &[String],
    limit_secs: u64,
) -> Result<Vec<String>, BackendError> {
    if job_id.is_empty() || !job_id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BackendError::NotFound(format!("`{job_id}` is not a numeric Slurm job id")));
    }
    let mut v = timeout_prefix(limit_secs);
    v.extend(argv(&["srun", "--overlap"]));
    v.push(format!("--jobid={job_id}"));
    v.push(format!("--nodelist={}", checked_node(node)?));
    v.extend(argv(&["--nodes=1", "--ntasks=1", "--quiet"]));
    v.extend(checked_program(program)?.iter().cloned());
    Ok(v)
}

/// `program` on `node` over ssh from the login node: never a prompt (`BatchMode`), no
/// standard input, and the remote command as one word, quoted by the transport's own rule,
/// since ssh hands what follows the destination to the node's shell as one line.
pub fn ssh_to_node(node: &str, program: &[String], limit_secs: u64) -> Result<Vec<String>, BackendError> {
    let line = crate::backend::exec::shell_line(checked_program(program)?)?;
    let mut v = timeout_prefix(limit_secs);
    v.extend(argv(&["ssh", "-n", "-T", "-o", "BatchMode=yes"]));
    v.push(format!("-oConnectTimeout={}", limit_secs.clamp(1, 10)));
    v.push(checked_node(node)?.to_string());
    v.push(line);
    Ok(v)
}

fn timeout_prefix(limit_secs: u64) -> Vec<String> {
    // `-k SECS` rather than `--kill-after=`: busybox's timeout reads it too.
    vec!["timeout".into(), "-k".into(), "2".into(), limit_secs.max(1).to_string()]
}

/// The program a node command runs: its name first, never an option.
fn checked_program(program: &[String]) -> Result<&[String], BackendError> {
    match program.first() {
        Some(p) if !p.is_empty() && !p.starts_with('-') => Ok(program),
        _ => Err(BackendError::InvalidSpec(format!("`{}` is not a program to run on a node", program.join(" ")))),
    }
}

/// The numeric job ids of array tasks (`123_4` → `130`), one `ID|JOBID` line each.
pub fn array_task_ids(tasks: &[&str]) -> Result<Vec<String>, BackendError> {
    Ok(vec!["squeue".into(), "--all".into(), "--noheader".into(), jobs_option(tasks)?, "--format=%i|%A".into()])
}

/// `--jobs=A,B,…` with every id checked (no option or shell text can ride in on one).
fn jobs_option(jobs: &[&str]) -> Result<String, BackendError> {
    let ids = jobs.iter().map(|j| checked_job_id(j)).collect::<Result<Vec<_>, _>>()?;
    Ok(format!("--jobs={}", ids.join(",")))
}

/// The JSON records of `jobs` only (`squeue --json --jobs=…`): their `gres_detail`, the
/// device indices each holds per node, which the field listing does not carry.
pub fn jobs_json_of(jobs: &[&str]) -> Result<Vec<String>, BackendError> {
    Ok(vec!["squeue".into(), "--all".into(), "--states=all".into(), jobs_option(jobs)?, "--json".into()])
}

pub fn srun_help() -> Vec<String> {
    argv(&["srun", "--help"])
}

pub fn sdiag() -> Vec<String> {
    argv(&["sdiag"])
}

/// A user name as Slurm's tools take it (`sacct --user=`, `sshare -u`): letters, digits,
/// `._-`, not starting with `-`, so it cannot become an option.
pub fn checked_user(user: &str) -> Result<&str, BackendError> {
    let ok = !user.is_empty()
        && !user.starts_with('-')
        && user.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok { Ok(user) } else { Err(BackendError::NotFound(format!("`{user}` is not a user name"))) }
}

/// A Slurm job id as flightdeck prints it: `123`, `123_4`, or a pending array's
/// `123_[4-7%2]`. The throttle suffix is dropped, since `scancel` and `scontrol` do not take it.
pub fn checked_job_id(id: &str) -> Result<String, BackendError> {
    let bad = || BackendError::NotFound(format!("`{id}` is not a Slurm job id (like 123, 123_4 or 123_[4-7])"));
    let (base, task) = match id.split_once('_') {
        Some((b, t)) => (b, Some(t)),
        None => (id, None),
    };
    if base.is_empty() || !base.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let task = match task {
        None => return Ok(base.to_string()),
        Some(t) => t,
    };
    if !task.is_empty() && task.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(id.to_string());
    }
    let inner = task.strip_prefix('[').and_then(|t| t.strip_suffix(']')).ok_or_else(bad)?;
    let inner = inner.split('%').next().unwrap_or_default();
    if inner.is_empty() || !inner.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b',') {
        return Err(bad());
    }
    Ok(format!("{base}_[{inner}]"))
}

/// Node names are hostnames; anything else (spaces, `=`, a leading `-`) is refused before it
/// can change the meaning of an `scontrol update` line.
pub fn checked_node(name: &str) -> Result<&str, BackendError> {
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok { Ok(name) } else { Err(BackendError::NotFound(format!("`{name}` is not a node name"))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job's output path that flips between a regular file and a FIFO as fast as it can
    /// (a hostile user racing the check against the open): every read ends promptly, with
    /// the file's bytes or a refusal, and none waits on the FIFO for the command's timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fifo_swapped_in_after_the_check_never_holds_the_read() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let (file, fifo) = (dir.path().join("file"), dir.path().join("fifo"));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let swapper = {
            let (path, file, fifo, stop) = (path.clone(), file.clone(), fifo.clone(), stop.clone());
            std::thread::spawn(move || {
                let c = |p: &std::path::Path| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::fs::write(&file, "log line\n").unwrap();
                    let _ = std::fs::rename(&file, &path);
                    // SAFETY: mkfifo with a valid NUL-terminated path.
                    unsafe { libc::mkfifo(c(&fifo).as_ptr(), 0o600) };
                    let _ = std::fs::rename(&fifo, &path);
                }
            })
        };
        let t = crate::backend::exec::Transport::local();
        let me = whoami::username().unwrap();
        let argv = read_log(path.to_str().unwrap(), &me, None, 1024).unwrap();
        let mut slowest = std::time::Duration::ZERO;
        for _ in 0..20 {
            let started = std::time::Instant::now();
            let _ = t.output(&argv, None, std::time::Duration::from_secs(60)).await;
            slowest = slowest.max(started.elapsed());
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(slowest < std::time::Duration::from_secs(10), "a read waited {slowest:?}");
    }

    #[test]
    fn job_ids() {
        assert_eq!(checked_job_id("123").unwrap(), "123");
        assert_eq!(checked_job_id("123_4").unwrap(), "123_4");
        assert_eq!(checked_job_id("123_[4-7%2]").unwrap(), "123_[4-7]");
        assert_eq!(checked_job_id("123_[1,3,5-6]").unwrap(), "123_[1,3,5-6]");
        for bad in ["", "--help", "-u", "12a", "1_", "1_[]", "1_[a]", "1 2", "1;id", "_4"] {
            assert!(checked_job_id(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn job_record_and_script_commands_check_the_id() {
        assert_eq!(show_job("12", true).unwrap(), ["scontrol", "show", "job", "--json", "12"]);
        assert_eq!(show_job("12", false).unwrap(), ["scontrol", "show", "job", "12"]);
        assert_eq!(batch_script("12").unwrap(), ["scontrol", "write", "batch_script", "12", "-"]);
        assert!(show_job("--help", false).is_err());
        assert!(batch_script("-1").is_err());
    }

    #[test]
    fn paths() {
        assert!(checked_path("/home/a b/slurm-1.out").is_ok());
        for bad in ["rel/x.out", "/x\n.out", "/x`id`.out", "/x$(id).out", "/x!1.out", "/x\\y", "/x\"y"] {
            assert!(checked_path(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn node_names() {
        assert!(checked_node("gpu-a100-01.cluster").is_ok());
        for bad in ["", "-x", "a b", "a=b", "a;b", "a\nb"] {
            assert!(checked_node(bad).is_err(), "{bad:?} accepted");
        }
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    const SMI: &[&str] = &["/opt/nv/nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader,nounits"];

    #[test]
    fn srun_on_a_node_steps_into_the_job() {
        let v = srun_on_node("4711", "gpu-03", &words(SMI), 21).unwrap();
        assert_eq!(
            v,
            words(&[
                "timeout",
                "-k",
                "2",
                "21",
                "srun",
                "--overlap",
                "--jobid=4711",
                "--nodelist=gpu-03",
                "--nodes=1",
                "--ntasks=1",
                "--quiet",
                "/opt/nv/nvidia-smi",
                "--query-gpu=index,uuid",
                "--format=csv,noheader,nounits",
            ])
        );
        for bad_job in ["", "12_3", "12_[1-2]", "--help", "1 2"] {
            assert!(srun_on_node(bad_job, "gpu-03", &words(SMI), 21).is_err(), "{bad_job:?} accepted");
        }
        for bad_node in ["", "-w", "a b", "gpu-03,gpu-04"] {
            assert!(srun_on_node("1", bad_node, &words(SMI), 21).is_err(), "{bad_node:?} accepted");
        }
        assert!(srun_on_node("1", "gpu-03", &words(&["--help"]), 21).is_err());
        assert!(srun_on_node("1", "gpu-03", &[], 21).is_err());
    }

    #[test]
    fn ssh_to_a_node_sends_one_quoted_word() {
        let v = ssh_to_node("gpu-03", &words(SMI), 21).unwrap();
        assert_eq!(
            v,
            words(&[
                "timeout",
                "-k",
                "2",
                "21",
                "ssh",
                "-n",
                "-T",
                "-o",
                "BatchMode=yes",
                "-oConnectTimeout=10",
                "gpu-03",
                "/opt/nv/nvidia-smi '--query-gpu=index,uuid' '--format=csv,noheader,nounits'",
            ])
        );
        // What the node's shell reads back is the program's argv, word for word.
        let odd = words(&["/opt/n v/smi", "--x=a'b", "$(id)"]);
        let v = ssh_to_node("gpu-03", &odd, 5).unwrap();
        assert_eq!(shlex::split(v.last().unwrap()).unwrap(), odd);
        assert!(v.contains(&"-oConnectTimeout=5".to_string()));
        assert!(ssh_to_node("-oProxyCommand=x", &words(SMI), 5).is_err());
        assert!(ssh_to_node("gpu-03", &words(&["-x"]), 5).is_err());
    }

    #[test]
    fn node_commands_end_inside_the_cluster_timeout() {
        use std::time::Duration;
        for secs in [4, 10, 30, 120] {
            let limit = node_command_limit(Duration::from_secs(secs));
            assert!(limit >= 1 && limit + 2 < secs, "{secs} s → {limit} s");
        }
        assert_eq!(node_command_limit(Duration::from_secs(30)), 21);
        assert_eq!(node_command_limit(Duration::from_secs(1)), 1);
    }

    #[test]
    fn array_tasks_are_looked_up_in_one_squeue() {
        assert_eq!(
            array_task_ids(&["12_3", "40_0"]).unwrap(),
            words(&["squeue", "--all", "--noheader", "--jobs=12_3,40_0", "--format=%i|%A"])
        );
        assert!(array_task_ids(&["--help"]).is_err());
    }

    #[test]
    fn drain_keeps_the_reason_as_one_argument() {
        let v = drain("a100-01", "bad GPU; $(reboot) 'x'").unwrap();
        assert_eq!(v.last().unwrap(), "Reason=bad GPU; $(reboot) 'x'");
        assert!(drain("a100-01", "  ").is_err());
        assert!(drain("a100-01", "two\nlines").is_err());
    }
}
