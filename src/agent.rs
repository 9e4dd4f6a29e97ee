//! The reporter's life on one boot: resolve configuration, place this boot in
//! the ledger, tell the install flow from the host and the service, report
//! the boot's stage, ship bundles on an interval, and leave for good (last
//! bundle, credentials gone, unit disabled) once the job is over or the one
//! time budget, counted from the first start on this host, is spent — on
//! whichever boot that happens.
//!
//! Nothing here may fail or delay the installation: every runtime failure is
//! logged and the process exits 0; only usage errors (clap) exit 2.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;
use uuid::Uuid;

use crate::api::{ApiError, Client, ClientSettings, Host, HostProgress, HostScope, UploadTarget};
use crate::bundle::{BundleLimits, BundleMeta};
use crate::cleanup::CleanupPlan;
use crate::collect::CollectContext;
use crate::config::{Config, Flags, Paths};
use crate::flow::{self, Flow, HostSignals};
use crate::kubelet::HealthProbe;
use crate::ledger::{read_boot_id, read_uptime, Ledger};
use crate::records;
use crate::redact::Redactor;
use crate::stage::{self, Decision};
use crate::upload::Uploader;

/// Runtime failures end the process successfully: a failing reporter must
/// never mark anything on the host as failed.
pub const EXIT_RUNTIME_FAILURE: ExitCode = ExitCode::SUCCESS;

const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";
/// The live kernel's clock, deliberately not under `--root`.
const UPTIME_PATH: &str = "/proc/uptime";
/// How often kubelet is asked at most; it is cheap and local.
const KUBELET_POLL: Duration = Duration::from_secs(30);
/// While the service has not been reached, try again sooner than a full
/// interval so a short outage at boot does not cost ten minutes of reporting.
const UNREACHED_RETRY: Duration = Duration::from_secs(60);
/// Extra time the last bundle may take after the deadline: a quarter of the
/// budget, within these bounds, so a stalled service cannot stretch the end
/// much and a short budget still leaves time to collect.
const FINAL_UPLOAD_GRACE: Duration = Duration::from_secs(120);
const MIN_FINAL_UPLOAD_GRACE: Duration = Duration::from_secs(15);
/// Progress updates one boot may send, over every run of the reporter in
/// it (counted in the ledger). Each accepted update restarts the service's
/// stage timer; a boot needs at most: the local-ignition stage, the
/// control-plane stage, and a finding on each.
pub const MAX_PROGRESS_PUTS_PER_BOOT: u32 = 4;
/// Host lookups that may fail in a row before bundles are shipped anyway: the
/// first bundle should follow the stage report, but never at the price of
/// shipping nothing when only the host list is broken.
const LOOKUPS_BEFORE_SHIPPING_BLIND: u32 = 3;
/// Interval jitter (±10 %) spreads the hosts of a cluster installed together.
const JITTER: f64 = 0.10;

/// `run`: reports the boot and ships bundles until the job is over. Never
/// fails the boot: every problem is logged and the process exits 0 (the
/// unit's `Restart=` then has nothing to retry in a loop).
pub fn run(flags: Flags) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_service(flags));
    // A collector thread blocked on a hung command must not hold the exit.
    runtime.shutdown_timeout(Duration::from_secs(2));
    Ok(ExitCode::SUCCESS)
}

async fn run_service(args: Flags) {
    if finish_interrupted_cleanup(&args) {
        return;
    }
    let getenv = |name: &str| std::env::var(name).ok();
    let config = match Config::resolve(&args, &getenv) {
        Ok(config) => config,
        Err(err) => {
            tracing::error!("{err}; nothing can be reported, exiting");
            return;
        }
    };
    // Read once; every command the collectors run would inherit it otherwise.
    // Still single-threaded here (no blocking task has run yet).
    std::env::remove_var(crate::contract::env::TOKEN);
    // A proxy password in the environment would reach every command too.
    for name in crate::contract::env::HTTP_PROXY
        .iter()
        .chain(&crate::contract::env::HTTPS_PROXY)
    {
        std::env::remove_var(name);
    }
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    if config.insecure {
        tracing::warn!(
            "TLS CERTIFICATE VERIFICATION IS DISABLED (--insecure): anyone on the path to {} can read the agent token",
            config.service_url
        );
    }
    let mut reporter = match Reporter::new(config) {
        Ok(reporter) => reporter,
        Err(err) => {
            tracing::error!("{err:#}; exiting");
            return;
        }
    };
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; exiting");
        return;
    };
    let stopped = tokio::select! {
        () = reporter.run() => false,
        _ = term.recv() => {
            tracing::info!("stopping on SIGTERM (shutdown or reboot); the next boot continues within the same time budget");
            true
        }
        _ = int.recv() => {
            tracing::info!("stopping on SIGINT");
            true
        }
    };
    if stopped {
        // Whatever was in flight is dropped; the spent budget is kept so a
        // reboot never gives time back.
        reporter.checkpoint();
    }
}

