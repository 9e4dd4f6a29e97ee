//! The mock tells the truth about upstream: each rule read from
//! assisted-service / assisted-installer (docs/upstream-integration.md),
//! asserted against the real router on a loopback port in both modes —
//! `--upstream-compat` (today's service) and enhanced (the service after the
//! integration the document describes). The timer test drives the real
//! `mock-assisted-service` binary with `--time-scale`; the last test runs the
//! real reporter against a compat mock and watches the mock's timers.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Scenario, SecretForm};
use mock_assisted_service::{MockConfig, MockServer, Seed};
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt as _;

const C: &str = "c1a5e0b2-0000-4000-8000-000000000001";
const C_SNO: &str = "c1a5e0b2-0000-4000-8000-000000000002";
const C_DAY2: &str = "c1a5e0b2-0000-4000-8000-000000000003";
const E: &str = "e1a5e0b2-0000-4000-8000-000000000001";
const E_SNO: &str = "e1a5e0b2-0000-4000-8000-000000000002";
const E_DAY2: &str = "e1a5e0b2-0000-4000-8000-000000000003";
const MASTER: &str = "0a5e0b20-0000-4000-8000-000000000001";
const WORKER: &str = "0a5e0b20-0000-4000-8000-000000000002";
const FRESH: &str = "0a5e0b20-0000-4000-8000-000000000003";
const PENDING: &str = "0a5e0b20-0000-4000-8000-000000000004";
const SNO: &str = "0a5e0b20-0000-4000-8000-000000000005";
const DAY2: &str = "0a5e0b20-0000-4000-8000-000000000006";
const API: &str = "/api/assisted-install/v2";
const AGENT: &str = "agent-token-for-everything";
const USER: &str = "user-token";
const SNO_TOKEN: &str = "token-minted-for-the-sno-infra-env";
const CLUSTER_MINTED: &str = "token-minted-for-the-cluster-id";

const LOCAL_IGN: &str = "Booted with local ignition";
const CP_IGN: &str = "Booted with control plane ignition";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Compat,
    Enhanced,
}

const BOTH: [Mode; 2] = [Mode::Compat, Mode::Enhanced];

fn seed() -> Value {
    let host = |id: &str, env: &str, c: &str, role: &str, status: &str, stage: &str| {
        json!({"id": id, "infra_env_id": env, "cluster_id": c, "role": role,
               "requested_hostname": format!("{role}-{}.example.com", &id[id.len() - 1..]),
               "status": status, "current_stage": stage})
    };
    let mut sno = host(
        SNO,
        E_SNO,
        C_SNO,
        "master",
        "installing-in-progress",
        "Writing image to disk",
    );
    sno["bootstrap"] = json!(true);
    sno["single_node"] = json!(true);
    let mut day2 = host(
        DAY2,
        E_DAY2,
        C_DAY2,
        "worker",
        "installing-in-progress",
        "Installing",
    );
    day2["kind"] = json!("AddToExistingClusterHost");
    let mut master = host(
        MASTER,
        E,
        C,
        "master",
        "installing-in-progress",
        "Configuring",
    );
    master["bootstrap"] = json!(true);
    json!({
        "agent_token": AGENT,
        "agent_tokens": [
            {"token": SNO_TOKEN, "infra_env_id": E_SNO},
            // What `AgentToken(cluster, TypeLocal)` mints: the cluster's id as infra-env claim.
            {"token": CLUSTER_MINTED, "infra_env_id": C},
        ],
        "user_token": USER,
        "clusters": [
            {"id": C, "name": "multi", "openshift_version": "4.18"},
            {"id": C_SNO, "name": "sno", "openshift_version": "4.18"},
            {"id": C_DAY2, "name": "day2", "openshift_version": "4.18"}
        ],
        "infra_envs": [
            {"id": E, "cluster_id": C, "name": "multi"},
            {"id": E_SNO, "cluster_id": C_SNO, "name": "sno"},
            {"id": E_DAY2, "cluster_id": C_DAY2, "name": "day2"}
        ],
        "hosts": [
            master,
            host(WORKER, E, C, "worker", "installing-in-progress", "Rebooting"),
            host(FRESH, E, C, "master", "installing", ""),
            host(PENDING, E, C, "master", "installing-pending-user-action", "Rebooting"),
            sno,
            day2,
        ]
    })
}

struct Mock {
    server: MockServer,
    base: String,
    _dir: tempfile::TempDir,
}

async fn start_with(mode: Mode, hosted: bool, seed: &Value) -> Mock {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = MockConfig::new(
        Seed::from_json(&seed.to_string()).expect("seed"),
        dir.path().join("data"),
    );
    config.upstream_compat = mode == Mode::Compat;
    config.hosted = hosted;
    let server = MockServer::start("127.0.0.1:0", config)
        .await
        .expect("mock");
    let base = server.base_url();
    Mock {
        server,
        base,
        _dir: dir,
    }
}

async fn start(mode: Mode) -> Mock {
    start_with(mode, false, &seed()).await
}

#[allow(clippy::disallowed_methods)] // the mock on loopback, by address: no name to resolve
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

async fn send(req: reqwest::RequestBuilder) -> Answer {
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.bytes().await.expect("body").to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

async fn put_progress(base: &str, env: &str, host: &str, stage: &str, info: &str) -> Answer {
    send(
        client()
            .put(format!(
                "{base}{API}/infra-envs/{env}/hosts/{host}/progress"
            ))
            .header("X-Secret-Key", AGENT)
            .json(&json!({"current_stage": stage, "progress_info": info})),
    )
    .await
}

async fn state_host(base: &str, id: &str) -> Value {
    let state: Value = client()
        .get(format!("{base}/admin/state"))
        .send()
        .await
        .expect("state")
        .json()
        .await
        .expect("state json");
    state["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .find(|h| h["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("host {id} not in state"))
}

async fn admin_post(base: &str, path: &str, body: &Value) -> Answer {
    send(client().post(format!("{base}{path}")).json(body)).await
}

/// A multipart body by hand: `upfile` of `size` bytes.
fn multipart(size: usize) -> (String, Vec<u8>) {
    let boundary = "abr-test-boundary-7d3f".to_owned();
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"upfile\"; filename=\"logs.tar.gz\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend(std::iter::repeat_n(b'x', size));
    body.extend(format!("\r\n--{boundary}--\r\n").into_bytes());
    (boundary, body)
}

fn tar_gz(member: &str, data: &[u8]) -> Vec<u8> {
    let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(enc);
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    b.append_data(&mut h, member, data).expect("append");
    b.into_inner().expect("tar").finish().expect("gzip")
}

async fn upload(base: &str, cluster: &str, query: &str, file: &[u8]) -> Answer {
    let boundary = "abr-test-boundary-7d3f";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"upfile\"; filename=\"logs.tar.gz\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(file);
    body.extend(format!("\r\n--{boundary}--\r\n").into_bytes());
    send(
        client()
            .post(format!("{base}{API}/clusters/{cluster}/logs?{query}"))
            .header("X-Secret-Key", AGENT)
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body),
    )
    .await
}

async fn download(base: &str, cluster: &str, query: &str) -> Answer {
    send(
        client()
            .get(format!("{base}{API}/clusters/{cluster}/logs?{query}"))
            .bearer_auth(USER),
    )
    .await
}

