//! What the reporter reads from the service and tells it: the host and its
//! stage looked up each cycle, the boot's stage set (or, on a service that
//! refuses the new stages, attached as progress info to the installer's),
//! the worst bootstrap finding as progress info, and the per-boot cap on
//! progress updates, counted in the ledger.

use std::time::Duration;

use super::reporter::{InfoOwner, Reporter};
use crate::api::{ApiError, Host, HostProgress, HostScope, Refusal};
use crate::records;
use crate::stage::{self, Decision};

/// Progress updates one boot may send, over every run of the reporter in
/// it (counted in the ledger). Each accepted update restarts the service's
/// stage timer; a boot needs at most: the local-ignition stage, the
/// control-plane stage, and a finding on each.
pub(crate) const MAX_PROGRESS_PUTS_PER_BOOT: u32 = 4;

/// What the last look at the service said to do next.
pub(super) enum Next {
    Continue,
    Finish,
    /// The host could not be read; `refused` when the token was rejected,
    /// so an upload with it would be refused too.
    Unreached {
        refused: bool,
    },
}

impl Reporter {
    /// Reads the host from the service and acts on its stage.
    pub(super) async fn refresh(&mut self) -> Next {
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
                return Next::Unreached {
                    refused: err.refusal() == Some(Refusal::TokenRefused),
                };
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
        self.learn_single_node(&host).await;
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

    /// Whether the service says this host bootstraps a single-node
    /// cluster: from the host's stage list, else (the cluster's host list
    /// sends none) from the cluster. Learned once; a cluster that cannot be
    /// read leaves the host's files to tell the flow.
    async fn learn_single_node(&mut self, host: &Host) {
        if self.single_node_bootstrap.is_some() {
            return;
        }
        let mut known = host.single_node_bootstrap();
        if known.is_none() && !self.cluster_unreadable {
            if let Some(cluster_id) = self.cluster_id {
                match self
                    .client
                    .get_cluster(cluster_id, Some(self.deadline))
                    .await
                {
                    Ok(cluster) => known = cluster.single_node(),
                    Err(err) => {
                        tracing::info!(
                            "{err}; the host's files tell whether it bootstraps a single node"
                        );
                        self.cluster_unreadable = true;
                    }
                }
            }
        }
        if known == Some(true) {
            tracing::info!(
                "the service says this host bootstraps a single-node cluster: its first boot \
                 from disk runs the bootstrap, and the job ends on a later boot"
            );
        }
        self.single_node_bootstrap = known;
    }

    pub(super) async fn report_stage(&mut self, host: &Host, target: &'static str) {
        if self.ledger.new_stages_refused {
            // This service answered 400 to the new stages before: straight
            // to the fallback, one update instead of two.
            self.report_as_progress_info(host, target, None).await;
            return;
        }
        // The stage the service holds now: the one this reporter set last
        // when it set one since `host` was read.
        let current = self
            .service_stage
            .clone()
            .or_else(|| host.current_stage().map(str::to_owned))
            .unwrap_or_else(|| "none".to_owned());
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
            Err(err) => match after_stage_refused(err.refusal()) {
                AfterStageRefused::ReportAsProgressInfo => {
                    self.ledger.new_stages_refused = true;
                    self.report_as_progress_info(host, target, Some(&err)).await;
                }
                AfterStageRefused::LeaveIt => {
                    tracing::info!("{err}; leaving the stage alone");
                    self.settle(target);
                }
                AfterStageRefused::TryNextCycle => log_api_error(&err),
            },
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
    pub(super) async fn report_finding(&mut self) {
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
}

/// What a failed stage update leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterStageRefused {
    /// The service lacks the new stages: the boot goes into `progress_info`
    /// on the stage it holds, now and for the rest of the boot.
    ReportAsProgressInfo,
    /// The installer moved the host on, or its status takes no stages:
    /// the stage is settled as it is.
    LeaveIt,
    /// Weather or configuration: the next cycle tries again.
    TryNextCycle,
}

pub(super) fn after_stage_refused(refusal: Option<Refusal>) -> AfterStageRefused {
    match refusal {
        Some(Refusal::StageUnknownToService) => AfterStageRefused::ReportAsProgressInfo,
        Some(Refusal::StageNotAccepted) => AfterStageRefused::LeaveIt,
        Some(Refusal::TokenRefused | Refusal::HostNotListed | Refusal::LogsTypeRefused) | None => {
            AfterStageRefused::TryNextCycle
        }
    }
}

pub(super) fn log_api_error(err: &ApiError) {
    match err {
        _ if err.refusal() == Some(Refusal::TokenRefused) => {
            tracing::error!(
                "{err}: the agent token was refused; check the pull secret in the discovery contract"
            );
        }
        // Configuration, not weather: say it loudly.
        ApiError::Tls { .. } | ApiError::Redirect { .. } => tracing::error!("{err}"),
        _ => tracing::warn!("{err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_stage_falls_back_only_when_the_service_lacks_it() {
        assert_eq!(
            after_stage_refused(Some(Refusal::StageUnknownToService)),
            AfterStageRefused::ReportAsProgressInfo
        );
        assert_eq!(
            after_stage_refused(Some(Refusal::StageNotAccepted)),
            AfterStageRefused::LeaveIt
        );
        for other in [
            None,
            Some(Refusal::TokenRefused),
            Some(Refusal::HostNotListed),
            Some(Refusal::LogsTypeRefused),
        ] {
            assert_eq!(
                after_stage_refused(other),
                AfterStageRefused::TryNextCycle,
                "{other:?}"
            );
        }
    }
}
