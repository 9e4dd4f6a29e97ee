//! Name resolution for the HTTP clients, without glibc's NSS: a static glibc
//! binary cannot load the host's NSS modules (docs/packaging.md), so the
//! agent reads `/etc/hosts` and `/etc/resolv.conf` itself and asks the name
//! servers over UDP (TCP when an answer is truncated), as a resolver library does.
//!
//! It does what hickory-resolver, which it replaces (size: docs/packaging.md),
//! did for reqwest:
//!
//! - `localhost` and names under it are 127.0.0.1 and ::1; names under
//!   `invalid` never resolve (RFC 6761); neither is asked of a server.
//! - A name ending in `.` is tried as it is. Another is tried as it is first
//!   when it has more labels than `ndots`, then with the `domain` (or the
//!   host name's domain), then with each `search` domain (the last of
//!   `domain`/`search` in resolv.conf wins), then as it is if not first.
//!   The first of these names with an address is the answer.
//! - For each name, `/etc/hosts` first, then A and AAAA asked together; both
//!   families' addresses are the answer, IPv4 first.
//! - Name servers (IPv6 ones may carry a `%zone`) in resolv.conf's order,
//!   `attempts` rounds, `timeout` seconds per question (defaults 2 and 5,
//!   `ndots` 1); a name that does not exist or has no address at one server
//!   is asked of the next.
//!
//! Two deliberate differences: the files are read at each lookup, not once
//! per client, and nothing is cached (lookups happen once per connection,
//! which the clients keep); and a name in `/etc/hosts` is answered from
//! there alone, as glibc does, rather than its other family asked of DNS.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

const A: u16 = 1;
const AAAA: u16 = 28;

/// The resolver every HTTP client of the agent uses
/// (`ClientBuilder::dns_resolver`).
fn resolver() -> Arc<SystemResolver> {
    Arc::new(SystemResolver)
}

/// The start of every HTTP client of the agent: reqwest's builder with this
/// resolver. clippy.toml forbids `reqwest::Client::builder` elsewhere: a
/// client built without it would fall back to glibc's lookup, which a
/// static binary cannot do on the host.
#[allow(clippy::disallowed_methods)]
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().dns_resolver(resolver())
}

#[derive(Debug)]
pub(crate) struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let read = |path| std::fs::read_to_string(path).unwrap_or_default();
            let conf = Conf::parse(
                &read("/etc/resolv.conf"),
                &read("/etc/hosts"),
                &read("/proc/sys/kernel/hostname"),
            );
            let ips = lookup(&conf, &name).await?;
            Ok(Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0))) as Addrs)
        })
    }
}

/// What resolv.conf and hosts say.
#[derive(Debug, Clone)]
pub(crate) struct Conf {
    servers: Vec<SocketAddr>,
    domain: Option<String>,
    search: Vec<String>,
    ndots: usize,
    timeout: Duration,
    attempts: usize,
    /// (lower-case name, address), in the file's order.
    hosts: Vec<(String, IpAddr)>,
}

