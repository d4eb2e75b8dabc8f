//! The cognify stage: chunks → extracted entities and relations → the graph
//! of docs/ingestion.md, "The graph" and its vector collections, in batches.
//!
//! Every id is deterministic (Cognee's uuid5 formulas) and every write an
//! upsert, so a failed batch can be retried without duplicates. A batch
//! writes vectors first and graph second; if it fails, the chunk-level rows
//! it wrote (chunks, summaries, documents) are removed again, so a failed run
//! leaves no searchable chunk behind.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use futures::{stream, StreamExt, TryStreamExt};
use recall_core::model::collections::{
    DOCUMENT_CHUNK_TEXT, EDGE_TYPE_RELATIONSHIP_NAME, ENTITY_NAME, ENTITY_TYPE_NAME, TEXT_DOCUMENT_NAME,
    TEXT_SUMMARY_TEXT, TRIPLET_TEXT,
};
use recall_core::model::node_types;
use recall_core::ports::{EdgeKey, EdgeProjection, GraphExtractor, GraphStore, Summarizer, VectorRecord};
use recall_core::{
    ids, normalise_entity_name, DataItem, DataPointBase, Dataset, DatasetId, Document, DocumentChunk, Edge,
    KnowledgeGraph, Node, RecallError, Result, TextSummary,
};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::chunking::chunk_text;
use super::global_context::{IndexChange, RunningSpreads};
use super::graph_rows::{
    counted_text, default_edge_text, entity_row, payload, prop_str, EmbedRow, MENTIONS_PREFIX, TEXT_DOCUMENT_ID,
};
use super::progress::RememberProgress;
use crate::Engine;

/// An item to cognify and its text.
pub(crate) struct PendingItem {
    pub item: DataItem,
    pub text: String,
}

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CognifyStats {
    pub items: usize,
    pub chunks: usize,
}

/// Chunks a remember writes between two refreshes of the derived indexes
/// (EdgeType counts, the global context index): a refresh reads, embeds and
/// writes in proportion to what changed since the last one, so refreshing
/// only at the end made a remember's memory grow with its size (2.3 GiB at
/// 20 000 chunks in one call).
pub const INDEX_REFRESH_CHUNKS: usize = 2_000;

/// Longest merged entity description.
const MAX_DESCRIPTION: usize = 1000;

/// `relationship_name` normalisation: lower case, spaces → `_`, apostrophes removed.
fn normalise_relationship(name: &str) -> String {
    ids::norm(name.trim())
}

fn merge_description(existing: &str, new: &str) -> String {
    let (existing, new) = (existing.trim(), new.trim());
    if new.is_empty() || existing.contains(new) {
        return existing.to_string();
    }
    if existing.is_empty() {
        return new.to_string();
    }
    let merged = format!("{existing} {new}");
    if merged.chars().count() > MAX_DESCRIPTION {
        existing.to_string()
    } else {
        merged
    }
}

struct EntityAcc {
    name: String,
    description: String,
    type_id: Uuid,
    type_name: String,
    belongs_to_set: Vec<String>,
}

/// Everything one batch writes.
#[derive(Default)]
struct BatchGraph {
    documents: Vec<Document>,
    chunks: Vec<DocumentChunk>,
    summaries: Vec<TextSummary>,
    entities: BTreeMap<Uuid, EntityAcc>,
    types: BTreeMap<Uuid, String>,
    /// Structural edges, by key.
    edges: BTreeMap<(Uuid, String, Uuid), Edge>,
    /// Extracted relations, by key, with the documents asserting them.
    relations: BTreeMap<(Uuid, String, Uuid), (Edge, BTreeSet<String>)>,
}

impl BatchGraph {
    fn add_edge(&mut self, edge: Edge) {
        let key = (edge.source_node_id, edge.relationship_name.clone(), edge.target_node_id);
        self.edges.entry(key).or_insert(edge);
    }

