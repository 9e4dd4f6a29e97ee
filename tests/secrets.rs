//! Every byte the agent emits, scanned for the agent token and the pull
//! secret's other registry auth: its log at trace level (stdout and
//! stderr), every bundle the mock stored (each one as it arrived, members
//! and nested gzip members decompressed), the command line and environment
//! of the agent and of every command it runs (`/proc/<pid>/cmdline` and
//! `environ`, polled while it runs), the files it holds open while it runs
//! (read through `/proc/<pid>/fd`, unlinked ones included),
//! and the files it leaves in its state and config directories. Zero hits.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;

/// What the `/proc` and bundle pollers saw.
#[derive(Default, Debug)]
struct Seen {
    /// Distinct processes (the agent and its descendants) inspected.
    processes: HashSet<u32>,
    /// Command lines seen, for the report.
    commands: BTreeMap<String, usize>,
    /// Open regular files read through `/proc/<pid>/fd`.
    open_files: HashSet<String>,
    open_file_bytes: u64,
    /// Commands the agent ran, each leaving its environment and arguments
    /// in FAKE_EXEC_LOG_DIR (tests/fixtures/bin): every one, however short
    /// its life, where the /proc samples above may miss some on a busy
    /// machine.
    commands_logged: BTreeMap<String, usize>,
    bundles: usize,
    bundle_bytes: u64,
    /// Where a secret was found: empty when all is well.
    hits: Vec<String>,
}

