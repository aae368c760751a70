//! A usage read (`rpc Usage`): the question as fields, the answer as the JSON of `Usage`
//! (what `flightdeck usage --output json` prints), read back leniently.

use super::{pb, time_from_ns, time_to_ns};
use crate::model::usage::{Usage, UsageBy, UsageQuery};

pub fn usage_request_to_pb(cluster: &str, q: &UsageQuery) -> pb::UsageRequest {
    pb::UsageRequest {
        cluster: cluster.to_string(),
        by: q.by.as_str().to_string(),
        since_ns: q.since.map(time_to_ns),
        until_ns: q.until.map(time_to_ns),
    }
}

/// The cluster and the question, or why the request cannot be answered.
pub fn usage_request_from_pb(r: &pb::UsageRequest) -> Result<(String, UsageQuery), String> {
    let by = UsageBy::from_name(&r.by).ok_or_else(|| {
        let names: Vec<&str> = UsageBy::ALL.iter().map(|b| b.as_str()).collect();
        format!("usage by {:?}: rows are by one of {}", r.by, names.join(", "))
    })?;
    let q = UsageQuery { by, since: r.since_ns.map(time_from_ns), until: r.until_ns.map(time_from_ns) };
    if let (Some(since), Some(until)) = (q.since, q.until)
        && until <= since
    {
        return Err(format!("the window ends ({until}) before it starts ({since})"));
    }
    Ok((r.cluster.clone(), q))
}

pub fn usage_to_pb(u: &Usage) -> pb::UsageReply {
    pb::UsageReply { usage_json: serde_json::to_string(u).unwrap_or_default() }
}

pub fn usage_from_pb(r: &pb::UsageReply) -> Result<Usage, String> {
    serde_json::from_str(&r.usage_json).map_err(|e| format!("the hub's usage cannot be read: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_crosses_and_a_bad_one_is_refused_in_words() {
        let since = time_from_ns(1_700_000_000_000_000_000);
        let q = UsageQuery { by: UsageBy::Account, since: Some(since), until: None };
        let r = usage_request_to_pb("fd22", &q);
        assert_eq!(usage_request_from_pb(&r), Ok(("fd22".to_string(), q)));
        let bad = pb::UsageRequest { by: "team".into(), ..r.clone() };
        assert!(usage_request_from_pb(&bad).unwrap_err().contains("user, account, cluster, model"));
        let backwards = pb::UsageRequest { until_ns: Some(1), ..r };
        assert!(usage_request_from_pb(&backwards).unwrap_err().contains("before it starts"));
        let u = Usage { by: UsageBy::Model, rows_of: Some("bob".into()), ..Usage::default() };
        assert_eq!(usage_from_pb(&usage_to_pb(&u)), Ok(u));
        assert!(usage_from_pb(&pb::UsageReply { usage_json: "{".into() }).is_err());
    }
}
