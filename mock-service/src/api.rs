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
use crate::model::{self, Host, HostView, ProgressError, Stage, World};
use crate::requests::BodyCapture;
use crate::server::ConnKill;
use crate::state::Shared;
use crate::store::{self, BundleKey, BundleMeta, TempUpload};
use crate::wire;

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
        .route("/v2/clusters/{cluster_id}", get(get_cluster))
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
        // go-openapi's router (`middleware/router.go` `NewRouter`).
        .fallback(|OriginalUri(uri): OriginalUri| async move {
            ApiError::Serve(
                StatusCode::NOT_FOUND,
                format!("path {} was not found", uri.path()),
            )
        })
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

/// What one security scheme of a route makes of a request, as go-openapi's
/// `RouteAuthenticator` sees it.
enum Check {
    /// No credential for this scheme (`APIKeyAuth` finds an empty token).
    NotApplicable,
    Passed,
    /// The authenticator refused the token; the next scheme is tried and
    /// the last refusal is the answer.
    Refused(ApiError),
    /// Authenticated, but the authorizer refused: the answer at once.
    Denied(ApiError),
}

/// `pkg/auth/local_authenticator.go` `validateToken`: a token that is not
/// an ES256 JWT of the service's key. The mock's tokens are opaque, so it
/// answers what the JWT parser says of them: not three segments, or (three
/// segments) a signature of another key.
fn token_parse_error(token: &str) -> ApiError {
    let why = if token.split('.').count() == 3 {
        "crypto/ecdsa: verification error"
    } else {
        "token contains an invalid number of segments"
    };
    ApiError::unauthorized(format!("Failed to parse token: {why}\n"))
}

/// Local (JWT) `AuthAgentAuth`: the global token or a minted one whose
/// infra-env exists; a minted token whose infra-env is gone is refused
/// with upstream's text.
fn check_agent_token(world: &World, key: &str) -> Result<(), ApiError> {
    if world.agent_token.as_deref() == Some(key) {
        return Ok(());
    }
    match world.agent_tokens.iter().find(|t| t.token == key) {
        Some(t) if world.infra_env(t.infra_env_id).is_some() => Ok(()),
        Some(t) => Err(ApiError::unauthorized(format!(
            "infraEnv {} does not exist",
            t.infra_env_id
        ))),
        None => Err(token_parse_error(key)),
    }
}

fn check_scheme(world: &World, scheme: Scheme, headers: &HeaderMap, q: &Query) -> Check {
    match scheme {
        // A scheme with no token seeded is `AUTH_TYPE=none`: its
        // authenticator applies to every request and accepts it.
        Scheme::Agent if !agent_auth_enabled(world) => Check::Passed,
        Scheme::Agent => match agent_key(headers).filter(|k| !k.is_empty()) {
            None => Check::NotApplicable,
            Some(key) => match check_agent_token(world, key) {
                Ok(()) => Check::Passed,
                Err(e) => Check::Refused(e),
            },
        },
        Scheme::User => {
            let Some(token) = world.user_token.as_deref() else {
                return Check::Passed;
            };
            let Some(header) = bearer(headers).filter(|h| !h.is_empty()) else {
                return Check::NotApplicable;
            };
            if header == format!("Bearer {token}") {
                return Check::Passed;
            }
            // `pkg/auth/rhsso_authenticator.go` `AuthUserAuth`.
            let parts: Vec<&str> = header.split_whitespace().collect();
            let message = if parts.len() == 2 && parts[0].eq_ignore_ascii_case("bearer") {
                "Error parsing token or token is invalid"
            } else {
                "Authorization header format must be Bearer {token}"
            };
            Check::Refused(ApiError::unauthorized(message))
        }
        Scheme::Url => {
            let Some(token) = world.user_token.as_deref() else {
                return Check::Passed;
            };
            let Some(key) = q.get("api_key").filter(|k| !k.is_empty()) else {
                return Check::NotApplicable;
            };
            if key == token {
                return Check::Passed;
            }
            // Local `AuthURLAuth` is `AuthAgentAuth`: an agent token
            // authenticates, and `LocalAuthzHandler` then finds it is not
            // scoped to this cluster (`pkg/auth/local_authz_handler.go`).
            match check_agent_token(world, key) {
                Ok(()) => Check::Denied(ApiError::not_found("Object Not Found")),
                Err(e) => Check::Refused(e),
            }
        }
    }
}

