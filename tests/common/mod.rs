//! Shared harness of the end-to-end tests: the real agent binary against the
//! in-process mock assisted-service, each test in its own temp directory.
//!
//! Everything a scenario needs is here: a copy of the fixture root, the
//! discovery contract directory, a state dir, the mock, fake kubelet health
//! endpoints, running the agent with a hard deadline, reading the mock's
//! recorded state and requests, opening stored bundles, and the checks every
//! scenario ends with (no secret anywhere, no single-host GET).

#![allow(dead_code)]

pub mod tls;

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mock_assisted_service::{MockConfig, MockServer, Seed};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const API: &str = "/api/assisted-install/v2";
pub const CLUSTER_ID: &str = "b8c2f2a4-1d6e-4c55-9a61-0d7e3c1f5a10";
pub const INFRA_ENV_ID: &str = "5d1e7a3c-9b0f-4e28-8c43-6a2f1b9d7e21";
pub const HOST_ID: &str = "e3a9c6b1-4f27-4d8e-b1a5-7c0d2e9f3b32";

pub const LOCAL_IGNITION: &str = "Booted with local ignition";
pub const CONTROL_PLANE_IGNITION: &str = "Booted with control plane ignition";
pub const UNIT: &str = "assisted-boot-reporter.service";

/// Longest any agent run may take before the harness kills it and fails.
pub const HARD_DEADLINE: Duration = Duration::from_secs(30);

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture_root() -> PathBuf {
    repo_dir().join("tests/fixtures/root")
}

pub fn fake_bin() -> PathBuf {
    repo_dir().join("tests/fixtures/bin")
}

pub fn agent_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_assisted-boot-reporter"))
}

// ---------------------------------------------------------------------------
// Secrets

/// Standard base64 with padding: the pull secret's `auth` strings are
/// base64 of `user:password`, and tests need a realistic one.
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A token no fixture, log line or ID could contain by chance.
pub fn distinctive_token(tag: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    base64(format!("e2e-{tag}:S3cr3t-{}-{nanos}-{n}-zq", std::process::id()).as_bytes())
}

/// How the discovery agent left the secret on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretForm {
    /// `{"auths":{"cloud.openshift.com":{"auth":TOKEN}, ...}}`
    PullSecretJson,
    /// The token alone.
    BareToken,
}

// ---------------------------------------------------------------------------
// Seeds

#[derive(Debug, Clone)]
pub struct HostSeed {
    pub role: &'static str,
    pub bootstrap: bool,
    pub single_node: bool,
    pub status: &'static str,
    pub current_stage: &'static str,
}

impl HostSeed {
    /// The usual subject: the bootstrap master right after the installer
    /// rebooted it.
    pub fn rebooting_master() -> Self {
        HostSeed {
            role: "master",
            bootstrap: true,
            single_node: false,
            status: "installing-in-progress",
            current_stage: "Rebooting",
        }
    }

    pub fn at(stage: &'static str, status: &'static str) -> Self {
        HostSeed {
            current_stage: stage,
            status,
            ..Self::rebooting_master()
        }
    }
}

pub fn seed_json(agent_token: &str, host: &HostSeed) -> Value {
    json!({
        "agent_token": agent_token,
        "user_token": "e2e-user-token-not-used-by-the-agent",
        "clusters": [{"id": CLUSTER_ID, "name": "ocp-e2e", "openshift_version": "4.18"}],
        "infra_envs": [{"id": INFRA_ENV_ID, "cluster_id": CLUSTER_ID, "name": "ocp-e2e_infra-env"}],
        "hosts": [{
            "id": HOST_ID,
            "infra_env_id": INFRA_ENV_ID,
            "cluster_id": CLUSTER_ID,
            "requested_hostname": "master-0.ocp-e2e.example.com",
            "role": host.role,
            "bootstrap": host.bootstrap,
            "single_node": host.single_node,
            "status": host.status,
            "current_stage": host.current_stage,
            "progress_info": ""
        }]
    })
}

// ---------------------------------------------------------------------------
// Mock service

pub async fn start_mock_at(
    addr: &str,
    seed: &Value,
    data_dir: &Path,
    upstream_compat: bool,
) -> MockServer {
    let seed = Seed::from_json(&seed.to_string()).expect("seed parses");
    let mut config = MockConfig::new(seed, data_dir.to_path_buf());
    config.upstream_compat = upstream_compat;
    MockServer::start(addr, config).await.expect("mock starts")
}

