//! A cluster's hosts read together, for the page: `GET
//! /admin/clusters/{cluster_id}/rollup` gives one row per host (name, role,
//! stage, the headline of its last host_boot bundle) and the causes shared
//! by several hosts — the same finding category and key in their
//! `diagnosis.json`: a DNS server, a proxy, a VIP, a registry are
//! cluster-wide — most hosts first. The roll-up `inspect BUNDLE…` prints.
//!
//! Each bundle is read as the bundle views read one (`browse`): bounded,
//! on a blocking thread, the manifest and the diagnosis only.

use std::collections::HashMap;
use std::path::PathBuf;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use bundle_format::{DIAGNOSIS_NAME, MANIFEST_NAME};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::browse::top_level_json;
use crate::error::ApiError;
use crate::state::Shared;
use crate::store::BundleKey;

/// Shared causes listed per cluster.
const MAX_SHARED: usize = 20;
/// The agent's logs type.
const HOST_BOOT: &str = "host_boot";

pub fn router() -> Router<Shared> {
    Router::new().route("/admin/clusters/{cluster_id}/rollup", get(rollup))
}

#[derive(Debug, Serialize)]
struct Row {
    host_id: Uuid,
    name: String,
    role: &'static str,
    bootstrap: bool,
    /// The stage the service holds for the host.
    stage: Option<&'static str>,
    /// Whether a host_boot bundle was uploaded.
    bundle: bool,
    /// The diagnosis' headline (the manifest's, else the worst error or
    /// warning's summary).
    headline: Option<String>,
    findings: usize,
    /// Why the bundle could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct SharedCause {
    category: String,
    key: String,
    /// The worst on any of its hosts.
    severity: String,
    /// As the first host that has it says it.
    summary: String,
    hint: String,
    /// Host IDs, in the page's order.
    hosts: Vec<Uuid>,
}

#[derive(Debug, Serialize)]
struct Rollup {
    cluster_id: Uuid,
    hosts: Vec<Row>,
    shared: Vec<SharedCause>,
}

/// What one bundle says: its headline and its findings.
struct Read {
    headline: Option<String>,
    findings: Vec<Value>,
}

