//! `assisted-boot-reporter ignition`, run as a user would, its output judged
//! by Ignition itself (Debian's `ignition` 2.14, see `ignition_engine`):
//! every fragment it can write passes `ignition-validate` without a warning,
//! and the real engine, run on a directory as the initramfs runs it on
//! `/sysroot`, writes exactly the binary, unit, preset and discovery contract
//! it was given, with their modes and owners — alone, and appended to a
//! pointer ignition whose `ignition.config.merge` source (the machine config
//! server) the mock serves on loopback. When that source is unreachable,
//! Ignition writes nothing. The fragment also matches Ignition's JSON schema
//! key by key; the pull secret never comes from a flag nor passes a terminal.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

const INFRA_ENV_ID: &str = "5d1e7a3c-9b0f-4e28-8c43-6a2f1b9d7e21";
const HOST_ID: &str = "e3a9c6b1-4f27-4d8e-b1a5-7c0d2e9f3b32";
const CLUSTER_ID: &str = "b8c2f2a4-1d6e-4c55-9a61-0d7e3c1f5a10";
const SERVICE_URL: &str = "https://assisted.example.com:8090";
const TOKEN: &str = "aWduaXRpb24tdGVzdDpTM2NyM3QtenE=";
const CONTRACT_DIR: &str = "/etc/assisted-boot-reporter";

fn agent_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_assisted-boot-reporter"))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pull_secret() -> String {
    format!(
        r#"{{"auths":{{"cloud.openshift.com":{{"auth":"{TOKEN}","email":"t@example.com"}},"quay.io":{{"auth":"cXVheTpvdGhlcg==","email":"t@example.com"}}}}}}"#
    )
}

/// A 64-bit ELF executable header for `machine` without a program
/// interpreter (what a static binary looks like to the ELF check), followed
/// by incompressible-ish bytes so the gzip round trip means something.
fn static_elf(machine: u16, big_endian: bool) -> Vec<u8> {
    let mut d = vec![0u8; 64 + 56];
    d[..4].copy_from_slice(b"\x7fELF");
    d[4] = 2;
    d[5] = if big_endian { 2 } else { 1 };
    d[6] = 1;
    let e16 = |v: u16| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    d[16..18].copy_from_slice(&e16(3));
    d[18..20].copy_from_slice(&e16(machine));
    let phoff: u64 = 64;
    d[32..40].copy_from_slice(&if big_endian {
        phoff.to_be_bytes()
    } else {
        phoff.to_le_bytes()
    });
    d[54..56].copy_from_slice(&e16(56));
    d[56..58].copy_from_slice(&e16(1));
    // PT_LOAD
    d[64..68].copy_from_slice(&if big_endian {
        1u32.to_be_bytes()
    } else {
        1u32.to_le_bytes()
    });
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..200_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Half random, half text-like: compresses, but not to nothing.
        d.push(if i % 2 == 0 {
            x.to_be_bytes()[4]
        } else {
            b"abcdefg"[(i % 7) as usize]
        });
    }
    d
}

struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            tmp: tempfile::Builder::new()
                .prefix("abr-ignition-")
                .tempdir()
                .expect("tempdir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, data).expect("write");
        p
    }

    /// Runs the subcommand with `stdin` piped in (or /dev/null).
    fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut child = Command::new(agent_bin())
            .arg("ignition")
            .args(args)
            .current_dir(self.tmp.path())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        if let Some(data) = stdin {
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(data).expect("write stdin");
        }
        child.wait_with_output().expect("wait")
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn base_args<'a>(binary: &'a str, arch: &'a str) -> Vec<&'a str> {
    vec![
        "--arch",
        arch,
        "--binary",
        binary,
        "--service-url",
        SERVICE_URL,
        "--infra-env-id",
        INFRA_ENV_ID,
        "--host-id",
        HOST_ID,
    ]
}

// ---------------------------------------------------------------------------
// Schema checks

