//! The low-level steps of remember: `POST /api/v1/add` (store data items)
//! and `POST /api/v1/cognify` (build them into memory). Both answer
//! Cognee's `PipelineRunInfo`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use recall_api::{ImproveRequest, NoProgress, Route};
use recall_core::{DatasetId, DatasetRef};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::remember::{form_dataset, inputs};
use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::{ApiError, ApiResult, OnRoute};
use crate::forms::FormData;
use crate::AppState;

fn run_info(status: &str, run: Uuid, dataset: DatasetId, name: &str, data: &[Uuid]) -> Value {
    let ingestion: Vec<Value> = data.iter().map(|id| json!({"run_info": {"status": status}, "data_id": id})).collect();
    json!({
        "status": status, "pipeline_run_id": run, "dataset_id": dataset, "dataset_name": name,
        "payload": null, "data_ingestion_info": ingestion,
    })
}

fn missing(text: &str) -> ApiError {
    ApiError::Http { status: StatusCode::BAD_REQUEST, body: json!({"error": text, "detail": null}) }
}

/// `POST /api/v1/add` (form `datasetName`/`datasetId`, `data` files, `raw_data`).
#[utoipa::path(post, path = "/add", tag = "remember", request_body(content((Object = "multipart/form-data"), (Object = "application/x-www-form-urlencoded")), description = "Form fields: datasetName or datasetId, data (files), raw_data"), responses((status = 200, description = "PipelineRunInfo", body = Object), (status = 400, description = "Bad form", body = Object)))]
pub async fn add(State(state): State<AppState>, Caller(user): Caller, form: FormData) -> ApiResult<Json<Value>> {
    let target = form_dataset(&form)?.ok_or_else(|| missing("Either datasetId or datasetName must be provided."))?;
    let inputs = inputs(&form)?;
    if inputs.is_empty() {
        return Err(missing("Provide at least one file in 'data' or one entry in 'raw_data'."));
    }
    let added = state.app().add(&user, target, &inputs).await.on(Route::Search)?;
    let ids: Vec<Uuid> = added.items.iter().map(|i| i.id).collect();
    Ok(Json(run_info("PipelineRunCompleted", added.pipeline_run_id, added.dataset.id, &added.dataset.name, &ids)))
}

/// `POST /api/v1/cognify`'s body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct CognifyBody {
    datasets: Option<Vec<String>>,
    #[serde(alias = "datasetIds")]
    #[schema(value_type = Option<Vec<String>>)]
    dataset_ids: Option<Vec<DatasetId>>,
    #[serde(alias = "runInBackground")]
    run_in_background: bool,
}

/// `POST /api/v1/cognify`: `{"<dataset id>": PipelineRunInfo}` per dataset.
/// A `datasets` entry that is a UUID names a dataset by id (the SDK sends ids there).
#[utoipa::path(post, path = "/cognify", tag = "remember", request_body = CognifyBody, responses((status = 200, description = "PipelineRunInfo per dataset id", body = Object), (status = 400, description = "No datasets given", body = Object), (status = 403, description = "No write permission", body = Object)))]
pub async fn cognify(
    State(state): State<AppState>,
    Caller(user): Caller,
    JsonBody(body): JsonBody<CognifyBody>,
) -> ApiResult<Json<Value>> {
    let targets: Vec<DatasetRef> = match (body.dataset_ids.filter(|i| !i.is_empty()), body.datasets) {
        (Some(ids), _) => ids.into_iter().map(DatasetRef::Id).collect(),
        (None, Some(names)) if !names.is_empty() => names
            .into_iter()
            .map(|n| Uuid::parse_str(n.trim()).map_or(DatasetRef::Name(n), |id| DatasetRef::Id(DatasetId(id))))
            .collect(),
        _ => return Err(missing("No datasets or dataset_ids provided")),
    };
    let runs = state.app().cognify(&user, &targets, body.run_in_background, &NoProgress).await.on(Route::Search)?;
    let mut out = Map::new();
    for run in runs {
        let (status, run_id) = match &run.outcome {
            Some(outcome) => ("PipelineRunCompleted", outcome.pipeline_run_id),
            None => ("PipelineRunStarted", Uuid::nil()),
        };
        out.insert(run.dataset.id.to_string(), run_info(status, run_id, run.dataset.id, &run.dataset.name, &[]));
    }
    Ok(Json(Value::Object(out)))
}

