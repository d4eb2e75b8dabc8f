//! The bodies of Cognee's recall and search routes, and their history
//! answers (docs/requests.md). The request types are the engine's own:
//! a body deserialises straight into what `Engine::recall` and
//! `Engine::search` take, with no conversion between option structs.

use recall_core::{DatasetId, HistoryRow};
use recall_engine::RecallRequest;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `POST /api/v1/recall`'s body: the recall request, plus what only the
/// route reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallBody {
    #[serde(flatten)]
    pub request: RecallRequest,
    /// `true` or `false` decides between an event stream and JSON outright;
    /// `null` negotiates through the Accept header.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Accepted for compatibility; it changes nothing.
    #[serde(default)]
    pub verbose: bool,
}

/// `POST /api/v1/search`'s body is the engine's request itself.
pub type SearchBody = recall_engine::SearchRequest;

/// One row of `GET /api/v1/recall` and `GET /api/v1/search`: camelCase, as
/// Cognee's history answer is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub id: Uuid,
    pub text: String,
    /// `user` for a question, `system` for an answer.
    pub user: String,
    /// ISO-8601 UTC with a `Z`.
    pub created_at: String,
    #[schema(value_type = Option<String>, format = Uuid)]
    pub dataset_id: Option<DatasetId>,
}

impl From<HistoryRow> for HistoryEntry {
    fn from(row: HistoryRow) -> Self {
        let created_at = crate::dto::iso_utc(row.created_at);
        Self { id: row.id, text: row.text, user: row.user, created_at, dataset_id: row.dataset_id }
    }
}

#[cfg(test)]
mod tests {
    use recall_core::SearchType;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_recall_body_carries_the_request_and_the_route_fields() {
        let body: RecallBody = serde_json::from_value(json!({
            "query": "q", "searchType": "CHUNKS", "topK": 2, "stream": true, "toolConnections": ["db"]
        }))
        .unwrap();
        assert_eq!(body.request.query_text, "q");
        assert_eq!(body.request.query_type, Some(SearchType::Chunks));
        assert_eq!(body.request.options.top_k, Some(2));
        assert_eq!((body.stream, body.request.tool_connections), (Some(true), Some(vec!["db".to_string()])));
        let plain: RecallBody = serde_json::from_value(json!({"query": "q"})).unwrap();
        assert_eq!((plain.stream, plain.verbose), (None, false));
        assert!(serde_json::from_value::<RecallBody>(json!({"stream": true})).is_err(), "the query is required");
    }

    #[test]
    fn history_rows_are_camel_case_with_utc_times() {
        let row = HistoryRow {
            id: Uuid::nil(),
            text: "q".into(),
            user: "user".into(),
            dataset_id: None,
            created_at: 1_767_323_045_678,
        };
        let v = serde_json::to_value(HistoryEntry::from(row)).unwrap();
        assert_eq!(v["createdAt"], json!("2026-01-02T03:04:05.678000Z"));
        assert_eq!(v["datasetId"], json!(null));
        assert!(v.get("created_at").is_none());
    }
}