/// The stage whose `progress_info` the reporter writes: the boot stage it set,
/// or, on a service without the new stages, the installer's stage it attached
/// the boot to. Any other stage's info belongs to the installer.
struct InfoOwner {
    stage: String,
    /// Fixed start of the info (the fallback's boot note), if any.
    prefix: Option<String>,
    /// What the service holds from us now.
    sent: String,
}

/// What the last look at the service said to do next.
enum Next {
    Continue,
    Finish,
    /// The host could not be read; `refused` when the token was rejected,
    /// so an upload with it would be refused too.
    Unreached {
        refused: bool,
    },
}

struct Reporter {
    config: Config,
    client: Client,
    uploader_template: (CollectContext, BundleLimits),
    kubelet: HealthProbe,
    ledger: Ledger,
    boot_id: String,
    boot_number: u32,
    /// When this boot began (wall clock), to date the host's signal files.
    boot_started: Option<SystemTime>,
    /// Budget already spent when this run started, and when that was.
    spent_at_start: Duration,
    started: Instant,
    deadline: Instant,
    cluster_id: Option<Uuid>,
    /// Configured, or learned from the cluster's host list.
    infra_env_id: Option<Uuid>,
    service_stage: Option<String>,
    /// The host as last read from the service.
    last_host: Option<Host>,
    /// The flow as last told, logged when it changes.
    flow: Flow,
    kubelet_healthy: bool,
    /// The last stage this boot settled on (set, or given up on).
    settled_target: Option<&'static str>,
    /// The per-boot progress update cap was hit and said so.
    put_cap_logged: bool,
    /// Where this boot's `progress_info` is ours to write, once it is.
    info_owner: Option<InfoOwner>,
    reached_service: bool,
    failed_lookups: u32,
    /// The service rejected the logs type: nothing more is sent on this boot.
    logs_refused: bool,
    /// The last host lookup was refused (401/403): an upload with the same
    /// token would be refused too.
    token_refused: bool,
    uploads: u32,
    /// The last bundle's worst diagnosis finding (bounded, redacted).
    diagnosis_headline: Option<String>,
    /// This host's draws for the first and the final bundle's delay.
    herd: HerdSpread,
    /// The first bundle of this run has had its delay (once per run: a
    /// retry after a failed upload is already spread by the first's).
    first_bundle_spread: bool,
}

