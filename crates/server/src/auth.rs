//! Who a request acts for (docs/http.md, "Authentication"): an API key in
//! `X-Api-Key`, else a session token (`Authorization: Bearer`, else the
//! `auth_token` cookie). When authentication is required and none is
//! valid, the answer is 401 with the posture text; when it is not, the
//! request acts for the default user. The `/api/v1/auth` routes are in
//! `routes/auth.rs`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use recall_core::{RecallError, User};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// The audience fastapi-users puts in its tokens.
const AUDIENCE: &str = "fastapi-users:auth";

/// Whether requests must authenticate, and why (the reason is quoted in the 401).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthPosture {
    pub required: bool,
    pub reason: String,
    /// Set when a setting was overridden (logged at start).
    pub warning: Option<String>,
}

impl AuthPosture {
    /// Cognee's posture table from `ENABLE_BACKEND_ACCESS_CONTROL` and
    /// `REQUIRE_AUTHENTICATION` (`None`: not given).
    pub fn resolve(access_control: Option<bool>, require_authentication: Option<bool>) -> Self {
        let posture = |required: bool, reason: &str| AuthPosture { required, reason: reason.into(), warning: None };
        match (access_control, require_authentication) {
            (_, Some(true)) => posture(true, "explicit REQUIRE_AUTHENTICATION"),
            (Some(false), Some(false)) => posture(false, "explicit REQUIRE_AUTHENTICATION"),
            (None | Some(true), Some(false)) => AuthPosture {
                warning: Some(
                    "REQUIRE_AUTHENTICATION=false is ignored while ENABLE_BACKEND_ACCESS_CONTROL is on".into(),
                ),
                ..posture(true, "forced on by multi-tenant mode (REQUIRE_AUTHENTICATION=false was ignored)")
            },
            (None, None) => posture(true, "default (no env vars set)"),
            (Some(on), None) => posture(on, "inherited from ENABLE_BACKEND_ACCESS_CONTROL"),
        }
    }

    /// The 401 body's text.
    pub fn message(&self) -> String {
        format!(
            "Authentication required (auth posture: {}). For single-user local use, set ENABLE_BACKEND_ACCESS_CONTROL=false and restart. To keep authentication and log in instead, set DEFAULT_USER_PASSWORD to make the default account loginable — see docs/minimal-docker-compose.md.",
            self.reason
        )
    }
}

/// The session-token settings.
#[derive(Clone)]
pub struct TokenConfig {
    /// `FASTAPI_USERS_JWT_SECRET`, or random per process.
    pub secret: Vec<u8>,
    /// `JWT_LIFETIME_SECONDS` (3600).
    pub lifetime: Duration,
    /// `AUTH_TOKEN_COOKIE_NAME` (`auth_token`).
    pub cookie_name: String,
    /// `AUTH_TOKEN_COOKIE_DOMAIN`.
    pub cookie_domain: Option<String>,
}

impl std::fmt::Debug for TokenConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenConfig")
            .field("secret", &"<redacted>")
            .field("lifetime", &self.lifetime)
            .field("cookie_name", &self.cookie_name)
            .finish()
    }
}

impl TokenConfig {
    /// A secret drawn at random: tokens stop working at the next start.
    pub fn random_secret() -> Vec<u8> {
        [Uuid::new_v4().into_bytes(), Uuid::new_v4().into_bytes()].concat()
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    aud: Vec<String>,
    exp: u64,
    /// A MAC of the user's password: a new password ends older sessions.
    pwd: String,
}

fn password_mac(secret: &[u8], stamp: &str) -> String {
    match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mut mac) => {
            mac.update(stamp.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
        Err(_) => String::new(),
    }
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl AppState {
    /// A session token for a user with a password.
    pub async fn issue_token(&self, user: &User) -> ApiResult<String> {
        let tokens = &self.config().tokens;
        let stamp = self.app().password_stamp(user).await?.unwrap_or_default();
        let claims = Claims {
            sub: user.id.to_string(),
            aud: vec![AUDIENCE.into()],
            exp: now_secs() + tokens.lifetime.as_secs(),
            pwd: password_mac(&tokens.secret, &stamp),
        };
        encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(&tokens.secret))
            .map_err(|e| RecallError::backend_msg(format!("cannot sign a session token: {e}")).into())
    }

    /// The user a session token stands for; `None` when it is invalid,
    /// expired, or its password has changed since.
    async fn token_user(&self, token: &str) -> ApiResult<Option<User>> {
        let tokens = &self.config().tokens;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[AUDIENCE]);
        validation.leeway = 0;
        let Ok(data) = decode::<Claims>(token, &DecodingKey::from_secret(&tokens.secret), &validation) else {
            return Ok(None);
        };
        let Ok(id) = Uuid::parse_str(&data.claims.sub) else { return Ok(None) };
        let Some(user) = self.app().user_by_id(id).await? else { return Ok(None) };
        let stamp = self.app().password_stamp(&user).await?.unwrap_or_default();
        let expected = password_mac(&tokens.secret, &stamp);
        Ok((!data.claims.pwd.is_empty() && data.claims.pwd == expected).then_some(user))
    }

