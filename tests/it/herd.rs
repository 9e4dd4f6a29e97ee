//! No herd: the first bundle (after the stage report) and the final one (at
//! the job's end) wait a per-host share of `--upload-spread`, so hosts
//! started together do not upload together. The real agent binary against
//! the mock: the stage report never waits, the first upload waits within the
//! bound, SIGTERM during the wait stops the run as any shutdown does, the
//! final bundle's wait stays inside the job's deadline and grace, and a
//! spread of 0 is the behaviour from before.
//!
//! Every bound is asserted with room to spare: what is measured is the
//! agent's own account of its wait (its log) against the mock's request
//! times, never how fast this machine is.

use std::time::{Duration, SystemTime};

use crate::common::*;
use serde_json::Value;

/// `waiting N ms before the WHICH bundle`, as the agent logs it.
fn logged_wait(stderr: &str, which: &str) -> Option<Duration> {
    let tail = format!(" ms before the {which} bundle");
    stderr.lines().find_map(|line| {
        let (head, _) = line.split_once(&tail)?;
        let millis = head.rsplit_once("waiting ")?.1.parse().ok()?;
        Some(Duration::from_millis(millis))
    })
}

/// Where `needle` first appears in the agent's log, as a line number.
fn line_of(stderr: &str, needle: &str) -> Option<usize> {
    stderr.lines().position(|line| line.contains(needle))
}

