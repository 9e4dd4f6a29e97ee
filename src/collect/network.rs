//! Network state: addresses, routes of every table, links with statistics,
//! policy rules, and the resolver and host name files. Most failed boots that
//! never reach the service are a network problem, and these say which one.
//!
//! NetworkManager's keyfiles are deliberately not collected: they hold Wi-Fi
//! and VPN secrets (`psk=`, `password=`), and the `ip` view says what was
//! actually configured.

use std::io;

use super::Members;

pub fn collect(m: &mut Members<'_>) -> io::Result<()> {
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
    m.file("network/resolv.conf", "/etc/resolv.conf")?;
    m.file("network/hosts", "/etc/hosts")?;
    m.file("network/hostname", "/etc/hostname")
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
        let ctx = context(root.path(), Some(fixture_path(None)));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("network", collect, &ctx, &mut sink).unwrap();

        assert_eq!(report.status, Status::Ok, "{report:?}");
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
