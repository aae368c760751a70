//! One Slurm command for many jobs: `scancel --verbose ID ID …` and
//! `scontrol hold|release|requeue ID,ID,…`, chunked so that no command line grows past what
//! a login node's shell takes, and their output read back into one result per job.
//!
//! Both commands go on past a bad id and name it (checked on Slurm 22.05 and 24.11 on the
//! test bed): scancel prints `scancel: error: Kill job error on job id 41: Invalid job id
//! specified` (with `--verbose`; without it 22.05 says nothing and exits 0), scontrol prints
//! `Invalid job id specified for job 41` or `Job is pending execution for job 41` and exits 1.
//! A job no line names was done.

use super::commands::checked_job_id;
use crate::backend::BackendError;
use crate::model::JobAction;

/// Ids per command: 200 ids of up to 20 characters stay far below every ARG_MAX and
/// sshd's command-line limits, and one chunk is one controller RPC burst, not a flood.
pub const CHUNK: usize = 200;

/// One command of a batch and the job ids it covers, in order.
pub type Chunk = (Vec<String>, Vec<String>);

/// The commands that carry out `action` on `ids`, each with the ids it covers, in order.
/// An id that could become an option or a second word is refused before any command runs.
pub fn commands(action: JobAction, ids: &[&str]) -> Result<Vec<Chunk>, BackendError> {
    let checked: Vec<String> = ids.iter().map(|id| checked_job_id(id)).collect::<Result<_, _>>()?;
    let verb = match action {
        JobAction::Cancel => None,
        JobAction::Hold => Some("hold"),
        JobAction::Release => Some("release"),
        JobAction::Requeue => Some("requeue"),
        JobAction::Delete => {
            return Err(BackendError::Unsupported(
                "Slurm keeps no job records to delete: a finished job leaves the queue by itself".into(),
            ));
        }
    };
    Ok(checked
        .chunks(CHUNK)
        .map(|chunk| {
            let argv = match verb {
                None => ["scancel", "--verbose"].iter().map(|s| s.to_string()).chain(chunk.iter().cloned()).collect(),
                Some(verb) => vec!["scontrol".to_string(), verb.to_string(), chunk.join(",")],
            };
            (argv, chunk.to_vec())
        })
        .collect())
}

/// One result per id of a finished batch command: an error where a line names the id, done
/// otherwise. When the command failed and no line names any id, every id failed with
/// `whole` (the command's own error), since nothing says which were done.
pub fn results(ids: &[String], output: &str, failed: bool, whole: &str) -> Vec<Result<(), String>> {
    let mut errors: std::collections::HashMap<&str, String> = std::collections::HashMap::new();
    for line in output.lines() {
        if let Some((id, message)) = named_failure(line) {
            errors.entry(id).or_insert(message);
        }
    }
    if failed && errors.is_empty() {
        return ids.iter().map(|_| Err(whole.to_string())).collect();
    }
    ids.iter().map(|id| errors.get(id.as_str()).map_or(Ok(()), |m| Err(m.clone()))).collect()
}

/// `(id, why)` from a line that names one job's failure.
fn named_failure(line: &str) -> Option<(&str, String)> {
    let line = line.trim();
    // scancel: error: Kill job error on job id 41: Invalid job id specified
    if let Some(rest) = line.split_once("error on job id ").map(|(_, r)| r) {
        let (id, why) = rest.split_once(':')?;
        return Some((id.trim(), why.trim().to_string()));
    }
    // Invalid job id specified for job 41 / Job is pending execution for job 41
    let (why, id) = line.rsplit_once(" for job ")?;
    let id = id.trim();
    (!id.is_empty() && !id.contains(char::is_whitespace)).then(|| (id, why.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lists_are_chunked_and_each_chunk_is_one_command() {
        let ids: Vec<String> = (1..=450).map(|i| i.to_string()).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let cancel = commands(JobAction::Cancel, &refs).unwrap();
        assert_eq!(cancel.iter().map(|(_, ids)| ids.len()).collect::<Vec<_>>(), [200, 200, 50]);
        assert_eq!(cancel[0].0[..3], ["scancel", "--verbose", "1"]);
        assert_eq!(cancel[2].0.len(), 52);
        let hold = commands(JobAction::Hold, &refs[..3]).unwrap();
        assert_eq!(
            hold,
            vec![(
                vec!["scontrol".to_string(), "hold".into(), "1,2,3".into()],
                vec!["1".into(), "2".into(), "3".into()]
            )]
        );
    }

    #[test]
    fn an_id_that_could_be_an_option_stops_the_whole_batch_before_it_runs() {
        assert!(commands(JobAction::Cancel, &["12", "--signal=KILL"]).is_err());
        assert!(commands(JobAction::Requeue, &["12", "13,14"]).is_err());
        assert!(commands(JobAction::Delete, &["12"]).is_err());
    }

    #[test]
    fn results_name_the_ids_slurm_names() {
        let ids: Vec<String> = ["40", "41", "42_3", "43"].iter().map(|s| s.to_string()).collect();
        // scancel --verbose on 22.05 and 24.11: exit 0, the bad id on stderr.
        let scancel = "scancel: Terminating job 40\nscancel: Terminating job 41\n\
                       scancel: error: Kill job error on job id 41: Invalid job id specified\n";
        assert_eq!(
            results(&ids, scancel, false, "x"),
            vec![Ok(()), Err("Invalid job id specified".to_string()), Ok(()), Ok(())]
        );
        // scontrol: exit 1, one line per bad id, a summary line naming none.
        let scontrol = "Job is pending execution for job 42_3\nInvalid job id specified for job 43\n\
                        slurm_suspend error: Invalid job id specified\n";
        assert_eq!(
            results(&ids, scontrol, true, "x"),
            vec![
                Ok(()),
                Ok(()),
                Err("Job is pending execution".to_string()),
                Err("Invalid job id specified".to_string())
            ]
        );
        // Failed, and nothing says which: none is claimed done.
        let all = results(&ids, "scontrol: error: Unable to contact slurm controller", true, "`scontrol hold` failed");
        assert!(all.iter().all(|r| r.as_ref().unwrap_err() == "`scontrol hold` failed"));
    }
}