fn schema(version: &str) -> Value {
    let file = format!(
        "tests/fixtures/ignition/ignition-v{}.schema.json",
        version.replace('.', "_")
    );
    let text = std::fs::read_to_string(repo().join(&file)).expect("schema");
    serde_json::from_str(&text).expect("schema parses")
}

fn validate(schema: &Value, instance: &Value) -> Vec<String> {
    let validator = jsonschema::draft4::new(schema).expect("schema compiles");
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let pointer = r
                .strip_prefix('#')
                .expect("only local $ref in Ignition's schema");
            resolve(root, root.pointer(pointer).expect("$ref resolves"))
        }
        None => node,
    }
}

/// The schema node and its `allOf` members, references resolved.
fn parts<'a>(root: &'a Value, node: &'a Value) -> Vec<&'a Value> {
    let node = resolve(root, node);
    let mut out = vec![node];
    for member in node
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(parts(root, member));
    }
    out
}

/// Ignition's schemas do not forbid unknown keys, so a misspelt
/// `compresion` would validate; the spec's parser rejects it. Every key of
/// the fragment must be a property the schema names at that place.
fn unknown_keys(root: &Value, node: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let parts = parts(root, node);
    match value {
        Value::Object(map) => {
            let known: BTreeSet<&str> = parts
                .iter()
                .filter_map(|p| p.get("properties").and_then(Value::as_object))
                .flat_map(|props| props.keys().map(String::as_str))
                .collect();
            for (key, child) in map {
                if !known.contains(key.as_str()) {
                    out.push(format!("{at}/{key}"));
                    continue;
                }
                for p in &parts {
                    if let Some(sub) = p.get("properties").and_then(|props| props.get(key)) {
                        unknown_keys(root, sub, child, &format!("{at}/{key}"), out);
                    }
                }
            }
        }
        Value::Array(items) => {
            for p in &parts {
                if let Some(item_schema) = p.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        unknown_keys(root, item_schema, item, &format!("{at}/{i}"), out);
                    }
                }
            }
        }
        _ => {}
    }
}

/// The fragment for `binary`, with the optional files given, from the
/// subcommand; the pull secret piped in.
fn make_fragment(env: &Env, name: &str, binary: &Path, arch: &str, extra: &[&str]) -> PathBuf {
    let out_path = env.path(name);
    let out_str = out_path.to_string_lossy().into_owned();
    let mut args = base_args(binary.to_str().unwrap(), arch);
    args.extend(extra);
    args.extend(["--pull-secret-file", "-", "--output", &out_str]);
    let out = env.run(&args, Some(pull_secret().as_bytes()));
    assert!(out.status.success(), "{name}: {}", stderr(&out));
    assert!(out.stdout.is_empty(), "--output given, yet stdout has data");
    assert!(
        !stderr(&out).contains(TOKEN),
        "secret on stderr: {}",
        stderr(&out)
    );
    assert_eq!(mode_of(&out_path), 0o600, "the fragment holds the secret");
    out_path
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("read JSON");
    serde_json::from_str(&text).expect("valid JSON")
}

/// Schema check and unknown-key walk (Ignition's schema lets unknown keys
/// through; its parser warns about them, which `ignition-validate` shows).
fn assert_schema_clean(fragment: &Value, what: &str) {
    let schema = schema("3.2");
    let errors = validate(&schema, fragment);
    assert!(errors.is_empty(), "{what}: schema violations: {errors:#?}");
    let mut unknown = Vec::new();
    unknown_keys(&schema, &schema, fragment, "", &mut unknown);
    assert!(
        unknown.is_empty(),
        "{what}: keys the spec does not define: {unknown:?}"
    );
}

