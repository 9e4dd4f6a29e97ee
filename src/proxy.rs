//! Forward proxy of the service client: the infra-env's `http_proxy`,
//! `https_proxy` and `no_proxy`, which the discovery agent gets as
//! HTTP_PROXY / HTTPS_PROXY / NO_PROXY, with the meaning the Go programs of an
//! assisted installation give them (`golang.org/x/net/http/httpproxy`):
//!
//! - HTTP_PROXY serves `http://` service URLs and HTTPS_PROXY `https://` ones
//!   (through `CONNECT`); neither stands in for the other.
//! - NO_PROXY is `*` or a comma-separated list of host names, domains
//!   (`example.com` matches it and its subdomains, `.example.com` and
//!   `*.example.com` the subdomains only), IP addresses and CIDRs (IPv4 or
//!   IPv6, matched against IP-literal service URLs only: nothing is resolved
//!   to decide), each optionally with `:port`.
//!
//! One deliberate difference: Go never proxies `localhost` and loopback
//! addresses; here only NO_PROXY decides. The service is never on the host's
//! loopback, and a rule with no hidden exception is what lets the tests put a
//! real proxy between the agent and a service on loopback.
//!
//! reqwest's own NO_PROXY (hyper-util's matcher) follows curl: it knows
//! CIDRs but no `host:port` entries and no per-scheme choice, so the decision
//! is made here and handed to it through [`reqwest::Proxy::custom`]. Proxy URLs may carry
//! `user:password@`: [`ProxyUrl`] never shows them in `Debug` or `Display`.

use std::fmt;
use std::net::IpAddr;

use base64::Engine as _;
use ipnet::IpNet;
use percent_encoding::percent_decode_str;
use reqwest::Url;

/// A proxy URL. Its `Debug` and `Display` keep the scheme, host and port and
/// hide any credentials, so it can be logged.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl(Url);

impl ProxyUrl {
    /// Parses a proxy setting as the discovery agent would read it: a URL
    /// with scheme `http` (or `https` where `allow_https`), or a bare
    /// `host:port`, taken as `http://`. Errors never quote the value, which
    /// may hold a password.
    pub(crate) fn parse(value: &str, allow_https: bool) -> Result<ProxyUrl, String> {
        let value = value.trim();
        let with_scheme = if value.contains("://") {
            value.to_owned()
        } else {
            format!("http://{value}")
        };
        let url = Url::parse(&with_scheme).map_err(|err| format!("not a URL ({err})"))?;
        match url.scheme() {
            "http" => {}
            "https" if allow_https => {}
            other => {
                let allowed = if allow_https { "http or https" } else { "http" };
                return Err(format!("scheme {other:?} is not {allowed}"));
            }
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("it names no host".into());
        }
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err("a proxy URL is scheme://[user:password@]host[:port] only".into());
        }
        Ok(ProxyUrl(url))
    }

    pub(crate) fn url(&self) -> &Url {
        &self.0
    }

    pub(crate) fn has_credentials(&self) -> bool {
        !self.0.username().is_empty() || self.0.password().is_some()
    }

    /// Strings to scrub from everything the agent emits: the password and the
    /// `user:password` pair, as written and percent-decoded, and the
    /// `Proxy-Authorization` value built from them. The user name alone is
    /// not a secret.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let Some(password) = self.0.password() else {
            return Vec::new();
        };
        let user = self.0.username();
        let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
        let mut secrets = vec![
            password.to_owned(),
            format!("{user}:{password}"),
            decode(password),
            format!("{}:{}", decode(user), decode(password)),
        ];
        secrets.push(base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            decode(user),
            decode(password)
        )));
        secrets.sort();
        secrets.dedup();
        secrets
    }
}

impl fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = &self.0;
        let credentials = if self.has_credentials() {
            "[REDACTED]@"
        } else {
            ""
        };
        // host_str keeps IPv6 brackets.
        write!(
            f,
            "{}://{credentials}{}",
            url.scheme(),
            url.host_str().unwrap_or_default()
        )?;
        match url.port() {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProxyUrl({self})")
    }
}

