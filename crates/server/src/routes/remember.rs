//! `POST /api/v1/remember` (form: uploads and `raw_data` texts into a
//! dataset, blocking or in the background) and `POST /api/v1/forget`.

use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use recall_api::{ForgetReport, ForgetRequest, Improvement, RememberInput, RememberReport, RememberRequest};
use recall_core::{DatasetId, DatasetRef, RecallError, User};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::parse_dataset_id;
use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::forms::FormData;
use crate::AppState;

fn bad_request(text: &str) -> ApiError {
    ApiError::detail(StatusCode::BAD_REQUEST, text)
}

/// The texts a remember form carries: uploads first (UTF-8 text files,
/// named by their base name), then `raw_data` entries.
pub(super) fn inputs(form: &FormData) -> ApiResult<Vec<RememberInput>> {
    let mut inputs = Vec::new();
    for upload in form.files("data") {
        if upload.bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = String::from_utf8(upload.bytes.clone()).map_err(|_| {
            ApiError::detail(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("{}: only UTF-8 text files (.txt, .md) can be remembered.", upload.filename),
            )
        })?;
        inputs.push(RememberInput::Text { text, name: Some(upload.filename.clone()) });
    }
    if form.all("data").iter().any(|v| !v.trim().is_empty()) {
        return Err(bad_request("The 'data' field takes file uploads only; send text in 'raw_data'."));
    }
    for raw in form.all("raw_data") {
        if !raw.trim().is_empty() {
            inputs.push(RememberInput::text(raw));
        }
    }
    Ok(inputs)
}

/// The dataset a form names: `datasetId` (wins) or `datasetName`.
pub(super) fn form_dataset(form: &FormData) -> ApiResult<Option<DatasetRef>> {
    let id = form.text_any(&["datasetId", "dataset_id"]).map(|id| parse_dataset_id(id, "datasetId")).transpose()?;
    let name = form.text_any(&["datasetName", "dataset_name"]);
    Ok(id.map(DatasetRef::Id).or_else(|| name.map(|n| DatasetRef::Name(n.to_string()))))
}

/// `POST /api/v1/remember`: the form becomes a [`RememberRequest`]; the
/// application layer decides what runs (docs/application.md).
#[utoipa::path(post, path = "/remember", tag = "remember", request_body(content((Object = "multipart/form-data"), (Object = "application/x-www-form-urlencoded")), description = "Form fields: datasetName or datasetId, data (files), raw_data, run_in_background, chunk_size, …"), responses((status = 200, description = "Completed, or running in the background", body = Object), (status = 400, description = "Bad form", body = Object), (status = 409, description = "The run failed", body = Object), (status = 415, description = "Not a UTF-8 text file", body = Object), (status = 501, description = "Not available yet (content_type)", body = Object)))]
pub async fn remember(State(state): State<AppState>, Caller(user): Caller, form: FormData) -> ApiResult<Response> {
    let started = Instant::now();
    let target =
        form_dataset(&form)?.ok_or_else(|| bad_request("Either datasetId or datasetName must be provided."))?;
    let content_type = form.text("content_type").unwrap_or_default();
    if !content_type.is_empty() {
        return Err(match content_type {
            "skills" | "code" | "cogx-archive" => ApiError::detail(
                StatusCode::NOT_IMPLEMENTED,
                format!("content_type '{content_type}' is not supported by this server yet; leave it empty for normal ingestion."),
            ),
            other => bad_request(&format!(
                "Unsupported content_type '{other}'. Use 'skills', 'code', 'cogx-archive', or leave it empty for normal ingestion."
            )),
        });
    }
    let session_id = form.text("session_id").map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    let mut request = RememberRequest::new(target.clone(), Vec::new());
    if session_id.is_none() {
        request.background = form.bool("run_in_background")?.unwrap_or(false);
        request.self_improvement = form.bool("self_improvement")?.unwrap_or(true);
        request.chunk_size = form.positive("chunk_size")?;
        form.positive("chunks_per_batch")?;
    }
    request.session_id = session_id;
    request.inputs = inputs(&form)?;
    if request.inputs.is_empty() {
        return Err(bad_request("Provide at least one file in 'data' or one entry in 'raw_data'."));
    }
    let report = match state.app().remember_quietly(&user, request).await {
        Ok(report) => report,
        Err(e) => return Err(remember_error(e, &target, &user)),
    };
    let elapsed = || json!(started.elapsed().as_secs_f64());
    let body = match report {
        RememberReport::SessionStored { dataset, session_id, .. } => json!({
            "status": "session_stored", "dataset_name": dataset.name, "dataset_id": dataset.id,
            "pipeline_run_id": null, "items_processed": 0, "elapsed_seconds": elapsed(),
            "session_ids": [session_id],
        }),
        RememberReport::Running { dataset } => json!({
            "status": "running", "dataset_name": dataset.name, "dataset_id": dataset.id,
            "pipeline_run_id": null, "items_processed": 0, "elapsed_seconds": null
        }),
        RememberReport::Completed { outcome, improvement } => {
            let mut body = json!({
                "status": "completed",
                "dataset_name": outcome.dataset_name,
                "dataset_id": outcome.dataset_id,
                "pipeline_run_id": outcome.pipeline_run_id,
                "items_processed": outcome.items_added + outcome.items_unchanged,
                "elapsed_seconds": elapsed(),
            });
            match improvement {
                Some(Improvement::Done(improved)) => {
                    body["improve"] = serde_json::to_value(improved).unwrap_or(Value::Null)
                }
                Some(Improvement::Failed(e)) => body["improve_error"] = json!(e.to_string()),
                None => {}
            }
            body
        }
    };
    Ok(Json(body).into_response())
}

