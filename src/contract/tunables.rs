//! `reporter.conf`: optional settings with the same names as the upstream
//! unit's environment, `KEY=VALUE` per line, so a unit's `EnvironmentFile=`
//! and this file are interchangeable. Unknown keys are errors; the token
//! never belongs here.

use serde::Deserialize;

use super::layout::{env, files};

/// Tunables file: the same names as the environment, `KEY=VALUE` per line, so a
/// unit's `EnvironmentFile=` and this file are interchangeable.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tunables {
    #[serde(rename = "ASSISTED_SERVICE_URL")]
    pub service_url: Option<String>,
    #[serde(rename = "CLUSTER_ID")]
    pub cluster_id: Option<String>,
    #[serde(rename = "HOST_ID")]
    pub host_id: Option<String>,
    #[serde(rename = "INFRA_ENV_ID")]
    pub infra_env_id: Option<String>,
    #[serde(rename = "LOG_SEND_FREQUENCY_IN_MINUTES")]
    pub upload_minutes: Option<String>,
    #[serde(rename = "SERVICE_TIMEOUT_MINUTES")]
    pub timeout_minutes: Option<String>,
    #[serde(rename = "LOG_SEND_SPREAD_SECONDS")]
    pub upload_spread_seconds: Option<String>,
}

/// Checks a `reporter.conf` text as the reporter would read it (the fuzz
/// target's way in).
pub fn check_tunables(text: &str) -> Result<(), String> {
    parse(text).map(drop)
}

pub fn parse(text: &str) -> Result<Tunables, String> {
    let mut map = serde_json::Map::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {}: expected KEY=VALUE", number + 1))?;
        let value = value.trim().trim_matches('"');
        if key.trim() == env::TOKEN {
            return Err(format!(
                "line {}: {} does not belong here; put the secret in the 0600 file {}",
                number + 1,
                env::TOKEN,
                files::PULL_SECRET
            ));
        }
        map.insert(
            key.trim().to_owned(),
            serde_json::Value::String(value.to_owned()),
        );
    }
    serde_json::from_value(serde_json::Value::Object(map)).map_err(|err| err.to_string())
}