/// What the engine must have written under `root` for a fragment made with
/// `--cluster-id` and `--ca-cert`: each file byte for byte, its mode, its
/// owner, the unit, and the unit enabled through Ignition's preset (which
/// systemd applies on the host's first boot).
fn assert_reporter_installed(root: &Path, owner: u32, binary: &[u8], ca: &str) {
    let at = |p: &str| root.join(p.trim_start_matches('/'));
    let check = |path: &str, mode: u32, contents: &[u8]| {
        let p = at(path);
        let meta = std::fs::metadata(&p).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(meta.mode() & 0o7777, mode, "{path}: mode");
        assert_eq!(meta.uid(), owner, "{path}: owner");
        assert_eq!(meta.gid(), owner, "{path}: group");
        assert!(
            std::fs::read(&p).expect("read") == contents,
            "{path}: contents differ from the input"
        );
    };
    check("/usr/local/bin/assisted-boot-reporter", 0o755, binary);
    let dir = std::fs::metadata(at(CONTRACT_DIR)).expect("contract dir");
    assert!(dir.is_dir());
    assert_eq!(dir.mode() & 0o7777, 0o700, "{CONTRACT_DIR}: mode");
    assert_eq!(dir.uid(), owner, "{CONTRACT_DIR}: owner");
    check(
        &format!("{CONTRACT_DIR}/pull-secret"),
        0o600,
        format!("{}\n", pull_secret()).as_bytes(),
    );
    for (name, value) in [
        ("service-url", SERVICE_URL),
        ("infra-env-id", INFRA_ENV_ID),
        ("host-id", HOST_ID),
        ("cluster-id", CLUSTER_ID),
    ] {
        check(
            &format!("{CONTRACT_DIR}/{name}"),
            0o644,
            format!("{value}\n").as_bytes(),
        );
    }
    check(&format!("{CONTRACT_DIR}/ca.crt"), 0o644, ca.as_bytes());
    let unit = std::fs::read(repo().join("systemd/assisted-boot-reporter.service")).expect("unit");
    check(
        "/etc/systemd/system/assisted-boot-reporter.service",
        0o644,
        &unit,
    );
    let preset = std::fs::read_to_string(at("/etc/systemd/system-preset/20-ignition.preset"))
        .expect("Ignition's preset file");
    assert!(
        preset
            .lines()
            .any(|l| l == "enable assisted-boot-reporter.service"),
        "the unit is not enabled by preset: {preset:?}"
    );
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

// ---------------------------------------------------------------------------

/// A form of the fragment: its name, the optional flags, what stdin pipes in.
type Form<'a> = (&'a str, Vec<&'a str>, Option<&'a [u8]>);

