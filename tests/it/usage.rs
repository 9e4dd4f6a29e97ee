//! End-to-end: the agent's behaviour when it cannot even start working —
//! missing configuration (a runtime failure: exit 0, never fail the
//! installation) and bad flags (a usage error: exit 2).

use crate::common::*;

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

// config check ---------------------------------------------------------------

/// `config check` with `run`'s flags on the scenario's host, its environment
/// cleared of the settings' names.
fn config_check(sc: &Scenario, extra: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(agent_bin());
    cmd.args(["config", "check", "--root"])
        .arg(&sc.root)
        .arg("--config-dir")
        .arg(&sc.config_dir)
        .args(extra)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd.output().expect("run config check")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_check_names_each_source_and_refuses_a_typo_the_agent_only_warns_about() {
    let sc = Scenario::new("config-check");
    sc.write_config("http://127.0.0.1:9", SecretForm::PullSecretJson, true);
    std::fs::write(
        sc.config_dir.join("reporter.conf"),
        "SERVICE_TIMEOUT_MINUTES=30\nREPORTER_RETRY_ATTEMPTS=3\n",
    )
    .unwrap();
    let out = config_check(&sc, &["--logs-type", "node_boot"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |what: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("no {what} line:\n{stdout}"))
            .to_owned()
    };
    assert!(
        line("logs type").contains("node_boot  (--logs-type)"),
        "{stdout}"
    );
    assert!(
        line("timeout").contains("30m") && line("timeout").contains("reporter.conf line 1"),
        "{stdout}"
    );
    assert!(line("retry attempts").contains("3  ("), "{stdout}");
    assert!(
        line("host ID").contains(HOST_ID) && line("host ID").contains("host-id)"),
        "{stdout}"
    );
    assert!(line("upload spread").contains("(the default)"), "{stdout}");
    assert!(line("agent token").contains("never shown"), "{stdout}");
    assert!(!stdout.contains(&sc.token), "the token printed:\n{stdout}");

    // A typo in reporter.conf: `config check` exits 1 naming the line ...
    std::fs::write(
        sc.config_dir.join("reporter.conf"),
        "SERVICE_TIMEOUT_MINUTE=30\n",
    )
    .unwrap();
    let out = config_check(&sc, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 1: unknown key \"SERVICE_TIMEOUT_MINUTE\""),
        "{stderr}"
    );
    // ... while the agent warns and reports on.
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    sc.write_config(&mock.base_url(), SecretForm::PullSecretJson, true);
    let run = sc
        .run_agent("typo in reporter.conf", &AgentOpts::default())
        .await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("unknown key \"SERVICE_TIMEOUT_MINUTE\"") && stderr.contains("ignored"),
        "{stderr}"
    );
    assert!(stderr.contains("stage set"), "{stderr}");
    sc.final_checks(Some(&mock.base_url())).await;
}
