//! Usages of separate sets of clusters as one: a hub computes its clusters' part (its rows
//! maybe a viewer's own), the fleet computes the rest, and the parts are added key by key.
//! A figure stays "not known" where any part could not say it.

use std::collections::HashMap;

use super::{ModelCount, Usage, UsageBy, UsageRow};
use crate::columns::natural::natural_cmp;

/// `parts`, each over clusters no other part counts, as one usage by `by`: rows of one key
/// added, the totals added, what each could not say kept, most held first as `compute`
/// orders them. Rows restricted to one user in any part (`rows_of`) restrict the whole.
pub fn merge(by: UsageBy, parts: Vec<Usage>) -> Usage {
    let mut merged = Usage { by, ..Usage::default() };
    let mut rows: Vec<UsageRow> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut first = true;
    for part in parts {
        merged.now = merged.now.max(part.now);
        merged.since = merged.since.or(part.since);
        merged.total = if first { part.total } else { add(&merged.total, &part.total) };
        first = false;
        for row in part.rows {
            match at.get(&row.key) {
                Some(&i) => rows[i] = add(&rows[i], &row),
                None => {
                    at.insert(row.key.clone(), rows.len());
                    rows.push(row);
                }
            }
        }
        merged.not_known.extend(part.not_known);
        merged.fair_share.extend(part.fair_share);
        merged.queue_quota.extend(part.queue_quota);
        merged.rows_of = merged.rows_of.or(part.rows_of);
    }
    if let Some(user) = merged.rows_of.as_deref().filter(|_| by == UsageBy::User) {
        // A part computed here counts every user: by user, only the restricted one's row.
        rows.retain(|r| r.key == user);
    }
    rows.sort_by(|a, b| {
        b.gpus_now
            .cmp(&a.gpus_now)
            .then_with(|| b.gpu_hours.unwrap_or(0.0).total_cmp(&a.gpu_hours.unwrap_or(0.0)))
            .then_with(|| natural_cmp(&a.key, &b.key))
    });
    merged.rows = rows;
    merged
}