#[allow(clippy::disallowed_methods)] // the mock on loopback, by address: no name to resolve
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
}

pub async fn get_json(url: &str) -> Value {
    let resp = http()
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    assert!(status.is_success(), "GET {url}: {status}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e}): {text}"))
}

pub async fn admin_state(base: &str) -> Value {
    get_json(&format!("{base}/admin/state")).await
}

pub async fn admin_requests(base: &str) -> Vec<Value> {
    let v = get_json(&format!("{base}/admin/requests")).await;
    match v {
        Value::Array(a) => a,
        Value::Object(ref o) if o.get("requests").is_some_and(Value::is_array) => {
            o["requests"].as_array().cloned().unwrap_or_default()
        }
        other => panic!("/admin/requests is not a list: {other}"),
    }
}

/// Requests to the API proper (not the admin side door).
pub async fn api_requests(base: &str) -> Vec<Value> {
    admin_requests(base)
        .await
        .into_iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.starts_with("/api/")))
        .collect()
}

pub async fn admin_set_stage(base: &str, host_id: &str, stage: &str, status: Option<&str>) {
    let mut body = json!({"current_stage": stage});
    if let Some(s) = status {
        body["status"] = json!(s);
    }
    let url = format!("{base}/admin/hosts/{host_id}/stage");
    let resp = http()
        .post(&url)
        .json(&body)
        .send()
        .await
        .expect("admin stage");
    let status = resp.status();
    assert!(
        status.is_success(),
        "POST {url}: {status}: {}",
        resp.text().await.unwrap_or_default()
    );
}

pub async fn admin_fault(base: &str, fault: Value) {
    let url = format!("{base}/admin/faults");
    let resp = http()
        .post(&url)
        .json(&fault)
        .send()
        .await
        .expect("admin fault");
    let status = resp.status();
    assert!(
        status.is_success(),
        "POST {url}: {status}: {}",
        resp.text().await.unwrap_or_default()
    );
}

/// The host's entry in `/admin/state`.
pub fn host_of<'a>(state: &'a Value, host_id: &str) -> &'a Value {
    state["hosts"]
        .as_array()
        .and_then(|hosts| hosts.iter().find(|h| h["id"] == host_id))
        .unwrap_or_else(|| panic!("host {host_id} not in /admin/state: {state}"))
}

pub fn stage_history(host: &Value) -> Vec<String> {
    host["stage_history"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["stage"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

pub fn bundle_of<'a>(host: &'a Value, logs_type: &str) -> Option<&'a Value> {
    host["bundles"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["logs_type"] == logs_type))
}

pub fn uploads_of(host: &Value, logs_type: &str) -> u64 {
    bundle_of(host, logs_type)
        .and_then(|b| b["uploads"].as_u64())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Bundles

#[derive(Debug)]
pub struct Member {
    pub name: String,
    pub data: Vec<u8>,
}

/// Gunzips and untars a stored bundle.
pub fn open_bundle(path: &Path) -> Vec<Member> {
    let file =
        std::fs::File::open(path).unwrap_or_else(|e| panic!("open bundle {}: {e}", path.display()));
    let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(file));
    let mut members = Vec::new();
    for entry in archive
        .entries()
        .unwrap_or_else(|e| panic!("bundle {} is not a tar.gz: {e}", path.display()))
    {
        let mut entry =
            entry.unwrap_or_else(|e| panic!("bundle {}: bad entry: {e}", path.display()));
        let name = entry
            .path()
            .expect("member path")
            .to_string_lossy()
            .into_owned();
        let mut data = Vec::new();
        entry
            .read_to_end(&mut data)
            .unwrap_or_else(|e| panic!("bundle {}: member {name} truncated: {e}", path.display()));
        members.push(Member { name, data });
    }
    members
}

pub fn member<'a>(members: &'a [Member], suffix: &str) -> Option<&'a Member> {
    members
        .iter()
        .find(|m| m.name == suffix || m.name.ends_with(&format!("/{suffix}")))
}

pub fn member_names(members: &[Member]) -> Vec<&str> {
    members.iter().map(|m| m.name.as_str()).collect()
}

/// A stored host_boot bundle, opened.
pub struct OpenedBundle {
    pub members: Vec<Member>,
    pub manifest: Value,
}

impl OpenedBundle {
    /// `meta.boot_number` of the manifest.
    pub fn boot_number(&self) -> Option<u64> {
        self.manifest["meta"]["boot_number"].as_u64()
    }
}