impl Conf {
    pub(crate) fn parse(resolv_conf: &str, hosts: &str, hostname: &str) -> Conf {
        let mut conf = Conf {
            servers: Vec::new(),
            domain: None,
            search: Vec::new(),
            ndots: 1,
            timeout: Duration::from_secs(5),
            attempts: 2,
            hosts: Vec::new(),
        };
        for line in resolv_conf.lines() {
            let line = line.split(['#', ';']).next().unwrap_or_default();
            let mut words = line.split_whitespace();
            let value = |s: &str| s.trim_end_matches('.').to_ascii_lowercase();
            match words.next() {
                Some("nameserver") => {
                    if let Some(server) = words.next().and_then(server) {
                        conf.servers.push(server);
                    }
                }
                Some("domain") => {
                    conf.domain = words.next().map(value);
                    conf.search = conf.domain.iter().cloned().collect();
                }
                Some("search") => {
                    conf.search = words.filter(|w| *w != "--").map(value).collect();
                }
                Some("options") => {
                    for option in words {
                        let Some((key, n)) = option.split_once(':') else {
                            continue;
                        };
                        let Ok(n) = n.parse::<u16>() else { continue };
                        match key {
                            "ndots" => conf.ndots = n.into(),
                            "timeout" => conf.timeout = Duration::from_secs(n.max(1).into()),
                            "attempts" => conf.attempts = n.max(1).into(),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if conf.domain.is_none() {
            conf.domain = hostname
                .trim()
                .split_once('.')
                .map(|(_, d)| d.trim_end_matches('.').to_ascii_lowercase())
                .filter(|d| !d.is_empty());
        }
        for line in hosts.lines() {
            let mut words = line
                .split('#')
                .next()
                .unwrap_or_default()
                .split_whitespace();
            let Some(Ok(ip)) = words.next().map(str::parse::<IpAddr>) else {
                continue;
            };
            for name in words {
                conf.hosts
                    .push((name.trim_end_matches('.').to_ascii_lowercase(), ip));
            }
        }
        conf
    }

    /// The names to try, in order (see the module's doc).
    fn candidates(&self, name: &str) -> Vec<String> {
        let base = name.trim_end_matches('.').to_ascii_lowercase();
        if name.ends_with('.') {
            return vec![base];
        }
        let raw_first = base.split('.').count() > self.ndots || is_under(&base, "localhost");
        let mut names = Vec::new();
        let mut push = |n: String| {
            if !names.contains(&n) {
                names.push(n);
            }
        };
        if raw_first {
            push(base.clone());
        }
        for domain in self.domain.iter().chain(&self.search) {
            push(format!("{base}.{domain}"));
        }
        push(base);
        names
    }
}

/// A resolv.conf name server: an address, IPv6 possibly with a `%zone`
/// (an interface's name or index), port 53.
fn server(word: &str) -> Option<SocketAddr> {
    let Some((ip, zone)) = word.split_once('%') else {
        return Some(SocketAddr::new(word.parse().ok()?, 53));
    };
    let scope = zone.parse().ok().or_else(|| {
        let path = format!("/sys/class/net/{zone}/ifindex");
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    })?;
    Some(std::net::SocketAddrV6::new(ip.parse().ok()?, 53, 0, scope).into())
}

/// `name` is `zone` or under it.
fn is_under(name: &str, zone: &str) -> bool {
    name == zone
        || name
            .strip_suffix(zone)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// The addresses of `name` (see the module's doc).
pub(crate) async fn lookup(conf: &Conf, name: &str) -> io::Result<Vec<IpAddr>> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{name}: no address"));
    for candidate in conf.candidates(name) {
        let from_hosts: Vec<IpAddr> = conf
            .hosts
            .iter()
            .filter(|(n, _)| *n == candidate)
            .map(|(_, ip)| *ip)
            .collect();
        if !from_hosts.is_empty() {
            return Ok(from_hosts);
        }
        if is_under(&candidate, "localhost") {
            return Ok(vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()]);
        }
        if is_under(&candidate, "invalid") {
            last = not_found(&candidate);
            continue;
        }
        let (v4, v6) = tokio::join!(ask(conf, &candidate, A), ask(conf, &candidate, AAAA));
        match (v4, v6) {
            (Ok(mut v4), Ok(v6)) => {
                v4.extend(v6);
                if !v4.is_empty() {
                    return Ok(v4);
                }
                last = not_found(&candidate);
            }
            (Ok(ips), Err(err)) | (Err(err), Ok(ips)) => {
                if !ips.is_empty() {
                    return Ok(ips);
                }
                last = err;
            }
            (Err(err), Err(_)) => last = err,
        }
    }
    Err(io::Error::new(
        last.kind(),
        format!("resolving {name}: {last}"),
    ))
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("no record found for {name}"),
    )
}

/// One question to the name servers: the addresses of type `qtype`
/// (empty: the name has none), or why there is no answer.
async fn ask(conf: &Conf, name: &str, qtype: u16) -> io::Result<Vec<IpAddr>> {
    let id = fastrand::u16(..);
    let query = encode(id, name, qtype)?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no nameserver in /etc/resolv.conf");
    let mut negative = false;
    for _ in 0..conf.attempts {
        for &server in &conf.servers {
            let reply = match tokio::time::timeout(conf.timeout, exchange(server, &query)).await {
                Ok(Ok(reply)) => reply,
                Ok(Err(err)) => {
                    last = io::Error::new(err.kind(), format!("nameserver {server}: {err}"));
                    continue;
                }
                Err(_) => {
                    last = io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "nameserver {server}: no answer for {name} in {:?}",
                            conf.timeout
                        ),
                    );
                    continue;
                }
            };
            match answer(&reply, &query, qtype) {
                Ok(Some(ips)) if !ips.is_empty() => return Ok(ips),
                Ok(_) => {
                    negative = true;
                    last = not_found(name);
                }
                Err(err) => {
                    last = io::Error::new(err.kind(), format!("nameserver {server}: {err}"));
                }
            }
        }
        if negative {
            break;
        }
    }
    if negative {
        Ok(Vec::new())
    } else {
        Err(last)
    }
}

/// A DNS query: header with recursion desired, one question of class IN.
fn encode(id: u16, name: &str, qtype: u16) -> io::Result<Vec<u8>> {
    let mut q = Vec::with_capacity(18 + name.len());
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        let len = u8::try_from(label.len()).unwrap_or(u8::MAX);
        if len == 0 || len > 63 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a DNS name"),
            ));
        }
        q.push(len);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    if q.len() > 12 + 255 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "DNS name too long",
        ));
    }
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&[0, 1]);
    Ok(q)
}

