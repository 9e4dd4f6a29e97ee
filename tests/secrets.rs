//! Every byte the agent emits, scanned for the agent token and the pull
//! secret's other registry auth: its log at trace level (stdout and
//! stderr), every bundle the mock stored (each one as it arrived, members
//! and nested gzip members decompressed), the command line and environment
//! of the agent and of every command it runs (`/proc/<pid>/cmdline` and
//! `environ`, polled while it runs), the files it holds open while it runs
//! (spill files included, read through `/proc/<pid>/fd` even once unlinked),
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
                // The fake journalctl's knob carries the token on purpose
                // (it is the journal line redaction must catch): the test
                // put it there, not the agent.
                for var in environ
                    .split(|b| *b == 0)
                    .filter(|v| !v.starts_with(b"FAKE_JOURNAL_EXTRA="))
                {
                    scan(
                        &format!(
                            "/proc/{pid}/environ ({shown}): {}",
                            String::from_utf8_lossy(
                                var.split(|b| *b == b'=').next().unwrap_or_default()
                            )
                        ),
                        var,
                        secrets,
                        &mut seen.hits,
                    );
                }
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
            if !target.starts_with('/')
                || target.starts_with("/dev/")
                || target.starts_with("/proc/")
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
    let Some(raw) = raw else {
        return;
    };
    seen.bundles += 1;
    seen.bundle_bytes += raw.len() as u64;
    let what = format!("bundle #{}", seen.bundles);
    scan(&what, &raw, secrets, &mut seen.hits);
    let whole = gunzip(&raw).unwrap_or_default();
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
    stop_after: Option<Duration>,
) -> (Seen, AgentRun) {
    let bundle = sc
        .data_dir
        .join("bundles")
        .join(CLUSTER_ID)
        .join(HOST_ID)
        .join("host_boot.tar.gz");
    let running = sc.spawn_agent(label, opts);
    let pid = running.pid().expect("agent pid");
    let watch = Watch::start(pid, bundle, secrets.to_vec(), check_agent_environ);
    if let Some(after) = stop_after {
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        });
    }
    let run = sc.wait_agent(running).await;
    let mut seen = watch.finish();
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
        "SECRETS | {label} | {} log bytes at trace | {} processes ({:?}) | {} open files read ({} bytes): {:?} | {} bundles ({} bytes) | hits: {}",
        run.stderr.len() + run.stdout.len(),
        seen.processes.len(),
        seen.commands,
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
        // The token line comes first, then enough journal to need a spill file.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_anything_the_agent_emits_over_both_boots() {
    let sc = Scenario::new("secrets-files");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let secrets = secrets_of(&sc, true);
    let contract_before: Vec<PathBuf> = all_files(&sc.config_dir);

    // The budget spans both boots; the reboot (SIGTERM) ends the first.
    let (seen, run) = watched_run_until(
        &sc,
        "first boot, trace",
        &at_trace(&sc, trace_opts("60s", None)),
        &secrets,
        true,
        Some(Duration::from_secs(3)),
    )
    .await;
    run.assert_code(0);
    assert!(run.stderr_text().contains("TRACE"), "not at trace level");
    assert!(seen.processes.len() > 3, "no child command seen: {seen:?}");
    assert!(seen.bundles >= 2, "bundles seen: {}", seen.bundles);
    assert!(
        seen.open_files.iter().any(|f| f.contains("spill")),
        "no spill file seen open: {:?}",
        seen.open_files
    );
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
        &at_trace(&sc, trace_opts("30s", Some(kubelet))),
        &secrets,
        true,
    )
    .await;
    run.assert_code(0);
    report("second boot to cleanup (pull secret file)", &seen, &run);
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
    let secrets = secrets_of(&sc, false);
    let mut opts = at_trace(&sc, trace_opts("3s", None));
    opts.env
        .push(("PULL_SECRET_TOKEN".to_owned(), sc.token.clone()));
    let (seen, run) = watched_run(&sc, "token in env, trace", &opts, &secrets, false).await;
    run.assert_code(0);
    assert!(seen.processes.len() > 3, "no child command seen: {seen:?}");
    let state = admin_state(&base).await;
    assert_eq!(host_of(&state, HOST_ID)["current_stage"], LOCAL_IGNITION);
    report("token from PULL_SECRET_TOKEN", &seen, &run);
    sc.final_checks(Some(&base)).await;
}
