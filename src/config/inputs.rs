//! The raw inputs of the configuration: the values the command line gave, as
//! plain data (`cli` fills [`Flags`] from its arguments, so nothing below it
//! knows clap), and the provenance every value carries into error messages.

use std::path::PathBuf;
use std::time::Duration;

/// What the command line of `run` set; `None` = not given there. Help texts
/// and value syntax are `cli`'s.
#[derive(Debug, Default, Clone)]
pub struct Flags {
    pub config_dir: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub root: Option<PathBuf>,
    pub service_url: Option<String>,
    pub pull_secret_file: Option<PathBuf>,
    pub infra_env_id: Option<String>,
    pub host_id: Option<String>,
    pub cluster_id: Option<String>,
    pub upload_interval: Option<Duration>,
    pub timeout: Option<Duration>,
    pub upload_spread: Option<Duration>,
    pub cacert: Option<PathBuf>,
    pub insecure: bool,
    pub kubelet_healthz_url: Option<String>,
    pub logs_type: Option<String>,
    pub command_timeout: Option<Duration>,
    pub retry_initial_delay: Option<Duration>,
    pub retry_max_delay: Option<Duration>,
    pub retry_attempts: Option<u32>,
    pub request_timeout: Option<Duration>,
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
}

/// A value and where it came from (a flag, a variable, a file's path).
pub(super) struct Found {
    pub value: String,
    pub from: String,
}

pub(super) fn found(value: &str, from: &str) -> Found {
    Found {
        value: value.trim().to_owned(),
        from: from.to_owned(),
    }
}

/// The first place that set a non-empty value, in precedence order.
pub(super) fn first_of(
    a: Option<Found>,
    b: Option<Found>,
    c: Option<Found>,
    d: Option<Found>,
) -> Option<Found> {
    a.or(b).or(c).or(d).filter(|f| !f.value.is_empty())
}