fn tar_names(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut archive = tar::Archive::new(data);
    archive
        .entries()
        .expect("tar")
        .map(|e| {
            let mut e = e.expect("entry");
            let name = e.path().expect("path").to_string_lossy().into_owned();
            let mut content = Vec::new();
            e.read_to_end(&mut content).expect("read member");
            (name, content)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Progress updates (`UpdateInstallProgress`)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sets_status_error_and_keeps_the_stored_stage() {
    for mode in BOTH {
        let m = start(mode).await;
        let a = put_progress(&m.base, E, MASTER, "Failed", "disk vanished").await;
        assert_eq!(a.status, 200, "{mode:?}");
        let h = state_host(&m.base, MASTER).await;
        assert_eq!(h["status"], "error", "{mode:?}: {h}");
        assert_eq!(h["current_stage"], "Configuring", "{mode:?}: {h}");
        assert_eq!(h["status_info"], "Failed - disk vanished", "{mode:?}: {h}");
        // And from error, a stage change is refused by the status gate.
        let a = put_progress(&m.base, E, MASTER, "Joined", "").await;
        assert_eq!(a.status, 409, "{mode:?}");
        assert_eq!(
            a.json()["reason"],
            "Can't set progress <Joined> to host in status <error>"
        );
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn role_list_is_checked_only_once_the_host_has_a_stage() {
    for mode in BOTH {
        let m = start(mode).await;
        // FRESH has no stage: a stage outside the master list is taken.
        let a = put_progress(&m.base, E, FRESH, "Waiting for ignition", "").await;
        assert_eq!(a.status, 200, "{mode:?}");
        let h = state_host(&m.base, FRESH).await;
        assert_eq!(h["current_stage"], "Waiting for ignition");
        // Now it has one, and the list applies.
        let a = put_progress(&m.base, E, FRESH, "Waiting for bootkube", "").await;
        assert_eq!(a.status, 409, "{mode:?}");
        assert_eq!(
            a.json()["reason"],
            "Stages Waiting for bootkube isn't available for host role master bootstrap false"
        );
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_while_pending_user_action_is_installing_in_progress() {
    for mode in BOTH {
        let m = start(mode).await;
        assert_eq!(
            put_progress(&m.base, E, PENDING, "Done", "").await.status,
            200
        );
        let h = state_host(&m.base, PENDING).await;
        assert_eq!(
            (h["current_stage"].as_str(), h["status"].as_str()),
            (Some("Done"), Some("installing-in-progress")),
            "{mode:?}: {h}"
        );
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boot_stages_exist_only_in_enhanced_mode() {
    for mode in BOTH {
        let m = start(mode).await;
        let a = put_progress(&m.base, E, WORKER, LOCAL_IGN, "").await;
        match mode {
            Mode::Enhanced => assert_eq!(a.status, 200),
            Mode::Compat => {
                assert_eq!(a.status, 400);
                let msg = a.json()["message"].as_str().unwrap_or("").to_owned();
                assert!(
                    msg.starts_with("current_stage in body should be one of [")
                        && !msg.contains("Booted"),
                    "{msg}"
                );
            }
        }
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn day2_host_rebooting_becomes_done_and_its_list_ends_at_rebooting() {
    for mode in BOTH {
        let m = start(mode).await;
        let a = put_progress(&m.base, E_DAY2, DAY2, LOCAL_IGN, "").await;
        assert_eq!(a.status, if mode == Mode::Compat { 400 } else { 409 });
        assert_eq!(
            put_progress(&m.base, E_DAY2, DAY2, "Rebooting", "")
                .await
                .status,
            200
        );
        let h = state_host(&m.base, DAY2).await;
        assert_eq!(h["current_stage"], "Done", "{mode:?}: {h}");
        assert_eq!(h["status"], "added-to-existing-cluster", "{mode:?}: {h}");
        assert_eq!(
            h["progress_stages"].as_array().and_then(|l| l.last()),
            Some(&json!("Rebooting"))
        );
        m.server.shutdown().await;
    }
}

// ---------------------------------------------------------------------------
// Listing

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sno_hosts_are_listed_with_the_stage_list_upstream_sends() {
    for mode in BOTH {
        let m = start(mode).await;
        let rules: Value = client()
            .get(format!("{}/admin/rules", m.base))
            .send()
            .await
            .expect("rules")
            .json()
            .await
            .expect("rules json");
        let listed = send(
            client()
                .get(format!("{}{API}/infra-envs/{E_SNO}/hosts", m.base))
                .header("X-Secret-Key", AGENT),
        )
        .await
        .json();
        let expected = match mode {
            // `V2ListHosts` calls customizeHost(nil, …): not single node.
            Mode::Compat => &rules["stage_lists"]["BootstrapStages"],
            Mode::Enhanced => &rules["stage_lists"]["SnoStages"],
        };
        assert_eq!(&listed[0]["progress_stages"], expected, "{mode:?}");
        // The PUT checks the real single-node list in both modes: Configuring
        // is not in it.
        assert_eq!(
            put_progress(&m.base, E_SNO, SNO, "Rebooting", "")
                .await
                .status,
            200
        );
        assert_eq!(
            put_progress(&m.base, E_SNO, SNO, "Configuring", "")
                .await
                .status,
            409,
            "{mode:?}"
        );
        // The cluster's host list never fills progress_stages.
        let by_cluster = send(
            client()
                .get(format!("{}{API}/clusters/{C_SNO}/hosts", m.base))
                .header("X-Secret-Key", AGENT),
        )
        .await
        .json();
        assert_eq!(by_cluster[0]["progress_stages"], Value::Null, "{mode:?}");
        assert_eq!(by_cluster[0]["infra_env_id"], E_SNO);
        m.server.shutdown().await;
    }
}

// ---------------------------------------------------------------------------
// Logs upload and download

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_body_is_read_whole_before_logs_type_is_checked() {
    for (mode, refused, types) in [
        (Mode::Compat, "host_boot", "[host controller]"),
        (Mode::Enhanced, "node-boot", "[host controller host_boot]"),
    ] {
        let m = start(mode).await;
        let (boundary, body) = multipart(3 << 20);
        let sent = body.len() as u64;
        let a = send(
            client()
                .post(format!(
                    "{}{API}/clusters/{C}/logs?logs_type={refused}&host_id={MASTER}",
                    m.base
                ))
                .header("X-Secret-Key", AGENT)
                .header(
                    "Content-Type",
                    format!("multipart/form-data; boundary={boundary}"),
                )
                .body(body),
        )
        .await;
        assert_eq!(a.status, 400, "{mode:?}");
        assert_eq!(
            a.json(),
            json!({"code": 400, "message": format!("logs_type in query should be one of {types}")})
        );
        let requests: Value = client()
            .get(format!("{}/admin/requests", m.base))
            .send()
            .await
            .expect("requests")
            .json()
            .await
            .expect("json");
        let upload = requests
            .as_array()
            .expect("list")
            .iter()
            .find(|r| r["method"] == "POST")
            .expect("upload journaled");
        assert_eq!(
            upload["body_bytes"],
            json!(sent),
            "{mode:?}: a refused upload is still read whole"
        );
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_ignores_infra_env_id_and_needs_host_id_for_host_logs() {
    for mode in BOTH {
        let m = start(mode).await;
        let bundle = tar_gz("journal.log", b"boot 1");
        // An infra_env_id that is not the host's: ignored.
        let a = upload(
            &m.base,
            C,
            &format!("logs_type=host&host_id={MASTER}&infra_env_id={E_SNO}"),
            &bundle,
        )
        .await;
        assert_eq!(
            a.status,
            204,
            "{mode:?}: {}",
            String::from_utf8_lossy(&a.body)
        );
        // `host` without host_id.
        let a = upload(&m.base, C, "logs_type=host", &bundle).await;
        assert_eq!(a.status, 400);
        assert_eq!(
            a.json()["reason"],
            "cluster_id and host_id are required for upload host logs"
        );
        // A host of another cluster.
        let a = upload(
            &m.base,
            C,
            &format!("logs_type=host&host_id={SNO}"),
            &bundle,
        )
        .await;
        assert_eq!(a.status, 404, "{mode:?}");
        // Controller logs belong to the cluster, whatever host_id says.
        let a = upload(
            &m.base,
            C,
            &format!("logs_type=controller&host_id={MASTER}"),
            &bundle,
        )
        .await;
        assert_eq!(a.status, 204);
        let h = state_host(&m.base, MASTER).await;
        let types: Vec<&str> = h["bundles"]
            .as_array()
            .expect("bundles")
            .iter()
            .filter_map(|b| b["logs_type"].as_str())
            .collect();
        assert_eq!(types, ["host"], "{mode:?}: {h}");
        assert!(h["logs_collected_at"].is_string(), "{h}");
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_semantics_follow_get_log_file_for_download() {
    for mode in BOTH {
        let m = start(mode).await;
        // Nothing uploaded yet.
        let a = download(&m.base, C, &format!("logs_type=host&host_id={MASTER}")).await;
        assert_eq!(a.status, 409, "{mode:?}");
        assert_eq!(
            a.json()["reason"],
            format!("Logs for host {MASTER} were not found")
        );
        let a = download(&m.base, C, "logs_type=host").await;
        assert_eq!(a.status, 400);
        assert_eq!(
            a.json()["reason"],
            "Host ID must be provided for downloading host logs"
        );
        // `PrepareClusterLogFile` writes the cluster's metadata and events
        // first: the whole-cluster tar is never empty.
        let a = download(&m.base, C, "").await;
        assert_eq!(a.status, 200, "{mode:?}");
        let names: Vec<String> = tar_names(&a.body).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["cluster_events.json", "cluster_metadata.json"]);
        let a = download(&m.base, C, "logs_type=controller").await;
        assert_eq!(a.status, 409);
        assert_eq!(
            a.json()["reason"],
            format!("Controller Logs for cluster {C} were not found")
        );

        let host_bundle = tar_gz("journal.log", b"host logs");
        assert_eq!(
            upload(
                &m.base,
                C,
                &format!("logs_type=host&host_id={MASTER}"),
                &host_bundle
            )
            .await
            .status,
            204
        );
        let boot_bundle = tar_gz("journal.log", b"boot logs");
        let boot = upload(
            &m.base,
            C,
            &format!("logs_type=host_boot&host_id={MASTER}"),
            &boot_bundle,
        )
        .await;

        // `host`: the service's host tar, boot bundle beside the host one.
        let a = download(&m.base, C, &format!("logs_type=host&host_id={MASTER}")).await;
        assert_eq!(a.status, 200);
        assert_eq!(
            a.headers["content-disposition"],
            "attachment; filename=multi_bootstrap_master-1.example.com.tar.gz"
        );
        let members = tar_names(&a.body);
        let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
        match mode {
            Mode::Compat => {
                assert_eq!(boot.status, 400);
                assert_eq!(names, ["multi_bootstrap_master-1.example.com.tar.gz"]);
            }
            Mode::Enhanced => {
                assert_eq!(boot.status, 204);
                assert_eq!(
                    names,
                    [
                        "multi_bootstrap_master-1.example.com.tar.gz",
                        "multi_bootstrap_boot_master-1.example.com.tar.gz"
                    ]
                );
                assert_eq!(members[1].1, boot_bundle);
                let raw =
                    download(&m.base, C, &format!("logs_type=host_boot&host_id={MASTER}")).await;
                assert_eq!(raw.status, 200);
                assert_eq!(raw.body, boot_bundle);
                assert_eq!(
                    raw.headers["content-disposition"],
                    "attachment; filename=multi_bootstrap_boot_master-1.example.com.tar.gz"
                );
                let none =
                    download(&m.base, C, &format!("logs_type=host_boot&host_id={WORKER}")).await;
                assert_eq!(none.status, 409);
            }
        }
        assert_eq!(members[0].1, host_bundle);
        // No logs_type, even with a host_id: the whole cluster.
        for query in [
            String::new(),
            format!("host_id={WORKER}"),
            "logs_type=all".into(),
        ] {
            let a = download(&m.base, C, &query).await;
            assert_eq!(a.status, 200, "{query}");
            assert_eq!(
                a.headers["content-disposition"],
                format!("attachment; filename=multi_{C}.tar")
            );
            let outer = tar_names(&a.body);
            let names: Vec<&str> = outer.iter().map(|(n, _)| n.as_str()).collect();
            // In the storage's listing order: `<host id>/`, `cluster/`.
            assert_eq!(
                names,
                [
                    "multi_bootstrap_master-1.example.com.tar",
                    "cluster_events.json",
                    "cluster_metadata.json"
                ],
                "{query}"
            );
            let inner = tar_names(&outer[0].1);
            assert_eq!(inner[0].1, host_bundle);
            let metadata: Value = serde_json::from_slice(&outer[2].1).expect("metadata json");
            assert_eq!(metadata["id"], C);
            assert_eq!(metadata["pull_secret"], "SECRET");
        }
        m.server.shutdown().await;
    }
}

// ---------------------------------------------------------------------------
// Answers as the real service writes them (models' `omitempty`, error
// texts and encodings read from assisted-service at 063b2579)

fn ctype(a: &Answer) -> &str {
    a.headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

async fn list_hosts(base: &str, env: &str) -> Answer {
    send(
        client()
            .get(format!("{base}{API}/infra-envs/{env}/hosts"))
            .header("X-Secret-Key", AGENT),
    )
    .await
}

fn host_of<'a>(list: &'a Value, id: &str) -> &'a Value {
    list.as_array()
        .expect("a list")
        .iter()
        .find(|h| h["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_lists_carry_upstreams_fields_with_its_omitempty_rules() {
    for mode in BOTH {
        let m = start(mode).await;
        let a = list_hosts(&m.base, E).await;
        assert_eq!(a.status, 200);
        // go-openapi's JSON producer: `json.Encoder`, one newline after the value.
        assert_eq!(ctype(&a), "application/json");
        assert_eq!(a.body.last(), Some(&b'\n'));
        let list = a.json();
        assert!(
            a.body.len() > 4 * 15_000,
            "{mode:?}: four hosts in {} bytes: not the real service's size",
            a.body.len()
        );
        let master = host_of(&list, MASTER);
        let worker = host_of(&list, WORKER);
        let fresh = host_of(&list, FRESH);
        for field in [
            "inventory",
            "validations_info",
            "connectivity",
            "disks_info",
            "domain_name_resolutions",
            "images_status",
            "ntp_sources",
            "installation_disk_id",
            "installation_disk_path",
            "discovery_agent_version",
            "installer_version",
            "suggested_role",
            "role",
            "requested_hostname",
            "timestamp",
            "media_status",
        ] {
            assert!(
                master.get(field).is_some(),
                "{mode:?}: no {field}: {master}"
            );
        }
        // Stored JSON strings that parse, and agree with the host.
        let inventory: Value =
            serde_json::from_str(master["inventory"].as_str().expect("a string")).expect("json");
        assert_eq!(inventory["hostname"], master["requested_hostname"]);
        assert!(master["inventory"].as_str().unwrap_or("").len() > 4096);
        let validations: Value =
            serde_json::from_str(master["validations_info"].as_str().expect("a string"))
                .expect("json");
        assert_eq!(validations["hardware"][0]["id"], "has-inventory");
        let connectivity: Value =
            serde_json::from_str(master["connectivity"].as_str().expect("a string")).expect("json");
        assert_eq!(
            connectivity["remote_hosts"].as_array().map(Vec::len),
            Some(3),
            "the other hosts of the cluster"
        );
        // `omitempty`: false, "" and 0 are absent.
        assert_eq!(master["bootstrap"], true);
        assert!(worker.get("bootstrap").is_none(), "{worker}");
        for host in [master, worker, fresh] {
            assert!(host["progress"].get("stage_timed_out").is_none(), "{host}");
            assert!(host.get("free_addresses").is_none(), "{host}");
            assert!(host.get("logs_info").is_none(), "{host}");
        }
        assert!(fresh["progress"].get("current_stage").is_none(), "{fresh}");
        assert!(
            fresh["progress"].get("installation_percentage").is_none(),
            "{fresh}"
        );
        assert!(fresh["progress"].get("progress_info").is_none(), "{fresh}");
        // Date-times are structs in Go: never omitted, zero when unset.
        assert_eq!(
            fresh["progress"]["stage_started_at"],
            "0001-01-01T00:00:00.000Z"
        );
        assert_eq!(master["logs_collected_at"], "0001-01-01T00:00:00.000Z");
        assert_eq!(master["stage_started_at"], "0001-01-01T00:00:00.000Z");
        assert_eq!(master["deleted_at"], Value::Null);
        assert!(master["progress"]["stage_started_at"]
            .as_str()
            .is_some_and(|t| t.len() == 24 && t.ends_with('Z')));

        // A second mock from the same seed lists the same facts.
        let again = start(mode).await;
        let other = list_hosts(&again.base, E).await.json();
        for field in [
            "inventory",
            "validations_info",
            "connectivity",
            "disks_info",
        ] {
            assert_eq!(host_of(&other, MASTER)[field], master[field], "{field}");
        }
        again.server.shutdown().await;
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stage_timed_out_appears_only_once_a_stage_timed_out() {
    for mode in BOTH {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = MockConfig::new(
            Seed::from_json(&seed().to_string()).expect("seed"),
            dir.path().join("data"),
        );
        config.upstream_compat = mode == Mode::Compat;
        // 40 min of Rebooting pass in the monitor's first tick.
        config.time_scale = 1e6;
        let server = MockServer::start("127.0.0.1:0", config)
            .await
            .expect("mock");
        let base = server.base_url();
        let deadline = Instant::now() + Duration::from_secs(20);
        while state_host(&base, WORKER).await["status"] != "installing-pending-user-action" {
            assert!(
                Instant::now() < deadline,
                "{mode:?}: WORKER never timed out"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let list = list_hosts(&base, E).await.json();
        assert_eq!(
            host_of(&list, WORKER)["progress"]["stage_timed_out"],
            true,
            "{mode:?}"
        );
        // Not installing-in-progress: no timer ran, nothing to show.
        assert!(host_of(&list, FRESH)["progress"]
            .get("stage_timed_out")
            .is_none());
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_host_list_is_the_stored_rows() {
    for mode in BOTH {
        let m = start(mode).await;
        let get = |query: &'static str| {
            send(
                client()
                    .get(format!("{}{API}/clusters/{C}/hosts{query}", m.base))
                    .header("X-Secret-Key", AGENT),
            )
        };
        let list = get("").await.json();
        let master = host_of(&list, MASTER);
        assert_eq!(master["progress_stages"], Value::Null, "{mode:?}");
        assert!(master.get("inventory").is_none(), "{master}");
        assert!(master.get("connectivity").is_none(), "{master}");
        assert_eq!(master["requested_hostname"], "master-1.example.com");
        let list = get("?with-inventory=true&with-connectivity=true")
            .await
            .json();
        assert!(host_of(&list, MASTER)["inventory"].is_string());
        assert!(host_of(&list, MASTER)["connectivity"].is_string());
        let masters = get("?role=master").await.json();
        assert_eq!(masters.as_array().map(Vec::len), Some(3), "{masters}");
        // No existence check upstream: an unknown cluster has no hosts.
        let unknown = send(
            client()
                .get(format!(
                    "{}{API}/clusters/00000000-0000-4000-8000-0000000000c1/hosts",
                    m.base
                ))
                .header("X-Secret-Key", AGENT),
        )
        .await;
        assert_eq!(
            (unknown.status, unknown.body.as_slice()),
            (200, b"[]\n".as_slice())
        );
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_without_a_stage_is_a_conflict_not_a_validation_error() {
    for mode in BOTH {
        let m = start(mode).await;
        for body in [
            json!({"progress_info": "no stage"}),
            json!({"current_stage": "", "progress_info": "empty stage"}),
        ] {
            let put = |host: &'static str| {
                send(
                    client()
                        .put(format!(
                            "{}{API}/infra-envs/{E}/hosts/{host}/progress",
                            m.base
                        ))
                        .header("X-Secret-Key", AGENT)
                        .json(&body),
                )
            };
            // `UpdateInstallProgress` formats the empty stage into its text.
            let a = put(MASTER).await;
            assert_eq!(a.status, 409, "{mode:?} {body}");
            assert_eq!(
                a.body,
                b"{\"code\":\"409\",\"href\":\"\",\"id\":409,\"kind\":\"Error\",\"reason\":\"Stages  isn't available for host role master bootstrap true\"}\n"
            );
            let a = put(WORKER).await;
            assert_eq!(
                a.json()["reason"],
                "Stages  isn't available for host role worker bootstrap false"
            );
            // A host without a stage: the same "" stage, the info is taken.
            assert_eq!(put(FRESH).await.status, 200, "{mode:?} {body}");
        }
        let fresh = state_host(&m.base, FRESH).await;
        assert_eq!(fresh["current_stage"], Value::Null);
        assert_eq!(fresh["progress_info"], "empty stage");
        assert_eq!(
            state_host(&m.base, MASTER).await["current_stage"],
            "Configuring"
        );
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_failures_answer_with_upstreams_texts() {
    let m = start(Mode::Compat).await;
    let hosts_url = format!("{}{API}/infra-envs/{E}/hosts", m.base);
    // No credential a scheme of the route reads: go-openapi's own error,
    // `json.Marshal`ed, no newline.
    for req in [
        client().get(&hosts_url),
        client()
            .get(format!("{}{API}/infra-envs/{E}/hosts/{MASTER}", m.base))
            .header("X-Secret-Key", AGENT),
        client()
            .get(format!("{}{API}/clusters/{C}/logs?logs_type=all", m.base))
            .header("X-Secret-Key", AGENT),
    ] {
        let a = send(req).await;
        assert_eq!(a.status, 401);
        assert_eq!(ctype(&a), "application/json");
        assert_eq!(
            a.body,
            br#"{"code":401,"message":"unauthenticated for invalid credentials"}"#
        );
    }
    // A token the local authenticator cannot parse: its `infra_error`.
    let a = send(client().get(&hosts_url).header("X-Secret-Key", "not-a-jwt")).await;
    assert_eq!(a.status, 401);
    assert_eq!(ctype(&a), "application/json");
    assert_eq!(
        a.body,
        b"{\"code\":401,\"message\":\"Failed to parse token: token contains an invalid number of segments\\n\"}\n"
    );
    // A token minted for the cluster names an infra-env that does not exist.
    let a = send(
        client()
            .get(&hosts_url)
            .header("X-Secret-Key", CLUSTER_MINTED),
    )
    .await;
    assert_eq!(a.status, 401);
    assert_eq!(a.json()["message"], format!("infraEnv {C} does not exist"));
    // User tokens (`rhsso_authenticator.go` `AuthUserAuth`).
    let a = send(client().get(&hosts_url).bearer_auth("wrong")).await;
    assert_eq!(
        a.json(),
        json!({"code": 401, "message": "Error parsing token or token is invalid"})
    );
    let a = send(client().get(&hosts_url).header("Authorization", "Basic x")).await;
    assert_eq!(
        a.json()["message"],
        "Authorization header format must be Bearer {token}"
    );
    // The download's schemes: urlAuth takes an agent token, the authorizer
    // then refuses it (not scoped to the cluster), through the route's
    // octet-stream producer.
    let logs = |key: &str| {
        send(client().get(format!(
            "{}{API}/clusters/{C}/logs?logs_type=all&api_key={key}",
            m.base
        )))
    };
    let a = logs(AGENT).await;
    assert_eq!(a.status, 404);
    assert_eq!(ctype(&a), "application/octet-stream");
    assert_eq!(
        a.body,
        br#"{"code":"404","href":"","id":404,"kind":"Error","reason":"Object Not Found"}"#
    );
    let a = logs("garbage").await;
    assert_eq!(a.status, 401);
    assert_eq!(ctype(&a), "application/octet-stream");
    assert_eq!(
        a.json()["message"],
        "Failed to parse token: token contains an invalid number of segments\n"
    );
    assert_eq!(logs(USER).await.status, 200);
    m.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_objects_get_upstreams_404_texts() {
    const NOBODY: &str = "00000000-0000-4000-8000-00000000dead";
    for mode in BOTH {
        let m = start(mode).await;
        // `GetHostFromDB` wraps gorm's error with both ids; the progress PUT
        // does not look the infra-env up.
        for env in [E, NOBODY] {
            let a = put_progress(&m.base, env, NOBODY, "Joined", "").await;
            assert_eq!(a.status, 404, "{mode:?}");
            assert_eq!(
                a.json(),
                json!({"code": "404", "href": "", "id": 404, "kind": "Error",
                       "reason": format!("failed to get host {NOBODY} in infra_env {env}: record not found")})
            );
        }
        // A host of another infra-env is not found either.
        let a = put_progress(&m.base, E_SNO, MASTER, "Joined", "").await;
        assert_eq!(
            a.json()["reason"],
            format!("failed to get host {MASTER} in infra_env {E_SNO}: record not found")
        );
        // Infra-env and cluster lookups return gorm's error as is.
        let a = list_hosts(&m.base, NOBODY).await;
        assert_eq!(a.status, 404);
        assert_eq!(a.json()["reason"], "record not found");
        let a = send(
            client()
                .get(format!("{}{API}/clusters/{NOBODY}", m.base))
                .header("X-Secret-Key", AGENT),
        )
        .await;
        assert_eq!(
            (a.status, a.json()["reason"].clone()),
            (404, json!("record not found"))
        );
        let a = download(&m.base, NOBODY, "logs_type=all").await;
        assert_eq!(a.status, 404);
        assert_eq!(a.json()["reason"], "record not found");
        // Host logs of a host of another cluster.
        let a = upload(&m.base, C, &format!("logs_type=host&host_id={SNO}"), b"x").await;
        assert_eq!(
            a.json()["reason"],
            format!("failed to get host {SNO} in cluster {C}: record not found")
        );
        // No route: go-openapi's router.
        let a = send(client().get(format!("{}{API}/no-such-thing", m.base))).await;
        assert_eq!(a.status, 404);
        assert_eq!(
            a.body,
            br#"{"code":404,"message":"path /api/assisted-install/v2/no-such-thing was not found"}"#
        );
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_errors_come_through_the_octet_stream_producer() {
    for mode in BOTH {
        let m = start(mode).await;
        let query = format!("logs_type=host&host_id={MASTER}");
        let a = download(&m.base, C, &query).await;
        assert_eq!(a.status, 409);
        assert_eq!(ctype(&a), "application/octet-stream");
        // `MarshalBinary`: `json.Marshal`, no newline.
        assert_eq!(
            a.body,
            format!(
                r#"{{"code":"409","href":"","id":409,"kind":"Error","reason":"Logs for host {MASTER} were not found"}}"#
            )
            .into_bytes()
        );
        // A client that asks for JSON gets the JSON producer.
        let a = send(
            client()
                .get(format!("{}{API}/clusters/{C}/logs?{query}", m.base))
                .bearer_auth(USER)
                .header("Accept", "application/json"),
        )
        .await;
        assert_eq!((a.status, ctype(&a)), (409, "application/json"));
        assert_eq!(a.body.last(), Some(&b'\n'));
        // Parameter validation is go-openapi's, JSON whatever the route.
        let a = download(&m.base, C, "logs_type=node-boot").await;
        assert_eq!((a.status, ctype(&a)), (400, "application/json"));
        assert_eq!(a.json()["code"], 400);
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_read_the_cluster() {
    for mode in BOTH {
        let m = start(mode).await;
        let rules: Value = client()
            .get(format!("{}/admin/rules", m.base))
            .send()
            .await
            .expect("rules")
            .json()
            .await
            .expect("rules json");
        let get = |cluster: &'static str, key: &'static str, query: &'static str| {
            send(
                client()
                    .get(format!("{}{API}/clusters/{cluster}{query}", m.base))
                    .header("X-Secret-Key", key),
            )
        };
        let a = get(C, AGENT, "").await;
        assert_eq!((a.status, ctype(&a)), (200, "application/json"), "{mode:?}");
        let c = a.json();
        assert_eq!(c["id"], C);
        assert_eq!(c["kind"], "Cluster");
        assert_eq!(c["high_availability_mode"], "Full");
        assert_eq!(c["control_plane_count"], 3);
        assert_eq!(c["openshift_version"], "4.18");
        // PENDING waits for the user (wrong boot order): so does the cluster.
        assert_eq!(c["status"], "installing-pending-user-action");
        assert_eq!(c["status_info"], "Cluster has hosts pending user action");
        assert_eq!(c["platform"]["type"], "baremetal");
        assert_eq!(c["total_host_count"], 4);
        assert_eq!(c["deleted_at"], Value::Null);
        // Its hosts are customized with the cluster.
        let master = host_of(&c["hosts"], MASTER);
        assert_eq!(
            master["progress_stages"],
            rules["stage_lists"]["BootstrapStages"]
        );
        assert!(master["inventory"].is_string());

        // Single node: the cluster says so, its host is the bootstrap host
        // and walks SnoStages, in both modes (V2GetCluster passes the
        // cluster to customizeHost; only V2ListHosts does not).
        let a = get(C_SNO, SNO_TOKEN, "").await;
        assert_eq!(
            a.status, 200,
            "an infra-env token reads any cluster (local auth)"
        );
        let sno = a.json();
        assert_eq!(sno["high_availability_mode"], "None");
        assert_eq!(sno["control_plane_count"], 1);
        assert_eq!(sno["platform"]["type"], "none");
        assert_eq!(sno["user_managed_networking"], true);
        assert_eq!(sno["api_vips"], json!([]));
        let host = &sno["hosts"][0];
        assert_eq!(host["id"], SNO);
        assert_eq!(host["bootstrap"], true);
        assert_eq!(host["progress_stages"], rules["stage_lists"]["SnoStages"]);

        let day2 = get(C_DAY2, AGENT, "").await.json();
        assert_eq!(
            (day2["kind"].as_str(), day2["status"].as_str()),
            (Some("AddHostsCluster"), Some("adding-hosts"))
        );
        // exclude-hosts: no hosts loaded, so none counted either.
        let light = get(C, AGENT, "?exclude-hosts=true").await.json();
        assert_eq!(light["hosts"], Value::Null);
        assert!(light.get("total_host_count").is_none(), "{light}");
        assert_eq!(get(C, "not-a-jwt", "").await.status, 401);
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_makes_a_single_node_cluster_from_its_topology() {
    let mut seed = seed();
    // Say it on the cluster only: the host follows.
    seed["clusters"][1]["high_availability_mode"] = json!("None");
    seed["hosts"][4]
        .as_object_mut()
        .expect("host")
        .remove("single_node");
    let m = start_with(Mode::Enhanced, false, &seed).await;
    let rules: Value = client()
        .get(format!("{}/admin/rules", m.base))
        .send()
        .await
        .expect("rules")
        .json()
        .await
        .expect("rules json");
    let listed = list_hosts(&m.base, E_SNO).await.json();
    assert_eq!(
        listed[0]["progress_stages"],
        rules["stage_lists"]["SnoStages"]
    );
    let state: Value = client()
        .get(format!("{}/admin/state", m.base))
        .send()
        .await
        .expect("state")
        .json()
        .await
        .expect("state json");
    assert_eq!(state_host(&m.base, SNO).await["single_node"], true);
    let sno = state["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .find(|c| c["id"] == C_SNO)
        .expect("the SNO cluster");
    assert_eq!(
        (&sno["high_availability_mode"], &sno["control_plane_count"]),
        (&json!("None"), &json!(1))
    );
    // A single-node host in a cluster that says otherwise is refused.
    let mut bad = seed.clone();
    bad["clusters"][1]["high_availability_mode"] = json!("Full");
    bad["hosts"][4]["single_node"] = json!(true);
    let a = admin_post(&m.base, "/admin/seed", &bad).await;
    assert_eq!(a.status, 400);
    assert!(
        a.json()["reason"]
            .as_str()
            .is_some_and(|r| r.contains("single_node")),
        "{}",
        String::from_utf8_lossy(&a.body)
    );
    m.server.shutdown().await;
}

// ---------------------------------------------------------------------------
// The controller stand-in

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_sets_joined_only_from_the_stages_it_accepts() {
    for mode in BOTH {
        let m = start(mode).await;
        // Configuring: Joined, then Done once Ready, in both modes.
        let a = admin_post(
            &m.base,
            "/admin/controller/node",
            &json!({"host_id": MASTER, "ready": true}),
        )
        .await;
        let puts = a.json();
        let stages: Vec<&str> = puts["puts"]
            .as_array()
            .expect("puts")
            .iter()
            .map(|p| p["stage"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(stages, ["Joined", "Done"], "{mode:?}");
        let h = state_host(&m.base, MASTER).await;
        assert_eq!(
            (h["current_stage"].as_str(), h["status"].as_str()),
            (Some("Done"), Some("installed"))
        );

        // A host in a stage the controller does not accept is never Joined.
        let stage = if mode == Mode::Compat {
            "Waiting for ignition"
        } else {
            CP_IGN
        };
        assert_eq!(
            put_progress(&m.base, E, WORKER, stage, "").await.status,
            200
        );
        let a = admin_post(
            &m.base,
            "/admin/controller/node",
            &json!({"host_id": WORKER}),
        )
        .await;
        let joined = a.json()["puts"].as_array().is_some_and(|p| !p.is_empty());
        let h = state_host(&m.base, WORKER).await;
        match mode {
            Mode::Compat => {
                assert!(!joined, "{h}");
                assert_eq!(h["current_stage"], "Waiting for ignition");
            }
            Mode::Enhanced => {
                assert!(joined, "{h}");
                assert_eq!(h["current_stage"], "Joined");
            }
        }
        m.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignition_fetch_moves_to_configuring_unless_the_stage_is_skipped() {
    for mode in BOTH {
        let m = start(mode).await;
        // Rebooting worker seen from the bootstrap: Waiting for ignition.
        let a = admin_post(
            &m.base,
            "/admin/controller/ignition-fetched",
            &json!({"host_id": WORKER, "from_bootstrap": true}),
        )
        .await;
        assert_eq!(a.json()["puts"][0]["stage"], "Waiting for ignition");
        // From the cluster's MCS: Configuring.
        let a = admin_post(
            &m.base,
            "/admin/controller/ignition-fetched",
            &json!({"host_id": WORKER}),
        )
        .await;
        assert_eq!(a.json()["puts"][0]["status"], 200);
        assert_eq!(
            state_host(&m.base, WORKER).await["current_stage"],
            "Configuring"
        );
        if mode == Mode::Enhanced {
            assert_eq!(
                put_progress(&m.base, E, WORKER, CP_IGN, "").await.status,
                200
            );
            let a = admin_post(
                &m.base,
                "/admin/controller/ignition-fetched",
                &json!({"host_id": WORKER}),
            )
            .await;
            assert_eq!(a.json()["puts"], json!([]), "a later stage is left alone");
        }
        m.server.shutdown().await;
    }
}

// ---------------------------------------------------------------------------
// Auth

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosted_service_answers_a_refused_token_with_404_object_not_found() {
    let m = start_with(Mode::Compat, true, &seed()).await;
    let list = |key: &'static str, env: &'static str| {
        let mut req = client().get(format!("{}{API}/infra-envs/{env}/hosts", m.base));
        if !key.is_empty() {
            req = req.header("X-Secret-Key", key);
        }
        send(req)
    };
    let a = list("not-a-token-of-this-owner", E).await;
    assert_eq!(a.status, 404);
    assert_eq!(
        a.json(),
        json!({"code": "404", "href": "", "id": 404, "kind": "Error", "reason": "Object Not Found"})
    );
    // A token of another owner's infra-env: 404 too, on every agent endpoint.
    assert_eq!(list(SNO_TOKEN, E).await.status, 404);
    assert_eq!(list(SNO_TOKEN, E_SNO).await.status, 200);
    let a = send(
        client()
            .put(format!(
                "{}{API}/infra-envs/{E}/hosts/{MASTER}/progress",
                m.base
            ))
            .header("X-Secret-Key", SNO_TOKEN)
            .json(&json!({"current_stage": "Joined"})),
    )
    .await;
    assert_eq!(a.status, 404);
    // No token at all is still an authentication failure.
    assert_eq!(list("", E).await.status, 401);
    // The gateway's answer to the reverted reporter's logs type.
    let a = upload(
        &m.base,
        C,
        &format!("logs_type=node-boot&host_id={MASTER}"),
        b"x",
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_slice()),
        (400, b"bad request".as_slice())
    );
    m.server.shutdown().await;

    // On-premise local auth: a refused token is 401; an infra-env token is
    // not scoped for agent endpoints; a token minted for the cluster names
    // an infra-env that does not exist and is refused.
    let m = start(Mode::Compat).await;
    let get = |key: &'static str| {
        send(
            client()
                .get(format!("{}{API}/infra-envs/{E}/hosts", m.base))
                .header("X-Secret-Key", key),
        )
    };
    assert_eq!(get("not-a-token").await.status, 401);
    assert_eq!(get(SNO_TOKEN).await.status, 200);
    assert_eq!(get(CLUSTER_MINTED).await.status, 401);
    m.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_api_refuses_cross_site_requests() {
    let m = start(Mode::Enhanced).await;
    let empty = json!({"clusters": [], "infra_envs": [], "hosts": []}).to_string();
    // A foreign page's form or `text/plain` fetch: no state change.
    let a = send(
        client()
            .post(format!("{}/admin/seed", m.base))
            .header("Origin", "http://evil.example")
            .header("Content-Type", "text/plain")
            .body(empty.clone()),
    )
    .await;
    assert_eq!(a.status, 403);
    let a = send(
        client()
            .post(format!("{}/admin/seed", m.base))
            .header("Content-Type", "text/plain")
            .body(empty.clone()),
    )
    .await;
    assert_eq!(a.status, 415);
    let a = send(
        client()
            .post(format!("{}/admin/hosts/{MASTER}/stage", m.base))
            .header("Sec-Fetch-Site", "cross-site")
            .json(&json!({"current_stage": "Done"})),
    )
    .await;
    assert_eq!(a.status, 403);
    let a = send(
        client()
            .delete(format!("{}/admin/requests", m.base))
            .header("Origin", "null"),
    )
    .await;
    assert_eq!(a.status, 403);
    let h = state_host(&m.base, MASTER).await;
    assert_eq!(h["current_stage"], "Configuring", "state changed: {h}");
    // The same request from the mock's own page (same origin) or a script passes.
    let own = m.base.clone();
    let a = send(
        client()
            .post(format!("{}/admin/hosts/{MASTER}/stage", m.base))
            .header("Origin", own)
            .header("Sec-Fetch-Site", "same-origin")
            .json(&json!({"current_stage": "Joined"})),
    )
    .await;
    assert_eq!(a.status, 204);
    assert_eq!(state_host(&m.base, MASTER).await["current_stage"], "Joined");
    m.server.shutdown().await;
}

/// DNS rebinding: a page on `evil.example` whose name now resolves to the
/// mock's address sends `Host: evil.example:PORT`; the admin API (reads
/// included: `/admin/state` holds the minted tokens) answers only requests
/// addressed to an IP address or `localhost`. The machine-config admin
/// route has the same guards as the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_api_refuses_rebound_hosts_and_guards_machine_configs() {
    let m = start(Mode::Enhanced).await;
    let port = m.base.rsplit(':').next().unwrap().to_owned();
    let rebound = format!("evil.example:{port}");
    let a = send(
        client()
            .get(format!("{}/admin/state", m.base))
            .header("Host", rebound.clone()),
    )
    .await;
    assert_eq!(a.status, 403);
    let a = send(
        client()
            .post(format!("{}/admin/hosts/{MASTER}/stage", m.base))
            .header("Host", rebound.clone())
            .json(&json!({"current_stage": "Done"})),
    )
    .await;
    assert_eq!(a.status, 403);
    let a = send(
        client()
            .get(format!("{}/admin/machine-configs", m.base))
            .header("Host", rebound),
    )
    .await;
    assert_eq!(a.status, 403);
    let config = json!({"ignition": {"version": "3.2.0"}}).to_string();
    let a = send(
        client()
            .put(format!("{}/admin/machine-configs/worker", m.base))
            .header("Origin", "http://evil.example")
            .header("Content-Type", "application/json")
            .body(config.clone()),
    )
    .await;
    assert_eq!(a.status, 403);
    let a = send(
        client()
            .put(format!("{}/admin/machine-configs/worker", m.base))
            .header("Content-Type", "text/plain")
            .body(config.clone()),
    )
    .await;
    assert_eq!(a.status, 415);
    assert_eq!(
        state_host(&m.base, MASTER).await["current_stage"],
        "Configuring"
    );
    // Addressed by IP or `localhost`, with JSON: they pass.
    let a = send(
        client()
            .get(format!("{}/admin/state", m.base))
            .header("Host", format!("localhost:{port}")),
    )
    .await;
    assert_eq!(a.status, 200);
    let a = send(
        client()
            .put(format!("{}/admin/machine-configs/worker", m.base))
            .header("Content-Type", "application/json")
            .body(config),
    )
    .await;
    assert!(a.status < 300, "{}", a.status);
    m.server.shutdown().await;
}

// ---------------------------------------------------------------------------
// The integration document is what the enhanced mock implements

fn doc_section(doc: &str, marker: &str) -> Vec<(String, Vec<String>)> {
    let start = doc
        .find(&format!("<!-- {marker} -->"))
        .unwrap_or_else(|| panic!("marker {marker} missing from the document"));
    let rest = &doc[start..];
    let end = rest.find("<!-- end -->").expect("end marker");
    rest[..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| {
            let (name, items) = l.split_once(':').expect("`name: items`");
            (
                name.trim().trim_matches('`').to_owned(),
                items.split(',').map(|s| s.trim().to_owned()).collect(),
            )
        })
        .collect()
}

/// A section holding one unnamed list line.
fn doc_list(doc: &str, marker: &str) -> Vec<String> {
    let start = doc
        .find(&format!("<!-- {marker} -->"))
        .unwrap_or_else(|| panic!("marker {marker} missing from the document"));
    let rest = &doc[start..];
    let end = rest.find("<!-- end -->").expect("end marker");
    let line = rest[..end]
        .lines()
        .find_map(|l| l.trim().strip_prefix("- "))
        .expect("one list line");
    line.split(',').map(|s| s.trim().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integration_document_and_mock_rules_agree() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/upstream-integration.md"),
    )
    .expect("read docs/upstream-integration.md");
    for mode in BOTH {
        let m = start(mode).await;
        let rules: Value = client()
            .get(format!("{}/admin/rules", m.base))
            .send()
            .await
            .expect("rules")
            .json()
            .await
            .expect("json");
        let tag = if mode == Mode::Compat {
            "upstream"
        } else {
            "enhanced"
        };
        let lists = doc_section(&doc, &format!("stage-lists {tag}"));
        assert_eq!(lists.len(), 4, "{tag}: four lists in the document");
        for (name, stages) in &lists {
            assert_eq!(
                rules["stage_lists"][name],
                json!(stages),
                "{tag} {name}: document and mock differ"
            );
        }
        let mut timeouts = doc_section(&doc, "stage-timeouts upstream");
        if mode == Mode::Enhanced {
            timeouts.extend(doc_section(&doc, "stage-timeouts enhanced"));
        }
        for (stage, minutes) in &timeouts {
            let minutes: u64 = minutes[0].parse().expect("minutes");
            assert_eq!(
                rules["stage_timeout_minutes"][stage],
                json!(minutes),
                "{tag} timeout of {stage}"
            );
        }
        if mode == Mode::Enhanced {
            assert_eq!(
                rules["controller_joined_from"],
                json!(doc_list(&doc, "controller-joined-from enhanced")),
                "the controller's Joined rule"
            );
        } else {
            assert_eq!(
                rules["controller_joined_from"],
                json!(["Configuring", "Rebooting"]),
                "assisted-installer waitAndUpdateNodesStatus today"
            );
        }
        m.server.shutdown().await;
    }
}

// ---------------------------------------------------------------------------
// Stage timers, on the real mock binary

/// The `mock-assisted-service` binary of this build, built if needed (it is
/// another package's binary, so Cargo does not hand its path to this test).
/// Built for the whole workspace, not `-p mock-assisted-service`: that
/// resolves the features `cargo test --workspace` resolves
/// (workspace-hack/Cargo.toml), so under the README's test command the
/// binary is already there; `-p` compiled tokio, serde, hyper and axum a
/// second time (about 110 s on two cores).
fn mock_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    // target/<profile>/deps/<test> -> target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile dir")
        .to_path_buf();
    let target_dir = profile_dir.parent().expect("target dir").to_path_buf();
    let mut build = std::process::Command::new(env!("CARGO"));
    build
        .args([
            "build",
            "--quiet",
            "--workspace",
            "--bin",
            "mock-assisted-service",
        ])
        .env("CARGO_TARGET_DIR", &target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("running cargo build for the mock");
    assert!(status.success(), "building the mock binary failed");
    profile_dir.join("mock-assisted-service")
}

struct MockProcess {
    child: tokio::process::Child,
    base: String,
    _dir: tempfile::TempDir,
}

/// Starts the binary on an ephemeral loopback port and reads the port from
/// its `listening on` line.
async fn spawn_mock_binary(mode: Mode, time_scale: &str, seed: &Value) -> MockProcess {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed_path = dir.path().join("seed.json");
    std::fs::write(&seed_path, seed.to_string()).expect("write seed");
    let mut cmd = tokio::process::Command::new(mock_binary());
    cmd.args([
        "--listen",
        "127.0.0.1:0",
        "--time-scale",
        time_scale,
        "--seed",
    ])
    .arg(&seed_path)
    .arg("--data-dir")
    .arg(dir.path().join("data"))
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .kill_on_drop(true);
    if mode == Mode::Compat {
        cmd.arg("--upstream-compat");
    }
    let mut child = cmd.spawn().expect("spawn mock");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("mock printed its address within 30 s")
        .expect("read stdout")
        .expect("a line");
    let base = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    MockProcess {
        child,
        base,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stage_timers_run_scaled_and_every_accepted_put_restarts_them() {
    const KEPT: &str = "0a5e0b20-0000-4000-8000-000000000007";
    const ECHO: &str = "0a5e0b20-0000-4000-8000-000000000008";
    const BOOTED: &str = "0a5e0b20-0000-4000-8000-000000000009";
    // 600x: Rebooting's 40 min is 4 s, Configuring's 60 min 6 s: a note
    // every 250 ms keeps a host alive with a 24-fold margin.
    for mode in BOTH {
        let mut seed = seed();
        let hosts = seed["hosts"].as_array_mut().expect("hosts");
        for (id, stage) in [
            (KEPT, "Configuring"),
            (ECHO, "Configuring"),
            (BOOTED, "Rebooting"),
        ] {
            hosts.push(
                json!({"id": id, "infra_env_id": E, "cluster_id": C, "role": "master",
                              "status": "installing-in-progress", "current_stage": stage}),
            );
        }
        let mut p = spawn_mock_binary(mode, "600", &seed).await;
        let base = p.base.clone();
        if mode == Mode::Enhanced {
            assert_eq!(
                put_progress(&base, E, BOOTED, LOCAL_IGN, "").await.status,
                200
            );
        }
        // For 8 s or more (past every timeout in play): KEPT gets a new note every
        // 250 ms, ECHO the same body again and again (200, but no change).
        let started = Instant::now();
        for i in 0..32 {
            assert_eq!(
                put_progress(&base, E, KEPT, "Configuring", &format!("note {i}"))
                    .await
                    .status,
                200
            );
            assert_eq!(
                put_progress(&base, E, ECHO, "Configuring", "same")
                    .await
                    .status,
                200
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert!(started.elapsed() >= Duration::from_secs(8));
        let kept = state_host(&base, KEPT).await;
        assert_eq!(
            kept["status"], "installing-in-progress",
            "{mode:?}: kept alive by notes: {kept}"
        );
        let echo = state_host(&base, ECHO).await;
        assert_eq!(
            echo["status"], "error",
            "{mode:?}: identical PUTs restart nothing: {echo}"
        );
        assert_eq!(
            echo["status_info"],
            "Host failed to install because its installation stage Configuring took longer than expected 1h0m0s"
        );
        let worker = state_host(&base, WORKER).await;
        assert_eq!(
            worker["status"], "installing-pending-user-action",
            "{mode:?}: {worker}"
        );
        assert_eq!(worker["current_stage"], "Rebooting");
        assert!(worker["stage_timed_out"].as_bool().unwrap_or(false));
        let master = state_host(&base, MASTER).await;
        assert_eq!(master["status"], "error", "{mode:?}: {master}");
        let booted = state_host(&base, BOOTED).await;
        match mode {
            // The boot stage times out like any stage: to error.
            Mode::Enhanced => assert_eq!(
                (booted["current_stage"].as_str(), booted["status"].as_str()),
                (Some(LOCAL_IGN), Some("error")),
                "{booted}"
            ),
            Mode::Compat => assert_eq!(booted["status"], "installing-pending-user-action"),
        }
        // Hosts not installing-in-progress are left alone.
        assert_eq!(state_host(&base, FRESH).await["status"], "installing");
        assert_eq!(
            state_host(&base, PENDING).await["status"],
            "installing-pending-user-action"
        );
        // Once the notes stop, KEPT times out too (bounded wait).
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let kept = state_host(&base, KEPT).await;
            if kept["status"] == "error" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{mode:?}: KEPT never timed out: {kept}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A timed-out host refuses stage changes but still takes a note.
        assert_eq!(put_progress(&base, E, KEPT, "Joined", "").await.status, 409);
        let _ = p.child.kill().await;
    }
}

// ---------------------------------------------------------------------------
// The real reporter against today's service: few PUTs, so the timers work

/// `src/agent/progress.rs` `MAX_PROGRESS_PUTS_PER_BOOT`, as docs/design.md documents
/// it (the reporter's quiet-PUT rule, issue 11 point 5).
const DOCUMENTED_MAX_PROGRESS_PUTS_PER_BOOT: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reporter_on_todays_service_leaves_the_stage_timer_to_fire() {
    let sc = Scenario::new("compat-timers");
    // 900x: Configuring's 60 min is 4 s; the reporter runs for 12 s.
    let seed = sc.seed(&crate::common::HostSeed::at(
        "Configuring",
        "installing-in-progress",
    ));
    let mut config = MockConfig::new(
        Seed::from_json(&seed.to_string()).expect("seed"),
        sc.data_dir.clone(),
    );
    config.upstream_compat = true;
    config.time_scale = 900.0;
    let mock = MockServer::start("127.0.0.1:0", config)
        .await
        .expect("mock");
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    let started = Instant::now();
    let running = sc.spawn_agent(
        "compat, stuck in Configuring",
        &crate::common::AgentOpts {
            timeout: Some("12s"),
            ..crate::common::AgentOpts::default()
        },
    );
    // Watch the mock's timer while the reporter runs and after (bounded, and
    // within the harness's 30 s deadline for the run). With at most a few
    // PUTs, the last one restarts the 4 s timer at the latest near the end
    // of the 12 s budget.
    let mut timed_out_after = None;
    while started.elapsed() < Duration::from_secs(28) {
        let h = state_host(&base, crate::common::HOST_ID).await;
        if h["status"] == "error" {
            timed_out_after = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let run = sc.wait_agent(running).await;
    run.assert_code(0);

    let requests = crate::common::api_requests(&base).await;
    let puts = crate::common::progress_puts(&requests);
    let accepted = puts.iter().filter(|r| r["status"] == 200).count();
    eprintln!(
        "reporter sent {} progress PUTs ({accepted} accepted); host timed out after {timed_out_after:?}",
        puts.len()
    );
    assert!(
        puts.len() <= DOCUMENTED_MAX_PROGRESS_PUTS_PER_BOOT,
        "{} progress PUTs in one boot, more than the documented {DOCUMENTED_MAX_PROGRESS_PUTS_PER_BOOT}: {puts:?}",
        puts.len()
    );
    let h = state_host(&base, crate::common::HOST_ID).await;
    assert!(
        timed_out_after.is_some(),
        "the reporter kept upstream's stage timer from firing: {h}"
    );
    assert_eq!(h["current_stage"], "Configuring", "{h}");
    assert_eq!(
        h["status_info"],
        "Host failed to install because its installation stage Configuring took longer than expected 1h0m0s"
    );
    sc.final_checks(Some(&base)).await;
    mock.shutdown().await;
}