    /// The user the request's credentials name, if any is valid.
    async fn credentialed_user(&self, headers: &HeaderMap) -> ApiResult<Option<User>> {
        if let Some(key) = header_text(headers, "x-api-key").filter(|k| !k.is_empty()) {
            if let Some(user) = self.app().authenticate_api_key(key).await? {
                return Ok(Some(user));
            }
        }
        let bearer = header_text(headers, header::AUTHORIZATION.as_str())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim);
        if let Some(token) = bearer {
            if let Some(user) = self.token_user(token).await? {
                return Ok(Some(user));
            }
        }
        if let Some(token) = cookie(headers, &self.config().tokens.cookie_name) {
            return self.token_user(&token).await;
        }
        Ok(None)
    }
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// A cookie's value from the `Cookie` headers.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"').to_string())
}

/// The user a request acts for.
pub struct Caller(pub User);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(user) = state.credentialed_user(&parts.headers).await? {
            return Ok(Caller(user));
        }
        if state.config().posture.required {
            return Err(unauthorized(state));
        }
        Ok(Caller(state.default_user().clone()))
    }
}

/// The middleware in front of `/mcp`: the request's caller, as for every
/// other route (401 when authentication is required and missing), handed
/// to the MCP service in the request's extensions.
pub async fn mcp_caller(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (mut parts, body) = request.into_parts();
    match Caller::from_request_parts(&mut parts, &state).await {
        Ok(Caller(user)) => {
            parts.extensions.insert(recall_mcp::HttpCaller(user));
            next.run(axum::extract::Request::from_parts(parts, body)).await
        }
        Err(e) => e.into_response(),
    }
}

/// A request that must carry a real credential, whatever the posture.
pub struct Authenticated(pub User);

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match state.credentialed_user(&parts.headers).await? {
            Some(user) => Ok(Authenticated(user)),
            None => Err(unauthorized(state)),
        }
    }
}

fn unauthorized(state: &AppState) -> ApiError {
    ApiError::detail(StatusCode::UNAUTHORIZED, state.config().posture.message())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_posture_table() {
        let cases = [
            (None, None, true, "default (no env vars set)"),
            (Some(false), None, false, "inherited from ENABLE_BACKEND_ACCESS_CONTROL"),
            (Some(true), None, true, "inherited from ENABLE_BACKEND_ACCESS_CONTROL"),
            (Some(false), Some(true), true, "explicit REQUIRE_AUTHENTICATION"),
            (Some(false), Some(false), false, "explicit REQUIRE_AUTHENTICATION"),
            (None, Some(false), true, "forced on by multi-tenant mode (REQUIRE_AUTHENTICATION=false was ignored)"),
            (
                Some(true),
                Some(false),
                true,
                "forced on by multi-tenant mode (REQUIRE_AUTHENTICATION=false was ignored)",
            ),
        ];
        for (access, require, required, reason) in cases {
            let p = AuthPosture::resolve(access, require);
            assert_eq!((p.required, p.reason.as_str()), (required, reason), "{access:?} {require:?}");
        }
        assert!(AuthPosture::resolve(None, Some(false)).warning.is_some());
        assert!(AuthPosture::resolve(None, None).message().starts_with(
            "Authentication required (auth posture: default (no env vars set)). For single-user local use"
        ));
    }

    #[test]
    fn cookies_are_found_by_name() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; auth_token=abc.def; b=2"));
        assert_eq!(cookie(&headers, "auth_token").as_deref(), Some("abc.def"));
        assert_eq!(cookie(&headers, "missing"), None);
    }
}
