//! The service's in-memory world: clusters, infra-envs, hosts, their install
//! progress, and the stage rules of assisted-service (with or without this
//! project's enhancement). Everything here is synchronous and free of HTTP so
//! the rules can be unit-tested on their own.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::rfc3339::{fmt_time, ser_time};
use crate::store::{BundleKey, BundleMeta};

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

/// Per-role stage lists as the mode's service defines them: upstream
/// `internal/host/common.go` (`BootstrapStages`, `MasterStages`,
/// `WorkerStages`, `SnoStages`), and in enhanced mode the same lists with the
/// two boot stages inserted exactly as docs/upstream-integration.md says
/// (a unit test reads the lists back from that document).
pub fn role_stage_table(list: StageList, mode: Mode) -> Vec<Stage> {
    use Stage::{
        BootedWithControlPlaneIgnition as CpIgn, BootedWithLocalIgnition as LocalIgn, Configuring,
        CopyingRegistryDataToDisk as Registry, Done, Installing, Joined, Rebooting,
        StartingInstallation as Start, WaitingForBootkube as Bootkube,
        WaitingForControlPlane as ControlPlane, WaitingForController as Controller,
        WaitingForIgnition as Ignition, WritingImageToDisk as Writing,
    };
    let enhanced: &[Stage] = match list {
        StageList::Bootstrap => &[
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
        ],
        StageList::Master => &[
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
        StageList::Worker => &[
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
        StageList::SingleNode => &[
            Start, Installing, Bootkube, Writing, Registry, Rebooting, LocalIgn, CpIgn, Joined,
            Done,
        ],
    };
    enhanced
        .iter()
        .copied()
        .filter(|s| mode == Mode::Enhanced || !s.is_enhancement())
        .collect()
}

/// The four stage lists of upstream `FindMatchingStages`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageList {
    Bootstrap,
    Master,
    Worker,
    SingleNode,
}

impl StageList {
    pub const ALL: [StageList; 4] = [
        StageList::Bootstrap,
        StageList::Master,
        StageList::Worker,
        StageList::SingleNode,
    ];

    /// The Go variable name upstream gives the list.
    pub fn upstream_name(self) -> &'static str {
        match self {
            StageList::Bootstrap => "BootstrapStages",
            StageList::Master => "MasterStages",
            StageList::Worker => "WorkerStages",
            StageList::SingleNode => "SnoStages",
        }
    }
}

/// The stage list a host walks through. Mirrors upstream `FindMatchingStages`:
/// bootstrap hosts get their own lists (the single-node one only when the
/// caller knows the cluster is single node), and a role not yet decided
/// (`auto-assign`) has no stages at all.
pub fn stages_for(role: Role, bootstrap: bool, single_node: bool, mode: Mode) -> Vec<Stage> {
    let list = match (bootstrap, single_node, role) {
        (true, true, _) => StageList::SingleNode,
        (true, false, _) => StageList::Bootstrap,
        (false, _, Role::Master | Role::Arbiter) => StageList::Master,
        (false, _, Role::Worker) => StageList::Worker,
        (false, _, Role::AutoAssign) => return Vec::new(),
    };
    role_stage_table(list, mode)
}

/// Logs types accepted on upload (swagger `V2UploadLogs` enum), in the order
/// the validation message lists them.
pub fn logs_types(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::Enhanced => &["host", "controller", "host_boot"],
        Mode::Upstream => &["host", "controller"],
    }
}

/// Logs types that belong to one host and need `host_id` on upload.
pub fn is_host_logs_type(logs_type: &str) -> bool {
    matches!(logs_type, "host" | "host_boot")
}

/// Logs types accepted on download (swagger `V2DownloadClusterLogs` enum).
pub fn download_logs_types(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::Enhanced => &["host", "controller", "all", "host_boot"],
        Mode::Upstream => &["host", "controller", "all"],
    }
}

pub fn logs_type_message(mode: Mode) -> String {
    format!(
        "logs_type in query should be one of [{}]",
        logs_types(mode).join(" ")
    )
}

