//! What `/proc` says of a GPU process: its user (the real uid of `status`, named through
//! the password database), its command line (`cmdline`), when it started (`stat` against
//! the boot time), and the machine's CPUs and memory. Files are read, never a program run,
//! so nothing of a process's own text goes near a shell.

use std::collections::HashMap;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::model::GpuSample;

/// The longest command line kept, in characters: enough for any real one, bounded for the
/// rest (a command line can be megabytes).
const MAX_COMMAND_CHARS: usize = 4096;
/// Bytes of `cmdline` read at most (four bytes per character at worst).
const MAX_COMMAND_BYTES: u64 = 4 * MAX_COMMAND_CHARS as u64;

/// One process as `/proc` has it; what could not be read is `None` (the process ended, is
/// in another pid namespace, or is another user's and hidden by `hidepid`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcInfo {
    pub user: Option<String>,
    /// Arguments joined with spaces.
    pub command: Option<String>,
    pub started: Option<DateTime<Utc>>,
}

/// `/proc/<pid>` under `root`.
pub fn read(root: &Path, pid: u32, boot: Option<u64>) -> ProcInfo {
    let dir = root.join(pid.to_string());
    let user = std::fs::read_to_string(dir.join("status")).ok().and_then(|s| real_uid(&s)).map(user_of);
    let command = read_bounded(&dir.join("cmdline")).and_then(|bytes| command_line(&bytes));
    let started = match (std::fs::read_to_string(dir.join("stat")).ok(), boot) {
        (Some(stat), Some(boot)) => start_time(&stat, boot, clock_ticks()),
        _ => None,
    };
    ProcInfo { user, command, started }
}

/// The processes of `samples` read from `/proc` under `root`, each once; their user and
/// command line put on the samples (the command line replacing the source's process name
/// where it could be read). The infos come back for the snapshot's jobs.
pub fn enrich(samples: &mut [GpuSample], root: &Path) -> HashMap<u32, ProcInfo> {
    let boot = std::fs::read_to_string(root.join("stat")).ok().and_then(|s| boot_time(&s));
    let mut infos: HashMap<u32, ProcInfo> = HashMap::new();
    for sample in samples.iter_mut() {
        for process in &mut sample.processes {
            let info = infos.entry(process.pid).or_insert_with(|| read(root, process.pid, boot));
            if let Some(user) = &info.user {
                process.user = Some(user.clone());
            }
            if let Some(command) = &info.command {
                process.command = command.clone();
            }
        }
    }
    infos
}

/// The machine's CPUs and memory (MiB), for its node.
pub fn machine(root: &Path) -> (u32, u64) {
    let cpus = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(0);
    let memory = std::fs::read_to_string(root.join("meminfo")).ok().and_then(|m| mem_total_mb(&m)).unwrap_or(0);
    (cpus, memory)
}

fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take(MAX_COMMAND_BYTES).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The login name of `uid`, else the number itself.
fn user_of(uid: u32) -> String {
    crate::system::user::user_name(uid).unwrap_or_else(|| uid.to_string())
}

/// The real uid: the first number of `status`'s `Uid:` line.
fn real_uid(status: &str) -> Option<u32> {
    status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().next()?.parse().ok()
}

/// `cmdline`'s NUL-separated arguments, joined with spaces; `None` when empty (a kernel
/// thread, a zombie).
fn command_line(bytes: &[u8]) -> Option<String> {
    let args: Vec<String> =
        bytes.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    if args.is_empty() {
        return None;
    }
    let joined = args.join(" ");
    Some(match joined.char_indices().nth(MAX_COMMAND_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    })
}

/// `btime` of `/proc/stat`: the boot time in seconds since the epoch.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()
}

/// When the process of this `stat` line started: its field 22 (`starttime`, clock ticks
/// after boot). The command name (field 2) may hold spaces and parentheses, so fields are
/// counted after its last `)`.
fn start_time(stat: &str, boot: u64, ticks_per_second: u64) -> Option<DateTime<Utc>> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let secs = boot.checked_add(ticks / ticks_per_second.max(1))?;
    DateTime::from_timestamp(i64::try_from(secs).ok()?, 0)
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf reads a constant of the system; it takes no pointers.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as u64 } else { 100 }
}

fn mem_total_mb(meminfo: &str) -> Option<u64> {
    let kib: u64 =
        meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.split_whitespace().next()?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_cmdline_and_stat_are_read_as_the_kernel_writes_them() {
        assert_eq!(real_uid("Name:\tpython\nUid:\t1000\t1001\t1001\t1001\nGid:\t5\n"), Some(1000));
        assert_eq!(real_uid("Name: x\n"), None);
        assert_eq!(command_line(b"python3\0train.py\0--lr\x003e-4\0").as_deref(), Some("python3 train.py --lr 3e-4"));
        assert_eq!(command_line(b""), None);
        let long = vec![b'x'; 10_000];
        let cut = command_line(&long).unwrap();
        assert_eq!(cut.chars().count(), MAX_COMMAND_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(boot_time("cpu 1 2 3\nbtime 1700000000\nprocesses 5\n"), Some(1_700_000_000));
        // A name with spaces and parentheses; starttime 12345 ticks at 100 per second.
        let stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 1 0 12345 1000 10";
        assert_eq!(start_time(stat, 1_700_000_000, 100), DateTime::from_timestamp(1_700_000_123, 0));
        assert_eq!(start_time("garbage", 1, 100), None);
        assert_eq!(mem_total_mb("MemTotal:       32768000 kB\nMemFree: 1 kB\n"), Some(32000));
    }

    #[test]
    fn a_process_is_read_from_a_proc_tree() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("77");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("status"), "Name:\tpython\nUid:\t0\t0\t0\t0\n").unwrap();
        std::fs::write(dir.join("cmdline"), b"python\0-m\0torch.distributed.run\0").unwrap();
        std::fs::write(dir.join("stat"), "77 (python) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 500 0 0").unwrap();
        std::fs::write(root.path().join("stat"), "btime 1000\n").unwrap();
        let mut samples = vec![GpuSample::new("box", 0)];
        samples[0].processes.push(crate::model::GpuProcess {
            pid: 77,
            user: None,
            command: "python".into(),
            memory_mb: Some(1),
        });
        samples[0].processes.push(crate::model::GpuProcess {
            pid: 78,
            user: None,
            command: "gone".into(),
            memory_mb: None,
        });
        let infos = enrich(&mut samples, root.path());
        let p = &samples[0].processes;
        assert_eq!(p[0].user.as_deref(), Some("root"));
        assert_eq!(p[0].command, "python -m torch.distributed.run");
        assert_eq!((p[1].user.as_deref(), p[1].command.as_str()), (None, "gone"), "an unreadable pid keeps its name");
        assert_eq!(infos[&77].started, DateTime::from_timestamp(1000 + 500 / clock_ticks() as i64, 0));
        assert_eq!(infos[&78], ProcInfo::default());
    }
}
