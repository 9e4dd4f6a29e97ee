//! End-to-end: the install flows the reporter must tell apart (classic two
//! boots, single boot, single node bootstrap in place, day 2), the one time
//! budget counted from the first start, the upstream unit's environment, the
//! bounded number of progress updates, and host lists too big to trust.
//!
//! The real binary against the real mock on loopback; boots are simulated as
//! in tests/it/lifecycle.rs (a new boot ID under the fixture root), and the
//! flows by the files machine-config-daemon-firstboot and the single-node
//! bootstrap leave on a host (tests/common: `firstboot_pending` & co.).

use std::time::Duration;

use crate::common::*;
use serde_json::{json, Value};

const SECOND_BOOT_ID: &str = "9b2e4f61-0c3d-4a7b-8e15-2f6d0a9c4b77";
/// src/agent/progress.rs `MAX_PROGRESS_PUTS_PER_BOOT`.
const MAX_PROGRESS_PUTS_PER_BOOT: usize = 4;

fn opts(timeout: &'static str, kubelet: Option<String>) -> AgentOpts {
    AgentOpts {
        timeout: Some(timeout),
        kubelet_healthz_url: kubelet,
        ..AgentOpts::default()
    }
}

fn status_of(r: &Value) -> u64 {
    r["status"].as_u64().unwrap_or(0)
}

async fn host_now(base: &str) -> Value {
    host_of(&admin_state(base).await, HOST_ID).clone()
}

/// Waits (bounded) until the host's stage is `stage` and `uploads` bundles
/// arrived; returns the host.
async fn wait_for_stage(base: &str, stage: &str, uploads: u64) -> Value {
    let world = wait_for_state(base, Duration::from_secs(15), |s| {
        let h = host_of(s, HOST_ID);
        h["current_stage"] == stage && uploads_of(h, "host_boot") >= uploads
    })
    .await;
    host_of(&world, HOST_ID).clone()
}

/// Waits (bounded, as [`wait_for_requests`]) until the mock has answered
/// `more` host lists (a cycle's first request) beyond those it had when
/// called.
async fn wait_for_more_host_lists(base: &str, more: usize) {
    fn lists(requests: &[Value]) -> usize {
        requests
            .iter()
            .filter(|r| {
                r["method"] == "GET"
                    && r["path"].as_str().is_some_and(|p| p.ends_with("/hosts"))
                    && status_of(r) == 200
            })
            .count()
    }
    let before = lists(&api_requests(base).await);
    wait_for_requests(base, |r| lists(r) >= before + more).await;
}

fn last_bundle_reason(host: &Value) -> Value {
    check_host_boot_bundle(host).manifest["meta"]["reason"].clone()
}

// Classic: pointer-ignition boot, firstboot reboot, control-plane boot.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_two_boot_install() {
    let sc = Scenario::new("flow-classic");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_pending();

    // Boot 1: the pointer ignition's boot.
    let running = sc.spawn_agent("classic boot 1", &opts("60s", None));
    let host = wait_for_stage(&base, LOCAL_IGNITION, 1).await;
    assert_eq!(host["current_stage"], LOCAL_IGNITION, "{host}");
    // Firstboot applies a config that differs from the booted OS: it renames
    // the encapsulated config and reboots. Until the reboot, this is still
    // not the control plane's boot.
    sc.firstboot_applied_with_reboot();
    // Cycles that saw the renamed config (each starts with a host list).
    wait_for_more_host_lists(&base, 3).await;
    assert_eq!(host_now(&base).await["current_stage"], LOCAL_IGNITION);
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    sc.assert_not_cleaned_up("classic boot 1 stopped for the reboot");

    // Boot 2: the control plane's config; the MCS saw the fetch.
    sc.reboot(SECOND_BOOT_ID);
    admin_set_stage(&base, HOST_ID, "Configuring", None).await;
    let kubelet = start_kubelet(true).await;
    let run = sc
        .run_agent("classic boot 2", &opts("60s", Some(kubelet)))
        .await;
    run.assert_code(0);
    let host = host_now(&base).await;
    assert_eq!(
        stage_history(&host),
        [
            "Rebooting",
            LOCAL_IGNITION,
            "Configuring",
            CONTROL_PLANE_IGNITION
        ],
        "{host}"
    );
    let bundle = check_host_boot_bundle(&host);
    assert_eq!(bundle.boot_number(), Some(2));
    assert_eq!(bundle.manifest["meta"]["reason"], "final");
    assert!(run.stderr_text().contains("classic two-boot install"));
    sc.assert_cleaned_up("classic boot 2 with kubelet healthy");
    sc.final_checks(Some(&base)).await;
}

