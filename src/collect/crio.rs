//! CRI-O's view of the node: every container (exited ones say why a static
//! pod keeps restarting), every pod sandbox, the runtime's own status, its
//! configuration and the registries configuration (both redacted: proxy
//! credentials live there), and the pod logs under `/var/log/pods`, newest
//! first, within a cap of their own. kubelet's rotated logs
//! (`0.log.<timestamp>.gz`) are shipped inflated, as text named without the
//! `.gz`. CRI-O's own log is the `journal/units/crio.log` member of the
//! journal collector. crictl asks the running machine's CRI-O: from a
//! mounted disk (`collect --root` other than `/`) only files are read.

use std::cmp::Reverse;
use std::io;
use std::path::Path;

use super::context::HostFile;
use super::members::{Members, Opts};

const CONFIG_FILES: [(&str, &str); 2] = [
    ("/etc/crio/crio.conf", "crio/config/crio.conf"),
    (
        "/etc/containers/registries.conf",
        "crio/config/registries.conf",
    ),
];
const CONFIG_DIRS: [(&str, &str); 2] = [
    ("/etc/crio/crio.conf.d", "crio/config/crio.conf.d"),
    (
        "/etc/containers/registries.conf.d",
        "crio/config/registries.conf.d",
    ),
];
const CONFIG_MAX_BYTES: u64 = 1024 * 1024;
const PODS_DIR: &str = "/var/log/pods";
/// All pod logs together; the journal must keep the larger share.
const PODS_MAX_BYTES: u64 = 32 * 1024 * 1024;
/// One container log file, newest part.
const POD_LOG_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Files looked at; a node with more has been up far longer than a boot.
const MAX_POD_LOGS: usize = 400;

pub(crate) fn collect(m: &mut Members<'_>) -> io::Result<()> {
    if m.running_machine("crictl") {
        m.command("crio/crictl-ps-a.txt", "crictl", ["ps", "-a"])?;
        m.command("crio/crictl-pods.txt", "crictl", ["pods"])?;
        m.command("crio/crictl-info.txt", "crictl", ["info"])?;
    }
    let config = Opts::max_bytes(CONFIG_MAX_BYTES);
    for (host, path) in CONFIG_FILES {
        if crate::rootfs::metadata(m.ctx().sysroot(), Path::new(host)).is_ok() {
            m.file_with(path, host, config)?;
        }
    }
    for (dir, prefix) in CONFIG_DIRS {
        if let Ok(files) = m.ctx().list_files(dir) {
            for file in files.iter().take(100) {
                let name = text_member_name(&file.name, &files);
                m.file_with(&format!("{prefix}/{name}"), &file.host, config)?;
            }
        }
    }
    pod_logs(m)
}

/// `/var/log/pods/<namespace>_<pod>_<uid>/<container>/<n>.log`, newest
/// first, until the pod logs' own cap is spent.
fn pod_logs(m: &mut Members<'_>) -> io::Result<()> {
    let Ok(pods) = m.ctx().list_dirs(PODS_DIR) else {
        m.skip("crio/pods", PODS_DIR, format!("no {PODS_DIR}"));
        return Ok(());
    };
    let mut logs: Vec<(String, HostFile)> = Vec::new();
    for pod_name in pods {
        let Ok(containers) = m.ctx().list_dirs(&format!("{PODS_DIR}/{pod_name}")) else {
            continue;
        };
        for container_name in containers {
            let dir = format!("{PODS_DIR}/{pod_name}/{container_name}");
            let files = m.ctx().list_files(&dir).unwrap_or_default();
            for file in &files {
                let name = text_member_name(&file.name, &files);
                logs.push((
                    format!("crio/pods/{pod_name}/{container_name}/{name}"),
                    file.clone(),
                ));
            }
        }
    }
    logs.sort_by_key(|(_, f)| Reverse(f.mtime));
    let total = logs.len();
    let mut spent = 0u64;
    let mut taken = 0usize;
    for (path, file) in &logs {
        let left = PODS_MAX_BYTES.saturating_sub(spent);
        if left == 0 || taken == MAX_POD_LOGS || m.exhausted() {
            break;
        }
        m.file_with(
            path,
            &file.host,
            Opts::max_bytes(left.min(POD_LOG_MAX_BYTES)),
        )?;
        spent += m.last_bytes();
        taken += 1;
    }
    if taken < total {
        m.note(format!(
            "{} older pod log file(s) left out (pod logs cap {} MiB, {MAX_POD_LOGS} files)",
            total - taken,
            PODS_MAX_BYTES >> 20
        ));
    }
    Ok(())
}

