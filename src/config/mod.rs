//! Configuration: merges flags, the environment, the discovery contract and
//! defaults (in that order of precedence) into one validated [`Config`].
//!
//! `inputs` holds the plain values the command line gave (`cli` converts its
//! arguments into [`Flags`]; nothing here knows clap) and where each value
//! came from; the contract's files and formats are `contract`'s. Every
//! failure names what is missing or wrong and where it was looked for,
//! because the person reading it is a support engineer looking at a journal
//! from a host they cannot log into.

mod inputs;

use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;
use uuid::Uuid;

use crate::bounded_read::{Kind, ReadError};
use crate::contract::{self, env, files, parse_credentials, ContractError, Credentials};
use crate::proxy::{NoProxy, ProxySettings, ProxyUrl};
use crate::retry::RetryPolicy;
use crate::rootfs::under_root;

pub use inputs::Flags;
use inputs::{first_of, found, Found};

pub const DEFAULT_STATE_DIR: &str = "/var/lib/assisted-boot-reporter";
/// Where hosts installed with a private service CA already have it.
pub const SERVICE_CA_PATH: &str = "/etc/assisted-service/service-ca-cert.crt";
pub const DEFAULT_KUBELET_HEALTHZ_URL: &str = "http://127.0.0.1:10248/healthz";
pub const DEFAULT_LOGS_TYPE: &str = "host_boot";
pub const DEFAULT_UPLOAD_INTERVAL: Duration = Duration::from_secs(10 * 60);
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60 * 60);
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Bound of the per-host delay of the first and the final bundle
/// (`agent::spread::HerdSpread`; docs/design.md "No herd" says why a minute).
pub const DEFAULT_UPLOAD_SPREAD: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("missing configuration: {what} (looked in {})", .looked_in.join(", "))]
    Missing {
        what: &'static str,
        looked_in: Vec<String>,
    },
    #[error("invalid {what} from {source_name}: {reason}")]
    Invalid {
        what: &'static str,
        source_name: String,
        reason: String,
    },
    /// A file of the configuration could not be read, or is no file the
    /// contract allows (a FIFO, a device, over its size cap).
    #[error(transparent)]
    Read(#[from] ReadError),
}

impl From<ContractError> for ConfigError {
    fn from(err: ContractError) -> Self {
        match err {
            ContractError::Read(err) => ConfigError::Read(err),
            ContractError::Invalid { what, path, reason } => ConfigError::Invalid {
                what,
                source_name: path.display().to_string(),
                reason,
            },
        }
    }
}

/// Where the reporter reads and keeps its files: known before anything
/// else is resolved (an interrupted cleanup is finished from them alone).
#[derive(Debug, Clone)]
pub struct Paths {
    /// Sysroot prefix of every host path.
    pub root: PathBuf,
    pub config_dir: PathBuf,
    pub state_dir: PathBuf,
}

