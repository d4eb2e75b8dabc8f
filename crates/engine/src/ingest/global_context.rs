//! The global context index (docs/ingestion.md), built without an LLM from the
//! entities already in the graph: one root summary per dataset (entity
//! types, the most widespread entities, the documents) and one bucket per
//! document (its characteristic entities by TF-IDF and the relations among
//! them). Rows are embedded once and mirrored into the shared routing
//! collection; their ids derive from the dataset id (root) and the data ids
//! (buckets), so routing can find a dataset's rows from relational metadata.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use recall_core::model::collections::{DATASET_ROUTING, GLOBAL_CONTEXT_SUMMARY_TEXT};
use recall_core::model::node_types;
use recall_core::ports::{EdgeKey, EdgeProjection, GraphStore, Mentions};
use recall_core::{ids, Dataset, DatasetId, Edge, Node, Result, Subgraph, PROVENANCE};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::graph_rows::{default_edge_text, is_relation, payload, prop_str, EmbedRow};
use crate::Engine;

/// Characteristic entities kept per bucket.
const BUCKET_ENTITIES: usize = 10;
/// Relations listed per bucket.
const BUCKET_RELATIONS: usize = 8;
const ROOT_TYPES: usize = 10;
const ROOT_ENTITIES: usize = 15;
const ROOT_DOCUMENTS: usize = 25;

/// Id of a dataset's root summary.
pub fn root_summary_id(dataset: DatasetId) -> Uuid {
    ids::id_for("GlobalContextSummary", &[&format!("root:{dataset}")])
}

/// Id of a document's bucket summary.
pub fn bucket_summary_id(dataset: DatasetId, document: Uuid) -> Uuid {
    ids::id_for("GlobalContextSummary", &[&format!("bucket:{dataset}:{document}")])
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SummaryRow {
    pub id: Uuid,
    pub text: String,
    pub is_root: bool,
    pub document_id: Option<Uuid>,
    pub entity_ids: Vec<Uuid>,
}

/// A relation edge and the ids of the documents that stated it (none: every document).
type StatedRelation<'g> = (&'g Edge, HashSet<&'g str>);

/// Relations by (source, target), each with the documents that stated it
/// (read once: a list can hold thousands of ids), so a bucket looks up the
/// pairs of its top entities instead of scanning every relation.
fn relations_by_pair<'g>(edges: impl Iterator<Item = &'g Edge>) -> HashMap<(Uuid, Uuid), Vec<StatedRelation<'g>>> {
    by_pair(edges.filter(|e| is_relation(e)).map(|e| {
        let docs: HashSet<&str> = e
            .properties
            .get(PROVENANCE)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        (e, docs)
    }))
}

/// Stated relations by (source, target).
fn by_pair<'g>(stated: impl Iterator<Item = StatedRelation<'g>>) -> HashMap<(Uuid, Uuid), Vec<StatedRelation<'g>>> {
    let mut relations: HashMap<(Uuid, Uuid), Vec<StatedRelation>> = HashMap::new();
    for (e, docs) in stated {
        relations.entry((e.source_node_id, e.target_node_id)).or_default().push((e, docs));
    }
    relations
}

