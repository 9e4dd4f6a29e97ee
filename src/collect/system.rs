//! The host itself: which boot this is (`boot_id`), which OS and kernel,
//! the kernel command line, uptime, CPU and memory, the clock's state (a
//! clock far off breaks every TLS handshake of an installation), and a
//! `summary.json` of memory, CPUs, load, uptime and disk space.
//!
//! The summary and the commands always describe the running machine; when the
//! context's root is a sysroot, `summary.json` says so with
//! `"source": "live system"` and names the root the files came from. When
//! the running machine is not the host the bundle describes (`collect`
//! from a mounted disk), neither is collected; an ostree disk's deployments,
//! which one was read and why, are `ostree-deployments.txt` instead, and
//! Ignition's record of its run (`/etc/.ignition-result.json`) is read.

use std::io;

use serde_json::{json, Value};

use super::members::Members;

pub(crate) fn collect(m: &mut Members<'_>) -> io::Result<()> {
    m.file("system/boot_id", "/proc/sys/kernel/random/boot_id")?;
    m.file("system/os-release", "/etc/os-release")?;
    m.file("system/cmdline", "/proc/cmdline")?;
    m.file("system/uptime", "/proc/uptime")?;
    m.file("system/meminfo", "/proc/meminfo")?;
    m.file("system/cpuinfo", "/proc/cpuinfo")?;
    if let Some(layout) = m.ctx().layout.as_ref().filter(|l| !l.account.is_empty()) {
        let account = layout.account.clone().into_bytes();
        let source = format!("{}/ostree/deploy", m.ctx().root_report().path);
        m.generated("system/ostree-deployments.txt", &source, account)?;
    }
    if !m.running_machine("uname, timedatectl, chronyc, rpm-ostree, the /proc and statvfs summary")
    {
        // What Ignition recorded of its run on the disk (absent when it
        // never finished one).
        return m.file("system/ignition-result.json", "/etc/.ignition-result.json");
    }
    m.command("system/uname.txt", "uname", ["-a"])?;
    m.command(
        "system/timedatectl.txt",
        "timedatectl",
        ["status", "--no-pager"],
    )?;
    m.command("system/chronyc-tracking.txt", "chronyc", ["-n", "tracking"])?;
    m.command("system/chronyc-sources.txt", "chronyc", ["-n", "sources"])?;
    // Which OS image booted and which is staged: the diagnosis compares it
    // with the image machine-config-daemon rebased to (docs/diagnosis.md).
    m.command(
        "system/rpm-ostree-status.json",
        "rpm-ostree",
        ["status", "--json"],
    )?;
    let summary = summary(&m.ctx().root.display().to_string(), m.ctx().is_live_root());
    let mut data = serde_json::to_vec_pretty(&summary).unwrap_or_default();
    data.push(b'\n');
    m.generated_live(
        "system/summary.json",
        "/proc and statvfs (live system)",
        data,
    )
}

