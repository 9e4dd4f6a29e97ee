//! End-to-end: the real agent binary against the in-process mock
//! assisted-service, over both boots of a host and the ways they go wrong.
//!
//! Every scenario builds its own temp world (fixture root copy, discovery
//! contract dir, state dir, mock data dir), runs the agent with a hard
//! deadline, asserts on what the mock recorded and on the bundles it stored,
//! and ends with `final_checks` (no secret anywhere, no single-host GET).

use std::time::Duration;

use crate::common::*;
use serde_json::Value;

const SECOND_BOOT_ID: &str = "9b2e4f61-0c3d-4a7b-8e15-2f6d0a9c4b77";

fn opts(timeout: &'static str) -> AgentOpts {
    AgentOpts {
        timeout: Some(timeout),
        ..AgentOpts::default()
    }
}

fn seq(r: &Value) -> u64 {
    r["seq"].as_u64().unwrap_or(u64::MAX)
}

fn status_of(r: &Value) -> u64 {
    r["status"].as_u64().unwrap_or(0)
}

/// Runs a first boot on a `Rebooting` master until it reported its stage and
/// shipped a bundle, then stops it as the reboot does (SIGTERM); returns the
/// number of host_boot uploads so far. The budget (`timeout`) spans both
/// boots, so it must leave room for the second.
async fn first_boot(sc: &Scenario, base: &str, timeout: &'static str) -> u64 {
    let running = sc.spawn_agent("first boot", &opts(timeout));
    wait_for_state(base, Duration::from_secs(15), |s| {
        let h = host_of(s, HOST_ID);
        h["current_stage"] == LOCAL_IGNITION && uploads_of(h, "host_boot") >= 1
    })
    .await;
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    let state = admin_state(base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(
        host["current_stage"], LOCAL_IGNITION,
        "first boot did not set the stage: {host}"
    );
    assert!(
        sc.config_dir.join("pull-secret").exists(),
        "first boot removed the contract"
    );
    assert!(
        !sc.disabled_unit(),
        "first boot disabled the unit: {:?}",
        sc.systemctl_calls()
    );
    uploads_of(host, "host_boot")
}

// 1 -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_boot_sets_local_ignition_ships_logs_and_cleans_up_when_its_budget_is_spent() {
    let sc = Scenario::new("first-boot");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    // No cluster-id in the contract: the agent learns it from the host list.
    sc.write_config(&base, SecretForm::PullSecretJson, false);
    // The pointer-ignition boot: firstboot has not applied the machine
    // config, so a kubelet answering healthy must not end the job.
    sc.firstboot_pending();
    let kubelet = start_kubelet(true).await;

    let run = sc
        .run_agent(
            "first boot",
            &AgentOpts {
                kubelet_healthz_url: Some(kubelet),
                ..opts("4s")
            },
        )
        .await;
    run.assert_code(0);
    assert!(
        run.elapsed >= Duration::from_millis(3500),
        "first boot ended after {:?}, before its 4s timeout",
        run.elapsed
    );

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], LOCAL_IGNITION, "{host}");
    assert_eq!(stage_history(host), ["Rebooting", LOCAL_IGNITION], "{host}");
    // The fixture's bootkube records hold a failed stage: its digest is the
    // progress_info of the stage the reporter set, visible without a bundle;
    // once a bundle went up, its diagnosis names the cause (docs/diagnosis.md).
    let info = host["progress_info"].as_str().unwrap_or_default();
    assert!(
        (info.starts_with("bootkube:") && info.contains("mco-bootstrap failed"))
            || info.starts_with("quay.io did not resolve"),
        "worst bootstrap finding not reported as progress_info: {info:?}"
    );
    let uploads = uploads_of(host, "host_boot");
    assert!(
        uploads >= 2,
        "expected at least 2 host_boot uploads over a 4s run at 1s interval, got {uploads}: {host}"
    );
    // Every interval (±10 %), not faster: at most one per 0.9s plus the
    // first and the last.
    assert!(uploads <= 7, "{uploads} host_boot uploads in a 4s run at a 1s interval: faster than the interval: {host}");
    let bundle = check_host_boot_bundle(host);
    assert_eq!(
        bundle.boot_number(),
        Some(1),
        "manifest: {}",
        bundle.manifest["meta"]
    );

    // The stage is reported first, the first bundle right after it.
    let requests = api_requests(&base).await;
    let first_put = progress_puts(&requests)
        .into_iter()
        .find(|r| status_of(r) == 200)
        .map(seq);
    let first_upload = log_uploads(&requests)
        .into_iter()
        .find(|r| (200..300).contains(&status_of(r)))
        .map(seq);
    assert!(
        first_put.is_some(),
        "no successful progress PUT: {requests:?}"
    );
    assert!(
        first_put < first_upload,
        "first bundle was uploaded before the stage was reported: {requests:?}"
    );

    // The budget runs from the first start, whatever the boot: spent on
    // the first boot, the reporter cleans up there.
    assert_eq!(bundle.manifest["meta"]["reason"], "final");
    sc.assert_cleaned_up("budget spent on the first boot");

    sc.final_checks(Some(&base)).await;
}

