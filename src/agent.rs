//! The reporter's life on one boot: resolve configuration, place this boot in
//! the ledger, report the boot's stage, ship bundles on an interval, and on
//! the second boot leave for good once kubelet is healthy or time is up.
//!
//! Nothing here may fail or delay the installation: every runtime failure is
//! logged and the process exits 0; only usage errors (clap) exit 2.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;
use uuid::Uuid;

use crate::api::{ApiError, Client, ClientSettings, Host, HostProgress, UploadTarget};
use crate::bundle::{BundleLimits, BundleMeta};
use crate::cleanup::CleanupPlan;
use crate::cli::{Cli, Command, RunArgs};
use crate::collect::CollectContext;
use crate::config::Config;
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
/// Extra time the last upload may take after the deadline.
const FINAL_UPLOAD_GRACE: Duration = Duration::from_secs(120);
/// Host lookups that may fail in a row before bundles are shipped anyway: the
/// first bundle should follow the stage report, but never at the price of
/// shipping nothing when only the host list is broken.
const LOOKUPS_BEFORE_SHIPPING_BLIND: u32 = 3;
/// Interval jitter (±10 %) spreads the hosts of a cluster installed together.
const JITTER: f64 = 0.10;

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(run_service(args));
            // A collector thread blocked on a hung command must not hold the exit.
            runtime.shutdown_timeout(Duration::from_secs(2));
            Ok(ExitCode::SUCCESS)
        }
        // An admin tool, not the boot-time agent: its failures exit non-zero.
        Command::Ignition(args) => Ok(crate::ignition::run(&args)),
        // Interactive tools too: their failures exit 1 (`offline::EXIT_TOOL_FAILURE`).
        Command::Collect(args) => Ok(crate::offline::collect_command(&args)),
        Command::Inspect(args) => Ok(crate::offline::inspect_command(&args)),
    }
}

