//! The vocabulary of the diagnosis: what went wrong (a stable category
//! name), how bad it is, and what one rule says about one line. Its own
//! module so that the rules (one file per family) and the engine that
//! correlates their signals both depend on it, and not on each other.

use serde::{Deserialize, Serialize};

/// What went wrong, in stable names (`docs/diagnosis.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    DnsResolution,
    Proxy,
    RegistryAuth,
    UntrustedCa,
    ClockSkew,
    McsUnreachable,
    ApiUnreachable,
    DiskFull,
    EtcdSlowDisk,
    NetworkLink,
    MirrorConfig,
    ReleaseMismatch,
    CsrPending,
    CrioStorage,
    Selinux,
    Other,
}

impl Category {
    pub const ALL: [Category; 16] = [
        Category::DnsResolution,
        Category::Proxy,
        Category::RegistryAuth,
        Category::UntrustedCa,
        Category::ClockSkew,
        Category::McsUnreachable,
        Category::ApiUnreachable,
        Category::DiskFull,
        Category::EtcdSlowDisk,
        Category::NetworkLink,
        Category::MirrorConfig,
        Category::ReleaseMismatch,
        Category::CsrPending,
        Category::CrioStorage,
        Category::Selinux,
        Category::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::DnsResolution => "dns_resolution",
            Category::Proxy => "proxy",
            Category::RegistryAuth => "registry_auth",
            Category::UntrustedCa => "untrusted_ca",
            Category::ClockSkew => "clock_skew",
            Category::McsUnreachable => "mcs_unreachable",
            Category::ApiUnreachable => "api_unreachable",
            Category::DiskFull => "disk_full",
            Category::EtcdSlowDisk => "etcd_slow_disk",
            Category::NetworkLink => "network_link",
            Category::MirrorConfig => "mirror_config",
            Category::ReleaseMismatch => "release_mismatch",
            Category::CsrPending => "csr_pending",
            Category::CrioStorage => "crio_storage",
            Category::Selinux => "selinux",
            Category::Other => "other",
        }
    }

    /// What to check, shown with every finding of the category.
    pub fn hint(self) -> &'static str {
        match self {
            Category::DnsResolution => "Check the nameservers in resolv.conf answer for this name (dig NAME @SERVER), and the DHCP/static DNS settings",
            Category::Proxy => "Check the proxy address, its credentials, and that noProxy covers the cluster's own names",
            Category::RegistryAuth => "Check that the pull secret has a valid auth for this registry (podman login --authfile)",
            Category::UntrustedCa => "Add the registry's or proxy's CA to additionalTrustBundle, or fix the certificate's names",
            Category::ClockSkew => "Check the host clock against NTP (chronyc tracking, BIOS time); certificates are checked against it",
            Category::McsUnreachable => "Check that api-int resolves and port 22623 on the bootstrap/control plane is reachable through load balancer and firewall",
            Category::ApiUnreachable => "Check api-int resolution and port 6443 through the load balancer; normal for a few minutes while the API starts",
            Category::DiskFull => "Free space or use a bigger disk; check what fills it (du -x), container images and journals",
            Category::EtcdSlowDisk => "etcd needs fdatasync under 10 ms at p99: use SSD/NVMe storage, not shared or throttled disks",
            Category::NetworkLink => "Check cabling, switch port, VLAN and NIC driver; nmcli device status shows the carrier",
            Category::MirrorConfig => "Check ImageContentSourcePolicy/registries.conf mirrors hold the release (oc adm release mirror) and load",
            Category::ReleaseMismatch => "Check the release image matches the host's architecture and the cluster's version",
            Category::CsrPending => "Approve pending CSRs (oc get csr; oc adm certificate approve) or check the approver can reach the API",
            Category::CrioStorage => "Reset container storage (crio wipe, or remove /var/lib/containers/storage) and restart crio",
            Category::Selinux => "Check file labels (restorecon -Rv PATH) of what the process accessed",
            Category::Other => "Read the evidence lines and the unit's journal around them",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// How a signal weighs before correlation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nature {
    /// Stops an installation by itself (refused pull secret, full disk).
    Fatal,
    /// Normal in small doses (retries): an error only when it lasts or a
    /// service failed on it.
    Transient,
    /// The same (category, key) working again; key `*` clears every key.
    Recovery,
}

/// What one rule says about one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub category: Category,
    /// The decisive value: the host that did not resolve, the registry, the
    /// full mount.
    pub key: String,
    pub summary: String,
    pub nature: Nature,
}

impl Signal {
    pub(super) fn new(
        category: Category,
        key: impl Into<String>,
        summary: String,
        nature: Nature,
    ) -> Self {
        Self {
            category,
            key: key.into(),
            summary,
            nature,
        }
    }
}
