//! This machine's name, as Slurm and `hostname -s` write it: the local kind's one node and a
//! hub replica's default id both use it, so it sits below both.

/// The host name up to its first dot (`gpu-07.example.org` → `gpu-07`), as Slurm and
/// `hostname -s` name a machine; `localhost` when it has none.
pub fn short_hostname() -> String {
    let full = whoami::hostname()
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_default();
    short(&full)
}

fn short(full: &str) -> String {
    let name = full.trim().split('.').next().unwrap_or_default();
    if name.is_empty() { "localhost".to_string() } else { name.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_name_is_up_to_the_first_dot() {
        assert_eq!(short("gpu-07.example.org\n"), "gpu-07");
        assert_eq!(short("box"), "box");
        assert_eq!(short(""), "localhost");
        assert_eq!(short(".weird"), "localhost");
        assert!(!short_hostname().is_empty());
    }
}