/// `POST /api/v1/improve`'s body (camelCase or snake_case).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct ImproveBody {
    #[serde(alias = "datasetName")]
    dataset_name: Option<String>,
    /// A UUID; `""` counts as absent.
    #[serde(alias = "datasetId")]
    dataset_id: Option<String>,
    #[serde(alias = "sessionIds")]
    session_ids: Option<Vec<String>>,
    #[serde(alias = "runInBackground")]
    run_in_background: bool,
    #[serde(alias = "feedbackAlpha")]
    feedback_alpha: Option<f64>,
}

/// `POST /api/v1/improve`: applies the ratings of the dataset's answers to
/// its graph (docs/sessions.md); Cognee's other stages are reported skipped.
#[utoipa::path(post, path = "/improve", tag = "remember", request_body = ImproveBody, responses((status = 200, description = "ImproveResult", body = Object), (status = 400, description = "No dataset, or a bad feedback_alpha", body = Object), (status = 403, description = "No write permission", body = Object)))]
pub async fn improve(
    State(state): State<AppState>,
    Caller(user): Caller,
    JsonBody(body): JsonBody<ImproveBody>,
) -> ApiResult<Json<Value>> {
    if let Some(alpha) = body.feedback_alpha.filter(|a| !(*a > 0.0 && *a <= 1.0)) {
        return Err(ApiError::invalid(
            "less_than_equal",
            vec![json!("body"), json!("feedback_alpha")],
            "Input should be greater than 0 and less than or equal to 1",
            json!(alpha),
        ));
    }
    let id = body.dataset_id.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let target = match (id, body.dataset_name.filter(|n| !n.trim().is_empty())) {
        (Some(id), _) => DatasetRef::Id(super::parse_dataset_id(id, "dataset_id")?),
        (None, Some(name)) => DatasetRef::Name(name),
        (None, None) => {
            return Err(ApiError::detail(StatusCode::BAD_REQUEST, "Either datasetId or datasetName must be provided."))
        }
    };
    let request = ImproveRequest {
        dataset: target,
        alpha: body.feedback_alpha,
        session_ids: body.session_ids.unwrap_or_default(),
        background: body.run_in_background,
    };
    let outcome = state.app().improve(&user, request).await?;
    Ok(Json(serde_json::to_value(outcome).map_err(recall_core::RecallError::backend)?))
}

/// `PATCH /api/v1/update?data_id=…&dataset_id=…` with the document's new
/// content as one `data` file part: the document is rebuilt in place and
/// keeps its id (docs/http.md).
#[utoipa::path(patch, path = "/update", tag = "remember", params(("data_id" = String, Query, description = "The document (a data id)"), ("dataset_id" = String, Query, description = "Its dataset"), ("chunk_level_diff" = Option<bool>, Query, description = "Accepted; Recall always rebuilds the document")), request_body(content((Object = "multipart/form-data")), description = "data: the new content, one UTF-8 text file"), responses((status = 200, description = "UpdateResult", body = Object), (status = 400, description = "A missing or bad parameter or file", body = Object), (status = 403, description = "No write permission", body = Object), (status = 404, description = "No such document in the dataset", body = Object), (status = 500, description = "The update failed", body = Object)))]
pub async fn update(
    State(state): State<AppState>,
    Caller(user): Caller,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    form: FormData,
) -> ApiResult<Json<Value>> {
    let query = super::query_pairs(raw.as_deref());
    let data_id = super::query_uuid(&query, "data_id")?;
    let dataset_id = DatasetId(super::query_uuid(&query, "dataset_id")?);
    let mut uploads = inputs(&form)?;
    if uploads.len() != 1 || form.files("data").len() != 1 {
        return Err(ApiError::invalid(
            "missing",
            vec![json!("body"), json!("data")],
            "Exactly one file is required in 'data': the document's new content",
            Value::Null,
        ));
    }
    let input = uploads.remove(0);
    match state.app().update(&user, dataset_id, data_id, input).await {
        Ok(outcome) => Ok(Json(serde_json::to_value(outcome).map_err(recall_core::RecallError::backend)?)),
        Err(e @ (recall_core::RecallError::Backend(_) | recall_core::RecallError::Provider(_))) => {
            tracing::error!(error = %e, %data_id, "update failed");
            Err(ApiError::Http {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                body: json!({"error": "Internal server error", "detail": e.to_string()}),
            })
        }
        Err(e) => Err(e.into()),
    }
}