// Single boot: machine config applied in place, kubelet healthy on boot 1.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_boot_with_kubelet_healthy_ends_the_job_on_boot_1() {
    let sc = Scenario::new("flow-single-kubelet");
    let mock = sc
        .start_mock(&HostSeed::at("Configuring", "installing-in-progress"))
        .await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_applied_in_place();
    let kubelet = start_kubelet(true).await;

    // A long budget: only the job's end can explain a quick exit.
    let run = sc
        .run_agent("single boot, kubelet healthy", &opts("120s", Some(kubelet)))
        .await;
    run.assert_code(0);
    let host = host_now(&base).await;
    assert_eq!(
        stage_history(&host),
        ["Configuring", CONTROL_PLANE_IGNITION],
        "{host}"
    );
    let bundle = check_host_boot_bundle(&host);
    assert_eq!(bundle.boot_number(), Some(1));
    assert_eq!(bundle.manifest["meta"]["reason"], "final");
    assert!(
        run.stderr_text().contains("single-boot install"),
        "flow not named:\n{}",
        run.stderr_text()
    );
    sc.assert_cleaned_up("single boot, kubelet healthy on boot 1");
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_boot_reports_control_plane_ignition_when_firstboot_applies_in_place() {
    let sc = Scenario::new("flow-single-inplace");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_pending();
    let kubelet = start_kubelet(false).await;

    let running = sc.spawn_agent("single boot", &opts("60s", Some(kubelet)));
    wait_for_stage(&base, LOCAL_IGNITION, 1).await;
    sc.firstboot_applied_in_place();
    let host = wait_for_stage(&base, CONTROL_PLANE_IGNITION, 1).await;
    assert_eq!(
        stage_history(&host),
        ["Rebooting", LOCAL_IGNITION, CONTROL_PLANE_IGNITION],
        "{host}"
    );
    // Kubelet is not healthy yet: the job goes on.
    sc.assert_not_cleaned_up("control-plane stage reported, kubelet not healthy");
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    sc.final_checks(Some(&base)).await;
}

