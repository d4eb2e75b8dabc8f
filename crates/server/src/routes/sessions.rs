//! Session memory over HTTP (docs/http.md, "Sessions"): typed entries through
//! `POST /api/v1/remember/entry`, and the caller's sessions through
//! `GET /api/v1/sessions` and `/sessions/{session_id}`.

use std::time::Instant;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use recall_api::dto::iso_utc;
use recall_core::session::{SessionEntry, SessionInfo};
use recall_core::{now_millis, DatasetId, DatasetRef, RecallError, User};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{query_int, query_pairs};
use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

fn main_dataset() -> String {
    "main_dataset".into()
}

/// `POST /api/v1/remember/entry`'s body (snake_case only).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct RememberEntryBody {
    /// The entry, discriminated by `type`: `qa`, `trace`, `feedback` or `skill_run`.
    #[schema(value_type = Object)]
    entry: Value,
    #[serde(default = "main_dataset")]
    dataset_name: String,
    #[schema(value_type = Option<String>, format = Uuid)]
    dataset_id: Option<DatasetId>,
    session_id: Option<String>,
    /// Accepted for compatibility; typed entries never trigger an improve.
    #[allow(dead_code)]
    self_improvement: Option<bool>,
    #[schema(value_type = Option<Object>)]
    #[allow(dead_code)]
    skill_improvement: Option<Value>,
}

/// The entry's type tag, checked as pydantic's discriminated union does.
fn entry_type(entry: &Value) -> ApiResult<&str> {
    const TAGS: [&str; 4] = ["qa", "trace", "feedback", "skill_run"];
    match entry.get("type") {
        Some(Value::String(t)) if TAGS.contains(&t.as_str()) => Ok(t),
        None => Err(ApiError::invalid(
            "union_tag_not_found",
            vec![json!("body"), json!("entry")],
            "Unable to extract tag using discriminator 'type'",
            entry.clone(),
        )),
        Some(other) => Err(ApiError::invalid(
            "union_tag_invalid",
            vec![json!("body"), json!("entry")],
            format!("Input tag {other} found using 'type' does not match any of the expected tags: 'qa', 'trace', 'feedback', 'skill_run'"),
            entry.clone(),
        )),
    }
}

fn invalid_request(why: impl std::fmt::Display) -> ApiError {
    tracing::info!(reason = %why, "remember/entry refused");
    ApiError::error(StatusCode::BAD_REQUEST, "Invalid remember request.")
}

/// `POST /api/v1/remember/entry`: one typed entry stored into a session.
#[utoipa::path(post, path = "/remember/entry", tag = "remember", request_body = RememberEntryBody, responses((status = 200, description = "Stored (or `status: errored` with the reason)", body = Object), (status = 400, description = "A bad entry or request", body = Object), (status = 403, description = "No write permission on the dataset", body = Object), (status = 503, description = "Session memory is off", body = Object)))]
pub async fn remember_entry(
    State(state): State<AppState>,
    Caller(user): Caller,
    JsonBody(body): JsonBody<RememberEntryBody>,
) -> ApiResult<Json<Value>> {
    let started = Instant::now();
    let kind = entry_type(&body.entry)?.to_string();
    if kind == "skill_run" {
        return skill_run(&state, &user, body, started).await;
    }
    let entry: SessionEntry = crate::body::parse_json(body.entry.to_string().as_bytes()).map_err(|e| match e {
        ApiError::Validation { detail, .. } => ApiError::Validation {
            detail: detail.into_iter().map(|d| nest_under_entry(d, &kind)).collect(),
            body: json!({"entry": body.entry}),
        },
        other => other,
    })?;
    let session_id = match body.session_id.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => return Err(invalid_request("session_id is required for qa, trace and feedback entries")),
    };
    let app = state.app();
    if !app.sessions_on() {
        return Err(ApiError::error(StatusCode::SERVICE_UNAVAILABLE, "Remember service temporarily unavailable."));
    }
    let target = match body.dataset_id {
        Some(id) => DatasetRef::Id(id),
        None => DatasetRef::Name(body.dataset_name.clone()),
    };
    let (dataset, stored) = app.remember_entry(&user, &target, &session_id, entry).await?;
    let mut result = json!({
        "dataset_name": dataset.name, "dataset_id": dataset.id, "pipeline_run_id": null,
        "items_processed": 0, "session_ids": [session_id],
    });
    match stored {
        Ok(stored) => {
            result["status"] = json!("session_stored");
            result["entry_type"] = json!(stored.entry_type);
            result["entry_id"] = json!(stored.id);
        }
        // What the store could not do is reported in a 200, as Cognee does.
        Err(RecallError::NotFound(message)) => {
            result["status"] = json!("errored");
            result["error"] = json!(message);
        }
        Err(e @ RecallError::Validation { .. }) => return Err(invalid_request(e)),
        Err(e) => return Err(e.into()),
    }
    result["elapsed_seconds"] = json!(started.elapsed().as_secs_f64());
    Ok(Json(result))
}

