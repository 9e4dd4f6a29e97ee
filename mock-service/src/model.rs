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

use crate::rfc3339::ser_time;
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
    /// `Full` or `None` (single node). Absent: derived from
    /// `control_plane_count`, or from the hosts (`single_node`), as upstream
    /// `GetDefaultHighAvailabilityAndMasterCountParams` defaults it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_availability_mode: Option<String>,
    /// 1 (single node) to 5; upstream's single-node test is `== 1`
    /// (`common.IsSingleNodeCluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_count: Option<i64>,
    /// Default `example.com`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dns_domain: Option<String>,
    /// When the seed created it (not part of a seed document).
    #[serde(skip)]
    pub created_at: Option<SystemTime>,
}

impl Cluster {
    /// Upstream `common.IsSingleNodeCluster`, once the seed has resolved
    /// the topology.
    pub fn is_single_node(&self) -> bool {
        self.control_plane_count == Some(1)
    }
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
    /// Upstream `logs_info`: `collecting` once a `host` upload arrived
    /// (`uploadHostLogs` calls `UpdateLogsProgress`), empty before.
    pub logs_info: &'static str,
    pub created_at: SystemTime,
    pub updated_at: SystemTime,
    /// When the discovery agent registered, last checked in, and when the
    /// status last changed (`status_updated_at`).
    pub registered_at: SystemTime,
    pub checked_in_at: SystemTime,
    pub status_updated_at: SystemTime,
    /// Address, peers and names the stored JSON strings are made from
    /// (set when the seed is read: `facts::place_group`).
    pub placement: crate::facts::Placement,
    /// The inventory and the other stored JSON strings, rendered on first
    /// use (`Host::facts`).
    pub facts: std::sync::OnceLock<crate::facts::HostFacts>,
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
        self.stages_as(self.single_node, mode)
    }

    fn stages_as(&self, single_node: bool, mode: Mode) -> Vec<Stage> {
        let mut stages = stages_for(self.role, self.bootstrap, single_node, mode);
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
            Mode::Upstream => self.stages_as(false, mode),
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
            self.set_status("error", now);
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

    /// A progress PUT whose `current_stage` is missing or empty: the
    /// swagger does not require it and its enum check skips the zero
    /// value, so it reaches `UpdateInstallProgress` as the stage "". That
    /// is no change for a host without a stage (only `progress_info` is
    /// taken), and otherwise a stage missing from every role's list: 409.
    pub fn update_progress_without_stage(
        &mut self,
        info: &str,
        now: SystemTime,
    ) -> Result<ProgressOutcome, ProgressError> {
        if self.current_stage.is_none() {
            if self.progress_info == info {
                return Ok(ProgressOutcome::Unchanged);
            }
            info.clone_into(&mut self.progress_info);
            self.stage_updated_at = Some(now);
            self.updated_at = now;
            return Ok(ProgressOutcome::InfoUpdated);
        }
        if !STAGE_CHANGE_STATUSES.contains(&self.status.as_str()) {
            return Err(ProgressError::Conflict(format!(
                "Can't set progress <> to host in status <{}>",
                self.status
            )));
        }
        // `internal/host/host.go` `UpdateInstallProgress`: "Stages %s isn't
        // available for host role %s bootstrap %s" with the empty stage.
        Err(ProgressError::Conflict(format!(
            "Stages  isn't available for host role {} bootstrap {}",
            self.role.as_str(),
            self.bootstrap
        )))
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
        self.set_status(status.unwrap_or(derived_status), now);
        self.status_info = derived_info;
        self.push_history(stage, now);
    }

    /// Upstream `UpdateHostStatus` moves `status_updated_at` only when the
    /// status really changes.
    fn set_status(&mut self, status: &str, now: SystemTime) {
        if self.status != status {
            status.clone_into(&mut self.status);
            self.status_updated_at = now;
        }
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
            self.set_status("installing-pending-user-action", now);
            REBOOT_TIMEOUT_INFO.clone_into(&mut self.status_info);
            Some(Timeout::PendingUserAction)
        } else {
            self.set_status("error", now);
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

    /// The stored JSON strings (inventory, validations, …), rendered once.
    pub fn facts(&self) -> &crate::facts::HostFacts {
        self.facts
            .get_or_init(|| crate::facts::render(&self.facts_input()))
    }

    /// What `facts::render` reads of this host.
    fn facts_input(&self) -> crate::facts::HostInput<'_> {
        // A bootstrap host still set to auto-assign is validated as a master.
        let role = if self.bootstrap && self.role == Role::AutoAssign {
            Role::Master
        } else {
            self.role
        };
        crate::facts::HostInput {
            id: self.id,
            role: role.as_str(),
            control_plane: matches!(self.role, Role::Master | Role::Arbiter) || self.bootstrap,
            single_node: self.single_node,
            day2: self.kind == HostKind::AddToExistingClusterHost,
            placement: &self.placement,
        }
    }

    /// Upstream `hostutil.GetHostnameForMsg`: the requested hostname, else
    /// the inventory's, else the id.
    pub fn hostname_for_msg(&self) -> String {
        if !self.requested_hostname.is_empty() {
            return self.requested_hostname.clone();
        }
        if !self.placement.hostname.is_empty() {
            return self.placement.hostname.clone();
        }
        self.id.to_string()
    }

    /// Whether the installation started for this host: only then does it
    /// carry `installer_version` (set by the install step).
    fn install_started(&self) -> bool {
        self.current_stage.is_some()
            || matches!(
                self.status.as_str(),
                "installing"
                    | "installing-in-progress"
                    | "installing-pending-user-action"
                    | "installed"
                    | "error"
                    | "added-to-existing-cluster"
                    | "cancelled"
            )
    }

    /// The host as upstream's `models.Host` marshals it (`models/host.go`):
    /// an `omitempty` string, bool or number is absent when empty, false or
    /// zero (so `bootstrap` only when true, `progress.stage_timed_out` only
    /// when true, `installation_percentage` not at 0); `strfmt.DateTime`
    /// and `time.Time` fields are structs, which `omitempty` never drops
    /// (zero time when unset); `deleted_at` (`gorm.DeletedAt`) is null.
    /// Keys in `models.Host` field order, which is alphabetical.
    pub fn to_api_json(&self, mode: Mode, view: &HostView<'_>) -> Value {
        use crate::wire::{date_time, go_time, ZERO_DATE_TIME};
        let mut progress = serde_json::Map::new();
        if let Some(stage) = self.current_stage {
            progress.insert("current_stage".into(), json!(stage.as_str()));
        }
        let percentage = self.installation_percentage(mode);
        if percentage != 0 {
            progress.insert("installation_percentage".into(), json!(percentage));
        }
        if !self.progress_info.is_empty() {
            progress.insert("progress_info".into(), json!(self.progress_info));
        }
        progress.insert(
            "stage_started_at".into(),
            json!(date_time(self.stage_started_at)),
        );
        if self.stage_timed_out {
            progress.insert("stage_timed_out".into(), json!(true));
        }
        progress.insert(
            "stage_updated_at".into(),
            json!(date_time(self.stage_updated_at)),
        );

        let f = self.facts();
        let mut host = serde_json::Map::new();
        let mut text = |key: &str, value: &str| {
            if !value.is_empty() {
                host.insert(key.to_owned(), json!(value));
            }
        };
        text("api_vip_connectivity", &f.api_vip_connectivity);
        if view.connectivity {
            text("connectivity", &f.connectivity);
        }
        text("discovery_agent_version", crate::facts::AGENT_IMAGE);
        text("disks_info", &f.disks_info);
        text("domain_name_resolutions", &f.domain_name_resolutions);
        text("images_status", &f.images_status);
        text("installation_disk_id", &f.installation_disk_id);
        text("installation_disk_path", &f.installation_disk_path);
        if self.install_started() {
            text("installer_version", crate::facts::INSTALLER_IMAGE);
        }
        if view.inventory {
            text("inventory", &f.inventory);
        }
        text("logs_info", self.logs_info);
        text("ntp_sources", &f.ntp_sources);
        if view.customized {
            text("requested_hostname", &self.hostname_for_msg());
        } else {
            text("requested_hostname", &self.requested_hostname);
        }
        text("role", self.role.as_str());
        text("suggested_role", self.role.as_str());
        text("validations_info", &f.validations_info);
        if self.bootstrap {
            host.insert("bootstrap".into(), json!(true));
        }
        host.insert(
            "checked_in_at".into(),
            json!(date_time(Some(self.checked_in_at))),
        );
        if let Some(c) = self.cluster_id {
            host.insert("cluster_id".into(), json!(c));
        }
        host.insert("created_at".into(), json!(go_time(self.created_at)));
        host.insert("deleted_at".into(), Value::Null);
        host.insert("href".into(), json!(self.href()));
        host.insert("id".into(), json!(self.id));
        host.insert("infra_env_id".into(), json!(self.infra_env_id));
        host.insert("kind".into(), json!(self.kind.as_str()));
        host.insert(
            "logs_collected_at".into(),
            json!(date_time(self.logs_collected_at)),
        );
        host.insert("logs_started_at".into(), json!(ZERO_DATE_TIME));
        host.insert("media_status".into(), json!("connected"));
        host.insert("progress".into(), Value::Object(progress));
        // No `omitempty` upstream: null where the handler leaves it unset.
        let stages: Option<Vec<&str>> = view
            .progress_stages
            .map(|l| l.iter().map(|s| s.as_str()).collect());
        host.insert("progress_stages".into(), json!(stages));
        host.insert(
            "registered_at".into(),
            json!(date_time(Some(self.registered_at))),
        );
        // Host-level stage times: upstream only ever resets them.
        host.insert("stage_started_at".into(), json!(ZERO_DATE_TIME));
        host.insert("stage_updated_at".into(), json!(ZERO_DATE_TIME));
        host.insert("status".into(), json!(self.status));
        host.insert("status_info".into(), json!(self.status_info));
        host.insert(
            "status_updated_at".into(),
            json!(date_time(Some(self.status_updated_at))),
        );
        if self.placement.timestamp != 0 {
            host.insert("timestamp".into(), json!(self.placement.timestamp));
        }
        host.insert("updated_at".into(), json!(go_time(self.updated_at)));
        Value::Object(host)
    }
}

