//! The service's in-memory world: clusters, infra-envs, hosts, their install
//! progress, and the stage rules of assisted-service (with or without this
//! project's enhancement). Everything here is synchronous and free of HTTP so
//! the rules can be unit-tested on their own.

use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::store::BundleMeta;

/// Base path of the public API; hrefs in host objects are built from it.
pub const API_BASE: &str = "/api/assisted-install";

/// Which flavour of assisted-service the mock imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// assisted-service with the boot-reporter enhancement implemented.
    Enhanced,
    /// Today's upstream: no boot stages, no `host_boot` logs type.
    Upstream,
}

impl Mode {
    pub fn from_upstream_compat(upstream_compat: bool) -> Self {
        if upstream_compat {
            Mode::Upstream
        } else {
            Mode::Enhanced
        }
    }
}

/// A host installation stage (`host-stage` in the swagger).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    StartingInstallation,
    WaitingForControlPlane,
    WaitingForBootkube,
    WaitingForController,
    Installing,
    WritingImageToDisk,
    CopyingRegistryDataToDisk,
    Rebooting,
    BootedWithLocalIgnition,
    WaitingForIgnition,
    Configuring,
    BootedWithControlPlaneIgnition,
    Joined,
    Done,
    Failed,
}

/// Enum order as in the swagger `host-stage` definition, which is also the
/// order go-swagger prints in its "should be one of" messages. The new
/// stages sit next to their neighbours in the role lists.
const ALL_STAGES: [Stage; 15] = [
    Stage::StartingInstallation,
    Stage::WaitingForControlPlane,
    Stage::WaitingForBootkube,
    Stage::WaitingForController,
    Stage::Installing,
    Stage::WritingImageToDisk,
    Stage::CopyingRegistryDataToDisk,
    Stage::Rebooting,
    Stage::BootedWithLocalIgnition,
    Stage::WaitingForIgnition,
    Stage::Configuring,
    Stage::BootedWithControlPlaneIgnition,
    Stage::Joined,
    Stage::Done,
    Stage::Failed,
];

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::StartingInstallation => "Starting installation",
            Stage::WaitingForControlPlane => "Waiting for control plane",
            Stage::WaitingForBootkube => "Waiting for bootkube",
            Stage::WaitingForController => "Waiting for controller",
            Stage::Installing => "Installing",
            Stage::WritingImageToDisk => "Writing image to disk",
            Stage::CopyingRegistryDataToDisk => "Copying registry data to disk",
            Stage::Rebooting => "Rebooting",
            Stage::BootedWithLocalIgnition => "Booted with local ignition",
            Stage::WaitingForIgnition => "Waiting for ignition",
            Stage::Configuring => "Configuring",
            Stage::BootedWithControlPlaneIgnition => "Booted with control plane ignition",
            Stage::Joined => "Joined",
            Stage::Done => "Done",
            Stage::Failed => "Failed",
        }
    }

    /// True for the two stages this project adds.
    pub fn is_enhancement(self) -> bool {
        matches!(
            self,
            Stage::BootedWithLocalIgnition | Stage::BootedWithControlPlaneIgnition
        )
    }

    /// The stage enum as the given mode's API defines it.
    pub fn all(mode: Mode) -> Vec<Stage> {
        ALL_STAGES
            .iter()
            .copied()
            .filter(|s| mode == Mode::Enhanced || !s.is_enhancement())
            .collect()
    }

    /// Parses a stage name; a stage the mode's API does not know is `None`,
    /// exactly like an unknown string.
    pub fn parse(s: &str, mode: Mode) -> Option<Stage> {
        Stage::all(mode).into_iter().find(|st| st.as_str() == s)
    }

    /// The go-swagger enum validation message for a body field.
    pub fn enum_message(mode: Mode) -> String {
        let names: Vec<&str> = Stage::all(mode).iter().map(|s| s.as_str()).collect();
        format!(
            "current_stage in body should be one of [{}]",
            names.join(" ")
        )
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `host-role` values a seeded host may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Master,
    Arbiter,
    Worker,
    AutoAssign,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Arbiter => "arbiter",
            Role::Worker => "worker",
            Role::AutoAssign => "auto-assign",
        }
    }
}

