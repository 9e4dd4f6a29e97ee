//! The rules of every family in precedence order, each with the anchors it
//! needs. A line is put only to the rules whose anchors it holds
//! (`Dispatch`, computed by `anchors.rs`; asked in `classify.rs`), so a
//! rule's cost is paid only where it can match.

use super::signal::Signal;
use super::{host, machine, net, netconf, node, registry, runtime, storage, tls};

/// One rule: its check, and the fixed texts of which every message it
/// matches holds at least one (case-sensitive: the programs' own words).
pub(super) struct Rule {
    pub(super) check: fn(&str) -> Option<Signal>,
    pub(super) anchors: &'static [&'static str],
}

/// Anchors of systemd's unit events (`node::unit_event`): not a rule of
/// their own, read before the rules.
pub(super) const UNIT_EVENT_ANCHORS: &[&str] = &[
    // `systemctl status` blocks: the `● kubelet.service - …` header and
    // `Active: failed (Result: …)`.
    ".service - ",
    "Active: failed",
    ".service: Failed with result",
];

/// A unit that ended well: what turns an earlier failure of that unit into
/// a recovered one, so never left unread (`scanner::ReadBudget`).
pub(super) const UNIT_OK_ANCHORS: &[&str] =
    &[".service: Deactivated successfully", ".service: Succeeded"];