// 2 -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_boot_sets_control_plane_ignition_and_cleans_up_once_kubelet_is_healthy() {
    let sc = Scenario::new("second-boot");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    let after_first = first_boot(&sc, &base, "120s").await;

    // Reboot; meanwhile the machine-config server saw the host fetch its
    // config, so the service moved it to Configuring.
    sc.reboot(SECOND_BOOT_ID);
    admin_set_stage(&base, HOST_ID, "Configuring", None).await;
    let kubelet = start_kubelet(true).await;

    // A long --timeout: only kubelet's health can end this run within the
    // hard deadline.
    let run = sc
        .run_agent(
            "second boot",
            &AgentOpts {
                kubelet_healthz_url: Some(kubelet),
                deadline: Duration::from_secs(30),
                ..opts("120s")
            },
        )
        .await;
    run.assert_code(0);

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], CONTROL_PLANE_IGNITION, "{host}");
    assert_eq!(
        stage_history(host),
        [
            "Rebooting",
            LOCAL_IGNITION,
            "Configuring",
            CONTROL_PLANE_IGNITION
        ],
        "{host}"
    );
    let after_second = uploads_of(host, "host_boot");
    assert!(
        after_second > after_first,
        "no bundle arrived during the second boot (uploads {after_first} -> {after_second})"
    );
    let bundle = check_host_boot_bundle(host);
    assert_eq!(
        bundle.boot_number(),
        Some(2),
        "manifest: {}",
        bundle.manifest["meta"]
    );
    // The last bundle stored is the one shipped right before the cleanup.
    assert_eq!(
        bundle.manifest["meta"]["reason"], "final",
        "manifest: {}",
        bundle.manifest["meta"]
    );

    assert!(
        !sc.config_dir.exists(),
        "config dir still there after second-boot cleanup"
    );
    assert!(
        !sc.state_dir.exists(),
        "state dir still there after second-boot cleanup"
    );
    assert!(
        sc.disabled_unit(),
        "no `systemctl disable {UNIT}`; systemctl calls: {:?}",
        sc.systemctl_calls()
    );

    sc.final_checks(Some(&base)).await;
}

// 3 -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_boot_cleans_up_at_timeout_when_kubelet_never_gets_healthy() {
    let sc = Scenario::new("second-boot-timeout");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    let after_first = first_boot(&sc, &base, "10s").await;
    sc.reboot(SECOND_BOOT_ID);
    let kubelet = start_kubelet(false).await;

    // The same 10 s budget, counted from the first start: what the first
    // boot left of it.
    let run = sc
        .run_agent(
            "second boot, kubelet unhealthy",
            &AgentOpts {
                kubelet_healthz_url: Some(kubelet),
                ..opts("10s")
            },
        )
        .await;
    run.assert_code(0);
    assert!(
        run.stderr_text().contains("budget") && run.stderr_text().contains("is spent on boot 2"),
        "the second boot did not end on the budget:\n{}",
        run.stderr_text()
    );

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    // Straight from the first new stage to the second: still forward.
    assert_eq!(host["current_stage"], CONTROL_PLANE_IGNITION, "{host}");
    assert_eq!(
        stage_history(host),
        ["Rebooting", LOCAL_IGNITION, CONTROL_PLANE_IGNITION],
        "{host}"
    );
    assert!(
        uploads_of(host, "host_boot") > after_first,
        "no bundle during the second boot: {host}"
    );
    let bundle = check_host_boot_bundle(host);
    assert_eq!(
        bundle.boot_number(),
        Some(2),
        "manifest: {}",
        bundle.manifest["meta"]
    );
    // The last bundle stored is the one shipped right before the cleanup.
    assert_eq!(
        bundle.manifest["meta"]["reason"], "final",
        "manifest: {}",
        bundle.manifest["meta"]
    );

    assert!(
        !sc.config_dir.exists(),
        "config dir still there after cleanup at timeout"
    );
    assert!(
        !sc.state_dir.exists(),
        "state dir still there after cleanup at timeout"
    );
    assert!(
        sc.disabled_unit(),
        "no `systemctl disable {UNIT}`; systemctl calls: {:?}",
        sc.systemctl_calls()
    );

    sc.final_checks(Some(&base)).await;
}

