//! The journal: the boot list, where the journal lives (volatile or
//! persistent), one member per unit that matters for an installation, this
//! boot's whole journal and the previous boot's.
//!
//! journalctl reads the volatile (`/run/log/journal`) and the persistent
//! (`/var/log/journal`) journal together, so every member covers both; the
//! previous boot is only there when the journal was persistent then.
//!
//! Order inside the collector follows value per byte, because the bundle
//! size cap is spent in member order: the boot list and the quiet units
//! first, then this boot, then the very noisy crio and kubelet, and the
//! previous boot last (its own bundle was normally sent during that boot).
//! A journal bigger than its budget keeps its newest part.
//!
//! When the context's root is a sysroot, journalctl reads that root's
//! journal through `--root=`, or through `--directory=` at an ostree disk's
//! stateroot `/var/log/journal` (`layout`); `-b 0` is then the newest boot
//! that journal holds, and every boot before the previous one gets a
//! member of its own (`journal/earlier-boots/`): a disk that never came up
//! holds one failed boot per attempt. Ignition's lines are taken from every
//! boot there, as it runs in the first one only.
//!
//! The long-running agent reads each byte of the journal once per boot: a
//! [`Cache`] keeps, between bundles, every journal member as it was shipped
//! (redacted, compressed chunks), journalctl's cursor after its last entry,
//! and the diagnosis scanner's state; the next bundle asks journalctl only
//! for the entries after the cursor (`Members::journal`).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;

use super::capture::Captured;
use super::command::first_line;
use super::context::CollectContext;
use super::members::Members;
use super::report::Status;

// The cache lives in its own file so that the context and `Members` hold it
// without importing this collector (which imports them); this is its path.
pub(crate) use super::journal_cache::Cache;

/// `--all` keeps lines with control characters (kubelet's and crio's colour
/// codes) instead of `[N blob data]`; the bytes are shipped as they are.
const OUTPUT: [&str; 4] = ["--no-pager", "--all", "-o", "short-iso-precise"];

/// Units whose logs are small and say where an installation stopped.
const QUIET_UNITS: &[&str] = &[
    "ignition-firstboot-complete",
    "machine-config-daemon-pull",
    "machine-config-daemon-firstboot",
    "release-image",
    "bootkube",
    "approve-csr",
    "crio-configure",
    "NetworkManager",
    "NetworkManager-wait-online",
    "nodeip-configuration",
    "ovs-configuration",
    "agent",
    "assisted-boot-reporter",
];

/// Units that can log gigabytes; they go after this boot's journal.
const NOISY_UNITS: &[&str] = &["crio", "kubelet"];

/// Where journald keeps its files: volatile first, then persistent.
const JOURNAL_DIRS: [&str; 2] = ["/run/log/journal", "/var/log/journal"];

/// Earlier boots given a member each, newest first.
const MAX_EARLIER_BOOTS: usize = 16;

/// `--root=<root>` when the context reads a sysroot, `--directory=` at its
/// journal when its `/var` lies elsewhere.
pub(crate) fn root_args(ctx: &CollectContext) -> Vec<OsString> {
    if ctx.is_live_root() {
        Vec::new()
    } else if ctx.var.is_some() {
        // Its links followed inside the root, so that journalctl, which
        // follows them itself, cannot be led off the disk.
        let mut dir = OsString::from("--directory=");
        dir.push(ctx.host_path(std::path::Path::new("/var/log/journal")));
        vec![dir]
    } else {
        let mut root = OsString::from("--root=");
        root.push(ctx.root.as_os_str());
        vec![root]
    }
}

