//! Disk rules: full file systems (ENOSPC in any log, and `df -h`'s Use%),
//! etcd complaining about its disk (`slow fdatasync`, `apply request took
//! too long`), CRI-O's container storage broken (`layer not known`,
//! overlay mounts failing), and the kernel's I/O errors on a disk.

use super::line::{after_lit, has, token_until};
use super::signal::{Category, Nature, Signal};

/// The kernel's I/O errors on a disk (triage signature IOErrorsSignature):
/// the block layer's `I/O error, dev sda, sector 2048 op 0x1:(WRITE) …`
/// (block/blk-mq.c `blk_print_req_error`; before 5.x in blk-core.c with a
/// `blk_update_request: ` prefix), `critical medium error, dev …`, and the
/// buffer cache's `Buffer I/O error on dev sda4, logical block 0, …`
/// (fs/buffer.c). Optical, floppy and loop devices are left out: their
/// errors are the discovery ISO's virtual media going away, not the disk
/// the host runs from. Key: the device.
pub(super) fn io_error(msg: &str) -> Option<Signal> {
    let rest = after_lit!(msg, "Buffer I/O error on dev ")
        .or_else(|| after_lit!(msg, "I/O error, dev "))
        .or_else(|| after_lit!(msg, "critical medium error, dev "))?;
    let dev = token_until(rest, &[',', ' ', ':']);
    if dev.is_empty()
        || dev == "?"
        || ["sr", "fd", "loop"].iter().any(|p| {
            dev.strip_prefix(p)
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
        })
    {
        return None;
    }
    let what = if has!(msg, "medium error") {
        "a medium error"
    } else {
        "I/O errors"
    };
    Some(Signal::new(
        Category::DiskIo,
        dev,
        format!(
            "disk {dev} returns {what} (kernel): the install disk or its controller is failing"
        ),
        Nature::Transient,
    ))
}

/// `df` use at or above which a file system counts as full.
const FULL_PERCENT: u32 = 98;

/// `write /var/lib/etcd/member/wal/0.tmp: no space left on device`.
pub(super) fn full(msg: &str) -> Option<Signal> {
    const PRESSURE: &[&str] = &[
        "viction manager: attempting to reclaim",
        "database space exceeded",
        "Disk usage on image filesystem is over the high threshold",
        "DiskPressure",
        "disk pressure",
        "ailed to garbage collect required amount of images",
    ];
    if let Some(what) = PRESSURE.iter().find(|w| msg.contains(*w)) {
        if has!(what, "ressure")
            && !(has!(msg, "has disk pressure") || has!(msg, "HasDiskPressure"))
        {
            return None;
        }
        let (key, summary) = if has!(what, "database") {
            (
                "etcd database",
                "etcd's database reached its quota (mvcc: database space exceeded)".to_owned(),
            )
        } else {
            (
                "node disk",
                format!(
                    "the node's disk is nearly full ({})",
                    super::line::words_at(msg, what).unwrap_or(what)
                ),
            )
        };
        return Some(Signal::new(Category::DiskFull, key, summary, Nature::Fatal));
    }
    let at = msg
        .find("no space left on device")
        .or_else(|| msg.find("No space left on device"))?;
    let before = msg[..at].trim_end_matches([':', ' ']);
    let path = before
        .rsplit([' ', '"', '='])
        .next()
        .filter(|p| p.starts_with('/'))
        .unwrap_or("a file system");
    Some(Signal::new(
        Category::DiskFull,
        top_dirs(path),
        format!("no space left on device writing {path}"),
        Nature::Fatal,
    ))
}

/// The first three components of a path: findings group by the place, not
/// by every file written there.
fn top_dirs(path: &str) -> String {
    if !path.starts_with('/') {
        return path.to_owned();
    }
    path.split('/').take(4).collect::<Vec<_>>().join("/")
}

