//! The camelCase shapes of Cognee's dataset routes (`DatasetDTO`,
//! `DataDTO`, `GraphDTO`), built from the domain types.

use chrono::{DateTime, SecondsFormat};
use recall_core::{DataItem, Dataset, DatasetId, Edge, EpochMillis, Node, Subgraph};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

/// An instant as ISO-8601 UTC with microseconds and a `Z`, as Cognee's
/// response models serialise their timestamps.
pub fn iso_utc(millis: EpochMillis) -> String {
    DateTime::from_timestamp_millis(millis).map(|t| t.to_rfc3339_opts(SecondsFormat::Micros, true)).unwrap_or_default()
}

/// One dataset of `GET /api/v1/datasets`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetDto {
    #[schema(value_type = String, format = Uuid)]
    pub id: DatasetId,
    pub name: String,
    pub created_at: String,
    pub updated_at: Option<String>,
    pub owner_id: Uuid,
}

impl From<&Dataset> for DatasetDto {
    fn from(d: &Dataset) -> Self {
        Self {
            id: d.id,
            name: d.name.clone(),
            created_at: iso_utc(d.created_at),
            updated_at: None,
            owner_id: d.owner_id,
        }
    }
}

/// One data item of `GET /api/v1/datasets/{id}/data`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataDto {
    pub id: Uuid,
    pub name: String,
    pub created_at: String,
    pub updated_at: Option<String>,
    pub extension: String,
    pub mime_type: String,
    pub raw_data_location: String,
    #[schema(value_type = String, format = Uuid)]
    pub dataset_id: DatasetId,
    pub label: Option<String>,
    #[schema(value_type = Object)]
    pub external_metadata: Value,
    pub data_size: Option<u64>,
    pub content_hash: String,
}

impl From<&DataItem> for DataDto {
    fn from(d: &DataItem) -> Self {
        let location = if d.raw_data_location.is_empty() || d.raw_data_location.contains("://") {
            d.raw_data_location.clone()
        } else {
            format!("file://{}", d.raw_data_location)
        };
        Self {
            id: d.id,
            // Cognee names data by the stem of the file name.
            name: d.name.strip_suffix(&format!(".{}", d.extension)).unwrap_or(&d.name).to_string(),
            created_at: iso_utc(d.created_at),
            updated_at: None,
            extension: d.extension.clone(),
            mime_type: d.mime_type.clone(),
            raw_data_location: location,
            dataset_id: d.dataset_id,
            label: None,
            external_metadata: Value::Object(Map::new()),
            data_size: std::fs::metadata(&d.raw_data_location).ok().map(|m| m.len()),
            content_hash: d.content_hash.clone(),
        }
    }
}

/// `GET /api/v1/datasets/{id}/graph`: `{"nodes": [{"id","label","type","properties"}], "edges": [{"source","target","label"}]}`.
/// A node's label is its name, else `<type>_<id>`; its properties are every
/// other attribute except timestamps, nulls dropped.
pub fn graph_dto(graph: &Subgraph) -> Value {
    let nodes: Vec<Value> = graph.nodes.iter().map(node_dto).collect();
    let edges: Vec<Value> = graph.edges.iter().map(edge_dto).collect();
    serde_json::json!({"nodes": nodes, "edges": edges})
}

/// One node of [`graph_dto`].
pub fn node_dto(n: &Node) -> Value {
    let name = n.properties.get("name").and_then(Value::as_str).filter(|s| !s.is_empty());
    let label = name.map_or_else(|| format!("{}_{}", n.node_type, n.id), str::to_string);
    let properties: Map<String, Value> = n
        .properties
        .iter()
        .filter(|(k, v)| !matches!(k.as_str(), "id" | "type" | "name" | "created_at" | "updated_at") && !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    serde_json::json!({"id": n.id, "label": label, "type": n.node_type, "properties": properties})
}

/// One edge of [`graph_dto`].
pub fn edge_dto(e: &Edge) -> Value {
    serde_json::json!({"source": e.source_node_id, "target": e.target_node_id, "label": e.relationship_name})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn graph_nodes_are_labelled_by_name_else_type_and_id() {
        let named = Node {
            id: Uuid::from_u128(1),
            node_type: "Entity".into(),
            properties: serde_json::from_value(
                json!({"name": "Ada", "description": "x", "created_at": 1, "gone": null}),
            )
            .unwrap(),
        };
        let anonymous =
            Node { id: Uuid::from_u128(2), node_type: "DocumentChunk".into(), properties: Default::default() };
        let v = graph_dto(&Subgraph { nodes: vec![named, anonymous], edges: vec![] });
        assert_eq!(v["nodes"][0]["label"], json!("Ada"));
        assert_eq!(v["nodes"][0]["properties"], json!({"description": "x"}));
        assert_eq!(v["nodes"][1]["label"], json!(format!("DocumentChunk_{}", Uuid::from_u128(2))));
    }

    #[test]
    fn times_are_utc_with_a_z() {
        assert_eq!(iso_utc(1_767_323_045_678), "2026-01-02T03:04:05.678000Z");
    }
}