    /// Adds one chunk's extraction (docs/ingestion.md, "The graph").
    fn add_extraction(&mut self, chunk: &DocumentChunk, kg: &KnowledgeGraph) {
        let mut local: HashMap<&str, Uuid> = HashMap::new();
        // Same-name nodes within one chunk that differ in type get their own ids.
        let mut seen_in_chunk: HashMap<String, String> = HashMap::new();
        for (ordinal, node) in kg.nodes.iter().enumerate() {
            let name = normalise_entity_name(&node.name);
            if name.is_empty() {
                continue;
            }
            let type_name = {
                let t = normalise_entity_name(&node.node_type);
                if t.is_empty() {
                    "entity".to_string()
                } else {
                    t
                }
            };
            let id = match seen_in_chunk.get(&name) {
                Some(t) if *t != type_name => {
                    ids::id_for("Entity", &[&name, &chunk.base.id.to_string(), &ordinal.to_string()])
                }
                _ => ids::id_for("Entity", &[&name]),
            };
            seen_in_chunk.entry(name.clone()).or_insert_with(|| type_name.clone());
            local.insert(node.id.as_str(), id);
            let type_id = ids::id_for("EntityType", &[&type_name]);
            self.types.insert(type_id, type_name.clone());
            let acc = self.entities.entry(id).or_insert_with(|| EntityAcc {
                name: name.clone(),
                description: String::new(),
                type_id,
                type_name: type_name.clone(),
                belongs_to_set: chunk.base.belongs_to_set.clone(),
            });
            acc.description = merge_description(&acc.description, &node.description);
            let description = node.description.trim();
            let contains_text = if description.is_empty() {
                default_edge_text(&chunk.text, "contains", &name)
            } else {
                format!("{MENTIONS_PREFIX}{name}: {description}")
            };
            self.add_edge(Edge::new(chunk.base.id, "contains", id).with_text(contains_text));
        }
        for edge in &kg.edges {
            let (Some(&source), Some(&target)) =
                (local.get(edge.source_node_id.as_str()), local.get(edge.target_node_id.as_str()))
            else {
                continue;
            };
            let rel = normalise_relationship(&edge.relationship_name);
            if source == target || rel.is_empty() {
                continue;
            }
            let text = match edge.description.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
                Some(d) => d.to_string(),
                None => {
                    let name = |id: &Uuid| self.entities.get(id).map(|e| e.name.clone()).unwrap_or_default();
                    default_edge_text(&name(&source), &rel, &name(&target))
                }
            };
            let entry = self.relations.entry((source, rel.clone(), target)).or_insert_with(|| {
                let mut edge = Edge::new(source, &rel, target).with_text(text);
                // Whose words the text is: a forget of that document rewrites it.
                edge.properties.insert(TEXT_DOCUMENT_ID.into(), json!(chunk.document_id.to_string()));
                (edge, BTreeSet::new())
            });
            entry.1.insert(chunk.document_id.to_string());
        }
    }
}

impl Engine {
    /// Cognifies pending items in batches of about `chunks_per_batch` chunks,
    /// marking each batch's items completed once all its writes succeed, and
    /// refreshes the dataset's derived indexes for what the batches wrote:
    /// after every `index_refresh_chunks` chunks (so a large remember holds
    /// a window's changes, not the whole run's) and at the end, where, when
    /// `recount_all` (an earlier run was interrupted, and the texts it wrote
    /// are not known), every stale edge text is recounted too.
    pub(crate) async fn cognify_pending(
        &self,
        dataset: &Dataset,
        pending: Vec<PendingItem>,
        progress: &dyn RememberProgress,
        recount_all: bool,
    ) -> Result<CognifyStats> {
        let mut stats = CognifyStats::default();
        let mut change = IndexChange::default();
        let mut running = RunningCounts::default();
        let mut batch: Vec<(PendingItem, Vec<super::chunking::TextChunk>)> = Vec::new();
        let mut batch_chunks = 0;
        let mut since_refresh = 0;
        let budget = self.config.chunks_per_batch.max(1);
        let mut pending = pending.into_iter().peekable();
        while let Some(item) = pending.next() {
            let chunks = chunk_text(&item.text, self.config.chunk_size);
            batch_chunks += chunks.len();
            batch.push((item, chunks));
            if batch_chunks >= budget || pending.peek().is_none() {
                let items: Vec<_> = std::mem::take(&mut batch);
                batch_chunks = 0;
                let written = self.write_batch(dataset.id, &items, &mut change).await?;
                // Completed and visible together (crate::visibility).
                let ids: Vec<Uuid> = items.iter().map(|(p, _)| p.item.id).collect();
                self.relational.data.complete_data(dataset.id, &ids).await?;
                change.added.extend(ids);
                for (p, _) in &items {
                    progress.item_done(&p.item.name);
                }
                stats.items += items.len();
                stats.chunks += written;
                since_refresh += written;
                if since_refresh >= self.config.index_refresh_chunks.max(1) && pending.peek().is_some() {
                    self.refresh_derived_indexes(dataset, &std::mem::take(&mut change), false, Some(&mut running))
                        .await?;
                    since_refresh = 0;
                }
            }
        }
        // The last window counts its edge texts from the store: a text two
        // writers of one dataset raced on is repaired by the next write.
        running.edge_types.clear();
        self.refresh_derived_indexes(dataset, &change, recount_all, Some(&mut running)).await?;
        Ok(stats)
    }