impl Paths {
    pub fn resolve(flags: &Flags) -> Self {
        let root = flags.root.clone().unwrap_or_else(|| PathBuf::from("/"));
        let config_dir = contract::Dir::at(&root, flags.config_dir.as_deref())
            .root()
            .to_owned();
        let state_dir = flags
            .state_dir
            .clone()
            .unwrap_or_else(|| under_root(&root, DEFAULT_STATE_DIR));
        Paths {
            root,
            config_dir,
            state_dir,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub root: PathBuf,
    pub config_dir: PathBuf,
    pub state_dir: PathBuf,
    pub service_url: Url,
    /// None only where the service runs without authentication (on-premise).
    pub credentials: Option<Credentials>,
    /// None when only the cluster is known (the upstream unit's environment
    /// carries no INFRA_ENV_ID): the agent learns it from the cluster's host
    /// list. At least one of the two is always set.
    pub infra_env_id: Option<Uuid>,
    pub host_id: Uuid,
    pub cluster_id: Option<Uuid>,
    pub upload_interval: Duration,
    pub timeout: Duration,
    /// Bound of the per-host delay of the first and the final bundle; zero
    /// sends them at once.
    pub upload_spread: Duration,
    pub ca_cert: Option<PathBuf>,
    pub insecure: bool,
    pub kubelet_healthz_url: Url,
    pub logs_type: String,
    pub command_timeout: Duration,
    pub request_timeout: Duration,
    pub retry: RetryPolicy,
    /// Forward proxy of the service client (`proxy.env`, HTTP(S)_PROXY, NO_PROXY).
    pub proxy: ProxySettings,
    /// Warnings found while resolving (loose file modes...), logged by the caller
    /// once tracing is set up.
    pub warnings: Vec<String>,
}

impl Config {
    /// Resolves the configuration. `getenv` is the process environment in
    /// production and a map in tests.
    pub fn resolve(
        args: &Flags,
        getenv: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let Paths {
            root,
            config_dir,
            state_dir,
        } = Paths::resolve(args);
        let dir = contract::Dir::new(&config_dir);
        let tunables = dir.tunables()?;
        let mut warnings = Vec::new();
        let getenv = |name: &str| getenv(name).filter(|v| !v.trim().is_empty());

        let service_url = first_of(
            args.service_url.as_ref().map(|v| found(v, "--service-url")),
            getenv(env::SERVICE_URL).map(|v| found(&v, env::SERVICE_URL)),
            read(&dir, files::SERVICE_URL)?,
            tunables
                .service_url
                .as_ref()
                .map(|v| found(v, &dir.display(files::TUNABLES))),
        )
        .ok_or_else(|| ConfigError::Missing {
            what: "assisted-service URL",
            looked_in: vec![
                "--service-url".into(),
                env::SERVICE_URL.into(),
                dir.display(files::SERVICE_URL),
            ],
        })?;
        let service_url = parse_service_url(&service_url)?;

        let infra_env_id = first_of(
            args.infra_env_id
                .as_ref()
                .map(|v| found(v, "--infra-env-id")),
            getenv(env::INFRA_ENV_ID).map(|v| found(&v, env::INFRA_ENV_ID)),
            read(&dir, files::INFRA_ENV_ID)?,
            tunables
                .infra_env_id
                .as_ref()
                .map(|v| found(v, &dir.display(files::TUNABLES))),
        )
        .map(|f| parse_uuid("infra-env ID", &f))
        .transpose()?;
        let host_id = required_uuid(
            "host ID",
            args.host_id.as_deref(),
            "--host-id",
            &getenv,
            env::HOST_ID,
            &dir,
            files::HOST_ID,
            tunables.host_id.as_deref(),
        )?;
        let cluster_id = first_of(
            args.cluster_id.as_ref().map(|v| found(v, "--cluster-id")),
            getenv(env::CLUSTER_ID).map(|v| found(&v, env::CLUSTER_ID)),
            read(&dir, files::CLUSTER_ID)?,
            tunables
                .cluster_id
                .as_ref()
                .map(|v| found(v, &dir.display(files::TUNABLES))),
        )
        .map(|f| parse_uuid("cluster ID", &f))
        .transpose()?;
        // The host list of the cluster names the infra-env (agent auth), so
        // either ID finds the host.
        if infra_env_id.is_none() && cluster_id.is_none() {
            return Err(ConfigError::Missing {
                what: "infra-env ID (or a cluster ID to learn it from)",
                looked_in: vec![
                    "--infra-env-id".into(),
                    env::INFRA_ENV_ID.into(),
                    dir.display(files::INFRA_ENV_ID),
                    "--cluster-id".into(),
                    env::CLUSTER_ID.into(),
                    dir.display(files::CLUSTER_ID),
                ],
            });
        }

        let credentials = resolve_credentials(args, &getenv, &dir, &mut warnings)?;
        let proxy = resolve_proxy(args, &getenv, &dir, &mut warnings)?;

        let upload_interval = resolve_duration(
            "upload interval",
            args.upload_interval,
            getenv(env::UPLOAD_MINUTES).map(|v| found(&v, env::UPLOAD_MINUTES)),
            tunables
                .upload_minutes
                .as_ref()
                .map(|v| found(v, &dir.display(files::TUNABLES))),
            DEFAULT_UPLOAD_INTERVAL,
        )?;
        let timeout = resolve_duration(
            "timeout",
            args.timeout,
            getenv(env::TIMEOUT_MINUTES).map(|v| found(&v, env::TIMEOUT_MINUTES)),
            tunables
                .timeout_minutes
                .as_ref()
                .map(|v| found(v, &dir.display(files::TUNABLES))),
            DEFAULT_TIMEOUT,
        )?;
        let upload_spread = resolve_spread(
            args.upload_spread,
            getenv(env::UPLOAD_SPREAD_SECONDS).map(|v| found(&v, env::UPLOAD_SPREAD_SECONDS)),
            tunables
                .upload_spread_seconds
                .as_ref()
                .map(|v| found(v, &dir.display(files::TUNABLES))),
        )?;

        let ca_cert = match &args.cacert {
            Some(path) => {
                if !path.is_file() {
                    return Err(ConfigError::Invalid {
                        what: "CA certificate",
                        source_name: "--cacert".into(),
                        reason: format!("{} is not a readable file", path.display()),
                    });
                }
                Some(path.clone())
            }
            None => [
                config_dir.join(files::CA_CERT),
                under_root(&root, SERVICE_CA_PATH),
            ]
            .into_iter()
            .find(|p| p.is_file()),
        };

        let kubelet_healthz_url = args
            .kubelet_healthz_url
            .as_deref()
            .unwrap_or(DEFAULT_KUBELET_HEALTHZ_URL);
        let kubelet_healthz_url =
            Url::parse(kubelet_healthz_url).map_err(|err| ConfigError::Invalid {
                what: "kubelet healthz URL",
                source_name: "--kubelet-healthz-url".into(),
                reason: err.to_string(),
            })?;

        let logs_type = args
            .logs_type
            .clone()
            .unwrap_or_else(|| DEFAULT_LOGS_TYPE.to_owned());
        if logs_type.is_empty()
            || !logs_type
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(ConfigError::Invalid {
                what: "logs type",
                source_name: "--logs-type".into(),
                reason: format!("{logs_type:?} is not a plain identifier"),
            });
        }

        let defaults = RetryPolicy::default();
        let retry = RetryPolicy {
            attempts: args.retry_attempts.unwrap_or(defaults.attempts).max(1),
            initial_delay: args.retry_initial_delay.unwrap_or(defaults.initial_delay),
            max_delay: args.retry_max_delay.unwrap_or(defaults.max_delay),
        };
        if upload_interval.is_zero() || timeout.is_zero() {
            return Err(ConfigError::Invalid {
                what: "duration",
                source_name: "--upload-interval/--timeout".into(),
                reason: "must be greater than zero".into(),
            });
        }

        Ok(Config {
            root,
            config_dir,
            state_dir,
            service_url,
            credentials,
            infra_env_id,
            host_id,
            cluster_id,
            upload_interval,
            timeout,
            upload_spread,
            ca_cert,
            insecure: args.insecure,
            kubelet_healthz_url,
            logs_type,
            command_timeout: args.command_timeout.unwrap_or(DEFAULT_COMMAND_TIMEOUT),
            request_timeout: args.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT),
            retry,
            proxy,
            warnings,
        })
    }

