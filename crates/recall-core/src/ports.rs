//! Ports: the narrow, object-safe traits that backends implement. The engine
//! holds each as `Arc<dyn Port>`. Every store call names its dataset scope
//! explicitly, so no call can read across datasets by accident.

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::{DataItem, DataStatus, Dataset, DatasetId, Edge, Node, PipelineRun, Result, Subgraph, User, PROVENANCE};

// ---------------------------------------------------------------------------
// Graph
// ---------------------------------------------------------------------------

/// Identifies an edge: (source, relationship_name, target).
pub type EdgeKey = (Uuid, String, Uuid);

/// Where a paged read of one dataset's nodes or edges resumes
/// ([`GraphStore::nodes_page`]): the `next` of the page before, passed back
/// unchanged. `K` is the item's key (a node id, an [`EdgeKey`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageCursor<K> {
    /// After the item with this key, in key order.
    Key(K),
    /// After this position in the store's own row order (SQLite's rowid,
    /// which reads a table in the order its pages are stored).
    Row(i64),
}

/// One page of a paged read, and where the next page starts (`None`: this
/// was the last).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T, K> {
    pub items: Vec<T>,
    pub next: Option<PageCursor<K>>,
}

impl<T, K> Page<T, K> {
    /// A page read in key order: a full page resumes after its last item's
    /// key, a short one is the last.
    pub fn keyed(items: Vec<T>, limit: usize, key: impl Fn(&T) -> K) -> Self {
        let next = if items.len() >= limit { items.last().map(|last| PageCursor::Key(key(last))) } else { None };
        Self { items, next }
    }
}

/// The key of a cursor for a store that pages in key order only.
pub fn key_cursor<K>(cursor: Option<PageCursor<K>>) -> Result<Option<K>> {
    match cursor {
        None => Ok(None),
        Some(PageCursor::Key(k)) => Ok(Some(k)),
        Some(PageCursor::Row(_)) => {
            Err(crate::RecallError::backend_msg("a row cursor was passed to a store that pages by key"))
        }
    }
}

/// How many chunks of one document mention one entity
/// ([`GraphStore::document_mentions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Mentions {
    pub entity: Uuid,
    pub document: Uuid,
    pub chunks: u64,
}

/// Which edge properties a graph read returns. Ingestion, forget and exports
/// read every property; a graph search reads only those Cognee's memory
/// fragment projects (docs/retrievers.md, "brute_force_triplet_search"), so a store may skip
/// reading the rest: an entity-to-entity edge carries the ids of every
/// document that stated it (`document_ids`, often kilobytes), which no
/// search uses. `relationship_name` and `edge_text` are fields, always read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EdgeProjection {
    /// Every property.
    #[default]
    All,
    /// Only these property keys (absent ones stay absent).
    Only(&'static [&'static str]),
}

impl EdgeProjection {
    /// Whether the projection returns property `key`.
    pub fn wants(&self, key: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(keys) => keys.contains(&key),
        }
    }

    /// Drops the properties the projection does not return.
    pub fn apply(&self, edges: &mut [Edge]) {
        if let Self::Only(keys) = self {
            for e in edges {
                e.properties.retain(|k, _| keys.contains(&k.as_str()));
            }
        }
    }
}

/// A node as a triplet ranking reads it: its id and the weights that scale
/// its score (raw values; a ranking decides what an invalid one means).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSketch {
    pub id: Uuid,
    pub importance_weight: Option<Value>,
    /// Read only when asked for (feedback influence > 0).
    pub feedback_weight: Option<Value>,
}

/// An edge as a triplet ranking reads it: its key, its type key (which
/// vector hit scores it) and its feedback weight; no text, no other property.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeSketch {
    pub source_node_id: Uuid,
    pub relationship_name: String,
    pub target_node_id: Uuid,
    /// [`Edge::type_key`].
    pub type_key: Uuid,
    /// Read only when asked for (feedback influence > 0).
    pub feedback_weight: Option<Value>,
}

impl EdgeSketch {
    pub fn key(&self) -> EdgeKey {
        (self.source_node_id, self.relationship_name.clone(), self.target_node_id)
    }
}

/// A projection reduced to what a triplet ranking reads: scoring a memory
/// fragment needs neither texts nor most properties, and the winners are
/// read in full afterwards ([`RankingReads::get_edges`], [`GraphStore::get_nodes`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sketch {
    pub nodes: Vec<NodeSketch>,
    pub edges: Vec<EdgeSketch>,
}

impl Sketch {
    /// In the order [`RankingReads::whole_sketch`] answers: nodes by id,
    /// edges by key, and no edge with an endpoint that is not a node.
    pub fn in_whole_dataset_order(mut self) -> Self {
        self.nodes.sort_by_key(|n| n.id);
        let known: std::collections::HashSet<Uuid> = self.nodes.iter().map(|n| n.id).collect();
        self.edges.retain(|e| known.contains(&e.source_node_id) && known.contains(&e.target_node_id));
        self.edges.sort_by(|a, b| {
            (a.source_node_id, &a.relationship_name, a.target_node_id).cmp(&(
                b.source_node_id,
                &b.relationship_name,
                b.target_node_id,
            ))
        });
        self
    }

    /// The edge properties a sketch reads: `feedback_weight` when asked for.
    pub fn edge_projection(feedback: bool) -> EdgeProjection {
        EdgeProjection::Only(if feedback { &["feedback_weight"] } else { &[] })
    }

