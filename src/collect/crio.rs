//! CRI-O's view of the node: every container (exited ones say why a static
//! pod keeps restarting) and every pod sandbox. CRI-O's own log is the
//! `journal/units/crio.log` member of the journal collector.

use std::io;

use super::Members;

pub fn collect(m: &mut Members<'_>) -> io::Result<()> {
    m.command("crio/crictl-ps-a.txt", "crictl", ["ps", "-a"])?;
    m.command("crio/crictl-pods.txt", "crictl", ["pods"])
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
        assert_eq!(report.status, Status::Ok);
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
        let ctx = context(Path::new("/"), Some(fixture_path(Some(bin.path()))));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("crio", collect, &ctx, &mut sink).unwrap();
        assert_eq!(report.status, Status::Failed);
        assert_eq!(
            report.files[0].reason.as_deref(),
            Some("exit code 1: validate service connection: connect: no such file or directory")
        );
        assert!(sink.members.is_empty());
    }
}
