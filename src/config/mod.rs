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
pub(crate) mod settings;

use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;
use uuid::Uuid;

use crate::bounded_read::{Kind, ReadError};
use crate::contract::{
    self, env, files, parse_credentials, ContractError, Credentials, ProxyEnv, Tunables,
};
use crate::proxy::{NoProxy, ProxySettings, ProxyUrl};
use crate::retry::RetryPolicy;
use crate::rootfs::under_root;

pub use inputs::Flags;
use inputs::{found, Found};
pub(crate) use settings::{service_url, DEFAULT_KUBELET_HEALTHZ_URL, MAX_DURATION};
use settings::{setting, Key, Setting, MAX_SPREAD, SETTINGS};

pub(crate) const DEFAULT_STATE_DIR: &str = "/var/lib/assisted-boot-reporter";
/// Where hosts installed with a private service CA already have it.
pub(crate) const SERVICE_CA_PATH: &str = "/etc/assisted-service/service-ca-cert.crt";
#[cfg(test)]
pub(crate) const DEFAULT_UPLOAD_INTERVAL: Duration = Duration::from_secs(10 * 60);
#[cfg(test)]
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// Bound of the per-host delay of the first and the final bundle
/// (`agent::spread::HerdSpread`; docs/design.md "No herd" says why a minute).
#[cfg(test)]
pub(crate) const DEFAULT_UPLOAD_SPREAD: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Every required value that no layer sets, in one message: a host
    /// missing its whole contract hears it once, not one value a start.
    #[error("missing configuration: {} (looked in {})", .what.join(", "), .looked_in.join(", "))]
    Missing {
        what: Vec<&'static str>,
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
pub(crate) struct Paths {
    /// Sysroot prefix of every host path.
    pub(crate) root: PathBuf,
    pub(crate) config_dir: PathBuf,
    pub(crate) state_dir: PathBuf,
}

impl Paths {
    pub(crate) fn resolve(flags: &Flags) -> Self {
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
    pub(crate) root: PathBuf,
    pub config_dir: PathBuf,
    pub(crate) state_dir: PathBuf,
    pub(crate) service_url: Url,
    /// None only where the service runs without authentication (on-premise).
    pub(crate) credentials: Option<Credentials>,
    /// None when only the cluster is known (the upstream unit's environment
    /// carries no INFRA_ENV_ID): the agent learns it from the cluster's host
    /// list. At least one of the two is always set.
    pub(crate) infra_env_id: Option<Uuid>,
    pub(crate) host_id: Uuid,
    pub(crate) cluster_id: Option<Uuid>,
    pub(crate) upload_interval: Duration,
    pub(crate) timeout: Duration,
    /// Bound of the per-host delay of the first and the final bundle; zero
    /// sends them at once.
    pub(crate) upload_spread: Duration,
    pub(crate) ca_cert: Option<PathBuf>,
    pub(crate) insecure: bool,
    pub(crate) kubelet_healthz_url: Url,
    pub(crate) logs_type: String,
    pub(crate) command_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) retry: RetryPolicy,
    /// Forward proxy of the service client (`proxy.env`, HTTP(S)_PROXY, NO_PROXY).
    pub proxy: ProxySettings,
    /// Warnings found while resolving (loose file modes...), logged by the caller
    /// once tracing is set up.
    pub warnings: Vec<String>,
}

impl Config {
    /// Resolves the configuration. `getenv` is the process environment in
    /// production and a map in tests. `reporter.conf` lines that mean
    /// nothing are warnings (the agent must not stop reporting over a typo);
    /// [`check`] makes them errors.
    pub fn resolve(
        args: &Flags,
        getenv: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let paths = Paths::resolve(args);
        let dir = contract::Dir::new(&paths.config_dir);
        let mut warnings = Vec::new();
        let tunables = dir.tunables()?;
        let conf = dir.display(files::TUNABLES);
        for problem in tunables_problems(&tunables) {
            warnings.push(format!("{conf}: {problem}; ignored"));
        }
        let proxy_file = dir.proxy_env(&mut warnings)?;
        let layers = Layers {
            flags: args,
            getenv,
            dir: &dir,
            tunables: &tunables,
            proxy_file: &proxy_file,
        };
        Self::from_layers(&paths, &layers, warnings)
    }

    fn from_layers(
        paths: &Paths,
        layers: &Layers<'_>,
        mut warnings: Vec<String>,
    ) -> Result<Config, ConfigError> {
        let Paths {
            root,
            config_dir,
            state_dir,
        } = paths.clone();
        let service_url = layers.parsed(Key::ServiceUrl, service_url)?.map(|v| v.0);
        let infra_env_id = layers.parsed(Key::InfraEnvId, parse_uuid)?.map(|v| v.0);
        let host_id = layers.parsed(Key::HostId, parse_uuid)?.map(|v| v.0);
        let cluster_id = layers.parsed(Key::ClusterId, parse_uuid)?.map(|v| v.0);
        // Every required value no layer sets, named together.
        let missing: Vec<(&'static str, &[Key])> = [
            (
                service_url.is_none(),
                setting(Key::ServiceUrl).what,
                &[Key::ServiceUrl][..],
            ),
            (
                host_id.is_none(),
                setting(Key::HostId).what,
                &[Key::HostId][..],
            ),
            // The host list of the cluster names the infra-env (agent
            // auth), so either ID finds the host.
            (
                infra_env_id.is_none() && cluster_id.is_none(),
                "infra-env ID (or a cluster ID to learn it from)",
                &[Key::InfraEnvId, Key::ClusterId][..],
            ),
        ]
        .into_iter()
        .filter(|(absent, ..)| *absent)
        .map(|(_, what, keys)| (what, keys))
        .collect();
        let (Some(service_url), Some(host_id), true) = (service_url, host_id, missing.is_empty())
        else {
            return Err(layers.missing(&missing));
        };

        let credentials =
            resolve_credentials(layers.flags, layers.getenv, layers.dir, &mut warnings)?;
        let proxy = layers.proxy(&mut warnings)?;

        // A duration in its setting's own syntax, bounded.
        let within = |key: Key, max: Duration, words: &'static str| {
            move |value: &str| {
                let parsed = setting(key).parse_duration(value)?;
                if parsed > max {
                    return Err(format!(
                        "{} is longer than {words}",
                        humantime::format_duration(parsed)
                    ));
                }
                Ok(parsed)
            }
        };
        let upload_interval = layers.required(
            Key::UploadInterval,
            within(Key::UploadInterval, MAX_DURATION, "a year"),
        )?;
        let timeout =
            layers.required(Key::Timeout, within(Key::Timeout, MAX_DURATION, "a year"))?;
        for (key, value) in [
            (Key::UploadInterval, upload_interval),
            (Key::Timeout, timeout),
        ] {
            if value.is_zero() {
                return Err(ConfigError::Invalid {
                    what: setting(key).what,
                    source_name: layers.source_of(key),
                    reason: "must be greater than zero".into(),
                });
            }
        }
        let upload_spread = layers.required(
            Key::UploadSpread,
            within(Key::UploadSpread, MAX_SPREAD, "a day"),
        )?;

        let ca_cert = match &layers.flags.cacert {
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

        let kubelet_healthz_url = layers.required(Key::KubeletHealthzUrl, |v| {
            Url::parse(v).map_err(|err| err.to_string())
        })?;
        let logs_type = layers.required(Key::LogsType, |v| {
            settings::check_identifier(v).map(|()| v.to_owned())
        })?;
        let retry = RetryPolicy {
            attempts: layers.required(Key::RetryAttempts, settings::parse_count)?,
            initial_delay: layers.required(Key::RetryInitialDelay, settings::parse_duration)?,
            max_delay: layers.required(Key::RetryMaxDelay, settings::parse_duration)?,
        };

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
            insecure: layers.flags.insecure,
            kubelet_healthz_url,
            logs_type,
            command_timeout: layers.required(Key::CommandTimeout, settings::parse_duration)?,
            request_timeout: layers.required(Key::RequestTimeout, settings::parse_duration)?,
            retry,
            proxy,
            warnings,
        })
    }

    /// A host path under the configured sysroot.
    pub(crate) fn host_path(&self, absolute: &str) -> PathBuf {
        under_root(&self.root, absolute)
    }
}