impl Reporter {
    fn new(config: Config) -> anyhow::Result<Self> {
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

        for stale in crate::cleanup::stale_spill_files(&config.state_dir) {
            // Left by a reporter killed mid-creation; ours are nameless.
            let _ = std::fs::remove_file(stale);
        }
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

        let secrets = config
            .credentials
            .iter()
            .flat_map(|c| c.scrub.iter().map(|s| s.expose().to_owned()))
            .chain(config.proxy.secrets())
            .collect::<Vec<_>>();
        let redactor = Redactor::new(secrets);
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
            config,
        })
    }

    /// Budget spent so far, counted from the first start on this host.
    fn spent(&self) -> Duration {
        self.spent_at_start + self.started.elapsed()
    }

    /// Keeps the spent budget in the ledger: a later boot or restart counts
    /// from at least here, whatever the wall clock says.
    fn checkpoint(&mut self) {
        self.ledger.checkpoint_spent(self.spent());
        if let Err(err) = self.ledger.save(&self.config.state_dir) {
            tracing::warn!("{err:#}");
        }
    }

    /// What the last bundle may take beyond the deadline.
    fn final_grace(&self) -> Duration {
        (self.config.timeout / 4).clamp(MIN_FINAL_UPLOAD_GRACE, FINAL_UPLOAD_GRACE)
    }

    fn signals(&self) -> HostSignals {
        HostSignals::read(&self.config.root, self.boot_started)
    }

    /// Re-tells the flow from the host's files and the service's host kind;
    /// says so when it changes.
    fn update_flow(&mut self, signals: HostSignals) -> Flow {
        let kind = self.last_host.as_ref().and_then(|h| h.kind.as_deref());
        let flow = flow::classify(signals, self.boot_number, kind);
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
    fn target(&mut self) -> &'static str {
        let signals = self.signals();
        let flow = self.update_flow(signals);
        if flow::control_plane_config_running(flow, signals, self.boot_number, self.kubelet_healthy)
        {
            stage::BOOTED_WITH_CONTROL_PLANE_IGNITION
        } else {
            stage::BOOTED_WITH_LOCAL_IGNITION
        }
    }

    async fn run(&mut self) {
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
                    return;
                };
                self.checkpoint();
                let wait = if shipped || self.reached_service {
                    jittered(self.config.upload_interval)
                } else {
                    jittered(self.config.upload_interval.min(UNREACHED_RETRY))
                };
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

    /// One look at the service and one bundle. `None` when the job is over
    /// (the run ends); otherwise whether a bundle was delivered.
    async fn cycle(&mut self) -> Option<bool> {
        let ship_now = match self.refresh().await {
            Next::Finish => {
                self.finish("the service says the host is past the point where boot logs help")
                    .await;
                return None;
            }
            Next::Continue => {
                self.failed_lookups = 0;
                self.token_refused = false;
                true
            }
            Next::Unreached { refused } => {
                self.failed_lookups += 1;
                self.token_refused = refused;
                self.reached_service || self.failed_lookups >= LOOKUPS_BEFORE_SHIPPING_BLIND
            }
        };
        if ship_now {
            self.report_finding().await;
        }
        let reason = if self.uploads == 0 {
            "first"
        } else {
            "interval"
        };
        if ship_now && !self.first_bundle_spread && self.may_ship() {
            // After the stage report and its finding, before collecting:
            // only the upload waits. The cycle's deadline cuts the wait.
            self.first_bundle_spread = true;
            let delay = first_bundle_delay(
                self.config.upload_spread,
                self.config.upload_interval,
                self.herd.fraction(SpreadOf::FirstBundle),
            );
            self.wait_spread("first", delay).await;
        }
        Some(ship_now && self.ship(reason, self.deadline).await)
    }

    /// Kubelet is healthy outside a bootstrap: the control plane's
    /// configuration runs, the in-cluster controller takes over. Report the
    /// control-plane stage if the service is still before it, then leave.
    async fn finish_after_kubelet(&mut self) {
        tracing::info!("kubelet is healthy on a boot that is not a bootstrap: the job is over");
        if let Some(host) = self.last_host.clone() {
            let grace = Instant::now() + self.final_grace();
            let target = stage::BOOTED_WITH_CONTROL_PLANE_IGNITION;
            if self.settled_target != Some(target) {
                if let Decision::Report { .. } = stage::decide_target(target, &host) {
                    let _ = tokio::time::timeout_at(grace, self.report_stage(&host, target)).await;
                }
            }
        }
        self.finish("kubelet is healthy").await;
    }

    /// The job is over: last bundle (so every host, day-2 ones too, ships at
    /// least one), then cleanup.
    async fn finish(&mut self, why: &str) {
        tracing::info!("{why}: shipping the last bundle and cleaning up");
        let grace = self.final_grace();
        let now = Instant::now();
        let until = now + grace;
        if self.may_ship() {
            let delay = final_bundle_delay(
                self.config.upload_spread,
                self.config.upload_interval,
                grace,
                self.deadline.saturating_duration_since(now),
                self.herd.fraction(SpreadOf::FinalBundle),
            );
            self.wait_spread("final", delay).await;
        }
        // The delay is taken out of the grace, not added to it.
        if tokio::time::timeout_at(until, self.ship("final", until))
            .await
            .is_err()
        {
            tracing::warn!(
                "the last bundle did not go out within {}",
                humantime::format_duration(grace)
            );
        }
        self.clean_up();
    }

    async fn finish_at_deadline(&mut self) {
        self.finish(&format!(
            "the time budget of {} (from the first start on this host) is spent on boot {}",
            humantime::format_duration(self.config.timeout),
            self.boot_number
        ))
        .await;
    }

    /// Reads the host from the service and acts on its stage.
    async fn refresh(&mut self) -> Next {
        let scope = match (self.infra_env_id, self.cluster_id) {
            (Some(ie), _) => HostScope::InfraEnv(ie),
            (None, Some(c)) => HostScope::Cluster(c),
            (None, None) => return Next::Unreached { refused: false },
        };
        let host = match self
            .client
            .find_host_in(scope, self.config.host_id, Some(self.deadline))
            .await
        {
            Ok(host) => host,
            Err(err) => {
                log_api_error(&err);
                let refused = matches!(
                    err.status(),
                    Some(reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN)
                );
                return Next::Unreached { refused };
            }
        };
        self.reached_service = true;
        if let Some(cluster_id) = host.cluster_id {
            if self.cluster_id.is_some_and(|c| c != cluster_id) {
                tracing::warn!("the service places the host in cluster {cluster_id}, not the configured one; using the service's");
            }
            self.cluster_id = Some(cluster_id);
        }
        if self.infra_env_id.is_none() {
            if let Some(ie) = host.infra_env_id {
                tracing::info!("the cluster's host list places the host in infra-env {ie}");
                self.infra_env_id = Some(ie);
            }
        }
        let stage_changed = self.service_stage.as_deref() != host.current_stage();
        self.service_stage = host.current_stage().map(str::to_owned);
        self.last_host = Some(host.clone());
        let target = self.target();
        match stage::decide_target(target, &host) {
            Decision::NothingLeft { why } => {
                tracing::info!("{why}");
                Next::Finish
            }
            Decision::Hold { why } => {
                if stage_changed {
                    tracing::info!("{why}");
                }
                if host.current_stage() == Some(target) && self.settled_target != Some(target) {
                    // Set by an earlier run of this boot cut short before it
                    // could note it: note it now.
                    self.settle(target);
                }
                Next::Continue
            }
            Decision::Report { target } => {
                if self.settled_target != Some(target) {
                    self.report_stage(&host, target).await;
                }
                Next::Continue
            }
        }
    }

    async fn report_stage(&mut self, host: &Host, target: &'static str) {
        if self.ledger.new_stages_refused {
            // This service answered 400 to the new stages before: straight
            // to the fallback, one update instead of two.
            self.report_as_progress_info(host, target, None).await;
            return;
        }
        let current = host.current_stage().unwrap_or("none").to_owned();
        let finding = self.bootstrap_finding().await;
        let request = HostProgress {
            current_stage: target,
            progress_info: finding.as_deref(),
        };
        let Some(result) = self.put_progress(&request).await else {
            return;
        };
        match result {
            Ok(()) => {
                tracing::info!("stage set: {current:?} -> {target:?}");
                self.service_stage = Some(target.to_owned());
                self.info_owner = Some(InfoOwner {
                    stage: target.to_owned(),
                    prefix: None,
                    sent: finding.unwrap_or_default(),
                });
                self.settle(target);
            }
            Err(err) if err.status() == Some(reqwest::StatusCode::BAD_REQUEST) => {
                self.ledger.new_stages_refused = true;
                self.report_as_progress_info(host, target, Some(&err)).await;
            }
            Err(err) if err.status() == Some(reqwest::StatusCode::CONFLICT) => {
                // Someone (the installer) moved the host meanwhile, or its
                // status does not take stages: both mean "leave it".
                tracing::info!("{err}; leaving the stage alone");
                self.settle(target);
            }
            Err(err) => log_api_error(&err),
        }
    }

    /// Today's upstream answers 400 to the new stages; the same stage with a
    /// new `progress_info` is always accepted, so the boot still shows.
    async fn report_as_progress_info(
        &mut self,
        host: &Host,
        target: &'static str,
        rejection: Option<&ApiError>,
    ) {
        let rejection = rejection.map_or_else(
            || "refused earlier with 400".to_owned(),
            |r| r.reason().unwrap_or("400").to_owned(),
        );
        let Some(current) = host.current_stage() else {
            tracing::warn!(
                "the service does not know stage {target:?} ({rejection}); the host has no stage to attach the boot to as progress info"
            );
            self.settle(target);
            return;
        };
        let prefix = stage::fallback_progress_info(target, self.boot_number);
        let info = match self.bootstrap_finding().await {
            Some(finding) => format!("{prefix}; {finding}"),
            None => prefix.clone(),
        };
        if host.progress_info() == Some(info.as_str()) {
            // Already says so (an earlier run of this boot): no update.
            self.settle(target);
            return;
        }
        let request = HostProgress {
            current_stage: current,
            progress_info: Some(&info),
        };
        let Some(result) = self.put_progress(&request).await else {
            return;
        };
        match result {
            Ok(()) => {
                tracing::warn!(
                    "the service does not know stage {target:?} ({rejection}); reported it as progress info on stage {current:?} instead",
                );
                self.info_owner = Some(InfoOwner {
                    stage: current.to_owned(),
                    prefix: Some(prefix),
                    sent: info,
                });
            }
            Err(err) => log_api_error(&err),
        }
        self.settle(target);
    }

    /// Shows the bundle's worst bootstrap finding (e.g. which service and
    /// stage failed) as `progress_info` on the stage the reporter owns: the
    /// same stage with new info is always accepted, and it puts the cause in
    /// the UI before anyone opens a bundle.
    async fn report_finding(&mut self) {
        let Some(owner) = &self.info_owner else {
            return;
        };
        let digest = self.bootstrap_finding().await;
        let digest = digest.as_deref();
        if self.service_stage.as_deref() != Some(owner.stage.as_str()) {
            // The installer moved the host on; that stage's info is not ours.
            return;
        }
        let info = match (&owner.prefix, digest) {
            (Some(prefix), Some(digest)) => format!("{prefix}; {digest}"),
            (Some(prefix), None) => prefix.clone(),
            (None, Some(digest)) => digest.to_owned(),
            (None, None) => String::new(),
        };
        if info == owner.sent {
            return;
        }
        let stage = owner.stage.clone();
        let request = HostProgress {
            current_stage: &stage,
            progress_info: Some(&info),
        };
        let Some(result) = self.put_progress(&request).await else {
            return;
        };
        match result {
            Ok(()) => {
                tracing::info!("progress info on {stage:?}: {info:?}");
                if let Some(owner) = &mut self.info_owner {
                    owner.sent = info;
                }
            }
            Err(err) => log_api_error(&err),
        }
    }

    /// The worst finding in the bootstrap services' records, read from the
    /// host each time (a few KiB of JSON) so it reaches the UI even when the
    /// service refuses bundles. File reads and parsing happen on a blocking
    /// thread, bounded by the records collector's time limit: a stuck or
    /// huge file delays the progress update by at most that, never the
    /// runtime.
    async fn bootstrap_finding(&self) -> Option<String> {
        let limit = crate::collect::RECORDS_TIME_LIMIT;
        let root = self.config.root.clone();
        let summarize = tokio::task::spawn_blocking(move || records::summarize_host(&root, limit));
        // The summary stops reading at `limit` itself; the margin covers
        // the parse of what it read.
        match tokio::time::timeout(limit + Duration::from_secs(5), summarize).await {
            Ok(Ok(summary)) => crate::diagnose::progress_info(
                self.diagnosis_headline.as_deref(),
                summary.digest.map(|digest| {
                    self.uploader_template
                        .0
                        .redactor
                        .redact_str(&digest)
                        .into_owned()
                }),
            ),
            Ok(Err(err)) => {
                tracing::warn!("summarizing the bootstrap records failed: {err}");
                None
            }
            Err(_) => {
                tracing::warn!("summarizing the bootstrap records took too long; left out");
                None
            }
        }
    }

    /// `PUT .../progress` for this host, retried within the deadline; `None`
    /// when not sent: this boot's update cap is reached, or the infra-env is
    /// still unknown. Counted in the ledger before it goes out, so a restart
    /// cannot reset the count.
    async fn put_progress(&mut self, request: &HostProgress<'_>) -> Option<Result<(), ApiError>> {
        let infra_env_id = self.infra_env_id?;
        if self.ledger.progress_puts(&self.boot_id) >= MAX_PROGRESS_PUTS_PER_BOOT {
            if !self.put_cap_logged {
                tracing::info!(
                    "{MAX_PROGRESS_PUTS_PER_BOOT} progress updates sent on this boot (the cap): \
                     no more, each would restart the service's stage timer; bundles go on"
                );
                self.put_cap_logged = true;
            }
            return None;
        }
        self.ledger.count_progress_put(&self.boot_id);
        if let Err(err) = self.ledger.save(&self.config.state_dir) {
            tracing::warn!("{err:#}");
        }
        Some(
            self.client
                .update_progress(
                    infra_env_id,
                    self.config.host_id,
                    request,
                    Some(self.deadline),
                )
                .await,
        )
    }

    fn settle(&mut self, target: &'static str) {
        self.settled_target = Some(target);
        self.ledger.record_stage(&self.boot_id, target);
        if let Err(err) = self.ledger.save(&self.config.state_dir) {
            tracing::warn!("{err:#}");
        }
    }

    /// Whether `ship` would try at all: no delay is spent on a bundle that
    /// cannot go.
    fn may_ship(&self) -> bool {
        !self.logs_refused && !self.token_refused && self.cluster_id.is_some()
    }

    /// Sleeps a drawn spread delay (nothing at zero). SIGTERM drops it with
    /// the rest of the run: the shutdown path stays what it is.
    async fn wait_spread(&self, which: &str, delay: Duration) {
        if delay.is_zero() {
            return;
        }
        tracing::info!(
            "waiting {} ms before the {which} bundle (this host's share of the {} upload spread, \
             so hosts started together do not upload together)",
            delay.as_millis(),
            humantime::format_duration(self.config.upload_spread),
        );
        tokio::time::sleep(delay).await;
    }

    /// Collects and uploads one bundle; true when the service took it.
    async fn ship(&mut self, reason: &str, deadline: Instant) -> bool {
        if self.logs_refused || self.token_refused {
            return false;
        }
        let Some(cluster_id) = self.cluster_id else {
            tracing::warn!(
                "no cluster ID known yet (not configured, service not reached): bundle not sent"
            );
            return false;
        };
        let (collect, limits) = self.uploader_template.clone();
        let uploader = Uploader {
            client: self.client.clone(),
            target: UploadTarget {
                cluster_id,
                host_id: self.config.host_id,
                infra_env_id: self.infra_env_id,
                logs_type: self.config.logs_type.clone(),
            },
            collect,
            limits,
        };
        let meta = BundleMeta {
            agent_version: env!("CARGO_PKG_VERSION").to_owned(),
            host_id: self.config.host_id.to_string(),
            infra_env_id: self
                .infra_env_id
                .map(|id| id.to_string())
                .unwrap_or_default(),
            cluster_id: Some(cluster_id.to_string()),
            boot_id: self.boot_id.clone(),
            boot_number: self.boot_number,
            service_stage: self.service_stage.clone(),
            reason: reason.to_owned(),
        };
        match uploader.upload(&meta, Some(deadline)).await {
            Ok(done) => {
                self.uploads += 1;
                self.diagnosis_headline = done.manifest.diagnosis_headline().map(str::to_owned);
                self.reached_service = true;
                tracing::info!(
                    "uploaded the {reason} {} bundle: {} bytes compressed in {}",
                    self.config.logs_type,
                    done.compressed_bytes,
                    humantime::format_duration(Duration::from_millis(
                        u64::try_from(done.elapsed.as_millis()).unwrap_or(u64::MAX)
                    )),
                );
                true
            }
            Err(err) => {
                log_api_error(&err);
                if err.status() == Some(reqwest::StatusCode::BAD_REQUEST)
                    && err.reason().is_some_and(|r| r.contains("logs_type"))
                {
                    tracing::warn!(
                        "this assisted-service does not accept logs of type {:?}; no more bundles are sent on this boot",
                        self.config.logs_type
                    );
                    self.logs_refused = true;
                }
                false
            }
        }
    }

    fn clean_up(&self) {
        let plan = CleanupPlan {
            config_dir: self.config.config_dir.clone(),
            state_dir: self.config.state_dir.clone(),
            root: self.config.root.clone(),
        };
        run_cleanup(&plan);
    }
}

