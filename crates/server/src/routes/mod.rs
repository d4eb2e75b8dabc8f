//! The routes, one module per router of Cognee's API (docs/http.md).

pub mod auth;
pub mod datasets;
pub mod health;
pub mod pipelines;
pub mod query;
pub mod remember;
pub mod sessions;
pub mod visualize;

use std::ops::RangeInclusive;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde_json::{json, Value};
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
        .routes(routes!(sessions::remember_entry))
        .routes(routes!(sessions::list))
        .routes(routes!(sessions::detail))
        .routes(routes!(remember::forget))
        .routes(routes!(pipelines::add))
        .routes(routes!(pipelines::cognify))
        .routes(routes!(pipelines::improve))
        .routes(routes!(pipelines::update))
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
    parse_uuid_in("path", raw, name)
}

/// A UUID from the request part `location` (`path`, `query`); anything
/// else is a 400 validation error located there.
pub(crate) fn parse_uuid_in(location: &str, raw: &str, name: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw.trim()).map_err(|e| {
        ApiError::invalid(
            "uuid_parsing",
            vec![json!(location), json!(name)],
            format!("Input should be a valid UUID, {e}"),
            json!(raw),
        )
    })
}

/// A required UUID query parameter: missing or malformed is a 400
/// validation error at `["query", name]`.
pub fn query_uuid(query: &[(String, String)], name: &str) -> Result<Uuid, ApiError> {
    match query.iter().find(|(k, _)| k == name) {
        Some((_, raw)) => parse_uuid_in("query", raw, name),
        None => Err(ApiError::invalid("missing", vec![json!("query"), json!(name)], "Field required", Value::Null)),
    }
}

/// A dataset id from a path or query parameter.
pub fn parse_dataset_id(raw: &str, name: &str) -> Result<recall_core::DatasetId, ApiError> {
    parse_uuid(raw, name).map(recall_core::DatasetId)
}

/// The `{dataset_id}` of a path, parsed (a bad id is a 400 validation error).
pub struct DatasetPath(pub recall_core::DatasetId);

impl<S: Send + Sync> FromRequestParts<S> for DatasetPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::detail(e.status(), e.body_text()))?;
        parse_dataset_id(&raw, "dataset_id").map(DatasetPath)
    }
}

/// A query string's pairs, in order (repeated names kept).
pub fn query_pairs(raw: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(raw.unwrap_or_default().as_bytes()).into_owned().collect()
}

/// An integer query parameter within `range` (`default` when absent);
/// anything else is a 400 validation error.
pub fn query_int(
    query: &[(String, String)],
    name: &str,
    default: usize,
    range: RangeInclusive<usize>,
) -> Result<usize, ApiError> {
    let Some((_, raw)) = query.iter().find(|(k, _)| k == name) else { return Ok(default) };
    match raw.trim().parse::<usize>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(ApiError::invalid(
            "int_parsing",
            vec![json!("query"), json!(name)],
            format!("Input should be an integer from {} to {}", range.start(), range.end()),
            json!(raw),
        )),
    }
}

/// `{"detail": "Not Found"}` for an unknown path.
pub async fn not_found() -> ApiError {
    ApiError::detail(StatusCode::NOT_FOUND, "Not Found")
}