pub(crate) fn collect(m: &mut Members<'_>) -> io::Result<()> {
    let base = root_args(m.ctx());
    let args = |extra: &[&str]| -> Vec<OsString> {
        base.iter()
            .cloned()
            .chain(extra.iter().map(OsString::from))
            .collect()
    };

    let mut boots = Vec::new();
    m.command_adjusted(
        "journal/list-boots.txt",
        "journalctl",
        args(&["--list-boots", "--no-pager"]),
        |captured| boots = listed_boots(captured),
    )?;
    let sysroot = !m.ctx().is_live_root();
    let storage = storage_listing(m.ctx());
    m.generated(
        "journal/storage.txt",
        "journal directories (volatile /run/log/journal, persistent /var/log/journal)",
        storage.into_bytes(),
    )?;
    for unit in QUIET_UNITS {
        unit_log(m, &args, unit)?;
    }
    // Ignition runs in the initramfs, under its own syslog identifier.
    let mut ignition = if sysroot {
        vec!["-t", "ignition"]
    } else {
        vec!["-b", "0", "-t", "ignition"]
    };
    ignition.extend(OUTPUT);
    m.journal("journal/units/ignition.log", args(&ignition), |_| {})?;
    let mut this_boot = vec!["-b", "0"];
    this_boot.extend(OUTPUT);
    m.journal("journal/this-boot.log", args(&this_boot), |_| {})?;
    for unit in NOISY_UNITS {
        unit_log(m, &args, unit)?;
    }
    let mut previous = OUTPUT.to_vec();
    previous.extend(["-b", "-1"]);
    m.journal(
        "journal/previous-boot.log",
        args(&previous),
        no_previous_boot_is_a_skip,
    )?;
    if !sysroot {
        return Ok(());
    }
    let earlier: Vec<&(i64, String)> = boots.iter().filter(|(idx, _)| *idx <= -2).collect();
    if earlier.len() > MAX_EARLIER_BOOTS {
        m.note(format!(
            "{} boots before the previous one; the newest {MAX_EARLIER_BOOTS} collected",
            earlier.len()
        ));
    }
    for (idx, id) in earlier.iter().rev().take(MAX_EARLIER_BOOTS) {
        let mut boot = vec!["-b", id.as_str()];
        boot.extend(OUTPUT);
        m.journal(
            &format!("journal/earlier-boots/{}-{id}.log", idx.unsigned_abs()),
            args(&boot),
            |_| {},
        )?;
    }
    Ok(())
}

/// `(index, boot ID)` of each line of `journalctl --list-boots` (`IDX BOOT
/// ID FIRST ENTRY LAST ENTRY`), oldest first; lines of another shape are
/// left out.
fn listed_boots(captured: &mut Captured) -> Vec<(i64, String)> {
    captured
        .head_text()
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let idx = words.next()?.parse::<i64>().ok()?;
            let id = words.next()?;
            let hex = id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
            hex.then(|| (idx, id.to_owned()))
        })
        .collect()
}

/// Which journal directories exist and how big their files are: says at a
/// glance whether the journal is persistent (and so whether a previous boot
/// can be in the bundle).
fn storage_listing(ctx: &CollectContext) -> String {
    let mut out = String::new();
    for dir in JOURNAL_DIRS {
        let Ok(machines) = ctx.list_dirs(dir) else {
            let _ = writeln!(out, "{dir}: absent");
            continue;
        };
        let mut files = 0u64;
        let mut bytes = 0u64;
        for machine in machines {
            for file in ctx
                .list_files(&format!("{dir}/{machine}"))
                .unwrap_or_default()
            {
                files += 1;
                bytes += file.bytes;
            }
        }
        let _ = writeln!(out, "{dir}: {files} files, {bytes} bytes");
    }
    out
}

fn unit_log(
    m: &mut Members<'_>,
    args: &impl Fn(&[&str]) -> Vec<OsString>,
    unit: &str,
) -> io::Result<()> {
    let service = format!("{unit}.service");
    let mut unit_args = vec!["-b", "0", "-u", service.as_str()];
    unit_args.extend(OUTPUT);
    m.journal(
        &format!("journal/units/{unit}.log"),
        args(&unit_args),
        |_| {},
    )
}

/// A first boot, or a volatile journal, has no previous boot: that is the
/// host's normal state, not a collection failure.
fn no_previous_boot_is_a_skip(captured: &mut Captured) {
    if captured.status != Status::Failed {
        return;
    }
    let stderr = captured.stderr_head.to_ascii_lowercase();
    // systemd < 254 says "Specifier '-1' out of range"; later ones "Data from
    // the specified boot (-1) is not available: No such boot ID in journal".
    let no_boot = ["out of range", "no such boot", "is not available"]
        .iter()
        .any(|needle| stderr.contains(needle));
    if no_boot {
        captured.status = Status::Skipped;
        captured.reason = first_line(&captured.stderr_head);
    }
}

#[cfg(test)]
mod tests {
    use super::super::run_collector;
    use super::super::testing::{context, fixture_path, script, MemorySink};
    use super::*;
    use std::path::Path;

