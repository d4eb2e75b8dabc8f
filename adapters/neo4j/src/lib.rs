//! The Neo4j graph store (neo4rs, Bolt). Written in the Cypher subset that
//! Neo4j 5 and FalkorDB share; the Neo4j-only parts (index DDL) sit behind
//! [`neo4j_schema_statements`] and run only with [`SchemaMode::Neo4j`].
//!
//! Layout: every node is `(:RecallNode {dataset_id, id, node_type, name, text,
//! props})`, where `props` is the node's full property map as JSON (exact
//! round-trip; Neo4j properties cannot hold nested maps or nulls) and `name`,
//! `text`, `node_type` are copied out for readable Cypher. Every edge has the
//! relationship name as its type (`-[:is_a]->`) and carries `dataset_id`,
//! `edge_text` and `props`. Every query matches on `dataset_id`, so one
//! database shared by many datasets never leaks across them. No temporal Bolt
//! types are stored: times are integers or ISO strings inside `props`.

use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;
use neo4rs::{query, BoltType, Graph};
use recall_core::ports::{
    key_cursor, CypherQueries, EdgeKey, EdgeProjection, GraphCapabilities, GraphStore, Page, PageCursor,
};
use recall_core::{DatasetId, Edge, Node, RecallError, Result, Subgraph};
use serde_json::{Map, Value};
use uuid::Uuid;

/// Rows per UNWIND batch.
const BATCH: usize = 500;

/// Connection settings for a Bolt server.
#[derive(Debug, Clone)]
pub struct Neo4jConfig {
    pub uri: String,
    pub user: String,
    pub password: recall_core::Secret,
    /// Which index DDL to run at start-up.
    pub schema: SchemaMode,
    /// Upper bound on the estimated size of one UNWIND batch, in bytes
    /// (default 1 MiB): bounds the memory of one write on client and server.
    pub max_batch_bytes: usize,
}

/// Index management at start-up. Every query looks nodes up by
/// (`dataset_id`, `id`): without an index each lookup scans every node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaMode {
    /// Neo4j 5 DDL ([`neo4j_schema_statements`]). Verified only against real Neo4j.
    #[default]
    Neo4j,
    /// FalkorDB's DDL ([`falkordb_schema_statements`]); "already indexed" answers are ignored.
    FalkorDb,
    /// Leave indexes to the operator.
    None,
}

/// FalkorDB's index DDL (no `IF NOT EXISTS`; a second run answers "already indexed").
pub fn falkordb_schema_statements() -> Vec<&'static str> {
    vec!["CREATE INDEX FOR (n:RecallNode) ON (n.id)", "CREATE INDEX FOR (n:RecallNode) ON (n.dataset_id)"]
}

impl Neo4jConfig {
    pub fn new(uri: impl Into<String>, user: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            user: user.into(),
            password: recall_core::Secret::new(password),
            schema: SchemaMode::Neo4j,
            max_batch_bytes: 1 << 20,
        }
    }
}