    /// A full projection's sketch: the same nodes and edges, in order.
    pub fn of(graph: &Subgraph, feedback: bool) -> Self {
        let weight = |props: &Map<String, Value>, key: &str| props.get(key).cloned();
        Self {
            nodes: graph
                .nodes
                .iter()
                .map(|n| NodeSketch {
                    id: n.id,
                    importance_weight: weight(&n.properties, "importance_weight"),
                    feedback_weight: if feedback { weight(&n.properties, "feedback_weight") } else { None },
                })
                .collect(),
            edges: graph
                .edges
                .iter()
                .map(|e| EdgeSketch {
                    source_node_id: e.source_node_id,
                    relationship_name: e.relationship_name.clone(),
                    target_node_id: e.target_node_id,
                    type_key: e.type_key(),
                    feedback_weight: if feedback { weight(&e.properties, "feedback_weight") } else { None },
                })
                .collect(),
        }
    }

    /// Appends another sketch (a ranking keeps the first of repeated keys).
    pub fn extend(&mut self, other: Sketch) {
        self.nodes.extend(other.nodes);
        self.edges.extend(other.edges);
    }
}

/// A property graph of typed nodes and named edges, partitioned by dataset.
///
/// A store implements the primitives (writes, reads by id, one hop of
/// adjacency, the edges between or around a set of nodes); the composed reads
/// — the k-hop neighbourhood, Cognee's ID-filtered projection, the node-set
/// subgraph — are written once over them. What a store can do faster or
/// additionally is an optional capability ([`GraphCapabilities`]).
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait GraphStore: GraphCapabilities + Send + Sync {
    fn name(&self) -> &'static str {
        "graph"
    }

    /// Inserts or replaces nodes (by id) in one dataset.
    async fn upsert_nodes(&self, dataset: DatasetId, nodes: &[Node]) -> Result<()>;

    /// Inserts or replaces edges, keyed by (source, relationship_name, target).
    async fn upsert_edges(&self, dataset: DatasetId, edges: &[Edge]) -> Result<()>;

    /// The nodes with these ids, in the order asked; unknown ids are skipped.
    async fn get_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Node>>;

    /// The ids one edge away from `ids`, in either direction (members of
    /// `ids` included when an edge joins two of them; repeats allowed):
    /// endpoints only, no edge read in full.
    async fn adjacent_ids(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Uuid>>;

    /// The edges with both endpoints among `ids`, with the properties of
    /// `edge_properties`.
    async fn edges_between(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>>;

    /// The edges with at least one endpoint among `ids`, each once, with the
    /// properties of `edge_properties`.
    async fn edges_touching(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>>;

    /// Every node and edge of one dataset (for exports, indexes and forget).
    async fn get_graph(&self, dataset: DatasetId) -> Result<Subgraph>;

    /// A page of one dataset's nodes for an export that streams: up to
    /// `limit` nodes after `after` (from the first without it), and where
    /// the next page starts; fewer than `limit` only on the last page. Each
    /// node is read once over the pages, in an order of the store's choosing
    /// (key order, or its own row order when that reads faster); a write
    /// between two pages shows in the pages read after it. The default
    /// slices [`GraphStore::get_graph`] in id order; stores override it with
    /// a keyset read, so an export holds one page at a time. A cursor the
    /// store did not hand out is a backend error.
    async fn nodes_page(
        &self,
        dataset: DatasetId,
        after: Option<PageCursor<Uuid>>,
        limit: usize,
    ) -> Result<Page<Node, Uuid>> {
        let after = key_cursor(after)?;
        let mut nodes = self.get_graph(dataset).await?.nodes;
        nodes.sort_by_key(|n| n.id);
        let nodes = nodes.into_iter().filter(|n| after.is_none_or(|a| n.id > a)).take(limit).collect();
        Ok(Page::keyed(nodes, limit, |n: &Node| n.id))
    }

    /// A page of one dataset's edges, as [`GraphStore::nodes_page`]; the
    /// default is in (source, relationship_name, target) order.
    async fn edges_page(
        &self,
        dataset: DatasetId,
        after: Option<PageCursor<EdgeKey>>,
        limit: usize,
    ) -> Result<Page<Edge, EdgeKey>> {
        let after = key_cursor(after)?;
        let mut edges = self.get_graph(dataset).await?.edges;
        edges.sort_by_key(Edge::key);
        let edges = edges.into_iter().filter(|e| after.as_ref().is_none_or(|a| &e.key() > a)).take(limit).collect();
        Ok(Page::keyed(edges, limit, Edge::key))
    }

    /// The nodes of one type.
    async fn nodes_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Node>>;

    /// The ids of the nodes of one type, in any order: what an index kept
    /// in memory diffs against to follow a write without reading every
    /// node again. Stores override it to read the ids alone.
    async fn node_ids_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Uuid>> {
        Ok(self.nodes_by_type(dataset, node_type).await?.into_iter().map(|n| n.id).collect())
    }

    /// How many nodes of one type the dataset has. The default counts
    /// [`GraphStore::node_ids_by_type`]; stores override it with an indexed count.
    async fn count_nodes_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<u64> {
        Ok(self.node_ids_by_type(dataset, node_type).await?.len() as u64)
    }

    /// The first `limit` nodes of one type in name order: by their `name`
    /// property compared as bytes, nodes without a string name first, then
    /// by id (what the global context root lists of a dataset's documents).
    /// The default reads every node of the type; stores override it with an
    /// ordered read.
    async fn first_nodes_by_name(&self, dataset: DatasetId, node_type: &str, limit: usize) -> Result<Vec<Node>> {
        let mut nodes = self.nodes_by_type(dataset, node_type).await?;
        nodes.sort_by(Node::cmp_by_name);
        nodes.truncate(limit);
        Ok(nodes)
    }

    /// The edges whose `edge_text` is one of `texts`, properties optional:
    /// what an EdgeType row's count is recounted from after a write. The
    /// default reads the dataset's graph; stores override it with an
    /// indexed read.
    async fn edges_with_texts(&self, dataset: DatasetId, texts: &[String]) -> Result<Vec<Edge>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: std::collections::HashSet<&str> = texts.iter().map(String::as_str).collect();
        let mut edges = self.get_graph(dataset).await?.edges;
        edges.retain(|e| e.edge_text.as_deref().is_some_and(|t| wanted.contains(t)));
        Ok(edges)
    }

    /// For each of `entities`, the documents whose chunks mention it (a
    /// `contains` edge from a chunk that `is_part_of` the document), with
    /// how many of the document's chunks do: the term and document
    /// frequencies of the global context index, read for the entities a
    /// write touched. The default walks the edges of the entities and of
    /// their chunks.
    async fn document_mentions(&self, dataset: DatasetId, entities: &[Uuid]) -> Result<Vec<Mentions>> {
        use std::collections::{BTreeMap, HashMap, HashSet};
        let wanted: HashSet<Uuid> = entities.iter().copied().collect();
        let contains: Vec<Edge> = self
            .edges_touching(dataset, entities, EdgeProjection::Only(&[]))
            .await?
            .into_iter()
            .filter(|e| e.relationship_name == "contains" && wanted.contains(&e.target_node_id))
            .collect();
        let mut chunks: Vec<Uuid> = contains.iter().map(|e| e.source_node_id).collect();
        chunks.sort();
        chunks.dedup();
        let of_chunk: HashSet<Uuid> = chunks.iter().copied().collect();
        let document: HashMap<Uuid, Uuid> = self
            .edges_touching(dataset, &chunks, EdgeProjection::Only(&[]))
            .await?
            .into_iter()
            .filter(|e| e.relationship_name == "is_part_of" && of_chunk.contains(&e.source_node_id))
            .map(|e| (e.source_node_id, e.target_node_id))
            .collect();
        let mut counts: BTreeMap<(Uuid, Uuid), u64> = BTreeMap::new();
        for e in &contains {
            if let Some(doc) = document.get(&e.source_node_id) {
                *counts.entry((e.target_node_id, *doc)).or_default() += 1;
            }
        }
        Ok(counts.into_iter().map(|((entity, document), chunks)| Mentions { entity, document, chunks }).collect())
    }

    /// How many `relationship` edges point at each of `targets` (a target
    /// with none is left out): an entity type's entities, by `is_a`. The
    /// default reads the targets' edges.
    async fn count_edges_into(
        &self,
        dataset: DatasetId,
        targets: &[Uuid],
        relationship: &str,
    ) -> Result<Vec<(Uuid, u64)>> {
        let wanted: std::collections::HashSet<Uuid> = targets.iter().copied().collect();
        let mut counts: std::collections::BTreeMap<Uuid, u64> = std::collections::BTreeMap::new();
        for e in self.edges_touching(dataset, targets, EdgeProjection::Only(&[])).await? {
            if e.relationship_name == relationship && wanted.contains(&e.target_node_id) {
                *counts.entry(e.target_node_id).or_default() += 1;
            }
        }
        Ok(counts.into_iter().collect())
    }

    /// Relation edges stated (again) by documents, each with the documents
    /// stating it in this write: upserted as [`GraphStore::upsert_edges`]
    /// upserts them, except for their provenance ([`PROVENANCE`]), which
    /// keeps the documents it has and gains these (a provenance property on
    /// the edge itself is ignored). A store that keeps the provenance apart
    /// adds one row per new document, never reading or rewriting the list:
    /// a fact a thousand documents stated costs the next batch that states
    /// it one row, not a thousand ids. The default reads the stored lists,
    /// merges them and upserts (sorted, each id once).
    async fn upsert_stated_edges(&self, dataset: DatasetId, edges: &[(Edge, Vec<String>)]) -> Result<()> {
        use std::collections::{BTreeSet, HashMap};
        let mut ends: Vec<Uuid> = edges.iter().flat_map(|(e, _)| [e.source_node_id, e.target_node_id]).collect();
        ends.sort();
        ends.dedup();
        let stored: HashMap<EdgeKey, Edge> = self
            .edges_between(dataset, &ends, EdgeProjection::Only(&[PROVENANCE]))
            .await?
            .into_iter()
            .map(|e| (e.key(), e))
            .collect();
        // A key repeated in the call: the last edge, every entry's documents.
        let mut by_key: std::collections::BTreeMap<EdgeKey, (&Edge, BTreeSet<String>)> = Default::default();
        for (edge, documents) in edges {
            let entry = by_key.entry(edge.key()).or_insert_with(|| {
                (edge, stored.get(&edge.key()).map(Edge::provenance).unwrap_or_default().into_iter().collect())
            });
            entry.0 = edge;
            entry.1.extend(documents.iter().cloned());
        }
        let merged: Vec<Edge> = by_key
            .into_values()
            .map(|(edge, docs)| {
                let mut e = edge.clone();
                e.properties.remove(PROVENANCE);
                if !docs.is_empty() {
                    e.properties.insert(PROVENANCE.into(), Value::from(docs.into_iter().collect::<Vec<_>>()));
                }
                e
            })
            .collect();
        self.upsert_edges(dataset, &merged).await
    }

    /// Which of the edges `keys` `document` stated: for each that exists
    /// with a provenance, its key and whether `document` is among its
    /// documents; an edge without provenance (or unknown) is left out.
    /// Stores that keep the provenance apart answer from two index probes
    /// per key, not from the lists. The default reads the lists.
    async fn stated_by(&self, dataset: DatasetId, keys: &[EdgeKey], document: &str) -> Result<Vec<(EdgeKey, bool)>> {
        let wanted: std::collections::HashSet<&EdgeKey> = keys.iter().collect();
        let mut ends: Vec<Uuid> = keys.iter().flat_map(|k| [k.0, k.2]).collect();
        ends.sort();
        ends.dedup();
        Ok(self
            .edges_between(dataset, &ends, EdgeProjection::Only(&[PROVENANCE]))
            .await?
            .into_iter()
            .filter(|e| wanted.contains(&e.key()))
            .filter_map(|e| {
                let docs = e.provenance();
                (!docs.is_empty()).then(|| (e.key(), docs.iter().any(|d| d == document)))
            })
            .collect())
    }

    /// Deletes edges by (source, relationship_name, target); unknown keys are skipped.
    async fn delete_edges(&self, dataset: DatasetId, keys: &[EdgeKey]) -> Result<()>;

    /// Node and edge counts of one dataset.
    async fn count(&self, dataset: DatasetId) -> Result<(u64, u64)>;

    async fn is_empty(&self, dataset: DatasetId) -> Result<bool> {
        Ok(self.count(dataset).await?.0 == 0)
    }

    /// Deletes nodes and every edge touching them.
    async fn delete_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<()>;

    /// Deletes every node and edge of a dataset.
    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()>;

    /// The nodes within `depth` hops of the seeds (either direction) and every
    /// edge between them, with the edge properties of `edge_properties`.
    /// `depth` 1 is Cognee's 1-hop projection; at depth 0 the nodes are the
    /// known seeds in the order asked. One walk over [`GraphStore::adjacent_ids`]
    /// for every store.
    async fn neighborhood(
        &self,
        dataset: DatasetId,
        seeds: &[Uuid],
        depth: usize,
        edge_properties: EdgeProjection,
    ) -> Result<Subgraph> {
        let found = self.get_nodes(dataset, seeds).await?;
        let mut reached: std::collections::HashSet<Uuid> = found.iter().map(|n| n.id).collect();
        let mut frontier: Vec<Uuid> = found.iter().map(|n| n.id).collect();
        for _ in 0..depth {
            if frontier.is_empty() {
                break;
            }
            frontier =
                self.adjacent_ids(dataset, &frontier).await?.into_iter().filter(|id| reached.insert(*id)).collect();
        }
        let nodes = if reached.len() == found.len() {
            found
        } else {
            let mut ids: Vec<Uuid> = reached.into_iter().collect();
            ids.sort();
            self.get_nodes(dataset, &ids).await?
        };
        let ids: Vec<Uuid> = nodes.iter().map(|n| n.id).collect();
        let edges = self.edges_between(dataset, &ids, edge_properties).await?;
        Ok(Subgraph { nodes, edges })
    }

    /// Cognee's ID-filtered projection: the nodes with these ids, every edge
    /// with at least one endpoint among them, and those edges' other
    /// endpoints — not the edges between two neighbours, and no read of the
    /// neighbours' own edges.
    async fn edges_around(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Subgraph> {
        let nodes = self.get_nodes(dataset, ids).await?;
        let found: Vec<Uuid> = nodes.iter().map(|n| n.id).collect();
        let edges = self.edges_touching(dataset, &found, edge_properties).await?;
        with_endpoints(self, dataset, nodes, edges).await
    }

    /// The nodes tagged with the filter's node sets (`belongs_to_set`), every
    /// edge touching them, and those edges' other endpoints. The default reads
    /// the dataset's graph.
    async fn nodeset_subgraph(&self, dataset: DatasetId, filter: &NodeSetFilter) -> Result<Subgraph> {
        let graph = self.get_graph(dataset).await?;
        let members: std::collections::HashSet<Uuid> =
            graph.nodes.iter().filter(|n| filter.matches(&n.tags())).map(|n| n.id).collect();
        let edges: Vec<Edge> = graph
            .edges
            .into_iter()
            .filter(|e| members.contains(&e.source_node_id) || members.contains(&e.target_node_id))
            .collect();
        let keep: std::collections::HashSet<Uuid> =
            edges.iter().flat_map(|e| [e.source_node_id, e.target_node_id]).chain(members.iter().copied()).collect();
        Ok(Subgraph { nodes: graph.nodes.into_iter().filter(|n| keep.contains(&n.id)).collect(), edges })
    }

    async fn healthcheck(&self) -> Result<()> {
        Ok(())
    }
}

/// `nodes` and `edges` completed with the edges' other endpoints; an edge
/// whose endpoint is missing (a dangling edge) is dropped.
pub async fn with_endpoints<S: GraphStore + ?Sized>(
    store: &S,
    dataset: DatasetId,
    mut nodes: Vec<Node>,
    mut edges: Vec<Edge>,
) -> Result<Subgraph> {
    let known: std::collections::HashSet<Uuid> = nodes.iter().map(|n| n.id).collect();
    let mut others: Vec<Uuid> = edges
        .iter()
        .flat_map(|e| [e.source_node_id, e.target_node_id])
        .filter(|id| !known.contains(id))
        .collect::<std::collections::HashSet<_>>()
        .into_iter()
        .collect();
    others.sort();
    nodes.extend(store.get_nodes(dataset, &others).await?);
    let present: std::collections::HashSet<Uuid> = nodes.iter().map(|n| n.id).collect();
    edges.retain(|e| present.contains(&e.source_node_id) && present.contains(&e.target_node_id));
    Ok(Subgraph { nodes, edges })
}

/// What a graph store can do beyond the primitives. Each capability is
/// absent by default: a triplet search then uses the generic reads over the
/// primitives, and CYPHER is `SearchTypeNotSupported`.
pub trait GraphCapabilities {
    /// Faster ranking reads than the generic ones (the SQL store's indexes).
    fn ranking_reads(&self) -> Option<&dyn RankingReads> {
        None
    }

    /// Cypher queries (Neo4j).
    fn cypher(&self) -> Option<&dyn CypherQueries> {
        None
    }
}

#[cfg(feature = "test-utils")]
impl GraphCapabilities for MockGraphStore {}

/// The reads a triplet search ranks with (docs/retrievers.md,
/// "brute_force_triplet_search"): sketches of the seeds' projection, the
/// winners by key, and the edges of the hit types around the seeds.
#[async_trait]
pub trait RankingReads: Send + Sync {
    /// [`GraphStore::neighborhood`] at depth 0 (the seeds and the edges
    /// between two of them) as a [`Sketch`], with the feedback weights when
    /// `feedback`.
    async fn sketch_between(&self, dataset: DatasetId, seeds: &[Uuid], feedback: bool) -> Result<Sketch>;

    /// The edges with these keys, with the properties of `edge_properties`;
    /// unknown keys are skipped, the order is the store's.
    async fn get_edges(
        &self,
        dataset: DatasetId,
        keys: &[EdgeKey],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>>;

    /// [`GraphStore::edges_around`] restricted to the edges whose
    /// [`Edge::type_key`] is among `type_keys`: the edges a vector hit on the
    /// edge collection scores. The nodes are `ids` and the kept edges' endpoints.
    async fn edges_around_of_types(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        type_keys: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Subgraph>;

    /// The whole dataset as a [`Sketch`] without feedback weights: every
    /// node, and every edge whose endpoints are both nodes of the dataset,
    /// in key order (what a search cache of the sketches loads). Read in
    /// pages, so no read holds more than a page besides the result.
    async fn whole_sketch(&self, dataset: DatasetId) -> Result<Sketch>;
}

/// Cypher with `$dataset_id` bound to the dataset; one JSON object per row.
#[async_trait]
pub trait CypherQueries: Send + Sync {
    async fn query_cypher(&self, dataset: DatasetId, query: &str) -> Result<Vec<Map<String, Value>>>;
}

/// The ranking reads of any store: its own when it has them, else the
/// generic ones over its primitives (`store.ranking().sketch_between(…)`).
pub struct Ranking<'a> {
    store: &'a dyn GraphStore,
    fast: Option<&'a dyn RankingReads>,
}

impl<'s> dyn GraphStore + 's {
    /// What a triplet search reads through.
    pub fn ranking(&self) -> Ranking<'_> {
        Ranking { store: self, fast: self.ranking_reads() }
    }

    /// The generic reads over the primitives, even where the store has its
    /// own (the conformance suite holds both to one contract).
    pub fn generic_ranking(&self) -> Ranking<'_> {
        Ranking { store: self, fast: None }
    }
}

impl Ranking<'_> {
    /// See [`RankingReads::whole_sketch`]; the generic read is the whole
    /// graph's.
    pub async fn whole_sketch(&self, dataset: DatasetId) -> Result<Sketch> {
        if let Some(fast) = self.fast {
            return fast.whole_sketch(dataset).await;
        }
        let graph = self.store.get_graph(dataset).await?;
        let mut sketch = Sketch::of(&graph, false);
        for n in &mut sketch.nodes {
            n.importance_weight = n.importance_weight.take().filter(|v| !v.is_null());
        }
        Ok(sketch.in_whole_dataset_order())
    }

    pub async fn sketch_between(&self, dataset: DatasetId, seeds: &[Uuid], feedback: bool) -> Result<Sketch> {
        if let Some(fast) = self.fast {
            return fast.sketch_between(dataset, seeds, feedback).await;
        }
        let graph = self.store.neighborhood(dataset, seeds, 0, Sketch::edge_projection(feedback)).await?;
        Ok(Sketch::of(&graph, feedback))
    }

    pub async fn get_edges(
        &self,
        dataset: DatasetId,
        keys: &[EdgeKey],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>> {
        if let Some(fast) = self.fast {
            return fast.get_edges(dataset, keys, edge_properties).await;
        }
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut ends: Vec<Uuid> = keys.iter().flat_map(|k| [k.0, k.2]).collect();
        ends.sort();
        ends.dedup();
        let wanted: std::collections::HashSet<(Uuid, &str, Uuid)> =
            keys.iter().map(|k| (k.0, k.1.as_str(), k.2)).collect();
        let edges = self.store.edges_between(dataset, &ends, edge_properties).await?;
        Ok(edges
            .into_iter()
            .filter(|e| wanted.contains(&(e.source_node_id, e.relationship_name.as_str(), e.target_node_id)))
            .collect())
    }

    pub async fn edges_around_of_types(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        type_keys: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Subgraph> {
        if let Some(fast) = self.fast {
            return fast.edges_around_of_types(dataset, ids, type_keys, edge_properties).await;
        }
        let types: std::collections::HashSet<&Uuid> = type_keys.iter().collect();
        let mut sub = self.store.edges_around(dataset, ids, edge_properties).await?;
        sub.edges.retain(|e| types.contains(&e.type_key()));
        let keep: std::collections::HashSet<Uuid> =
            sub.edges.iter().flat_map(|e| [e.source_node_id, e.target_node_id]).chain(ids.iter().copied()).collect();
        sub.nodes.retain(|n| keep.contains(&n.id));
        Ok(sub)
    }
}

// ---------------------------------------------------------------------------
// Vectors
// ---------------------------------------------------------------------------

/// The embedding model a collection's vectors come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingSpec {
    pub model: String,
    pub dimensions: usize,
}

impl EmbeddingSpec {
    /// `EmbeddingDimensionMismatch` for the first row whose vector is not
    /// this wide (a whole-collection write checks before it writes).
    pub fn check_rows(&self, rows: &[(DatasetId, VectorRecord)]) -> Result<()> {
        match rows.iter().find(|(_, r)| r.vector.len() != self.dimensions) {
            Some((dataset, bad)) => {
                Err(crate::RecallError::embedding_mismatch(dataset, self, "<input vectors>", bad.vector.len()))
            }
            None => Ok(()),
        }
    }
}

/// One vector row: the embedded data point's id, its vector and its payload
/// (the "index row" of docs/ingestion.md: text, document_id, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorRecord {
    pub id: Uuid,
    pub vector: Vec<f32>,
    pub payload: Map<String, Value>,
    /// Node-set tags, filterable with [`NodeSetFilter`].
    #[serde(default)]
    pub belongs_to_set: Vec<String>,
}

