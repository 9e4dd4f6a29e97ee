//! Retrying: how long to wait between attempts and when to stop, so a
//! struggling service is not hammered by every host. Which failures are worth
//! another try is the caller's to say ([`Retryable`]); this module knows
//! nothing of HTTP, and the service client (`api`) is built on it.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// A failure that may be worth another attempt.
pub(crate) trait Retryable: Display {
    /// Transient: another attempt may succeed.
    fn is_retryable(&self) -> bool;
    /// The wait the other side asked for (`Retry-After`), if any.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Attempts per call, the first included.
    pub(crate) attempts: u32,
    pub(crate) initial_delay: Duration,
    pub(crate) max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Delay before attempt `attempt + 1` (attempt counts from 1). Exponential,
    /// capped, with "equal jitter" (half fixed, half random) so that a fleet of
    /// hosts restarted together does not retry in lockstep. A `Retry-After`
    /// from the service wins over the computed delay but is capped too: a
    /// misbehaving proxy must not park the agent for a day.
    pub(crate) fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_delay);
        }
        let exp = attempt.saturating_sub(1).min(30);
        let base = self
            .initial_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay);
        let half = base / 2;
        half + half.mul_f64(fastrand::f64())
    }

    /// Runs `op` until it succeeds, fails with a non-retryable error, runs out
    /// of attempts, or the next wait would pass `deadline`.
    pub(crate) async fn run<T, E, F, Fut>(
        &self,
        deadline: Option<Instant>,
        mut op: F,
    ) -> Result<T, E>
    where
        E: Retryable,
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempt = 1;
        loop {
            match op(attempt).await {
                Ok(value) => return Ok(value),
                Err(err) if !err.is_retryable() || attempt >= self.attempts => return Err(err),
                Err(err) => {
                    let wait = self.delay(attempt, err.retry_after());
                    if deadline.is_some_and(|d| Instant::now() + wait >= d) {
                        return Err(err);
                    }
                    tracing::warn!(
                        "{err} (attempt {attempt}/{}); retrying in {}",
                        self.attempts,
                        humantime::format_duration(round_ms(wait))
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
            }
        }
    }
}

fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// An HTTP-like failure: the client's classification lives in `api`
    /// (its own tests); here only what the policy does with it.
    #[derive(Debug)]
    struct Status(u16, Option<Duration>);

    impl Display for Status {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "status {}", self.0)
        }
    }

    impl Retryable for Status {
        fn is_retryable(&self) -> bool {
            matches!(self.0, 408 | 429 | 500..=599)
        }
        fn retry_after(&self) -> Option<Duration> {
            self.1
        }
    }

    fn status(code: u16, retry_after: Option<Duration>) -> Status {
        Status(code, retry_after)
    }

    #[test]
    fn delays_grow_are_capped_and_jittered_within_bounds() {
        let policy = RetryPolicy {
            attempts: 10,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        for _ in 0..200 {
            let d1 = policy.delay(1, None);
            assert!(
                d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100),
                "{d1:?}"
            );
            let d3 = policy.delay(3, None);
            assert!(
                d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400),
                "{d3:?}"
            );
            let d20 = policy.delay(20, None);
            assert!(
                d20 >= Duration::from_millis(500) && d20 <= Duration::from_secs(1),
                "{d20:?}"
            );
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_millis(300))),
            Duration::from_millis(300)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3600))),
            Duration::from_secs(1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_only_retryable_errors_and_stops_at_the_attempt_limit() {
        let policy = RetryPolicy {
            attempts: 3,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(20),
        };
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = policy
            .run(None, |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err(status(503, None)) }
            })
            .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        for code in [400, 401, 403, 404, 409] {
            let calls = AtomicU32::new(0);
            let _ = policy
                .run(None, |_| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    async move { Err::<(), _>(status(code, None)) }
                })
                .await;
            assert_eq!(
                calls.load(Ordering::SeqCst),
                1,
                "{code} must not be retried"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn succeeds_after_transient_failures_and_respects_the_deadline() {
        let policy = RetryPolicy::default();
        let result = policy
            .run(None, |attempt| async move {
                if attempt < 3 {
                    Err(status(502, None))
                } else {
                    Ok(attempt)
                }
            })
            .await;
        assert_eq!(result.unwrap(), 3);

        let deadline = Instant::now() + Duration::from_millis(500);
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = policy
            .run(Some(deadline), |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err(status(429, Some(Duration::from_secs(5)))) }
            })
            .await;
        assert!(result.is_err());
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "a wait past the deadline is not taken"
        );
    }
}
