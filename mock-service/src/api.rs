//! The public assisted-service endpoints the boot reporter uses, with the
//! real service's authentication, validation and stage rules, plus the gate
//! every public request passes (journal, injected faults).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::{Body, Bytes};
use axum::extract::multipart::MultipartRejection;
use axum::extract::{
    DefaultBodyLimit, Extension, Multipart, OriginalUri, Path, RawQuery, Request, State,
};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

use crate::error::{error_body, ApiError};
use crate::faults::Endpoint;
use crate::model::{self, BundleKey, Host, ProgressError, Stage, World};
use crate::requests::BodyCapture;
use crate::server::ConnKill;
use crate::store::{self, BundleMeta, TempUpload};
use crate::Shared;

/// How much of an upload a `drop_connection` fault reads before hanging up,
/// so the agent sees a connection lost mid-body rather than before it.
const DROP_AFTER_BYTES: usize = 64 * 1024;

/// Past the limit we keep reading (and discarding) up to this much, so the
/// client finishes sending and can read the 400 instead of a reset.
const MAX_DRAIN_BYTES: u64 = 1 << 30;

pub fn router(state: Shared) -> Router<Shared> {
    Router::new()
        .route(
            "/v2/infra-envs/{infra_env_id}/hosts",
            get(list_infra_env_hosts),
        )
        .route("/v2/clusters/{cluster_id}/hosts", get(list_cluster_hosts))
        .route(
            "/v2/infra-envs/{infra_env_id}/hosts/{host_id}",
            get(get_host),
        )
        .route(
            "/v2/infra-envs/{infra_env_id}/hosts/{host_id}/progress",
            put(update_progress),
        )
        .route(
            "/v2/clusters/{cluster_id}/logs",
            get(download_logs)
                .post(upload_logs)
                // Uploads are streamed to disk and limited by our own check.
                .layer(DefaultBodyLimit::disable()),
        )
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .layer(middleware::from_fn_with_state(state, gate))
}

// ---------- auth ----------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scheme {
    /// `X-Secret-Key` header.
    Agent,
    /// `Authorization: Bearer`.
    User,
    /// `api_key` query parameter.
    Url,
}

fn agent_key(headers: &HeaderMap) -> Option<&str> {
    headers.get("x-secret-key").and_then(|v| v.to_str().ok())
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}

fn scheme_passes(world: &World, scheme: Scheme, headers: &HeaderMap, q: &Query) -> bool {
    match scheme {
        Scheme::Agent => world
            .agent_token
            .as_deref()
            .is_none_or(|t| agent_key(headers) == Some(t)),
        Scheme::User => world
            .user_token
            .as_deref()
            .is_none_or(|t| bearer(headers) == Some(format!("Bearer {t}").as_str())),
        Scheme::Url => world
            .user_token
            .as_deref()
            .is_none_or(|t| q.get("api_key").map(String::as_str) == Some(t)),
    }
}

/// Passes if any scheme the endpoint declares accepts the request; a
/// disabled scheme (no token seeded) accepts anything, as on-prem no-auth does.
fn authorize(
    world: &World,
    allowed: &[Scheme],
    headers: &HeaderMap,
    q: &Query,
) -> Result<(), ApiError> {
    if allowed.iter().any(|s| scheme_passes(world, *s, headers, q)) {
        return Ok(());
    }
    let accepts: Vec<&str> = allowed
        .iter()
        .map(|s| match s {
            Scheme::Agent => "an X-Secret-Key agent key",
            Scheme::User => "an Authorization bearer token",
            Scheme::Url => "an api_key query parameter",
        })
        .collect();
    let presented = if agent_key(headers).is_some() {
        if allowed.contains(&Scheme::Agent) {
            "invalid X-Secret-Key"
        } else {
            "agent credentials (X-Secret-Key) are not accepted by this endpoint"
        }
    } else if bearer(headers).is_some() || q.contains_key("api_key") {
        "invalid user credentials"
    } else {
        "missing credentials"
    };
    Err(ApiError::Auth(format!(
        "Unauthorized: {presented}; this endpoint accepts {}",
        accepts.join(" or ")
    )))
}

