//! What a real host row carries besides its stage: the discovery agent's
//! inventory, validations, connectivity and the other JSON strings the
//! service stores (field names from upstream `models/host.go`,
//! `models/inventory.go` and the models they reference; validation ids and
//! messages from `internal/host/validator.go` and
//! `internal/operators/manager.go`). Generated once per seed from the
//! hosts' ids, names and roles, so every list is deterministic and about as
//! large as the real service's: a host's inventory alone is several KiB.
//!
//! A layer below the model: it knows none of its types. The caller places
//! each group of hosts that share a subnet ([`place_group`]) and describes a
//! host by the few fields its facts are made of ([`HostInput`]).

use std::net::Ipv4Addr;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::wire;

/// The images the discovery agent reports pulling (`images_status`).
pub const INSTALLER_IMAGE: &str = "quay.io/edge-infrastructure/assisted-installer:latest";
pub const AGENT_IMAGE: &str = "quay.io/edge-infrastructure/assisted-installer-agent:latest";
const CONTROLLER_IMAGE: &str = "quay.io/edge-infrastructure/assisted-installer-controller:latest";

/// Base domain of a seeded cluster that names none.
pub const DEFAULT_BASE_DOMAIN: &str = "example.com";

/// Connectivity reports name at most this many other hosts: the real
/// report names every host of the cluster, which for a seed of thousands
/// of hosts (the reporter's list-size tests) would be gigabytes. Clusters
/// of up to 11 hosts get the full mesh.
pub const MAX_PEERS: usize = 10;

/// Where a host sits, decided when the seed is read (cheap; the JSON
/// strings are rendered from it on first use).
#[derive(Clone, Debug, Default)]
pub struct Placement {
    pub ip: Option<Ipv4Addr>,
    pub mac: String,
    pub subnet: u8,
    /// The inventory's hostname (what `GetHostnameForMsg` falls back to).
    pub hostname: String,
    /// `<name>.<base domain>` of the host's cluster.
    pub domain: Option<String>,
    pub peers: Vec<Peer>,
    /// The agent's last step-request time (unix seconds).
    pub timestamp: i64,
}

/// What a host's facts are made of, read off the caller's host row.
#[derive(Clone, Copy, Debug)]
pub struct HostInput<'a> {
    pub id: Uuid,
    /// The role the validation messages name: the host's `host-role`, or
    /// `master` for a bootstrap host still set to `auto-assign`.
    pub role: &'a str,
    /// A master, an arbiter or the bootstrap host: sized like one.
    pub control_plane: bool,
    pub single_node: bool,
    /// Added to an installed cluster (`AddToExistingClusterHost`).
    pub day2: bool,
    pub placement: &'a Placement,
}

/// The JSON strings of one host, as stored upstream.
#[derive(Clone, Debug, Default)]
pub struct HostFacts {
    pub inventory: String,
    pub disks_info: String,
    pub installation_disk_id: String,
    pub installation_disk_path: String,
    pub connectivity: String,
    pub domain_name_resolutions: String,
    pub images_status: String,
    pub ntp_sources: String,
    pub validations_info: String,
    /// Day-2 hosts only: the agent's check of the cluster's API.
    pub api_vip_connectivity: String,
}

/// The /24 a cluster's (or an unbound infra-env's) hosts sit in.
pub fn subnet_of(group: usize, bound: bool) -> u8 {
    let base = if bound { 110 } else { 210 };
    u8::try_from((base + group % 40) % 256).unwrap_or(110)
}

pub fn machine_cidr(subnet: u8) -> String {
    format!("192.168.{subnet}.0/24")
}

pub fn api_vip(subnet: u8) -> Ipv4Addr {
    Ipv4Addr::new(192, 168, subnet, 5)
}

pub fn ingress_vip(subnet: u8) -> Ipv4Addr {
    Ipv4Addr::new(192, 168, subnet, 7)
}

/// `<name>.<base domain>`: the cluster's DNS zone.
pub fn cluster_domain(name: &str, base_dns_domain: Option<&str>) -> String {
    format!("{name}.{}", base_dns_domain.unwrap_or(DEFAULT_BASE_DOMAIN))
}