/// Every form of the fragment (each architecture; with and without the
/// optional files; pull secret JSON, bare token or none) passes
/// `ignition-validate` without a warning and Ignition's 3.2 schema.
#[test]
fn every_fragment_passes_ignition_validate_and_the_schema() {
    let env = Env::new();
    let ca = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
    let ca_path = env.write("ca.pem", ca.as_bytes());
    let token_path = env.write("token", format!("{TOKEN}\n").as_bytes());
    crate::ignition_engine::require("every_fragment_passes_ignition_validate");
    let secret = pull_secret();
    let mut checked = 0;
    for (arch, machine, be) in [
        ("x86_64", 62, false),
        ("aarch64", 183, false),
        ("ppc64le", 21, false),
        ("s390x", 22, true),
    ] {
        let binary = env.write(&format!("abr-{arch}"), &static_elf(machine, be));
        let optional = [
            "--cluster-id",
            CLUSTER_ID,
            "--ca-cert",
            ca_path.to_str().unwrap(),
        ];
        // (name, extra flags, pull secret piped in)
        let forms: [Form; 3] = [
            ("all", optional.to_vec(), Some(secret.as_bytes())),
            (
                "token",
                vec!["--pull-secret-file", token_path.to_str().unwrap()],
                None,
            ),
            ("no-auth", vec![], None),
        ];
        for (form, extra, stdin) in forms {
            let mut args = base_args(binary.to_str().unwrap(), arch);
            args.extend(&extra);
            if stdin.is_some() {
                args.extend(["--pull-secret-file", "-"]);
            }
            let out = env.run(&args, stdin);
            assert!(out.status.success(), "{arch}/{form}: {}", stderr(&out));
            let fragment: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
            assert_eq!(fragment["ignition"]["version"], "3.2.0", "{arch}/{form}");
            assert_schema_clean(&fragment, &format!("{arch}/{form}"));
            let path = env.write(&format!("{arch}-{form}.ign"), &out.stdout);
            crate::ignition_engine::validate(&path)
                .unwrap_or_else(|e| panic!("{arch}/{form}: ignition-validate: {e}"));
            checked += 1;
        }
    }
    assert_eq!(checked, 12);

    // 3.4 is not offered (docs/install.md says why); Ignition 2.14, which
    // RHCOS 4.10-4.12 carry a version of, refuses a 3.4.0 config.
    let binary = env.write("abr", &static_elf(183, false));
    let mut args = base_args(binary.to_str().unwrap(), "aarch64");
    args.extend(["--spec", "3.4"]);
    let out = env.run(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = env.run(&base_args(binary.to_str().unwrap(), "aarch64"), None);
    let mut fragment: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    fragment["ignition"]["version"] = json!("3.4.0");
    let path = env.write("v3_4.ign", fragment.to_string().as_bytes());
    let err = crate::ignition_engine::validate(&path).expect_err("Ignition 2.14 accepted 3.4.0");
    assert!(err.contains("unsupported config version"), "{err}");
}

/// The fragment alone, applied by the real engine: everything lands as given.
#[test]
fn ignition_writes_the_fragment_with_its_modes_and_owners() {
    crate::ignition_engine::require("ignition_writes_the_fragment_with_its_modes_and_owners");
    let env = Env::new();
    // aarch64: the fragment is made on one architecture for another.
    let binary = static_elf(183, false);
    let binary_path = env.write("abr-aarch64", &binary);
    let ca = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
    let ca_path = env.write("ca.pem", ca.as_bytes());
    let fragment_path = make_fragment(
        &env,
        "fragment.ign",
        &binary_path,
        "aarch64",
        &[
            "--cluster-id",
            CLUSTER_ID,
            "--ca-cert",
            ca_path.to_str().unwrap(),
        ],
    );
    let root = env.path("sysroot");
    let work = env.path("engine");
    std::fs::create_dir_all(&work).unwrap();
    crate::ignition_engine::prepare_root(&root);
    let run = crate::ignition_engine::apply(&fragment_path, &root, &work);
    assert!(run.success(), "{}", run.log());
    // Nothing remote in the fragment: no fetch stage.
    assert_eq!(run.names(), ["fetch-offline", "files"]);
    let owner = crate::ignition_engine::root_uid_outside(&work);
    assert_reporter_installed(&root, owner, &binary, ca);
}

/// A pointer ignition as assisted-service renders it (spec 3.2.0, one
/// `ignition.config.merge` source: the machine config server's
/// `/config/worker`), with the reporter's fragment appended as
/// docs/install.md tells a service to, applied by the real engine: Ignition
/// fetches the merge source from the mock on loopback, and both the machine
/// config's files and units and the reporter's land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pointer_ignition_merges_the_machine_config_and_installs_the_reporter() {
    crate::ignition_engine::require("pointer_ignition_merges_the_machine_config");
    let env = Env::new();
    let binary = static_elf(62, false);
    let binary_path = env.write("abr-x86_64", &binary);
    let ca = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
    let ca_path = env.write("ca.pem", ca.as_bytes());
    let fragment_path = make_fragment(
        &env,
        "fragment.ign",
        &binary_path,
        "x86_64",
        &[
            "--cluster-id",
            CLUSTER_ID,
            "--ca-cert",
            ca_path.to_str().unwrap(),
        ],
    );
    let fragment = read_json(&fragment_path);

    let data = env.path("mock-data");
    std::fs::create_dir_all(&data).unwrap();
    let seed =
        crate::common::seed_json("unused-token", &crate::common::HostSeed::rebooting_master());
    let mock = crate::common::start_mock_at("127.0.0.1:0", &seed, &data, false).await;
    let base = mock.base_url();
    let http = crate::common::http();
    let put = http
        .put(format!("{base}/admin/machine-configs/worker"))
        .header("Content-Type", "application/json")
        .body(machine_config().to_string())
        .send()
        .await
        .expect("PUT machine config");
    assert_eq!(put.status().as_u16(), 204);

    let pointer = with_fragment(
        pointer_ignition(&format!("{base}/config/worker")),
        &fragment,
    );
    let pointer_path = env.write("pointer.ign", pointer.to_string().as_bytes());
    crate::ignition_engine::validate(&pointer_path)
        .expect("the pointer with the fragment validates");
    assert_schema_clean(&pointer, "pointer ignition with the fragment");

    let root = env.path("sysroot");
    let work = env.path("engine");
    std::fs::create_dir_all(&work).unwrap();
    crate::ignition_engine::prepare_root(&root);
    let (path, w, r) = (pointer_path.clone(), work.clone(), root.clone());
    let run = tokio::task::spawn_blocking(move || crate::ignition_engine::apply(&path, &r, &w))
        .await
        .expect("engine thread");
    assert!(run.success(), "{}", run.log());
    assert_eq!(run.names(), ["fetch-offline", "fetch", "files"]);

    let owner = crate::ignition_engine::root_uid_outside(&work);
    assert_reporter_installed(&root, owner, &binary, ca);
    // The merged machine config landed beside it, its unit enabled too.
    let kubelet_conf = root.join("etc/kubernetes/kubelet.conf");
    assert_eq!(
        std::fs::read_to_string(&kubelet_conf).expect("merged file"),
        "kind: KubeletConfiguration\n"
    );
    assert_eq!(mode_of(&kubelet_conf), 0o644);
    assert!(root.join("etc/systemd/system/kubelet.service").is_file());
    let preset =
        std::fs::read_to_string(root.join("etc/systemd/system-preset/20-ignition.preset")).unwrap();
    assert!(preset.contains("enable kubelet.service"), "{preset:?}");

    // The mock saw Ignition fetch it, and Ignition said which spec it reads.
    let view = crate::common::get_json(&format!("{base}/admin/machine-configs")).await;
    let fetches = view["fetches"].as_array().expect("fetches");
    assert_eq!(fetches.len(), 1, "{view}");
    assert_eq!(fetches[0]["status"], 200);
    let accept = fetches[0]["accept"].as_str().unwrap_or_default();
    assert!(
        accept.contains("application/vnd.coreos.ignition+json"),
        "{accept}"
    );
    let agent = fetches[0]["user_agent"].as_str().unwrap_or_default();
    assert!(agent.starts_with("Ignition/"), "{agent}");
    eprintln!("Ignition fetched the merge source with Accept: {accept}; User-Agent: {agent}");
    mock.shutdown().await;
}