    #[test]
    fn collects_every_member_with_root_passed_through() {
        let root = tempfile::tempdir().unwrap();
        let ctx = context(root.path(), Some(fixture_path(None)));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("journal", collect, &ctx, &mut sink).unwrap();

        assert_eq!(report.status, Status::Ok, "{report:?}");
        for unit in [
            "kubelet",
            "crio",
            "NetworkManager",
            "ignition-firstboot-complete",
            "machine-config-daemon-firstboot",
            "bootkube",
            "release-image",
            "approve-csr",
        ] {
            let path = format!("journal/units/{unit}.log");
            let data = String::from_utf8_lossy(sink.get(&path).expect(&path)).into_owned();
            let expected = format!(
                "fake journal for args: --root={} -b 0 -u {unit}.service --no-pager --all -o short-iso-precise\n",
                root.path().display()
            );
            assert!(data.contains(&expected), "{data}");
        }
        let this_boot =
            String::from_utf8_lossy(sink.get("journal/this-boot.log").unwrap()).into_owned();
        assert!(this_boot.contains("-b 0 --no-pager --all -o short-iso-precise\n"));
        let boots = sink.get("journal/list-boots.txt").unwrap();
        assert_eq!(String::from_utf8_lossy(boots).lines().count(), 3);
        assert!(sink.get("journal/previous-boot.log").is_some());
        // Precious small members come before the whole journals.
        let order: Vec<&str> = sink.members.iter().map(|(p, _)| p.as_str()).collect();
        let pos = |p: &str| order.iter().position(|&o| o == p).unwrap();
        assert!(pos("journal/units/bootkube.log") < pos("journal/this-boot.log"));
        assert!(pos("journal/this-boot.log") < pos("journal/previous-boot.log"));
    }