/// The journal's view of how a request authenticated.
fn auth_class(world: &World, headers: &HeaderMap, q: &Query) -> &'static str {
    let verdict = |ok: bool, class| if ok { class } else { "invalid" };
    if agent_key(headers).is_some() {
        verdict(scheme_passes(world, Scheme::Agent, headers, q), "agent")
    } else if bearer(headers).is_some() {
        verdict(scheme_passes(world, Scheme::User, headers, q), "user")
    } else if q.contains_key("api_key") {
        verdict(scheme_passes(world, Scheme::Url, headers, q), "user")
    } else {
        "none"
    }
}

// ---------- parameters ----------

type Query = HashMap<String, String>;

fn parse_query(raw: Option<&str>) -> Result<Query, ApiError> {
    serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| ApiError::Validation(format!("malformed query string: {e}")))
}

fn parse_uuid(name: &str, where_: &str, v: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(v).map_err(|_| {
        ApiError::Validation(format!("{name} in {where_} must be of type uuid: \"{v}\""))
    })
}

fn query_uuid(q: &Query, name: &str) -> Result<Option<Uuid>, ApiError> {
    q.get(name)
        .filter(|v| !v.is_empty())
        .map(|v| parse_uuid(name, "query", v))
        .transpose()
}

fn logs_type_param(q: &Query, st: &crate::AppState) -> Result<Option<String>, ApiError> {
    match q.get("logs_type") {
        None => Ok(None),
        Some(t) if model::logs_types(st.mode).contains(&t.as_str()) => Ok(Some(t.clone())),
        Some(_) => Err(ApiError::Validation(model::logs_type_message(st.mode))),
    }
}

// ---------- the gate ----------

async fn gate(State(st): State<Shared>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let rel_path = req.uri().path().to_owned();
    let full_path = req
        .extensions()
        .get::<OriginalUri>()
        .map_or_else(|| rel_path.clone(), |u| u.0.path().to_owned());
    let raw_query = req.uri().query().unwrap_or("").to_owned();
    let auth = {
        let q = parse_query(Some(&raw_query)).unwrap_or_default();
        let world = st.world.lock().unwrap();
        auth_class(&world, req.headers(), &q)
    };
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_json = content_type
        .as_deref()
        .is_some_and(|c| c.starts_with("application/json"));
    let capture = Arc::new(BodyCapture::new(is_json));
    let mut record = st.journal.begin(
        method.as_str(),
        &full_path,
        &raw_query,
        auth,
        content_type,
        Arc::clone(&capture),
    );
    let kill = req.extensions().get::<ConnKill>().cloned();
    let (mut parts, body) = req.into_parts();
    // The upload handler adds the multipart field names it meets.
    parts.extensions.insert(Arc::clone(&capture));
    let counted_body = body.into_data_stream().inspect(move |chunk| {
        if let Ok(b) = chunk {
            capture.chunk(b);
        }
    });
    let req = Request::from_parts(parts, Body::from_stream(counted_body));

    let endpoint = Endpoint::classify(&method, &rel_path);
    if let Some(fault) = st.faults.take(endpoint) {
        record.fault = true;
        tracing::info!("injecting fault {fault:?} into {method} {full_path}");
        if fault.delay_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(fault.delay_ms)).await;
        }
        if fault.drop_connection {
            if let Some(kill) = kill {
                if endpoint == Some(Endpoint::UploadLogs) {
                    let mut stream = req.into_body().into_data_stream();
                    let mut read = 0;
                    while read < DROP_AFTER_BYTES {
                        match stream.next().await {
                            Some(Ok(b)) => read += b.len(),
                            _ => break,
                        }
                    }
                }
                kill.kill();
                // The connection task drops this future; the record is
                // written with status 0 when `record` goes.
                std::future::pending::<()>().await;
            }
            record.status = 500;
            return ApiError::internal("drop_connection fault without a connection to drop")
                .into_response();
        }
        if let Some(code) = fault.status {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = match fault.body {
                Some(raw) => {
                    let ctype = if raw.trim_start().starts_with(['{', '[']) {
                        "application/json"
                    } else {
                        "text/plain; charset=utf-8"
                    };
                    (status, [(header::CONTENT_TYPE, ctype)], raw).into_response()
                }
                None => (status, Json(error_body(status, "injected fault"))).into_response(),
            };
            if let Some(ra) = fault
                .retry_after
                .and_then(|v| HeaderValue::from_str(&v).ok())
            {
                resp.headers_mut().insert(header::RETRY_AFTER, ra);
            }
            if let Some(location) = fault.location.and_then(|v| HeaderValue::from_str(&v).ok()) {
                resp.headers_mut().insert(header::LOCATION, location);
            }
            record.status = code;
            return resp;
        }
    }
    let resp = next.run(req).await;
    record.status = resp.status().as_u16();
    resp
}

