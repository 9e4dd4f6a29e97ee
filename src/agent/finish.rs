//! The end of the job: a healthy kubelet outside a bootstrap, the service
//! past the point where boot logs help, or the time budget spent. The last
//! bundle (after this host's share of the spread, inside a grace), then
//! cleanup; and a cleanup an earlier run left interrupted, finished first.
//!
//! Everything here ends by the deadline plus the grace, whatever the service
//! and `systemctl` do: the grace's tail is kept for the cleanup's
//! `systemctl disable` and the exit's wait, the bundle gets the rest.

use std::time::Duration;

use tokio::time::Instant;

use super::reporter::Reporter;
use super::spread::{final_bundle_delay, SpreadOf};
use crate::cleanup::CleanupPlan;
use crate::config::Paths;
use crate::stage::{self, Decision};

/// The longest grace: a stalled service cannot stretch the end much.
const FINAL_UPLOAD_GRACE: Duration = Duration::from_secs(120);
/// The shortest grace: a bundle needs seconds to collect and upload,
/// however short the budget.
const MIN_FINAL_UPLOAD_GRACE: Duration = Duration::from_secs(15);

/// How long the exit waits for blocking threads (a collector on a hung file
/// read, a cleanup finishing its removals) before leaving them behind: kept
/// out of the final grace like the cleanup's time.
pub(super) const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Longest `systemctl disable` may take: it answers in well under a second
/// on a sane host. Within a short grace, a quarter of it.
const SYSTEMCTL_TIMEOUT: Duration = Duration::from_secs(10);

/// The final grace: how long the end of the job (last bundle with its
/// spread wait, cleanup, exit) may take from the moment the job ends, and
/// never past the budget's deadline plus it. A quarter of the budget, at
/// least 15 s, at most 2 min; docs/design.md ("One time budget") states the
/// same rule.
pub(super) fn final_grace(budget: Duration) -> Duration {
    (budget / 4).clamp(MIN_FINAL_UPLOAD_GRACE, FINAL_UPLOAD_GRACE)
}

impl Reporter {
    /// What the end of the job (last bundle and cleanup) may take once it
    /// starts: [`final_grace`] of this run's budget.
    pub(super) fn final_grace(&self) -> Duration {
        final_grace(self.config.timeout)
    }

    /// When the end of a job starting now must be over: a grace from now,
    /// and never later than a grace after the deadline.
    fn job_end(&self) -> Instant {
        let grace = self.final_grace();
        (Instant::now() + grace).min(self.deadline + grace)
    }

    /// Kubelet is healthy outside a bootstrap: the control plane's
    /// configuration runs, the in-cluster controller takes over. Report the
    /// control-plane stage if the service is still before it, then leave.
    pub(super) async fn finish_after_kubelet(&mut self) {
        tracing::info!("kubelet is healthy on a boot that is not a bootstrap: the job is over");
        let end = self.job_end();
        if let Some(host) = self.last_host.clone() {
            let target = stage::BOOTED_WITH_CONTROL_PLANE_IGNITION;
            if self.settled_target != Some(target) {
                if let Decision::Report { .. } = stage::decide_target(target, &host) {
                    let _ = tokio::time::timeout_at(end, self.report_stage(&host, target)).await;
                }
            }
        }
        self.finish_by("kubelet is healthy", end).await;
    }

    /// The job is over: last bundle (so every host, day-2 ones too, ships at
    /// least one), then cleanup.
    pub(super) async fn finish(&mut self, why: &str) {
        let end = self.job_end();
        self.finish_by(why, end).await;
    }

    async fn finish_by(&mut self, why: &str, end: Instant) {
        let grace = self.final_grace();
        if self.may_ship() {
            // Said once, with the rule: a run that goes on past its
            // `--timeout` is explained in its own log.
            tracing::info!(
                "{why}: shipping the last bundle within a grace of {} (a quarter of the \
                 budget, at least {}, at most {}), then cleaning up",
                humantime::format_duration(grace),
                humantime::format_duration(MIN_FINAL_UPLOAD_GRACE),
                humantime::format_duration(FINAL_UPLOAD_GRACE),
            );
        } else {
            tracing::info!("{why}: cleaning up ({})", self.why_no_bundle());
        }
        let systemctl_timeout = SYSTEMCTL_TIMEOUT.min(grace / 4);
        let now = Instant::now();
        let until = end
            .checked_sub(systemctl_timeout + EXIT_WAIT)
            .unwrap_or(now)
            .max(now);
        let window = until - now;
        if self.may_ship() {
            let delay = final_bundle_delay(
                self.config.upload_spread,
                self.config.upload_interval,
                window,
                self.deadline.saturating_duration_since(now),
                self.herd.fraction(SpreadOf::FinalBundle),
            );
            self.wait_spread("final", delay).await;
        }
        // The delay is taken out of the window, not added to it.
        if tokio::time::timeout_at(until, self.ship("final", until))
            .await
            .is_err()
        {
            tracing::warn!(
                "the last bundle did not go out within {}",
                humantime::format_duration(round_millis(window))
            );
        }
        self.clean_up(systemctl_timeout).await;
    }

    pub(super) async fn finish_at_deadline(&mut self) {
        self.finish(&format!(
            "the time budget of {} (from the first start on this host) is spent on boot {}",
            humantime::format_duration(self.config.timeout),
            self.boot_number
        ))
        .await;
    }

    async fn clean_up(&mut self, systemctl_timeout: Duration) {
        self.cleanup_begun = true;
        let plan = CleanupPlan {
            config_dir: self.config.config_dir.clone(),
            state_dir: self.config.state_dir.clone(),
            root: self.config.root.clone(),
            systemctl_timeout,
        };
        run_cleanup(plan).await;
    }
}

fn round_millis(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// On a blocking thread, so that a stop signal is not kept waiting: the
/// signal path kills its `systemctl`, and the cleanup then stops where the
/// next start picks it up.
async fn run_cleanup(plan: CleanupPlan) {
    let _ = tokio::task::spawn_blocking(move || log_cleanup(&plan)).await;
}

fn log_cleanup(plan: &CleanupPlan) {
    let report = plan.execute();
    for failure in &report.failures {
        tracing::warn!("cleanup: {failure}");
    }
    if report.stopped {
        tracing::info!(
            "cleanup stopped with the agent before the unit was disabled: removed {} path(s); \
             the marker and host-id stay, the next start finishes it",
            report.removed.len()
        );
        return;
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

/// A cleanup cut short (killed, power lost) left its marker
/// (`cleanup::cleanup_interrupted`): finished before anything else, since
/// the contract may be half gone.
pub(super) async fn finish_interrupted_cleanup(paths: Paths) {
    let Paths {
        root,
        config_dir,
        state_dir,
    } = paths;
    tracing::info!("an earlier cleanup was interrupted; finishing it");
    run_cleanup(CleanupPlan {
        config_dir,
        state_dir,
        root,
        systemctl_timeout: SYSTEMCTL_TIMEOUT,
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_is_a_quarter_of_the_budget_within_15_s_and_2_min() {
        let secs = |s| final_grace(Duration::from_secs(s)).as_secs();
        assert_eq!(secs(4), 15, "a short budget still leaves time to collect");
        assert_eq!(secs(60), 15);
        assert_eq!(secs(240), 60);
        assert_eq!(secs(3600), 120, "a stalled service cannot stretch the end");
    }
}