    /// From a disk, each boot before the previous one gets a member;
    /// on the running machine's own root, the two newest only, as before.
    #[test]
    fn earlier_boots_of_a_disk_each_get_a_member() {
        let bin = tempfile::tempdir().unwrap();
        script(
            bin.path(),
            "journalctl",
            r#"case "$*" in
  *--list-boots*) echo "IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY"
                  echo " -3 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa Thu 2026-11-26 06:00:00 UTC Thu 2026-11-26 06:00:02 UTC"
                  echo " -2 bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb Thu 2026-11-26 07:00:00 UTC Thu 2026-11-26 07:00:02 UTC"
                  echo " -1 cccccccccccccccccccccccccccccccc Thu 2026-11-26 08:00:00 UTC Thu 2026-11-26 08:00:02 UTC"
                  echo "  0 dddddddddddddddddddddddddddddddd Thu 2026-11-26 09:00:00 UTC Thu 2026-11-26 09:00:02 UTC" ;;
  *) echo "entry for: $*" ;;
esac"#,
        );
        let root = tempfile::tempdir().unwrap();
        let mut ctx = context(root.path(), Some(fixture_path(Some(bin.path()))));
        let var = tempfile::tempdir().unwrap();
        ctx.var = Some(var.path().to_path_buf());
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("journal", collect, &ctx, &mut sink).unwrap();
        let earlier: Vec<&str> = report
            .files
            .iter()
            .map(|f| f.path.as_str())
            .filter(|p| p.starts_with("journal/earlier-boots/"))
            .collect();
        assert_eq!(
            earlier,
            [
                "journal/earlier-boots/2-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.log",
                "journal/earlier-boots/3-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.log",
            ]
        );
        let oldest = String::from_utf8_lossy(
            sink.get("journal/earlier-boots/3-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.log")
                .unwrap(),
        )
        .into_owned();
        let dir = format!("--directory={}", var.path().join("log/journal").display());
        assert!(
            oldest.starts_with(&format!(
                "entry for: {dir} -b aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa "
            )),
            "{oldest}"
        );
        let ignition =
            String::from_utf8_lossy(sink.get("journal/units/ignition.log").unwrap()).into_owned();
        assert!(
            ignition.starts_with(&format!("entry for: {dir} -t ignition ")),
            "{ignition}"
        );
        assert!(report
            .files
            .iter()
            .all(|f| f.origin == Some(bundle_format::Origin::Root)));

        let ctx = context(Path::new("/"), Some(fixture_path(Some(bin.path()))));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("journal", collect, &ctx, &mut sink).unwrap();
        assert!(report
            .files
            .iter()
            .all(|f| !f.path.starts_with("journal/earlier-boots/")
                && (f.origin == Some(bundle_format::Origin::RunningMachine))
                    == f.source.starts_with("journalctl ")));
    }

    #[test]
    fn missing_previous_boot_is_skipped_with_journalctls_message() {
        let bin = tempfile::tempdir().unwrap();
        script(
            bin.path(),
            "journalctl",
            &format!(
                "FAKE_NO_PREVIOUS_BOOT=1 exec '{}/journalctl' \"$@\"",
                super::super::testing::fixtures_bin().display()
            ),
        );
        let ctx = context(Path::new("/"), Some(fixture_path(Some(bin.path()))));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("journal", collect, &ctx, &mut sink).unwrap();

        let previous = report
            .files
            .iter()
            .find(|f| f.path == "journal/previous-boot.log")
            .unwrap();
        assert_eq!(previous.status, Status::Skipped);
        assert_eq!(
            previous.reason.as_deref(),
            Some("Specifier '-1' out of range")
        );
        assert!(!previous.source.contains("--root"));
        assert_eq!(report.status, Status::Ok, "{report:#?}");
    }

    #[test]
    fn token_in_the_journal_is_redacted_and_counted() {
        let bin = tempfile::tempdir().unwrap();
        script(
            bin.path(),
            "journalctl",
            &format!(
                "FAKE_JOURNAL_EXTRA='agent: Authorization: Bearer sekrit-token-1234567890' exec '{}/journalctl' \"$@\"",
                super::super::testing::fixtures_bin().display()
            ),
        );
        let ctx = context(Path::new("/"), Some(fixture_path(Some(bin.path()))));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("journal", collect, &ctx, &mut sink).unwrap();

        let this_boot = report
            .files
            .iter()
            .find(|f| f.path == "journal/this-boot.log")
            .unwrap();
        assert_eq!(this_boot.redactions, 1);
        let data = sink.get("journal/this-boot.log").unwrap();
        assert!(data.ends_with(b"agent: Authorization: [REDACTED]\n"));
        assert!(sink
            .members
            .iter()
            .all(|(_, d)| !String::from_utf8_lossy(d).contains("sekrit-token")));
    }

    /// The long-running agent's journal over several bundles: each bundle
    /// holds the whole journal in order (up to the member cap, which drops
    /// the oldest part), while journalctl is asked only for what is new.
    #[test]
    fn cached_journal_is_read_once_and_capped_across_bundles() {
        use std::sync::{Arc, Mutex};
        let root = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let journal = work.path().join("journal.txt");
        let log = work.path().join("reads.log");
        std::fs::write(&journal, b"").unwrap();
        let bin = tempfile::tempdir().unwrap();
        script(
            bin.path(),
            "journalctl",
            &format!(
                "FAKE_JOURNAL_FILE='{}' FAKE_JOURNAL_GROW=20000 FAKE_JOURNAL_BYTES_SCOPE=this-boot \\
                 FAKE_JOURNAL_LOG='{}' exec '{}/journalctl' \"$@\"",
                journal.display(),
                log.display(),
                super::super::testing::fixtures_bin().display()
            ),
        );
        // Round 0 of the journal is there before the first bundle.
        let grown = std::process::Command::new(bin.path().join("journalctl"))
            .args(["-b", "0"])
            .output()
            .unwrap();
        assert!(grown.status.success());
        let cap: u64 = 5 << 20;
        let mut ctx = context(root.path(), Some(fixture_path(Some(bin.path()))));
        let cache = Arc::new(Mutex::new(Cache::new(cap)));
        ctx.journal_cache = Some(Arc::clone(&cache));

        let mut header = Vec::new();
        for round in 0..4 {
            let mut sink = MemorySink::new(cap, u64::MAX);
            let report = run_collector("journal", collect, &ctx, &mut sink).unwrap();
            let file = report
                .files
                .iter()
                .find(|f| f.path == "journal/this-boot.log")
                .unwrap();
            assert_eq!(file.status, Status::Ok, "{file:?}");
            let data = sink.get("journal/this-boot.log").unwrap();
            if round == 0 {
                let third = data
                    .iter()
                    .enumerate()
                    .filter(|(_, &b)| b == b'\n')
                    .nth(2)
                    .unwrap()
                    .0;
                header = data[..=third].to_vec();
                assert_eq!(file.reused_bytes, 0);
            } else {
                assert!(file.reused_bytes > 0, "{file:?}");
            }
            // The whole journal so far, in order, its newest `cap` bytes.
            let mut whole = header.clone();
            whole.extend(std::fs::read(&journal).unwrap());
            let kept = whole.len().min(usize::try_from(cap).unwrap());
            assert_eq!(data.len(), kept, "round {round}");
            assert!(data == &whole[whole.len() - kept..], "round {round}");
            assert!(data.ends_with(
                format!("round {round} line 20000 padding-padding-padding-padding-padding\n")
                    .as_bytes()
            ));
            assert_eq!(file.truncated, whole.len() > kept, "round {round}");
            assert_eq!(file.original_bytes.is_some(), file.truncated);
            if file.truncated {
                assert_eq!(file.original_bytes, Some(whole.len() as u64));
            }
            // No cursor line and no "-- No entries --" in any member.
            for (path, data) in &sink.members {
                let text = String::from_utf8_lossy(data);
                assert!(!text.contains("-- cursor:"), "{path}: {text}");
                assert!(!text.contains("-- No entries --"), "{path}");
            }
        }
        // journalctl showed each entry of this boot's journal once.
        let reads = std::fs::read_to_string(&log).unwrap();
        let this_boot: Vec<u64> = reads
            .lines()
            .filter(|l| l.ends_with("-b 0 --no-pager --all -o short-iso-precise"))
            .map(|l| l.split(' ').next().unwrap().parse().unwrap())
            .collect();
        // The first read asks for the newest entries: a probe of 2000 tells
        // the size of an entry, then all 20,003 fit in what the cap keeps.
        assert_eq!(this_boot, [2000, 20_003, 20_000, 20_000, 20_000], "{reads}");
        assert!(
            reads.lines().next().unwrap().contains(" n=2000 "),
            "{reads}"
        );
        // Quiet units: their three lines once, then nothing new.
        let bootkube: Vec<&str> = reads
            .lines()
            .filter(|l| l.contains("-u bootkube.service"))
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        assert_eq!(bootkube, ["3", "0", "0", "0"], "{reads}");
        let cache = cache.lock().unwrap();
        assert!(cache.held_bytes() < 2 << 20, "{}", cache.held_bytes());
        assert!(cache.len() > 10);
    }

    /// A journal far bigger than the member cap: the first bundle asks
    /// journalctl for the newest entries the cap keeps, not for all of it.
    #[test]
    fn first_read_of_a_big_journal_asks_only_for_its_tail() {
        use std::sync::{Arc, Mutex};
        let root = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let journal = work.path().join("journal.txt");
        let log = work.path().join("reads.log");
        let mut text = String::new();
        for i in 0..200_000 {
            let _ = writeln!(text, "2026-11-22T10:00:03.000000+0000 host big[1]: entry {i:07} of a journal far bigger than its cap");
        }
        std::fs::write(&journal, &text).unwrap();
        let bin = tempfile::tempdir().unwrap();
        script(
            bin.path(),
            "journalctl",
            &format!(
                "FAKE_JOURNAL_FILE='{}' FAKE_JOURNAL_BYTES_SCOPE=this-boot FAKE_JOURNAL_LOG='{}' \\
                 exec '{}/journalctl' \"$@\"",
                journal.display(),
                log.display(),
                super::super::testing::fixtures_bin().display()
            ),
        );
        let cap: u64 = 2 << 20;
        let mut ctx = context(root.path(), Some(fixture_path(Some(bin.path()))));
        ctx.journal_cache = Some(Arc::new(Mutex::new(Cache::new(cap))));
        let mut sink = MemorySink::new(cap, u64::MAX);
        let report = run_collector("journal", collect, &ctx, &mut sink).unwrap();
        let file = report
            .files
            .iter()
            .find(|f| f.path == "journal/this-boot.log")
            .unwrap();
        let data = sink.get("journal/this-boot.log").unwrap();
        assert_eq!(data.len() as u64, cap);
        assert!(text.as_bytes().ends_with(data));
        assert!(file.truncated);
        let reason = file.reason.as_deref().unwrap();
        assert!(reason.contains("older entries not read"), "{reason}");
        assert!(
            reason.contains("member size cap: kept the last"),
            "{reason}"
        );
        let reads = std::fs::read_to_string(&log).unwrap();
        let shown: Vec<u64> = reads
            .lines()
            .filter(|l| l.ends_with("-b 0 --no-pager --all -o short-iso-precise"))
            .map(|l| l.split(' ').next().unwrap().parse().unwrap())
            .collect();
        // The probe, then about 1.25x what the cap keeps: not 200,000.
        assert_eq!(shown[0], 2000, "{reads}");
        assert!(shown[1] > 20_000 && shown[1] < 40_000, "{reads}");
    }
}
