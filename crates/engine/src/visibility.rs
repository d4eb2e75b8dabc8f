//! What a search may see while data items are being built or forgotten
//! (docs/reliability.md, "Crash-safe remember and forget").
//!
//! A remember quarantines, before it writes a batch, every id the batch
//! creates (its documents, chunks and summaries, and the entities, types and
//! relations new to the dataset), and lifts the quarantine when the batch's
//! items are completed; a forget quarantines what it is about to delete. A
//! process killed in between leaves the rows behind, so its half-written or
//! half-deleted data stays out of every search until a later run finishes the
//! work. Searches read the stores through [`VisibleGraph`] and
//! [`VisibleVectors`], which drop quarantined nodes, the edges touching them,
//! quarantined relations and quarantined vector rows; with nothing
//! quarantined (the usual case) the stores are used as they are.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use recall_core::model::node_types;
use recall_core::ports::{
    EdgeKey, EdgeProjection, EmbeddingSpec, GraphCapabilities, GraphStore, Mentions, NodeSetFilter, Page, PageCursor,
    RankingReads, ScoredResult, Sketch, VectorRecord, VectorStore,
};
use recall_core::{ids, DatasetId, Edge, Node, Result, Subgraph};
use serde_json::json;
use uuid::Uuid;

use crate::ingest::graph_rows::{description_without, STRUCTURAL_EDGES};

/// Pages of `read` with `keep` applied, read on until `limit` items are kept
/// or the store has no more: a page the filter emptied does not end a read.
async fn read_visible_page<T, K, F, Fut>(
    mut after: Option<PageCursor<K>>,
    limit: usize,
    read: F,
    keep: impl Fn(&mut Vec<T>),
) -> Result<Page<T, K>>
where
    F: Fn(Option<PageCursor<K>>, usize) -> Fut,
    Fut: std::future::Future<Output = Result<Page<T, K>>>,
{
    let mut items = Vec::new();
    loop {
        let mut page = read(after, limit - items.len()).await?;
        keep(&mut page.items);
        items.append(&mut page.items);
        after = page.next;
        if after.is_none() || items.len() >= limit {
            return Ok(Page { items, next: after });
        }
    }
}

/// The quarantined ids of one dataset. [`Uuid::nil`] among them hides the
/// whole dataset (a forget of the dataset under way).
#[derive(Debug, Default, Clone)]
pub(crate) struct Hidden(Arc<HashSet<Uuid>>);