/// The stage list a host walks through. Mirrors upstream `FindMatchingStages`:
/// bootstrap hosts get their own lists, and a role not yet decided
/// (`auto-assign`) has no stages at all.
pub fn stages_for(role: Role, bootstrap: bool, single_node: bool, mode: Mode) -> Vec<Stage> {
    use Stage::{
        BootedWithControlPlaneIgnition as CpIgn, BootedWithLocalIgnition as LocalIgn, Configuring,
        CopyingRegistryDataToDisk as Registry, Done, Installing, Joined, Rebooting,
        StartingInstallation as Start, WaitingForBootkube as Bootkube,
        WaitingForControlPlane as ControlPlane, WaitingForController as Controller,
        WaitingForIgnition as Ignition, WritingImageToDisk as Writing,
    };
    let list: &[Stage] = if single_node {
        &[
            Start, Installing, Bootkube, Writing, Registry, Rebooting, LocalIgn, CpIgn, Joined,
            Done,
        ]
    } else if bootstrap {
        &[
            Start,
            Installing,
            Writing,
            Registry,
            ControlPlane,
            Bootkube,
            Controller,
            Rebooting,
            LocalIgn,
            Configuring,
            CpIgn,
            Joined,
            Done,
        ]
    } else {
        match role {
            Role::Master | Role::Arbiter => &[
                Start,
                Installing,
                Writing,
                Registry,
                Rebooting,
                LocalIgn,
                Configuring,
                CpIgn,
                Joined,
                Done,
            ],
            Role::Worker => &[
                Start,
                Installing,
                Writing,
                ControlPlane,
                Rebooting,
                LocalIgn,
                Ignition,
                Configuring,
                CpIgn,
                Joined,
                Done,
            ],
            Role::AutoAssign => &[],
        }
    };
    list.iter()
        .copied()
        .filter(|s| mode == Mode::Enhanced || !s.is_enhancement())
        .collect()
}

/// Logs types accepted on upload, in the order the validation message lists them.
pub fn logs_types(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::Enhanced => &["host", "controller", "host_boot"],
        Mode::Upstream => &["host", "controller"],
    }
}

pub fn logs_type_message(mode: Mode) -> String {
    format!(
        "logs_type in query should be one of [{}]",
        logs_types(mode).join(" ")
    )
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub id: Uuid,
    pub name: String,
    #[serde(default)]
    pub openshift_version: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct InfraEnv {
    pub id: Uuid,
    #[serde(default)]
    pub cluster_id: Option<Uuid>,
    #[serde(default)]
    pub name: String,
}

/// One accepted progress change, kept so tests and the page can see the
/// whole sequence rather than only the latest stage.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryEntry {
    pub stage: &'static str,
    pub progress_info: String,
    #[serde(serialize_with = "ser_time")]
    pub at: SystemTime,
}

#[derive(Clone, Debug)]
pub struct Host {
    pub id: Uuid,
    pub infra_env_id: Uuid,
    pub cluster_id: Option<Uuid>,
    pub requested_hostname: String,
    pub role: Role,
    pub bootstrap: bool,
    pub single_node: bool,
    pub status: String,
    pub status_info: String,
    pub current_stage: Option<Stage>,
    pub progress_info: String,
    pub stage_started_at: Option<SystemTime>,
    pub stage_updated_at: Option<SystemTime>,
    pub created_at: SystemTime,
    pub updated_at: SystemTime,
    pub history: Vec<HistoryEntry>,
}

/// Statuses in which the real service lets a host change stage.
const STAGE_CHANGE_STATUSES: [&str; 3] = [
    "installing",
    "installing-in-progress",
    "installing-pending-user-action",
];

/// Why a progress update was refused; maps onto HTTP statuses in `api`.
#[derive(Debug, PartialEq, Eq)]
pub enum ProgressError {
    Conflict(String),
}

/// What an accepted update did, for logging.
#[derive(Debug, PartialEq, Eq)]
pub enum ProgressOutcome {
    Unchanged,
    InfoUpdated,
    StageChanged,
}

impl Host {
    pub fn stages(&self, mode: Mode) -> Vec<Stage> {
        stages_for(self.role, self.bootstrap, self.single_node, mode)
    }