/// Rules in precedence order: a line that matches several is the first's
/// (a lookup failing through a mirror is a mirror problem; an expired
/// certificate is a clock problem before it is a trust problem).
pub(super) const RULES: &[Rule] = &[
    Rule {
        check: registry::mirror,
        anchors: &[
            "Mirrors also failed",
            "registries.conf",
            "manifest unknown",
            "repository name not known",
            "name unknown: ",
            "is blocked in",
            "HTTP response to HTTPS client",
        ],
    },
    Rule {
        check: tls::clock,
        anchors: &[
            "certificate has expired",
            "System clock wrong",
            "of NTP time",
            "Can't synchronise",
            "high clock drift",
            "clock difference against peer",
            "exceeds the allowed maximum",
            "Could not step system clock",
            "no sources",
            "Not synchronised",
        ],
    },
    Rule {
        check: tls::expired,
        anchors: &[
            "certificate has expired",
            "expired certificate",
            "certificate expired",
            "crypto/rsa: verification error",
            "certificate is expired",
            "Certificate is expired",
            "is expired: ",
            " expired at ",
        ],
    },
    Rule {
        check: host::ip_changed,
        anchors: &[
            "cannot assign requested address",
            "initial-advertise-peer-urls",
            "to match --initial-cluster",
            "member count is unequal",
            "cluster ID mismatch",
            "not a member of the etcd cluster",
            "already been bootstrapped",
            "does not match local member",
            "certificate is valid for",
            "peer-urls has",
            "failed to find local ID",
            "unmatched member",
        ],
    },
    Rule {
        check: tls::trust,
        anchors: &[
            "unknown authority",
            "certificate is not trusted",
            "local issuer certificate",
            "signed certificate in certificate chain",
            "certificate is valid for",
            "unknown certificate authority",
            "failed to load system roots",
            "legacy Common Name field",
        ],
    },
    Rule {
        check: net::proxy,
        anchors: &[
            "proxyconnect",
            "Proxy Authentication",
            "from proxy",
            "error connecting to proxy",
            "Could not resolve proxy",
            "Couldn't resolve proxy",
            "Proxy CONNECT aborted",
            "Unable to connect to the server: ",
            ": Forbidden",
            "Unsupported proxy",
            "CONNECT to proxy",
            "proxy closed connection",
            "proxy handshake error",
            "invalid proxy address",
        ],
    },
    Rule {
        check: netconf::dns_config,
        anchors: &[
            "no DNS servers",
            "on [::1]:53",
            "on 127.",
            "127.0.0.53",
            "Loop (127.",
            "Could not open resolv conf",
            "Could not parse resolv conf",
            "nameservers have been omitted",
            "could not commit DNS changes",
            "update-dns: plugin",
        ],
    },
    Rule {
        check: net::dns,
        anchors: &[
            "lookup ",
            "resolve host",
            "name resolution",
            "Name or service not known",
            "DNS lookup failure",
            "no servers could be reached",
        ],
    },
    Rule {
        check: registry::auth,
        anchors: &[
            "unauthorized",
            "Unauthorized",
            "resource is denied",
            "invalid username/password",
            "no basic auth credentials",
            "authentication failure",
            "authentication required",
            "403 Forbidden",
            "pull access denied",
            "unable to retrieve auth token",
        ],
    },
    Rule {
        check: storage::full,
        anchors: &[
            "no space left on device",
            "No space left on device",
            "viction manager: attempting to reclaim",
            "database space exceeded",
            "Disk usage on image filesystem",
            "DiskPressure",
            "disk pressure",
            "garbage collect required amount",
        ],
    },
    Rule {
        check: runtime::crio_config,
        anchors: runtime::INVALID,
    },
    Rule {
        check: runtime::crio_toml,
        anchors: runtime::TOML,
    },
    Rule {
        check: storage::crio_storage,
        anchors: &[
            "layer not known",
            "image not known",
            "overlay mount",
            "storage corruption",
            "storage/overlay",
            "read-write layer",
            "structure needs cleaning",
            "is not supported over",
            "could not restore sandbox",
            "parent snapshot",
            "missing parent",
            "resource busy",
        ],
    },
    Rule {
        check: storage::etcd,
        anchors: &[
            "fdatasync",
            "took too long",
            "slow disk",
            "likely overloaded",
            "heartbeat on time",
            "sync duration of",
            "read index response",
            "applied index took too long",
        ],
    },
    Rule {
        check: storage::io_error,
        anchors: &[
            "I/O error, dev ",
            "Buffer I/O error on dev ",
            "critical medium error, dev ",
        ],
    },
    Rule {
        check: machine::os_image,
        anchors: &[
            "osImageURL",
            "not new enough",
            "Invalid refspec",
            "nknown option",
            "unrecognized option",
            "failed to deploy container image",
            "ostree-prepare-root",
            "composefs",
            "unsupported config version",
            "config version not supported",
            "Invalid ref name",
            // ostree's `Remote "ostree-unverified-registry" not found`:
            // the transport's words hold no needle of the finder's table.
            "\" not found",
        ],
    },
    Rule {
        check: machine::daemon,
        anchors: &[
            "Marking Degraded",
            "unexpected on-disk state",
            "content mismatch for file",
            "mode mismatch for file",
            "pass --confirm to overwrite",
            "error extracting",
            "ailed to extract",
            "update OS to",
            "error running rpm-ostree",
            "ailed to pivot",
            "nothing provides",
            "is degraded",
            ".machineconfiguration.openshift.io ",
        ],
    },
    Rule {
        check: machine::os_target,
        anchors: &["rebase to ", "Booted osImageURL: "],
    },
    Rule {
        check: netconf::ovs,
        anchors: &[
            "configure-ovs",
            "Cannot bring up",
            "ovs-vsctl: ",
            "ovsdb-server",
            "ovs-if-",
            "no port named br-ex",
            "no bridge named br-ex",
            "ovsdb-failed",
            "of local ovs-interface",
            "cannot find connection for interface",
            "Openvswitch package is not installed",
            "could not open network device",
            "database connection failed",
        ],
    },
    Rule {
        check: netconf::route,
        anchors: &[
            "find default gateway",
            "get default gateway",
            "no default route",
            "No default route",
            "unable to configure IPv",
            "public address family",
            "nable to select an IP",
            "find suitable network address",
        ],
    },
    Rule {
        check: host::duplicate_ip,
        anchors: &[
            "already in use in the network",
            "onflict detected for IP",
            "ip-address-duplicate",
            "acd conflict",
            "uplicate address detected",
            "Unexpected mac address",
            "address conflict",
            "IP conflict",
            "Address conflict",
            "DAD failed",
            "duplicate address check",
            "IPv6 duplicate address",
            "DAD conflicts",
            "received an invalid passwd",
            "not present in MASTER advert",
            "advertisement interval mismatch",
            "conflict for address",
        ],
    },
    Rule {
        check: host::lease,
        anchors: &["new lease, address="],
    },
    Rule {
        check: host::hostname,
        anchors: &[
            "non-localhost hostname",
            "duplicate node name",
            "a Node with name",
            "not allowed to modify node",
            "Hostname [",
            "localhost",
        ],
    },
    Rule {
        check: net::mcs,
        anchors: &[
            ":22623",
            "GET result: OK",
            "GET error",
            ": attempt #",
            "GET result: Service Unavailable",
            "GET result: Forbidden",
            "unable to fetch resource in time",
        ],
    },
    Rule {
        check: net::api,
        anchors: &[
            ":6443",
            "Unable to connect to the server",
            "Successfully registered node",
            "Unable to register node",
            "lease exists",
            "rror updating node status",
            "Unable to update node status",
            "Failed to contact API server",
            "error retrieving resource lock",
            "did you specify the right host",
        ],
    },
    Rule {
        check: netconf::mtu,
        anchors: netconf::MTU,
    },
    Rule {
        check: netconf::egress,
        anchors: &[
            "i/o timeout",
            "timed out",
            "connection reset by peer",
            "TLS handshake timeout",
        ],
    },
    Rule {
        check: net::link,
        anchors: &[
            "Link is ",
            "link disconnected",
            "link connected",
            "network is unreachable",
            "no route to host",
            "carrier-changed",
            "ip-config-unavailable",
            "Activation: failed",
            "request timed out",
            "no-carrier",
            "link status",
            "without any active interface",
            "reason 'dhcp-",
            "state changed no lease",
            "IP config not received",
            "attached as port",
            "Lost carrier",
            "Gained carrier",
            // The transmit watchdog's `transmit queue N timed out`: its own
            // words hold no needle of the finder's table.
            "timed out",
        ],
    },
    Rule {
        check: registry::release,
        anchors: &[
            "exec format error",
            "does not match",
            "no image found in manifest list",
            "unknown flag: ",
            "unknown shorthand flag",
            "flag provided but not defined",
            "rendering bootstrap manifests",
        ],
    },
    Rule {
        check: node::csr,
        anchors: &[
            "not signed",
            "request was not signed",
            "Pending",
            "no serving certificate",
            "tls: internal error",
            "No target machine",
            "not authorized: ",
            "not valid: ",
        ],
    },
    Rule {
        check: node::selinux,
        anchors: &["avc:  denied", "avc: denied", "RELRO protection failed"],
    },
    Rule {
        check: machine::manifest,
        anchors: &[
            "failed to load some manifests",
            "unable to decode asset",
            "unable to convert asset",
            "error converting YAML",
            "error parsing",
            "could not find expected",
            "did not find expected key",
            "mapping values are not allowed",
            "Install Config",
            "install-config.yaml",
            "failed to parse",
            "is invalid: ",
            "unknown field",
            "cannot unmarshal",
            "Can't process manifest",
            "Invalid value: ",
        ],
    },
    Rule {
        check: runtime::image_pull,
        anchors: &[
            "Pull failed",
            "fetch release image",
            "query release image",
            "toomanyrequests",
            "too many requests",
            "rate limit",
            "ErrImagePull",
            "ImagePullBackOff",
            "pulling image",
            "ailed to pull image",
            "for image pull progress",
            "RegistryUnavailable",
            "initializing source",
            "digest mismatch",
            "blob unknown",
            "unexpected HTTP status: 5",
        ],
    },
    Rule {
        check: node::crash_loop,
        anchors: &["CrashLoopBackOff"],
    },
    Rule {
        check: node::cni,
        anchors: &["CNI configuration file in "],
    },
    Rule {
        check: node::login,
        anchors: &["pam_unix(sshd:session)", "pam_unix(login:session)"],
    },
];

/// Which rules a line is put to: bit `i` for `RULES[i]`.
pub(super) type Dispatch = u64;
/// The bit of the unit events in a [`Dispatch`].
pub(super) const UNIT_EVENT_BIT: Dispatch = 1 << 63;
const _: () = assert!(
    RULES.len() < 62,
    "one dispatch bit per rule; bit 62 is the catalogue's (`catalogue::CATALOGUE_BIT`)"
);