/// The host_boot bundle stored for the host: checks it is a valid archive
/// with a manifest naming its collectors and their outcome, holds the members
/// every boot bundle must have with the fixture host's content, and that the
/// agent's secret was scrubbed (replaced, not dropped) where the host had it.
pub fn check_host_boot_bundle(host: &Value) -> OpenedBundle {
    let bundle = bundle_of(host, "host_boot")
        .unwrap_or_else(|| panic!("no host_boot bundle stored: {host}"));
    assert_eq!(
        bundle["valid"], true,
        "mock says the stored bundle is not a valid tar.gz: {bundle}"
    );
    let path = PathBuf::from(bundle["path"].as_str().expect("bundle path"));
    let members = open_bundle(&path);
    let names = member_names(&members);
    eprintln!(
        "host_boot bundle {} ({} bytes, {} uploads): {names:?}",
        path.display(),
        bundle["size"],
        bundle["uploads"]
    );

    let manifest = member(&members, "manifest.json")
        .unwrap_or_else(|| panic!("no manifest.json in bundle: {names:?}"));
    let manifest: Value = serde_json::from_slice(&manifest.data).unwrap_or_else(|e| {
        panic!(
            "manifest.json does not parse: {e}: {}",
            String::from_utf8_lossy(&manifest.data)
        )
    });
    check_manifest_collectors(&manifest, &members);
    if let Some(id) = manifest["meta"]["host_id"].as_str() {
        assert_eq!(id, HOST_ID, "manifest names another host");
    }

    // What a boot bundle is for: the bootstrap service records, the network
    // view, the mounts, the journal.
    let text = |suffix: &str| -> String {
        let m = member(&members, suffix)
            .unwrap_or_else(|| panic!("bundle has no member {suffix}: {names:?}"));
        String::from_utf8_lossy(&m.data).into_owned()
    };
    let bootkube = text("records/bootkube.json");
    let records: Value = serde_json::from_str(&bootkube)
        .unwrap_or_else(|e| panic!("records/bootkube.json does not parse: {e}"));
    assert!(
        records.is_array(),
        "records/bootkube.json is not the service's array"
    );
    assert!(
        bootkube.contains("147 main /usr/local/bin/bootkube.sh"),
        "records/bootkube.json lost the failed stage's errorLine"
    );
    let fixture_resolv = std::fs::read_to_string(fixture_root().join("etc/resolv.conf"))
        .expect("fixture resolv.conf");
    assert_eq!(
        text("resolv.conf"),
        fixture_resolv,
        "resolv.conf member differs from the host's"
    );
    assert!(
        text("mountinfo").contains("/sysroot"),
        "mountinfo member is not the host's"
    );
    assert!(
        names.iter().any(|n| n.contains("journal")
            && Path::new(n)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("log"))),
        "bundle has no journal member: {names:?}"
    );

    // The host's /etc/hosts (test copy) carries the token: the member must be
    // there with the token replaced, and the journal line carrying it too.
    let marker = String::from_utf8_lossy(assisted_boot_reporter::redact::MARKER).into_owned();
    assert!(
        text("hosts").contains(&marker),
        "hosts member was not redacted (no {marker}): {}",
        text("hosts")
    );
    assert!(
        members
            .iter()
            .filter(|m| m.name.contains("journal"))
            .any(|m| contains(&m.data, format!("X-Secret-Key: {marker}").as_bytes())),
        "no journal member shows the token line redacted"
    );
    OpenedBundle { members, manifest }
}

/// `manifest.json` must list the collectors, each with a name and a status,
/// and every member it says is archived must be in the archive.
pub fn check_manifest_collectors(manifest: &Value, members: &[Member]) {
    let collectors = manifest["collectors"]
        .as_array()
        .unwrap_or_else(|| panic!("manifest.json has no \"collectors\" list: {manifest}"));
    assert!(
        !collectors.is_empty(),
        "manifest.json lists no collectors: {manifest}"
    );
    for c in collectors {
        let name = c["name"]
            .as_str()
            .unwrap_or_else(|| panic!("collector without a name: {c}"));
        let status = c["status"]
            .as_str()
            .unwrap_or_else(|| panic!("collector {name} without a status: {c}"));
        assert!(!status.is_empty(), "collector {name} has an empty status");
        for f in c["files"].as_array().into_iter().flatten() {
            if f["archived"] == true {
                let path = f["path"].as_str().unwrap_or_default();
                assert!(
                    member(members, path).is_some(),
                    "manifest says {path} (collector {name}) is archived but it is not in the bundle"
                );
            }
        }
    }
}

