//! What the agent reads from disk for itself — the discovery contract, its
//! ledger, the kernel's boot ID — when it is not what its writers leave:
//! the real binary against the real mock, each fault planted where the
//! discovery agent, the reporter itself or the kernel would have written
//! the file (issue 25). `docs/reliability.md` ("Hostile host files") lists
//! each row with what the agent does.

use std::path::Path;
use std::time::Duration;

use crate::common::*;

/// A run that refuses its configuration ends in well under this.
const QUICK: Duration = Duration::from_secs(10);
/// The peak RSS an agent reading a bounded file stays under (the unit's
/// MemoryHigh is 128 MiB; reading `/dev/zero` unbounded takes gigabytes).
const RSS_BOUND_KIB: u64 = 32 << 10;
/// Past this the watcher kills the agent: an unbounded read must fail the
/// test, not take the machine's memory.
const RSS_KILL_KIB: u64 = 256 << 10;

fn opts(timeout: &'static str) -> AgentOpts {
    AgentOpts {
        timeout: Some(timeout),
        deadline: Duration::from_secs(60),
        ..AgentOpts::default()
    }
}

/// Kills the agent (a child of `time`, `wrapper`) when its RSS passes
/// [`RSS_KILL_KIB`].
fn guard_rss(wrapper: u32) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let children = format!("/proc/{wrapper}/task/{wrapper}/children");
        loop {
            let Ok(list) = tokio::fs::read_to_string(&children).await else {
                return;
            };
            for pid in list.split_whitespace() {
                let status =
                    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let rss = status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse::<u64>().ok());
                if rss.is_some_and(|kib| kib > RSS_KILL_KIB) {
                    let _ = std::process::Command::new("kill")
                        .args(["-KILL", pid])
                        .status();
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
}

/// Runs the agent under GNU time, which reads its peak RSS from `wait4`
/// however short the run (polling `/proc` misses a run of milliseconds).
async fn run_measured(sc: &Scenario, label: &str, opts: &AgentOpts) -> (AgentRun, u64) {
    let report = sc.tmp.path().join(format!(
        "rss-{}",
        label.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    ));
    let opts = AgentOpts {
        program: Some(vec![
            "/usr/bin/time".into(),
            "-f".into(),
            "%M".into(),
            "-o".into(),
            report.clone(),
            agent_bin(),
        ]),
        ..opts.clone()
    };
    let running = sc.spawn_agent(label, &opts);
    let guard = guard_rss(running.pid().expect("time's pid"));
    let run = sc.wait_agent(running).await;
    guard.abort();
    // "Command terminated by signal 9" comes first when the guard killed it.
    let peak = std::fs::read_to_string(&report)
        .unwrap_or_default()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    eprintln!("{label}: peak RSS {peak} KiB");
    (run, peak)
}

fn boot_id(sc: &Scenario) -> String {
    std::fs::read_to_string(sc.boot_id_path())
        .expect("fixture boot ID")
        .trim()
        .to_owned()
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn link_to_dev_zero(path: &Path) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink("/dev/zero", path).expect("symlink to /dev/zero");
}

async fn stage_of(base: &str) -> String {
    let state = admin_state(base).await;
    host_of(&state, HOST_ID)["current_stage"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Asserts the run gave up at once on its configuration, as documented
/// (one error line, exit 0, nothing removed: the credentials stay).
fn assert_refused_at_start(sc: &Scenario, run: &AgentRun, needle: &str) {
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        run.elapsed < QUICK,
        "{:?} to refuse its configuration",
        run.elapsed
    );
    assert!(stderr.contains(needle), "no {needle:?} in:\n{stderr}");
    assert!(stderr.contains("exiting"), "{stderr}");
    assert!(
        sc.config_dir.join("host-id").exists(),
        "the contract is removed only when the job is over"
    );
    assert!(!sc.disabled_unit(), "{:?}", sc.systemctl_calls());
}

// ---------------------------------------------------------------------------
// Point 2: impossible numbers in the ledger

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_with_impossible_numbers_is_distrusted_not_fatal() {
    // Each used to panic turning the value into a Duration (exit 101 in a
    // debug build, 134 in the release build): systemd restarts it, it
    // panics again, and the credentials are never removed.
    /// The ledger's text, given this boot's ID.
    type Ledger = fn(&str) -> String;
    let cases: [(&str, &str, Ledger); 2] = [
        ("spent", "spent_checkpoint_secs = 1e300", |_| {
            r#"{"version":1,"boots":[],"spent_checkpoint_secs":1e300}"#.to_owned()
        }),
        ("uptime", "first_seen_uptime_secs = -1e300", |boot| {
            format!(
                r#"{{"version":1,"boots":[{{"boot_id":"{boot}","first_seen":"2026-11-22T10:00:00Z",
                "first_seen_uptime_secs":-1e300,"spent_at_first_seen_secs":0}}]}}"#
            )
        }),
    ];
    for (tag, field, ledger) in cases {
        let sc = Scenario::new(&format!("ledger-{tag}"));
        let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
        let base = mock.base_url();
        sc.write_config(&base, SecretForm::PullSecretJson, true);
        std::fs::write(sc.state_dir.join("ledger.json"), ledger(&boot_id(&sc))).unwrap();

        let run = sc.run_agent(&format!("ledger {field}"), &opts("4s")).await;
        run.assert_code(0);
        let stderr = run.stderr_text();
        assert!(
            stderr.contains(&format!("is corrupt (an impossible value: {field})"))
                && stderr.contains("kept it as")
                && stderr.contains("starting afresh"),
            "{stderr}"
        );
        // Distrusted like a corrupt ledger: a first boot, reported and
        // shipped, and the job ends at the budget as always.
        assert!(stderr.contains("boot 1 from disk"), "{stderr}");
        assert_eq!(stage_of(&base).await, LOCAL_IGNITION);
        assert!(stderr.contains("uploaded the final"), "{stderr}");
        sc.assert_cleaned_up("budget spent");
        sc.final_checks(Some(&base)).await;
    }
}