/// Two rows of one key added: $/h only where every part that holds GPUs priced them.
fn add(a: &UsageRow, b: &UsageRow) -> UsageRow {
    let cost = match (a.gpus_now, b.gpus_now) {
        (0, 0) => None,
        (0, _) => b.cost_per_hour,
        (_, 0) => a.cost_per_hour,
        _ => a.cost_per_hour.zip(b.cost_per_hour).map(|(x, y)| x + y),
    };
    let sum = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0.0) + y.unwrap_or(0.0)),
    };
    let mut models = a.models.clone();
    for m in &b.models {
        match models.iter_mut().find(|n| n.model == m.model) {
            Some(n) => n.gpus = n.gpus.saturating_add(m.gpus),
            None => models.push(m.clone()),
        }
    }
    models.sort_by(|x: &ModelCount, y| y.gpus.cmp(&x.gpus).then_with(|| natural_cmp(&x.model, &y.model)));
    UsageRow {
        key: a.key.clone(),
        jobs_now: a.jobs_now.saturating_add(b.jobs_now),
        gpus_now: a.gpus_now.saturating_add(b.gpus_now),
        idle_gpus_now: a.idle_gpus_now.saturating_add(b.idle_gpus_now),
        unmeasured_gpus_now: a.unmeasured_gpus_now.saturating_add(b.unmeasured_gpus_now),
        cost_per_hour: cost,
        models,
        gpu_hours: sum(a.gpu_hours, b.gpu_hours),
        gpu_hours_complete: a.gpu_hours_complete && b.gpu_hours_complete,
        idle_gpu_hours_at_least: sum(a.idle_gpu_hours_at_least, b.idle_gpu_hours_at_least),
        // What one part knows is at least the whole's; complete only where both are.
        cost_window: sum(a.cost_window, b.cost_window),
        cost_window_complete: a.cost_window_complete && b.cost_window_complete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, gpus: u32, cost: Option<f64>, hours: f64, complete: bool, model: &str) -> UsageRow {
        UsageRow {
            key: key.into(),
            jobs_now: u32::from(gpus > 0),
            gpus_now: gpus,
            cost_per_hour: cost,
            models: if gpus > 0 { vec![ModelCount { model: model.into(), gpus }] } else { vec![] },
            gpu_hours: Some(hours),
            gpu_hours_complete: complete,
            idle_gpu_hours_at_least: Some(0.0),
            ..UsageRow::default()
        }
    }

    fn part(rows: Vec<UsageRow>, total: UsageRow, not_known: &[&str]) -> Usage {
        Usage { rows, total, not_known: not_known.iter().map(|n| n.to_string()).collect(), ..Usage::default() }
    }

    #[test]
    fn parts_add_key_by_key_and_a_price_or_a_complete_sum_needs_every_part() {
        let hub = part(
            vec![row("alice", 4, Some(2.0), 10.0, true, "h100"), row("bob", 0, None, 3.0, true, "h100")],
            row("total", 4, Some(2.0), 13.0, true, "h100"),
            &[],
        );
        let here = part(
            vec![row("alice", 2, None, 1.0, false, "a100"), row("carol", 8, Some(1.0), 0.5, false, "h100")],
            row("total", 10, None, 1.5, false, "h100"),
            &["lab: no finished jobs were read"],
        );
        let u = merge(UsageBy::User, vec![hub, here]);
        let keys: Vec<(&str, u32)> = u.rows.iter().map(|r| (r.key.as_str(), r.gpus_now)).collect();
        assert_eq!(keys, vec![("carol", 8), ("alice", 6), ("bob", 0)]);
        let alice = &u.rows[1];
        assert_eq!(alice.cost_per_hour, None, "the part computed here has no price for alice's GPUs");
        assert_eq!((alice.gpu_hours, alice.gpu_hours_complete), (Some(11.0), false));
        assert_eq!(
            alice.models,
            vec![ModelCount { model: "h100".into(), gpus: 4 }, ModelCount { model: "a100".into(), gpus: 2 }]
        );
        assert_eq!(u.rows[2].cost_per_hour, None, "holds nothing: no price");
        assert_eq!((u.total.gpus_now, u.total.gpu_hours, u.total.gpu_hours_complete), (14, Some(14.5), false));
        assert_eq!(u.not_known, vec!["lab: no finished jobs were read"]);
        // Priced in every part that holds GPUs: summed.
        let priced = merge(
            UsageBy::User,
            vec![
                part(
                    vec![row("dave", 1, Some(0.5), 0.0, true, "l4")],
                    row("total", 1, Some(0.5), 0.0, true, "l4"),
                    &[],
                ),
                part(
                    vec![row("dave", 2, Some(1.0), 0.0, true, "l4")],
                    row("total", 2, Some(1.0), 0.0, true, "l4"),
                    &[],
                ),
            ],
        );
        assert_eq!((priced.rows[0].cost_per_hour, priced.total.cost_per_hour), (Some(1.5), Some(1.5)));
    }

    #[test]
    fn the_windows_dollars_add_and_a_part_that_cannot_price_makes_them_a_lower_bound() {
        let spent = |key: &str, cost: Option<f64>, complete| UsageRow {
            cost_window: cost,
            cost_window_complete: complete,
            ..row(key, 0, None, 1.0, true, "h100")
        };
        let sky = part(vec![spent("erin", Some(5.0), true)], spent("total", Some(5.0), true), &[]);
        let dstack = part(vec![spent("erin", Some(2.5), true)], spent("total", Some(2.5), true), &[]);
        let slurm = part(vec![spent("erin", None, false)], spent("total", None, false), &[]);
        let both = merge(UsageBy::User, vec![sky.clone(), dstack]);
        assert_eq!((both.rows[0].cost_window, both.rows[0].cost_window_complete), (Some(7.5), true));
        let mixed = merge(UsageBy::User, vec![sky, slurm.clone()]);
        assert_eq!((mixed.rows[0].cost_window, mixed.rows[0].cost_window_complete), (Some(5.0), false));
        assert!(!mixed.total.cost_window_complete);
        let none = merge(UsageBy::User, vec![slurm.clone(), slurm]);
        assert_eq!(none.rows[0].cost_window, None, "no part priced it: not known, not $0");
    }

    #[test]
    fn a_part_of_one_users_rows_keeps_the_whole_to_that_users_row_with_the_true_total() {
        let mut hub = part(vec![row("bob", 2, None, 1.0, true, "h100")], row("total", 9, None, 7.0, true, "h100"), &[]);
        hub.rows_of = Some("bob".into());
        let here = part(
            vec![row("alice", 3, None, 0.0, true, "h100"), row("bob", 1, None, 0.0, true, "h100")],
            row("total", 4, None, 0.0, true, "h100"),
            &[],
        );
        let u = merge(UsageBy::User, vec![hub, here]);
        assert_eq!(u.rows.iter().map(|r| (r.key.as_str(), r.gpus_now)).collect::<Vec<_>>(), vec![("bob", 3)]);
        assert_eq!((u.total.gpus_now, u.rows_of.as_deref()), (13, Some("bob")));
    }
}
