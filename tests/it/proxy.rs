//! The agent behind a forward proxy: a real one, Debian's tinyproxy, started
//! per test on a loopback port with a generated configuration (foreground,
//! killed with the test, and by `timeout` at the latest). What the proxy saw
//! is read from its own log.
//!
//! Covered: plain http through the proxy with credentials in the proxy URL
//! (never shown, scrubbed from bundles), https through a CONNECT tunnel,
//! NO_PROXY bypass by domain, IPv4 and IPv6 CIDR and `*` from each
//! configuration layer, and proxies that refuse (ACL, wrong credentials,
//! nothing listening): a clear error naming the proxy, bounded retries.
//!
//! Needs `/usr/bin/tinyproxy`: Debian's `tinyproxy-bin`, the executable
//! alone (the `tinyproxy` package would add a service enabled at boot),
//! which `scripts/test-deps` installs; without it every test here fails
//! with that install line.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::tls::{make_pki, tls_front};
use crate::common::*;

const TINYPROXY: &str = "/usr/bin/tinyproxy";
/// The agent's retry attempts in these runs (`Scenario::args`).
const ATTEMPTS: usize = 3;
const PROXY_USER: &str = "reporter";
/// Long enough for the redactor (8 characters and more).
const PROXY_PASSWORD: &str = "Pr0xy-pa55w0rd-e2e";

/// Fails the test, with the line that installs it, unless tinyproxy is
/// installed: a test that did not run never counts as passed.
/// `scripts/test` installs it.
fn require_tinyproxy() {
    assert!(
        Path::new(TINYPROXY).exists(),
        "{TINYPROXY} not found: apt-get install tinyproxy-bin (or run scripts/test, which installs it)"
    );
}

/// A tinyproxy of our own on 127.0.0.1.
struct Tinyproxy {
    port: u16,
    log: PathBuf,
    _child: tokio::process::Child,
}

