//! Network rules: name resolution, the proxy, the API and the machine
//! config server endpoints, and the links themselves. The texts are Go's
//! `net` and `net/http` errors (`lookup X on Y:53: …`, `dial tcp …: connect:
//! connection refused`, `proxyconnect tcp: …`), curl's, Ignition's fetch log
//! and NetworkManager's and the kernel drivers' carrier messages.

use super::line::{after_lit, has, registry_host, token_until, url_host};
use super::signal::{Category, Nature, Signal};

/// The Go/glibc wording of a failed lookup, and how the summary says it.
const DNS_REASONS: &[&str] = &[
    "no such host",
    "server misbehaving",
    "i/o timeout",
    "Temporary failure in name resolution",
    "Name or service not known",
    "connection refused",
    "no answer from DNS server",
];

/// `lookup quay.io on 192.168.122.1:53: server misbehaving`, curl's
/// `Could not resolve host: quay.io`, glibc's `Temporary failure in name
/// resolution`.
pub(super) fn dns(msg: &str) -> Option<Signal> {
    // Go's net package (net/net.go DNSError: `lookup HOST on SERVER: …`,
    // `lookup HOST: …`), at any of the word's places, the last (innermost
    // error) that has its shape: the English word (`DNS lookup failure
    // for: h`, `lookup failed: …`) may come first, and is left to the
    // wordings below when no Go one follows.
    let mut from = 0;
    let mut found = None;
    while let Some(i) = msg[from..].find("lookup ") {
        from += i + "lookup ".len();
        if let Some(signal) = go_lookup(&msg[from..]) {
            found = Some(signal);
        }
    }
    found.or_else(|| dns_wordings(msg))
}

/// `HOST on SERVER: REASON` or `HOST: REASON` after Go's `lookup `.
fn go_lookup(rest: &str) -> Option<Signal> {
    let host = token_until(rest, &[' ', ':', '"', ',']);
    let reason = DNS_REASONS.iter().find(|r| rest.contains(*r))?;
    let tail = &rest[host.len()..];
    if host.is_empty() || !(tail.starts_with(':') || tail.starts_with(" on ")) {
        return None;
    }
    let server = after_lit!(tail, " on ").map(|s| {
        // `192.168.122.1:53: …` or `[fd00::1]:53: …`
        let end = s.find(": ").unwrap_or(s.len());
        &s[..end]
    });
    let quoted = match server {
        Some(server) => format!("lookup {host} on {server}: {reason}"),
        None => format!("lookup {host}: {reason}"),
    };
    Some(Signal::new(
        Category::DnsResolution,
        host,
        format!("{host} did not resolve ({quoted})"),
        Nature::Transient,
    ))
}

/// The other programs' wordings of a failed lookup.
fn dns_wordings(msg: &str) -> Option<Signal> {
    if has!(msg, "no servers could be reached") {
        return Some(Signal::new(
            Category::DnsResolution,
            "nameservers",
            "no nameserver answered (no servers could be reached)".into(),
            Nature::Transient,
        ));
    }
    if let Some(rest) = after_lit!(msg, "DNS lookup failure for: ") {
        let host = token_until(rest, &[' ', ',']);
        return Some(Signal::new(
            Category::DnsResolution,
            host,
            format!("{host} did not resolve (DNS lookup failure)"),
            Nature::Transient,
        ));
    }
    if let Some(rest) = after_lit!(msg, "Could not resolve host: ") {
        let host = token_until(rest, &[' ', ';', '"', ')']);
        if !host.is_empty() {
            return Some(Signal::new(
                Category::DnsResolution,
                host,
                format!("{host} did not resolve (Could not resolve host: {host})"),
                Nature::Transient,
            ));
        }
    }
    for reason in [
        "Temporary failure in name resolution",
        "Name or service not known",
    ] {
        if msg.contains(reason) {
            // GLib's resolver (libostree, rpm-ostree, NetworkManager) names
            // the host it could not resolve: `Error resolving 'H': …`
            // (newer GLib quotes it “H”, gio/gthreadedresolver.c).
            let quoted = after_lit!(msg, "Error resolving ")
                .map(|r| r.trim_start_matches(['\'', '\u{201c}']))
                .map(|r| token_until(r, &['\'', '\u{201d}', ':', ' ']))
                .filter(|h| !h.is_empty());
            let host = quoted
                .or_else(|| url_host(msg).map(|h| token_until(h, &[':'])))
                .unwrap_or("unknown host");
            return Some(Signal::new(
                Category::DnsResolution,
                host,
                format!("{host} did not resolve ({reason})"),
                Nature::Transient,
            ));
        }
    }
    None
}

