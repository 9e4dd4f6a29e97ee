//! Network state: addresses, routes of every table (v4 and v6), links with
//! statistics, policy rules, neighbours, listening sockets, the resolver and
//! host name files, NetworkManager's connection profiles and its own view of
//! devices and connections. Most failed boots that never reach the service
//! are a network problem, and these say which one.
//!
//! NetworkManager keyfiles hold Wi-Fi, 802.1X and VPN secrets (`psk=`,
//! `password=`, `[vpn-secrets]`…): they are read in keyfile mode, which
//! replaces every secret value (see `redact`) and counts it in the manifest.
//!
//! `ip`, `ss` and `nmcli` describe the running machine: from a mounted
//! disk (`collect --root` other than `/`) only the root's files are read.

use std::io;

use super::members::{Members, Opts};
use crate::redact::Mode;

/// Where NetworkManager keeps connection profiles: persistent ones, then
/// the ones generated at boot (from the kernel command line, nmstate).
const NM_CONNECTION_DIRS: [(&str, &str); 2] = [
    (
        "/etc/NetworkManager/system-connections",
        "network/nm-connections/etc",
    ),
    (
        "/run/NetworkManager/system-connections",
        "network/nm-connections/run",
    ),
];
/// More profiles than this on a booting host is not a profile directory.
const MAX_CONNECTIONS: usize = 200;
const CONNECTION_MAX_BYTES: u64 = 256 * 1024;

pub(crate) fn collect(m: &mut Members<'_>) -> io::Result<()> {
    let live = m.running_machine("ip, ss, nmcli");
    if live {
        m.command("network/ip-addr.txt", "ip", ["-d", "address", "show"])?;
        m.command(
            "network/ip-route.txt",
            "ip",
            ["route", "show", "table", "all"],
        )?;
        m.command(
            "network/ip6-route.txt",
            "ip",
            ["-6", "route", "show", "table", "all"],
        )?;
        m.command("network/ip-link.txt", "ip", ["-s", "-d", "link", "show"])?;
        m.command("network/ip-rule.txt", "ip", ["rule", "show"])?;
        m.command("network/ip6-rule.txt", "ip", ["-6", "rule", "show"])?;
        m.command("network/ip-neigh.txt", "ip", ["neigh", "show"])?;
        m.command("network/ss-tulpn.txt", "ss", ["-tulpn"])?;
    }
    m.file("network/resolv.conf", "/etc/resolv.conf")?;
    m.file("network/hosts", "/etc/hosts")?;
    m.file("network/hostname", "/etc/hostname")?;
    connections(m)?;
    if !live {
        return Ok(());
    }
    m.command("network/nmcli-device.txt", "nmcli", ["device", "status"])?;
    m.command("network/nmcli-device-show.txt", "nmcli", ["device", "show"])?;
    m.command(
        "network/nmcli-connection.txt",
        "nmcli",
        ["connection", "show"],
    )
}

fn connections(m: &mut Members<'_>) -> io::Result<()> {
    let opts = Opts {
        mode: Mode::Keyfile,
        max_bytes: Some(CONNECTION_MAX_BYTES),
    };
    for (dir, prefix) in NM_CONNECTION_DIRS {
        let Ok(files) = m.ctx().list_files(dir) else {
            continue;
        };
        if files.len() > MAX_CONNECTIONS {
            m.note(format!(
                "{} profiles in {dir}; the first {MAX_CONNECTIONS} by name collected",
                files.len()
            ));
        }
        for file in files.iter().take(MAX_CONNECTIONS) {
            // Names are the connection ids; keep them printable in the tar.
            let name: String = file
                .name
                .chars()
                .map(|c| if c.is_control() || c == '/' { '_' } else { c })
                .collect();
            m.file_with(&format!("{prefix}/{name}"), &file.host, opts)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{context, fixture_path, MemorySink};
    use super::super::{run_collector, Status};
    use super::*;

    #[test]
    fn collects_ip_views_and_resolver_files() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::fs::write(
            root.path().join("etc/resolv.conf"),
            b"nameserver 192.168.122.1\n",
        )
        .unwrap();
        std::fs::write(root.path().join("etc/hostname"), b"master-0\n").unwrap();
        let nm = root.path().join("etc/NetworkManager/system-connections");
        std::fs::create_dir_all(&nm).unwrap();
        std::fs::write(
            nm.join("corp-wifi.nmconnection"),
            "[connection]\nid=corp-wifi\ntype=wifi\n[wifi-security]\nkey-mgmt=wpa-psk\npsk=very secret phrase\n",
        )
        .unwrap();
        let ctx = context(root.path(), Some(fixture_path(None)));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("network", collect, &ctx, &mut sink).unwrap();

        assert_ne!(report.status, Status::Failed, "{report:?}");
        let route =
            String::from_utf8_lossy(sink.get("network/ip6-route.txt").unwrap()).into_owned();
        assert!(
            route.starts_with("# fake ip -6 route show table all\n"),
            "{route}"
        );
        assert_eq!(
            sink.get("network/resolv.conf").unwrap(),
            b"nameserver 192.168.122.1\n"
        );
        // Profiles are collected with their secrets replaced and counted.
        let wifi = sink
            .get("network/nm-connections/etc/corp-wifi.nmconnection")
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(wifi),
            "[connection]\nid=corp-wifi\ntype=wifi\n[wifi-security]\nkey-mgmt=wpa-psk\npsk=[REDACTED]\n"
        );
        let profile = report
            .files
            .iter()
            .find(|f| f.path == "network/nm-connections/etc/corp-wifi.nmconnection")
            .unwrap();
        assert_eq!(profile.redactions, 1);
        let hosts = report
            .files
            .iter()
            .find(|f| f.path == "network/hosts")
            .unwrap();
        assert_eq!(hosts.status, Status::Skipped);
        assert!(!hosts.archived);
        assert_eq!(report.bytes, sink.used);
    }
}
