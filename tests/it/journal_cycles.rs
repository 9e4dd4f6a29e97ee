//! Issue 15 (2): the long-running agent reads each journal byte once per
//! run. A journal that grows between bundles (the fake journalctl appends
//! entries each time this boot's journal is read) is shipped whole and in
//! order by every bundle, while journalctl is asked only for the entries
//! after the previous bundle's cursor; the diagnosis keeps what it found in
//! the first bundle's part of the journal without reading it again.

use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{
    admin_set_stage, member, AgentOpts, HostSeed, Member, Scenario, SecretForm, CLUSTER_ID, HOST_ID,
};

const GROWTH: u64 = 5000;
const THIS_BOOT_QUERY: &str = "-b 0 --no-pager --all -o short-iso-precise";

/// Copies every version of the stored bundle as the mock commits it
/// (a rename, so each version is complete); `count` follows how many.
fn watch(
    path: PathBuf,
    stop: Arc<AtomicBool>,
    count: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<Vec<Vec<u8>>> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut last = None;
        loop {
            let stopping = stop.load(Ordering::SeqCst);
            if let Ok(Some(data)) = std::fs::metadata(&path).and_then(|meta| {
                let id = (meta.ino(), meta.len(), meta.mtime_nsec());
                if last == Some(id) {
                    return Ok(None);
                }
                last = Some(id);
                std::fs::read(&path).map(Some)
            }) {
                seen.push(data);
                count.store(seen.len(), Ordering::SeqCst);
            }
            if stopping {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(3));
        }
    })
}

fn open(data: &[u8]) -> Vec<Member> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.tar.gz");
    std::fs::write(&path, data).unwrap();
    crate::common::open_bundle(&path)
}

/// The (round, line) of every line the fake's growth added, in order.
fn growth_lines(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.split(" grower[1]: round ").nth(1)?;
            let mut words = rest.split(' ');
            let round = words.next()?.parse().ok()?;
            let _ = words.next();
            let line = words.next()?.parse().ok()?;
            Some((round, line))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_journal_is_read_once_and_shipped_whole_by_every_bundle() {
    let sc = Scenario::new("cycles");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let journal = sc.tmp.path().join("growing-journal.txt");
    let reads = sc.tmp.path().join("journalctl-reads.log");
    std::fs::write(&journal, b"").unwrap();
    // Round 0 of the journal is there before the agent starts.
    let grown = std::process::Command::new(crate::common::fake_bin().join("journalctl"))
        .args(["-b", "0"])
        .env("FAKE_JOURNAL_FILE", &journal)
        .env("FAKE_JOURNAL_GROW", GROWTH.to_string())
        .output()
        .unwrap();
    assert!(grown.status.success());

    let stored = sc
        .data_dir
        .join("bundles")
        .join(CLUSTER_ID)
        .join(HOST_ID)
        .join("host_boot.tar.gz");
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicUsize::new(0));
    let watcher = watch(stored, Arc::clone(&stop), Arc::clone(&count));
    // A budget far longer than three cycles on any machine: the run ends
    // when the third bundle is stored and the host is then Done, not at a
    // time that a slow machine might not fit three cycles into.
    let running = sc.spawn_agent(
        "growing journal",
        &AgentOpts {
            timeout: Some("120s"),
            env: vec![
                ("FAKE_JOURNAL_FILE".into(), journal.display().to_string()),
                ("FAKE_JOURNAL_GROW".into(), GROWTH.to_string()),
                ("FAKE_JOURNAL_BYTES_SCOPE".into(), "this-boot".into()),
                ("FAKE_JOURNAL_LOG".into(), reads.display().to_string()),
            ],
            ..AgentOpts::default()
        },
    );
    let waited = std::time::Instant::now();
    while count.load(Ordering::SeqCst) < 3 && waited.elapsed() < Duration::from_secs(110) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    admin_set_stage(&base, HOST_ID, "Done", None).await;
    let run = sc.wait_agent(running).await;
    run.assert_code(0);
    stop.store(true, Ordering::SeqCst);
    let bundles = watcher.join().unwrap();
    assert!(bundles.len() >= 3, "only {} bundles", bundles.len());

    let mut last_round = None;
    for (i, data) in bundles.iter().enumerate() {
        let members = open(data);
        let this_boot = member(&members, "journal/this-boot.log").expect("this-boot.log");
        let text = String::from_utf8_lossy(&this_boot.data);
        assert!(
            text.starts_with(
                "2026-11-22T10:00:00.000000+0000 host systemd[1]: fake journal for args: --root="
            ),
            "bundle {i}: {}",
            &text[..text.len().min(300)]
        );
        assert!(!text.contains("-- cursor:"), "bundle {i}");
        // The fixture host's bootkube DNS failure, read in the first bundle.
        assert!(text.contains("server misbehaving"), "bundle {i}");
        // Every round so far, complete and in order.
        let lines = growth_lines(&text);
        let rounds = lines.last().expect("grown lines").0 + 1;
        let expected: Vec<(u64, u64)> = (0..rounds)
            .flat_map(|r| (1..=GROWTH).map(move |l| (r, l)))
            .collect();
        assert!(
            lines == expected,
            "bundle {i}: the journal is not whole and in order"
        );
        assert!(last_round < Some(rounds), "bundle {i} is not newer");
        last_round = Some(rounds);

        let manifest: serde_json::Value =
            serde_json::from_slice(&member(&members, "manifest.json").unwrap().data).unwrap();
        let file = manifest["collectors"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["files"].as_array().unwrap())
            .find(|f| f["path"] == "journal/this-boot.log")
            .unwrap()
            .clone();
        if i > 0 {
            assert!(
                file["reused_bytes"].as_u64().unwrap() > 0,
                "bundle {i}: {file}"
            );
        }
        assert_eq!(manifest["spill_bytes"], 0);
        // The diagnosis still names the DNS failure the first bundle read.
        let diagnosis: serde_json::Value =
            serde_json::from_slice(&member(&members, "diagnosis.json").unwrap().data).unwrap();
        assert!(
            diagnosis["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["category"] == "dns_resolution"
                    && f["evidence"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|e| e["path"] == "journal/this-boot.log"
                            || e["path"] == "journal/units/bootkube.log")),
            "bundle {i}: {diagnosis:#}"
        );
    }

    // journalctl showed every entry of this boot's journal once: the first
    // read the fixture's part and one round, every later read one round.
    let log = std::fs::read_to_string(&reads).unwrap();
    let shown: Vec<u64> = log
        .lines()
        .filter(|l| l.ends_with(THIS_BOOT_QUERY))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(shown.len() > bundles.len(), "{log}");
    // The first bundle: a probe of the newest 2000 entries, then the newest
    // entries the member cap keeps (here all of them).
    let first: Vec<&str> = log
        .lines()
        .filter(|l| l.ends_with(THIS_BOOT_QUERY))
        .take(2)
        .map(|l| l.split(' ').nth(2).unwrap())
        .collect();
    assert_eq!(first[0], "n=2000", "{log}");
    assert!(first[1].starts_with("n=") && first[1] != "n=-", "{log}");
    assert_eq!(shown[0], 2000, "{log}");
    assert!(shown[1] > GROWTH, "{log}");
    assert!(shown[2..].iter().all(|&n| n == GROWTH), "{log}");
    sc.final_checks(Some(&base)).await;
}