fn gunzip_all(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < 2 || data[0] != 0x1f || data[1] != 0x8b {
        return None;
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

// ---------------------------------------------------------------------------
// Fake kubelet health endpoint

/// A tiny HTTP server standing in for kubelet's `/healthz`: answers `ok`
/// (200) when healthy, a 500 with kubelet's failure text otherwise. Returns
/// the healthz URL; the server lives as long as the test's runtime.
pub async fn start_kubelet(healthy: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind kubelet");
    let addr = listener.local_addr().expect("kubelet addr");
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                // Read up to the end of the request head (bounded).
                while !contains(&got, b"\r\n\r\n") && got.len() < 64 * 1024 {
                    match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await {
                        Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                let (status, body) = if healthy {
                    ("200 OK", "ok".to_owned())
                } else {
                    (
                        "500 Internal Server Error",
                        "[-]syncloop failed: reason withheld\nhealthz check failed".to_owned(),
                    )
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    format!("http://{addr}/healthz")
}

/// Reserves an ephemeral port that nothing listens on (yet).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

// ---------------------------------------------------------------------------
// Agent runs

#[derive(Debug, Clone)]
pub struct AgentRun {
    pub label: String,
    /// `None` when killed by a signal.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
}

impl AgentRun {
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn assert_code(&self, code: i32) {
        assert_eq!(
            self.code,
            Some(code),
            "agent run {:?} exited {:?}, expected {code}\n--- stderr ---\n{}",
            self.label,
            self.code,
            self.stderr_text()
        );
    }
}

/// Options of one agent run; `None` leaves a flag out.
#[derive(Debug, Clone)]
pub struct AgentOpts {
    pub upload_interval: Option<&'static str>,
    pub timeout: Option<&'static str>,
    pub kubelet_healthz_url: Option<String>,
    /// Extra arguments appended after the run flags.
    pub extra: Vec<String>,
    /// Replaces every argument (for usage-error tests).
    pub raw_args: Option<Vec<String>>,
    /// Extra environment of the child (on top of the clean one).
    pub env: Vec<(String, String)>,
    pub deadline: Duration,
    /// Runs this instead of the test build, e.g. `[qemu-aarch64-static, BINARY]`
    /// for a cross-built binary (tests/qemu_arch.rs).
    pub program: Option<Vec<PathBuf>>,
}

impl Default for AgentOpts {
    fn default() -> Self {
        AgentOpts {
            upload_interval: Some("1s"),
            timeout: Some("4s"),
            kubelet_healthz_url: None,
            extra: Vec::new(),
            raw_args: None,
            env: Vec::new(),
            deadline: HARD_DEADLINE,
            program: None,
        }
    }
}

pub struct Running {
    label: String,
    child: tokio::process::Child,
    started: Instant,
    deadline: Duration,
    stdout: tokio::task::JoinHandle<Vec<u8>>,
    stderr: tokio::task::JoinHandle<Vec<u8>>,
}

impl Running {
    /// The agent's process ID while it runs (for `/proc` scans and SIGKILL).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

fn drain<R: tokio::io::AsyncRead + Unpin + Send + 'static>(
    r: Option<R>,
) -> tokio::task::JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut out = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut out).await;
        }
        out
    })
}

// ---------------------------------------------------------------------------
// Scenario: one test's world

pub struct Scenario {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub config_dir: PathBuf,
    pub state_dir: PathBuf,
    pub data_dir: PathBuf,
    pub home: PathBuf,
    pub systemctl_log: PathBuf,
    /// The agent token (the `cloud.openshift.com` auth of the pull secret).
    pub token: String,
    /// Another registry's auth in the same pull secret: must not leak either.
    pub other_auth: String,
    /// Whether the agent was handed the whole pull secret (and so knows
    /// `other_auth` as a secret to scrub) rather than the bare token.
    gave_pull_secret_json: AtomicBool,
    runs: Arc<Mutex<Vec<AgentRun>>>,
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()))
    {
        let entry = entry.expect("dir entry");
        let src = entry.path();
        let dst = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
        }
    }
}

