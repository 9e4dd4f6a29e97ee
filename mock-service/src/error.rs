//! The error bodies of the public API, in the exact shapes assisted-service
//! uses: `error` for 4xx/5xx, `infra_error` for auth failures, and
//! go-swagger's `{code, message}` for parameter validation.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

#[derive(Debug)]
pub enum ApiError {
    /// The swagger `error` definition.
    Error(StatusCode, String),
    /// The swagger `infra_error` definition (401/403).
    Auth(String),
    /// A parameter failed its swagger validation.
    Validation(String),
}

impl ApiError {
    pub fn bad_request(reason: impl Into<String>) -> Self {
        ApiError::Error(StatusCode::BAD_REQUEST, reason.into())
    }

    pub fn not_found(reason: impl Into<String>) -> Self {
        ApiError::Error(StatusCode::NOT_FOUND, reason.into())
    }

    pub fn conflict(reason: impl Into<String>) -> Self {
        ApiError::Error(StatusCode::CONFLICT, reason.into())
    }

    pub fn internal(reason: impl Into<String>) -> Self {
        ApiError::Error(StatusCode::INTERNAL_SERVER_ERROR, reason.into())
    }
}

/// The `error` body for a status; also used for injected faults.
pub fn error_body(status: StatusCode, reason: &str) -> serde_json::Value {
    json!({
        "code": status.as_u16().to_string(),
        "href": "",
        "id": status.as_u16(),
        "kind": "Error",
        "reason": reason,
    })
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::Error(status, reason) => {
                (status, Json(error_body(status, &reason))).into_response()
            }
            ApiError::Auth(message) => (
                StatusCode::UNAUTHORIZED,
                Json(json!({"code": 401, "message": message})),
            )
                .into_response(),
            ApiError::Validation(message) => (
                StatusCode::BAD_REQUEST,
                Json(json!({"code": 400, "message": message})),
            )
                .into_response(),
        }
    }
}
