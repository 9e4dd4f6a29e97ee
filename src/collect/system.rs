//! The host itself: which boot this is (`boot_id`), which OS and kernel,
//! the kernel command line, uptime, CPU and memory, the clock's state (a
//! clock far off breaks every TLS handshake of an installation), and a
//! `summary.json` of memory, CPUs, load, uptime and disk space from sysinfo.
//!
//! sysinfo and the commands always describe the running machine; when the
//! context's root is a sysroot, `summary.json` says so with
//! `"source": "live system"` and names the root the files came from.

use std::io;

use serde_json::{json, Value};
use sysinfo::{CpuRefreshKind, Disks, System};

use super::members::Members;

pub(crate) fn collect(m: &mut Members<'_>) -> io::Result<()> {
    m.file("system/boot_id", "/proc/sys/kernel/random/boot_id")?;
    m.file("system/os-release", "/etc/os-release")?;
    m.file("system/cmdline", "/proc/cmdline")?;
    m.file("system/uptime", "/proc/uptime")?;
    m.file("system/meminfo", "/proc/meminfo")?;
    m.file("system/cpuinfo", "/proc/cpuinfo")?;
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
    m.generated("system/summary.json", "sysinfo (live system)", data)
}

/// Everything sysinfo can tell; a figure it cannot read is left out and its
/// error listed, never a reason to drop the rest.
fn summary(root: &str, live_root: bool) -> Value {
    let mut errors: Vec<String> = Vec::new();
    let mut note = |what: &str, err: &dyn std::fmt::Display| errors.push(format!("{what}: {err}"));

    let memory = match System::new() {
        Ok(mut sys) => {
            sys.refresh_memory();
            sys.refresh_cpu_list(CpuRefreshKind::nothing());
            json!({
                "total_bytes": sys.total_memory(),
                "used_bytes": sys.used_memory(),
                "available_bytes": sys.available_memory(),
                "swap_total_bytes": sys.total_swap(),
                "swap_used_bytes": sys.used_swap(),
                "cpu_count": sys.cpus().len(),
            })
        }
        Err(err) => {
            note("memory", &err);
            Value::Null
        }
    };
    let mut get = |what: &str, value: Result<Value, sysinfo::Error>| {
        value.unwrap_or_else(|err| {
            note(what, &err);
            Value::Null
        })
    };
    let kernel_version = get("kernel_version", System::kernel_version().map(Value::from));
    let os_version = get("os_version", System::long_os_version().map(Value::from));
    let hostname = get("hostname", System::host_name().map(Value::from));
    let uptime_seconds = get("uptime", System::uptime().map(Value::from));
    let boot_time = get("boot_time", System::boot_time().map(Value::from));
    let physical_cores = get(
        "physical_core_count",
        System::physical_core_count().map(Value::from),
    );
    let load_average = get(
        "load_average",
        System::load_average().map(|l| json!({"one": l.one, "five": l.five, "fifteen": l.fifteen})),
    );
    let disks = get(
        "disks",
        Disks::new_with_refreshed_list().map(|disks| {
            disks
                .iter()
                .map(|d| {
                    json!({
                        "name": d.name().to_string_lossy(),
                        "mount_point": d.mount_point().display().to_string(),
                        "file_system": d.file_system().to_string_lossy(),
                        "total_bytes": d.total_space(),
                        "available_bytes": d.available_space(),
                        "read_only": d.is_read_only(),
                    })
                })
                .collect::<Vec<_>>()
                .into()
        }),
    );
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
}