pub fn download_logs_type_message(mode: Mode) -> String {
    format!(
        "logs_type in query should be one of [{}]",
        download_logs_types(mode).join(" ")
    )
}

/// Stages from which the installer controller moves a host whose node
/// appeared to `Joined`: assisted-installer `assisted_installer_controller.go`
/// `waitAndUpdateNodesStatus` accepts only Configuring and Rebooting today;
/// the enhanced controller also accepts the two boot stages.
pub fn controller_joined_from(mode: Mode) -> &'static [Stage] {
    match mode {
        Mode::Upstream => &[Stage::Configuring, Stage::Rebooting],
        Mode::Enhanced => &[
            Stage::Rebooting,
            Stage::BootedWithLocalIgnition,
            Stage::Configuring,
            Stage::BootedWithControlPlaneIgnition,
        ],
    }
}

/// Stages in which a host's Ignition fetch found in the machine-config
/// server's log does not move it to Configuring (assisted-installer
/// `src/common/common.go` `SetConfiguringStatusForHosts` `notValidStates`;
/// from the bootstrap also Waiting for ignition). The enhanced controller
/// also leaves a host that already reported its control plane boot alone.
pub fn configuring_skipped(mode: Mode, from_bootstrap: bool) -> Vec<Stage> {
    let mut skip = vec![Stage::Configuring, Stage::Joined, Stage::Done];
    if mode == Mode::Enhanced {
        skip.push(Stage::BootedWithControlPlaneIgnition);
    }
    if from_bootstrap {
        skip.push(Stage::WaitingForIgnition);
    }
    skip
}

/// Upstream `internal/host/config.go` `hostStageTimeoutDefaults`; a stage
/// not in the table gets `hostStageTimeoutDefault` (60 min). The enhanced
/// service lists the two boot stages explicitly (60 min each) so their
/// `HOST_STAGE_*_TIMEOUT` variables exist. Single node reboots get 80 min
/// (`singleNodeRebootTimeout`, `internal/host/host.go`).
pub fn stage_timeout(stage: Stage, single_node: bool) -> Duration {
    const MIN: u64 = 60;
    let minutes = match stage {
        Stage::Rebooting if single_node => 80,
        Stage::StartingInstallation | Stage::WritingImageToDisk => 30,
        Stage::CopyingRegistryDataToDisk => 90,
        Stage::Rebooting => 40,
        Stage::WaitingForIgnition => 24 * 60,
        // Everything else, the two boot stages included: 60 min.
        _ => 60,
    };
    Duration::from_secs(minutes * MIN)
}

/// Go's `time.Duration.String()` for whole seconds, as upstream prints
/// `$MAX_TIME` in status messages ("40m0s", "1h0m0s").
pub fn go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
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

/// Swagger `host.kind`: a day-1 host or one added to an installed cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HostKind {
    #[default]
    Host,
    AddToExistingClusterHost,
}

impl HostKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HostKind::Host => "Host",
            HostKind::AddToExistingClusterHost => "AddToExistingClusterHost",
        }
    }
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
    pub kind: HostKind,
    pub status: String,
    pub status_info: String,
    pub current_stage: Option<Stage>,
    pub progress_info: String,
    pub stage_started_at: Option<SystemTime>,
    /// Upstream `progress_stage_updated_at`: every accepted progress PUT
    /// (also one that only changes `progress_info`) restarts the stage
    /// timer from here.
    pub stage_updated_at: Option<SystemTime>,
    pub stage_timed_out: bool,
    /// Upstream `logs_collected_at`, set by a `host` logs upload; a `host`
    /// download answers 409 while it is unset.
    pub logs_collected_at: Option<SystemTime>,
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
    /// `Failed`: the status went to `error`, the stage stayed.
    StatusError,
}

/// Upstream `statusRebootTimeout` with `$INSTALLATION_DISK` replaced by
/// nothing, as `replaceMacros` does when the inventory names no disk.
const REBOOT_TIMEOUT_INFO: &str = "Host timed out when pulling the configuration files. \
Verify in the host console that the host boots from the OpenShift installation disk  and \
has network access to the cluster API. The installation will resume after the host \
successfully boots and can access the cluster API";