/// Cognee's errors keep their status; a failure inside the run is 409 with
/// the errored result.
fn remember_error(e: RecallError, target: &DatasetRef, user: &User) -> ApiError {
    match e {
        RecallError::Backend(_) | RecallError::Provider(_) => {
            tracing::error!(error = %e, user = %user.email, "remember failed");
            ApiError::Http {
                status: StatusCode::CONFLICT,
                body: json!({
                    "status": "errored", "dataset_name": target.label(), "dataset_id": match target {
                        DatasetRef::Id(id) => json!(id), DatasetRef::Name(_) => Value::Null },
                    "pipeline_run_id": null, "items_processed": 0, "elapsed_seconds": null,
                    "error": e.to_string(),
                }),
            }
        }
        other => other.into(),
    }
}

/// `POST /api/v1/forget`'s body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct ForgetBody {
    #[serde(alias = "dataId")]
    data_id: Option<Uuid>,
    dataset: Option<String>,
    #[serde(alias = "datasetId")]
    #[schema(value_type = Option<String>, format = Uuid)]
    dataset_id: Option<DatasetId>,
    everything: bool,
    #[serde(alias = "memoryOnly")]
    memory_only: bool,
}

fn bad_combination() -> ApiError {
    ApiError::error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid request parameters. Specify dataset or dataset_id, data_id+dataset, or everything=True.",
    )
}

/// `POST /api/v1/forget`: a document, a dataset, or everything the caller may delete.
#[utoipa::path(post, path = "/forget", tag = "remember", request_body = ForgetBody, responses((status = 200, description = "Deleted", body = Object), (status = 403, description = "No delete permission", body = Object), (status = 404, description = "Dataset not found", body = Object), (status = 422, description = "A bad combination of fields", body = Object)))]
pub async fn forget(
    State(state): State<AppState>,
    Caller(user): Caller,
    JsonBody(body): JsonBody<ForgetBody>,
) -> ApiResult<Json<Value>> {
    if body.dataset.is_some() && body.dataset_id.is_some() {
        return Err(bad_combination());
    }
    let target = match (body.dataset_id, body.dataset) {
        (Some(id), _) => Some(DatasetRef::Id(id)),
        (None, Some(name)) => Some(DatasetRef::Name(name)),
        (None, None) => None,
    };
    let request =
        match (body.everything, target, body.data_id) {
            (true, _, _) => ForgetRequest::Everything,
            (false, None, _) => return Err(bad_combination()),
            (false, Some(_), _) if body.memory_only => return Err(ApiError::detail(
                StatusCode::NOT_IMPLEMENTED,
                "memory_only: resetting a dataset's memory while keeping its data is not available on this server yet.",
            )),
            (false, Some(dataset), Some(data_id)) => ForgetRequest::Document { dataset, document: data_id.to_string() },
            (false, Some(dataset), None) => ForgetRequest::Dataset(dataset),
        };
    Ok(Json(match state.app().forget(&user, request).await? {
        ForgetReport::Everything { datasets_removed } => {
            json!({"datasets_removed": datasets_removed, "status": "success"})
        }
        ForgetReport::Document { dataset, .. } => {
            json!({"data_id": body.data_id, "dataset_id": dataset.id, "status": "success"})
        }
        ForgetReport::Dataset(dataset) => json!({"dataset_id": dataset.id, "status": "success"}),
    }))
}
