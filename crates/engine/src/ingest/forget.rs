//! `forget`: delete a document or a whole dataset, with everything derived
//! from it, so nothing deleted can come back in a later recall.

use std::collections::{BTreeSet, HashMap, HashSet};

use recall_core::model::collections::{
    DOCUMENT_CHUNK_TEXT, ENTITY_NAME, ENTITY_TYPE_NAME, TEXT_DOCUMENT_NAME, TEXT_SUMMARY_TEXT, TRIPLET_TEXT,
};
use recall_core::model::node_types;
use recall_core::ports::EdgeKey;
use recall_core::{ids, DataItem, Dataset, DatasetRef, Edge, Node, RecallError, Result, Subgraph, User};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::cognify::{
    default_edge_text, description_without, edge_document_ids, entity_row, ids_of_type, is_relation, prop_str,
    TEXT_DOCUMENT_ID,
};
use crate::Engine;

/// What a forget removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetOutcome {
    pub dataset_name: String,
    pub document_name: Option<String>,
    pub nodes_deleted: usize,
    pub edges_deleted: usize,
}

impl Engine {
    /// Deletes a dataset the caller may delete: its vectors (every
    /// collection, routing rows included), graph, data items, pipeline runs,
    /// grants and finally the dataset row, so an interrupted forget can simply
    /// be repeated; from its start, searches see nothing of the dataset.
    pub async fn forget_dataset(&self, user: &User, dataset: impl Into<DatasetRef>) -> Result<Dataset> {
        let dataset = self.deletable(user, &dataset.into()).await?;
        // The whole dataset hidden until it is gone (crate::visibility).
        self.relational.data.quarantine(dataset.id, Uuid::nil(), &[Uuid::nil()]).await?;
        self.bump_data_version(dataset.id).await?;
        self.vectors.delete_dataset(dataset.id).await?;
        self.graph.delete_dataset(dataset.id).await?;
        // What sessions derived from it: its searches' QA entries and its default sessions.
        if let Some(sessions) = &self.sessions {
            sessions.forget_dataset(dataset.id).await?;
        }
        self.relational.data.delete_dataset_data(dataset.id).await?;
        self.relational.runs.delete_dataset_runs(dataset.id).await?;
        self.relational.datasets.delete_dataset(dataset.id).await?;
        self.bump_data_version(dataset.id).await?;
        Ok(dataset)
    }

    /// Deletes one document (by name or data id) from a dataset: its document,
    /// chunk and summary nodes and vectors; entities and types that no other
    /// document supports; relations only it asserted; then refreshes the
    /// EdgeType counts and the global context index (its bucket goes, the root
    /// is rewritten at once), and finally the data item.
    pub async fn forget_document(
        &self,
        user: &User,
        dataset: impl Into<DatasetRef>,
        document: &str,
    ) -> Result<ForgetOutcome> {
        let dataset = self.deletable(user, &dataset.into()).await?;
        let item = self.find_item(&dataset, document).await?;
        self.forget_item(dataset, item).await
    }