/// What a handler does to the hosts it returns before marshalling them.
#[derive(Clone, Copy, Debug)]
pub struct HostView<'a> {
    /// `customizeHost` fills `progress_stages`; `ListClusterHosts` does not
    /// (null).
    pub progress_stages: Option<&'a [Stage]>,
    /// `ListClusterHosts` clears the inventory unless `with-inventory`.
    pub inventory: bool,
    /// ... and the connectivity report unless `with-connectivity`.
    pub connectivity: bool,
    /// `customizeHost` also sets `requested_hostname` to
    /// `GetHostnameForMsg`.
    pub customized: bool,
}

impl<'a> HostView<'a> {
    /// `V2ListHosts`, `V2GetHost`, the hosts of `V2GetCluster`: customized,
    /// everything but `free_addresses`.
    pub fn customized(progress_stages: &'a [Stage]) -> Self {
        HostView {
            progress_stages: Some(progress_stages),
            inventory: true,
            connectivity: true,
            customized: true,
        }
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

    /// The cluster's status as the cluster monitor would derive it from its
    /// hosts (`internal/cluster/common.go` status infos): a day-2 cluster
    /// is adding hosts; hosts in error or waiting for the user show on the
    /// cluster; all hosts installed is an installed cluster.
    fn cluster_status(hosts: &[&Host], day2: bool) -> (&'static str, &'static str) {
        if day2 {
            return (
                "adding-hosts",
                "cluster is adding hosts to existing OCP cluster",
            );
        }
        if hosts.iter().any(|h| h.status == "error") {
            return ("error", "cluster has hosts in error");
        }
        if hosts
            .iter()
            .any(|h| h.status == "installing-pending-user-action")
        {
            return (
                "installing-pending-user-action",
                "Cluster has hosts pending user action",
            );
        }
        if !hosts.is_empty() && hosts.iter().all(|h| h.status == "installed") {
            return ("installed", "Cluster is installed");
        }
        ("installing", "Installation in progress")
    }

    /// `V2GetCluster`: upstream `models.Cluster` (`models/cluster.go`) with
    /// its `omitempty` rules, for an on-premise cluster installing on
    /// bare metal (single node: platform `none`, user-managed networking).
    /// `with_hosts` false is `exclude-hosts=true`: no hosts loaded, so
    /// `hosts` is null and the host counts (computed by `AfterFind` from
    /// the loaded hosts) are zero, hence absent.
    pub fn cluster_json(&self, cluster: &Cluster, mode: Mode, with_hosts: bool) -> Value {
        use crate::facts;
        use crate::wire::{date_time, go_encode, go_time, ZERO_DATE_TIME, ZERO_TIME};
        let id = cluster.id;
        let hosts: Vec<&Host> = self
            .hosts
            .iter()
            .filter(|h| h.cluster_id == Some(id))
            .collect();
        let single = cluster.is_single_node();
        let day2 = !hosts.is_empty()
            && hosts
                .iter()
                .all(|h| h.kind == HostKind::AddToExistingClusterHost);
        let subnet = facts::subnet_of(
            self.clusters.iter().position(|c| c.id == id).unwrap_or(0),
            true,
        );
        let cidr = facts::machine_cidr(subnet);
        let created = cluster.created_at.unwrap_or(SystemTime::UNIX_EPOCH);
        let (status, status_info) = World::cluster_status(&hosts, day2);
        let mut ids: Vec<String> = hosts.iter().map(|h| h.id.to_string()).collect();
        ids.sort();
        let vips = |ip: std::net::Ipv4Addr| {
            if single || day2 {
                json!([])
            } else {
                json!([{"cluster_id": id, "ip": ip.to_string(), "verification": "succeeded"}])
            }
        };
        let controller_logs = self.bundles.get(&BundleKey {
            cluster_id: id,
            host_id: None,
            logs_type: "controller".to_owned(),
        });
        // `UpdateInstallProgress` of the cluster: position of every host in
        // its list, weighted 0.7, after the preparing stage's 10 %.
        let (done, total) = hosts.iter().fold((0_usize, 0_usize), |(d, t), h| {
            let stages = stages_for(h.role, h.bootstrap, single, mode);
            let index = h
                .current_stage
                .and_then(|s| stages.iter().position(|x| *x == s))
                .map_or(0, |i| i + 1);
            (d + index, t + stages.len())
        });
        let installing = (done * 100).checked_div(total).unwrap_or(0);
        let installing = i64::try_from(installing).unwrap_or(100);
        let mut progress = serde_json::Map::new();
        progress.insert("finalizing_stage_started_at".into(), json!(ZERO_DATE_TIME));
        if !day2 {
            if installing != 0 {
                progress.insert("installing_stage_percentage".into(), json!(installing));
            }
            progress.insert(
                "preparing_for_installation_stage_percentage".into(),
                json!(100),
            );
            let total = if status == "installed" {
                100
            } else {
                installing * 7 / 10 + 10
            };
            progress.insert("total_percentage".into(), json!(total));
        }
        let workers = hosts.iter().filter(|h| h.role == Role::Worker).count();
        let mut features = json!({
            "Hyperthreading": {"data": {"hyperthreading_enabled": "all"}, "id": "HYPERTHREADING", "name": "Hyperthreading"}
        });
        if single {
            features["SNO"] = json!({"id": "SNO", "name": "SNO"});
        }
        let ok = |id: &str, message: &str| (id.to_owned(), message.to_owned());
        let validations = facts::validations_text(&[
            (
                "configuration",
                vec![ok("pull-secret-set", "The pull secret is set.")],
            ),
            (
                "hosts-data",
                vec![ok(
                    "all-hosts-are-ready-to-install",
                    "All hosts in the cluster are ready to install.",
                )],
            ),
            (
                "network",
                vec![
                    ok(
                        "cluster-cidr-defined",
                        "The Cluster Network CIDR is defined.",
                    ),
                    ok("dns-domain-defined", "The base domain is defined."),
                    ok(
                        "machine-cidr-defined",
                        "The Machine Network CIDR is defined.",
                    ),
                    ok(
                        "network-prefix-valid",
                        "The Cluster Network prefix is valid.",
                    ),
                    ok("network-type-valid", "The cluster has a valid network type"),
                    ok(
                        "networks-same-address-families",
                        "Same address families for all networks.",
                    ),
                    ok("no-cidrs-overlapping", "No CIDRS are overlapping."),
                    ok("ntp-server-configured", "No ntp problems found"),
                    ok(
                        "service-cidr-defined",
                        "The Service Network CIDR is defined.",
                    ),
                ],
            ),
            (
                "operators",
                ["lso", "odf", "cnv", "lvm", "mce"]
                    .iter()
                    .map(|n| {
                        ok(
                            &format!("{n}-requirements-satisfied"),
                            &format!("{n} is disabled"),
                        )
                    })
                    .collect(),
            ),
        ]);
        let operator = |name: &str| {
            json!({"bundles": null, "cluster_id": id, "name": name, "operator_type": "builtin",
                   "source_bundles": null, "status_updated_at": ZERO_DATE_TIME, "timeout_seconds": 3600})
        };
        let mut c = serde_json::Map::new();
        let mut put = |key: &str, value: Value| {
            c.insert(key.to_owned(), value);
        };
        put("api_vips", vips(facts::api_vip(subnet)));
        put(
            "base_dns_domain",
            json!(cluster
                .base_dns_domain
                .as_deref()
                .unwrap_or(facts::DEFAULT_BASE_DOMAIN)),
        );
        put("cluster_network_cidr", json!("10.128.0.0/14"));
        put("cluster_network_host_prefix", json!(23));
        put(
            "cluster_networks",
            json!([{"cidr": "10.128.0.0/14", "cluster_id": id, "host_prefix": 23}]),
        );
        if !hosts.is_empty() {
            put(
                "connectivity_majority_groups",
                json!(go_encode(
                    &json!({cidr.clone(): ids, "IPv4": ids, "IPv6": []}),
                    true
                )),
            );
        }
        if let Some(count) = cluster.control_plane_count {
            put("control_plane_count", json!(count));
        }
        put(
            "controller_logs_collected_at",
            json!(date_time(controller_logs.map(|m| m.uploaded_at))),
        );
        put("controller_logs_started_at", json!(ZERO_DATE_TIME));
        put("cpu_architecture", json!("x86_64"));
        put("created_at", json!(go_time(created)));
        put("deleted_at", Value::Null);
        put(
            "disk_encryption",
            json!({"enable_on": "none", "mode": "tpmv2"}),
        );
        put("feature_usage", json!(go_encode(&features, true)));
        if let Some(mode) = &cluster.high_availability_mode {
            put("high_availability_mode", json!(mode));
        }
        let listed: Vec<&Host> = if with_hosts {
            hosts.clone()
        } else {
            Vec::new()
        };
        put(
            "host_networks",
            if listed.is_empty() {
                json!([])
            } else {
                json!([{"cidr": cidr, "host_ids": ids}])
            },
        );
        put(
            "hosts",
            if with_hosts {
                Value::Array(
                    hosts
                        .iter()
                        .map(|h| h.to_api_json(mode, &HostView::customized(&h.stages(mode))))
                        .collect(),
                )
            } else {
                Value::Null
            },
        );
        if !listed.is_empty() {
            put("enabled_host_count", json!(listed.len()));
            put("total_host_count", json!(listed.len()));
            let ready = listed.iter().filter(|h| h.status == "known").count();
            if ready != 0 {
                put("ready_host_count", json!(ready));
            }
        }
        put("href", json!(format!("{API_BASE}/v2/clusters/{id}")));
        put("hyperthreading", json!("all"));
        put("id", json!(id));
        put(
            "image_info",
            json!({"created_at": ZERO_TIME, "expires_at": ZERO_DATE_TIME}),
        );
        put("imported", json!(false));
        put("ingress_vips", vips(facts::ingress_vip(subnet)));
        put("install_completed_at", json!(ZERO_DATE_TIME));
        put(
            "install_started_at",
            json!(date_time((!day2).then_some(created))),
        );
        put(
            "kind",
            json!(if day2 { "AddHostsCluster" } else { "Cluster" }),
        );
        put(
            "last-installation-preparation",
            if day2 {
                json!({})
            } else {
                json!({"status": "success"})
            },
        );
        put("load_balancer", json!({"type": "cluster-managed"}));
        if controller_logs.is_some() {
            put("logs_info", json!("collecting"));
        }
        put("machine_network_cidr", json!(cidr));
        put(
            "machine_networks",
            json!([{"cidr": cidr, "cluster_id": id}]),
        );
        put(
            "monitored_operators",
            json!([operator("console"), operator("cvo")]),
        );
        put("name", json!(cluster.name));
        put("network_type", json!("OVNKubernetes"));
        if !cluster.openshift_version.is_empty() {
            let release = if cluster.openshift_version.matches('.').count() < 2 {
                format!("{}.0", cluster.openshift_version)
            } else {
                cluster.openshift_version.clone()
            };
            put(
                "ocp_release_image",
                json!(format!(
                    "quay.io/openshift-release-dev/ocp-release:{release}-x86_64"
                )),
            );
            put("openshift_version", json!(cluster.openshift_version));
        }
        put("operator_bundles", json!([]));
        put(
            "platform",
            json!({"type": if single { "none" } else { "baremetal" }}),
        );
        put("progress", Value::Object(progress));
        put("pull_secret_set", json!(true));
        put("schedulable_masters", json!(false));
        put("schedulable_masters_forced_true", json!(workers < 2));
        put("service_network_cidr", json!("172.30.0.0/16"));
        put(
            "service_networks",
            json!([{"cidr": "172.30.0.0/16", "cluster_id": id}]),
        );
        put("status", json!(status));
        put("status_info", json!(status_info));
        put("status_updated_at", json!(date_time(Some(created))));
        put("updated_at", json!(go_time(created)));
        put("user_managed_networking", json!(single));
        put("validations_info", json!(validations));
        put("vip_dhcp_allocation", json!(false));
        Value::Object(c)
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
            logs_info: "",
            created_at: now,
            updated_at: now,
            registered_at: now,
            checked_in_at: now,
            status_updated_at: now,
            placement: crate::facts::Placement::default(),
            facts: std::sync::OnceLock::new(),
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
    fn host_json_follows_upstream_omitempty() {
        let mut h = host(Role::Worker, false, "installing", None);
        h.cluster_id = None;
        let stages = h.stages(Mode::Enhanced);
        let v = h.to_api_json(Mode::Enhanced, &HostView::customized(&stages));
        assert_eq!(v["kind"], "Host");
        assert!(v.get("cluster_id").is_none());
        // bool, string and number `omitempty` fields at their zero value.
        assert!(v.get("bootstrap").is_none());
        assert!(v.get("logs_info").is_none());
        assert!(v.get("free_addresses").is_none());
        let progress = v["progress"].as_object().unwrap();
        for absent in [
            "current_stage",
            "installation_percentage",
            "progress_info",
            "stage_timed_out",
        ] {
            assert!(!progress.contains_key(absent), "{absent}: {v}");
        }
        // strfmt.DateTime is a struct: never omitted, zero when unset.
        assert_eq!(progress["stage_started_at"], crate::wire::ZERO_DATE_TIME);
        assert_eq!(v["logs_collected_at"], crate::wire::ZERO_DATE_TIME);
        assert_eq!(v["deleted_at"], Value::Null);
        assert_eq!(v["progress_stages"].as_array().unwrap().len(), 11);
        assert!(v["created_at"].as_str().unwrap().ends_with('Z'));

        h.bootstrap = true;
        h.stage_timed_out = true;
        let v = h.to_api_json(
            Mode::Enhanced,
            &HostView {
                progress_stages: None,
                inventory: false,
                connectivity: false,
                customized: false,
            },
        );
        assert_eq!(v["bootstrap"], true);
        assert_eq!(v["progress"]["stage_timed_out"], true);
        assert_eq!(v["progress_stages"], Value::Null);
    }

    #[test]
    fn an_empty_stage_is_a_conflict_once_the_host_has_a_stage() {
        let now = SystemTime::now();
        let mut h = host(
            Role::Master,
            true,
            "installing-in-progress",
            Some(Stage::Rebooting),
        );
        assert_eq!(
            h.update_progress_without_stage("", now),
            Err(ProgressError::Conflict(
                "Stages  isn't available for host role master bootstrap true".into()
            ))
        );
        h.status = "installed".into();
        assert_eq!(
            h.update_progress_without_stage("x", now),
            Err(ProgressError::Conflict(
                "Can't set progress <> to host in status <installed>".into()
            ))
        );
        // No stage yet: the same "" stage, only the info is taken.
        let mut fresh = host(Role::Worker, false, "installing", None);
        assert_eq!(
            fresh.update_progress_without_stage("", now),
            Ok(ProgressOutcome::Unchanged)
        );
        assert_eq!(
            fresh.update_progress_without_stage("note", now),
            Ok(ProgressOutcome::InfoUpdated)
        );
        assert_eq!(fresh.progress_info, "note");
        assert_eq!(fresh.current_stage, None);
    }
}