/// A search hit: `score` is the raw cosine distance, lower is better.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredResult {
    pub id: Uuid,
    pub score: f64,
    pub payload: Map<String, Value>,
}

/// Filter on `belongs_to_set`: any of the names (OR) or all of them (AND).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeSetFilter {
    Any(Vec<String>),
    All(Vec<String>),
}

impl NodeSetFilter {
    pub fn matches(&self, tags: &[String]) -> bool {
        match self {
            NodeSetFilter::Any(names) => names.iter().any(|n| tags.contains(n)),
            NodeSetFilter::All(names) => names.iter().all(|n| tags.contains(n)),
        }
    }
}

/// Named collections of vectors ("<TypeName>_<field>"), partitioned by dataset.
/// A collection records the embedding model and width it was created with;
/// writing or searching with another width is `EmbeddingDimensionMismatch`.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait VectorStore: Send + Sync {
    fn name(&self) -> &'static str {
        "vector"
    }

    /// Creates the collection for `spec` if it does not exist; if it exists with
    /// another model or width, fails with `EmbeddingDimensionMismatch`.
    async fn ensure_collection(&self, dataset: DatasetId, collection: &str, spec: &EmbeddingSpec) -> Result<()>;

    /// The embedding model a collection was created with, if it exists.
    async fn collection_spec(&self, collection: &str) -> Result<Option<EmbeddingSpec>>;

    /// Whether the dataset has any row in the collection.
    async fn has_collection(&self, dataset: DatasetId, collection: &str) -> Result<bool>;

    /// Inserts or replaces rows by (dataset, id).
    async fn upsert(&self, dataset: DatasetId, collection: &str, records: Vec<VectorRecord>) -> Result<()>;

    /// The `limit` nearest rows of one dataset (all of them when `None`).
    async fn search(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
    ) -> Result<Vec<ScoredResult>>;

    /// [`VectorStore::search`]'s ids and distances alone, best first: for a
    /// ranking that needs no payload (the graph search's seeds), so a store
    /// need not read or parse one. The default drops the payloads.
    async fn search_ids(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
    ) -> Result<Vec<(Uuid, f64)>> {
        let hits = self.search(dataset, collection, query, limit, filter).await?;
        Ok(hits.into_iter().map(|h| (h.id, h.score)).collect())
    }

    async fn count(&self, dataset: DatasetId, collection: &str) -> Result<u64>;

    async fn delete(&self, dataset: DatasetId, collection: &str, ids: &[Uuid]) -> Result<()>;

    /// Deletes every row of a dataset in every collection.
    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()>;

    /// The collections the store holds (re-embedding walks them).
    async fn collections(&self) -> Result<Vec<String>> {
        Err(crate::RecallError::SearchTypeNotSupported(format!(
            "the {} vector store cannot list collections",
            self.name()
        )))
    }

    /// Every row of a collection, of every dataset, vectors included (empty
    /// when the collection does not exist).
    async fn rows(&self, collection: &str) -> Result<Vec<(DatasetId, VectorRecord)>> {
        let _ = collection;
        Err(crate::RecallError::SearchTypeNotSupported(format!(
            "the {} vector store cannot read whole collections",
            self.name()
        )))
    }

    /// Replaces a collection whole — its rows and the embedding model it
    /// records — in one step: a reader sees the old collection or the new
    /// one, never a mix. Creates it when missing.
    async fn replace_collection(
        &self,
        collection: &str,
        spec: &EmbeddingSpec,
        rows: Vec<(DatasetId, VectorRecord)>,
    ) -> Result<()> {
        let _ = (collection, spec, rows);
        Err(crate::RecallError::SearchTypeNotSupported(format!(
            "the {} vector store cannot replace collections",
            self.name()
        )))
    }

    /// Removes a collection and its rows; a missing one is not an error.
    async fn drop_collection(&self, collection: &str) -> Result<()> {
        let _ = collection;
        Err(crate::RecallError::SearchTypeNotSupported(format!(
            "the {} vector store cannot drop collections",
            self.name()
        )))
    }

    /// Another process may have written: drop whatever is held in process
    /// (cached rows, table handles), so the next read sees the store as it is.
    async fn refresh(&self) -> Result<()> {
        Ok(())
    }

    /// Waits for the work a store started in the background (a search
    /// cache loading) to finish: for benchmarks and tests that measure a
    /// steady state. The default has none.
    async fn settle(&self) {}

    async fn healthcheck(&self) -> Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Relational, split by concern
