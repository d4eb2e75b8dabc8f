//! Every failed request becomes one [`ApiError`], answered in the shape
//! Cognee's server gives (docs/http.md, "Errors"): validation failures as
//! 400 with the `detail` list and the received `body`; engine errors
//! through `recall_api::error_response` for their route; route-built
//! errors as `{"detail": …}` or `{"error": …}`. Every answer is JSON.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use recall_api::{error_response, Route};
use recall_core::RecallError;
use serde_json::{json, Value};

/// A failed request.
#[derive(Debug)]
pub enum ApiError {
    /// An engine error, answered as `route` answers it.
    Engine { error: RecallError, route: Route },
    /// A request that does not validate: 400 `{"detail": [...], "body": ...}`.
    Validation { detail: Vec<Value>, body: Value },
    /// A route's own answer.
    Http { status: StatusCode, body: Value },
}

pub type ApiResult<T> = std::result::Result<T, ApiError>;

impl ApiError {
    /// `{"detail": "<text>"}` with this status (FastAPI's HTTPException shape).
    pub fn detail(status: StatusCode, text: impl Into<String>) -> Self {
        ApiError::Http { status, body: json!({"detail": text.into()}) }
    }

    /// `{"error": "<text>"}` with this status (the routers' own error shape).
    pub fn error(status: StatusCode, text: impl Into<String>) -> Self {
        ApiError::Http { status, body: json!({"error": text.into()}) }
    }

    /// One validation error (pydantic's shape) at `loc`.
    pub fn invalid(kind: &str, loc: Vec<Value>, msg: impl Into<String>, input: Value) -> Self {
        ApiError::Validation {
            detail: vec![json!({"type": kind, "loc": loc, "msg": msg.into(), "input": input})],
            body: Value::Null,
        }
    }

    /// The status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Engine { error, route } => status_code(error_response(error, *route).status),
            ApiError::Validation { .. } => StatusCode::BAD_REQUEST,
            ApiError::Http { status, .. } => *status,
        }
    }
}

fn status_code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl From<RecallError> for ApiError {
    fn from(error: RecallError) -> Self {
        ApiError::Engine { error, route: Route::Other }
    }
}

/// Answers an engine result the way one route does.
pub trait OnRoute<T> {
    fn on(self, route: Route) -> ApiResult<T>;
}

impl<T> OnRoute<T> for std::result::Result<T, RecallError> {
    fn on(self, route: Route) -> ApiResult<T> {
        self.map_err(|error| ApiError::Engine { error, route })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::Engine { error, route } => {
                if matches!(error, RecallError::Backend(_)) {
                    tracing::error!(%error, "request failed in a store");
                }
                let answer = error_response(&error, route);
                (status_code(answer.status), Json(answer.body)).into_response()
            }
            ApiError::Validation { detail, body } => {
                (StatusCode::BAD_REQUEST, Json(json!({"detail": detail, "body": body}))).into_response()
            }
            ApiError::Http { status, body } => (status, Json(body)).into_response(),
        }
    }
}