    /// A host path under the configured sysroot.
    pub fn host_path(&self, absolute: &str) -> PathBuf {
        under_root(&self.root, absolute)
    }
}

#[allow(clippy::too_many_arguments)]
fn required_uuid(
    what: &'static str,
    flag_value: Option<&str>,
    flag: &str,
    getenv: &dyn Fn(&str) -> Option<String>,
    env_name: &str,
    dir: &contract::Dir,
    file: &str,
    tunable: Option<&str>,
) -> Result<Uuid, ConfigError> {
    let value = first_of(
        flag_value.map(|v| found(v, flag)),
        getenv(env_name).map(|v| found(&v, env_name)),
        read(dir, file)?,
        tunable.map(|v| found(v, &dir.display(files::TUNABLES))),
    )
    .ok_or_else(|| ConfigError::Missing {
        what,
        looked_in: vec![flag.into(), env_name.into(), dir.display(file)],
    })?;
    parse_uuid(what, &value)
}

/// A value of the contract directory, with its path as its source.
fn read(dir: &contract::Dir, file: &str) -> Result<Option<Found>, ConfigError> {
    Ok(dir
        .read(file)?
        .map(|value| found(&value, &dir.display(file))))
}

fn parse_uuid(what: &'static str, found: &Found) -> Result<Uuid, ConfigError> {
    Uuid::parse_str(&found.value).map_err(|err| ConfigError::Invalid {
        what,
        source_name: found.from.clone(),
        reason: format!("{:?} is not a UUID: {err}", truncate(&found.value, 64)),
    })
}

