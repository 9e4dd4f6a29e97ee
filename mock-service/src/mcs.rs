//! A stand-in for the Machine Config Server's `GET /config/{pool}`: the
//! Ignition config a host's pointer ignition merges
//! (`ignition.config.merge` source `https://api-int.<cluster>:22623/config/worker`
//! in what assisted-service renders). Tests put a config per pool through
//! the admin API and read back which Ignition fetched it, so that a real
//! Ignition engine can be run against a pointer config as on a host.
//!
//! It keeps its own state: it has nothing to do with the assisted-service
//! model, and the real MCS is another server anyway.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{json, Value};

/// Fetches kept for the admin view; a test makes a handful.
const MAX_FETCHES: usize = 256;
/// An Ignition config with an embedded binary is a few MiB.
const MAX_CONFIG_BYTES: usize = 32 * 1024 * 1024;

#[derive(Default)]
struct Configs {
    by_pool: Mutex<BTreeMap<String, Bytes>>,
    fetches: Mutex<Vec<Fetch>>,
}

/// One `GET /config/{pool}`, as Ignition made it.
#[derive(Clone, Serialize)]
struct Fetch {
    pool: String,
    status: u16,
    /// Ignition names the spec versions it reads here
    /// (`application/vnd.coreos.ignition+json;version=3.3.0, ...`).
    accept: Option<String>,
    user_agent: Option<String>,
}

pub fn router<S>() -> Router<S> {
    Router::new()
        .route("/config/{pool}", get(serve_config))
        .route(
            "/admin/machine-configs",
            get(admin_view).layer(axum::middleware::from_fn(crate::guard::refuse_rebound_host)),
        )
        .route(
            "/admin/machine-configs/{pool}",
            // axum's default (2 MiB) is below what a config may hold;
            // above this limit axum answers 413 itself.
            put(set_config)
                .layer(DefaultBodyLimit::max(MAX_CONFIG_BYTES))
                .layer(axum::middleware::from_fn(crate::guard::refuse_cross_site)),
        )
        .with_state(Arc::new(Configs::default()))
}

async fn serve_config(
    State(configs): State<Arc<Configs>>,
    Path(pool): Path<String>,
    headers: HeaderMap,
) -> Response {
    let config = configs.by_pool.lock().unwrap().get(&pool).cloned();
    let header_text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let status = if config.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    {
        let mut fetches = configs.fetches.lock().unwrap();
        if fetches.len() < MAX_FETCHES {
            fetches.push(Fetch {
                pool: pool.clone(),
                status: status.as_u16(),
                accept: header_text(header::ACCEPT),
                user_agent: header_text(header::USER_AGENT),
            });
        }
    }
    tracing::info!("machine config for pool {pool:?}: {}", status.as_u16());
    match config {
        Some(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            format!("no machine config for pool {pool:?}\n"),
        )
            .into_response(),
    }
}

/// Stores the config served for `pool`; it must at least be an Ignition
/// config (an object with `ignition.version`), the rest is Ignition's to judge.
async fn set_config(
    State(configs): State<Arc<Configs>>,
    Path(pool): Path<String>,
    body: Bytes,
) -> Response {
    let version = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
        v.pointer("/ignition/version")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let Some(version) = version else {
        return (
            StatusCode::BAD_REQUEST,
            "not an Ignition config: a JSON object with ignition.version\n",
        )
            .into_response();
    };
    tracing::info!("machine config for pool {pool:?} set (spec {version})");
    configs.by_pool.lock().unwrap().insert(pool, body);
    StatusCode::NO_CONTENT.into_response()
}

async fn admin_view(State(configs): State<Arc<Configs>>) -> Json<Value> {
    let pools: Vec<String> = configs.by_pool.lock().unwrap().keys().cloned().collect();
    let fetches = configs.fetches.lock().unwrap().clone();
    Json(json!({"pools": pools, "fetches": fetches}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt as _;

    async fn call(app: &Router, method: &str, uri: &str, body: &str) -> (StatusCode, String) {
        let request = axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header(
                header::ACCEPT,
                "application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1",
            )
            // As a script sends it: the admin guard wants JSON (guard.rs).
            .header(header::CONTENT_TYPE, "application/json")
            .body(axum::body::Body::from(body.to_owned()))
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn serves_what_was_put_and_records_the_fetches() {
        let app: Router = router();
        assert_eq!(
            call(&app, "GET", "/config/worker", "").await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            call(&app, "PUT", "/admin/machine-configs/worker", "{}")
                .await
                .0,
            StatusCode::BAD_REQUEST
        );
        let config = r#"{"ignition":{"version":"3.2.0"}}"#;
        assert_eq!(
            call(&app, "PUT", "/admin/machine-configs/worker", config)
                .await
                .0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            call(&app, "GET", "/config/worker", "").await,
            (StatusCode::OK, config.to_owned())
        );
        let (_, view) = call(&app, "GET", "/admin/machine-configs", "").await;
        let view: Value = serde_json::from_str(&view).unwrap();
        assert_eq!(view["pools"], json!(["worker"]));
        let fetches = view["fetches"].as_array().unwrap();
        assert_eq!(fetches.len(), 2);
        assert_eq!(fetches[0]["status"], 404);
        assert_eq!(fetches[1]["status"], 200);
        assert!(fetches[1]["accept"]
            .as_str()
            .unwrap()
            .contains("version=3.3.0"));
    }
}
