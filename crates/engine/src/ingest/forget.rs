//! `forget`: delete a document or a whole dataset, with everything derived
//! from it, so nothing deleted can come back in a later recall.

use std::collections::{BTreeSet, HashMap, HashSet};

use recall_core::model::collections::{
    DOCUMENT_CHUNK_TEXT, ENTITY_NAME, ENTITY_TYPE_NAME, TEXT_DOCUMENT_NAME, TEXT_SUMMARY_TEXT, TRIPLET_TEXT,
};
use recall_core::model::node_types;
use recall_core::ports::{EdgeKey, EdgeProjection, Mentions};
use recall_core::{
    ids, DataItem, DataStatus, Dataset, DatasetId, DatasetRef, Edge, Node, RecallError, Result, Subgraph, User,
    PROVENANCE,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tracing::Instrument;
use uuid::Uuid;

use super::global_context::IndexChange;
use super::graph_rows::{
    counted_text, default_edge_text, description_without, entity_row, ids_of_type, is_relation, prop_str,
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
        let dataset = self.access.deletable(user, &dataset.into()).await?;
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
        let dataset = self.access.deletable(user, &dataset.into()).await?;
        let item = self.find_item(&dataset, document).await?;
        self.forget_item(dataset, item).await
    }

    /// [`Engine::forget_document`] once the dataset and item are known (an
    /// update forgets the old version of a document this way).
    #[tracing::instrument(level = "debug", skip_all, fields(item = %item.id))]
    pub(crate) async fn forget_item(&self, dataset: Dataset, item: DataItem) -> Result<ForgetOutcome> {
        // A forget of an item already marked was interrupted.
        let retry = item.status == DataStatus::Forgetting;
        let doc_key = item.id.to_string();
        // A built document is found from its own edges; one a killed run
        // left half-written (its edges may be missing), or a forget to
        // finish, from the whole graph.
        let plan = if item.status == DataStatus::Completed {
            self.plan_forget_locally(dataset.id, &item).await?
        } else {
            ForgetPlan::from_graph(self.graph.get_graph(dataset.id).await?, &item)
        };
        let ForgetPlan { chunks, summaries, mentioned, doomed_entities, doomed_types, nodes_deleted, .. } = &plan;

        let mut doomed_nodes: HashSet<Uuid> = HashSet::new();
        doomed_nodes.insert(item.id);
        doomed_nodes.extend(chunks);
        doomed_nodes.extend(summaries);
        doomed_nodes.extend(doomed_entities);
        doomed_nodes.extend(doomed_types);

        // Relations: drop this document from their supporters; delete those
        // left with none. A kept relation whose text is this document's words
        // gets a text of the names alone.
        let name_of = |id: &Uuid| plan.entities.get(id).and_then(|n| prop_str(n, "name")).unwrap_or("").to_string();
        let mut deleted_edges: Vec<&Edge> = Vec::new();
        let mut dropped_relations: Vec<EdgeKey> = Vec::new();
        let mut rewritten: Vec<Edge> = Vec::new();
        let mut reworded: Vec<Edge> = Vec::new();
        let mut reworded_from: Vec<String> = Vec::new();
        for e in &plan.edges {
            if doomed_nodes.contains(&e.source_node_id) || doomed_nodes.contains(&e.target_node_id) {
                deleted_edges.push(e);
                continue;
            }
            if !is_relation(e) {
                continue;
            }
            let mut docs: BTreeSet<String> = e.provenance().into_iter().collect();
            if docs.remove(&doc_key) {
                if docs.is_empty() {
                    dropped_relations.push((e.source_node_id, e.relationship_name.clone(), e.target_node_id));
                    deleted_edges.push(e);
                } else {
                    let mut kept = e.clone();
                    if kept.properties.get(TEXT_DOCUMENT_ID).and_then(Value::as_str) == Some(doc_key.as_str()) {
                        reworded_from.extend(kept.edge_text.clone());
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
                    kept.properties.insert(PROVENANCE.into(), json!(docs.into_iter().collect::<Vec<_>>()));
                    rewritten.push(kept);
                }
            }
        }
        let described: Vec<Node> = plan
            .entities
            .values()
            .filter(|n| !doomed_entities.contains(&n.id))
            .filter_map(|n| {
                let contains = plan.contains.get(&n.id)?;
                let description = description_without(n, contains, |chunk| chunks.contains(chunk))?;
                let mut updated = n.clone();
                updated.properties.insert("description".into(), json!(description));
                Some(updated)
            })
            .collect();

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

        // Vectors, then graph; the data item goes last so a failure can be
        // retried. The collections are independent (each its own commit and
        // writer lock): deleted from together, their commits overlap.
        let deletes = [
            (DOCUMENT_CHUNK_TEXT, as_vec(chunks)),
            (TEXT_SUMMARY_TEXT, as_vec(summaries)),
            (TEXT_DOCUMENT_NAME, vec![item.id]),
            (ENTITY_NAME, as_vec(doomed_entities)),
            (ENTITY_TYPE_NAME, as_vec(doomed_types)),
            (TRIPLET_TEXT, triplets),
        ];
        futures::future::try_join_all(deletes.iter().filter(|(_, ids)| !ids.is_empty()).map(|(collection, ids)| {
            let span = tracing::debug_span!("delete_vectors", collection = *collection, rows = ids.len());
            self.vectors.delete(dataset.id, collection, ids).instrument(span)
        }))
        .await?;
        self.graph.delete_nodes(dataset.id, &as_vec(&doomed_nodes)).await?;
        self.graph.delete_edges(dataset.id, &dropped_relations).await?;
        // The EdgeType rows of the texts this forget removed or reworded, the
        // document's bucket, a fresh root; after an earlier attempt that was
        // killed (its texts are no longer known), every row that disagrees
        // with the graph.
        let mut change = IndexChange::default();
        change.edge_texts.extend(deleted_edges.iter().copied().filter_map(counted_text).cloned());
        change.edge_texts.extend(reworded.iter().filter_map(counted_text).cloned());
        change.edge_texts.extend(reworded_from);
        change.removed.insert(item.id);
        change.entities.extend(mentioned);
        change.forgotten = Some(item.id);
        // The touched entities' rows after the forget: those it read, but the
        // document's own.
        change.mentions =
            plan.mentions.as_ref().map(|rows| rows.iter().filter(|m| m.document != item.id).copied().collect());
        self.refresh_derived_indexes(&dataset, &change, retry, None).await?;
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

        self.bump_data_version(dataset.id).await?;
        Ok(ForgetOutcome {
            dataset_name: dataset.name,
            document_name: Some(item.name),
            nodes_deleted: *nodes_deleted,
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

/// The summaries among `nodes` of one of `chunks`.
fn summaries_of(nodes: &[Node], chunks: &HashSet<Uuid>) -> HashSet<Uuid> {
    nodes
        .iter()
        .filter(|n| n.node_type == node_types::TEXT_SUMMARY)
        .filter(|n| {
            prop_str(n, "source_chunk_id").and_then(|c| Uuid::parse_str(c).ok()).is_some_and(|c| chunks.contains(&c))
        })
        .map(|n| n.id)
        .collect()
}

/// What a forget of one document deletes and rewrites, read from the graph.
#[derive(Debug, Default)]
struct ForgetPlan {
    /// The document's chunks and their summaries.
    chunks: HashSet<Uuid>,
    summaries: HashSet<Uuid>,
    /// The entities its chunks mention, and those no other document does.
    mentioned: HashSet<Uuid>,
    doomed_entities: HashSet<Uuid>,
    /// Types left with no entity.
    doomed_types: HashSet<Uuid>,
    /// How many of the doomed nodes exist (the document node may not).
    nodes_deleted: usize,
    /// The mentioned entities' nodes, by id.
    entities: HashMap<Uuid, Node>,
    /// Every edge touching a doomed node, and every relation the document
    /// may assert among surviving entities (others may be included).
    edges: Vec<Edge>,
    /// The `contains` edges into a surviving entity whose description this
    /// document's chunks may have added to (all of them, every chunk's).
    contains: HashMap<Uuid, Vec<Edge>>,
    /// The mentioned entities' mention rows as read before the forget,
    /// when the plan read them (a locally planned forget).
    mentions: Option<Vec<Mentions>>,
}

impl ForgetPlan {
    /// From the dataset's whole graph: for an item a killed run left
    /// half-written, whose chunks its edges may not all lead to.
    fn from_graph(graph: Subgraph, item: &DataItem) -> Self {
        let doc_key = item.id.to_string();
        let chunks: HashSet<Uuid> = graph
            .nodes
            .iter()
            .filter(|n| n.node_type == node_types::DOCUMENT_CHUNK && prop_str(n, "document_id") == Some(&doc_key))
            .map(|n| n.id)
            .collect();
        let summaries = summaries_of(&graph.nodes, &chunks);
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
        let mut contains: HashMap<Uuid, Vec<Edge>> = HashMap::new();
        for e in
            graph.edges.iter().filter(|e| e.relationship_name == "contains" && mentioned.contains(&e.target_node_id))
        {
            contains.entry(e.target_node_id).or_default().push(e.clone());
        }
        let is_doomed = |id: &Uuid| {
            *id == item.id
                || chunks.contains(id)
                || summaries.contains(id)
                || doomed_entities.contains(id)
                || doomed_types.contains(id)
        };
        let nodes_deleted = graph.nodes.iter().filter(|n| is_doomed(&n.id)).count();
        let entities = graph.nodes.into_iter().filter(|n| mentioned.contains(&n.id)).map(|n| (n.id, n)).collect();
        ForgetPlan {
            chunks,
            summaries,
            mentioned,
            doomed_entities,
            doomed_types,
            nodes_deleted,
            entities,
            edges: graph.edges,
            contains,
            mentions: None,
        }
    }
}

impl Engine {
    /// Plans the forget of a built document from indexed reads of what it
    /// touches, never the whole graph (docs/ingestion.md, "forget"): its
    /// chunks by their `is_part_of` edges, their summaries and mentioned
    /// entities by the chunks' edges, which entities another document
    /// mentions by grouped counts, which types outlive it by `is_a` counts.
    /// A relation the document asserted joins two entities its chunks
    /// mention (both ends of an extracted relation are the chunk's own).
    #[tracing::instrument(level = "debug", skip_all)]
    async fn plan_forget_locally(&self, dataset: DatasetId, item: &DataItem) -> Result<ForgetPlan> {
        let graph = &*self.graph;
        let doc_key = item.id.to_string();
        let as_vec = |s: &HashSet<Uuid>| s.iter().copied().collect::<Vec<_>>();
        let ends = |edges: &[Edge], relationship: &str, pick: &dyn Fn(&Edge) -> Option<Uuid>| -> Vec<Uuid> {
            edges.iter().filter(|e| e.relationship_name == relationship).filter_map(pick).collect()
        };

        let document_edges = graph.edges_touching(dataset, &[item.id], EdgeProjection::Only(&[])).await?;
        let parts = ends(&document_edges, "is_part_of", &|e| (e.target_node_id == item.id).then_some(e.source_node_id));
        let chunks: HashSet<Uuid> = graph
            .get_nodes(dataset, &parts)
            .await?
            .iter()
            .filter(|n| n.node_type == node_types::DOCUMENT_CHUNK && prop_str(n, "document_id") == Some(&doc_key))
            .map(|n| n.id)
            .collect();
        let chunk_edges = graph.edges_touching(dataset, &as_vec(&chunks), EdgeProjection::Only(&[])).await?;
        let from_chunks = |relationship: &str, pick: &dyn Fn(&Edge) -> Uuid| -> Vec<Uuid> {
            ends(&chunk_edges, relationship, &|e| {
                (chunks.contains(&e.source_node_id) || chunks.contains(&e.target_node_id)).then(|| pick(e))
            })
        };
        let summary_ids = from_chunks("made_from", &|e| e.source_node_id);
        let summaries = summaries_of(&graph.get_nodes(dataset, &summary_ids).await?, &chunks);
        let mentioned_ids = from_chunks("contains", &|e| e.target_node_id);
        let entities: HashMap<Uuid, Node> = graph
            .get_nodes(dataset, &mentioned_ids)
            .await?
            .into_iter()
            .filter(|n| n.node_type == node_types::ENTITY)
            .map(|n| (n.id, n))
            .collect();
        let mentioned: HashSet<Uuid> = entities.keys().copied().collect();

        let mentions = graph.document_mentions(dataset, &as_vec(&mentioned)).await?;
        let still_supported: HashSet<Uuid> =
            mentions.iter().filter(|m| m.document != item.id).map(|m| m.entity).collect();
        let doomed_entities: HashSet<Uuid> = mentioned.difference(&still_supported).copied().collect();

        // A type goes when every `is_a` edge into it comes from a doomed entity.
        let entity_edges = graph.edges_touching(dataset, &as_vec(&doomed_entities), EdgeProjection::Only(&[])).await?;
        let mut doomed_is_a: HashMap<Uuid, u64> = HashMap::new();
        for e in entity_edges.iter().filter(|e| e.relationship_name == "is_a") {
            if doomed_entities.contains(&e.source_node_id) {
                *doomed_is_a.entry(e.target_node_id).or_default() += 1;
            }
        }
        let candidate_types: Vec<Uuid> = doomed_is_a.keys().copied().collect();
        let types: Vec<Node> = graph.get_nodes(dataset, &candidate_types).await?;
        let types: Vec<Uuid> = types.iter().filter(|n| n.node_type == node_types::ENTITY_TYPE).map(|n| n.id).collect();
        let doomed_types: HashSet<Uuid> = graph
            .count_edges_into(dataset, &types, "is_a")
            .await?
            .into_iter()
            .filter(|(t, total)| doomed_is_a.get(t).is_some_and(|d| d >= total))
            .map(|(t, _)| t)
            .collect();

        let mut doomed: HashSet<Uuid> = HashSet::from([item.id]);
        doomed.extend(&chunks);
        doomed.extend(&summaries);
        doomed.extend(&doomed_entities);
        doomed.extend(&doomed_types);
        let mut edges = graph.edges_touching(dataset, &as_vec(&doomed), EdgeProjection::All).await?;
        let surviving: Vec<Uuid> = mentioned.difference(&doomed_entities).copied().collect();
        edges.extend(
            graph
                .edges_between(dataset, &surviving, EdgeProjection::All)
                .await?
                .into_iter()
                .filter(|e| is_relation(e) && e.provenance().contains(&doc_key)),
        );
        let document_node = graph.get_nodes(dataset, &[item.id]).await?.len();
        let nodes_deleted = document_node + chunks.len() + summaries.len() + doomed_entities.len() + doomed_types.len();

        // Descriptions: only an entity that would change were every part
        // these chunks quote gone needs every chunk's `contains` edge read.
        let mut contains: HashMap<Uuid, Vec<Edge>> = HashMap::new();
        let ours: Vec<&Edge> = chunk_edges.iter().filter(|e| e.relationship_name == "contains").collect();
        let may_change: Vec<Uuid> = surviving
            .iter()
            .filter(|id| {
                entities.get(id).is_some_and(|n| description_without(n, ours.iter().copied(), |_| true).is_some())
            })
            .copied()
            .collect();
        for e in graph.edges_touching(dataset, &may_change, EdgeProjection::Only(&[])).await? {
            if e.relationship_name == "contains" && entities.contains_key(&e.target_node_id) {
                contains.entry(e.target_node_id).or_default().push(e);
            }
        }
        Ok(ForgetPlan {
            chunks,
            summaries,
            mentioned,
            doomed_entities,
            doomed_types,
            nodes_deleted,
            entities,
            edges,
            contains,
            mentions: Some(mentions),
        })
    }
}