// 4 -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_already_past_the_target_stage_is_not_moved_backwards() {
    let sc = Scenario::new("past-target");
    let mock = sc
        .start_mock(&HostSeed::at("Configuring", "installing-in-progress"))
        .await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let before = stage_history(host_of(&admin_state(&base).await, HOST_ID));

    let run = sc
        .run_agent("first boot, host at Configuring", &opts("3s"))
        .await;
    run.assert_code(0);

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], "Configuring", "{host}");
    assert_eq!(stage_history(host), before, "stage history changed: {host}");
    let requests = api_requests(&base).await;
    let refused: Vec<_> = progress_puts(&requests)
        .into_iter()
        .filter(|r| status_of(r) == 409)
        .collect();
    assert!(
        refused.is_empty(),
        "agent tried to move the stage backwards: {refused:?}"
    );
    assert!(
        uploads_of(host, "host_boot") >= 1,
        "logs not shipped: {host}"
    );
    let bundle = check_host_boot_bundle(host);
    assert_eq!(
        bundle.boot_number(),
        Some(1),
        "manifest: {}",
        bundle.manifest["meta"]
    );
    // Its budget (from the first start) is spent: it left, on boot 1.
    sc.assert_cleaned_up("budget spent on the first boot");

    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_host_gets_no_stage_but_its_logs_are_shipped() {
    let sc = Scenario::new("failed-host");
    let mock = sc.start_mock(&HostSeed::at("Failed", "error")).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let before = stage_history(host_of(&admin_state(&base).await, HOST_ID));

    let run = sc.run_agent("first boot, host failed", &opts("3s")).await;
    run.assert_code(0);

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], "Failed", "{host}");
    assert_eq!(host["status"], "error", "{host}");
    assert_eq!(stage_history(host), before, "{host}");
    let requests = api_requests(&base).await;
    assert!(
        progress_puts(&requests).is_empty(),
        "agent reported a stage on a failed host: {requests:?}"
    );
    assert!(
        uploads_of(host, "host_boot") >= 1,
        "logs of a failed host not shipped: {host}"
    );
    check_host_boot_bundle(host);

    sc.final_checks(Some(&base)).await;
}

// 5 -------------------------------------------------------------------------

async fn finished_host_cleans_up_at_once(tag: &str, at_stage: &'static str, status: &'static str) {
    let sc = Scenario::new(tag);
    let mock = sc.start_mock(&HostSeed::at(at_stage, status)).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let before = stage_history(host_of(&admin_state(&base).await, HOST_ID));

    // A long --timeout and a short hard deadline: only the finished host can
    // explain a quick exit.
    let run = sc
        .run_agent(
            &format!("host at {at_stage}/{status}"),
            &AgentOpts {
                deadline: Duration::from_secs(15),
                ..opts("120s")
            },
        )
        .await;
    run.assert_code(0);

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], at_stage, "{host}");
    assert_eq!(host["status"], status, "{host}");
    assert_eq!(stage_history(host), before, "{host}");
    let requests = api_requests(&base).await;
    assert!(
        progress_puts(&requests).is_empty(),
        "agent reported a stage on a finished host: {requests:?}"
    );
    if bundle_of(host, "host_boot").is_some() {
        check_host_boot_bundle(host);
    }

    assert!(
        !sc.config_dir.exists(),
        "config dir still there on a finished host"
    );
    assert!(
        !sc.state_dir.exists(),
        "state dir still there on a finished host"
    );
    assert!(
        sc.disabled_unit(),
        "no `systemctl disable {UNIT}`; systemctl calls: {:?}",
        sc.systemctl_calls()
    );

    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joined_host_cleans_up_at_once() {
    finished_host_cleans_up_at_once("joined", "Joined", "installing-in-progress").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_host_cleans_up_at_once() {
    finished_host_cleans_up_at_once("done", "Done", "installed").await;
}

// 6 -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_service_gets_progress_info_fallback_and_host_boot_rejection_is_survived() {
    let sc = Scenario::new("upstream");
    let mock = sc.start_mock_upstream(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    let run = sc
        .run_agent("first boot, upstream service", &opts("3s"))
        .await;
    run.assert_code(0);

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(
        host["current_stage"], "Rebooting",
        "stage must stay where upstream allows: {host}"
    );
    let info = host["progress_info"].as_str().unwrap_or_default();
    assert!(
        info.contains(LOCAL_IGNITION),
        "progress_info does not mention the boot: {info:?}: {host}"
    );
    assert!(
        info.contains("mco-bootstrap failed") || info.contains("dns_resolution: quay.io"),
        "progress_info does not carry the worst bootstrap finding: {info:?}"
    );

    let requests = api_requests(&base).await;
    let puts = progress_puts(&requests);
    assert!(
        puts.iter().any(|r| status_of(r) == 400),
        "the new stage was never tried (no 400 on PUT): {puts:?}"
    );
    assert!(
        puts.iter().any(|r| status_of(r) == 200),
        "no accepted fallback PUT: {puts:?}"
    );
    let uploads = log_uploads(&requests);
    assert!(
        uploads.iter().any(|r| status_of(r) == 400),
        "host_boot upload not attempted/rejected: {uploads:?}"
    );
    assert_eq!(
        uploads.len(),
        1,
        "a rejected logs type is a final answer: no further collection or upload on this boot: {uploads:?}"
    );
    assert!(
        bundle_of(host, "host_boot").is_none(),
        "upstream mock stored a host_boot bundle: {host}"
    );

    let stderr = run.stderr_text();
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("400") || l.contains("logs_type")),
        "no log line about the rejected upload (400 / logs_type):\n{stderr}"
    );

    sc.final_checks(Some(&base)).await;
}

