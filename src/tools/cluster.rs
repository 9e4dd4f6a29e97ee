//! `inspect BUNDLE…` on several bundles, or on a directory of them as the
//! service stores them (`CLUSTER/HOST/host_boot.tar.gz`): a cluster's hosts
//! read together. Per cluster, one line per host (host, role, stage,
//! headline), then the causes shared by several hosts — the same finding
//! category and key on each: a DNS server, a proxy, a VIP, a registry are
//! cluster-wide — most hosts first, then each host's own findings. `--json`
//! gives the same as one object.
//!
//! Each bundle is opened as `inspect` opens one ([`super::inspect`]): read
//! bounded, every string escaped once as it is read.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use crate::diagnose::{Diagnosis, Evidence, Finding, Severity};

use super::inspect::{
    cut_at_word, evidence_line, host_name, open_bundle, printable, printable_json, InspectArgs,
    Opened, EVIDENCE_SHOWN, INSPECT_JSON_VERSION,
};

/// `inspect`: the report on stdout.
pub fn inspect_command(args: &InspectArgs) -> anyhow::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let result = match args.files.as_slice() {
        [file] if !file.is_dir() => {
            super::inspect::inspect(file, args.json, args.max_uncompressed, &mut out)
        }
        files => inspect_cluster(files, args.json, args.max_uncompressed, &mut out),
    };
    // What was printed comes before the error `main` prints.
    let _ = out.flush();
    result
}

/// Bundles read in one run; a service's data directory of a few clusters
/// holds far fewer.
const MAX_BUNDLES: usize = 1000;
/// Directory levels searched below a directory argument: the mock's data
/// directory is `bundles/CLUSTER/HOST/FILE` below it.
const MAX_DEPTH: usize = 4;
/// Entries looked at per directory walk.
const MAX_WALK_ENTRIES: usize = 100_000;
/// Characters of a headline in the host table.
const HEADLINE_CHARS: usize = 100;

/// A host's line and findings.
#[derive(Debug, Serialize)]
struct HostRow {
    bundle: String,
    host_id: String,
    /// `bootstrap`, `master` or `-`, as far as the bundle shows it
    /// ([`role`]): a bundle does not carry the role the service gave its
    /// host.
    role: &'static str,
    /// The stage the service reported, as the manifest says.
    stage: Option<String>,
    headline: Option<String>,
    findings: Vec<Finding>,
    /// Why the bundle could not be read, or why it has no findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip)]
    cluster_id: Option<String>,
}

/// A cause on several hosts of one cluster.
#[derive(Debug, Serialize)]
struct Shared {
    /// The finding category's stable name (docs/diagnosis.md).
    category: &'static str,
    key: String,
    /// The worst severity it has on any host.
    severity: Severity,
    /// From the first host (in report order) that has it.
    summary: String,
    hint: String,
    /// The hosts, in report order.
    hosts: Vec<String>,
    /// A few lines, from the first hosts that have it.
    evidence: Vec<HostEvidence>,
}

#[derive(Debug, Serialize)]
struct HostEvidence {
    host_id: String,
    #[serde(flatten)]
    evidence: Evidence,
}

#[derive(Debug, Serialize)]
struct ClusterReport {
    cluster_id: Option<String>,
    hosts: Vec<HostRow>,
    shared: Vec<Shared>,
}