// ---------------------------------------------------------------------------

/// Users and the default user.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait UserStore: Send + Sync {
    /// The user with this email, if the database has one.
    async fn find_user(&self, email: &str) -> Result<Option<User>>;

    /// Returns the user with this email, creating it if needed.
    async fn ensure_user(&self, email: &str) -> Result<User>;

    /// The users with these ids that exist, in no particular order.
    async fn get_users(&self, ids: &[Uuid]) -> Result<Vec<User>>;
}

/// Datasets and the grants on them. A grant is a row (principal, dataset,
/// permission); owners get all four when their dataset is created. Access
/// decisions are the engine's (its `access` module); a store only records
/// and reads rows, always kept to the user's tenant.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait DatasetStore: Send + Sync {
    /// Returns the owner's dataset with this name, creating it (and granting the
    /// owner read/write/delete/share) if needed.
    async fn ensure_dataset(&self, owner: &User, name: &str) -> Result<Dataset>;

    /// Datasets owned by `owner` in its tenant whose names are among `names`.
    async fn owned_datasets_by_name(&self, owner: &User, names: &[String]) -> Result<Vec<Dataset>>;

    /// Every dataset of `user`'s tenant on which `user` holds a grant, with
    /// the permissions held (sorted, each once), oldest dataset first (then
    /// by name).
    async fn accessible_datasets(&self, user: &User) -> Result<Vec<crate::DatasetAccess>>;

    /// Every dataset `user` holds `permission` on, oldest first.
    async fn permitted_datasets(&self, user: &User, permission: crate::Permission) -> Result<Vec<Dataset>> {
        Ok(self
            .accessible_datasets(user)
            .await?
            .into_iter()
            .filter(|a| a.allows(permission))
            .map(|a| a.dataset)
            .collect())
    }

    /// Gives `principal` `permission` on `dataset`; granting twice is a no-op.
    async fn grant(&self, dataset: DatasetId, principal: Uuid, permission: crate::Permission) -> Result<()>;

    /// Takes the grant away; revoking what was never granted is a no-op.
    async fn revoke(&self, dataset: DatasetId, principal: Uuid, permission: crate::Permission) -> Result<()>;

    /// Every grant on the dataset, sorted.
    async fn grants(&self, dataset: DatasetId) -> Result<Vec<crate::Grant>>;

    /// The store's data version and these datasets' (a dataset that does not
    /// exist is left out). See [`DataVersions`].
    async fn data_versions(&self, datasets: &[DatasetId]) -> Result<DataVersions>;

    /// What a search needs to know about its datasets, read at one point in
    /// time: the datasets `user` holds `permission` on (as
    /// [`DatasetStore::permitted_datasets`]), the user's own datasets among
    /// `names` (as [`DatasetStore::owned_datasets_by_name`]), and the data
    /// versions of the store and of each of those datasets. A store should
    /// answer it with one read: every search makes it.
    async fn scope_read(&self, user: &User, names: &[String], permission: crate::Permission) -> Result<ScopeRead> {
        let permitted = self.permitted_datasets(user, permission).await?;
        let named = self.owned_datasets_by_name(user, names).await?;
        let versions = self.data_versions(&ScopeRead::dataset_ids(&permitted, &named)).await?;
        Ok(ScopeRead { permitted, named, versions })
    }

    /// Records a write to `dataset`, in one transaction: the store version
    /// goes up by one and the dataset is stamped with the new value (a
    /// dataset row that is gone is left alone). `seen` is the store version
    /// the caller last knew; the answer says whether anyone else wrote since.
    async fn bump_data_version(&self, dataset: DatasetId, seen: Option<u64>) -> Result<DataVersionBump>;

    async fn get_datasets(&self, ids: &[DatasetId]) -> Result<Vec<Dataset>>;

    /// Deletes a dataset row and its grants.
    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()>;
}