async fn run_service(args: RunArgs) {
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
    std::env::remove_var(crate::config::env::TOKEN);
    // A proxy password in the environment would reach every command too.
    for name in crate::config::env::HTTP_PROXY
        .iter()
        .chain(&crate::config::env::HTTPS_PROXY)
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
    tokio::select! {
        () = reporter.run() => {}
        _ = term.recv() => tracing::info!("stopping on SIGTERM (shutdown or reboot); the next boot reports again"),
        _ = int.recv() => tracing::info!("stopping on SIGINT"),
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
enum Flow {
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
    deadline: Instant,
    cluster_id: Option<Uuid>,
    service_stage: Option<String>,
    /// No further stage move is wanted on this boot.
    stage_settled: bool,
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
        let (boot_number, record) = ledger.observe(&boot_id, now, uptime.unwrap_or(0.0));
        // Time already spent in this boot by an earlier run of the reporter.
        let spent = match uptime {
            Some(uptime) => {
                Duration::from_secs_f64((uptime - record.first_seen_uptime_secs).max(0.0))
            }
            None => Duration::ZERO,
        };
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
        // Big members wait on disk, not in memory: the state directory is on
        // the host's disk, where $TMPDIR may be RAM.
        collect.spill_dir = Some(config.state_dir.clone());
        collect.kubelet_healthz_url = Some(config.kubelet_healthz_url.to_string());
        Ok(Self {
            cluster_id: config.cluster_id,
            client,
            uploader_template: (collect, BundleLimits::default()),
            kubelet,
            ledger,
            boot_id,
            boot_number,
            deadline,
            service_stage: None,
            stage_settled: false,
            info_owner: None,
            reached_service: false,
            failed_lookups: 0,
            logs_refused: false,
            token_refused: false,
            uploads: 0,
            diagnosis_headline: None,
            config,
        })
    }

    fn second_boot_or_later(&self) -> bool {
        self.boot_number >= 2
    }

    async fn run(&mut self) {
        tracing::info!(
            "assisted-boot-reporter {}: host {} of infra-env {}, boot {} from disk (boot ID {}), service {}, \
             bundle every {} until {} from now",
            env!("CARGO_PKG_VERSION"),
            self.config.host_id,
            self.config.infra_env_id,
            self.boot_number,
            self.boot_id,
            self.config.service_url.as_str().trim_end_matches('/'),
            humantime::format_duration(self.config.upload_interval),
            humantime::format_duration(round_secs(self.deadline.saturating_duration_since(Instant::now()))),
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
                let ship_now = match self.refresh().await {
                    Flow::Finish => {
                        self.clean_up();
                        return;
                    }
                    Flow::Continue => {
                        self.failed_lookups = 0;
                        self.token_refused = false;
                        true
                    }
                    Flow::Unreached { refused } => {
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
                let shipped = ship_now && self.ship(reason, self.deadline).await;
                let wait = if shipped || self.reached_service {
                    jittered(self.config.upload_interval)
                } else {
                    jittered(self.config.upload_interval.min(UNREACHED_RETRY))
                };
                next_cycle = Instant::now() + wait;
            }
            if self.second_boot_or_later() && Instant::now() >= next_kubelet {
                if self.kubelet.is_healthy().await {
                    tracing::info!("kubelet is healthy: shipping the last bundle and cleaning up");
                    self.ship("final", Instant::now() + FINAL_UPLOAD_GRACE)
                        .await;
                    self.clean_up();
                    return;
                }
                next_kubelet = Instant::now() + KUBELET_POLL.min(self.config.upload_interval);
            }
            let mut wake = next_cycle.min(self.deadline);
            if self.second_boot_or_later() {
                wake = wake.min(next_kubelet);
            }
            tokio::time::sleep_until(wake).await;
        }
    }

    async fn finish_at_deadline(&mut self) {
        if self.second_boot_or_later() {
            tracing::info!(
                "timeout of {} reached on boot {}: shipping the last bundle and cleaning up",
                humantime::format_duration(self.config.timeout),
                self.boot_number
            );
            self.ship("final", Instant::now() + FINAL_UPLOAD_GRACE)
                .await;
            self.clean_up();
        } else {
            tracing::info!(
                "timeout of {} reached on the first boot: shipping the last bundle and stopping; \
                 credentials stay for the second boot",
                humantime::format_duration(self.config.timeout)
            );
            self.ship("final", Instant::now() + FINAL_UPLOAD_GRACE)
                .await;
        }
    }

    /// Reads the host from the service and acts on its stage.
    async fn refresh(&mut self) -> Flow {
        let host = match self
            .client
            .find_host(
                self.config.infra_env_id,
                self.config.host_id,
                Some(self.deadline),
            )
            .await
        {
            Ok(host) => host,
            Err(err) => {
                log_api_error(&err);
                let refused = matches!(
                    err.status(),
                    Some(reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN)
                );
                return Flow::Unreached { refused };
            }
        };
        self.reached_service = true;
        if let Some(cluster_id) = host.cluster_id {
            if self.cluster_id.is_some_and(|c| c != cluster_id) {
                tracing::warn!("the service places the host in cluster {cluster_id}, not the configured one; using the service's");
            }
            self.cluster_id = Some(cluster_id);
        }
        let stage_changed = self.service_stage.as_deref() != host.current_stage();
        self.service_stage = host.current_stage().map(str::to_owned);
        match stage::decide(self.boot_number, &host) {
            Decision::NothingLeft { why } => {
                tracing::info!("{why}; cleaning up");
                Flow::Finish
            }
            Decision::Hold { why } => {
                if stage_changed {
                    tracing::info!("{why}");
                }
                Flow::Continue
            }
            Decision::Report { target } => {
                if !self.stage_settled {
                    self.report_stage(&host, target).await;
                }
                Flow::Continue
            }
        }
    }

    async fn report_stage(&mut self, host: &Host, target: &'static str) {
        let current = host.current_stage().unwrap_or("none").to_owned();
        let finding = self.bootstrap_finding().await;
        let request = HostProgress {
            current_stage: target,
            progress_info: finding.as_deref(),
        };
        match self.put_progress(&request).await {
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
                self.report_as_progress_info(host, target, &err).await;
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
        rejection: &ApiError,
    ) {
        let Some(current) = host.current_stage() else {
            tracing::warn!(
                "{rejection}; the host has no stage to attach the boot to as progress info"
            );
            self.settle(target);
            return;
        };
        let prefix = stage::fallback_progress_info(target, self.boot_number);
        let info = match self.bootstrap_finding().await {
            Some(finding) => format!("{prefix}; {finding}"),
            None => prefix.clone(),
        };
        let request = HostProgress {
            current_stage: current,
            progress_info: Some(&info),
        };
        match self.put_progress(&request).await {
            Ok(()) => {
                tracing::warn!(
                    "the service does not know stage {target:?} ({}); reported it as progress info on stage {current:?} instead",
                    rejection.reason().unwrap_or("400")
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
        match self.put_progress(&request).await {
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

    /// `PUT .../progress` for this host, retried within this boot's deadline.
    async fn put_progress(&self, request: &HostProgress<'_>) -> Result<(), ApiError> {
        self.client
            .update_progress(
                self.config.infra_env_id,
                self.config.host_id,
                request,
                Some(self.deadline),
            )
            .await
    }

    fn settle(&mut self, target: &str) {
        self.stage_settled = true;
        self.ledger.record_stage(&self.boot_id, target);
        if let Err(err) = self.ledger.save(&self.config.state_dir) {
            tracing::warn!("{err:#}");
        }
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
                infra_env_id: self.config.infra_env_id,
                logs_type: self.config.logs_type.clone(),
            },
            collect,
            limits,
        };
        let meta = BundleMeta {
            agent_version: env!("CARGO_PKG_VERSION").to_owned(),
            host_id: self.config.host_id.to_string(),
            infra_env_id: self.config.infra_env_id.to_string(),
            cluster_id: Some(cluster_id.to_string()),
            boot_id: self.boot_id.clone(),
            boot_number: self.boot_number,
            service_stage: self.service_stage.clone(),
            reason: reason.to_owned(),
        };
        match uploader.upload(&meta, Some(deadline)).await {
            Ok(done) => {
                self.uploads += 1;
                self.diagnosis_headline = crate::diagnose::headline_of(&done.manifest);
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
fn finish_interrupted_cleanup(args: &RunArgs) -> bool {
    let root = args
        .root
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("/"));
    let state_dir = args
        .state_dir
        .clone()
        .unwrap_or_else(|| crate::config::under_root(&root, crate::config::DEFAULT_STATE_DIR));
    if !crate::cleanup::cleanup_interrupted(&state_dir) {
        return false;
    }
    let config_dir = args
        .config_dir
        .clone()
        .unwrap_or_else(|| crate::config::under_root(&root, crate::config::DEFAULT_CONFIG_DIR));
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

fn round_secs(d: Duration) -> Duration {
    Duration::from_secs((d + Duration::from_millis(500)).as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

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
