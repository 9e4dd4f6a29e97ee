//! The reporter's state on one boot and its main loop: configuration
//! resolved into a client, a collect context and the ledger's view of this
//! boot and of the time budget; then bundle cycles on the interval, kubelet
//! polled between them, until the job is over or the budget spent.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;
use uuid::Uuid;

use super::spread::{jittered, HerdSpread};
use crate::api::{Client, ClientSettings, Host};
use crate::bundle::BundleLimits;
use crate::collect::CollectContext;
use crate::config::Config;
use crate::flow::{self, Flow, HostSignals, ServiceView};
use crate::kubelet::HealthProbe;
use crate::ledger::{read_boot_id, read_uptime, Ledger};
use crate::redact::Redactor;
use crate::stage;

const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// The live kernel's clock, deliberately not under `--root`.
const UPTIME_PATH: &str = "/proc/uptime";

/// How often kubelet is asked at most; it is cheap and local.
const KUBELET_POLL: Duration = Duration::from_secs(30);

/// While the service has not been reached, try again sooner than a full
/// interval so a short outage at boot does not cost ten minutes of reporting.
const UNREACHED_RETRY: Duration = Duration::from_secs(60);

/// The stage whose `progress_info` the reporter writes: the boot stage it set,
/// or, on a service without the new stages, the installer's stage it attached
/// the boot to. Any other stage's info belongs to the installer.
pub(super) struct InfoOwner {
    pub(super) stage: String,
    /// Fixed start of the info (the fallback's boot note), if any.
    pub(super) prefix: Option<String>,
    /// What the service holds from us now.
    pub(super) sent: String,
}

/// One run of the reporter on this boot: what it was told, what it has
/// learned from the service and the host, and what it has done so far.
pub(super) struct Reporter {
    pub(super) config: Config,
    pub(super) client: Client,
    pub(super) uploader_template: (CollectContext, BundleLimits),
    pub(super) kubelet: HealthProbe,
    pub(super) ledger: Ledger,
    pub(super) boot_id: String,
    pub(super) boot_number: u32,
    /// When this boot began (wall clock), to date the host's signal files.
    pub(super) boot_started: Option<SystemTime>,
    /// Budget already spent when this run started, and when that was.
    pub(super) spent_at_start: Duration,
    pub(super) started: Instant,
    pub(super) deadline: Instant,
    pub(super) cluster_id: Option<Uuid>,
    /// Configured, or learned from the cluster's host list.
    pub(super) infra_env_id: Option<Uuid>,
    pub(super) service_stage: Option<String>,
    /// The host as last read from the service.
    pub(super) last_host: Option<Host>,
    /// The flow as last told, logged when it changes.
    pub(super) flow: Flow,
    pub(super) kubelet_healthy: bool,
    /// The service says this host bootstraps a single-node cluster
    /// (`None` until it said either way).
    pub(super) single_node_bootstrap: Option<bool>,
    /// The cluster could not be read: not asked again in this run.
    pub(super) cluster_unreadable: bool,
    /// The bootstrap-in-place files were seen in this run.
    bootstrap_files_seen: bool,
    /// The last stage this boot settled on (set, or given up on).
    pub(super) settled_target: Option<&'static str>,
    /// The per-boot progress update cap was hit and said so.
    pub(super) put_cap_logged: bool,
    /// Where this boot's `progress_info` is ours to write, once it is.
    pub(super) info_owner: Option<InfoOwner>,
    pub(super) reached_service: bool,
    pub(super) failed_lookups: u32,
    /// The service rejected the logs type: nothing more is sent on this boot.
    pub(super) logs_refused: bool,
    /// The last host lookup was refused (401/403): an upload with the same
    /// token would be refused too.
    pub(super) token_refused: bool,
    pub(super) uploads: u32,
    /// The last bundle's worst diagnosis finding (bounded, redacted).
    pub(super) diagnosis_headline: Option<String>,
    /// This host's draws for the first and the final bundle's delay.
    pub(super) herd: HerdSpread,
    /// The first bundle of this run has had its delay (once per run: a
    /// retry after a failed upload is already spread by the first's).
    pub(super) first_bundle_spread: bool,
    /// The collectors' programs last said to be missing from PATH: said
    /// again only when that changes, not every bundle.
    pub(super) missing_tools: Vec<String>,
    /// The cleanup has started: the ledger is being removed and must not be
    /// written again by this run.
    pub(super) cleanup_begun: bool,
}