/// One row of `df -h` (`Filesystem Size Used Avail Use% Mounted on`).
pub(super) fn df_row(line: &str) -> Option<Signal> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 6 {
        return None;
    }
    let fs = fields[0];
    let percent: u32 = fields[4].strip_suffix('%')?.parse().ok()?;
    let mount = fields[5..].join(" ");
    // Read-only images are always 100 % full by construction.
    let read_only_image = ["composefs", "squashfs", "/dev/loop", "/dev/sr", "iso9660"]
        .iter()
        .any(|p| fs.starts_with(p));
    if percent < FULL_PERCENT || read_only_image || mount.starts_with("/run/media") {
        return None;
    }
    Some(Signal::new(
        Category::DiskFull,
        mount.clone(),
        format!(
            "{mount} is {percent}% full ({} free of {} on {fs})",
            fields[3], fields[1]
        ),
        Nature::Fatal,
    ))
}

/// etcd's complaints about its disk (server/storage/wal, etcdserver/util.go,
/// raft heartbeats): `"msg":"slow fdatasync","took":"1.5s","expected-duration":"1s"`,
/// capnslog's `sync duration of 3.4s, expected less than 1s` and `apply
/// entries took too long [1.2s for 1 entries]`. A duration under its own
/// bound (or, where none is printed, under 100 ms) is not counted.
pub(super) fn etcd(msg: &str) -> Option<Signal> {
    // Heartbeats first: their line also says "took too long".
    let what = if has!(msg, "slow fdatasync") {
        "slow fdatasync"
    } else if has!(msg, "leader is overloaded likely from slow disk")
        || has!(msg, "server is likely overloaded")
    {
        "heartbeat late: leader overloaded by a slow disk"
    } else if has!(msg, "send out heartbeat on time") {
        "heartbeat late"
    } else if has!(msg, "timed out waiting for read index response")
        || has!(msg, "waiting for the applied index took too long")
    {
        "reads timed out waiting for the leader"
    } else if has!(msg, "took too long")
        && !has!(msg, "ReadIndex")
        && (has!(msg, "request") || has!(msg, "apply entries"))
    {
        // etcd's own wordings: `apply request took too long`, `read-only
        // range request … took too long (…) to execute`, `apply entries
        // took too long`; not any program's "took too long".
        "request took too long"
    } else if has!(msg, "sync duration of") && has!(msg, "expected less than") {
        "slow WAL sync"
    } else {
        return None;
    };
    let took = after_lit!(msg, "\"took\":\"")
        .map(|r| token_until(r, &['"']))
        .or_else(|| after_lit!(msg, "sync duration of ").map(|r| token_until(r, &[','])))
        .or_else(|| after_lit!(msg, "took too long (").map(|r| token_until(r, &[')'])))
        .or_else(|| after_lit!(msg, "took too long [").map(|r| token_until(r, &[' ', ']'])));
    let expected = after_lit!(msg, "\"expected-duration\":\"")
        .map(|r| token_until(r, &['"']))
        .or_else(|| {
            after_lit!(msg, "expected less than ").map(|r| token_until(r, &[' ', ',', ')']))
        });
    if let Some(took) = took.and_then(seconds) {
        let bound = expected.and_then(seconds).unwrap_or(0.1);
        if took < bound {
            return None;
        }
    }
    let detail = match (took, expected) {
        (Some(t), Some(e)) => format!("{what}: took {t}, expected under {e}"),
        (Some(t), None) => format!("{what}: took {t}"),
        _ => what.to_owned(),
    };
    Some(Signal::new(
        Category::EtcdSlowDisk,
        "etcd",
        format!("etcd disk too slow ({detail})"),
        Nature::Transient,
    ))
}

