//! Writes a journal-like text of a given size for the benchmarks: what
//! `journalctl -b 0 -o short-iso-precise` prints on a control-plane host
//! during an installation (kubelet, crio, NetworkManager, systemd, kernel,
//! ovs), deterministic for a seed.
//!
//! Three shapes (`--shape`), the journals the diagnosis engine is measured on:
//! - `generated` (the default): a first boot going well; few lines carry one
//!   of the engine's anchors (`diagnose::ANCHORS`).
//! - `busy`: a control-plane host under load: the same lines mixed with etcd's
//!   zap JSON warnings (apply request took too long, slow fdatasync, missed
//!   heartbeats, ReadIndex retries) and its info traces, kubelet's klog
//!   reflector, lease, event and probe errors against an API that comes and
//!   goes, crio, ovs and ovn-controller. `--hit-fraction` of its lines (15 %
//!   by default) carry an anchor: the generator checks every line against
//!   the engine's own anchors and draws a failure line when the running
//!   fraction falls behind, so the figure holds whatever the anchor list is.
//! - `worst`: every line carries an anchor: realistic failure lines of every
//!   family (DNS, proxy, TLS, registry, disk, etcd, clock, network, SELinux,
//!   services), values varied; a drawn line without an anchor is drawn again.
//!
//! The fraction of lines with an anchor is printed to stderr as JSON.
//!
//! Real journals compress 6–7x with gzip -6: templates repeat, but pod UIDs,
//! container IDs, image digests, timestamps and addresses do not. The
//! generator draws those from pools sized so that the output lands in that
//! range (bench/run prints the measured ratio beside every figure); a filler
//! of repeated lines would compress 100x and flatter every compressor.
//!
//!   journal-gen --bytes 1073741824 --seed 1 -o journal.log
//!   journal-gen --shape busy --bytes 62914560 -o busy.log

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use assisted_boot_reporter::diagnose;
use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Shape {
    /// A first boot going well (the bytes every other section uses).
    Generated,
    /// A control-plane host under load: --hit-fraction of lines hit an anchor.
    Busy,
    /// Every line hits an anchor.
    Worst,
}

#[derive(Debug, Parser)]
#[command(about = "Write a realistic journal-like text of --bytes bytes")]
struct Args {
    /// Output size in bytes (the last line is cut to fit exactly).
    #[arg(long)]
    bytes: u64,
    /// Seed of the generator: same seed and size, same bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output file.
    #[arg(short, long)]
    output: PathBuf,
    /// What the journal is of.
    #[arg(long, value_enum, default_value_t = Shape::Generated)]
    shape: Shape,
    /// `busy` only: the fraction of lines that carry an anchor.
    #[arg(long, default_value_t = 0.15)]
    hit_fraction: f64,
}

const HOST: &str = "master-0";

const NAMESPACES: &[&str] = &[
    "openshift-etcd",
    "openshift-kube-apiserver",
    "openshift-kube-controller-manager",
    "openshift-kube-scheduler",
    "openshift-ovn-kubernetes",
    "openshift-multus",
    "openshift-machine-config-operator",
    "openshift-cluster-version",
    "openshift-dns",
    "openshift-ingress",
    "openshift-monitoring",
    "openshift-authentication",
    "openshift-network-operator",
    "openshift-cluster-node-tuning-operator",
    "openshift-image-registry",
];

const POD_STEMS: &[&str] = &[
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "openshift-kube-scheduler",
    "ovnkube-node",
    "multus",
    "machine-config-daemon",
    "cluster-version-operator",
    "dns-default",
    "router-default",
    "prometheus-k8s",
    "oauth-openshift",
    "network-operator",
    "tuned",
    "node-ca",
    "installer-3",
    "revision-pruner-7",
];

const CONTAINERS: &[&str] = &[
    "etcd",
    "etcdctl",
    "etcd-metrics",
    "kube-apiserver",
    "kube-apiserver-check-endpoints",
    "ovnkube-controller",
    "ovn-controller",
    "kube-rbac-proxy",
    "machine-config-daemon",
    "dns",
    "router",
    "prometheus",
    "config-reloader",
    "oauth-openshift",
    "tuned",
    "installer",
    "pruner",
];

const PROBE_ERRORS: &[&str] = &[
    "connect: connection refused",
    "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
    "net/http: request canceled while waiting for connection",
    "EOF",
];

const NM_STATES: &[(&str, &str)] = &[
    ("unavailable", "disconnected"),
    ("disconnected", "prepare"),
    ("prepare", "config"),
    ("config", "ip-config"),
    ("ip-config", "ip-check"),
    ("ip-check", "secondaries"),
    ("secondaries", "activated"),
];

struct Pools {
    pods: Vec<Pod>,
    containers: Vec<String>,
    images: Vec<String>,
    veths: Vec<String>,
    /// CRI request IDs: crio logs one per call, and calls repeat per pod.
    requests: Vec<String>,
}

struct Pod {
    namespace: &'static str,
    name: String,
    uid: String,
}

fn hex(rng: &mut fastrand::Rng, len: usize) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    (0..len).map(|_| DIGITS[rng.usize(..16)] as char).collect()
}

fn uuid(rng: &mut fastrand::Rng) -> String {
    format!(
        "{}-{}-4{}-a{}-{}",
        hex(rng, 8),
        hex(rng, 4),
        hex(rng, 3),
        hex(rng, 3),
        hex(rng, 12)
    )
}

impl Pools {
    fn new(rng: &mut fastrand::Rng) -> Self {
        let pods = (0..240)
            .map(|i| {
                let stem = POD_STEMS[i % POD_STEMS.len()];
                let namespace = NAMESPACES[i % NAMESPACES.len()];
                let name = if i % 3 == 0 {
                    format!("{stem}-{HOST}")
                } else {
                    format!("{stem}-{}", hex(rng, 5))
                };
                Pod {
                    namespace,
                    name,
                    uid: uuid(rng),
                }
            })
            .collect();
        Self {
            pods,
            containers: (0..1200).map(|_| hex(rng, 64)).collect(),
            images: (0..120).map(|_| hex(rng, 64)).collect(),
            veths: (0..200).map(|_| hex(rng, 8)).collect(),
            requests: (0..400).map(|_| uuid(rng)).collect(),
        }
    }
}

/// Journal time: starts at the first boot from disk and advances by a few
/// hundred microseconds a line, as a busy boot does.
struct Clock {
    micros: u64,
}

