//! The routes, one module per router of Cognee's API (docs/http.md).

pub mod datasets;
pub mod health;
pub mod pipelines;
pub mod query;
pub mod remember;
pub mod visualize;

use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::Router;
use serde_json::json;
use uuid::Uuid;

use crate::auth;
use crate::error::ApiError;
use crate::AppState;

/// Everything under `/api/v1`.
pub fn api() -> Router<AppState> {
    Router::new()
        .route("/recall", post(query::recall).get(query::recall_history))
        .route("/search", post(query::search).get(query::search_history))
        .route("/remember", post(remember::remember))
        .route("/forget", post(remember::forget))
        .route("/add", post(pipelines::add))
        .route("/cognify", post(pipelines::cognify))
        .route("/datasets", get(datasets::list).post(datasets::create).delete(datasets::delete_all))
        .route("/datasets/status", get(datasets::status))
        .route("/datasets/{dataset_id}", delete(datasets::delete_one))
        .route("/datasets/{dataset_id}/data", get(datasets::data))
        .route("/datasets/{dataset_id}/data/count", get(datasets::data_count))
        .route("/datasets/{dataset_id}/graph", get(datasets::graph))
        .route("/permissions/datasets/{principal_id}", post(datasets::permission).delete(datasets::permission))
        .route("/visualize", get(visualize::visualize))
        .route("/auth/login", post(auth::login))
        .route("/auth/logout", post(auth::logout))
        .route("/auth/me", get(auth::me))
        .route("/auth/register", post(auth::register))
        .route("/auth/api-keys", post(auth::create_api_key).get(auth::list_api_keys))
        .route("/auth/api-keys/{api_key_id}", delete(auth::revoke_api_key))
}

/// A UUID from a path or query parameter; anything else is a 400
/// validation error, never a 404.
pub fn parse_uuid(raw: &str, name: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw.trim()).map_err(|e| {
        ApiError::invalid(
            "uuid_parsing",
            vec![json!("path"), json!(name)],
            format!("Input should be a valid UUID, {e}"),
            json!(raw),
        )
    })
}

/// A dataset id from a path or query parameter.
pub fn parse_dataset_id(raw: &str, name: &str) -> Result<recall_core::DatasetId, ApiError> {
    parse_uuid(raw, name).map(recall_core::DatasetId)
}

/// `{"detail": "Not Found"}` for an unknown path.
pub async fn not_found() -> ApiError {
    ApiError::detail(StatusCode::NOT_FOUND, "Not Found")
}