fn parse_service_url(found: &Found) -> Result<Url, ConfigError> {
    service_url(&found.value).map_err(|reason| ConfigError::Invalid {
        what: "assisted-service URL",
        source_name: found.from.clone(),
        reason,
    })
}

/// The service URL as the client uses it, or why it is unusable: one check
/// for the agent's configuration and for `ignition`'s `--service-url`.
pub fn service_url(value: &str) -> Result<Url, String> {
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

/// A budget or an interval longer than this is a typo, not a wish; far
/// longer ones would overflow the clock the agent schedules with.
const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 60 * 60);

fn resolve_duration(
    what: &'static str,
    flag: Option<Duration>,
    from_env: Option<Found>,
    from_file: Option<Found>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    let (value, source_name) = match (flag, from_env.or(from_file)) {
        (Some(value), _) => (value, format!("--{}", what.replace(' ', "-"))),
        (None, Some(found)) => {
            let value = parse_minutes(&found.value).map_err(|reason| ConfigError::Invalid {
                what,
                source_name: found.from.clone(),
                reason,
            })?;
            (value, found.from)
        }
        (None, None) => return Ok(default),
    };
    if value > MAX_DURATION {
        return Err(ConfigError::Invalid {
            what,
            source_name,
            reason: format!(
                "{} is longer than a year",
                humantime::format_duration(value)
            ),
        });
    }
    Ok(value)
}

/// The spread is zero or more (zero: no delay), in whole seconds or a
/// duration; above a day it is a typo, not a wish.
fn resolve_spread(
    flag: Option<Duration>,
    from_env: Option<Found>,
    from_file: Option<Found>,
) -> Result<Duration, ConfigError> {
    const MAX_SPREAD: Duration = Duration::from_secs(24 * 60 * 60);
    let (spread, source_name) = match (flag, from_env.or(from_file)) {
        (Some(value), _) => (value, "--upload-spread".to_owned()),
        (None, Some(found)) => {
            let spread = parse_seconds(&found.value).map_err(|reason| ConfigError::Invalid {
                what: "upload spread",
                source_name: found.from.clone(),
                reason,
            })?;
            (spread, found.from)
        }
        (None, None) => return Ok(DEFAULT_UPLOAD_SPREAD),
    };
    if spread > MAX_SPREAD {
        return Err(ConfigError::Invalid {
            what: "upload spread",
            source_name,
            reason: format!(
                "{} is longer than a day",
                humantime::format_duration(spread)
            ),
        });
    }
    Ok(spread)
}

fn parse_seconds(value: &str) -> Result<Duration, String> {
    if let Ok(seconds) = value.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    humantime::parse_duration(value)
        .map_err(|err| format!("{value:?} is neither whole seconds nor a duration like 90s: {err}"))
}

/// The upstream variables count whole minutes; a unit suffix ("90s") is
/// accepted too so tests and impatient admins can go below a minute.
fn parse_minutes(value: &str) -> Result<Duration, String> {
    if let Ok(minutes) = value.parse::<u64>() {
        return minutes
            .checked_mul(60)
            .map(Duration::from_secs)
            .ok_or_else(|| format!("{value} minutes is too long"));
    }
    humantime::parse_duration(value)
        .map_err(|err| format!("{value:?} is neither whole minutes nor a duration like 10m: {err}"))
}