impl Clock {
    /// 2026-11-22T10:00:00Z in microseconds since midnight.
    const START: u64 = 10 * 3600 * 1_000_000;

    fn tick(&mut self, rng: &mut fastrand::Rng) {
        self.micros += rng.u64(1..2_000);
    }

    fn parts(&self) -> (u64, u64, u64, u64) {
        let m = Self::START + self.micros;
        let secs = m / 1_000_000;
        (
            (secs / 3600) % 24,
            (secs / 60) % 60,
            secs % 60,
            m % 1_000_000,
        )
    }

    fn iso(&self) -> String {
        let (h, m, s, us) = self.parts();
        format!("2026-11-22T{h:02}:{m:02}:{s:02}.{us:06}+0000")
    }

    fn klog(&self) -> String {
        let (h, m, s, us) = self.parts();
        format!("1122 {h:02}:{m:02}:{s:02}.{us:06}")
    }

    fn epoch(&self) -> String {
        let m = Self::START + self.micros;
        let secs = 1_795_305_600 + m / 1_000_000;
        format!("{secs}.{:04}", (m % 1_000_000) / 100)
    }

    /// Go's `time.Now().UnixNano()` at this line.
    fn unix_nanos(&self) -> u64 {
        (1_795_305_600_000_000 + Self::START + self.micros) * 1_000
    }
}

/// The pod and container the current burst of events is about.
struct Focus {
    pod: usize,
    container: usize,
    cid: usize,
}

impl Focus {
    fn new(rng: &mut fastrand::Rng, pools: &Pools) -> Self {
        Self {
            pod: rng.usize(..pools.pods.len()),
            container: rng.usize(..CONTAINERS.len()),
            cid: rng.usize(..pools.containers.len()),
        }
    }
}

fn pick<'a, T>(rng: &mut fastrand::Rng, items: &'a [T]) -> &'a T {
    &items[rng.usize(..items.len())]
}

/// One journal line (without the newline).
fn line(
    rng: &mut fastrand::Rng,
    pools: &Pools,
    clock: &Clock,
    focus: &mut Focus,
    out: &mut String,
) {
    let ts = clock.iso();
    // Events come in bursts per pod (sandbox, create, start, scope, mount,
    // probes): most lines are about the pod the previous one was about.
    if rng.u32(..100) >= 70 {
        *focus = Focus::new(rng, pools);
    }
    let pod = &pools.pods[focus.pod];
    let container = CONTAINERS[focus.container];
    let cid = &pools.containers[focus.cid];
    let _ = match rng.u32(..100) {
        // kubelet: about half of a control plane's first-boot journal.
        0..=11 => write!(
            out,
            "{ts} {HOST} kubenswrapper[2345]: I{} 2345 kubelet.go:2542] \"SyncLoop (PLEG): event for pod\" pod=\"{}/{}\" event={{\"ID\":\"{}\",\"Type\":\"ContainerStarted\",\"Data\":\"{cid}\"}}",
            clock.klog(),
            pod.namespace,
            pod.name,
            pod.uid
        ),
        12..=21 => write!(
            out,
            "{ts} {HOST} kubenswrapper[2345]: I{} 2345 reconciler_common.go:258] \"operationExecutor.VerifyControllerAttachedVolume started for volume \\\"kube-api-access-{}\\\" (UniqueName: \\\"kubernetes.io/projected/{}-kube-api-access-{}\\\") pod \\\"{}\\\" (UID: \\\"{}\\\") \" pod=\"{}/{}\"",
            clock.klog(),
            &pod.uid[..5],
            pod.uid,
            &pod.uid[..5],
            pod.name,
            pod.uid,
            pod.namespace,
            pod.name
        ),
        22..=31 => write!(
            out,
            "{ts} {HOST} kubenswrapper[2345]: I{} 2345 prober.go:107] \"Probe failed\" probeType=\"Readiness\" pod=\"{}/{}\" podUID=\"{}\" containerName=\"{container}\" probeResult=\"failure\" output=\"Get \\\"https://10.128.{}.{}:{}/healthz\\\": dial tcp 10.128.{}.{}:{}: {}\"",
            clock.klog(),
            pod.namespace,
            pod.name,
            pod.uid,
            rng.u8(0..4),
            rng.u8(2..250),
            rng.u16(6000..10000),
            rng.u8(0..4),
            rng.u8(2..250),
            rng.u16(6000..10000),
            pick(rng, PROBE_ERRORS)
        ),
        32..=37 => write!(
            out,
            "{ts} {HOST} kubenswrapper[2345]: E{} 2345 pod_workers.go:1301] \"Error syncing pod, skipping\" err=\"failed to \\\"StartContainer\\\" for \\\"{container}\\\" with CrashLoopBackOff: \\\"back-off {}s restarting failed container={container} pod={}_{}({})\\\"\" pod=\"{}/{}\" podUID=\"{}\"",
            clock.klog(),
            [10, 20, 40, 80, 160, 300][rng.usize(..6)],
            pod.name,
            pod.namespace,
            pod.uid,
            pod.namespace,
            pod.name,
            pod.uid
        ),
        38..=43 => write!(
            out,
            "{ts} {HOST} kubenswrapper[2345]: I{} 2345 kubelet_node_status.go:{}] \"{}\" node=\"{HOST}\"",
            clock.klog(),
            rng.u16(400..800),
            [
                "Recording event message for node",
                "Node became not ready",
                "Updating node status",
                "Successfully registered node",
            ][rng.usize(..4)]
        ),
        // crio
        44..=53 => write!(
            out,
            "{ts} {HOST} crio[1876]: time=\"2026-11-22 {}\" level=info msg=\"Created container {cid}: {}/{}/{container}\" id={} name=/runtime.v1.RuntimeService/CreateContainer",
            &clock.iso()[11..26].replace('T', " "),
            pod.namespace,
            pod.name,
            pick(rng, &pools.requests)
        ),
        54..=61 => write!(
            out,
            "{ts} {HOST} crio[1876]: time=\"2026-11-22 {}\" level=info msg=\"Checking image status: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}\" id={} name=/runtime.v1.ImageService/ImageStatus",
            &clock.iso()[11..26],
            pick(rng, &pools.images),
            pick(rng, &pools.requests)
        ),
        62..=65 => write!(
            out,
            "{ts} {HOST} crio[1876]: time=\"2026-11-22 {}\" level=info msg=\"Pulled image: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}\" id={} name=/runtime.v1.ImageService/PullImage",
            &clock.iso()[11..26],
            pick(rng, &pools.images),
            pick(rng, &pools.requests)
        ),
        66..=69 => write!(
            out,
            "{ts} {HOST} crio[1876]: time=\"2026-11-22 {}\" level=info msg=\"Got pod network &{{Name:{} Namespace:{} ID:{cid} UID:{} NetNS:/var/run/netns/{} Networks:[] RuntimeConfig:map[multus-cni-network:{{IP: MAC: PortMappings:[] Bandwidth:<nil> IpRanges:[]}}] Aliases:map[]}}\"",
            &clock.iso()[11..26],
            pod.name,
            pod.namespace,
            pod.uid,
            uuid(rng)
        ),
        // systemd scopes and mounts for every container
        70..=77 => write!(
            out,
            "{ts} {HOST} systemd[1]: Started crio-conmon-{cid}.scope - crio-conmon-{cid}.scope."
        ),
        78..=83 => write!(
            out,
            "{ts} {HOST} systemd[1]: var-lib-containers-storage-overlay\\x2dcontainers-{cid}-userdata-shm.mount: Deactivated successfully."
        ),
        // NetworkManager, kernel, ovs
        84..=88 => {
            let (from, to) = *pick(rng, NM_STATES);
            write!(
                out,
                "{ts} {HOST} NetworkManager[1203]: <info>  [{}] device ({}): state change: {from} -> {to} (reason 'none', sys-iface-state: 'managed')",
                clock.epoch(),
                if rng.bool() { "br-ex".to_owned() } else { format!("{}@if{}", pick(rng, &pools.veths), rng.u8(2..9)) }
            )
        }
        89..=91 => write!(
            out,
            "{ts} {HOST} NetworkManager[1203]: <info>  [{}] dhcp4 (br-ex): state changed new lease, address=192.168.111.{}",
            clock.epoch(),
            rng.u8(20..30)
        ),
        92..=95 => write!(
            out,
            "{ts} {HOST} kernel: IPv6: ADDRCONF(NETDEV_CHANGE): {}: link becomes ready",
            pick(rng, &pools.veths)
        ),
        _ => write!(
            out,
            "{ts} {HOST} ovs-vswitchd[1098]: ovs|{:05}|bridge|INFO|bridge br-int: added interface {} on port {}",
            rng.u32(100..99_999),
            pick(rng, &pools.veths),
            rng.u16(2..400)
        ),
    };
}

