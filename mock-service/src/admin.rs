//! The unauthenticated admin API under `/admin` that tests, demo scripts and
//! the page use to seed state, move hosts as the installer would, inject
//! faults, and read back what the agent did.

use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::middleware;
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
use crate::guard;
use crate::model::{self, Mode, ProgressError, Stage, World};
use crate::requests::RequestRecord;
use crate::rfc3339::fmt_time;
use crate::seed::{is_known_status, Seed};
use crate::state::Shared;
use crate::store::{self, BundleMeta};

pub fn router() -> Router<Shared> {
    Router::new()
        .route("/admin/controller/node", post(controller_node))
        .route(
            "/admin/controller/ignition-fetched",
            post(controller_ignition_fetched),
        )
        .route("/admin/seed", post(seed))
        .route("/admin/state", get(state))
        .route("/admin/rules", get(rules))
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
        .route_layer(middleware::from_fn(guard::refuse_cross_site))
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
                "kind": h.kind.as_str(),
                "status": h.status,
                "status_info": h.status_info,
                "current_stage": h.current_stage.map(Stage::as_str),
                "progress_stages": h.stages(mode).iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "installation_percentage": h.installation_percentage(mode),
                "progress_info": h.progress_info,
                "stage_started_at": h.stage_started_at.map(fmt_time),
                "stage_updated_at": h.stage_updated_at.map(fmt_time),
                "stage_timed_out": h.stage_timed_out,
                "logs_collected_at": h.logs_collected_at.map(fmt_time),
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
                "high_availability_mode": c.high_availability_mode,
                "control_plane_count": c.control_plane_count,
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
        "agent_auth": world.agent_token.is_some() || !world.agent_tokens.is_empty(),
        "user_auth": world.user_token.is_some(),
        "now": fmt_time(SystemTime::now()),
        "hosts": hosts,
        "clusters": clusters,
        "infra_envs": world.infra_envs,
    })
}

async fn state(State(st): State<Shared>) -> Json<Value> {
    let world = st.world.lock().unwrap();
    let mut v = state_json(&world, st.mode);
    v["hosted"] = json!(st.hosted);
    Json(v)
}

/// The rules this mode implements, as data: per-role stage lists, stage
/// timeouts (upstream durations, before the time scale) and the controller
/// stand-in's stage sets. Tests compare them with the integration document.
async fn rules(State(st): State<Shared>) -> Json<Value> {
    let names = |v: &[Stage]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>();
    let lists: serde_json::Map<String, Value> = model::StageList::ALL
        .iter()
        .map(|l| {
            (
                l.upstream_name().to_owned(),
                json!(names(&model::role_stage_table(*l, st.mode))),
            )
        })
        .collect();
    let timeouts: serde_json::Map<String, Value> = Stage::all(st.mode)
        .into_iter()
        .filter(|s| *s != Stage::Failed)
        .map(|s| {
            (
                s.as_str().to_owned(),
                json!(model::stage_timeout(s, false).as_secs() / 60),
            )
        })
        .collect();
    Json(json!({
        "mode": if st.mode == Mode::Upstream { "upstream" } else { "enhanced" },
        "stage_lists": lists,
        "stage_timeout_minutes": timeouts,
        "single_node_rebooting_timeout_minutes": model::stage_timeout(Stage::Rebooting, true).as_secs() / 60,
        "controller_joined_from": names(model::controller_joined_from(st.mode)),
        "configuring_skipped": names(&model::configuring_skipped(st.mode, false)),
        "upload_logs_types": model::logs_types(st.mode),
        "download_logs_types": model::download_logs_types(st.mode),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeBody {
    host_id: Uuid,
    /// The node's Ready condition.
    #[serde(default)]
    ready: bool,
}

/// One progress update the controller stand-in sent, and its answer.
#[derive(Serialize)]
struct ControllerPut {
    stage: &'static str,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// Sends a progress update through the service's own rules, as the
/// installer controller's `UpdateHostInstallProgress` call would.
fn controller_put(world: &mut World, mode: Mode, host_id: Uuid, stage: Stage) -> ControllerPut {
    let Some(host) = world.host_mut(host_id) else {
        return ControllerPut {
            stage: stage.as_str(),
            status: 404,
            reason: Some(format!("host {host_id} not found")),
        };
    };
    match host.update_progress(stage, "", mode, SystemTime::now()) {
        Ok(_) => ControllerPut {
            stage: stage.as_str(),
            status: 200,
            reason: None,
        },
        Err(ProgressError::Conflict(reason)) => ControllerPut {
            stage: stage.as_str(),
            status: 409,
            reason: Some(reason),
        },
    }
}

/// The installer controller seeing the host's node in the cluster
/// (`waitAndUpdateNodesStatus`): `Joined` only from the stages it accepts,
/// then `Done` once the node is Ready. Installed and disabled hosts are not
/// looked at. Answers with the updates it sent.
async fn controller_node(State(st): State<Shared>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let body: NodeBody = parse_json(&body)?;
    let mut world = st.world.lock().unwrap();
    let host = world
        .host(body.host_id)
        .ok_or_else(|| ApiError::not_found(format!("host {} not found", body.host_id)))?;
    let mut puts = Vec::new();
    if !matches!(host.status.as_str(), "installed" | "disabled") {
        let stage = host.current_stage;
        if stage.is_some_and(|s| model::controller_joined_from(st.mode).contains(&s)) {
            let put = controller_put(&mut world, st.mode, body.host_id, Stage::Joined);
            let failed = put.status != 200;
            puts.push(put);
            if failed {
                // The controller logs the failure and moves on to the next node.
                return Ok(Json(json!({ "puts": puts })));
            }
        }
        let stage = world.host(body.host_id).and_then(|h| h.current_stage);
        if body.ready && stage != Some(Stage::Done) {
            puts.push(controller_put(
                &mut world,
                st.mode,
                body.host_id,
                Stage::Done,
            ));
        }
    }
    tracing::info!(
        "controller saw node of host {}: {} updates",
        body.host_id,
        puts.len()
    );
    Ok(Json(json!({ "puts": puts })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IgnitionFetchedBody {
    host_id: Uuid,
    /// Seen in the bootstrap's machine-config server log (before the
    /// control plane is up) rather than the cluster's.
    #[serde(default)]
    from_bootstrap: bool,
}

/// The bootstrap node / controller finding the host's Ignition fetch in the
/// machine-config server's log (`SetConfiguringStatusForHosts`): Configuring
/// (workers seen from the bootstrap: Waiting for ignition), unless the
/// host's stage is one it skips.
async fn controller_ignition_fetched(
    State(st): State<Shared>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let body: IgnitionFetchedBody = parse_json(&body)?;
    let mut world = st.world.lock().unwrap();
    let host = world
        .host(body.host_id)
        .ok_or_else(|| ApiError::not_found(format!("host {} not found", body.host_id)))?;
    let mut puts = Vec::new();
    let skipped = model::configuring_skipped(st.mode, body.from_bootstrap);
    if !host.current_stage.is_some_and(|s| skipped.contains(&s)) {
        let stage = if body.from_bootstrap && host.role == model::Role::Worker {
            Stage::WaitingForIgnition
        } else {
            Stage::Configuring
        };
        puts.push(controller_put(&mut world, st.mode, body.host_id, stage));
    }
    Ok(Json(json!({ "puts": puts })))
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