// ---------------------------------------------------------------------------
// Point 4: files read without bounds

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_at_service_url_is_refused_not_waited_on() {
    let sc = Scenario::new("fifo-url");
    sc.write_config("http://127.0.0.1:9", SecretForm::PullSecretJson, true);
    let url = sc.config_dir.join("service-url");
    mkfifo(&url);
    // Nothing ever writes to it: the read used to wait forever, before any
    // deadline of the run existed.
    let run = sc
        .run_agent(
            "FIFO at service-url",
            &AgentOpts {
                deadline: Duration::from_secs(20),
                ..opts("4s")
            },
        )
        .await;
    assert_refused_at_start(
        &sc,
        &run,
        &format!("{} is a FIFO (only regular files are read)", url.display()),
    );
    sc.final_checks(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_zero_as_the_pull_secret_or_the_ledger_keeps_memory_flat() {
    // The pull secret: refused before anything else happens.
    let sc = Scenario::new("zero-secret");
    sc.write_config("http://127.0.0.1:9", SecretForm::BareToken, true);
    let secret = sc.config_dir.join("pull-secret");
    link_to_dev_zero(&secret);
    let (run, peak) = run_measured(&sc, "pull-secret -> /dev/zero", &opts("4s")).await;
    assert!(
        peak > 0 && peak < RSS_BOUND_KIB,
        "peak RSS {peak} KiB reading a pull secret linked to /dev/zero"
    );
    assert_refused_at_start(
        &sc,
        &run,
        &format!(
            "{} is a character device (only regular files are read)",
            secret.display()
        ),
    );

    // The ledger: distrusted like a corrupt one, and the job goes on to its
    // end (stage, bundles, the last bundle, cleanup).
    let sc = Scenario::new("zero-ledger");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let ledger = sc.state_dir.join("ledger.json");
    link_to_dev_zero(&ledger);
    let (run, peak) = run_measured(&sc, "ledger -> /dev/zero", &opts("4s")).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains(&format!(
            "ledger {} is corrupt ({} is a character device (only regular files are read)); \
             kept it as {}.corrupt",
            ledger.display(),
            ledger.display(),
            ledger.display()
        )),
        "{stderr}"
    );
    assert!(
        peak > 0 && peak < RSS_BOUND_KIB,
        "peak RSS {peak} KiB with a ledger linked to /dev/zero"
    );
    assert!(stderr.contains("uploaded the final"), "{stderr}");
    assert_eq!(stage_of(&base).await, LOCAL_IGNITION);
    // The link was set aside, never followed, and cleanup removed it.
    sc.assert_cleaned_up("budget spent");
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_contract_files_are_refused_naming_the_file_and_its_cap() {
    let sc = Scenario::new("oversized");
    sc.write_config("http://127.0.0.1:9", SecretForm::PullSecretJson, true);
    let host_id = sc.config_dir.join("host-id");
    let secret = sc.config_dir.join("pull-secret");
    let ca = sc.config_dir.join("ca.crt");
    let original_host_id = std::fs::read(&host_id).unwrap();

    // Each cap in turn; the one-value files are read first.
    std::fs::write(&host_id, format!("{HOST_ID}\n{}", " ".repeat(5000))).unwrap();
    let run = sc.run_agent("host-id of 5 KB", &opts("4s")).await;
    assert_refused_at_start(
        &sc,
        &run,
        &format!(
            "{} holds more than 4096 bytes, the size cap of a one-value file; refusing to read it",
            host_id.display()
        ),
    );

    std::fs::write(&host_id, &original_host_id).unwrap();
    std::fs::write(&secret, vec![b'A'; 2 << 20]).unwrap();
    set_mode(&secret, 0o600);
    let run = sc.run_agent("pull-secret of 2 MiB", &opts("4s")).await;
    assert_refused_at_start(
        &sc,
        &run,
        &format!(
            "{} holds more than 1048576 bytes, the size cap of a pull secret",
            secret.display()
        ),
    );

    std::fs::write(&secret, sc.pull_secret_json()).unwrap();
    std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n".repeat(80_000)).unwrap();
    let run = sc.run_agent("ca.crt of 2 MiB", &opts("4s")).await;
    assert_refused_at_start(
        &sc,
        &run,
        &format!(
            "{} holds more than 1048576 bytes, the size cap of a CA bundle",
            ca.display()
        ),
    );
    sc.final_checks(None).await;
}

// ---------------------------------------------------------------------------
// Point 11: the small ones

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_secret_with_a_byte_order_mark_is_accepted() {
    let sc = Scenario::new("bom");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    // As a Windows editor saves it: UTF-8 with a byte order mark.
    let secret = sc.config_dir.join("pull-secret");
    std::fs::write(&secret, format!("\u{feff}{}\n", sc.pull_secret_json())).unwrap();
    set_mode(&secret, 0o600);

    let run = sc.run_agent("pull secret with a BOM", &opts("4s")).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(!stderr.contains("bare token"), "{stderr}");
    // The token inside was found and accepted by the service.
    assert_eq!(stage_of(&base).await, LOCAL_IGNITION);
    assert!(stderr.contains("uploaded the final"), "{stderr}");
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_boot_number_saturates_instead_of_wrapping() {
    let sc = Scenario::new("boot-number");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    // A ledger that has dropped u32::MAX boots: this boot is the next one.
    // `2 + dropped` used to overflow (a panic in debug builds; a wrap to
    // boot 1, "Booted with local ignition" reported backwards, in release).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    std::fs::write(
        sc.state_dir.join("ledger.json"),
        format!(
            r#"{{"version":1,"dropped":4294967295,"first_start_unix":{now},"boots":[
            {{"boot_id":"0b5e7d1c-0000-4000-8000-000000000001","first_seen":"2026-11-22T10:00:00Z",
              "first_seen_uptime_secs":1.0}}]}}"#
        ),
    )
    .unwrap();
    let run = sc.run_agent("dropped = u32::MAX", &opts("4s")).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(stderr.contains("boot 4294967295 from disk"), "{stderr}");
    assert_eq!(stage_of(&base).await, CONTROL_PLANE_IGNITION);
    sc.final_checks(Some(&base)).await;
}

