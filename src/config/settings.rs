//! Every setting of `run` that has a value, described once: its flag, its
//! environment names (which are also its `reporter.conf` keys), its
//! discovery contract file when the discovery agent writes one, its syntax
//! and its default. `cli` builds `run`'s flags from this table, and the
//! resolver reads every setting through the same layers, in this order:
//! flag, environment, contract file, `reporter.conf`, default. The paths
//! (`--root`, `--config-dir`, `--state-dir`), the secrets (pull secret, CA
//! bundle) and `--insecure` are the exceptions, each for a reason
//! docs/design.md gives.

#[cfg(test)]
use std::fmt::Write as _;
use std::time::Duration;

use reqwest::Url;

use crate::contract::{env, files};

/// Which setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    ServiceUrl,
    InfraEnvId,
    HostId,
    ClusterId,
    UploadInterval,
    Timeout,
    UploadSpread,
    KubeletHealthzUrl,
    LogsType,
    CommandTimeout,
    RetryInitialDelay,
    RetryMaxDelay,
    RetryAttempts,
    RequestTimeout,
    HttpProxy,
    HttpsProxy,
    NoProxy,
}

/// How a setting's value is written, the same in every layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// An http(s) URL.
    Url,
    Uuid,
    /// Whole minutes (the upstream unit's `…_MINUTES`) or a duration, `90s`.
    Minutes,
    /// Whole seconds or a duration.
    Seconds,
    /// A duration: `500ms`, `90s`, `10m`.
    Duration,
    /// A whole number of at least 1.
    Count,
    /// Letters, digits, `_` and `-`.
    Identifier,
    /// A proxy URL (`http://[user:password@]host:port`); never quoted back.
    ProxyUrl,
    /// NO_PROXY's comma-separated list, or `*`.
    ProxyList,
}

/// One setting.
#[derive(Debug)]
pub(crate) struct Setting {
    pub(crate) key: Key,
    /// What it is, in messages: "assisted-service URL".
    pub(crate) what: &'static str,
    /// The flag, without its dashes.
    pub(crate) flag: &'static str,
    pub(crate) value_name: &'static str,
    /// Environment names, the first preferred; each is a `reporter.conf`
    /// key too, so a unit's `EnvironmentFile=` and the file are one format.
    pub(crate) env: &'static [&'static str],
    /// The discovery contract file that holds it, when there is one.
    pub(crate) file: Option<&'static str>,
    pub(crate) syntax: Syntax,
    /// The value when no layer sets it, written in [`Self::syntax`].
    pub(crate) default: Option<&'static str>,
    /// The flag's help, without the sources and the default (added from
    /// the fields above).
    pub(crate) help: &'static str,
}

/// A duration longer than this is a typo, not a wish; far longer ones would
/// overflow the clock the agent schedules with.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 60 * 60);
/// The longest upload spread: above a day it is a typo.
pub(crate) const MAX_SPREAD: Duration = Duration::from_secs(24 * 60 * 60);

pub(crate) const DEFAULT_KUBELET_HEALTHZ_URL: &str = "http://127.0.0.1:10248/healthz";