/// Whether a scheme accepts the request, for the journal.
fn scheme_passes(world: &World, scheme: Scheme, headers: &HeaderMap, q: &Query) -> bool {
    matches!(check_scheme(world, scheme, headers, q), Check::Passed)
}

/// go-openapi's `RouteAuthenticators.Authenticate` and `Context.Authorize`:
/// the route's schemes in the swagger's order; the first that accepts
/// wins; otherwise the last refusal is the answer (an `infra_error` 401
/// from the authenticator), or, when no scheme found a credential,
/// "unauthenticated for invalid credentials". On the hosted service an
/// agent key that is refused, or reaches a resource its owner does not
/// own, gets 404 "Object Not Found".
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
    let mut last_refusal = None;
    for scheme in allowed {
        match check_scheme(world, *scheme, headers, q) {
            Check::NotApplicable => {}
            Check::Passed => return Ok(()),
            Check::Refused(e) => last_refusal = Some(e),
            Check::Denied(e) => return Err(e),
        }
    }
    Err(last_refusal.unwrap_or_else(ApiError::unauthenticated))
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
) -> Result<Response, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let world = st.world.lock().unwrap();
    authorize(
        &st,
        &world,
        &[Scheme::User, Scheme::Agent],
        &headers,
        &q,
        Scope::infra_env(&infra_env_id),
    )?;
    let id = parse_uuid("infra_env_id", "path", &infra_env_id)?;
    // `GetInfraEnvInternal`: gorm's error as is.
    if world.infra_env(id).is_none() {
        return Err(ApiError::record_not_found());
    }
    // `V2ListHosts` runs `customizeHost(nil, …)` (see `Host::listed_stages`).
    let hosts: Vec<serde_json::Value> = world
        .hosts
        .iter()
        .filter(|h| h.infra_env_id == id)
        .map(|h| h.to_api_json(st.mode, &HostView::customized(&h.listed_stages(st.mode))))
        .collect();
    Ok(wire::json_ok(&serde_json::Value::Array(hosts)))
}

/// A boolean query parameter as go-openapi binds it (`swag.ConvertBool`).
fn query_bool(q: &Query, name: &str) -> Result<bool, ApiError> {
    match q.get(name).map(|v| v.to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) => match v.as_str() {
            "true" | "1" | "yes" | "ok" | "y" | "on" | "selected" | "checked" | "t" | "enabled" => {
                Ok(true)
            }
            "false" | "0" | "no" | "n" | "off" | "f" | "disabled" | "" => Ok(false),
            _ => Err(ApiError::Validation(format!(
                "{name} in query must be of type boolean: \"{}\"",
                q[name]
            ))),
        },
    }
}

/// `ListClusterHosts`: the rows as stored, filtered by `role` and `status`;
/// no `customizeHost`, so `progress_stages` is null and
/// `requested_hostname` is the stored one; the inventory and the
/// connectivity report only on request. It never checks that the cluster
/// exists: an unknown one lists no hosts.
async fn list_cluster_hosts(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let world = st.world.lock().unwrap();
    authorize(
        &st,
        &world,
        &[Scheme::User, Scheme::Agent],
        &headers,
        &q,
        Scope::cluster(&cluster_id),
    )?;
    let id = parse_uuid("cluster_id", "path", &cluster_id)?;
    let view = HostView {
        progress_stages: None,
        inventory: query_bool(&q, "with-inventory")?,
        connectivity: query_bool(&q, "with-connectivity")?,
        customized: false,
    };
    let role = q.get("role");
    let status = q.get("status");
    let hosts: Vec<serde_json::Value> = world
        .hosts
        .iter()
        .filter(|h| h.cluster_id == Some(id))
        .filter(|h| role.is_none_or(|r| r == h.role.as_str()))
        .filter(|h| status.is_none_or(|s| *s == h.status))
        .map(|h| h.to_api_json(st.mode, &view))
        .collect();
    Ok(wire::json_ok(&serde_json::Value::Array(hosts)))
}

/// `V2GetCluster`, which upstream also serves to agents. Its hosts are
/// customized with the cluster, so a single-node host lists `SnoStages`.
async fn get_cluster(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let q = parse_query(raw.as_deref())?;
    let world = st.world.lock().unwrap();
    authorize(
        &st,
        &world,
        &[Scheme::User, Scheme::Agent],
        &headers,
        &q,
        Scope::cluster(&cluster_id),
    )?;
    let id = parse_uuid("cluster_id", "path", &cluster_id)?;
    let exclude_hosts = query_bool(&q, "exclude-hosts")?;
    let cluster = world.cluster(id).ok_or_else(ApiError::record_not_found)?;
    Ok(wire::json_ok(&world.cluster_json(
        cluster,
        st.mode,
        !exclude_hosts,
    )))
}