/// `proxyconnect tcp: dial tcp 10.0.0.9:3128: connect: connection refused`,
/// `Proxy Authentication Required`, curl's `Received HTTP code 407 from proxy
/// after CONNECT`.
pub(super) fn proxy(msg: &str) -> Option<Signal> {
    if let Some(rest) = after_lit!(msg, "proxyconnect tcp: ") {
        let proxy = after_lit!(rest, "dial tcp ")
            .map(|r| token_until(r, &[' ', '"']).trim_end_matches(':'))
            .or_else(|| after_lit!(rest, "lookup ").map(|r| token_until(r, &[' ', ':'])))
            .filter(|p| !p.is_empty())
            .unwrap_or("the proxy");
        let what = short_net_error(rest).unwrap_or("failed");
        return Some(Signal::new(
            Category::Proxy,
            proxy,
            format!("proxy {proxy} unreachable (proxyconnect tcp: {what})"),
            Nature::Transient,
        ));
    }
    // curl and every libcurl user (rpm-ostree, dnf, podman's helpers): the
    // proxy's own name does not resolve. `Could not resolve proxy: P`,
    // and the error code's text `Couldn't resolve proxy name`
    // (CURLE_COULDNT_RESOLVE_PROXY, lib/strerror.c).
    if let Some(rest) = after_lit!(msg, "Could not resolve proxy")
        .or_else(|| after_lit!(msg, "Couldn't resolve proxy"))
    {
        let proxy = after_lit!(rest, ": ")
            .map(|r| token_until(r, &[' ', '"', '\'', ';']))
            .filter(|p| !p.is_empty() && *p != "name")
            .unwrap_or("the proxy");
        return Some(Signal::new(
            Category::Proxy,
            proxy,
            format!("proxy {proxy} did not resolve (Could not resolve proxy)"),
            Nature::Transient,
        ));
    }
    // Go's net/http before 1.13: `http: error connecting to proxy P: …`.
    if let Some(rest) = after_lit!(msg, "error connecting to proxy") {
        let proxy = url_host(rest).unwrap_or("the proxy");
        return Some(Signal::new(
            Category::Proxy,
            proxy,
            format!("proxy {proxy} unreachable (error connecting to proxy)"),
            Nature::Transient,
        ));
    }
    // kubectl printing an HTTP status line instead of the API's JSON
    // answer: something in between (a proxy) answered.
    if let Some(rest) = after_lit!(msg, "Unable to connect to the server: ") {
        let status = [
            "Service Unavailable",
            "Bad Gateway",
            "Gateway Timeout",
            "Forbidden",
        ]
        .into_iter()
        .find(|s| rest.trim_start().starts_with(s));
        if let Some(status) = status {
            return Some(Signal::new(
                Category::Proxy,
                "the proxy",
                format!("a proxy answered the API's requests with {status}: check noProxy covers the API"),
                Nature::Transient,
            ));
        }
    }
    if has!(msg, "Proxy Authentication Required") || has!(msg, "code 407 from proxy") {
        let target = url_host(msg)
            .or_else(|| registry_host(msg))
            .unwrap_or("a request");
        return Some(Signal::new(
            Category::Proxy,
            "proxy credentials",
            format!("the proxy refused the credentials (407 Proxy Authentication Required) for {target}"),
            Nature::Fatal,
        ));
    }
    // curl cutting a CONNECT the proxy reset or refused (lib/cf-h1-proxy.c:
    // `Proxy CONNECT aborted`). Its sibling `CONNECT tunnel failed,
    // response 403` would need a needle of its own in the anchor finder's
    // table (a cost the table was not regenerated for this round).
    if has!(msg, "Proxy CONNECT aborted") {
        return Some(Signal::new(
            Category::Proxy,
            "proxy CONNECT",
            "the proxy cut the CONNECT tunnel (Proxy CONNECT aborted)".into(),
            Nature::Transient,
        ));
    }
    if let Some(rest) = after_lit!(msg, "Received HTTP code ") {
        if has!(rest, "from proxy after CONNECT") {
            let code = token_until(rest, &[' ']);
            return Some(Signal::new(
                Category::Proxy,
                format!("proxy CONNECT {code}"),
                format!("the proxy refused CONNECT with HTTP {code}"),
                Nature::Fatal,
            ));
        }
    }
    proxy_connect_status(msg)
        .or_else(|| curl_proxy(msg))
        .or_else(|| proxy_address(msg))
}