    /// Writes one batch; on failure removes the chunk-level rows it may have written.
    async fn write_batch(
        &self,
        dataset: DatasetId,
        items: &[(PendingItem, Vec<super::chunking::TextChunk>)],
        change: &mut IndexChange,
    ) -> Result<usize> {
        let mut graph = BatchGraph::default();
        for (pending, chunks) in items {
            let item = &pending.item;
            let document = Document {
                base: DataPointBase::new(item.id),
                document_type: node_types::TEXT_DOCUMENT.into(),
                name: item.name.clone(),
                raw_data_location: item.raw_data_location.clone(),
                mime_type: item.mime_type.clone(),
                external_metadata: None,
            };
            let mut occurrences: HashMap<String, usize> = HashMap::new();
            for c in chunks {
                let hash = ids::text_sha256(&c.text);
                let n = occurrences.entry(hash.clone()).or_insert(0);
                let id = ids::chunk_id(document.base.id, &hash, *n);
                *n += 1;
                graph.chunks.push(DocumentChunk {
                    base: DataPointBase::new(id),
                    text: c.text.clone(),
                    chunk_size: c.chunk_size,
                    chunk_index: c.chunk_index,
                    cut_type: c.cut_type,
                    content_hash: hash,
                    document_id: document.base.id,
                    document_name: document.name.clone(),
                });
            }
            graph.documents.push(document);
        }
        let result = self.write_batch_inner(dataset, &mut graph, change).await;
        if result.is_err() {
            self.remove_chunk_level_rows(dataset, &graph).await;
        }
        result
    }

