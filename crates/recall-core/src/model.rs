//! Domain types (docs/ingestion.md): the data points memory is made of,
//! and the relational records that describe datasets, data and pipeline runs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::ids;

/// Milliseconds since the Unix epoch (UTC), the unit Cognee uses on data points.
pub type EpochMillis = i64;

/// Current time in epoch milliseconds.
pub fn now_millis() -> EpochMillis {
    chrono::Utc::now().timestamp_millis()
}

/// The dataset a store call is scoped to. Every store call takes one explicitly:
/// there is no call that reads across datasets by accident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DatasetId(pub Uuid);

impl std::fmt::Display for DatasetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Fields every graph node shares (Cognee's `DataPoint` base).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataPointBase {
    pub id: Uuid,
    pub created_at: EpochMillis,
    pub updated_at: EpochMillis,
    pub version: i64,
    #[serde(default)]
    pub belongs_to_set: Vec<String>,
    pub feedback_weight: f64,
    pub importance_weight: Option<f64>,
}

impl DataPointBase {
    pub fn new(id: Uuid) -> Self {
        let now = now_millis();
        Self {
            id,
            created_at: now,
            updated_at: now,
            version: 1,
            belongs_to_set: Vec::new(),
            feedback_weight: 0.5,
            importance_weight: Some(0.5),
        }
    }
}

/// A typed document; `id` is the id of the data item it was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    #[serde(flatten)]
    pub base: DataPointBase,
    /// Concrete class name, e.g. `TextDocument`.
    pub document_type: String,
    pub name: String,
    pub raw_data_location: String,
    pub mime_type: String,
    pub external_metadata: Option<String>,
}

/// How a chunk's last piece was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CutType {
    ParagraphEnd,
    SentenceEnd,
    SentenceCut,
}