impl Hidden {
    pub(crate) fn new(ids: impl IntoIterator<Item = Uuid>) -> Self {
        Self(Arc::new(ids.into_iter().collect()))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn everything(&self) -> bool {
        self.0.contains(&Uuid::nil())
    }

    fn node(&self, id: &Uuid) -> bool {
        self.everything() || self.0.contains(id)
    }

    /// An edge is hidden with either endpoint, or as a quarantined relation
    /// (a new fact between two entities that were already there).
    fn edge(&self, source: Uuid, relationship: &str, target: Uuid) -> bool {
        self.node(&source)
            || self.node(&target)
            || (!STRUCTURAL_EDGES.contains(&relationship)
                && self.0.contains(&ids::edge_object_id(source, relationship, target)))
    }

    fn keep_nodes(&self, nodes: &mut Vec<Node>) {
        nodes.retain(|n| !self.node(&n.id));
    }

    fn keep_edges(&self, edges: &mut Vec<Edge>) {
        edges.retain(|e| !self.edge(e.source_node_id, &e.relationship_name, e.target_node_id));
    }

    /// The visible part of a subgraph.
    pub(crate) fn subgraph(&self, mut graph: Subgraph) -> Subgraph {
        if !self.is_empty() {
            self.keep_nodes(&mut graph.nodes);
            self.strip_descriptions(&mut graph.nodes, &graph.edges);
            self.keep_edges(&mut graph.edges);
        }
        graph
    }

    /// Takes out of entity descriptions what hidden chunks added (an entity
    /// the dataset already had takes a building batch's part of its
    /// description before the batch completes). `edges`: at least every
    /// `contains` edge into the nodes, hidden ones included.
    fn strip_descriptions(&self, nodes: &mut [Node], edges: &[Edge]) {
        let mut into: HashMap<Uuid, Vec<&Edge>> = HashMap::new();
        for e in edges.iter().filter(|e| e.relationship_name == "contains") {
            into.entry(e.target_node_id).or_default().push(e);
        }
        for node in nodes.iter_mut() {
            let Some(contains) = into.get(&node.id) else { continue };
            if !contains.iter().any(|e| self.node(&e.source_node_id)) {
                continue;
            }
            if let Some(description) = description_without(node, contains.iter().copied(), |c| self.node(c)) {
                node.properties.insert("description".into(), json!(description));
            }
        }
    }

    /// Mention rows of visible entities in visible documents. A hidden chunk
    /// belongs to a hidden document (a batch or a forget quarantines the
    /// document with its chunks), so rows are kept by entity and document.
    pub(crate) fn keep_mentions(&self, rows: &mut Vec<Mentions>) {
        rows.retain(|m| !self.node(&m.entity) && !self.node(&m.document));
    }

    fn ids(&self, ids: &[Uuid]) -> Vec<Uuid> {
        ids.iter().filter(|id| !self.node(id)).copied().collect()
    }
}

/// The engine's stores as a search of one dataset may see them.
pub(crate) fn visible_ports(
    graph: &Arc<dyn GraphStore>,
    vectors: &Arc<dyn VectorStore>,
    hidden: Hidden,
) -> (Arc<dyn GraphStore>, Arc<dyn VectorStore>) {
    if hidden.is_empty() {
        return (graph.clone(), vectors.clone());
    }
    (
        Arc::new(VisibleGraph { inner: graph.clone(), hidden: hidden.clone() }),
        Arc::new(VisibleVectors { inner: vectors.clone(), hidden }),
    )
}

/// A graph store without the quarantined nodes and edges. Writes pass through.
pub(crate) struct VisibleGraph {
    inner: Arc<dyn GraphStore>,
    hidden: Hidden,
}

impl VisibleGraph {
    /// [`Hidden::strip_descriptions`] for entities read by id or type.
    async fn strip(&self, dataset: DatasetId, nodes: &mut [Node]) -> Result<()> {
        let entities: Vec<Uuid> = nodes.iter().filter(|n| n.node_type == node_types::ENTITY).map(|n| n.id).collect();
        if !entities.is_empty() {
            let edges = self.inner.edges_touching(dataset, &entities, EdgeProjection::Only(&[])).await?;
            self.hidden.strip_descriptions(nodes, &edges);
        }
        Ok(())
    }
}

impl GraphCapabilities for VisibleGraph {
    fn ranking_reads(&self) -> Option<&dyn RankingReads> {
        // Where the store has no fast reads, the generic ones run over this
        // store's (filtered) primitives.
        self.inner.ranking_reads().map(|_| self as &dyn RankingReads)
    }

    /// Cypher reads the store as it is (docs/reliability.md).
    fn cypher(&self) -> Option<&dyn recall_core::ports::CypherQueries> {
        self.inner.cypher()
    }
}

#[async_trait]
impl GraphStore for VisibleGraph {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn upsert_nodes(&self, dataset: DatasetId, nodes: &[Node]) -> Result<()> {
        self.inner.upsert_nodes(dataset, nodes).await
    }

    async fn upsert_edges(&self, dataset: DatasetId, edges: &[Edge]) -> Result<()> {
        self.inner.upsert_edges(dataset, edges).await
    }

    async fn upsert_stated_edges(&self, dataset: DatasetId, edges: &[(Edge, Vec<String>)]) -> Result<()> {
        self.inner.upsert_stated_edges(dataset, edges).await
    }

