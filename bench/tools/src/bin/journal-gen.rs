//! Writes a journal-like text of a given size for the benchmarks: what
//! `journalctl -b 0 -o short-iso-precise` prints on a control-plane host
//! during an installation (kubelet, crio, NetworkManager, systemd, kernel,
//! ovs), deterministic for a seed.
//!
//! Real journals compress 6–7x with gzip -6: templates repeat, but pod UIDs,
//! container IDs, image digests, timestamps and addresses do not. The
//! generator draws those from pools sized so that the output lands in that
//! range (bench/run prints the measured ratio beside every figure); a filler
//! of repeated lines would compress 100x and flatter every compressor.
//!
//!   journal-gen --bytes 1073741824 --seed 1 -o journal.log

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;

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

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut rng = fastrand::Rng::with_seed(args.seed);
    let pools = Pools::new(&mut rng);
    let mut clock = Clock { micros: 0 };
    let mut focus = Focus::new(&mut rng, &pools);
    let file = std::fs::File::create(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut written: u64 = 0;
    let mut text = String::with_capacity(1024);
    while written < args.bytes {
        text.clear();
        line(&mut rng, &pools, &clock, &mut focus, &mut text);
        text.push('\n');
        clock.tick(&mut rng);
        let take = usize::try_from(args.bytes - written)
            .unwrap_or(usize::MAX)
            .min(text.len());
        out.write_all(&text.as_bytes()[..take])
            .with_context(|| format!("writing {}", args.output.display()))?;
        written += take as u64;
    }
    out.flush()
        .with_context(|| format!("writing {}", args.output.display()))?;
    Ok(())
}