/// CRI-O / containers/storage errors that mean the store is damaged.
pub(super) fn crio_storage(msg: &str) -> Option<Signal> {
    const BROKEN: &[&str] = &[
        "read-write layer",
        "could not restore sandbox",
        "parent snapshot",
        // containerd's snapshotter (snapshots/storage/bolt.go): `missing
        // parent "k8s.io/9/sha256:…" bucket: not found`, a layer's parent
        // gone from the store (the same breakage as containers/storage's
        // `layer not known`).
        "missing parent",
        "structure needs cleaning",
        "is not supported over",
        "layer not known",
        "creating overlay mount",
        "A storage corruption might have occurred",
        "storage corruption",
        "image not known",
    ];
    let what = BROKEN
        .iter()
        .find(|b| msg.contains(*b))
        .copied()
        .or_else(|| {
            (has!(msg, "/var/lib/containers/storage/overlay")
                && has!(msg, "no such file or directory"))
            .then_some("overlay layer missing (no such file or directory)")
        })
        .or_else(|| {
            (has!(msg, "/var/lib/containers/storage") && has!(msg, "resource busy"))
                .then_some("storage busy: it could not be wiped (Device or resource busy)")
        })?;
    Some(Signal::new(
        Category::CrioStorage,
        "/var/lib/containers/storage",
        format!("container storage damaged: {what}"),
        Nature::Fatal,
    ))
}

/// A Go duration (`1.5s`, `850ms`, `2m3s`, `120.5µs`) in seconds.
fn seconds(text: &str) -> Option<f64> {
    let text = text.trim();
    let mut total = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "µs" | "us" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    (!text.is_empty()).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_names_the_path() {
        let s = full(r#"level=error msg="Error writing blob" error="write /var/lib/containers/storage/overlay/abc/diff/usr/bin/x: no space left on device""#).unwrap();
        assert_eq!(s.key, "/var/lib/containers");
        assert!(
            s.summary
                .contains("/var/lib/containers/storage/overlay/abc/diff/usr/bin/x"),
            "{}",
            s.summary
        );
        assert_eq!(
            full("mkdir: no space left on device").unwrap().key,
            "a file system"
        );
    }

    #[test]
    fn df_rows_at_the_limit() {
        let s = df_row("/dev/vda4        40G   40G     0 100% /sysroot").unwrap();
        assert_eq!(s.key, "/sysroot");
        assert!(s.summary.contains("/sysroot is 100% full (0 free of 40G"));
        assert!(df_row("/dev/vda4        40G   20G   20G  50% /sysroot").is_none());
        assert!(df_row("composefs        6.7M  6.7M     0 100% /").is_none());
        assert!(df_row("Filesystem      Size  Used Avail Use% Mounted on").is_none());
    }

    #[test]
    fn etcd_and_storage() {
        let s = etcd(r#"{"level":"warn","ts":"2026-11-22T10:00:00Z","caller":"wal/wal.go:805","msg":"slow fdatasync","took":"1.52s","expected-duration":"1s"}"#).unwrap();
        assert!(
            s.summary.contains("took 1.52s, expected under 1s"),
            "{}",
            s.summary
        );
        assert!(etcd(
            r#"{"msg":"apply request took too long","took":"356ms","expected-duration":"100ms"}"#
        )
        .is_some());
        assert!(crio_storage(
            r#"level=error msg="Failed to create container" error="layer not known""#
        )
        .is_some());
        assert!(crio_storage(
            "readlink /var/lib/containers/storage/overlay/l/ABC: no such file or directory"
        )
        .is_some());
    }

    #[test]
    fn kernel_io_errors_name_the_disk() {
        for (line, dev) in [
            ("kernel: I/O error, dev sda, sector 2048 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0", "sda"),
            ("kernel: blk_update_request: I/O error, dev nvme0n1, sector 1953525120 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0", "nvme0n1"),
            ("kernel: Buffer I/O error on dev sda4, logical block 0, async page read", "sda4"),
            ("kernel: critical medium error, dev sdb, sector 77 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0", "sdb"),
        ] {
            let s = io_error(line).unwrap();
            assert_eq!((s.category, s.key.as_str()), (Category::DiskIo, dev), "{line}");
            assert_eq!(s.nature, Nature::Transient);
        }
        // The ISO's virtual media going away is not the install disk.
        assert!(io_error("kernel: I/O error, dev sr0, sector 0 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0").is_none());
        assert!(io_error(
            "kernel: Buffer I/O error on dev loop0, logical block 3, async page read"
        )
        .is_none());
    }
}