async fn single_boot_ended_by_the_service(tag: &str, stage: &str, status: Option<&str>) {
    let sc = Scenario::new(tag);
    let mock = sc
        .start_mock(&HostSeed::at("Configuring", "installing-in-progress"))
        .await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_applied_in_place();
    let kubelet = start_kubelet(false).await;

    let running = sc.spawn_agent(tag, &opts("120s", Some(kubelet)));
    wait_for_stage(&base, CONTROL_PLANE_IGNITION, 1).await;
    admin_set_stage(&base, HOST_ID, stage, status).await;
    let run = sc.wait_agent(running).await;
    run.assert_code(0);
    let host = host_now(&base).await;
    assert_eq!(host["current_stage"], stage, "{host}");
    assert_eq!(last_bundle_reason(&host), "final");
    sc.assert_cleaned_up(&format!("{stage} from the service on boot 1"));
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_boot_ended_by_joined_from_the_service() {
    single_boot_ended_by_the_service("flow-single-joined", "Joined", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_boot_ended_by_done_from_the_service() {
    single_boot_ended_by_the_service("flow-single-done", "Done", Some("installed")).await;
}

// Single node, bootstrap in place.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_node_bootstrap_kubelet_does_not_end_the_job() {
    let sc = Scenario::new("flow-sno");
    let seed = HostSeed {
        single_node: true,
        ..HostSeed::rebooting_master()
    };
    let mock = sc.start_mock(&seed).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_applied_in_place();
    sc.put_host_file(BOOTSTRAP_IN_PLACE_KUBECONFIG, "apiVersion: v1\n");
    let kubelet = start_kubelet(true).await;

    let running = sc.spawn_agent("sno boot 1", &opts("60s", Some(kubelet)));
    wait_for_stage(&base, LOCAL_IGNITION, 2).await;
    // Several cycles, each polling kubelet, saw it healthy: still running.
    wait_for_more_host_lists(&base, 3).await;
    sc.assert_not_cleaned_up("healthy bootstrap kubelet");
    assert_eq!(host_now(&base).await["current_stage"], LOCAL_IGNITION);

    // The bootstrap script's cleanup removes its secrets: the node is a
    // plain master now, its healthy kubelet ends the job.
    sc.remove_host_file(BOOTSTRAP_IN_PLACE_KUBECONFIG);
    let run = sc.wait_agent(running).await;
    run.assert_code(0);
    let host = host_now(&base).await;
    assert_eq!(
        stage_history(&host),
        ["Rebooting", LOCAL_IGNITION, CONTROL_PLANE_IGNITION],
        "{host}"
    );
    assert!(run.stderr_text().contains("bootstrap in place"));
    sc.assert_cleaned_up("sno after the bootstrap");
    sc.final_checks(Some(&base)).await;
}

/// A single node whose bootstrap-in-place files are missing: the service
/// says the host bootstraps a single-node cluster (its stage list), so a
/// healthy kubelet on the first boot from disk is the bootstrap's, not the
/// end of the job (the real service run showed the reporter leaving one
/// second into that boot). The next boot is the node's own: its healthy
/// kubelet ends the job, logged as a single node, not a classic install.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_node_without_bootstrap_files_told_by_the_service() {
    let sc = Scenario::new("flow-sno-service");
    let seed = HostSeed {
        single_node: true,
        ..HostSeed::rebooting_master()
    };
    let mock = sc.start_mock(&seed).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_applied_in_place();
    let kubelet = start_kubelet(true).await;

    let running = sc.spawn_agent("sno boot 1", &opts("60s", Some(kubelet.clone())));
    wait_for_stage(&base, LOCAL_IGNITION, 2).await;
    wait_for_more_host_lists(&base, 3).await;
    sc.assert_not_cleaned_up("healthy kubelet on a single node's first boot");
    assert_eq!(host_now(&base).await["current_stage"], LOCAL_IGNITION);
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    assert!(
        run.stderr_text()
            .contains("bootstraps a single-node cluster"),
        "{}",
        run.stderr_text()
    );
    assert!(run.stderr_text().contains("bootstrap in place"));

    sc.reboot(SECOND_BOOT_ID);
    let running = sc.spawn_agent("sno boot 2", &opts("60s", Some(kubelet)));
    let run = sc.wait_agent(running).await;
    run.assert_code(0);
    let host = host_now(&base).await;
    assert_eq!(
        stage_history(&host),
        ["Rebooting", LOCAL_IGNITION, CONTROL_PLANE_IGNITION],
        "{host}"
    );
    let log = run.stderr_text();
    assert!(log.contains("single node, after its bootstrap"), "{log}");
    assert!(!log.contains("classic two-boot"), "{log}");
    sc.assert_cleaned_up("single node after its bootstrap");
    sc.final_checks(Some(&base)).await;
}

/// The same host on today's upstream (`--upstream-compat`): its infra-env
/// list gives it `BootstrapStages`, as the real service did, so the
/// reporter reads the cluster (`exclude-hosts`) to learn it is a single
/// node, and a healthy kubelet on the first boot does not end the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_node_on_todays_upstream_is_learned_from_the_cluster() {
    let sc = Scenario::new("flow-sno-upstream");
    let seed = HostSeed {
        single_node: true,
        ..HostSeed::rebooting_master()
    };
    let mock = sc.start_mock_upstream(&seed).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_applied_in_place();
    let kubelet = start_kubelet(true).await;

    let running = sc.spawn_agent("sno upstream boot 1", &opts("60s", Some(kubelet)));
    let requests = wait_for_requests(&base, |r| {
        r.iter().any(|q| {
            q["method"] == "POST" && q["path"].as_str().is_some_and(|p| p.ends_with("/logs"))
        })
    })
    .await;
    wait_for_more_host_lists(&base, 3).await;
    sc.assert_not_cleaned_up("healthy kubelet on a single node's first boot, today's upstream");
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    let cluster_reads: Vec<&Value> = requests
        .iter()
        .filter(|q| {
            q["method"] == "GET"
                && q["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with(&format!("/clusters/{CLUSTER_ID}")))
        })
        .collect();
    assert_eq!(cluster_reads.len(), 1, "{requests:#?}");
    assert!(
        cluster_reads[0]["query"]
            .as_str()
            .is_some_and(|q| q.contains("exclude-hosts=true")),
        "{:?}",
        cluster_reads[0]
    );
    let log = run.stderr_text();
    assert!(log.contains("bootstraps a single-node cluster"), "{log}");
    assert!(!log.contains("the job is over"), "{log}");
}

// Day 2: the hosted service moves the host Rebooting -> Done.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn day2_host_ships_a_bundle_before_leaving() {
    let sc = Scenario::new("flow-day2");
    let seed = HostSeed {
        role: "worker",
        bootstrap: false,
        ..HostSeed::at("Done", "added-to-existing-cluster")
    };
    let mock = sc.start_mock(&seed).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_pending();

    let run = sc.run_agent("day-2 host", &opts("120s", None)).await;
    run.assert_code(0);
    let host = host_now(&base).await;
    assert_eq!(host["current_stage"], "Done");
    assert!(uploads_of(&host, "host_boot") >= 1, "no bundle: {host}");
    assert_eq!(last_bundle_reason(&host), "final");
    let requests = api_requests(&base).await;
    assert!(progress_puts(&requests).is_empty(), "{requests:?}");
    sc.assert_cleaned_up("day-2 host at Done");
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn day2_host_moved_from_rebooting_to_done_while_running() {
    let sc = Scenario::new("flow-day2-live");
    let seed = HostSeed {
        role: "worker",
        bootstrap: false,
        ..HostSeed::rebooting_master()
    };
    let mock = sc.start_mock(&seed).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_pending();

    let running = sc.spawn_agent("day-2 host, live", &opts("120s", None));
    wait_for_stage(&base, LOCAL_IGNITION, 1).await;
    admin_set_stage(&base, HOST_ID, "Done", Some("added-to-existing-cluster")).await;
    let run = sc.wait_agent(running).await;
    run.assert_code(0);
    let host = host_now(&base).await;
    assert!(uploads_of(&host, "host_boot") >= 2, "{host}");
    assert_eq!(last_bundle_reason(&host), "final");
    sc.assert_cleaned_up("day-2 host moved to Done");
    sc.final_checks(Some(&base)).await;
}

// One budget, counted from the first start.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_spent_on_boot_1_cleans_up() {
    let sc = Scenario::new("flow-budget-boot1");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_pending();
    let kubelet = start_kubelet(false).await;

    let run = sc
        .run_agent("boot 1 to its budget", &opts("4s", Some(kubelet)))
        .await;
    run.assert_code(0);
    assert!(
        run.elapsed >= Duration::from_millis(3500),
        "ended after {:?}, before its 4s budget",
        run.elapsed
    );
    let host = host_now(&base).await;
    assert_eq!(host["current_stage"], LOCAL_IGNITION, "{host}");
    assert_eq!(last_bundle_reason(&host), "final");
    assert!(
        run.stderr_text().contains("budget"),
        "{}",
        run.stderr_text()
    );
    sc.assert_cleaned_up("budget spent on boot 1");
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_spent_across_a_reboot_is_not_extended() {
    let sc = Scenario::new("flow-budget-reboot");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_pending();

    let running = sc.spawn_agent("boot 1", &opts("6s", None));
    wait_for_stage(&base, LOCAL_IGNITION, 1).await;
    sc.firstboot_applied_with_reboot();
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    sc.assert_not_cleaned_up("boot 1 stopped for the reboot");
    let uploads_boot1 = uploads_of(&host_now(&base).await, "host_boot");

    // The reboot takes longer than what was left of the budget.
    tokio::time::sleep(Duration::from_secs(6)).await;
    sc.reboot(SECOND_BOOT_ID);
    let run = sc.run_agent("boot 2", &opts("6s", None)).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("0s of the 6s budget left"),
        "boot 2 got time back:\n{stderr}"
    );
    let host = host_now(&base).await;
    // Boot 2 shipped its last bundle and nothing else.
    assert_eq!(uploads_of(&host, "host_boot"), uploads_boot1 + 1, "{host}");
    let bundle = check_host_boot_bundle(&host);
    assert_eq!(bundle.boot_number(), Some(2));
    assert_eq!(bundle.manifest["meta"]["reason"], "final");
    sc.assert_cleaned_up("budget spent across a reboot");
    sc.final_checks(Some(&base)).await;
}

