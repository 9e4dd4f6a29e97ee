//! Host signals: what the files the machine-config daemon and the
//! bootstrap-in-place installer leave on the host say about the install flow
//! this boot belongs to, and whether the control plane's configuration is
//! applied and running.
//!
//! The boot count alone cannot tell the flows apart: most installs boot from
//! disk once (machine-config-daemon-firstboot applies the config in place),
//! older releases, s390x and multipath boot twice, and single node runs its
//! bootstrap on the installed disk. Every signal here is a file whose writer
//! is named in docs/design.md ("Flows and host signals").

use std::path::Path;
use std::time::SystemTime;

/// Written by Ignition from the machine config server's answer; removed by
/// machine-config-daemon-firstboot when it is done (MCO
/// `pkg/daemon/constants/constants.go` `MachineConfigEncapsulatedPath`; the
/// unit's `ConditionPathExists=`).
pub(crate) const MC_ENCAPSULATED: &str = "/etc/ignition-machine-config-encapsulated.json";
/// Firstboot renames the encapsulated config to this just before the reboot
/// it queues when the config differs from the booted OS (`RunFirstbootCompleteMachineconfig`);
/// with no difference it deletes the file and skips the reboot.
pub(crate) const MC_ENCAPSULATED_BAK: &str = "/etc/ignition-machine-config-encapsulated.json.bak";
/// Appended by the machine config server to every config it serves
/// (`pkg/server/server.go`, `InitialNodeAnnotationsFilePath`).
pub(crate) const NODE_ANNOTATIONS: &str = "/etc/machine-config-daemon/node-annotations.json";
/// The in-cluster daemon renames the annotations file once the node is part
/// of the cluster (`pkg/daemon/daemon.go`, `InitialNodeAnnotationsBakPath`).
pub(crate) const NODE_ANNOTATIONS_BAK: &str = "/etc/machine-config-daemon/node-annotation.json.bak";
/// Single node, bootstrap in place: the installed system's `bootkube.service`
/// runs only while this exists, and its script removes it (and `/opt/openshift`)
/// once the bootstrap is over (openshift/installer
/// `data/data/bootstrap/bootstrap-in-place/files/opt/openshift/bootstrap-in-place/master-update.fcc`
/// and `bootstrap-in-place-post-reboot.sh`).
pub(crate) const BOOTSTRAP_IN_PLACE_KUBECONFIG: &str =
    "/etc/kubernetes/bootstrap-secrets/kubeconfig";
/// The post-reboot bootstrap script itself, written by the same config; kept
/// as a second sign in case only one of the two survived a partial cleanup.
pub(crate) const BOOTSTRAP_IN_PLACE_SCRIPT: &str =
    "/usr/local/bin/bootstrap-in-place-post-reboot.sh";

/// What the host's files say right now. Read again every cycle: firstboot and
/// the bootstrap script change them during the boot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HostSignals {
    /// The machine config's first application has not finished on this host.
    pub(crate) firstboot_pending: bool,
    /// Firstboot applied a config that needed a reboot (classic flow).
    pub(crate) firstboot_rebooted: bool,
    /// ... and that was before this boot began: this is the boot after it.
    pub(crate) firstboot_rebooted_earlier: bool,
    /// The host was configured from the machine config server at all.
    pub(crate) from_machine_config_server: bool,
    /// The single-node bootstrap still runs on this boot.
    pub(crate) bootstrap_in_place: bool,
}

