//! Request bodies: JSON into the route's type, with every failure turned
//! into the 400 validation answer Cognee's clients know
//! (`{"detail": [{"type","loc","msg","input"}], "body": <received>}`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::error::ApiError;

/// A JSON body of type `T`; anything else is a 400 validation error.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// The whole body; a body over the size limit is 413.
pub async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::detail(status, "Request body too large.")
        } else {
            ApiError::detail(status, rejection.body_text())
        }
    })
}

/// Parses a JSON body into `T`, or explains why not as pydantic would.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let text = std::str::from_utf8(bytes).map_err(|e| json_invalid(e.valid_up_to(), "invalid UTF-8", Value::Null))?;
    let value: Value = serde_json::from_str(if text.trim().is_empty() { "null" } else { text })
        .map_err(|e| json_invalid(offset(text, e.line(), e.column()), &e.to_string(), json!(text)))?;
    serde_path_to_error::deserialize::<_, T>(value.clone()).map_err(|e| {
        let mut path: Vec<Value> = e.path().iter().filter_map(segment).collect();
        if path.is_empty() {
            // A flattened struct loses the path: find the field by the value the message quotes.
            path.extend(field_quoted(&value, &e.inner().to_string()));
        }
        let error = describe(&value, path, &e.inner().to_string());
        ApiError::Validation { detail: vec![error], body: value }
    })
}

fn json_invalid(at: usize, why: &str, body: Value) -> ApiError {
    ApiError::Validation {
        detail: vec![json!({
            "type": "json_invalid", "loc": ["body", at], "msg": "JSON decode error", "input": {},
            "ctx": {"error": why}
        })],
        body,
    }
}

/// The byte offset of a 1-based line and column.
fn offset(text: &str, line: usize, column: usize) -> usize {
    let before: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    before + column.saturating_sub(1)
}

fn segment(s: &serde_path_to_error::Segment) -> Option<Value> {
    match s {
        serde_path_to_error::Segment::Seq { index } => Some(json!(index)),
        serde_path_to_error::Segment::Map { key } => Some(json!(key)),
        serde_path_to_error::Segment::Enum { variant } => Some(json!(variant)),
        serde_path_to_error::Segment::Unknown => None,
    }
}

/// One pydantic-style error for a serde failure at `path`.
fn describe(body: &Value, path: Vec<Value>, message: &str) -> Value {
    let at = lookup(body, &path);
    let mut loc = vec![json!("body")];
    loc.extend(path);
    if let Some(field) = message.strip_prefix("missing field `").and_then(|m| m.split('`').next()) {
        loc.push(json!(field));
        return json!({"type": "missing", "loc": loc, "msg": "Field required", "input": at});
    }
    let kind = if message.starts_with("unknown variant") {
        "enum"
    } else if message.contains("expected a string") {
        "string_type"
    } else if message.contains("expected a boolean") {
        "bool_type"
    } else if message.contains("expected i") || message.contains("expected u") || message.contains("integer") {
        "int_type"
    } else if message.contains("expected a sequence") {
        "list_type"
    } else if message.contains("UUID") || message.contains("uuid") {
        "uuid_parsing"
    } else if message.contains("expected a map") || message.contains("expected struct") {
        "model_type"
    } else {
        "value_error"
    };
    json!({"type": kind, "loc": loc, "msg": message, "input": at})
}

/// The top-level field whose value the error message quotes (`` `X` `` or `"X"`).
fn field_quoted(body: &Value, message: &str) -> Option<Value> {
    let quoted = message
        .split('`')
        .nth(1)
        .or_else(|| message.split('"').nth(1))
        .filter(|q| !q.is_empty() && !message.starts_with("missing field"))?;
    body.as_object()?
        .iter()
        .find(|(_, v)| v.as_str() == Some(quoted) || v.to_string().as_str() == quoted)
        .map(|(k, _)| json!(k))
}

fn lookup(body: &Value, path: &[Value]) -> Value {
    let mut at = body;
    for step in path {
        let next = match step {
            Value::String(key) => at.get(key.as_str()),
            Value::Number(n) => n.as_u64().and_then(|i| at.get(i as usize)),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => break,
        }
    }
    at.clone()
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Probe {
        query: String,
        #[serde(default)]
        top_k: Option<i64>,
    }

    fn detail(bytes: &[u8]) -> (Vec<Value>, Value) {
        match parse_json::<Probe>(bytes) {
            Err(ApiError::Validation { detail, body }) => (detail, body),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn a_missing_field_is_pydantics_missing() {
        let (d, body) = detail(b"{}");
        assert_eq!(d, vec![json!({"type":"missing","loc":["body","query"],"msg":"Field required","input":{}})]);
        assert_eq!(body, json!({}));
    }

    #[test]
    fn wrong_types_and_broken_json_name_their_place() {
        let (d, _) = detail(br#"{"query": "q", "top_k": "many"}"#);
        assert_eq!(d[0]["loc"], json!(["body", "top_k"]));
        assert_eq!(d[0]["type"], json!("int_type"));
        assert_eq!(d[0]["input"], json!("many"));
        let (d, body) = detail(b"{\"query\": \n ,}");
        assert_eq!(d[0]["type"], json!("json_invalid"));
        assert_eq!(d[0]["loc"], json!(["body", 12]), "the offset of the comma");
        assert_eq!(body, json!("{\"query\": \n ,}"));
        let (d, _) = detail(&[b'{', 0xff, b'}']);
        assert_eq!(d[0]["type"], json!("json_invalid"));
    }
}