    /// Of every edge, hidden or not: a write's question, not a search's.
    async fn stated_by(&self, dataset: DatasetId, keys: &[EdgeKey], document: &str) -> Result<Vec<(EdgeKey, bool)>> {
        self.inner.stated_by(dataset, keys, document).await
    }

    async fn get_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Node>> {
        let mut nodes = self.inner.get_nodes(dataset, &self.hidden.ids(ids)).await?;
        self.strip(dataset, &mut nodes).await?;
        Ok(nodes)
    }

    async fn adjacent_ids(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Uuid>> {
        Ok(self.hidden.ids(&self.inner.adjacent_ids(dataset, &self.hidden.ids(ids)).await?))
    }

    async fn edges_between(&self, dataset: DatasetId, ids: &[Uuid], props: EdgeProjection) -> Result<Vec<Edge>> {
        let mut edges = self.inner.edges_between(dataset, &self.hidden.ids(ids), props).await?;
        self.hidden.keep_edges(&mut edges);
        Ok(edges)
    }

    async fn edges_touching(&self, dataset: DatasetId, ids: &[Uuid], props: EdgeProjection) -> Result<Vec<Edge>> {
        let mut edges = self.inner.edges_touching(dataset, &self.hidden.ids(ids), props).await?;
        self.hidden.keep_edges(&mut edges);
        Ok(edges)
    }

    async fn get_graph(&self, dataset: DatasetId) -> Result<Subgraph> {
        Ok(self.hidden.subgraph(self.inner.get_graph(dataset).await?))
    }

    /// Reads on past hidden nodes until the page is full or the store ends,
    /// so a short page still means the end.
    async fn nodes_page(
        &self,
        dataset: DatasetId,
        after: Option<PageCursor<Uuid>>,
        limit: usize,
    ) -> Result<Page<Node, Uuid>> {
        let mut page = read_visible_page(
            after,
            limit,
            |after, n| self.inner.nodes_page(dataset, after, n),
            |nodes| self.hidden.keep_nodes(nodes),
        )
        .await?;
        self.strip(dataset, &mut page.items).await?;
        Ok(page)
    }

    /// As [`Self::nodes_page`], past hidden edges.
    async fn edges_page(
        &self,
        dataset: DatasetId,
        after: Option<PageCursor<EdgeKey>>,
        limit: usize,
    ) -> Result<Page<Edge, EdgeKey>> {
        read_visible_page(
            after,
            limit,
            |after, n| self.inner.edges_page(dataset, after, n),
            |edges| self.hidden.keep_edges(edges),
        )
        .await
    }

    async fn node_ids_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Uuid>> {
        let mut ids = self.inner.node_ids_by_type(dataset, node_type).await?;
        ids.retain(|id| !self.hidden.node(id));
        Ok(ids)
    }

    async fn nodes_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Node>> {
        let mut nodes = self.inner.nodes_by_type(dataset, node_type).await?;
        self.hidden.keep_nodes(&mut nodes);
        self.strip(dataset, &mut nodes).await?;
        Ok(nodes)
    }

    async fn delete_edges(&self, dataset: DatasetId, keys: &[EdgeKey]) -> Result<()> {
        self.inner.delete_edges(dataset, keys).await
    }

    async fn edges_with_texts(&self, dataset: DatasetId, texts: &[String]) -> Result<Vec<Edge>> {
        let mut edges = self.inner.edges_with_texts(dataset, texts).await?;
        self.hidden.keep_edges(&mut edges);
        Ok(edges)
    }

    /// See [`Hidden::keep_mentions`].
    async fn document_mentions(&self, dataset: DatasetId, entities: &[Uuid]) -> Result<Vec<Mentions>> {
        let mut rows = self.inner.document_mentions(dataset, &self.hidden.ids(entities)).await?;
        self.hidden.keep_mentions(&mut rows);
        Ok(rows)
    }

    // `count_edges_into` keeps the trait's default: it counts the edges
    // read through this filter (a store's own count would include hidden ones).

    /// The store's counts (quarantined rows included).
    async fn count(&self, dataset: DatasetId) -> Result<(u64, u64)> {
        self.inner.count(dataset).await
    }

    /// Empty when every node is quarantined: a search then tells "no data"
    /// as it would before the first remember finished.
    async fn is_empty(&self, dataset: DatasetId) -> Result<bool> {
        if self.hidden.everything() || self.inner.is_empty(dataset).await? {
            return Ok(true);
        }
        let (nodes, _) = self.inner.count(dataset).await?;
        if nodes > self.hidden.0.len() as u64 {
            return Ok(false);
        }
        let hidden: Vec<Uuid> = self.hidden.0.iter().copied().collect();
        Ok(self.inner.get_nodes(dataset, &hidden).await?.len() as u64 >= nodes)
    }

    async fn delete_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<()> {
        self.inner.delete_nodes(dataset, ids).await
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        self.inner.delete_dataset(dataset).await
    }

    // `neighborhood`, `edges_around` and `nodeset_subgraph` are the trait's
    // compositions over the filtered primitives above: a walk never passes
    // through a hidden node.

    async fn healthcheck(&self) -> Result<()> {
        self.inner.healthcheck().await
    }
}

#[async_trait]
impl RankingReads for VisibleGraph {
    async fn sketch_between(&self, dataset: DatasetId, seeds: &[Uuid], feedback: bool) -> Result<Sketch> {
        let mut sketch = self.inner.ranking().sketch_between(dataset, &self.hidden.ids(seeds), feedback).await?;
        sketch.nodes.retain(|n| !self.hidden.node(&n.id));
        sketch.edges.retain(|e| !self.hidden.edge(e.source_node_id, &e.relationship_name, e.target_node_id));
        Ok(sketch)
    }