impl CutType {
    pub fn as_str(self) -> &'static str {
        match self {
            CutType::ParagraphEnd => "paragraph_end",
            CutType::SentenceEnd => "sentence_end",
            CutType::SentenceCut => "sentence_cut",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentChunk {
    #[serde(flatten)]
    pub base: DataPointBase,
    pub text: String,
    /// Size in tokens (whitespace-separated words).
    pub chunk_size: usize,
    /// 0-based position within the document.
    pub chunk_index: usize,
    pub cut_type: CutType,
    /// sha256 hex of `text`.
    pub content_hash: String,
    pub document_id: Uuid,
    pub document_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityType {
    #[serde(flatten)]
    pub base: DataPointBase,
    pub name: String,
    pub description: String,
}

impl EntityType {
    pub fn new(name: &str) -> Self {
        let name = normalise_entity_name(name);
        Self { base: DataPointBase::new(ids::id_for("EntityType", &[&name])), description: name.clone(), name }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    #[serde(flatten)]
    pub base: DataPointBase,
    pub name: String,
    pub description: String,
    pub entity_type: Uuid,
}

impl Entity {
    pub fn new(name: &str, description: &str, entity_type: &EntityType) -> Self {
        let name = normalise_entity_name(name);
        Self {
            base: DataPointBase::new(ids::id_for("Entity", &[&name])),
            name,
            description: description.to_string(),
            entity_type: entity_type.base.id,
        }
    }
}

/// Entity and type names are lower-cased with apostrophes removed.
pub fn normalise_entity_name(name: &str) -> String {
    name.trim().to_lowercase().replace('\'', "")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextSummary {
    #[serde(flatten)]
    pub base: DataPointBase,
    pub text: String,
    pub source_chunk_id: Uuid,
}

impl TextSummary {
    /// Id is uuid5(chunk.id, "TextSummary"): the chunk id is the namespace.
    pub fn new(chunk_id: Uuid, text: String) -> Self {
        Self { base: DataPointBase::new(Uuid::new_v5(&chunk_id, b"TextSummary")), text, source_chunk_id: chunk_id }
    }
}

/// A stored graph node: its id, its type (class name) and its properties.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: Uuid,
    #[serde(rename = "type")]
    pub node_type: String,
    /// Every other field of the data point (name, text, weights, …).
    pub properties: Map<String, Value>,
}

impl Node {
    /// Builds a node from any serialisable data point.
    pub fn from_data_point<T: Serialize>(id: Uuid, node_type: &str, point: &T) -> crate::Result<Self> {
        let value = serde_json::to_value(point)
            .map_err(|e| crate::RecallError::invalid_input(format!("unserialisable node: {e}")))?;
        let mut properties = match value {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        properties.remove("id");
        Ok(Self { id, node_type: node_type.to_string(), properties })
    }

    pub fn name(&self) -> Option<&str> {
        self.properties.get("name").and_then(Value::as_str)
    }

    /// Name order: by the `name` property compared as bytes, nodes without
    /// a string name first, then by id ([`crate::ports::GraphStore::first_nodes_by_name`]).
    pub fn cmp_by_name(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(&other.name()).then(self.id.cmp(&other.id))
    }

    /// Its node-set tags (`belongs_to_set`).
    pub fn tags(&self) -> Vec<String> {
        string_list(&self.properties, "belongs_to_set")
    }
}

/// The strings of a list property (none when absent or not a list).
fn string_list(properties: &Map<String, Value>, key: &str) -> Vec<String> {
    properties
        .get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The edge property listing the documents that stated a relation (an
/// entity-to-entity fact), sorted, each once: what a forget of one of them
/// drops the relation by, once none is left. Stores may keep it apart
/// ([`crate::ports::GraphStore::upsert_stated_edges`]).
pub const PROVENANCE: &str = "document_ids";

/// A directed, named relationship between two nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    pub source_node_id: Uuid,
    pub target_node_id: Uuid,
    pub relationship_name: String,
    /// Always non-blank once stored.
    pub edge_text: Option<String>,
    /// Default properties (edge_object_id, feedback_weight, updated_at, …) and any extra ones.
    #[serde(default)]
    pub properties: Map<String, Value>,
}

impl Edge {
    pub fn new(source: Uuid, relationship_name: &str, target: Uuid) -> Self {
        let mut properties = Map::new();
        properties.insert(
            "edge_object_id".into(),
            Value::String(ids::edge_object_id(source, relationship_name, target).to_string()),
        );
        properties.insert("feedback_weight".into(), Value::from(0.5));
        properties
            .insert("updated_at".into(), Value::String(chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string()));
        Self {
            source_node_id: source,
            target_node_id: target,
            relationship_name: relationship_name.to_string(),
            edge_text: None,
            properties,
        }
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.edge_text = Some(text.into());
        self
    }

    /// Its identity: (source, relationship_name, target).
    pub fn key(&self) -> crate::ports::EdgeKey {
        (self.source_node_id, self.relationship_name.clone(), self.target_node_id)
    }

    /// The key of its type ([`ids::edge_type_key`]).
    pub fn type_key(&self) -> Uuid {
        ids::edge_type_key(self.edge_text.as_deref(), &self.relationship_name)
    }

    /// The documents that stated it ([`PROVENANCE`]), when read; none else.
    pub fn provenance(&self) -> Vec<String> {
        string_list(&self.properties, PROVENANCE)
    }
}

/// The part of the graph around some seed nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Subgraph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: Uuid,
    pub email: String,
    pub tenant_id: Option<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dataset {
    pub id: DatasetId,
    pub name: String,
    pub owner_id: Uuid,
    pub tenant_id: Option<Uuid>,
    pub created_at: EpochMillis,
}

/// Processing state of an ingested data item: `Pending` until its chunks and
/// vectors are all written, so an interrupted remember is redone, not skipped;
/// `Forgetting` once a forget of it has begun, so an interrupted forget stays
/// hidden and is not rebuilt by `cognify` (a new remember of it rebuilds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataStatus {
    Pending,
    Completed,
    Forgetting,
}

impl DataStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DataStatus::Pending => "pending",
            DataStatus::Completed => "completed",
            DataStatus::Forgetting => "forgetting",
        }
    }

    pub fn parse(s: &str) -> Self {
        match s {
            "completed" => DataStatus::Completed,
            "forgetting" => DataStatus::Forgetting,
            _ => DataStatus::Pending,
        }
    }
}

/// A raw ingested item (Cognee's `Data` row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataItem {
    pub id: Uuid,
    pub dataset_id: DatasetId,
    pub name: String,
    pub extension: String,
    pub mime_type: String,
    pub content_hash: String,
    pub raw_data_location: String,
    pub owner_id: Uuid,
    pub status: DataStatus,
    pub created_at: EpochMillis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PipelineRunStatus {
    #[serde(rename = "DATASET_PROCESSING_STARTED")]
    Started,
    #[serde(rename = "DATASET_PROCESSING_COMPLETED")]
    Completed,
    #[serde(rename = "DATASET_PROCESSING_ERRORED")]
    Errored,
}

impl PipelineRunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PipelineRunStatus::Started => "DATASET_PROCESSING_STARTED",
            PipelineRunStatus::Completed => "DATASET_PROCESSING_COMPLETED",
            PipelineRunStatus::Errored => "DATASET_PROCESSING_ERRORED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "DATASET_PROCESSING_STARTED" => Some(Self::Started),
            "DATASET_PROCESSING_COMPLETED" => Some(Self::Completed),
            "DATASET_PROCESSING_ERRORED" => Some(Self::Errored),
            _ => None,
        }
    }
}