/// Data versions, persisted so that every process sharing a store sees
/// every other's writes. The store version counts writes to any dataset and
/// never goes back; a dataset's version is the store version of its last
/// write, so it never repeats, even for a dataset forgotten and created
/// again. Caches key on them: a process whose store version moved without
/// its own writes drops what it holds in memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataVersions {
    pub store: u64,
    pub datasets: Vec<(DatasetId, u64)>,
}

/// The answer of [`DatasetStore::scope_read`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeRead {
    /// The datasets the user holds the permission on, oldest first.
    pub permitted: Vec<Dataset>,
    /// The user's own datasets among the names asked for, permitted or not.
    pub named: Vec<Dataset>,
    /// The store's version and that of every dataset above, each once.
    pub versions: DataVersions,
}

impl ScopeRead {
    /// The ids whose versions a scope read gives: those of `permitted` and
    /// `named`, sorted, each once.
    pub fn dataset_ids(permitted: &[Dataset], named: &[Dataset]) -> Vec<DatasetId> {
        let mut ids: Vec<DatasetId> = permitted.iter().chain(named).map(|d| d.id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// The outcome of [`DatasetStore::bump_data_version`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataVersionBump {
    /// The new store version, now also the dataset's.
    pub version: u64,
    /// The store version was not the caller's `seen`: another writer wrote
    /// since (or the caller had seen nothing yet).
    pub unseen_writes: bool,
}

/// Raw ingested items.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait DataStore: Send + Sync {
    /// Inserts the item, or leaves an existing one (same dataset and id) as it is.
    /// Returns the stored item.
    async fn upsert_data(&self, item: &DataItem) -> Result<DataItem>;

    async fn set_data_status(&self, dataset: DatasetId, id: Uuid, status: DataStatus) -> Result<()>;

    async fn list_data(&self, dataset: DatasetId) -> Result<Vec<DataItem>>;

    async fn count_data(&self, dataset: DatasetId) -> Result<u64>;

    /// Hides `ids` (nodes, edge object ids, vector rows) from searches of
    /// the dataset while `item` is being built or forgotten
    /// (docs/reliability.md, "Crash-safe remember and forget"). Repeating a
    /// row is harmless; the rows stay until [`DataStore::complete_data`]
    /// or the item's deletion.
    async fn quarantine(&self, dataset: DatasetId, item: Uuid, ids: &[Uuid]) -> Result<()>;

    /// Marks the item [`DataStatus::Forgetting`] and quarantines `ids`,
    /// together: a forget killed at any instant leaves either a completed
    /// item that shows or a forgetting one that does not.
    async fn begin_forget(&self, dataset: DatasetId, item: Uuid, ids: &[Uuid]) -> Result<()>;

    /// Every id quarantined in the dataset, each once.
    async fn quarantined(&self, dataset: DatasetId) -> Result<Vec<Uuid>>;

    /// The ids quarantined in the dataset by items other than `item`, each
    /// once: what still hides once a forget of `item` has deleted the rows
    /// its own quarantine covers. The default answers every id, which hides
    /// more than needed, never less.
    async fn quarantined_except(&self, dataset: DatasetId, item: Uuid) -> Result<Vec<Uuid>> {
        let _ = item;
        self.quarantined(dataset).await
    }

    /// Marks the items completed and lifts their quarantine, together.
    async fn complete_data(&self, dataset: DatasetId, items: &[Uuid]) -> Result<()>;

    /// Deletes one item (and its quarantine).
    async fn delete_data(&self, dataset: DatasetId, id: Uuid) -> Result<()>;

    async fn delete_dataset_data(&self, dataset: DatasetId) -> Result<()>;
}

/// Pipeline-run bookkeeping.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait PipelineRunStore: Send + Sync {
    async fn record_run(&self, run: &PipelineRun) -> Result<()>;

