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
//! journal through `--root=`.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;

use super::{Captured, CollectContext, Members, Status};

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

/// `--root=<root>` when the context reads a sysroot.
pub fn root_args(ctx: &CollectContext) -> Vec<OsString> {
    if ctx.is_live_root() {
        Vec::new()
    } else {
        let mut root = OsString::from("--root=");
        root.push(ctx.root.as_os_str());
        vec![root]
    }
}

pub fn collect(m: &mut Members<'_>) -> io::Result<()> {
    let base = root_args(m.ctx());
    let args = |extra: &[&str]| -> Vec<OsString> {
        base.iter()
            .cloned()
            .chain(extra.iter().map(OsString::from))
            .collect()
    };

    m.command(
        "journal/list-boots.txt",
        "journalctl",
        args(&["--list-boots", "--no-pager"]),
    )?;
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
    let mut ignition = vec!["-b", "0", "-t", "ignition"];
    ignition.extend(OUTPUT);
    m.command("journal/units/ignition.log", "journalctl", args(&ignition))?;
    let mut this_boot = vec!["-b", "0"];
    this_boot.extend(OUTPUT);
    m.command("journal/this-boot.log", "journalctl", args(&this_boot))?;
    for unit in NOISY_UNITS {
        unit_log(m, &args, unit)?;
    }
    let mut previous = OUTPUT.to_vec();
    previous.extend(["-b", "-1"]);
    m.command_adjusted(
        "journal/previous-boot.log",
        "journalctl",
        args(&previous),
        no_previous_boot_is_a_skip,
    )
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
    m.command(
        &format!("journal/units/{unit}.log"),
        "journalctl",
        args(&unit_args),
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
        captured.reason = super::first_line(&captured.stderr_head);
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
}