    async fn get_edges(&self, dataset: DatasetId, keys: &[EdgeKey], props: EdgeProjection) -> Result<Vec<Edge>> {
        let keys: Vec<EdgeKey> = keys.iter().filter(|(s, r, t)| !self.hidden.edge(*s, r, *t)).cloned().collect();
        self.inner.ranking().get_edges(dataset, &keys, props).await
    }

    async fn edges_around_of_types(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        type_keys: &[Uuid],
        props: EdgeProjection,
    ) -> Result<Subgraph> {
        let graph =
            self.inner.ranking().edges_around_of_types(dataset, &self.hidden.ids(ids), type_keys, props).await?;
        Ok(self.hidden.subgraph(graph))
    }

    async fn whole_sketch(&self, dataset: DatasetId) -> Result<Sketch> {
        let mut sketch = self.inner.ranking().whole_sketch(dataset).await?;
        sketch.nodes.retain(|n| !self.hidden.node(&n.id));
        sketch.edges.retain(|e| !self.hidden.edge(e.source_node_id, &e.relationship_name, e.target_node_id));
        Ok(sketch)
    }
}

/// A vector store without the quarantined rows. Writes pass through.
pub(crate) struct VisibleVectors {
    inner: Arc<dyn VectorStore>,
    hidden: Hidden,
}

impl VisibleVectors {
    /// The `limit` nearest visible hits of `fetch` (a search asked for a
    /// number of hits). Asks for a few more than `limit` first, and for as
    /// many more as could be hidden only when the first answer came back
    /// full and too short: hiding never shortens an answer, and a large
    /// quarantine does not widen every search.
    async fn visible<T, Fut>(
        &self,
        limit: Option<usize>,
        id: impl Fn(&T) -> Uuid,
        fetch: impl Fn(Option<usize>) -> Fut,
    ) -> Result<Vec<T>>
    where
        Fut: std::future::Future<Output = Result<Vec<T>>>,
    {
        if self.hidden.everything() {
            return Ok(Vec::new());
        }
        let widest = limit.map(|l| l.saturating_add(self.hidden.0.len()));
        let mut ask = limit.map(|l| l.saturating_mul(2).saturating_add(16)).min(widest);
        loop {
            let mut hits = fetch(ask).await?;
            let full = ask.is_some_and(|a| hits.len() >= a);
            hits.retain(|h| !self.hidden.node(&id(h)));
            match limit {
                Some(l) if hits.len() < l && full && ask < widest => ask = widest,
                Some(l) => {
                    hits.truncate(l);
                    return Ok(hits);
                }
                None => return Ok(hits),
            }
        }
    }
}

#[async_trait]
impl VectorStore for VisibleVectors {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn ensure_collection(&self, dataset: DatasetId, collection: &str, spec: &EmbeddingSpec) -> Result<()> {
        self.inner.ensure_collection(dataset, collection, spec).await
    }

