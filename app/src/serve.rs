//! `recall serve`: the HTTP server on the configured engine.

use std::time::Duration;

use recall_core::{RecallError, Result};
use recall_server::{AppState, AuthPosture, ServerConfig, TokenConfig};

use crate::{build_engine, caller, OpenMode, Settings};

/// An env flag as Cognee reads its posture switches: true only when it
/// says `true`; `None` when not given (or blank).
fn given(value: Option<&str>) -> Option<bool> {
    value.map(str::trim).filter(|v| !v.is_empty()).map(|v| v.eq_ignore_ascii_case("true"))
}

/// Whether ENABLE_BACKEND_ACCESS_CONTROL was given (by either spelling, or
/// switched off in a file): the 401 text names where the posture came from.
fn access_control_given(settings: &Settings) -> Option<bool> {
    let env = ["ENABLE_BACKEND_ACCESS_CONTROL", "RECALL_ENABLE_BACKEND_ACCESS_CONTROL"]
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()));
    (env || !settings.enable_backend_access_control).then_some(settings.enable_backend_access_control)
}

/// The server's settings.
pub fn server_config(settings: &Settings) -> Result<ServerConfig> {
    let mut config = ServerConfig::new();
    config.posture =
        AuthPosture::resolve(access_control_given(settings), given(settings.require_authentication.as_deref()));
    let secret = settings.fastapi_users_jwt_secret.expose().trim();
    if secret.is_empty() {
        tracing::warn!("FASTAPI_USERS_JWT_SECRET is not set: session tokens are signed with a random secret and end with this process");
    }
    config.tokens = TokenConfig {
        secret: if secret.is_empty() { TokenConfig::random_secret() } else { secret.as_bytes().to_vec() },
        lifetime: Duration::from_secs(settings.jwt_lifetime_seconds.max(1)),
        cookie_name: settings.auth_token_cookie_name.trim().to_string(),
        cookie_domain: Some(settings.auth_token_cookie_domain.trim().to_string()).filter(|d| !d.is_empty()),
    };
    if config.tokens.cookie_name.is_empty() {
        return Err(RecallError::invalid_input("auth_token_cookie_name must not be empty"));
    }
    config.default_user_password = Some(settings.default_user_password.expose().to_string()).filter(|p| !p.is_empty());
    let origins: Vec<String> =
        settings.cors_allowed_origins.split(',').map(str::trim).filter(|o| !o.is_empty()).map(str::to_string).collect();
    config.cors_origins = if origins.is_empty() { vec![settings.ui_app_url.trim().to_string()] } else { origins };
    config.body_limit = settings.max_body_mb.max(1).saturating_mul(1 << 20);
    config.request_timeout = Duration::from_secs(settings.request_timeout_seconds.max(1));
    config.answer_streaming = settings.llm_answer_streaming;
    config.mcp = crate::mcp_config(settings)?;
    Ok(config)
}

/// The `Host` values `/mcp` accepts: on a loopback address, the loopback
/// names and `MCP_ALLOWED_HOSTS` (comma-separated; a `:*` port glob means any
/// port); elsewhere `MCP_ALLOWED_HOSTS` alone, or any host when it is unset
/// (every MCP request is authenticated like the rest of the API).
fn mcp_allowed_hosts(bind: &str, extra: Option<&str>) -> Option<Vec<String>> {
    let extra: Vec<String> = extra
        .unwrap_or_default()
        .split(',')
        .map(|h| h.trim().trim_end_matches(":*").to_string())
        .filter(|h| !h.is_empty())
        .collect();
    let loopback = matches!(bind, "127.0.0.1" | "localhost" | "::1" | "[::1]");
    if loopback {
        let mut hosts: Vec<String> = recall_server::LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
        hosts.extend(extra);
        Some(hosts)
    } else {
        (!extra.is_empty()).then_some(extra)
    }
}

/// Builds the engine and serves until SIGINT or SIGTERM.
pub async fn serve(settings: &Settings, host: Option<&str>, port: Option<u16>) -> Result<()> {
    let config = server_config(settings)?;
    let (engine, _) = build_engine(settings, OpenMode::Create).await?;
    let default_user = caller(&engine, settings, None, true)
        .await?
        .ok_or_else(|| RecallError::backend_msg("the default user could not be created"))?;
    let host = host.unwrap_or(settings.http_api_host.trim());
    let mut config = config;
    config.mcp_allowed_hosts = mcp_allowed_hosts(host, Some(&settings.mcp_allowed_hosts));
    let state = AppState::prepare(crate::application(engine, settings)?, config, default_user).await?;
    let port = port.unwrap_or(settings.http_api_port);
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| RecallError::invalid_input(format!("cannot listen on {host}:{port}: {e}")))?;
    let address = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| format!("{host}:{port}"));
    eprintln!("Recall is serving Cognee's API on http://{address} (docs at /docs); Ctrl-C stops it.");
    recall_server::serve(listener, state, recall_server::shutdown_signal())
        .await
        .map_err(|e| RecallError::backend_msg(format!("the server stopped: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_hosts_follow_the_bind_address() {
        let on_loopback = mcp_allowed_hosts("127.0.0.1", Some("mem.example.com:*, "));
        assert_eq!(
            on_loopback,
            Some(vec!["localhost".into(), "127.0.0.1".into(), "::1".into(), "mem.example.com".into()])
        );
        assert_eq!(mcp_allowed_hosts("0.0.0.0", None), None);
        assert_eq!(mcp_allowed_hosts("0.0.0.0", Some("a.example:8000")), Some(vec!["a.example:8000".to_string()]));
    }

    #[test]
    fn posture_switches_read_true_only() {
        assert_eq!(given(None), None);
        assert_eq!(given(Some(" ")), None);
        assert_eq!(given(Some("TRUE")), Some(true));
        assert_eq!(given(Some("1")), Some(false), "Cognee reads only 'true' as true here");
    }

    #[test]
    fn cors_falls_back_to_the_ui_url() {
        let mut settings = Settings::defaults().unwrap();
        let config = server_config(&settings).unwrap();
        assert_eq!(config.cors_origins, vec!["http://localhost:3000".to_string()]);
        settings.cors_allowed_origins = " https://a.example , ,https://b.example".into();
        assert_eq!(server_config(&settings).unwrap().cors_origins, vec!["https://a.example", "https://b.example"]);
    }
}