    /// Applies an agent's progress report with the real service's rules.
    pub fn update_progress(
        &mut self,
        stage: Stage,
        info: &str,
        mode: Mode,
        now: SystemTime,
    ) -> Result<ProgressOutcome, ProgressError> {
        if self.current_stage == Some(stage) {
            if self.progress_info == info {
                return Ok(ProgressOutcome::Unchanged);
            }
            // A new detail within the same stage is always taken, whatever the
            // status: it only refreshes what the UI shows.
            info.clone_into(&mut self.progress_info);
            self.stage_updated_at = Some(now);
            self.updated_at = now;
            // History is a list of stages; new detail refreshes the current
            // entry (the service keeps one row per host, not an info log).
            match self.history.last_mut() {
                Some(last) if last.stage == stage.as_str() => {
                    last.progress_info.clone_from(&self.progress_info);
                }
                _ => self.push_history(stage, now),
            }
            return Ok(ProgressOutcome::InfoUpdated);
        }
        if !STAGE_CHANGE_STATUSES.contains(&self.status.as_str()) {
            return Err(ProgressError::Conflict(format!(
                "Can't set progress <{stage}> to host in status <{}>",
                self.status
            )));
        }
        if stage != Stage::Failed {
            let stages = self.stages(mode);
            let Some(new_index) = stages.iter().position(|s| *s == stage) else {
                return Err(ProgressError::Conflict(format!(
                    "Stages {stage} isn't available for host role {} bootstrap {}",
                    self.role.as_str(),
                    self.bootstrap
                )));
            };
            if let Some(current) = self.current_stage {
                if let Some(cur_index) = stages.iter().position(|s| *s == current) {
                    if new_index < cur_index {
                        return Err(ProgressError::Conflict(format!(
                            "Can't assign lower stage \"{stage}\" after host has been in stage \"{current}\""
                        )));
                    }
                }
            }
        }
        self.set_stage(stage, info, None, now);
        Ok(ProgressOutcome::StageChanged)
    }

    /// Moves the host unconditionally, as the installer controller or an
    /// operator would; `status` overrides the status derived from the stage.
    pub fn set_stage(&mut self, stage: Stage, info: &str, status: Option<&str>, now: SystemTime) {
        if self.current_stage != Some(stage) {
            self.stage_started_at = Some(now);
        }
        self.current_stage = Some(stage);
        info.clone_into(&mut self.progress_info);
        self.stage_updated_at = Some(now);
        self.updated_at = now;
        let (derived_status, derived_info) = match stage {
            Stage::Failed => (
                "error",
                if info.is_empty() {
                    "Failed".to_owned()
                } else {
                    format!("Failed - {info}")
                },
            ),
            Stage::Done => ("installed", "Done".to_owned()),
            other => ("installing-in-progress", other.as_str().to_owned()),
        };
        self.status = status.unwrap_or(derived_status).to_owned();
        self.status_info = derived_info;
        self.push_history(stage, now);
    }

    fn push_history(&mut self, stage: Stage, now: SystemTime) {
        self.history.push(HistoryEntry {
            stage: stage.as_str(),
            progress_info: self.progress_info.clone(),
            at: now,
        });
    }

    /// Mirrors upstream: position in the role's list, Done is always 100.
    pub fn installation_percentage(&self, mode: Mode) -> i64 {
        let Some(stage) = self.current_stage else {
            return 0;
        };
        if stage == Stage::Done {
            return 100;
        }
        let stages = self.stages(mode);
        match stages.iter().position(|s| *s == stage) {
            Some(i) if !stages.is_empty() => {
                i64::try_from((i + 1) * 100 / stages.len()).unwrap_or(100)
            }
            _ => 0,
        }
    }

    pub fn href(&self) -> String {
        format!(
            "{API_BASE}/v2/infra-envs/{}/hosts/{}",
            self.infra_env_id, self.id
        )
    }