    async fn write_batch_inner(
        &self,
        dataset: DatasetId,
        graph: &mut BatchGraph,
        change: &mut IndexChange,
    ) -> Result<usize> {
        // Extraction and summaries: bounded parallelism across chunks.
        let concurrency = self.config.extraction_concurrency.max(1);
        let extractor = self.extractor.clone();
        let summarizer = self.summarizer.clone();
        let texts: Vec<String> = graph.chunks.iter().map(|c| c.text.clone()).collect();
        // Each step a boxed `Send` future: spawned callers (the HTTP
        // server's background remember) need the whole remember to be `Send`.
        let results: Vec<(KnowledgeGraph, String)> = stream::iter(texts)
            .map(|text| extract_and_summarize(extractor.clone(), summarizer.clone(), text))
            .buffered(concurrency)
            .try_collect()
            .await?;

        let chunks = std::mem::take(&mut graph.chunks);
        for (chunk, (kg, summary)) in chunks.iter().zip(&results) {
            graph.add_extraction(chunk, kg);
            if !summary.trim().is_empty() {
                let s = TextSummary::new(chunk.base.id, summary.trim().to_string());
                graph.add_edge(Edge::new(s.base.id, "made_from", chunk.base.id).with_text(default_edge_text(
                    &s.text,
                    "made_from",
                    &chunk.text,
                )));
                graph.summaries.push(s);
            }
        }
        let doc_names: HashMap<Uuid, String> = graph.documents.iter().map(|d| (d.base.id, d.name.clone())).collect();
        for chunk in &chunks {
            if let Some(name) = doc_names.get(&chunk.document_id) {
                graph.add_edge(Edge::new(chunk.base.id, "is_part_of", chunk.document_id).with_text(default_edge_text(
                    &chunk.text,
                    "is_part_of",
                    name,
                )));
            }
        }
        graph.chunks = chunks;

        // Merge with what the dataset already holds: descriptions, first-seen
        // types, and the documents asserting each relation.
        let entity_ids: Vec<Uuid> = graph.entities.keys().copied().collect();
        let existing: HashMap<Uuid, Node> =
            self.graph.get_nodes(dataset, &entity_ids).await?.into_iter().map(|n| (n.id, n)).collect();
        // Entities whose `is_a` edge the dataset already has: the type their
        // node records, written with that edge.
        let mut typed = HashSet::new();
        for (id, acc) in graph.entities.iter_mut() {
            if let Some(node) = existing.get(id) {
                acc.description = merge_description(prop_str(node, "description").unwrap_or(""), &acc.description);
                if let (Some(t), Some(tn)) = (prop_str(node, "entity_type"), prop_str(node, "type_name")) {
                    if let Ok(t) = Uuid::parse_str(t) {
                        acc.type_id = t;
                        acc.type_name = tn.to_string();
                        typed.insert(*id);
                    }
                }
            }
        }
        for acc in graph.entities.values() {
            graph.types.insert(acc.type_id, acc.type_name.clone());
        }
        let entity_type_edges: Vec<Edge> = graph
            .entities
            .iter()
            .map(|(id, acc)| {
                Edge::new(*id, "is_a", acc.type_id).with_text(default_edge_text(&acc.name, "is_a", &acc.type_name))
            })
            .collect();
        for e in entity_type_edges {
            graph.add_edge(e);
        }
        // The batch's relations the dataset already holds, by key: not every
        // edge between two of the batch's entities (popular entities have
        // many), and not their documents (a list that grows with the
        // dataset): the write adds this batch's to them.
        let relation_keys: Vec<EdgeKey> = graph.relations.keys().cloned().collect();
        let existing_relations =
            self.graph.ranking().get_edges(dataset, &relation_keys, EdgeProjection::Only(&[TEXT_DOCUMENT_ID])).await?;
        let mut known_relations = HashSet::new();
        for edge in existing_relations {
            let key = (edge.source_node_id, edge.relationship_name.clone(), edge.target_node_id);
            if let Some((new_edge, _)) = graph.relations.get_mut(&key) {
                // The first description of a fact wins.
                new_edge.edge_text = edge.edge_text.clone();
                let author = edge.properties.get(TEXT_DOCUMENT_ID).cloned().unwrap_or(Value::Null);
                new_edge.properties.insert(TEXT_DOCUMENT_ID.into(), author);
                known_relations.insert(key);
            }
        }
        self.quarantine_batch(dataset, graph, &existing, &known_relations).await?;
        let existing_entities: HashSet<Uuid> = existing.into_keys().collect();

        // Vectors first.
        let spec = self.embedder.spec();
        let chunk_rows: Vec<EmbedRow> = graph
            .chunks
            .iter()
            .map(|c| (c.base.id, c.text.clone(), chunk_payload(c), c.base.belongs_to_set.clone()))
            .collect();
        let doc_rows = graph
            .documents
            .iter()
            .map(|d| {
                (d.base.id, d.name.clone(), payload(d.base.id, &d.name, &[("type", json!(d.document_type))]), vec![])
            })
            .collect();
        let entity_rows =
            graph.entities.iter().map(|(id, e)| entity_row(*id, &e.name, &e.description, &e.belongs_to_set)).collect();
        let type_rows = graph
            .types
            .iter()
            .map(|(id, name)| (*id, name.clone(), payload(*id, name, &[("type", json!("EntityType"))]), vec![]))
            .collect();
        let chunk_by_id: HashMap<Uuid, &DocumentChunk> = graph.chunks.iter().map(|c| (c.base.id, c)).collect();
        let summary_rows = graph
            .summaries
            .iter()
            .map(|s| {
                let mut extra =
                    vec![("source_chunk_id", json!(s.source_chunk_id.to_string())), ("type", json!("TextSummary"))];
                if let Some(c) = chunk_by_id.get(&s.source_chunk_id) {
                    extra.push(("document_id", json!(c.document_id.to_string())));
                    extra.push(("document_name", json!(c.document_name)));
                    extra.push(("chunk_index", json!(c.chunk_index)));
                }
                (s.base.id, s.text.clone(), payload(s.base.id, &s.text, &extra), vec![])
            })
            .collect();
        self.embed_and_upsert(dataset, DOCUMENT_CHUNK_TEXT, &spec, chunk_rows).await?;
        self.embed_and_upsert(dataset, TEXT_DOCUMENT_NAME, &spec, doc_rows).await?;
        self.embed_and_upsert(dataset, ENTITY_NAME, &spec, entity_rows).await?;
        self.embed_and_upsert(dataset, ENTITY_TYPE_NAME, &spec, type_rows).await?;
        self.embed_and_upsert(dataset, TEXT_SUMMARY_TEXT, &spec, summary_rows).await?;
        if self.config.triplet_embedding {
            let triplet_rows = graph
                .relations
                .values()
                .map(|(e, _)| {
                    let name = |id: &Uuid| graph.entities.get(id).map(|x| x.name.clone()).unwrap_or_default();
                    let text = format!(
                        "{} -> {} -> {}",
                        name(&e.source_node_id),
                        e.relationship_name,
                        name(&e.target_node_id)
                    );
                    let id = ids::edge_object_id(e.source_node_id, &e.relationship_name, e.target_node_id);
                    let extra = [
                        ("from_node_id", json!(e.source_node_id.to_string())),
                        ("to_node_id", json!(e.target_node_id.to_string())),
                        ("relationship_name", json!(e.relationship_name)),
                        ("type", json!("Triplet")),
                    ];
                    (id, text.clone(), payload(id, &text, &extra), vec![])
                })
                .collect();
            self.embed_and_upsert(dataset, TRIPLET_TEXT, &spec, triplet_rows).await?;
        }

        // Then the graph.
        let mut nodes = Vec::new();
        for d in &graph.documents {
            nodes.push(Node::from_data_point(d.base.id, &d.document_type, d)?);
        }
        for c in &graph.chunks {
            nodes.push(Node::from_data_point(c.base.id, node_types::DOCUMENT_CHUNK, c)?);
        }
        for s in &graph.summaries {
            nodes.push(Node::from_data_point(s.base.id, node_types::TEXT_SUMMARY, s)?);
        }
        for (id, name) in &graph.types {
            let t = recall_core::EntityType {
                base: DataPointBase::new(*id),
                name: name.clone(),
                description: name.clone(),
            };
            nodes.push(Node::from_data_point(*id, node_types::ENTITY_TYPE, &t)?);
        }
        // Entities the dataset already had get their merged descriptions
        // only after the edges: by then the `contains` edges that quote this
        // batch's part of each description exist, and a search can leave
        // that part out until the batch completes (crate::visibility).
        let mut merged = Vec::new();
        for (id, e) in &graph.entities {
            let mut base = DataPointBase::new(*id);
            base.belongs_to_set = e.belongs_to_set.clone();
            let entity = recall_core::Entity {
                base,
                name: e.name.clone(),
                description: e.description.clone(),
                entity_type: e.type_id,
            };
            let mut node = Node::from_data_point(*id, node_types::ENTITY, &entity)?;
            node.properties.insert("type_name".into(), json!(e.type_name));
            if existing_entities.contains(id) {
                merged.push(node);
            } else {
                nodes.push(node);
            }
        }
        self.graph.upsert_nodes(dataset, &nodes).await?;
        let edges: Vec<Edge> = graph.edges.values().cloned().collect();
        let relations: Vec<(Edge, Vec<String>)> =
            graph.relations.values().map(|(edge, docs)| (edge.clone(), docs.iter().cloned().collect())).collect();
        change
            .edge_texts
            .extend(edges.iter().chain(relations.iter().map(|(e, _)| e)).filter_map(counted_text).cloned());
        // New to the dataset: every edge of the batch's new chunks and
        // summaries, the `is_a` of an entity without one, a relation not known.
        let new_edges = edges
            .iter()
            .filter(|e| !(e.relationship_name == "is_a" && typed.contains(&e.source_node_id)))
            .chain(graph.relations.iter().filter(|(key, _)| !known_relations.contains(*key)).map(|(_, (e, _))| e));
        for text in new_edges.filter_map(counted_text) {
            *change.new_edges.entry(text.clone()).or_default() += 1;
        }
        self.graph.upsert_edges(dataset, &edges).await?;
        self.graph.upsert_stated_edges(dataset, &relations).await?;
        self.graph.upsert_nodes(dataset, &merged).await?;
        Ok(graph.chunks.len())
    }