/// Prints the report of `paths` (bundles and directories of bundles).
/// Fails, after printing, when a named bundle could not be read.
pub(crate) fn inspect_cluster(
    paths: &[PathBuf],
    json: bool,
    max_uncompressed: u64,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut bundles = Vec::new();
    for path in paths {
        if path.is_dir() {
            find_bundles(path, &mut bundles)
                .with_context(|| format!("listing {}", path.display()))?;
        } else {
            bundles.push((path.clone(), true));
        }
        anyhow::ensure!(
            bundles.len() <= MAX_BUNDLES,
            "more than {MAX_BUNDLES} bundles: inspect fewer at a time"
        );
    }
    let mut hosts = Vec::new();
    let mut skipped = Vec::new();
    let mut failed = 0;
    for (path, named) in bundles {
        let host = read_host(&path, max_uncompressed);
        match &host.error {
            // Found by a directory walk and not a host_boot bundle (the
            // service's controller logs, another archive): said, not failed.
            Some(_) if !named && host.host_id.is_empty() => skipped.push(host),
            Some(_) => {
                failed += 1;
                hosts.push(host);
            }
            None => hosts.push(host),
        }
    }
    let clusters = group(hosts);
    if json {
        let value = serde_json::json!({
            "inspect_version": INSPECT_JSON_VERSION,
            "clusters": clusters,
            "skipped": skipped.iter().map(|h| serde_json::json!({
                "bundle": h.bundle,
                "error": h.error,
            })).collect::<Vec<_>>(),
        });
        serde_json::to_writer_pretty(&mut *out, &printable_json(value, &[]))?;
        writeln!(out)?;
    } else {
        let mut o = String::new();
        for (i, cluster) in clusters.iter().enumerate() {
            if i > 0 {
                o.push('\n');
            }
            render_cluster(&mut o, cluster);
        }
        if clusters.is_empty() {
            let _ = writeln!(o, "no host_boot bundle found");
        }
        for host in &skipped {
            let _ = writeln!(
                o,
                "skipped {}: {}",
                host.bundle,
                host.error.as_deref().unwrap_or_default()
            );
        }
        out.write_all(o.as_bytes()).context("writing the report")?;
    }
    anyhow::ensure!(failed == 0, "{failed} bundle(s) could not be read");
    Ok(())
}

/// Every `*.tar.gz` below `dir`, at most [`MAX_DEPTH`] levels down, in
/// name order; hidden entries (the service's partial uploads) and symbolic
/// links are left alone.
fn find_bundles(dir: &Path, found: &mut Vec<(PathBuf, bool)>) -> anyhow::Result<()> {
    let mut seen = 0;
    walk(dir, 0, &mut seen, found)
}

fn walk(
    dir: &Path,
    depth: usize,
    seen: &mut usize,
    found: &mut Vec<(PathBuf, bool)>,
) -> anyhow::Result<()> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        *seen += 1;
        anyhow::ensure!(
            *seen <= MAX_WALK_ENTRIES,
            "more than {MAX_WALK_ENTRIES} entries below it"
        );
        let name = entry.file_name();
        if name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        entries.push((name, entry.file_type()?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in entries {
        let path = dir.join(&name);
        if kind.is_dir() && depth < MAX_DEPTH {
            walk(&path, depth + 1, seen, found)?;
        } else if kind.is_file() && name.as_encoded_bytes().ends_with(b".tar.gz") {
            found.push((path, false));
            if found.len() > MAX_BUNDLES {
                return Ok(());
            }
        }
    }
    Ok(())
}

fn read_host(path: &Path, max_uncompressed: u64) -> HostRow {
    let bundle = printable(&path.display().to_string()).into_owned();
    let opened = File::open(path)
        .with_context(|| format!("opening {}", path.display()))
        .and_then(|file| open_bundle(file, path, max_uncompressed));
    let mut host = HostRow {
        bundle,
        host_id: String::new(),
        role: "-",
        stage: None,
        headline: None,
        findings: Vec::new(),
        error: None,
        cluster_id: None,
    };
    let opened = match opened {
        Ok(opened) => opened,
        Err(err) => {
            host.error = Some(printable(&format!("{err:#}")).into_owned());
            return host;
        }
    };
    let Some(manifest) = &opened.manifest else {
        host.error = Some(format!(
            "not a host_boot bundle: no manifest ({} members read)",
            opened.members.len()
        ));
        return host;
    };
    let meta = &manifest.meta;
    host_name(&meta.host_id).clone_into(&mut host.host_id);
    host.cluster_id = meta.cluster_id.clone().filter(|c| !c.is_empty());
    host.stage.clone_from(&meta.service_stage);
    host.role = role(&opened);
    host.headline = manifest
        .diagnosis_headline()
        .map(ToOwned::to_owned)
        .or_else(|| opened.diagnosis.as_ref().and_then(Diagnosis::headline));
    if let Some(diagnosis) = opened.diagnosis {
        host.findings = diagnosis.findings;
    }
    host
}

/// What the bundle shows of its host's role: `bootstrap` when bootkube left
/// records on it, `master` when it runs control-plane pods (etcd, the API
/// server: a worker never does), `-` otherwise (a worker, or a host too
/// early in its boot to tell).
fn role(opened: &Opened) -> &'static str {
    let bootkube = opened.summary.as_ref().is_some_and(|s| {
        s.services
            .iter()
            .any(|service| service.service == "bootkube" && service.entries > 0)
    });
    // `crictl pods`: the namespace is a column of its own.
    let control_plane = opened.pods.as_deref().is_some_and(|pods| {
        pods.lines().any(|line| {
            line.split_whitespace()
                .any(|field| matches!(field, "openshift-etcd" | "openshift-kube-apiserver"))
        })
    });
    if bootkube {
        "bootstrap"
    } else if control_plane {
        "master"
    } else {
        "-"
    }
}