/// One NO_PROXY entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    /// `10.0.0.0/8`, `fd00::/8`: IP-literal hosts inside the network.
    Network(IpNet),
    /// `192.0.2.1`, `[2001:db8::1]:443`.
    Ip { ip: IpAddr, port: Option<u16> },
    /// `.example.com` (subdomains), or `example.com` (`exact` too).
    Domain {
        suffix: String,
        exact: bool,
        port: Option<u16>,
    },
}

/// A parsed NO_PROXY list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NoProxy {
    all: bool,
    entries: Vec<Entry>,
}

impl NoProxy {
    /// Parses a NO_PROXY value. Like Go, an entry that is none of the known
    /// shapes does not stop the others from working; it is returned so the
    /// caller can warn about it.
    pub(crate) fn parse(text: &str) -> (NoProxy, Vec<String>) {
        let mut no_proxy = NoProxy::default();
        let mut ignored = Vec::new();
        for raw in text.split(',') {
            let entry = raw.trim().to_ascii_lowercase();
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                no_proxy.all = true;
                continue;
            }
            match parse_entry(&entry) {
                Some(parsed) => no_proxy.entries.push(parsed),
                None => ignored.push(raw.trim().to_owned()),
            }
        }
        (no_proxy, ignored)
    }

    /// Strict form for the `ignition` subcommand, as assisted-service
    /// validates an infra-env's `no_proxy`: `*` alone, or entries that are
    /// all valid and distinct.
    pub(crate) fn validate(text: &str) -> Result<(), String> {
        let text = text.trim();
        if text == "*" {
            return Ok(());
        }
        let mut seen = std::collections::HashSet::new();
        for raw in text.split(',') {
            let entry = raw.trim().to_ascii_lowercase();
            if entry == "*" {
                return Err("\"*\" must be the whole value, not one entry of a list".into());
            }
            if entry.is_empty() || parse_entry(&entry).is_none() {
                return Err(format!(
                    "{:?} is not a host name, domain, IP address or CIDR",
                    raw.trim()
                ));
            }
            if !seen.insert(entry) {
                return Err(format!("{:?} is listed twice", raw.trim()));
            }
        }
        Ok(())
    }

    /// True when requests to `url` go direct.
    pub(crate) fn bypasses(&self, url: &Url) -> bool {
        if self.all {
            return true;
        }
        let port = url.port_or_known_default();
        let port_matches = |want: Option<u16>| want.is_none() || want == port;
        let name = url.host_str().unwrap_or_default().to_ascii_lowercase();
        // host_str writes IPv6 in brackets; a domain never parses as an IP.
        let ip: Option<IpAddr> = name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok();
        self.entries.iter().any(|entry| match entry {
            Entry::Network(net) => ip.is_some_and(|ip| in_network(ip, net)),
            Entry::Ip { ip: want, port: p } => ip == Some(*want) && port_matches(*p),
            Entry::Domain {
                suffix,
                exact,
                port: p,
            } => {
                ip.is_none()
                    && (name.ends_with(suffix.as_str()) || (*exact && name == suffix[1..]))
                    && port_matches(*p)
            }
        })
    }
}

fn parse_entry(entry: &str) -> Option<Entry> {
    if let Some((addr, prefix)) = entry.split_once('/') {
        let base: IpAddr = addr.parse().ok()?;
        return IpNet::new(base, prefix.parse().ok()?)
            .ok()
            .map(Entry::Network);
    }
    if let Ok(ip) = entry.trim_start_matches('[').trim_end_matches(']').parse() {
        return Some(Entry::Ip { ip, port: None });
    }
    // host:port, [v6]:port
    let (host, port) = match entry.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => (host, Some(port.parse::<u16>().ok()?)),
        Some(_) => return None,
        None => (entry, None),
    };
    let bracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    if let Some(ip) = bracketed.or(Some(host)).and_then(|h| h.parse().ok()) {
        return Some(Entry::Ip { ip, port });
    }
    let host = host.strip_prefix('*').unwrap_or(host);
    let (suffix, exact) = match host.strip_prefix('.') {
        Some(rest) => (rest, false),
        None => (host, true),
    };
    let valid = !suffix.is_empty()
        && suffix.len() <= 253
        && suffix.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    valid.then(|| Entry::Domain {
        suffix: format!(".{suffix}"),
        exact,
        port,
    })
}