/// Sends the query over UDP; a truncated answer is asked again over TCP.
async fn exchange(server: SocketAddr, query: &[u8]) -> io::Result<Vec<u8>> {
    let local: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local).await?;
    socket.connect(server).await?;
    socket.send(query).await?;
    let mut buf = vec![0; 4096];
    loop {
        let n = socket.recv(&mut buf).await?;
        let reply = &buf[..n];
        // Only the answer to this question: same id, a response.
        if n < 12 || reply[..2] != query[..2] || reply[2] & 0x80 == 0 {
            continue;
        }
        if reply[2] & 0x02 == 0 {
            buf.truncate(n);
            return Ok(buf);
        }
        break;
    }
    let mut tcp = TcpStream::connect(server).await?;
    // A query is at most 12 + 255 + 4 bytes.
    let len = u16::try_from(query.len()).unwrap_or(u16::MAX);
    let mut framed = len.to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    tcp.write_all(&framed).await?;
    let len = tcp.read_u16().await?;
    let mut reply = vec![0; len.into()];
    tcp.read_exact(&mut reply).await?;
    Ok(reply)
}

fn malformed() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "malformed DNS answer")
}

/// The addresses of type `qtype` in the answer to `query`; `None`: the name
/// does not exist (NXDOMAIN). A server failure or refusal is an error.
fn answer(reply: &[u8], query: &[u8], qtype: u16) -> io::Result<Option<Vec<IpAddr>>> {
    let question = &query[12..];
    if reply.len() < query.len()
        || reply[..2] != query[..2]
        || reply[2] & 0x80 == 0
        || reply[4..6] != [0, 1]
        || !reply[12..query.len()].eq_ignore_ascii_case(question)
    {
        return Err(malformed());
    }
    match reply[3] & 0x0f {
        0 => {}
        3 => return Ok(None),
        rcode => {
            return Err(io::Error::other(format!(
                "DNS server failure (response code {rcode})"
            )))
        }
    }
    let count = u16::from_be_bytes([reply[6], reply[7]]);
    let mut at = query.len();
    let mut ips = Vec::new();
    for _ in 0..count {
        // The owner name: labels, ending in a zero or a compression pointer.
        loop {
            let len = *reply.get(at).ok_or_else(malformed)?;
            match len {
                0 => {
                    at += 1;
                    break;
                }
                0xc0.. => {
                    at += 2;
                    break;
                }
                64.. => return Err(malformed()),
                _ => at += 1 + usize::from(len),
            }
        }
        let fixed = reply.get(at..at + 10).ok_or_else(malformed)?;
        let rtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let class = u16::from_be_bytes([fixed[2], fixed[3]]);
        let len = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        at += 10;
        let data = reply.get(at..at + len).ok_or_else(malformed)?;
        at += len;
        if class != 1 || rtype != qtype {
            continue;
        }
        if let Ok(v4) = <[u8; 4]>::try_from(data) {
            ips.push(Ipv4Addr::from(v4).into());
        } else if let Ok(v6) = <[u8; 16]>::try_from(data) {
            ips.push(Ipv6Addr::from(v6).into());
        }
    }
    Ok(Some(ips))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(resolv: &str, hosts: &str) -> Conf {
        Conf::parse(resolv, hosts, "")
    }

    #[test]
    fn reads_resolv_conf_as_glibc_does() {
        let c = Conf::parse(
            "# comment\nnameserver 10.0.0.1\nnameserver fd00::53 ; x\nnameserver bogus\n\
             nameserver fe80::1%2\nnameserver fe80::2%lo\nnameserver fe80::3%no-such-if\n\
             domain corp.example\nsearch a.example b.example. --\n\
             options ndots:2 timeout:3 attempts:4 rotate\n",
            "",
            "node1.cluster.example\n",
        );
        assert_eq!(
            c.servers,
            [
                "10.0.0.1:53".parse().unwrap(),
                "[fd00::53]:53".parse().unwrap(),
                "[fe80::1%2]:53".parse().unwrap(),
                "[fe80::2%1]:53".parse().unwrap(),
            ]
        );
        assert_eq!(c.domain.as_deref(), Some("corp.example"));
        assert_eq!(c.search, ["a.example", "b.example"]);
        assert_eq!(
            (c.ndots, c.timeout, c.attempts),
            (2, Duration::from_secs(3), 4)
        );
        // No `domain`: the host name's.
        let c = Conf::parse("search x.example\n", "", "node1.cluster.example\n");
        assert_eq!(c.domain.as_deref(), Some("cluster.example"));
        assert_eq!(
            (c.ndots, c.timeout, c.attempts),
            (1, Duration::from_secs(5), 2)
        );
        // The last of domain/search is the search list.
        let c = conf("search x.example\ndomain y.example\n", "");
        assert_eq!(c.search, ["y.example"]);
    }

    #[test]
    fn tries_the_names_in_hickorys_order() {
        let c = conf("domain d.example\nsearch s1.example s2.example\n", "");
        assert_eq!(
            c.candidates("api.example.com"),
            [
                "api.example.com",
                "api.example.com.d.example",
                "api.example.com.s1.example",
                "api.example.com.s2.example"
            ]
        );
        assert_eq!(
            c.candidates("api"),
            ["api.d.example", "api.s1.example", "api.s2.example", "api"]
        );
        assert_eq!(c.candidates("Api.Example.com."), ["api.example.com"]);
        let c = conf("search s.example\noptions ndots:5\n", "");
        assert_eq!(c.candidates("a.b.c"), ["a.b.c.s.example", "a.b.c"]);
    }

    #[tokio::test]
    async fn hosts_localhost_and_invalid_need_no_server() {
        let c = conf(
            "",
            "127.0.0.1 localhost\n192.0.2.7 service.example svc # x\n2001:db8::7 svc\n",
        );
        assert_eq!(
            lookup(&c, "SVC").await.unwrap(),
            [
                "192.0.2.7".parse::<IpAddr>().unwrap(),
                "2001:db8::7".parse().unwrap()
            ]
        );
        assert_eq!(
            lookup(&c, "localhost").await.unwrap(),
            [IpAddr::from(Ipv4Addr::LOCALHOST)]
        );
        assert_eq!(
            lookup(&c, "api.localhost").await.unwrap(),
            [
                IpAddr::from(Ipv4Addr::LOCALHOST),
                Ipv6Addr::LOCALHOST.into()
            ]
        );
        let err = lookup(&c, "does-not-resolve.invalid").await.unwrap_err();
        assert!(
            err.to_string().contains("does-not-resolve.invalid"),
            "{err}"
        );
        let err = lookup(&c, "elsewhere.example").await.unwrap_err();
        assert!(err.to_string().contains("no nameserver"), "{err}");
    }

    /// A name server on loopback answering from `zone` (name, type, rdata);
    /// names not in it get NXDOMAIN, and `truncate` answers over UDP
    /// with TC set (the TCP answer is whole).
    async fn server(zone: Vec<(&'static str, u16, Vec<u8>)>, truncate: bool) -> SocketAddr {
        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = udp.local_addr().unwrap();
        let tcp = tokio::net::TcpListener::bind(addr).await.unwrap();
        let reply = move |q: &[u8]| {
            let mut labels = Vec::new();
            let mut at = 12;
            while q[at] != 0 {
                let len = usize::from(q[at]);
                labels.push(String::from_utf8_lossy(&q[at + 1..at + 1 + len]).into_owned());
                at += 1 + len;
            }
            let name = labels.join(".");
            let qtype = u16::from_be_bytes([q[at + 1], q[at + 2]]);
            let end = at + 5;
            let mut r = q[..end].to_vec();
            r[2] |= 0x80;
            let records: Vec<_> = zone.iter().filter(|(n, _, _)| *n == name).collect();
            if records.is_empty() {
                r[3] = 3;
                return r;
            }
            // A CNAME first, as servers put it; then the records of the type.
            let mut count = 1u16;
            r.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xc0, 12]);
            for (_, t, data) in records.iter().filter(|(_, t, _)| *t == qtype) {
                r.extend_from_slice(&[0xc0, 12]);
                r.extend_from_slice(&t.to_be_bytes());
                r.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
                r.extend_from_slice(&u16::try_from(data.len()).unwrap().to_be_bytes());
                r.extend_from_slice(data);
                count += 1;
            }
            r[6..8].copy_from_slice(&count.to_be_bytes());
            r
        };
        let reply = Arc::new(reply);
        let udp_reply = reply.clone();
        tokio::spawn(async move {
            let mut buf = [0; 512];
            loop {
                let (n, peer) = udp.recv_from(&mut buf).await.unwrap();
                let mut r = udp_reply(&buf[..n]);
                if truncate {
                    r.truncate(n);
                    r[2] |= 0x02;
                    r[6..8].copy_from_slice(&[0, 0]);
                }
                udp.send_to(&r, peer).await.unwrap();
            }
        });
        tokio::spawn(async move {
            loop {
                let (mut s, _) = tcp.accept().await.unwrap();
                let len = s.read_u16().await.unwrap();
                let mut q = vec![0; len.into()];
                s.read_exact(&mut q).await.unwrap();
                let r = reply(&q);
                s.write_all(&u16::try_from(r.len()).unwrap().to_be_bytes())
                    .await
                    .unwrap();
                s.write_all(&r).await.unwrap();
            }
        });
        addr
    }

    fn zone() -> Vec<(&'static str, u16, Vec<u8>)> {
        vec![
            ("api.example.com", A, vec![192, 0, 2, 1]),
            ("api.example.com", A, vec![192, 0, 2, 2]),
            (
                "api.example.com",
                AAAA,
                "2001:db8::1".parse::<Ipv6Addr>().unwrap().octets().to_vec(),
            ),
            ("svc.corp.example", A, vec![198, 51, 100, 9]),
            ("v4only.example", A, vec![203, 0, 113, 5]),
        ]
    }

    fn with_server(server: SocketAddr, extra: &str) -> Conf {
        let mut c = conf(extra, "");
        c.servers = vec![server];
        c.timeout = Duration::from_secs(2);
        c
    }

    #[tokio::test]
    async fn asks_a_name_server_over_udp_and_tcp() {
        for truncate in [false, true] {
            let c = with_server(server(zone(), truncate).await, "search corp.example\n");
            let want: Vec<IpAddr> = vec![
                "192.0.2.1".parse().unwrap(),
                "192.0.2.2".parse().unwrap(),
                "2001:db8::1".parse().unwrap(),
            ];
            assert_eq!(lookup(&c, "api.example.com").await.unwrap(), want);
            // Through the search list; one family only.
            assert_eq!(
                lookup(&c, "svc").await.unwrap(),
                ["198.51.100.9".parse::<IpAddr>().unwrap()]
            );
            assert_eq!(
                lookup(&c, "v4only.example").await.unwrap(),
                ["203.0.113.5".parse::<IpAddr>().unwrap()]
            );
            let err = lookup(&c, "nowhere.example").await.unwrap_err();
            assert!(err.to_string().contains("nowhere.example"), "{err}");
        }
    }

    #[tokio::test]
    async fn a_silent_server_is_passed_over() {
        let silent = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let good = server(zone(), false).await;
        let mut c = with_server(good, "");
        c.servers.insert(0, silent.local_addr().unwrap());
        c.timeout = Duration::from_millis(200);
        assert_eq!(
            lookup(&c, "v4only.example").await.unwrap(),
            ["203.0.113.5".parse::<IpAddr>().unwrap()]
        );
        c.servers.truncate(1);
        let err = lookup(&c, "v4only.example").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
    }

    #[test]
    fn refuses_what_is_not_an_answer() {
        let q = encode(7, "a.example", A).unwrap();
        assert!(answer(&q, &q, A).is_err(), "a query is not an answer");
        let mut r = q.clone();
        r[2] |= 0x80;
        assert_eq!(answer(&r, &q, A).unwrap(), Some(vec![]));
        r[3] = 2;
        assert!(answer(&r, &q, A).is_err(), "SERVFAIL");
        r[3] = 0;
        r[6..8].copy_from_slice(&[0, 1]);
        assert!(answer(&r, &q, A).is_err(), "an answer cut short");
        assert!(encode(1, "a..b", A).is_err());
        assert!(encode(1, &"x".repeat(64), A).is_err());
    }
}