// ---------- hosts ----------

async fn list_infra_env_hosts(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(infra_env_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Vec<serde_json::Value>>, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let world = st.world.lock().unwrap();
    authorize(&world, &[Scheme::Agent, Scheme::User], &headers, &q)?;
    let id = parse_uuid("infra_env_id", "path", &infra_env_id)?;
    if world.infra_env(id).is_none() {
        return Err(ApiError::not_found(format!("infra env {id} not found")));
    }
    Ok(Json(hosts_json(&world, st.mode, |h| h.infra_env_id == id)))
}

async fn list_cluster_hosts(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Vec<serde_json::Value>>, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let world = st.world.lock().unwrap();
    authorize(&world, &[Scheme::Agent, Scheme::User], &headers, &q)?;
    let id = parse_uuid("cluster_id", "path", &cluster_id)?;
    if world.cluster(id).is_none() {
        return Err(ApiError::not_found(format!("cluster {id} not found")));
    }
    Ok(Json(hosts_json(&world, st.mode, |h| {
        h.cluster_id == Some(id)
    })))
}

fn hosts_json(
    world: &World,
    mode: model::Mode,
    keep: impl Fn(&Host) -> bool,
) -> Vec<serde_json::Value> {
    world
        .hosts
        .iter()
        .filter(|h| keep(h))
        .map(|h| h.to_api_json(mode))
        .collect()
}

async fn get_host(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path((infra_env_id, host_id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Json<serde_json::Value>, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let world = st.world.lock().unwrap();
    // The real service serves this to users only: an agent key gets 401.
    authorize(&world, &[Scheme::User], &headers, &q)?;
    let ie = parse_uuid("infra_env_id", "path", &infra_env_id)?;
    let id = parse_uuid("host_id", "path", &host_id)?;
    let host = find_host(&world, ie, id)?;
    Ok(Json(host.to_api_json(st.mode)))
}

fn find_host(world: &World, infra_env_id: Uuid, host_id: Uuid) -> Result<&Host, ApiError> {
    if world.infra_env(infra_env_id).is_none() {
        return Err(ApiError::not_found(format!(
            "infra env {infra_env_id} not found"
        )));
    }
    world
        .host(host_id)
        .filter(|h| h.infra_env_id == infra_env_id)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "host {host_id} not found in infra env {infra_env_id}"
            ))
        })
}

#[derive(Deserialize)]
struct ProgressBody {
    current_stage: Option<String>,
    #[serde(default)]
    progress_info: Option<String>,
}