/// The merge source is unreachable: Ignition's fetch fails, no stage after
/// it runs on a host (each has `OnFailure=emergency.target`), and even a
/// `files` stage forced to run writes nothing: no reporter, no unit, no
/// preset. The reporter cannot report this (docs/design.md).
#[test]
fn unreachable_merge_source_leaves_nothing_written() {
    crate::ignition_engine::require("unreachable_merge_source_leaves_nothing_written");
    let env = Env::new();
    let binary_path = env.write("abr-x86_64", &static_elf(62, false));
    let fragment = read_json(&make_fragment(
        &env,
        "fragment.ign",
        &binary_path,
        "x86_64",
        &[],
    ));
    // A port that was just free: connection refused. Ignition retries a
    // failed fetch until `timeouts.httpTotal` (unset in a real pointer
    // ignition: forever, the host waits in the initramfs); the test bounds it.
    let port = crate::common::free_port();
    let mut pointer = with_fragment(
        pointer_ignition(&format!("http://127.0.0.1:{port}/config/worker")),
        &fragment,
    );
    pointer["ignition"]["timeouts"] = json!({"httpTotal": 3});
    let pointer_path = env.write("pointer.ign", pointer.to_string().as_bytes());
    crate::ignition_engine::validate(&pointer_path).expect("validates");

    let root = env.path("sysroot");
    let work = env.path("engine");
    std::fs::create_dir_all(&work).unwrap();
    crate::ignition_engine::prepare_root(&root);
    let before = crate::ignition_engine::tree(&root);
    let run = crate::ignition_engine::apply(&pointer_path, &root, &work);
    assert_eq!(run.names(), ["fetch-offline", "fetch"], "{}", run.log());
    assert!(!run.stages[1].success, "fetch succeeded: {}", run.log());
    assert!(
        run.stages[1].log.contains("connection refused"),
        "{}",
        run.log()
    );
    assert_eq!(
        crate::ignition_engine::tree(&root),
        before,
        "the failed fetch wrote"
    );

    // Even if the files stage ran, it has no config to apply.
    let forced = crate::ignition_engine::files_only(&pointer_path, &root, &work);
    assert!(!forced.success(), "{}", forced.log());
    assert_eq!(
        crate::ignition_engine::tree(&root),
        before,
        "files stage wrote"
    );
    assert!(!root.join("usr/local/bin/assisted-boot-reporter").exists());
}

