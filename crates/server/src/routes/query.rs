//! `POST|GET /api/v1/recall` and `POST|GET /api/v1/search`.

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use recall_api::{HistoryEntry, RecallBody, Route, SearchBody};
use serde_json::{json, Value};

use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::{ApiError, ApiResult, OnRoute};
use crate::sse;
use crate::AppState;

/// `POST /api/v1/recall`: a JSON array of results, or an event stream when
/// negotiated.
#[utoipa::path(post, path = "/recall", tag = "recall", request_body(content = Object, description = "RecallRequest (docs/requests.md): `query` required; camelCase or snake_case"), responses((status = 200, description = "The results, or an event stream when negotiated", content((Vec<Object> = "application/json"), (String = "text/event-stream"))), (status = 400, description = "Validation error", body = Object), (status = 403, description = "Permission denied", body = Object), (status = 404, description = "Dataset not found", body = Object), (status = 409, description = "Recall failed", body = Object), (status = 422, description = "Invalid request", body = Object)))]
pub async fn recall(
    State(state): State<AppState>,
    Caller(user): Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<RecallBody>,
) -> ApiResult<Response> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    if sse::wants_event_stream(accept, body.stream) {
        let deltas = state.config().answer_streaming;
        return sse::recall_stream(state.app().clone(), user, body.request, deltas).await;
    }
    let results = state.app().recall(&user, &body.request).await.on(Route::Recall)?;
    Ok(Json(results).into_response())
}

/// `POST /api/v1/search`: Cognee's legacy result shapes.
#[utoipa::path(post, path = "/search", tag = "search", request_body(content = Object, description = "SearchRequest (docs/requests.md): `query` required; default type HYBRID_COMPLETION"), responses((status = 200, description = "Cognee's legacy search results", body = Vec<Object>), (status = 400, description = "Validation error", body = Object), (status = 403, description = "Permission denied", body = Object), (status = 500, description = "Search failed", body = Object)))]
pub async fn search(
    State(state): State<AppState>,
    Caller(user): Caller,
    JsonBody(body): JsonBody<SearchBody>,
) -> ApiResult<Json<Vec<Value>>> {
    Ok(Json(state.app().search(&user, &body).await.on(Route::Search)?))
}

/// `GET /api/v1/recall`: the caller's questions and answers, oldest first.
#[utoipa::path(get, path = "/recall", tag = "recall", responses((status = 200, description = "The caller's questions and answers, oldest first", body = Vec<HistoryEntry>)))]
pub async fn recall_history(State(state): State<AppState>, Caller(user): Caller) -> ApiResult<Json<Vec<HistoryEntry>>> {
    history(&state, &user).await.map_err(|e| {
        tracing::error!(error = %e, "recall history failed");
        ApiError::error(StatusCode::INTERNAL_SERVER_ERROR, "An error occurred while fetching recall history.")
    })
}

/// `GET /api/v1/search`: the same history.
#[utoipa::path(get, path = "/search", tag = "search", responses((status = 200, description = "The caller's questions and answers, oldest first", body = Vec<HistoryEntry>)))]
pub async fn search_history(State(state): State<AppState>, Caller(user): Caller) -> ApiResult<Json<Vec<HistoryEntry>>> {
    history(&state, &user).await.map_err(|e| ApiError::Http {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        body: json!({"error": "Internal server error", "detail": e.to_string()}),
    })
}

async fn history(state: &AppState, user: &recall_core::User) -> recall_core::Result<Json<Vec<HistoryEntry>>> {
    let rows = state.app().history(user).await?;
    Ok(Json(rows.into_iter().map(HistoryEntry::from).collect()))
}
