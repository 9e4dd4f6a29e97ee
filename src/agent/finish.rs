//! The end of the job: a healthy kubelet outside a bootstrap, the service
//! past the point where boot logs help, or the time budget spent. The last
//! bundle (after this host's share of the spread, inside a grace), then
//! cleanup; and a cleanup an earlier run left interrupted, finished first.

use std::time::Duration;

use tokio::time::Instant;

use super::reporter::Reporter;
use super::spread::{final_bundle_delay, SpreadOf};
use crate::cleanup::CleanupPlan;
use crate::config::{Flags, Paths};
use crate::stage::{self, Decision};

/// Extra time the last bundle may take after the deadline: a quarter of the
/// budget, within these bounds, so a stalled service cannot stretch the end
/// much and a short budget still leaves time to collect.
const FINAL_UPLOAD_GRACE: Duration = Duration::from_secs(120);

const MIN_FINAL_UPLOAD_GRACE: Duration = Duration::from_secs(15);

impl Reporter {
    /// What the last bundle may take beyond the deadline.
    pub(super) fn final_grace(&self) -> Duration {
        (self.config.timeout / 4).clamp(MIN_FINAL_UPLOAD_GRACE, FINAL_UPLOAD_GRACE)
    }

    /// Kubelet is healthy outside a bootstrap: the control plane's
    /// configuration runs, the in-cluster controller takes over. Report the
    /// control-plane stage if the service is still before it, then leave.
    pub(super) async fn finish_after_kubelet(&mut self) {
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
    pub(super) async fn finish(&mut self, why: &str) {
        if self.may_ship() {
            tracing::info!("{why}: shipping the last bundle and cleaning up");
        } else {
            tracing::info!("{why}: cleaning up ({})", self.why_no_bundle());
        }
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

    pub(super) async fn finish_at_deadline(&mut self) {
        self.finish(&format!(
            "the time budget of {} (from the first start on this host) is spent on boot {}",
            humantime::format_duration(self.config.timeout),
            self.boot_number
        ))
        .await;
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
pub(super) fn finish_interrupted_cleanup(args: &Flags) -> bool {
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