    async fn collection_spec(&self, collection: &str) -> Result<Option<EmbeddingSpec>> {
        self.inner.collection_spec(collection).await
    }

    async fn has_collection(&self, dataset: DatasetId, collection: &str) -> Result<bool> {
        self.inner.has_collection(dataset, collection).await
    }

    async fn upsert(&self, dataset: DatasetId, collection: &str, records: Vec<VectorRecord>) -> Result<()> {
        self.inner.upsert(dataset, collection, records).await
    }

    async fn search(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
    ) -> Result<Vec<ScoredResult>> {
        let fetch = |ask| self.inner.search(dataset, collection, query, ask, filter.clone());
        self.visible(limit, |h: &ScoredResult| h.id, fetch).await
    }

    async fn search_ids(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
    ) -> Result<Vec<(Uuid, f64)>> {
        let fetch = |ask| self.inner.search_ids(dataset, collection, query, ask, filter.clone());
        self.visible(limit, |h: &(Uuid, f64)| h.0, fetch).await
    }

    async fn count(&self, dataset: DatasetId, collection: &str) -> Result<u64> {
        self.inner.count(dataset, collection).await
    }

    async fn delete(&self, dataset: DatasetId, collection: &str, ids: &[Uuid]) -> Result<()> {
        self.inner.delete(dataset, collection, ids).await
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        self.inner.delete_dataset(dataset).await
    }

    async fn refresh(&self) -> Result<()> {
        self.inner.refresh().await
    }

    async fn settle(&self) {
        self.inner.settle().await;
    }