/// The live system's figures, from /proc and statvfs, as sysinfo (which
/// this replaced: docs/packaging.md) computed them; a figure that cannot be
/// read is left out and its error listed, never a reason to drop the rest.
fn summary(root: &str, live_root: bool) -> Value {
    let mut errors: Vec<String> = Vec::new();
    let mut read = |what: &str, path: &str| match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(err) => {
            errors.push(format!("{what}: {path}: {err}"));
            None
        }
    };
    let first_word = |text: &str| {
        text.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned()
    };

    let stat = read("cpu_count and boot_time", "/proc/stat").unwrap_or_default();
    // cpu0, cpu1, …: the "cpu " line is their sum.
    let cpu_count = stat
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    let memory = read("memory", "/proc/meminfo").map_or(Value::Null, |text| {
        // KiB values, as the kernel writes them ("kB").
        let kib = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .and_then(|v| first_word(v).parse::<u64>().ok())
                .map(|v| v.saturating_mul(1024))
        };
        let field = |key| kib(key).unwrap_or(0);
        let total = field("MemTotal");
        // Kernels before 3.14 have no MemAvailable: sysinfo's estimate.
        let available = kib("MemAvailable").unwrap_or_else(|| {
            (field("MemFree") + field("Buffers") + field("Cached") + field("SReclaimable"))
                .saturating_sub(field("Shmem"))
        });
        let swap_total = field("SwapTotal");
        json!({
            "total_bytes": total,
            "used_bytes": total.saturating_sub(available),
            "available_bytes": available,
            "swap_total_bytes": swap_total,
            "swap_used_bytes": swap_total.saturating_sub(field("SwapFree")),
            "cpu_count": cpu_count,
        })
    });
    let boot_time = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime"))
        .and_then(|v| first_word(v).parse::<u64>().ok())
        .map_or(Value::Null, Value::from);
    let kernel_version = read("kernel_version", "/proc/sys/kernel/osrelease")
        .map_or(Value::Null, |t| t.trim_end_matches('\n').into());
    let hostname = read("hostname", "/proc/sys/kernel/hostname")
        .map_or(Value::Null, |t| t.trim_end_matches('\n').into());
    let os_version = read("os_version", "/etc/os-release").map_or(Value::Null, |text| {
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.replace('"', ""))
        };
        // "Linux (Red Hat Enterprise Linux CoreOS 9.6)", as sysinfo wrote it.
        match (get("NAME="), get("VERSION_ID=")) {
            (name, Some(version)) => {
                format!("Linux ({} {version})", name.as_deref().unwrap_or("unknown"))
            }
            (Some(name), None) => format!("Linux ({name})"),
            (None, None) => "Linux".to_owned(),
        }
        .into()
    });
    let uptime_seconds = read("uptime", "/proc/uptime")
        .and_then(|t| t.split('.').next()?.parse::<u64>().ok())
        .map_or(Value::Null, Value::from);
    let physical_cores = read("physical_core_count", "/proc/cpuinfo")
        .map_or(Value::Null, |text| physical_core_count(&text).into());
    let load_average = read("load_average", "/proc/loadavg").map_or(Value::Null, |text| {
        let mut loads = text
            .split_whitespace()
            .take(3)
            .map(|v| v.parse::<f64>().unwrap_or(0.0));
        let mut next = || loads.next().unwrap_or(0.0);
        json!({"one": next(), "five": next(), "fifteen": next()})
    });
    let disks = read("disks", "/proc/mounts").map_or(Value::Null, |text| disks(&text).into());
    json!({
        "source": "live system",
        "collected_root": root,
        "root_is_live_system": live_root,
        "kernel_version": kernel_version,
        "os_version": os_version,
        "hostname": hostname,
        "uptime_seconds": uptime_seconds,
        "boot_time": boot_time,
        "physical_core_count": physical_cores,
        "load_average": load_average,
        "memory": memory,
        "disks": disks,
        "errors": errors,
    })
}

/// Distinct (core id, physical id) pairs; a processor without them (no
/// SMT, as on some ARM boards) counts as one core.
fn physical_core_count(cpuinfo: &str) -> usize {
    let mut cores: Vec<String> = Vec::new();
    for block in cpuinfo.split("\n\n") {
        let get = |key: &str| {
            block
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_once(':'))
                .map_or("", |(_, v)| v.trim())
        };
        let (core, package, cpu) = (get("core id"), get("physical id"), get("processor"));
        let id = if !core.is_empty() && !package.is_empty() {
            format!("{core} {package}")
        } else if !cpu.is_empty() {
            cpu.to_owned()
        } else {
            continue;
        };
        if !cores.contains(&id) {
            cores.push(id);
        }
    }
    cores.len()
}

