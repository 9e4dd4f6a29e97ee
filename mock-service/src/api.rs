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
use crate::model::{self, Host, ProgressError, Stage, World};
use crate::requests::BodyCapture;
use crate::server::ConnKill;
use crate::state::Shared;
use crate::store::{self, BundleKey, BundleMeta, TempUpload};

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

/// The resource a request names in its path; the hosted service's
/// authorization checks the caller owns it.
#[derive(Clone, Copy, Default)]
struct Scope {
    cluster: Option<Uuid>,
    infra_env: Option<Uuid>,
}

impl Scope {
    fn cluster(id: &str) -> Scope {
        Scope {
            cluster: Uuid::parse_str(id).ok(),
            infra_env: None,
        }
    }

    fn infra_env(id: &str) -> Scope {
        Scope {
            cluster: None,
            infra_env: Uuid::parse_str(id).ok(),
        }
    }
}

fn agent_auth_enabled(world: &World) -> bool {
    world.agent_token.is_some() || !world.agent_tokens.is_empty()
}

/// Whether the agent key is one the service accepts at all: the global
/// token, or a token minted for an infra-env that exists. Upstream local
/// auth checks no scope for agentAuth, only that the claimed infra-env
/// exists.
fn agent_key_valid(world: &World, key: Option<&str>) -> bool {
    let Some(key) = key else {
        return false;
    };
    world.agent_token.as_deref() == Some(key)
        || world
            .agent_tokens
            .iter()
            .any(|t| t.token == key && world.infra_env(t.infra_env_id).is_some())
}

/// The hosted service's ownership check: a pull-secret token reaches only
/// its owner's clusters and infra-envs. A token minted for one infra-env
/// owns that infra-env and the cluster it is bound to; the global token
/// owns everything.
fn agent_key_owns(world: &World, key: Option<&str>, scope: Scope) -> bool {
    let Some(key) = key else {
        return false;
    };
    if world.agent_token.as_deref() == Some(key) {
        return true;
    }
    world.agent_tokens.iter().any(|t| {
        let Some(env) = world.infra_env(t.infra_env_id) else {
            return false;
        };
        t.token == key
            && scope.infra_env.is_none_or(|ie| ie == env.id)
            && scope
                .cluster
                .is_none_or(|c| env.cluster_id == Some(c) || cluster_of_hosts(world, env.id, c))
    })
}

/// An unbound infra-env's hosts may still be bound to a cluster (late binding).
fn cluster_of_hosts(world: &World, infra_env: Uuid, cluster: Uuid) -> bool {
    world
        .hosts
        .iter()
        .any(|h| h.infra_env_id == infra_env && h.cluster_id == Some(cluster))
}