/// A document's entities by TF-IDF (tf: the document's chunks mentioning
/// the entity; idf: ln((1+N)/(1+df)) + 1), best first, ties by name.
fn characteristic_entities(
    per_doc: &HashMap<Uuid, usize>,
    df: &HashMap<Uuid, usize>,
    n_docs: usize,
    name: &dyn Fn(&Uuid) -> String,
) -> Vec<(f64, String, Uuid)> {
    let mut scored: Vec<(f64, String, Uuid)> = per_doc
        .iter()
        .map(|(entity, n)| {
            let d = df.get(entity).copied().unwrap_or(1) as f64;
            let idf = ((1.0 + n_docs as f64) / (1.0 + d)).ln() + 1.0;
            (*n as f64 * idf, name(entity), *entity)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    scored.truncate(BUCKET_ENTITIES);
    scored
}

/// One document's bucket: its characteristic entities and the relations
/// among them that it stated (or that name no document), sorted.
fn bucket_row(
    dataset: DatasetId,
    doc: &Node,
    scored: &[(f64, String, Uuid)],
    relations: &HashMap<(Uuid, Uuid), Vec<StatedRelation>>,
    name: &dyn Fn(&Uuid) -> String,
) -> SummaryRow {
    let top: HashSet<Uuid> = scored.iter().map(|s| s.2).collect();
    let doc_key = doc.id.to_string();
    let mut facts: BTreeSet<String> = BTreeSet::new();
    let stated = top.iter().flat_map(|s| top.iter().map(move |t| (*s, *t)));
    for (e, docs) in stated.filter_map(|pair| relations.get(&pair)).flatten() {
        if docs.is_empty() || docs.contains(doc_key.as_str()) {
            let text = e.edge_text.clone().unwrap_or_else(|| {
                default_edge_text(&name(&e.source_node_id), &e.relationship_name, &name(&e.target_node_id))
            });
            facts.insert(text);
        }
    }
    let entities: Vec<&str> = scored.iter().map(|s| s.1.as_str()).collect();
    let mut text = format!(
        "Document '{}'. Characteristic entities: {}.",
        prop_str(doc, "name").unwrap_or(""),
        entities.join(", ")
    );
    if !facts.is_empty() {
        let facts: Vec<String> = facts.into_iter().take(BUCKET_RELATIONS).collect();
        text.push_str(&format!(" Relations: {}", facts.join(" ")));
    }
    SummaryRow {
        id: bucket_summary_id(dataset, doc.id),
        text,
        is_root: false,
        document_id: Some(doc.id),
        entity_ids: scored.iter().map(|s| s.2).collect(),
    }
}

/// Documents in name order ([`Node::cmp_by_name`]): the order a store's
/// `first_nodes_by_name` reads them in.
fn sort_documents(documents: &mut [&Node]) {
    documents.sort_by(|a, b| a.cmp_by_name(b));
}

/// The root: entity types by count, the most widespread entities, the
/// documents by name. `documents`: the dataset's `total` documents, or at
/// least their first [`ROOT_DOCUMENTS`], sorted ([`sort_documents`]).
fn root_row(
    dataset: &Dataset,
    (total, documents): (usize, &[&Node]),
    types: BTreeMap<String, usize>,
    widespread: &[Spread],
) -> SummaryRow {
    let mut types: Vec<(String, usize)> = types.into_iter().collect();
    types.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let doc_names: Vec<&str> = documents.iter().take(ROOT_DOCUMENTS).filter_map(|d| prop_str(d, "name")).collect();
    let mut root = format!("Dataset '{}': {} document(s).", dataset.name, total);
    if !types.is_empty() {
        let t: Vec<String> = types.iter().take(ROOT_TYPES).map(|(t, n)| format!("{t} ({n})")).collect();
        root.push_str(&format!(" Entity types: {}.", t.join(", ")));
    }
    if !widespread.is_empty() {
        let w: Vec<&str> = widespread.iter().map(|w| w.name.as_str()).collect();
        root.push_str(&format!(" Widespread entities: {}.", w.join(", ")));
    }
    root.push_str(&format!(" Documents: {}.", doc_names.join(", ")));
    SummaryRow {
        id: root_summary_id(dataset.id),
        text: root,
        is_root: true,
        document_id: None,
        entity_ids: widespread.iter().map(|w| w.id).collect(),
    }
}

/// One entity's spread: how many documents and chunks mention it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Spread {
    pub id: Uuid,
    pub name: String,
    pub documents: u64,
    pub mentions: u64,
}

impl Spread {
    /// Best first: more documents, then more mentions, then by name and id.
    fn order(a: &Spread, b: &Spread) -> std::cmp::Ordering {
        b.documents.cmp(&a.documents).then(b.mentions.cmp(&a.mentions)).then(a.name.cmp(&b.name)).then(a.id.cmp(&b.id))
    }

    fn key(&self) -> (u64, u64) {
        (self.documents, self.mentions)
    }
}

/// Entities kept in the root's ranking: more than it names, so a forget
/// that lowers a few of them seldom needs a full recount.
const SPREAD_KEPT: usize = 64;

/// The root's ranking of widespread entities, kept on the root node
/// (`widespread_ranking`) so a write re-ranks only the entities it touched:
/// the best [`SPREAD_KEPT`] entities, and `bound`, ranking at or above any
/// entity left out (none: every mentioned entity is listed). A remember
/// only raises counts and a forget only lowers them, so an entity left out
/// stays at or below `bound` until a write touches it (and then it is
/// counted again), and the ranking answers as long as its last named entry
/// ranks above the bound.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct WidespreadRanking {
    pub top: Vec<Spread>,
    pub bound: Option<Spread>,
}

impl WidespreadRanking {
    /// From every mentioned entity's spread.
    fn of(all: Vec<Spread>) -> Self {
        let mut ranking = Self::default();
        ranking.keep(all);
        ranking
    }

