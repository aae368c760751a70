//! The command line: `flightdeck` (the fleet at a glance) and the scriptable subcommands.
//!
//! Every subcommand drives the same [`Fleet`] the cockpit uses. Like `scancel` and `kubectl`,
//! nothing here prompts; failures print one line naming the problem and exit non-zero.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::backend::Registry;
use crate::config::Config;
use crate::fleet::{AuditLog, Fleet, FleetOptions, FleetState};
use crate::model::{Action, Health, Job, JobAction, JobGpuUse, JobRef, JobState, NodeAction, NodeRef, Verb};
use crate::output;

mod advise;
mod history;
pub mod init;
mod logs;
mod migrate;
mod replicas;
mod spec;
pub mod usage;
mod watch;
mod why;

#[derive(Debug, Parser)]
#[command(name = "flightdeck", version, about = "One cockpit for every GPU a team can reach")]
pub struct Cli {
    /// Config file (default: $XDG_CONFIG_HOME/flightdeck/config.toml, else this machine).
    #[arg(long, global = true, env = "FLIGHTDECK_CONFIG")]
    pub config: Option<PathBuf>,
    /// Refuse every change (submit, cancel, drain …), whatever the config says.
    #[arg(long, global = true)]
    pub read_only: bool,
    /// Cockpit theme: default, light, high-contrast, mono, or a theme file.
    #[arg(long, global = true)]
    pub theme: Option<String>,
    /// Cockpit keymap: default, vim, or a keymap file.
    #[arg(long, global = true)]
    pub keymap: Option<String>,
    /// Work through a hub (`flightdeck serve`) instead of the configured clusters:
    /// https://HOST:PORT, http://127.0.0.1:PORT or unix:/PATH; the token from
    /// FLIGHTDECK_HUB_TOKEN.
    #[arg(long, global = true, env = "FLIGHTDECK_HUB")]
    pub hub: Option<String>,
    /// Send the hub token over plain http:// to another machine, where anyone on the
    /// network path can read it (refused without this flag).
    #[arg(long, global = true)]
    pub insecure: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Table,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the fleet at a glance (what the cockpit's overview shows) and exit.
    Status,
    /// List jobs across clusters.
    Jobs {
        #[arg(long, short)]
        cluster: Vec<String>,
        #[arg(long, short)]
        user: Option<String>,
        /// pending, held, running, completed, failed, cancelled … or Slurm's codes (R, PD,
        /// CG, CD, F, CA, TO, S); a comma list (`running,pending`) or repeated
        #[arg(long, short, value_delimiter = ',')]
        state: Vec<JobState>,
        /// Only jobs holding GPUs that are idle: under `[idle] below_percent` in one
        /// telemetry reading taken now (the cockpit and a hub also need `[idle] minutes` of it)
        #[arg(long)]
        idle: bool,
        /// Take no GPU telemetry reading (by default, where a cluster has telemetry, one
        /// reading bounded by its timeout gives every job `gpu_use` and the GPU% column).
        #[arg(long, conflicts_with = "idle")]
        no_telemetry: bool,
        /// Jobs that ended since then, from the cluster's accounting (Slurm's sacct; what
        /// other clusters still show): an age (90m, 6h, 1d, 2w) or a date (2026-12-01). Only
        /// the user's own jobs on Slurm unless --user names another.
        #[arg(long, conflicts_with_all = ["idle", "no_telemetry"])]
        since: Option<String>,
        /// With --since: at most this many jobs per cluster, the latest to end.
        #[arg(long, default_value_t = crate::model::history::DEFAULT_LIMIT, requires = "since")]
        limit: usize,
        #[arg(long, short, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Who holds the GPUs: per user (account, cluster, model) the GPUs held now, how many
    /// read idle, $/h where every holder has a price, and GPU-hours over the window (Slurm:
    /// one sacct per cluster; other kinds: the finished jobs they still list). `?` is not
    /// known, `>=` a lower bound.
    Usage {
        #[arg(long, short)]
        cluster: Vec<String>,
        /// The window's start: an age (90m, 6h, 1d, 2w) or a date (2026-12-01).
        #[arg(long, default_value = "7d")]
        since: String,
        /// The window's end, as `--since` takes it (default now): a window of whole hours
        /// past reads as `sreport` does. What is held is always as of now.
        #[arg(long)]
        until: Option<String>,
        #[arg(long, value_enum, default_value_t)]
        by: usage::By,
        #[arg(long, short, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// List nodes with their state, flags and GPUs.
    Nodes {
        #[arg(long, short)]
        cluster: Vec<String>,
        #[arg(long, short, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Submit a job to a cluster; prints the new job's reference. The file is a portable
    /// spec (TOML) or any native form (an sbatch script, a Kubernetes Job, a SkyPilot task, a
    /// dstack task), recognised by its content.
    Submit {
        spec: PathBuf,
        #[arg(long, short)]
        cluster: String,
        /// Read the file as this dialect: toml, slurm, kubernetes, skypilot, dstack, jobset,
        /// pytorchjob, mpijob, rayjob, volcano.
        #[arg(long)]
        from: Option<String>,
        /// The workload kind a job of several nodes becomes on a Kubernetes cluster (jobset,
        /// pytorchjob, mpijob, volcano), over the cluster's `multi_node` setting for this one
        /// job; other kinds refuse it.
        #[arg(long, value_name = "KIND")]
        multi_node: Option<String>,
    },
    /// Move jobs (CLUSTER/ID …) to another cluster: submit there, then cancel here. Prints
    /// the plan (source, target, every warning); `--yes` carries it out.
    Migrate {
        #[arg(required_unless_present = "resume")]
        jobs: Vec<JobRef>,
        /// The cluster to move them to.
        #[arg(long, required_unless_present = "resume")]
        to: Option<String>,
        /// Show the plan with each job's native form on the target, and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Yes, carry the plan out.
        #[arg(long)]
        yes: bool,
        /// Also move running jobs (they are killed and start again from scratch).
        #[arg(long)]
        running: bool,
        /// Finish migrations the audit log shows as interrupted.
        #[arg(long, conflicts_with_all = ["jobs", "to", "dry_run", "gpu_type"])]
        resume: bool,
        /// Run the moved jobs in this container image where they have none (Kubernetes needs
        /// one); `none` drops the source's image (a Slurm target without pyxis).
        #[arg(long)]
        image: Option<String>,
        /// Ask for this GPU model on the target (`h200`), where the source's model is not
        /// there; `any` leaves the model open where the target's dialect can (Slurm,
        /// Kubernetes, dstack; not SkyPilot). Shown in the plan as a changed field.
        #[arg(long, value_name = "MODEL")]
        gpu_type: Option<String>,
    },
    /// Why jobs (CLUSTER/ID …) wait: the reason in words (every Slurm code; a Kubernetes
    /// scheduler message split into its node counts) and what the last refresh shows about
    /// it (jobs ahead, the largest free block of GPUs, nodes out of service, what the user
    /// holds). Costs no controller call beyond one refresh.
    Why {
        #[arg(required = true)]
        jobs: Vec<JobRef>,
        #[arg(long, short, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Follow jobs (CLUSTER/ID …) until they end: each change of state as a line, `--exec
    /// CMD` run on each with the event as JSON on its standard input (split into words, run
    /// without a shell); exits with the job's exit code (the first non-zero of several).
    Watch {
        #[arg(required = true)]
        jobs: Vec<JobRef>,
        #[arg(long)]
        exec: Option<String>,
    },
    /// Where a job could start: every cluster ranked (now, queued, cannot) with the reason,
    /// for a job file (any dialect, or the portable TOML) or a live job (CLUSTER/ID).
    Advise {
        spec: String,
        #[arg(long, short, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Job specs: read a live job's, or translate a job file between dialects.
    #[command(subcommand)]
    Spec(SpecCommand),
    /// Cancel jobs or array tasks (CLUSTER/ID …).
    Cancel {
        #[arg(required = true)]
        jobs: Vec<JobRef>,
    },
    /// Hold pending jobs.
    Hold {
        #[arg(required = true)]
        jobs: Vec<JobRef>,
    },
    /// Release held jobs.
    Release {
        #[arg(required = true)]
        jobs: Vec<JobRef>,
    },
    /// Requeue jobs.
    Requeue {
        #[arg(required = true)]
        jobs: Vec<JobRef>,
    },
    /// Drain a node (CLUSTER/NODE): running jobs finish, nothing new starts.
    Drain {
        node: NodeRef,
        #[arg(long, short)]
        reason: String,
        /// Kubernetes: also evict pods no controller re-creates and pods with emptyDir data.
        #[arg(long)]
        force: bool,
    },
    /// Return a drained or down node to service.
    Resume { node: NodeRef },
    /// Mark a node unschedulable (Kubernetes).
    Cordon { node: NodeRef },
    /// Make a cordoned node schedulable again (Kubernetes).
    Uncordon { node: NodeRef },
    /// Delete stopped runs' records for good (dstack: a run must be stopped first).
    Delete {
        #[arg(required = true)]
        jobs: Vec<JobRef>,
    },
    /// Tear down the cloud cluster a node (CLUSTER/NODE) belongs to, deleting every machine
    /// and disk in it (SkyPilot `down`). Asks for `--yes`, since nothing brings it back.
    Teardown {
        #[arg(required = true)]
        nodes: Vec<NodeRef>,
        /// Yes, delete them.
        #[arg(long)]
        yes: bool,
    },
    /// Print a job's output (CLUSTER/ID): its last bytes, then, with --follow, what it adds.
    /// Only the job user's own regular file is read, never through a symbolic link.
    Logs {
        job: JobRef,
        /// Its standard error instead of standard output.
        #[arg(long)]
        stderr: bool,
        /// Keep printing what it writes, until Ctrl-C or the job has ended.
        #[arg(long, short)]
        follow: bool,
        /// How many of the last bytes to print (and the most read at once while following).
        #[arg(long, default_value_t = logs::DEFAULT_BYTES)]
        bytes: u64,
    },
    /// Check every configured cluster: connection, release, JSON support, cost per refresh.
    Doctor,
    /// Write a commented config from what this machine finds: local Slurm, kubeconfig
    /// contexts, dstack and SkyPilot servers, and Slurm login nodes given with --probe.
    Init {
        /// An ssh destination (a ~/.ssh/config alias works) to check for Slurm; repeatable.
        #[arg(long = "probe", value_name = "HOST")]
        probe: Vec<String>,
        /// The ssh user for the probed hosts.
        #[arg(long)]
        user: Option<String>,
        /// The ssh port for the probed hosts.
        #[arg(long)]
        port: Option<u16>,
        /// The ssh key for the probed hosts.
        #[arg(long)]
        identity_file: Option<PathBuf>,
        /// A known_hosts file of their own for the probed hosts.
        #[arg(long)]
        known_hosts_file: Option<PathBuf>,
        /// The ssh client config whose hosts are listed (default ~/.ssh/config).
        #[arg(long)]
        ssh_config: Option<PathBuf>,
        /// Print the config instead of writing it.
        #[arg(long)]
        print: bool,
        /// Replace an existing config (the old one is kept as config.toml.bak).
        #[arg(long)]
        force: bool,
    },
    /// Serve the configured clusters to every cockpit and script over gRPC: one poller per
    /// cluster for a whole team, every action audited here under the caller's name.
    Serve {
        /// IP:PORT (TLS required unless loopback) or unix:/PATH.
        #[arg(long, default_value = "127.0.0.1:50051")]
        listen: String,
        /// Bearer tokens: lines of `TOKEN_SHA256 USER ROLE` (viewer or operator); re-read
        /// when it changes. Required unless listening on a Unix socket.
        #[arg(long)]
        tokens: Option<PathBuf>,
        /// The server's certificate chain (PEM).
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The certificate's private key (PEM), readable by its owner only.
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Also serve the gRPC health service alone, in plain text, on IP:PORT (for
        /// probes that cannot speak TLS, like the kubelet's).
        #[arg(long)]
        health_listen: Option<std::net::SocketAddr>,
        /// Where Prometheus text answers on `/metrics` (plain HTTP, no token; it names
        /// the clusters): IP:PORT, or `off`. Loopback unless you name another address.
        #[arg(long, default_value = DEFAULT_METRICS_LISTEN)]
        metrics_listen: String,
        /// The most subscriptions (cockpits, watching scripts) open at once.
        #[arg(long, default_value_t = crate::serve::limits::SubscriberLimits::default().total)]
        max_subscriptions: usize,
        /// The most subscriptions one user holds open at once.
        #[arg(long, default_value_t = crate::serve::limits::SubscriberLimits::default().per_caller)]
        max_subscriptions_per_user: usize,
        /// Run as one of several replicas sharing the clusters: `kubernetes` holds one Lease
        /// per configured cluster (`flightdeck-hub-<cluster>`); this replica polls and acts
        /// only on the clusters whose Lease it holds.
        #[arg(long, value_enum)]
        replicas_via: Option<replicas::ReplicasVia>,
        /// The namespace of the Leases (default: the Kubernetes client's, in a pod its own).
        #[arg(long, requires = "replicas_via")]
        lease_namespace: Option<String>,
        /// Where the other replicas reach this one (default: --listen).
        #[arg(long, requires = "replicas_via")]
        peer_address: Option<String>,
        /// This replica's id among the others (default: the host's name, in a pod its name).
        #[arg(long, requires = "replicas_via")]
        replica_id: Option<String>,
        /// The token this replica shows the others (an operator's line of the token file the
        /// replicas share), to relay the clusters they hold and forward actions to them.
        #[arg(long, requires = "replicas_via")]
        peer_token_file: Option<PathBuf>,
        /// The CA that signed the other replicas' certificates (default: the system roots).
        #[arg(long, requires = "replicas_via")]
        peer_ca_file: Option<PathBuf>,
    },
    /// Print the audit log: every action, who asked, and how it ended (`unknown`: it was
    /// under way when flightdeck stopped).
    Audit {
        /// Only actions this recent: 30m, 1h, 2d …
        #[arg(long)]
        since: Option<String>,
        #[arg(long, short, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell); see the
    /// README for where each shell reads it.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on standard output: `flightdeck man > flightdeck.1`.
    Man,
}

#[derive(Debug, Subcommand)]
pub enum SpecCommand {
    /// Print the portable spec (TOML) of a live job (CLUSTER/ID), read from its backend.
    Export { job: JobRef },
    /// Print a job file in another dialect: toml, slurm, kubernetes, skypilot, dstack; or a
    /// Kubernetes workload kind (jobset, pytorchjob, mpijob, rayjob, volcano).
    Convert {
        file: PathBuf,
        #[arg(long)]
        to: String,
        /// Read the file as this dialect instead of recognising it by content.
        #[arg(long)]
        from: Option<String>,
        /// With `--to kubernetes`: the workload kind a job of several nodes is written as
        /// (jobset, pytorchjob, mpijob, volcano), as `submit --multi-node` asks it of a cluster.
        #[arg(long, value_name = "KIND")]
        multi_node: Option<String>,
    },
}

/// `flightdeck completions SHELL`: the script clap_complete writes from the same command
/// tree the parser uses, so it never lags a new subcommand or flag.
fn shell_completions(shell: clap_complete::Shell) -> Result<ExitCode, Failure> {
    use clap::CommandFactory;
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "flightdeck", &mut out);
    write_stdout(&out)
}

/// `flightdeck man`: one roff page for the whole tool (name, synopsis, options, every
/// subcommand with its summary), from the same command tree the parser uses.
fn man_page() -> Result<ExitCode, Failure> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out).map_err(|e| Failure(format!("man page: {e}")))?;
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> Result<ExitCode, Failure> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // `flightdeck man | head` closes the pipe early; that is not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(Failure(format!("writing to standard output: {e}"))),
    }
}

/// A failure the user can act on: printed as one line, exit status 1.
#[derive(Debug)]
pub struct Failure(pub String);

impl Failure {
    /// The line `main` prints on stderr. Messages quote backend text (a job's `--output`
    /// path in a refusal, a server's error), so the whole line is made printable here, where
    /// every failure leaves for the terminal, rather than at each of their producers.
    pub fn line(&self) -> String {
        format!("flightdeck: {}", crate::safe_text::printable(&self.0))
    }
}

pub async fn run(cli: Cli) -> Result<ExitCode, Failure> {
    // Shell conventions need neither a config nor a cluster.
    match &cli.command {
        Some(Command::Completions { shell }) => return shell_completions(*shell),
        Some(Command::Man) => return man_page(),
        _ => {}
    }
    // `init` writes the config, so it must not need one that loads.
    if let Some(Command::Init { probe, user, port, identity_file, known_hosts_file, ssh_config, print, force }) =
        cli.command
    {
        for host in probe.iter().chain(user.iter()) {
            crate::backend::exec::check_ssh_destination(host)
                .map_err(|why| Failure(format!("--probe/--user {host:?}: {why}")))?;
        }
        let probe = init::Probe { hosts: probe, user, port, identity_file, known_hosts_file };
        return init::init(init::InitRequest { path: cli.config, print, force, probe, ssh_config }).await;
    }
    let mut config = Config::load(cli.config.as_deref(), &Registry::builtin()).map_err(|e| Failure(e.to_string()))?;
    if let Some(url) = &cli.hub {
        // The hub's clusters instead of the configured ones; the theme and keymap stay.
        config.clusters = vec![crate::backend::registry::hub_flag_cluster(url, cli.insecure).map_err(Failure)?];
    }
    let read_only = cli.read_only || config.read_only;
    match cli.command {
        None if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() => {
            cockpit(&config, read_only, cli.theme.as_deref(), cli.keymap.as_deref()).await
        }
        // Not a terminal (a pipe, a cron job): the overview as text instead of the cockpit.
        None | Some(Command::Status) => summary(&config, read_only).await,
        Some(Command::Jobs { cluster, user, state, since: Some(since), limit, output, .. }) => {
            let ask = history::HistoryRequest {
                clusters: &cluster,
                user: user.as_deref(),
                states: &state,
                since: &since,
                limit,
                format: output,
            };
            history::history(&config, read_only, ask).await
        }
        Some(Command::Jobs { cluster, user, state, idle, no_telemetry, output, .. }) => {
            let ask = JobsRequest {
                clusters: &cluster,
                user: user.as_deref(),
                states: &state,
                idle,
                telemetry: !no_telemetry,
                format: output,
            };
            jobs(&config, read_only, ask).await
        }
        Some(Command::Usage { cluster, since, until, by, output }) => {
            let ask = usage::UsageRequest {
                clusters: &cluster,
                since: &since,
                until: until.as_deref(),
                by: by.into(),
                format: output,
            };
            usage::usage(&config, read_only, ask).await
        }
        Some(Command::Nodes { cluster, output }) => nodes(&config, read_only, &cluster, output).await,
        Some(Command::Submit { spec, cluster, from, multi_node }) => {
            let mut imported = spec::read_job_file(&Registry::builtin(), &spec, from.as_deref())?;
            spec::choose_multi_node(&mut imported.spec, multi_node);
            spec::print_warnings(&imported.warnings);
            act(&config, read_only, vec![Action::Submit { cluster, spec: Box::new(imported.spec) }]).await
        }
        Some(Command::Migrate { jobs, to, dry_run, yes, running, resume, image, gpu_type }) => {
            let gpu_type =
                gpu_type.as_deref().map(crate::fleet::migrate::GpuChoice::parse).transpose().map_err(Failure)?;
            let ask = migrate::MigrateRequest { jobs, to, dry_run, yes, running, resume, image, gpu_type };
            migrate::migrate(&config, read_only, ask).await
        }
        Some(Command::Watch { jobs, exec }) => watch::watch(&config, read_only, &jobs, exec.as_deref()).await,
        Some(Command::Why { jobs, output }) => why::explain(&config, read_only, &jobs, output).await,
        Some(Command::Advise { spec, output }) => advise::advise(&config, read_only, &spec, output).await,
        Some(Command::Spec(SpecCommand::Export { job })) => spec::export(&config, &job).await,
        Some(Command::Spec(SpecCommand::Convert { file, to, from, multi_node })) => {
            spec::convert(&file, &to, from.as_deref(), multi_node)
        }
        Some(Command::Cancel { jobs }) => job_actions(&config, read_only, jobs, JobAction::Cancel).await,
        Some(Command::Hold { jobs }) => job_actions(&config, read_only, jobs, JobAction::Hold).await,
        Some(Command::Release { jobs }) => job_actions(&config, read_only, jobs, JobAction::Release).await,
        Some(Command::Requeue { jobs }) => job_actions(&config, read_only, jobs, JobAction::Requeue).await,
        Some(Command::Drain { node, reason, force }) => {
            act(&config, read_only, vec![Action::Node { node, action: NodeAction::Drain { reason, force } }]).await
        }
        Some(Command::Resume { node }) => {
            act(&config, read_only, vec![Action::Node { node, action: NodeAction::Resume }]).await
        }
        Some(Command::Cordon { node }) => {
            act(&config, read_only, vec![Action::Node { node, action: NodeAction::Cordon }]).await
        }
        Some(Command::Uncordon { node }) => {
            act(&config, read_only, vec![Action::Node { node, action: NodeAction::Uncordon }]).await
        }
        Some(Command::Delete { jobs }) => job_actions(&config, read_only, jobs, JobAction::Delete).await,
        Some(Command::Teardown { nodes, yes }) => {
            if !yes {
                let names: Vec<String> = nodes.iter().map(ToString::to_string).collect();
                return Err(Failure(format!(
                    "tearing down deletes the cloud cluster of {} with every machine and disk in it; add --yes to do it",
                    names.join(", ")
                )));
            }
            let actions = nodes.into_iter().map(|node| Action::Node { node, action: NodeAction::Teardown }).collect();
            act(&config, read_only, actions).await
        }
        Some(Command::Logs { job, stderr, follow, bytes }) => {
            let stream = if stderr { crate::model::LogStream::Stderr } else { crate::model::LogStream::Stdout };
            logs::logs(&config, read_only, logs::LogsRequest { job, stream, follow, bytes }).await
        }
        Some(Command::Doctor) => doctor(&config).await,
        Some(Command::Serve {
            listen,
            tokens,
            tls_cert,
            tls_key,
            health_listen,
            metrics_listen,
            max_subscriptions,
            max_subscriptions_per_user,
            replicas_via,
            lease_namespace,
            peer_address,
            replica_id,
            peer_token_file,
            peer_ca_file,
        }) => {
            let subscribers = crate::serve::limits::SubscriberLimits {
                per_caller: max_subscriptions_per_user,
                total: max_subscriptions,
            };
            let replicas = replicas_via.map(|via| replicas::Replicas {
                via,
                namespace: lease_namespace,
                peer_address,
                replica_id,
                peer_token_file,
                peer_ca_file,
            });
            let ask = ServeRequest {
                listen,
                tokens,
                tls_cert,
                tls_key,
                health_listen,
                metrics_listen,
                subscribers,
                replicas,
            };
            serve(&config, read_only, ask).await
        }
        Some(Command::Audit { since, output }) => audit(since.as_deref(), output),
        // Answered above, before the config is read; here only for a complete match.
        Some(Command::Completions { shell }) => shell_completions(shell),
        Some(Command::Man) => man_page(),
        Some(Command::Init { .. }) => unreachable!("init runs before the config is read"),
    }
}

/// Start a fleet over the configured clusters named in `only` (all when empty), auditing
/// to the state directory.
async fn start_fleet(config: &Config, read_only: bool, only: &[String], poll: bool) -> Result<Fleet, Failure> {
    let opts = FleetOptions { read_only, poll, audit: Some(audit_log()), actor: crate::fleet::audit::current_actor() };
    Fleet::builder(config).only(only).connect(opts).await.map_err(|e| Failure(e.to_string()))
}

/// One refresh of every cluster in the fleet; stale clusters are reported on stderr.
async fn first_refresh(config: &Config, fleet: &Fleet) -> (Arc<FleetState>, bool) {
    let longest = config.clusters.iter().map(|c| c.timeout).max().unwrap_or(Duration::from_secs(30));
    let state = fleet
        .wait_for(longest.saturating_mul(2).saturating_add(Duration::from_secs(5)), FleetState::all_attempted)
        .await;
    let mut failed = false;
    for line in state.clusters.iter().filter_map(refresh_problem) {
        failed = true;
        eprintln!("{line}");
    }
    (state, failed)
}

/// The stderr line for a cluster whose first refresh failed or has not answered, made
/// printable whole: a hub names its clusters, and a name is backend text like the error.
fn refresh_problem(c: &crate::model::ClusterState) -> Option<String> {
    let problem = match &c.health {
        Health::Stale { error, .. } => error.as_str(),
        Health::Connecting => "no answer yet",
        Health::Fresh { .. } => return None,
    };
    Some(output::printable(&format!("flightdeck: {}: {problem}", c.name)))
}

struct ServeRequest {
    listen: String,
    tokens: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    health_listen: Option<std::net::SocketAddr>,
    metrics_listen: String,
    subscribers: crate::serve::limits::SubscriberLimits,
    /// One replica of several (`--replicas-via`), else the only hub.
    replicas: Option<replicas::Replicas>,
}

/// Where `flightdeck serve` answers `/metrics` unless told: loopback, Prometheus's
/// registered port for exporters of this kind.
const DEFAULT_METRICS_LISTEN: &str = "127.0.0.1:9464";

/// `--metrics-listen`: an IP address and port, or `off`.
fn metrics_listen(text: &str) -> Result<Option<std::net::SocketAddr>, Failure> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        Failure(format!(
            "--metrics-listen {:?}: give an IP address and port (like {DEFAULT_METRICS_LISTEN}) or off",
            crate::safe_text::printable(text)
        ))
    })
}

/// `flightdeck serve`: the configured fleet, polled once, served until SIGTERM or Ctrl-C;
/// then, like the cockpit, up to 30 s for actions under way.
async fn serve(config: &Config, read_only: bool, ask: ServeRequest) -> Result<ExitCode, Failure> {
    use crate::serve::listen::{ListenAddr, TlsFiles};
    let listen: ListenAddr = ask.listen.parse().map_err(|e| Failure(format!("--listen {:?}: {e}", ask.listen)))?;
    let tls = match (ask.tls_cert, ask.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        _ => None,
    };
    // Checked before any cluster is touched: a hub that cannot start polls nothing.
    crate::serve::listen::check_tls(&listen, tls.as_ref()).map_err(Failure)?;
    let metrics_listen = metrics_listen(&ask.metrics_listen)?;
    let keeper = match &ask.replicas {
        Some(replicas) => Some(replicas::lease_keeper(config, replicas, &ask.listen).await?),
        None => None,
    };
    let fleet = match &keeper {
        None => start_fleet(config, read_only, &[], true).await?,
        Some(keeper) => {
            let opts = FleetOptions {
                read_only,
                poll: true,
                audit: Some(audit_log()),
                actor: crate::fleet::audit::current_actor(),
            };
            let builder = Fleet::builder(config).gated(replicas::gates(keeper));
            builder.connect(opts).await.map_err(|e| Failure(e.to_string()))?
        }
    };
    let fleet = std::sync::Arc::new(fleet);
    let opts = crate::serve::ServeOptions {
        listen,
        tls,
        tokens: ask.tokens,
        health_listen: ask.health_listen,
        metrics_listen,
        subscribers: ask.subscribers,
    };
    let replication = match &keeper {
        // The clusters other replicas hold, relayed from them; calls on them forwarded there.
        Some(keeper) => {
            let peers = replicas::peer_options(ask.replicas.as_ref(), opts.tls.is_some())?;
            let ownership: std::sync::Arc<dyn crate::serve::relay::Ownership> = std::sync::Arc::new(keeper.view());
            crate::serve::Replication::relayed(&fleet, ownership, peers)
        }
        None => crate::serve::Replication { published: fleet.subscribe(), forward: None, relay: None },
    };
    let served = crate::serve::serve_published(fleet.clone(), replication, opts, stop_signal()).await;
    let unknown = fleet.settle(Duration::from_secs(30)).await;
    for action in &unknown {
        let action = output::printable(action);
        eprintln!("flightdeck: {action} was still under way; its outcome is unknown (see `flightdeck audit`)");
    }
    // Give the Leases back so the other replicas need not wait for them to run out.
    if let Some(keeper) = keeper {
        keeper.stop().await;
    }
    served.map_err(Failure)?;
    Ok(ExitCode::SUCCESS)
}

fn exit(failed: bool) -> ExitCode {
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// The interactive cockpit over every configured cluster.
async fn cockpit(
    config: &Config,
    read_only: bool,
    theme: Option<&str>,
    keymap: Option<&str>,
) -> Result<ExitCode, Failure> {
    use crate::tui::keymap::Keymap;
    use crate::tui::theme::{ColorDepth, Theme};
    let depth = ColorDepth::from_env();
    let theme_choice = theme.or(config.theme.as_deref()).unwrap_or("default");
    let theme = match Theme::builtin(theme_choice, depth) {
        Some(t) => t,
        None => Theme::load(std::path::Path::new(theme_choice), depth).map_err(|e| Failure(e.to_string()))?,
    };
    let keymap_choice = keymap.or(config.keymap.as_deref()).unwrap_or("default");
    let keymap = match Keymap::builtin(keymap_choice) {
        Some(k) => k,
        None => Keymap::load(std::path::Path::new(keymap_choice)).map_err(|e| Failure(e.to_string()))?,
    };
    let fleet = start_fleet(config, read_only, &[], true).await?;
    let opts = crate::tui::TuiOptions {
        keymap,
        theme,
        read_only,
        user: crate::fleet::audit::current_user(),
        config_label: config.source.to_string(),
        no_clusters: if config.clusters.is_empty() { no_clusters_help(config) } else { Vec::new() },
    };
    crate::tui::run(fleet, opts, config.notify.clone()).await.map_err(|e| Failure(format!("{e:#}")))?;
    Ok(ExitCode::SUCCESS)
}

/// Where a cluster goes: `flightdeck init` writes the config from what this machine
/// reaches; the file is the one this run read, else the default path.
fn how_to_add_a_cluster(config: &Config) -> String {
    let path = match &config.source {
        crate::config::ConfigSource::File(path) => path.display().to_string(),
        crate::config::ConfigSource::EmbeddedDefault => crate::config::default_config_path()
            .map_or_else(|| "$XDG_CONFIG_HOME/flightdeck/config.toml".to_string(), |p| p.display().to_string()),
    };
    format!(
        "To add a cluster: `flightdeck init` writes {path} from what it finds, or add [[cluster]] entries to it \
         yourself ($XDG_CONFIG_HOME/flightdeck/config.toml, or --config FILE; see the README)."
    )
}

/// The cockpit's overview without any cluster: what was looked for here, item by item,
/// and how to add a cluster.
fn no_clusters_help(config: &Config) -> Vec<String> {
    let mut lines = vec![String::new(), "Looked for on this machine:".to_string()];
    let looked = Registry::builtin().looked_for(&crate::backend::registry::Look::here());
    lines.extend(looked.into_iter().map(|item| format!("  {item}")));
    lines.push(String::new());
    lines.push(how_to_add_a_cluster(config));
    lines
}

async fn summary(config: &Config, read_only: bool) -> Result<ExitCode, Failure> {
    let fleet = start_fleet(config, read_only, &[], true).await?;
    let (state, failed) =
        if config.clusters.is_empty() { (fleet.state(), false) } else { first_refresh(config, &fleet).await };
    print!("{}", output::summary(&state));
    Ok(exit(failed))
}

/// What `flightdeck jobs` was asked for.
struct JobsRequest<'a> {
    clusters: &'a [String],
    user: Option<&'a str>,
    states: &'a [JobState],
    /// Only jobs whose GPUs read idle now.
    idle: bool,
    /// Take one telemetry reading (not `--no-telemetry`).
    telemetry: bool,
    format: OutputFormat,
}

async fn jobs(config: &Config, read_only: bool, ask: JobsRequest<'_>) -> Result<ExitCode, Failure> {
    let mut builder = Fleet::builder(config).only(ask.clusters);
    if !ask.telemetry {
        builder = builder.without_telemetry();
    }
    let opts =
        FleetOptions { read_only, poll: true, audit: Some(audit_log()), actor: crate::fleet::audit::current_actor() };
    let fleet = builder.connect(opts).await.map_err(|e| Failure(e.to_string()))?;
    let (mut state, failed) = first_refresh(config, &fleet).await;
    let longest = config.clusters.iter().map(|c| c.timeout).max().unwrap_or(Duration::from_secs(30));
    if ask.idle {
        state = first_telemetry(&fleet, longest.saturating_mul(2).saturating_add(Duration::from_secs(5)), true).await;
        eprintln!(
            "flightdeck: one telemetry reading: a job is listed when its GPUs read under {}% now (the cockpit \
             and a hub flag it idle after {} minutes of that)",
            config.idle.below_percent,
            config.idle.window.as_secs() / 60
        );
    } else if ask.telemetry {
        // One reading where a cluster can be measured (a cluster without a source answers
        // at once), bounded by the clusters' timeout: scripts get what the GPU% column shows.
        state = first_telemetry(&fleet, longest, false).await;
    }
    let below = |used: &JobGpuUse| used.mean_utilisation.is_some_and(|u| u < config.idle.below_percent) || used.idle;
    // Per job: its cluster's reading (where one was taken) and its own part of it.
    type Row<'s> = (&'s Job, Option<&'s crate::model::GpuUse>, Option<&'s JobGpuUse>);
    let jobs: Vec<Row<'_>> = state
        .clusters
        .iter()
        .filter_map(|c| c.snapshot.as_ref().map(|s| (s, c.gpu_use.as_deref())))
        .flat_map(|(s, used)| s.jobs.iter().map(move |j| (j, used, used.and_then(|u| u.job(&j.job_ref.id)))))
        .filter(|(j, ..)| ask.user.is_none_or(|u| j.user == u))
        .filter(|(j, ..)| ask.states.is_empty() || ask.states.contains(&j.state))
        .filter(|(.., used)| !ask.idle || used.is_some_and(below))
        .collect();
    match ask.format {
        OutputFormat::Table => {
            let shown: Vec<(&Job, Option<&JobGpuUse>)> = jobs.iter().map(|(j, _, used)| (*j, *used)).collect();
            print!("{}", output::jobs_table(&shown))
        }
        OutputFormat::Json => {
            // One row at a time: 50,000 jobs are never a second vector of rows.
            output::print_json(&output::SeqOf::new(&jobs, |(j, reading, used)| {
                output::JobRow::from(*j).with_reading(*reading, *used)
            }));
        }
    }
    Ok(exit(failed))
}