pub(crate) const SETTINGS: &[Setting] = &[
    Setting {
        key: Key::ServiceUrl,
        what: "assisted-service URL",
        flag: "service-url",
        value_name: "URL",
        env: &[env::SERVICE_URL],
        file: Some(files::SERVICE_URL),
        syntax: Syntax::Url,
        default: None,
        help: "assisted-service base URL, e.g. https://api.openshift.com",
    },
    Setting {
        key: Key::InfraEnvId,
        what: "infra-env ID",
        flag: "infra-env-id",
        value_name: "UUID",
        env: &[env::INFRA_ENV_ID],
        file: Some(files::INFRA_ENV_ID),
        syntax: Syntax::Uuid,
        default: None,
        help: "Infra-env of the host; learnt from the cluster's host list when only the cluster is known",
    },
    Setting {
        key: Key::HostId,
        what: "host ID",
        flag: "host-id",
        value_name: "UUID",
        env: &[env::HOST_ID],
        file: Some(files::HOST_ID),
        syntax: Syntax::Uuid,
        default: None,
        help: "The host's ID",
    },
    Setting {
        key: Key::ClusterId,
        what: "cluster ID",
        flag: "cluster-id",
        value_name: "UUID",
        env: &[env::CLUSTER_ID],
        file: Some(files::CLUSTER_ID),
        syntax: Syntax::Uuid,
        default: None,
        help: "The cluster's ID when known; otherwise learnt from the service",
    },
    Setting {
        key: Key::UploadInterval,
        what: "upload interval",
        flag: "upload-interval",
        value_name: "DURATION",
        env: &[env::UPLOAD_MINUTES],
        file: None,
        syntax: Syntax::Minutes,
        default: Some("10m"),
        help: "Time between bundles",
    },
    Setting {
        key: Key::Timeout,
        what: "timeout",
        flag: "timeout",
        value_name: "DURATION",
        env: &[env::TIMEOUT_MINUTES],
        file: None,
        syntax: Syntax::Minutes,
        default: Some("1h"),
        help: "How long the reporter works, counted from its first start on the host",
    },
    Setting {
        key: Key::UploadSpread,
        what: "upload spread",
        flag: "upload-spread",
        value_name: "DURATION",
        env: &[env::UPLOAD_SPREAD_SECONDS],
        file: None,
        syntax: Syntax::Seconds,
        default: Some("1m"),
        help: "Longest delay of the first bundle (after the stage report) and of the last one, \
               drawn per host so hosts started together do not upload together; 0 sends them at once",
    },
    Setting {
        key: Key::KubeletHealthzUrl,
        what: "kubelet healthz URL",
        flag: "kubelet-healthz-url",
        value_name: "URL",
        env: &["REPORTER_KUBELET_HEALTHZ_URL"],
        file: None,
        syntax: Syntax::Url,
        default: Some(DEFAULT_KUBELET_HEALTHZ_URL),
        help: "Where kubelet answers \"ok\" once healthy",
    },
    Setting {
        key: Key::LogsType,
        what: "logs type",
        flag: "logs-type",
        value_name: "TYPE",
        env: &["REPORTER_LOGS_TYPE"],
        file: None,
        syntax: Syntax::Identifier,
        default: Some("host_boot"),
        help: "The logs type bundles are uploaded as",
    },
    Setting {
        key: Key::CommandTimeout,
        what: "command timeout",
        flag: "command-timeout",
        value_name: "DURATION",
        env: &["REPORTER_COMMAND_TIMEOUT"],
        file: None,
        syntax: Syntax::Duration,
        default: Some("60s"),
        help: "Longest a single collector command may run before it is killed",
    },
    Setting {
        key: Key::RetryInitialDelay,
        what: "first retry delay",
        flag: "retry-initial-delay",
        value_name: "DURATION",
        env: &["REPORTER_RETRY_INITIAL_DELAY"],
        file: None,
        syntax: Syntax::Duration,
        default: Some("1s"),
        help: "First retry delay of a failed request; doubles up to --retry-max-delay",
    },
    Setting {
        key: Key::RetryMaxDelay,
        what: "longest retry delay",
        flag: "retry-max-delay",
        value_name: "DURATION",
        env: &["REPORTER_RETRY_MAX_DELAY"],
        file: None,
        syntax: Syntax::Duration,
        default: Some("60s"),
        help: "Cap of the retry delay (a Retry-After above it is capped too)",
    },
    Setting {
        key: Key::RetryAttempts,
        what: "retry attempts",
        flag: "retry-attempts",
        value_name: "N",
        env: &["REPORTER_RETRY_ATTEMPTS"],
        file: None,
        syntax: Syntax::Count,
        default: Some("5"),
        help: "Attempts per request before giving up until the next cycle",
    },
    Setting {
        key: Key::RequestTimeout,
        what: "request timeout",
        flag: "request-timeout",
        value_name: "DURATION",
        env: &["REPORTER_REQUEST_TIMEOUT"],
        file: None,
        syntax: Syntax::Duration,
        default: Some("5m"),
        help: "Time limit of one HTTP request, upload included",
    },
    Setting {
        key: Key::HttpProxy,
        what: "HTTP proxy",
        flag: "http-proxy",
        value_name: "URL",
        env: &env::HTTP_PROXY,
        file: Some(files::PROXY),
        syntax: Syntax::ProxyUrl,
        default: None,
        help: "Proxy for an http:// service URL. A password in a flag is visible to every \
               user of the host: put it in proxy.env instead",
    },
    Setting {
        key: Key::HttpsProxy,
        what: "HTTPS proxy",
        flag: "https-proxy",
        value_name: "URL",
        env: &env::HTTPS_PROXY,
        file: Some(files::PROXY),
        syntax: Syntax::ProxyUrl,
        default: None,
        help: "Proxy for an https:// service URL, tunnelled with CONNECT",
    },
    Setting {
        key: Key::NoProxy,
        what: "NO_PROXY",
        flag: "no-proxy",
        value_name: "LIST",
        env: &env::NO_PROXY,
        file: Some(files::PROXY),
        syntax: Syntax::ProxyList,
        default: None,
        help: "Comma-separated hosts, domains, IP addresses and CIDRs reached without the proxy, or *",
    },
];