    /// Sorted `top`, cut to [`SPREAD_KEPT`]; what is cut lowers into the bound.
    fn keep(&mut self, mut top: Vec<Spread>) {
        top.retain(|s| s.documents > 0);
        top.sort_by(Spread::order);
        if top.len() > SPREAD_KEPT {
            let best_cut = top.swap_remove(SPREAD_KEPT);
            top.truncate(SPREAD_KEPT);
            self.bound = match self.bound.take() {
                Some(b) if Spread::order(&b, &best_cut).is_lt() => Some(b),
                _ => Some(best_cut),
            };
        }
        self.top = top;
    }

    /// Replaces the spreads of the `touched` entities by `fresh` (an entity
    /// touched but absent from `fresh` is mentioned nowhere any more).
    fn update(&mut self, touched: &HashSet<Uuid>, fresh: Vec<Spread>) {
        let mut top: Vec<Spread> =
            std::mem::take(&mut self.top).into_iter().filter(|s| !touched.contains(&s.id)).collect();
        top.extend(fresh);
        self.keep(top);
    }

    /// The root's widespread entities, or `None` when an entity left out
    /// might now rank among them (a full recount is due).
    fn named(&self) -> Option<&[Spread]> {
        let n = ROOT_ENTITIES.min(self.top.len());
        match &self.bound {
            None => Some(&self.top[..n]),
            Some(bound) if n == ROOT_ENTITIES && Spread::order(&self.top[n - 1], bound).is_lt() => Some(&self.top[..n]),
            Some(_) => None,
        }
    }
}

/// Spreads from mention rows, named by `name`.
fn spreads(rows: &[Mentions], name: &dyn Fn(&Uuid) -> String) -> Vec<Spread> {
    spreads_of(&tally(rows), name)
}

/// Spreads from per-entity counts, named by `name`; an entity no document
/// mentions has none.
fn spreads_of(counts: &Counts, name: &dyn Fn(&Uuid) -> String) -> Vec<Spread> {
    let mut out: Vec<Spread> = counts
        .iter()
        .filter(|(_, (documents, _))| *documents > 0)
        .map(|(id, (documents, mentions))| Spread {
            id: *id,
            name: name(id),
            documents: *documents,
            mentions: *mentions,
        })
        .collect();
    out.sort_by_key(|s| s.id);
    out
}

/// Computes the index rows from a dataset's graph, and the root's ranking.
pub(crate) fn plan_index(dataset: &Dataset, graph: &Subgraph) -> (Vec<SummaryRow>, WidespreadRanking) {
    let nodes: HashMap<Uuid, &Node> = graph.nodes.iter().map(|n| (n.id, n)).collect();
    let mut documents: Vec<&Node> = graph.nodes.iter().filter(|n| n.node_type == node_types::TEXT_DOCUMENT).collect();
    if documents.is_empty() {
        return (Vec::new(), WidespreadRanking::default());
    }
    sort_documents(&mut documents);
    let chunk_doc = chunk_documents(graph);
    // tf[doc][entity] = chunks of the document that mention the entity.
    let mut tf: HashMap<Uuid, HashMap<Uuid, usize>> = HashMap::new();
    for e in graph.edges.iter().filter(|e| e.relationship_name == "contains") {
        if let Some(doc) = chunk_doc.get(&e.source_node_id) {
            *tf.entry(*doc).or_default().entry(e.target_node_id).or_default() += 1;
        }
    }
    let mut mention_rows = Vec::new();
    let mut df: HashMap<Uuid, usize> = HashMap::new();
    for (doc, per_doc) in &tf {
        for (entity, n) in per_doc {
            *df.entry(*entity).or_default() += 1;
            mention_rows.push(Mentions { entity: *entity, document: *doc, chunks: *n as u64 });
        }
    }
    let name = |id: &Uuid| nodes.get(id).and_then(|n| prop_str(n, "name")).unwrap_or("").to_string();
    let relations = relations_by_pair(graph.edges.iter());

    let mut rows = Vec::new();
    for doc in &documents {
        let Some(per_doc) = tf.get(&doc.id) else { continue };
        let scored = characteristic_entities(per_doc, &df, documents.len(), &name);
        rows.push(bucket_row(dataset.id, doc, &scored, &relations, &name));
    }
    let mut types: BTreeMap<String, usize> = BTreeMap::new();
    for e in graph.edges.iter().filter(|e| e.relationship_name == "is_a") {
        *types.entry(name(&e.target_node_id)).or_default() += 1;
    }
    let ranking = WidespreadRanking::of(spreads(&mention_rows, &name));
    let widespread = ranking.named().unwrap_or_default();
    rows.insert(0, root_row(dataset, (documents.len(), &documents), types, widespread));
    (rows, ranking)
}

