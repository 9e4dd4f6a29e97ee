//! The bundle cycle: one look at the service, then one bundle collected
//! and uploaded, the first of a run after this host's share of the spread;
//! what stops bundles on this boot (logs type or token refused, no cluster
//! known); and the collectors' programs a bundle found missing from PATH,
//! said in one line.

use std::time::Duration;

use tokio::time::Instant;

use super::progress::{log_api_error, Next};
use super::reporter::Reporter;
use super::spread::{first_bundle_delay, SpreadOf};
use crate::api::{Refusal, UploadTarget};
use crate::bundle::{BundleMeta, Manifest};
use crate::upload::Uploader;

/// Host lookups that may fail in a row before bundles are shipped anyway: the
/// first bundle should follow the stage report, but never at the price of
/// shipping nothing when only the host list is broken.
const LOOKUPS_BEFORE_SHIPPING_BLIND: u32 = 3;

impl Reporter {
    /// One look at the service and one bundle. `None` when the service
    /// says the job is over (the caller finishes it); otherwise whether a
    /// bundle was delivered.
    pub(super) async fn cycle(&mut self) -> Option<bool> {
        let ship_now = match self.refresh().await {
            Next::Finish => return None,
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

    /// Whether `ship` would try at all: no delay is spent on a bundle that
    /// cannot go.
    pub(super) fn may_ship(&self) -> bool {
        !self.logs_refused && !self.token_refused && self.cluster_id.is_some()
    }

    /// Why [`Self::may_ship`] is false, for the log.
    pub(super) fn why_no_bundle(&self) -> &'static str {
        if self.token_refused {
            "no last bundle: the service refused the agent token"
        } else if self.logs_refused {
            "no last bundle: the service refused the host_boot logs type"
        } else {
            "no last bundle: no cluster ID known (not configured, service not reached)"
        }
    }

    /// Sleeps a drawn spread delay (nothing at zero). SIGTERM drops it with
    /// the rest of the run: the shutdown path stays what it is.
    pub(super) async fn wait_spread(&self, which: &str, delay: Duration) {
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
    pub(super) async fn ship(&mut self, reason: &str, deadline: Instant) -> bool {
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
                self.say_missing_tools(&done.manifest);
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
                if ends_bundles_for_the_boot(err.refusal()) {
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

    /// One warning naming every program the bundle's collectors could not
    /// find on PATH (a bundle missing most of its journal or crio looks like
    /// a host problem otherwise), when that set differs from the last one
    /// said; and one line when they are all found again.
    fn say_missing_tools(&mut self, manifest: &Manifest) {
        let missing = missing_tools(manifest);
        if missing == self.missing_tools {
            return;
        }
        if missing.is_empty() {
            tracing::info!("the collectors' programs are all found on PATH again");
        } else {
            tracing::warn!(
                "not found on PATH ({}): {}; the bundle lacks what they collect \
                 (the manifest lists each member skipped)",
                std::env::var("PATH").unwrap_or_default(),
                missing.join(", ")
            );
        }
        self.missing_tools = missing;
    }
}

/// The programs a bundle's members were skipped for because they are not on
/// PATH, each once, in collection order. The reason is the one the command
/// runner writes (`collect/command.rs`: "PROGRAM not found on PATH").
fn missing_tools(manifest: &Manifest) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    let reasons = manifest
        .collectors
        .iter()
        .flat_map(|c| &c.files)
        .filter_map(|f| f.reason.as_deref());
    for reason in reasons {
        if let Some(program) = reason.strip_suffix(" not found on PATH") {
            if !program.contains(' ') && !missing.iter().any(|m| m == program) {
                missing.push(program.to_owned());
            }
        }
    }
    missing
}

/// Whether a refused upload means no bundle of this boot can pass: the
/// service takes no logs of the configured type. Anything else (weather, a
/// token the service may accept again once the host is re-registered) is
/// tried at the next cycle.
fn ends_bundles_for_the_boot(refusal: Option<Refusal>) -> bool {
    refusal == Some(Refusal::LogsTypeRefused)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_with_path(path: &std::path::Path) -> Manifest {
        let ctx = crate::collect::testing::context(
            std::path::Path::new("/nonexistent-root"),
            Some(path.into()),
        );
        let meta = BundleMeta {
            agent_version: "0.1.0".into(),
            host_id: "b7e0c1a2-0000-4000-8000-000000000001".into(),
            infra_env_id: String::new(),
            cluster_id: None,
            boot_id: "8f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into(),
            boot_number: 1,
            service_stage: None,
            reason: "first".into(),
        };
        crate::assemble::write_bundle(
            Vec::new(),
            &ctx,
            &meta,
            &crate::bundle::BundleLimits::default(),
        )
        .unwrap()
        .0
    }

    #[test]
    fn every_program_missing_from_path_is_named_once() {
        let empty = tempfile::tempdir().unwrap();
        let missing = missing_tools(&manifest_with_path(empty.path()));
        for program in ["journalctl", "systemctl", "crictl", "ip", "nmcli"] {
            assert_eq!(
                missing.iter().filter(|m| *m == program).count(),
                1,
                "{program} in {missing:?}"
            );
        }
    }

    #[test]
    fn programs_on_path_are_not_named() {
        let fake_bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin");
        let missing = missing_tools(&manifest_with_path(&fake_bin));
        for program in [
            "journalctl",
            "systemctl",
            "crictl",
            "ip",
            "nmcli",
            "rpm-ostree",
        ] {
            assert!(
                !missing.iter().any(|m| m == program),
                "{program} in {missing:?}"
            );
        }
    }

    #[test]
    fn only_a_refused_logs_type_ends_the_boots_bundles() {
        assert!(ends_bundles_for_the_boot(Some(Refusal::LogsTypeRefused)));
        for other in [
            None,
            Some(Refusal::TokenRefused),
            Some(Refusal::HostNotListed),
            Some(Refusal::StageUnknownToService),
            Some(Refusal::StageNotAccepted),
        ] {
            assert!(!ends_bundles_for_the_boot(other), "{other:?}");
        }
    }
}