// The reverted upstream unit's environment: no INFRA_ENV_ID.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_unit_environment_without_infra_env_id() {
    let sc = Scenario::new("flow-upstream-env");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    // No contract files at all: only the unit's Environment= lines.
    let env = vec![
        ("ASSISTED_SERVICE_URL".to_owned(), base.clone()),
        ("PULL_SECRET_TOKEN".to_owned(), sc.token.clone()),
        ("CLUSTER_ID".to_owned(), CLUSTER_ID.to_owned()),
        ("HOST_ID".to_owned(), HOST_ID.to_owned()),
        ("LOG_SEND_FREQUENCY_IN_MINUTES".to_owned(), "5".to_owned()),
        ("SERVICE_TIMEOUT_MINUTES".to_owned(), "60".to_owned()),
    ];
    let running = sc.spawn_agent(
        "upstream unit env",
        &AgentOpts {
            env,
            ..opts("60s", None)
        },
    );
    let host = wait_for_stage(&base, LOCAL_IGNITION, 1).await;
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    assert_eq!(host["current_stage"], LOCAL_IGNITION, "{host}");
    check_host_boot_bundle(&host);
    let requests = api_requests(&base).await;
    let cluster_list = format!("{API}/clusters/{CLUSTER_ID}/hosts");
    assert!(
        requests.iter().any(|r| r["method"] == "GET"
            && r["path"] == cluster_list.as_str()
            && status_of(r) == 200),
        "the cluster's host list was not read: {requests:?}"
    );
    let progress = format!("{API}/infra-envs/{INFRA_ENV_ID}/hosts/{HOST_ID}/progress");
    assert!(
        progress_puts(&requests)
            .iter()
            .any(|r| r["path"] == progress.as_str() && status_of(r) == 200),
        "no progress update under the learned infra-env: {requests:?}"
    );
    assert!(run
        .stderr_text()
        .contains(&format!("infra-env {INFRA_ENV_ID}")));
    sc.final_checks(Some(&base)).await;
}