fn truncate(value: &str, max: usize) -> &str {
    match value.char_indices().nth(max) {
        Some((idx, _)) => &value[..idx],
        None => value,
    }
}

fn resolve_credentials(
    args: &Flags,
    getenv: &dyn Fn(&str) -> Option<String>,
    dir: &contract::Dir,
    warnings: &mut Vec<String>,
) -> Result<Option<Credentials>, ConfigError> {
    let (text, from) = if let Some(path) = &args.pull_secret_file {
        let text =
            contract::read_secret_file(path, Kind::PullSecret, warnings)?.ok_or_else(|| {
                ConfigError::Missing {
                    what: "pull secret",
                    looked_in: vec![format!("--pull-secret-file {}", path.display())],
                }
            })?;
        (text, format!("--pull-secret-file {}", path.display()))
    } else if let Some(value) = getenv(env::TOKEN) {
        (value, env::TOKEN.to_owned())
    } else {
        let path = dir.path(files::PULL_SECRET);
        let Some(text) = contract::read_secret_file(&path, Kind::PullSecret, warnings)? else {
            warnings.push(format!(
                "no agent token configured (looked in {}, {}): requests carry no X-Secret-Key, \
                 which only an assisted-service without authentication accepts",
                env::TOKEN,
                path.display()
            ));
            return Ok(None);
        };
        (text, path.display().to_string())
    };
    parse_credentials(&text)
        .map(Some)
        .map_err(|reason| ConfigError::Invalid {
            what: "pull secret",
            source_name: from,
            reason,
        })
}

