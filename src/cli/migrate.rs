//! `flightdeck migrate REF... --to CLUSTER`: plan, show, and (with `--yes`) carry out moves
//! through the fleet ([`crate::fleet::migrate`] keeps the order that never loses a job);
//! `--resume` finishes the moves the audit log shows as interrupted.

use std::process::ExitCode;

use super::{Failure, act_on, audit_log, first_refresh, start_fleet};
use crate::config::Config;
use crate::fleet::migrate::{self, GpuChoice, MigrateOptions, MigrationPlan};
use crate::model::JobRef;
use crate::output;

pub struct MigrateRequest {
    pub jobs: Vec<JobRef>,
    pub to: Option<String>,
    pub dry_run: bool,
    pub yes: bool,
    pub running: bool,
    pub resume: bool,
    /// `--image IMAGE` or `--image none`.
    pub image: Option<String>,
    /// `--gpu-type MODEL` or `--gpu-type any`.
    pub gpu_type: Option<GpuChoice>,
}

pub async fn migrate(config: &Config, read_only: bool, ask: MigrateRequest) -> Result<ExitCode, Failure> {
    // Every cluster, polling: the plan needs the sources' and the target's listings, and
    // the check that no job anywhere already carries a source as its origin.
    let fleet = start_fleet(config, read_only, &[], true).await?;
    let (_, stale) = first_refresh(config, &fleet).await;
    if ask.resume {
        // Only the migrations' records are kept, read one line at a time.
        let mut records = Vec::new();
        let unreadable = audit_log()
            .read_each(|r| {
                if r.action == crate::model::Verb::Migrate.as_str() {
                    records.push(r)
                }
            })
            .map_err(|e| Failure(format!("cannot read the audit log: {e}")))?;
        for u in &unreadable {
            eprintln!("{}", output::printable(&format!("flightdeck: {u}")));
        }
        let open = migrate::unfinished(&records);
        let older = migrate::without_id(&records);
        for (source, to) in &older {
            eprintln!(
                "{}",
                output::printable(&format!(
                    "flightdeck: {source} → {to}: recorded by an older flightdeck without an id, so it cannot be \
                     resumed; if {to} lists a job whose origin is {source}, cancel {source} yourself, else migrate it again"
                ))
            );
        }
        if open.is_empty() && !older.is_empty() {
            return Err(Failure(format!(
                "{} interrupted migration(s) from an older flightdeck left to finish by hand",
                older.len()
            )));
        }
        if open.is_empty() {
            println!("no interrupted migrations in the audit log");
            return Ok(ExitCode::SUCCESS);
        }
        for u in &open {
            let at = u
                .submitted
                .as_ref()
                .map_or_else(|| "not known to be submitted".to_string(), |r| format!("submitted as {r}"));
            // Read back from the audit log: refs and cluster names as the fleet once listed them.
            eprintln!("{}", output::printable(&format!("flightdeck: resuming {} → {} ({at})", u.source, u.to)));
        }
        return act_on(&fleet, open.iter().map(migrate::Unfinished::action).collect()).await;
    }
    let Some(to) = ask.to else { return Err(Failure("--to CLUSTER is required".into())) };
    let image = ask.image.map(|i| Some(i).filter(|i| i != "none"));
    let plan = fleet
        .plan_migration(&ask.jobs, &to, &MigrateOptions { running: ask.running, image, gpu_type: ask.gpu_type })
        .await;
    print_plan(&plan, ask.dry_run);
    let actions = plan.actions();
    let refused = plan.refused();
    if ask.dry_run {
        return Ok(if refused > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS });
    }
    if actions.is_empty() {
        return Err(Failure(format!("nothing to migrate: {refused} of {} refused", plan.moves.len())));
    }
    if !ask.yes {
        let noun = if actions.len() == 1 { "job" } else { "jobs" };
        return Err(Failure(format!(
            "this moves {} {noun} to {to}: each is submitted there, then cancelled where it is; add --yes to do it",
            actions.len()
        )));
    }
    let code = act_on(&fleet, actions).await?;
    Ok(if refused > 0 || stale { ExitCode::FAILURE } else { code })
}

/// The plan as text: one head line per job, its warnings, and with `native` the target's
/// own form of it.
fn print_plan(plan: &MigrationPlan, native: bool) {
    for m in &plan.moves {
        match &m.refused {
            Some(why) => {
                eprintln!("{}", output::printable(&format!("flightdeck: {} → {}: refused: {why}", m.source, m.to)))
            }
            None => println!("{}", output::printable(&format!("{} ({}) → {}", m.source, m.source_state, m.to))),
        }
        if let Some(a) = &m.advice {
            println!("  placement: {} ({})", a.verdict, output::printable(&a.reason));
        }
        for w in &m.warnings {
            println!("  warning: {}", output::printable(w));
        }
        if let (true, Some(n)) = (native, &m.native) {
            println!("  {}:", n.dialect.title());
            for line in n.text.lines() {
                println!("    {}", output::printable(line));
            }
        }
    }
}