async fn rollup(
    State(st): State<Shared>,
    Path(cluster_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let cluster_id = Uuid::parse_str(&cluster_id)
        .map_err(|_| ApiError::bad_request(format!("bad cluster id {cluster_id:?}")))?;
    // (row, bundle path) for each host, in the page's order.
    let hosts: Vec<(Row, Option<PathBuf>)> = {
        let world = st.world.lock().unwrap();
        if !world.clusters.iter().any(|c| c.id == cluster_id) {
            return Err(ApiError::not_found("no such cluster"));
        }
        world
            .hosts
            .iter()
            .filter(|h| h.cluster_id == Some(cluster_id))
            .map(|h| {
                let key = BundleKey {
                    cluster_id,
                    host_id: Some(h.id),
                    logs_type: HOST_BOOT.to_owned(),
                };
                let path = world.bundles.get(&key).map(|m| m.path.clone());
                let row = Row {
                    host_id: h.id,
                    name: if h.requested_hostname.is_empty() {
                        h.id.to_string()
                    } else {
                        h.requested_hostname.clone()
                    },
                    role: h.role.as_str(),
                    bootstrap: h.bootstrap,
                    stage: h.current_stage.map(crate::model::Stage::as_str),
                    bundle: path.is_some(),
                    headline: None,
                    findings: 0,
                    error: None,
                };
                (row, path)
            })
            .collect()
    };
    let rollup = tokio::task::spawn_blocking(move || {
        let mut rows = Vec::new();
        let mut findings = Vec::new();
        for (mut row, path) in hosts {
            let read = path.as_deref().map(read_bundle);
            match read {
                Some(Ok(read)) => {
                    row.headline = read.headline;
                    row.findings = read.findings.len();
                    findings.push(read.findings);
                }
                Some(Err(err)) => {
                    row.error = Some(err);
                    findings.push(Vec::new());
                }
                None => findings.push(Vec::new()),
            }
            rows.push(row);
        }
        let shared = shared_causes(&rows, &findings);
        Rollup {
            cluster_id,
            hosts: rows,
            shared,
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("reading the bundles failed: {e}")))?;
    Ok(Json(serde_json::to_value(rollup).unwrap_or_default()))
}

fn read_bundle(path: &std::path::Path) -> Result<Read, String> {
    let open = || std::fs::File::open(path).map_err(|e| format!("bundle unavailable: {e}"));
    let manifest = top_level_json(open()?, MANIFEST_NAME).map_err(reason)?;
    let diagnosis = top_level_json(open()?, DIAGNOSIS_NAME).map_err(reason)?;
    let findings = diagnosis
        .as_ref()
        .and_then(|d| d.get("findings"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let headline = manifest
        .as_ref()
        .and_then(|m| m.pointer("/diagnosis/headline"))
        .and_then(Value::as_str)
        .map(ToOwned::to_owned)
        .or_else(|| {
            findings
                .iter()
                .find(|f| f.get("severity").and_then(Value::as_str) != Some("info"))
                .and_then(|f| f.get("summary"))
                .and_then(Value::as_str)
                .map(ToOwned::to_owned)
        });
    Ok(Read { headline, findings })
}

/// What a bundle view's error says.
fn reason(err: ApiError) -> String {
    match err {
        ApiError::Error(_, m)
        | ApiError::Infra(_, m)
        | ApiError::Serve(_, m)
        | ApiError::Validation(m) => m,
        ApiError::OctetStream(inner) => reason(*inner),
    }
}

fn text<'a>(finding: &'a Value, field: &str) -> &'a str {
    finding.get(field).and_then(Value::as_str).unwrap_or("")
}

fn severity_rank(severity: &str) -> u8 {
    match severity {
        "error" => 0,
        "warning" => 1,
        _ => 2,
    }
}

/// Findings of the same category and key on two hosts or more: most hosts
/// first, then the worst severity, then the order the first host ranks
/// them in.
fn shared_causes(rows: &[Row], findings: &[Vec<Value>]) -> Vec<SharedCause> {
    /// One (category, key): where it was first seen (host, rank there),
    /// its hosts, its worst severity.
    struct Seen<'a> {
        id: (&'a str, &'a str),
        first: (usize, usize),
        hosts: Vec<usize>,
        severity: &'a str,
    }
    let mut seen: Vec<Seen> = Vec::new();
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    for (h, host) in findings.iter().enumerate() {
        for (rank, f) in host.iter().enumerate() {
            let id = (text(f, "category"), text(f, "key"));
            let severity = text(f, "severity");
            if let Some(entry) = index.get(&id).map(|&at| &mut seen[at]) {
                if entry.hosts.last() != Some(&h) {
                    entry.hosts.push(h);
                }
                if severity_rank(severity) < severity_rank(entry.severity) {
                    entry.severity = severity;
                }
            } else {
                index.insert(id, seen.len());
                seen.push(Seen {
                    id,
                    first: (h, rank),
                    hosts: vec![h],
                    severity,
                });
            }
        }
    }
    seen.retain(|s| s.hosts.len() > 1);
    seen.sort_by(|a, b| {
        b.hosts
            .len()
            .cmp(&a.hosts.len())
            .then(severity_rank(a.severity).cmp(&severity_rank(b.severity)))
            .then(a.first.cmp(&b.first))
    });
    seen.into_iter()
        .take(MAX_SHARED)
        .map(|s| {
            let first = &findings[s.first.0][s.first.1];
            SharedCause {
                category: s.id.0.to_owned(),
                key: s.id.1.to_owned(),
                severity: s.severity.to_owned(),
                summary: text(first, "summary").to_owned(),
                hint: text(first, "hint").to_owned(),
                hosts: s.hosts.iter().map(|&i| rows[i].host_id).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(n: u128) -> Row {
        Row {
            host_id: Uuid::from_u128(n),
            name: format!("host-{n}"),
            role: "master",
            bootstrap: false,
            stage: None,
            bundle: true,
            headline: None,
            findings: 0,
            error: None,
        }
    }

    fn finding(category: &str, key: &str, severity: &str) -> Value {
        json!({"category": category, "key": key, "severity": severity,
               "summary": format!("{category} {key}"), "hint": "h"})
    }

    #[test]
    fn causes_on_most_hosts_come_first() {
        let rows = [row(1), row(2), row(3)];
        let findings = vec![
            vec![
                finding("disk_full", "/var", "error"),
                finding("proxy", "proxy:3128", "warning"),
                finding("dns_resolution", "quay.io", "warning"),
            ],
            vec![
                finding("dns_resolution", "quay.io", "warning"),
                finding("proxy", "proxy:3128", "error"),
            ],
            vec![finding("dns_resolution", "quay.io", "info")],
        ];
        let shared = shared_causes(&rows, &findings);
        assert_eq!(shared.len(), 2);
        assert_eq!(shared[0].category, "dns_resolution");
        assert_eq!(shared[0].hosts.len(), 3);
        assert_eq!(shared[0].severity, "warning");
        assert_eq!(shared[1].category, "proxy");
        assert_eq!(shared[1].severity, "error");
        assert_eq!(shared[1].hosts, [Uuid::from_u128(1), Uuid::from_u128(2)]);
    }
}