// Quiet on today's service: few progress updates, each saying something new.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_updates_are_bounded_per_boot_across_restarts() {
    let sc = Scenario::new("flow-quiet");
    let mock = sc.start_mock_upstream(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.firstboot_pending();

    // Three runs in one boot (systemd restarts), the flow moving on between
    // them: local ignition, then the config applied in place.
    // Each run is stopped once a cycle has begun after the one that
    // read the flow (a second host list): what it had to say, it said.
    for i in 0..3 {
        let running = sc.spawn_agent(&format!("restart {i}"), &opts("60s", None));
        wait_for_more_host_lists(&base, 2).await;
        if i == 1 {
            sc.firstboot_applied_in_place();
            wait_for_more_host_lists(&base, 2).await;
        }
        sc.stop_agent(running).await.assert_code(0);
    }
    let requests = api_requests(&base).await;
    let puts = progress_puts(&requests);
    assert!(
        puts.len() <= MAX_PROGRESS_PUTS_PER_BOOT,
        "{} progress updates in one boot: {puts:?}",
        puts.len()
    );
    let accepted: Vec<&Value> = puts
        .iter()
        .copied()
        .filter(|r| status_of(r) == 200)
        .collect();
    assert!(accepted.len() >= 2, "{puts:?}");
    // Each accepted update says something the previous one did not.
    for pair in accepted.windows(2) {
        assert_ne!(
            pair[0]["body"], pair[1]["body"],
            "repeated update: {pair:?}"
        );
    }
    let host = host_now(&base).await;
    let info = host["progress_info"].as_str().unwrap_or_default();
    assert!(info.contains(CONTROL_PLANE_IGNITION), "{info:?}");
    sc.final_checks(Some(&base)).await;
}

