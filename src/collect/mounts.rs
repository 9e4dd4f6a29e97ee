//! Mounts and disks: the kernel's mount table, `findmnt`, free space and
//! inodes, and the block device tree. A full `/var` or a missing mount stops crio and kubelet
//! on a first boot without saying much in their own logs. The commands
//! describe the running machine, and are left out when that is not the
//! host the bundle describes (`collect` from a mounted disk).

use std::io;

use super::members::Members;

pub(crate) fn collect(m: &mut Members<'_>) -> io::Result<()> {
    m.file("mounts/mountinfo", "/proc/self/mountinfo")?;
    if !m.running_machine("findmnt, df, lsblk") {
        return Ok(());
    }
    m.command("mounts/findmnt.txt", "findmnt", ["--list"])?;
    m.command("mounts/df-h.txt", "df", ["-h"])?;
    m.command("mounts/df-i.txt", "df", ["-i"])?;
    m.command(
        "mounts/lsblk.txt",
        "lsblk",
        ["-o", "NAME,SIZE,TYPE,FSTYPE,MOUNTPOINT,LABEL,UUID,RO,MODEL"],
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{context, MemorySink};
    use super::super::{run_collector, Status};
    use super::*;

    #[test]
    fn reads_mountinfo_under_root_and_skips_missing_tools() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc/self")).unwrap();
        let table = b"22 1 252:4 / / rw,relatime shared:1 - xfs /dev/vda4 rw\n";
        std::fs::write(root.path().join("proc/self/mountinfo"), table).unwrap();
        let empty = tempfile::tempdir().unwrap();
        let ctx = context(root.path(), Some(empty.path().as_os_str().to_owned()));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("mounts", collect, &ctx, &mut sink).unwrap();

        assert_eq!(sink.get("mounts/mountinfo").unwrap(), table);
        assert_eq!(report.status, Status::Ok);
        let lsblk = report
            .files
            .iter()
            .find(|f| f.path == "mounts/lsblk.txt")
            .unwrap();
        assert_eq!(lsblk.status, Status::Skipped);
        assert_eq!(lsblk.reason.as_deref(), Some("lsblk not found on PATH"));
        assert_eq!(sink.members.len(), 1);
    }
}