/// The proxy settings, each of the three by flags > environment >
/// `proxy.env` > none. A NO_PROXY entry of no known shape is skipped with a
/// warning, as Go skips it; a proxy URL that cannot be used is an error that
/// names its source but never quotes it (it may hold a password).
fn resolve_proxy(
    args: &Flags,
    getenv: &dyn Fn(&str) -> Option<String>,
    dir: &contract::Dir,
    warnings: &mut Vec<String>,
) -> Result<ProxySettings, ConfigError> {
    let path = dir.path(files::PROXY);
    let file = dir.proxy_env(warnings)?;
    let pick = |flag: &Option<String>, flag_name: &str, names: [&str; 2], file: &Option<String>| {
        let from_env = names
            .iter()
            .find_map(|name| getenv(name).map(|v| found(&v, name)));
        first_of(
            flag.as_ref().map(|v| found(v, flag_name)),
            from_env,
            file.as_ref().map(|v| found(v, &path.display().to_string())),
            None,
        )
    };
    let proxy_url = |what: &'static str, value: Option<Found>, allow_https: bool| {
        value
            .map(|f| {
                ProxyUrl::parse(&f.value, allow_https).map_err(|reason| ConfigError::Invalid {
                    what,
                    source_name: f.from,
                    reason,
                })
            })
            .transpose()
    };
    let http = proxy_url(
        "HTTP proxy",
        pick(
            &args.http_proxy,
            "--http-proxy",
            env::HTTP_PROXY,
            &file.http,
        ),
        false,
    )?;
    let https = proxy_url(
        "HTTPS proxy",
        pick(
            &args.https_proxy,
            "--https-proxy",
            env::HTTPS_PROXY,
            &file.https,
        ),
        true,
    )?;
    let no_proxy = match pick(&args.no_proxy, "--no-proxy", env::NO_PROXY, &file.no_proxy) {
        Some(f) => {
            let (parsed, ignored) = NoProxy::parse(&f.value);
            if !ignored.is_empty() {
                warnings.push(format!(
                    "NO_PROXY from {}: ignoring {:?}: neither a host name, domain, IP address nor CIDR",
                    f.from, ignored
                ));
            }
            parsed
        }
        None => NoProxy::default(),
    };
    Ok(ProxySettings {
        http,
        https,
        no_proxy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    const HOST: &str = "2c7d4e0a-8f9b-4d4e-9a55-0f1e2d3c4b5a";
    const INFRA: &str = "6b1f1e6e-3d3a-4f0e-8a39-9d7c2f4a1b2c";
    const OTHER: &str = "11111111-2222-3333-4444-555555555555";

    fn write(dir: &Path, name: &str, content: &str, mode: u32) {
        let path = dir.join(name);
        fs::write(&path, content).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn contract_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            files::SERVICE_URL,
            "https://files.example/\n",
            0o644,
        );
        write(dir.path(), files::PULL_SECRET, "file-token-abcdef\n", 0o600);
        write(dir.path(), files::INFRA_ENV_ID, INFRA, 0o644);
        write(dir.path(), files::HOST_ID, HOST, 0o644);
        dir
    }

    fn args(dir: &Path) -> Flags {
        Flags {
            config_dir: Some(dir.to_owned()),
            state_dir: Some(dir.join("state")),
            root: Some(dir.to_owned()),
            ..Flags::default()
        }
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn files_alone_are_enough_and_defaults_apply() {
        let dir = contract_dir();
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(config.service_url.as_str(), "https://files.example/");
        assert_eq!(
            config.credentials.unwrap().token.expose(),
            "file-token-abcdef"
        );
        assert_eq!(config.host_id.to_string(), HOST);
        assert_eq!(config.cluster_id, None);
        assert_eq!(config.upload_interval, DEFAULT_UPLOAD_INTERVAL);
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
        assert_eq!(config.logs_type, "host_boot");
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    }

    #[test]
    fn flags_beat_environment_beats_files() {
        let dir = contract_dir();
        write(dir.path(), files::CLUSTER_ID, OTHER, 0o644);
        let env = env_of(&[
            (env::SERVICE_URL, "https://env.example"),
            (env::TOKEN, "env-token-abcdef"),
            (env::HOST_ID, OTHER),
            (env::UPLOAD_MINUTES, "3"),
            (env::TIMEOUT_MINUTES, "90s"),
        ]);
        let mut run = args(dir.path());
        run.service_url = Some("https://flag.example/api/assisted-install/".into());
        run.upload_interval = Some(Duration::from_secs(7));
        let config = Config::resolve(&run, &env).unwrap();
        assert_eq!(config.service_url.as_str(), "https://flag.example/");
        assert_eq!(
            config.credentials.unwrap().token.expose(),
            "env-token-abcdef"
        );
        assert_eq!(config.host_id.to_string(), OTHER);
        assert_eq!(config.cluster_id.unwrap().to_string(), OTHER);
        assert_eq!(config.upload_interval, Duration::from_secs(7));
        assert_eq!(config.timeout, Duration::from_secs(90));
    }

    #[test]
    fn tunables_file_sits_below_environment_and_rejects_unknown_keys() {
        let dir = contract_dir();
        write(
            dir.path(),
            files::TUNABLES,
            "# tuning\nLOG_SEND_FREQUENCY_IN_MINUTES=5\nSERVICE_TIMEOUT_MINUTES=\"30\"\n",
            0o644,
        );
        let config =
            Config::resolve(&args(dir.path()), &env_of(&[(env::TIMEOUT_MINUTES, "45")])).unwrap();
        assert_eq!(config.upload_interval, Duration::from_secs(300));
        assert_eq!(config.timeout, Duration::from_secs(45 * 60));

        write(dir.path(), files::TUNABLES, "LOG_SEND_FREQUENCY=5\n", 0o644);
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `LOG_SEND_FREQUENCY`"), "{err}");

        write(
            dir.path(),
            files::TUNABLES,
            "PULL_SECRET_TOKEN=abc\n",
            0o644,
        );
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not belong here"), "{err}");
    }

    #[test]
    fn missing_value_names_every_place_looked() {
        let dir = contract_dir();
        fs::remove_file(dir.path().join(files::HOST_ID)).unwrap();
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("missing configuration: host ID"), "{err}");
        assert!(
            err.contains("--host-id") && err.contains("HOST_ID"),
            "{err}"
        );
        assert!(
            err.contains(&dir.path().join("host-id").display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn the_upstream_unit_environment_needs_no_infra_env_id() {
        let dir = contract_dir();
        fs::remove_file(dir.path().join(files::INFRA_ENV_ID)).unwrap();
        let cluster = "11111111-2222-3333-4444-555555555555";
        let config =
            Config::resolve(&args(dir.path()), &env_of(&[(env::CLUSTER_ID, cluster)])).unwrap();
        assert_eq!(config.infra_env_id, None);
        assert_eq!(config.cluster_id.unwrap().to_string(), cluster);
        // Neither ID: the error names both ways to give one.
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("infra-env ID")
                && err.contains("CLUSTER_ID")
                && err.contains("INFRA_ENV_ID"),
            "{err}"
        );
    }

    #[test]
    fn invalid_values_are_named_with_their_source() {
        let dir = contract_dir();
        write(dir.path(), files::INFRA_ENV_ID, "not-a-uuid", 0o644);
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid infra-env ID") && err.contains("infra-env-id"),
            "{err}"
        );

        let dir = contract_dir();
        let err = Config::resolve(&args(dir.path()), &env_of(&[(env::SERVICE_URL, "ftp://x")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ASSISTED_SERVICE_URL") && err.contains("ftp"),
            "{err}"
        );

        let err = Config::resolve(
            &args(dir.path()),
            &env_of(&[(env::SERVICE_URL, "https://user:pw@svc")]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("must not carry credentials") && !err.contains("pw"),
            "{err}"
        );
    }

    #[test]
    fn loose_secret_mode_is_a_loud_warning_not_an_error() {
        let dir = contract_dir();
        write(dir.path(), files::PULL_SECRET, "file-token-abcdef", 0o644);
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(config.warnings.len(), 1);
        assert!(config.warnings[0].contains("0644"), "{:?}", config.warnings);
    }

    #[test]
    fn missing_secret_means_no_auth_with_a_warning() {
        let dir = contract_dir();
        fs::remove_file(dir.path().join(files::PULL_SECRET)).unwrap();
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert!(config.credentials.is_none());
        assert!(config.warnings[0].contains("no agent token"));
    }

    #[test]
    fn proxy_flags_beat_environment_beats_proxy_file() {
        let dir = contract_dir();
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert!(config.proxy.is_empty());

        write(
            dir.path(),
            files::PROXY,
            "# from the infra-env\nHTTP_PROXY=http://file-proxy:3128\n\
             HTTPS_PROXY=\"http://user:filepass@file-proxy:3128\"\nNO_PROXY=.file.example,10.0.0.0/8\n",
            0o600,
        );
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let url = |u: &str| Url::parse(u).unwrap();
        let via = |c: &Config, u: &str| c.proxy.proxy_for(&url(u)).map(ToString::to_string);
        assert_eq!(
            via(&config, "https://svc.example").as_deref(),
            Some("http://[REDACTED]@file-proxy:3128")
        );
        assert_eq!(via(&config, "https://10.1.1.1"), None);
        assert!(config.proxy.secrets().contains(&"filepass".to_owned()));
        assert!(!format!("{config:?}").contains("filepass"));

        // Lower-case environment names count; upper case wins over them.
        let env = env_of(&[
            ("https_proxy", "http://lower:1"),
            ("HTTPS_PROXY", "http://env-proxy:3128"),
            ("no_proxy", "svc.example"),
        ]);
        let config = Config::resolve(&args(dir.path()), &env).unwrap();
        assert_eq!(via(&config, "https://svc.example"), None);
        assert_eq!(
            via(&config, "https://other.example").as_deref(),
            Some("http://env-proxy:3128")
        );
        assert_eq!(
            via(&config, "http://other.example").as_deref(),
            Some("http://file-proxy:3128")
        );

        let mut run = args(dir.path());
        run.https_proxy = Some("http://flag-proxy:8080".into());
        run.no_proxy = Some("*".into());
        let config = Config::resolve(&run, &env).unwrap();
        assert_eq!(via(&config, "https://other.example"), None);
        run.no_proxy = Some(String::new());
        let config = Config::resolve(&run, &env).unwrap();
        assert_eq!(
            via(&config, "https://other.example").as_deref(),
            Some("http://flag-proxy:8080"),
            "an empty flag leaves NO_PROXY to the environment"
        );
    }

    #[test]
    fn bad_proxy_settings_are_named_without_their_secret() {
        let dir = contract_dir();
        write(
            dir.path(),
            files::PROXY,
            "HTTP_PROXY=https://u:hunter22@p:1\n",
            0o600,
        );
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("HTTP proxy") && err.contains("proxy.env"),
            "{err}"
        );
        assert!(!err.contains("hunter22"), "{err}");

        write(
            dir.path(),
            files::PROXY,
            "PROXY=http://u:hunter22@p:1\n",
            0o600,
        );
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown key \"PROXY\""), "{err}");
        write(dir.path(), files::PROXY, "http://u:hunter22@p:1\n", 0o600);
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("KEY=VALUE") && !err.contains("hunter22"),
            "{err}"
        );

        // A loose mode is a warning, a bad NO_PROXY entry too.
        write(
            dir.path(),
            files::PROXY,
            "HTTPS_PROXY=http://p:1\nNO_PROXY=good.example,bad entry\n",
            0o644,
        );
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
        assert!(config.warnings[0].contains("0644"));
        assert!(config.warnings[1].contains("\"bad entry\""));
    }

    #[test]
    fn upload_spread_precedence_units_and_limits() {
        let dir = contract_dir();
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(config.upload_spread, DEFAULT_UPLOAD_SPREAD);

        write(
            dir.path(),
            files::TUNABLES,
            "LOG_SEND_SPREAD_SECONDS=45\n",
            0o644,
        );
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(
            config.upload_spread,
            Duration::from_secs(45),
            "bare = seconds"
        );
        let env = env_of(&[(env::UPLOAD_SPREAD_SECONDS, "2m")]);
        let config = Config::resolve(&args(dir.path()), &env).unwrap();
        assert_eq!(
            config.upload_spread,
            Duration::from_secs(120),
            "env beats file"
        );
        let mut run = args(dir.path());
        run.upload_spread = Some(Duration::ZERO);
        let config = Config::resolve(&run, &env).unwrap();
        assert_eq!(
            config.upload_spread,
            Duration::ZERO,
            "flag beats env; 0 allowed"
        );

        let err = Config::resolve(
            &args(dir.path()),
            &env_of(&[(env::UPLOAD_SPREAD_SECONDS, "soon")]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("upload spread") && err.contains("LOG_SEND_SPREAD_SECONDS"),
            "{err}"
        );
        run.upload_spread = Some(Duration::from_secs(2 * 24 * 3600));
        let err = Config::resolve(&run, &env).unwrap_err().to_string();
        assert!(
            err.contains("--upload-spread") && err.contains("longer than a day"),
            "{err}"
        );
    }

    #[test]
    fn a_budget_or_interval_past_a_year_is_refused_naming_its_source() {
        let dir = contract_dir();
        write(
            dir.path(),
            files::TUNABLES,
            "SERVICE_TIMEOUT_MINUTES=300000000000000000\n",
            0o644,
        );
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid timeout") && err.contains("reporter.conf"),
            "{err}"
        );
        assert!(err.contains("longer than a year"), "{err}");
        let mut run = args(dir.path());
        run.upload_interval = Some(Duration::from_secs(400 * 24 * 3600));
        run.timeout = Some(Duration::from_secs(3600));
        let err = Config::resolve(&run, &env_of(&[])).unwrap_err().to_string();
        assert!(err.contains("--upload-interval"), "{err}");
    }

    #[test]
    fn minutes_or_durations() {
        assert_eq!(parse_minutes("10").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_minutes("2s").unwrap(), Duration::from_secs(2));
        assert!(parse_minutes("soon").is_err());
        assert!(parse_minutes(&u64::MAX.to_string()).is_err());
    }
}