fn at(request: &Value) -> SystemTime {
    let text = request["at"].as_str().expect("request time");
    humantime::parse_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn opts(interval: &'static str, timeout: &'static str, spread: &str) -> AgentOpts {
    AgentOpts {
        upload_interval: Some(interval),
        timeout: Some(timeout),
        extra: vec!["--upload-spread".into(), spread.into()],
        deadline: Duration::from_secs(90),
        ..AgentOpts::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stage_report_goes_at_once_and_the_first_upload_waits_within_the_bound() {
    let sc = Scenario::new("herd-first");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    // One upload before the budget ends (the interval is longer), then the
    // final one: both waits are in this run's log.
    let spread = Duration::from_secs(3);
    let run = sc
        .run_agent("first bundle spread", &opts("1m", "8s", "3s"))
        .await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    let requests = api_requests(&base).await;
    let puts = progress_puts(&requests);
    let uploads = log_uploads(&requests);
    assert_eq!(puts.len(), 1, "one stage report: {puts:?}");
    assert_eq!(puts[0]["body"]["current_stage"], LOCAL_IGNITION);
    assert_eq!(
        uploads.len(),
        2,
        "the first and the final bundle: {requests:?}"
    );

    let first = logged_wait(&stderr, "first").unwrap_or_default();
    assert!(
        first < spread,
        "first bundle waited {first:?}, bound {spread:?}"
    );
    // The stage report went before the wait, not after it.
    let stage_set = line_of(&stderr, "stage set").expect("stage set logged");
    if let Some(waiting) = line_of(&stderr, "before the first bundle") {
        assert!(stage_set < waiting, "{stderr}");
    }
    let (put, upload) = (at(puts[0]), at(uploads[0]));
    let gap = upload
        .duration_since(put)
        .expect("upload after the stage report");
    // The mock stamps a request when it arrives, with millisecond precision.
    assert!(
        gap + Duration::from_millis(2) >= first,
        "first upload {gap:?} after the stage report, yet the agent says it waited {first:?}"
    );
    assert!(
        gap < spread + Duration::from_secs(20),
        "first upload {gap:?} after the stage report"
    );
    let last = logged_wait(&stderr, "final").unwrap_or_default();
    assert!(last < spread, "final bundle waited {last:?}");
    assert!(stderr.contains("uploaded the final"), "{stderr}");
    sc.assert_cleaned_up("budget spent");
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_the_first_bundle_wait_stops_like_any_shutdown() {
    let sc = Scenario::new("herd-sigterm");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    // A day-long bound: the wait outlasts this test but for a 1-in-17,000
    // draw below 5 s, which the assertions below tell apart.
    let running = sc.spawn_agent("stopped while waiting", &opts("24h", "1h", "24h"));
    let state = wait_for_state(&base, Duration::from_secs(20), |s| {
        host_of(s, HOST_ID)["current_stage"] == LOCAL_IGNITION
    })
    .await;
    assert_eq!(host_of(&state, HOST_ID)["current_stage"], LOCAL_IGNITION);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked = std::time::Instant::now();
    let run = sc.stop_agent(running).await;
    let stopping = asked.elapsed();
    run.assert_code(0);
    let stderr = run.stderr_text();
    let waited = logged_wait(&stderr, "first").expect("a wait was logged");
    assert!(stderr.contains("stopping on SIGTERM"), "{stderr}");
    // The reboot does not wait for the bundle: the shutdown path ships
    // nothing in flight, keeps the spent budget, removes nothing.
    assert!(
        stopping < Duration::from_secs(8),
        "stopping took {stopping:?} (systemd allows 10 s)"
    );
    let host = host_of(&admin_state(&base).await, HOST_ID).clone();
    if waited > Duration::from_secs(5) {
        assert_eq!(uploads_of(&host, "host_boot"), 0, "{host}");
        assert!(!stderr.contains("uploaded the"), "{stderr}");
    }
    sc.assert_not_cleaned_up("stopped during the wait");
    let ledger = std::fs::read_to_string(sc.state_dir.join("ledger.json")).expect("ledger");
    assert!(ledger.contains(LOCAL_IGNITION), "{ledger}");

    // The restart (same boot) ships its first bundle, without a second
    // stage report: nothing is lost but the wait.
    let restarted = sc.run_agent("restart", &opts("1s", "4s", "0")).await;
    restarted.assert_code(0);
    let requests = api_requests(&base).await;
    assert_eq!(progress_puts(&requests).len(), 1, "{requests:?}");
    assert!(
        restarted.stderr_text().contains("uploaded the first"),
        "{}",
        restarted.stderr_text()
    );
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_bundle_waits_within_the_grace_when_the_budget_ends_the_job() {
    let sc = Scenario::new("herd-final-budget");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    // A day-long spread and interval: the first bundle's wait is cut by the
    // 4 s budget; the final one's is bounded by half the grace (a quarter
    // of the budget, at least 15 s: 7.5 s), not by the spread.
    let run = sc
        .run_agent("budget ends the wait", &opts("24h", "4s", "24h"))
        .await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    let last = logged_wait(&stderr, "final").expect("final wait logged");
    assert!(
        last < Duration::from_millis(7500),
        "final bundle waited {last:?}"
    );
    assert!(stderr.contains("cut short"), "{stderr}");
    assert!(stderr.contains("uploaded the final"), "{stderr}");
    let requests = api_requests(&base).await;
    assert_eq!(log_uploads(&requests).len(), 1, "only the final bundle");
    // The budget, then the wait, then the upload: all inside budget + grace.
    assert!(
        run.elapsed >= Duration::from_secs(4) + last,
        "{:?}",
        run.elapsed
    );
    assert!(
        run.elapsed < Duration::from_secs(4 + 15 + 15),
        "{:?}",
        run.elapsed
    );
    sc.assert_cleaned_up("budget spent");
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_over_before_the_deadline_waits_at_most_half_the_time_left() {
    let sc = Scenario::new("herd-final-done");
    let seed = HostSeed {
        role: "worker",
        bootstrap: false,
        ..HostSeed::at("Done", "added-to-existing-cluster")
    };
    let mock = sc.start_mock(&seed).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_pending();

    let run = sc
        .run_agent("done at the first look", &opts("24h", "6s", "24h"))
        .await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    let last = logged_wait(&stderr, "final").unwrap_or_default();
    assert!(
        last < Duration::from_secs(3),
        "final bundle waited {last:?}"
    );
    // The wait ended inside the budget: the cycle was not cut by it.
    assert!(!stderr.contains("cut short"), "{stderr}");
    assert!(stderr.contains("uploaded the final"), "{stderr}");
    assert_eq!(log_uploads(&api_requests(&base).await).len(), 1);
    sc.assert_cleaned_up("done");
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spread_of_zero_sends_both_at_once_and_the_flag_beats_the_environment() {
    let sc = Scenario::new("herd-zero");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    let run = sc
        .run_agent(
            "spread 0",
            &AgentOpts {
                env: vec![("LOG_SEND_SPREAD_SECONDS".into(), "30".into())],
                ..opts("1m", "3s", "0s")
            },
        )
        .await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(!stderr.contains(" ms before the "), "{stderr}");
    assert!(stderr.contains("uploaded the first"), "{stderr}");
    assert!(stderr.contains("uploaded the final"), "{stderr}");
    let requests = api_requests(&base).await;
    let puts = progress_puts(&requests);
    let uploads = log_uploads(&requests);
    assert_eq!((puts.len(), uploads.len()), (1, 2), "{requests:?}");
    assert!(at(uploads[0]) >= at(puts[0]));

    // The environment alone applies, in seconds: its wait is logged.
    let sc = Scenario::new("herd-env");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let run = sc
        .run_agent(
            "spread from the environment",
            &AgentOpts {
                upload_interval: Some("1m"),
                timeout: Some("3s"),
                env: vec![("LOG_SEND_SPREAD_SECONDS".into(), "2".into())],
                ..AgentOpts::default()
            },
        )
        .await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("of the 2s upload spread"),
        "no wait of the environment's spread logged: {stderr}"
    );
    sc.final_checks(Some(&base)).await;
}