// 7 -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_gives_a_clear_401_and_no_retry_storm() {
    let sc = Scenario::new("wrong-token");
    // The service knows another token than the one on disk.
    let seed = seed_json(
        &distinctive_token("the-right-one"),
        &HostSeed::rebooting_master(),
    );
    let mock = start_mock_at("127.0.0.1:0", &seed, &sc.data_dir, false).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    let run = sc.run_agent("first boot, wrong token", &opts("3s")).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("401"),
        "stderr does not name the 401:\n{stderr}"
    );

    let requests = api_requests(&base).await;
    assert!(!requests.is_empty(), "agent never reached the service");
    assert!(
        requests.iter().all(|r| status_of(r) == 401),
        "some request did not get 401: {requests:?}"
    );
    assert!(
        requests.len() <= 10,
        "{} API requests in a 3s run with a rejected token: 4xx must not be retried: {requests:?}",
        requests.len()
    );
    assert!(
        log_uploads(&requests).is_empty(),
        "a bundle was sent with a token the host lookup just saw refused: {requests:?}"
    );
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], "Rebooting", "{host}");
    assert!(bundle_of(host, "host_boot").is_none(), "{host}");

    sc.final_checks(Some(&base)).await;
}

// 8 -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_down_at_start_then_up_still_gets_stage_and_bundle() {
    let sc = Scenario::new("service-late");
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    let running = sc.spawn_agent("first boot, service late", &opts("8s"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mock = start_mock_at(
        &format!("127.0.0.1:{port}"),
        &sc.seed(&HostSeed::rebooting_master()),
        &sc.data_dir,
        false,
    )
    .await;
    assert_eq!(mock.base_url().trim_end_matches('/'), base);
    let run = sc.wait_agent(running).await;
    run.assert_code(0);

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(
        host["current_stage"], LOCAL_IGNITION,
        "stage not set once the service came up: {host}"
    );
    assert!(
        uploads_of(host, "host_boot") >= 1,
        "no bundle once the service came up: {host}"
    );
    check_host_boot_bundle(host);
    // Its budget (from the first start) is spent: it left, on boot 1.
    sc.assert_cleaned_up("budget spent on the first boot");
    // The first bundle follows the stage report even when the service was
    // down at first (the configured cluster ID would allow an earlier upload).
    let requests = api_requests(&base).await;
    let first_put = progress_puts(&requests)
        .into_iter()
        .find(|r| status_of(r) == 200)
        .map(seq);
    let first_upload = log_uploads(&requests)
        .into_iter()
        .find(|r| (200..300).contains(&status_of(r)))
        .map(seq);
    assert!(
        first_put.is_some() && first_put < first_upload,
        "first bundle was not after the stage report: {requests:?}"
    );

    sc.final_checks(Some(&base)).await;
}

// 13 ------------------------------------------------------------------------

async fn secret_form_authenticates(tag: &str, form: SecretForm) {
    let sc = Scenario::new(tag);
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, form, true);

    let run = sc
        .run_agent(&format!("first boot, {form:?}"), &opts("3s"))
        .await;
    run.assert_code(0);

    let requests = api_requests(&base).await;
    let rejected: Vec<_> = requests
        .iter()
        .filter(|r| status_of(r) == 401 || status_of(r) == 403)
        .collect();
    assert!(
        rejected.is_empty(),
        "{form:?}: requests rejected by auth: {rejected:?}"
    );
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], LOCAL_IGNITION, "{form:?}: {host}");
    assert!(uploads_of(host, "host_boot") >= 1, "{form:?}: {host}");
    check_host_boot_bundle(host);

    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_secret_json_authenticates() {
    secret_form_authenticates("pull-secret-json", SecretForm::PullSecretJson).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_token_authenticates() {
    secret_form_authenticates("bare-token", SecretForm::BareToken).await;
}

// Transient failures (5xx, dropped connections) are retried within the cycle,
// unlike the 4xx of the wrong-token scenario.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_service_failures_are_retried_within_the_cycle() {
    let sc = Scenario::new("transient");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    admin_fault(
        &base,
        serde_json::json!({"endpoint": "list_hosts", "status": 500, "times": 1}),
    )
    .await;
    admin_fault(
        &base,
        serde_json::json!({"endpoint": "update_progress", "status": 503, "times": 2, "retry_after": "1"}),
    )
    .await;
    admin_fault(
        &base,
        serde_json::json!({"endpoint": "upload_logs", "drop_connection": true, "times": 1}),
    )
    .await;

    let run = sc.run_agent("first boot, flaky service", &opts("3s")).await;
    run.assert_code(0);

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], LOCAL_IGNITION, "{host}");
    assert!(uploads_of(host, "host_boot") >= 1, "{host}");
    let bundle = check_host_boot_bundle(host);
    assert_eq!(bundle.boot_number(), Some(1));

    let requests = api_requests(&base).await;
    let puts = progress_puts(&requests);
    let statuses: Vec<u64> = puts.iter().map(|r| status_of(r)).collect();
    assert!(
        statuses.starts_with(&[503, 503, 200]),
        "progress PUT not retried through two 503s: {statuses:?}"
    );
    // All within the first cycle: the stage is set before the first bundle,
    // and the dropped upload was retried before any further host listing.
    let first_put_ok = puts.iter().find(|r| status_of(r) == 200).map(|r| seq(r));
    let uploads = log_uploads(&requests);
    let first_upload_ok = uploads
        .iter()
        .find(|r| (200..300).contains(&status_of(r)))
        .map(|r| seq(r));
    assert!(first_put_ok < first_upload_ok, "{requests:?}");
    assert_eq!(
        status_of(uploads[0]),
        0,
        "first upload should have been dropped: {uploads:?}"
    );
    // Host listings only: a bootstrap host also reads its cluster once
    // (is it a single node?).
    let lists_before_ok_upload = requests
        .iter()
        .filter(|r| {
            r["method"] == "GET"
                && r["path"].as_str().is_some_and(|p| p.ends_with("/hosts"))
                && Some(seq(r)) < first_upload_ok
        })
        .count();
    assert_eq!(
        lists_before_ok_upload, 2,
        "expected one failed and one good host listing before the first delivered bundle: {requests:?}"
    );

    sc.final_checks(Some(&base)).await;
}