impl HostSignals {
    /// Reads the signals under `root` (the sysroot; `/` on a host).
    /// `boot_started` (wall clock) tells a `.bak` renamed on an earlier boot
    /// from one renamed seconds ago, right before the reboot firstboot queued.
    pub(crate) fn read(root: &Path, boot_started: Option<SystemTime>) -> Self {
        let path = |p: &str| root.join(p.trim_start_matches('/'));
        let exists = |p: &str| path(p).symlink_metadata().is_ok();
        let firstboot_pending = exists(MC_ENCAPSULATED);
        let bak = path(MC_ENCAPSULATED_BAK).symlink_metadata().ok();
        let firstboot_rebooted = bak.is_some();
        let firstboot_rebooted_earlier = match (bak.and_then(|m| m.modified().ok()), boot_started) {
            (Some(renamed), Some(started)) => renamed < started,
            _ => false,
        };
        HostSignals {
            firstboot_pending,
            firstboot_rebooted,
            firstboot_rebooted_earlier,
            from_machine_config_server: firstboot_pending
                || firstboot_rebooted
                || exists(NODE_ANNOTATIONS)
                || exists(NODE_ANNOTATIONS_BAK),
            bootstrap_in_place: exists(BOOTSTRAP_IN_PLACE_KUBECONFIG)
                || exists(BOOTSTRAP_IN_PLACE_SCRIPT),
        }
    }
}

/// The install flow, as far as the host and the service tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Pointer-ignition boot, firstboot reboot, control-plane boot.
    Classic,
    /// One boot from disk: firstboot applied the config in place.
    SingleBoot,
    /// Single node: this boot still runs the bootstrap.
    BootstrapInPlace,
    /// Single node after its bootstrap: its own control-plane config runs.
    SingleNode,
    /// A host added to an installed cluster (Rebooting -> Done).
    Day2,
    /// Nothing decisive yet (firstboot still pending, or a host without the
    /// machine-config files): the boot count decides the stage.
    Undetermined,
}

impl Flow {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Flow::Classic => "classic two-boot install",
            Flow::SingleBoot => "single-boot install (machine config applied in place)",
            Flow::BootstrapInPlace => "single node, bootstrap in place",
            Flow::SingleNode => "single node, after its bootstrap",
            Flow::Day2 => "day-2 host",
            Flow::Undetermined => "flow not determined yet",
        }
    }
}

/// Host kind upstream gives hosts added to an installed cluster
/// (`models.HostKindAddToExistingClusterHost`).
pub(crate) const DAY2_HOST_KIND: &str = "AddToExistingClusterHost";

/// What the service says about the host, beside its files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ServiceView<'a> {
    /// The host's kind (`AddToExistingClusterHost` on day 2).
    pub(crate) host_kind: Option<&'a str>,
    /// The host bootstraps a single-node cluster (its `bootstrap` flag on a
    /// cluster of one control-plane node), when the service said so.
    pub(crate) single_node_bootstrap: bool,
}

/// Tells the flow from the host's files, what the service says, and (last)
/// the boot count. A single node's bootstrap host bootstraps on its first
/// boot from disk: the service says so even where the bootstrap-in-place
/// files are missing or gone (`Reporter::signals` folds that in).
pub(crate) fn classify(signals: HostSignals, boot_number: u32, service: ServiceView<'_>) -> Flow {
    if service.host_kind == Some(DAY2_HOST_KIND) {
        Flow::Day2
    } else if signals.bootstrap_in_place {
        Flow::BootstrapInPlace
    } else if service.single_node_bootstrap {
        Flow::SingleNode
    } else if signals.firstboot_rebooted || (boot_number >= 2 && !signals.firstboot_pending) {
        Flow::Classic
    } else if signals.from_machine_config_server && !signals.firstboot_pending {
        Flow::SingleBoot
    } else {
        Flow::Undetermined
    }
}

/// Is the control plane's configuration applied and running on this boot?
/// That is what `Booted with control plane ignition` means in every flow: on
/// the classic flow's second boot it came with the boot; on a single boot it
/// arrives when firstboot finishes in place, or when kubelet is healthy
/// outside a bootstrap (kubelet starts only after firstboot).
pub(crate) fn control_plane_config_running(
    flow: Flow,
    signals: HostSignals,
    boot_number: u32,
    kubelet_healthy: bool,
) -> bool {
    match flow {
        Flow::BootstrapInPlace => false,
        // The `.bak` appears just before firstboot's reboot: not yet running
        // on the boot that renamed it.
        Flow::Classic => boot_number >= 2 || signals.firstboot_rebooted_earlier,
        Flow::SingleBoot | Flow::SingleNode => true,
        Flow::Day2 | Flow::Undetermined => kubelet_healthy && !signals.firstboot_pending,
    }
}