/// One status row of a pipeline run. A run writes a `Started` row, then a
/// `Completed` or `Errored` row with the same `pipeline_run_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineRun {
    pub id: Uuid,
    pub pipeline_run_id: Uuid,
    pub pipeline_name: String,
    pub dataset_id: DatasetId,
    pub status: PipelineRunStatus,
    pub error_class: Option<String>,
    pub error_message: Option<String>,
    pub run_info: Value,
    pub created_at: EpochMillis,
}

/// Whether a set of datasets has a built knowledge graph (the warm-up probe,
/// docs/recall.md, "The graph lane", step 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphBuildStatus {
    Warm,
    NeverBuilt,
    BuildFailed { error_class: Option<String>, error_message: Option<String> },
}

impl GraphBuildStatus {
    /// `warm`, `never_built` or `build_failed`.
    pub fn label(&self) -> &'static str {
        match self {
            GraphBuildStatus::Warm => "warm",
            GraphBuildStatus::NeverBuilt => "never_built",
            GraphBuildStatus::BuildFailed { .. } => "build_failed",
        }
    }

    /// Warm if any graph-writing run completed; else build_failed with the
    /// newest errored one; else warm if any run exists (staged or in flight);
    /// else never built.
    pub fn from_runs(runs: &[PipelineRun]) -> Self {
        let graph_runs = runs.iter().filter(|r| r.pipeline_name != pipelines::ADD);
        if graph_runs.clone().any(|r| r.status == PipelineRunStatus::Completed) {
            return GraphBuildStatus::Warm;
        }
        let newest_error = graph_runs
            .filter(|r| r.status == PipelineRunStatus::Errored)
            .max_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        if let Some(r) = newest_error {
            return GraphBuildStatus::BuildFailed {
                error_class: r.error_class.clone(),
                error_message: r.error_message.clone(),
            };
        }
        if runs.is_empty() {
            GraphBuildStatus::NeverBuilt
        } else {
            GraphBuildStatus::Warm
        }
    }
}

/// One search to record in history: the question, the search type that
/// answered it, and one answer per searched dataset (one empty answer with no
/// dataset when none was searched).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRecord {
    pub user_id: Uuid,
    pub query_text: String,
    pub query_type: String,
    pub answers: Vec<(Option<DatasetId>, String)>,
}

