//! What the contract is made of: where it lives, its files and their modes,
//! and the environment names of the upstream unit. Names only, so that the
//! format modules and the readers and writers beside them share one list.

/// Where the discovery agent writes the contract on the host.
pub const DEFAULT_DIR: &str = "/etc/assisted-boot-reporter";

/// Mode of the contract directory: only root lists it.
pub const MODE_DIR: u32 = 0o700;
/// Mode of a file that holds a secret (the pull secret, a proxy password).
pub const MODE_SECRET: u32 = 0o600;
/// Mode of the other files.
pub const MODE_PUBLIC: u32 = 0o644;

/// Files of the discovery contract directory.
pub mod files {
    pub(crate) const SERVICE_URL: &str = "service-url";
    pub const PULL_SECRET: &str = "pull-secret";
    pub(crate) const INFRA_ENV_ID: &str = "infra-env-id";
    pub const HOST_ID: &str = "host-id";
    pub(crate) const CLUSTER_ID: &str = "cluster-id";
    pub(crate) const CA_CERT: &str = "ca.crt";
    pub(crate) const TUNABLES: &str = "reporter.conf";
    /// HTTP_PROXY / HTTPS_PROXY / NO_PROXY; mode 0600, a proxy URL may hold a password.
    pub(crate) const PROXY: &str = "proxy.env";
    /// Everything the reporter may remove when it cleans up, in the order it
    /// removes them: the secrets first, `host-id` (the unit's start
    /// condition) last, so a cleanup cut short is resumed by the next start
    /// and what can remain is never a secret.
    pub const REMOVAL_ORDER: [&str; 8] = [
        PULL_SECRET,
        PROXY,
        SERVICE_URL,
        INFRA_ENV_ID,
        CLUSTER_ID,
        CA_CERT,
        TUNABLES,
        HOST_ID,
    ];
}

/// Environment names of the upstream unit (`assisted-boot-reporter.service`
/// as the discovery agent wrote it), which the reporter honours too.
pub mod env {
    pub(crate) const SERVICE_URL: &str = "ASSISTED_SERVICE_URL";
    pub(crate) const TOKEN: &str = "PULL_SECRET_TOKEN";
    pub(crate) const CLUSTER_ID: &str = "CLUSTER_ID";
    pub(crate) const HOST_ID: &str = "HOST_ID";
    pub(crate) const INFRA_ENV_ID: &str = "INFRA_ENV_ID";
    pub(crate) const UPLOAD_MINUTES: &str = "LOG_SEND_FREQUENCY_IN_MINUTES";
    pub(crate) const TIMEOUT_MINUTES: &str = "SERVICE_TIMEOUT_MINUTES";
    /// Ours, not the upstream unit's: seconds, the scale of the value.
    pub(crate) const UPLOAD_SPREAD_SECONDS: &str = "LOG_SEND_SPREAD_SECONDS";
    /// Proxy settings, upper case first as Go reads them (the upstream
    /// discovery unit sets both spellings).
    pub(crate) const HTTP_PROXY: [&str; 2] = ["HTTP_PROXY", "http_proxy"];
    pub(crate) const HTTPS_PROXY: [&str; 2] = ["HTTPS_PROXY", "https_proxy"];
    pub(crate) const NO_PROXY: [&str; 2] = ["NO_PROXY", "no_proxy"];
}