fn scheme_passes(world: &World, scheme: Scheme, headers: &HeaderMap, q: &Query) -> bool {
    match scheme {
        Scheme::Agent => !agent_auth_enabled(world) || agent_key_valid(world, agent_key(headers)),
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
/// On the hosted service an agent key that is refused, or reaches a
/// resource its owner does not own, gets 404 "Object Not Found".
fn authorize(
    st: &crate::state::AppState,
    world: &World,
    allowed: &[Scheme],
    headers: &HeaderMap,
    q: &Query,
    scope: Scope,
) -> Result<(), ApiError> {
    let key = agent_key(headers);
    if st.hosted && allowed.contains(&Scheme::Agent) && key.is_some() && agent_auth_enabled(world) {
        if agent_key_owns(world, key, scope) {
            return Ok(());
        }
        return Err(ApiError::not_found("Object Not Found"));
    }
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
    let presented = if key.is_some() {
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

fn logs_type_param(q: &Query, st: &crate::state::AppState) -> Result<Option<String>, ApiError> {
    match q.get("logs_type") {
        None => Ok(None),
        Some(t) if model::logs_types(st.mode).contains(&t.as_str()) => Ok(Some(t.clone())),
        Some(_) => Err(ApiError::Validation(model::logs_type_message(st.mode))),
    }
}

/// The download's own enum, which also has `all`.
fn download_logs_type_param(
    q: &Query,
    st: &crate::state::AppState,
) -> Result<Option<String>, ApiError> {
    match q.get("logs_type") {
        None => Ok(None),
        Some(t) if model::download_logs_types(st.mode).contains(&t.as_str()) => Ok(Some(t.clone())),
        Some(_) => Err(ApiError::Validation(model::download_logs_type_message(
            st.mode,
        ))),
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
    authorize(
        &st,
        &world,
        &[Scheme::Agent, Scheme::User],
        &headers,
        &q,
        Scope::infra_env(&infra_env_id),
    )?;
    let id = parse_uuid("infra_env_id", "path", &infra_env_id)?;
    if world.infra_env(id).is_none() {
        return Err(ApiError::not_found(format!("infra env {id} not found")));
    }
    // `V2ListHosts` fills `progress_stages` (see `Host::listed_stages`).
    Ok(Json(hosts_json(
        &world,
        st.mode,
        |h| h.infra_env_id == id,
        |h| Some(h.listed_stages(st.mode)),
    )))
}

async fn list_cluster_hosts(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Vec<serde_json::Value>>, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let world = st.world.lock().unwrap();
    authorize(
        &st,
        &world,
        &[Scheme::Agent, Scheme::User],
        &headers,
        &q,
        Scope::cluster(&cluster_id),
    )?;
    let id = parse_uuid("cluster_id", "path", &cluster_id)?;
    if world.cluster(id).is_none() {
        return Err(ApiError::not_found(format!("cluster {id} not found")));
    }
    // `ListClusterHosts` reads the rows as stored and never fills
    // `progress_stages`: it is null there.
    Ok(Json(hosts_json(
        &world,
        st.mode,
        |h| h.cluster_id == Some(id),
        |_| None,
    )))
}

fn hosts_json(
    world: &World,
    mode: model::Mode,
    keep: impl Fn(&Host) -> bool,
    stages: impl Fn(&Host) -> Option<Vec<Stage>>,
) -> Vec<serde_json::Value> {
    world
        .hosts
        .iter()
        .filter(|h| keep(h))
        .map(|h| h.to_api_json(mode, stages(h).as_deref()))
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
    authorize(
        &st,
        &world,
        &[Scheme::User],
        &headers,
        &q,
        Scope::infra_env(&infra_env_id),
    )?;
    let ie = parse_uuid("infra_env_id", "path", &infra_env_id)?;
    let id = parse_uuid("host_id", "path", &host_id)?;
    let host = find_host(&world, ie, id)?;
    Ok(Json(host.to_api_json(st.mode, Some(&host.stages(st.mode)))))
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
        authorize(
            &st,
            &world,
            &[Scheme::Agent],
            &headers,
            &q,
            Scope::infra_env(&infra_env_id),
        )?;
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

fn cluster_exists(world: &World, cluster_id: Uuid) -> Result<(), ApiError> {
    if world.cluster(cluster_id).is_none() {
        return Err(ApiError::not_found(format!(
            "cluster {cluster_id} not found"
        )));
    }
    Ok(())
}

/// Upstream `GetClusterHostFromDB`: the host must be in that cluster; the
/// infra-env plays no part.
fn host_in_cluster(world: &World, cluster_id: Uuid, host_id: Uuid) -> Result<&Host, ApiError> {
    cluster_exists(world, cluster_id)?;
    world
        .host(host_id)
        .filter(|h| h.cluster_id == Some(cluster_id))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "failed to get host {host_id} in cluster {cluster_id}: record not found"
            ))
        })
}

/// Where an upload goes, after the checks of upstream `v2uploadLogs`: host
/// logs (and, enhanced, `host_boot`) need `host_id` of a host of the
/// cluster; controller logs belong to the cluster whatever `host_id` says.
fn upload_key(
    world: &World,
    cluster_id: Uuid,
    host_id: Option<Uuid>,
    logs_type: &str,
) -> Result<BundleKey, ApiError> {
    let host_id = if model::is_host_logs_type(logs_type) {
        let Some(h) = host_id else {
            return Err(ApiError::bad_request(format!(
                "cluster_id and host_id are required for upload {logs_type} logs"
            )));
        };
        host_in_cluster(world, cluster_id, h)?;
        Some(h)
    } else {
        cluster_exists(world, cluster_id)?;
        None
    };
    Ok(BundleKey {
        cluster_id,
        host_id,
        logs_type: logs_type.to_owned(),
    })
}

async fn upload_logs(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
    capture: Option<Extension<Arc<BodyCapture>>>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let q = parse_query(raw.as_deref())?;
    if st.hosted && q.get("logs_type").is_some_and(|t| t == "node-boot") {
        // The hosted gateway's own rule (assisted-service
        // `openshift/template.yaml`) for the reverted reporter's logs type:
        // a plain-text 400 before the service sees the request.
        return Ok((
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "bad request",
        )
            .into_response());
    }
    {
        let world = st.world.lock().unwrap();
        authorize(
            &st,
            &world,
            &[Scheme::Agent],
            &headers,
            &q,
            Scope::cluster(&cluster_id),
        )?;
    }
    // go-swagger's binder runs `ParseMultipartForm` before it validates any
    // parameter: the whole body is read even when `logs_type` is refused.
    let mut multipart = multipart
        .map_err(|e| ApiError::bad_request(format!("expected a multipart/form-data body: {e}")))?;
    let incoming = store::incoming_path(&st.data_dir);
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
        let (tmp, mut file) = TempUpload::create(&incoming)
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
    // The parameters, in the binder's order; `infra_env_id` must be a uuid
    // and is otherwise ignored.
    let cluster_id = parse_uuid("cluster_id", "path", &cluster_id)?;
    let host_id = query_uuid(&q, "host_id")?;
    query_uuid(&q, "infra_env_id")?;
    let logs_type = logs_type_param(&q, &st)?
        .ok_or_else(|| ApiError::Validation("logs_type in query is required".into()))?;
    if too_large {
        return Err(ApiError::bad_request(format!(
            "upfile is larger than the maximum allowed size of {limit} bytes"
        )));
    }
    let key = {
        let world = st.world.lock().unwrap();
        upload_key(&world, cluster_id, host_id, &logs_type)?
    };
    let Some((tmp, size)) = upload else {
        return Err(ApiError::bad_request(
            "missing file field \"upfile\" in the multipart body",
        ));
    };

    let tmp_path = tmp.path().to_owned();
    let (valid, members) = tokio::task::spawn_blocking(move || store::inspect(&tmp_path))
        .await
        .map_err(|e| ApiError::internal(format!("inspecting the upload failed: {e}")))?;

    let final_path = store::bundle_path(&st.data_dir, &key);
    let mut world = st.world.lock().unwrap();
    // A new seed may have arrived while the body was streaming.
    upload_key(&world, key.cluster_id, key.host_id, &key.logs_type)?;
    // Rename and metadata change together under the lock, so the recorded
    // metadata always describes the file on disk.
    tmp.commit(&final_path)
        .map_err(|e| ApiError::internal(format!("storing the upload failed: {e}")))?;
    let now = SystemTime::now();
    if key.logs_type == "host" {
        if let Some(h) = key.host_id.and_then(|h| world.host_mut(h)) {
            h.logs_collected_at = Some(now);
        }
    }
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
            uploaded_at: now,
            uploads,
            valid,
            members,
            path: final_path,
        },
    );
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// What a download serves, decided under the lock and built outside it.
enum Download {
    /// A stored bundle as it was uploaded.
    Stored(BundleKey, String),
    /// A tar the service assembles from stored bundles.
    Tar(Vec<(String, store::TarMember)>, String),
}

/// The role and sanitized name upstream puts in a host's log file names;
/// the role of a bootstrap host is `bootstrap`.
fn role_and_name(host: &Host) -> (&'static str, String) {
    let role = if host.bootstrap {
        "bootstrap"
    } else {
        host.role.as_str()
    };
    let name = if host.requested_hostname.is_empty() {
        host.id.to_string()
    } else {
        host.requested_hostname.clone()
    };
    (role, sanitize_name(&name))
}

/// `<cluster>_<role>_<hostname>`, as upstream names a host's logs.
fn host_logs_base(cluster: &model::Cluster, host: &Host) -> String {
    let (role, name) = role_and_name(host);
    format!("{}_{role}_{name}", sanitize_name(&cluster.name))
}

/// Upstream `PrepareHostLogFile`: the host's stored objects, `boot_` ones
/// named apart. `None` when the host has none.
fn host_tar_members(
    st: &crate::state::AppState,
    world: &World,
    cluster: &model::Cluster,
    host: &Host,
) -> Option<Vec<(String, store::TarMember)>> {
    let cluster_name = sanitize_name(&cluster.name);
    let (role, name) = role_and_name(host);
    let mut members = Vec::new();
    for (logs_type, member) in [
        ("host", format!("{cluster_name}_{role}_{name}.tar.gz")),
        (
            "host_boot",
            format!("{cluster_name}_{role}_boot_{name}.tar.gz"),
        ),
    ] {
        let key = BundleKey {
            cluster_id: cluster.id,
            host_id: Some(host.id),
            logs_type: logs_type.to_owned(),
        };
        if world.bundles.contains_key(&key) {
            members.push((
                member,
                store::TarMember::File(store::bundle_path(&st.data_dir, &key)),
            ));
        }
    }
    (!members.is_empty()).then_some(members)
}

/// Upstream `getLogFileForDownload` and `V2DownloadClusterLogs`.
fn plan_download(
    st: &crate::state::AppState,
    world: &World,
    cluster_id: Uuid,
    host_id: Option<Uuid>,
    logs_type: Option<&str>,
) -> Result<Download, ApiError> {
    cluster_exists(world, cluster_id)?;
    let cluster = world.cluster(cluster_id).expect("checked above");
    match logs_type {
        Some(t @ ("host" | "host_boot")) => {
            let Some(host_id) = host_id else {
                return Err(ApiError::bad_request(
                    "Host ID must be provided for downloading host logs",
                ));
            };
            let host = host_in_cluster(world, cluster_id, host_id)?;
            let base = host_logs_base(cluster, host);
            if t == "host" {
                if host.logs_collected_at.is_none() {
                    return Err(ApiError::conflict(format!(
                        "Logs for host {host_id} were not found"
                    )));
                }
                let members = host_tar_members(st, world, cluster, host).unwrap_or_default();
                // Upstream names the download `.tar.gz` though it is a tar.
                return Ok(Download::Tar(members, format!("{base}.tar.gz")));
            }
            let key = BundleKey {
                cluster_id,
                host_id: Some(host_id),
                logs_type: t.to_owned(),
            };
            if !world.bundles.contains_key(&key) {
                return Err(ApiError::conflict(format!(
                    "Boot logs for host {host_id} were not found"
                )));
            }
            let (role, name) = role_and_name(host);
            Ok(Download::Stored(
                key,
                format!("{}_{role}_boot_{name}.tar.gz", sanitize_name(&cluster.name)),
            ))
        }
        Some("controller") => {
            let key = BundleKey {
                cluster_id,
                host_id: None,
                logs_type: "controller".to_owned(),
            };
            if !world.bundles.contains_key(&key) {
                return Err(ApiError::conflict(format!(
                    "Controller Logs for cluster {cluster_id} were not found"
                )));
            }
            Ok(Download::Stored(
                key,
                format!(
                    "{}_{cluster_id}_controller.tar.gz",
                    sanitize_name(&cluster.name)
                ),
            ))
        }
        // No logs_type (or `all`): the whole cluster, whatever host_id says.
        _ => {
            let mut members = Vec::new();
            for host in world
                .hosts
                .iter()
                .filter(|h| h.cluster_id == Some(cluster_id))
            {
                if let Some(inner) = host_tar_members(st, world, cluster, host) {
                    members.push((
                        format!("{}.tar", host_logs_base(cluster, host)),
                        store::TarMember::Tar(inner),
                    ));
                }
            }
            let controller = BundleKey {
                cluster_id,
                host_id: None,
                logs_type: "controller".to_owned(),
            };
            if world.bundles.contains_key(&controller) {
                members.push((
                    "controller_logs.tar.gz".to_owned(),
                    store::TarMember::File(store::bundle_path(&st.data_dir, &controller)),
                ));
            }
            if members.is_empty() {
                return Err(ApiError::not_found("No log files were found"));
            }
            Ok(Download::Tar(
                members,
                format!("{}_{cluster_id}.tar", sanitize_name(&cluster.name)),
            ))
        }
    }
}

async fn download_logs(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let plan = {
        let world = st.world.lock().unwrap();
        authorize(
            &st,
            &world,
            &[Scheme::User, Scheme::Url],
            &headers,
            &q,
            Scope::cluster(&cluster_id),
        )?;
        let cluster_id = parse_uuid("cluster_id", "path", &cluster_id)?;
        let host_id = query_uuid(&q, "host_id")?;
        let logs_type = download_logs_type_param(&q, &st)?;
        plan_download(&st, &world, cluster_id, host_id, logs_type.as_deref())?
    };
    match plan {
        Download::Stored(key, filename) => {
            serve_bundle(&store::bundle_path(&st.data_dir, &key), &filename).await
        }
        Download::Tar(members, filename) => {
            let (tmp, _file) = TempUpload::create(&store::incoming_path(&st.data_dir))
                .await
                .map_err(|e| ApiError::internal(format!("creating the download failed: {e}")))?;
            let path = tmp.path().to_owned();
            tokio::task::spawn_blocking(move || store::write_tar(&path, &members))
                .await
                .map_err(|e| ApiError::internal(format!("building the download failed: {e}")))?
                .map_err(|e| ApiError::internal(format!("building the download failed: {e}")))?;
            // The open handle keeps the data; dropping `tmp` unlinks the name.
            let resp = serve_bundle(tmp.path(), &filename).await;
            drop(tmp);
            resp
        }
    }
}

fn sanitize_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AgentToken, Cluster, InfraEnv};

    fn world() -> (World, Uuid, Uuid, Uuid) {
        let (c, e, other) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let world = World {
            agent_tokens: vec![
                AgentToken {
                    token: "ie-token".into(),
                    infra_env_id: e,
                },
                AgentToken {
                    token: "cluster-minted".into(),
                    infra_env_id: c,
                },
            ],
            clusters: vec![Cluster {
                id: c,
                name: "c".into(),
                openshift_version: String::new(),
            }],
            infra_envs: vec![InfraEnv {
                id: e,
                cluster_id: Some(c),
                name: "e".into(),
            }],
            ..World::default()
        };
        (world, c, e, other)
    }

    #[test]
    fn infra_env_tokens_authenticate_while_their_infra_env_exists() {
        let (world, _, _, _) = world();
        assert!(agent_auth_enabled(&world));
        assert!(agent_key_valid(&world, Some("ie-token")));
        // Minted for the cluster: its claim names no infra-env.
        assert!(!agent_key_valid(&world, Some("cluster-minted")));
        assert!(!agent_key_valid(&world, Some("other")));
        assert!(!agent_key_valid(&world, None));
    }

    #[test]
    fn hosted_ownership_covers_the_infra_env_and_its_cluster_only() {
        let (world, c, e, other) = world();
        let scope = |cluster, infra_env| Scope { cluster, infra_env };
        assert!(agent_key_owns(
            &world,
            Some("ie-token"),
            scope(Some(c), None)
        ));
        assert!(agent_key_owns(
            &world,
            Some("ie-token"),
            scope(None, Some(e))
        ));
        assert!(!agent_key_owns(
            &world,
            Some("ie-token"),
            scope(Some(other), None)
        ));
        assert!(!agent_key_owns(
            &world,
            Some("ie-token"),
            scope(None, Some(other))
        ));
        assert!(!agent_key_owns(
            &world,
            Some("cluster-minted"),
            scope(Some(c), None)
        ));
    }
}
