//! The stand-in for upstream's host monitor (`HostMonitoring`, which runs
//! `RefreshStatus` on every host): it applies the stage timeouts on its own
//! clock, so a host the agent leaves alone times out exactly as it would on
//! the real service, and one it keeps touching does not.

use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use crate::state::Shared;

/// How often the monitor looks. Upstream looks every few seconds against
/// timeouts of tens of minutes; at a high time scale the mock looks more
/// often so a timeout lands within a fraction of the scaled duration.
fn tick(time_scale: f64) -> Duration {
    if time_scale > 1.0 {
        Duration::from_millis(50)
    } else {
        Duration::from_secs(1)
    }
}

pub async fn run(state: Shared, time_scale: f64, mut shutdown: watch::Receiver<bool>) {
    let mut interval = tokio::time::interval(tick(time_scale));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shutdown.changed() => return,
        }
        let moved = {
            let mut world = state.world.lock().unwrap();
            world.refresh_stage_timeouts(time_scale, SystemTime::now())
        };
        for (host, stage, outcome) in moved {
            tracing::info!("host {host}: stage {stage} timed out: {outcome:?}");
        }
    }
}
