//! Spreading the bundles of hosts installed together: the interval's
//! jitter, and each host's draws for the two bundles no interval spreads
//! (the first, right after the stage report, and the final one at the
//! job's end), kept inside the interval, the deadline and the final grace.

use std::time::Duration;

use uuid::Uuid;

/// Interval jitter (±10 %) spreads the hosts of a cluster installed together.
const JITTER: f64 = 0.10;

pub(super) fn jittered(interval: Duration) -> Duration {
    interval.mul_f64(1.0 - JITTER + 2.0 * JITTER * fastrand::f64())
}

/// Per-host draws for the two bundles no interval jitter spreads: the first
/// (right after the stage report) and the final one (the job's end, the
/// budget's deadline being the same moment for hosts powered on together).
/// A draw of the process's random generator is mixed with the host ID,
/// unique per host, and the boot ID, so hosts with identical clocks, or
/// cloned with the same early-boot entropy, still draw apart.
#[derive(Debug, Clone, Copy)]
pub(super) struct HerdSpread {
    seed: u64,
}

/// Which bundle a fraction is for: independent draws, so a host early in
/// the first round is not early at the end too.
#[derive(Debug, Clone, Copy, Hash)]
pub(super) enum SpreadOf {
    FirstBundle,
    FinalBundle,
}

impl HerdSpread {
    pub(super) fn new(host_id: Uuid, boot_id: &str, entropy: u64) -> Self {
        Self {
            seed: mix(&(host_id.as_u128(), boot_id, entropy)),
        }
    }

    /// Uniform in [0, 1): the top 53 bits, each value exact in an f64.
    #[allow(clippy::cast_precision_loss)]
    pub(super) fn fraction(self, of: SpreadOf) -> f64 {
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
pub(super) fn first_bundle_delay(spread: Duration, interval: Duration, fraction: f64) -> Duration {
    spread.min(interval).mul_f64(fraction.clamp(0.0, 1.0))
}

/// The final bundle waits its share of the spread, within one interval and
/// inside the job's end, leaving the upload at least as long as the wait:
/// within the first half of what is left before the budget's deadline when
/// the job ends earlier (Done, a healthy kubelet), within the first half of
/// the final grace once the budget is spent.
pub(super) fn final_bundle_delay(
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