/// Go's `net/http` transport (transport.go, `dialConn`) answering a CONNECT
/// that the proxy refused: it returns the status line's text alone as the
/// request's error, so the `url.Error` reads `Get "https://quay.io/v2/":
/// Forbidden` (Go 1.14 and later quote the URL: `Get https://…/v2/:
/// Forbidden` before; the 407 `Proxy Authentication Required` is read
/// above). A server that answers the request itself gives a response,
/// never this error: only the hop in between (a proxy) can. Read when the
/// status follows `METHOD URL: ` and ends the message (or a quote, bracket
/// or stop closes it). Only `Forbidden`, the hop's own refusal: a `Service
/// Unavailable` (or 502, 504) from it says the target behind it is down,
/// and is read as that target's failure (`api`, `mcs`).
fn proxy_connect_status(msg: &str) -> Option<Signal> {
    const STATUS: &str = ": Forbidden";
    let at = msg.find(STATUS)?;
    let tail = &msg[at + STATUS.len()..];
    let ends = tail
        .chars()
        .next()
        .is_none_or(|c| matches!(c, '"' | '\'' | ')' | ']' | '\\' | ',' | '.' | ' ' | '\n'));
    if !ends
        || tail
            .trim_start_matches(['.', ' '])
            .starts_with(|c: char| c.is_ascii_lowercase())
    {
        return None;
    }
    // `METHOD URL` (or `METHOD "URL"`) right before it: Go's url.Error.
    let mut words = msg[..at].rsplit(' ');
    let url = words.next()?.trim_matches(['"', '\\']);
    let method = words.next()?;
    let is_method = ["Get", "Head", "Post", "Put", "Patch", "Delete", "Options"].contains(&method);
    if !is_method || !(url.starts_with("https://") || url.starts_with("http://")) {
        return None;
    }
    let target = url_host(url).unwrap_or("the target");
    Some(Signal::new(
        Category::Proxy,
        "the proxy",
        format!("the proxy refused to CONNECT to {target} (Forbidden): allow it on the proxy or add it to noProxy"),
        Nature::Fatal,
    ))
}

/// curl's other proxy failures (every libcurl user: rpm-ostree, dnf,
/// podman's helpers, ostree): `Failed sending CONNECT to proxy`
/// (lib/cf-h1-proxy.c, cf-h2-proxy.c), `proxy closed connection`
/// (cf-h2-proxy.c), a proxy URL curl cannot use (`Unsupported proxy syntax
/// in '…'`, `Unsupported proxy scheme for '…'`, `Unsupported proxy type`,
/// lib/proxy.c and lib/peer.c), and the error code's text `proxy handshake
/// error` (CURLE_PROXY, lib/strerror.c, curl 7.73 and later).
fn curl_proxy(msg: &str) -> Option<Signal> {
    if let Some(rest) = after_lit!(msg, "Unsupported proxy") {
        return Some(Signal::new(
            Category::Proxy,
            "proxy URL",
            format!(
                "the proxy URL is not usable (Unsupported proxy{}): check httpProxy/httpsProxy",
                token_until(rest, &['\'', '"', ':'])
            ),
            Nature::Fatal,
        ));
    }
    let what = [
        "Failed sending CONNECT to proxy",
        "proxy closed connection",
        "proxy handshake error",
    ]
    .into_iter()
    .find(|w| msg.contains(w))?;
    Some(Signal::new(
        Category::Proxy,
        "proxy CONNECT",
        format!("the proxy failed the CONNECT tunnel ({what})"),
        Nature::Transient,
    ))
}

/// Go's proxy settings from the environment (golang.org/x/net
/// `http/httpproxy`, which net/http's `ProxyFromEnvironment` uses):
/// `invalid proxy address "…": …` when HTTP(S)_PROXY does not parse.
fn proxy_address(msg: &str) -> Option<Signal> {
    let rest = after_lit!(msg, "invalid proxy address")?;
    let value = token_until(rest.trim_start(), &[':', ' ']);
    Some(Signal::new(
        Category::Proxy,
        "proxy URL",
        format!("the proxy setting does not parse (invalid proxy address {value}): check httpProxy/httpsProxy"),
        Nature::Fatal,
    ))
}

/// The connection errors Go prints, shortest first.
fn short_net_error(text: &str) -> Option<&'static str> {
    [
        "connection refused",
        "no route to host",
        "network is unreachable",
        "i/o timeout",
        "connection reset by peer",
        "TLS handshake timeout",
        "context deadline exceeded",
        "Client.Timeout exceeded",
        "EOF",
    ]
    .into_iter()
    .find(|e| text.contains(e))
}

/// `host:port` just before `:port` in `text` (`api-int.c.example.com:6443`).
fn endpoint<'a>(text: &'a str, port: &str) -> Option<&'a str> {
    let at = text.find(port)?;
    let start = text[..at]
        .rfind([' ', '/', '"', '(', '[', '=', '\''])
        .map_or(0, |i| i + 1);
    let host = &text[start..at];
    (!host.is_empty()).then_some(&text[start..at + port.len()])
}