    async fn healthcheck(&self) -> Result<()> {
        self.inner.healthcheck().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recall_memory::{MemoryGraphStore, MemoryVectorStore};
    use serde_json::Map;

    fn node(id: Uuid) -> Node {
        Node { id, node_type: "Entity".into(), properties: Map::new() }
    }

    #[tokio::test]
    async fn hides_quarantined_nodes_edges_relations_and_rows() {
        let dataset = DatasetId(Uuid::new_v4());
        let (a, b, c, fresh) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let graph: Arc<dyn GraphStore> = Arc::new(MemoryGraphStore::default());
        graph.upsert_nodes(dataset, &[node(a), node(b), node(c), node(fresh)]).await.unwrap();
        let edges = [
            Edge::new(a, "knows", b),
            Edge::new(b, "knows", c),
            Edge::new(a, "likes", fresh),
            Edge::new(a, "contains", c),
        ];
        graph.upsert_edges(dataset, &edges).await.unwrap();
        let vectors: Arc<dyn VectorStore> = Arc::new(MemoryVectorStore::default());
        let spec = EmbeddingSpec { model: "m".into(), dimensions: 2 };
        vectors.ensure_collection(dataset, "Entity_name", &spec).await.unwrap();
        let rows = [a, b, fresh]
            .iter()
            .map(|id| VectorRecord { id: *id, vector: vec![1.0, 0.0], payload: Map::new(), belongs_to_set: vec![] })
            .collect();
        vectors.upsert(dataset, "Entity_name", rows).await.unwrap();

        // `fresh` is a new node; b→c a new relation between old nodes.
        let hidden = Hidden::new([fresh, ids::edge_object_id(b, "knows", c)]);
        let (g, v) = visible_ports(&graph, &vectors, hidden);
        let all = g.get_graph(dataset).await.unwrap();
        let mut names: Vec<(Uuid, String, Uuid)> =
            all.edges.iter().map(|e| (e.source_node_id, e.relationship_name.clone(), e.target_node_id)).collect();
        names.sort();
        let mut expected = vec![(a, "knows".to_string(), b), (a, "contains".to_string(), c)];
        expected.sort();
        assert_eq!(names, expected, "the new relation and the edge to the new node are hidden");
        assert_eq!(all.nodes.len(), 3);
        assert!(g.get_nodes(dataset, &[fresh, a]).await.unwrap().iter().all(|n| n.id == a));
        let around = g.neighborhood(dataset, &[a], 2, EdgeProjection::All).await.unwrap();
        assert!(around.nodes.iter().all(|n| n.id != fresh));
        let sketch = g.ranking().sketch_between(dataset, &[a, b, c, fresh], false).await.unwrap();
        assert_eq!(sketch.edges.len(), 2, "{sketch:?}");

        let hits = v.search(dataset, "Entity_name", &[1.0, 0.0], Some(2), None).await.unwrap();
        assert_eq!(hits.len(), 2, "the hidden row does not shorten the answer");
        assert!(hits.iter().all(|h| h.id != fresh));
        assert!(!g.is_empty(dataset).await.unwrap());

        // The whole dataset hidden (its forget under way).
        let (g, v) = visible_ports(&graph, &vectors, Hidden::new([Uuid::nil()]));
        assert!(g.is_empty(dataset).await.unwrap());
        assert!(g.get_graph(dataset).await.unwrap().nodes.is_empty());
        assert!(v.search(dataset, "Entity_name", &[1.0, 0.0], None, None).await.unwrap().is_empty());

        // Nothing hidden: the stores themselves.
        let (g, _) = visible_ports(&graph, &vectors, Hidden::default());
        assert!(Arc::ptr_eq(&g, &graph));
    }

    #[tokio::test]
    async fn an_old_entity_shows_no_words_of_a_hidden_chunk() {
        let dataset = DatasetId(Uuid::new_v4());
        let (lisbon, seen, building) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let mut entity = node(lisbon);
        entity.properties.insert("name".into(), json!("lisbon"));
        entity.properties.insert("description".into(), json!("A port. A storm hit it."));
        let graph: Arc<dyn GraphStore> = Arc::new(MemoryGraphStore::default());
        graph.upsert_nodes(dataset, &[entity, node(seen), node(building)]).await.unwrap();
        let mentions = |chunk, part: &str| {
            Edge::new(chunk, "contains", lisbon).with_text(format!("Document chunk mentions lisbon: {part}"))
        };
        graph.upsert_edges(dataset, &[mentions(seen, "A port."), mentions(building, "A storm hit it.")]).await.unwrap();
        let vectors: Arc<dyn VectorStore> = Arc::new(MemoryVectorStore::default());
        let description = |nodes: &[Node]| {
            nodes.iter().find(|n| n.id == lisbon).and_then(|n| n.properties.get("description").cloned()).unwrap()
        };
        let (g, _) = visible_ports(&graph, &vectors, Hidden::new([building]));
        assert_eq!(description(&g.get_nodes(dataset, &[lisbon]).await.unwrap()), json!("A port."));
        assert_eq!(description(&g.get_graph(dataset).await.unwrap().nodes), json!("A port."));
        assert_eq!(description(&g.nodes_by_type(dataset, "Entity").await.unwrap()), json!("A port."));
        // A part a visible chunk gave too stays.
        graph.upsert_edges(dataset, &[mentions(seen, "A storm hit it.")]).await.unwrap();
        assert_eq!(description(&g.get_nodes(dataset, &[lisbon]).await.unwrap()), json!("A port. A storm hit it."));
    }

    #[tokio::test]
    async fn a_search_widens_past_a_large_quarantine() {
        let dataset = DatasetId(Uuid::new_v4());
        let vectors: Arc<dyn VectorStore> = Arc::new(MemoryVectorStore::default());
        let spec = EmbeddingSpec { model: "m".into(), dimensions: 2 };
        vectors.ensure_collection(dataset, "c", &spec).await.unwrap();
        // Row i is i degrees away from the query: the nearest 40 are hidden.
        let ids: Vec<Uuid> = (0..60).map(|_| Uuid::new_v4()).collect();
        let rows = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let a = (i as f32).to_radians();
                VectorRecord { id: *id, vector: vec![a.cos(), a.sin()], payload: Map::new(), belongs_to_set: vec![] }
            })
            .collect();
        vectors.upsert(dataset, "c", rows).await.unwrap();
        let graph: Arc<dyn GraphStore> = Arc::new(MemoryGraphStore::default());
        let (_, v) = visible_ports(&graph, &vectors, Hidden::new(ids[..40].iter().copied()));
        let hits = v.search(dataset, "c", &[1.0, 0.0], Some(5), None).await.unwrap();
        let got: Vec<Uuid> = hits.iter().map(|h| h.id).collect();
        assert_eq!(got, ids[40..45].to_vec(), "the five nearest visible rows, in order");
        let bare = v.search_ids(dataset, "c", &[1.0, 0.0], Some(5), None).await.unwrap();
        assert_eq!(bare.iter().map(|h| h.0).collect::<Vec<_>>(), got, "ids alone hide and widen alike");
        let all = v.search(dataset, "c", &[1.0, 0.0], None, None).await.unwrap();
        assert_eq!(all.len(), 20);
    }