/// The fleet once every cluster's telemetry was tried (a reading, an error, or nothing to
/// read with), waiting at most `bound`; a cluster whose reading failed or did not come says
/// so on stderr, and, with `missing`, one with no telemetry source at all.
async fn first_telemetry(fleet: &Fleet, bound: Duration, missing: bool) -> Arc<FleetState> {
    let tried = |s: &FleetState| s.clusters.iter().all(|c| c.telemetry_tried || c.snapshot.is_none());
    let state = fleet.wait_for(bound, tried).await;
    for line in state.clusters.iter().filter_map(|c| telemetry_problem(c, missing)) {
        eprintln!("{line}");
    }
    state
}

/// The stderr line for a cluster whose telemetry failed or is missing, made printable whole
/// (the name, from a hub, as much as the error).
fn telemetry_problem(c: &crate::model::ClusterState, missing: bool) -> Option<String> {
    let problem = match (&c.telemetry_error, c.telemetry_tried, &c.gpu_use) {
        (Some(error), ..) => format!("GPU telemetry: {error}"),
        (None, true, None) if missing => "no GPU telemetry source".to_string(),
        (None, true, None) => return None,
        (None, false, _) if c.snapshot.is_some() => "GPU telemetry did not answer in time".to_string(),
        _ => return None,
    };
    Some(output::printable(&format!("flightdeck: {}: {problem}", c.name)))
}