/// The mounted file systems that hold files, with statvfs's space; pseudo
/// and network file systems (statvfs on a hard NFS mount can hang) and
/// what is under /sys, /proc and /run are left out, as sysinfo did.
fn disks(mounts: &str) -> Vec<Value> {
    let mut seen: Vec<(&str, String, &str)> = Vec::new();
    let mut disks = Vec::new();
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (spec, file, fstype) = (
            fields.next().unwrap_or_default(),
            fields.next().unwrap_or_default(),
            fields.next().unwrap_or_default(),
        );
        let file = file
            .replace("\\134", "\\")
            .replace("\\040", " ")
            .replace("\\011", "\t")
            .replace("\\012", "\n");
        let pseudo = matches!(
            fstype,
            "rootfs"
                | "sysfs"
                | "proc"
                | "devtmpfs"
                | "cgroup"
                | "cgroup2"
                | "pstore"
                | "squashfs"
                | "rpc_pipefs"
                | "iso9660"
                | "devpts"
                | "hugetlbfs"
                | "mqueue"
                | "tmpfs"
                | "cifs"
                | "nfs"
                | "nfs4"
                | "autofs"
        );
        if pseudo
            || file.starts_with("/sys")
            || file.starts_with("/proc")
            || (file.starts_with("/run") && !file.starts_with("/run/media"))
            || spec.starts_with("sunrpc")
        {
            continue;
        }
        let key = (spec, file, fstype);
        if seen.contains(&key) {
            continue;
        }
        let (total, available, read_only) = match rustix::fs::statvfs(key.1.as_str()) {
            Ok(st) if st.f_frsize.saturating_mul(st.f_blocks) > 0 => (
                st.f_frsize.saturating_mul(st.f_blocks),
                st.f_frsize.saturating_mul(st.f_bavail),
                st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY),
            ),
            _ => (0, 0, false),
        };
        disks.push(json!({
            "name": spec,
            "mount_point": key.1,
            "file_system": fstype,
            "total_bytes": total,
            "available_bytes": available,
            "read_only": read_only,
        }));
        seen.push(key);
    }
    disks
}

#[cfg(test)]
mod tests {
    use super::super::testing::{context, fixture_path, MemorySink};
    use super::super::{run_collector, Status};
    use super::*;

    #[test]
    fn reads_boot_id_and_writes_a_live_summary() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc/sys/kernel/random")).unwrap();
        std::fs::write(
            root.path().join("proc/sys/kernel/random/boot_id"),
            b"8f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n",
        )
        .unwrap();
        let ctx = context(root.path(), Some(fixture_path(None)));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("system", collect, &ctx, &mut sink).unwrap();

        assert_eq!(
            sink.get("system/boot_id").unwrap(),
            b"8f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n"
        );
        let summary: Value =
            serde_json::from_slice(sink.get("system/summary.json").unwrap()).unwrap();
        assert_eq!(summary["source"], "live system");
        assert_eq!(summary["root_is_live_system"], false);
        assert!(summary["memory"]["total_bytes"].as_u64().unwrap() > 0);
        assert!(summary["memory"]["cpu_count"].as_u64().unwrap() > 0);
        assert_ne!(report.status, Status::Skipped);
        let status: Value =
            serde_json::from_slice(sink.get("system/rpm-ostree-status.json").unwrap()).unwrap();
        assert_eq!(status["deployments"][0]["booted"], true);
    }

    #[test]
    fn counts_cores_and_lists_disks_as_sysinfo_did() {
        let smt = "processor\t: 0\nphysical id\t: 0\ncore id\t: 0\n\n\
                   processor\t: 1\nphysical id\t: 0\ncore id\t: 0\n\n\
                   processor\t: 2\nphysical id\t: 0\ncore id\t: 1\n\n";
        assert_eq!(physical_core_count(smt), 2);
        assert_eq!(physical_core_count("processor : 0\n\nprocessor : 1\n"), 2);
        let disks = disks(
            "proc /proc proc rw 0 0\ntmpfs /run tmpfs rw 0 0\n/dev/vda4 / xfs rw 0 0\n\
             /dev/vda4 / xfs rw 0 0\nsrv:/x /mnt nfs4 rw 0 0\n/dev/vdb1 /var/with\\040space ext4 ro 0 0\n",
        );
        let points: Vec<&str> = disks
            .iter()
            .map(|d| d["mount_point"].as_str().unwrap())
            .collect();
        assert_eq!(points, ["/", "/var/with space"]);
        assert!(disks[0]["total_bytes"].as_u64().unwrap() > 0);
        assert_eq!(disks[1]["total_bytes"], 0, "not mounted here: no statvfs");
        let summary = summary("/", true);
        assert!(summary["load_average"]["one"].is_f64(), "{summary}");
        assert!(summary["boot_time"].as_u64().unwrap() > 1_000_000_000);
        assert!(summary["physical_core_count"].as_u64().unwrap() > 0);
        assert!(summary["kernel_version"].as_str().unwrap().contains('.'));
        assert_eq!(summary["errors"], json!([]));
    }
}