// ---------------------------------------------------------------------------
// busy and worst: a control-plane host under load, and failures only

const API: &str = "api-int.ocp4.example.com";
const API_IP: &str = "192.168.111.5";
const HOST_IP: &str = "192.168.111.20";

/// What a kubelet informer lists: (type, URL path and query).
const LISTS: &[(&str, &str)] = &[
    (
        "*v1.Node",
        "/api/v1/nodes?fieldSelector=metadata.name%3Dmaster-0&limit=500&resourceVersion=0",
    ),
    (
        "*v1.Service",
        "/api/v1/services?fieldSelector=spec.clusterIP%21%3DNone&limit=500&resourceVersion=0",
    ),
    (
        "*v1.CSIDriver",
        "/apis/storage.k8s.io/v1/csidrivers?limit=500&resourceVersion=0",
    ),
    (
        "*v1.RuntimeClass",
        "/apis/node.k8s.io/v1/runtimeclasses?limit=500&resourceVersion=0",
    ),
];

/// How a call to the API fails while it comes and goes.
const API_ERRORS: &[&str] = &[
    "dial tcp 192.168.111.5:6443: connect: connection refused",
    "dial tcp 192.168.111.5:6443: connect: connection refused",
    "net/http: TLS handshake timeout",
    "http2: client connection lost",
    "context deadline exceeded",
    "net/http: request canceled (Client.Timeout exceeded while awaiting headers)",
];

const OBJECTS: &[(&str, &str)] = &[
    ("ConfigMap", "etcd-ca-bundle"),
    ("ConfigMap", "etcd-scripts"),
    ("ConfigMap", "kube-root-ca.crt"),
    ("ConfigMap", "openshift-service-ca.crt"),
    ("ConfigMap", "config"),
    ("Secret", "etcd-all-certs"),
    ("Secret", "serving-cert"),
    ("Secret", "metrics-tls"),
    ("Secret", "ovn-cert"),
    ("Secret", "node-bootstrapper-token"),
];

const SERVICES: &[&str] = &[
    "NetworkManager-dispatcher",
    "systemd-hostnamed",
    "rpm-ostreed",
    "sssd-kcm",
    "systemd-tmpfiles-clean",
    "kubelet-auto-node-size",
    "nodeip-configuration",
];

/// State of the busy host: etcd's members, keys and revisions, counters of
/// the components that number their lines.
struct Busy {
    peers: Vec<String>,
    keys: Vec<String>,
    revision: u64,
    ovs_seq: u32,
    ovn_seq: u32,
    macs: Vec<String>,
    /// The local member's request IDs, as etcd's idutil.Generator makes
    /// them (v3.5 pkg/idutil/id.go): member ID's low 16 bits, then the
    /// start time in ms and a counter, incremented once per raft request
    /// (server/etcdserver/v3_server.go: header IDs and ReadIndex IDs).
    req_prefix: u64,
    req_suffix: u64,
    /// Journal time of the last request ID drawn, in microseconds.
    req_at: u64,
    /// Per pod: the kubelet's event series. client-go names an event
    /// `<object>.<UnixNano hex>` once and, while writes fail, patches it
    /// under that name with the resource version last seen and count + 1
    /// (tools/record/util/util.go GenerateEventName,
    /// tools/record/events_cache.go eventObserve).
    events: Vec<Option<EventSeries>>,
    /// Per (namespace, object): the resource version its reflector relists
    /// from, its last sync's until a list succeeds (client-go
    /// tools/cache/reflector.go relistResourceVersion).
    list_rvs: std::collections::HashMap<(&'static str, &'static str), u64>,
    /// A crio request logged by its first line (`Stopping container: …`),
    /// whose last line (`Stopped container …`) comes next: the line in full
    /// but for its time.
    crio_pending: Option<String>,
}

struct EventSeries {
    unix_nanos: u64,
    count: u32,
    event_rv: u64,
    pod_rv: u64,
}

