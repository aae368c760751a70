//! A Kubernetes scheduler message (`0/12 nodes are available: 8 Insufficient nvidia.com/gpu,
//! 4 node(s) had untolerated taint {…}. preemption: …`), read once into its counts: `why`
//! gives a line per reason, the overview's "waiting" line a short phrase that groups pods
//! waiting for the same reasons.

use std::borrow::Cow;

use crate::model::words::{counted, verb};

/// The message's parts: nodes that could take the pod, nodes in all, and each reason with
/// its count of nodes (`None` where the scheduler gave no count).
struct Message<'a> {
    free: u32,
    total: u32,
    reasons: Vec<(Option<u32>, &'a str)>,
}

fn parse(message: &str) -> Option<Message<'_>> {
    let (head, rest) = message.split_once(" nodes are available: ")?;
    let (free, total) = head.rsplit(' ').next()?.split_once('/')?;
    let total: u32 = total.parse().ok()?;
    let free: u32 = free.parse().ok()?;
    // Reasons end at the first ". " (the preemption clause follows); taints hold braces
    // with commas inside, so commas count only outside them.
    let reasons = rest.split(". ").next().unwrap_or(rest).trim_end_matches('.');
    let mut depth = 0i32;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in reasons.char_indices() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&reasons[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&reasons[start..]);
    let reasons = parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(|part| match part.split_once(' ').map(|(n, what)| (n.parse::<u32>(), what)) {
            Some((Ok(n), what)) => (Some(n), what.trim_start_matches("node(s) ")),
            _ => (None, part),
        })
        .collect();
    Some(Message { free, total, reasons })
}

/// The message as one line per reason with its count; `None` where it is no scheduler message.
pub(super) fn scheduling_counts(message: &str) -> Option<Vec<String>> {
    let m = parse(message)?;
    let mut lines = vec![format!("{} of {} can take it", m.free, counted(m.total, "node", "nodes"))];
    for (count, what) in m.reasons {
        lines.push(match count {
            Some(n) => format!("{}: {what}", counted(n, "node", "nodes")),
            None => what.to_string(),
        });
    }
    Some(lines)
}

/// A waiting job's reason as the overview groups it: a scheduler message in words (`no node
/// fits (4 short of nvidia.com/gpu, 1 cordoned)`), the backend's `REASON: ` before it
/// dropped; every other reason as it is.
pub fn waiting_words(reason: &str) -> Cow<'_, str> {
    let Some(m) = parse(reason) else { return Cow::Borrowed(reason) };
    let head = match m.free {
        0 => "no node fits".to_string(),
        n => format!("{n} of {} {}", counted(m.total, "node", "nodes"), verb(n as usize, "fits", "fit")),
    };
    let parts: Vec<String> = m
        .reasons
        .iter()
        .map(|(count, what)| {
            let what = short(what);
            match count {
                Some(n) => format!("{n} {what}"),
                None => what.into_owned(),
            }
        })
        .collect();
    if parts.is_empty() { Cow::Owned(head) } else { Cow::Owned(format!("{head} ({})", parts.join(", "))) }
}

/// The scheduler's phrase for a node it passed over, shortened: `Insufficient X` → `short
/// of X`, `were unschedulable` → `cordoned`.
fn short(what: &str) -> Cow<'_, str> {
    if let Some(resource) = what.strip_prefix("Insufficient ") {
        return Cow::Owned(format!("short of {resource}"));
    }
    match what {
        "were unschedulable" => Cow::Borrowed("cordoned"),
        "didn't match Pod's node affinity/selector" => Cow::Borrowed("outside its node selector"),
        _ => Cow::Borrowed(what.strip_prefix("had ").unwrap_or(what)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overview_groups_a_scheduler_message_in_words() {
        assert_eq!(
            waiting_words(
                "Unschedulable: 0/5 nodes are available: 1 node(s) were unschedulable, 4 Insufficient nvidia.com/gpu"
            ),
            "no node fits (1 cordoned, 4 short of nvidia.com/gpu)"
        );
        assert_eq!(
            waiting_words(
                "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: bad, team: a}, 2 node(s) didn't match \
                 Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 No preemption victims found."
            ),
            "no node fits (1 untolerated taint {gpu: bad, team: a}, 2 outside its node selector)"
        );
        assert_eq!(waiting_words("1/1 nodes are available: 1 Insufficient cpu"), "1 of 1 node fits (1 short of cpu)");
        // Anything else is left as the backend said it.
        assert_eq!(waiting_words("Priority"), "Priority");
        assert_eq!(waiting_words("Kueue Pending: quota"), "Kueue Pending: quota");
    }
}