// Configuration precedence: flags > environment > contract files.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_beats_contract_files_and_flags_beat_environment() {
    // Env over files: the files name a dead service and hold no secret; the
    // environment names the mock and carries the token.
    let sc = Scenario::new("env-over-files");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config("http://127.0.0.1:9", SecretForm::BareToken, true);
    std::fs::remove_file(sc.config_dir.join("pull-secret")).expect("rm pull-secret");
    let env = vec![
        ("ASSISTED_SERVICE_URL".to_owned(), base.clone()),
        ("PULL_SECRET_TOKEN".to_owned(), sc.token.clone()),
    ];
    let run = sc
        .run_agent("env over files", &AgentOpts { env, ..opts("2s") })
        .await;
    run.assert_code(0);
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(
        host["current_stage"], LOCAL_IGNITION,
        "env did not win over the files: {host}"
    );
    assert!(uploads_of(host, "host_boot") >= 1, "{host}");
    check_host_boot_bundle(host);
    sc.final_checks(Some(&base)).await;

    // Flag over env: the environment names a dead service, the flag the mock.
    let sc = Scenario::new("flag-over-env");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config("http://127.0.0.1:9", SecretForm::PullSecretJson, true);
    let env = vec![(
        "ASSISTED_SERVICE_URL".to_owned(),
        "http://127.0.0.1:9".to_owned(),
    )];
    let run = sc
        .run_agent(
            "flag over env",
            &AgentOpts {
                env,
                extra: vec!["--service-url".into(), base.clone()],
                ..opts("2s")
            },
        )
        .await;
    run.assert_code(0);
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(
        host["current_stage"], LOCAL_IGNITION,
        "the flag did not win over env: {host}"
    );
    sc.final_checks(Some(&base)).await;
}