/// A pointer ignition like the one assisted-service serves a host (spec
/// 3.2.0, types of `github.com/coreos/ignition/v2/config/v3_2`; the real one
/// adds the MCS's CA under `ignition.security.tls` for its https source).
fn pointer_ignition(merge_source: &str) -> Value {
    json!({
        "ignition": {
            "version": "3.2.0",
            "config": {"merge": [{"source": merge_source}]},
        },
    })
}

/// Appends the fragment's directories, files and units to the pointer
/// config, as docs/install.md tells a service or admin to.
fn with_fragment(mut pointer: Value, fragment: &Value) -> Value {
    for (section, key) in [
        ("storage", "directories"),
        ("storage", "files"),
        ("systemd", "units"),
    ] {
        let items = fragment[section][key]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let target = pointer[section][key].as_array_mut().map(std::mem::take);
        let mut merged = target.unwrap_or_default();
        merged.extend(items);
        pointer[section][key] = Value::Array(merged);
    }
    pointer
}

/// A stand-in for the MCS's rendered worker config: a file and an enabled
/// unit, in the spec the MCS would answer Ignition 2.14 with.
fn machine_config() -> Value {
    json!({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [{
            "path": "/etc/kubernetes/kubelet.conf",
            "mode": 0o644,
            "contents": {"source": "data:,kind%3A%20KubeletConfiguration%0A"},
        }]},
        "systemd": {"units": [{
            "name": "kubelet.service",
            "enabled": true,
            "contents": "[Unit]\nDescription=Kubernetes Kubelet\n[Service]\nExecStart=/usr/bin/kubelet\n[Install]\nWantedBy=multi-user.target\n",
        }]},
    })
}

