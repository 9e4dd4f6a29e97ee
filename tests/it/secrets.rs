//! Every byte the agent emits, scanned for the agent token and the pull
//! secret's other registry auth: its log at trace level (stdout and
//! stderr), every bundle the mock stored (each one as it arrived, members
//! and nested gzip members decompressed), the command line and environment
//! of the agent and of every command it runs (`/proc/<pid>/cmdline` and
//! `environ`, polled while it runs), the files it holds open while it runs
//! (read through `/proc/<pid>/fd`, unlinked ones included),
//! and the files it leaves in its state and config directories. Zero hits.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;

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

/// `data` inflated while it is gzip (a gzip inside a gzip too), at most
/// 256 MiB: what a reader of the bundle could get out of a member.
fn gunzip(data: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    loop {
        let current = out.as_deref().unwrap_or(data);
        if current.len() < 2 || current[0] != 0x1f || current[1] != 0x8b {
            return out;
        }
        let mut inflated = Vec::new();
        let read = flate2::read::MultiGzDecoder::new(current)
            .take(256 << 20)
            .read_to_end(&mut inflated);
        if read.is_err() && inflated.is_empty() {
            return out;
        }
        out = Some(inflated);
    }
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
    plant_rotated_pod_log(&sc.root, &plant, &sc.token);
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

/// A rotated container log as kubelet leaves it (`0.log.<timestamp>.gz`)
/// holding every planted form and the token: shipped, it must be text,
/// redacted like any log (issue 25, 1).
fn plant_rotated_pod_log(root: &Path, plant: &Planted, token: &str) {
    let dir = root
        .join("var/log/pods/openshift-kube-apiserver_kube-apiserver-master-0_7d2c/kube-apiserver");
    std::fs::create_dir_all(&dir).unwrap();
    let mut log = String::new();
    for line in plant.text.lines() {
        log.push_str("2026-11-24T10:15:01.000000000+00:00 stderr F ");
        log.push_str(line);
        log.push('\n');
    }
    log.push_str("2026-11-24T10:15:02.000000000+00:00 stderr F X-Secret-Key: ");
    log.push_str(token);
    log.push('\n');
    std::fs::write(dir.join("0.log.20261124-101500.gz"), gzip(log.as_bytes())).unwrap();
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

/// Hex of `data`, as Go's `%x` / `%X` and `xxd -p` print it.
fn hex(data: &[u8], upper: bool) -> String {
    data.iter()
        .map(|b| {
            if upper {
                format!("{b:02X}")
            } else {
                format!("{b:02x}")
            }
        })
        .collect()
}

/// The inside of Go's `%v` of a byte slice: `[104 117 110]` without the
/// brackets.
fn go_bytes(data: &[u8]) -> String {
    data.iter().map(u8::to_string).collect::<Vec<_>>().join(" ")
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
        // Issue 25: hex (either case) and Go's `%v` of the auth, its
        // user:password and its password.
        for (what, secret) in [
            ("", auth),
            (" user:password", pair.as_str()),
            (" password", password.as_str()),
        ] {
            for (form, encoded) in [
                ("hex", hex(secret.as_bytes(), false)),
                ("HEX", hex(secret.as_bytes(), true)),
                ("%v", go_bytes(secret.as_bytes())),
            ] {
                plant(
                    &format!("{name}{what}, {form}"),
                    format!(
                        "level=debug msg=\"request\" data=[{encoded}] len={}",
                        secret.len()
                    ),
                    &encoded,
                );
            }
        }
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
        let hexed = hex(pull_secret.as_bytes(), false);
        plant("the pull secret, hex", format!("config {hexed}"), &hexed);
        let bytes = go_bytes(pull_secret.as_bytes());
        plant(
            "the pull secret, %v",
            format!("read config [{bytes}]"),
            &bytes,
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
    // Issue 25: shapes the redactor did not know.
    for (label, line, needle) in [
        (
            "camelCase clientSecret",
            "    clientSecret: plantedcamelclientsecret",
            "plantedcamelclientsecret",
        ),
        (
            "camelCase secretAccessKey",
            r#"{"accessKeyId":"AKIA0","secretAccessKey":"plantedcamelsak"}"#,
            "plantedcamelsak",
        ),
        (
            "camelCase bearerToken",
            "  bearerToken: plantedcamelbearer",
            "plantedcamelbearer",
        ),
        (
            "camelCase clientKeyData",
            r#"{"clientKeyData":"plantedcamelckd"}"#,
            "plantedcamelckd",
        ),
        (
            "secret: as a key",
            "  secret: plantedyamlsecret",
            "plantedyamlsecret",
        ),
        (
            "X-Api-Key header",
            "X-Api-Key: plantedxapikey",
            "plantedxapikey",
        ),
        (
            "Cookie header",
            "Cookie: theme=dark; session=plantedcookie",
            "plantedcookie",
        ),
        (
            "Set-Cookie header",
            "< Set-Cookie: sid=plantedsetcookie; Path=/; HttpOnly",
            "plantedsetcookie",
        ),
        (
            "ipmitool -P PW",
            "+ ipmitool -I lanplus -H 10.0.0.5 -U admin -P plantedipmipw chassis power status",
            "plantedipmipw",
        ),
        (
            "XML <password>",
            "<user><name>admin</name><password>plantedxmlpw</password></user>",
            "plantedxmlpw",
        ),
        (
            "XML <secret>",
            "  <secret>plantedxmlsecret</secret>",
            "plantedxmlsecret",
        ),
        (
            "URL password holding an @",
            "proxy http://proxyuser:first@plantedurlat@proxy.example.com:3128 set",
            "plantedurlat",
        ),
    ] {
        plant(label, line.to_owned(), needle);
    }
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

    plant_rotated_pod_log(&root, &plant, &token);
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

// ---------------------------------------------------------------------------
// Compressed and binary host files (issue 25, 1)

/// `text` as UTF-16LE: bytes redaction, which reads text, cannot see into.
fn utf16le(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// The manifest entry whose host source ends with `suffix`.
fn report_by_source<'a>(manifest: &'a serde_json::Value, suffix: &str) -> &'a serde_json::Value {
    manifest["collectors"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["files"].as_array().into_iter().flatten())
        .find(|f| f["source"].as_str().is_some_and(|s| s.ends_with(suffix)))
        .unwrap_or_else(|| panic!("no manifest entry from {suffix}: {manifest}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_and_binary_host_files_never_bypass_redaction() {
    // kubelet gzips rotated container logs (`0.log.<timestamp>.gz`): copied
    // byte for byte, the secrets inside reached the bundle unredacted and
    // the manifest said `redactions: 0`.
    let sc = Scenario::new("gz-logs");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let plant = planted(
        &sc.token,
        Some(&sc.other_auth),
        Some(&sc.pull_secret_json()),
    );
    let mut needles = plant.needles.clone();
    needles.push(("token".into(), sc.token.clone()));
    needles.push(("other auth".into(), sc.other_auth.clone()));

    let pods = sc.root.join("var/log/pods");
    let etcd = pods.join("openshift-etcd_etcd-master-0_0f3c9a1e/etcd");
    std::fs::create_dir_all(&etcd).unwrap();
    let mut rotated = String::from(
        "2026-11-24T10:15:00.000000000+00:00 stderr F starting etcd, rotated-marker-7e1\n",
    );
    for line in plant.text.lines() {
        rotated.push_str("2026-11-24T10:15:01.000000000+00:00 stderr F ");
        rotated.push_str(line);
        rotated.push('\n');
    }
    for line in [
        format!(
            "2026-11-24T10:15:02.000000000+00:00 stderr F sending X-Secret-Key: {}",
            sc.token
        ),
        "2026-11-24T10:15:03.000000000+00:00 stdout F last rotated line 7e1".to_owned(),
    ] {
        rotated.push_str(&line);
        rotated.push('\n');
    }
    std::fs::write(
        etcd.join("0.log.20261124-101500.gz"),
        gzip(rotated.as_bytes()),
    )
    .unwrap();
    std::fs::write(
        etcd.join("0.log"),
        "2026-11-24T10:20:00.000000000+00:00 stdout F current log 7e1\n",
    )
    .unwrap();
    // 1 GiB of zeros once inflated, an older rotation.
    std::fs::write(etcd.join("0.log.20261124-091500.gz"), gzip_bomb(1024)).unwrap();
    // A gzip inside a gzip: inflated once it is still compressed bytes.
    std::fs::write(
        etcd.join("0.log.20261124-081500.gz"),
        gzip(&gzip(rotated.as_bytes())),
    )
    .unwrap();
    // A log in UTF-16 with the token: binary to a reader of UTF-8 text.
    let sidecar = pods.join("openshift-etcd_etcd-master-0_0f3c9a1e/sidecar");
    std::fs::create_dir_all(&sidecar).unwrap();
    let wide = utf16le(&format!("token {} in a wide log\n", sc.token));
    needles.push((
        "token, UTF-16LE".into(),
        String::from_utf8_lossy(&wide[..40]).into_owned(),
    ));
    std::fs::write(sidecar.join("0.log"), &wide).unwrap();

    let opts = AgentOpts {
        timeout: Some("4s"),
        ..AgentOpts::default()
    };
    let running = sc.spawn_agent("gzip pod logs", &opts);
    let peak = watch_peak_rss(running.pid().expect("agent pid"));
    let run = sc.wait_agent(running).await;
    let peak_kib = peak.await.unwrap_or(0);
    run.assert_code(0);
    let state = admin_state(&base).await;
    let bundle = bundle_of(host_of(&state, HOST_ID), "host_boot").expect("a bundle");
    let path = PathBuf::from(bundle["path"].as_str().unwrap());

    // No secret in any form, anywhere in the bundle, gunzipped or not.
    let mut hits = Vec::new();
    bundle_hits(&path, &needles, &mut hits);
    assert!(hits.is_empty(), "secrets shipped:\n{}", hits.join("\n"));
    let members = open_bundle(&path);

    // Nothing compressed is shipped: the rotated log is text, redacted.
    for m in &members {
        assert!(
            !m.data.starts_with(&[0x1f, 0x8b]),
            "member {} is gzip-compressed",
            m.name
        );
        assert!(
            !(m.name.contains("/crio/pods/")
                && Path::new(&m.name).extension().is_some_and(|e| e == "gz")),
            "member {} keeps its .gz name",
            m.name
        );
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&member(&members, "manifest.json").unwrap().data).unwrap();
    let entry = report_by_source(&manifest, "0.log.20261124-101500.gz");
    assert_eq!(entry["status"], "ok", "{entry}");
    assert_eq!(entry["archived"], true, "{entry}");
    assert!(entry["redactions"].as_u64().unwrap() >= 10, "{entry}");
    let path_in_bundle = entry["path"].as_str().unwrap();
    assert!(
        Path::new(path_in_bundle)
            .extension()
            .is_none_or(|e| e != "gz"),
        "{entry}"
    );
    let text = String::from_utf8_lossy(
        &member(&members, path_in_bundle)
            .unwrap_or_else(|| panic!("no member {path_in_bundle}"))
            .data,
    )
    .into_owned();
    assert!(
        text.contains("rotated-marker-7e1")
            && text.contains("last rotated line 7e1")
            && text.contains("X-Secret-Key: [REDACTED]"),
        "{text}"
    );
    // The current log as before.
    assert!(members
        .iter()
        .any(|m| m.name.ends_with("/etcd/0.log") && contains(&m.data, b"current log 7e1")));
    // The bomb, the gzip in a gzip and the UTF-16 log are left out, and
    // the manifest says why.
    for (source, why) in [
        ("0.log.20261124-091500.gz", "gzip"),
        ("0.log.20261124-081500.gz", "not text"),
        ("sidecar/0.log", "not text"),
    ] {
        let entry = report_by_source(&manifest, source);
        assert_eq!(entry["status"], "skipped", "{entry}");
        assert_eq!(entry["archived"], false, "{entry}");
        let reason = entry["reason"].as_str().unwrap_or_default();
        assert!(reason.contains(why), "{source}: {reason}");
    }
    eprintln!("gzip pod logs: agent peak RSS {peak_kib} KiB");
    assert!(
        peak_kib > 0 && peak_kib < 32 << 10,
        "peak RSS {peak_kib} KiB is not below 32 MiB"
    );
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encoded_and_shaped_secrets_in_host_files_never_reach_the_uploaded_bundle() {
    // Issue 25 (9): the agent's own secrets in hex and Go `%v`, and the
    // host's secrets in the shapes added with them, in a host file the
    // agent collects: the bundle it uploads holds none of them.
    let sc = Scenario::new("secrets-host-files");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let plant = planted(
        &sc.token,
        Some(&sc.other_auth),
        Some(&sc.pull_secret_json()),
    );
    let hosts = sc.root.join("etc/hosts");
    let mut text = std::fs::read_to_string(&hosts).unwrap();
    text.push_str(&plant.text);
    std::fs::write(&hosts, text).unwrap();

    let run = sc
        .run_agent("planted host file", &trace_opts("3s", None))
        .await;
    run.assert_code(0);
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    let bundle = bundle_of(host, "host_boot").unwrap_or_else(|| panic!("no bundle: {host}"));
    let path = PathBuf::from(bundle["path"].as_str().expect("bundle path"));
    let mut hits = Vec::new();
    bundle_hits(&path, &plant.needles, &mut hits);
    find_needles("stdout", &run.stdout, &plant.needles, &mut hits);
    find_needles("stderr", &run.stderr, &plant.needles, &mut hits);
    assert!(hits.is_empty(), "secrets uploaded:\n{}", hits.join("\n"));
    // The planted lines were collected (redacted), not skipped.
    let members = open_bundle(&path);
    let shown = String::from_utf8_lossy(&member(&members, "network/hosts").expect("hosts").data)
        .into_owned();
    assert!(
        shown.contains("-P [REDACTED] chassis power status")
            && shown.contains("<password>[REDACTED]</password>")
            && shown.contains("proxyuser:[REDACTED]@proxy.example.com:3128"),
        "{shown}"
    );
    sc.final_checks(Some(&base)).await;
}

/// A pull secret of `n` registries, the first `cloud.openshift.com` with
/// `token`, each other auth base64 of a robot and a 32-character password
/// of its own; and its auths in order.
fn pull_secret_of(token: &str, n: usize) -> (String, Vec<String>) {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut auths = vec![token.to_owned()];
    for i in 1..n {
        let password: String = (0..32)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                char::from(alphabet[usize::try_from(state >> 33).unwrap() % alphabet.len()])
            })
            .collect();
        auths.push(base64(format!("mirror+robot{i:05}:{password}").as_bytes()));
    }
    let mut registries = serde_json::Map::new();
    for (i, auth) in auths.iter().enumerate() {
        let registry = if i == 0 {
            "cloud.openshift.com".to_owned()
        } else {
            format!("mirror-{i:05}.registry.example.com:5000")
        };
        registries.insert(
            registry,
            serde_json::json!({"auth": auth, "email": "ops@example.com"}),
        );
    }
    let json = serde_json::json!({ "auths": registries }).to_string();
    (json, auths)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_secret_of_6000_auths_keeps_the_agent_small_and_every_auth_redacted() {
    // Issue 25 (9): every auth cost ~50 KB of the redactor's memory (6,000:
    // ~250 MiB peak); none may be dropped to save it.
    const AUTHS: usize = 6000;
    const PEAK_LIMIT_KIB: u64 = 32 << 10;
    let sc = Scenario::new("secrets-6000-auths");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let (pull_secret, auths) = pull_secret_of(&sc.token, AUTHS);
    std::fs::write(sc.config_dir.join("pull-secret"), &pull_secret).unwrap();
    // Auths at the start, in the middle and at the end, in some of their
    // forms, in a host file (no key word on the line: only the literal
    // forms can catch them).
    let mut text = String::new();
    let mut needles: Vec<(String, String)> = Vec::new();
    for i in [0, 1, 2, AUTHS / 2 - 1, AUTHS / 2, AUTHS - 2, AUTHS - 1] {
        let auth = &auths[i];
        let (pair, password) = decode_auth(auth);
        for (form, needle) in [
            ("as is", auth.clone()),
            ("decoded", pair.clone()),
            ("pw alone", password.clone()),
            ("hex", hex(auth.as_bytes(), false)),
            ("pw HEX", hex(password.as_bytes(), true)),
            ("pw %v", go_bytes(password.as_bytes())),
            ("in base64", base64_inside("xy", auth)),
        ] {
            let _ = writeln!(text, "registry {i} {form}: [{needle}] ok");
            needles.push((format!("auth {i} {form}"), needle));
        }
    }
    let hosts = sc.root.join("etc/hosts");
    let mut hosts_text = std::fs::read_to_string(&hosts).unwrap();
    hosts_text.push_str(&text);
    std::fs::write(&hosts, hosts_text).unwrap();

    // A budget no machine's speed reaches: the run ends once a bundle is
    // stored and the service says the host is done.
    let opts = AgentOpts {
        timeout: Some("150s"),
        deadline: Duration::from_secs(180),
        ..AgentOpts::default()
    };
    let running = sc.spawn_agent("6000 auths", &opts);
    let pid = running.pid().expect("agent pid");
    let peak = std::thread::spawn(move || {
        let mut peak = 0;
        while let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            if let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        peak
    });
    let stored = wait_for_state(&base, Duration::from_secs(150), |state| {
        bundle_of(host_of(state, HOST_ID), "host_boot").is_some()
    })
    .await;
    assert!(
        bundle_of(host_of(&stored, HOST_ID), "host_boot").is_some(),
        "no bundle stored within the budget"
    );
    admin_set_stage(&base, HOST_ID, "Done", None).await;
    let run = sc.wait_agent(running).await;
    let peak_kib = peak.join().expect("peak watcher");
    run.assert_code(0);
    eprintln!(
        "{AUTHS} auths ({} bytes of pull secret): agent peak RSS {} KiB",
        pull_secret.len(),
        peak_kib
    );

    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    let bundle = bundle_of(host, "host_boot").unwrap_or_else(|| panic!("no bundle: {host}"));
    let path = PathBuf::from(bundle["path"].as_str().expect("bundle path"));
    let mut hits = Vec::new();
    bundle_hits(&path, &needles, &mut hits);
    find_needles("stderr", &run.stderr, &needles, &mut hits);
    assert!(hits.is_empty(), "auths uploaded:\n{}", hits.join("\n"));
    let members = open_bundle(&path);
    let shown = String::from_utf8_lossy(&member(&members, "network/hosts").expect("hosts").data)
        .into_owned();
    assert_eq!(
        shown.matches("[[REDACTED]] ok").count(),
        needles.len(),
        "{shown}"
    );
    assert!(
        peak_kib > 0 && peak_kib < PEAK_LIMIT_KIB,
        "peak RSS {peak_kib} KiB with {AUTHS} auths (limit {PEAK_LIMIT_KIB} KiB)"
    );
}

// ---------------------------------------------------------------------------
// The catalogue of secret shapes, in every output (issue 36, 3 and 4)

/// Every output of a run, of `inspect` (plain and `--json`) of the bundle it
/// uploaded and of `config check` on its host, for `needle`.
fn outputs_holding(
    sc: &Scenario,
    run: &AgentRun,
    host: &serde_json::Value,
    bundle: &Path,
    needle: &str,
) -> Vec<String> {
    let needles = [("planted value".to_owned(), needle.to_owned())];
    let mut hits = Vec::new();
    bundle_hits(bundle, &needles, &mut hits);
    find_needles("stdout", &run.stdout, &needles, &mut hits);
    find_needles("the agent's log", &run.stderr, &needles, &mut hits);
    let info = host["progress_info"].as_str().unwrap_or_default();
    find_needles("progress_info", info.as_bytes(), &needles, &mut hits);
    for args in [&["inspect"][..], &["inspect", "--json"][..]] {
        let out = std::process::Command::new(agent_bin())
            .args(args)
            .arg(bundle)
            .env_clear()
            .output()
            .expect("run inspect");
        assert!(out.status.success(), "{args:?}: {out:?}");
        find_needles(&format!("{args:?}"), &out.stdout, &needles, &mut hits);
        find_needles(
            &format!("{args:?} stderr"),
            &out.stderr,
            &needles,
            &mut hits,
        );
    }
    let out = std::process::Command::new(agent_bin())
        .args(["config", "check", "--root"])
        .arg(&sc.root)
        .arg("--config-dir")
        .arg(&sc.config_dir)
        .env_clear()
        .output()
        .expect("run config check");
    find_needles("config check", &out.stdout, &needles, &mut hits);
    find_needles("config check stderr", &out.stderr, &needles, &mut hits);
    hits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_catalogued_secret_shape_reaches_any_output() {
    use assisted_boot_reporter::redact::catalogue::CATALOGUE;
    let sc = Scenario::new("secrets-catalogue");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    // Each shape as the script traced the command, and quoted by the error
    // line that a diagnosis rule reads (so evidence, the headline and
    // progress_info would carry it); and in a host file.
    let mut journal = String::new();
    let mut hosts_text = String::new();
    for (i, (_, line)) in CATALOGUE.iter().enumerate() {
        let _ = writeln!(
            journal,
            "2026-11-22T10:03:{:02}.000000+0000 master-0 release-image-download.sh[1902]: + {line}",
            i % 60
        );
        let _ = writeln!(
            journal,
            "2026-11-22T10:03:{:02}.500000+0000 master-0 release-image-download.sh[1902]: Error: \
             initializing source docker://quay.io/openshift-release-dev/ocp-release@sha256:1e5c: \
             reading manifest sha256:1e5c in quay.io/openshift-release-dev/ocp-release: \
             unauthorized: authentication required ({line})",
            i % 60
        );
        let _ = writeln!(hosts_text, "# {line}");
    }
    let log = sc.root.join("fake-journal/release-image.log");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(&journal);
    std::fs::write(&log, text).unwrap();
    let hosts = sc.root.join("etc/hosts");
    let mut text = std::fs::read_to_string(&hosts).unwrap();
    text.push_str(&hosts_text);
    std::fs::write(&hosts, text).unwrap();

    let run = sc
        .run_agent("catalogue planted", &trace_opts("3s", None))
        .await;
    run.assert_code(0);
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    let bundle = bundle_of(host, "host_boot").unwrap_or_else(|| panic!("no bundle: {host}"));
    let path = PathBuf::from(bundle["path"].as_str().expect("bundle path"));
    let hits = outputs_holding(&sc, &run, host, &path, "PLANTED");
    assert!(
        hits.is_empty(),
        "planted values shipped:\n{}",
        hits.join("\n")
    );
    // The planted lines were read and redacted, not skipped: every journal
    // line of them shows a marker, and the diagnosis read the error lines.
    let members = open_bundle(&path);
    let journal_text: String = members
        .iter()
        .filter(|m| m.name.contains("/journal/"))
        .map(|m| String::from_utf8_lossy(&m.data).into_owned())
        .collect();
    let planted_lines = journal_text
        .lines()
        .filter(|l| l.contains("release-image-download.sh[1902]: + "))
        .filter(|l| l.contains("10:03:"))
        .collect::<Vec<_>>();
    assert!(
        planted_lines.len() >= CATALOGUE.len()
            && planted_lines.iter().all(|l| l.contains("[REDACTED]")),
        "{planted_lines:#?}"
    );
    let diagnosis = member(&members, "diagnosis.json").expect("diagnosis.json");
    let diagnosis = String::from_utf8_lossy(&diagnosis.data);
    assert!(diagnosis.contains("[REDACTED]"), "{diagnosis}");
    sc.final_checks(Some(&base)).await;
}