    /// The host as the swagger `host` definition serialises it. Optional
    /// fields are omitted when unset, as go-swagger's `omitempty` does, so a
    /// generated client never meets a null it does not expect.
    pub fn to_api_json(&self, mode: Mode) -> Value {
        let mut progress = serde_json::Map::new();
        progress.insert(
            "installation_percentage".into(),
            json!(self.installation_percentage(mode)),
        );
        if let Some(stage) = self.current_stage {
            progress.insert("current_stage".into(), json!(stage.as_str()));
        }
        progress.insert("progress_info".into(), json!(self.progress_info));
        if let Some(t) = self.stage_started_at {
            progress.insert("stage_started_at".into(), json!(fmt_time(t)));
        }
        if let Some(t) = self.stage_updated_at {
            progress.insert("stage_updated_at".into(), json!(fmt_time(t)));
        }
        progress.insert("stage_timed_out".into(), json!(false));

        let mut host = serde_json::Map::new();
        host.insert("kind".into(), json!("Host"));
        host.insert("id".into(), json!(self.id));
        host.insert("href".into(), json!(self.href()));
        if let Some(c) = self.cluster_id {
            host.insert("cluster_id".into(), json!(c));
        }
        host.insert("infra_env_id".into(), json!(self.infra_env_id));
        host.insert("status".into(), json!(self.status));
        host.insert("status_info".into(), json!(self.status_info));
        host.insert("role".into(), json!(self.role.as_str()));
        host.insert("bootstrap".into(), json!(self.bootstrap));
        host.insert("requested_hostname".into(), json!(self.requested_hostname));
        host.insert("progress".into(), Value::Object(progress));
        let stages: Vec<&str> = self.stages(mode).iter().map(|s| s.as_str()).collect();
        host.insert("progress_stages".into(), json!(stages));
        if let Some(t) = self.stage_started_at {
            host.insert("stage_started_at".into(), json!(fmt_time(t)));
        }
        if let Some(t) = self.stage_updated_at {
            host.insert("stage_updated_at".into(), json!(fmt_time(t)));
        }
        host.insert("created_at".into(), json!(fmt_time(self.created_at)));
        host.insert("updated_at".into(), json!(fmt_time(self.updated_at)));
        Value::Object(host)
    }
}

/// Key of a stored bundle: one per (cluster, host, logs type). Controller
/// logs are uploaded without a host and use `None`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BundleKey {
    pub cluster_id: Uuid,
    pub host_id: Option<Uuid>,
    pub logs_type: String,
}

/// Everything a seed or the API can change; replaced wholesale by a new seed.
#[derive(Debug, Default)]
pub struct World {
    pub agent_token: Option<String>,
    pub user_token: Option<String>,
    pub clusters: Vec<Cluster>,
    pub infra_envs: Vec<InfraEnv>,
    pub hosts: Vec<Host>,
    pub bundles: BTreeMap<BundleKey, BundleMeta>,
}

impl World {
    pub fn cluster(&self, id: Uuid) -> Option<&Cluster> {
        self.clusters.iter().find(|c| c.id == id)
    }

    pub fn infra_env(&self, id: Uuid) -> Option<&InfraEnv> {
        self.infra_envs.iter().find(|e| e.id == id)
    }

    pub fn host(&self, id: Uuid) -> Option<&Host> {
        self.hosts.iter().find(|h| h.id == id)
    }

    pub fn host_mut(&mut self, id: Uuid) -> Option<&mut Host> {
        self.hosts.iter_mut().find(|h| h.id == id)
    }

    pub fn bundles_of(&self, cluster_id: Uuid, host_id: Option<Uuid>) -> Vec<(&str, &BundleMeta)> {
        self.bundles
            .iter()
            .filter(|(k, _)| k.cluster_id == cluster_id && k.host_id == host_id)
            .map(|(k, m)| (k.logs_type.as_str(), m))
            .collect()
    }
}

