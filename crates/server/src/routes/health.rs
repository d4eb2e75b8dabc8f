//! `GET /health` (readiness: every store answers) and `GET /health/detailed`
//! (each component with its provider and time). No authentication.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::AppState;

/// `GET /`.
#[utoipa::path(get, path = "/", tag = "health", responses((status = 200, description = "Alive", body = Object)))]
pub async fn root() -> Json<Value> {
    Json(json!({"message": "Hello, World, I am alive!"}))
}

/// `GET /health`: 200 `{"status":"ready","health":"healthy","version"}`, or
/// 503 `not ready` when a store does not answer.
#[utoipa::path(get, path = "/health", tag = "health", security(()), responses((status = 200, description = "Every store answers", body = Object), (status = 503, description = "A store does not answer", body = Object)))]
pub async fn health(State(state): State<AppState>) -> Response {
    let healthy = state.app().component_health().await.iter().all(|c| c.outcome.is_ok());
    let version = &state.config().version;
    if healthy {
        Json(json!({"status": "ready", "health": "healthy", "version": version})).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "not ready", "health": "unhealthy", "version": version})),
        )
            .into_response()
    }
}

/// `GET /health/detailed`: every store (critical) and the embedding model
/// (non-critical: its failure is `degraded`); 200 only when all are healthy.
#[utoipa::path(get, path = "/health/detailed", tag = "health", security(()), responses((status = 200, description = "Every component healthy", body = Object), (status = 503, description = "A store is unhealthy, or the embedding model degraded", body = Object)))]
pub async fn detailed(State(state): State<AppState>) -> Response {
    let (components, embedding) = tokio::join!(state.app().component_health(), embedding_check(&state));
    let healthy = components.iter().all(|c| c.outcome.is_ok());
    let mut listed = Map::new();
    for c in components {
        let (status, provider, details) = match &c.outcome {
            Ok(()) => ("healthy", c.provider.clone(), "Connection successful".to_string()),
            Err(e) => ("unhealthy", "unknown".to_string(), format!("Connection failed: {e}")),
        };
        listed.insert(
            c.component.to_string(),
            json!({"status": status, "provider": provider, "response_time_ms": c.elapsed.as_millis() as u64, "details": details}),
        );
    }
    let embedding_ok = embedding.get("status") == Some(&json!("healthy"));
    listed.insert("embedding_service".into(), embedding);
    let status = match (healthy, embedding_ok) {
        (true, true) => "healthy",
        (true, false) => "degraded",
        (false, _) => "unhealthy",
    };
    let body = json!({
        "status": status,
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "version": state.config().version,
        "uptime": state.uptime().as_secs(),
        "components": listed,
    });
    let code = if status == "healthy" { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(body)).into_response()
}

/// One real embedding call.
async fn embedding_check(state: &AppState) -> Value {
    let health = state.app().embedding_health().await;
    let ms = health.elapsed.as_millis() as u64;
    match health.outcome {
        Ok(()) => json!({
            "status": "healthy", "provider": health.model, "response_time_ms": ms,
            "details": "Embedding generation working"
        }),
        Err(why) => json!({
            "status": "degraded", "provider": "unknown", "response_time_ms": ms,
            "details": format!("Embedding test failed: {why}")
        }),
    }
}