impl Busy {
    fn new(rng: &mut fastrand::Rng, pools: &Pools) -> Self {
        let mut keys: Vec<String> = pools
            .pods
            .iter()
            .map(|p| format!("/kubernetes.io/pods/{}/{}", p.namespace, p.name))
            .collect();
        for ns in NAMESPACES {
            for (kind, name) in OBJECTS {
                keys.push(format!(
                    "/kubernetes.io/{}s/{ns}/{name}",
                    kind.to_lowercase()
                ));
            }
            keys.push(format!("/kubernetes.io/leases/{ns}/{}-lock", &ns[10..]));
        }
        for node in ["master-0", "master-1", "master-2"] {
            keys.push(format!("/kubernetes.io/leases/kube-node-lease/{node}"));
            keys.push(format!("/kubernetes.io/minions/{node}"));
        }
        keys.push("/kubernetes.io/operator.openshift.io/etcds/cluster".to_owned());
        keys.push("/kubernetes.io/config.openshift.io/clusterversions/version".to_owned());
        Self {
            peers: (0..3).map(|_| hex(rng, 16)).collect(),
            keys,
            revision: 40_000 + rng.u64(..10_000),
            ovs_seq: rng.u32(100..2_000),
            ovn_seq: rng.u32(100..2_000),
            macs: (0..200)
                .map(|_| {
                    let h = hex(rng, 8);
                    format!("0a:58:{}:{}:{}:{}", &h[..2], &h[2..4], &h[4..6], &h[6..8])
                })
                .collect(),
            req_prefix: u64::from(rng.u16(..)) << 48,
            // etcd starts within the first minute of the journal.
            req_suffix: ((JOURNAL_START_MS + rng.u64(..60_000)) & ((1 << 40) - 1)) << 8,
            req_at: 0,
            events: (0..pools.pods.len()).map(|_| None).collect(),
            list_rvs: std::collections::HashMap::new(),
            crio_pending: None,
        }
    }

    /// The next logged request's ID: the requests served since the last
    /// one logged, at about one a millisecond (a loaded control plane),
    /// advance the counter (etcd's idutil.Generator.Next, once each).
    fn request_id(&mut self, rng: &mut fastrand::Rng, clock: &Clock) -> u64 {
        let elapsed_ms = clock.micros.saturating_sub(self.req_at) / 1_000;
        self.req_at = clock.micros;
        self.req_suffix += 1 + rng.u64(..=2 * elapsed_ms);
        self.req_prefix | (self.req_suffix & ((1 << 48) - 1))
    }
}

/// 2026-11-22T10:00:00Z (the journal's start) in ms since the Unix epoch.
const JOURNAL_START_MS: u64 = (1_795_305_600 + 10 * 3600) * 1_000;

/// A Go `time.Duration` as etcd and kubelet print it: `1.328207813s`,
/// `512.345678ms`, between `lo` and `hi` microseconds.
fn go_duration(rng: &mut fastrand::Rng, lo: u64, hi: u64) -> String {
    go_duration_ns(draw_ns(rng, lo, hi))
}

/// Nanoseconds between `lo` and `hi` microseconds.
fn draw_ns(rng: &mut fastrand::Rng, lo: u64, hi: u64) -> u64 {
    rng.u64(lo..hi) * 1_000 + rng.u64(..1_000)
}

/// `ns` as Go prints a `time.Duration`.
fn go_duration_ns(ns: u64) -> String {
    // Go's time.Duration.String picks the unit by size: under a
    // millisecond it prints µs (zap logs durations with it).
    let text = if ns >= 1_000_000_000 {
        format!("{}.{:09}s", ns / 1_000_000_000, ns % 1_000_000_000)
    } else if ns >= 1_000_000 {
        format!("{}.{:06}ms", ns / 1_000_000, ns % 1_000_000)
    } else if ns >= 1_000 {
        format!("{}.{:03}µs", ns / 1_000, ns % 1_000)
    } else {
        format!("{ns}ns")
    };
    // Go drops trailing zeros of the fraction.
    let (num, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(text.len()),
    );
    format!("{}{unit}", num.trim_end_matches('0').trim_end_matches('.'))
}

/// zap's timestamp (etcd): `2026-11-22T10:00:01.234567Z`.
fn zap_ts(clock: &Clock) -> String {
    let (h, m, s, us) = clock.parts();
    format!("2026-11-22T{h:02}:{m:02}:{s:02}.{us:06}Z")
}

/// A klog header: `E1122 10:00:01.234567    2345 reflector.go:147] `.
fn klog_head(out: &mut String, severity: char, clock: &Clock, at: &str) {
    let _ = write!(out, "{severity}{}    2345 {at}] ", clock.klog());
}

/// The journal prefix of one line: `TS master-0 IDENT: `.
fn prefix(out: &mut String, clock: &Clock, ident: &str) {
    let _ = write!(out, "{} {HOST} {ident}: ", clock.iso());
}

fn etcd_json(out: &mut String, clock: &Clock, level: &str, caller: &str, msg: &str) {
    prefix(out, clock, "etcd[3012]");
    let _ = write!(
        out,
        "{{\"level\":\"{level}\",\"ts\":\"{}\",\"caller\":\"{caller}\",\"msg\":\"{msg}\"",
        zap_ts(clock)
    );
}