/// A stable small number from an id, for serials and speeds.
fn id_number(id: Uuid) -> u64 {
    let b = id.as_bytes();
    u64::from_be_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]])
}

fn mac_of(id: Uuid) -> String {
    let b = id.as_bytes();
    format!("52:54:00:{:02x}:{:02x}:{:02x}", b[13], b[14], b[15])
}

fn link_local(mac: &str) -> String {
    let mut b = [0_u8; 6];
    for (slot, x) in b.iter_mut().zip(mac.split(':')) {
        *slot = u8::from_str_radix(x, 16).unwrap_or(0);
    }
    let group = |hi: u8, lo: u8| (u16::from(hi) << 8) | u16::from(lo);
    format!(
        "fe80::{:x}:{:x}:{:x}:{:x}/64",
        group(b[0] ^ 2, b[1]),
        group(b[2], 0xff),
        group(0xfe, b[3]),
        group(b[4], b[5])
    )
}

const CPU_FLAGS: &[&str] = &[
    "fpu",
    "vme",
    "de",
    "pse",
    "tsc",
    "msr",
    "pae",
    "mce",
    "cx8",
    "apic",
    "sep",
    "mtrr",
    "pge",
    "mca",
    "cmov",
    "pat",
    "pse36",
    "clflush",
    "mmx",
    "fxsr",
    "sse",
    "sse2",
    "ss",
    "syscall",
    "nx",
    "pdpe1gb",
    "rdtscp",
    "lm",
    "constant_tsc",
    "arch_perfmon",
    "rep_good",
    "nopl",
    "xtopology",
    "cpuid",
    "tsc_known_freq",
    "pni",
    "pclmulqdq",
    "vmx",
    "ssse3",
    "fma",
    "cx16",
    "pdcm",
    "pcid",
    "sse4_1",
    "sse4_2",
    "x2apic",
    "movbe",
    "popcnt",
    "tsc_deadline_timer",
    "aes",
    "xsave",
    "avx",
    "f16c",
    "rdrand",
    "hypervisor",
    "lahf_lm",
    "abm",
    "3dnowprefetch",
    "cpuid_fault",
    "invpcid_single",
    "ssbd",
    "ibrs",
    "ibpb",
    "stibp",
    "ibrs_enhanced",
    "tpr_shadow",
    "vnmi",
    "flexpriority",
    "ept",
    "vpid",
    "ept_ad",
    "fsgsbase",
    "tsc_adjust",
    "bmi1",
    "avx2",
    "smep",
    "bmi2",
    "erms",
    "invpcid",
    "mpx",
    "avx512f",
    "avx512dq",
    "rdseed",
    "adx",
    "smap",
    "clflushopt",
    "clwb",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "xsaveopt",
    "xsavec",
    "xgetbv1",
    "xsaves",
    "arat",
    "umip",
    "pku",
    "ospke",
    "avx512_vnni",
    "md_clear",
    "arch_capabilities",
];

/// What a host's inventory is built from.
struct Shape<'a> {
    host: &'a HostInput<'a>,
    hostname: &'a str,
    ip: Ipv4Addr,
    mac: &'a str,
    subnet: u8,
}

fn disk_path_id() -> (&'static str, &'static str) {
    ("/dev/disk/by-path/pci-0000:04:00.0", "/dev/vda")
}