/// What a write changed, for the derived indexes to follow.
#[derive(Debug, Clone, Default)]
pub(crate) struct IndexChange {
    /// Edge texts whose EdgeType count may have changed.
    pub edge_texts: BTreeSet<String>,
    /// Per counted edge text, the edges the change added (a cognify knows
    /// which of its edges the dataset did not have; a forget adds none): a
    /// remember's window adds them to the counts it already holds
    /// ([`crate::ingest::cognify::RunningCounts`]).
    pub new_edges: HashMap<String, usize>,
    /// Documents written (their buckets are built).
    pub added: BTreeSet<Uuid>,
    /// Documents forgotten (their buckets go).
    pub removed: BTreeSet<Uuid>,
    /// Entities whose mentions changed besides those of `added`.
    pub entities: BTreeSet<Uuid>,
    /// The data item a forget has just deleted the rows of: its own
    /// quarantine hides nothing any more, so the refresh reads past it
    /// (only the other unfinished items' rows stay hidden).
    pub forgotten: Option<Uuid>,
    /// The `document_mentions` rows of `entities` as they stand after the
    /// write, when the write has them (a forget reads them to plan): the
    /// refresh takes them, quarantined rows left out, rather than counting
    /// again.
    pub mentions: Option<Vec<Mentions>>,
}

/// The spreads (documents, mentions) of the entities one remember has
/// touched, kept across its window refreshes
/// ([`crate::EngineConfig::index_refresh_chunks`]). Counting an entity's
/// mentions joins every `contains` edge into it with its chunk's document,
/// so counting them again at every window made a large remember quadratic
/// (in the bench corpus, where every window touches every entity, the join
/// read the whole graph's mentions every 2 000 chunks). An entity is
/// counted from the store the first time the run touches it; after that
/// the run adds its own documents' mentions, which are new documents (an
/// item's chunks are written in one batch). Another process writing the
/// same dataset meanwhile is not seen until the next remember or improve.
#[derive(Debug, Default)]
pub(crate) struct RunningSpreads(Counts);

/// Per entity: documents and chunks that mention it.
type Counts = HashMap<Uuid, (u64, u64)>;

/// Per-entity counts from mention rows.
fn tally(rows: &[Mentions]) -> Counts {
    let mut counts: Counts = HashMap::new();
    for m in rows {
        let c = counts.entry(m.entity).or_default();
        c.0 += 1;
        c.1 += m.chunks;
    }
    counts
}

/// The property of the root node holding its [`WidespreadRanking`].
const RANKING: &str = "widespread_ranking";

impl Engine {
    /// Rebuilds the whole index from the visible graph: rows whose text
    /// changed are written, rows that no longer belong are removed (the
    /// `global_context_index` stage of improve, and the repair after an
    /// interrupted write).
    pub(crate) async fn rebuild_global_context_index(&self, dataset: &Dataset, graph: &Subgraph) -> Result<()> {
        let (plan, ranking) = plan_index(dataset, graph);
        let existing: HashMap<Uuid, &Node> = graph
            .nodes
            .iter()
            .filter(|n| n.node_type == node_types::GLOBAL_CONTEXT_SUMMARY)
            .map(|n| (n.id, n))
            .collect();
        let planned: HashSet<Uuid> = plan.iter().map(|r| r.id).collect();
        let stale: Vec<Uuid> = existing.keys().filter(|id| !planned.contains(id)).copied().collect();
        self.delete_index_rows(dataset.id, &stale).await?;
        // A row is rewritten when its text changed, or when its edges are not
        // all there (a run killed between the row's node and its edges).
        let root_id = root_summary_id(dataset.id);
        let summaries_by_doc = summaries_by_document(graph);
        let linked: HashSet<(Uuid, Uuid)> = graph
            .edges
            .iter()
            .filter(|e| e.relationship_name == "summarized_in")
            .map(|e| (e.source_node_id, e.target_node_id))
            .collect();
        let linked_up = |r: &SummaryRow| match r.document_id {
            None => true,
            Some(doc) => {
                linked.contains(&(r.id, root_id))
                    && summaries_by_doc.get(&doc).into_iter().flatten().all(|s| linked.contains(&(*s, r.id)))
            }
        };
        let unchanged = |r: &SummaryRow| existing.get(&r.id).and_then(|n| prop_str(n, "text")) == Some(r.text.as_str());
        let changed: Vec<&SummaryRow> = plan.iter().filter(|r| !unchanged(r) || !linked_up(r)).collect();
        let stored_ranking = existing.get(&root_id).and_then(|n| n.properties.get(RANKING)).cloned();
        let ranking = (!plan.is_empty() && stored_ranking != Some(json!(ranking))).then_some(&ranking);
        self.write_index_rows(dataset, &changed, &summaries_by_doc, ranking, &plan).await
    }