    /// The edge texts whose EdgeType row disagrees with `graph` (the visible
    /// one): a text without its row or with a wrong count, and a row whose
    /// text no edge has any more.
    async fn stale_edge_texts(&self, dataset: DatasetId, counts: &HashMap<String, usize>) -> Result<BTreeSet<String>> {
        let mut rows: HashMap<String, u64> = HashMap::new();
        if self.vectors.has_collection(dataset, EDGE_TYPE_RELATIONSHIP_NAME).await? {
            // Every row of the dataset: a search without a limit, from any direction.
            let probe = vec![1.0; self.embedder.spec().dimensions];
            for row in self.vectors.search(dataset, EDGE_TYPE_RELATIONSHIP_NAME, &probe, None, None).await? {
                if let Some(text) = row.payload.get("text").and_then(Value::as_str) {
                    let n = row.payload.get("number_of_edges").and_then(Value::as_u64).unwrap_or(0);
                    rows.insert(text.to_string(), n);
                }
            }
        }
        let wrong =
            counts.iter().filter(|(text, n)| rows.get(*text) != Some(&(**n as u64))).map(|(text, _)| text.clone());
        let gone = rows.keys().filter(|text| !counts.contains_key(text.as_str())).cloned();
        Ok(wrong.chain(gone).collect())
    }

