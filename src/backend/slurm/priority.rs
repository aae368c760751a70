//! Why a job waits on priority, asked for that one job on demand (`flightdeck why`), never
//! per refresh: its priority's parts (`sprio -j`) and its user's fair share (`sshare -u`).
//! Both need `PriorityType=priority/multifactor`; under `priority/basic` (first come, first
//! served) sprio refuses, and the answer says so instead.

use super::SlurmBackend;
use super::commands::{checked_job_id, checked_user};
use crate::backend::BackendError;
use crate::backend::exec::command_error;
use crate::model::Job;

/// `sprio -h -j ID -o …`: id, priority, then its age, fair-share, job-size, partition and
/// QOS parts.
pub fn sprio_argv(job_id: &str) -> Result<Vec<String>, BackendError> {
    let id = checked_job_id(job_id)?;
    Ok(["sprio", "-h", "-j", &id, "-o", "%i|%Y|%A|%F|%J|%P|%Q"].iter().map(|s| s.to_string()).collect())
}

/// `sshare -h -P -u USER -o …`: the user's share and use of the cluster, by account.
pub fn sshare_argv(user: &str) -> Result<Vec<String>, BackendError> {
    let user = checked_user(user)?;
    Ok(["sshare", "-h", "-P", "-u", user, "-o", "Account,User,RawShares,NormShares,EffectvUsage,FairShare"]
        .iter()
        .map(|s| s.to_string())
        .collect())
}

/// `priority 1100 = age 100 + fair-share 1000` from sprio's line (the parts that are not 0).
pub fn parse_sprio(output: &str) -> Option<String> {
    let line = output.lines().find(|l| l.contains('|'))?;
    let f: Vec<&str> = line.split('|').map(str::trim).collect();
    let [_, total, rest @ ..] = f.as_slice() else { return None };
    let total: f64 = total.parse().ok()?;
    let names = ["age", "fair-share", "job size", "partition", "QOS"];
    let parts: Vec<String> = names
        .iter()
        .zip(rest)
        .filter_map(|(name, v)| v.parse::<f64>().ok().filter(|v| *v != 0.0).map(|v| format!("{name} {}", figure(v))))
        .collect();
    let sum = if parts.is_empty() { "no weighted part yet".to_string() } else { parts.join(" + ") };
    Some(format!("its priority {} = {sum} (sprio)", figure(total)))
}

/// The user's fair share from sshare's lines (the row naming the user in each account).
pub fn parse_sshare(output: &str, user: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('|').map(str::trim).collect();
            let [account, who, _raw, norm, usage, fairshare, ..] = f.as_slice() else { return None };
            (*who == user).then(|| {
                format!(
                    "{user}'s fair share in account {account} is {fairshare} (1 = unused share, 0 = used up): it has used \
                     {usage} of the cluster against a share of {norm} (sshare)"
                )
            })
        })
        .collect()
}

/// Whole numbers without a fraction, others to two places.
fn figure(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// The lines `why` adds for a job waiting on priority; a refusal of sprio (priority/basic)
/// becomes a line saying so, other failures are errors.
pub(super) async fn explain(backend: &SlurmBackend, job: &Job) -> Result<Vec<String>, BackendError> {
    let mut lines = Vec::new();
    let argv = sprio_argv(&job.job_ref.id)?;
    let out = backend.transport.output(&argv, None, backend.timeout).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    match parse_sprio(&text) {
        Some(line) => lines.push(line),
        None if out.stderr.contains("priority/basic") || out.stderr.contains("not running a supported priority") => {
            lines.push("jobs start in the order they came (PriorityType=priority/basic): no priority parts".into());
            return Ok(lines);
        }
        None if !out.success() => return Err(command_error(&argv, out.status, &out.stderr, &out.stdout)),
        None => {}
    }
    if !job.user.is_empty() {
        let argv = sshare_argv(&job.user)?;
        let out = backend.transport.output(&argv, None, backend.timeout).await?.into_result(&argv)?;
        lines.extend(parse_sshare(&String::from_utf8_lossy(&out.stdout), &job.user));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sprio_and_sshare_lines_in_words() {
        assert_eq!(
            parse_sprio("     25|      1100|       100|      1000|         0|         0|         0\n").as_deref(),
            Some("its priority 1100 = age 100 + fair-share 1000 (sprio)")
        );
        assert_eq!(parse_sprio("7|1|0|0|0|0|0").as_deref(), Some("its priority 1 = no weighted part yet (sprio)"));
        assert_eq!(parse_sprio("sprio: error: nothing\n"), None);
        let share = "root||1|1.000000|1.000000|\nroot|root|1|1.000000|0.250000|0.500000\nml|alice|1|0.5|0.1|0.9\n";
        assert_eq!(
            parse_sshare(share, "root"),
            ["root's fair share in account root is 0.500000 (1 = unused share, 0 = used up): it has used 0.250000 of \
              the cluster against a share of 1.000000 (sshare)"]
        );
        assert!(parse_sshare(share, "bob").is_empty());
        assert!(sprio_argv("12; rm").is_err() && sshare_argv("-x").is_err() && sshare_argv("a b").is_err());
        assert_eq!(sprio_argv("12_3").unwrap()[3], "12_3");
    }
}