/// What the stage monitor did to a host.
#[derive(Debug, PartialEq, Eq)]
pub enum Timeout {
    /// `Rebooting` took too long: wrong boot order suspected.
    PendingUserAction,
    Error,
}

impl Host {
    /// Upstream `GetStagesByRole` with the real single-node flag: the list
    /// progress updates are checked against.
    pub fn stages(&self, mode: Mode) -> Vec<Stage> {
        let mut stages = stages_for(self.role, self.bootstrap, self.single_node, mode);
        // Day-2 hosts (without kube-api): Rebooting is the last stage the
        // service can follow.
        if self.kind == HostKind::AddToExistingClusterHost {
            if let Some(i) = stages.iter().position(|s| *s == Stage::Rebooting) {
                stages.truncate(i + 1);
            }
        }
        stages
    }

    /// The `progress_stages` the infra-env host list (`V2ListHosts`) sends:
    /// upstream calls `customizeHost(nil, host)` there, so a single-node
    /// bootstrap host is listed with the multi-node bootstrap list. The
    /// enhanced service passes the host's cluster (see the integration doc).
    pub fn listed_stages(&self, mode: Mode) -> Vec<Stage> {
        match mode {
            Mode::Enhanced => self.stages(mode),
            Mode::Upstream => Host {
                single_node: false,
                ..self.clone()
            }
            .stages(mode),
        }
    }