async fn nodes(
    config: &Config,
    read_only: bool,
    clusters: &[String],
    format: OutputFormat,
) -> Result<ExitCode, Failure> {
    let fleet = start_fleet(config, read_only, clusters, true).await?;
    let (state, failed) = first_refresh(config, &fleet).await;
    let nodes: Vec<_> =
        state.clusters.iter().filter_map(|c| c.snapshot.as_ref()).flat_map(|s| s.nodes.iter()).collect();
    match format {
        OutputFormat::Table => print!("{}", output::nodes_table(&nodes)),
        OutputFormat::Json => {
            let rows: Vec<output::NodeRow> = nodes.iter().map(|n| output::NodeRow::from(*n)).collect();
            output::print_json(&rows);
        }
    }
    Ok(exit(failed))
}

async fn job_actions(
    config: &Config,
    read_only: bool,
    jobs: Vec<JobRef>,
    action: JobAction,
) -> Result<ExitCode, Failure> {
    act(config, read_only, jobs.into_iter().map(|job| Action::Job { job, action, uid: None }).collect()).await
}

/// Carry out actions one after another; print each result; fail if any failed.
async fn act(config: &Config, read_only: bool, actions: Vec<Action>) -> Result<ExitCode, Failure> {
    let clusters: Vec<String> = actions.iter().map(|a| a.cluster().to_string()).collect();
    let fleet = start_fleet(config, read_only, &clusters, false).await?;
    act_on(&fleet, actions).await
}