fn inventory(s: &Shape<'_>) -> Value {
    let n = id_number(s.host.id);
    let (cpus, memory_gib) = match (s.host.control_plane, s.host.single_node) {
        (_, true) => (16_i64, 64_i64),
        (true, false) => (8, 32),
        (false, false) => (4, 16),
    };
    let (disk_id, disk_path) = disk_path_id();
    let gateway = Ipv4Addr::new(192, 168, s.subnet, 1);
    let serial = format!("{:08x}", n & 0xffff_ffff);
    let smart = json!({
        "json_format_version": [1, 0],
        "smartctl": {"version": [7, 1], "svn_revision": "5022", "platform_info": "x86_64-linux-5.14.0-427.40.1.el9_4.x86_64",
                     "build_info": "(local build)", "argv": ["smartctl", "--xall", "--json=c", disk_path],
                     "exit_status": 4},
        "device": {"name": disk_path, "info_name": disk_path, "type": "scsi", "protocol": "SCSI"},
        "vendor": "QEMU", "product": "QEMU HARDDISK", "model_name": "QEMU QEMU HARDDISK", "revision": "2.5+",
        "user_capacity": {"blocks": 251_658_240, "bytes": 128_849_018_880_i64},
        "logical_block_size": 512, "rotation_rate": 0, "form_factor": {"scsi_value": 0, "name": "unknown"},
        "local_time": {"time_t": 1_732_440_000, "asctime": "Sun Nov 24 09:20:00 2024 UTC"},
        "smart_support": {"available": false},
        "temperature_warning": {"enabled": false},
        "scsi_grown_defect_list": 0,
        "scsi_error_counter_log": {
            "read": {"errors_corrected_by_eccfast": 0, "errors_corrected_by_eccdelayed": 0, "errors_corrected_by_rereads_rewrites": 0,
                     "total_errors_corrected": 0, "correction_algorithm_invocations": 0, "gigabytes_processed": "0.000", "total_uncorrected_errors": 0},
            "write": {"errors_corrected_by_eccfast": 0, "errors_corrected_by_eccdelayed": 0, "errors_corrected_by_rereads_rewrites": 0,
                      "total_errors_corrected": 0, "correction_algorithm_invocations": 0, "gigabytes_processed": "0.000", "total_uncorrected_errors": 0}
        }
    });
    json!({
        "bmc_address": "0.0.0.0",
        "bmc_v6address": "::/0",
        "boot": {
            "command_line": "BOOT_IMAGE=/images/pxeboot/vmlinuz coreos.liveiso=rhcos-418.94.202501221327-0 ignition.firstboot ignition.platform.id=metal",
            "current_boot_mode": "uefi",
            "device_type": "persistent",
            "secure_boot_state": "Disabled"
        },
        "cpu": {
            "architecture": "x86_64",
            "count": cpus,
            "flags": CPU_FLAGS,
            "frequency": 2095.076,
            "model_name": "Intel Xeon Processor (Cascadelake)"
        },
        "disks": [
            {
                "bootable": true,
                "by_path": disk_id,
                "drive_type": "HDD",
                "has_uuid": true,
                "id": disk_id,
                "installation_eligibility": {"eligible": true, "not_eligible_reasons": null},
                "model": "QEMU_HARDDISK",
                "name": "vda",
                "path": disk_path,
                "serial": format!("drive-{serial}"),
                "size_bytes": 128_849_018_880_i64,
                "smart": smart.to_string(),
                "vendor": "0x1af4",
                "wwn": format!("0x{:016x}", n)
            },
            {
                "by_path": "/dev/disk/by-path/pci-0000:05:00.0",
                "drive_type": "HDD",
                "id": "/dev/disk/by-path/pci-0000:05:00.0",
                "installation_eligibility": {"eligible": true, "not_eligible_reasons": null},
                "model": "QEMU_HARDDISK",
                "name": "vdb",
                "path": "/dev/vdb",
                "serial": format!("data-{serial}"),
                "size_bytes": 107_374_182_400_i64,
                "smart": "{\"json_format_version\":[1,0],\"smartctl\":{\"version\":[7,1],\"exit_status\":4},\"device\":{\"name\":\"/dev/vdb\",\"info_name\":\"/dev/vdb\",\"type\":\"scsi\",\"protocol\":\"SCSI\"}}",
                "vendor": "0x1af4",
                "wwn": format!("0x{:016x}", n.rotate_left(7))
            },
            {
                "bootable": true,
                "by_path": "/dev/disk/by-path/pci-0000:00:1f.2-ata-1.0",
                "drive_type": "ODD",
                "hctl": "0:0:0:0",
                "id": "/dev/disk/by-path/pci-0000:00:1f.2-ata-1.0",
                "installation_eligibility": {"not_eligible_reasons": [
                    "Disk is removable",
                    "Disk is too small (disk only has 1.2 GB, but 20 GB are required)",
                    "Drive type is ODD, it must be one of HDD, SSD, Multipath, FC, LVM, RAID."
                ]},
                "is_installation_media": true,
                "model": "QEMU_DVD-ROM",
                "name": "sr0",
                "path": "/dev/sr0",
                "removable": true,
                "serial": "QM00001",
                "size_bytes": 1_229_979_648,
                "smart": "{\"json_format_version\":[1,0],\"smartctl\":{\"exit_status\":4}}",
                "vendor": "QEMU"
            }
        ],
        "gpus": [],
        "hostname": s.hostname,
        "interfaces": [
            {
                "flags": ["up", "broadcast", "multicast"],
                "has_carrier": true,
                "ipv4_addresses": [format!("{}/24", s.ip)],
                "ipv6_addresses": [link_local(s.mac)],
                "mac_address": s.mac,
                "mtu": 1500,
                "name": "enp1s0",
                "product": "0x0001",
                "speed_mbps": -1,
                "type": "physical",
                "vendor": "0x1af4"
            },
            {
                "flags": ["broadcast", "multicast"],
                "ipv4_addresses": [],
                "ipv6_addresses": [],
                "mac_address": format!("52:54:01:{}", s.mac.get(9..).unwrap_or("00:00:00")),
                "mtu": 1500,
                "name": "enp2s0",
                "product": "0x0001",
                "speed_mbps": -1,
                "type": "physical",
                "vendor": "0x1af4"
            }
        ],
        "memory": {
            "physical_bytes": memory_gib << 30,
            "physical_bytes_method": "dmidecode",
            "usable_bytes": (memory_gib << 30) - 708_190_208
        },
        "routes": [
            {"destination": "0.0.0.0", "family": 2, "gateway": gateway.to_string(), "interface": "enp1s0", "metric": 100},
            {"destination": "10.88.0.0", "family": 2, "interface": "cni-podman0"},
            {"destination": format!("192.168.{}.0", s.subnet), "family": 2, "interface": "enp1s0", "metric": 100},
            {"destination": "::1", "family": 10, "interface": "lo", "metric": 256},
            {"destination": "fe80::", "family": 10, "interface": "enp1s0", "metric": 1024}
        ],
        "system_vendor": {
            "manufacturer": "Red Hat",
            "product_name": "KVM",
            "serial_number": serial,
            "virtual": true
        },
        "tpm_version": "none"
    })
}

