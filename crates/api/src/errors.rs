//! From a [`RecallError`] to the HTTP answer Cognee's API gives for it
//! (docs/requests.md, "Errors over HTTP"): which errors are Cognee's own
//! (`{"detail": "<message> [<Name>]"}` with their status), and what the recall
//! and search routes answer for everything else.

use recall_core::RecallError;
use serde_json::{json, Map, Value};

/// The scope names Cognee lists in the recall route's 422.
const VALID_SCOPES: &str =
    "['all', 'auto', 'code', 'graph', 'graph_context', 'session', 'session_context', 'session_first', 'tools', 'trace']";

/// An HTTP answer: status and JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    pub status: u16,
    pub body: Value,
}

/// Which route failed: the recall and search routes answer unexpected
/// failures in their own shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Recall,
    Search,
    /// Every other route: the error's own status and detail.
    Other,
}

/// Whether Cognee raises this as one of its own API errors (with a class
/// name and status). Storage and provider failures are not: in Cognee they
/// escape as ordinary exceptions.
fn is_api_error(e: &RecallError) -> bool {
    !matches!(e, RecallError::Backend(_) | RecallError::Provider(_))
}

/// The `ValueError` recall raises for an unknown scope.
fn is_value_error(e: &RecallError) -> bool {
    e.name() == "ValueError"
}

/// Cognee's global handler: `{"detail": "<message> [<Name>]"}`, plus
/// `remediation` when the error has one.
fn detail(e: &RecallError) -> ErrorResponse {
    let mut body = Map::new();
    body.insert("detail".into(), json!(format!("{e} [{}]", e.name())));
    if let Some(remediation) = e.remediation() {
        body.insert("remediation".into(), json!(remediation));
    }
    ErrorResponse { status: e.http_status(), body: Value::Object(body) }
}

/// The answer a route gives for a failed request.
pub fn error_response(e: &RecallError, route: Route) -> ErrorResponse {
    match route {
        // The message is rebuilt: the exception text is never echoed.
        Route::Recall if is_value_error(e) => ErrorResponse {
            status: 422,
            body: json!({"error": format!("Invalid recall request. If a scope was given, valid values are: {VALID_SCOPES}.")}),
        },
        Route::Recall if !is_api_error(e) => {
            ErrorResponse { status: 409, body: json!({"error": "An error occurred during recall."}) }
        }
        Route::Search if !is_api_error(e) => {
            ErrorResponse { status: 500, body: json!({"error": "Internal server error", "detail": e.to_string()}) }
        }
        // A storage failure's text stays in the server's log.
        Route::Other if matches!(e, RecallError::Backend(_)) => {
            ErrorResponse { status: 500, body: json!({"detail": "Internal Server Error"}) }
        }
        _ => detail(e),
    }
}

/// The `error` frame of a recall event stream whose 200 was already sent:
/// `{"message", "status"}` (an API error's message and status; a
/// `ValueError`'s text with 422; anything else a fixed text with 409).
pub fn stream_error_frame(e: &RecallError) -> Value {
    if is_value_error(e) {
        return json!({"message": e.to_string(), "status": 422});
    }
    if is_api_error(e) {
        return json!({"message": e.to_string(), "status": e.http_status()});
    }
    json!({"message": "An error occurred during recall.", "status": 409})
}

#[cfg(test)]
mod tests {
    use recall_core::{Permission, SearchType};

    use super::*;

    #[test]
    fn api_errors_carry_their_class_and_status() {
        let denied = RecallError::permission_denied(Permission::Read);
        for route in [Route::Recall, Route::Search, Route::Other] {
            let r = error_response(&denied, route);
            assert_eq!(r.status, 403);
            assert_eq!(
                r.body,
                json!({"detail": "Request owner does not have necessary permission: [read] for all datasets requested. [PermissionDeniedError]"})
            );
        }
        let disabled = error_response(&RecallError::SearchTypeDisabled(SearchType::Cypher), Route::Recall);
        assert_eq!(disabled.status, 403);
        assert_eq!(
            disabled.body["detail"],
            json!("CYPHER search is disabled by default for security reasons. [SearchTypeDisabledError]")
        );
        assert!(disabled.body["remediation"].as_str().is_some_and(|r| r.contains("ALLOW_CYPHER_QUERY=true")));
        let validation = error_response(&RecallError::top_k_not_positive(), Route::Search);
        assert_eq!(
            (validation.status, validation.body),
            (422, json!({"detail": "top_k must be a positive integer. [QueryValidationError]"}))
        );
    }

    #[test]
    fn unexpected_failures_take_each_routes_shape() {
        let broken = RecallError::backend_msg("disk on fire");
        assert_eq!(
            error_response(&broken, Route::Recall),
            ErrorResponse { status: 409, body: json!({"error": "An error occurred during recall."}) }
        );
        assert_eq!(
            error_response(&broken, Route::Search),
            ErrorResponse {
                status: 500,
                body: json!({"error": "Internal server error", "detail": "backend error: disk on fire"})
            }
        );
        let other = error_response(&RecallError::Provider("model gone".into()), Route::Other);
        assert_eq!((other.status, other.body), (502, json!({"detail": "model gone [ProviderError]"})));
        let hidden = error_response(&broken, Route::Other);
        assert_eq!((hidden.status, hidden.body), (500, json!({"detail": "Internal Server Error"})));
    }

    #[test]
    fn an_unknown_scope_is_a_fixed_422_on_recall() {
        let e = recall_engine::scope::normalize_scope(Some(&["nope".to_string()])).unwrap_err();
        let r = error_response(&e, Route::Recall);
        assert_eq!(r.status, 422);
        assert_eq!(
            r.body,
            json!({"error": "Invalid recall request. If a scope was given, valid values are: ['all', 'auto', 'code', 'graph', 'graph_context', 'session', 'session_context', 'session_first', 'tools', 'trace']."})
        );
        assert_eq!(stream_error_frame(&e)["status"], json!(422));
    }

    #[test]
    fn stream_error_frames() {
        assert_eq!(
            stream_error_frame(&RecallError::LlmPaymentRequired("pay up".into())),
            json!({"message": "pay up", "status": 402})
        );
        assert_eq!(
            stream_error_frame(&RecallError::backend_msg("x")),
            json!({"message": "An error occurred during recall.", "status": 409})
        );
    }
}