/// The API on :6443 (and bootkube's own wait loop). Refusals while the API
/// starts are normal in every install: only a long streak makes an error.
pub(super) fn api(msg: &str) -> Option<Signal> {
    if has!(msg, ":6443") {
        let err = short_net_error(msg).or_else(|| {
            [
                "was refused",
                "Service Unavailable",
                "connection timed out",
                "timeout",
            ]
            .into_iter()
            .find(|e| msg.contains(e))
        })?;
        let ep = endpoint(msg, ":6443").unwrap_or("the API");
        return Some(Signal::new(
            Category::ApiUnreachable,
            ep,
            format!("API {ep} unreachable ({err})"),
            Nature::Transient,
        ));
    }
    // kubelet's own calls to its API server, on whatever port it is
    // published (a load balancer in front of it): kubelet_node_status.go
    // `Unable to register node with API server` (older `Unable to register
    // node "N" with API server: …`) and the node lease controller
    // (component-helpers/apimachinery/lease/controller.go: `failed to
    // ensure lease exists, will retry`, older `failed to ensure node lease
    // exists`). Only with a network error: a refusal by admission is not
    // an unreachable API.
    // The same for kubelet's status updates (kubelet_node_status.go:
    // `Error updating node status, will retry`, glog's lower-case `error
    // updating node status` before 1.2, then `Unable to update node
    // status: update node status exceeds retry count`), its CSI plugin's
    // wait (pkg/volume/csi/csi_plugin.go: `Failed to contact API server
    // when waiting for CSINode publishing`) and every client-go leader
    // election on the host (tools/leaderelection/leaderelection.go: `error
    // retrieving resource lock NS/NAME: Get "…": dial tcp …`).
    if has!(msg, "Unable to register node")
        || has!(msg, "lease exists")
        || has!(msg, "rror updating node status")
        || has!(msg, "Unable to update node status")
        || has!(msg, "Failed to contact API server")
        || has!(msg, "error retrieving resource lock")
    {
        let err = short_net_error(msg).or_else(|| {
            // x/net/http2's transport losing its one connection.
            has!(msg, "http2: client connection lost").then_some("http2: client connection lost")
        })?;
        let ep = url_host(msg).unwrap_or("the API");
        return Some(Signal::new(
            Category::ApiUnreachable,
            ep,
            format!("API {ep} unreachable ({err})"),
            Nature::Transient,
        ));
    }
    // kubectl and oc when the connection is refused
    // (k8s.io/kubectl/pkg/cmd/util/helpers.go, `StandardErrorMessage`: `The
    // connection to the server %s was refused - did you specify the right
    // host or port?`), on any port.
    if let Some(rest) = after_lit!(msg, "to the server ") {
        if has!(msg, "did you specify the right host") {
            let ep = token_until(rest, &[' ']);
            let ep = if ep.is_empty() { "the API" } else { ep };
            return Some(Signal::new(
                Category::ApiUnreachable,
                ep,
                format!("API {ep} unreachable (connection refused)"),
                Nature::Transient,
            ));
        }
    }
    if has!(msg, "Unable to connect to the server") {
        let ep = url_host(msg).unwrap_or("the API");
        let err = short_net_error(msg).unwrap_or("unable to connect");
        return Some(Signal::new(
            Category::ApiUnreachable,
            ep,
            format!("API {ep} unreachable ({err})"),
            Nature::Transient,
        ));
    }
    if has!(msg, "Successfully registered node") {
        return Some(Signal::new(
            Category::ApiUnreachable,
            "*",
            "kubelet registered the node".into(),
            Nature::Recovery,
        ));
    }
    None
}

/// The machine config server on :22623: Ignition's `GET error` lines and
/// anything else failing against that port. `GET result: OK` clears it.
pub(super) fn mcs(msg: &str) -> Option<Signal> {
    // Ignition logs the result on a line of its own, without the URL.
    if has!(msg, "GET result: OK") {
        return Some(Signal::new(
            Category::McsUnreachable,
            "*",
            "Ignition fetched its config".into(),
            Nature::Recovery,
        ));
    }
    // Ignition's answer line for a status it retries on
    // (internal/resource/http.go: `%s result: %s` with
    // `http.StatusText`), on a line of its own after the `attempt #N`
    // line that named the URL. On an OpenShift host Ignition's only fetch
    // is its pool's config. Read for the statuses whose words hold a
    // needle of the anchor finder's table (`Internal Server Error`, `Not
    // Found` hold none).
    if let Some(rest) = after_lit!(msg, "GET result: ") {
        if let Some(status) = ["Service Unavailable", "Forbidden"]
            .into_iter()
            .find(|s| rest.starts_with(s))
        {
            return Some(Signal::new(
                Category::McsUnreachable,
                "the machine config server",
                format!("the machine config server answered Ignition {status}"),
                Nature::Transient,
            ));
        }
    }
    // Ignition giving up (internal/resource/http.go `ErrTimeout`, `unable
    // to fetch resource in time`, logged by internal/exec/engine.go as
    // `failed to fetch config: …`).
    if has!(msg, "unable to fetch resource in time") {
        let ep = url_host(msg).unwrap_or("the machine config server");
        return Some(Signal::new(
            Category::McsUnreachable,
            ep,
            format!(
                "Ignition gave up fetching its config from {ep} (unable to fetch resource in time)"
            ),
            Nature::Fatal,
        ));
    }
    // Ignition's `GET https://…:22623/config/worker: attempt #N`: the first
    // attempts fail on every boot while the network comes up; many mean
    // the server does not answer.
    if let Some(rest) = after_lit!(msg, ": attempt #") {
        let attempt: u32 = token_until(rest, &[' ']).parse().unwrap_or(0);
        if attempt >= 10 && has!(msg, "/config/") {
            let ep = url_host(msg).unwrap_or("the machine config server");
            return Some(Signal::new(
                Category::McsUnreachable,
                ep,
                format!("machine config server {ep} unreachable (Ignition's attempt #{attempt} to fetch its config)"),
                Nature::Transient,
            ));
        }
    }
    if !has!(msg, ":22623") {
        // Ignition fetching its pool's config on another port or name.
        if has!(msg, "GET error")
            && (has!(msg, "/config/master") || has!(msg, "/config/worker") || has!(msg, "/config/"))
        {
            let ep = url_host(msg).unwrap_or("the machine config server");
            let err = short_net_error(msg).unwrap_or("GET error");
            return Some(Signal::new(
                Category::McsUnreachable,
                ep,
                format!("machine config server {ep} unreachable ({err})"),
                Nature::Transient,
            ));
        }
        return None;
    }
    let ep = endpoint(msg, ":22623").unwrap_or("the machine config server");
    let err = short_net_error(msg)
        .or_else(|| {
            [
                "Internal Server Error",
                "Service Unavailable",
                "Forbidden",
                "Not Found",
            ]
            .into_iter()
            .find(|e| msg.contains(e))
        })
        .or_else(|| has!(msg, "GET error").then_some("GET error"))?;
    Some(Signal::new(
        Category::McsUnreachable,
        ep,
        format!("machine config server {ep} unreachable ({err})"),
        Nature::Transient,
    ))
}