impl Scenario {
    pub fn new(tag: &str) -> Scenario {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("abr-e2e-{tag}-"))
            .tempdir()
            .expect("tempdir");
        let base = tmp.path().to_path_buf();
        let root = base.join("root");
        copy_tree(&fixture_root(), &root);
        let config_dir = base.join("config");
        let state_dir = base.join("state");
        let data_dir = base.join("mock-data");
        let home = base.join("home");
        for d in [&config_dir, &state_dir, &data_dir, &home] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let token = distinctive_token(tag);
        let other_auth = distinctive_token(&format!("{tag}-quay"));
        // A host file the agent collects that happens to carry the token: the
        // redaction must reach file collectors too.
        let hosts = root.join("etc/hosts");
        let mut text = std::fs::read_to_string(&hosts).unwrap_or_default();
        let _ = writeln!(text, "# left by a careless admin: {token}");
        std::fs::write(&hosts, text).expect("write hosts");
        Scenario {
            systemctl_log: base.join("systemctl.log"),
            tmp,
            root,
            config_dir,
            state_dir,
            data_dir,
            home,
            token,
            other_auth,
            gave_pull_secret_json: AtomicBool::new(false),
            runs: Arc::new(Mutex::new(Vec::new())),
        }
    }

    pub fn seed(&self, host: &HostSeed) -> Value {
        seed_json(&self.token, host)
    }

    pub async fn start_mock(&self, host: &HostSeed) -> MockServer {
        start_mock_at("127.0.0.1:0", &self.seed(host), &self.data_dir, false).await
    }

    pub async fn start_mock_upstream(&self, host: &HostSeed) -> MockServer {
        start_mock_at("127.0.0.1:0", &self.seed(host), &self.data_dir, true).await
    }

    pub fn pull_secret_json(&self) -> String {
        json!({"auths": {
            "cloud.openshift.com": {"auth": self.token, "email": "e2e@example.com"},
            "quay.io": {"auth": self.other_auth, "email": "e2e@example.com"}
        }})
        .to_string()
    }

    /// Writes the discovery contract as the discovery agent would.
    pub fn write_config(&self, service_url: &str, form: SecretForm, with_cluster_id: bool) {
        let secret = match form {
            SecretForm::PullSecretJson => {
                self.gave_pull_secret_json.store(true, Ordering::SeqCst);
                self.pull_secret_json()
            }
            SecretForm::BareToken => format!("{}\n", self.token),
        };
        self.write_config_with_secret(service_url, &secret, with_cluster_id);
    }

    pub fn write_config_with_secret(&self, service_url: &str, secret: &str, with_cluster_id: bool) {
        let w = |name: &str, value: &str| {
            std::fs::write(self.config_dir.join(name), value)
                .unwrap_or_else(|e| panic!("write {name}: {e}"));
        };
        w("service-url", &format!("{service_url}\n"));
        w("infra-env-id", &format!("{INFRA_ENV_ID}\n"));
        w("host-id", &format!("{HOST_ID}\n"));
        if with_cluster_id {
            w("cluster-id", &format!("{CLUSTER_ID}\n"));
        }
        let secret_path = self.config_dir.join("pull-secret");
        std::fs::write(&secret_path, secret).expect("write pull-secret");
        set_mode(&secret_path, 0o600);
    }

    pub fn boot_id_path(&self) -> PathBuf {
        self.root.join("proc/sys/kernel/random/boot_id")
    }

    /// A new boot: the kernel hands out a new boot ID.
    pub fn reboot(&self, new_boot_id: &str) {
        std::fs::write(self.boot_id_path(), format!("{new_boot_id}\n")).expect("write boot_id");
    }

    pub fn systemctl_calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.systemctl_log)
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    pub fn disabled_unit(&self) -> bool {
        self.systemctl_calls().iter().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.contains(&"disable") && words.contains(&UNIT)
        })
    }

    fn args(&self, opts: &AgentOpts) -> Vec<String> {
        if let Some(raw) = &opts.raw_args {
            return raw.clone();
        }
        let mut args: Vec<String> = vec!["--log-level".into(), "debug".into(), "run".into()];
        let mut push = |k: &str, v: &str| {
            args.push(k.to_owned());
            args.push(v.to_owned());
        };
        push("--config-dir", &self.config_dir.to_string_lossy());
        push("--state-dir", &self.state_dir.to_string_lossy());
        push("--root", &self.root.to_string_lossy());
        if let Some(v) = opts.upload_interval {
            push("--upload-interval", v);
        }
        if let Some(v) = opts.timeout {
            push("--timeout", v);
        }
        push("--retry-initial-delay", "100ms");
        push("--retry-max-delay", "500ms");
        push("--retry-attempts", "3");
        push("--command-timeout", "5s");
        push("--request-timeout", "10s");
        // Never the host's real kubelet port: an unused-by-default local
        // endpoint unless the test gives one.
        let kubelet = opts
            .kubelet_healthz_url
            .clone()
            .unwrap_or_else(|| "http://127.0.0.1:9/healthz".to_owned());
        push("--kubelet-healthz-url", &kubelet);
        args.extend(opts.extra.iter().cloned());
        args
    }

    /// Starts the agent with a clean environment: only PATH (fakes first),
    /// HOME and the fakes' knobs; never the test host's variables.
    pub fn spawn_agent(&self, label: &str, opts: &AgentOpts) -> Running {
        assert!(
            fake_bin().join("systemctl").exists(),
            "fake executables missing in {}: refusing to let the agent reach the host's systemctl",
            fake_bin().display()
        );
        let path = format!(
            "{}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            fake_bin().display()
        );
        let mut cmd = match opts.program.as_deref() {
            Some([program, first_args @ ..]) => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(first_args);
                cmd
            }
            _ => tokio::process::Command::new(agent_bin()),
        };
        cmd.args(self.args(opts))
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("FAKE_JOURNAL_EXTRA", self.journal_extra())
            .env("FAKE_SYSTEMCTL_LOG", &self.systemctl_log)
            // The first and the final bundle go out at once, as the tests
            // written before the spread expect; tests/it/herd.rs sets it.
            .env("LOG_SEND_SPREAD_SECONDS", "0")
            .envs(opts.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(self.tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawn agent");
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        Running {
            label: label.to_owned(),
            child,
            started,
            deadline: opts.deadline,
            stdout,
            stderr,
        }
    }

    /// Waits for a spawned agent; kills it and fails the test past its deadline.
    pub async fn wait_agent(&self, running: Running) -> AgentRun {
        let Running {
            label,
            mut child,
            started,
            deadline,
            stdout,
            stderr,
        } = running;
        let waited =
            tokio::time::timeout(deadline.saturating_sub(started.elapsed()), child.wait()).await;
        let (code, timed_out) = if let Ok(status) = waited {
            (status.expect("wait agent").code(), false)
        } else {
            let _ = child.kill().await;
            (None, true)
        };
        let elapsed = started.elapsed();
        let run = AgentRun {
            label: label.clone(),
            code,
            stdout: stdout.await.unwrap_or_default(),
            stderr: stderr.await.unwrap_or_default(),
            elapsed,
        };
        eprintln!(
            "=== agent run {label:?}: exit {:?} after {:.1}s\n--- stdout ---\n{}--- stderr ---\n{}=== end of {label:?}",
            run.code,
            elapsed.as_secs_f64(),
            run.stdout_text(),
            run.stderr_text()
        );
        self.runs.lock().expect("runs").push(run.clone());
        assert!(
            !timed_out,
            "agent run {label:?} did not exit within the hard deadline of {deadline:?}; killed.\n--- stderr ---\n{}",
            run.stderr_text()
        );
        run
    }

    pub async fn run_agent(&self, label: &str, opts: &AgentOpts) -> AgentRun {
        let running = self.spawn_agent(label, opts);
        self.wait_agent(running).await
    }

    pub fn runs(&self) -> Vec<AgentRun> {
        self.runs.lock().expect("runs").clone()
    }

    /// Every scenario ends here: the secrets never left the host in any
    /// bundle member nor in the agent's own output, and the agent never used
    /// the userAuth-only single-host GET.
    pub async fn final_checks(&self, base: Option<&str>) {
        self.assert_no_secrets_in_output();
        if let Some(base) = base {
            let state = admin_state(base).await;
            self.assert_no_secrets_in_bundles(&state);
            assert_no_single_host_get(&api_requests(base).await);
        }
    }

    /// The line fake journalctl prints: the token, and the pull secret's
    /// other auth when the agent holds the whole pull secret (it cannot
    /// scrub what it was never given).
    pub fn journal_extra(&self) -> String {
        let mut line = format!(
            "2026-11-22T10:00:03.000000+0000 host agent[2211]: Sending request with X-Secret-Key: {}",
            self.token
        );
        if self.gave_pull_secret_json.load(Ordering::SeqCst) {
            let _ = write!(line, " pull secret auth {}", self.other_auth);
        }
        line
    }

    fn secrets(&self) -> Vec<(&'static str, &str)> {
        let mut secrets = vec![("agent token", self.token.as_str())];
        if self.gave_pull_secret_json.load(Ordering::SeqCst) {
            secrets.push((
                "other registry auth in the pull secret",
                self.other_auth.as_str(),
            ));
        }
        secrets
    }

    pub fn assert_no_secrets_in_output(&self) {
        for run in self.runs() {
            for (what, secret) in self.secrets() {
                for (stream, bytes) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
                    assert!(
                        !contains(bytes, secret.as_bytes()),
                        "{what} leaked into the agent's {stream} (run {:?})",
                        run.label
                    );
                }
            }
        }
    }

    /// Scans every stored bundle of every host, member by member, gzip
    /// members decompressed too. Returns how many bundles it opened.
    pub fn assert_no_secrets_in_bundles(&self, state: &Value) -> usize {
        let mut opened = 0;
        for host in state["hosts"].as_array().into_iter().flatten() {
            for bundle in host["bundles"].as_array().into_iter().flatten() {
                let Some(path) = bundle["path"].as_str() else {
                    continue;
                };
                let path = Path::new(path);
                if !path.exists() {
                    continue;
                }
                let raw = std::fs::read(path).expect("read bundle");
                let whole = gunzip_all(&raw).unwrap_or_else(|| raw.clone());
                for (what, secret) in self.secrets() {
                    assert!(
                        !contains(&whole, secret.as_bytes()),
                        "{what} found in stored bundle {} ({})",
                        path.display(),
                        bundle["logs_type"]
                    );
                }
                if bundle["valid"] != true {
                    continue;
                }
                opened += 1;
                for m in open_bundle(path) {
                    let inner = gunzip_all(&m.data);
                    for (what, secret) in self.secrets() {
                        for bytes in std::iter::once(&m.data).chain(inner.as_ref()) {
                            assert!(
                                !contains(bytes, secret.as_bytes()),
                                "{what} found in bundle member {} of {}",
                                m.name,
                                path.display()
                            );
                        }
                    }
                }
            }
        }
        opened
    }
}

