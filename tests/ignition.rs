//! `assisted-boot-reporter ignition`, run as a user would: the fragment it
//! writes is valid against Ignition's real JSON schemas (3.2 and 3.4, each
//! with its own `ignition.version`), uses no key the spec does not define
//! (the schemas allow unknown keys, Ignition itself warns or fails), and
//! decodes back to exactly the binary, unit and discovery contract it was
//! given; the pull secret never comes from a flag nor passes a terminal.

mod ignition_apply;

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ignition_apply::{file_bytes, file_entry};
use serde_json::Value;

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

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

// ---------------------------------------------------------------------------

#[test]
fn fragment_is_valid_ignition_3_2_and_3_4_and_decodes_to_its_inputs() {
    let env = Env::new();
    // aarch64: the fragment is made on one architecture for another.
    let binary = static_elf(183, false);
    let binary_path = env.write("abr-aarch64", &binary);
    let ca = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
    let ca_path = env.write("ca.pem", ca.as_bytes());
    let unit = std::fs::read_to_string(repo().join("systemd/assisted-boot-reporter.service"))
        .expect("unit file");

    for (spec, version) in [("3.2", "3.2.0"), ("3.4", "3.4.0")] {
        let out_path = env.path(&format!("fragment-{spec}.ign"));
        let mut args = base_args(binary_path.to_str().unwrap(), "aarch64");
        let out_str = out_path.to_string_lossy().into_owned();
        args.extend([
            "--spec",
            spec,
            "--cluster-id",
            CLUSTER_ID,
            "--ca-cert",
            ca_path.to_str().unwrap(),
            "--pull-secret-file",
            "-",
            "--output",
            &out_str,
        ]);
        let out = env.run(&args, Some(pull_secret().as_bytes()));
        assert!(out.status.success(), "spec {spec}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "--output given, yet stdout has data");
        assert!(
            !stderr(&out).contains(TOKEN),
            "secret on stderr: {}",
            stderr(&out)
        );
        assert_eq!(mode_of(&out_path), 0o600, "the fragment holds the secret");

        let text = std::fs::read_to_string(&out_path).expect("fragment");
        let fragment: Value = serde_json::from_str(&text).expect("fragment is JSON");
        assert_eq!(fragment["ignition"]["version"], version);

        let schema = schema(spec);
        let errors = validate(&schema, &fragment);
        assert!(
            errors.is_empty(),
            "spec {spec}: schema violations: {errors:#?}"
        );
        let mut unknown = Vec::new();
        unknown_keys(&schema, &schema, &fragment, "", &mut unknown);
        assert!(
            unknown.is_empty(),
            "spec {spec}: keys the spec does not define: {unknown:?}"
        );

        // What Ignition would write on the host.
        let bin = file_entry(&fragment, "/usr/local/bin/assisted-boot-reporter");
        assert_eq!(bin["mode"], 0o755);
        assert_eq!(bin["contents"]["compression"], "gzip");
        assert!(bin["contents"]["source"]
            .as_str()
            .unwrap()
            .starts_with("data:;base64,"));
        assert_eq!(file_bytes(bin), binary, "the binary does not round-trip");

        let secret = file_entry(&fragment, &format!("{CONTRACT_DIR}/pull-secret"));
        assert_eq!(secret["mode"], 0o600);
        assert_eq!(
            String::from_utf8(file_bytes(secret)).unwrap(),
            format!("{}\n", pull_secret())
        );
        for (name, value) in [
            ("service-url", SERVICE_URL),
            ("infra-env-id", INFRA_ENV_ID),
            ("host-id", HOST_ID),
            ("cluster-id", CLUSTER_ID),
        ] {
            let f = file_entry(&fragment, &format!("{CONTRACT_DIR}/{name}"));
            assert_eq!(f["mode"], 0o644, "{name}");
            assert_eq!(
                String::from_utf8(file_bytes(f)).unwrap(),
                format!("{value}\n"),
                "{name}"
            );
        }
        let ca_file = file_entry(&fragment, &format!("{CONTRACT_DIR}/ca.crt"));
        assert_eq!(String::from_utf8(file_bytes(ca_file)).unwrap(), ca);
        let dirs = fragment["storage"]["directories"].as_array().unwrap();
        assert!(
            dirs.iter()
                .any(|d| d["path"] == CONTRACT_DIR && d["mode"] == 0o700),
            "{dirs:?}"
        );
        let units = fragment["systemd"]["units"].as_array().unwrap();
        assert_eq!(units.len(), 1);
        assert_eq!(units[0]["name"], "assisted-boot-reporter.service");
        assert_eq!(units[0]["enabled"], true);
        assert_eq!(units[0]["contents"].as_str().unwrap(), unit);
    }
}

#[test]
fn minimal_fragment_to_stdout_validates_for_every_arch() {
    let env = Env::new();
    for (arch, machine, be) in [
        ("x86_64", 62, false),
        ("aarch64", 183, false),
        ("ppc64le", 21, false),
        ("s390x", 22, true),
    ] {
        let binary = env.write(&format!("abr-{arch}"), &static_elf(machine, be));
        let secret = env.write("token", format!("{TOKEN}\n").as_bytes());
        let mut args = base_args(binary.to_str().unwrap(), arch);
        args.extend(["--pull-secret-file", secret.to_str().unwrap()]);
        let out = env.run(&args, None);
        assert!(out.status.success(), "{arch}: {}", stderr(&out));
        let fragment: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        assert_eq!(
            fragment["ignition"]["version"], "3.2.0",
            "3.2 is the default"
        );
        let errors = validate(&schema("3.2"), &fragment);
        assert!(errors.is_empty(), "{arch}: {errors:#?}");
        let secret_file = file_entry(&fragment, &format!("{CONTRACT_DIR}/pull-secret"));
        assert_eq!(file_bytes(secret_file), format!("{TOKEN}\n").into_bytes());
        let names: Vec<&str> = fragment["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["path"].as_str())
            .collect();
        assert!(
            !names
                .iter()
                .any(|n| n.ends_with("/cluster-id") || n.ends_with("/ca.crt")),
            "optional files written without a value: {names:?}"
        );
    }
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
    let proxy = file_entry(&fragment, &format!("{CONTRACT_DIR}/proxy.env"));
    assert_eq!(proxy["mode"], 0o600, "a proxy URL may hold a password");

    // What Ignition writes, read by the agent's own configuration code.
    let contract = env.path("contract");
    std::fs::create_dir(&contract).unwrap();
    for file in fragment["storage"]["files"].as_array().unwrap() {
        let path = file["path"].as_str().unwrap();
        if let Some(name) = path.strip_prefix(&format!("{CONTRACT_DIR}/")) {
            let dest = contract.join(name);
            std::fs::write(&dest, file_bytes(file)).unwrap();
            let mode = u32::try_from(file["mode"].as_u64().unwrap()).unwrap();
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    let run = assisted_boot_reporter::cli::RunArgs {
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