/// A passed check, as `ValidationResult` holds it.
fn validation(id: &str, message: &str) -> (String, String) {
    (id.to_owned(), message.to_owned())
}

/// A `ValidationsStatus` map as `json.Marshal` writes it: groups sorted (a
/// Go map), each result's fields in `ValidationResult` order (`id`,
/// `status`, `message`: `internal/host/refresh_status_preprocessor.go`),
/// which a `serde_json` map would sort.
pub fn validations_text(groups: &[(&str, Vec<(String, String)>)]) -> String {
    let quote = |s: &str| wire::go_encode(&Value::String(s.to_owned()), true);
    let mut sorted: Vec<&(&str, Vec<(String, String)>)> = groups.iter().collect();
    sorted.sort_by_key(|(name, _)| *name);
    let body: Vec<String> = sorted
        .iter()
        .map(|(name, results)| {
            let items: Vec<String> = results
                .iter()
                .map(|(id, message)| {
                    format!(
                        "{{\"id\":{},\"status\":\"success\",\"message\":{}}}",
                        quote(id),
                        quote(message)
                    )
                })
                .collect();
            format!("{}:[{}]", quote(name), items.join(","))
        })
        .collect();
    format!("{{{}}}", body.join(","))
}

/// `validations_info`: every check passed, as for a host that was allowed
/// to install. A map, so `json.Marshal` sorts the groups.
fn validations(host: &HostInput<'_>, hostname: &str, domain: Option<&str>) -> String {
    let role = host.role;
    let day2 = host.day2;
    let single_node = host.single_node;
    let platform = if single_node { "none" } else { "baremetal" };
    let hardware = vec![
        validation("has-inventory", "Valid inventory exists for the host"),
        validation("has-min-cpu-cores", "Sufficient CPU cores"),
        validation("has-min-memory", "Sufficient minimum RAM"),
        validation("has-min-valid-disks", "Sufficient disk capacity"),
        validation(
            "has-cpu-cores-for-role",
            &format!("Sufficient CPU cores for role {role}"),
        ),
        validation(
            "has-memory-for-role",
            &format!("Sufficient RAM for role {role}"),
        ),
        validation(
            "hostname-unique",
            &format!("Hostname {hostname} is unique in cluster"),
        ),
        validation("hostname-valid", &format!("Hostname {hostname} is allowed")),
        validation(
            "sufficient-installation-disk-speed",
            "Speed of installation disk is sufficient",
        ),
        validation(
            "compatible-with-cluster-platform",
            &format!("Host is compatible with cluster platform {platform}"),
        ),
        validation(
            "vsphere-disk-uuid-enabled",
            "VSphere disk.EnableUUID is enabled for this virtual machine",
        ),
        validation(
            "compatible-agent",
            "Host agent is compatible with the service",
        ),
        validation(
            "inventory-not-partially-truncated",
            "Inventory is not truncated",
        ),
        validation(
            "inventory-not-fully-truncated",
            "Inventory is not truncated",
        ),
    ];
    let domain = domain.unwrap_or_default();
    let connectivity = if day2 {
        "Day2 host is not required to be connected to other hosts in the cluster"
    } else {
        "Host has connectivity to the majority of hosts in the cluster"
    };
    let network = vec![
        validation("connected", "Host is connected"),
        validation("media-connected", "Media device is connected"),
        validation("machine-cidr-defined", "Machine Network CIDR is defined"),
        validation(
            "belongs-to-machine-cidr",
            "Host belongs to all machine network CIDRs",
        ),
        validation("ignition-downloadable", "Ignition is downloadable"),
        validation("belongs-to-majority-group", connectivity),
        validation("valid-platform-network-settings", "Platform KVM is allowed"),
        validation("ntp-synced", "Host NTP is synced"),
        validation(
            "time-synced-between-host-and-service",
            "Host clock is synchronized with service",
        ),
        validation(
            "container-images-available",
            "All required container images were either pulled successfully or no attempt was made to pull them",
        ),
        validation(
            "sufficient-network-latency-requirement-for-role",
            "Network latency requirement has been satisfied.",
        ),
        validation(
            "sufficient-packet-loss-requirement-for-role",
            "Packet loss requirement has been satisfied.",
        ),
        validation(
            "has-default-route",
            "Host has been configured with at least one default route.",
        ),
        validation(
            "api-domain-name-resolved-correctly",
            &format!("Domain name resolution for the api.{domain} domain was successful or not required"),
        ),
        validation(
            "api-int-domain-name-resolved-correctly",
            &format!("Domain name resolution for the api-int.{domain} domain was successful or not required"),
        ),
        validation(
            "apps-domain-name-resolved-correctly",
            &format!("Domain name resolution for the *.apps.{domain} domain was successful or not required"),
        ),
        validation(
            "dns-wildcard-not-configured",
            "DNS wildcard check was successful",
        ),
        validation(
            "non-overlapping-subnets",
            "Host subnets are not overlapping",
        ),
        validation(
            "no-ip-collisions-in-network",
            &format!("No IP collisions were detected by host {}", host.id),
        ),
        validation("mtu-valid", "MTU is ok"),
    ];
    let operators: Vec<(String, String)> = [
        "amd-gpu",
        "authorino",
        "cluster-observability",
        "cnv",
        "fence-agents-remediation",
        "kmm",
        "kube-descheduler",
        "loki",
        "lso",
        "lvm",
        "mce",
        "metallb",
        "mtv",
        "nmstate",
        "node-feature-discovery",
        "node-healthcheck",
        "node-maintenance",
        "numa-resources",
        "nvidia-gpu",
        "oadp",
        "odf",
        "openshift-ai",
        "openshift-logging",
        "osc",
        "pipelines",
        "self-node-remediation",
        "serverless",
        "servicemesh",
    ]
    .iter()
    .map(|name| {
        validation(
            &format!("{name}-requirements-satisfied"),
            &format!("{name} is disabled"),
        )
    })
    .collect();
    validations_text(&[
        ("hardware", hardware),
        ("network", network),
        ("operators", operators),
    ])
}