/// The setting of `key`.
pub(crate) fn setting(key: Key) -> &'static Setting {
    SETTINGS
        .iter()
        .find(|s| s.key == key)
        .expect("every key is in the table")
}

/// The setting a `reporter.conf` key or an environment name belongs to.
pub(crate) fn by_env_name(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.env.contains(&name))
}

impl Setting {
    /// The flag's full help: what it does, then where else it may come
    /// from and its default.
    pub(crate) fn full_help(&self) -> String {
        let mut sources = vec![format!("env {}", self.env.join(" or "))];
        if let Some(file) = self.file {
            sources.push(format!("contract file {file}"));
        }
        sources.push(format!("reporter.conf {}", self.env[0]));
        let unit = match self.syntax {
            Syntax::Minutes => "; a bare number is minutes",
            Syntax::Seconds => "; a bare number is seconds",
            _ => "",
        };
        let default = self
            .default
            .map(|d| format!(" [default: {d}]"))
            .unwrap_or_default();
        format!("{} ({}{unit}){default}", self.help, sources.join(", "))
    }

    /// A duration written in this setting's syntax (minutes, seconds or
    /// a duration); for a setting of another syntax, a plain duration.
    pub(crate) fn parse_duration(&self, value: &str) -> Result<Duration, String> {
        match self.syntax {
            Syntax::Minutes => parse_minutes(value),
            Syntax::Seconds => parse_seconds(value),
            _ => parse_duration(value),
        }
    }

    /// Whether a value may carry credentials (a URL's `user:password@`):
    /// such a value is never quoted back in an error.
    pub(crate) fn may_hold_a_secret(&self) -> bool {
        matches!(
            self.syntax,
            Syntax::Url | Syntax::ProxyUrl | Syntax::ProxyList
        )
    }

    /// Whether `value` is written in this setting's syntax; the reason when
    /// not. A proxy URL is never quoted back: it may hold a password.
    pub(crate) fn check(&self, value: &str) -> Result<(), String> {
        match self.syntax {
            Syntax::Url => service_url(value).map(drop),
            Syntax::Uuid => uuid::Uuid::parse_str(value)
                .map(drop)
                .map_err(|err| format!("not a UUID: {err}")),
            Syntax::Minutes | Syntax::Seconds | Syntax::Duration => {
                self.parse_duration(value).map(drop)
            }
            Syntax::Count => parse_count(value).map(drop),
            Syntax::Identifier => check_identifier(value),
            Syntax::ProxyUrl => {
                crate::proxy::ProxyUrl::parse(value, self.key == Key::HttpsProxy).map(drop)
            }
            Syntax::ProxyList => Ok(()),
        }
    }
}

/// The settings as the Markdown table of docs/discovery-contract.md
/// ("Precedence"), which a test keeps equal to this.
#[cfg(test)]
pub(crate) fn markdown_table() -> String {
    let mut out = String::from(
        "| setting | flag | environment and `reporter.conf` key | contract file | syntax | default |\n\
         |---|---|---|---|---|---|\n",
    );
    for s in SETTINGS {
        let names: Vec<String> = s.env.iter().map(|n| format!("`{n}`")).collect();
        let syntax = match s.syntax {
            Syntax::Url => "URL",
            Syntax::Uuid => "UUID",
            Syntax::Minutes => "whole minutes, or a duration (`90s`)",
            Syntax::Seconds => "whole seconds, or a duration (`2m`)",
            Syntax::Duration => "a duration (`500ms`, `90s`, `10m`)",
            Syntax::Count => "a whole number ≥ 1",
            Syntax::Identifier => "letters, digits, `_`, `-`",
            Syntax::ProxyUrl => "proxy URL",
            Syntax::ProxyList => "list, or `*`",
        };
        let _ = writeln!(
            out,
            "| {} | `--{} {}` | {} | {} | {syntax} | {} |",
            s.what,
            s.flag,
            s.value_name,
            names.join(", then "),
            s.file.map_or_else(|| "—".to_owned(), |f| format!("`{f}`")),
            s.default
                .map_or_else(|| "—".to_owned(), |d| format!("`{d}`")),
        );
    }
    out
}