fn run_cleanup(plan: &CleanupPlan) {
    let report = plan.execute();
    for failure in &report.failures {
        tracing::warn!("cleanup: {failure}");
    }
    tracing::info!(
        "cleanup done: removed {} path(s){}; the reporter will not run again",
        report.removed.len(),
        if report.unit_disabled {
            ", unit disabled"
        } else {
            ""
        }
    );
}

/// A cleanup cut short (killed, power lost) left its marker: finish it
/// before anything else, since the contract may be half gone. True if so.
fn finish_interrupted_cleanup(args: &Flags) -> bool {
    let Paths {
        root,
        config_dir,
        state_dir,
    } = Paths::resolve(args);
    if !crate::cleanup::cleanup_interrupted(&state_dir) {
        return false;
    }
    tracing::info!("an earlier cleanup was interrupted; finishing it");
    run_cleanup(&CleanupPlan {
        config_dir,
        state_dir,
        root,
    });
    true
}

fn log_api_error(err: &ApiError) {
    match err {
        ApiError::Status { status, .. }
            if *status == reqwest::StatusCode::UNAUTHORIZED
                || *status == reqwest::StatusCode::FORBIDDEN =>
        {
            tracing::error!(
                "{err}: the agent token was refused; check the pull secret in the discovery contract"
            );
        }
        // Configuration, not weather: say it loudly.
        ApiError::Tls { .. } | ApiError::Redirect { .. } => tracing::error!("{err}"),
        _ => tracing::warn!("{err}"),
    }
}

