//! The slice of assisted-service's data model the reporter reads and writes.
//!
//! Deserialization is lenient about fields we do not use (the real `host` has
//! dozens and grows), strict about the ones we rely on.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Deserialize)]
pub struct Host {
    pub id: Uuid,
    #[serde(default)]
    pub(crate) infra_env_id: Option<Uuid>,
    #[serde(default)]
    pub(crate) cluster_id: Option<Uuid>,
    #[serde(default)]
    pub(crate) status: String,
    #[serde(default)]
    pub(crate) bootstrap: bool,
    /// `Host` or `AddToExistingClusterHost` (day 2).
    #[serde(default)]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) progress: Option<HostProgressInfo>,
    /// The role's stage list as the service sees it; authoritative for ordering
    /// when it lists both stages being compared.
    #[serde(default)]
    pub(crate) progress_stages: Option<Vec<String>>,
}

impl Host {
    pub fn current_stage(&self) -> Option<&str> {
        self.progress
            .as_ref()
            .and_then(|p| p.current_stage.as_deref())
            .filter(|s| !s.is_empty())
    }

    pub fn progress_info(&self) -> Option<&str> {
        self.progress
            .as_ref()
            .and_then(|p| p.progress_info.as_deref())
    }

    /// Whether this host bootstraps a single-node cluster, as far as its
    /// own record tells: `Some(false)` when it is no bootstrap host;
    /// `Some(true)` when its stage list is `SnoStages` (upstream's
    /// `FindMatchingStages`: waits for bootkube, never for a control plane).
    /// Otherwise `None`, only the cluster can tell: today's upstream lists a
    /// single node's bootstrap host with `BootstrapStages` in the
    /// infra-env's host list, and the cluster's list sends no stage list.
    pub(crate) fn single_node_bootstrap(&self) -> Option<bool> {
        if !self.bootstrap {
            return Some(false);
        }
        let stages = self.progress_stages.as_ref()?;
        let has = |stage: &str| stages.iter().any(|s| s == stage);
        (has(WAITING_FOR_BOOTKUBE) && !has(WAITING_FOR_CONTROL_PLANE)).then_some(true)
    }
}

const WAITING_FOR_BOOTKUBE: &str = "Waiting for bootkube";
const WAITING_FOR_CONTROL_PLANE: &str = "Waiting for control plane";

/// The part of `GET /v2/clusters/{cluster_id}` (agent auth upstream) the
/// reporter reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Cluster {
    /// `Full`, or `None` for a single node (deprecated upstream in favour
    /// of `control_plane_count`, still sent).
    #[serde(default)]
    pub(crate) high_availability_mode: Option<String>,
    #[serde(default)]
    pub(crate) control_plane_count: Option<i64>,
}

impl Cluster {
    /// Whether the cluster is a single node; `None` when it does not say.
    pub(crate) fn single_node(&self) -> Option<bool> {
        match (
            self.control_plane_count,
            self.high_availability_mode.as_deref(),
        ) {
            (Some(count), _) if count > 0 => Some(count == 1),
            (_, Some("None")) => Some(true),
            (_, Some("Full")) => Some(false),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct HostProgressInfo {
    #[serde(default)]
    pub(crate) current_stage: Option<String>,
    #[serde(default)]
    pub(crate) progress_info: Option<String>,
}

/// Body of `PUT .../progress` (`host-progress` in the API definition).
#[derive(Debug, Clone, Serialize)]
pub struct HostProgress<'a> {
    pub(crate) current_stage: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) progress_info: Option<&'a str>,
}

/// The service's two error shapes: `error` (`reason`) and `infra_error` /
/// validation failures (`message`).
#[derive(Debug, Deserialize)]
pub struct ErrorBody {
    #[serde(default)]
    pub(crate) reason: Option<String>,
    #[serde(default)]
    pub(crate) message: Option<String>,
}

impl ErrorBody {
    pub(crate) fn text(&self) -> Option<&str> {
        self.reason.as_deref().or(self.message.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_with_extra_and_null_fields_parses() {
        let json = r#"{"id":"2c7d4e0a-8f9b-4d4e-9a55-0f1e2d3c4b5a","kind":"Host","href":"/x",
            "cluster_id":null,"status":"installing-in-progress","role":"master","bootstrap":true,
            "inventory":"{}","progress":{"current_stage":"Rebooting","installation_percentage":60,
            "stage_started_at":"2026-11-22T10:00:00.000Z"},"progress_stages":["Rebooting","Configuring"]}"#;
        let host: Host = serde_json::from_str(json).unwrap();
        assert_eq!(host.current_stage(), Some("Rebooting"));
        assert!(host.cluster_id.is_none());
        assert!(host.bootstrap);
        assert_eq!(host.progress_stages.unwrap().len(), 2);
    }

    #[test]
    fn empty_stage_counts_as_none() {
        let host: Host = serde_json::from_str(
            r#"{"id":"2c7d4e0a-8f9b-4d4e-9a55-0f1e2d3c4b5a","progress":{"current_stage":""}}"#,
        )
        .unwrap();
        assert_eq!(host.current_stage(), None);
    }

    #[test]
    fn both_error_shapes_yield_text() {
        let a: ErrorBody = serde_json::from_str(
            r#"{"code":"409","href":"","id":409,"kind":"Error","reason":"nope"}"#,
        )
        .unwrap();
        let b: ErrorBody =
            serde_json::from_str(r#"{"code":401,"message":"unauthorized"}"#).unwrap();
        assert_eq!(a.text(), Some("nope"));
        assert_eq!(b.text(), Some("unauthorized"));
    }
}