/// A line the busy host logs because it is slow or its API is down: what
/// the anchors are there to find (most of these carry one).
fn busy_failure(
    rng: &mut fastrand::Rng,
    pools: &Pools,
    busy: &mut Busy,
    clock: &Clock,
    out: &mut String,
) {
    let pod_index = rng.usize(..pools.pods.len());
    let pod = &pools.pods[pod_index];
    let _ = match rng.u32(..100) {
        0..=27 => {
            etcd_json(
                out,
                clock,
                "warn",
                "etcdserver/util.go:170",
                "apply request took too long",
            );
            let took = go_duration(rng, 100_000, 2_500_000);
            let key = pick(rng, &busy.keys).clone();
            if rng.u32(..3) == 0 {
                busy.revision += rng.u64(1..20);
                let id = busy.request_id(rng, clock);
                write!(
                    out,
                    ",\"took\":\"{took}\",\"expected-duration\":\"100ms\",\"prefix\":\"\",\"request\":\"header:<ID:{} username:\\\"etcd\\\" auth_revision:1 > txn:<compare:<target:MOD key:\\\"{key}\\\" mod_revision:{} > success:<request_put:<key:\\\"{key}\\\" value_size:{} >> failure:<request_range:<key:\\\"{key}\\\" > >>\",\"response\":\"size:{}\"}}",
                    id,
                    busy.revision - rng.u64(1..5_000),
                    rng.u32(200..40_000),
                    rng.u32(18..24)
                )
            } else {
                write!(
                    out,
                    ",\"took\":\"{took}\",\"expected-duration\":\"100ms\",\"prefix\":\"read-only range \",\"request\":\"key:\\\"{key}\\\" \",\"response\":\"range_response_count:1 size:{}\"}}",
                    rng.u32(400..90_000)
                )
            }
        }
        28..=35 => {
            etcd_json(out, clock, "warn", "wal/wal.go:805", "slow fdatasync");
            write!(
                out,
                ",\"took\":\"{}\",\"expected-duration\":\"1s\"}}",
                go_duration(rng, 1_000_000, 4_000_000)
            )
        }
        36..=43 => {
            etcd_json(
                out,
                clock,
                "warn",
                "etcdserver/raft.go:416",
                "leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk",
            );
            write!(
                out,
                ",\"to\":\"{}\",\"heartbeat-interval\":\"100ms\",\"expected-duration\":\"200ms\",\"exceeded-duration\":\"{}\"}}",
                pick(rng, &busy.peers),
                go_duration(rng, 10_000, 900_000)
            )
        }
        44..=49 => {
            etcd_json(
                out,
                clock,
                "warn",
                "etcdserver/v3_server.go:897",
                "waiting for ReadIndex response took too long, retrying",
            );
            write!(
                out,
                ",\"sent-request-id\":{},\"retry-timeout\":\"500ms\"}}",
                busy.request_id(rng, clock)
            )
        }
        50..=63 => {
            prefix(out, clock, "kubenswrapper[2345]");
            let (kind, query) = *pick(rng, LISTS);
            let err = pick(rng, API_ERRORS);
            if rng.bool() {
                klog_head(out, 'W', clock, "reflector.go:539");
                write!(out, "k8s.io/client-go/informers/factory.go:159: failed to list {kind}: Get \"https://{API}:6443{query}\": {err}")
            } else {
                klog_head(out, 'E', clock, "reflector.go:147");
                write!(out, "k8s.io/client-go/informers/factory.go:159: Failed to watch {kind}: failed to list {kind}: Get \"https://{API}:6443{query}\": {err}")
            }
        }
        64..=71 => {
            prefix(out, clock, "kubenswrapper[2345]");
            let (kind, name) = *pick(rng, OBJECTS);
            let revision = busy.revision;
            let rv = *busy
                .list_rvs
                .entry((pod.namespace, name))
                .or_insert_with(|| revision - rng.u64(..20_000));
            klog_head(out, 'W', clock, "reflector.go:539");
            write!(
                out,
                "object-\"{}\"/\"{name}\": failed to list *v1.{kind}: Get \"https://{API}:6443/api/v1/namespaces/{}/{}s?fieldSelector=metadata.name%3D{name}&resourceVersion={}\": {}",
                pod.namespace,
                pod.namespace,
                kind.to_lowercase(),
                rv,
                pick(rng, API_ERRORS)
            )
        }
        72..=76 => {
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'E', clock, "controller.go:195");
            write!(
                out,
                "\"Failed to update lease\" err=\"Put \\\"https://{API}:6443/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{HOST}?timeout=10s\\\": {}\"",
                pick(rng, API_ERRORS)
            )
        }
        77..=81 => {
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'I', clock, "status_manager.go:853");
            write!(
                out,
                "\"Failed to get status for pod\" podUID=\"{}\" pod=\"{}/{}\" err=\"Get \\\"https://{API}:6443/api/v1/namespaces/{}/pods/{}\\\": {}\"",
                pod.uid, pod.namespace, pod.name, pod.namespace, pod.name,
                pick(rng, API_ERRORS)
            )
        }
        82..=86 => {
            // The pod's event series: named at its first event, patched
            // under that name since, its count one more each time.
            let revision = busy.revision;
            let series = busy.events[pod_index].get_or_insert_with(|| EventSeries {
                unix_nanos: clock.unix_nanos(),
                count: 1,
                event_rv: revision - rng.u64(..5_000),
                pod_rv: revision - rng.u64(..20_000),
            });
            series.count += 1;
            let name = format!("{}.{:x}", pod.name, series.unix_nanos);
            let (count, event_rv, pod_rv) = (series.count, series.event_rv, series.pod_rv);
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'E', clock, "event.go:368");
            write!(
                out,
                "\"Unable to write event (may retry after sleeping)\" err=\"Patch \\\"https://{API}:6443/api/v1/namespaces/{}/events/{name}\\\": {}\" event=\"&Event{{ObjectMeta:{{{{{name}  {}    {} 0 0001-01-01 00:00:00 +0000 UTC <nil> <nil> map[] map[] [] [] []}},InvolvedObject:ObjectReference{{Kind:Pod,Namespace:{},Name:{},UID:{},APIVersion:v1,ResourceVersion:{},FieldPath:spec.containers{{{}}},}},Reason:Unhealthy,Message:Readiness probe failed: HTTP probe failed with statuscode: 500,Source:EventSource{{Component:kubelet,Host:{HOST},}},Count:{count},Type:Warning,}}\"",
                pod.namespace,
                pick(rng, API_ERRORS),
                pod.namespace,
                event_rv,
                pod.namespace,
                pod.name,
                pod.uid,
                pod_rv,
                pick(rng, CONTAINERS),
            )
        }
        87..=92 => {
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'E', clock, "kubelet_node_status.go:549");
            write!(
                out,
                "\"Error updating node status, will retry\" err=\"error getting node \\\"{HOST}\\\": Get \\\"https://{API}:6443/api/v1/nodes/{HOST}?resourceVersion=0&timeout=10s\\\": {}\"",
                pick(rng, API_ERRORS)
            )
        }
        93..=96 => {
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'I', clock, "prober.go:107");
            let kind = ["Readiness", "Liveness", "Startup"][rng.usize(..3)];
            write!(
                out,
                "\"Probe failed\" probeType=\"{kind}\" pod=\"openshift-kube-apiserver/kube-apiserver-{HOST}\" podUID=\"{}\" containerName=\"kube-apiserver\" probeResult=\"failure\" output=\"Get \\\"https://{HOST_IP}:6443/{}\\\": dial tcp {HOST_IP}:6443: connect: connection refused\"",
                pools.pods[1].uid,
                ["readyz", "livez", "healthz"][rng.usize(..3)]
            )
        }
        _ => {
            prefix(out, clock, "systemd[1]");
            write!(
                out,
                "{}.service: Deactivated successfully.",
                pick(rng, SERVICES)
            )
        }
    };
}