fn jittered(interval: Duration) -> Duration {
    interval.mul_f64(1.0 - JITTER + 2.0 * JITTER * fastrand::f64())
}

/// Per-host draws for the two bundles no interval jitter spreads: the first
/// (right after the stage report) and the final one (the job's end, the
/// budget's deadline being the same moment for hosts powered on together).
/// A draw of the process's random generator is mixed with the host ID,
/// unique per host, and the boot ID, so hosts with identical clocks, or
/// cloned with the same early-boot entropy, still draw apart.
#[derive(Debug, Clone, Copy)]
struct HerdSpread {
    seed: u64,
}

/// Which bundle a fraction is for: independent draws, so a host early in
/// the first round is not early at the end too.
#[derive(Debug, Clone, Copy, Hash)]
enum SpreadOf {
    FirstBundle,
    FinalBundle,
}

impl HerdSpread {
    fn new(host_id: Uuid, boot_id: &str, entropy: u64) -> Self {
        Self {
            seed: mix(&(host_id.as_u128(), boot_id, entropy)),
        }
    }

    /// Uniform in [0, 1): the top 53 bits, each value exact in an f64.
    #[allow(clippy::cast_precision_loss)]
    fn fraction(self, of: SpreadOf) -> f64 {
        (mix(&(self.seed, of)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// SipHash with fixed keys: a stable, well-mixed 64-bit digest.
fn mix(value: &impl std::hash::Hash) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// The first bundle waits its share of the spread, at most one interval so
/// it never comes later than a second bundle would have.
fn first_bundle_delay(spread: Duration, interval: Duration, fraction: f64) -> Duration {
    spread.min(interval).mul_f64(fraction.clamp(0.0, 1.0))
}

/// The final bundle waits its share of the spread, within one interval and
/// inside the job's end, leaving the upload at least as long as the wait:
/// within the first half of what is left before the budget's deadline when
/// the job ends earlier (Done, a healthy kubelet), within the first half of
/// the final grace once the budget is spent.
fn final_bundle_delay(
    spread: Duration,
    interval: Duration,
    grace: Duration,
    before_deadline: Duration,
    fraction: f64,
) -> Duration {
    let room = if before_deadline.is_zero() {
        grace / 2
    } else {
        (grace / 2).min(before_deadline / 2)
    };
    spread
        .min(interval)
        .min(room)
        .mul_f64(fraction.clamp(0.0, 1.0))
}

fn round_secs(d: Duration) -> Duration {
    Duration::from_secs((d + Duration::from_millis(500)).as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most uploads starting within any one second.
    fn busiest_second(mut starts: Vec<Duration>) -> usize {
        starts.sort();
        let mut busiest = 0;
        let mut first = 0;
        for (last, start) in starts.iter().enumerate() {
            while start.saturating_sub(starts[first]) >= Duration::from_secs(1) {
                first += 1;
            }
            busiest = busiest.max(last - first + 1);
        }
        busiest
    }

    fn hosts(n: u64) -> Vec<Uuid> {
        let mut rng = fastrand::Rng::with_seed(15);
        (0..n).map(|_| Uuid::from_u128(rng.u128(..))).collect()
    }

    #[test]
    fn a_thousand_hosts_with_identical_clocks_spread_under_five_percent_a_second() {
        // The worst case for a process seed: every host drew the same.
        const SAME_ENTROPY: u64 = 42;
        let boot_id = "8d3e7c1a-5f0b-4a8e-9c2d-1b6f4e3a7d90";
        let spread = crate::config::DEFAULT_UPLOAD_SPREAD;
        let interval = crate::config::DEFAULT_UPLOAD_INTERVAL;
        let draws: Vec<HerdSpread> = hosts(1000)
            .into_iter()
            .map(|host| HerdSpread::new(host, boot_id, SAME_ENTROPY))
            .collect();
        let firsts: Vec<Duration> = draws
            .iter()
            .map(|d| first_bundle_delay(spread, interval, d.fraction(SpreadOf::FirstBundle)))
            .collect();
        let finals: Vec<Duration> = draws
            .iter()
            .map(|d| {
                final_bundle_delay(
                    spread,
                    interval,
                    Duration::from_secs(120),
                    Duration::ZERO,
                    d.fraction(SpreadOf::FinalBundle),
                )
            })
            .collect();
        for (what, delays) in [("first", firsts), ("final", finals)] {
            assert!(delays.iter().all(|d| *d < spread), "{what}");
            let busiest = busiest_second(delays);
            assert!(busiest <= 50, "{what}: {busiest} of 1000 in one second");
        }
        // Independent draws: early in the first round is not early at the end.
        let same_half = draws
            .iter()
            .filter(|d| {
                (d.fraction(SpreadOf::FirstBundle) < 0.5)
                    == (d.fraction(SpreadOf::FinalBundle) < 0.5)
            })
            .count();
        assert!((400..=600).contains(&same_half), "{same_half}");
    }

    #[test]
    fn the_draw_is_uniform_and_depends_on_host_boot_and_seed() {
        let host = Uuid::from_u128(1);
        let draw = |host, boot: &str, entropy| {
            HerdSpread::new(host, boot, entropy).fraction(SpreadOf::FirstBundle)
        };
        // Bit patterns: the same inputs give the very same value.
        let bits = |host, boot: &str, entropy| f64::to_bits(draw(host, boot, entropy));
        let base = draw(host, "boot-a", 7);
        assert!((0.0..1.0).contains(&base));
        let base_bits = base.to_bits();
        assert_eq!(base_bits, bits(host, "boot-a", 7));
        assert_ne!(base_bits, bits(Uuid::from_u128(2), "boot-a", 7));
        assert_ne!(base_bits, bits(host, "boot-b", 7));
        assert_ne!(base_bits, bits(host, "boot-a", 8));
        let mut deciles = [0usize; 10];
        for host in hosts(10_000) {
            let fraction = draw(host, "boot-a", 7);
            assert!((0.0..1.0).contains(&fraction), "{fraction}");
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let decile = (fraction * 10.0) as usize;
            deciles[decile] += 1;
        }
        // 1,000 expected each; 4.5 standard deviations either side.
        assert!(
            deciles.iter().all(|n| (860..=1140).contains(n)),
            "{deciles:?}"
        );
    }

    #[test]
    fn the_first_bundle_waits_at_most_the_spread_and_one_interval() {
        let minute = Duration::from_secs(60);
        let ten = Duration::from_secs(600);
        assert_eq!(
            first_bundle_delay(Duration::ZERO, ten, 0.999),
            Duration::ZERO
        );
        assert_eq!(first_bundle_delay(minute, ten, 0.0), Duration::ZERO);
        assert_eq!(
            first_bundle_delay(minute, ten, 0.5),
            Duration::from_secs(30)
        );
        assert!(first_bundle_delay(minute, ten, 0.999_999) < minute);
        // A short interval bounds it: never later than a second bundle.
        let second = Duration::from_secs(1);
        assert!(first_bundle_delay(minute, second, 0.999_999) < second);
    }

    #[test]
    fn the_final_bundle_waits_inside_the_deadline_and_half_the_grace() {
        let minute = Duration::from_secs(60);
        let ten = Duration::from_secs(600);
        let grace = Duration::from_secs(120);
        let almost_one = 0.999_999;
        // The budget ended it: half the grace, the upload keeps the rest.
        assert!(final_bundle_delay(minute, ten, grace, Duration::ZERO, almost_one) < minute);
        let short_grace = Duration::from_secs(15);
        assert!(
            final_bundle_delay(minute, ten, short_grace, Duration::ZERO, almost_one)
                < Duration::from_millis(7500)
        );
        // The job ended earlier: never past the deadline.
        let left = Duration::from_secs(5);
        assert!(final_bundle_delay(minute, ten, grace, left, almost_one) < left / 2);
        assert!(
            final_bundle_delay(minute, ten, grace, Duration::from_secs(3600), almost_one) < minute
        );
        assert_eq!(
            final_bundle_delay(Duration::ZERO, ten, grace, Duration::ZERO, almost_one),
            Duration::ZERO
        );
        assert!(
            final_bundle_delay(minute, Duration::from_secs(1), grace, left, almost_one)
                < Duration::from_secs(1)
        );
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        let interval = Duration::from_secs(600);
        for _ in 0..1000 {
            let d = jittered(interval);
            assert!(
                d >= Duration::from_secs(540) && d <= Duration::from_secs(660),
                "{d:?}"
            );
        }
    }
}
