//! The unauthenticated admin API under `/admin` that tests, demo scripts and
//! the page use to seed state, move hosts as the installer would, inject
//! faults, and read back what the agent did.

use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::api::{bundle_filename, serve_bundle};
use crate::browse::parse_key;
use crate::error::ApiError;
use crate::faults::Fault;
use crate::model::{fmt_time, Mode, Stage, World};
use crate::requests::RequestRecord;
use crate::seed::{is_known_status, Seed};
use crate::store::{self, BundleMeta};
use crate::Shared;

pub fn router() -> Router<Shared> {
    Router::new()
        .route("/admin/seed", post(seed))
        .route("/admin/state", get(state))
        .route("/admin/hosts/{host_id}/stage", post(set_stage))
        .route(
            "/admin/faults",
            get(list_faults).post(add_fault).delete(clear_faults),
        )
        .route("/admin/requests", get(list_requests).delete(clear_requests))
        .route(
            "/admin/bundles/{cluster_id}/{host_id}/{logs_type}",
            get(download_bundle),
        )
}

fn parse_json<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid JSON: {e}")))
}

/// Replaces all clusters, hosts, tokens and bundles. Faults and the request
/// journal are kept: tests often queue faults before seeding.
async fn seed(State(st): State<Shared>, body: Bytes) -> Result<StatusCode, ApiError> {
    let seed: Seed = parse_json(&body)?;
    let world = seed
        .into_world(st.mode)
        .map_err(|e| ApiError::bad_request(format!("{e:#}")))?;
    let mut current = st.world.lock().unwrap();
    *current = world;
    // Old bundles belong to the old world; leaving them would let a new
    // host with a reused id inherit them.
    let root = store::bundles_root(&st.data_dir);
    if root.exists() {
        std::fs::remove_dir_all(&root)
            .map_err(|e| ApiError::internal(format!("removing old bundles failed: {e}")))?;
    }
    tracing::info!(
        "seeded {} clusters, {} infra-envs, {} hosts",
        current.clusters.len(),
        current.infra_envs.len(),
        current.hosts.len()
    );
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Serialize)]
struct BundleView<'a> {
    logs_type: &'a str,
    #[serde(flatten)]
    meta: &'a BundleMeta,
}

fn bundles_view(world: &World, cluster_id: Option<Uuid>, host_id: Option<Uuid>) -> Vec<Value> {
    let Some(cluster_id) = cluster_id else {
        return Vec::new();
    };
    world
        .bundles_of(cluster_id, host_id)
        .into_iter()
        .map(|(logs_type, meta)| json!(BundleView { logs_type, meta }))
        .collect()
}

/// Everything the page and the tests read: hosts with their role's stage
/// list (as the mode defines it), stage history and bundles; clusters with
/// their cluster-level bundles; which stages are this project's.
pub fn state_json(world: &World, mode: Mode) -> Value {
    let hosts: Vec<Value> = world
        .hosts
        .iter()
        .map(|h| {
            json!({
                "id": h.id,
                "infra_env_id": h.infra_env_id,
                "cluster_id": h.cluster_id,
                "requested_hostname": h.requested_hostname,
                "role": h.role.as_str(),
                "bootstrap": h.bootstrap,
                "single_node": h.single_node,
                "status": h.status,
                "status_info": h.status_info,
                "current_stage": h.current_stage.map(Stage::as_str),
                "progress_stages": h.stages(mode).iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "installation_percentage": h.installation_percentage(mode),
                "progress_info": h.progress_info,
                "stage_started_at": h.stage_started_at.map(fmt_time),
                "stage_updated_at": h.stage_updated_at.map(fmt_time),
                "stage_history": h.history,
                "bundles": bundles_view(world, h.cluster_id, Some(h.id)),
            })
        })
        .collect();
    let clusters: Vec<Value> = world
        .clusters
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "name": c.name,
                "openshift_version": c.openshift_version,
                // Uploads without host_id (controller logs) live at cluster level.
                "bundles": bundles_view(world, Some(c.id), None),
            })
        })
        .collect();
    let new_stages: Vec<&str> = Stage::all(mode)
        .into_iter()
        .filter(|s| s.is_enhancement())
        .map(Stage::as_str)
        .collect();
    json!({
        "mode": if mode == Mode::Upstream { "upstream" } else { "enhanced" },
        "new_stages": new_stages,
        "agent_auth": world.agent_token.is_some(),
        "user_auth": world.user_token.is_some(),
        "now": fmt_time(SystemTime::now()),
        "hosts": hosts,
        "clusters": clusters,
        "infra_envs": world.infra_envs,
    })
}

async fn state(State(st): State<Shared>) -> Json<Value> {
    let world = st.world.lock().unwrap();
    Json(state_json(&world, st.mode))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StageBody {
    current_stage: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    progress_info: Option<String>,
}

/// Moves a host as the installer controller would (e.g. `Joined`, `Done`):
/// no forward-only or status rule, but the stage must exist in this mode.
async fn set_stage(
    State(st): State<Shared>,
    Path(host_id): Path<Uuid>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let body: StageBody = parse_json(&body)?;
    let stage = Stage::parse(&body.current_stage, st.mode)
        .ok_or_else(|| ApiError::bad_request(Stage::enum_message(st.mode)))?;
    if let Some(s) = body.status.as_deref() {
        if !is_known_status(s) {
            return Err(ApiError::bad_request(format!("unknown host status {s:?}")));
        }
    }
    let mut world = st.world.lock().unwrap();
    let host = world
        .host_mut(host_id)
        .ok_or_else(|| ApiError::not_found(format!("host {host_id} not found")))?;
    host.set_stage(
        stage,
        body.progress_info.as_deref().unwrap_or(""),
        body.status.as_deref(),
        SystemTime::now(),
    );
    tracing::info!("admin moved host {host_id} to {stage} ({})", host.status);
    Ok(StatusCode::NO_CONTENT)
}

async fn add_fault(State(st): State<Shared>, body: Bytes) -> Result<StatusCode, ApiError> {
    let fault: Fault = parse_json(&body)?;
    fault.validate().map_err(ApiError::bad_request)?;
    st.faults.push(fault);
    Ok(StatusCode::NO_CONTENT)
}

async fn list_faults(State(st): State<Shared>) -> Json<Vec<Fault>> {
    Json(st.faults.pending())
}

async fn clear_faults(State(st): State<Shared>) -> StatusCode {
    st.faults.clear();
    StatusCode::NO_CONTENT
}

async fn list_requests(State(st): State<Shared>) -> Json<Vec<RequestRecord>> {
    Json(st.journal.list())
}

async fn clear_requests(State(st): State<Shared>) -> StatusCode {
    st.journal.clear();
    StatusCode::NO_CONTENT
}

/// Serves a stored bundle without auth, for the page's links. `host_id` is
/// `cluster` for bundles uploaded without a host.
async fn download_bundle(
    State(st): State<Shared>,
    Path((cluster_id, host_id, logs_type)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    let key = parse_key(&cluster_id, &host_id, logs_type)?;
    let filename = {
        let world = st.world.lock().unwrap();
        if !world.bundles.contains_key(&key) {
            return Err(ApiError::not_found("no such bundle"));
        }
        bundle_filename(&world, &key)
    };
    serve_bundle(&store::bundle_path(&st.data_dir, &key), &filename).await
}