    /// Hides everything the batch adds — its documents, chunks and
    /// summaries, and the entities, types and relations new to the dataset —
    /// from searches before any of it is written, under the batch's first
    /// item; [`DataStore::complete_data`] lifts it when the batch's items
    /// complete, and a run killed in between leaves it hidden
    /// (crate::visibility).
    ///
    /// [`DataStore::complete_data`]: recall_core::ports::DataStore::complete_data
    async fn quarantine_batch(
        &self,
        dataset: DatasetId,
        graph: &BatchGraph,
        existing_entities: &HashMap<Uuid, Node>,
        known_relations: &HashSet<(Uuid, String, Uuid)>,
    ) -> Result<()> {
        let Some(first) = graph.documents.first().map(|d| d.base.id) else {
            return Ok(());
        };
        let type_ids: Vec<Uuid> = graph.types.keys().copied().collect();
        let known_types: HashSet<Uuid> =
            self.graph.get_nodes(dataset, &type_ids).await?.into_iter().map(|n| n.id).collect();
        let fresh: Vec<Uuid> = graph
            .documents
            .iter()
            .map(|d| d.base.id)
            .chain(graph.chunks.iter().map(|c| c.base.id))
            .chain(graph.summaries.iter().map(|s| s.base.id))
            .chain(graph.entities.keys().filter(|id| !existing_entities.contains_key(id)).copied())
            .chain(type_ids.into_iter().filter(|id| !known_types.contains(id)))
            .chain(
                graph
                    .relations
                    .keys()
                    .filter(|key| !known_relations.contains(*key))
                    .map(|(s, r, t)| ids::edge_object_id(*s, r, *t)),
            )
            .collect();
        self.relational.data.quarantine(dataset, first, &fresh).await?;
        // Readers re-read the quarantine when the version moves.
        self.bump_data_version(dataset).await
    }

    /// Embeds `rows` (id, text, payload, tags) in batches and upserts them.
    #[tracing::instrument(level = "debug", skip_all, fields(collection = collection, rows = rows.len()))]
    pub(crate) async fn embed_and_upsert(
        &self,
        dataset: DatasetId,
        collection: &str,
        spec: &recall_core::ports::EmbeddingSpec,
        rows: Vec<EmbedRow>,
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.vectors.ensure_collection(dataset, collection, spec).await?;
        let records = self.embed_rows(rows).await?;
        self.vectors.upsert(dataset, collection, records).await
    }

