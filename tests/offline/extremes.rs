//! Whole snapshots with extreme counts, as a broken or hostile backend might report them
//! (`gpu:4294967295` on two nodes of one partition, a job asking for u32::MAX GPUs), through
//! everything that adds them up: queues, the fleet's GPU totals, the CLI's summary and the
//! cockpit's row cache and screens. Nothing panics, nothing wraps around.

use std::sync::Arc;

use flightdeck::model::gpu_totals::gpu_totals;
use flightdeck::model::{ClusterState, FleetState, GpuSlot, Health, Job, JobRef, JobState, Node, NodeState, Snapshot};
use flightdeck::tui::keymap::Keymap;
use flightdeck::tui::theme::{ColorDepth, Theme};
use flightdeck::tui::{App, Msg, TuiOptions, views};
use proptest::prelude::*;

fn count() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(1), Just(u32::MAX), Just(u32::MAX - 1), any::<u32>()]
}

fn node_strategy() -> impl Strategy<Value = Node> {
    (0u8..4, count(), count(), count(), 0usize..3, any::<bool>()).prop_map(
        |(i, total, allocated, unhealthy, model, drained)| {
            let mut n = Node::new("x", format!("n{i}"), if drained { NodeState::Drained } else { NodeState::Mixed });
            let model = ["a100", "h100", "1g.10gb"][model];
            n.gpus = vec![GpuSlot {
                model: model.into(),
                gpu_product: None,
                shared: false,
                total,
                allocated,
                unhealthy,
                utilisation: None,
            }];
            n.partitions = vec!["gpu".into()];
            n
        },
    )
}

fn job_strategy() -> impl Strategy<Value = Job> {
    (0u32..1000, count(), count(), any::<bool>()).prop_map(|(id, requested, allocated, running)| {
        let mut j =
            Job::new(JobRef::new("x", id.to_string()), if running { JobState::Running } else { JobState::Pending });
        j.partition = "gpu".into();
        j.gpus_requested = requested;
        j.gpus_allocated = allocated;
        j.gpu_model = Some("h100".into());
        j.node_count = requested;
        j.cpus = allocated;
        j
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn extreme_counts_saturate_everywhere(nodes in prop::collection::vec(node_strategy(), 0..6), jobs in prop::collection::vec(job_strategy(), 0..6)) {
        let mut snap = Snapshot { cluster: "x".into(), nodes: nodes.clone(), jobs, ..Snapshot::default() };
        snap.derive_queues();
        let wanted: u64 = nodes.iter().map(|n| u64::from(n.gpus[0].total)).sum();
        for q in &snap.queues {
            prop_assert_eq!(u64::from(q.gpus_total), wanted.min(u64::from(u32::MAX)), "saturated, not wrapped");
        }
        // The fleet totals count in u64: exact, whatever each node claims.
        for t in gpu_totals([&snap]) {
            let exact: u64 = nodes.iter().filter(|n| n.gpus[0].model == t.model).map(|n| u64::from(n.gpus[0].total)).sum();
            prop_assert_eq!(t.total, exact, "{}", t.model);
        }
        let state = Arc::new(FleetState {
            clusters: vec![ClusterState {
                health: Health::Connecting,
                snapshot: Some(Arc::new(snap)),
                ..ClusterState::new("x", "slurm")
            }],
            ..FleetState::default()
        });
        let _ = flightdeck::output::summary(&state);
        let mut app = App::new(TuiOptions {
            keymap: Keymap::builtin("default").unwrap(),
            theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
            read_only: false,
            user: "alice".into(),
            config_label: "test".into(),
            no_clusters: Vec::new(),
        });
        app.update(Msg::Fleet(state));
        for screen in ['1', '2', '3', '4'] {
            app.update(Msg::Key(ratatui::crossterm::event::KeyEvent::from(ratatui::crossterm::event::KeyCode::Char(screen))));
            app.update(Msg::Resize(120, 40));
            let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
            terminal.draw(|f| views::render(&app, f)).unwrap();
        }
    }
}
