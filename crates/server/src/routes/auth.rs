//! The `/api/v1/auth` routes: login, logout, me, register and API keys.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use recall_api::PasswordCheck;
use recall_core::{RecallError, User};
use serde::Deserialize;
use serde_json::{json, Value};

use super::parse_uuid;
use crate::auth::{Authenticated, Caller};
use crate::body::{parse_json, read_body, JsonBody};
use crate::error::{ApiError, ApiResult};
use crate::forms::FormData;
use crate::AppState;

fn bad_credentials() -> ApiError {
    ApiError::detail(StatusCode::BAD_REQUEST, "LOGIN_BAD_CREDENTIALS")
}

/// `POST /api/v1/auth/login` (form `username`, `password`): a bearer token
/// and the `auth_token` cookie.
#[utoipa::path(post, path = "/auth/login", tag = "auth", security(()), request_body(content = Object, description = "Form: username (the email), password", content_type = "application/x-www-form-urlencoded"), responses((status = 200, description = "A bearer token, also set as the auth_token cookie", body = Object), (status = 400, description = "LOGIN_BAD_CREDENTIALS", body = Object)))]
pub async fn login(State(state): State<AppState>, req: axum::extract::Request) -> ApiResult<Response> {
    let form = <FormData as axum::extract::FromRequest<AppState>>::from_request(req, &state)
        .await
        .map_err(|_| bad_credentials())?;
    let (Some(email), Some(password)) = (form.text("username"), form.text("password")) else {
        return Err(bad_credentials());
    };
    if form.text("grant_type").is_some_and(|g| g != "password") {
        return Err(bad_credentials());
    }
    let user = match state.app().check_password(email, password).await? {
        PasswordCheck::Valid(user) => user,
        PasswordCheck::NoPassword => {
            return Err(ApiError::detail(
                StatusCode::BAD_REQUEST,
                "This user does not have a password. Use API key authentication.",
            ))
        }
        PasswordCheck::Invalid => return Err(bad_credentials()),
    };
    let token = state.issue_token(&user).await?;
    let tokens = &state.config().tokens;
    let domain = tokens.cookie_domain.as_deref().map(|d| format!("; Domain={d}")).unwrap_or_default();
    let cookie = format!("{}={token}; HttpOnly; Path=/; SameSite=Lax{domain}", tokens.cookie_name);
    let mut response = Json(json!({"access_token": token, "token_type": "bearer"})).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    Ok(response)
}

/// `POST /api/v1/auth/logout`: deletes the cookie.
#[utoipa::path(post, path = "/auth/logout", tag = "auth", responses((status = 200, description = "The cookie is deleted", body = Object)))]
pub async fn logout(State(state): State<AppState>, Authenticated(user): Authenticated) -> Response {
    tracing::debug!(user = %user.email, "logout");
    let cookie = format!(
        "{}=\"\"; HttpOnly; Max-Age=0; Path=/; SameSite=Lax; expires=Thu, 01 Jan 1970 00:00:00 GMT",
        state.config().tokens.cookie_name
    );
    let mut response = Json(json!({})).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `GET /api/v1/auth/me`.
#[utoipa::path(get, path = "/auth/me", tag = "auth", responses((status = 200, description = "The caller's email", body = Object)))]
pub async fn me(Caller(user): Caller) -> Json<Value> {
    Json(json!({"email": user.email}))
}

fn user_read(user: &User) -> Value {
    json!({
        "id": user.id, "email": user.email, "is_active": true, "is_superuser": false, "is_verified": false,
        "tenant_id": user.tenant_id, "parent_user_id": null
    })
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct Register {
    email: String,
    password: String,
}

/// `POST /api/v1/auth/register` (public): 201 with the new user.
#[utoipa::path(post, path = "/auth/register", tag = "auth", security(()), request_body = Register, responses((status = 201, description = "The new user", body = Object), (status = 400, description = "REGISTER_USER_ALREADY_EXISTS or REGISTER_INVALID_PASSWORD", body = Object)))]
pub async fn register(State(state): State<AppState>, JsonBody(body): JsonBody<Register>) -> ApiResult<Response> {
    let email = body.email.trim();
    recall_api::validate_email(email).map_err(|e| {
        ApiError::invalid("value_error", vec![json!("body"), json!("email")], e.to_string(), json!(body.email))
    })?;
    if body.password.chars().count() < 8 {
        return Err(ApiError::Http {
            status: StatusCode::BAD_REQUEST,
            body: json!({"detail": {"code": "REGISTER_INVALID_PASSWORD", "reason": "A password has at least 8 characters."}}),
        });
    }
    let user = state
        .app()
        .register_user(email, &body.password)
        .await?
        .ok_or_else(|| ApiError::detail(StatusCode::BAD_REQUEST, "REGISTER_USER_ALREADY_EXISTS"))?;
    Ok((StatusCode::CREATED, Json(user_read(&user))).into_response())
}

/// `POST /api/v1/auth/api-keys` (`{"name": …}`): the key, shown only here.
#[utoipa::path(post, path = "/auth/api-keys", tag = "auth", request_body(content = Object, description = "{\"name\": string or null}"), responses((status = 200, description = "The key, shown only here", body = Object), (status = 400, description = "The key limit is reached", body = Object)))]
pub async fn create_api_key(
    State(state): State<AppState>,
    Caller(user): Caller,
    req: axum::extract::Request,
) -> ApiResult<Json<Value>> {
    let bytes = read_body(req, &state).await?;
    let body: Value = parse_json(&bytes)?;
    let name = match body.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(ApiError::invalid(
                "string_type",
                vec![json!("body"), json!("name")],
                "Input should be a valid string",
                other.clone(),
            ))
        }
    };
    match state.app().create_api_key(&user, name.as_deref()).await {
        Ok(created) => Ok(Json(json!(created))),
        Err(RecallError::InvalidInput(message)) => {
            Err(ApiError::Http { status: StatusCode::BAD_REQUEST, body: json!({"error": {"message": message}}) })
        }
        Err(e) => Err(e.into()),
    }
}

/// `GET /api/v1/auth/api-keys`: labels only (keys are kept as hashes).
#[utoipa::path(get, path = "/auth/api-keys", tag = "auth", responses((status = 200, description = "The caller's keys (labels only)", body = Vec<Object>)))]
pub async fn list_api_keys(State(state): State<AppState>, Caller(user): Caller) -> ApiResult<Json<Value>> {
    let keys = state.app().api_keys(&user).await?;
    Ok(Json(Value::Array(
        keys.iter().map(|k| json!({"key": "************", "label": k.label, "name": k.name, "id": k.id})).collect(),
    )))
}

/// `DELETE /api/v1/auth/api-keys/{id}`: `null`; 404 for a key that is
/// unknown or not the caller's.
#[utoipa::path(delete, path = "/auth/api-keys/{api_key_id}", tag = "auth", params(("api_key_id" = String, Path, description = "Key id")), responses((status = 200, description = "Revoked", body = Object), (status = 404, description = "Unknown or another user's key", body = Object)))]
pub async fn revoke_api_key(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let id = parse_uuid(&id, "api_key_id")?;
    state.app().revoke_api_key(&user, id).await?;
    Ok(Json(Value::Null))
}
