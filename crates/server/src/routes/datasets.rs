//! The datasets router (`/api/v1/datasets`) and dataset grants
//! (`/api/v1/permissions/datasets`). Every route checks the caller's
//! permission on each dataset it touches; unknown and forbidden ids answer
//! the same 403, so ids cannot be probed.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use recall_api::{DataDto, DatasetDto, ForgetRequest, GrantRequest, GraphShape};
use recall_core::model::pipelines;
use recall_core::{DatasetId, DatasetRef, Permission};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{parse_dataset_id, parse_uuid, query_int, query_pairs, DatasetPath};
use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// `GET /api/v1/datasets`: every dataset the caller may read.
#[utoipa::path(get, path = "/datasets", tag = "datasets", responses((status = 200, description = "Datasets the caller may read", body = Vec<DatasetDto>), (status = 401, description = "Authentication required", body = Object)))]
pub async fn list(State(state): State<AppState>, Caller(user): Caller) -> ApiResult<Json<Vec<DatasetDto>>> {
    let listed = state.app().datasets(&user).await?;
    Ok(Json(
        listed
            .iter()
            .filter(|l| l.permissions.contains(&Permission::Read))
            .map(|l| DatasetDto::from(&l.dataset))
            .collect(),
    ))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct CreateDataset {
    name: String,
}

/// `POST /api/v1/datasets` (`{"name"}`): the caller's dataset of that name,
/// created when missing.
#[utoipa::path(post, path = "/datasets", tag = "datasets", request_body = CreateDataset, responses((status = 200, description = "The caller's dataset of that name", body = DatasetDto)))]
pub async fn create(
    State(state): State<AppState>,
    Caller(user): Caller,
    JsonBody(body): JsonBody<CreateDataset>,
) -> ApiResult<Json<DatasetDto>> {
    let dataset = state.app().create_dataset(&user, &body.name).await?;
    Ok(Json(DatasetDto::from(&dataset)))
}

/// `DELETE /api/v1/datasets`: deletes every dataset the caller may delete.
#[utoipa::path(delete, path = "/datasets", tag = "datasets", responses((status = 200, description = "Every dataset the caller may delete is deleted", body = Object)))]
pub async fn delete_all(State(state): State<AppState>, Caller(user): Caller) -> ApiResult<Json<Value>> {
    state.app().forget(&user, ForgetRequest::Everything).await?;
    Ok(Json(Value::Null))
}

/// `DELETE /api/v1/datasets/{id}`.
#[utoipa::path(delete, path = "/datasets/{dataset_id}", tag = "datasets", params(("dataset_id" = String, Path, description = "Dataset id")), responses((status = 200, description = "Deleted", body = Object), (status = 403, description = "No delete permission", body = Object)))]
pub async fn delete_one(
    State(state): State<AppState>,
    Caller(user): Caller,
    DatasetPath(id): DatasetPath,
) -> ApiResult<Json<Value>> {
    state.app().forget(&user, ForgetRequest::Dataset(DatasetRef::Id(id))).await?;
    Ok(Json(Value::Null))
}

/// `GET /api/v1/datasets/{id}/data?limit=&offset=`: data items, oldest first.
#[utoipa::path(get, path = "/datasets/{dataset_id}/data", tag = "datasets", params(("dataset_id" = String, Path, description = "Dataset id"), ("limit" = Option<usize>, Query, description = "1–1000, default 100"), ("offset" = Option<usize>, Query, description = "0–1 000 000, default 0")), responses((status = 200, description = "Data items, oldest first", body = Vec<DataDto>), (status = 403, description = "No read permission", body = Object)))]
pub async fn data(
    State(state): State<AppState>,
    Caller(user): Caller,
    DatasetPath(id): DatasetPath,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<DataDto>>> {
    let query = query_pairs(raw.as_deref());
    let limit = query_int(&query, "limit", 100, 1..=1000)?;
    let offset = query_int(&query, "offset", 0, 0..=1_000_000)?;
    let items = state.app().dataset_data(&user, id, limit, offset).await?;
    Ok(Json(items.iter().map(DataDto::from).collect()))
}

/// `GET /api/v1/datasets/{id}/data/count`.
#[utoipa::path(get, path = "/datasets/{dataset_id}/data/count", tag = "datasets", params(("dataset_id" = String, Path, description = "Dataset id")), responses((status = 200, description = "The number of data items", body = Object)))]
pub async fn data_count(
    State(state): State<AppState>,
    Caller(user): Caller,
    DatasetPath(id): DatasetPath,
) -> ApiResult<Json<Value>> {
    let count = state.app().dataset_data_count(&user, id).await?;
    Ok(Json(json!({"count": count})))
}

/// `GET /api/v1/datasets/{id}/graph`: `{"nodes": [...], "edges": [...]}`,
/// streamed a page at a time (the permission is checked before the first
/// byte; a store failure midway cuts the body short, so a client never takes
/// a partial graph for a whole one).
#[utoipa::path(get, path = "/datasets/{dataset_id}/graph", tag = "datasets", params(("dataset_id" = String, Path, description = "Dataset id")), responses((status = 200, description = "Nodes and edges", body = Object), (status = 403, description = "No read permission", body = Object)))]
pub async fn graph(
    State(state): State<AppState>,
    Caller(user): Caller,
    DatasetPath(id): DatasetPath,
) -> ApiResult<Response> {
    let export = state.app().export_graph(&user, &DatasetRef::Id(id), GraphShape::Dto).await?;
    let pieces = futures::stream::try_unfold(export, |mut export| async move {
        Ok::<_, recall_core::RecallError>(export.next_piece().await?.map(|piece| (piece, export)))
    });
    Ok(([(header::CONTENT_TYPE, "application/json")], Body::from_stream(pieces)).into_response())
}

/// `GET /api/v1/datasets/status?dataset=&pipeline=`: each dataset's latest
/// run status; flat for one pipeline, nested for several.
#[utoipa::path(get, path = "/datasets/status", tag = "datasets", params(("dataset" = Option<Vec<String>>, Query, description = "Dataset ids (repeatable); none: every readable dataset"), ("pipeline" = Option<Vec<String>>, Query, description = "add_pipeline, cognify_pipeline (repeatable)")), responses((status = 200, description = "Latest run status per dataset", body = Object)))]
pub async fn status(
    State(state): State<AppState>,
    Caller(user): Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let query = query_pairs(raw.as_deref());
    let ids = query
        .iter()
        .filter(|(k, v)| k == "dataset" && !v.is_empty())
        .map(|(_, v)| parse_dataset_id(v, "dataset"))
        .collect::<ApiResult<Vec<_>>>()?;
    let mut names: Vec<String> = Vec::new();
    for (_, p) in query.iter().filter(|(k, v)| k == "pipeline" && !v.is_empty()) {
        if !names.contains(p) {
            names.push(p.clone());
        }
    }
    let nested = names.len() > 1;
    if names.is_empty() {
        names.push(pipelines::COGNIFY.to_string());
    }
    let statuses = state.app().dataset_statuses(&user, &ids, &names).await?;
    let mut out = Map::new();
    for s in statuses {
        let key = s.dataset.id.to_string();
        if nested {
            let per: Map<String, Value> = s.pipelines.iter().map(|(p, st)| (p.clone(), json!(st))).collect();
            out.insert(key, Value::Object(per));
        } else if let Some((_, st)) = s.pipelines.first() {
            out.insert(key, json!(st));
        }
    }
    Ok(Json(Value::Object(out)))
}

/// `POST` (grant) or `DELETE` (revoke)
/// `/api/v1/permissions/datasets/{principal_id}?permission_name=` with a JSON
/// array of dataset ids; the caller needs `share` on every one.
#[utoipa::path(method(post, delete), path = "/permissions/datasets/{principal_id}", tag = "permissions", params(("principal_id" = String, Path, description = "The user to grant to or revoke from"), ("permission_name" = String, Query, description = "read, write, delete or share")), request_body(content = Vec<String>, description = "Dataset ids"), responses((status = 200, description = "Granted (POST) or revoked (DELETE)", body = Object), (status = 403, description = "No share permission, or an unknown permission", body = Object), (status = 404, description = "Unknown principal", body = Object)))]
pub async fn permission(
    method: Method,
    state: State<AppState>,
    caller: Caller,
    path: Path<String>,
    query: RawQuery,
    body: JsonBody<Vec<DatasetId>>,
) -> ApiResult<Json<Value>> {
    let grant = method == Method::POST;
    set_permission(state, caller, path, query, body, grant).await?;
    let message = if grant { "Permission assigned to principal" } else { "Permission revoked from principal" };
    Ok(Json(json!({"message": message})))
}

async fn set_permission(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(principal): Path<String>,
    RawQuery(raw): RawQuery,
    JsonBody(ids): JsonBody<Vec<DatasetId>>,
    grant: bool,
) -> ApiResult<()> {
    let principal = parse_uuid(&principal, "principal_id")?;
    let query = query_pairs(raw.as_deref());
    let name = query.iter().find(|(k, _)| k == "permission_name").map(|(_, v)| v.as_str()).ok_or_else(|| {
        ApiError::invalid("missing", vec![json!("query"), json!("permission_name")], "Field required", Value::Null)
    })?;
    let Some(permission) = Permission::ALL.into_iter().find(|p| p.as_str() == name) else {
        return Err(ApiError::detail(
            StatusCode::FORBIDDEN,
            format!("{name} not found or not in allowed permission types [PermissionNotFoundError]"),
        ));
    };
    let Some(grantee) = state.app().user_by_id(principal).await? else {
        return Err(ApiError::detail(StatusCode::NOT_FOUND, format!("Principal {principal} not found.")));
    };
    let datasets = ids.into_iter().map(DatasetRef::Id).collect();
    state.app().grant(&user, GrantRequest { datasets, grantee, permission, give: grant }).await?;
    Ok(())
}