pub fn fmt_time(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's serialize_with signature
pub fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&fmt_time(*t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(role: Role, bootstrap: bool, status: &str, stage: Option<Stage>) -> Host {
        let now = SystemTime::now();
        Host {
            id: Uuid::new_v4(),
            infra_env_id: Uuid::new_v4(),
            cluster_id: Some(Uuid::new_v4()),
            requested_hostname: "h".into(),
            role,
            bootstrap,
            single_node: false,
            status: status.into(),
            status_info: String::new(),
            current_stage: stage,
            progress_info: String::new(),
            stage_started_at: None,
            stage_updated_at: None,
            created_at: now,
            updated_at: now,
            history: Vec::new(),
        }
    }

    fn names(v: &[Stage]) -> Vec<&'static str> {
        v.iter().map(|s| s.as_str()).collect()
    }

    #[test]
    fn role_lists_insert_new_stages_only_when_enhanced() {
        let w = stages_for(Role::Worker, false, false, Mode::Enhanced);
        assert_eq!(
            names(&w),
            [
                "Starting installation",
                "Installing",
                "Writing image to disk",
                "Waiting for control plane",
                "Rebooting",
                "Booted with local ignition",
                "Waiting for ignition",
                "Configuring",
                "Booted with control plane ignition",
                "Joined",
                "Done"
            ]
        );
        let sno = stages_for(Role::Master, true, true, Mode::Upstream);
        assert_eq!(
            names(&sno),
            [
                "Starting installation",
                "Installing",
                "Waiting for bootkube",
                "Writing image to disk",
                "Copying registry data to disk",
                "Rebooting",
                "Joined",
                "Done"
            ]
        );
        let boot = stages_for(Role::Master, true, false, Mode::Enhanced);
        assert_eq!(boot.len(), 13);
        assert_eq!(boot[8], Stage::BootedWithLocalIgnition);
        assert!(stages_for(Role::AutoAssign, false, false, Mode::Enhanced).is_empty());
    }

    #[test]
    fn upstream_mode_does_not_parse_new_stages() {
        assert_eq!(
            Stage::parse("Booted with local ignition", Mode::Enhanced),
            Some(Stage::BootedWithLocalIgnition)
        );
        assert_eq!(
            Stage::parse("Booted with local ignition", Mode::Upstream),
            None
        );
        assert!(!Stage::enum_message(Mode::Upstream).contains("Booted"));
        assert!(Stage::enum_message(Mode::Enhanced)
            .starts_with("current_stage in body should be one of [Starting installation Waiting"));
    }

    #[test]
    fn forward_only_and_status_rules() {
        let now = SystemTime::now();
        let mut h = host(
            Role::Master,
            false,
            "installing-in-progress",
            Some(Stage::Configuring),
        );
        let err = h
            .update_progress(Stage::Rebooting, "", Mode::Enhanced, now)
            .unwrap_err();
        assert_eq!(
            err,
            ProgressError::Conflict(
                "Can't assign lower stage \"Rebooting\" after host has been in stage \"Configuring\""
                    .into()
            )
        );
        assert_eq!(
            h.update_progress(
                Stage::BootedWithControlPlaneIgnition,
                "x",
                Mode::Enhanced,
                now
            ),
            Ok(ProgressOutcome::StageChanged)
        );
        assert_eq!(h.status, "installing-in-progress");
        assert_eq!(h.history.len(), 1);
        // A stage outside the role's list is refused too.
        assert!(h
            .update_progress(Stage::WaitingForIgnition, "", Mode::Enhanced, now)
            .is_err());
        assert_eq!(
            h.update_progress(Stage::Done, "", Mode::Enhanced, now),
            Ok(ProgressOutcome::StageChanged)
        );
        assert_eq!(h.status, "installed");
        assert_eq!(h.installation_percentage(Mode::Enhanced), 100);
        // Once installed the status gate refuses stage changes but not new info.
        assert!(h
            .update_progress(Stage::Failed, "", Mode::Enhanced, now)
            .is_err());
        assert_eq!(
            h.update_progress(Stage::Done, "later", Mode::Enhanced, now),
            Ok(ProgressOutcome::InfoUpdated)
        );
        assert_eq!(
            h.update_progress(Stage::Done, "later", Mode::Enhanced, now),
            Ok(ProgressOutcome::Unchanged)
        );
    }

    #[test]
    fn failed_is_allowed_from_any_stage() {
        let mut h = host(Role::Worker, false, "installing", Some(Stage::Joined));
        h.update_progress(
            Stage::Failed,
            "disk gone",
            Mode::Enhanced,
            SystemTime::now(),
        )
        .unwrap();
        assert_eq!(h.status, "error");
        assert_eq!(h.status_info, "Failed - disk gone");
    }

    #[test]
    fn host_json_has_swagger_fields() {
        let mut h = host(Role::Worker, false, "installing", None);
        h.cluster_id = None;
        let v = h.to_api_json(Mode::Enhanced);
        assert_eq!(v["kind"], "Host");
        assert!(v.get("cluster_id").is_none());
        assert!(v["progress"].get("current_stage").is_none());
        assert_eq!(v["progress_stages"].as_array().unwrap().len(), 11);
        assert!(v["created_at"].as_str().unwrap().ends_with('Z'));
    }
}