impl Tinyproxy {
    /// Starts one with `acl` (Allow/Deny/BasicAuth lines) and waits until it
    /// accepts connections.
    async fn start(dir: &Path, acl: &str) -> Tinyproxy {
        // A free port may be taken between the probe and tinyproxy's bind:
        // try a few.
        for attempt in 0..3 {
            let port = free_port();
            let log = dir.join(format!("tinyproxy-{port}.log"));
            let conf = dir.join(format!("tinyproxy-{port}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "Port {port}\nListen 127.0.0.1\nTimeout 20\nMaxClients 32\n\
                     LogFile \"{}\"\nLogLevel Info\n{acl}\n",
                    log.display()
                ),
            )
            .expect("write tinyproxy.conf");
            // Killed with the test (kill_on_drop kills `timeout`, whose death
            // kills tinyproxy through setpriv's parent-death signal), and
            // after two minutes whatever happens to the test.
            let child = tokio::process::Command::new("timeout")
                .args(["-s", "KILL", "120", "setpriv", "--pdeathsig", "KILL", "--"])
                .arg(TINYPROXY)
                .arg("-d")
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .expect("start tinyproxy");
            let proxy = Tinyproxy {
                port,
                log,
                _child: child,
            };
            // Ready once it says so: a probe connection would count as a
            // client in its log.
            for _ in 0..100 {
                if proxy.log_text().contains("Accepting connections") {
                    return proxy;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            eprintln!(
                "tinyproxy attempt {attempt} on port {port} did not listen: {}",
                proxy.log_text()
            );
        }
        panic!("tinyproxy did not start");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn url_with_credentials(&self, password: &str) -> String {
        format!("http://{PROXY_USER}:{password}@127.0.0.1:{}", self.port)
    }

    /// How the agent logs it.
    fn shown(&self, with_credentials: bool) -> String {
        if with_credentials {
            format!("http://[REDACTED]@127.0.0.1:{}", self.port)
        } else {
            self.url()
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Request lines the proxy received ("GET http://...", "CONNECT host:port").
    fn requests(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .filter_map(|l| l.split_once("): "))
            .filter(|(head, _)| head.contains("Request (file descriptor"))
            .map(|(_, rest)| rest.to_owned())
            .collect()
    }

    /// Client connections it accepted (refused ones included).
    fn connections(&self) -> usize {
        self.log_text()
            .lines()
            .filter(|l| l.contains("Connect (file descriptor"))
            .count()
    }
}

fn write_proxy_env(sc: &Scenario, text: &str) {
    let path = sc.config_dir.join("proxy.env");
    std::fs::write(&path, text).expect("write proxy.env");
    set_mode(&path, 0o600);
}

fn opts(timeout: &'static str, extra: &[&str], env: &[(&str, &str)]) -> AgentOpts {
    AgentOpts {
        timeout: Some(timeout),
        extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..AgentOpts::default()
    }
}

async fn reported_and_shipped(base: &str) -> serde_json::Value {
    let state = admin_state(base).await;
    let host = host_of(&state, HOST_ID).clone();
    assert_eq!(host["current_stage"], LOCAL_IGNITION, "{host}");
    assert!(uploads_of(&host, "host_boot") >= 1, "{host}");
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_goes_through_the_proxy_with_credentials_never_shown() {
    require_tinyproxy();
    let sc = Scenario::new("proxy-http");
    let proxy = Tinyproxy::start(
        sc.tmp.path(),
        &format!("Allow 127.0.0.1\nBasicAuth {PROXY_USER} {PROXY_PASSWORD}"),
    )
    .await;
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    // As the ignition subcommand writes it from the infra-env's settings;
    // NO_PROXY names other networks only.
    write_proxy_env(
        &sc,
        &format!(
            "HTTP_PROXY={}\nNO_PROXY=10.0.0.0/8,.cluster.example\n",
            proxy.url_with_credentials(PROXY_PASSWORD)
        ),
    );
    // The host's journal carries the proxy URL too (crio's proxy settings
    // would): the bundle must not.
    let journal = format!(
        "{}\n2026-11-22T10:00:04.000000+0000 host crio[901]: using proxy {}",
        sc.journal_extra(),
        proxy.url_with_credentials(PROXY_PASSWORD)
    );
    let run = sc
        .run_agent(
            "http via proxy",
            &opts("2s", &[], &[("FAKE_JOURNAL_EXTRA", &journal)]),
        )
        .await;
    run.assert_code(0);
    let stderr = run.stderr_text();

    let host = reported_and_shipped(&base).await;
    let seen = proxy.requests();
    let api = api_requests(&base).await;
    let mock_port = mock.addr.port();
    let through: Vec<&String> = seen
        .iter()
        .filter(|r| r.contains(&format!("http://127.0.0.1:{mock_port}/api/")))
        .collect();
    assert_eq!(
        through.len(),
        api.len(),
        "every API request the mock saw came through the proxy:\nproxy: {seen:#?}\nmock: {api:#?}"
    );
    for what in [
        format!("GET http://127.0.0.1:{mock_port}{API}/infra-envs/{INFRA_ENV_ID}/hosts"),
        format!("PUT http://127.0.0.1:{mock_port}{API}/infra-envs/{INFRA_ENV_ID}/hosts/{HOST_ID}/progress"),
        format!("POST http://127.0.0.1:{mock_port}{API}/clusters/{CLUSTER_ID}/logs"),
    ] {
        assert!(
            through.iter().any(|r| r.starts_with(&what)),
            "the proxy never saw {what}: {seen:#?}"
        );
    }
    assert!(
        stderr.contains(&format!(
            "requests to {base} go through proxy {}",
            proxy.shown(true)
        )),
        "{stderr}"
    );
    for stream in [&run.stdout, &run.stderr] {
        assert!(
            !contains(stream, PROXY_PASSWORD.as_bytes()),
            "the proxy password leaked into the agent's output"
        );
    }
    let bundle = check_host_boot_bundle(&host);
    for m in &bundle.members {
        assert!(
            !contains(&m.data, PROXY_PASSWORD.as_bytes()),
            "the proxy password is in bundle member {}",
            m.name
        );
    }
    assert!(
        bundle
            .members
            .iter()
            .filter(|m| m.name.contains("journal"))
            .any(|m| contains(&m.data, b"crio[901]: using proxy")),
        "the journal line with the proxy URL was dropped instead of redacted"
    );
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_goes_through_a_connect_tunnel() {
    require_tinyproxy();
    let sc = Scenario::new("proxy-connect");
    let proxy = Tinyproxy::start(sc.tmp.path(), "Allow 127.0.0.1").await;
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let pki = make_pki("proxy test CA");
    let front = tls_front(&pki, mock.addr).await;
    let https_url = format!("https://localhost:{}", front.port());
    sc.write_config(&https_url, SecretForm::PullSecretJson, true);
    std::fs::write(sc.config_dir.join("ca.crt"), &pki.ca_pem).unwrap();
    // From the environment this time, in the lower-case spelling the
    // upstream discovery unit also sets; HTTP_PROXY must not be used for https.
    let run = sc
        .run_agent(
            "https via CONNECT",
            &opts(
                "2s",
                &[],
                &[
                    ("https_proxy", &proxy.url()),
                    ("HTTP_PROXY", "http://127.0.0.1:9"),
                ],
            ),
        )
        .await;
    run.assert_code(0);
    let base = mock.base_url();
    reported_and_shipped(&base).await;
    let seen = proxy.requests();
    let tunnel = format!("CONNECT localhost:{} ", front.port());
    assert!(
        seen.iter().any(|r| r.starts_with(&tunnel)),
        "no {tunnel:?} in what the proxy saw: {seen:#?}"
    );
    assert!(
        seen.iter().all(|r| r.starts_with("CONNECT ")),
        "an https request went to the proxy in clear: {seen:#?}"
    );
    assert!(
        run.stderr_text()
            .contains(&format!("go through proxy {}", proxy.shown(false))),
        "{}",
        run.stderr_text()
    );
    sc.final_checks(Some(&base)).await;
}

/// One NO_PROXY case: the proxy is up and would work, yet sees nothing.
async fn bypassed(
    proxy: &Tinyproxy,
    tag: &str,
    mock_addr: &str,
    host_in_url: &str,
    layer: &str,
    no_proxy: &str,
) {
    let sc = Scenario::new(tag);
    let mock = start_mock_at(
        mock_addr,
        &sc.seed(&HostSeed::rebooting_master()),
        &sc.data_dir,
        false,
    )
    .await;
    let url = format!("http://{host_in_url}:{}", mock.addr.port());
    sc.write_config(&url, SecretForm::BareToken, true);
    let proxy_url = proxy.url();
    let before = proxy.connections();
    let (extra, env): (Vec<&str>, Vec<(&str, &str)>) = match layer {
        "flag" => (
            vec!["--http-proxy", &proxy_url, "--no-proxy", no_proxy],
            vec![],
        ),
        "env" => (
            vec![],
            vec![("HTTP_PROXY", &proxy_url), ("NO_PROXY", no_proxy)],
        ),
        _ => {
            write_proxy_env(
                &sc,
                &format!("HTTP_PROXY={proxy_url}\nNO_PROXY={no_proxy}\n"),
            );
            (vec![], vec![])
        }
    };
    let run = sc
        .run_agent(
            &format!("NO_PROXY={no_proxy} ({layer})"),
            &opts("2s", &extra, &env),
        )
        .await;
    run.assert_code(0);
    let base = mock.base_url();
    reported_and_shipped(&base).await;
    assert_eq!(
        proxy.connections(),
        before,
        "NO_PROXY={no_proxy} from {layer}: the proxy was used for {url}: {:#?}",
        proxy.requests()
    );
    assert!(
        run.stderr_text().contains("go direct (NO_PROXY"),
        "{}",
        run.stderr_text()
    );
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_bypasses_by_domain_cidr_and_star() {
    require_tinyproxy();
    let dir = tempfile::tempdir().unwrap();
    let proxy = Tinyproxy::start(dir.path(), "Allow 127.0.0.1").await;
    bypassed(
        &proxy,
        "np-domain",
        "127.0.0.1:0",
        "localhost",
        "file",
        "other.example,localhost",
    )
    .await;
    bypassed(
        &proxy,
        "np-cidr4",
        "127.0.0.1:0",
        "127.0.0.1",
        "env",
        "10.0.0.0/8, 127.0.0.0/8",
    )
    .await;
    bypassed(
        &proxy,
        "np-cidr6",
        "[::1]:0",
        "[::1]",
        "flag",
        "fd00::/8,::1/128",
    )
    .await;
    bypassed(&proxy, "np-star", "127.0.0.1:0", "127.0.0.1", "env", "*").await;
    // The same proxy, no matching entry: used (the control of the above).
    let sc = Scenario::new("np-control");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    sc.write_config(&mock.base_url(), SecretForm::BareToken, true);
    let before = proxy.requests().len();
    let run = sc
        .run_agent(
            "NO_PROXY without a match",
            &opts(
                "2s",
                &[],
                &[
                    ("HTTP_PROXY", &proxy.url()),
                    ("NO_PROXY", "10.0.0.0/8,.localhost"),
                ],
            ),
        )
        .await;
    run.assert_code(0);
    reported_and_shipped(&mock.base_url()).await;
    assert!(proxy.requests().len() > before, "{:#?}", proxy.requests());
}

/// Attempts that never reached the mock are bounded: per cycle (at least
/// 0.9 s apart) the host list and the upload each make at most `ATTEMPTS`,
/// plus the last bundle's.
fn attempt_bound(elapsed: Duration) -> usize {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let cycles = (elapsed.as_secs_f64() / 0.9).floor() as usize + 1;
    cycles * ATTEMPTS * 2 + ATTEMPTS
}

/// An https service behind a proxy that will not carry us: each case its
/// own host, so each run has a whole budget.
struct Refused {
    sc: Scenario,
    mock: mock_assisted_service::MockServer,
}

impl Refused {
    async fn new(tag: &str) -> Refused {
        let sc = Scenario::new(tag);
        let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
        let pki = make_pki(&format!("{tag} CA"));
        let front = tls_front(&pki, mock.addr).await;
        sc.write_config(
            &format!("https://localhost:{}", front.port()),
            SecretForm::PullSecretJson,
            true,
        );
        std::fs::write(sc.config_dir.join("ca.crt"), &pki.ca_pem).unwrap();
        Refused { sc, mock }
    }

    async fn run(&self, label: &str, https_proxy: &str) -> AgentRun {
        write_proxy_env(&self.sc, &format!("HTTPS_PROXY={https_proxy}\n"));
        let run = self.sc.run_agent(label, &opts("3s", &[], &[])).await;
        run.assert_code(0);
        let base = self.mock.base_url();
        assert!(
            api_requests(&base).await.is_empty(),
            "{label}: a request reached the service"
        );
        let state = admin_state(&base).await;
        assert_eq!(host_of(&state, HOST_ID)["current_stage"], "Rebooting");
        self.sc.final_checks(Some(&base)).await;
        run
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_that_denies_us_is_a_clear_error_retried_within_bounds() {
    require_tinyproxy();
    // An ACL that denies us: every CONNECT refused. Retried, since a proxy's
    // refusal may be its upstream being down, within the bound.
    let world = Refused::new("proxy-denies").await;
    let denying = Tinyproxy::start(world.sc.tmp.path(), "Deny 127.0.0.1").await;
    let run = world.run("proxy denies", &denying.url()).await;
    let stderr = run.stderr_text();
    let line = stderr
        .lines()
        .find(|l| l.contains("cannot reach the service through proxy"))
        .unwrap_or_else(|| panic!("no clear proxy error:\n{stderr}"));
    assert!(line.contains(&denying.shown(false)), "{line}");
    assert!(line.contains("proxy.env"), "names where to fix it: {line}");
    let attempts = denying.connections();
    assert!(
        attempts >= 2,
        "refused CONNECTs were not retried: {attempts}"
    );
    assert!(
        attempts <= attempt_bound(run.elapsed),
        "{attempts} connections to the proxy in {:?}",
        run.elapsed
    );
    eprintln!(
        "MATRIX | proxy denies (ACL) | {attempts} CONNECTs <= {} in {:.1}s | 0 requests reach the service",
        attempt_bound(run.elapsed),
        run.elapsed.as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_that_wants_credentials_is_not_retried() {
    require_tinyproxy();
    // 407 (no credentials given) is an answer, not weather. (tinyproxy
    // answers wrong credentials with 401, which a CONNECT client cannot tell
    // from any other refusal: that case retries like the ACL one.)
    let world = Refused::new("proxy-407").await;
    let guarded = Tinyproxy::start(
        world.sc.tmp.path(),
        &format!("Allow 127.0.0.1\nBasicAuth {PROXY_USER} {PROXY_PASSWORD}"),
    )
    .await;
    let run = world.run("proxy wants credentials", &guarded.url()).await;
    let stderr = run.stderr_text();
    assert!(
        stderr.contains(&format!("through proxy {}: ", guarded.shown(false)))
            && stderr.contains("proxy authorization required"),
        "{stderr}"
    );
    assert!(!stderr.contains("retrying"), "a 407 was retried:\n{stderr}");
    // One attempt per request, no retries: the host list and the upload of
    // each cycle, and the last bundle.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let cycles = (run.elapsed.as_secs_f64() / 0.9).floor() as usize + 1;
    assert!(
        guarded.connections() <= cycles * 2 + 1,
        "{} connections in {cycles} cycles",
        guarded.connections()
    );
    eprintln!(
        "MATRIX | proxy wants credentials (407) | {} CONNECTs <= {} in {:.1}s, none retried",
        guarded.connections(),
        cycles * 2 + 1,
        run.elapsed.as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_not_listening_is_named_in_the_error() {
    // No tinyproxy needed: nothing listens where the proxy should be.
    let world = Refused::new("proxy-down").await;
    let closed = format!(
        "http://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{}",
        free_port()
    );
    let run = world.run("proxy down", &closed).await;
    let stderr = run.stderr_text();
    assert!(
        stderr.lines().any(|l| l
            .contains("cannot reach the service through proxy http://[REDACTED]@127.0.0.1:")
            && l.contains("Connection refused")),
        "{stderr}"
    );
    assert!(!stderr.contains(PROXY_PASSWORD));
}