/// The service URL as the client uses it, or why it is unusable: one check
/// for the agent's configuration and for `ignition`'s `--service-url`.
pub(crate) fn service_url(value: &str) -> Result<Url, String> {
    let mut url = Url::parse(value).map_err(|err| format!("{err}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("scheme {:?} is not http or https", url.scheme()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Credentials in the URL would end up in every log line that names it.
        return Err("the URL must not carry credentials".into());
    }
    // Accept both "https://svc" and "https://svc/api/assisted-install"; the
    // client appends the API path itself.
    let path = url.path().trim_end_matches('/').to_owned();
    let path = path
        .strip_suffix("/api/assisted-install")
        .unwrap_or(&path)
        .to_owned();
    url.set_path(&path);
    url.set_query(None);
    url.set_fragment(None);
    Ok(url)
}

/// A duration: `500ms`, `90s`, `10m`, `1h`.
pub(crate) fn parse_duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value).map_err(|err| format!("{err} (expected e.g. 10m, 90s, 1h)"))
}

/// The upstream variables count whole minutes; a unit suffix ("90s") is
/// accepted too so tests and impatient admins can go below a minute.
pub(crate) fn parse_minutes(value: &str) -> Result<Duration, String> {
    if let Ok(minutes) = value.parse::<u64>() {
        return minutes
            .checked_mul(60)
            .map(Duration::from_secs)
            .ok_or_else(|| format!("{value} minutes is too long"));
    }
    humantime::parse_duration(value)
        .map_err(|err| format!("{value:?} is neither whole minutes nor a duration like 10m: {err}"))
}

pub(crate) fn parse_seconds(value: &str) -> Result<Duration, String> {
    if let Ok(seconds) = value.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    humantime::parse_duration(value)
        .map_err(|err| format!("{value:?} is neither whole seconds nor a duration like 90s: {err}"))
}

pub(crate) fn parse_count(value: &str) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{value:?} is not a whole number of at least 1")),
    }
}

pub(crate) fn check_identifier(value: &str) -> Result<(), String> {
    if !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(())
    } else {
        Err(format!("{value:?} is not a plain identifier"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_once_every_default_in_its_syntax_every_name_unique() {
        let mut keys: Vec<Key> = SETTINGS.iter().map(|s| s.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), SETTINGS.len());
        let mut names: Vec<&str> = SETTINGS
            .iter()
            .flat_map(|s| s.env.iter().copied())
            .collect();
        names.extend(SETTINGS.iter().map(|s| s.flag));
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name used twice");
        for s in SETTINGS {
            assert!(!s.env.is_empty(), "{:?} has no environment name", s.key);
            if let Some(default) = s.default {
                assert_eq!(s.check(default), Ok(()), "{:?}", s.key);
            }
            // The secret never has a reporter.conf key.
            assert!(!s.env.contains(&env::TOKEN));
        }
    }

    #[test]
    fn help_names_every_source_and_the_default() {
        let help = setting(Key::UploadInterval).full_help();
        assert_eq!(
            help,
            "Time between bundles (env LOG_SEND_FREQUENCY_IN_MINUTES, reporter.conf \
             LOG_SEND_FREQUENCY_IN_MINUTES; a bare number is minutes) [default: 10m]"
        );
        let help = setting(Key::HttpProxy).full_help();
        assert!(
            help.contains("env HTTP_PROXY or http_proxy, contract file proxy.env"),
            "{help}"
        );
    }

    /// docs/discovery-contract.md shows the table this module holds;
    /// `UPDATE_DOCS=1 cargo test --lib settings` rewrites it.
    #[test]
    fn the_documented_table_is_this_one() {
        const BEGIN: &str = "<!-- settings: generated from src/config/settings.rs -->\n";
        const END: &str = "<!-- end of settings -->";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/discovery-contract.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let start = doc.find(BEGIN).expect("the begin marker") + BEGIN.len();
        let end = doc.find(END).expect("the end marker");
        let table = markdown_table();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{table}{}", &doc[..start], &doc[end..]);
            std::fs::write(path, updated).unwrap();
            return;
        }
        assert_eq!(
            doc[start..end],
            table,
            "docs/discovery-contract.md is out of date: UPDATE_DOCS=1 cargo test --lib settings"
        );
    }

    #[test]
    fn syntaxes() {
        assert_eq!(parse_minutes("3"), Ok(Duration::from_secs(180)));
        assert_eq!(parse_minutes("90s"), Ok(Duration::from_secs(90)));
        assert!(parse_minutes("soon").is_err());
        assert_eq!(parse_seconds("0"), Ok(Duration::ZERO));
        assert_eq!(parse_count("5"), Ok(5));
        assert!(parse_count("0").is_err());
        assert!(check_identifier("host_boot").is_ok());
        assert!(check_identifier("a b").is_err());
        let err = setting(Key::HttpsProxy)
            .check("http://user:hunter2@[bad")
            .unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }
}