#[cfg(unix)]
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The agent must never call the single-host GET: it is userAuth-only on the
/// real service, an agent token gets 401 there.
pub fn assert_no_single_host_get(requests: &[Value]) {
    let single = format!("{API}/infra-envs/{INFRA_ENV_ID}/hosts/{HOST_ID}");
    let bad: Vec<&Value> = requests
        .iter()
        .filter(|r| {
            r["method"] == "GET"
                && r["path"]
                    .as_str()
                    .is_some_and(|p| p.trim_end_matches('/') == single)
        })
        .collect();
    assert!(
        bad.is_empty(),
        "agent used the userAuth-only single-host GET: {bad:?}"
    );
}

pub fn progress_puts(requests: &[Value]) -> Vec<&Value> {
    requests
        .iter()
        .filter(|r| {
            r["method"] == "PUT" && r["path"].as_str().is_some_and(|p| p.ends_with("/progress"))
        })
        .collect()
}

pub fn log_uploads(requests: &[Value]) -> Vec<&Value> {
    requests
        .iter()
        .filter(|r| {
            r["method"] == "POST" && r["path"].as_str().is_some_and(|p| p.ends_with("/logs"))
        })
        .collect()
}

/// Polls `cond` on the mock's state until it holds or `within` passes.
pub async fn wait_for_state(
    base: &str,
    within: Duration,
    mut cond: impl FnMut(&Value) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let state = admin_state(base).await;
        if cond(&state) || start.elapsed() > within {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---------------------------------------------------------------------------
// Install flows: the host's signal files, reboots, big host lists

/// Files the machine-config daemon and the single-node bootstrap leave on a
/// host (src/flow.rs names their upstream writers).
pub const MC_ENCAPSULATED: &str = "/etc/ignition-machine-config-encapsulated.json";
pub const MC_ENCAPSULATED_BAK: &str = "/etc/ignition-machine-config-encapsulated.json.bak";
pub const NODE_ANNOTATIONS: &str = "/etc/machine-config-daemon/node-annotations.json";
pub const BOOTSTRAP_IN_PLACE_KUBECONFIG: &str = "/etc/kubernetes/bootstrap-secrets/kubeconfig";

impl Scenario {
    /// Writes `absolute` under the scenario's root.
    pub fn put_host_file(&self, absolute: &str, content: &str) {
        let path = self.root.join(absolute.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, content).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    pub fn remove_host_file(&self, absolute: &str) {
        let path = self.root.join(absolute.trim_start_matches('/'));
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("rm {}: {e}", path.display()));
    }

    /// The host as Ignition left it from the machine config server: the
    /// encapsulated config waits for machine-config-daemon-firstboot.
    pub fn firstboot_pending(&self) {
        self.put_host_file(NODE_ANNOTATIONS, "{}");
        self.put_host_file(MC_ENCAPSULATED, "{}");
    }

    /// Firstboot found nothing to change (the installer wrote the release's
    /// OS image): it deletes the encapsulated config and skips the reboot.
    pub fn firstboot_applied_in_place(&self) {
        self.put_host_file(NODE_ANNOTATIONS, "{}");
        let path = self.root.join(MC_ENCAPSULATED.trim_start_matches('/'));
        let _ = std::fs::remove_file(path);
    }

    /// Firstboot applied a config that needs a reboot: renamed to `.bak`.
    pub fn firstboot_applied_with_reboot(&self) {
        let from = self.root.join(MC_ENCAPSULATED.trim_start_matches('/'));
        let to = self.root.join(MC_ENCAPSULATED_BAK.trim_start_matches('/'));
        std::fs::rename(from, to).expect("rename encapsulated config");
    }

    /// Stops a running agent as systemd does at shutdown or reboot (SIGTERM)
    /// and waits for it.
    pub async fn stop_agent(&self, running: Running) -> AgentRun {
        if let Some(pid) = running.pid() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        self.wait_agent(running).await
    }

    /// Every contract file and the unit are gone (the job is over).
    pub fn assert_cleaned_up(&self, what: &str) {
        assert!(!self.config_dir.exists(), "{what}: config dir still there");
        assert!(!self.state_dir.exists(), "{what}: state dir still there");
        assert!(
            self.disabled_unit(),
            "{what}: no `systemctl disable {UNIT}`; systemctl calls: {:?}",
            self.systemctl_calls()
        );
    }

    /// Nothing removed, unit still enabled (the host may boot again).
    pub fn assert_not_cleaned_up(&self, what: &str) {
        assert!(
            self.config_dir.join("pull-secret").exists(),
            "{what}: the pull secret is gone"
        );
        assert!(
            !self.disabled_unit(),
            "{what}: unit disabled: {:?}",
            self.systemctl_calls()
        );
    }
}

/// A seed whose host list holds `others` hosts before ours, each with a
/// hostname of `pad` bytes standing in for a real host's inventory.
pub fn seed_with_many_hosts(
    agent_token: &str,
    host: &HostSeed,
    others: usize,
    pad: usize,
) -> Value {
    let mut seed = seed_json(agent_token, host);
    let ours = seed["hosts"][0].clone();
    let name = "h".repeat(pad);
    let mut hosts: Vec<Value> = (0..others)
        .map(|i| {
            json!({
                "id": format!("00000000-0000-4000-8000-{i:012}"),
                "infra_env_id": INFRA_ENV_ID,
                "cluster_id": CLUSTER_ID,
                "requested_hostname": name,
                "role": "worker",
                "status": "installing-in-progress",
                "current_stage": "Rebooting",
            })
        })
        .collect();
    hosts.push(ours);
    seed["hosts"] = Value::Array(hosts);
    seed
}

/// Peak resident memory of a live process (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Peak resident memory of a process (VmHWM), polled until it exits.
pub fn watch_peak_rss(pid: u32) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let path = format!("/proc/{pid}/status");
        let mut peak = 0;
        while let Ok(status) = tokio::fs::read_to_string(&path).await {
            if let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        peak
    })
}

/// `data` as one gzip member, as kubelet writes a rotated container log.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).expect("gzip");
    gz.finish().expect("gzip")
}

/// A gzip file that inflates to `mib` MiB of one short line repeated, from
/// about 1 KiB per MiB: the same 1 MiB member again and again (a
/// multi-member gzip, which gzip and every reader of concatenated members
/// inflate whole). Text, so only the ratio gives it away.
pub fn gzip_bomb(mib: usize) -> Vec<u8> {
    let one = gzip(&b"y\n".repeat(1 << 19));
    one.repeat(mib)
}