async fn get_host(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path((infra_env_id, host_id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
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
    Ok(wire::json_ok(&host.to_api_json(
        st.mode,
        &HostView::customized(&host.stages(st.mode)),
    )))
}

/// `common.GetHostFromDB`: the host by id and infra-env, gorm's error
/// wrapped with both ids (`internal/common/db.go`).
fn find_host(world: &World, infra_env_id: Uuid, host_id: Uuid) -> Result<&Host, ApiError> {
    world
        .host(host_id)
        .filter(|h| h.infra_env_id == infra_env_id)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "failed to get host {host_id} in infra_env {infra_env_id}: record not found"
            ))
        })
}

#[derive(Deserialize)]
struct ProgressBody {
    #[serde(default)]
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
    // `current_stage` is optional in `host-progress` and its enum check
    // skips the empty value (`models/host_progress.go`): missing or empty
    // reaches the handler.
    let stage = match body.current_stage.as_deref() {
        None | Some("") => None,
        Some(name) => Some(
            Stage::parse(name, st.mode)
                .ok_or_else(|| ApiError::Validation(Stage::enum_message(st.mode)))?,
        ),
    };
    let info = body.progress_info.unwrap_or_default();

    let mut world = st.world.lock().unwrap();
    find_host(&world, ie, id)?;
    let host = world.host_mut(id).expect("found above");
    if host.cluster_id.is_none() {
        return Err(ApiError::bad_request(format!(
            "host {id} is not bound to any cluster, cannot update progress"
        )));
    }
    let now = SystemTime::now();
    let result = match stage {
        Some(stage) => host.update_progress(stage, &info, st.mode, now),
        None => host.update_progress_without_stage(&info, now),
    };
    let shown = stage.map_or("", Stage::as_str);
    match result {
        Ok(outcome) => {
            tracing::info!("host {id}: {shown:?} ({info:?}): {outcome:?}");
            Ok(StatusCode::OK)
        }
        Err(ProgressError::Conflict(reason)) => {
            tracing::info!("host {id}: refused {shown:?}: {reason}");
            Err(ApiError::conflict(reason))
        }
    }
}

// ---------- logs ----------

/// `getCluster`: gorm's "record not found", unwrapped.
fn cluster_exists(world: &World, cluster_id: Uuid) -> Result<(), ApiError> {
    if world.cluster(cluster_id).is_none() {
        return Err(ApiError::record_not_found());
    }
    Ok(())
}

/// Upstream `GetClusterHostFromDB`: the host must be in that cluster; the
/// infra-env plays no part, nor does the cluster's existence.
fn host_in_cluster(world: &World, cluster_id: Uuid, host_id: Uuid) -> Result<&Host, ApiError> {
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
        // `uploadHostLogs`: `SetUploadLogsAt`, then `UpdateLogsProgress`
        // with `collecting`.
        if let Some(h) = key.host_id.and_then(|h| world.host_mut(h)) {
            h.logs_collected_at = Some(now);
            h.logs_info = "collecting";
            h.updated_at = now;
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
    (role, sanitize_name(&host.hostname_for_msg()))
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
        // `PrepareClusterLogFile` first writes `cluster/metadata.json` and
        // `cluster/events.json` under the cluster's logs prefix, so the tar
        // is never empty; members come in the storage's listing order.
        _ => {
            let mut members: Vec<(String, String, store::TarMember)> = Vec::new();
            for host in world
                .hosts
                .iter()
                .filter(|h| h.cluster_id == Some(cluster_id))
            {
                if let Some(inner) = host_tar_members(st, world, cluster, host) {
                    members.push((
                        format!("{}/logs.tar.gz", host.id),
                        format!("{}.tar", host_logs_base(cluster, host)),
                        store::TarMember::Tar(inner),
                    ));
                }
            }
            let mut metadata = world.cluster_json(cluster, st.mode, true);
            metadata["pull_secret"] = serde_json::json!("SECRET");
            members.push((
                "cluster/metadata.json".to_owned(),
                "cluster_metadata.json".to_owned(),
                store::TarMember::Bytes(wire::go_encode(&metadata, true).into_bytes()),
            ));
            members.push((
                "cluster/events.json".to_owned(),
                "cluster_events.json".to_owned(),
                store::TarMember::Bytes(
                    wire::go_encode(&progress_events(world, cluster_id), true).into_bytes(),
                ),
            ));
            let controller = BundleKey {
                cluster_id,
                host_id: None,
                logs_type: "controller".to_owned(),
            };
            if world.bundles.contains_key(&controller) {
                members.push((
                    "controller/logs.tar.gz".to_owned(),
                    "controller_logs.tar.gz".to_owned(),
                    store::TarMember::File(store::bundle_path(&st.data_dir, &controller)),
                ));
            }
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(Download::Tar(
                members.into_iter().map(|(_, name, m)| (name, m)).collect(),
                format!("{}_{cluster_id}.tar", sanitize_name(&cluster.name)),
            ))
        }
    }
}