    #[tokio::test]
    async fn a_graph_whose_every_node_is_hidden_is_empty() {
        let dataset = DatasetId(Uuid::new_v4());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let graph: Arc<dyn GraphStore> = Arc::new(MemoryGraphStore::default());
        graph.upsert_nodes(dataset, &[node(a), node(b)]).await.unwrap();
        let vectors: Arc<dyn VectorStore> = Arc::new(MemoryVectorStore::default());
        let (g, _) = visible_ports(&graph, &vectors, Hidden::new([a, b, Uuid::new_v4()]));
        assert!(g.is_empty(dataset).await.unwrap());
        let (g, _) = visible_ports(&graph, &vectors, Hidden::new([a]));
        assert!(!g.is_empty(dataset).await.unwrap());
    }

    #[tokio::test]
    async fn pages_read_on_past_hidden_runs() {
        let dataset = DatasetId(Uuid::new_v4());
        let mut ids: Vec<Uuid> = (0..10).map(|_| Uuid::new_v4()).collect();
        ids.sort();
        let graph: Arc<dyn GraphStore> = Arc::new(MemoryGraphStore::default());
        graph.upsert_nodes(dataset, &ids.iter().map(|id| node(*id)).collect::<Vec<_>>()).await.unwrap();
        let edges: Vec<Edge> = ids.windows(2).map(|w| Edge::new(w[0], "next", w[1])).collect();
        graph.upsert_edges(dataset, &edges).await.unwrap();
        let vectors: Arc<dyn VectorStore> = Arc::new(MemoryVectorStore::default());
        // A run of four hidden nodes, longer than a page of two.
        let (g, _) = visible_ports(&graph, &vectors, Hidden::new(ids[1..5].to_vec()));
        let (mut seen, mut after) = (Vec::new(), None);
        loop {
            let page = g.nodes_page(dataset, after, 2).await.unwrap();
            assert!(page.items.len() == 2 || page.next.is_none(), "a short page is the last");
            seen.extend(page.items.iter().map(|n| n.id));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let visible: Vec<Uuid> =
            ids.iter().enumerate().filter(|(i, _)| !(1..5).contains(i)).map(|(_, id)| *id).collect();
        assert_eq!(seen, visible, "a full page of hidden nodes does not end the read");
        let (mut seen, mut after) = (0, None);
        loop {
            let page = g.edges_page(dataset, after, 2).await.unwrap();
            seen += page.items.len();
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, 4, "the edges with no hidden endpoint: 5-6, 6-7, 7-8, 8-9");
    }
}