// Host lists: big ones are streamed, oversized ones refused.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_33_mib_host_list_is_read_within_the_units_memory() {
    let sc = Scenario::new("flow-big-list");
    // Each mock host carries what a real one does (about 22 KB of
    // inventory, validations and connectivity) and its hostname four times
    // (requested, inventory, two validation messages): 1000 hosts with
    // 3 KB names make about 33 MiB.
    let seed = seed_with_many_hosts(&sc.token, &HostSeed::rebooting_master(), 1000, 3_000);
    let mock = start_mock_at("127.0.0.1:0", &seed, &sc.data_dir, false).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    // The debug-built mock takes seconds to render 33 MiB of hosts: a long
    // request timeout and one lookup per run.
    let running = sc.spawn_agent(
        "33 MiB host list",
        &AgentOpts {
            raw_args: Some(slow_service_args(&sc)),
            deadline: Duration::from_secs(150),
            ..AgentOpts::default()
        },
    );
    let pid = running.pid().expect("pid");
    // Watched through the request log: /admin/state would carry the whole
    // 33 MiB list on every poll. An upload is answered 204, as upstream does.
    let requests = wait_for_requests(&base, |reqs| {
        progress_puts(reqs).iter().any(|r| status_of(r) == 200)
            && log_uploads(reqs)
                .iter()
                .any(|r| (200..300).contains(&status_of(r)))
    })
    .await;
    let peak = peak_rss_kib(pid).expect("VmHWM");
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    let put = progress_puts(&requests)
        .into_iter()
        .find(|r| status_of(r) == 200)
        .expect("accepted progress update");
    assert_eq!(put["body"]["current_stage"], LOCAL_IGNITION, "{put}");
    assert!(
        log_uploads(&requests)
            .iter()
            .any(|r| (200..300).contains(&status_of(r))),
        "no bundle accepted: {:?}",
        log_uploads(&requests)
    );
    eprintln!("peak RSS with a 33 MiB host list: {} MiB", peak / 1024);
    assert!(
        peak < 128 * 1024,
        "peak RSS {peak} KiB: the host list is not streamed (unit MemoryMax=256M)"
    );
    // Not `/admin/state` (33 MiB again): the request log is enough here.
    sc.final_checks(None).await;
    assert_no_single_host_get(&api_requests(&base).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_host_list_is_refused_cleanly() {
    let sc = Scenario::new("flow-huge-list");
    // More hosts before ours than src/api/host_list.rs MAX_LIST_HOSTS.
    let seed = seed_with_many_hosts(&sc.token, &HostSeed::rebooting_master(), 10_001, 8);
    let mock = start_mock_at("127.0.0.1:0", &seed, &sc.data_dir, false).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    // Served as the answer to every host list: 10 001 bare hosts, ours last.
    let mut hosts: Vec<Value> = (0..10_001)
        .map(|i| json!({"id": format!("00000000-0000-4000-8000-{i:012}")}))
        .collect();
    hosts
        .push(json!({"id": HOST_ID, "cluster_id": CLUSTER_ID, "status": "installing-in-progress"}));
    admin_fault(
        &base,
        json!({"endpoint": "list_hosts", "status": 200, "times": 100,
               "body": Value::Array(hosts).to_string()}),
    )
    .await;
    let running = sc.spawn_agent("oversized host list", &opts("60s", None));
    wait_for_requests(&base, |reqs| {
        reqs.iter()
            .filter(|r| r["method"] == "GET" && status_of(r) == 200)
            .count()
            >= 2
    })
    .await;
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("more than 10000 hosts before this one"),
        "no clear error about the host list:\n{stderr}"
    );
    let requests = api_requests(&base).await;
    assert!(progress_puts(&requests).is_empty(), "{requests:?}");
    sc.final_checks(None).await;
    assert_no_single_host_get(&requests);
}

/// Run flags for a slow service: a long request timeout, one cycle a minute.
fn slow_service_args(sc: &Scenario) -> Vec<String> {
    let dir = |p: &std::path::Path| p.to_string_lossy().into_owned();
    [
        "--log-level",
        "debug",
        "run",
        "--config-dir",
        &dir(&sc.config_dir),
        "--state-dir",
        &dir(&sc.state_dir),
        "--root",
        &dir(&sc.root),
        "--upload-interval",
        "60s",
        "--timeout",
        "300s",
        "--retry-initial-delay",
        "100ms",
        "--retry-max-delay",
        "500ms",
        "--retry-attempts",
        "3",
        "--command-timeout",
        "5s",
        "--request-timeout",
        "120s",
        "--kubelet-healthz-url",
        "http://127.0.0.1:9/healthz",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// Polls the mock's API request log until `cond` holds (at most 90 s: the
/// big lists are slow to build in a debug mock on a busy machine).
async fn wait_for_requests(base: &str, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let start = std::time::Instant::now();
    loop {
        let requests = api_requests(base).await;
        if cond(&requests) {
            return requests;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "the awaited requests did not come within 90 s; got: {:?}",
            requests
                .iter()
                .map(|r| format!("{} {} {}", r["method"], r["path"], r["status"]))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

// The deadline holds whatever hangs.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_service_does_not_hold_the_deadline() {
    let sc = Scenario::new("flow-stall");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    // Every host list hangs for a minute, far past the 8 s budget.
    admin_fault(
        &base,
        json!({"endpoint": "list_hosts", "delay_ms": 60_000, "times": 50}),
    )
    .await;

    let run = sc
        .run_agent(
            "stalled service",
            &AgentOpts {
                deadline: Duration::from_secs(40),
                ..opts("8s", None)
            },
        )
        .await;
    run.assert_code(0);
    assert!(
        run.elapsed < Duration::from_secs(20),
        "the run took {:?} with an 8s budget: a stalled request held it",
        run.elapsed
    );
    assert!(
        run.stderr_text().contains("budget"),
        "{}",
        run.stderr_text()
    );
    sc.assert_cleaned_up("budget spent while the service stalled");
    sc.final_checks(Some(&base)).await;
}