async fn update_progress(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path((infra_env_id, host_id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let q = parse_query(raw.as_deref())?;
    {
        let world = st.world.lock().unwrap();
        authorize(&world, &[Scheme::Agent], &headers, &q)?;
    }
    let ie = parse_uuid("infra_env_id", "path", &infra_env_id)?;
    let id = parse_uuid("host_id", "path", &host_id)?;
    let body: ProgressBody = serde_json::from_slice(&body).map_err(|e| {
        ApiError::Validation(format!(
            "parsing host-progress body from \"\" failed, because {e}"
        ))
    })?;
    let Some(stage_name) = body.current_stage else {
        return Err(ApiError::Validation(
            "current_stage in body is required".into(),
        ));
    };
    let stage = Stage::parse(&stage_name, st.mode)
        .ok_or_else(|| ApiError::Validation(Stage::enum_message(st.mode)))?;
    let info = body.progress_info.unwrap_or_default();

    let mut world = st.world.lock().unwrap();
    find_host(&world, ie, id)?;
    let host = world.host_mut(id).expect("found above");
    if host.cluster_id.is_none() {
        return Err(ApiError::bad_request(format!(
            "host {id} is not bound to any cluster, can't update progress"
        )));
    }
    match host.update_progress(stage, &info, st.mode, SystemTime::now()) {
        Ok(outcome) => {
            tracing::info!("host {id}: {stage} ({info:?}): {outcome:?}");
            Ok(StatusCode::OK)
        }
        Err(ProgressError::Conflict(reason)) => {
            tracing::info!("host {id}: refused {stage}: {reason}");
            Err(ApiError::conflict(reason))
        }
    }
}

// ---------- logs ----------

/// Resolves the bundle key after checking cluster and host exist.
fn bundle_key(
    world: &World,
    cluster_id: Uuid,
    host_id: Option<Uuid>,
    infra_env_id: Option<Uuid>,
    logs_type: String,
) -> Result<BundleKey, ApiError> {
    if world.cluster(cluster_id).is_none() {
        return Err(ApiError::not_found(format!(
            "cluster {cluster_id} not found"
        )));
    }
    if let Some(h) = host_id {
        let found = world.host(h).is_some_and(|host| {
            host.cluster_id == Some(cluster_id)
                && infra_env_id.is_none_or(|ie| ie == host.infra_env_id)
        });
        if !found {
            return Err(ApiError::not_found(format!(
                "host {h} not found in cluster {cluster_id}"
            )));
        }
    }
    Ok(BundleKey {
        cluster_id,
        host_id,
        logs_type,
    })
}

async fn upload_logs(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
    capture: Option<Extension<Arc<BodyCapture>>>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<StatusCode, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let key = {
        let world = st.world.lock().unwrap();
        authorize(&world, &[Scheme::Agent], &headers, &q)?;
        let cluster_id = parse_uuid("cluster_id", "path", &cluster_id)?;
        let logs_type = logs_type_param(&q, &st)?
            .ok_or_else(|| ApiError::Validation("logs_type in query is required".into()))?;
        let host_id = query_uuid(&q, "host_id")?;
        let infra_env_id = query_uuid(&q, "infra_env_id")?;
        bundle_key(&world, cluster_id, host_id, infra_env_id, logs_type)?
    };
    let mut multipart = multipart
        .map_err(|e| ApiError::bad_request(format!("expected a multipart/form-data body: {e}")))?;
    let final_path = store::bundle_path(&st.data_dir, &key);
    let limit = st.max_upload_bytes;

    let mut upload: Option<(TempUpload, u64)> = None;
    let mut too_large = false;
    let mut drained: u64 = 0;
    let multipart_err = |e: axum::extract::multipart::MultipartError| {
        ApiError::bad_request(format!("reading the multipart body failed: {e}"))
    };
    while let Some(mut field) = multipart.next_field().await.map_err(multipart_err)? {
        if let Some(Extension(capture)) = &capture {
            capture.form_field(field.name().unwrap_or(""));
        }
        let wanted = field.name() == Some("upfile") && upload.is_none() && !too_large;
        if !wanted {
            while let Some(chunk) = field.chunk().await.map_err(multipart_err)? {
                drained += chunk.len() as u64;
                if drained > MAX_DRAIN_BYTES {
                    break;
                }
            }
            continue;
        }
        let (tmp, mut file) = TempUpload::create(&final_path)
            .await
            .map_err(|e| ApiError::internal(format!("creating the upload file failed: {e}")))?;
        let mut size: u64 = 0;
        while let Some(chunk) = field.chunk().await.map_err(multipart_err)? {
            size += chunk.len() as u64;
            if size > limit {
                too_large = true;
                drained = size;
                break;
            }
            file.write_all(&chunk)
                .await
                .map_err(|e| ApiError::internal(format!("writing the upload failed: {e}")))?;
        }
        if too_large {
            // `tmp` goes out of scope here and removes the partial file.
            continue;
        }
        file.flush()
            .await
            .and(file.sync_all().await)
            .map_err(|e| ApiError::internal(format!("writing the upload failed: {e}")))?;
        upload = Some((tmp, size));
    }
    if too_large {
        return Err(ApiError::bad_request(format!(
            "upfile is larger than the maximum allowed size of {limit} bytes"
        )));
    }
    let Some((tmp, size)) = upload else {
        return Err(ApiError::bad_request(
            "missing file field \"upfile\" in the multipart body",
        ));
    };

    let tmp_path = tmp.path().to_owned();
    let (valid, members) = tokio::task::spawn_blocking(move || store::inspect(&tmp_path))
        .await
        .map_err(|e| ApiError::internal(format!("inspecting the upload failed: {e}")))?;

    let mut world = st.world.lock().unwrap();
    // A new seed may have arrived while the body was streaming.
    bundle_key(
        &world,
        key.cluster_id,
        key.host_id,
        None,
        key.logs_type.clone(),
    )?;
    // Rename and metadata change together under the lock, so the recorded
    // metadata always describes the file on disk.
    tmp.commit(&final_path)
        .map_err(|e| ApiError::internal(format!("storing the upload failed: {e}")))?;
    let uploads = world.bundles.get(&key).map_or(0, |m| m.uploads) + 1;
    tracing::info!(
        "stored {} logs of cluster {} host {:?}: {size} bytes, valid={valid}, upload #{uploads}",
        key.logs_type,
        key.cluster_id,
        key.host_id
    );
    world.bundles.insert(
        key,
        BundleMeta {
            size,
            uploaded_at: SystemTime::now(),
            uploads,
            valid,
            members,
            path: final_path,
        },
    );
    Ok(StatusCode::NO_CONTENT)
}

async fn download_logs(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let (key, filename) = {
        let world = st.world.lock().unwrap();
        authorize(&world, &[Scheme::User, Scheme::Url], &headers, &q)?;
        let cluster_id = parse_uuid("cluster_id", "path", &cluster_id)?;
        let host_id = query_uuid(&q, "host_id")?;
        // Like the real service: host logs by default for a host, otherwise
        // the controller's.
        let logs_type = logs_type_param(&q, &st)?.unwrap_or_else(|| {
            if host_id.is_some() {
                "host"
            } else {
                "controller"
            }
            .to_owned()
        });
        let key = bundle_key(&world, cluster_id, host_id, None, logs_type)?;
        if !world.bundles.contains_key(&key) {
            return Err(ApiError::not_found(format!(
                "no {} logs uploaded for cluster {cluster_id}{}",
                key.logs_type,
                host_id.map(|h| format!(" host {h}")).unwrap_or_default()
            )));
        }
        let filename = bundle_filename(&world, &key);
        (key, filename)
    };
    serve_bundle(&store::bundle_path(&st.data_dir, &key), &filename).await
}

/// `<cluster>_<hostname or id>_<logs type>.tar.gz`, restricted to safe characters.
pub fn bundle_filename(world: &World, key: &BundleKey) -> String {
    let cluster = world
        .cluster(key.cluster_id)
        .map_or_else(|| key.cluster_id.to_string(), |c| c.name.clone());
    let host = key.host_id.map_or_else(
        || "cluster".to_owned(),
        |h| {
            world
                .host(h)
                .map(|host| host.requested_hostname.clone())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| h.to_string())
        },
    );
    format!("{cluster}_{host}_{}.tar.gz", key.logs_type)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Streams a stored bundle; shared with the admin download route.
pub async fn serve_bundle(path: &std::path::Path, filename: &str) -> Result<Response, ApiError> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| ApiError::not_found(format!("bundle file unavailable: {e}")))?;
    // Size from the opened file: a concurrent re-upload renames a new file
    // in, but this handle keeps reading the one it opened.
    let len = file
        .metadata()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .len();
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(file));
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename={filename}"),
            ),
            (header::CONTENT_LENGTH, len.to_string()),
        ],
        body,
    )
        .into_response())
}