/// A history row: a question (`user = "user"`) or an answer (`user = "system"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRow {
    pub id: Uuid,
    pub text: String,
    pub user: String,
    pub dataset_id: Option<DatasetId>,
    pub created_at: EpochMillis,
}

/// Names of the ingestion pipelines, as Cognee records them.
pub mod pipelines {
    /// Stores raw data items (`add`).
    pub const ADD: &str = "add_pipeline";
    /// Chunks, embeds and writes the graph (`cognify`).
    pub const COGNIFY: &str = "cognify_pipeline";
}

/// Vector collection names, `"<TypeName>_<field>"`.
pub mod collections {
    pub const DOCUMENT_CHUNK_TEXT: &str = "DocumentChunk_text";
    pub const TEXT_DOCUMENT_NAME: &str = "TextDocument_name";
    pub const ENTITY_NAME: &str = "Entity_name";
    pub const ENTITY_TYPE_NAME: &str = "EntityType_name";
    pub const TEXT_SUMMARY_TEXT: &str = "TextSummary_text";
    pub const EDGE_TYPE_RELATIONSHIP_NAME: &str = "EdgeType_relationship_name";
    pub const TRIPLET_TEXT: &str = "Triplet_text";
    pub const GLOBAL_CONTEXT_SUMMARY_TEXT: &str = "GlobalContextSummary_text";
    /// The routing collection shared by every dataset (docs/recall.md, "The graph lane", step 3): a mirror of
    /// the global context index rows, keyed by ids derivable from relational
    /// metadata (dataset id for the root, data ids for buckets).
    pub const DATASET_ROUTING: &str = "DatasetRouting_text";

    /// Every collection cognify may write.
    pub const ALL: &[&str] = &[
        DOCUMENT_CHUNK_TEXT,
        TEXT_DOCUMENT_NAME,
        ENTITY_NAME,
        ENTITY_TYPE_NAME,
        TEXT_SUMMARY_TEXT,
        EDGE_TYPE_RELATIONSHIP_NAME,
        TRIPLET_TEXT,
        GLOBAL_CONTEXT_SUMMARY_TEXT,
        DATASET_ROUTING,
    ];
}

/// Node type names written by cognify.
pub mod node_types {
    pub const TEXT_DOCUMENT: &str = "TextDocument";
    pub const DOCUMENT_CHUNK: &str = "DocumentChunk";
    pub const ENTITY: &str = "Entity";
    pub const ENTITY_TYPE: &str = "EntityType";
    pub const TEXT_SUMMARY: &str = "TextSummary";
    pub const GLOBAL_CONTEXT_SUMMARY: &str = "GlobalContextSummary";
}

/// What an extractor found in one chunk (Cognee's `KnowledgeGraph`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeGraph {
    #[serde(default)]
    pub nodes: Vec<KgNode>,
    #[serde(default)]
    pub edges: Vec<KgEdge>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KgNode {
    /// Extractor-local id, referenced by edges.
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub node_type: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KgEdge {
    pub source_node_id: String,
    pub target_node_id: String,
    pub relationship_name: String,
    /// A one-sentence description of the fact; becomes the edge text.
    #[serde(default)]
    pub description: Option<String>,
}

impl KnowledgeGraph {
    /// The JSON schema extractors are asked to follow.
    pub fn json_schema() -> Value {
        serde_json::json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["nodes", "edges"],
            "properties": {
                "nodes": {"type": "array", "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["id", "name", "type", "description"],
                    "properties": {
                        "id": {"type": "string"}, "name": {"type": "string"},
                        "type": {"type": "string"}, "description": {"type": "string"}
                    }
                }},
                "edges": {"type": "array", "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["source_node_id", "target_node_id", "relationship_name", "description"],
                    "properties": {
                        "source_node_id": {"type": "string"}, "target_node_id": {"type": "string"},
                        "relationship_name": {"type": "string"}, "description": {"type": "string"}
                    }
                }}
            }
        })
    }
}
