//! Crash safety: the real agent killed with SIGKILL at random moments of
//! both boots of an installation, restarted after each kill, then left to
//! finish.
//!
//! After every kill: the ledger parses (never torn, never set aside as
//! corrupt) and lists this installation's boots in order; the secret goes
//! first when a cleanup starts, and a cleanup cut short always leaves its
//! marker so the next start finishes it. After every restart: the boot
//! number each run announces is right. At the end of each boot: the stage
//! moved only forward to the right value, no temporary file (ledger temp,
//! cleanup marker temp) is left, and on the second boot the
//! contract, the state and the unit are all gone.
//!
//! Two tests of at least 50 kills each run side by side (≥ 100 kills).

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use assisted_boot_reporter::cleanup::CLEANUP_MARKER;
use assisted_boot_reporter::contract::files;
use assisted_boot_reporter::ledger::{Ledger, LEDGER_FILE};

const KILLS_PER_TEST: usize = 50;
const MAX_INSTALLS: usize = 30;
/// Kills per boot before the run that is left to finish.
const KILLS_FIRST_BOOT: usize = 4;
const KILLS_SECOND_BOOT: usize = 4;
/// Kill moments on the first boot are drawn from this window (the first
/// runs report the stage and ship bundles every 300 ms).
const FIRST_BOOT_WINDOW: Duration = Duration::from_millis(1200);
/// The installation's budget, counted from the first start: longer than all
/// the first boot's killed runs together, so the run that the reboot ends
/// (SIGTERM) still has time to report the stage and the second boot to
/// finish.
const FIRST_BOOT_TIMEOUT: &str = "60s";

/// Where a killed run was, from its last words.
fn phase(stderr: &str) -> &'static str {
    if stderr.contains("cleanup done") {
        "cleanup done, exiting"
    } else if stderr.contains("an earlier cleanup was interrupted") {
        "finishing an interrupted cleanup"
    } else if stderr.contains(" INFO removed ") {
        "cleaning up"
    } else if stderr.contains("kubelet is healthy") {
        "last bundle before cleanup"
    } else if stderr.contains("uploaded the") {
        "shipping bundles"
    } else if stderr.contains("stage set") {
        "stage reported, first bundle"
    } else if stderr.contains(" from disk (boot ID ") {
        "looking up the host"
    } else {
        "start-up (config, ledger)"
    }
}

#[derive(Default)]
struct Tally {
    kills: usize,
    installs: usize,
    temp_files_seen_after_kill: usize,
    kills_inside_cleanup: usize,
    /// Installations whose cleanup was cut after `host-id` went.
    leftovers_after_host_id: usize,
    phases: std::collections::BTreeMap<&'static str, usize>,
}

fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    Path::new(n)
                        .extension()
                        .is_some_and(|e| e.eq_ignore_ascii_case("tmp"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn boot_number_announced(stderr: &str) -> Option<u32> {
    let at = stderr.find(" from disk (boot ID ")?;
    stderr[..at].rsplit("boot ").next()?.trim().parse().ok()
}

/// What must hold after any kill, whatever it interrupted.
fn check_after_kill(sc: &Scenario, boot_ids: &[&str], tally: &mut Tally) {
    let ledger_path = sc.state_dir.join(LEDGER_FILE);
    assert!(
        !sc.state_dir.join(format!("{LEDGER_FILE}.corrupt")).exists(),
        "a ledger was found corrupt after a kill"
    );
    if ledger_path.exists() {
        let (ledger, warning) = Ledger::load(&sc.state_dir).expect("ledger readable");
        assert!(warning.is_none(), "ledger after a kill: {warning:?}");
        let ids: Vec<&str> = ledger.boots.iter().map(|b| b.boot_id.as_str()).collect();
        assert!(
            !ids.is_empty() && boot_ids.starts_with(&ids),
            "ledger boots {ids:?}, this installation's boots {boot_ids:?}"
        );
    }
    if !temp_files(&sc.state_dir).is_empty() {
        tally.temp_files_seen_after_kill += 1;
    }

    // Cleanup: the secret goes first, and a cleanup under way is marked
    // until nothing that could start the agent again is left.
    let contract_left: Vec<&str> = files::REMOVAL_ORDER
        .iter()
        .copied()
        .filter(|f| sc.config_dir.join(f).exists())
        .collect();
    let started_cleanup = contract_left.len() < 5 || sc.state_dir.join(CLEANUP_MARKER).exists();
    if contract_left.len() < 5 {
        assert!(
            !contract_left.contains(&files::PULL_SECRET),
            "cleanup removed {contract_left:?}'s siblings before the pull secret"
        );
    }
    if started_cleanup {
        let marked = sc.state_dir.join(CLEANUP_MARKER).exists();
        let can_start = sc.config_dir.join(files::HOST_ID).exists();
        let ledger_left = ledger_path.exists();
        if marked {
            tally.kills_inside_cleanup += 1;
        } else {
            assert!(
                !can_start && !ledger_left,
                "a cleanup was cut short without its marker: contract {contract_left:?}, ledger {ledger_left}"
            );
        }
    }
}

struct Install {
    sc: Scenario,
    base: String,
    _mock: mock_assisted_service::MockServer,
}

async fn install(tag: &str) -> Install {
    let sc = Scenario::new(tag);
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    Install {
        sc,
        base,
        _mock: mock,
    }
}

fn opts(timeout: &'static str, kubelet: Option<String>) -> AgentOpts {
    AgentOpts {
        upload_interval: Some("300ms"),
        timeout: Some(timeout),
        kubelet_healthz_url: kubelet,
        ..AgentOpts::default()
    }
}

/// The unit's `ConditionPathExists=`: systemd restarts a killed reporter
/// (and starts it on a later boot) only while `host-id` exists.
fn unit_would_start(sc: &Scenario) -> bool {
    sc.config_dir.join(files::HOST_ID).exists()
}

/// When to kill.
#[derive(Clone, Copy)]
enum Moment {
    /// Uniformly within the window after the start.
    Within(Duration),
    /// Right after the pull secret disappears (plus up to 0.4 ms): inside
    /// the cleanup, which random moments rarely hit (it takes milliseconds).
    InCleanup,
}

async fn wait_for(moment: Moment, sc: &Scenario, pid: u32) {
    match moment {
        Moment::Within(window) => tokio::time::sleep(window.mul_f64(fastrand::f64())).await,
        Moment::InCleanup => {
            let secret = sc.config_dir.join(files::PULL_SECRET);
            let alive = Path::new("/proc").join(pid.to_string());
            let give_up = std::time::Instant::now() + Duration::from_secs(10);
            while secret.exists() && alive.exists() && std::time::Instant::now() < give_up {
                std::thread::sleep(Duration::from_micros(200));
            }
            std::thread::sleep(Duration::from_micros(fastrand::u64(0..400)));
        }
    }
}

async fn kill_at(
    sc: &Scenario,
    label: &str,
    o: &AgentOpts,
    moment: Moment,
    expected_boot: u32,
    tally: &mut Tally,
) {
    if !unit_would_start(sc) {
        return;
    }
    let running = sc.spawn_agent(label, o);
    let pid = running.pid().expect("agent pid");
    wait_for(moment, sc, pid).await;
    // If the run already ended this finds nothing: not counted as a kill.
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let run = sc.wait_agent(running).await;
    let stderr = run.stderr_text();
    if let Some(n) = boot_number_announced(&stderr) {
        assert_eq!(n, expected_boot, "{label}: wrong boot number:\n{stderr}");
    }
    if run.code.is_none() {
        tally.kills += 1;
        *tally.phases.entry(phase(&stderr)).or_default() += 1;
    } else {
        run.assert_code(0);
    }
}

async fn one_installation(tag: &str, tally: &mut Tally, boot2_window: &mut Duration) {
    let Install { sc, base, _mock } = install(tag).await;
    let boot1 = std::fs::read_to_string(sc.boot_id_path())
        .unwrap()
        .trim()
        .to_owned();
    let boot2 = uuid::Uuid::new_v4().to_string();

    // First boot: killed again and again, then left to run to its timeout.
    for i in 0..KILLS_FIRST_BOOT {
        kill_at(
            &sc,
            &format!("{tag} boot 1 kill {i}"),
            &opts(FIRST_BOOT_TIMEOUT, None),
            Moment::Within(FIRST_BOOT_WINDOW),
            1,
            tally,
        )
        .await;
        check_after_kill(&sc, &[&boot1], tally);
    }
    // The run the reboot ends: it reports the stage and ships, then systemd
    // stops it (SIGTERM) for the reboot.
    let before = uploads_of(host_of(&admin_state(&base).await, HOST_ID), "host_boot");
    let running = sc.spawn_agent(
        &format!("{tag} boot 1 to the reboot"),
        &opts(FIRST_BOOT_TIMEOUT, None),
    );
    // A bundle of this run (not of a killed one): its signal handlers are up.
    wait_for_state(&base, Duration::from_secs(15), |s| {
        let h = host_of(s, HOST_ID);
        h["current_stage"] == LOCAL_IGNITION && uploads_of(h, "host_boot") > before
    })
    .await;
    let run = sc.stop_agent(running).await;
    run.assert_code(0);
    assert_eq!(boot_number_announced(&run.stderr_text()), Some(1));
    let (ledger, warning) = Ledger::load(&sc.state_dir).unwrap();
    assert!(warning.is_none(), "{warning:?}");
    assert_eq!(ledger.boots.len(), 1, "{ledger:?}");
    assert_eq!(ledger.boots[0].boot_id, boot1);
    assert_eq!(
        ledger.boots[0].reported_stage.as_deref(),
        Some(LOCAL_IGNITION)
    );
    assert_eq!(
        temp_files(&sc.state_dir),
        Vec::<String>::new(),
        "temp files after the first boot"
    );
    let state = admin_state(&base).await;
    assert_eq!(host_of(&state, HOST_ID)["current_stage"], LOCAL_IGNITION);
    assert!(!sc.disabled_unit());

    // Second boot: kubelet healthy, so each run reports, ships, cleans up.
    sc.reboot(&boot2);
    admin_set_stage(&base, HOST_ID, "Configuring", None).await;
    let kubelet = start_kubelet(true).await;
    for i in 0..KILLS_SECOND_BOOT {
        // Every other kill aims at the cleanup.
        let moment = if i % 2 == 1 {
            Moment::InCleanup
        } else {
            Moment::Within(*boot2_window)
        };
        kill_at(
            &sc,
            &format!("{tag} boot 2 kill {i}"),
            &opts("60s", Some(kubelet.clone())),
            moment,
            2,
            tally,
        )
        .await;
        check_after_kill(&sc, &[&boot1, &boot2], tally);
    }
    // The restart systemd would make, if the unit's condition still holds.
    let mut stderr = String::new();
    if unit_would_start(&sc) {
        let run = sc
            .run_agent(
                &format!("{tag} boot 2 to the end"),
                &opts("60s", Some(kubelet.clone())),
            )
            .await;
        run.assert_code(0);
        stderr = run.stderr_text();
        if let Some(n) = boot_number_announced(&stderr) {
            assert_eq!(n, 2);
            // A complete second-boot run is the next window's measure.
            *boot2_window = run
                .elapsed
                .clamp(Duration::from_millis(300), Duration::from_secs(3));
        }
    }

    // No secret, no contract, no ledger, and the unit disabled, whichever
    // run finished the cleanup.
    let left: Vec<&str> = files::REMOVAL_ORDER
        .iter()
        .copied()
        .filter(|f| sc.config_dir.join(f).exists())
        .collect();
    assert!(left.is_empty(), "contract files left: {left:?}\n{stderr}");
    assert!(!sc.state_dir.join(LEDGER_FILE).exists(), "ledger left");
    assert!(
        sc.disabled_unit(),
        "unit not disabled: {:?}",
        sc.systemctl_calls()
    );
    // Complete, unless the kill fell after `host-id` went (nothing starts
    // the reporter then): only the marker and empty directories may stay.
    let in_state: Vec<String> = std::fs::read_dir(&sc.state_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if sc.config_dir.exists() || sc.state_dir.exists() {
        assert!(
            in_state.iter().all(|n| n == CLEANUP_MARKER),
            "state dir left with {in_state:?}"
        );
        assert!(
            std::fs::read_dir(&sc.config_dir).map_or(true, |mut d| d.next().is_none()),
            "config dir not empty"
        );
        tally.leftovers_after_host_id += 1;
    }
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    assert_eq!(host["current_stage"], CONTROL_PLANE_IGNITION, "{host}");
    assert_eq!(
        stage_history(host),
        [
            "Rebooting",
            LOCAL_IGNITION,
            "Configuring",
            CONTROL_PLANE_IGNITION
        ],
        "stages moved backwards or twice: {host}"
    );
    sc.final_checks(Some(&base)).await;
    tally.installs += 1;
}

async fn kill_many(tag: &str) {
    let mut tally = Tally::default();
    let mut boot2_window = Duration::from_millis(1500);
    while tally.kills < KILLS_PER_TEST {
        assert!(
            tally.installs < MAX_INSTALLS,
            "only {} kills in {MAX_INSTALLS} installations",
            tally.kills
        );
        one_installation(
            &format!("{tag}-{}", tally.installs),
            &mut tally,
            &mut boot2_window,
        )
        .await;
    }
    eprintln!(
        "CRASH | {tag} | {} SIGKILLs over {} installations | temp files present right after {} kills, none after restarts | {} kills found a cleanup under way (marker present), each finished by the next start | {} cut after host-id went (marker/empty dirs left, no secret) | phases: {:?}",
        tally.kills,
        tally.installs,
        tally.temp_files_seen_after_kill,
        tally.kills_inside_cleanup,
        tally.leftovers_after_host_id,
        tally.phases
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_a() {
    kill_many("crash-a").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_b() {
    kill_many("crash-b").await;
}
