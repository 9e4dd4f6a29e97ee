//! End-to-end: the agent's behaviour when it cannot even start working —
//! missing configuration (a runtime failure: exit 0, never fail the
//! installation) and bad flags (a usage error: exit 2).

mod common;

use common::*;

// 9 -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_configuration_exits_0_and_says_what_is_missing_and_where_it_looked() {
    let sc = Scenario::new("no-config");
    // The contract dir exists but the discovery agent left nothing in it.
    let run = sc
        .run_agent("empty contract dir", &AgentOpts::default())
        .await;
    run.assert_code(0);

    let stderr = run.stderr_text();
    assert!(
        stderr.contains("service-url") || stderr.contains("ASSISTED_SERVICE_URL"),
        "stderr does not name the missing service URL (service-url / ASSISTED_SERVICE_URL):\n{stderr}"
    );
    let dir = sc.config_dir.to_string_lossy().into_owned();
    assert!(
        stderr.contains(&dir),
        "stderr does not say where it looked ({dir}):\n{stderr}"
    );
    // Nothing to clean up on a host that was never configured, and the unit
    // must stay enabled: a later boot may find the contract.
    assert!(
        !sc.disabled_unit(),
        "systemctl calls: {:?}",
        sc.systemctl_calls()
    );

    sc.final_checks(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_pull_secret_exits_0_and_names_it() {
    let sc = Scenario::new("no-secret");
    sc.write_config("http://127.0.0.1:9", SecretForm::BareToken, true);
    std::fs::remove_file(sc.config_dir.join("pull-secret")).expect("rm pull-secret");
    let run = sc.run_agent("no pull secret", &AgentOpts::default()).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("pull-secret") || stderr.contains("PULL_SECRET_TOKEN"),
        "stderr does not name the missing pull secret:\n{stderr}"
    );
    sc.final_checks(None).await;
}

// 10 ------------------------------------------------------------------------

async fn usage_error(tag: &str, extra: &[&str], no_interval: bool) {
    let sc = Scenario::new(tag);
    sc.write_config("http://127.0.0.1:9", SecretForm::PullSecretJson, true);
    let mut opts = AgentOpts {
        extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        ..AgentOpts::default()
    };
    if no_interval {
        opts.upload_interval = None;
    }
    let run = sc.run_agent(tag, &opts).await;
    run.assert_code(2);
    assert!(!run.stderr.is_empty(), "usage error without a message");
    // A usage error is not a run: nothing touched.
    assert!(sc.config_dir.join("pull-secret").exists());
    assert!(
        sc.systemctl_calls().is_empty(),
        "systemctl calls: {:?}",
        sc.systemctl_calls()
    );
    sc.final_checks(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_duration_is_a_usage_error() {
    usage_error("bad-interval", &["--upload-interval", "nonsense"], true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_flag_is_a_usage_error() {
    usage_error("unknown-flag", &["--no-such-flag"], false).await;
}