    /// Follows a write: the EdgeType rows of the texts it touched, the
    /// buckets of the documents it added or removed, and a fresh root, all
    /// from indexed reads of what the write touched (docs/ingestion.md).
    /// The other buckets keep their text until the next full build
    /// (improve), as the index's contract allows.
    #[tracing::instrument(level = "debug", skip_all)]
    pub(crate) async fn update_global_context_index(
        &self,
        dataset: &Dataset,
        graph: &dyn GraphStore,
        change: &IndexChange,
        known_mentions: Option<Vec<Mentions>>,
        running: Option<&mut RunningSpreads>,
    ) -> Result<()> {
        let ds = dataset.id;
        let gone: Vec<Uuid> = change.removed.iter().map(|d| bucket_summary_id(ds, *d)).collect();
        self.delete_index_rows(ds, &gone).await?;
        // The documents' count and the first by name, from indexed reads
        // (not every document node).
        let document_count = graph.count_nodes_by_type(ds, node_types::TEXT_DOCUMENT).await? as usize;
        let root_id = root_summary_id(ds);
        if document_count == 0 {
            return self.delete_index_rows(ds, &[root_id]).await;
        }
        let first_stored = graph.first_nodes_by_name(ds, node_types::TEXT_DOCUMENT, ROOT_DOCUMENTS).await?;
        let first_documents: Vec<&Node> = first_stored.iter().collect();

        // The added documents' chunks, their summaries and entities.
        let added_ids: Vec<Uuid> = change.added.iter().copied().collect();
        let added_documents = graph.get_nodes(ds, &added_ids).await?;
        let mut added: Vec<&Node> =
            added_documents.iter().filter(|d| d.node_type == node_types::TEXT_DOCUMENT).collect();
        sort_documents(&mut added);
        let added_ids: Vec<Uuid> = added.iter().map(|d| d.id).collect();
        let mut chunk_doc: HashMap<Uuid, Uuid> = HashMap::new();
        for e in graph.edges_touching(ds, &added_ids, EdgeProjection::Only(&[])).await? {
            if e.relationship_name == "is_part_of" && change.added.contains(&e.target_node_id) {
                chunk_doc.insert(e.source_node_id, e.target_node_id);
            }
        }
        let chunks: Vec<Uuid> = chunk_doc.keys().copied().collect();
        let mut touched: BTreeSet<Uuid> = change.entities.clone();
        let mut summaries_by_doc: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        // The added documents' mentions: chunks of each that mention each entity.
        let mut tf: HashMap<Uuid, HashMap<Uuid, usize>> = HashMap::new();
        for e in graph.edges_touching(ds, &chunks, EdgeProjection::Only(&[])).await? {
            match e.relationship_name.as_str() {
                "contains" if chunk_doc.contains_key(&e.source_node_id) => {
                    touched.insert(e.target_node_id);
                    if let Some(doc) = chunk_doc.get(&e.source_node_id) {
                        *tf.entry(*doc).or_default().entry(e.target_node_id).or_default() += 1;
                    }
                }
                "made_from" => {
                    if let Some(doc) = chunk_doc.get(&e.target_node_id) {
                        summaries_by_doc.entry(*doc).or_default().push(e.source_node_id);
                    }
                }
                _ => {}
            }
        }
        let touched: Vec<Uuid> = touched.into_iter().collect();
        let counts: Counts = match running {
            Some(run) => {
                // Entities whose mentions changed otherwise are counted again.
                for e in &change.entities {
                    run.0.remove(e);
                }
                let new: Vec<Uuid> = touched.iter().filter(|e| !run.0.contains_key(e)).copied().collect();
                // Counted from the store, this window's documents included.
                let fresh = tally(&graph.document_mentions(ds, &new).await?);
                for per_doc in tf.values() {
                    for (entity, chunks) in per_doc {
                        if let Some(c) = run.0.get_mut(entity) {
                            c.0 += 1;
                            c.1 += *chunks as u64;
                        }
                    }
                }
                for e in new {
                    run.0.insert(e, fresh.get(&e).copied().unwrap_or_default());
                }
                touched.iter().filter_map(|e| run.0.get(e).map(|c| (*e, *c))).collect()
            }
            None => {
                // Without added documents the touched entities are the
                // change's own, whose rows the write may have read already.
                let mentions = match known_mentions {
                    Some(rows) if added.is_empty() => rows,
                    _ => graph.document_mentions(ds, &touched).await?,
                };
                tally(&mentions)
            }
        };
        let names: HashMap<Uuid, String> = graph
            .get_nodes(ds, &touched)
            .await?
            .iter()
            .map(|n| (n.id, prop_str(n, "name").unwrap_or("").to_string()))
            .collect();
        let name = |id: &Uuid| names.get(id).cloned().unwrap_or_default();

        // Buckets of the added documents.
        let df: HashMap<Uuid, usize> = counts.iter().map(|(e, c)| (*e, c.0 as usize)).collect();
        let mut rows = Vec::new();
        for doc in &added {
            let Some(per_doc) = tf.get(&doc.id) else { continue };
            let scored = characteristic_entities(per_doc, &df, document_count, &name);
            let top: Vec<Uuid> = scored.iter().map(|s| s.2).collect();
            // The relations among them, and which of them the document
            // stated: asked of the store per key, never read as lists.
            let between = graph.edges_between(ds, &top, EdgeProjection::Only(&[])).await?;
            let keys: Vec<EdgeKey> = between.iter().filter(|e| is_relation(e)).map(Edge::key).collect();
            let doc_key = doc.id.to_string();
            let stated: HashMap<EdgeKey, bool> = graph.stated_by(ds, &keys, &doc_key).await?.into_iter().collect();
            let relations = by_pair(between.iter().filter(|e| is_relation(e)).filter_map(|e| {
                match stated.get(&e.key()) {
                    // No provenance: every document's.
                    None => Some((e, HashSet::new())),
                    Some(true) => Some((e, HashSet::from([doc_key.as_str()]))),
                    Some(false) => None,
                }
            }));
            rows.push(bucket_row(ds, doc, &scored, &relations, &name));
        }

        // The root, from the kept ranking and indexed counts.
        let stored = graph.get_nodes(ds, &[root_id]).await?;
        let kept: Option<WidespreadRanking> =
            stored.first().and_then(|n| n.properties.get(RANKING)).and_then(|v| serde_json::from_value(v.clone()).ok());
        let ranking = match kept {
            Some(mut ranking) => {
                ranking.update(&touched.iter().copied().collect(), spreads_of(&counts, &name));
                if ranking.named().is_some() {
                    ranking
                } else {
                    self.count_widespread(ds, graph).await?
                }
            }
            None => self.count_widespread(ds, graph).await?,
        };
        let type_ids = graph.node_ids_by_type(ds, node_types::ENTITY_TYPE).await?;
        let counts = graph.count_edges_into(ds, &type_ids, "is_a").await?;
        let counted: Vec<Uuid> = counts.iter().map(|(t, _)| *t).collect();
        let type_names: HashMap<Uuid, String> = graph
            .get_nodes(ds, &counted)
            .await?
            .iter()
            .map(|n| (n.id, prop_str(n, "name").unwrap_or("").to_string()))
            .collect();
        let mut types: BTreeMap<String, usize> = BTreeMap::new();
        for (t, n) in counts {
            *types.entry(type_names.get(&t).cloned().unwrap_or_default()).or_default() += n as usize;
        }
        let root = root_row(dataset, (document_count, &first_documents), types, ranking.named().unwrap_or_default());
        let mut changed: Vec<&SummaryRow> = rows.iter().collect();
        let root_unchanged = stored.first().and_then(|n| prop_str(n, "text")) == Some(root.text.as_str());
        if !root_unchanged {
            changed.insert(0, &root);
        }
        let all: Vec<SummaryRow> = std::iter::once(root.clone()).chain(rows.iter().cloned()).collect();
        self.write_index_rows(dataset, &changed, &summaries_by_doc, Some(&ranking), &all).await
    }

