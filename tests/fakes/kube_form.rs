//! The cockpit's submit form over the Kubernetes fake (issue #31's "the cockpit's form
//! submits it to the fake"): the form is built from what the real backend says of its fields
//! (`nodes` and `tasks/node` offered), typed into through `App::update`, its preview and its
//! submit carried out by a real fleet over the real kube client, and what arrives at the
//! fake is a JobSet of 2 pods × 8 GPUs with torch's rendezvous in their env.

use crate::kube_fake;

use std::sync::Arc;
use std::time::Duration;

use flightdeck::backend::Backend;
use flightdeck::backend::kube::{KubeBackend, KubeConfig};
use flightdeck::config::ClusterConfig;
use flightdeck::fleet::{Action, Fleet, FleetOptions, Member};
use flightdeck::model::Need;
use flightdeck::tui::app::form::Field;
use flightdeck::tui::keymap::Keymap;
use flightdeck::tui::theme::{ColorDepth, Theme};
use flightdeck::tui::{App, Command, Msg, Screen, TuiOptions};
use kube_fake::{FakeApi, workloads};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

fn key(app: &mut App, code: KeyCode) -> Vec<Command> {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(app: &mut App, text: &str) -> Vec<Command> {
    text.chars().flat_map(|c| key(app, KeyCode::Char(c))).collect()
}

/// Tab to `field`, then type `text` into it: the commands the last key asked for.
fn fill(app: &mut App, field: Field, text: &str) -> Vec<Command> {
    for _ in 0..32 {
        if app.form().focused() == field {
            return typed(app, text);
        }
        key(app, KeyCode::Tab);
    }
    panic!("no field {field:?} in the form");
}

#[tokio::test]
async fn the_submit_form_sends_a_two_node_spec_to_the_fake_as_a_jobset() {
    let fake = FakeApi::start().await;
    workloads::serve_crds(&fake);
    fake.put_all(workloads::cluster());
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ClusterConfig::new("k8s", KubeConfig::context_of(fake.kubeconfig(dir.path(), "fake"), "fake"))
        .with_timeout(Duration::from_secs(5))
        .with_refresh(Duration::from_millis(200));
    cfg.settings.namespaces = vec!["ml".into()];
    let backend: Arc<dyn Backend> = Arc::new(KubeBackend::new(&cfg));
    let member = Member {
        backend,
        kind: "kubernetes".into(),
        refresh: Duration::from_millis(200),
        timeout: Duration::from_secs(5),
    };
    let fleet = Fleet::start(
        vec![member],
        FleetOptions { read_only: false, poll: true, audit: None, actor: "alice@test".into() },
    );
    let state = fleet.wait_for(Duration::from_secs(20), |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
    let k8s = state.cluster("k8s").expect("the cluster");
    assert!(k8s.snapshot.is_some(), "the fake never answered: {:?}", k8s.health);
    // What the form offers comes from the backend: several nodes, as the kind it becomes.
    assert_eq!(k8s.shape_fields.nodes.need, Need::Optional);
    assert!(k8s.shape_fields.nodes.hint.contains("JobSet"), "{:?}", k8s.shape_fields.nodes);
    assert_eq!(k8s.shape_fields.tasks_per_node.need, Need::Optional);

    let mut app = App::new(TuiOptions {
        keymap: Keymap::builtin("default").unwrap(),
        theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
        read_only: false,
        user: "alice".into(),
        config_label: "test".into(),
        no_clusters: Vec::new(),
    });
    app.update(Msg::Fleet(state.clone()));
    typed(&mut app, "n");
    assert_eq!(app.screen(), Screen::Submit);
    typed(&mut app, "pretrain");
    fill(&mut app, Field::Command, "torchrun --nproc-per-node 8 train.py");
    fill(&mut app, Field::Image, "nvcr.io/nvidia/pytorch:25.01-py3");
    fill(&mut app, Field::Gpus, "8");
    fill(&mut app, Field::Nodes, "2");
    fill(&mut app, Field::TasksPerNode, "8");
    let asked = fill(&mut app, Field::Account, "ml");
    assert_eq!(app.form().value(Field::Cluster), "k8s");
    assert!(app.form().problem.is_none(), "{:?}", app.form().problem);

    // The preview: asked of the fleet as the event loop does, answered to the form.
    let Some(Command::Render { cluster, spec, seq }) = asked.iter().rev().find(|c| matches!(c, Command::Render { .. }))
    else {
        panic!("no preview asked: {asked:?}")
    };
    assert_eq!((spec.nodes, spec.gpus, spec.tasks_per_node), (Some(2), 8, Some(8)));
    let rendered = fleet.render(cluster, spec).await.map_err(|e| e.to_string());
    app.update(Msg::Rendered { seq: *seq, result: rendered });
    let preview = app.form().preview.as_ref().expect("the preview");
    assert_eq!(preview.dialect, flightdeck::backend::kube::workloads::dialect::JOB_SET);
    assert!(preview.text.contains("kind: JobSet"), "{}", preview.text);

    // Submit (F5), confirm, and carry out what the cockpit asks.
    key(&mut app, KeyCode::F(5));
    assert_eq!(app.dialog().expect("a confirmation").targets(), vec!["pretrain on k8s".to_string()]);
    let sent = typed(&mut app, "y");
    let actions: Vec<Action> = sent
        .into_iter()
        .filter_map(|c| match c {
            Command::Fleet(action) => Some(action),
            _ => None,
        })
        .collect();
    assert!(matches!(actions.as_slice(), [Action::Submit { .. }]), "{actions:?}");
    let done = fleet.perform_batch(actions).await;
    let result = done.outcomes[0].result.clone().expect("submitted");
    assert!(result.contains("k8s/ml:jobset:pretrain-"), "{result}");

    // What the fake holds: one JobSet, 2 pods of 8 GPUs, each with the rendezvous.
    let sets: Vec<_> = fake
        .list("jobset.x-k8s.io/v1alpha2", "JobSet")
        .into_iter()
        .filter(|o| o["metadata"]["annotations"]["flightdeck.io/name"] == "pretrain")
        .collect();
    assert_eq!(sets.len(), 1, "{sets:?}");
    let job = &sets[0]["spec"]["replicatedJobs"][0]["template"]["spec"];
    assert_eq!((&job["parallelism"], &job["completions"]), (&json!(2), &json!(2)));
    let container = &job["template"]["spec"]["containers"][0];
    assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], json!("8"));
    let env: Vec<&str> = container["env"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    for want in ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NODE_RANK"] {
        assert!(env.contains(&want), "{want}: {env:?}");
    }
    let posts: Vec<_> = fake.requests().into_iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts.len(), 1, "one object created: {posts:?}");
}