/// Each setting as resolved, with where its value came from: what
/// `config check` prints.
pub(crate) struct Checked {
    pub(crate) config: Config,
    pub(crate) sources: Vec<(&'static Setting, String)>,
}

/// Resolves as the agent would, but strictly: a `reporter.conf` line that
/// means nothing is an error, not a warning.
pub(crate) fn check(
    args: &Flags,
    getenv: &dyn Fn(&str) -> Option<String>,
) -> Result<Checked, ConfigError> {
    let paths = Paths::resolve(args);
    let dir = contract::Dir::new(&paths.config_dir);
    let tunables = dir.tunables()?;
    if let Some(problem) = tunables_problems(&tunables).into_iter().next() {
        return Err(ConfigError::Invalid {
            what: "tunables file",
            source_name: dir.display(files::TUNABLES),
            reason: problem,
        });
    }
    let mut warnings = Vec::new();
    let proxy_file = dir.proxy_env(&mut warnings)?;
    let layers = Layers {
        flags: args,
        getenv,
        dir: &dir,
        tunables: &tunables,
        proxy_file: &proxy_file,
    };
    let config = Config::from_layers(&paths, &layers, warnings)?;
    let sources = SETTINGS
        .iter()
        .map(|s| (s, layers.source_of(s.key)))
        .collect();
    Ok(Checked { config, sources })
}

/// What in `reporter.conf` means nothing: lines that are no `KEY=VALUE`,
/// and keys no setting has.
fn tunables_problems(tunables: &Tunables) -> Vec<String> {
    let mut problems = tunables.problems.clone();
    for entry in &tunables.entries {
        if settings::by_env_name(&entry.key).is_none() {
            problems.push(format!(
                "line {}: unknown key {:?} (known: {})",
                entry.line,
                entry.key,
                SETTINGS
                    .iter()
                    .map(|s| s.env[0])
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    problems
}

/// The layers every setting is looked up in, in precedence order: flag,
/// environment, contract file, `reporter.conf`; then the default.
struct Layers<'a> {
    flags: &'a Flags,
    getenv: &'a dyn Fn(&str) -> Option<String>,
    dir: &'a contract::Dir,
    tunables: &'a Tunables,
    proxy_file: &'a ProxyEnv,
}

impl Layers<'_> {
    /// The first layer that sets `key` to something (an empty value sets
    /// nothing, in every layer), and its name.
    fn find(&self, key: Key) -> Result<Option<Found>, ConfigError> {
        let s = setting(key);
        let set = |v: &str| !v.trim().is_empty();
        if let Some(v) = self.flags.settings.get(&key).filter(|v| set(v)) {
            return Ok(Some(found(v, &format!("--{}", s.flag))));
        }
        for name in s.env {
            if let Some(v) = (self.getenv)(name).filter(|v| set(v)) {
                return Ok(Some(found(&v, name)));
            }
        }
        match s.file {
            Some(files::PROXY) => {
                let value = match key {
                    Key::HttpProxy => &self.proxy_file.http,
                    Key::HttpsProxy => &self.proxy_file.https,
                    _ => &self.proxy_file.no_proxy,
                };
                if let Some(v) = value.as_deref().filter(|v| set(v)) {
                    return Ok(Some(found(v, &self.dir.display(files::PROXY))));
                }
            }
            Some(file) => {
                if let Some(v) = self.dir.read(file)? {
                    return Ok(Some(found(&v, &self.dir.display(file))));
                }
            }
            None => {}
        }
        for name in s.env {
            if let Some(entry) = self.tunables.get(name).filter(|e| set(&e.value)) {
                return Ok(Some(found(
                    &entry.value,
                    &format!("{} line {}", self.dir.display(files::TUNABLES), entry.line),
                )));
            }
        }
        Ok(None)
    }

    /// `key`'s value parsed, with its source; `None` when no layer sets it
    /// and it has no default.
    fn parsed<T>(
        &self,
        key: Key,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<(T, String)>, ConfigError> {
        let s = setting(key);
        let Some(found) = self.find(key)?.or_else(|| {
            s.default.map(|d| Found {
                value: d.to_owned(),
                from: "the default".to_owned(),
            })
        }) else {
            return Ok(None);
        };
        parse(&found.value)
            .map(|value| Some((value, found.from.clone())))
            .map_err(|reason| ConfigError::Invalid {
                what: s.what,
                source_name: found.from,
                reason,
            })
    }

    /// A setting with a default.
    fn required<T>(
        &self,
        key: Key,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        Ok(self
            .parsed(key, parse)?
            .expect("a setting with a default")
            .0)
    }

    /// Where `key`'s value comes from, for messages.
    fn source_of(&self, key: Key) -> String {
        match self.find(key) {
            Ok(Some(found)) => found.from,
            Ok(None) if setting(key).default.is_some() => "the default".into(),
            Ok(None) => "nowhere".into(),
            Err(err) => err.to_string(),
        }
    }

    /// Every place `keys` were looked for.
    fn looked_in<'k>(&self, keys: impl IntoIterator<Item = &'k Key>) -> Vec<String> {
        let mut places = Vec::new();
        for &key in keys {
            let s = setting(key);
            places.push(format!("--{}", s.flag));
            places.extend(s.env.iter().map(|n| (*n).to_owned()));
            if let Some(file) = s.file {
                places.push(self.dir.display(file));
            }
        }
        places.push(self.dir.display(files::TUNABLES));
        places
    }

    /// The values no layer sets, each with the keys that would set it.
    fn missing(&self, values: &[(&'static str, &[Key])]) -> ConfigError {
        ConfigError::Missing {
            what: values.iter().map(|(what, _)| *what).collect(),
            looked_in: self.looked_in(values.iter().flat_map(|(_, keys)| keys.iter())),
        }
    }

    /// The proxy settings. A NO_PROXY entry of no known shape is skipped
    /// with a warning, as Go skips it; a proxy URL that cannot be used is an
    /// error that names its source but never quotes it (it may hold a
    /// password).
    fn proxy(&self, warnings: &mut Vec<String>) -> Result<ProxySettings, ConfigError> {
        let http = self
            .parsed(Key::HttpProxy, |v| ProxyUrl::parse(v, false))?
            .map(|v| v.0);
        let https = self
            .parsed(Key::HttpsProxy, |v| ProxyUrl::parse(v, true))?
            .map(|v| v.0);
        let no_proxy = match self.find(Key::NoProxy)? {
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
}

fn parse_uuid(value: &str) -> Result<Uuid, String> {
    Uuid::parse_str(value).map_err(|err| format!("{:?} is not a UUID: {err}", truncate(value, 64)))
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
                    what: vec!["pull secret"],
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
        run.set(
            Key::ServiceUrl,
            "https://flag.example/api/assisted-install/",
        );
        run.set(Key::UploadInterval, "7s");
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
    fn tunables_file_sits_below_environment_and_a_typo_warns_the_agent_and_fails_check() {
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

        // Every setting has a reporter.conf key, not only the upstream ones.
        write(
            dir.path(),
            files::TUNABLES,
            "REPORTER_LOGS_TYPE=node_boot\nREPORTER_RETRY_ATTEMPTS=2\n",
            0o644,
        );
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(config.logs_type, "node_boot");
        assert_eq!(config.retry.attempts, 2);
        let mut run = args(dir.path());
        run.set(Key::LogsType, "flag_type");
        let checked = check(&run, &env_of(&[])).unwrap();
        let source = |key| {
            checked
                .sources
                .iter()
                .find(|(s, _)| s.key == key)
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(source(Key::LogsType), "--logs-type");
        assert!(source(Key::RetryAttempts).ends_with("reporter.conf line 2"));
        assert_eq!(source(Key::Timeout), "the default");
        assert!(source(Key::HostId).ends_with("host-id"));

        // A typo: the agent warns and goes on; `config check` refuses.
        write(
            dir.path(),
            files::TUNABLES,
            "LOG_SEND_FREQUENCY=5\nnot a line\n",
            0o644,
        );
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(config.upload_interval, DEFAULT_UPLOAD_INTERVAL);
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
        assert!(
            config.warnings[0].contains("line 2: expected KEY=VALUE"),
            "{:?}",
            config.warnings
        );
        assert!(
            config.warnings[1].contains("line 1: unknown key \"LOG_SEND_FREQUENCY\""),
            "{:?}",
            config.warnings
        );
        let err = check(&args(dir.path()), &env_of(&[]))
            .err()
            .expect("check refuses a typo")
            .to_string();
        assert!(
            err.contains("reporter.conf") && err.contains("line 2"),
            "{err}"
        );

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
    fn an_empty_contract_names_every_missing_value_in_one_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = Config::resolve(&args(dir.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "missing configuration: assisted-service URL, host ID, \
                 infra-env ID (or a cluster ID to learn it from) (looked in "
            ),
            "{err}"
        );
        for place in ["service-url", "host-id", "infra-env-id", "cluster-id"] {
            let path = dir.path().join(place).display().to_string();
            assert_eq!(err.matches(&path).count(), 1, "{place}: {err}");
        }
        assert_eq!(err.lines().count(), 1, "{err}");
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
        run.set(Key::HttpsProxy, "http://flag-proxy:8080");
        run.set(Key::NoProxy, "*");
        let config = Config::resolve(&run, &env).unwrap();
        assert_eq!(via(&config, "https://other.example"), None);
        run.set(Key::NoProxy, "");
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
        run.set(Key::UploadSpread, "0");
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
        run.set(Key::UploadSpread, "2days");
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
        run.set(Key::UploadInterval, "400days");
        run.set(Key::Timeout, "1h");
        let err = Config::resolve(&run, &env_of(&[])).unwrap_err().to_string();
        assert!(err.contains("--upload-interval"), "{err}");
    }

    #[test]
    fn the_tables_defaults_are_the_documented_constants() {
        let dir = contract_dir();
        let config = Config::resolve(&args(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(config.upload_interval, DEFAULT_UPLOAD_INTERVAL);
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
        assert_eq!(config.upload_spread, DEFAULT_UPLOAD_SPREAD);
        assert_eq!(
            config.kubelet_healthz_url.as_str(),
            DEFAULT_KUBELET_HEALTHZ_URL
        );
        assert_eq!(config.retry, RetryPolicy::default());
    }

    #[test]
    fn an_empty_flag_or_variable_sets_nothing() {
        let dir = contract_dir();
        let mut run = args(dir.path());
        run.set(Key::HostId, " ");
        let config = Config::resolve(
            &run,
            &env_of(&[(env::HOST_ID, ""), (env::TIMEOUT_MINUTES, "")]),
        )
        .unwrap();
        assert_eq!(config.host_id.to_string(), HOST);
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn minutes_or_durations() {
        use settings::parse_minutes;
        assert_eq!(parse_minutes("10").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_minutes("2s").unwrap(), Duration::from_secs(2));
        assert!(parse_minutes("soon").is_err());
        assert!(parse_minutes(&u64::MAX.to_string()).is_err());
    }
}