    /// [`Engine::forget_document`] once the dataset and item are known (an
    /// update forgets the old version of a document this way).
    pub(crate) async fn forget_item(&self, dataset: Dataset, item: DataItem) -> Result<ForgetOutcome> {
        let graph = self.graph.get_graph(dataset.id).await?;
        let doc_key = item.id.to_string();

        let chunks: HashSet<Uuid> = graph
            .nodes
            .iter()
            .filter(|n| n.node_type == node_types::DOCUMENT_CHUNK && prop_str(n, "document_id") == Some(&doc_key))
            .map(|n| n.id)
            .collect();
        let summaries: HashSet<Uuid> = graph
            .nodes
            .iter()
            .filter(|n| n.node_type == node_types::TEXT_SUMMARY)
            .filter(|n| {
                prop_str(n, "source_chunk_id")
                    .and_then(|c| Uuid::parse_str(c).ok())
                    .is_some_and(|c| chunks.contains(&c))
            })
            .map(|n| n.id)
            .collect();

        // Entities mentioned by this document, and those still mentioned elsewhere.
        let entity_ids = ids_of_type(&graph, node_types::ENTITY);
        let mut mentioned = HashSet::new();
        let mut still_supported = HashSet::new();
        for e in
            graph.edges.iter().filter(|e| e.relationship_name == "contains" && entity_ids.contains(&e.target_node_id))
        {
            if chunks.contains(&e.source_node_id) {
                mentioned.insert(e.target_node_id);
            } else {
                still_supported.insert(e.target_node_id);
            }
        }
        let doomed_entities: HashSet<Uuid> = mentioned.difference(&still_supported).copied().collect();
        let type_ids = ids_of_type(&graph, node_types::ENTITY_TYPE);
        let surviving_types: HashSet<Uuid> = graph
            .edges
            .iter()
            .filter(|e| e.relationship_name == "is_a" && !doomed_entities.contains(&e.source_node_id))
            .map(|e| e.target_node_id)
            .collect();
        let doomed_types: HashSet<Uuid> = graph
            .edges
            .iter()
            .filter(|e| e.relationship_name == "is_a" && doomed_entities.contains(&e.source_node_id))
            .map(|e| e.target_node_id)
            .filter(|t| type_ids.contains(t) && !surviving_types.contains(t))
            .collect();

        let mut doomed_nodes: HashSet<Uuid> = HashSet::new();
        doomed_nodes.insert(item.id);
        doomed_nodes.extend(&chunks);
        doomed_nodes.extend(&summaries);
        doomed_nodes.extend(&doomed_entities);
        doomed_nodes.extend(&doomed_types);

        // Relations: drop this document from their supporters; delete those
        // left with none. A kept relation whose text is this document's words
        // gets a text of the names alone.
        let name_of = |id: &Uuid| {
            graph.nodes.iter().find(|n| n.id == *id).and_then(|n| prop_str(n, "name")).unwrap_or("").to_string()
        };
        let mut deleted_edges: Vec<&Edge> = Vec::new();
        let mut dropped_relations: Vec<EdgeKey> = Vec::new();
        let mut rewritten: Vec<Edge> = Vec::new();
        let mut reworded: Vec<Edge> = Vec::new();
        for e in &graph.edges {
            if doomed_nodes.contains(&e.source_node_id) || doomed_nodes.contains(&e.target_node_id) {
                deleted_edges.push(e);
                continue;
            }
            if !is_relation(e) {
                continue;
            }
            let mut docs: BTreeSet<String> = edge_document_ids(e);
            if docs.remove(&doc_key) {
                if docs.is_empty() {
                    dropped_relations.push((e.source_node_id, e.relationship_name.clone(), e.target_node_id));
                    deleted_edges.push(e);
                } else {
                    let mut kept = e.clone();
                    if kept.properties.get(TEXT_DOCUMENT_ID).and_then(Value::as_str) == Some(doc_key.as_str()) {
                        let text = default_edge_text(
                            &name_of(&e.source_node_id),
                            &e.relationship_name,
                            &name_of(&e.target_node_id),
                        );
                        kept.edge_text = Some(text);
                        kept.properties.insert(TEXT_DOCUMENT_ID.into(), Value::Null);
                        // Reworded first, still asserted by this document.
                        reworded.push(kept.clone());
                    }
                    kept.properties.insert("document_ids".into(), json!(docs.into_iter().collect::<Vec<_>>()));
                    rewritten.push(kept);
                }
            }
        }
        let described = descriptions_without(&graph, &chunks, &mentioned, &doomed_entities);

        let triplets: Vec<Uuid> = deleted_edges
            .iter()
            .filter(|e| is_relation(e))
            .map(|e| ids::edge_object_id(e.source_node_id, &e.relationship_name, e.target_node_id))
            .collect();
        let as_vec = |s: &HashSet<Uuid>| s.iter().copied().collect::<Vec<_>>();

        // What the document said about what outlives it goes first, before
        // the item is marked: the descriptions of entities other documents
        // still mention, and the words of relations it shared with others.
        // (A forget killed before it marks the item leaves the document
        // itself whole, and these words already gone.)
        if !described.is_empty() {
            let rows = described
                .iter()
                .map(|n| {
                    let description = prop_str(n, "description").unwrap_or("");
                    entity_row(n.id, n.name().unwrap_or(""), description, &n.tags())
                })
                .collect();
            self.embed_and_upsert(dataset.id, ENTITY_NAME, &self.embedder.spec(), rows).await?;
            self.graph.upsert_nodes(dataset.id, &described).await?;
        }
        self.graph.upsert_edges(dataset.id, &reworded).await?;

        // Hidden from searches before anything is deleted, and until the
        // item is gone: a forget killed midway shows nothing of the document,
        // and running it again finishes it (crate::visibility).
        let mut hidden = as_vec(&doomed_nodes);
        hidden.extend(
            deleted_edges.iter().map(|e| ids::edge_object_id(e.source_node_id, &e.relationship_name, e.target_node_id)),
        );
        self.relational.data.begin_forget(dataset.id, item.id, &hidden).await?;
        self.bump_data_version(dataset.id).await?;

        self.graph.upsert_edges(dataset.id, &rewritten).await?;

        // Vectors, then graph; the data item goes last so a failure can be retried.
        self.vectors.delete(dataset.id, DOCUMENT_CHUNK_TEXT, &as_vec(&chunks)).await?;
        self.vectors.delete(dataset.id, TEXT_SUMMARY_TEXT, &as_vec(&summaries)).await?;
        self.vectors.delete(dataset.id, TEXT_DOCUMENT_NAME, &[item.id]).await?;
        self.vectors.delete(dataset.id, ENTITY_NAME, &as_vec(&doomed_entities)).await?;
        self.vectors.delete(dataset.id, ENTITY_TYPE_NAME, &as_vec(&doomed_types)).await?;
        self.vectors.delete(dataset.id, TRIPLET_TEXT, &triplets).await?;
        self.graph.delete_nodes(dataset.id, &as_vec(&doomed_nodes)).await?;
        self.graph.delete_edges(dataset.id, &dropped_relations).await?;
        // Every EdgeType row that disagrees with the graph now: the texts
        // this forget removed or reworded, and those of an earlier attempt
        // that was killed (they are no longer known).
        self.refresh_derived_indexes(&dataset, &BTreeSet::new(), true).await?;
        // Session answers that used a deleted node or edge go with it.
        if let Some(sessions) = &self.sessions {
            let mut gone = as_vec(&doomed_nodes);
            gone.extend(
                deleted_edges
                    .iter()
                    .map(|e| ids::edge_object_id(e.source_node_id, &e.relationship_name, e.target_node_id)),
            );
            sessions.forget_elements(dataset.id, &gone).await?;
        }
        self.relational.data.delete_data(dataset.id, item.id).await?;

        let nodes_deleted = graph.nodes.iter().filter(|n| doomed_nodes.contains(&n.id)).count();
        self.bump_data_version(dataset.id).await?;
        Ok(ForgetOutcome {
            dataset_name: dataset.name,
            document_name: Some(item.name),
            nodes_deleted,
            edges_deleted: deleted_edges.len(),
        })
    }