/// A line the busy host logs that no rule is about: its info traces and
/// warnings of load, and the first boot's usual lines.
fn busy_background(
    rng: &mut fastrand::Rng,
    pools: &Pools,
    busy: &mut Busy,
    clock: &Clock,
    focus: &mut Focus,
    out: &mut String,
) {
    let pod = &pools.pods[focus.pod];
    let _ = match rng.u32(..100) {
        0..=44 => {
            line(rng, pools, clock, focus, out);
            Ok(())
        }
        45..=56 => {
            busy.revision += rng.u64(1..30);
            // traceutil's trace number is rand.Int31() (v3.5
            // pkg/traceutil/trace.go, logInfo).
            let id = rng.u32(..1 << 31);
            let key = pick(rng, &busy.keys);
            // The trace's start is its end less its duration, and its steps
            // are consecutive from the start (v3.5 pkg/traceutil/trace.go,
            // logInfo: zap.Time start and end, step durations between steps).
            let total = draw_ns(rng, 100_000, 900_000);
            let second = draw_ns(rng, 10, 900).min(total / 2);
            let first = total - second - rng.u64(..=total / 10);
            let start = zap_ts(&Clock {
                micros: clock.micros.saturating_sub(total / 1_000),
            });
            let took = go_duration_ns(total);
            etcd_json(
                out,
                clock,
                "info",
                "traceutil/trace.go:171",
                &format!("trace[{id}] range"),
            );
            write!(
                out,
                ",\"detail\":\"{{range_begin:{key}; range_end:; response_count:1; response_revision:{}; }}\",\"duration\":\"{took}\",\"start\":\"{start}\",\"end\":\"{}\",\"steps\":[\"trace[{id}] 'agreement among raft nodes before linearized reading'  (duration: {})\",\"trace[{id}] 'range keys from in-memory index tree'  (duration: {})\"],\"step_count\":2}}",
                busy.revision,
                zap_ts(clock),
                go_duration_ns(first),
                go_duration_ns(second)
            )
        }
        57..=59 => {
            busy.revision += rng.u64(1..30);
            etcd_json(
                out,
                clock,
                "info",
                "mvcc/kvstore_compaction.go:66",
                "finished scheduled compaction",
            );
            let size = rng.u64(80_000_000..200_000_000);
            write!(
                out,
                ",\"compact-revision\":{},\"took\":\"{}\",\"hash\":{},\"current-db-size-bytes\":{size},\"current-db-size\":\"{} MB\",\"current-db-size-in-use-bytes\":{},\"current-db-size-in-use\":\"{} MB\"}}",
                busy.revision - 5_000,
                go_duration(rng, 20_000, 400_000),
                rng.u32(..),
                size / 1_000_000,
                size / 2,
                size / 2_000_000
            )
        }
        60..=66 => {
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'I', clock, "prober.go:107");
            write!(
                out,
                "\"Probe failed\" probeType=\"Readiness\" pod=\"openshift-etcd/etcd-{HOST}\" podUID=\"{}\" containerName=\"etcd-readyz\" probeResult=\"failure\" output=\"Get \\\"https://{HOST_IP}:9980/readyz\\\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)\"",
                pools.pods[0].uid
            )
        }
        67..=70 => {
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'I', clock, "kubelet.go:2542");
            write!(
                out,
                "\"SyncLoop (probe)\" probe=\"{}\" status=\"{}\" pod=\"{}/{}\"",
                ["readiness", "liveness", "startup"][rng.usize(..3)],
                ["", "ready", "unhealthy", "started"][rng.usize(..4)],
                pod.namespace,
                pod.name
            )
        }
        71..=75 => {
            prefix(out, clock, "crio[1876]");
            let _ = write!(out, "time=\"2026-11-22 {}\" ", &clock.iso()[11..26]);
            // A StopContainer or RemoveContainer call logs a line as it
            // starts and one as it ends (cri-o server/container_stop.go,
            // container_remove.go), both of one container: its ID and its
            // description `ns/pod/name` (the focus's); both carry the call's
            // request ID, a new UUID per call (internal/log/interceptors/
            // interceptors.go, addRequestID). Timeout: the kubelet passes
            // the pod's grace period, 30 s by default.
            if let Some(last) = busy.crio_pending.take() {
                out.push_str(&last);
                Ok(())
            } else {
                let cid = &pools.containers[focus.cid];
                let id = uuid(rng);
                let (start, end, method) = if rng.bool() {
                    (
                        format!("Stopping container: {cid} (timeout: 30s)"),
                        "Stopped",
                        "Stop",
                    )
                } else {
                    (format!("Removing container: {cid}"), "Removed", "Remove")
                };
                busy.crio_pending = Some(format!(
                    "level=info msg=\"{end} container {cid}: {}/{}/{}\" id={id} name=/runtime.v1.RuntimeService/{method}Container",
                    pod.namespace,
                    pod.name,
                    CONTAINERS[focus.container]
                ));
                write!(
                    out,
                    "level=info msg=\"{start}\" id={id} name=/runtime.v1.RuntimeService/{method}Container"
                )
            }
        }
        76..=82 => {
            busy.ovs_seq += 1;
            prefix(out, clock, "ovs-vswitchd[1098]");
            match rng.u32(..4) {
                0 => write!(
                    out,
                    "ovs|{:05}|timeval|WARN|Unreasonably long {}ms poll interval ({}ms user, {}ms system)",
                    busy.ovs_seq,
                    rng.u32(1_000..9_000),
                    rng.u32(10..900),
                    rng.u32(10..900)
                ),
                1 => write!(
                    out,
                    "ovs|{:05}|timeval|WARN|context switches: {} voluntary, {} involuntary",
                    busy.ovs_seq,
                    rng.u32(1..400),
                    rng.u32(1..90)
                ),
                2 => write!(
                    out,
                    "ovs|{:05}|connmgr|INFO|br-int<->unix#{}: {} flow_mods in the {} s starting {} s ago ({} adds, {} deletes)",
                    busy.ovs_seq,
                    rng.u32(1..90),
                    rng.u32(1..900),
                    rng.u32(1..60),
                    rng.u32(1..60),
                    rng.u32(1..600),
                    rng.u32(1..300)
                ),
                _ => write!(
                    out,
                    "ovs|{:05}|poll_loop|INFO|wakeup due to [POLLIN] on fd {} (/var/run/openvswitch/br-int.mgmt<->) at lib/stream-fd.c:157 ({}% CPU usage)",
                    busy.ovs_seq,
                    rng.u32(20..120),
                    rng.u32(50..101)
                ),
            }
        }
        83..=85 => {
            busy.ovs_seq += 1;
            prefix(out, clock, "ovsdb-server[1045]");
            write!(
                out,
                "ovs|{:05}|{}|WARN|unix#{}: {}",
                busy.ovs_seq,
                ["jsonrpc", "reconnect"][rng.usize(..2)],
                rng.u32(100..9_000),
                [
                    "receive error: Connection reset by peer",
                    "connection dropped (Connection reset by peer)"
                ][rng.usize(..2)]
            )
        }
        _ => {
            busy.ovn_seq += 1;
            prefix(out, clock, "ovn-controller[5218]");
            let ts = zap_ts(clock);
            let (ts, seq) = (&ts[..23], busy.ovn_seq);
            match rng.u32(..5) {
                0 => write!(out, "{ts}Z|{seq:05}|binding|INFO|Claiming lport {}_{} for this chassis.", pod.namespace, pod.name),
                1 => write!(
                    out,
                    "{ts}Z|{seq:05}|binding|INFO|{}_{}: Claiming {} 10.128.{}.{}/23",
                    pod.namespace,
                    pod.name,
                    pick(rng, &busy.macs),
                    rng.u8(0..2),
                    rng.u8(2..254)
                ),
                2 => write!(out, "{ts}Z|{seq:05}|if_status|INFO|Not updating pb chassis for {}_{} now as sb is readonly", pod.namespace, pod.name),
                3 => write!(out, "{ts}Z|{seq:05}|main|INFO|OVNSB commit failed, force recompute next time."),
                _ => write!(
                    out,
                    "{ts}Z|{seq:05}|inc_proc_eng|INFO|node: logical_flow_output, recompute (forced) took {}ms",
                    rng.u32(100..3_000)
                ),
            }
        }
    };
}