    /// Applies an agent's progress report with upstream's rules
    /// (`internal/host/host.go` `UpdateInstallProgress` and the
    /// `HostProgressChanged` transitions of `statemachine.go`).
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
            // status, and restarts the stage timer.
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
        if stage == Stage::Failed {
            // Upstream keeps the last progress: only the status changes.
            "error".clone_into(&mut self.status);
            self.status_info = if info.is_empty() {
                "Failed".to_owned()
            } else {
                format!("Failed - {info}")
            };
            self.updated_at = now;
            self.history.push(HistoryEntry {
                stage: Stage::Failed.as_str(),
                progress_info: info.to_owned(),
                at: now,
            });
            return Ok(ProgressOutcome::StatusError);
        }
        // The role-list check runs only once the host has a stage.
        if let Some(current) = self.current_stage {
            let stages = self.stages(mode);
            let Some(new_index) = stages.iter().position(|s| *s == stage) else {
                return Err(ProgressError::Conflict(format!(
                    "Stages {stage} isn't available for host role {} bootstrap {}",
                    self.role.as_str(),
                    self.bootstrap
                )));
            };
            // A current stage outside the list has index -1 upstream: any
            // listed stage is "higher".
            if let Some(cur_index) = stages.iter().position(|s| *s == current) {
                if new_index < cur_index {
                    return Err(ProgressError::Conflict(format!(
                        "Can't assign lower stage \"{stage}\" after host has been in stage \"{current}\""
                    )));
                }
            }
        }
        // Day-2 hosts without kube-api: the installer's Rebooting is stored
        // as Done, since nothing will follow the host any further.
        let stored = if stage == Stage::Rebooting && self.kind == HostKind::AddToExistingClusterHost
        {
            Stage::Done
        } else {
            stage
        };
        let status = self.progress_status(stored);
        self.set_stage(stored, info, Some(&status), now);
        Ok(ProgressOutcome::StageChanged)
    }

    /// The `HostProgressChanged` transitions: Done installs the host (a day-2
    /// host is added to its cluster); any other change, and Done from
    /// `installing-pending-user-action`, means installing-in-progress.
    fn progress_status(&self, stage: Stage) -> String {
        let status = self.status.as_str();
        let day2 = self.kind == HostKind::AddToExistingClusterHost;
        let next = match stage {
            Stage::Done if day2 => "added-to-existing-cluster",
            Stage::Done if matches!(status, "installing" | "installing-in-progress") => "installed",
            _ => "installing-in-progress",
        };
        next.to_owned()
    }

    /// Moves the host unconditionally, as an operator would; `status`
    /// overrides the status derived from the stage.
    pub fn set_stage(&mut self, stage: Stage, info: &str, status: Option<&str>, now: SystemTime) {
        if self.current_stage != Some(stage) {
            self.stage_started_at = Some(now);
            self.stage_timed_out = false;
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

    /// Upstream `HasInstallationInProgressTimedOut` and the refresh
    /// transitions that follow it, for a host in `installing-in-progress`:
    /// `Rebooting` past its timeout goes to `installing-pending-user-action`
    /// (wrong boot order), any other stage to `error`. The clock is
    /// `stage_updated_at`, which every accepted progress PUT restarts.
    /// Not modelled: soft timeouts (an org feature, off by default) and the
    /// exemption of the pre-reboot stages while the cluster itself waits for
    /// the user.
    pub fn check_stage_timeout(&mut self, scale: f64, now: SystemTime) -> Option<Timeout> {
        if self.status != "installing-in-progress" {
            return None;
        }
        let stage = self.current_stage?;
        let since = self.stage_updated_at?;
        let limit = stage_timeout(stage, self.single_node);
        let elapsed = now.duration_since(since).unwrap_or_default();
        if elapsed.as_secs_f64() * scale <= limit.as_secs_f64() {
            return None;
        }
        self.updated_at = now;
        self.stage_timed_out = true;
        if stage == Stage::Rebooting {
            "installing-pending-user-action".clone_into(&mut self.status);
            REBOOT_TIMEOUT_INFO.clone_into(&mut self.status_info);
            Some(Timeout::PendingUserAction)
        } else {
            "error".clone_into(&mut self.status);
            self.status_info = format!(
                "Host failed to install because its installation stage {stage} took longer than expected {}",
                go_duration(stage_timeout(stage, false))
            );
            Some(Timeout::Error)
        }
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
    /// `progress_stages` has no `omitempty` upstream: `None` (what the
    /// cluster host list sends, it never fills the field) is `null`.
    pub fn to_api_json(&self, mode: Mode, progress_stages: Option<&[Stage]>) -> Value {
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
        progress.insert("stage_timed_out".into(), json!(self.stage_timed_out));

        let mut host = serde_json::Map::new();
        host.insert("kind".into(), json!(self.kind.as_str()));
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
        let stages: Option<Vec<&str>> =
            progress_stages.map(|l| l.iter().map(|s| s.as_str()).collect());
        host.insert("progress_stages".into(), json!(stages));
        if let Some(t) = self.logs_collected_at {
            host.insert("logs_collected_at".into(), json!(fmt_time(t)));
        }
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

/// An agent token minted for an infra-env: the claim `infra_env_id` of
/// upstream's local JWT. It authenticates while an infra-env with that id
/// exists; one minted "for the cluster" carries the cluster's id there and
/// is refused (`pkg/auth/local_authenticator.go` `AuthAgentAuth`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AgentToken {
    pub token: String,
    pub infra_env_id: Uuid,
}

/// Everything a seed or the API can change; replaced wholesale by a new seed.
#[derive(Debug, Default)]
pub struct World {
    pub agent_token: Option<String>,
    /// Tokens minted for one infra-env, as upstream local (JWT) auth mints
    /// them (`internal/cluster/auth.go` `AgentToken`).
    pub agent_tokens: Vec<AgentToken>,
    pub user_token: Option<String>,
    pub clusters: Vec<Cluster>,
    pub infra_envs: Vec<InfraEnv>,
    pub hosts: Vec<Host>,
    pub bundles: BTreeMap<BundleKey, BundleMeta>,
}

impl World {
    /// One pass of upstream's host monitor over the stage timers; returns
    /// what it did, for logging.
    pub fn refresh_stage_timeouts(
        &mut self,
        scale: f64,
        now: SystemTime,
    ) -> Vec<(Uuid, Stage, Timeout)> {
        self.hosts
            .iter_mut()
            .filter_map(|h| {
                let stage = h.current_stage?;
                h.check_stage_timeout(scale, now).map(|t| (h.id, stage, t))
            })
            .collect()
    }

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
            kind: HostKind::Host,
            status: status.into(),
            status_info: String::new(),
            current_stage: stage,
            progress_info: String::new(),
            stage_started_at: None,
            stage_updated_at: None,
            stage_timed_out: false,
            logs_collected_at: None,
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
    fn failed_sets_error_and_keeps_the_stage() {
        for mode in [Mode::Enhanced, Mode::Upstream] {
            let mut h = host(Role::Worker, false, "installing", Some(Stage::Joined));
            let before = SystemTime::UNIX_EPOCH;
            h.stage_updated_at = Some(before);
            assert_eq!(
                h.update_progress(Stage::Failed, "disk gone", mode, SystemTime::now()),
                Ok(ProgressOutcome::StatusError)
            );
            assert_eq!(h.status, "error");
            assert_eq!(h.status_info, "Failed - disk gone");
            assert_eq!(h.current_stage, Some(Stage::Joined));
            assert_eq!(h.progress_info, "");
            assert_eq!(h.stage_updated_at, Some(before), "Failed restarts no timer");
        }
    }

    #[test]
    fn role_list_check_only_once_a_stage_exists() {
        for mode in [Mode::Enhanced, Mode::Upstream] {
            // No stage yet: a stage outside the role's list is taken.
            let mut h = host(Role::Master, false, "installing", None);
            assert_eq!(
                h.update_progress(Stage::WaitingForIgnition, "", mode, SystemTime::now()),
                Ok(ProgressOutcome::StageChanged)
            );
            assert_eq!(h.installation_percentage(mode), 0);
            // Now it has one, and the list applies.
            assert!(h
                .update_progress(Stage::WaitingForBootkube, "", mode, SystemTime::now())
                .is_err());
        }
    }

    #[test]
    fn done_while_pending_user_action_is_installing_in_progress() {
        for mode in [Mode::Enhanced, Mode::Upstream] {
            let mut h = host(
                Role::Master,
                false,
                "installing-pending-user-action",
                Some(Stage::Rebooting),
            );
            h.update_progress(Stage::Done, "", mode, SystemTime::now())
                .unwrap();
            assert_eq!(h.current_stage, Some(Stage::Done));
            assert_eq!(h.status, "installing-in-progress");
            // From installing-in-progress, Done installs the host.
            let mut h = host(
                Role::Master,
                false,
                "installing-in-progress",
                Some(Stage::Joined),
            );
            h.update_progress(Stage::Done, "", mode, SystemTime::now())
                .unwrap();
            assert_eq!(h.status, "installed");
        }
    }

    #[test]
    fn day2_host_rebooting_is_stored_as_done() {
        let mut h = host(
            Role::Worker,
            false,
            "installing-in-progress",
            Some(Stage::Installing),
        );
        h.kind = HostKind::AddToExistingClusterHost;
        assert_eq!(
            names(&h.stages(Mode::Enhanced)).last(),
            Some(&"Rebooting"),
            "day-2 lists end at Rebooting"
        );
        h.update_progress(Stage::Rebooting, "", Mode::Enhanced, SystemTime::now())
            .unwrap();
        assert_eq!(h.current_stage, Some(Stage::Done));
        assert_eq!(h.status, "added-to-existing-cluster");
        // The boot stages are not in a day-2 host's list.
        let mut h = host(
            Role::Worker,
            false,
            "installing-in-progress",
            Some(Stage::Installing),
        );
        h.kind = HostKind::AddToExistingClusterHost;
        assert!(h
            .update_progress(
                Stage::BootedWithLocalIgnition,
                "",
                Mode::Enhanced,
                SystemTime::now()
            )
            .is_err());
    }

    #[test]
    fn stage_timeouts_follow_upstream_defaults() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let at = |min: u64| t0 + Duration::from_secs(min * 60);
        let mut h = host(
            Role::Master,
            false,
            "installing-in-progress",
            Some(Stage::Rebooting),
        );
        h.stage_updated_at = Some(t0);
        assert_eq!(h.check_stage_timeout(1.0, at(40)), None);
        assert_eq!(
            h.check_stage_timeout(1.0, at(41)),
            Some(Timeout::PendingUserAction)
        );
        assert_eq!(h.status, "installing-pending-user-action");
        assert!(h.stage_timed_out);
        // Only installing-in-progress hosts time out.
        assert_eq!(h.check_stage_timeout(1.0, at(500)), None);

        let mut sno = host(
            Role::Master,
            true,
            "installing-in-progress",
            Some(Stage::Rebooting),
        );
        sno.single_node = true;
        sno.stage_updated_at = Some(t0);
        assert_eq!(sno.check_stage_timeout(1.0, at(79)), None);
        assert!(sno.check_stage_timeout(1.0, at(81)).is_some());

        for stage in [
            Stage::Configuring,
            Stage::Joined,
            Stage::BootedWithLocalIgnition,
            Stage::BootedWithControlPlaneIgnition,
        ] {
            let mut h = host(Role::Master, false, "installing-in-progress", Some(stage));
            h.stage_updated_at = Some(t0);
            assert_eq!(h.check_stage_timeout(1.0, at(59)), None, "{stage}");
            assert_eq!(
                h.check_stage_timeout(1.0, at(61)),
                Some(Timeout::Error),
                "{stage}"
            );
            assert_eq!(h.status, "error");
            assert!(
                h.status_info.ends_with("took longer than expected 1h0m0s"),
                "{}",
                h.status_info
            );
        }
        // The scale divides upstream's durations: 40 min at 600x is 4 s.
        let mut h = host(
            Role::Master,
            false,
            "installing-in-progress",
            Some(Stage::Rebooting),
        );
        h.stage_updated_at = Some(t0);
        assert_eq!(
            h.check_stage_timeout(600.0, t0 + Duration::from_secs(3)),
            None
        );
        assert!(h
            .check_stage_timeout(600.0, t0 + Duration::from_secs(5))
            .is_some());
        assert_eq!(go_duration(Duration::from_secs(40 * 60)), "40m0s");
        assert_eq!(go_duration(Duration::from_secs(24 * 3600)), "24h0m0s");
    }

    #[test]
    fn every_accepted_put_restarts_the_stage_timer() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut h = host(
            Role::Master,
            false,
            "installing-in-progress",
            Some(Stage::Configuring),
        );
        h.stage_updated_at = Some(t0);
        let t1 = t0 + Duration::from_secs(50 * 60);
        // Only progress_info changes: still a restart.
        assert_eq!(
            h.update_progress(Stage::Configuring, "note", Mode::Upstream, t1),
            Ok(ProgressOutcome::InfoUpdated)
        );
        assert_eq!(h.stage_updated_at, Some(t1));
        assert_eq!(
            h.check_stage_timeout(1.0, t0 + Duration::from_secs(70 * 60)),
            None
        );
        // The identical PUT changes nothing, the timer included.
        let t2 = t1 + Duration::from_secs(60);
        assert_eq!(
            h.update_progress(Stage::Configuring, "note", Mode::Upstream, t2),
            Ok(ProgressOutcome::Unchanged)
        );
        assert_eq!(h.stage_updated_at, Some(t1));
    }

    #[test]
    fn sno_hosts_are_listed_with_the_multi_node_bootstrap_list_upstream() {
        let mut h = host(Role::Master, true, "installing-in-progress", None);
        h.single_node = true;
        assert_eq!(
            h.listed_stages(Mode::Upstream),
            role_stage_table(StageList::Bootstrap, Mode::Upstream)
        );
        assert_eq!(
            h.stages(Mode::Upstream),
            role_stage_table(StageList::SingleNode, Mode::Upstream)
        );
        assert_eq!(
            h.listed_stages(Mode::Enhanced),
            role_stage_table(StageList::SingleNode, Mode::Enhanced)
        );
    }

    #[test]
    fn host_json_has_swagger_fields() {
        let mut h = host(Role::Worker, false, "installing", None);
        h.cluster_id = None;
        let v = h.to_api_json(Mode::Enhanced, Some(&h.stages(Mode::Enhanced)));
        assert_eq!(v["kind"], "Host");
        assert!(v.get("cluster_id").is_none());
        assert!(v["progress"].get("current_stage").is_none());
        assert_eq!(v["progress_stages"].as_array().unwrap().len(), 11);
        assert!(v["created_at"].as_str().unwrap().ends_with('Z'));
    }
}