fn domain_resolutions(domain: Option<&str>, subnet: u8) -> Value {
    let Some(domain) = domain else {
        return json!({"resolutions": [
            {"cnames": [], "domain_name": "quay.io", "ipv4_addresses": ["3.216.152.103", "34.224.196.162"], "ipv6_addresses": []}
        ]});
    };
    let api = api_vip(subnet).to_string();
    let apps = ingress_vip(subnet).to_string();
    json!({"resolutions": [
        {"cnames": [], "domain_name": format!("api.{domain}"), "ipv4_addresses": [api], "ipv6_addresses": []},
        {"cnames": [], "domain_name": format!("api-int.{domain}"), "ipv4_addresses": [api], "ipv6_addresses": []},
        {"cnames": [], "domain_name": format!("console-openshift-console.apps.{domain}"), "ipv4_addresses": [apps], "ipv6_addresses": []},
        {"cnames": [], "domain_name": format!("validateNoWildcardDNS.{domain}"), "ipv4_addresses": [], "ipv6_addresses": []},
        {"cnames": [], "domain_name": format!("validateNoWildcardDNS.{domain}."), "ipv4_addresses": [], "ipv6_addresses": []},
        {"cnames": [], "domain_name": "quay.io", "ipv4_addresses": ["3.216.152.103", "34.224.196.162"], "ipv6_addresses": []}
    ]})
}

