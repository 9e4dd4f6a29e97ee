//! Retry policy for service requests: which failures are worth another try and
//! how long to wait, so a struggling service is not hammered by every host.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included.
    pub attempts: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
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
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
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
    pub async fn run<T, F, Fut>(&self, deadline: Option<Instant>, mut op: F) -> Result<T, ApiError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, ApiError>>,
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
    use reqwest::StatusCode;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn status(code: u16, retry_after: Option<Duration>) -> ApiError {
        ApiError::Status {
            operation: "test".into(),
            status: StatusCode::from_u16(code).unwrap(),
            reason: "x".into(),
            retry_after,
        }
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
        for code in [408, 429, 500, 502, 504] {
            assert!(status(code, None).is_retryable(), "{code}");
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
