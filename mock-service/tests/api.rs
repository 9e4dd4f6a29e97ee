//! End-to-end tests of the mock over real HTTP on an ephemeral port.

use std::time::{Duration, Instant};

use mock_assisted_service::{MockConfig, MockServer, Seed};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

const CLUSTER: &str = "11111111-1111-1111-1111-111111111111";
const INFRA_ENV: &str = "22222222-2222-2222-2222-222222222222";
const MASTER: &str = "33333333-3333-3333-3333-333333333333";
const WORKER: &str = "44444444-4444-4444-4444-444444444444";
const UNBOUND: &str = "55555555-5555-5555-5555-555555555555";
const AGENT: &str = "secret-token-value";
const USER: &str = "user-token-value";

fn seed_json() -> Value {
    json!({
        "agent_token": AGENT,
        "user_token": USER,
        "clusters": [{"id": CLUSTER, "name": "demo", "openshift_version": "4.17"}],
        "infra_envs": [{"id": INFRA_ENV, "cluster_id": CLUSTER, "name": "demo-infra-env"}],
        "hosts": [
            {"id": MASTER, "infra_env_id": INFRA_ENV, "cluster_id": CLUSTER,
             "requested_hostname": "master-0", "role": "master", "bootstrap": false,
             "status": "installing-in-progress", "current_stage": "Rebooting"},
            {"id": WORKER, "infra_env_id": INFRA_ENV, "cluster_id": CLUSTER,
             "requested_hostname": "worker-0", "role": "worker",
             "status": "installing-in-progress", "current_stage": "Rebooting"},
            {"id": UNBOUND, "infra_env_id": INFRA_ENV, "cluster_id": null,
             "requested_hostname": "spare", "role": "auto-assign", "status": "known"}
        ]
    })
}

struct Env {
    server: MockServer,
    client: Client,
    _dir: tempfile::TempDir,
}