    /// Runs of one dataset, oldest first.
    async fn list_runs(&self, dataset: DatasetId) -> Result<Vec<PipelineRun>>;

    /// The graph-build state of these datasets (docs/recall.md, "The graph lane", step 4). The
    /// default reads every run; adapters answer it with one indexed query.
    async fn graph_build_status(&self, datasets: &[DatasetId]) -> Result<crate::GraphBuildStatus> {
        let mut runs = Vec::new();
        for d in datasets {
            runs.extend(self.list_runs(*d).await?);
        }
        Ok(crate::GraphBuildStatus::from_runs(&runs))
    }

    async fn delete_dataset_runs(&self, dataset: DatasetId) -> Result<()>;
}

/// Search history (docs/recall.md, "The graph lane", step 7): the `queries` and `results` tables.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait SearchHistoryStore: Send + Sync {
    /// Writes one query row and one result row per answer, atomically.
    async fn record_search(&self, record: &crate::SearchRecord) -> Result<()>;

    /// The user's questions (`user = "user"`) and answers (`user = "system"`), oldest first.
    async fn search_history(&self, user_id: Uuid) -> Result<Vec<crate::HistoryRow>>;
}

/// API keys and passwords (docs/auth.md): hashes only, never a key or a
/// password in the clear.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait CredentialStore: Send + Sync {
    /// Stores a key unless its user already holds `limit` keys, checked and
    /// written atomically (concurrent adds never pass the limit). `None`: the
    /// limit was reached, nothing was written.
    async fn add_api_key(&self, key: &crate::NewApiKey, limit: usize) -> Result<Option<crate::ApiKey>>;

    /// A user's keys, oldest first.
    async fn api_keys(&self, user_id: Uuid) -> Result<Vec<crate::ApiKey>>;

    /// Deletes one of a user's keys; `false` when the user holds no such key.
    async fn delete_api_key(&self, user_id: Uuid, id: Uuid) -> Result<bool>;

    /// The key stored under this hash.
    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<crate::ApiKey>>;

    /// Records a key's use.
    async fn touch_api_key(&self, id: Uuid, at: crate::EpochMillis) -> Result<()>;

    /// Sets (or replaces) a user's password hash.
    async fn set_password_hash(&self, user_id: Uuid, hash: &str) -> Result<()>;

    /// A user's password hash; `None` for a user without a password.
    async fn password_hash(&self, user_id: Uuid) -> Result<Option<String>>;
}

