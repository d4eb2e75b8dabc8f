//! The routes, one module per router of Cognee's API (docs/http.md).

pub mod auth;
pub mod datasets;
pub mod health;
pub mod pipelines;
pub mod query;
pub mod remember;
pub mod visualize;

use axum::http::StatusCode;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::error::ApiError;
use crate::AppState;

/// Everything under `/api/v1`. Each route is registered with its OpenAPI
/// description (`routes!` reads the handler's `#[utoipa::path]`), so the
/// document cannot miss one.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(query::recall, query::recall_history))
        .routes(routes!(query::search, query::search_history))
        .routes(routes!(remember::remember))
        .routes(routes!(remember::forget))
        .routes(routes!(pipelines::add))
        .routes(routes!(pipelines::cognify))
        .routes(routes!(datasets::list, datasets::create, datasets::delete_all))
        .routes(routes!(datasets::status))
        .routes(routes!(datasets::delete_one))
        .routes(routes!(datasets::data))
        .routes(routes!(datasets::data_count))
        .routes(routes!(datasets::graph))
        .routes(routes!(datasets::permission))
        .routes(routes!(visualize::visualize))
        .routes(routes!(auth::login))
        .routes(routes!(auth::logout))
        .routes(routes!(auth::me))
        .routes(routes!(auth::register))
        .routes(routes!(auth::create_api_key, auth::list_api_keys))
        .routes(routes!(auth::revoke_api_key))
}

/// The routes outside `/api/v1`: the root and health.
pub fn outside_api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health::root)).routes(routes!(health::health)).routes(routes!(health::detailed))
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