impl Env {
    #[allow(clippy::disallowed_methods)] // the mock on loopback, by address: no name to resolve
    async fn start(seed: Value, configure: impl FnOnce(&mut MockConfig)) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let seed: Seed = serde_json::from_value(seed).unwrap();
        let mut config = MockConfig::new(seed, dir.path());
        configure(&mut config);
        let server = MockServer::start("127.0.0.1:0", config).await.unwrap();
        Env {
            server,
            client: Client::new(),
            _dir: dir,
        }
    }

    async fn enhanced() -> Env {
        Env::start(seed_json(), |_| {}).await
    }

    fn api(&self, path: &str) -> String {
        format!("{}/api/assisted-install/v2{path}", self.server.base_url())
    }

    fn admin(&self, path: &str) -> String {
        format!("{}/admin{path}", self.server.base_url())
    }

    async fn progress(&self, host: &str, stage: &str, info: &str) -> reqwest::Response {
        self.client
            .put(self.api(&format!("/infra-envs/{INFRA_ENV}/hosts/{host}/progress")))
            .header("X-Secret-Key", AGENT)
            .json(&json!({"current_stage": stage, "progress_info": info}))
            .send()
            .await
            .unwrap()
    }

    async fn upload(&self, host: &str, logs_type: &str, data: Vec<u8>) -> reqwest::Response {
        let form = reqwest::multipart::Form::new().part(
            "upfile",
            reqwest::multipart::Part::bytes(data).file_name("logs.tar.gz"),
        );
        self.client
            .post(self.api(&format!("/clusters/{CLUSTER}/logs")))
            .query(&[
                ("logs_type", logs_type),
                ("host_id", host),
                ("infra_env_id", INFRA_ENV),
            ])
            .header("X-Secret-Key", AGENT)
            .multipart(form)
            .send()
            .await
            .unwrap()
    }

    async fn state(&self) -> Value {
        self.client
            .get(self.admin("/state"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn host_state(&self, id: &str) -> Value {
        self.state().await["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .cloned()
            .unwrap()
    }

    async fn fault(&self, fault: Value) {
        let r = self
            .client
            .post(self.admin("/faults"))
            .json(&fault)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
    }

    async fn requests(&self) -> Vec<Value> {
        self.client
            .get(self.admin("/requests"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(enc);
    for (name, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, *data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

fn listed_files(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[tokio::test]
async fn agent_token_on_single_host_get_is_401_user_token_is_200() {
    let env = Env::enhanced().await;
    let url = env.api(&format!("/infra-envs/{INFRA_ENV}/hosts/{MASTER}"));
    let r = env
        .client
        .get(&url)
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], 401);
    // userAuth is the route's only scheme: no credential it reads, so
    // go-openapi's own answer.
    assert_eq!(body["message"], "unauthenticated for invalid credentials");

    let r = env.client.get(&url).bearer_auth(USER).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let host: Value = r.json().await.unwrap();
    assert_eq!(host["id"], MASTER);
    assert_eq!(
        host["href"],
        format!("/api/assisted-install/v2/infra-envs/{INFRA_ENV}/hosts/{MASTER}")
    );
}

#[tokio::test]
async fn list_hosts_with_agent_auth() {
    let env = Env::enhanced().await;
    let url = env.api(&format!("/infra-envs/{INFRA_ENV}/hosts"));
    let r = env
        .client
        .get(&url)
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let hosts: Vec<Value> = r.json().await.unwrap();
    assert_eq!(hosts.len(), 3);
    let master = hosts.iter().find(|h| h["id"] == MASTER).unwrap();
    assert_eq!(master["kind"], "Host");
    assert_eq!(master["cluster_id"], CLUSTER);
    assert_eq!(master["role"], "master");
    // `omitempty` upstream: false is absent.
    assert!(master.get("bootstrap").is_none(), "{master}");
    assert_eq!(master["status"], "installing-in-progress");
    assert_eq!(master["progress"]["current_stage"], "Rebooting");
    assert_eq!(master["progress"]["installation_percentage"], 50);
    assert!(master["progress"]["stage_started_at"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    assert_eq!(master["progress_stages"][5], "Booted with local ignition");
    assert_eq!(
        master["progress_stages"][7],
        "Booted with control plane ignition"
    );
    let unbound = hosts.iter().find(|h| h["id"] == UNBOUND).unwrap();
    assert!(unbound.get("cluster_id").is_none());

    // Cluster listing leaves out the host that is not in the cluster.
    let r = env
        .client
        .get(env.api(&format!("/clusters/{CLUSTER}/hosts")))
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    let hosts: Vec<Value> = r.json().await.unwrap();
    assert_eq!(hosts.len(), 2);

    let r = env.client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = env
        .client
        .get(&url)
        .header("X-Secret-Key", "wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = env
        .client
        .get(env.api(&format!("/infra-envs/{CLUSTER}/hosts")))
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "404");
    assert_eq!(body["kind"], "Error");
}

#[tokio::test]
async fn no_agent_token_means_agent_auth_disabled() {
    let mut seed = seed_json();
    seed["agent_token"] = Value::Null;
    let env = Env::start(seed, |_| {}).await;
    let r = env
        .client
        .get(env.api(&format!("/infra-envs/{INFRA_ENV}/hosts")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = env
        .client
        .put(env.api(&format!("/infra-envs/{INFRA_ENV}/hosts/{MASTER}/progress")))
        .header("X-Secret-Key", "anything")
        .json(&json!({"current_stage": "Booted with local ignition"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn forward_only_rule_gives_409_with_exact_reason() {
    let env = Env::enhanced().await;
    let r = env.progress(MASTER, "Configuring", "").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.bytes().await.unwrap().is_empty());
    let r = env
        .progress(MASTER, "Booted with local ignition", "late")
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body,
        json!({
            "code": "409", "href": "", "id": 409, "kind": "Error",
            "reason": "Can't assign lower stage \"Booted with local ignition\" after host has been in stage \"Configuring\""
        })
    );
    // A stage outside the master's list is a 409 too.
    let r = env.progress(MASTER, "Waiting for ignition", "").await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let body: Value = r.json().await.unwrap();
    assert!(body["reason"]
        .as_str()
        .unwrap()
        .contains("isn't available for host role master"));
    let host = env.host_state(MASTER).await;
    assert_eq!(host["current_stage"], "Configuring");
}

#[tokio::test]
async fn unknown_stage_is_400_with_enum_message() {
    let env = Env::enhanced().await;
    let r = env.progress(MASTER, "Dancing", "").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], 400);
    assert_eq!(
        body["message"],
        "current_stage in body should be one of [Starting installation Waiting for control plane \
         Waiting for bootkube Waiting for controller Installing Writing image to disk Copying \
         registry data to disk Rebooting Booted with local ignition Waiting for ignition \
         Configuring Booted with control plane ignition Joined Done Failed]"
    );
}

#[tokio::test]
async fn host_errors_unbound_400_unknown_404() {
    let env = Env::enhanced().await;
    let r = env.progress(UNBOUND, "Installing", "").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "400");
    let r = env
        .progress("66666666-6666-6666-6666-666666666666", "Installing", "")
        .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn same_stage_new_info_is_accepted_even_when_installed() {
    let env = Env::enhanced().await;
    let r = env
        .progress(MASTER, "Booted with local ignition", "a")
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let before = env.host_state(MASTER).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let r = env
        .progress(MASTER, "Booted with local ignition", "b")
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let after = env.host_state(MASTER).await;
    assert_eq!(after["progress_info"], "b");
    assert_eq!(after["stage_started_at"], before["stage_started_at"]);
    assert_ne!(after["stage_updated_at"], before["stage_updated_at"]);
    // Same stage and same info changes nothing; new info refreshes the
    // current history row instead of adding one.
    let r = env
        .progress(MASTER, "Booted with local ignition", "b")
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let history = env.host_state(MASTER).await["stage_history"].clone();
    let stages: Vec<(&str, &str)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["stage"].as_str().unwrap(),
                e["progress_info"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        stages,
        [("Rebooting", ""), ("Booted with local ignition", "b")]
    );

    // Installed: new info within Done is still taken, status unchanged.
    let r = env
        .client
        .post(env.admin(&format!("/hosts/{MASTER}/stage")))
        .json(&json!({"current_stage": "Done"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = env.progress(MASTER, "Done", "later detail").await;
    assert_eq!(r.status(), StatusCode::OK);
    let host = env.host_state(MASTER).await;
    assert_eq!(host["status"], "installed");
    assert_eq!(host["progress_info"], "later detail");
}

#[tokio::test]
async fn stage_change_needs_installing_status() {
    let mut seed = seed_json();
    seed["hosts"][0]["status"] = json!("installing-pending-user-action");
    seed["hosts"][1]["status"] = json!("known");
    let env = Env::start(seed, |_| {}).await;
    let r = env.progress(WORKER, "Booted with local ignition", "").await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let body: Value = r.json().await.unwrap();
    assert!(body["reason"].as_str().unwrap().contains("status <known>"));
    assert_eq!(env.host_state(WORKER).await["current_stage"], "Rebooting");
    let r = env.progress(MASTER, "Booted with local ignition", "").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        env.host_state(MASTER).await["status"],
        "installing-in-progress"
    );
}

#[tokio::test]
async fn failed_goes_to_error_done_to_installed() {
    let env = Env::enhanced().await;
    assert_eq!(
        env.progress(WORKER, "Failed", "disk gone").await.status(),
        StatusCode::OK
    );
    let w = env.host_state(WORKER).await;
    assert_eq!(w["status"], "error");
    // Upstream keeps the last progress: Failed changes only the status.
    assert_eq!(w["current_stage"], "Rebooting");
    assert_eq!(w["status_info"], "Failed - disk gone");
    // From error no stage change is allowed.
    assert_eq!(
        env.progress(WORKER, "Configuring", "").await.status(),
        StatusCode::CONFLICT
    );

    for stage in [
        "Booted with local ignition",
        "Configuring",
        "Booted with control plane ignition",
        "Joined",
        "Done",
    ] {
        assert_eq!(
            env.progress(MASTER, stage, "").await.status(),
            StatusCode::OK,
            "{stage}"
        );
    }
    let m = env.host_state(MASTER).await;
    assert_eq!(m["status"], "installed");
    let r = env
        .client
        .get(env.api(&format!("/infra-envs/{INFRA_ENV}/hosts/{MASTER}")))
        .bearer_auth(USER)
        .send()
        .await
        .unwrap();
    let host: Value = r.json().await.unwrap();
    assert_eq!(host["progress"]["installation_percentage"], 100);
    assert_eq!(host["status_info"], "Done");
}

#[tokio::test]
async fn upload_then_reupload_replaces_and_download_serves_it() {
    let env = Env::enhanced().await;
    let first = tar_gz(&[("journal.txt", b"boot 1")]);
    let r = env.upload(MASTER, "host_boot", first).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let second = tar_gz(&[("journal.txt", b"boot 1 and 2"), ("ip-a.txt", b"lo")]);
    let r = env.upload(MASTER, "host_boot", second.clone()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // A different type is stored apart.
    let r = env.upload(MASTER, "host", b"not a tarball".to_vec()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);

    let host = env.host_state(MASTER).await;
    let bundles = host["bundles"].as_array().unwrap();
    assert_eq!(bundles.len(), 2);
    let boot = bundles
        .iter()
        .find(|b| b["logs_type"] == "host_boot")
        .unwrap();
    assert_eq!(boot["uploads"], 2);
    assert_eq!(boot["size"], second.len());
    assert_eq!(boot["valid"], true);
    assert_eq!(boot["members"], json!(["journal.txt", "ip-a.txt"]));
    let path = boot["path"].as_str().unwrap();
    assert_eq!(std::fs::read(path).unwrap(), second);
    let host_logs = bundles.iter().find(|b| b["logs_type"] == "host").unwrap();
    assert_eq!(host_logs["valid"], false);
    assert_eq!(host_logs["uploads"], 1);
    // Only the final files remain: no temp leftovers.
    let dir = std::path::Path::new(path).parent().unwrap();
    let mut files = listed_files(dir);
    files.sort();
    assert_eq!(files, ["host.tar.gz", "host_boot.tar.gz"]);

    let url = env.api(&format!("/clusters/{CLUSTER}/logs"));
    let q = [("logs_type", "host_boot"), ("host_id", MASTER)];
    let r = env
        .client
        .get(&url)
        .query(&q)
        .bearer_auth(USER)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment; filename="));
    assert_eq!(r.bytes().await.unwrap().as_ref(), second.as_slice());
    let r = env
        .client
        .get(&url)
        .query(&[
            ("logs_type", "host_boot"),
            ("host_id", MASTER),
            ("api_key", USER),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = env
        .client
        .get(&url)
        .query(&q)
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = env
        .client
        .get(&url)
        .query(&[("logs_type", "host_boot"), ("host_id", WORKER)])
        .bearer_auth(USER)
        .send()
        .await
        .unwrap();
    // No boot logs for that host yet: 409, as upstream answers for host logs.
    assert_eq!(r.status(), StatusCode::CONFLICT);
    // The page's unauthenticated download link serves the same file.
    let r = env
        .client
        .get(env.admin(&format!("/bundles/{CLUSTER}/{MASTER}/host_boot")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), second.as_slice());
    // The journal never stores credentials.
    let journal = serde_json::to_string(&env.requests().await).unwrap();
    assert!(!journal.contains(USER) && !journal.contains(AGENT));
    assert!(journal.contains("api_key=REDACTED"));
}

#[tokio::test]
async fn bad_logs_type_missing_upfile_unknown_host() {
    let env = Env::enhanced().await;
    let r = env.upload(MASTER, "node-boot", tar_gz(&[])).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body,
        json!({"code": 400, "message": "logs_type in query should be one of [host controller host_boot]"})
    );
    let form = reqwest::multipart::Form::new().text("other", "x");
    let r = env
        .client
        .post(env.api(&format!("/clusters/{CLUSTER}/logs")))
        .query(&[("logs_type", "host"), ("host_id", MASTER)])
        .header("X-Secret-Key", AGENT)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert!(body["reason"].as_str().unwrap().contains("upfile"));
    let r = env.upload(UNBOUND, "host", tar_gz(&[])).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(env.host_state(MASTER).await["bundles"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn upstream_compat_rejects_new_stages_and_host_boot() {
    let env = Env::start(seed_json(), |c| c.upstream_compat = true).await;
    let r = env.progress(MASTER, "Booted with local ignition", "").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    let msg = body["message"].as_str().unwrap();
    assert!(msg.starts_with("current_stage in body should be one of [Starting installation"));
    assert!(!msg.contains("Booted"));
    let r = env.upload(MASTER, "host_boot", tar_gz(&[])).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["message"],
        "logs_type in query should be one of [host controller]"
    );
    // The upstream path still works.
    assert_eq!(
        env.progress(MASTER, "Configuring", "").await.status(),
        StatusCode::OK
    );
    assert_eq!(
        env.upload(MASTER, "host", tar_gz(&[("a", b"b")]))
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    let r = env
        .client
        .get(env.api(&format!("/infra-envs/{INFRA_ENV}/hosts")))
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    let hosts: Vec<Value> = r.json().await.unwrap();
    let master = hosts.iter().find(|h| h["id"] == MASTER).unwrap();
    assert_eq!(
        master["progress_stages"],
        json!([
            "Starting installation",
            "Installing",
            "Writing image to disk",
            "Copying registry data to disk",
            "Rebooting",
            "Configuring",
            "Joined",
            "Done"
        ])
    );
}

#[tokio::test]
async fn fault_503_twice_then_success() {
    let env = Env::enhanced().await;
    env.fault(
        json!({"endpoint": "update_progress", "status": 503, "times": 2, "retry_after": "2"}),
    )
    .await;
    // Faults only hit their endpoint.
    let r = env
        .client
        .get(env.api(&format!("/infra-envs/{INFRA_ENV}/hosts")))
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    for _ in 0..2 {
        let r = env.progress(MASTER, "Booted with local ignition", "").await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()["retry-after"], "2");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], "503");
    }
    assert_eq!(env.host_state(MASTER).await["current_stage"], "Rebooting");
    let r = env.progress(MASTER, "Booted with local ignition", "").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        env.host_state(MASTER).await["current_stage"],
        "Booted with local ignition"
    );
    let journal = env.requests().await;
    let faults: Vec<bool> = journal
        .iter()
        .map(|r| r["fault"].as_bool().unwrap())
        .collect();
    assert_eq!(faults, [false, true, true, false]);
    assert_eq!(journal[1]["status"], 503);
    assert_eq!(journal[1]["auth"], "agent");
    assert_eq!(journal[3]["method"], "PUT");
    assert!(journal[3]["body_bytes"].as_u64().unwrap() > 0);
    let r = env
        .client
        .delete(env.admin("/requests"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert!(env.requests().await.is_empty());
}

#[tokio::test]
async fn fault_delay_and_custom_body() {
    let env = Env::enhanced().await;
    env.fault(json!({"endpoint": "list_hosts", "delay_ms": 300}))
        .await;
    env.fault(json!({"endpoint": "any", "status": 502, "body": "<html>bad gateway</html>"}))
        .await;
    let url = env.api(&format!("/infra-envs/{INFRA_ENV}/hosts"));
    let started = Instant::now();
    let r = env
        .client
        .get(&url)
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(r.status(), StatusCode::OK);
    let r = env
        .client
        .get(&url)
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(r.text().await.unwrap(), "<html>bad gateway</html>");
    let r = env
        .client
        .get(&url)
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let journal = env.requests().await;
    assert!(journal[0]["duration_ms"].as_u64().unwrap() >= 300);
}

#[tokio::test]
async fn fault_drop_connection_keeps_previous_bundle() {
    let env = Env::enhanced().await;
    let good = tar_gz(&[("journal.txt", b"first")]);
    assert_eq!(
        env.upload(MASTER, "host_boot", good.clone()).await.status(),
        StatusCode::NO_CONTENT
    );

    env.fault(json!({"endpoint": "list_hosts", "drop_connection": true}))
        .await;
    let err = env
        .client
        .get(env.api(&format!("/infra-envs/{INFRA_ENV}/hosts")))
        .header("X-Secret-Key", AGENT)
        .send()
        .await
        .unwrap_err();
    assert!(!err.is_status(), "{err}");

    env.fault(json!({"endpoint": "upload_logs", "drop_connection": true}))
        .await;
    let form = reqwest::multipart::Form::new().part(
        "upfile",
        reqwest::multipart::Part::bytes(vec![7u8; 1 << 20]).file_name("logs.tar.gz"),
    );
    let res = env
        .client
        .post(env.api(&format!("/clusters/{CLUSTER}/logs")))
        .query(&[("logs_type", "host_boot"), ("host_id", MASTER)])
        .header("X-Secret-Key", AGENT)
        .multipart(form)
        .send()
        .await;
    assert!(res.is_err(), "{res:?}");

    let host = env.host_state(MASTER).await;
    let b = &host["bundles"][0];
    assert_eq!(b["uploads"], 1);
    assert_eq!(std::fs::read(b["path"].as_str().unwrap()).unwrap(), good);
    let journal = env.requests().await;
    let dropped: Vec<&Value> = journal.iter().filter(|r| r["fault"] == true).collect();
    assert_eq!(dropped.len(), 2);
    assert!(dropped.iter().all(|r| r["status"] == 0));
    // The server still answers on new connections.
    assert_eq!(
        env.progress(MASTER, "Configuring", "").await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn oversize_upload_is_400_and_keeps_previous_bundle() {
    let env = Env::start(seed_json(), |c| c.max_upload_bytes = 1000).await;
    let good = tar_gz(&[("journal.txt", b"small")]);
    assert!(good.len() <= 1000);
    assert_eq!(
        env.upload(MASTER, "host_boot", good.clone()).await.status(),
        StatusCode::NO_CONTENT
    );
    let r = env.upload(MASTER, "host_boot", vec![1u8; 1001]).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "400");
    assert!(body["reason"].as_str().unwrap().contains("1000 bytes"));
    let b = env.host_state(MASTER).await["bundles"][0].clone();
    assert_eq!(b["uploads"], 1);
    let path = std::path::PathBuf::from(b["path"].as_str().unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), good);
    assert_eq!(listed_files(path.parent().unwrap()), ["host_boot.tar.gz"]);
    // Exactly at the limit is fine.
    assert_eq!(
        env.upload(MASTER, "host_boot", vec![2u8; 1000])
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn admin_seed_and_stage_bypass_forward_rule() {
    let env = Env::start(json!({}), |_| {}).await;
    assert!(env.state().await["hosts"].as_array().unwrap().is_empty());
    let r = env
        .client
        .post(env.admin("/seed"))
        .json(&json!({"clusters": [], "bogus": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = env
        .client
        .post(env.admin("/seed"))
        .json(&seed_json())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        env.progress(WORKER, "Configuring", "").await.status(),
        StatusCode::OK
    );
    let r = env
        .client
        .post(env.admin(&format!("/hosts/{WORKER}/stage")))
        .json(&json!({"current_stage": "Rebooting", "status": "installing-pending-user-action", "progress_info": "timeout"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let w = env.host_state(WORKER).await;
    assert_eq!(w["current_stage"], "Rebooting");
    assert_eq!(w["status"], "installing-pending-user-action");
    assert_eq!(w["stage_history"].as_array().unwrap().len(), 3);
    let r = env
        .client
        .post(env.admin(&format!("/hosts/{WORKER}/stage")))
        .json(&json!({"current_stage": "Nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);

    // What the page draws the worker from.
    let worker = env.host_state(WORKER).await;
    assert_eq!(worker["status"], "installing-pending-user-action");
    assert_eq!(worker["progress_stages"].as_array().unwrap().len(), 11);
    assert_eq!(
        env.state().await["new_stages"],
        json!([
            "Booted with local ignition",
            "Booted with control plane ignition"
        ])
    );
}

#[tokio::test]
async fn page_shell_and_its_embedded_assets() {
    let env = Env::enhanced().await;
    let get = |path: &str| {
        env.client
            .get(format!("{}{path}", env.server.base_url()))
            .send()
    };
    let page = get("/").await.unwrap();
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let page = page.text().await.unwrap();
    assert!(page.contains(r#"<script src="/assets/app.js""#));
    for (path, ctype) in [
        ("/assets/app.js", "text/javascript; charset=utf-8"),
        ("/assets/app.css", "text/css; charset=utf-8"),
    ] {
        let r = get(path).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(r.headers()["content-type"], ctype);
        assert!(!r.text().await.unwrap().is_empty());
    }
}

const BOOTKUBE_RECORDS: &[u8] =
    include_bytes!("../../tests/fixtures/root/var/log/openshift/bootkube.json");

#[tokio::test]
async fn bundle_browser_routes_read_the_stored_archive() {
    let env = Env::enhanced().await;
    let journal = "line\n".repeat(200_000);
    let manifest = br#"{"format_version":1,"collectors":[{"name":"records","status":"ok"}]}"#;
    let bundle = tar_gz(&[
        ("host_boot/records/bootkube.json", BOOTKUBE_RECORDS),
        ("host_boot/records/empty.json", b""),
        ("host_boot/journal/this-boot.log", journal.as_bytes()),
        ("host_boot/system/boot_id", b"\x00\xffbinary"),
        ("host_boot/manifest.json", manifest),
    ]);
    assert_eq!(
        env.upload(MASTER, "host_boot", bundle).await.status(),
        StatusCode::NO_CONTENT
    );
    let base = env.admin(&format!("/bundles/{CLUSTER}/{MASTER}/host_boot"));
    let get = |suffix: &str| env.client.get(format!("{base}{suffix}")).send();

    let members: Value = get("/members").await.unwrap().json().await.unwrap();
    assert_eq!(members["incomplete"], false);
    assert_eq!(
        members["members"][2]["path"],
        "host_boot/journal/this-boot.log"
    );
    assert_eq!(members["members"][2]["size"], 1_000_000);
    assert_eq!(members["members"][2]["kind"], "file");

    let text: Value = get("/member?path=host_boot/journal/this-boot.log")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(text["truncated"], true);
    assert_eq!(text["text"].as_str().unwrap().len(), 512 * 1024);
    let binary: Value = get("/member?path=host_boot/system/boot_id")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (binary["binary"].as_bool(), binary["size"].as_u64()),
        (Some(true), Some(8))
    );
    let missing = get("/member?path=host_boot/nope").await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        get("/member").await.unwrap().status(),
        StatusCode::BAD_REQUEST
    );

    let m: Value = get("/manifest").await.unwrap().json().await.unwrap();
    assert_eq!(m["collectors"][0]["name"], "records");

    let t: Value = get("/timeline").await.unwrap().json().await.unwrap();
    assert_eq!(t["source"], "records");
    let services: Vec<&str> = t["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(services, ["bootkube", "empty"]);
    let failed: Vec<&Value> = t["services"][0]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["result"] == "failure")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["name"], "mco-bootstrap");
    assert_eq!(
        failed[0]["errorLine"],
        "147 main /usr/local/bin/bootkube.sh"
    );
    assert_eq!(t["services"][1]["error"], "empty file");

    // Unknown bundles and keys.
    let other = env.admin(&format!("/bundles/{CLUSTER}/{WORKER}/host_boot/timeline"));
    let r = env.client.get(other).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let bad = env.admin(&format!("/bundles/{CLUSTER}/not-a-uuid/host_boot/members"));
    assert_eq!(
        env.client.get(bad).send().await.unwrap().status(),
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn bundle_browser_refuses_what_is_not_a_tar_gz() {
    let env = Env::enhanced().await;
    env.upload(MASTER, "host", b"plain text, not an archive".to_vec())
        .await;
    let r = env
        .client
        .get(env.admin(&format!("/bundles/{CLUSTER}/{MASTER}/host/members")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = r.json().await.unwrap();
    assert!(body["reason"]
        .as_str()
        .unwrap()
        .starts_with("not a readable gzip tar"));
}

#[tokio::test]
async fn journal_keeps_json_bodies_and_multipart_field_names() {
    let env = Env::enhanced().await;
    env.progress(MASTER, "Booted with local ignition", "boot 1")
        .await;
    env.upload(MASTER, "host_boot", tar_gz(&[("a", b"b")]))
        .await;
    let journal = env.requests().await;
    assert_eq!(journal[0]["content_type"], "application/json");
    assert_eq!(
        journal[0]["body"],
        json!({"current_stage": "Booted with local ignition", "progress_info": "boot 1"})
    );
    assert!(journal[1]["content_type"]
        .as_str()
        .unwrap()
        .starts_with("multipart/form-data; boundary="));
    assert!(journal[1].get("body").is_none());
    assert_eq!(journal[1]["form_fields"], json!(["upfile"]));
    assert!(journal[1]["query"]
        .as_str()
        .unwrap()
        .contains("logs_type=host_boot"));
}

#[tokio::test]
async fn shutdown_stops_listening() {
    let env = Env::enhanced().await;
    let url = env.api(&format!("/infra-envs/{INFRA_ENV}/hosts"));
    let Env {
        server,
        client,
        _dir,
    } = env;
    server.shutdown().await;
    assert!(client.get(&url).send().await.is_err());
}

#[test]
fn binary_prints_listening_line() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mock-assisted-service"))
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://127.0.0.1:")
        .unwrap();
    assert!(addr.parse::<u16>().unwrap() > 0, "{line}");
}

/// A host_boot bundle holding a manifest with `headline` and a diagnosis
/// with `findings` (category, key, severity).
fn diagnosed_bundle(headline: &str, findings: &[(&str, &str, &str)]) -> Vec<u8> {
    let manifest = json!({"format_version": 1, "diagnosis": {"headline": headline}});
    let findings: Vec<Value> = findings
        .iter()
        .map(|(category, key, severity)| {
            json!({"category": category, "key": key, "severity": severity,
                   "summary": format!("{category} on {key}"), "hint": "look",
                   "occurrences": 1, "evidence": []})
        })
        .collect();
    let diagnosis = json!({"format_version": 1, "findings": findings,
                           "members_scanned": 1, "lines_scanned": 1});
    tar_gz(&[
        ("host_boot/manifest.json", manifest.to_string().as_bytes()),
        ("host_boot/diagnosis.json", diagnosis.to_string().as_bytes()),
    ])
}

#[tokio::test]
async fn cluster_rollup_puts_the_causes_hosts_share_first() {
    let env = Env::enhanced().await;
    let rollup = || async {
        env.client
            .get(env.admin(&format!("/clusters/{CLUSTER}/rollup")))
            .send()
            .await
            .unwrap()
    };
    // Before any upload: a row per host of the cluster, nothing shared.
    let r = rollup().await;
    assert_eq!(r.status(), StatusCode::OK);
    let before: Value = r.json().await.unwrap();
    let names: Vec<&str> = before["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["master-0", "worker-0"], "{before:#}");
    assert_eq!(before["hosts"][0]["bundle"], false);
    assert_eq!(before["shared"], json!([]));

    let master = diagnosed_bundle(
        "/var full",
        &[
            ("disk_full", "/var", "error"),
            ("dns_resolution", "quay.io", "warning"),
        ],
    );
    let worker = diagnosed_bundle(
        "quay.io did not resolve",
        &[
            ("dns_resolution", "quay.io", "error"),
            ("api_unreachable", "api-int:6443", "info"),
        ],
    );
    assert_eq!(
        env.upload(MASTER, "host_boot", master).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        env.upload(WORKER, "host_boot", worker).await.status(),
        StatusCode::NO_CONTENT
    );
    let after: Value = rollup().await.json().await.unwrap();
    let hosts = after["hosts"].as_array().unwrap();
    assert_eq!(hosts[0]["role"], "master");
    assert_eq!(hosts[0]["stage"], "Rebooting");
    assert_eq!(hosts[0]["headline"], "/var full");
    assert_eq!(hosts[1]["headline"], "quay.io did not resolve");
    assert_eq!(hosts[1]["findings"], 2);
    let shared = after["shared"].as_array().unwrap();
    assert_eq!(shared.len(), 1, "{after:#}");
    assert_eq!(shared[0]["category"], "dns_resolution");
    assert_eq!(shared[0]["key"], "quay.io");
    assert_eq!(shared[0]["severity"], "error", "the worst of the two");
    assert_eq!(shared[0]["hosts"], json!([MASTER, WORKER]));

    let unknown = env
        .client
        .get(env.admin(&format!("/clusters/{INFRA_ENV}/rollup")))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}
