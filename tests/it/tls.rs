//! TLS to the service, with a CA generated for each test: a private CA given
//! with `--cacert` or left in the discovery contract is trusted, a wrong CA
//! is refused with a clear error (and nothing reaches the service), and
//! `--insecure` works but warns on every start.
//!
//! The mock speaks plain HTTP; a small TLS front terminates TLS with the
//! test's certificate and forwards bytes to it, so the agent's TLS stack is
//! exercised exactly as against a real service.

use crate::common::tls::{make_pki, tls_front, Pki};
use crate::common::*;

const INSECURE_WARNING: &str = "TLS CERTIFICATE VERIFICATION IS DISABLED";

struct TlsWorld {
    sc: Scenario,
    mock: mock_assisted_service::MockServer,
    pki: Pki,
    https_url: String,
}

async fn world(tag: &str, host_name: &str) -> TlsWorld {
    let sc = Scenario::new(tag);
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let pki = make_pki(&format!("{tag} test CA"));
    let front = tls_front(&pki, mock.addr).await;
    let https_url = format!("https://{host_name}:{}", front.port());
    sc.write_config(&https_url, SecretForm::PullSecretJson, true);
    TlsWorld {
        sc,
        mock,
        pki,
        https_url,
    }
}

fn write_pem(sc: &Scenario, name: &str, pem: &str) -> String {
    let path = sc.tmp.path().join(name);
    std::fs::write(&path, pem).unwrap();
    path.to_string_lossy().into_owned()
}

async fn assert_reported_and_shipped(w: &TlsWorld) {
    let base = w.mock.base_url();
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], LOCAL_IGNITION, "{host}");
    assert!(uploads_of(host, "host_boot") >= 1, "{host}");
    check_host_boot_bundle(host);
    w.sc.final_checks(Some(&base)).await;
}

fn opts_with(extra: &[&str]) -> AgentOpts {
    AgentOpts {
        timeout: Some("2s"),
        extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        ..AgentOpts::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_ca_given_with_cacert_is_trusted() {
    // "localhost" also checks name verification and resolution without NSS.
    let w = world("tls-cacert", "localhost").await;
    let ca = write_pem(&w.sc, "private-ca.pem", &w.pki.ca_pem);
    let run =
        w.sc.run_agent("cacert", &opts_with(&["--cacert", &ca]))
            .await;
    run.assert_code(0);
    assert!(!run.stderr_text().contains(INSECURE_WARNING));
    assert_reported_and_shipped(&w).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ca_in_the_discovery_contract_is_used_by_default() {
    let w = world("tls-contract-ca", "127.0.0.1").await;
    std::fs::write(w.sc.config_dir.join("ca.crt"), &w.pki.ca_pem).unwrap();
    let run = w.sc.run_agent("contract ca.crt", &opts_with(&[])).await;
    run.assert_code(0);
    assert_reported_and_shipped(&w).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_ca_is_refused_with_a_clear_error_and_nothing_reaches_the_service() {
    let w = world("tls-wrong-ca", "localhost").await;
    let other = make_pki("someone else's CA");
    let ca = write_pem(&w.sc, "wrong-ca.pem", &other.ca_pem);
    let run =
        w.sc.run_agent("wrong CA", &opts_with(&["--cacert", &ca]))
            .await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    let refusal = stderr
        .lines()
        .find(|l| l.contains("TLS certificate is not trusted"))
        .unwrap_or_else(|| panic!("no clear certificate error:\n{stderr}"));
    assert!(refusal.contains(" ERROR "), "{refusal}");
    assert!(
        refusal.contains("UnknownIssuer"),
        "names the cause: {refusal}"
    );
    assert!(
        refusal.contains("--cacert") && refusal.contains("ca.crt"),
        "names the fix: {refusal}"
    );
    assert!(
        !stderr.contains("retrying"),
        "an untrusted certificate does not heal by retrying:\n{stderr}"
    );
    let base = w.mock.base_url();
    assert!(
        api_requests(&base).await.is_empty(),
        "a request got through a TLS connection the agent should have refused"
    );
    let state = admin_state(&base).await;
    assert_eq!(host_of(&state, HOST_ID)["current_stage"], "Rebooting");
    w.sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_roots_alone_refuse_a_private_ca() {
    let w = world("tls-no-ca", "localhost").await;
    let run = w.sc.run_agent("no CA", &opts_with(&[])).await;
    run.assert_code(0);
    assert!(
        run.stderr_text().contains("TLS certificate is not trusted"),
        "{}",
        run.stderr_text()
    );
    assert!(api_requests(&w.mock.base_url()).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_accepts_any_certificate_and_warns_on_every_start() {
    let w = world("tls-insecure", "localhost").await;
    let other = make_pki("someone else's CA");
    let ca = write_pem(&w.sc, "wrong-ca.pem", &other.ca_pem);
    for attempt in 1..=2 {
        let label = format!("insecure start {attempt}");
        let opts = opts_with(&["--cacert", &ca, "--insecure"]);
        // The first start ends as a restart does (SIGTERM), before the budget
        // is spent: a spent budget cleans up, and there is no second start.
        let run = if attempt == 1 {
            let running = w.sc.spawn_agent(&label, &opts);
            tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
            w.sc.stop_agent(running).await
        } else {
            w.sc.run_agent(&label, &opts).await
        };
        run.assert_code(0);
        let stderr = run.stderr_text();
        let warning = stderr
            .lines()
            .find(|l| l.contains(INSECURE_WARNING))
            .unwrap_or_else(|| panic!("start {attempt} did not warn:\n{stderr}"));
        assert!(warning.contains(" WARN "), "not a warning: {warning}");
        assert!(warning.contains(w.https_url.as_str()), "{warning}");
    }
    assert_reported_and_shipped(&w).await;
}