    /// Embeds `rows` in batches of the embedder's size.
    pub(crate) async fn embed_rows(&self, rows: Vec<EmbedRow>) -> Result<Vec<VectorRecord>> {
        let mut records = Vec::with_capacity(rows.len());
        for batch in rows.chunks(self.embedder.batch_size().max(1)) {
            let texts: Vec<String> = batch.iter().map(|r| r.1.clone()).collect();
            let vectors = self.embedder.embed(&texts).await?;
            if vectors.len() != batch.len() {
                return Err(RecallError::Provider(format!(
                    "embedder returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                )));
            }
            for ((id, _, payload, tags), vector) in batch.iter().cloned().zip(vectors) {
                records.push(VectorRecord { id, vector, payload, belongs_to_set: tags });
            }
        }
        Ok(records)
    }

    /// Best-effort removal of a failed batch's chunks, summaries and documents.
    async fn remove_chunk_level_rows(&self, dataset: DatasetId, graph: &BatchGraph) {
        let chunk_ids: Vec<Uuid> = graph.chunks.iter().map(|c| c.base.id).collect();
        let summary_ids: Vec<Uuid> = chunk_ids.iter().map(|id| Uuid::new_v5(id, b"TextSummary")).collect();
        let doc_ids: Vec<Uuid> = graph.documents.iter().map(|d| d.base.id).collect();
        let mut all: Vec<Uuid> = chunk_ids.clone();
        all.extend(&summary_ids);
        all.extend(&doc_ids);
        for (collection, ids) in
            [(DOCUMENT_CHUNK_TEXT, &chunk_ids), (TEXT_SUMMARY_TEXT, &summary_ids), (TEXT_DOCUMENT_NAME, &doc_ids)]
        {
            if let Err(e) = self.vectors.delete(dataset, collection, ids).await {
                tracing::warn!(error = %e, collection, "could not remove rows of a failed batch");
            }
        }
        if let Err(e) = self.graph.delete_nodes(dataset, &all).await {
            tracing::warn!(error = %e, "could not remove nodes of a failed batch");
        }
    }

    /// Counts the EdgeType rows of the change's edge texts on the visible
    /// graph (one row per distinct edge text, `number_of_edges` its
    /// multiplicity; a text that no longer occurs loses its row), then
    /// follows the change in the global context index. A text is counted by
    /// reading its edges, except in a remember's `running` counts, which
    /// hold it from the first window that touched it and add each later
    /// window's new edges. With `full` (after an interrupted run, a forget's
    /// retry, and improve), the visible graph is read whole: every row that
    /// disagrees with it is recounted too (the texts a killed run touched
    /// are not known) and the global context index is rebuilt.
    #[tracing::instrument(level = "debug", skip_all, fields(full = full))]
    pub(crate) async fn refresh_derived_indexes(
        &self,
        dataset: &Dataset,
        change: &IndexChange,
        full: bool,
        running: Option<&mut RunningCounts>,
    ) -> Result<()> {
        // Built from what searches may see: nothing of an unfinished item.
        let data = &self.relational.data;
        let quarantined = match change.forgotten {
            Some(item) => data.quarantined_except(dataset.id, item).await?,
            None => data.quarantined(dataset.id).await?,
        };
        let hidden = crate::visibility::Hidden::new(quarantined);
        if full {
            let graph = hidden.subgraph(self.graph.get_graph(dataset.id).await?);
            let counts = edge_text_counts(graph.edges.iter());
            let mut texts = change.edge_texts.clone();
            texts.extend(self.stale_edge_texts(dataset.id, &counts).await?);
            self.write_edge_types(dataset.id, &texts, &counts).await?;
            return self.rebuild_global_context_index(dataset, &graph).await;
        }
        let known_mentions = change.mentions.clone().map(|mut rows| {
            hidden.keep_mentions(&mut rows);
            rows
        });
        let (graph, _) = crate::visibility::visible_ports(&self.graph, &self.vectors, hidden);
        let (edge_types, spreads) = match running {
            Some(run) => (Some(&mut run.edge_types), Some(&mut run.spreads)),
            None => (None, None),
        };
        let (texts, counts) = edge_type_counts(graph.as_ref(), dataset.id, change, edge_types).await?;
        self.write_edge_types(dataset.id, &texts, &counts).await?;
        self.update_global_context_index(dataset, graph.as_ref(), change, known_mentions, spreads).await
    }

    /// Writes the EdgeType rows of `touched` texts from `counts`; a text
    /// with no edge loses its row.
    async fn write_edge_types(
        &self,
        dataset: DatasetId,
        touched: &BTreeSet<String>,
        counts: &HashMap<String, usize>,
    ) -> Result<()> {
        if touched.is_empty() {
            return Ok(());
        }
        let mut rows = Vec::new();
        let mut gone = Vec::new();
        for text in touched {
            let id = ids::id_for("EdgeType", &[text]);
            match counts.get(text.as_str()) {
                Some(n) => rows.push((
                    id,
                    text.clone(),
                    payload(
                        id,
                        text,
                        &[
                            ("relationship_name", json!(text)),
                            ("number_of_edges", json!(n)),
                            ("type", json!("EdgeType")),
                        ],
                    ),
                    vec![],
                )),
                None => gone.push(id),
            }
        }
        self.embed_and_upsert(dataset, EDGE_TYPE_RELATIONSHIP_NAME, &self.embedder.spec(), rows).await?;
        if !gone.is_empty() {
            self.vectors.delete(dataset, EDGE_TYPE_RELATIONSHIP_NAME, &gone).await?;
        }
        Ok(())
    }
}

fn chunk_payload(chunk: &DocumentChunk) -> Map<String, Value> {
    payload(
        chunk.base.id,
        &chunk.text,
        &[
            ("document_id", json!(chunk.document_id.to_string())),
            ("document_name", json!(chunk.document_name)),
            ("chunk_index", json!(chunk.chunk_index)),
            ("chunk_size", json!(chunk.chunk_size)),
            ("cut_type", json!(chunk.cut_type.as_str())),
            ("importance_weight", json!(chunk.base.importance_weight)),
            ("belongs_to_set", json!(chunk.base.belongs_to_set)),
            ("type", json!("DocumentChunk")),
        ],
    )
}

/// The counts of a remember's derived rows, kept across its window
/// refreshes ([`crate::EngineConfig::index_refresh_chunks`]) so that a
/// window costs what it wrote, not what the dataset holds: the spreads of
/// the entities it touched ([`RunningSpreads`]) and the EdgeType counts.
/// Counting an edge text reads every edge with it, and a corpus whose texts
/// recur (a summary or a mention repeated across documents) touched most of
/// its texts in every window, so a large remember read most of the graph's
/// edges every 2 000 chunks.
#[derive(Debug, Default)]
pub(crate) struct RunningCounts {
    spreads: RunningSpreads,
    /// Per counted edge text: its visible edges.
    edge_types: HashMap<String, usize>,
}

/// The texts whose EdgeType rows `change` rewrites, and their counts (a
/// text without a count has no edge left). Without `running`, every text of
/// the change is counted from its edges. With it, a text it holds gets the
/// change's new edges added and is rewritten only if some were; a text it
/// does not hold yet is counted from its edges (the change's own included)
/// and kept.
async fn edge_type_counts(
    graph: &dyn GraphStore,
    dataset: DatasetId,
    change: &IndexChange,
    running: Option<&mut HashMap<String, usize>>,
) -> Result<(BTreeSet<String>, HashMap<String, usize>)> {
    let Some(run) = running else {
        let texts: Vec<String> = change.edge_texts.iter().cloned().collect();
        let edges = graph.edges_with_texts(dataset, &texts).await?;
        return Ok((change.edge_texts.clone(), edge_text_counts(edges.iter())));
    };
    let mut written = BTreeSet::new();
    for (text, added) in &change.new_edges {
        if let Some(n) = run.get_mut(text) {
            *n += added;
            written.insert(text.clone());
        }
    }
    let unknown: Vec<String> = change.edge_texts.iter().filter(|t| !run.contains_key(*t)).cloned().collect();
    let counted = edge_text_counts(graph.edges_with_texts(dataset, &unknown).await?.iter());
    for text in unknown {
        run.insert(text.clone(), counted.get(&text).copied().unwrap_or(0));
        written.insert(text);
    }
    let counts = written.iter().filter_map(|t| run.get(t).filter(|n| **n > 0).map(|n| (t.clone(), *n))).collect();
    Ok((written, counts))
}

/// How many edges carry each text, as EdgeType rows count them: every
/// edge but the global context index's own `summarized_in` plumbing
/// (rewritten after the counts).
fn edge_text_counts<'e>(edges: impl Iterator<Item = &'e Edge>) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for text in edges.filter_map(counted_text) {
        *counts.entry(text.clone()).or_default() += 1;
    }
    counts
}

/// One chunk's extraction and summary, run together.
fn extract_and_summarize(
    extractor: Arc<dyn GraphExtractor>,
    summarizer: Arc<dyn Summarizer>,
    text: String,
) -> futures::future::BoxFuture<'static, Result<(KnowledgeGraph, String)>> {
    Box::pin(async move {
        let (kg, summary) = futures::try_join!(extractor.extract(&text), summarizer.summarize(&text))?;
        Ok((kg, summary))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_merge_without_repeats() {
        assert_eq!(merge_description("", "A."), "A.");
        assert_eq!(merge_description("A.", "A."), "A.");
        assert_eq!(merge_description("A.", "B."), "A. B.");
        assert_eq!(merge_description("A. B.", "B."), "A. B.");
    }
}
