//! sbatch filename patterns (`%x-%j.out`), as 22.05 (and 25.05+ `standard_output`) print them.
//!
//! Follows sbatch(1) "filename pattern": `%%` `%A` `%a` `%J` `%j` `%N` `%n` `%s` `%t` `%u`
//! `%x`, an optional zero-padding width between `%` and the letter (`%4a` → `0007`), and a
//! pattern containing `\` is not expanded (the backslashes are removed). What is not known
//! (the node of a pending job) and unknown letters are left as written.

/// What a pattern may refer to. `Job` does not keep the numeric id of an array task, so the
/// fields are passed one by one.
#[derive(Debug, Clone, Copy, Default)]
pub struct PatternFields<'a> {
    /// The job's own id (an array task's own id for `%j`).
    pub job_id: u64,
    /// The array's id (`%A`); the job id when the job is not an array task.
    pub array_job_id: Option<u64>,
    /// The array task index (`%a`).
    pub array_task_id: Option<u32>,
    pub name: &'a str,
    pub user: &'a str,
    /// First allocated node (`%N`), once the job runs.
    pub first_node: Option<&'a str>,
}

/// Expand a Slurm output-file pattern for one job.
pub fn expand_stdout_pattern(pattern: &str, f: &PatternFields<'_>) -> String {
    if pattern.contains('\\') {
        return pattern.replace('\\', "");
    }
    if !pattern.contains('%') {
        return pattern.to_string();
    }
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut rest = pattern;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let width: usize = after[..digits].parse::<usize>().unwrap_or(0).min(64);
        let Some(letter) = after[digits..].chars().next() else {
            out.push_str(&rest[i..]);
            return out;
        };
        let consumed = 1 + digits + letter.len_utf8();
        let num = |n: u64| format!("{n:0width$}");
        let replacement: Option<String> = match letter {
            '%' if digits == 0 => Some("%".to_string()),
            'j' => Some(num(f.job_id)),
            'J' => Some(num(f.job_id)),
            'A' => Some(num(f.array_job_id.filter(|a| *a != 0).unwrap_or(f.job_id))),
            // Slurm writes NO_VAL for a job that is not an array task.
            'a' => Some(num(f.array_task_id.map_or(0xffff_fffe, u64::from))),
            's' => Some("batch".to_string()),
            't' | 'n' => Some(num(0)),
            'x' => Some(f.name.to_string()),
            'u' => Some(f.user.to_string()),
            'N' => f.first_node.map(|n| n.split('.').next().unwrap_or(n).to_string()),
            _ => None,
        };
        match replacement {
            Some(r) => out.push_str(&r),
            None => out.push_str(&rest[i..i + consumed]),
        }
        rest = &rest[i + consumed..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> PatternFields<'static> {
        PatternFields {
            job_id: 1234,
            array_job_id: Some(1200),
            array_task_id: Some(7),
            name: "train",
            user: "alice",
            first_node: Some("gpu01.cluster"),
        }
    }

    #[test]
    fn expands_every_letter() {
        let f = fields();
        assert_eq!(expand_stdout_pattern("%x-%j.out", &f), "train-1234.out");
        assert_eq!(expand_stdout_pattern("/home/%u/%A_%a.log", &f), "/home/alice/1200_7.log");
        assert_eq!(expand_stdout_pattern("%N.%%.%J", &f), "gpu01.%.1234");
        assert_eq!(expand_stdout_pattern("slurm-%4a-%06j", &f), "slurm-0007-001234");
        assert_eq!(expand_stdout_pattern("/plain/path.out", &f), "/plain/path.out");
    }

    #[test]
    fn non_array_jobs_and_unknowns() {
        let f = PatternFields { job_id: 5, name: "x", user: "u", ..PatternFields::default() };
        assert_eq!(expand_stdout_pattern("%A-%a", &f), "5-4294967294");
        assert_eq!(expand_stdout_pattern("%N-%j-%q-%", &f), "%N-5-%q-%");
        assert_eq!(expand_stdout_pattern("a\\%j", &f), "a%j");
        assert_eq!(expand_stdout_pattern("%é%99999999999999999999j", &f), "%é5");
    }
}