/// The cluster's `host_install_progress_updated` events, one per stage in
/// each host's history ("Host: {host_name}, {event}",
/// `internal/common/events/events.go`).
fn progress_events(world: &World, cluster_id: Uuid) -> serde_json::Value {
    let mut events: Vec<(std::time::SystemTime, serde_json::Value)> = Vec::new();
    for host in world
        .hosts
        .iter()
        .filter(|h| h.cluster_id == Some(cluster_id))
    {
        for entry in &host.history {
            let event = if entry.progress_info.is_empty() {
                format!("reached installation stage {}", entry.stage)
            } else {
                format!(
                    "reached installation stage {}: {}",
                    entry.stage, entry.progress_info
                )
            };
            events.push((
                entry.at,
                serde_json::json!({
                    "category": "user",
                    "cluster_id": cluster_id,
                    "event_time": wire::date_time(Some(entry.at)),
                    "host_id": host.id,
                    "infra_env_id": host.infra_env_id,
                    "message": format!("Host: {}, {event}", host.hostname_for_msg()),
                    "name": "host_install_progress_updated",
                    "severity": "info",
                }),
            ));
        }
    }
    events.sort_by_key(|(at, _)| *at);
    serde_json::Value::Array(events.into_iter().map(|(_, e)| e).collect())
}

/// `V2DownloadClusterLogs` produces `application/octet-stream`: its error
/// responders' bodies (the `error` and `infra_error` models) are written by
/// that producer, as `application/octet-stream`, unless the client asks
/// for JSON. go-openapi's own errors (validation, no credentials) stay JSON.
async fn download_logs(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(cluster_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let octet = wire::prefers_octet_stream(&headers);
    download_logs_as(&st, &headers, &cluster_id, raw.as_deref())
        .await
        .map_err(|e| if octet { e.octet_stream() } else { e })
}

async fn download_logs_as(
    st: &Shared,
    headers: &HeaderMap,
    cluster_id: &str,
    raw: Option<&str>,
) -> Result<Response, ApiError> {
    let q = parse_query(raw)?;
    let plan = {
        let world = st.world.lock().unwrap();
        authorize(
            st,
            &world,
            &[Scheme::User, Scheme::Url],
            headers,
            &q,
            Scope::cluster(cluster_id),
        )?;
        let cluster_id = parse_uuid("cluster_id", "path", cluster_id)?;
        let host_id = query_uuid(&q, "host_id")?;
        let logs_type = download_logs_type_param(&q, st)?;
        plan_download(st, &world, cluster_id, host_id, logs_type.as_deref())?
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
                high_availability_mode: None,
                control_plane_count: None,
                base_dns_domain: None,
                created_at: None,
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
        let (world, c, _, _) = world();
        assert!(agent_auth_enabled(&world));
        assert!(check_agent_token(&world, "ie-token").is_ok());
        // Minted for the cluster: its claim names no infra-env.
        let text = |e: ApiError| match e {
            ApiError::Infra(status, message) => (status.as_u16(), message),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            text(check_agent_token(&world, "cluster-minted").unwrap_err()),
            (401, format!("infraEnv {c} does not exist"))
        );
        assert_eq!(
            text(check_agent_token(&world, "other").unwrap_err()),
            (
                401,
                "Failed to parse token: token contains an invalid number of segments\n".into()
            )
        );
        assert_eq!(
            text(check_agent_token(&world, "a.b.c").unwrap_err()).1,
            "Failed to parse token: crypto/ecdsa: verification error\n"
        );
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
