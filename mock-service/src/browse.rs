//! Read-only views into a stored bundle for the page: its member list, one
//! text member, the `manifest.json`, and the bootstrap-records timeline.
//! Unauthenticated like the rest of `/admin`.
//!
//! Archives are read server-side, front to back, on a blocking thread, with
//! every read bounded: entries scanned, bytes returned per member, bytes of
//! records parsed. A gzip tar cannot be indexed, so each view is one pass.

use std::io::Read;
use std::path::{Path as FsPath, PathBuf};

use axum::extract::{Path, RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::Shared;
use crate::store::{self, bundle_reader, BundleKey};
use crate::timeline::{self, Timeline};
use bundle_format::{DIAGNOSIS_NAME, MANIFEST_NAME};
use bundle_reader::{Member, Next};

/// Entries looked at per request; the agent writes a few hundred.
const MAX_SCAN_ENTRIES: usize = 20_000;
/// Text shown per member; the full member is in the download.
pub const MAX_TEXT_BYTES: u64 = 512 * 1024;
/// Largest manifest or records file parsed.
const MAX_JSON_BYTES: u64 = 8 * 1024 * 1024;
/// Records files parsed per bundle.
const MAX_SERVICES: usize = 64;

pub fn router() -> Router<Shared> {
    let base = "/admin/bundles/{cluster_id}/{host_id}/{logs_type}";
    Router::new()
        .route(&format!("{base}/members"), get(members))
        .route(&format!("{base}/member"), get(member))
        .route(&format!("{base}/manifest"), get(manifest))
        .route(&format!("{base}/timeline"), get(records_timeline))
        .route(&format!("{base}/diagnosis"), get(diagnosis))
}

/// Parses the `{cluster_id}/{host_id}/{logs_type}` of an admin bundle URL;
/// `host_id` is `cluster` for bundles uploaded without a host.
pub fn parse_key(
    cluster_id: &str,
    host_id: &str,
    logs_type: String,
) -> Result<BundleKey, ApiError> {
    let cluster_id = Uuid::parse_str(cluster_id)
        .map_err(|_| ApiError::bad_request(format!("bad cluster id {cluster_id:?}")))?;
    let host_id = if host_id == "cluster" {
        None
    } else {
        Some(
            Uuid::parse_str(host_id)
                .map_err(|_| ApiError::bad_request(format!("bad host id {host_id:?}")))?,
        )
    };
    Ok(BundleKey {
        cluster_id,
        host_id,
        logs_type,
    })
}

type KeyPath = Path<(String, String, String)>;

fn stored_path(st: &Shared, Path((c, h, t)): KeyPath) -> Result<PathBuf, ApiError> {
    let key = parse_key(&c, &h, t)?;
    let world = st.world.lock().unwrap();
    world
        .bundles
        .get(&key)
        .map(|m| m.path.clone())
        .ok_or_else(|| ApiError::not_found("no such bundle"))
}

/// Runs a blocking read of the archive; the file is opened once, so a
/// re-upload renamed in meanwhile does not mix two bundles.
async fn with_archive<T: Send + 'static>(
    path: PathBuf,
    read: impl FnOnce(std::fs::File) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&path)
            .map_err(|e| ApiError::not_found(format!("bundle file unavailable: {e}")))?;
        read(file)
    })
    .await
    .map_err(|e| ApiError::internal(format!("reading the bundle failed: {e}")))?
}

fn unreadable(e: &dyn std::fmt::Display) -> ApiError {
    ApiError::Error(
        axum::http::StatusCode::UNPROCESSABLE_ENTITY,
        format!("not a readable gzip tar: {e}"),
    )
}

/// Visits entries until `visit` returns false or the scan limit is reached.
/// The archive is read through the agent's bounded reader: at most
/// [`store::MAX_UNCOMPRESSED_BYTES`] inflated, names over 4 KiB refused.
fn scan(
    file: std::fs::File,
    mut visit: impl FnMut(&str, &mut Member<'_>) -> Result<bool, ApiError>,
) -> Result<(), ApiError> {
    let mut failure = None;
    let mut scanned = 0;
    let read = bundle_reader::read_members(file, store::MAX_UNCOMPRESSED_BYTES, |mut member| {
        scanned += 1;
        if scanned > MAX_SCAN_ENTRIES {
            return Ok(Next::Stop);
        }
        let name = member.name.clone();
        match visit(&name, &mut member) {
            Ok(true) => Ok(Next::Continue),
            Ok(false) => Ok(Next::Stop),
            Err(err) => {
                failure = Some(err);
                Err(std::io::Error::other("stopped by the visitor"))
            }
        }
    });
    if let Some(err) = failure {
        return Err(err);
    }
    read.map_err(|e| unreadable(&e))
}

fn read_capped(entry: &mut Member<'_>, cap: u64) -> Result<Vec<u8>, ApiError> {
    let mut buf = Vec::new();
    entry
        .data
        .take(cap)
        .read_to_end(&mut buf)
        .map_err(|e| unreadable(&e))?;
    Ok(buf)
}

#[derive(Serialize)]
struct MemberInfo {
    path: String,
    size: u64,
    /// `file`, `dir` or `other`.
    kind: &'static str,
}

#[derive(Serialize)]
struct Members {
    members: Vec<MemberInfo>,
    /// True when the scan limit stopped the listing.
    incomplete: bool,
}

async fn members(State(st): State<Shared>, key: KeyPath) -> Result<Json<Members>, ApiError> {
    let path = stored_path(&st, key)?;
    with_archive(path, |archive| {
        let mut members = Vec::new();
        scan(archive, |path, entry| {
            let t = entry.entry_type;
            members.push(MemberInfo {
                path: path.to_owned(),
                size: entry.size,
                kind: if t.is_dir() {
                    "dir"
                } else if t.is_file() {
                    "file"
                } else {
                    "other"
                },
            });
            Ok(true)
        })?;
        let incomplete = members.len() == MAX_SCAN_ENTRIES;
        Ok(Json(Members {
            members,
            incomplete,
        }))
    })
    .await
}

#[derive(Deserialize)]
struct MemberQuery {
    path: String,
}

#[derive(Serialize)]
struct MemberText {
    path: String,
    size: u64,
    /// Only the first [`MAX_TEXT_BYTES`] are in `text`.
    truncated: bool,
    /// Not valid UTF-8 (or has NULs): `text` is a lossy rendering.
    binary: bool,
    text: String,
}

async fn member(
    State(st): State<Shared>,
    key: KeyPath,
    RawQuery(raw): RawQuery,
) -> Result<Json<MemberText>, ApiError> {
    let q: MemberQuery = serde_urlencoded::from_str(raw.as_deref().unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("expected ?path=MEMBER: {e}")))?;
    let path = stored_path(&st, key)?;
    with_archive(path, move |archive| {
        let mut found = None;
        scan(archive, |name, entry| {
            if name != q.path || !entry.entry_type.is_file() {
                return Ok(true);
            }
            let size = entry.size;
            let bytes = read_capped(entry, MAX_TEXT_BYTES)?;
            let text = String::from_utf8(bytes);
            let binary = text.as_ref().map_or(true, |t| t.contains('\0'));
            let text = text.unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            found = Some(MemberText {
                path: name.to_owned(),
                size,
                truncated: size > MAX_TEXT_BYTES,
                binary,
                text,
            });
            Ok(false)
        })?;
        found
            .map(Json)
            .ok_or_else(|| ApiError::not_found(format!("no member {:?} in the bundle", q.path)))
    })
    .await
}