/// A failure line of any family, for the worst case (most carry an anchor;
/// the caller draws again when one does not).
fn worst_line(
    rng: &mut fastrand::Rng,
    pools: &Pools,
    busy: &mut Busy,
    clock: &Clock,
    out: &mut String,
) {
    let pod = pick(rng, &pools.pods);
    let image = pick(rng, &pools.images);
    let cid = pick(rng, &pools.containers);
    let _ = match rng.u32(..100) {
        0..=39 => {
            busy_failure(rng, pools, busy, clock, out);
            Ok(())
        }
        40..=44 => {
            prefix(out, clock, "release-image-download.sh[2101]");
            write!(
                out,
                "Error: initializing source docker://quay.io/openshift-release-dev/ocp-release@sha256:{image}: pinging container registry quay.io: Get \"https://quay.io/v2/\": dial tcp: lookup quay.io on 192.168.111.{}:53: {}",
                rng.u8(1..4),
                ["no such host", "server misbehaving", "read udp 192.168.111.20:41234->192.168.111.1:53: i/o timeout"][rng.usize(..3)]
            )
        }
        45..=49 => {
            prefix(out, clock, "crio[1876]");
            write!(
                out,
                "time=\"2026-11-22 {}\" level=error msg=\"Error pulling image quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{image}: {}\" id={}",
                &clock.iso()[11..26],
                [
                    "pinging container registry quay.io: Get \\\"https://quay.io/v2/\\\": proxyconnect tcp: dial tcp 192.168.111.2:3128: connect: connection refused",
                    "reading manifest sha256:0000 in quay.io/openshift-release-dev/ocp-v4.0-art-dev: unauthorized: access to the requested resource is not authorized",
                    "reading manifest sha256:1111 in quay.io/openshift-release-dev/ocp-v4.0-art-dev: manifest unknown: manifest unknown",
                    "pinging container registry quay.io: Get \\\"https://quay.io/v2/\\\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
                ][rng.usize(..4)],
                pick(rng, &pools.requests)
            )
        }
        50..=54 => {
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'E', clock, "certificate_manager.go:562");
            write!(
                out,
                "\"Unhandled Error\" err=\"kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: Post \\\"https://{API}:6443/apis/certificates.k8s.io/v1/certificatesigningrequests\\\": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-11-22T{}Z is after 2026-11-{:02}T{:02}:{:02}:{:02}Z\"",
                &clock.iso()[11..19],
                rng.u8(1..22),
                rng.u8(..24),
                rng.u8(..60),
                rng.u8(..60)
            )
        }
        55..=59 => {
            prefix(out, clock, "crio[1876]");
            write!(
                out,
                "time=\"2026-11-22 {}\" level=error msg=\"error creating read-write layer with ID \\\"{cid}\\\": mkdir /var/lib/containers/storage/overlay/{cid}: no space left on device\"",
                &clock.iso()[11..26]
            )
        }
        60..=62 => {
            prefix(out, clock, "crio[1876]");
            write!(
                out,
                "time=\"2026-11-22 {}\" level=error msg=\"Failed to create container {}/{}/{}: layer not known\" id={}",
                &clock.iso()[11..26],
                pod.namespace,
                pod.name,
                pick(rng, CONTAINERS),
                pick(rng, &pools.requests)
            )
        }
        63..=66 => {
            prefix(out, clock, "chronyd[1100]");
            write!(
                out,
                "System clock wrong by {}.{:06} seconds",
                rng.i32(-9_000..9_000),
                rng.u32(..1_000_000)
            )
        }
        67..=68 => {
            prefix(out, clock, "chronyd[1100]");
            write!(out, "Can't synchronise: no selectable sources")
        }
        69..=72 => {
            prefix(out, clock, "kernel");
            write!(
                out,
                "ixgbe 0000:3b:00.{} eno{}: NIC Link is Down",
                rng.u8(..2),
                rng.u8(1..3)
            )
        }
        73..=75 => {
            prefix(out, clock, "NetworkManager[1203]");
            write!(
                out,
                "<info>  [{}] device (eno{}): carrier: link connected",
                clock.epoch(),
                rng.u8(1..3)
            )
        }
        76..=80 => {
            prefix(out, clock, "kernel");
            write!(
                out,
                "audit: type=1400 audit({}:{}): avc:  denied  {{ {} }} for  pid={} comm=\"{}\" name=\"{}\" dev=\"overlay\" ino={} scontext=system_u:system_r:container_t:s0:c{},c{} tcontext=system_u:object_r:var_lib_t:s0 tclass=file permissive=0",
                &clock.epoch()[..14],
                rng.u32(100..99_999),
                ["read", "write", "open", "getattr"][rng.usize(..4)],
                rng.u32(2_000..90_000),
                ["crio", "runc", "conmon", "etcd"][rng.usize(..4)],
                &cid[..12],
                rng.u32(1..9_999_999),
                rng.u16(..1024),
                rng.u16(..1024)
            )
        }
        81..=84 => {
            prefix(out, clock, "systemd[1]");
            write!(
                out,
                "{}.service: Failed with result '{}'.",
                [
                    "bootkube",
                    "release-image",
                    "machine-config-daemon-firstboot",
                    "ovs-configuration",
                    "kubelet",
                    "crio"
                ][rng.usize(..6)],
                ["exit-code", "timeout", "signal"][rng.usize(..3)]
            )
        }
        85..=88 => {
            prefix(out, clock, "ignition[1034]");
            write!(
                out,
                "GET https://{API}:22623/config/master: attempt #{}",
                rng.u32(1..400)
            )
        }
        89..=93 => {
            prefix(out, clock, "bootkube.sh[3300]");
            write!(
                out,
                "Unable to connect to the server: dial tcp {API_IP}:6443: connect: {}",
                [
                    "connection refused",
                    "no route to host",
                    "network is unreachable"
                ][rng.usize(..3)]
            )
        }
        _ => {
            prefix(out, clock, "kubenswrapper[2345]");
            klog_head(out, 'E', clock, "pod_workers.go:1301");
            write!(
                out,
                "\"Error syncing pod, skipping\" err=\"failed to \\\"StartContainer\\\" for \\\"{}\\\" with ErrImagePull: \\\"initializing source docker://quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{image}: pinging container registry quay.io: Get \\\\\\\"https://quay.io/v2/\\\\\\\": dial tcp: lookup quay.io on 192.168.111.1:53: no such host\\\"\" pod=\"{}/{}\" podUID=\"{}\"",
                pick(rng, CONTAINERS),
                pod.namespace,
                pod.name,
                pod.uid
            )
        }
    };
}