    async fn find_item(&self, dataset: &Dataset, document: &str) -> Result<DataItem> {
        let items = self.relational.data.list_data(dataset.id).await?;
        let by_id = Uuid::parse_str(document).ok();
        let mut matches: Vec<DataItem> =
            items.into_iter().filter(|i| Some(i.id) == by_id || i.name == document).collect();
        if matches.len() > 1 {
            return Err(RecallError::invalid_input(format!(
                "{} documents in dataset '{}' are named '{document}': pass the data id instead.",
                matches.len(),
                dataset.name
            )));
        }
        matches.pop().ok_or_else(|| {
            RecallError::NotFound(format!("Document '{document}' not found in dataset '{}'.", dataset.name))
        })
    }
}

/// The entities `chunks` mention that outlive them (mentioned, not doomed),
/// with what those chunks alone added to their descriptions taken out; only
/// those whose description changes.
fn descriptions_without(
    graph: &Subgraph,
    chunks: &HashSet<Uuid>,
    mentioned: &HashSet<Uuid>,
    doomed: &HashSet<Uuid>,
) -> Vec<Node> {
    let mut into: HashMap<Uuid, Vec<&Edge>> = HashMap::new();
    for e in graph.edges.iter().filter(|e| e.relationship_name == "contains" && mentioned.contains(&e.target_node_id)) {
        into.entry(e.target_node_id).or_default().push(e);
    }
    graph
        .nodes
        .iter()
        .filter(|n| mentioned.contains(&n.id) && !doomed.contains(&n.id))
        .filter_map(|n| {
            let contains = into.get(&n.id)?;
            let description = description_without(n, contains.iter().copied(), |chunk| chunks.contains(chunk))?;
            let mut updated = n.clone();
            updated.properties.insert("description".into(), json!(description));
            Some(updated)
        })
        .collect()
}