/// `file` right under the bundle's top directory (or at the root).
fn is_top_level(path: &str, file: &str) -> bool {
    let parts: Vec<&str> = path.trim_start_matches("./").split('/').collect();
    match parts.as_slice() {
        [name] | [_, name] => *name == file,
        _ => false,
    }
}

/// The parsed JSON of the top-level member `file`, if the bundle has one.
pub(crate) fn top_level_json(
    archive: std::fs::File,
    file: &str,
) -> Result<Option<Value>, ApiError> {
    let mut found = None;
    scan(archive, |name, entry| {
        if !is_top_level(name, file) {
            return Ok(true);
        }
        let bytes = read_capped(entry, MAX_JSON_BYTES)?;
        found = Some(serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::Error(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                format!("{name} does not parse: {e}"),
            )
        })?);
        Ok(false)
    })?;
    Ok(found)
}

async fn manifest(State(st): State<Shared>, key: KeyPath) -> Result<Json<Value>, ApiError> {
    let path = stored_path(&st, key)?;
    with_archive(path, |archive| {
        top_level_json(archive, MANIFEST_NAME)?
            .map(Json)
            .ok_or_else(|| ApiError::not_found("the bundle has no manifest.json"))
    })
    .await
}

/// The agent's `diagnosis.json` (findings, most likely cause first); a
/// bundle from an agent without diagnosis answers `{"findings": [],
/// "absent": true}` so the page can say so.
async fn diagnosis(State(st): State<Shared>, key: KeyPath) -> Result<Json<Value>, ApiError> {
    let path = stored_path(&st, key)?;
    with_archive(path, |archive| {
        Ok(Json(
            top_level_json(archive, DIAGNOSIS_NAME)?
                .unwrap_or_else(|| serde_json::json!({"findings": [], "absent": true})),
        ))
    })
    .await
}

/// `records/<service>.json` under the top directory: the service name.
fn record_service(path: &str) -> Option<&str> {
    let p = FsPath::new(path);
    let dir = p.parent()?.file_name()?.to_str()?;
    if dir != "records" || p.extension()? != "json" {
        return None;
    }
    p.file_stem()?.to_str()
}

/// From `records/summary.json` when the agent wrote one, else from the raw
/// records files.
pub fn timeline_from_archive(archive: std::fs::File) -> Result<Timeline, ApiError> {
    let mut services = Vec::new();
    let mut summary = None;
    scan(archive, |name, entry| {
        let Some(service) = record_service(name) else {
            return Ok(true);
        };
        if !entry.entry_type.is_file() {
            return Ok(true);
        }
        let bytes = read_capped(entry, MAX_JSON_BYTES)?;
        if service == "summary" {
            summary = serde_json::from_slice::<Value>(&bytes).ok();
        } else if services.len() < MAX_SERVICES {
            services.push(timeline::service_from_records(service, &bytes));
        }
        Ok(true)
    })?;
    if let Some(t) = summary.as_ref().and_then(timeline::from_summary) {
        return Ok(t);
    }
    Ok(timeline::timeline("records", services))
}

async fn records_timeline(
    State(st): State<Shared>,
    key: KeyPath,
) -> Result<Json<Timeline>, ApiError> {
    let path = stored_path(&st, key)?;
    with_archive(path, |archive| timeline_from_archive(archive).map(Json)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_count() {
        assert!(is_top_level("host_boot/manifest.json", "manifest.json"));
        assert!(is_top_level("manifest.json", "manifest.json"));
        assert!(!is_top_level(
            "host_boot/records/manifest.json",
            "manifest.json"
        ));
        assert_eq!(
            record_service("host_boot/records/bootkube.json"),
            Some("bootkube")
        );
        assert_eq!(record_service("host_boot/records/done-markers.txt"), None);
        assert_eq!(record_service("host_boot/system/summary.json"), None);
    }
}