    /// Every mentioned entity's spread, ranked: the full recount a forget
    /// needs when it lowered the entities the root names below one it left
    /// out. Only the entities that can rank are read for their names.
    async fn count_widespread(&self, dataset: DatasetId, graph: &dyn GraphStore) -> Result<WidespreadRanking> {
        let entities = graph.node_ids_by_type(dataset, node_types::ENTITY).await?;
        let mentions = graph.document_mentions(dataset, &entities).await?;
        let mut counted = spreads(&mentions, &|_| String::new());
        counted.sort_by_key(|s| std::cmp::Reverse(s.key()));
        let floor = counted.get(SPREAD_KEPT - 1).map(Spread::key).unwrap_or_default();
        let cut = counted.iter().position(|s| s.key() < floor).unwrap_or(counted.len());
        // Below the floor, names cannot matter: a stand-in ranking first
        // among its equals bounds them.
        let bound = counted.get(cut).map(|s| Spread { id: Uuid::nil(), name: String::new(), ..s.clone() });
        counted.truncate(cut);
        let ids: Vec<Uuid> = counted.iter().map(|s| s.id).collect();
        let names: HashMap<Uuid, String> = graph
            .get_nodes(dataset, &ids)
            .await?
            .iter()
            .map(|n| (n.id, prop_str(n, "name").unwrap_or("").to_string()))
            .collect();
        for s in &mut counted {
            s.name = names.get(&s.id).cloned().unwrap_or_default();
        }
        let mut ranking = WidespreadRanking { top: Vec::new(), bound };
        ranking.keep(counted);
        Ok(ranking)
    }