/// A line count as a float (counts stay far below 2^52).
#[allow(clippy::cast_precision_loss)]
fn count(n: u64) -> f64 {
    n as f64
}

/// The engine's own anchors (`diagnose::ANCHORS`), looked for the way it
/// does: anywhere in a line, case-sensitive. Indexed by their first two
/// bytes, so a line costs about a nanosecond a byte (bench/tools adds no
/// crate to the lock file for this).
struct Anchors {
    by_pair: Vec<Vec<&'static [u8]>>,
    short: Vec<&'static [u8]>,
}

impl Anchors {
    fn new() -> Self {
        let mut by_pair = vec![Vec::new(); 1 << 16];
        let mut short = Vec::new();
        for anchor in diagnose::ANCHORS.iter() {
            let anchor: &'static [u8] = AsRef::<[u8]>::as_ref(anchor);
            match anchor {
                [a, b, ..] => by_pair[usize::from(*a) << 8 | usize::from(*b)].push(anchor),
                _ => short.push(anchor),
            }
        }
        Self { by_pair, short }
    }

    fn hit(&self, line: &str) -> bool {
        let line = line.as_bytes();
        if self
            .short
            .iter()
            .any(|a| a.is_empty() || line.contains(&a[0]))
        {
            return true;
        }
        line.windows(2).enumerate().any(|(at, pair)| {
            self.by_pair[usize::from(pair[0]) << 8 | usize::from(pair[1])]
                .iter()
                .any(|a| line[at..].starts_with(a))
        })
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.hit_fraction),
        "--hit-fraction is a fraction"
    );
    let mut rng = fastrand::Rng::with_seed(args.seed);
    let pools = Pools::new(&mut rng);
    let mut clock = Clock { micros: 0 };
    let mut focus = Focus::new(&mut rng, &pools);
    let mut busy = (args.shape != Shape::Generated).then(|| Busy::new(&mut rng, &pools));
    let anchors = Anchors::new();
    let file = std::fs::File::create(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut written: u64 = 0;
    let (mut lines, mut hits): (u64, u64) = (0, 0);
    let mut text = String::with_capacity(1024);
    while written < args.bytes {
        text.clear();
        match (args.shape, busy.as_mut()) {
            (Shape::Busy, Some(busy)) => {
                // Draw a failure line while the running fraction is behind,
                // with some slack so failures come in bursts as they do.
                let behind = args.hit_fraction * count(lines + 1) - count(hits);
                let p = (args.hit_fraction + behind / 64.0).clamp(0.0, 1.0);
                if rng.f64() < p {
                    busy_failure(&mut rng, &pools, busy, &clock, &mut text);
                } else {
                    busy_background(&mut rng, &pools, busy, &clock, &mut focus, &mut text);
                }
            }
            (Shape::Worst, Some(busy)) => {
                let mut tries = 0;
                loop {
                    worst_line(&mut rng, &pools, busy, &clock, &mut text);
                    if anchors.hit(&text) {
                        break;
                    }
                    tries += 1;
                    anyhow::ensure!(
                        tries < 10_000,
                        "no failure line carries an anchor of diagnose::ANCHORS"
                    );
                    text.clear();
                }
            }
            _ => line(&mut rng, &pools, &clock, &mut focus, &mut text),
        }
        let hit = anchors.hit(&text);
        text.push('\n');
        clock.tick(&mut rng);
        let take = usize::try_from(args.bytes - written)
            .unwrap_or(usize::MAX)
            .min(text.len());
        out.write_all(&text.as_bytes()[..take])
            .with_context(|| format!("writing {}", args.output.display()))?;
        written += take as u64;
        lines += 1;
        hits += u64::from(hit);
    }
    out.flush()
        .with_context(|| format!("writing {}", args.output.display()))?;
    eprintln!(
        "{}",
        serde_json::json!({
            "shape": format!("{:?}", args.shape).to_lowercase(),
            "bytes": written,
            "lines": lines,
            "anchor_lines": hits,
            "anchor_fraction": if lines == 0 { 0.0 } else { count(hits) / count(lines) },
        })
    );
    Ok(())
}