/// Splits rows into batches of at most `BATCH` rows and about `budget` bytes
/// (a row larger than the budget goes alone).
fn batches<T>(rows: Vec<(T, usize)>, budget: usize) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut bytes = 0;
    for (row, size) in rows {
        if !current.is_empty() && (bytes + size > budget || current.len() >= BATCH) {
            out.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes += size;
        current.push(row);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Neo4j 5 DDL for the lookups every query makes: (dataset_id, id) and
/// (dataset_id, node_type). Verified only against real Neo4j.
pub fn neo4j_schema_statements() -> Vec<&'static str> {
    vec![
        "CREATE INDEX recall_node_key IF NOT EXISTS FOR (n:RecallNode) ON (n.dataset_id, n.id)",
        "CREATE INDEX recall_node_type IF NOT EXISTS FOR (n:RecallNode) ON (n.dataset_id, n.node_type)",
    ]
}

/// A relationship type as a Cypher identifier: back-ticked, back-ticks doubled.
pub fn rel_type(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

fn err(e: neo4rs::Error) -> RecallError {
    RecallError::backend(e)
}

fn de(e: neo4rs::DeError) -> RecallError {
    RecallError::backend_msg(format!("unexpected value from the graph: {e}"))
}

fn parse_uuid(s: &str) -> Result<Uuid> {
    Uuid::parse_str(s).map_err(|e| RecallError::backend_msg(format!("corrupt id '{s}' in the graph: {e}")))
}

fn parse_props(s: &str) -> Map<String, Value> {
    match serde_json::from_str(s) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// A connected Neo4j (or other Bolt) graph.
pub struct Neo4jGraphStore {
    graph: Graph,
    max_batch_bytes: usize,
}

impl Neo4jGraphStore {
    pub async fn connect(config: &Neo4jConfig) -> Result<Self> {
        let graph = Graph::new(&config.uri, &config.user, config.password.expose()).await.map_err(err)?;
        let store = Self { graph, max_batch_bytes: config.max_batch_bytes.max(1) };
        store.healthcheck_bolt().await?;
        match config.schema {
            SchemaMode::Neo4j => {
                for ddl in neo4j_schema_statements() {
                    store.graph.run(query(ddl)).await.map_err(err)?;
                }
            }
            SchemaMode::FalkorDb => {
                for ddl in falkordb_schema_statements() {
                    if let Err(e) = store.graph.run(query(ddl)).await {
                        // A second start finds the index in place; anything else is real.
                        if !e.to_string().to_lowercase().contains("already indexed") {
                            return Err(err(e));
                        }
                    }
                }
            }
            SchemaMode::None => {}
        }
        Ok(store)
    }

    /// Ids per `IN $ids` list, within the batch byte budget.
    fn id_chunk(&self) -> usize {
        (self.max_batch_bytes / 48).clamp(1, BATCH)
    }

    async fn healthcheck_bolt(&self) -> Result<()> {
        let mut rows = self.graph.execute(query("RETURN 1 AS one")).await.map_err(err)?;
        while rows.next().await.map_err(err)?.is_some() {}
        Ok(())
    }

    async fn rows(&self, q: neo4rs::Query) -> Result<Vec<neo4rs::Row>> {
        let mut stream = self.graph.execute(q).await.map_err(err)?;
        let mut out = Vec::new();
        while let Some(row) = stream.next().await.map_err(err)? {
            out.push(row);
        }
        Ok(out)
    }

    async fn nodes_where(&self, dataset: DatasetId, clause: &str, params: Vec<(&str, BoltType)>) -> Result<Vec<Node>> {
        self.nodes_query(dataset, clause, "", params).await
    }

    /// [`Self::nodes_where`] with a `tail` after the RETURN (an ORDER BY, a LIMIT).
    async fn nodes_query(
        &self,
        dataset: DatasetId,
        clause: &str,
        tail: &str,
        params: Vec<(&str, BoltType)>,
    ) -> Result<Vec<Node>> {
        let mut q = query(&format!(
            "MATCH (n:RecallNode {{dataset_id: $ds}}) {clause} \
             RETURN n.id AS id, n.node_type AS node_type, n.props AS props {tail}"
        ))
        .param("ds", dataset.to_string());
        for (k, v) in params {
            q = q.param(k, v);
        }
        self.rows(q).await?.iter().map(node_from_row).collect()
    }

    async fn edges_where(&self, dataset: DatasetId, clause: &str, params: Vec<(&str, BoltType)>) -> Result<Vec<Edge>> {
        self.edges_query(dataset, clause, "", params).await
    }

    /// [`Self::edges_where`] with a `tail` after the RETURN.
    async fn edges_query(
        &self,
        dataset: DatasetId,
        clause: &str,
        tail: &str,
        params: Vec<(&str, BoltType)>,
    ) -> Result<Vec<Edge>> {
        let mut q = query(&format!(
            "MATCH (a:RecallNode {{dataset_id: $ds}})-[r]->(b:RecallNode {{dataset_id: $ds}}) {clause} \
             RETURN a.id AS source, type(r) AS rel, b.id AS target, r.edge_text AS edge_text, r.props AS props {tail}"
        ))
        .param("ds", dataset.to_string());
        for (k, v) in params {
            q = q.param(k, v);
        }
        self.rows(q).await?.iter().map(edge_from_row).collect()
    }
}

fn node_from_row(row: &neo4rs::Row) -> Result<Node> {
    let id: String = row.get("id").map_err(de)?;
    let node_type: String = row.get("node_type").map_err(de)?;
    let props: String = row.get("props").map_err(de)?;
    Ok(Node { id: parse_uuid(&id)?, node_type, properties: parse_props(&props) })
}

fn edge_from_row(row: &neo4rs::Row) -> Result<Edge> {
    let source: String = row.get("source").map_err(de)?;
    let target: String = row.get("target").map_err(de)?;
    let relationship_name: String = row.get("rel").map_err(de)?;
    let edge_text: Option<String> = row.get::<Option<String>>("edge_text").map_err(de)?;
    let props: Option<String> = row.get::<Option<String>>("props").map_err(de)?;
    Ok(Edge {
        source_node_id: parse_uuid(&source)?,
        target_node_id: parse_uuid(&target)?,
        relationship_name,
        edge_text,
        properties: props.as_deref().map(parse_props).unwrap_or_default(),
    })
}

fn id_list(ids: &[Uuid]) -> BoltType {
    ids.iter().map(Uuid::to_string).collect::<Vec<_>>().into()
}

#[async_trait]
impl GraphStore for Neo4jGraphStore {
    fn name(&self) -> &'static str {
        "neo4j"
    }

    async fn upsert_nodes(&self, dataset: DatasetId, nodes: &[Node]) -> Result<()> {
        let mut unique: BTreeMap<Uuid, &Node> = BTreeMap::new();
        for n in nodes {
            unique.insert(n.id, n);
        }
        let rows: Vec<(HashMap<String, BoltType>, usize)> = unique
            .into_values()
            .map(|n| {
                let text = n.properties.get("text").and_then(Value::as_str).map(str::to_string);
                let props = Value::Object(n.properties.clone()).to_string();
                let size = 128 + props.len() + text.as_ref().map_or(0, String::len) + n.name().map_or(0, str::len);
                // Absent keys read as null in Cypher; FalkorDB cannot take a null inside a map parameter.
                let mut row = HashMap::from([
                    ("id".to_string(), BoltType::from(n.id.to_string())),
                    ("node_type".to_string(), BoltType::from(n.node_type.clone())),
                    ("props".to_string(), BoltType::from(props)),
                ]);
                if let Some(name) = n.name() {
                    row.insert("name".to_string(), BoltType::from(name));
                }
                if let Some(text) = text {
                    row.insert("text".to_string(), BoltType::from(text));
                }
                (row, size)
            })
            .collect();
        for rows in batches(rows, self.max_batch_bytes) {
            let q = query(
                "UNWIND $rows AS row MERGE (n:RecallNode {dataset_id: $ds, id: row.id}) \
                 SET n.node_type = row.node_type, n.name = row.name, n.text = row.text, n.props = row.props",
            )
            .param("ds", dataset.to_string())
            .param("rows", rows);
            self.graph.run(q).await.map_err(err)?;
        }
        Ok(())
    }

    async fn upsert_edges(&self, dataset: DatasetId, edges: &[Edge]) -> Result<()> {
        // Relationship types cannot be parameters: one UNWIND per type.
        let mut by_type: BTreeMap<&str, BTreeMap<(Uuid, Uuid), &Edge>> = BTreeMap::new();
        for e in edges {
            by_type.entry(e.relationship_name.as_str()).or_default().insert((e.source_node_id, e.target_node_id), e);
        }
        for (rel, edges) in by_type {
            let rows: Vec<(HashMap<String, BoltType>, usize)> = edges
                .into_values()
                .map(|e| {
                    let props = Value::Object(e.properties.clone()).to_string();
                    let size = 160 + props.len() + e.edge_text.as_ref().map_or(0, String::len);
                    let mut row = HashMap::from([
                        ("s".to_string(), BoltType::from(e.source_node_id.to_string())),
                        ("t".to_string(), BoltType::from(e.target_node_id.to_string())),
                        ("props".to_string(), BoltType::from(props)),
                    ]);
                    if let Some(text) = &e.edge_text {
                        row.insert("text".to_string(), BoltType::from(text.as_str()));
                    }
                    (row, size)
                })
                .collect();
            for rows in batches(rows, self.max_batch_bytes) {
                let q = query(&format!(
                    "UNWIND $rows AS row \
                     MATCH (a:RecallNode {{dataset_id: $ds, id: row.s}}) \
                     MATCH (b:RecallNode {{dataset_id: $ds, id: row.t}}) \
                     MERGE (a)-[r:{}]->(b) \
                     SET r.dataset_id = $ds, r.edge_text = row.text, r.props = row.props",
                    rel_type(rel)
                ))
                .param("ds", dataset.to_string())
                .param("rows", rows);
                self.graph.run(q).await.map_err(err)?;
            }
        }
        Ok(())
    }

    async fn get_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Node>> {
        let mut by_id = HashMap::new();
        for chunk in ids.chunks(self.id_chunk()) {
            for n in self.nodes_where(dataset, "WHERE n.id IN $ids", vec![("ids", id_list(chunk))]).await? {
                by_id.insert(n.id, n);
            }
        }
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    async fn adjacent_ids(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Uuid>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(self.id_chunk()) {
            let q = query(
                "MATCH (a:RecallNode {dataset_id: $ds})-[]-(b:RecallNode {dataset_id: $ds}) \
                 WHERE a.id IN $ids RETURN DISTINCT b.id AS id",
            )
            .param("ds", dataset.to_string())
            .param("ids", id_list(chunk));
            for row in self.rows(q).await? {
                let id: String = row.get("id").map_err(de)?;
                out.push(parse_uuid(&id)?);
            }
        }
        Ok(out)
    }

    /// By source in chunks, the targets checked against the set here.
    async fn edges_between(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>> {
        let set: HashSet<&Uuid> = ids.iter().collect();
        let mut edges = Vec::new();
        for chunk in ids.chunks(self.id_chunk()) {
            let found = self.edges_where(dataset, "WHERE a.id IN $ids", vec![("ids", id_list(chunk))]).await?;
            edges.extend(found.into_iter().filter(|e| set.contains(&e.target_node_id)));
        }
        // Properties are one map per relationship in Neo4j: projected here.
        edge_properties.apply(&mut edges);
        Ok(edges)
    }

    async fn edges_touching(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>> {
        let mut seen: HashSet<EdgeKey> = HashSet::new();
        let mut edges = Vec::new();
        for chunk in ids.chunks(self.id_chunk()) {
            let found =
                self.edges_where(dataset, "WHERE a.id IN $ids OR b.id IN $ids", vec![("ids", id_list(chunk))]).await?;
            edges.extend(found.into_iter().filter(|e| seen.insert(e.key())));
        }
        edge_properties.apply(&mut edges);
        Ok(edges)
    }

    /// Filtered by the server (texts in byte-bounded batches): only the
    /// matching relationships cross the wire, not the dataset's graph.
    async fn edges_with_texts(&self, dataset: DatasetId, texts: &[String]) -> Result<Vec<Edge>> {
        let mut seen: HashSet<EdgeKey> = HashSet::new();
        let mut edges = Vec::new();
        let rows: Vec<(String, usize)> = texts.iter().map(|t| (t.clone(), t.len() + 16)).collect();
        for batch in batches(rows, self.max_batch_bytes) {
            let found = self
                .edges_where(dataset, "WHERE r.edge_text IN $texts", vec![("texts", BoltType::from(batch))])
                .await?;
            edges.extend(found.into_iter().filter(|e| seen.insert(e.key())));
        }
        Ok(edges)
    }

    async fn get_graph(&self, dataset: DatasetId) -> Result<Subgraph> {
        let mut nodes = self.nodes_where(dataset, "", vec![]).await?;
        nodes.sort_by_key(|n| n.id);
        let mut edges = self.edges_where(dataset, "", vec![]).await?;
        edges.sort_by(|a, b| {
            (a.source_node_id, &a.relationship_name, a.target_node_id).cmp(&(
                b.source_node_id,
                &b.relationship_name,
                b.target_node_id,
            ))
        });
        Ok(Subgraph { nodes, edges })
    }

    /// A keyset read over the `(dataset_id, id)` index.
    async fn nodes_page(
        &self,
        dataset: DatasetId,
        after: Option<PageCursor<Uuid>>,
        limit: usize,
    ) -> Result<Page<Node, Uuid>> {
        let tail = format!("ORDER BY id LIMIT {limit}");
        let nodes = match key_cursor(after)? {
            None => self.nodes_query(dataset, "", &tail, vec![]).await?,
            Some(after) => {
                let after = vec![("after", BoltType::from(after.to_string()))];
                self.nodes_query(dataset, "WHERE n.id > $after", &tail, after).await?
            }
        };
        Ok(Page::keyed(nodes, limit, |n: &Node| n.id))
    }

    /// Keyset on (source id, relationship type, target id), compared term by term.
    async fn edges_page(
        &self,
        dataset: DatasetId,
        after: Option<PageCursor<EdgeKey>>,
        limit: usize,
    ) -> Result<Page<Edge, EdgeKey>> {
        let tail = format!("ORDER BY source, rel, target LIMIT {limit}");
        let edges = match key_cursor(after)? {
            None => self.edges_query(dataset, "", &tail, vec![]).await?,
            Some((source, relationship, target)) => {
                let clause = "WHERE a.id > $s OR (a.id = $s AND (type(r) > $r OR (type(r) = $r AND b.id > $t)))";
                let params = vec![
                    ("s", BoltType::from(source.to_string())),
                    ("r", BoltType::from(relationship)),
                    ("t", BoltType::from(target.to_string())),
                ];
                self.edges_query(dataset, clause, &tail, params).await?
            }
        };
        Ok(Page::keyed(edges, limit, Edge::key))
    }

    /// The ids alone: no properties cross the wire.
    async fn node_ids_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Uuid>> {
        let q = query("MATCH (n:RecallNode {dataset_id: $ds}) WHERE n.node_type = $t RETURN n.id AS id")
            .param("ds", dataset.to_string())
            .param("t", node_type);
        self.rows(q).await?.iter().map(|row| parse_uuid(&row.get::<String>("id").map_err(de)?)).collect()
    }

    async fn nodes_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Node>> {
        // Types are identifiers we choose (never user text), so they travel plain.
        let mut nodes =
            self.nodes_where(dataset, "WHERE n.node_type = $t", vec![("t", BoltType::from(node_type))]).await?;
        nodes.sort_by_key(|n| n.id);
        Ok(nodes)
    }

    async fn delete_edges(&self, dataset: DatasetId, keys: &[EdgeKey]) -> Result<()> {
        for (source, rel, target) in keys {
            let q = query(&format!(
                "MATCH (a:RecallNode {{dataset_id: $ds, id: $s}})-[r:{}]->(b:RecallNode {{dataset_id: $ds, id: $t}}) DELETE r",
                rel_type(rel)
            ))
            .param("ds", dataset.to_string())
            .param("s", source.to_string())
            .param("t", target.to_string());
            self.graph.run(q).await.map_err(err)?;
        }
        Ok(())
    }

    async fn count(&self, dataset: DatasetId) -> Result<(u64, u64)> {
        let n = self
            .rows(query("MATCH (n:RecallNode {dataset_id: $ds}) RETURN count(n) AS c").param("ds", dataset.to_string()))
            .await?;
        let e = self
            .rows(
                query(
                    "MATCH (:RecallNode {dataset_id: $ds})-[r]->(:RecallNode {dataset_id: $ds}) RETURN count(r) AS c",
                )
                .param("ds", dataset.to_string()),
            )
            .await?;
        let get = |rows: &[neo4rs::Row]| -> Result<u64> {
            Ok(rows.first().map(|r| r.get::<i64>("c")).transpose().map_err(de)?.unwrap_or(0).max(0) as u64)
        };
        Ok((get(&n)?, get(&e)?))
    }

    /// One node lookup, not a count of the dataset's graph.
    async fn is_empty(&self, dataset: DatasetId) -> Result<bool> {
        let rows = self
            .rows(
                query("MATCH (n:RecallNode {dataset_id: $ds}) RETURN n.id AS id LIMIT 1")
                    .param("ds", dataset.to_string()),
            )
            .await?;
        Ok(rows.is_empty())
    }

    async fn delete_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<()> {
        for chunk in ids.chunks(self.id_chunk()) {
            let q = query("MATCH (n:RecallNode {dataset_id: $ds}) WHERE n.id IN $ids DETACH DELETE n")
                .param("ds", dataset.to_string())
                .param("ids", id_list(chunk));
            self.graph.run(q).await.map_err(err)?;
        }
        Ok(())
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        let q = query("MATCH (n:RecallNode {dataset_id: $ds}) DETACH DELETE n").param("ds", dataset.to_string());
        self.graph.run(q).await.map_err(err)
    }

    async fn healthcheck(&self) -> Result<()> {
        self.healthcheck_bolt().await
    }
}

/// Neo4j speaks Cypher; its ranking reads are the generic ones.
impl GraphCapabilities for Neo4jGraphStore {
    fn cypher(&self) -> Option<&dyn CypherQueries> {
        Some(self)
    }
}

#[async_trait]
impl CypherQueries for Neo4jGraphStore {
    async fn query_cypher(&self, dataset: DatasetId, cypher: &str) -> Result<Vec<Map<String, Value>>> {
        let rows = self.rows(query(cypher).param("dataset_id", dataset.to_string())).await?;
        rows.iter().map(|row| row.to::<Map<String, Value>>().map_err(de)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_rows_and_bytes() {
        let sizes = vec![("a", 10), ("b", 10), ("c", 50), ("d", 5)];
        assert_eq!(batches(sizes, 25), vec![vec!["a", "b"], vec!["c"], vec!["d"]]);
        let many: Vec<(usize, usize)> = (0..BATCH + 1).map(|i| (i, 1)).collect();
        assert_eq!(batches(many, usize::MAX).len(), 2);
    }

    #[test]
    fn relationship_types_are_quoted() {
        assert_eq!(rel_type("is_a"), "`is_a`");
        assert_eq!(rel_type("we`ird"), "`we``ird`");
    }

    #[test]
    fn neo4j_only_ddl_is_idempotent_and_covers_the_lookups() {
        let ddl = neo4j_schema_statements();
        assert!(ddl.iter().all(|s| s.contains("IF NOT EXISTS")));
        assert!(ddl.iter().any(|s| s.contains("(n.dataset_id, n.id)")));
        assert!(ddl.iter().any(|s| s.contains("(n.dataset_id, n.node_type)")));
    }
}