    /// Removes index rows from the graph and both collections.
    async fn delete_index_rows(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<()> {
        if !ids.is_empty() {
            self.vectors.delete(dataset, GLOBAL_CONTEXT_SUMMARY_TEXT, ids).await?;
            self.vectors.delete(dataset, DATASET_ROUTING, ids).await?;
            self.graph.delete_nodes(dataset, ids).await?;
        }
        Ok(())
    }

    /// Embeds and writes the `changed` rows (once, mirrored into the routing
    /// collection), their nodes and their `summarized_in` edges; the root
    /// node is rewritten with `ranking` when one is given (`rows`: every
    /// planned row, to find the root).
    async fn write_index_rows(
        &self,
        dataset: &Dataset,
        changed: &[&SummaryRow],
        summaries_by_doc: &HashMap<Uuid, Vec<Uuid>>,
        ranking: Option<&WidespreadRanking>,
        rows: &[SummaryRow],
    ) -> Result<()> {
        if !changed.is_empty() {
            let embed: Vec<EmbedRow> = changed
                .iter()
                .map(|r| {
                    let extra = [
                        ("dataset_id", json!(dataset.id.to_string())),
                        ("is_root", json!(r.is_root)),
                        ("level", json!(if r.is_root { 0 } else { 1 })),
                        ("document_id", json!(r.document_id.map(|d| d.to_string()))),
                        ("type", json!("GlobalContextSummary")),
                    ];
                    (r.id, r.text.clone(), payload(r.id, &r.text, &extra), vec![])
                })
                .collect();
            // Embedded once; the routing collection mirrors the same vectors.
            let spec = self.embedder.spec();
            let records = self.embed_rows(embed).await?;
            for collection in [GLOBAL_CONTEXT_SUMMARY_TEXT, DATASET_ROUTING] {
                self.vectors.ensure_collection(dataset.id, collection, &spec).await?;
                self.vectors.upsert(dataset.id, collection, records.clone()).await?;
            }
        }
        let root_id = root_summary_id(dataset.id);
        let mut written: Vec<&SummaryRow> = changed.to_vec();
        if ranking.is_some() && !written.iter().any(|r| r.is_root) {
            written.extend(rows.iter().filter(|r| r.is_root));
        }
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for r in &written {
            let mut props = Map::new();
            props.insert("text".into(), json!(r.text));
            props.insert("dataset_id".into(), json!(dataset.id.to_string()));
            props.insert("level".into(), json!(if r.is_root { 0 } else { 1 }));
            props.insert("is_root".into(), json!(r.is_root));
            props.insert(
                "graph_bucket_entity_ids".into(),
                json!(r.entity_ids.iter().map(Uuid::to_string).collect::<Vec<_>>()),
            );
            if let (true, Some(ranking)) = (r.is_root, ranking) {
                props.insert(RANKING.into(), json!(ranking));
            }
            if let Some(doc) = r.document_id {
                props.insert("document_id".into(), json!(doc.to_string()));
                edges.push(
                    Edge::new(r.id, "summarized_in", root_id)
                        .with_text("Document bucket summarized in the dataset root."),
                );
                for s in summaries_by_doc.get(&doc).into_iter().flatten() {
                    edges.push(
                        Edge::new(*s, "summarized_in", r.id)
                            .with_text("Chunk summary summarized in its document bucket."),
                    );
                }
            }
            nodes.push(Node { id: r.id, node_type: node_types::GLOBAL_CONTEXT_SUMMARY.into(), properties: props });
        }
        if nodes.is_empty() {
            return Ok(());
        }
        self.graph.upsert_nodes(dataset.id, &nodes).await?;
        // Bucket → root edges need the root to exist; it always does when a bucket does.
        self.graph.upsert_edges(dataset.id, &edges).await
    }
}

/// Each chunk's document id.
fn chunk_documents(graph: &Subgraph) -> HashMap<Uuid, Uuid> {
    graph
        .nodes
        .iter()
        .filter(|n| n.node_type == node_types::DOCUMENT_CHUNK)
        .filter_map(|n| Some((n.id, Uuid::parse_str(prop_str(n, "document_id")?).ok()?)))
        .collect()
}

/// TextSummary ids by the document of their chunk.
fn summaries_by_document(graph: &Subgraph) -> HashMap<Uuid, Vec<Uuid>> {
    let chunk_doc = chunk_documents(graph);
    let mut out: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for n in graph.nodes.iter().filter(|n| n.node_type == node_types::TEXT_SUMMARY) {
        if let Some(doc) =
            prop_str(n, "source_chunk_id").and_then(|c| Uuid::parse_str(c).ok()).and_then(|c| chunk_doc.get(&c))
        {
            out.entry(*doc).or_default().push(n.id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u128, node_type: &str, props: Value) -> Node {
        let Value::Object(properties) = props else { unreachable!() };
        Node { id: Uuid::from_u128(id), node_type: node_type.into(), properties }
    }

    fn relation(s: u128, r: &str, t: u128, docs: Option<&[&str]>) -> Edge {
        let (sn, tn) = (["", "A", "B", "C"][s as usize], ["", "A", "B", "C"][t as usize]);
        let mut e = Edge::new(Uuid::from_u128(s), r, Uuid::from_u128(t)).with_text(format!("{sn} {r} {tn}."));
        if let Some(docs) = docs {
            e.properties.insert("document_ids".into(), json!(docs));
        }
        e
    }

    /// A bucket lists the relations between two of its top entities that its
    /// document stated (or that name no document), sorted, whatever the
    /// order of the graph's edges.
    #[test]
    fn buckets_list_the_relations_their_document_stated() {
        let (d1, d2) = (Uuid::from_u128(101), Uuid::from_u128(102));
        let dataset = Dataset {
            id: DatasetId(Uuid::from_u128(9)),
            name: "ds".into(),
            owner_id: Uuid::nil(),
            tenant_id: None,
            created_at: 0,
        };
        let nodes = vec![
            node(1, "Entity", json!({"name": "A"})),
            node(2, "Entity", json!({"name": "B"})),
            node(3, "Entity", json!({"name": "C"})),
            node(101, node_types::TEXT_DOCUMENT, json!({"name": "one.txt"})),
            node(102, node_types::TEXT_DOCUMENT, json!({"name": "two.txt"})),
            node(201, node_types::DOCUMENT_CHUNK, json!({"document_id": d1.to_string()})),
            node(202, node_types::DOCUMENT_CHUNK, json!({"document_id": d2.to_string()})),
        ];
        let contains = |c: u128, e: u128| Edge::new(Uuid::from_u128(c), "contains", Uuid::from_u128(e));
        let (s1, s2) = (d1.to_string(), d2.to_string());
        let mut edges = vec![
            relation(2, "r2", 1, Some(&[&s2])),
            relation(1, "r4", 1, Some(&[&s1, &s2])),
            relation(1, "r3", 3, None),
            relation(1, "r1", 2, Some(&[&s1])),
            contains(201, 1),
            contains(201, 2),
            contains(201, 3),
            contains(202, 1),
            contains(202, 2),
        ];
        for _ in 0..2 {
            let graph = Subgraph { nodes: nodes.clone(), edges: edges.clone() };
            let (rows, _) = plan_index(&dataset, &graph);
            let bucket = |doc: Uuid| rows.iter().find(|r| r.document_id == Some(doc)).unwrap().text.clone();
            assert!(bucket(d1).ends_with(" Relations: A r1 B. A r3 C. A r4 A."), "{}", bucket(d1));
            assert!(bucket(d2).ends_with(" Relations: A r4 A. B r2 A."), "{}", bucket(d2));
            edges.reverse();
        }
    }
}
