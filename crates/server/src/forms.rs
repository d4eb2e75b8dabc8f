//! Form bodies (`multipart/form-data` and `application/x-www-form-urlencoded`,
//! both accepted on every form route): repeated fields, file parts, and
//! pydantic's reading of booleans and integers. An empty value counts as
//! absent, as FastAPI treats it.

use axum::extract::{FromRequest, Multipart, Request};
use axum::http::{header, StatusCode};
use serde_json::{json, Value};

use crate::body::read_body;
use crate::error::ApiError;

/// An uploaded file part.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The part's file name, reduced to its base name (a client may send a
    /// full path; nothing from it is used as a path on this side).
    pub filename: String,
    pub bytes: Vec<u8>,
}

/// A form's fields in order; file parts apart.
#[derive(Debug, Default)]
pub struct FormData {
    fields: Vec<(String, String)>,
    files: Vec<(String, Upload)>,
}

impl<S: Send + Sync> FromRequest<S> for FormData {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let content_type =
            req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        if content_type.starts_with("multipart/form-data") {
            let multipart = Multipart::from_request(req, state)
                .await
                .map_err(|e| ApiError::detail(StatusCode::BAD_REQUEST, e.body_text()))?;
            read_multipart(multipart).await
        } else if content_type.starts_with("application/x-www-form-urlencoded") || content_type.is_empty() {
            let bytes = read_body(req, state).await?;
            read_urlencoded(&bytes)
        } else {
            Err(ApiError::detail(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Send this route a form: multipart/form-data or application/x-www-form-urlencoded.",
            ))
        }
    }
}

async fn read_multipart(mut multipart: Multipart) -> Result<FormData, ApiError> {
    let mut form = FormData::default();
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return Err(ApiError::detail(e.status(), e.body_text())),
        };
        let name = field.name().unwrap_or_default().to_string();
        let filename = field.file_name().map(base_name);
        let bytes = field.bytes().await.map_err(|e| ApiError::detail(e.status(), e.body_text()))?;
        match filename {
            Some(filename) => form.files.push((name, Upload { filename, bytes: bytes.to_vec() })),
            None => {
                let value = String::from_utf8(bytes.to_vec()).map_err(|_| not_utf8(&name))?;
                form.fields.push((name, value));
            }
        }
    }
    Ok(form)
}

fn read_urlencoded(bytes: &[u8]) -> Result<FormData, ApiError> {
    let mut form = FormData::default();
    for (name, value) in form_urlencoded::parse(bytes) {
        // The decoder replaces bytes that are not UTF-8; a replacement
        // character the client did not encode itself means bad input.
        if value.contains('\u{FFFD}') && !raw_has_replacement(bytes) {
            return Err(not_utf8(&name));
        }
        form.fields.push((name.into_owned(), value.into_owned()));
    }
    Ok(form)
}

fn raw_has_replacement(bytes: &[u8]) -> bool {
    let raw = String::from_utf8_lossy(bytes).to_ascii_uppercase();
    raw.contains("%EF%BF%BD") || std::str::from_utf8(bytes).is_ok_and(|s| s.contains('\u{FFFD}'))
}

fn not_utf8(name: &str) -> ApiError {
    ApiError::invalid(
        "string_unicode",
        vec![json!("body"), json!(name)],
        "Input should be a valid string, unable to parse raw data as a unicode string",
        Value::Null,
    )
}

/// The last path component of a client's file name (either separator).
pub fn base_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default().trim();
    match base {
        "" | "." | ".." => "upload".to_string(),
        b => b.chars().filter(|c| !c.is_control()).collect(),
    }
}

impl FormData {
    /// The first non-empty value of a field.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, v)| n == name && !v.is_empty()).map(|(_, v)| v.as_str())
    }

    /// The first non-empty value under any of these names (camelCase and snake_case).
    pub fn text_any(&self, names: &[&str]) -> Option<&str> {
        names.iter().find_map(|n| self.text(n))
    }

    /// Every non-empty value of a repeated field.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.fields.iter().filter(|(n, v)| n == name && !v.is_empty()).map(|(_, v)| v.as_str()).collect()
    }

    /// The file parts of a field.
    pub fn files(&self, name: &str) -> Vec<&Upload> {
        self.files.iter().filter(|(n, _)| n == name).map(|(_, u)| u).collect()
    }

    /// A boolean field, read as pydantic reads one.
    pub fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        let Some(v) = self.text(name) else { return Ok(None) };
        match v.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" | "t" | "y" => Ok(Some(true)),
            "false" | "0" | "no" | "off" | "f" | "n" => Ok(Some(false)),
            _ => Err(ApiError::invalid(
                "bool_parsing",
                vec![json!("body"), json!(name)],
                "Input should be a valid boolean, unable to interpret input",
                json!(v),
            )),
        }
    }

    /// A positive integer field.
    pub fn positive(&self, name: &str) -> Result<Option<usize>, ApiError> {
        let Some(v) = self.text(name) else { return Ok(None) };
        match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(ApiError::invalid(
                "int_parsing",
                vec![json!("body"), json!(name)],
                "Input should be a valid positive integer",
                json!(v),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_keep_only_their_base_name() {
        assert_eq!(base_name("/home/ada/notes/today.txt"), "today.txt");
        assert_eq!(base_name("..\\..\\windows\\win.ini"), "win.ini");
        assert_eq!(base_name("../../"), "upload");
        assert_eq!(base_name("text_5d41.txt"), "text_5d41.txt");
    }

    #[test]
    fn urlencoded_fields_repeat_and_reject_bad_utf8() {
        let form = read_urlencoded(b"raw_data=a&raw_data=b&datasetName=&flag=YES").unwrap();
        assert_eq!(form.all("raw_data"), vec!["a", "b"]);
        assert_eq!(form.text("datasetName"), None, "an empty value is absent");
        assert_eq!(form.bool("flag").unwrap(), Some(true));
        assert!(read_urlencoded(b"datasetName=%FF%FE").is_err());
        assert!(read_urlencoded(b"x=%EF%BF%BD").is_ok(), "an encoded replacement character is the client's own");
        assert!(form.positive("flag").is_err());
    }
}