/// A `skill_run` entry: recorded in the dataset's graph beside its skill
/// (not in the session cache); `session_id` is optional and kept on the run.
async fn skill_run(state: &AppState, user: &User, body: RememberEntryBody, started: Instant) -> ApiResult<Json<Value>> {
    let entry: recall_api::SkillRunEntry =
        crate::body::parse_json(body.entry.to_string().as_bytes()).map_err(|e| match e {
            ApiError::Validation { detail, .. } => ApiError::Validation {
                detail: detail.into_iter().map(|d| nest_under_entry(d, "skill_run")).collect(),
                body: json!({"entry": body.entry}),
            },
            other => other,
        })?;
    let target = match body.dataset_id {
        Some(id) => DatasetRef::Id(id),
        None => DatasetRef::Name(body.dataset_name.clone()),
    };
    let session_id = body.session_id.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let (dataset, run) = match state.app().record_skill_run(user, &target, session_id, entry).await {
        Ok(recorded) => recorded,
        Err(e @ RecallError::Validation { .. }) => return Err(invalid_request(e)),
        Err(e) => return Err(e.into()),
    };
    Ok(Json(json!({
        "status": "completed", "dataset_name": dataset.name, "dataset_id": dataset.id, "pipeline_run_id": null,
        "items_processed": 1, "session_ids": session_id.map(|s| vec![s]).unwrap_or_default(),
        "entry_type": "skill_run", "entry_id": run.run_id, "items": [run],
        "elapsed_seconds": started.elapsed().as_secs_f64(),
    })))
}

/// A validation error inside the entry, located as pydantic locates it
/// (`["body", "entry", "<type>", <field>…]`).
fn nest_under_entry(mut detail: Value, kind: &str) -> Value {
    if let Some(loc) = detail.get_mut("loc").and_then(Value::as_array_mut) {
        let rest: Vec<Value> = loc.iter().skip(1).cloned().collect();
        let mut nested = vec![json!("body"), json!("entry"), json!(kind)];
        nested.extend(rest);
        *loc = nested;
    }
    detail
}

/// How far back `GET /sessions` looks, by `range`.
fn range_millis(range: &str) -> Option<Option<i64>> {
    const DAY: i64 = 24 * 3600 * 1000;
    match range {
        "24h" => Some(Some(DAY)),
        "7d" => Some(Some(7 * DAY)),
        "30d" => Some(Some(30 * DAY)),
        "all" => Some(None),
        _ => None,
    }
}

/// A session row as Cognee's session list shows it. Token and cost
/// accounting is not kept: those fields are zero.
fn row(user: &User, s: &SessionInfo) -> Value {
    json!({
        "session_id": s.session_id, "user_id": user.id, "dataset_id": s.dataset_id, "agent_id": null,
        "status": "running", "started_at": iso_utc(s.created_at), "last_activity_at": iso_utc(s.updated_at),
        "ended_at": null, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "embedding_tokens": 0,
        "embedding_cost_usd": 0.0, "error_count": 0, "last_model": null,
    })
}

