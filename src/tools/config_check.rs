//! `config check`: the configuration `run` would use on this host, resolved
//! as the agent resolves it but strictly (a `reporter.conf` line that means
//! nothing is an error here, a warning for the agent), printed setting by
//! setting with the layer each value came from. No secret is printed: the
//! token is named by its source only, proxy URLs without their credentials.

use std::fmt::Write as _;

use crate::config::settings::Key;
use crate::config::{self, Config, Flags};
use crate::redact::Redactor;
use crate::tools::inspect::printable;

pub(crate) fn config_check_command(flags: &Flags) -> anyhow::Result<()> {
    let checked = config::check(flags, &|name| std::env::var(name).ok())?;
    print!("{}", redacted_report(&checked));
    Ok(())
}

/// [`report`] through the redactor `run` would install for its logs, each
/// line's control characters escaped.
fn redacted_report(checked: &config::Checked) -> String {
    let config = &checked.config;
    let proxy_secrets = config.proxy.secrets();
    // The kubelet URL's password as written: the URL shape catches it in
    // the URL, this catches it anywhere else it is quoted.
    let kubelet_password = config.kubelet_healthz_url.password().unwrap_or_default();
    let redactor = Redactor::new(
        config
            .credentials
            .iter()
            .flat_map(|c| c.scrub.iter().map(|s| s.expose().as_bytes()))
            .chain(proxy_secrets.iter().map(String::as_bytes))
            .chain(
                [kubelet_password.as_bytes()]
                    .into_iter()
                    .filter(|p| !p.is_empty()),
            ),
    );
    let text = report(checked);
    let redacted = redactor.redact_str(&text);
    let mut out = String::with_capacity(redacted.len());
    for line in redacted.lines() {
        out.push_str(&printable(line));
        out.push('\n');
    }
    out
}

fn report(checked: &config::Checked) -> String {
    let config = &checked.config;
    let mut out = String::new();
    let width = checked
        .sources
        .iter()
        .map(|(s, _)| s.what.len())
        .max()
        .unwrap_or(0);
    for (setting, source) in &checked.sources {
        let _ = writeln!(
            out,
            "{:width$}  {}  ({source})",
            setting.what,
            shown(config, setting.key)
        );
    }
    let token = match &config.credentials {
        Some(c) => format!(
            "set (never shown); {} secret strings scrubbed from everything emitted",
            c.scrub.len()
        ),
        None => "none: requests carry no X-Secret-Key".to_owned(),
    };
    let _ = writeln!(out, "{:width$}  {token}", "agent token");
    let ca = config.ca_cert.as_ref().map_or_else(
        || "the system's roots".to_owned(),
        |p| p.display().to_string(),
    );
    let _ = writeln!(out, "{:width$}  {ca}", "CA bundle");
    for warning in &config.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    out
}

/// A setting's resolved value as `run` will use it.
fn shown(config: &Config, key: Key) -> String {
    let none = || "(none)".to_owned();
    let duration = |d| humantime::format_duration(d).to_string();
    match key {
        Key::ServiceUrl => config.service_url.to_string(),
        Key::InfraEnvId => config.infra_env_id.map_or_else(none, |id| id.to_string()),
        Key::HostId => config.host_id.to_string(),
        Key::ClusterId => config.cluster_id.map_or_else(none, |id| id.to_string()),
        Key::UploadInterval => duration(config.upload_interval),
        Key::Timeout => duration(config.timeout),
        Key::UploadSpread => duration(config.upload_spread),
        Key::KubeletHealthzUrl => config.kubelet_healthz_url.to_string(),
        Key::LogsType => config.logs_type.clone(),
        Key::CommandTimeout => duration(config.command_timeout),
        Key::RetryInitialDelay => duration(config.retry.initial_delay),
        Key::RetryMaxDelay => duration(config.retry.max_delay),
        Key::RetryAttempts => config.retry.attempts.to_string(),
        Key::RequestTimeout => duration(config.request_timeout),
        Key::HttpProxy => config
            .proxy
            .http
            .as_ref()
            .map_or_else(none, ToString::to_string),
        Key::HttpsProxy => config
            .proxy
            .https
            .as_ref()
            .map_or_else(none, ToString::to_string),
        Key::NoProxy => format!("{}", config.proxy.no_proxy),
    }
}