/// [`act`] on a fleet already started (a migration plans on a polling one first).
async fn act_on(fleet: &Fleet, actions: Vec<Action>) -> Result<ExitCode, Failure> {
    let mut failed = false;
    let state = fleet.state();
    // What the cluster's kind cannot do is refused here, before anyone is contacted.
    let mut allowed = Vec::with_capacity(actions.len());
    for action in actions {
        match state.check(action.cluster(), action.verb()) {
            Ok(()) => allowed.push(action),
            Err(why) => {
                failed = true;
                eprintln!("flightdeck: {}", output::printable(&why));
            }
        }
    }
    if allowed.is_empty() {
        return Ok(exit(failed));
    }
    // One batch: the fleet groups it per cluster (Slurm: one command per 200 jobs) and
    // carries it out whole. SIGTERM or Ctrl-C mid-way waits for it (bounded), so nothing
    // is left half-known.
    let count = allowed.len();
    let mut stop = std::pin::pin!(stop_signal());
    let mut perform = std::pin::pin!(fleet.perform_batch(allowed));
    let batch = tokio::select! {
        batch = &mut perform => batch,
        () = &mut stop => {
            let noun = if count == 1 { "action" } else { "actions" };
            eprintln!("flightdeck: stopping; waiting for {count} {noun}…");
            match tokio::time::timeout(crate::tui::SETTLE_LIMIT, perform).await {
                Ok(batch) => {
                    for outcome in &batch.outcomes {
                        let _ = report(outcome);
                    }
                }
                Err(_) => {
                    for label in fleet.in_flight() {
                        let label = output::printable(&label);
                        eprintln!("flightdeck: {label}: outcome unknown (see `flightdeck audit`)");
                    }
                }
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    for outcome in &batch.outcomes {
        failed |= !report(outcome);
    }
    if batch.outcomes.len() > 1 {
        eprintln!("flightdeck: {}", output::printable(&batch.summary()));
    }
    Ok(exit(failed))
}

/// Resolves on SIGTERM or SIGINT.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

/// Print one outcome the way `scancel` and `kubectl` do; true when it went well.
fn report(outcome: &crate::model::ActionOutcome) -> bool {
    let (line, ok) = outcome_line(outcome);
    if ok {
        println!("{line}");
    } else {
        eprintln!("{line}");
    }
    ok
}

/// [`report`]'s line, made printable whole (a target names a cluster a hub may have named,
/// a message is the backend's), and whether the outcome went well.
fn outcome_line(outcome: &crate::model::ActionOutcome) -> (String, bool) {
    let (line, ok) = match &outcome.result {
        Ok(msg) if outcome.verb == Verb::Submit => (msg.clone(), true),
        Ok(msg) if msg.is_empty() => (format!("{} {}", outcome.verb.past_tense(), outcome.target), true),
        // A report (a Kubernetes drain): what was done, in the backend's words.
        Ok(msg) => (format!("{} {}: {msg}", outcome.verb.past_tense(), outcome.target), true),
        Err(e) => (format!("flightdeck: {} {}: {e}", outcome.verb, outcome.target), false),
    };
    (output::printable(&line), ok)
}

/// The audit log this process writes to; without a private state directory, one that
/// refuses every write, so every action is refused and says why.
fn audit_log() -> AuditLog {
    match crate::config::state_dir() {
        Some(dir) => AuditLog::new(dir.join("audit.jsonl")),
        None => AuditLog::unavailable("no private state directory: set XDG_STATE_HOME or HOME"),
    }
}

fn audit(since: Option<&str>, format: OutputFormat) -> Result<ExitCode, Failure> {
    let cutoff = since
        .map(|s| {
            crate::spec::parse_time_limit_secs(s)
                .map(|secs| chrono::Utc::now() - chrono::Duration::seconds(secs.min(i64::MAX as u64) as i64))
                .map_err(|why| Failure(format!("--since: {why}")))
        })
        .transpose()?;
    let log = audit_log();
    // One line at a time, the window applied as it goes: what is held is the joined actions
    // in the window, never the file.
    let mut joined = crate::fleet::audit::Joiner::since(cutoff);
    let unreadable =
        log.read_each(|r| joined.push(r)).map_err(|e| Failure(format!("cannot read {}: {e}", log.path().display())))?;
    for u in &unreadable {
        eprintln!("{}", output::printable(&format!("flightdeck: {u}")));
    }
    let entries = joined.finish();
    match format {
        OutputFormat::Json => print_json_rows(&entries).map_err(|e| Failure(format!("cannot print: {e}")))?,
        OutputFormat::Table => {
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|e| {
                    vec![
                        e.time.format("%Y-%m-%d %H:%M:%S").to_string(),
                        e.who.clone(),
                        e.action.clone(),
                        e.target.clone(),
                        e.outcome.clone(),
                        [e.detail.clone().unwrap_or_default(), e.message.clone()]
                            .into_iter()
                            .filter(|s| !s.is_empty())
                            .collect::<Vec<_>>()
                            .join("; "),
                    ]
                })
                .collect();
            print!("{}", output::table(&["TIME", "WHO", "ACTION", "TARGET", "OUTCOME", "MESSAGE"], &rows));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `rows` as one pretty JSON array (what `output::json` prints), written row by row.
fn print_json_rows<T: serde::Serialize>(rows: &[T]) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if rows.is_empty() {
        writeln!(out, "[]")?;
        return out.flush();
    }
    writeln!(out, "[")?;
    for (i, row) in rows.iter().enumerate() {
        let text = output::json(row);
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let comma = if lines.peek().is_none() && i + 1 < rows.len() { "," } else { "" };
            writeln!(out, "  {line}{comma}")?;
        }
    }
    writeln!(out, "]")?;
    out.flush()
}

async fn doctor(config: &Config) -> Result<ExitCode, Failure> {
    if config.clusters.is_empty() {
        println!("No clusters configured ({}).", config.source);
        println!("{}", crate::backend::registry::looked_for_here());
        println!("{}", how_to_add_a_cluster(config));
        return Ok(ExitCode::FAILURE);
    }
    println!("config: {}", config.source);
    let fleet = start_fleet(config, true, &[], false).await?;
    let mut failed = false;
    for c in &config.clusters {
        println!("{}", output::printable(&format!("{} ({})", c.name, c.kind())));
        match fleet.diagnose(&c.name).await {
            Ok(d) => {
                // A hub relays its clusters' facts: keys are backend text as much as values.
                let line = |key: &str, value: &str| {
                    println!("{}", output::printable(&format!("  {:<15} {value}", format!("{key}:"))))
                };
                line("transport", &d.transport);
                if let Some(ms) = d.latency_ms {
                    line("first answer", &format!("{ms} ms"));
                }
                line("release", d.release.as_deref().unwrap_or("unknown"));
                for fact in &d.facts {
                    line(&fact.key, &fact.value);
                }
                for note in &d.notes {
                    println!("  note: {}", output::printable(note));
                }
            }
            Err(e) => {
                failed = true;
                println!("  FAILED: {}", output::printable(&e.to_string()));
            }
        }
    }
    Ok(exit(failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_shape_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn refs_and_states_parse() {
        let cli = Cli::try_parse_from(["flightdeck", "jobs", "--state", "pending", "--state", "running", "-o", "json"])
            .unwrap();
        assert!(matches!(cli.command, Some(Command::Jobs { ref state, .. }) if state.len() == 2));
        let cli = Cli::try_parse_from(["flightdeck", "cancel", "hpc/12_3", "hpc/14"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Cancel { ref jobs }) if jobs[0].id == "12_3"));
        assert!(Cli::try_parse_from(["flightdeck", "cancel", "no-slash"]).is_err());
        assert!(Cli::try_parse_from(["flightdeck", "drain", "hpc/n1"]).is_err(), "drain needs --reason");
    }

    #[test]
    fn usage_takes_a_window_and_a_grouping_seven_days_by_user_unless_told() {
        let cli = Cli::try_parse_from(["flightdeck", "usage"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Usage { ref since, by: usage::By::User, .. }) if since == "7d"));
        let cli = Cli::try_parse_from(["flightdeck", "usage", "--since", "1d", "--by", "model", "-o", "json"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Usage { ref since, by: usage::By::Model, output: OutputFormat::Json, .. }) if since == "1d"
        ));
        let cli =
            Cli::try_parse_from(["flightdeck", "usage", "--since", "3h", "--until", "2026-12-07T17:00:00Z"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Usage { until: Some(ref u), .. }) if u == "2026-12-07T17:00:00Z"));
        let refused = Cli::try_parse_from(["flightdeck", "usage", "--by", "team"]).unwrap_err().to_string();
        assert!(refused.contains("team") && refused.contains("account"), "{refused}");
    }

    #[test]
    fn states_take_a_comma_list_and_slurm_codes() {
        let cli = Cli::try_parse_from(["flightdeck", "jobs", "--state", "running,pending", "-s", "CD"]).unwrap();
        assert!(
            matches!(cli.command, Some(Command::Jobs { ref state, .. })
                if state == &[JobState::Running, JobState::Pending, JobState::Completed]),
            "{:?}",
            cli.command
        );
        let cli = Cli::try_parse_from(["flightdeck", "jobs", "-s", "R,PD,ca"]).unwrap();
        assert!(
            matches!(cli.command, Some(Command::Jobs { ref state, .. })
                if state == &[JobState::Running, JobState::Pending, JobState::Cancelled]),
            "{:?}",
            cli.command
        );
        assert!(Cli::try_parse_from(["flightdeck", "jobs", "--state", "running,sleeping"]).is_err());
    }

    #[test]
    fn cluster_problems_print_a_hub_supplied_name_readably() {
        use crate::model::ClusterState;
        let name = "hub-\u{1b}]0;pwned\u{7}\u{9b}2J\u{202E}x";
        let mut c = ClusterState::new(name, "slurm");
        assert_eq!(
            refresh_problem(&c).unwrap(),
            "flightdeck: hub-\u{FFFD}]0;pwned\u{FFFD}\u{FFFD}2J\u{FFFD}x: no answer yet"
        );
        c.health = Health::Stale { since: chrono::Utc::now(), error: "down\u{85}".into(), last_ok: None };
        c.telemetry_error = Some("refused \u{2067}".into());
        for line in [refresh_problem(&c).unwrap(), telemetry_problem(&c, true).unwrap()] {
            assert!(!line.chars().any(crate::safe_text::is_unsafe), "{line:?}");
            assert!(line.starts_with("flightdeck: hub-\u{FFFD}]0;pwned"), "{line:?}");
        }
    }

    #[test]
    fn an_outcome_line_prints_its_target_and_message_readably() {
        let target = "hub-\u{1b}]0;x\u{7}\u{202E}/7".to_string();
        let outcome = |verb, result| crate::model::ActionOutcome { verb, target: target.clone(), result };
        for (o, ok) in [
            (outcome(Verb::Cancel, Ok(String::new())), true),
            (outcome(Verb::Drain, Ok("evicted \u{9b}2J".into())), true),
            (outcome(Verb::Submit, Ok("hub-\u{1b}[2J/8".into())), true),
            (outcome(Verb::Cancel, Err("denied \u{2067}".into())), false),
        ] {
            let (line, went_well) = outcome_line(&o);
            assert_eq!(went_well, ok);
            assert!(!line.chars().any(crate::safe_text::is_unsafe), "{line:?}");
            assert!(line.contains("hub-\u{FFFD}"), "{line:?}");
        }
    }

    #[test]
    fn a_failure_line_prints_no_control_or_bidi_character() {
        // The two refusals of `flightdeck logs` for a job whose `--output` path is hostile.
        let osc = "not reading /tmp/a\u{1b}]0;pwned\u{7}b: it is a symbolic link";
        let dollar = "flightdeck does not read `/tmp/$x\u{1b}]0;pwned\u{7}`: its name holds characters a login \
                      shell could expand";
        for message in [osc, dollar, "c1 \u{9b}31m \u{9d}0;t\u{9c} bidi \u{202E}evil\u{2066}\u{200F}\u{061C}"] {
            let line = Failure(message.into()).line();
            assert!(line.starts_with("flightdeck: "), "{line:?}");
            assert!(!line.chars().any(crate::safe_text::is_unsafe), "{line:?}");
            // Readable: everything but the controls is still there, each control visible.
            assert_eq!(line.chars().count(), "flightdeck: ".len() + message.chars().count(), "{line:?}");
        }
        assert!(Failure(osc.into()).line().contains("/tmp/a\u{FFFD}]0;pwned\u{FFFD}b"));
    }
}
