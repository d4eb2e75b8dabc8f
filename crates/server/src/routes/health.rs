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
    let healthy = state.engine().component_health().await.iter().all(|c| c.outcome.is_ok());
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

/// `GET /health/detailed`: every component; 200 only when all are healthy.
#[utoipa::path(get, path = "/health/detailed", tag = "health", security(()), responses((status = 200, description = "Every component healthy", body = Object), (status = 503, description = "A component is unhealthy", body = Object)))]
pub async fn detailed(State(state): State<AppState>) -> Response {
    let components = state.engine().component_health().await;
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
    let body = json!({
        "status": if healthy { "healthy" } else { "unhealthy" },
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "version": state.config().version,
        "uptime": state.uptime().as_secs(),
        "components": listed,
    });
    let status = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(body)).into_response()
}