fn images_status(n: u64) -> Value {
    let digest = |salt: u64| {
        format!(
            "{:016x}{:016x}{:016x}{:016x}",
            n ^ salt,
            salt,
            n.rotate_left(17),
            salt.rotate_left(29)
        )
    };
    let release = format!(
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
        digest(0x9e37_79b9_7f4a_7c15)
    );
    let must_gather = format!(
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
        digest(0xc2b2_ae3d_27d4_eb4f)
    );
    let mut images = serde_json::Map::new();
    for (name, size, time) in [
        (INSTALLER_IMAGE.to_owned(), 88_562_377.0_f64, 3.27_f64),
        (CONTROLLER_IMAGE.to_owned(), 98_122_541.0, 3.91),
        (release, 519_487_613.0, 18.44),
        (must_gather, 287_134_015.0, 9.73),
    ] {
        let rate = (size / 1_048_576.0 / time * 100.0).round() / 100.0;
        images.insert(
            name.clone(),
            json!({"download_rate": rate, "name": name, "result": "success", "size_bytes": size, "time": time}),
        );
    }
    Value::Object(images)
}

fn ntp_sources(subnet: u8) -> Value {
    json!([
        {"source_name": format!("192.168.{subnet}.1"), "source_state": "synced"},
        {"source_name": "time.cloudflare.com", "source_state": "not_combined"},
        {"source_name": "ntp1.example.net", "source_state": "unreachable"}
    ])
}

/// A peer in the connectivity report.
#[derive(Clone, Debug)]
pub struct Peer {
    id: Uuid,
    ip: Ipv4Addr,
    mac: String,
}

fn connectivity(my_ip: Ipv4Addr, peers: &[Peer]) -> Value {
    let me = Peer {
        id: Uuid::nil(),
        ip: my_ip,
        mac: String::new(),
    };
    let remote: Vec<Value> = peers
        .iter()
        .map(|p| {
            let rtt = 0.2 + f64::from(u8::try_from(id_number(p.id) % 90).unwrap_or(0)) / 100.0;
            json!({
                "host_id": p.id,
                "l2_connectivity": [{"outgoing_ip_address": me.ip.to_string(), "outgoing_nic": "enp1s0",
                                     "remote_ip_address": p.ip.to_string(), "remote_mac": p.mac, "successful": true}],
                "l3_connectivity": [{"average_rtt_ms": rtt, "outgoing_nic": "enp1s0",
                                     "remote_ip_address": p.ip.to_string(), "successful": true}],
                "mtu_report": [{"mtu_successful": true, "outgoing_nic": "enp1s0", "remote_ip_address": p.ip.to_string()}]
            })
        })
        .collect();
    json!({"remote_hosts": remote})
}

