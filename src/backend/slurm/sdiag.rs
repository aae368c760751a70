//! Reading `sdiag`: how many RPCs slurmctld served, by message type and by user.
//!
//! flightdeck uses it to measure its own load on the controller (`doctor`, and the test
//! that bounds RPCs per refresh).

use std::collections::BTreeMap;

/// RPC counters from one `sdiag` run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RpcCounts {
    pub by_type: BTreeMap<String, u64>,
    pub by_user: BTreeMap<String, u64>,
}

/// The message types a read-only client causes: the ones a refresh should keep few.
pub const QUERY_TYPES: &[&str] = &[
    "REQUEST_JOB_INFO",
    "REQUEST_JOB_INFO_SINGLE",
    "REQUEST_JOB_USER_INFO",
    "REQUEST_NODE_INFO",
    "REQUEST_NODE_INFO_SINGLE",
    "REQUEST_PARTITION_INFO",
    "REQUEST_BUILD_INFO",
    "REQUEST_CONFIG",
    "REQUEST_RESERVATION_INFO",
    "REQUEST_FED_INFO",
    "REQUEST_JOB_STATE",
    "REQUEST_LICENSE_INFO",
    "REQUEST_ASSOC_MGR_INFO",
];

impl RpcCounts {
    /// RPCs of one message type counted here and not in `before`.
    pub fn count_since(&self, before: &RpcCounts, message_type: &str) -> u64 {
        let now = self.by_type.get(message_type).copied().unwrap_or(0);
        now.saturating_sub(before.by_type.get(message_type).copied().unwrap_or(0))
    }

    /// Query RPCs counted here and not in `before`.
    pub fn queries_since(&self, before: &RpcCounts) -> u64 {
        QUERY_TYPES.iter().map(|t| self.count_since(before, t)).sum()
    }
}

/// Parse the two RPC tables of `sdiag`'s text output. Lines look like
/// `\tREQUEST_JOB_INFO    ( 2003) count:5  ave_time:287  total_time:1435`.
pub fn parse_sdiag(text: &str) -> RpcCounts {
    enum Section {
        None,
        Types,
        Users,
    }
    let mut section = Section::None;
    let mut counts = RpcCounts::default();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("Remote Procedure Call statistics by message type") {
            section = Section::Types;
            continue;
        }
        if trimmed.starts_with("Remote Procedure Call statistics by user") {
            section = Section::Users;
            continue;
        }
        if trimmed.starts_with("Pending RPC") || trimmed.starts_with("Remote Procedure Call statistics by uid") {
            section = Section::None;
            continue;
        }
        let Some((name, rest)) = trimmed.split_once(char::is_whitespace) else { continue };
        let Some(count) = rest
            .split_once("count:")
            .and_then(|(_, c)| c.split_whitespace().next())
            .and_then(|c| c.parse::<u64>().ok())
        else {
            continue;
        };
        match section {
            Section::Types => counts.by_type.insert(name.to_string(), count),
            Section::Users => counts.by_user.insert(name.to_string(), count),
            Section::None => None,
        };
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "*******************************************************
sdiag output at Wed Dec 02 17:00:00 2026 (1764694800)
Server thread count:  1
Remote Procedure Call statistics by message type
\tREQUEST_PARTITION_INFO                  ( 2009) count:3      ave_time:123    total_time:371
\tREQUEST_JOB_INFO                        ( 2003) count:5      ave_time:287    total_time:1435
\tMESSAGE_NODE_REGISTRATION_STATUS        ( 1002) count:4      ave_time:90     total_time:360
\tREQUEST_STATS_INFO                      ( 2035) count:1      ave_time:10     total_time:10

Remote Procedure Call statistics by user
\troot            (       0) count:13     ave_time:180    total_time:2176

Pending RPC statistics
\tNo pending RPCs
";

    #[test]
    fn reads_both_tables() {
        let c = parse_sdiag(SAMPLE);
        assert_eq!(c.by_type["REQUEST_JOB_INFO"], 5);
        assert_eq!(c.by_type["REQUEST_PARTITION_INFO"], 3);
        assert_eq!(c.by_user["root"], 13);
        assert!(!c.by_type.contains_key("No"));
    }

    #[test]
    fn counts_only_queries() {
        let before = parse_sdiag(SAMPLE);
        let after = parse_sdiag(&SAMPLE.replace("count:5 ", "count:7 ").replace("count:4 ", "count:9 "));
        assert_eq!(after.queries_since(&before), 2);
    }
}