/// The member name of host file `name` from a directory holding `files`:
/// a gzip file is shipped inflated (`file.rs`), so `0.log.<timestamp>.gz`
/// becomes `0.log.<timestamp>`, unless a file of that name sits beside it
/// (kubelet compressing a rotation it has not removed yet): then
/// `0.log.<timestamp>.inflated`.
fn text_member_name(name: &str, files: &[HostFile]) -> String {
    let Some(stem) = name.strip_suffix(".gz").filter(|stem| !stem.is_empty()) else {
        return name.to_owned();
    };
    if files.iter().any(|f| f.name == stem) {
        format!("{stem}.inflated")
    } else {
        stem.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{context, fixture_path, script, MemorySink};
    use super::super::{run_collector, Status};
    use super::*;
    use std::path::Path;

    #[test]
    fn lists_containers_and_pods() {
        let ctx = context(Path::new("/"), Some(fixture_path(None)));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("crio", collect, &ctx, &mut sink).unwrap();
        assert_eq!(report.status, Status::Ok, "{report:?}");
        assert!(sink
            .get("crio/crictl-ps-a.txt")
            .unwrap()
            .starts_with(b"# fake crictl ps -a\n"));
        assert!(sink
            .get("crio/crictl-pods.txt")
            .unwrap()
            .starts_with(b"# fake crictl pods\n"));
    }

    #[test]
    fn crio_down_is_a_failure_with_its_message() {
        let bin = tempfile::tempdir().unwrap();
        script(
            bin.path(),
            "crictl",
            "echo 'validate service connection: connect: no such file or directory' >&2; exit 1",
        );
        let root = tempfile::tempdir().unwrap();
        let ctx = context(root.path(), Some(fixture_path(Some(bin.path()))));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("crio", collect, &ctx, &mut sink).unwrap();
        assert_eq!(report.status, Status::Failed);
        assert_eq!(
            report.files[0].reason.as_deref(),
            Some("exit code 1: validate service connection: connect: no such file or directory")
        );
        assert!(sink.members.is_empty());
    }

    #[test]
    fn pod_logs_newest_first_within_their_cap() {
        use std::time::{Duration, SystemTime};
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join("var/log/pods");
        let now = SystemTime::now();
        for (i, pod) in ["ns_old_1", "ns_mid_2", "ns_new_3"].iter().enumerate() {
            let dir = base.join(pod).join("c");
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("0.log");
            std::fs::write(&file, vec![b'a' + u8::try_from(i).unwrap(); 3 << 20]).unwrap();
            let f = std::fs::File::options().write(true).open(&file).unwrap();
            f.set_modified(now - Duration::from_secs(3600 * (3 - i as u64)))
                .unwrap();
        }
        let ctx = context(root.path(), Some(fixture_path(None)));
        let mut sink = MemorySink::new(64 << 20, u64::MAX);
        let report = run_collector("crio", collect, &ctx, &mut sink).unwrap();
        let pods: Vec<&str> = report
            .files
            .iter()
            .filter(|f| f.path.starts_with("crio/pods/"))
            .map(|f| f.path.as_str())
            .collect();
        // 32 MiB would take all three; order is newest first.
        assert_eq!(
            pods,
            [
                "crio/pods/ns_new_3/c/0.log",
                "crio/pods/ns_mid_2/c/0.log",
                "crio/pods/ns_old_1/c/0.log"
            ]
        );
        assert_eq!(
            sink.get("crio/pods/ns_new_3/c/0.log").unwrap().len(),
            3 << 20
        );
    }

    #[test]
    fn rotated_logs_are_shipped_inflated_and_redacted() {
        use std::io::Write as _;
        let gzip = |data: &[u8]| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(data).unwrap();
            gz.finish().unwrap()
        };
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("var/log/pods/ns_pod_1/c");
        std::fs::create_dir_all(&dir).unwrap();
        let rotated = b"2026-11-24T10:15:00Z stderr F login password=hunter2-rotated\n";
        std::fs::write(dir.join("0.log.20261124-101500.gz"), gzip(rotated)).unwrap();
        // Mid-rotation: the plain file and its gzip side by side.
        std::fs::write(dir.join("0.log.20261124-091500"), b"plain\n").unwrap();
        std::fs::write(dir.join("0.log.20261124-091500.gz"), gzip(b"inflated\n")).unwrap();
        std::fs::write(dir.join("0.log"), b"current\n").unwrap();
        let ctx = context(root.path(), Some(fixture_path(None)));
        let mut sink = MemorySink::new(64 << 20, u64::MAX);
        let report = run_collector("crio", collect, &ctx, &mut sink).unwrap();
        assert_eq!(
            sink.get("crio/pods/ns_pod_1/c/0.log.20261124-101500")
                .unwrap(),
            b"2026-11-24T10:15:00Z stderr F login password=[REDACTED]\n"
        );
        let entry = report
            .files
            .iter()
            .find(|f| f.path == "crio/pods/ns_pod_1/c/0.log.20261124-101500")
            .unwrap();
        assert_eq!(entry.redactions, 1);
        assert!(
            Path::new(&entry.source)
                .extension()
                .is_some_and(|e| e == "gz"),
            "{entry:?}"
        );
        assert!(
            entry
                .reason
                .as_deref()
                .unwrap()
                .starts_with("inflated from gzip ("),
            "{entry:?}"
        );
        assert_eq!(
            sink.get("crio/pods/ns_pod_1/c/0.log.20261124-091500")
                .unwrap(),
            b"plain\n"
        );
        assert_eq!(
            sink.get("crio/pods/ns_pod_1/c/0.log.20261124-091500.inflated")
                .unwrap(),
            b"inflated\n"
        );
        assert!(sink
            .members
            .iter()
            .all(|(name, _)| Path::new(name).extension().is_none_or(|e| e != "gz")));
    }
}