fn scan(what: &str, bytes: &[u8], secrets: &[(&'static str, String)], hits: &mut Vec<String>) {
    for (name, secret) in secrets {
        if contains(bytes, secret.as_bytes()) {
            hits.push(format!("{name} in {what}"));
        }
    }
}

fn gunzip(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < 2 || data[0] != 0x1f || data[1] != 0x8b {
        return None;
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// The fake journalctl's knob carries the token on purpose (it is the
/// journal line redaction must catch): the test put it in the environment,
/// not the agent.
const PLANTED_BY_THE_TEST: &[u8] = b"FAKE_JOURNAL_EXTRA=";

/// Where the fixture commands leave their environment and arguments
/// (FAKE_EXEC_LOG_DIR): the test's own instrument, not something the agent
/// writes, so the open-file scan passes it by.
const EXEC_LOG_PREFIX: &str = "exec-log-";

/// Scans a NUL-separated block (an environment, an argument list) one
/// entry at a time, so a hit names the variable or the argument; the
/// variable the test plants on purpose is passed by.
fn scan_entries(
    what: &str,
    block: &[u8],
    secrets: &[(&'static str, String)],
    hits: &mut Vec<String>,
) {
    for entry in block
        .split(|&b| b == 0)
        .filter(|e| !e.starts_with(PLANTED_BY_THE_TEST))
    {
        let shown = String::from_utf8_lossy(entry);
        let key = shown.split_once('=').map_or(&*shown, |(k, _)| k);
        scan(&format!("{what}: {key:.60}"), entry, secrets, hits);
    }
}

/// Parent of every process, from `/proc/<pid>/stat`.
fn parents() -> HashMap<u32, u32> {
    let mut map = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return map;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        if let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
        {
            map.insert(pid, ppid);
        }
    }
    map
}

fn family(root: u32) -> Vec<u32> {
    let parents = parents();
    let mut family = vec![root];
    let mut i = 0;
    while i < family.len() {
        let p = family[i];
        family.extend(
            parents
                .iter()
                .filter(|(_, parent)| **parent == p)
                .map(|(child, _)| *child),
        );
        i += 1;
    }
    family
}

/// One look at the agent and its descendants.
fn inspect_processes(
    root: u32,
    secrets: &[(&'static str, String)],
    check_agent_environ: bool,
    seen: &mut Seen,
) {
    for pid in family(root) {
        let dir = PathBuf::from(format!("/proc/{pid}"));
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        if cmdline.is_empty() {
            continue; // a zombie, or gone
        }
        seen.processes.insert(pid);
        let shown = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let program = shown.split_whitespace().next().unwrap_or_default();
        let program = Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        *seen.commands.entry(program).or_default() += 1;
        scan(
            &format!("/proc/{pid}/cmdline ({shown})"),
            &cmdline,
            secrets,
            &mut seen.hits,
        );
        // A child between fork and exec is still the agent's image, its
        // environment block the agent's own as it was started.
        let is_agent =
            pid == root || std::fs::read_link(dir.join("exe")).is_ok_and(|exe| exe == agent_bin());
        if !is_agent || check_agent_environ {
            if let Ok(environ) = std::fs::read(dir.join("environ")) {
                scan_entries(
                    &format!("/proc/{pid}/environ ({shown})"),
                    &environ,
                    secrets,
                    &mut seen.hits,
                );
            }
        }
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let target = target.to_string_lossy().into_owned();
            // Regular files only: pipes, sockets and devices are not files
            // it writes (its pipes are its output, scanned whole at exit).
            // Host files under the scenario's fixture root (`<tmp>/root/...`)
            // are what it reads, planted secrets included, not what it writes.
            if !target.starts_with('/')
                || target.starts_with("/dev/")
                || target.starts_with("/proc/")
                || (target.contains("/abr-e2e-") && target.contains("/root/"))
                || target.contains(&format!("/{EXEC_LOG_PREFIX}"))
            {
                continue;
            }
            let Ok(mut file) = std::fs::File::open(fd.path()) else {
                continue;
            };
            if !file.metadata().is_ok_and(|m| m.is_file()) {
                continue;
            }
            let mut data = Vec::new();
            let _ = (&mut file).take(64 << 20).read_to_end(&mut data);
            seen.open_files.insert(target.clone());
            seen.open_file_bytes += data.len() as u64;
            scan(
                &format!("file {target} open in {shown}"),
                &data,
                secrets,
                &mut seen.hits,
            );
        }
    }
}

/// Scans each stored bundle as it lands (the mock keeps only the newest).
fn inspect_bundle(
    path: &Path,
    last: &mut Option<(u64, u64, i64)>,
    secrets: &[(&'static str, String)],
    seen: &mut Seen,
) {
    let Ok(raw) = std::fs::File::open(path).and_then(|mut f| {
        let meta = f.metadata()?;
        let id = (meta.ino(), meta.len(), meta.mtime_nsec());
        if *last == Some(id) {
            return Ok(None);
        }
        *last = Some(id);
        let mut data = Vec::new();
        f.read_to_end(&mut data)?;
        Ok(Some(data))
    }) else {
        return;
    };
    if let Some(raw) = raw {
        scan_bundle(&raw, secrets, seen);
    }
}

/// Scans one stored bundle: raw, decompressed, and each member decompressed.
fn scan_bundle(raw: &[u8], secrets: &[(&'static str, String)], seen: &mut Seen) {
    seen.bundles += 1;
    seen.bundle_bytes += raw.len() as u64;
    let what = format!("bundle #{}", seen.bundles);
    scan(&what, raw, secrets, &mut seen.hits);
    let whole = gunzip(raw).unwrap_or_default();
    scan(
        &format!("{what}, decompressed"),
        &whole,
        secrets,
        &mut seen.hits,
    );
    let mut archive = tar::Archive::new(whole.as_slice());
    if let Ok(entries) = archive.entries() {
        for mut entry in entries.flatten() {
            let name = entry
                .path()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut data = Vec::new();
            let _ = entry.read_to_end(&mut data);
            if let Some(inner) = gunzip(&data) {
                scan(
                    &format!("{what} member {name}, decompressed"),
                    &inner,
                    secrets,
                    &mut seen.hits,
                );
            }
        }
    }
}

/// Polls `/proc` and the bundle path until stopped.
struct Watch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Seen>,
}

impl Watch {
    fn start(
        pid: u32,
        bundle: PathBuf,
        secrets: Vec<(&'static str, String)>,
        check_agent_environ: bool,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut seen = Seen::default();
            let mut last = None;
            loop {
                let stopping = flag.load(Ordering::SeqCst);
                inspect_processes(pid, &secrets, check_agent_environ, &mut seen);
                inspect_bundle(&bundle, &mut last, &secrets, &mut seen);
                if stopping {
                    return seen;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        Watch { stop, thread }
    }

    fn finish(self) -> Seen {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("watch thread")
    }
}

fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(all_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn secrets_of(sc: &Scenario, whole_pull_secret: bool) -> Vec<(&'static str, String)> {
    let mut s = vec![("agent token", sc.token.clone())];
    if whole_pull_secret {
        s.push((
            "other registry auth of the pull secret",
            sc.other_auth.clone(),
        ));
    }
    s
}

/// One agent run, watched; returns what it saw and the run.
async fn watched_run(
    sc: &Scenario,
    label: &str,
    opts: &AgentOpts,
    secrets: &[(&'static str, String)],
    check_agent_environ: bool,
) -> (Seen, AgentRun) {
    watched_run_until(sc, label, opts, secrets, check_agent_environ, None).await
}

/// [`watched_run`], stopped with SIGTERM after `stop_after` (a reboot) when
/// given.
async fn watched_run_until(
    sc: &Scenario,
    label: &str,
    opts: &AgentOpts,
    secrets: &[(&'static str, String)],
    check_agent_environ: bool,
    stop_after_uploads: Option<usize>,
) -> (Seen, AgentRun) {
    let bundle = sc
        .data_dir
        .join("bundles")
        .join(CLUSTER_ID)
        .join(HOST_ID)
        .join("host_boot.tar.gz");
    let exec_log = tempfile::Builder::new()
        .prefix(EXEC_LOG_PREFIX)
        .tempdir_in(sc.tmp.path())
        .expect("exec log dir");
    let mut opts = opts.clone();
    opts.env.push((
        "FAKE_EXEC_LOG_DIR".to_owned(),
        exec_log.path().to_string_lossy().into_owned(),
    ));
    let running = sc.spawn_agent(label, &opts);
    let pid = running.pid().expect("agent pid");
    let watch = Watch::start(pid, bundle.clone(), secrets.to_vec(), check_agent_environ);
    let kept = stop_after_uploads.map(|uploads| {
        // SIGTERM once the mock stored `uploads` bundles (each upload is
        // renamed into place: a new inode), or after a bound that only a
        // hung agent reaches: a count, not a wall-clock guess, so a loaded
        // machine cannot make the run end before its second bundle. Each
        // new bundle is read here as it is seen, so all of them are
        // scanned even when the watch thread, busy, sees only the last.
        let stored = bundle.clone();
        tokio::spawn(async move {
            use std::os::unix::fs::MetadataExt as _;
            let until = std::time::Instant::now() + Duration::from_secs(180);
            let mut kept: HashMap<u64, Vec<u8>> = HashMap::new();
            while kept.len() < uploads && std::time::Instant::now() < until {
                // Read through the opened file: its inode's bytes, even if
                // the next upload replaces the path meanwhile.
                if let Ok(mut file) = std::fs::File::open(&stored) {
                    if let Ok(meta) = file.metadata() {
                        if let std::collections::hash_map::Entry::Vacant(slot) =
                            kept.entry(meta.ino())
                        {
                            let mut data = Vec::new();
                            if file.read_to_end(&mut data).is_ok() {
                                slot.insert(data);
                            }
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            kept.into_values().collect::<Vec<_>>()
        })
    });
    let run = sc.wait_agent(running).await;
    let mut seen = watch.finish();
    if let Some(kept) = kept {
        let kept = kept.await.expect("bundle keeper");
        // The watch's figures are a sample; these are every bundle stored.
        let sampled = (seen.bundles, seen.bundle_bytes);
        (seen.bundles, seen.bundle_bytes) = (0, 0);
        for raw in &kept {
            scan_bundle(raw, secrets, &mut seen);
        }
        if sampled.0 > seen.bundles {
            (seen.bundles, seen.bundle_bytes) = sampled;
        }
    }
    for file in all_files(exec_log.path()) {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(&file).unwrap_or_default();
        scan_entries(
            &format!("command {name} (FAKE_EXEC_LOG_DIR)"),
            &bytes,
            secrets,
            &mut seen.hits,
        );
        if let Some(program) = name
            .strip_suffix(".args")
            .and_then(|n| n.split_once('.'))
            .map(|(_, program)| program.to_owned())
        {
            *seen.commands_logged.entry(program).or_default() += 1;
        }
    }
    for (stream, bytes) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        scan(
            &format!("the agent's {stream} ({label})"),
            bytes,
            secrets,
            &mut seen.hits,
        );
    }
    (seen, run)
}

fn report(label: &str, seen: &Seen, run: &AgentRun) {
    eprintln!(
        "SECRETS | {label} | {} log bytes at trace | {} processes sampled ({:?}) | commands logged {:?} | {} open files read ({} bytes): {:?} | {} bundles ({} bytes) | hits: {}",
        run.stderr.len() + run.stdout.len(),
        seen.processes.len(),
        seen.commands,
        seen.commands_logged,
        seen.open_files.len(),
        seen.open_file_bytes,
        seen.open_files,
        seen.bundles,
        seen.bundle_bytes,
        seen.hits.len()
    );
    assert!(
        seen.hits.is_empty(),
        "{label}: secrets found: {:#?}",
        seen.hits
    );
}

fn trace_opts(timeout: &'static str, kubelet: Option<String>) -> AgentOpts {
    let mut extra_env = vec![
        // The token line comes first, then enough journal to fill chunks.
        ("FAKE_JOURNAL_BYTES".to_owned(), "2000000".to_owned()),
        (
            "FAKE_JOURNAL_BYTES_SCOPE".to_owned(),
            "this-boot".to_owned(),
        ),
        (
            "ASSISTED_BOOT_REPORTER_LOG_LEVEL".to_owned(),
            "trace".to_owned(),
        ),
    ];
    extra_env.push(("RUST_BACKTRACE".to_owned(), "1".to_owned()));
    AgentOpts {
        timeout: Some(timeout),
        kubelet_healthz_url: kubelet,
        env: extra_env,
        ..AgentOpts::default()
    }
}

/// The harness passes `--log-level debug`; the environment cannot beat a
/// flag, so the arguments are rewritten with `trace`.
fn at_trace(sc: &Scenario, mut opts: AgentOpts) -> AgentOpts {
    let mut args = vec![
        "--log-level".to_owned(),
        "trace".to_owned(),
        "run".to_owned(),
    ];
    for (k, v) in [
        ("--config-dir", sc.config_dir.to_string_lossy().into_owned()),
        ("--state-dir", sc.state_dir.to_string_lossy().into_owned()),
        ("--root", sc.root.to_string_lossy().into_owned()),
        ("--upload-interval", "1s".to_owned()),
        ("--timeout", opts.timeout.unwrap_or("3s").to_owned()),
        ("--retry-initial-delay", "100ms".to_owned()),
        ("--retry-max-delay", "500ms".to_owned()),
        ("--retry-attempts", "3".to_owned()),
        ("--command-timeout", "5s".to_owned()),
        ("--request-timeout", "10s".to_owned()),
        (
            "--kubelet-healthz-url",
            opts.kubelet_healthz_url
                .clone()
                .unwrap_or_else(|| "http://127.0.0.1:9/healthz".to_owned()),
        ),
    ] {
        args.push(k.to_owned());
        args.push(v);
    }
    opts.raw_args = Some(args);
    opts
}

/// Plants the encoded and shaped secrets for a `run`: returned for the
/// journal; a failed record named after the token's password, whose error
/// line quotes the token's other forms, goes under the root now.
fn plant_everywhere(sc: &Scenario) -> Planted {
    let plant = planted(
        &sc.token,
        Some(&sc.other_auth),
        Some(&sc.pull_secret_json()),
    );
    let (_, password) = decode_auth(&sc.token);
    std::fs::write(
        sc.root.join(format!("var/log/openshift/{password}.json")),
        format!(
            r#"[{{"timestamp":"2020-01-01T00:00:00Z","phase":"service start"}},{{"timestamp":"2020-01-01T00:00:01Z","phase":"service end","result":"failure","errorLine":"pull failed: password={password} auth {}"}}]"#,
            url_encode(&sc.token)
        ),
    )
    .unwrap();
    plant
}

fn with_journal(mut opts: AgentOpts, sc: &Scenario, plant: &Planted) -> AgentOpts {
    opts.env.push((
        "FAKE_JOURNAL_EXTRA".to_owned(),
        format!("{}\n{}", sc.journal_extra(), plant.text),
    ));
    opts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_anything_the_agent_emits_over_both_boots() {
    let sc = Scenario::new("secrets-files");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let mut secrets = secrets_of(&sc, true);
    // Issue 12 (2, 6): the encoded forms of the token and the other auth,
    // and the host's secrets by shape, in the journal and in a record file
    // (whose summary becomes `progress_info`).
    let plant = plant_everywhere(&sc);
    secrets.extend(
        plant
            .needles
            .iter()
            .map(|(label, needle)| (&*Box::leak(label.clone().into_boxed_str()), needle.clone())),
    );
    let contract_before: Vec<PathBuf> = all_files(&sc.config_dir);

    // The budget spans both boots; the reboot (SIGTERM) ends the first.
    let (seen, run) = watched_run_until(
        &sc,
        "first boot, trace",
        &with_journal(at_trace(&sc, trace_opts("60s", None)), &sc, &plant),
        &secrets,
        true,
        Some(2),
    )
    .await;
    run.assert_code(0);
    assert!(run.stderr_text().contains("TRACE"), "not at trace level");
    assert!(
        seen.commands_logged.values().sum::<usize>() > 3,
        "no child command seen: {seen:?}"
    );
    assert!(seen.bundles >= 2, "bundles seen: {}", seen.bundles);
    report("first boot (pull secret file)", &seen, &run);

    // The files it wrote: its state, and nothing new in the contract dir.
    let mut hits = Vec::new();
    for file in all_files(&sc.state_dir) {
        scan(
            &file.display().to_string(),
            &std::fs::read(&file).unwrap(),
            &secrets,
            &mut hits,
        );
    }
    assert!(hits.is_empty(), "{hits:?}");
    assert_eq!(
        all_files(&sc.config_dir),
        contract_before,
        "the agent wrote into the contract dir"
    );

    // Second boot to its cleanup: the secret file is gone afterwards.
    sc.reboot("9b2e4f61-0c3d-4a7b-8e15-2f6d0a9c4b77");
    admin_set_stage(&base, HOST_ID, "Configuring", None).await;
    let kubelet = start_kubelet(true).await;
    let (seen, run) = watched_run(
        &sc,
        "second boot, trace",
        &with_journal(at_trace(&sc, trace_opts("30s", Some(kubelet))), &sc, &plant),
        &secrets,
        true,
    )
    .await;
    run.assert_code(0);
    report("second boot to cleanup (pull secret file)", &seen, &run);
    // What it sent the service: progress_info above all.
    let mut hits = Vec::new();
    let requests = serde_json::to_vec(&api_requests(&base).await).unwrap();
    scan(
        "the requests the service received",
        &requests,
        &secrets,
        &mut hits,
    );
    assert!(hits.is_empty(), "{hits:?}");
    assert!(
        contains(&requests, b"progress_info"),
        "no progress_info sent: the record summary was not exercised"
    );
    assert!(!sc.config_dir.join("pull-secret").exists());
    assert!(all_files(&sc.state_dir).is_empty());
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_from_the_environment_is_not_passed_on_to_commands() {
    // The upstream unit's way (PULL_SECRET_TOKEN): the agent's own
    // environment holds it, as its caller put it there; no command it runs
    // may inherit it, and nothing else may show it.
    let sc = Scenario::new("secrets-env");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::BareToken, true);
    std::fs::remove_file(sc.config_dir.join("pull-secret")).unwrap();
    let mut secrets = secrets_of(&sc, false);
    let mut opts = at_trace(&sc, trace_opts("3s", None));
    opts.env
        .push(("PULL_SECRET_TOKEN".to_owned(), sc.token.clone()));
    // A proxy password given the same way is not passed on either (the
    // service on loopback is reached direct through NO_PROXY).
    let proxy_password = "Pr0xy-env-pa55w0rd";
    secrets.push(("proxy password", proxy_password.to_owned()));
    opts.env.push((
        "HTTPS_PROXY".to_owned(),
        format!("http://reporter:{proxy_password}@127.0.0.1:9"),
    ));
    opts.env.push((
        "http_proxy".to_owned(),
        format!("http://reporter:{proxy_password}@127.0.0.1:9"),
    ));
    opts.env
        .push(("NO_PROXY".to_owned(), "127.0.0.0/8".to_owned()));
    let (seen, run) = watched_run(&sc, "token in env, trace", &opts, &secrets, false).await;
    run.assert_code(0);
    assert!(
        seen.commands_logged.values().sum::<usize>() > 3,
        "no child command seen: {seen:?}"
    );
    let state = admin_state(&base).await;
    assert_eq!(host_of(&state, HOST_ID)["current_stage"], LOCAL_IGNITION);
    report(
        "token from PULL_SECRET_TOKEN, proxy from HTTP(S)_PROXY",
        &seen,
        &run,
    );
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finishing_an_interrupted_cleanup_passes_no_secret_to_systemctl() {
    // A cleanup cut short (killed right after the secret went) under the
    // upstream unit's environment: the token and a proxy URL with a
    // password. The start that finishes it runs `systemctl disable` first
    // of all; before the fix, before the environment was scrubbed.
    let sc = Scenario::new("secrets-resume");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::BareToken, true);
    std::fs::remove_file(sc.config_dir.join("pull-secret")).unwrap();
    std::fs::write(
        sc.state_dir.join("cleanup-started"),
        "cleanup started at 2026-11-22T10:00:00Z\n",
    )
    .unwrap();
    let mut secrets = secrets_of(&sc, false);
    let mut opts = at_trace(&sc, trace_opts("30s", None));
    opts.env
        .push(("PULL_SECRET_TOKEN".to_owned(), sc.token.clone()));
    let proxy_password = "Pr0xy-resume-pa55w0rd";
    secrets.push(("proxy password", proxy_password.to_owned()));
    for name in ["HTTPS_PROXY", "http_proxy"] {
        opts.env.push((
            name.to_owned(),
            format!("http://reporter:{proxy_password}@127.0.0.1:9"),
        ));
    }
    let (seen, run) = watched_run(
        &sc,
        "interrupted cleanup, token in env",
        &opts,
        &secrets,
        false,
    )
    .await;
    run.assert_code(0);
    assert!(
        run.stderr_text()
            .contains("an earlier cleanup was interrupted; finishing it"),
        "{}",
        run.stderr_text()
    );
    assert_eq!(
        seen.commands_logged.get("systemctl"),
        Some(&1),
        "systemctl disable not seen: {seen:?}"
    );
    report(
        "interrupted cleanup finished (token and proxy password in the environment)",
        &seen,
        &run,
    );
    sc.assert_cleaned_up("the finished cleanup");
    assert!(
        api_requests(&base).await.is_empty(),
        "finishing a cleanup needs no service"
    );
    sc.final_checks(Some(&base)).await;
}

/// Replaces `link` (a directory of the fixture root) by a symlink to
/// `target`, a directory outside the root.
fn swap_for_link(link: &Path, target: &Path) {
    std::fs::remove_dir_all(link).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinked_directories_do_not_escape_the_root() {
    let sc = Scenario::new("root-escape");
    // What lies outside the root: its content must reach neither a bundle
    // nor `progress_info`, although the root links to it.
    let outside = sc.tmp.path().join("outside");
    let outside_etc = outside.join("etc");
    let outside_records = outside.join("openshift");
    std::fs::create_dir_all(&outside_etc).unwrap();
    std::fs::create_dir_all(&outside_records).unwrap();
    std::fs::write(outside_etc.join("hostname"), "escaped-hostname-7f3a\n").unwrap();
    std::fs::write(
        outside_etc.join("resolv.conf"),
        "nameserver 203.0.113.9 # escaped-resolv-7f3a\n",
    )
    .unwrap();
    std::fs::write(
        outside_records.join("bootkube.json"),
        r#"[{"phase":"service start"},{"phase":"stage start","stage":"escaped-stage-7f3a"},
{"phase":"stage end","stage":"escaped-stage-7f3a","result":"failure","errorLine":"1 escaped-7f3a"}]"#,
    )
    .unwrap();
    // An absolute link, and a relative one climbing out of the root.
    swap_for_link(&sc.root.join("etc"), &outside_etc);
    let climb = format!(
        "{}{}",
        "../".repeat(sc.root.join("var/log").components().count()),
        outside_records.display()
    );
    swap_for_link(&sc.root.join("var/log/openshift"), Path::new(&climb));
    assert!(
        std::fs::read_to_string(sc.root.join("var/log/openshift/bootkube.json"))
            .unwrap()
            .contains("escaped-stage-7f3a"),
        "the links do lead outside the root for a plain reader"
    );

    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let run = sc.run_agent("root escape", &trace_opts("3s", None)).await;
    run.assert_code(0);

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    let info = host["progress_info"].as_str().unwrap_or_default();
    assert!(
        !info.contains("7f3a"),
        "progress_info from outside the root: {info:?}"
    );
    let bundle = bundle_of(host, "host_boot").unwrap_or_else(|| panic!("no bundle: {host}"));
    let members = open_bundle(Path::new(bundle["path"].as_str().unwrap()));
    assert!(member(&members, "manifest.json").is_some());
    for m in &members {
        assert!(
            !contains(&m.data, b"7f3a") && !m.name.contains("7f3a"),
            "{} holds content from outside the root",
            m.name
        );
    }
    // Inside the root those paths lead nowhere: skipped, not read outside.
    let manifest: serde_json::Value =
        serde_json::from_slice(&member(&members, "manifest.json").unwrap().data).unwrap();
    let hostname = manifest["collectors"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["files"].as_array().into_iter().flatten())
        .find(|f| f["path"] == "network/hostname")
        .unwrap();
    assert_eq!(hostname["status"], "skipped", "{hostname}");
    assert!(!run.stderr_text().contains("7f3a"));
}

// ---------------------------------------------------------------------------
// Encoded forms of the agent's secrets, and the host's secrets by shape

/// Percent-encoding of everything but RFC 3986's unreserved characters.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `user:password` an auth (base64 of it) holds.
fn decode_auth(auth: &str) -> (String, String) {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in auth.bytes().filter(|&c| c != b'=') {
        let v = u32::try_from(ALPHABET.iter().position(|&a| a == c).expect("base64")).unwrap();
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push(u8::try_from(bits >> n).unwrap());
            bits &= (1 << n) - 1;
        }
    }
    let pair = String::from_utf8(out).expect("text");
    let password = pair.split_once(':').expect("user:password").1.to_owned();
    (pair, password)
}

/// The characters of base64(`blob`) that come from `secret`, put at byte
/// `offset` of the blob (those at its edges mix in the blob's other bytes).
fn base64_inside(blob_prefix: &str, secret: &str) -> String {
    let blob = base64(format!("{blob_prefix}{secret}\"}}").as_bytes());
    let start = (8 * blob_prefix.len()).div_ceil(6);
    let end = 8 * (blob_prefix.len() + secret.len()) / 6;
    blob[start..end].to_owned()
}

/// What is planted: text for a collected host file and for the journal, a
/// file name, and what must never come out (the agent's own secrets in the
/// forms a host shows them, the host's own secrets by shape).
struct Planted {
    text: String,
    needles: Vec<(String, String)>,
}

fn planted(token: &str, other_auth: Option<&str>, pull_secret: Option<&str>) -> Planted {
    let mut text = String::new();
    let mut needles: Vec<(String, String)> = Vec::new();
    let mut plant = |label: &str, line: String, needle: &str| {
        text.push_str(&line);
        text.push('\n');
        needles.push((label.to_owned(), needle.to_owned()));
    };
    let mut auths = vec![("token", token)];
    auths.extend(other_auth.map(|a| ("other auth", a)));
    for (name, auth) in auths {
        let (pair, password) = decode_auth(auth);
        let url = url_encode(auth);
        plant(
            &format!("{name}, URL-encoded"),
            format!("GET /v2/hosts?api_key={url}&x=1"),
            &url,
        );
        plant(
            &format!("{name}, decoded user:password"),
            format!("podman login with {pair} ok"),
            &pair,
        );
        plant(
            &format!("{name}, password alone"),
            format!("auth failed for password {password} (retrying)"),
            &password,
        );
        plant(
            &format!("{name}, cut to 44 characters"),
            format!("X-Secret-Kay {}... (truncated)", &auth[..44]),
            &auth[..44],
        );
        let cut = 30.min(auth.len() - 21);
        plant(
            &format!("{name}, before a line wrap"),
            format!(
                "wrapped header value {}\n      {} end",
                &auth[..cut],
                &auth[cut..]
            ),
            &auth[..cut],
        );
        plant(
            &format!("{name}, after a line wrap"),
            String::new(),
            &auth[cut..],
        );
        for prefix in ["", "x", "xy"] {
            let inside = base64_inside(prefix, auth);
            let blob = base64(format!("{prefix}{auth}\"}}").as_bytes());
            plant(
                &format!("{name}, base64 at offset {}", prefix.len()),
                format!("config blob {blob}"),
                &inside,
            );
        }
    }
    if let Some(pull_secret) = pull_secret {
        let whole = base64(pull_secret.as_bytes());
        plant(
            "the pull secret, base64 (.dockerconfigjson)",
            format!("  .dockerconfigjson: {whole}"),
            &whole,
        );
        let escaped = serde_json::to_string(pull_secret).unwrap();
        plant(
            "the pull secret, JSON-escaped",
            format!("{{\"level\":\"debug\",\"msg\":{escaped}}}"),
            &escaped[1..escaped.len() - 1],
        );
    }
    // The host's own secrets, by shape.
    plant(
        "PEM private key body",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAplantedpemline1\nplantedpemline2AAAAB3NzaC1\n-----END RSA PRIVATE KEY-----".to_owned(),
        "plantedpemline",
    );
    plant(
        "OPENSSH private key body",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEplantedssh\n-----END OPENSSH PRIVATE KEY-----".to_owned(),
        "plantedssh",
    );
    plant(
        "kubeconfig client-key-data",
        "    client-key-data: LS0tLS1CRUdJTplantedclientkey".to_owned(),
        "plantedclientkey",
    );
    plant(
        "kubeconfig token",
        "    token: sha256~plantedkubeconfigtoken".to_owned(),
        "plantedkubeconfigtoken",
    );
    plant(
        "aws_secret_access_key",
        "aws_secret_access_key = wJalrXUtnFEMIplantedaws".to_owned(),
        "plantedaws",
    );
    plant(
        "ignition passwordHash",
        r#"{"passwd":{"users":[{"name":"core","passwordHash":"$6$plantedhash$x"}]}}"#.to_owned(),
        "plantedhash",
    );
    plant(
        "mid-line key: value",
        "level=info msg=connect password: plantedcolonpw user=core".to_owned(),
        "plantedcolonpw",
    );
    plant(
        "mid-line key=value",
        "level=info registry_token=plantedequalspw next=1".to_owned(),
        "plantedequalspw",
    );
    plant(
        "-p PW",
        "+ podman login -u core -p plantedshortflag quay.io".to_owned(),
        "plantedshortflag",
    );
    plant(
        "--password PW",
        "+ skopeo copy --password plantedlongflag docker://a docker://b".to_owned(),
        "plantedlongflag",
    );
    Planted { text, needles }
}

fn find_needles(what: &str, bytes: &[u8], needles: &[(String, String)], hits: &mut Vec<String>) {
    for (label, needle) in needles {
        if contains(bytes, needle.as_bytes()) {
            hits.push(format!("{label} ({needle}) in {what}"));
        }
    }
}

/// Every byte of a stored bundle: raw, decompressed (tar headers, so member
/// names, included), and each member's content, nested gzip opened.
fn bundle_hits(path: &Path, needles: &[(String, String)], hits: &mut Vec<String>) {
    let raw = std::fs::read(path).expect("read bundle");
    find_needles("the bundle", &raw, needles, hits);
    let whole = gunzip(&raw).expect("a gzip bundle");
    find_needles("the decompressed bundle", &whole, needles, hits);
    for m in open_bundle(path) {
        find_needles(
            &format!("member name {}", m.name),
            m.name.as_bytes(),
            needles,
            hits,
        );
        find_needles(&format!("member {}", m.name), &m.data, needles, hits);
        if let Some(inner) = gunzip(&m.data) {
            find_needles(
                &format!("member {} (gunzipped)", m.name),
                &inner,
                needles,
                hits,
            );
        }
    }
}

/// A base64 token of `user:password` with no `/` (it names a file below).
fn file_safe_token(tag: &str) -> String {
    (0..10_000)
        .map(|i| {
            base64(
                format!(
                    "e2e-{tag}:S3cr3t-{}-{i}-{}-zq",
                    std::process::id(),
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_nanos()
                )
                .as_bytes(),
            )
        })
        .find(|t| !t.contains('/') && t.ends_with('='))
        .unwrap()
}

#[test]
fn collect_never_ships_encoded_or_shaped_secrets() {
    // Issue 12 (2, 6): before, every one of these was shipped as is.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    copy_tree(&fixture_root(), &root);
    let token = file_safe_token("collect");
    let other = file_safe_token("collect-quay");
    let pull_secret = serde_json::json!({"auths": {
        "cloud.openshift.com": {"auth": token, "email": "e2e@example.com"},
        "quay.io": {"auth": other, "email": "e2e@example.com"}
    }})
    .to_string();
    let config = tmp.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("pull-secret"), &pull_secret).unwrap();
    let mut plant = planted(&token, Some(&other), Some(&pull_secret));
    plant.needles.push(("token".into(), token.clone()));
    plant.needles.push(("other auth".into(), other.clone()));
    plant
        .needles
        .push(("pull secret".into(), pull_secret.clone()));

    let hosts = root.join("etc/hosts");
    let mut text = std::fs::read_to_string(&hosts).unwrap();
    text.push_str(&plant.text);
    std::fs::write(&hosts, text).unwrap();
    // A record file named after the token: a member name, and (with its
    // failure line) the records summary and digest.
    std::fs::write(
        root.join(format!("var/log/openshift/{token}.json")),
        format!(
            r#"[{{"timestamp":"2020-01-01T00:00:00Z","phase":"service start"}},{{"timestamp":"2020-01-01T00:00:01Z","phase":"service end","result":"failure","errorLine":"pull failed: password={} auth {}"}}]"#,
            decode_auth(&token).1,
            url_encode(&token)
        ),
    )
    .unwrap();

    let bundle = tmp.path().join("host_boot.tar.gz");
    let out = std::process::Command::new(agent_bin())
        .args(["--log-level", "trace", "collect", "-o"])
        .arg(&bundle)
        .arg("--root")
        .arg(&root)
        .arg("--config-dir")
        .arg(&config)
        .args(["--kubelet-healthz-url", "http://127.0.0.1:9/healthz"])
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", fake_bin().display()))
        .env("HOME", tmp.path())
        .env("FAKE_SYSTEMCTL_LOG", tmp.path().join("systemctl.log"))
        .env("FAKE_JOURNAL_EXTRA", &plant.text)
        .output()
        .expect("run collect");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut hits = Vec::new();
    bundle_hits(&bundle, &plant.needles, &mut hits);
    find_needles("stdout", &out.stdout, &plant.needles, &mut hits);
    find_needles("stderr", &out.stderr, &plant.needles, &mut hits);
    assert!(
        hits.is_empty(),
        "secrets shipped:\n{}\n--- stderr:\n{}",
        hits.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );

    // Each planted line was there to be redacted: the journal and the
    // hosts file both show markers, and the renamed record is still there.
    let members = open_bundle(&bundle);
    let hosts_member = member(&members, "network/hosts").expect("network/hosts");
    let shown = String::from_utf8_lossy(&hosts_member.data);
    assert!(shown.matches("[REDACTED]").count() >= 20, "{shown}");
    assert!(
        member_names(&members)
            .iter()
            .any(|n| n.ends_with("records/[REDACTED].json")),
        "{:?}",
        member_names(&members)
    );
}
