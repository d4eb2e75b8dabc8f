//! `POST /api/v1/remember` (form: uploads and `raw_data` texts into a
//! dataset, blocking or in the background) and `POST /api/v1/forget`.

use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use recall_core::{DatasetId, DatasetRef, RecallError, User};
use recall_engine::{RememberInput, RememberOutcome};
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

/// `POST /api/v1/remember`.
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
    if let Some(session_id) = form.text("session_id").map(str::trim).filter(|s| !s.is_empty()) {
        return remember_in_session(&state, &user, &target, session_id, &form, started).await;
    }
    let background = form.bool("run_in_background")?.unwrap_or(false);
    // On unless false: after the build, improve applies the dataset's answer ratings.
    let self_improvement = form.bool("self_improvement")?.unwrap_or(true);
    let chunk_size = form.positive("chunk_size")?;
    form.positive("chunks_per_batch")?;
    let inputs = inputs(&form)?;
    if inputs.is_empty() {
        return Err(bad_request("Provide at least one file in 'data' or one entry in 'raw_data'."));
    }
    recall_engine::check_inputs(&inputs)?;
    let engine = state.engine().clone();
    let engine = match chunk_size {
        Some(words) => engine.with_chunk_size(words)?,
        None => engine,
    };

    if background {
        let dataset = match &target {
            DatasetRef::Name(name) => engine.create_dataset(&user, name).await?,
            DatasetRef::Id(_) => engine.writable_dataset(&user, &target).await?,
        };
        let body = json!({
            "status": "running", "dataset_name": dataset.name, "dataset_id": dataset.id,
            "pipeline_run_id": null, "items_processed": 0, "elapsed_seconds": null
        });
        state.spawn_background(async move {
            let target = DatasetRef::Id(dataset.id);
            if let Err(e) = engine.remember(&user, target.clone(), &inputs).await {
                tracing::error!(error = %e, dataset = %dataset.id, "background remember failed");
            } else if self_improvement {
                if let Err(e) = engine.improve(&user, &target, None).await {
                    tracing::warn!(error = %e, dataset = %dataset.id, "improve after remember failed");
                }
            }
        });
        return Ok(Json(body).into_response());
    }

    let outcome = match engine.remember(&user, target.clone(), &inputs).await {
        Ok(outcome) => outcome,
        Err(e) => return Err(remember_error(e, &target, &user)),
    };
    let mut body = completed(&outcome, started);
    if self_improvement {
        // An improve failure never fails the remember: it is reported beside it.
        match engine.improve(&user, &DatasetRef::Id(outcome.dataset_id), None).await {
            Ok(improved) => body["improve"] = serde_json::to_value(improved).unwrap_or(Value::Null),
            Err(e) => body["improve_error"] = json!(e.to_string()),
        }
        body["elapsed_seconds"] = json!(started.elapsed().as_secs_f64());
    }
    Ok(Json(body).into_response())
}

/// Session mode: the form's texts (uploads decoded as UTF-8 text, and
/// `raw_data`) become one QA entry of the session (`question` empty, the
/// text as the answer), bound to the dataset; the answer is immediate. With
/// session memory off nothing is stored and the answer is the same.
async fn remember_in_session(
    state: &AppState,
    user: &User,
    target: &DatasetRef,
    session_id: &str,
    form: &FormData,
    started: Instant,
) -> ApiResult<Response> {
    let inputs = inputs(form)?;
    if inputs.is_empty() {
        return Err(bad_request("Provide at least one file in 'data' or one entry in 'raw_data'."));
    }
    let dataset = state.engine().remember_in_session(user, target, session_id, &inputs).await?;
    Ok(Json(json!({
        "status": "session_stored", "dataset_name": dataset.name, "dataset_id": dataset.id,
        "pipeline_run_id": null, "items_processed": 0, "elapsed_seconds": started.elapsed().as_secs_f64(),
        "session_ids": [session_id],
    }))
    .into_response())
}

fn completed(outcome: &RememberOutcome, started: Instant) -> Value {
    json!({
        "status": "completed",
        "dataset_name": outcome.dataset_name,
        "dataset_id": outcome.dataset_id,
        "pipeline_run_id": outcome.pipeline_run_id,
        "items_processed": outcome.items_added + outcome.items_unchanged,
        "elapsed_seconds": started.elapsed().as_secs_f64(),
    })
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
    let engine = state.engine();
    if body.dataset.is_some() && body.dataset_id.is_some() {
        return Err(bad_combination());
    }
    if body.everything {
        let removed = engine.forget_everything(&user).await?;
        return Ok(Json(json!({"datasets_removed": removed, "status": "success"})));
    }
    let target = match (body.dataset_id, body.dataset) {
        (Some(id), _) => DatasetRef::Id(id),
        (None, Some(name)) => DatasetRef::Name(name),
        (None, None) => return Err(bad_combination()),
    };
    if body.memory_only {
        return Err(ApiError::detail(
            StatusCode::NOT_IMPLEMENTED,
            "memory_only: resetting a dataset's memory while keeping its data is not available on this server yet.",
        ));
    }
    match body.data_id {
        Some(data_id) => {
            let dataset = engine.deletable_dataset(&user, &target).await?;
            engine.forget_document(&user, DatasetRef::Id(dataset.id), &data_id.to_string()).await?;
            Ok(Json(json!({"data_id": data_id, "dataset_id": dataset.id, "status": "success"})))
        }
        None => {
            let dataset = engine.forget_dataset(&user, target).await?;
            Ok(Json(json!({"dataset_id": dataset.id, "status": "success"})))
        }
    }
}