/// The inventory's hostname: the requested one, or what a DHCP-less live
/// ISO reports, the MAC address with dashes.
fn hostname_of(requested_hostname: &str, mac: &str) -> String {
    if requested_hostname.is_empty() {
        mac.replace(':', "-")
    } else {
        requested_hostname.to_owned()
    }
}

/// Places one group of hosts: those of one cluster (or of one unbound
/// infra-env), given in seed order as `(id, requested hostname)`. They
/// share the /24 `subnet` and list each other (up to [`MAX_PEERS`]) in
/// their connectivity report; `domain` is the cluster's
/// ([`cluster_domain`]), none for an unbound infra-env. One placement per
/// member, in the same order.
pub fn place_group(
    members: &[(Uuid, &str)],
    subnet: u8,
    domain: Option<&str>,
    timestamp: i64,
) -> Vec<Placement> {
    let all: Vec<Peer> = members
        .iter()
        .enumerate()
        .map(|(k, &(id, _))| Peer {
            id,
            ip: Ipv4Addr::new(192, 168, subnet, u8::try_from(10 + k % 240).unwrap_or(10)),
            mac: mac_of(id),
        })
        .collect();
    let n = all.len();
    members
        .iter()
        .enumerate()
        .map(|(k, &(_, requested_hostname))| {
            // The next hosts in seed order, wrapping round.
            let peers: Vec<Peer> = (1..n.min(MAX_PEERS + 1))
                .map(|d| all[(k + d) % n].clone())
                .collect();
            let me = &all[k];
            Placement {
                ip: Some(me.ip),
                hostname: hostname_of(requested_hostname, &me.mac),
                mac: me.mac.clone(),
                subnet,
                domain: domain.map(str::to_owned),
                peers,
                timestamp,
            }
        })
        .collect()
}

/// Renders a placed host's stored JSON strings. Everything they depend on
/// is fixed when the seed is read, so the caller renders them once.
pub fn render(host: &HostInput<'_>) -> HostFacts {
    let p = host.placement;
    let ip = p.ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
    let (disk_id, disk_path) = disk_path_id();
    let n = id_number(host.id);
    let shape = Shape {
        host,
        hostname: &p.hostname,
        ip,
        mac: &p.mac,
        subnet: p.subnet,
    };
    let disks_info =
        json!({disk_id: {"disk_speed": {"speed_ms": 3 + n % 12, "tested": true}, "path": disk_id}});
    let api_vip_connectivity = match (host.day2, &p.domain) {
        (true, Some(domain)) => wire::go_encode(
            &json!({"is_success": true, "url": format!("http://api.{domain}:22624/config/worker")}),
            true,
        ),
        _ => String::new(),
    };
    HostFacts {
        inventory: wire::go_encode(&inventory(&shape), true),
        disks_info: wire::go_encode(&disks_info, true),
        installation_disk_id: disk_id.to_owned(),
        installation_disk_path: disk_path.to_owned(),
        connectivity: wire::go_encode(&connectivity(ip, &p.peers), true),
        domain_name_resolutions: wire::go_encode(
            &domain_resolutions(p.domain.as_deref(), p.subnet),
            true,
        ),
        images_status: wire::go_encode(&images_status(n), true),
        ntp_sources: wire::go_encode(&ntp_sources(p.subnet), true),
        validations_info: validations(host, &p.hostname, p.domain.as_deref()),
        api_vip_connectivity,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_local_follows_eui64() {
        assert_eq!(
            link_local("52:54:00:12:34:56"),
            "fe80::5054:ff:fe12:3456/64"
        );
    }
}