#[test]
fn refuses_binaries_that_would_not_run_on_the_host() {
    let env = Env::new();
    let s390x = env.write("abr-s390x", &static_elf(22, true));
    let out = env.run(&base_args(s390x.to_str().unwrap(), "x86_64"), None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("built for s390x") && stderr(&out).contains("not x86_64"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());

    // The test build of the agent itself is dynamically linked.
    let dynamic = agent_bin();
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        "s390x" => "s390x",
        _ => "ppc64le",
    };
    let out = env.run(&base_args(dynamic.to_str().unwrap(), arch), None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("dynamically linked"),
        "{}",
        stderr(&out)
    );

    let text = env.write("script", b"#!/bin/sh\necho hi\n");
    let out = env.run(&base_args(text.to_str().unwrap(), "aarch64"), None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not an ELF file"), "{}", stderr(&out));

    // Without --binary, only this executable's own architecture can be shipped.
    let other = if arch == "s390x" { "x86_64" } else { "s390x" };
    let args: Vec<&str> = base_args("unused", other)
        .into_iter()
        .filter(|a| *a != "--binary" && *a != "unused")
        .collect();
    let out = env.run(&args, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--binary is required"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_secret_is_never_a_flag_value_and_a_bad_one_is_not_quoted() {
    let env = Env::new();
    let binary = env.write("abr", &static_elf(183, false));
    let mut args = base_args(binary.to_str().unwrap(), "aarch64");
    args.extend(["--pull-secret", TOKEN]);
    let out = env.run(&args, None);
    assert_eq!(out.status.code(), Some(2), "no such flag may exist");

    let out_path = env.path("fragment.ign");
    let mut args = base_args(binary.to_str().unwrap(), "aarch64");
    let out_str = out_path.to_string_lossy().into_owned();
    args.extend(["--pull-secret-file", "-", "--output", &out_str]);
    let garbage = format!("{{\"auths\": {TOKEN}");
    let out = env.run(&args, Some(garbage.as_bytes()));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("unusable"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(TOKEN), "rejection quoted the secret");
    assert!(!out_path.exists(), "a fragment was written anyway");
}

/// `script` (util-linux) gives the command a pseudo-terminal: what an admin
/// typing at a shell would have.
fn under_terminal(env: &Env, args: &[&str]) -> Output {
    let mut line = shell_quote(&agent_bin().to_string_lossy());
    line.push_str(" ignition");
    for a in args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .current_dir(env.tmp.path())
        .stdin(Stdio::null())
        .output()
        .expect("script(1) from util-linux")
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[test]
fn nothing_secret_goes_to_or_comes_from_a_terminal() {
    let env = Env::new();
    let binary = env.write("abr", &static_elf(183, false));
    let secret = env.write("pull-secret.json", pull_secret().as_bytes());

    // The fragment to a terminal: refused before the secret is even read.
    let mut args = base_args(binary.to_str().unwrap(), "aarch64");
    args.extend(["--pull-secret-file", secret.to_str().unwrap()]);
    let out = under_terminal(&env, &args);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("standard output is a terminal"), "{shown}");
    assert!(!shown.contains(TOKEN), "secret shown on the terminal");

    // The secret typed at a terminal would be echoed: refused.
    let out_path = env.path("fragment.ign");
    let out_str = out_path.to_string_lossy().into_owned();
    let mut args = base_args(binary.to_str().unwrap(), "aarch64");
    args.extend(["--pull-secret-file", "-", "--output", &out_str]);
    let out = under_terminal(&env, &args);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("standard input is a terminal"), "{shown}");
    assert!(!out_path.exists());
}

/// The checks above are not vacuous: a fragment with a wrongly typed mode
/// fails the schema, and a misspelt key (which the schema lets through)
/// fails the unknown-key walk.
#[test]
fn the_checks_catch_a_broken_fragment() {
    let env = Env::new();
    let binary = env.write("abr", &static_elf(183, false));
    let out = env.run(&base_args(binary.to_str().unwrap(), "aarch64"), None);
    assert!(out.status.success(), "{}", stderr(&out));
    let good: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let schema = schema("3.2");

    let mut bad_mode = good.clone();
    bad_mode["storage"]["files"][0]["mode"] = Value::from("0755");
    assert!(
        !validate(&schema, &bad_mode).is_empty(),
        "a string mode passed the schema"
    );

    let mut misspelt = good.clone();
    let contents = misspelt["storage"]["files"][0]["contents"]
        .as_object_mut()
        .unwrap();
    let compression = contents.remove("compression").unwrap();
    contents.insert("compresion".into(), compression);
    assert!(
        validate(&schema, &misspelt).is_empty(),
        "schema allows unknown keys"
    );
    let mut unknown = Vec::new();
    unknown_keys(&schema, &schema, &misspelt, "", &mut unknown);
    assert_eq!(unknown, ["/storage/files/0/contents/compresion"]);
}

#[test]
fn proxy_flags_write_a_private_proxy_env_the_agent_reads_back() {
    let env = Env::new();
    let binary_path = env.write("abr-x86_64", &static_elf(62, false));
    let out_path = env.path("proxy.ign");
    let out_str = out_path.to_string_lossy().into_owned();
    let password = "pr0xy-Pa55word";
    let https_proxy = format!("http://installer:{password}@proxy.corp.example:3128");
    let mut args = base_args(binary_path.to_str().unwrap(), "x86_64");
    args.extend([
        "--http-proxy",
        "http://proxy.corp.example:3128",
        "--https-proxy",
        &https_proxy,
        "--no-proxy",
        ".corp.example,10.0.0.0/8,fd00::/8",
        "--output",
        &out_str,
    ]);
    let out = env.run(&args, None);
    assert!(out.status.success(), "{}", stderr(&out));
    let fragment: Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let schema = schema("3.2");
    let errors = validate(&schema, &fragment);
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
    let proxy_file = fragment["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == format!("{CONTRACT_DIR}/proxy.env"))
        .expect("proxy.env in the fragment");
    assert_eq!(proxy_file["mode"], 0o600, "a proxy URL may hold a password");

    // What Ignition itself writes, read by the agent's own configuration code.
    crate::ignition_engine::require("proxy_flags_write_a_private_proxy_env");
    let root = env.path("sysroot");
    let work = env.path("engine");
    std::fs::create_dir_all(&work).unwrap();
    crate::ignition_engine::prepare_root(&root);
    let applied = crate::ignition_engine::apply(&out_path, &root, &work);
    assert!(applied.success(), "{}", applied.log());
    let contract = root.join(CONTRACT_DIR.trim_start_matches('/'));
    assert_eq!(mode_of(&contract.join("proxy.env")), 0o600);
    let run = assisted_boot_reporter::config::Flags {
        config_dir: Some(contract.clone()),
        state_dir: Some(env.path("state")),
        root: Some(env.path("root")),
        ..Default::default()
    };
    let config = assisted_boot_reporter::config::Config::resolve(&run, &|_| None).unwrap();
    assert!(
        config.warnings.iter().all(|w| !w.contains("proxy")),
        "{:?}",
        config.warnings
    );
    let via = |u: &str| {
        config
            .proxy
            .proxy_for(&reqwest::Url::parse(u).unwrap())
            .map(ToString::to_string)
    };
    assert_eq!(
        via(SERVICE_URL).as_deref(),
        Some("http://[REDACTED]@proxy.corp.example:3128")
    );
    assert_eq!(via("https://api.corp.example"), None);
    assert_eq!(via("https://10.1.2.3"), None);
    assert_eq!(
        via("http://assisted.example.com").as_deref(),
        Some("http://proxy.corp.example:3128")
    );
    assert!(config.proxy.secrets().contains(&password.to_owned()));

    // A bad value fails before anything is written, without quoting it.
    let bad = env.path("bad.ign");
    let bad_str = bad.to_string_lossy().into_owned();
    let mut args = base_args(binary_path.to_str().unwrap(), "x86_64");
    let socks = format!("socks5://installer:{password}@proxy:1080");
    args.extend(["--https-proxy", &socks, "--output", &bad_str]);
    let out = env.run(&args, None);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--https-proxy"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(password), "{}", stderr(&out));
    assert!(!bad.exists());
}