/// An IPv4-mapped IPv6 URL host is matched by IPv4 entries: the connection
/// goes to that IPv4 address.
fn in_network(ip: IpAddr, net: &IpNet) -> bool {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(net.contains(&ip), |v4| net.contains(&IpAddr::V4(v4))),
        IpAddr::V4(_) => net.contains(&ip),
    }
}

/// The list as it is matched (lower case, skipped entries gone), for
/// `config check`.
impl fmt::Display for NoProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.all {
            return f.write_str("*");
        }
        if self.entries.is_empty() {
            return f.write_str("(none)");
        }
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let port = match entry {
                Entry::Network(net) => {
                    write!(f, "{net}")?;
                    None
                }
                Entry::Ip {
                    ip: IpAddr::V6(ip),
                    port: Some(port),
                } => {
                    write!(f, "[{ip}]")?;
                    Some(port)
                }
                Entry::Ip { ip, port } => {
                    write!(f, "{ip}")?;
                    port.as_ref()
                }
                Entry::Domain {
                    suffix,
                    exact,
                    port,
                } => {
                    f.write_str(if *exact { &suffix[1..] } else { suffix })?;
                    port.as_ref()
                }
            };
            if let Some(port) = port {
                write!(f, ":{port}")?;
            }
        }
        Ok(())
    }
}

/// The resolved proxy settings of the client.
#[derive(Clone, Debug, Default)]
pub struct ProxySettings {
    pub(crate) http: Option<ProxyUrl>,
    pub(crate) https: Option<ProxyUrl>,
    pub(crate) no_proxy: NoProxy,
}

impl ProxySettings {
    pub(crate) fn is_empty(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }

    /// The proxy a request to `url` goes through, if any.
    pub fn proxy_for(&self, url: &Url) -> Option<&ProxyUrl> {
        let proxy = match url.scheme() {
            "http" => self.http.as_ref(),
            "https" => self.https.as_ref(),
            _ => None,
        }?;
        (!self.no_proxy.bypasses(url)).then_some(proxy)
    }

    /// Every proxy credential, for the redactor.
    pub fn secrets(&self) -> Vec<String> {
        self.http
            .iter()
            .chain(&self.https)
            .flat_map(ProxyUrl::secrets)
            .collect()
    }