/// The relational store as one object, for adapters that implement every concern.
pub trait RelationalStore:
    UserStore + DatasetStore + DataStore + PipelineRunStore + SearchHistoryStore + CredentialStore
{
    fn name(&self) -> &'static str {
        "relational"
    }
}

/// The relational ports the engine uses, each held separately so a backend
/// may provide them from different places.
#[derive(Clone)]
pub struct RelationalPorts {
    pub users: Arc<dyn UserStore>,
    pub datasets: Arc<dyn DatasetStore>,
    pub data: Arc<dyn DataStore>,
    pub runs: Arc<dyn PipelineRunStore>,
    pub history: Arc<dyn SearchHistoryStore>,
    pub credentials: Arc<dyn CredentialStore>,
}

impl RelationalPorts {
    pub fn from_store<S: RelationalStore + 'static>(store: Arc<S>) -> Self {
        Self {
            users: store.clone(),
            datasets: store.clone(),
            data: store.clone(),
            runs: store.clone(),
            history: store.clone(),
            credentials: store,
        }
    }
}

// ---------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------

/// Turns texts into vectors.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model name recorded on every collection it fills.
    fn model(&self) -> String;

    fn dimensions(&self) -> usize;

    /// How many texts to send per call.
    fn batch_size(&self) -> usize {
        64
    }

    /// One vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;

    fn spec(&self) -> EmbeddingSpec {
        EmbeddingSpec { model: self.model(), dimensions: self.dimensions() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: Role::System, content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: Role::User, content: content.into() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
}

impl ChatRequest {
    pub fn new(system: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            messages: vec![ChatMessage::system(system), ChatMessage::user(user)],
            temperature: None,
            max_tokens: None,
        }
    }
}

/// Finds entities and relations in a chunk of text.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait GraphExtractor: Send + Sync {
    fn name(&self) -> &'static str;

    async fn extract(&self, text: &str) -> Result<crate::KnowledgeGraph>;
}

/// Writes a short summary of a chunk.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait Summarizer: Send + Sync {
    fn name(&self) -> &'static str;

    async fn summarize(&self, text: &str) -> Result<String>;
}

/// A chat-completion model.
#[cfg_attr(feature = "test-utils", mockall::automock)]
#[async_trait]
pub trait LlmClient: Send + Sync {
    fn model(&self) -> String;

    /// One completion, as text.
    async fn chat(&self, request: &ChatRequest) -> Result<String>;

    /// One completion constrained to a JSON schema; the returned value has been
    /// parsed but not validated against the schema.
    async fn structured(&self, request: &ChatRequest, schema_name: &str, schema: &Value) -> Result<Value>;

    /// Token deltas of one completion, as they arrive.
    async fn stream(&self, request: &ChatRequest) -> Result<BoxStream<'static, Result<String>>>;
}