/// Hosts by cluster (in order of first appearance; bundles without a
/// cluster ID together last), each with its shared causes.
fn group(hosts: Vec<HostRow>) -> Vec<ClusterReport> {
    let mut clusters: Vec<ClusterReport> = Vec::new();
    for host in hosts {
        let at = clusters
            .iter()
            .position(|c| c.cluster_id == host.cluster_id);
        match at {
            Some(at) => clusters[at].hosts.push(host),
            None => clusters.push(ClusterReport {
                cluster_id: host.cluster_id.clone(),
                hosts: vec![host],
                shared: Vec::new(),
            }),
        }
    }
    clusters.sort_by_key(|c| c.cluster_id.is_none());
    for cluster in &mut clusters {
        cluster.shared = shared_causes(&cluster.hosts);
    }
    clusters
}

/// Where a (category, key) was first seen (host, rank there) and the hosts
/// that have it.
type Seen = ((usize, usize), Vec<usize>);

/// Findings of the same category and key on two hosts or more: most hosts
/// first, then errors before warnings before infos, then in the order the
/// first host ranks them.
fn shared_causes(hosts: &[HostRow]) -> Vec<Shared> {
    let mut seen: BTreeMap<(&str, &str), Seen> = BTreeMap::new();
    for (h, host) in hosts.iter().enumerate() {
        for (rank, f) in host.findings.iter().enumerate() {
            let entry = seen
                .entry((f.category.as_str(), f.key.as_str()))
                .or_insert_with(|| ((h, rank), Vec::new()));
            if entry.1.last() != Some(&h) {
                entry.1.push(h);
            }
        }
    }
    let mut shared: Vec<_> = seen
        .into_iter()
        .filter(|(_, (_, on))| on.len() > 1)
        .map(|((category, key), (first, on))| {
            let of = |h: usize| {
                hosts[h]
                    .findings
                    .iter()
                    .find(|f| f.category.as_str() == category && f.key == key)
            };
            let severity = on
                .iter()
                .filter_map(|&h| of(h))
                .map(|f| f.severity)
                .min()
                .unwrap_or(Severity::Info);
            let head = &hosts[first.0].findings[first.1];
            let evidence = on
                .iter()
                .filter_map(|&h| of(h).map(|f| (h, f)))
                .flat_map(|(h, f)| {
                    f.evidence.iter().take(1).map(move |e| HostEvidence {
                        host_id: hosts[h].host_id.clone(),
                        evidence: e.clone(),
                    })
                })
                .take(EVIDENCE_SHOWN)
                .collect();
            let shared = Shared {
                category,
                key: key.to_owned(),
                severity,
                summary: head.summary.clone(),
                hint: head.hint.clone(),
                hosts: on.iter().map(|&h| hosts[h].host_id.clone()).collect(),
                evidence,
            };
            (first, shared)
        })
        .collect();
    shared.sort_by(|(a_first, a), (b_first, b)| {
        b.hosts
            .len()
            .cmp(&a.hosts.len())
            .then(a.severity.cmp(&b.severity))
            .then(a_first.cmp(b_first))
    });
    shared.into_iter().map(|(_, s)| s).collect()
}