    /// The decision as a reqwest proxy, `None` when nothing is proxied.
    pub(crate) fn to_reqwest(&self) -> Option<reqwest::Proxy> {
        if self.is_empty() {
            return None;
        }
        let settings = self.clone();
        Some(reqwest::Proxy::custom(move |url| {
            settings.proxy_for(url).map(|p| p.url().clone())
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn bypass(no_proxy: &str, target: &str) -> bool {
        let (parsed, ignored) = NoProxy::parse(no_proxy);
        assert!(ignored.is_empty(), "{no_proxy}: ignored {ignored:?}");
        parsed.bypasses(&url(target))
    }

    #[test]
    fn domains_match_as_go_does() {
        // A bare domain: itself and its subdomains, not look-alikes.
        assert!(bypass("example.com", "https://example.com/x"));
        assert!(bypass("example.com", "https://api.example.com"));
        assert!(bypass("example.com", "https://a.b.example.com"));
        assert!(!bypass("example.com", "https://badexample.com"));
        assert!(!bypass("example.com", "https://example.com.evil.net"));
        // A leading dot or "*.": subdomains only.
        assert!(bypass(".example.com", "https://api.example.com"));
        assert!(!bypass(".example.com", "https://example.com"));
        assert!(bypass("*.example.com", "https://api.example.com"));
        assert!(!bypass("*.example.com", "https://example.com"));
        // Case and spaces do not matter.
        assert!(bypass(
            " other.org , EXAMPLE.com ",
            "https://API.example.COM"
        ));
        // Ports: the URL's, or the scheme's default.
        assert!(bypass("example.com:443", "https://example.com"));
        assert!(!bypass("example.com:8443", "https://example.com"));
        assert!(bypass("example.com:8443", "https://example.com:8443"));
        // A domain never matches an IP-literal URL.
        assert!(!bypass("1.example.com", "http://10.0.0.1"));
    }

    #[test]
    fn addresses_and_networks() {
        assert!(bypass("10.0.0.0/8", "https://10.1.2.3:6443"));
        assert!(!bypass("10.0.0.0/8", "https://11.0.0.1"));
        assert!(bypass("192.168.1.0/24", "http://192.168.1.255"));
        assert!(!bypass("192.168.1.0/24", "http://192.168.2.1"));
        assert!(bypass("0.0.0.0/0", "http://203.0.113.9"));
        assert!(bypass("192.0.2.7/32", "http://192.0.2.7"));
        assert!(!bypass("192.0.2.7/32", "http://192.0.2.8"));
        assert!(bypass("192.0.2.7", "http://192.0.2.7:8080"));
        assert!(bypass("192.0.2.7:8080", "http://192.0.2.7:8080"));
        assert!(!bypass("192.0.2.7:8080", "http://192.0.2.7"));
        // IPv6: bare, bracketed, with a port, networks.
        assert!(bypass("fd00::/8", "https://[fd12:3456::1]"));
        assert!(!bypass("fd00::/8", "https://[fe80::1]"));
        assert!(bypass("::1/128", "http://[::1]:8090"));
        assert!(bypass("2001:db8::1", "http://[2001:db8::1]"));
        assert!(bypass("[2001:db8::1]", "http://[2001:db8::1]"));
        assert!(bypass("[2001:db8::1]:8090", "http://[2001:db8::1]:8090"));
        assert!(!bypass("[2001:db8::1]:8090", "http://[2001:db8::1]:80"));
        // No resolution: a CIDR says nothing about a host name.
        assert!(!bypass("127.0.0.0/8", "http://localhost"));
        // v4 entries cover IPv4-mapped IPv6 literals, v6 entries never v4.
        assert!(bypass("10.0.0.0/8", "http://[::ffff:10.0.0.1]"));
        assert!(!bypass("::/0", "http://10.0.0.1"));
    }

    #[test]
    fn the_list_shows_as_it_is_matched() {
        let (parsed, _) =
            NoProxy::parse("Example.com, .corp,10.0.0.0/8,[fd00::1]:443,192.0.2.1,bad entry");
        assert_eq!(
            parsed.to_string(),
            "example.com,.corp,10.0.0.0/8,[fd00::1]:443,192.0.2.1"
        );
        assert_eq!(NoProxy::parse("*").0.to_string(), "*");
        assert_eq!(NoProxy::default().to_string(), "(none)");
    }

    #[test]
    fn star_and_nothing() {
        assert!(bypass("*", "https://anything.example"));
        assert!(bypass("example.com,*", "http://10.0.0.1"));
        assert!(!bypass("", "https://api.example.com"));
        // Unlike Go, loopback goes through the proxy unless listed.
        assert!(!bypass("", "http://127.0.0.1:8090"));
        assert!(!bypass("", "http://localhost:8090"));
    }

    #[test]
    fn bad_entries_are_skipped_and_reported() {
        let (parsed, ignored) = NoProxy::parse("10.0.0.0/33,exa mple.com,:80,good.example");
        assert_eq!(ignored, ["10.0.0.0/33", "exa mple.com", ":80"]);
        assert!(parsed.bypasses(&url("https://good.example")));
        assert!(!parsed.bypasses(&url("https://10.0.0.1")));
    }

    #[test]
    fn strict_validation_follows_assisted_service() {
        assert!(NoProxy::validate("*").is_ok());
        assert!(
            NoProxy::validate(".example.com,10.0.0.0/8,fd00::/8,192.0.2.1,api.example").is_ok()
        );
        assert!(NoProxy::validate("a.example,*")
            .unwrap_err()
            .contains("whole value"));
        assert!(NoProxy::validate("a.example,a.example")
            .unwrap_err()
            .contains("twice"));
        assert!(NoProxy::validate("a.example,,b.example").is_err());
        assert!(NoProxy::validate("bad host").is_err());
    }

    #[test]
    fn scheme_decides_which_proxy() {
        let settings = ProxySettings {
            http: Some(ProxyUrl::parse("http://plain:3128", false).unwrap()),
            https: Some(ProxyUrl::parse("https://tls:3129", true).unwrap()),
            no_proxy: NoProxy::parse(".internal").0,
        };
        let via = |u: &str| settings.proxy_for(&url(u)).map(ToString::to_string);
        assert_eq!(
            via("http://svc.example").as_deref(),
            Some("http://plain:3128")
        );
        assert_eq!(
            via("https://svc.example").as_deref(),
            Some("https://tls:3129")
        );
        assert_eq!(via("https://svc.internal"), None);
        // HTTPS_PROXY alone does not proxy http, and the reverse.
        let only_https = ProxySettings {
            https: settings.https.clone(),
            ..ProxySettings::default()
        };
        assert!(only_https.proxy_for(&url("http://svc.example")).is_none());
        assert!(only_https.proxy_for(&url("https://svc.example")).is_some());
    }

    #[test]
    fn proxy_urls_are_checked_and_credentials_never_shown() {
        let p = ProxyUrl::parse("http://alice:pa%40ss-w0rd!@proxy.example:3128/", false).unwrap();
        for shown in [
            p.to_string(),
            format!("{p:?}"),
            format!(
                "{:?}",
                ProxySettings {
                    http: Some(p.clone()),
                    ..ProxySettings::default()
                }
            ),
        ] {
            assert!(
                !shown.contains("alice") && !shown.contains("w0rd"),
                "{shown}"
            );
            assert!(
                shown.contains("http://[REDACTED]@proxy.example:3128"),
                "{shown}"
            );
        }
        let secrets = p.secrets();
        assert!(secrets.contains(&"pa%40ss-w0rd!".to_owned()), "{secrets:?}");
        assert!(secrets.contains(&"pa@ss-w0rd!".to_owned()), "{secrets:?}");
        assert!(
            secrets.contains(&"alice:pa@ss-w0rd!".to_owned()),
            "{secrets:?}"
        );
        assert!(secrets
            .contains(&base64::engine::general_purpose::STANDARD.encode(b"alice:pa@ss-w0rd!")));
        assert!(!secrets.contains(&"alice".to_owned()));

        assert_eq!(
            ProxyUrl::parse("proxy.example:3128", false)
                .unwrap()
                .to_string(),
            "http://proxy.example:3128"
        );
        assert_eq!(
            ProxyUrl::parse("http://[fd00::1]:3128", false)
                .unwrap()
                .to_string(),
            "http://[fd00::1]:3128"
        );
        assert!(ProxyUrl::parse("https://p:1", false)
            .unwrap_err()
            .contains("is not http"));
        assert!(ProxyUrl::parse("https://p:1", true).is_ok());
        assert!(ProxyUrl::parse("socks5://p:1", true).is_err());
        assert!(ProxyUrl::parse("http://p:1/path", true).is_err());
        let err = ProxyUrl::parse("http://user:hunter2@", false).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }
}