impl Reporter {
    pub(super) fn new(mut config: Config) -> anyhow::Result<Self> {
        let client = Client::new(&ClientSettings {
            service_url: config.service_url.clone(),
            token: config.credentials.as_ref().map(|c| c.token.clone()),
            ca_cert: config.ca_cert.clone(),
            insecure: config.insecure,
            request_timeout: config.request_timeout,
            retry: config.retry,
            proxy: config.proxy.clone(),
        })?;
        let kubelet = HealthProbe::new(config.kubelet_healthz_url.clone())?;
        let boot_id = read_boot_id(&config.host_path(BOOT_ID_PATH))?;
        let uptime = read_uptime(std::path::Path::new(UPTIME_PATH)).ok();

        let (mut ledger, warning) = Ledger::load(&config.state_dir)?;
        if let Some(warning) = warning {
            tracing::warn!("{warning}");
        }
        let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let (boot_number, _) = ledger.observe(&boot_id, now, uptime.unwrap_or(0.0));
        // The budget runs from the first start on this host, across boots
        // and restarts (`Ledger::budget_spent` says how it is measured).
        let (spent, clock_warning) = ledger.budget_spent(&boot_id, SystemTime::now(), uptime);
        if let Some(warning) = clock_warning {
            tracing::warn!("{warning}");
        }
        let settled_target = match ledger.reported_stage(&boot_id) {
            Some(s) if s == stage::BOOTED_WITH_CONTROL_PLANE_IGNITION => {
                Some(stage::BOOTED_WITH_CONTROL_PLANE_IGNITION)
            }
            Some(s) if s == stage::BOOTED_WITH_LOCAL_IGNITION => {
                Some(stage::BOOTED_WITH_LOCAL_IGNITION)
            }
            _ => None,
        };
        let boot_started =
            uptime.and_then(|u| SystemTime::now().checked_sub(Duration::from_secs_f64(u)));
        if let Err(err) = ledger.save(&config.state_dir) {
            // Without a ledger the next boot looks like the first: it then
            // reports nothing backwards, so this is worth a warning, not an exit.
            tracing::warn!("{err:#}");
        }
        let deadline = Instant::now() + config.timeout.saturating_sub(spent);

        // Taken, not copied: nothing else reads them, and a pull secret of
        // thousands of auths held them twice while the redactor was built.
        let scrub = config
            .credentials
            .as_mut()
            .map(|c| std::mem::take(&mut c.scrub))
            .unwrap_or_default();
        let proxy_secrets = config.proxy.secrets();
        let redactor = Redactor::new(
            scrub
                .iter()
                .map(|s| s.expose().as_bytes())
                .chain(proxy_secrets.iter().map(String::as_bytes)),
        );
        drop(scrub);
        crate::redact::install_for_logs(&redactor);
        let mut collect =
            CollectContext::new(config.root.clone(), config.command_timeout, redactor);
        collect.kubelet_healthz_url = Some(config.kubelet_healthz_url.to_string());
        // Each journal byte is read once per run: later bundles continue the
        // journal members from where the last one stopped (collect::journal).
        collect.journal_cache = Some(std::sync::Arc::new(std::sync::Mutex::new(
            crate::collect::journal::Cache::new(BundleLimits::default().member_bytes),
        )));
        let herd = HerdSpread::new(config.host_id, &boot_id, fastrand::u64(..));
        Ok(Self {
            cluster_id: config.cluster_id,
            infra_env_id: config.infra_env_id,
            client,
            uploader_template: (collect, BundleLimits::default()),
            kubelet,
            ledger,
            boot_id,
            boot_number,
            boot_started,
            spent_at_start: spent,
            started: Instant::now(),
            deadline,
            service_stage: None,
            last_host: None,
            flow: Flow::Undetermined,
            kubelet_healthy: false,
            single_node_bootstrap: None,
            cluster_unreadable: false,
            bootstrap_files_seen: false,
            settled_target,
            put_cap_logged: false,
            info_owner: None,
            reached_service: false,
            failed_lookups: 0,
            logs_refused: false,
            token_refused: false,
            uploads: 0,
            diagnosis_headline: None,
            herd,
            first_bundle_spread: false,
            missing_tools: Vec::new(),
            cleanup_begun: false,
            config,
        })
    }

    /// Budget spent so far, counted from the first start on this host.
    fn spent(&self) -> Duration {
        self.spent_at_start + self.started.elapsed()
    }

    /// Keeps the spent budget in the ledger: a later boot or restart counts
    /// from at least here, whatever the wall clock says.
    pub(super) fn checkpoint(&mut self) {
        self.ledger.checkpoint_spent(self.spent());
        if let Err(err) = self.ledger.save(&self.config.state_dir) {
            tracing::warn!("{err:#}");
        }
    }