fn render_cluster(o: &mut String, cluster: &ClusterReport) {
    let hosts = &cluster.hosts;
    let _ = writeln!(
        o,
        "cluster {} ({} host{})",
        cluster
            .cluster_id
            .as_deref()
            .unwrap_or("unknown (no cluster ID)"),
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" }
    );
    let host_width = hosts
        .iter()
        .map(|h| h.host_id.chars().count())
        .chain([4])
        .max()
        .unwrap_or(4);
    let stage_width = hosts
        .iter()
        .filter_map(|h| h.stage.as_deref())
        .map(|s| s.chars().count())
        .chain([5])
        .max()
        .unwrap_or(5);
    let _ = writeln!(
        o,
        "{:host_width$}  {:9}  {:stage_width$}  headline",
        "host", "role", "stage"
    );
    for host in hosts {
        let headline = match (&host.error, &host.headline) {
            (Some(error), _) => format!("unreadable: {error}"),
            (None, Some(headline)) => cut_at_word(headline, HEADLINE_CHARS).into_owned(),
            (None, None) if host.findings.is_empty() => "no finding".to_owned(),
            (None, None) => "infos only".to_owned(),
        };
        let _ = writeln!(
            o,
            "{:host_width$}  {:9}  {:stage_width$}  {headline}",
            if host.host_id.is_empty() {
                &host.bundle
            } else {
                &host.host_id
            },
            host.role,
            host.stage.as_deref().unwrap_or("-"),
        );
    }

    o.push('\n');
    if cluster.shared.is_empty() {
        let _ = writeln!(o, "shared causes: none (no finding on more than one host)");
    } else {
        let _ = writeln!(o, "shared causes (on several hosts, most hosts first):");
    }
    for (i, s) in cluster.shared.iter().enumerate() {
        let _ = writeln!(
            o,
            "  S{}. {:<7} {}: {}",
            i + 1,
            s.severity.as_str(),
            s.category,
            s.summary
        );
        let _ = writeln!(
            o,
            "      on {} of {} hosts: {}",
            s.hosts.len(),
            hosts.len(),
            s.hosts.join(", ")
        );
        let _ = writeln!(o, "      hint: {}", s.hint);
        for e in &s.evidence {
            let _ = writeln!(o, "      {}: {}", e.host_id, evidence_line(&e.evidence));
        }
    }

    for host in hosts {
        let _ = writeln!(
            o,
            "\n== host {} ({}, stage {}) {}",
            if host.host_id.is_empty() {
                "unknown"
            } else {
                &host.host_id
            },
            host.role,
            host.stage.as_deref().unwrap_or("-"),
            host.bundle
        );
        if let Some(error) = &host.error {
            let _ = writeln!(o, "unreadable: {error}");
            continue;
        }
        if host.findings.is_empty() {
            let _ = writeln!(o, "findings: none");
            continue;
        }
        for (i, f) in host.findings.iter().enumerate() {
            let shared_at = cluster
                .shared
                .iter()
                .position(|s| s.category == f.category.as_str() && s.key == f.key);
            let _ = writeln!(
                o,
                "  {}. {:<7} {}: {}",
                i + 1,
                f.severity.as_str(),
                f.category.as_str(),
                f.summary
            );
            if let Some(at) = shared_at {
                let _ = writeln!(o, "     shared cause S{} (above)", at + 1);
                continue;
            }
            let _ = writeln!(o, "     hint: {}", f.hint);
            for e in f.evidence.iter().take(EVIDENCE_SHOWN) {
                let _ = writeln!(o, "     {}", evidence_line(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_plane_pods_tell_a_master() {
        let mut opened = Opened::default();
        assert_eq!(role(&opened), "-");
        opened.pods = Some(
            "POD ID  CREATED  STATE  NAME  NAMESPACE  ATTEMPT  RUNTIME\n\
             3c1d2e4f5a6b7  2 minutes ago  Ready  dns-default-x  openshift-dns  0  (default)"
                .to_owned(),
        );
        assert_eq!(role(&opened), "-", "every host runs DNS pods");
        opened.pods = Some(
            "POD ID  CREATED  STATE  NAME  NAMESPACE  ATTEMPT  RUNTIME\n\
             3c1d2e4f5a6b7  2 minutes ago  Ready  kube-apiserver-m0  openshift-kube-apiserver  0  (default)"
                .to_owned(),
        );
        assert_eq!(role(&opened), "master");
    }
}