fn bad_query(name: &str, expected: &str, got: &str) -> ApiError {
    ApiError::invalid(
        "literal_error",
        vec![json!("query"), json!(name)],
        format!("Input should be {expected}"),
        json!(got),
    )
}

/// `GET /api/v1/sessions`: the caller's sessions, newest activity first by default.
#[utoipa::path(get, path = "/sessions", tag = "sessions", params(("range" = Option<String>, Query, description = "24h, 7d, 30d (default) or all, on last activity"), ("status" = Option<String>, Query, description = "running, completed, failed or abandoned"), ("limit" = Option<usize>, Query, description = "1..500, default 50"), ("offset" = Option<usize>, Query, description = "default 0"), ("order_by" = Option<String>, Query, description = "last_activity_at (default) or started_at"), ("descending" = Option<bool>, Query, description = "default true")), responses((status = 200, description = "A page of sessions", body = Object), (status = 400, description = "A bad query parameter", body = Object)))]
pub async fn list(
    State(state): State<AppState>,
    Caller(user): Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let query = query_pairs(raw.as_deref());
    let get = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let range = get("range").unwrap_or("30d");
    let window = range_millis(range).ok_or_else(|| bad_query("range", "'24h', '7d', '30d' or 'all'", range))?;
    let status = get("status");
    if let Some(s) = status.filter(|s| !matches!(*s, "running" | "completed" | "failed" | "abandoned")) {
        return Err(bad_query("status", "'running', 'completed', 'failed' or 'abandoned'", s));
    }
    let limit = query_int(&query, "limit", 50, 1..=500)?;
    let offset = query_int(&query, "offset", 0, 0..=usize::MAX)?;
    let descending = match get("descending").map(str::to_ascii_lowercase).as_deref() {
        None | Some("true" | "1" | "yes" | "on") => true,
        Some("false" | "0" | "no" | "off") => false,
        Some(other) => return Err(bad_query("descending", "a valid boolean", other)),
    };
    let by_start = get("order_by") == Some("started_at");

    let mut rows = state.app().sessions(&user).await?;
    if let Some(window) = window {
        let since = now_millis() - window;
        rows.retain(|s| s.updated_at >= since);
    }
    // Recall's sessions are never closed: every one is running.
    if status.is_some_and(|s| s != "running") {
        rows.clear();
    }
    rows.sort_by_key(|s| if by_start { s.created_at } else { s.updated_at });
    if descending {
        rows.reverse();
    }
    let total = rows.len();
    let page: Vec<Value> = rows.iter().skip(offset).take(limit).map(|s| row(&user, s)).collect();
    Ok(Json(json!({
        "sessions": page, "total": total, "limit": limit, "offset": offset,
        "has_more": offset.saturating_add(limit) < total,
    })))
}

/// `GET /api/v1/sessions/{session_id}`: the row, a label, counts and the
/// last 20 QA turns and trace steps.
#[utoipa::path(get, path = "/sessions/{session_id}", tag = "sessions", params(("session_id" = String, Path, description = "The session")), responses((status = 200, description = "The session", body = Object), (status = 404, description = "No such session of the caller's", body = Object)))]
pub async fn detail(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(session_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let not_found = || ApiError::detail(StatusCode::NOT_FOUND, "session not found");
    let app = state.app();
    let listed = app.sessions(&user).await?;
    let info = listed.iter().find(|s| s.session_id == session_id).ok_or_else(not_found)?;
    let qas = app.session_turns(&user, &session_id, Some(20)).await?;
    let traces = app.session_traces(&user, &session_id, Some(20)).await?;
    let first_question = app.session_turns(&user, &session_id, None).await?.into_iter().next().map(|q| q.question);
    let label = first_question
        .filter(|q| !q.trim().is_empty())
        .map(|q| q.chars().take(120).collect::<String>())
        .or_else(|| traces.first().map(|t| t.origin_function.clone()));
    let mut body = row(&user, info);
    body["label"] = json!(label);
    body["msg_count"] = json!(info.qa_count);
    body["tool_calls"] = json!(info.trace_count);
    body["qas"] = json!(qas);
    body["traces"] = json!(traces);
    Ok(Json(body))
}