    /// The host's files, and the service's word where they are silent: a
    /// single node's bootstrap host runs its bootstrap on its first boot
    /// from disk, bootstrap-in-place files or not (unless this run saw
    /// them and then saw them go: the bootstrap is over).
    fn signals(&mut self) -> HostSignals {
        let mut signals = HostSignals::read(&self.config.root, self.boot_started);
        if signals.bootstrap_in_place {
            self.bootstrap_files_seen = true;
        } else if self.boot_number == 1
            && !self.bootstrap_files_seen
            && self.single_node_bootstrap == Some(true)
        {
            signals.bootstrap_in_place = true;
        }
        signals
    }

    /// Re-tells the flow from the host's files and the service's host kind;
    /// says so when it changes.
    fn update_flow(&mut self, signals: HostSignals) -> Flow {
        let service = ServiceView {
            host_kind: self.last_host.as_ref().and_then(|h| h.kind.as_deref()),
            single_node_bootstrap: self.single_node_bootstrap == Some(true),
        };
        let flow = flow::classify(signals, self.boot_number, service);
        if flow != self.flow {
            tracing::info!(
                "install flow: {} (boot {} from disk)",
                flow.describe(),
                self.boot_number
            );
            self.flow = flow;
        }
        flow
    }

    /// The stage this boot stands at now: `Booted with control plane
    /// ignition` once the control plane's configuration is applied and
    /// running (see `flow::control_plane_config_running`), before that
    /// `Booted with local ignition`.
    pub(super) fn target(&mut self) -> &'static str {
        let signals = self.signals();
        let flow = self.update_flow(signals);
        if flow::control_plane_config_running(flow, signals, self.boot_number, self.kubelet_healthy)
        {
            stage::BOOTED_WITH_CONTROL_PLANE_IGNITION
        } else {
            stage::BOOTED_WITH_LOCAL_IGNITION
        }
    }

    pub(super) async fn run(&mut self) {
        tracing::info!(
            "assisted-boot-reporter {}: host {} of {}, boot {} from disk (boot ID {}), service {}, \
             bundle every {}, {} of the {} budget left (counted from the first start on this host)",
            env!("CARGO_PKG_VERSION"),
            self.config.host_id,
            match (self.infra_env_id, self.cluster_id) {
                (Some(ie), _) => format!("infra-env {ie}"),
                (None, Some(c)) => format!("cluster {c} (infra-env to be learned from its host list)"),
                (None, None) => "no infra-env".to_owned(),
            },
            self.boot_number,
            self.boot_id,
            self.config.service_url.as_str().trim_end_matches('/'),
            humantime::format_duration(self.config.upload_interval),
            humantime::format_duration(round_secs(self.deadline.saturating_duration_since(Instant::now()))),
            humantime::format_duration(self.config.timeout),
        );
        let mut next_cycle = Instant::now();
        let mut next_kubelet = Instant::now();
        loop {
            let now = Instant::now();
            if now >= self.deadline {
                self.finish_at_deadline().await;
                return;
            }
            if now >= next_cycle {
                // A hung request or collector must not hold the budget: the
                // cycle is cut at the deadline and the loop ends the run.
                let deadline = self.deadline;
                let Ok(shipped) = tokio::time::timeout_at(deadline, self.cycle()).await else {
                    tracing::warn!("the budget ran out in the middle of a cycle; cut short");
                    continue;
                };
                let Some(shipped) = shipped else {
                    // Outside the cycle's deadline: the end of the job has
                    // its own bound (deadline + grace), and a cleanup cut
                    // here would run again beside the deadline's.
                    self.finish("the service says the host is past the point where boot logs help")
                        .await;
                    return;
                };
                self.checkpoint();
                let wait = if shipped || self.reached_service {
                    jittered(self.config.upload_interval)
                } else {
                    jittered(self.config.upload_interval.min(UNREACHED_RETRY))
                };
                tracing::debug!("next cycle in {} ms", wait.as_millis());
                next_cycle = Instant::now() + wait;
            }
            if Instant::now() >= next_kubelet {
                self.kubelet_healthy = self.kubelet.is_healthy().await;
                if self.kubelet_healthy {
                    let signals = self.signals();
                    if flow::kubelet_ends_job(signals) {
                        self.finish_after_kubelet().await;
                        return;
                    }
                    tracing::debug!(
                        "kubelet is healthy but {}: not the end of the job",
                        if signals.bootstrap_in_place {
                            "this boot still runs the single-node bootstrap"
                        } else {
                            "the machine config is not applied yet"
                        }
                    );
                }
                next_kubelet = Instant::now() + KUBELET_POLL.min(self.config.upload_interval);
            }
            let wake = next_cycle.min(self.deadline).min(next_kubelet);
            tokio::time::sleep_until(wake).await;
        }
    }
}

fn round_secs(d: Duration) -> Duration {
    Duration::from_secs((d + Duration::from_millis(500)).as_secs())
}