/// NetworkManager's `device (ens3): carrier: link disconnected` and `state
/// change: activated -> unavailable`, drivers' `ens3: Link is Down` (and the
/// matching ups), routes missing altogether.
pub(super) fn link(msg: &str) -> Option<Signal> {
    let device = || -> Option<&str> {
        if let Some(rest) = after_lit!(msg, "device (") {
            return Some(token_until(rest, &[')']));
        }
        if let Some(rest) = after_lit!(msg, "for interface ") {
            return Some(token_until(rest, &[',', ' ']));
        }
        let at = msg.find(" NIC Link is").or_else(|| msg.find(" Link is"))?;
        let before = msg[..at].trim_end_matches(':');
        Some(
            before
                .rsplit([' ', ':'])
                .find(|t| !t.is_empty())
                .unwrap_or(before),
        )
    };
    let down = has!(msg, "link disconnected")
        || has!(msg, "Link is Down")
        || has!(msg, "link status down")
        || has!(msg, "link status definitely down")
        || has!(msg, "without any active interface")
        || (has!(msg, "-> unavailable") && has!(msg, "carrier-changed"));
    let up = has!(msg, "link connected") || has!(msg, "Link is Up");
    // systemd-networkd (src/network/networkd-link.c: `IFACE: Lost carrier`,
    // `IFACE: Gained carrier`).
    if let Some(at) = msg
        .find(": Lost carrier")
        .or_else(|| msg.find(": Gained carrier"))
    {
        let dev = msg[..at].rsplit([' ', ']']).next().unwrap_or("");
        if !dev.is_empty() {
            let gained = msg[at..].starts_with(": Gained");
            return Some(Signal::new(
                Category::NetworkLink,
                dev,
                if gained {
                    format!("{dev}: link up")
                } else {
                    format!("{dev}: link down (lost carrier)")
                },
                if gained {
                    Nature::Recovery
                } else {
                    Nature::Transient
                },
            ));
        }
    }
    // The kernel's transmit watchdog (net/sched/sch_generic.c,
    // `dev_watchdog`): `NETDEV WATCHDOG: eth0 (e1000e): transmit queue 0
    // timed out` (6.x: `… eth0: NETDEV WATCHDOG: CPU: 3: transmit queue 0
    // timed out 5432 ms`): the NIC stopped sending, its driver resets it.
    if has!(msg, "NETDEV WATCHDOG") && has!(msg, "transmit queue") {
        let dev = after_lit!(msg, "NETDEV WATCHDOG: ")
            .map(|r| token_until(r, &[' ', ':']))
            .filter(|d| !d.is_empty() && *d != "CPU")
            .or_else(|| {
                let at = msg.find(": NETDEV WATCHDOG")?;
                msg[..at].rsplit(' ').next()
            })
            .unwrap_or("a NIC");
        return Some(Signal::new(
            Category::NetworkLink,
            dev,
            format!(
                "{dev}: the NIC stopped transmitting (NETDEV WATCHDOG: transmit queue timed out)"
            ),
            Nature::Transient,
        ));
    }
    if down || up {
        let dev = device().filter(|d| !d.is_empty())?;
        if up {
            return Some(Signal::new(
                Category::NetworkLink,
                dev,
                format!("{dev}: link up"),
                Nature::Recovery,
            ));
        }
        return Some(Signal::new(
            Category::NetworkLink,
            dev,
            format!("{dev}: link down (no carrier)"),
            Nature::Transient,
        ));
    }
    // NetworkManager giving up on a connection: no carrier, no DHCP lease.
    for (what, why) in [
        ("reason 'carrier-changed'", "no carrier"),
        (
            "reason 'ip-config-unavailable'",
            "no address: DHCP got no lease",
        ),
        ("Activation: failed for connection", "activation failed"),
        ("request timed out", "DHCP got no lease"),
        ("no-carrier", "no carrier"),
        ("reason 'dhcp-failed'", "DHCP failed"),
        ("reason 'dhcp-error'", "DHCP failed"),
        ("reason 'dhcp-start-failed'", "DHCP failed"),
        ("state changed no lease", "DHCP lease lost or never given"),
        (
            "client bound but IP config not received",
            "DHCP gave no address",
        ),
        (
            "could not be attached as port",
            "a bond or bridge port failed",
        ),
    ] {
        if msg.contains(what) && (what != "request timed out" || has!(msg, "dhcp")) {
            // `unavailable -> disconnected (reason 'carrier-changed')` is
            // the carrier coming back (NetworkManager's device states).
            if what == "reason 'carrier-changed'" && has!(msg, "unavailable -> ") {
                let dev = device().filter(|d| !d.is_empty())?;
                return Some(Signal::new(
                    Category::NetworkLink,
                    dev,
                    format!("{dev}: link up"),
                    Nature::Recovery,
                ));
            }
            if what.starts_with("reason")
                && !has!(msg, "-> unavailable")
                && !has!(msg, "-> failed")
                && !has!(msg, "-> disconnected")
            {
                continue;
            }
            let dev = device().filter(|d| !d.is_empty()).unwrap_or("an interface");
            return Some(Signal::new(
                Category::NetworkLink,
                dev,
                format!("{dev}: {why} ({what})"),
                Nature::Transient,
            ));
        }
    }
    for err in ["network is unreachable", "no route to host"] {
        if msg.contains(err) {
            let target = after_lit!(msg, "dial tcp ")
                .or_else(|| after_lit!(msg, "dial udp "))
                .map(|r| token_until(r, &[' ', '"']).trim_end_matches(':'))
                .filter(|t| !t.is_empty())
                .or_else(|| url_host(msg))
                .unwrap_or("the network");
            return Some(Signal::new(
                Category::NetworkLink,
                "routes",
                format!("no route to {target} ({err})"),
                Nature::Transient,
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(f: fn(&str) -> Option<Signal>, msg: &str) -> Signal {
        f(msg).unwrap_or_else(|| panic!("no signal for {msg}"))
    }

    #[test]
    fn curl_s_refused_or_cut_connect_is_the_proxy() {
        let s = sig(proxy, "error: curl: (56) Proxy CONNECT aborted");
        assert_eq!(s.category, Category::Proxy);
    }

    #[test]
    fn an_english_lookup_before_go_s_does_not_hide_either() {
        let s = sig(dns, "[proxy:error] [pid 34:tid 1] AH00898: DNS lookup failure for: slave-node1 returned by /v2/_catalog");
        assert_eq!(s.key, "slave-node1");
        let s = sig(
            dns,
            "image lookup failed: dial tcp: lookup quay.io on 10.0.0.1:53: no such host",
        );
        assert_eq!(s.key, "quay.io");
    }

    #[test]
    fn kubelet_calls_to_its_api_on_any_port_are_the_api() {
        let s = sig(
            api,
            r#""Unable to register node with API server" err="Post \"https://10.99.99.99:5000/api/v1/nodes\": dial tcp 10.99.99.99:5000: connect: no route to host" node="n""#,
        );
        assert_eq!(s.category, Category::ApiUnreachable);
        assert_eq!(s.key, "10.99.99.99:5000");
        let s = sig(
            api,
            r#""Failed to ensure lease exists, will retry" err="Get \"https://lb.example:8443/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n?timeout=10s\": dial tcp 10.0.0.5:8443: i/o timeout" interval="7s""#,
        );
        assert_eq!(s.category, Category::ApiUnreachable);
        assert!(api(r#""Unable to register node with API server" err="nodes \"n\" is forbidden: node \"m\" is not allowed to modify node \"n\"""#).is_none());
    }

    #[test]
    fn glib_names_the_host_it_could_not_resolve() {
        for line in [
            "error: Error resolving 'dl.fedoraproject.org': Name or service not known",
            "error: Error resolving \u{201c}dl.fedoraproject.org\u{201d}: Name or service not known",
        ] {
            let s = sig(dns, line);
            assert_eq!((s.category, s.key.as_str()), (Category::DnsResolution, "dl.fedoraproject.org"));
        }
    }

    #[test]
    fn curl_names_a_proxy_that_does_not_resolve() {
        let s = sig(
            proxy,
            "curl: (5) Could not resolve proxy: proxy.corp.example",
        );
        assert_eq!(s.category, Category::Proxy);
        assert_eq!(s.key, "proxy.corp.example");
        let s = sig(proxy, "error: Curl error (5): Couldn't resolve proxy name");
        assert_eq!((s.category, s.key.as_str()), (Category::Proxy, "the proxy"));
        // The host behind the proxy not resolving is DNS, not the proxy.
        let s = sig(
            proxy,
            "curl#5 - \"Could not resolve proxy: proxy; Unknown error\"",
        );
        assert_eq!(s.key, "proxy");
        assert!(proxy("curl: (6) Could not resolve host: quay.io").is_none());
    }

    #[test]
    fn go_lookup_errors_name_host_and_server() {
        let s = sig(
            dns,
            r#"Error: initializing source docker://quay.io/x@sha256:5c1e: pinging container registry quay.io: Get "https://quay.io/v2/": dial tcp: lookup quay.io on 192.168.122.1:53: server misbehaving"#,
        );
        assert_eq!(s.category, Category::DnsResolution);
        assert_eq!(s.key, "quay.io");
        assert!(
            s.summary
                .contains("lookup quay.io on 192.168.122.1:53: server misbehaving"),
            "{}",
            s.summary
        );
        let s = sig(
            dns,
            "dial tcp: lookup api-int.c.example.com on [fd00::1]:53: no such host",
        );
        assert_eq!(s.key, "api-int.c.example.com");
        assert!(s.summary.contains("on [fd00::1]:53: no such host"));
        let s = sig(dns, "read udp 10.0.0.5:4000->10.0.0.1:53: lookup mirror.local on 10.0.0.1:53: read udp 10.0.0.5:4000->10.0.0.1:53: i/o timeout");
        assert_eq!(s.key, "mirror.local");
        assert_eq!(
            sig(dns, "curl: (6) Could not resolve host: cloud.openshift.com").key,
            "cloud.openshift.com"
        );
        assert!(dns("failed to lookup the user in the cache").is_none());
    }

    #[test]
    fn proxy_refusals_and_407() {
        let s = sig(
            proxy,
            r#"Get "https://quay.io/v2/": proxyconnect tcp: dial tcp 10.0.0.9:3128: connect: connection refused"#,
        );
        assert_eq!(
            (s.category, s.key.as_str()),
            (Category::Proxy, "10.0.0.9:3128")
        );
        assert!(s.summary.contains("connection refused"));
        let s = sig(
            proxy,
            "curl: (56) Received HTTP code 407 from proxy after CONNECT",
        );
        assert_eq!(s.nature, Nature::Fatal);
        let s = sig(proxy, "Received HTTP code 403 from proxy after CONNECT");
        assert_eq!(s.key, "proxy CONNECT 403");
    }

    #[test]
    fn the_whole_proxy_family() {
        // Go's transport: the CONNECT status text as the request's error.
        let s = sig(
            proxy,
            r#"Error: initializing source docker://quay.io/openshift-release-dev/ocp-release:4.14.1-x86_64: pinging container registry quay.io: Get "https://quay.io/v2/": Forbidden"#,
        );
        assert_eq!((s.category, s.nature), (Category::Proxy, Nature::Fatal));
        assert!(s.summary.contains("quay.io"), "{}", s.summary);
        // Go before 1.14 did not quote the URL.
        let s = sig(
            proxy,
            "v2 ping attempt failed with error: Get https://172.30.96.214:5000/v2/: Forbidden",
        );
        assert!(s.summary.contains("172.30.96.214:5000"), "{}", s.summary);
        assert!(proxy("v1 ping attempt failed with error: Get https://172.30.96.214:5000/v1/_ping: Forbidden. If this private registry supports only HTTP").is_some());
        // Not after a request: a status in prose.
        assert!(proxy("Error from server: Forbidden").is_none());
        // A 503 from the hop is the target's failure, not the proxy's.
        assert!(proxy(r#"Get "https://quay.io/v2/": Service Unavailable"#).is_none());
        // Not a Go url.Error: a server's own answer, or lower-case prose.
        assert!(proxy("GET result: Forbidden").is_none());
        assert!(proxy(r#"nodes "m0": Forbidden: node is not allowed"#).is_none());
        assert!(proxy(r#"user "x": Forbidden access to this"#).is_none());
        // curl's other proxy wordings and Go's unparsable setting.
        for line in [
            "curl: (56) Failed sending CONNECT to proxy",
            "error: Curl error (56): Failure when receiving data from the peer [proxy closed connection]",
            "curl: (97) proxy handshake error",
            "curl: (5) Unsupported proxy syntax in 'http//proxy:3128': Port number was not a decimal number",
            r#"Get "https://quay.io/v2/": invalid proxy address "proxy.example.com:3128:": parse error"#,
        ] {
            assert_eq!(sig(proxy, line).category, Category::Proxy, "{line}");
        }
    }

    #[test]
    fn kubelet_and_clients_losing_the_api_on_any_port() {
        for (line, key) in [
            (r#"E0927 08:59:59.849143    2397 kubelet_node_status.go:487] "Error updating node status, will retry" err="error getting node \"w0\": Get \"https://api-int.c.example.com/api/v1/nodes/w0?timeout=10s\": http2: client connection lost""#, "api-int.c.example.com"),
            ("E0117 19:14:10.956418   16499 kubelet_node_status.go:380] Error updating node status, will retry: error getting node \"w0\": Get https://192.168.160.3:443/api/v1/nodes/w0: dial tcp 192.168.160.3:443: i/o timeout", "192.168.160.3:443"),
            (r#"E1122 leaderelection.go:331] error retrieving resource lock openshift-machine-config-operator/machine-config-controller: Get "https://172.30.0.1:443/api/v1/namespaces/x/configmaps/y": dial tcp 172.30.0.1:443: connect: no route to host"#, "172.30.0.1:443"),
            ("The connection to the server api.c.example.com:443 was refused - did you specify the right host or port?", "api.c.example.com:443"),
        ] {
            let s = sig(api, line);
            assert_eq!((s.category, s.key.as_str()), (Category::ApiUnreachable, key), "{line}");
        }
        // Refused by the API itself, not unreachable.
        assert!(api(r#"Error updating node status, will retry: error getting node "w0": nodes "w0" is forbidden"#).is_none());
    }

    #[test]
    fn ignition_s_answers_and_its_timeout() {
        let s = sig(mcs, "ignition[779]: GET result: Service Unavailable");
        assert_eq!(s.category, Category::McsUnreachable);
        assert!(mcs("ignition[779]: GET result: Forbidden").is_some());
        assert!(mcs("ignition[779]: GET result: OK").is_some_and(|s| s.nature == Nature::Recovery));
        let s = sig(
            mcs,
            "ignition[779]: failed to fetch config: unable to fetch resource in time",
        );
        assert_eq!(s.nature, Nature::Fatal);
    }

    #[test]
    fn networkd_and_the_transmit_watchdog() {
        let s = sig(link, "systemd-networkd[612]: eno1: Lost carrier");
        assert_eq!(
            (s.category, s.key.as_str()),
            (Category::NetworkLink, "eno1")
        );
        assert_eq!(
            sig(link, "systemd-networkd[612]: eno1: Gained carrier").nature,
            Nature::Recovery
        );
        let s = sig(
            link,
            "kernel: NETDEV WATCHDOG: eno1 (e1000e): transmit queue 0 timed out",
        );
        assert_eq!(s.key, "eno1");
        let s = sig(link, "kernel: ixgbe 0000:01:00.0 eno2: NETDEV WATCHDOG: CPU: 3: transmit queue 0 timed out 5432 ms");
        assert_eq!(s.key, "eno2");
    }

    #[test]
    fn api_and_mcs_endpoints() {
        let s = sig(
            api,
            r#"E1122 10:00:01 reflector.go:158] Get "https://api-int.c.example.com:6443/api/v1/nodes": dial tcp 192.168.122.10:6443: connect: connection refused"#,
        );
        assert_eq!(s.key, "api-int.c.example.com:6443");
        assert_eq!(s.nature, Nature::Transient);
        let s = sig(
            mcs,
            r#"GET error: Get "https://api-int.c.example.com:22623/config/master": dial tcp 192.168.122.10:22623: connect: connection refused"#,
        );
        assert_eq!(
            (s.category, s.key.as_str()),
            (Category::McsUnreachable, "api-int.c.example.com:22623")
        );
        assert_eq!(
            sig(
                mcs,
                "GET https://api-int.c.example.com:22623/config/master: attempt #3 GET result: OK"
            )
            .nature,
            Nature::Recovery
        );
        assert!(mcs("GET https://api-int.c.example.com:22623/config/master: attempt #1").is_none());
        assert!(api("Starting kube-apiserver on :6443").is_none());
    }

    #[test]
    fn links_go_down_and_up() {
        let s = sig(
            link,
            "<info>  [1763805601.1234] device (ens3): carrier: link disconnected",
        );
        assert_eq!((s.key.as_str(), s.nature), ("ens3", Nature::Transient));
        let s = sig(link, "ixgbe 0000:01:00.0 eno1: NIC Link is Down");
        assert_eq!(s.key, "eno1");
        assert_eq!(
            sig(
                link,
                "ixgbe 0000:01:00.0 eno1: NIC Link is Up 10 Gbps, Flow Control: None"
            )
            .nature,
            Nature::Recovery
        );
        let s = sig(
            link,
            "dial tcp 10.1.1.1:443: connect: network is unreachable",
        );
        assert!(s.summary.contains("10.1.1.1:443"), "{}", s.summary);
    }
}
