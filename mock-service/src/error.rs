//! The error bodies of the public API, in the shapes and encodings
//! assisted-service uses: `error` (models.Error) and `infra_error`
//! (models.InfraError) written by `internal/common/error_utils.go`'s
//! responders through the route's producer, and go-openapi's own
//! `{code, message}` (`errors.ServeError`) for parameter validation,
//! missing credentials and unknown paths.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::wire;

/// go-openapi's answer when no security scheme of the route applied
/// (`errors.Unauthenticated("invalid credentials")`,
/// `vendor/github.com/go-openapi/runtime/middleware/context.go`).
pub const UNAUTHENTICATED: &str = "unauthenticated for invalid credentials";

#[derive(Debug)]
pub enum ApiError {
    /// The swagger `error` definition (`common.NewApiError`).
    Error(StatusCode, String),
    /// The swagger `infra_error` definition (`common.NewInfraError`): what
    /// the authenticators refuse a token with.
    Infra(StatusCode, String),
    /// A parameter failed its swagger validation (`app.WrapServeError`
    /// turns go-openapi's 422 into 400).
    Validation(String),
    /// Any other `errors.ServeError` answer.
    Serve(StatusCode, String),
    /// Written through the route's `application/octet-stream` producer
    /// (`V2DownloadClusterLogs`): the responders' models go through
    /// `MarshalBinary`, i.e. `json.Marshal`.
    OctetStream(Box<ApiError>),
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

    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::Infra(StatusCode::UNAUTHORIZED, message.into())
    }

    pub fn unauthenticated() -> Self {
        ApiError::Serve(StatusCode::UNAUTHORIZED, UNAUTHENTICATED.to_owned())
    }

    /// gorm's `ErrRecordNotFound` as `GenerateErrorResponder` maps it, for
    /// lookups that do not wrap it (`GetInfraEnvFromDB`, `getCluster`).
    pub fn record_not_found() -> Self {
        ApiError::not_found("record not found")
    }

    /// The same error, written as the octet-stream producer writes it.
    #[must_use]
    pub fn octet_stream(self) -> Self {
        match self {
            already @ ApiError::OctetStream(_) => already,
            other => ApiError::OctetStream(Box::new(other)),
        }
    }
}

/// The `error` body for a status; also used for injected faults.
pub fn error_body(status: StatusCode, reason: &str) -> Value {
    json!({
        "code": status.as_u16().to_string(),
        "href": "",
        "id": status.as_u16(),
        "kind": "Error",
        "reason": reason,
    })
}

/// `infra_error`, and go-openapi's `errorAsJSON`: the same two fields.
fn code_message(status: StatusCode, message: &str) -> Value {
    json!({"code": status.as_u16(), "message": message})
}

fn serve_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        wire::go_encode(&code_message(status, message), true),
    )
        .into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::Error(status, reason) => {
                wire::json_response(status, &error_body(status, &reason))
            }
            ApiError::Infra(status, message) => {
                wire::json_response(status, &code_message(status, &message))
            }
            ApiError::Validation(message) => serve_error(StatusCode::BAD_REQUEST, &message),
            ApiError::Serve(status, message) => serve_error(status, &message),
            ApiError::OctetStream(inner) => {
                let (status, body) = match *inner {
                    ApiError::Error(status, reason) => (status, error_body(status, &reason)),
                    ApiError::Infra(status, message) => (status, code_message(status, &message)),
                    other => return other.into_response(),
                };
                (
                    status,
                    [(header::CONTENT_TYPE, "application/octet-stream")],
                    wire::go_encode(&body, true),
                )
                    .into_response()
            }
        }
    }
}