/// Does a healthy kubelet end the reporter's job on this boot? Not while the
/// boot runs the single-node bootstrap (that kubelet serves the bootstrap
/// control plane), nor before firstboot applied the machine config.
pub(crate) fn kubelet_ends_job(signals: HostSignals) -> bool {
    !signals.bootstrap_in_place && !signals.firstboot_pending
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, p: &str) {
        let path = root.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "{}").unwrap();
    }

    #[test]
    fn signals_follow_the_upstream_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(HostSignals::read(root, None), HostSignals::default());
        touch(root, NODE_ANNOTATIONS);
        touch(root, MC_ENCAPSULATED);
        let s = HostSignals::read(root, None);
        assert!(s.firstboot_pending && s.from_machine_config_server);
        assert_eq!(classify(s, 1, ServiceView::default()), Flow::Undetermined);
        assert!(!kubelet_ends_job(s));

        // Applied in place: firstboot deleted the file, no .bak.
        std::fs::remove_file(root.join(MC_ENCAPSULATED.trim_start_matches('/'))).unwrap();
        let s = HostSignals::read(root, None);
        assert_eq!(classify(s, 1, ServiceView::default()), Flow::SingleBoot);
        assert!(control_plane_config_running(Flow::SingleBoot, s, 1, false));
        assert!(kubelet_ends_job(s));

        // Applied with a reboot: the .bak stays.
        touch(root, MC_ENCAPSULATED_BAK);
        let s = HostSignals::read(root, None);
        assert_eq!(classify(s, 1, ServiceView::default()), Flow::Classic);
        assert!(!control_plane_config_running(Flow::Classic, s, 1, true));
        assert!(control_plane_config_running(Flow::Classic, s, 2, false));
        let later = HostSignals::read(
            root,
            Some(SystemTime::now() + std::time::Duration::from_secs(5)),
        );
        assert!(control_plane_config_running(Flow::Classic, later, 1, false));

        touch(root, BOOTSTRAP_IN_PLACE_KUBECONFIG);
        let s = HostSignals::read(root, None);
        assert_eq!(
            classify(s, 1, ServiceView::default()),
            Flow::BootstrapInPlace
        );
        assert!(!kubelet_ends_job(s));
        assert!(!control_plane_config_running(
            Flow::BootstrapInPlace,
            s,
            1,
            true
        ));
    }

    #[test]
    fn without_machine_config_files_the_boot_count_and_kubelet_decide() {
        let none = HostSignals::default();
        assert_eq!(
            classify(none, 1, ServiceView::default()),
            Flow::Undetermined
        );
        assert_eq!(classify(none, 2, ServiceView::default()), Flow::Classic);
        assert!(!control_plane_config_running(
            Flow::Undetermined,
            none,
            1,
            false
        ));
        assert!(control_plane_config_running(
            Flow::Undetermined,
            none,
            1,
            true
        ));
        let day2 = ServiceView {
            host_kind: Some(DAY2_HOST_KIND),
            ..ServiceView::default()
        };
        assert_eq!(classify(none, 1, day2), Flow::Day2);
    }

    #[test]
    fn the_service_tells_a_single_node_where_the_files_do_not() {
        let sno = ServiceView {
            host_kind: Some("Host"),
            single_node_bootstrap: true,
        };
        // After its bootstrap (a later boot, or the files gone): its own
        // control-plane config runs, not a second boot of a classic flow.
        let none = HostSignals::default();
        assert_eq!(classify(none, 2, sno), Flow::SingleNode);
        assert!(control_plane_config_running(
            Flow::SingleNode,
            none,
            2,
            false
        ));
        // While the bootstrap runs (`Reporter::signals` sets the signal on
        // its first boot), the files' answer holds.
        let bootstrapping = HostSignals {
            bootstrap_in_place: true,
            ..HostSignals::default()
        };
        assert_eq!(classify(bootstrapping, 1, sno), Flow::BootstrapInPlace);
        assert!(!kubelet_ends_job(bootstrapping));
    }
}