/// A read-only tmpfs over the state directory, unmounted when dropped.
struct ReadOnlyTmpfs(std::path::PathBuf);

impl ReadOnlyTmpfs {
    fn mount(dir: &Path) -> Self {
        let dir_text = dir.to_string_lossy();
        for args in [
            vec![
                "-t",
                "tmpfs",
                "-o",
                "size=1m,mode=0700",
                "abr-test",
                &dir_text,
            ],
            vec!["-o", "remount,ro", &dir_text],
        ] {
            let ok = std::process::Command::new("mount")
                .args(&args)
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                ok,
                "mount {args:?}: this test needs root (CI and scripts/test run as root)"
            );
        }
        ReadOnlyTmpfs(dir.to_owned())
    }
}

impl Drop for ReadOnlyTmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_state_dir_warns_only_about_files_that_exist() {
    let sc = Scenario::new("ro-state");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let mount = ReadOnlyTmpfs::mount(&sc.state_dir);

    // To the end of the budget: the cleanup goes over every state file.
    let run = sc.run_agent("read-only state dir", &opts("4s")).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    // The real failure is said (the ledger cannot be written) ...
    assert!(
        stderr.contains("Read-only file system") && stderr.contains("ledger"),
        "{stderr}"
    );
    // ... but no warning names a file that is not there: EROFS comes before
    // the name is looked up, so every state file "failed" to be removed.
    let phantom: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains(" WARN "))
        .filter(|line| {
            line.split_once("removing ")
                .and_then(|(_, rest)| rest.split_once(": "))
                .is_some_and(|(path, _)| Path::new(path).symlink_metadata().is_err())
        })
        .collect();
    assert!(
        phantom.is_empty(),
        "warnings about files that do not exist:\n{}",
        phantom.join("\n")
    );
    assert_eq!(stage_of(&base).await, LOCAL_IGNITION);
    assert!(!sc.config_dir.join("pull-secret").exists());
    drop(mount);
    sc.final_checks(Some(&base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_bundle_gets_the_stated_grace_when_the_budget_ends() {
    let sc = Scenario::new("grace");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);

    // A 4 s budget: a quarter would be 1 s, too short to collect a bundle;
    // the grace is 15 s, and the log says so with its rule.
    let run = sc.run_agent("4 s budget", &opts("4s")).await;
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains(
            "shipping the last bundle within a grace of 15s (a quarter of the budget, \
             at least 15s, at most 2m), then cleaning up"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("uploaded the final"), "{stderr}");
    assert!(
        run.elapsed < Duration::from_secs(4 + 15 + 5),
        "the run ended {:?} after its start, past budget + grace",
        run.elapsed
    );
    sc.assert_cleaned_up("budget spent");
    sc.final_checks(Some(&base)).await;
}

// ---------------------------------------------------------------------------
// Issue 36 (1, 2, 5): hostile journal lines under the unit's memory limit

/// The unit's `MemoryMax=`: above it systemd kills the agent.
const MEMORY_MAX: u64 = 256 << 20;
/// journald's default `LineMax`: the longest line a local process can put
/// in the journal in one piece.
const LINE_MAX: usize = 48 * 1024;
/// The newest line of the journal: the one that says why the boot failed.
const LAST_LINE: &str = "the newest line of the hostile journal";

/// A journal of plain lines of about `size` bytes in all, with the hostile
/// lines among them when `hostile`: the redactor's worst (the issue's 48
/// KiB line of `ipmitool -P `, twenty of key words run together, and every
/// shape of `redact::hostile` at `LINE_MAX`); without them, as many plain
/// bytes.
fn journal_file(path: &Path, size: usize, hostile: bool) {
    use assisted_boot_reporter::redact::hostile::hostile_lines;
    let mut bad: Vec<Vec<u8>> = Vec::new();
    if hostile {
        let mut line = Vec::new();
        while line.len() < LINE_MAX {
            line.extend_from_slice(b"ipmitool -P ");
        }
        bad.push(line);
        for i in 0..20 {
            let word: &[u8] = [b"pin".as_slice(), b"key", b"auth"][i % 3];
            let mut line = Vec::new();
            while line.len() < LINE_MAX {
                line.extend_from_slice(word);
            }
            bad.push(line);
        }
        bad.extend(
            hostile_lines(LINE_MAX)
                .into_iter()
                .filter(|(name, _)| !name.starts_with("diagnosis"))
                .step_by(3)
                .map(|(_, mut line)| {
                    line.pop();
                    line
                }),
        );
    }
    let mut out = Vec::with_capacity(size + 1024);
    let mut n = 0usize;
    let every = (size / 120) / (bad.len() + 1);
    let mut next_bad = bad.into_iter();
    while out.len() < size {
        let prefix = format!(
            "2026-11-22T10:{:02}:{:02}.000000+0000 master-0 app[{}]: ",
            (n / 60) % 60,
            n % 60,
            1000 + n % 7
        );
        out.extend_from_slice(prefix.as_bytes());
        if hostile && every > 0 && n % every == every - 1 {
            if let Some(line) = next_bad.next() {
                out.extend_from_slice(&line);
                out.push(b'\n');
                n += 1;
                continue;
            }
        }
        out.extend_from_slice(b"plain line of an ordinary boot, nothing to see here at all\n");
        n += 1;
    }
    std::fs::write(path, out).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_journal_lines_ship_and_clean_up_under_the_memory_limit() {
    // Before, one 48 KiB line of `ipmitool -P ` took the agent past 300 MB
    // (the unit kills it at 256M on every start: no bundle, no cleanup),
    // and lines of key words run together cost seconds of CPU each. No
    // memory cgroup can be made here (the test machine's cgroup v2 has no
    // memory controller); RLIMIT_AS, which holds the whole address space
    // and not only what is resident, stands in for MemoryMax.
    let size = 6 << 20;
    let mut peaks = Vec::new();
    for hostile in [false, true] {
        let tag = if hostile { "hostile" } else { "plain" };
        let sc = Scenario::new(&format!("memory-limit-{tag}"));
        let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
        let base = mock.base_url();
        sc.write_config(&base, SecretForm::PullSecretJson, true);
        let journal = sc.tmp.path().join("journal.txt");
        journal_file(&journal, size, hostile);
        // The harness's arguments, with the command timeout of the issue.
        let dir = |p: &Path| p.to_string_lossy().into_owned();
        let raw_args = [
            "--log-level",
            "debug",
            "run",
            "--config-dir",
            &dir(&sc.config_dir),
            "--state-dir",
            &dir(&sc.state_dir),
            "--root",
            &dir(&sc.root),
            "--timeout",
            "120s",
            "--upload-interval",
            "2s",
            "--retry-initial-delay",
            "100ms",
            "--retry-max-delay",
            "500ms",
            "--retry-attempts",
            "3",
            "--command-timeout",
            "3s",
            "--request-timeout",
            "10s",
            "--kubelet-healthz-url",
            "http://127.0.0.1:9/healthz",
        ]
        .map(str::to_owned)
        .to_vec();
        let mut limited = AgentOpts {
            raw_args: Some(raw_args),
            env: vec![
                ("FAKE_JOURNAL_FILE".into(), journal.display().to_string()),
                ("FAKE_JOURNAL_LAST".into(), LAST_LINE.into()),
            ],
            deadline: Duration::from_secs(150),
            ..opts("4s")
        };
        let report = sc.tmp.path().join("rss");
        limited.program = Some(vec![
            "/usr/bin/prlimit".into(),
            format!("--as={MEMORY_MAX}").into(),
            "--".into(),
            "/usr/bin/time".into(),
            "-f".into(),
            "%M".into(),
            "-o".into(),
            report.clone(),
            agent_bin(),
        ]);
        // A budget no machine runs out of: the run ends when the first
        // bundle is stored and the service then says Done (a last bundle
        // and the cleanup follow), not at a time a loaded machine misses.
        let running = sc.spawn_agent(&format!("{tag} journal"), &limited);
        wait_for_state(&base, Duration::from_secs(110), |state| {
            bundle_of(host_of(state, HOST_ID), "host_boot").is_some()
        })
        .await;
        admin_set_stage(&base, HOST_ID, "Done", None).await;
        let run = sc.wait_agent(running).await;
        let peak: u64 = std::fs::read_to_string(&report)
            .unwrap_or_default()
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        eprintln!("{tag} journal: peak RSS {peak} KiB");
        run.assert_code(0);
        let stderr = run.stderr_text();
        assert!(stderr.contains("uploaded the final"), "{stderr}");
        let state = admin_state(&base).await;
        let bundle = check_host_boot_bundle(host_of(&state, HOST_ID));
        // The journal was read to its newest line within the command
        // timeout, and the hostile lines were in it.
        let this_boot = member(&bundle.members, "journal/this-boot.log")
            .map(|m| String::from_utf8_lossy(&m.data).into_owned())
            .unwrap_or_default();
        assert!(
            this_boot.contains(LAST_LINE),
            "{tag}: the newest line was not shipped: {}",
            bundle.manifest
        );
        if hostile {
            assert!(this_boot.contains("ipmitool -P [REDACTED]"), "{tag}");
            assert!(this_boot.contains("pinpinpin"), "{tag}");
        }
        sc.assert_cleaned_up(&format!("{tag} journal under the memory limit"));
        sc.final_checks(Some(&base)).await;
        peaks.push(peak);
    }
    // The hostile lines cost at most 4x the memory of the plain journal.
    assert!(
        peaks[1] <= 4 * peaks[0].max(1),
        "peak RSS plain {} KiB, hostile {} KiB",
        peaks[0],
        peaks[1]
    );
}
