use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use recall_core::ports::{
    key_cursor, with_endpoints, EdgeKey, EdgeProjection, EdgeSketch, GraphCapabilities, GraphStore, Mentions,
    NodeSketch, Page, PageCursor, RankingReads, Sketch,
};
use recall_core::{DatasetId, Edge, Node, RecallError, Result, Subgraph};
use sea_orm::{ConnectionTrait, DbBackend, QueryResult, TransactionTrait, Value};
use serde_json::{Map, Value as Json};
use uuid::Uuid;

use crate::{db_err, id_array, in_list, placeholders, SqlDatabase};

/// Rows per multi-row INSERT: small, because SQLite binds parameters by name in
/// time quadratic in their number per statement.
const WRITE_BATCH: usize = 100;
/// Ids per IN list of a delete.
const DELETE_BATCH: usize = 500;

/// A graph on two SQL tables (`graph_nodes`, `graph_edges`), keyed by dataset.
#[derive(Clone)]
pub struct SqlGraphStore {
    db: SqlDatabase,
    statistics: std::sync::Arc<Statistics>,
}

impl SqlGraphStore {
    pub fn new(db: SqlDatabase) -> Self {
        Self { db, statistics: Default::default() }
    }

    /// Counts rows written and, on Postgres, refreshes the graph tables'
    /// statistics once they reach a fifth of the rows there were at the last
    /// refresh (at least [`Statistics::FIRST`]). Postgres plans each statement
    /// from those statistics, and autovacuum refreshes them at most once a
    /// minute and only after a tenth of a table has changed: a graph filled
    /// from empty by one long remember was planned as if it were nearly
    /// empty, so a lookup of a document's few keys scanned every edge of the
    /// dataset (at 3 000 chunks 17–22 ms per call against 1–2 ms once
    /// analysed, twice per document). A failed refresh is logged; the write
    /// it follows has committed.
    async fn wrote(&self, rows: usize) {
        if self.db.backend() != DbBackend::Postgres {
            return;
        }
        let Some(since) = self.statistics.due(rows as u64) else { return };
        let started = std::time::Instant::now();
        let analysed = self.db.conn.execute_unprepared("ANALYZE graph_nodes, graph_edges, graph_edge_documents").await;
        self.statistics.done(since);
        match analysed {
            Ok(_) => tracing::debug!(rows = since, ms = started.elapsed().as_secs_f64() * 1e3, "graph tables analysed"),
            Err(e) => tracing::warn!(error = %e, "the graph tables' statistics could not be refreshed"),
        }
    }
}

/// Rows written since the graph tables' statistics were last refreshed.
#[derive(Default)]
struct Statistics {
    written: std::sync::atomic::AtomicU64,
    /// Rows written up to the last refresh (an estimate of the tables' size).
    total: std::sync::atomic::AtomicU64,
    running: std::sync::atomic::AtomicBool,
}

impl Statistics {
    /// Rows written before the first refresh.
    const FIRST: u64 = 1_000;

    /// Adds `rows`; when a refresh is due and none is running, claims it and
    /// returns the rows it covers.
    fn due(&self, rows: u64) -> Option<u64> {
        use std::sync::atomic::Ordering::SeqCst;
        let written = self.written.fetch_add(rows, SeqCst) + rows;
        if written < Self::FIRST.max(self.total.load(SeqCst) / 5) || self.running.swap(true, SeqCst) {
            return None;
        }
        Some(self.written.swap(0, SeqCst))
    }

    fn done(&self, rows: u64) {
        use std::sync::atomic::Ordering::SeqCst;
        self.total.fetch_add(rows, SeqCst);
        self.running.store(false, SeqCst);
    }
}

fn json_text(map: &Map<String, Json>) -> String {
    Json::Object(map.clone()).to_string()
}

fn parse_uuid(s: &str) -> Result<Uuid> {
    Uuid::parse_str(s).map_err(|e| RecallError::backend_msg(format!("corrupt id '{s}' in graph tables: {e}")))
}

fn parse_map(s: &str) -> Result<Map<String, Json>> {
    match serde_json::from_str(s) {
        Ok(Json::Object(m)) => Ok(m),
        Ok(_) => Ok(Map::new()),
        Err(e) => Err(RecallError::backend_msg(format!("corrupt properties in graph tables: {e}"))),
    }
}

fn node_from_row(row: &QueryResult) -> Result<Node> {
    let id: String = row.try_get("", "id").map_err(db_err)?;
    let node_type: String = row.try_get("", "node_type").map_err(db_err)?;
    let props: String = row.try_get("", "properties").map_err(db_err)?;
    Ok(Node { id: parse_uuid(&id)?, node_type, properties: parse_map(&props)? })
}

/// The edge property kept in a table of its own, `graph_edge_documents`:
/// one row per (edge, document that stated it), keyed by both. A batch that
/// states a known fact again adds a row ([`GraphStore::upsert_stated_edges`])
/// instead of rewriting a list that grows with the dataset; the list is
/// aggregated back into `properties` only when a read asks for it, which no
/// search does.
const PROVENANCE: &str = recall_core::PROVENANCE;

/// An edge's properties as stored: without the provenance, which is
/// returned apart (`None`: the property is absent).
fn split_provenance(edge: &Edge) -> (String, Option<Vec<String>>) {
    match edge.properties.get(PROVENANCE) {
        None => (json_text(&edge.properties), None),
        Some(_) => {
            let mut rest = edge.properties.clone();
            rest.remove(PROVENANCE);
            (json_text(&rest), Some(edge.provenance()))
        }
    }
}

/// The provenance table's correlated match of the `graph_edges` row being read.
const PROVENANCE_OF_EDGE: &str = "p.dataset_id = graph_edges.dataset_id AND p.source_id = graph_edges.source_id \
     AND p.relationship_name = graph_edges.relationship_name AND p.target_id = graph_edges.target_id";

/// A stored edge back as the domain's: the provenance (when read) joins the
/// properties, then the projection applies.
fn edge_from_parts(
    (source, relationship_name, target, edge_text, props, provenance): EdgeParts,
    projection: EdgeProjection,
) -> Result<Edge> {
    let mut properties = match props {
        Json::Object(m) => m,
        _ => Map::new(),
    };
    if let Some(docs) = provenance.filter(|d| !d.is_null()) {
        properties.insert(PROVENANCE.into(), docs);
    }
    let mut edge = Edge {
        source_node_id: parse_uuid(&source)?,
        target_node_id: parse_uuid(&target)?,
        relationship_name,
        edge_text,
        properties,
    };
    projection.apply(std::slice::from_mut(&mut edge));
    Ok(edge)
}

/// (source, relationship, target, edge_text, properties, provenance).
type EdgeParts = (String, String, String, Option<String>, Json, Option<Json>);

fn edge_from_row(row: &QueryResult) -> Result<Edge> {
    let source: String = row.try_get("", "source_id").map_err(db_err)?;
    let target: String = row.try_get("", "target_id").map_err(db_err)?;
    let relationship_name: String = row.try_get("", "relationship_name").map_err(db_err)?;
    let edge_text: Option<String> = row.try_get("", "edge_text").map_err(db_err)?;
    let props: String = row.try_get("", "properties").map_err(db_err)?;
    let provenance: Option<String> = row.try_get("", PROVENANCE).map_err(db_err)?;
    let provenance = provenance
        .map(|d| serde_json::from_str(&d))
        .transpose()
        .map_err(|e| RecallError::backend_msg(format!("corrupt document_ids in graph tables: {e}")))?;
    edge_from_parts(
        (source, relationship_name, target, edge_text, Json::Object(parse_map(&props)?), provenance),
        EdgeProjection::All,
    )
}

/// The edges by key, the last of a repeated key winning (as with
/// sequential upserts), in key order.
fn last_per_key<'e>(edges: impl IntoIterator<Item = &'e Edge>) -> Vec<&'e Edge> {
    let mut unique: BTreeMap<(Uuid, &str, Uuid), &Edge> = BTreeMap::new();
    for e in edges {
        unique.insert((e.source_node_id, e.relationship_name.as_str(), e.target_node_id), e);
    }
    unique.into_values().collect()
}

/// An edge's row key as bound values: (dataset, source, relationship, target).
fn edge_row_key(dataset: DatasetId, e: &Edge) -> [Value; 4] {
    [
        dataset.to_string().into(),
        e.source_node_id.to_string().into(),
        e.relationship_name.clone().into(),
        e.target_node_id.to_string().into(),
    ]
}

/// Edge keys as the JSON list of `[source, relationship, target]` a key set reads.
fn key_list(keys: &[EdgeKey]) -> String {
    Json::from(keys.iter().map(|(s, r, t)| serde_json::json!([s.to_string(), r, t.to_string()])).collect::<Vec<_>>())
        .to_string()
}

/// A page size as a bound parameter (clamped: a size no store could hold).
fn page_limit(limit: usize) -> Value {
    i64::try_from(limit).unwrap_or(i64::MAX).into()
}

/// A page of `items` read from `rows`: a full page resumes after its last
/// row (its rowid, when read in rowid order, else its key).
fn paged<T, K>(
    items: Vec<T>,
    rows: &[QueryResult],
    by_row: bool,
    limit: usize,
    key: impl Fn(&T) -> K,
) -> Result<Page<T, K>> {
    if !by_row {
        return Ok(Page::keyed(items, limit, key));
    }
    let next = match rows.last() {
        Some(last) if items.len() >= limit => {
            Some(PageCursor::Row(last.try_get::<i64>("", "row_position").map_err(db_err)?))
        }
        _ => None,
    };
    Ok(Page { items, next })
}

impl SqlGraphStore {
    /// One page of a graph table for [`GraphStore::nodes_page`] and
    /// [`GraphStore::edges_page`]: `columns` of up to `limit` rows after
    /// `after`, and whether they were read in rowid order (then each row
    /// carries it as `row_position`). SQLite reads in rowid order unless
    /// handed a key cursor; Postgres reads in key order (`key`, the primary
    /// key's columns after `dataset_id`, bound by `bind`).
    #[allow(clippy::too_many_arguments)]
    async fn page_rows<K>(
        &self,
        table: &str,
        columns: &str,
        key: &str,
        dataset: DatasetId,
        after: Option<PageCursor<K>>,
        limit: usize,
        bind: impl Fn(K) -> Vec<Value>,
    ) -> Result<(Vec<QueryResult>, bool)> {
        let mut params: Vec<Value> = vec![dataset.to_string().into(), page_limit(limit)];
        let by_row = self.db.backend() == DbBackend::Sqlite && !matches!(after, Some(PageCursor::Key(_)));
        let sql = if by_row {
            let mut sql = format!(
                "SELECT rowid AS row_position, {columns} FROM {table} INDEXED BY {table}_dataset WHERE dataset_id = $1"
            );
            if let Some(PageCursor::Row(row)) = after {
                sql.push_str(" AND rowid > $3");
                params.push(row.into());
            }
            sql + " ORDER BY rowid LIMIT $2"
        } else {
            let mut sql = format!("SELECT {columns} FROM {table} WHERE dataset_id = $1");
            if let Some(k) = key_cursor(after)? {
                let values = bind(k);
                let marks: Vec<String> = (0..values.len()).map(|i| format!("${}", i + 3)).collect();
                sql.push_str(&format!(" AND ({key}) > ({})", marks.join(", ")));
                params.extend(values);
            }
            sql + &format!(" ORDER BY {key} LIMIT $2")
        };
        let rows = self.db.conn.query_all_raw(self.db.stmt(&sql, params)).await.map_err(db_err)?;
        Ok((rows, by_row))
    }

    /// Runs a statement whose one result row holds a JSON array in `rows`
    /// (an aggregate: see [`Self::edge_rows_json`]) and decodes its elements.
    async fn json_rows<T: serde::de::DeserializeOwned>(
        &self,
        sql: &str,
        values: Vec<Value>,
        what: &str,
    ) -> Result<Vec<T>> {
        let Some(row) = self.db.conn.query_one_raw(self.db.stmt(sql, values)).await.map_err(db_err)? else {
            return Ok(Vec::new());
        };
        let text: String = row.try_get("", "rows").map_err(db_err)?;
        serde_json::from_str(&text)
            .map_err(|e| RecallError::backend_msg(format!("corrupt {what} in graph tables: {e}")))
    }

    /// Edges of a dataset with an endpoint among `ids` (`column` is source_id or target_id).
    async fn edges_by(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        column: &str,
        projection: EdgeProjection,
    ) -> Result<Vec<Edge>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "{} WHERE dataset_id = $1 AND {column} IN ({})",
            self.edge_rows_json(projection),
            self.db.id_set(2)
        );
        self.read_edges_json(&sql, vec![dataset.to_string().into(), id_array(ids)], projection).await
    }

    /// The edges a WHERE clause selects, aggregated into one JSON array of
    /// `[source, relationship, target, edge_text, properties, document_ids]`
    /// rows: one result row however many edges, where a row per edge costs
    /// ~10 µs in the driver (a 2 000-edge search read took ~30 ms, most of it
    /// per row). The provenance column is read only when projected (else
    /// the sixth cell is null).
    fn edge_rows_json(&self, projection: EdgeProjection) -> String {
        let provenance =
            if projection.wants(PROVENANCE) { self.provenance_cell() } else { self.null_cell().to_string() };
        let properties = self.json_cell("properties");
        self.json_rows_select(
            &["source_id", "relationship_name", "target_id", "edge_text", &properties, &provenance],
            "graph_edges",
        )
    }

    /// `SELECT … AS rows FROM {table}` aggregating one JSON array of `cells`
    /// per selected row into the one JSON array [`Self::json_rows`] decodes
    /// (`json_agg` on Postgres, `json_group_array` on SQLite).
    fn json_rows_select(&self, cells: &[&str], table: &str) -> String {
        let cells = cells.join(", ");
        match self.db.backend() {
            DbBackend::Postgres => {
                format!("SELECT COALESCE(json_agg(json_build_array({cells})), '[]'::json)::text AS rows FROM {table}")
            }
            _ => format!("SELECT json_group_array(json_array({cells})) AS rows FROM {table}"),
        }
    }

    /// [`Self::json_rows_select`] over an ordered subquery `table`, the
    /// array in its order (Postgres orders the aggregate by `order`; SQLite
    /// aggregates a subquery's rows in the order they come).
    fn json_rows_select_ordered(&self, cells: &[&str], table: &str, order: &str) -> String {
        let cells = cells.join(", ");
        match self.db.backend() {
            DbBackend::Postgres => format!(
                "SELECT COALESCE(json_agg(json_build_array({cells}) ORDER BY {order}), '[]'::json)::text AS rows FROM {table}"
            ),
            _ => format!("SELECT json_group_array(json_array({cells})) AS rows FROM {table}"),
        }
    }

    /// The read edge's provenance as a JSON array cell in document order,
    /// null when it has none.
    fn provenance_cell(&self) -> String {
        match self.db.backend() {
            DbBackend::Postgres => format!(
                "(SELECT json_agg(p.document_id ORDER BY p.document_id) FROM graph_edge_documents p \
                 WHERE {PROVENANCE_OF_EDGE})"
            ),
            // The table is keyed (WITHOUT ROWID) by edge then document: an
            // edge's rows come in document order.
            _ => format!(
                "json(NULLIF((SELECT json_group_array(p.document_id) FROM graph_edge_documents p \
                 WHERE {PROVENANCE_OF_EDGE}), '[]'))"
            ),
        }
    }

    /// [`Self::provenance_cell`] as JSON text, for a read row by row.
    fn provenance_column(&self) -> String {
        match self.db.backend() {
            DbBackend::Postgres => format!("{}::text AS {PROVENANCE}", self.provenance_cell()),
            _ => format!("{} AS {PROVENANCE}", self.provenance_cell()),
        }
    }

    /// The key set of a JSON list of `[source, relationship, target]`
    /// bound as parameter `param`, as columns `s`, `r`, `t`.
    fn key_set(&self, param: usize) -> String {
        match self.db.backend() {
            DbBackend::Postgres => {
                format!("SELECT k->>0 AS s, k->>1 AS r, k->>2 AS t FROM json_array_elements(${param}::json) k")
            }
            _ => format!("SELECT value ->> 0 AS s, value ->> 1 AS r, value ->> 2 AS t FROM json_each(${param})"),
        }
    }

    /// Writes edges in `txn`: upserted by key, their provenance left as it is.
    async fn write_edges(&self, txn: &sea_orm::DatabaseTransaction, dataset: DatasetId, edges: &[&Edge]) -> Result<()> {
        for chunk in edges.chunks(WRITE_BATCH) {
            let sql = format!(
                "INSERT INTO graph_edges (dataset_id, source_id, relationship_name, target_id, edge_text, properties, \
                 type_key) VALUES {} ON CONFLICT (dataset_id, source_id, relationship_name, target_id) \
                 DO UPDATE SET edge_text = excluded.edge_text, properties = excluded.properties, \
                 type_key = excluded.type_key",
                placeholders(chunk.len(), 7)
            );
            let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * 7);
            for e in chunk {
                let (properties, _) = split_provenance(e);
                values.extend(edge_row_key(dataset, e));
                values.push(e.edge_text.clone().into());
                values.push(properties.into());
                values.push(e.type_key().to_string().into());
            }
            txn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        }
        Ok(())
    }

    /// Adds (edge, document) rows to the provenance in `txn`; present ones stay.
    async fn add_provenance(
        &self,
        txn: &sea_orm::DatabaseTransaction,
        dataset: DatasetId,
        rows: &[(&Edge, &str)],
    ) -> Result<()> {
        for chunk in rows.chunks(WRITE_BATCH) {
            let sql = format!(
                "INSERT INTO graph_edge_documents (dataset_id, source_id, relationship_name, target_id, document_id) \
                 VALUES {} ON CONFLICT DO NOTHING",
                placeholders(chunk.len(), 5)
            );
            let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * 5);
            for (e, document) in chunk {
                values.extend(edge_row_key(dataset, e));
                values.push(document.to_string().into());
            }
            txn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        }
        Ok(())
    }

    /// Deletes the provenance of the edges `keys` in `txn`.
    async fn clear_provenance(
        &self,
        txn: &sea_orm::DatabaseTransaction,
        dataset: DatasetId,
        keys: &[EdgeKey],
    ) -> Result<()> {
        for batch in keys.chunks(DELETE_BATCH) {
            let sql = format!(
                "DELETE FROM graph_edge_documents WHERE dataset_id = $1 AND source_id IN ({}) \
                 AND (source_id, relationship_name, target_id) IN (SELECT s, r, t FROM ({}) k)",
                self.db.id_set(2),
                self.key_set(3)
            );
            let mut sources: Vec<Uuid> = batch.iter().map(|k| k.0).collect();
            sources.sort();
            sources.dedup();
            let values = vec![dataset.to_string().into(), id_array(&sources), key_list(batch).into()];
            txn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        }
        Ok(())
    }

    /// A JSON text column as a JSON cell (not as a string).
    fn json_cell(&self, column: &str) -> String {
        match self.db.backend() {
            DbBackend::Postgres => format!("{column}::json"),
            _ => format!("json({column})"),
        }
    }

    /// One key of the `properties` column as a JSON cell; null when absent.
    fn property_cell(&self, key: &str) -> String {
        match self.db.backend() {
            DbBackend::Postgres => format!("properties::json -> '{key}'"),
            _ => format!("properties -> '$.{key}'"),
        }
    }

    /// The `feedback_weight` property as a JSON cell when asked for, else null.
    fn feedback_cell(&self, feedback: bool) -> String {
        if feedback {
            self.property_cell("feedback_weight")
        } else {
            self.null_cell().to_string()
        }
    }

    /// The target column of a read that seeks by source (primary key or the
    /// sketch index) and checks the target against a set. SQLite has no
    /// statistics by default and may walk the target index instead: an
    /// entity's incoming edges can number in the thousands. The unary `+`
    /// keeps it on the source; Postgres plans from its statistics and has no
    /// `+` on text.
    fn target_against_set(&self) -> &'static str {
        if self.db.backend() == DbBackend::Sqlite {
            "+target_id"
        } else {
            "target_id"
        }
    }

    /// A null JSON cell.
    fn null_cell(&self) -> &'static str {
        match self.db.backend() {
            DbBackend::Postgres => "NULL::json",
            _ => "NULL",
        }
    }

    /// Runs an [`Self::edge_rows_json`] statement.
    async fn read_edges_json(&self, sql: &str, values: Vec<Value>, projection: EdgeProjection) -> Result<Vec<Edge>> {
        let rows: Vec<EdgeParts> = self.json_rows(sql, values, "edge rows").await?;
        rows.into_iter().map(|parts| edge_from_parts(parts, projection)).collect()
    }
}

/// A sketched edge as read: (source, relationship, target, type key,
/// feedback weight); the type key is null only on a row no write has keyed.
type EdgeSketchParts = (String, String, String, Option<String>, Option<Json>);

/// Node sketches as read: (id, importance weight, feedback weight).
fn node_sketches_of(found: Vec<(String, Option<Json>, Option<Json>)>) -> Result<Vec<NodeSketch>> {
    found
        .into_iter()
        .map(|(id, importance_weight, feedback_weight)| {
            Ok(NodeSketch {
                id: parse_uuid(&id)?,
                importance_weight: importance_weight.filter(|v| !v.is_null()),
                feedback_weight: feedback_weight.filter(|v| !v.is_null()),
            })
        })
        .collect()
}

/// Rows per page of [`RankingReads::whole_sketch`].
const SKETCH_PAGE: usize = 20_000;

impl SqlGraphStore {
    /// The nodes' ids and weights, `feedback_weight` only when asked for.
    async fn node_sketches(&self, dataset: DatasetId, ids: &[Uuid], feedback: bool) -> Result<Vec<NodeSketch>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let importance = self.property_cell("importance_weight");
        let rows = self.json_rows_select(&["id", &importance, &self.feedback_cell(feedback)], "graph_nodes");
        let sql = format!("{rows} WHERE dataset_id = $1 AND id IN ({})", self.db.id_set(2));
        let values = vec![dataset.to_string().into(), id_array(ids)];
        node_sketches_of(self.json_rows(&sql, values, "node weights").await?)
    }

    /// The edges between two of `ids`, sketched. Without feedback weights
    /// the read is served by the `graph_edges_sketch` index alone (it holds
    /// every column read), so no row, text or property is touched.
    async fn edge_sketches(&self, dataset: DatasetId, ids: &[Uuid], feedback: bool) -> Result<Vec<EdgeSketch>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.json_rows_select(
            &["source_id", "relationship_name", "target_id", "type_key", &self.feedback_cell(feedback)],
            "graph_edges",
        );
        let target = self.target_against_set();
        let sql = format!(
            "{rows} WHERE dataset_id = $1 AND source_id IN ({}) AND {target} IN ({})",
            self.db.id_set(2),
            self.db.id_set(3)
        );
        let set = id_array(ids);
        let found: Vec<EdgeSketchParts> =
            self.json_rows(&sql, vec![dataset.to_string().into(), set.clone(), set], "edge sketches").await?;
        self.edge_sketches_of(dataset, found, feedback).await
    }

    /// Sketched edges as read; a row no write has keyed (none after
    /// migration 4) is keyed from its text.
    async fn edge_sketches_of(
        &self,
        dataset: DatasetId,
        found: Vec<EdgeSketchParts>,
        feedback: bool,
    ) -> Result<Vec<EdgeSketch>> {
        let mut unkeyed = Vec::new();
        let mut edges = Vec::with_capacity(found.len());
        for (source, relationship_name, target, type_key, feedback_weight) in found {
            let (source_node_id, target_node_id) = (parse_uuid(&source)?, parse_uuid(&target)?);
            let Some(type_key) = type_key else {
                unkeyed.push((source_node_id, relationship_name, target_node_id));
                continue;
            };
            edges.push(EdgeSketch {
                source_node_id,
                relationship_name,
                target_node_id,
                type_key: parse_uuid(&type_key)?,
                feedback_weight: feedback_weight.filter(|v| !v.is_null()),
            });
        }
        if !unkeyed.is_empty() {
            let full = self.get_edges(dataset, &unkeyed, Sketch::edge_projection(feedback)).await?;
            edges.extend(Sketch::of(&Subgraph { nodes: Vec::new(), edges: full }, feedback).edges);
        }
        Ok(edges)
    }
}

#[async_trait]
impl GraphStore for SqlGraphStore {
    fn name(&self) -> &'static str {
        "sql-graph"
    }

    async fn upsert_nodes(&self, dataset: DatasetId, nodes: &[Node]) -> Result<()> {
        if nodes.is_empty() {
            return Ok(());
        }
        // Last write wins for a repeated id within one call, as with sequential upserts.
        let mut unique: BTreeMap<Uuid, &Node> = BTreeMap::new();
        for n in nodes {
            unique.insert(n.id, n);
        }
        let nodes: Vec<&Node> = unique.into_values().collect();
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        for chunk in nodes.chunks(WRITE_BATCH) {
            let sql = format!(
                "INSERT INTO graph_nodes (dataset_id, id, node_type, name, properties) VALUES {} \
                 ON CONFLICT (dataset_id, id) DO UPDATE SET node_type = excluded.node_type, \
                 name = excluded.name, properties = excluded.properties",
                placeholders(chunk.len(), 5)
            );
            let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * 5);
            for n in chunk {
                values.push(dataset.to_string().into());
                values.push(n.id.to_string().into());
                values.push(n.node_type.clone().into());
                values.push(n.name().map(str::to_string).into());
                values.push(json_text(&n.properties).into());
            }
            txn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)?;
        self.wrote(nodes.len()).await;
        Ok(())
    }

    /// The provenance an edge carries replaces the stored one (none when
    /// the edge carries none), in the edges' transaction.
    async fn upsert_edges(&self, dataset: DatasetId, edges: &[Edge]) -> Result<()> {
        if edges.is_empty() {
            return Ok(());
        }
        let edges = last_per_key(edges);
        let keys: Vec<EdgeKey> = edges.iter().map(|e| e.key()).collect();
        let provenance: Vec<(&Edge, Vec<String>)> =
            edges.iter().filter(|e| e.properties.contains_key(PROVENANCE)).map(|e| (*e, e.provenance())).collect();
        let rows: Vec<(&Edge, &str)> =
            provenance.iter().flat_map(|(e, docs)| docs.iter().map(move |d| (*e, d.as_str()))).collect();
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        self.write_edges(&txn, dataset, &edges).await?;
        self.clear_provenance(&txn, dataset, &keys).await?;
        self.add_provenance(&txn, dataset, &rows).await?;
        txn.commit().await.map_err(db_err)?;
        self.wrote(edges.len() + rows.len()).await;
        Ok(())
    }

    /// One row per (edge, new document), added to what is stored; no list is read.
    async fn upsert_stated_edges(&self, dataset: DatasetId, edges: &[(Edge, Vec<String>)]) -> Result<()> {
        if edges.is_empty() {
            return Ok(());
        }
        let unique = last_per_key(edges.iter().map(|(e, _)| e));
        let rows: Vec<(&Edge, &str)> =
            edges.iter().flat_map(|(e, docs)| docs.iter().map(move |d| (e, d.as_str()))).collect();
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        self.write_edges(&txn, dataset, &unique).await?;
        self.add_provenance(&txn, dataset, &rows).await?;
        txn.commit().await.map_err(db_err)?;
        self.wrote(unique.len() + rows.len()).await;
        Ok(())
    }

    /// Two primary-key probes per key: whether the edge has any document,
    /// and whether it has this one.
    async fn stated_by(&self, dataset: DatasetId, keys: &[EdgeKey], document: &str) -> Result<Vec<(EdgeKey, bool)>> {
        let mut out = Vec::new();
        for batch in keys.chunks(DELETE_BATCH) {
            let matches = "p.dataset_id = $1 AND p.source_id = k.s AND p.relationship_name = k.r AND p.target_id = k.t";
            let sql = format!(
                "SELECT k.s AS s, k.r AS r, k.t AS t, \
                 EXISTS (SELECT 1 FROM graph_edge_documents p WHERE {matches} AND p.document_id = $3) AS stated \
                 FROM ({}) k WHERE EXISTS (SELECT 1 FROM graph_edge_documents p WHERE {matches})",
                self.key_set(2)
            );
            let values = vec![dataset.to_string().into(), key_list(batch).into(), document.into()];
            let rows = self.db.conn.query_all_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
            for row in rows {
                let s: String = row.try_get("", "s").map_err(db_err)?;
                let r: String = row.try_get("", "r").map_err(db_err)?;
                let t: String = row.try_get("", "t").map_err(db_err)?;
                let stated: bool = row.try_get("", "stated").map_err(db_err)?;
                out.push(((parse_uuid(&s)?, r, parse_uuid(&t)?), stated));
            }
        }
        Ok(out)
    }

    async fn get_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Node>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // One JSON array of [id, type, properties] rows, as for edges.
        let rows = self.json_rows_select(&["id", "node_type", &self.json_cell("properties")], "graph_nodes");
        let sql = format!("{rows} WHERE dataset_id = $1 AND id IN ({})", self.db.id_set(2));
        let values = vec![dataset.to_string().into(), id_array(ids)];
        let mut by_id = BTreeMap::new();
        let rows: Vec<(String, String, Json)> = self.json_rows(&sql, values, "node rows").await?;
        for (id, node_type, props) in rows {
            let properties = match props {
                Json::Object(m) => m,
                _ => Map::new(),
            };
            let node = Node { id: parse_uuid(&id)?, node_type, properties };
            by_id.insert(node.id, node);
        }
        // Keep the caller's order.
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    /// The ids one edge away from `ids` (either direction), `ids` included
    /// when an edge joins two of them: endpoints only, no edge rows.
    async fn adjacent_ids(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Uuid>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let agg = match self.db.backend() {
            DbBackend::Postgres => "COALESCE(json_agg(id), '[]'::json)::text",
            _ => "json_group_array(id)",
        };
        let set = self.db.id_set(2);
        let sql = format!(
            "SELECT {agg} AS rows FROM (SELECT target_id AS id FROM graph_edges WHERE dataset_id = $1 AND \
             source_id IN ({set}) UNION SELECT source_id AS id FROM graph_edges WHERE dataset_id = $1 AND \
             target_id IN ({set})) adjacent"
        );
        let values = vec![dataset.to_string().into(), id_array(ids)];
        let found: Vec<String> = self.json_rows(&sql, values, "edge endpoints").await?;
        found.iter().map(|id| parse_uuid(id)).collect()
    }

    /// Edges of a dataset with both endpoints among `ids`, filtered in SQL on
    /// both columns (the source by index, the target against the set), so an
    /// endpoint's other edges are never read.
    async fn edges_between(&self, dataset: DatasetId, ids: &[Uuid], projection: EdgeProjection) -> Result<Vec<Edge>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let target = self.target_against_set();
        let sql = format!(
            "{} WHERE dataset_id = $1 AND source_id IN ({}) AND {target} IN ({})",
            self.edge_rows_json(projection),
            self.db.id_set(2),
            self.db.id_set(3)
        );
        let set = id_array(ids);
        self.read_edges_json(&sql, vec![dataset.to_string().into(), set.clone(), set], projection).await
    }

    /// Two indexed reads (by source, by target); an edge between two of
    /// `ids` comes back once.
    async fn edges_touching(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>> {
        let set: HashSet<&Uuid> = ids.iter().collect();
        let mut edges = self.edges_by(dataset, ids, "source_id", edge_properties).await?;
        edges.extend(
            self.edges_by(dataset, ids, "target_id", edge_properties)
                .await?
                .into_iter()
                .filter(|e| !set.contains(&e.source_node_id)),
        );
        Ok(edges)
    }

    async fn get_graph(&self, dataset: DatasetId) -> Result<Subgraph> {
        let ds: Value = dataset.to_string().into();
        let node_rows = self
            .db
            .conn
            .query_all_raw(self.db.stmt(
                "SELECT id, node_type, properties FROM graph_nodes WHERE dataset_id = $1 ORDER BY id",
                vec![ds.clone()],
            ))
            .await
            .map_err(db_err)?;
        let sql = format!(
            "SELECT source_id, relationship_name, target_id, edge_text, properties, {} FROM graph_edges \
             WHERE dataset_id = $1 ORDER BY source_id, relationship_name, target_id",
            self.provenance_column()
        );
        let edge_rows = self.db.conn.query_all_raw(self.db.stmt(&sql, vec![ds])).await.map_err(db_err)?;
        Ok(Subgraph {
            nodes: node_rows.iter().map(node_from_row).collect::<Result<_>>()?,
            edges: edge_rows.iter().map(edge_from_row).collect::<Result<_>>()?,
        })
    }

    /// On SQLite, in rowid order over the `graph_nodes_dataset` index: the
    /// table is read in the order its pages are stored (a read in key order
    /// looks each row up at random). On Postgres, a keyset read on the
    /// primary key.
    async fn nodes_page(
        &self,
        dataset: DatasetId,
        after: Option<PageCursor<Uuid>>,
        limit: usize,
    ) -> Result<Page<Node, Uuid>> {
        const COLUMNS: &str = "id, node_type, properties";
        let (rows, by_row) = self
            .page_rows("graph_nodes", COLUMNS, "id", dataset, after, limit, |id| vec![id.to_string().into()])
            .await?;
        let nodes = rows.iter().map(node_from_row).collect::<Result<Vec<_>>>()?;
        paged(nodes, &rows, by_row, limit, |n: &Node| n.id)
    }

    /// As [`Self::nodes_page`]; on Postgres the keyset is the primary key,
    /// compared as a row value.
    async fn edges_page(
        &self,
        dataset: DatasetId,
        after: Option<PageCursor<EdgeKey>>,
        limit: usize,
    ) -> Result<Page<Edge, EdgeKey>> {
        let columns =
            format!("source_id, relationship_name, target_id, edge_text, properties, {}", self.provenance_column());
        let (rows, by_row) = self
            .page_rows(
                "graph_edges",
                &columns,
                "source_id, relationship_name, target_id",
                dataset,
                after,
                limit,
                |(s, r, t)| vec![s.to_string().into(), r.into(), t.to_string().into()],
            )
            .await?;
        let edges = rows.iter().map(edge_from_row).collect::<Result<Vec<_>>>()?;
        paged(edges, &rows, by_row, limit, Edge::key)
    }

    /// Served by the `graph_nodes_type_name` index alone (no properties read).
    async fn node_ids_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Uuid>> {
        let rows = self
            .db
            .conn
            .query_all_raw(self.db.stmt(
                "SELECT id FROM graph_nodes WHERE dataset_id = $1 AND node_type = $2",
                vec![dataset.to_string().into(), node_type.into()],
            ))
            .await
            .map_err(db_err)?;
        rows.iter().map(|row| parse_uuid(&row.try_get::<String>("", "id").map_err(db_err)?)).collect()
    }

    async fn nodes_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Node>> {
        let rows = self
            .db
            .conn
            .query_all_raw(self.db.stmt(
                "SELECT id, node_type, properties FROM graph_nodes WHERE dataset_id = $1 AND node_type = $2 ORDER BY id",
                vec![dataset.to_string().into(), node_type.into()],
            ))
            .await
            .map_err(db_err)?;
        rows.iter().map(node_from_row).collect()
    }

    /// Counted on the `graph_nodes_type_name` index alone.
    async fn count_nodes_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<u64> {
        let row = self
            .db
            .conn
            .query_one_raw(self.db.stmt(
                "SELECT COUNT(*) AS n FROM graph_nodes WHERE dataset_id = $1 AND node_type = $2",
                vec![dataset.to_string().into(), node_type.into()],
            ))
            .await
            .map_err(db_err)?
            .ok_or_else(|| RecallError::backend_msg("COUNT returned no row"))?;
        let n: i64 = row.try_get("", "n").map_err(db_err)?;
        Ok(n.max(0) as u64)
    }

    /// Ordered by the `name` column (the `name` property, null when it is
    /// not a string), compared as bytes on both backends: SQLite's default
    /// collation, Postgres' "C".
    async fn first_nodes_by_name(&self, dataset: DatasetId, node_type: &str, limit: usize) -> Result<Vec<Node>> {
        let order = match self.db.backend() {
            DbBackend::Postgres => "name COLLATE \"C\" NULLS FIRST, id COLLATE \"C\"",
            _ => "name NULLS FIRST, id",
        };
        let sql = format!(
            "SELECT id, node_type, properties FROM graph_nodes WHERE dataset_id = $1 AND node_type = $2 \
             ORDER BY {order} LIMIT $3"
        );
        let values = vec![dataset.to_string().into(), node_type.into(), page_limit(limit)];
        let rows = self.db.conn.query_all_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        rows.iter().map(node_from_row).collect()
    }

    /// Through the `graph_edges_type_key` index: a text's key is its
    /// EdgeType id; the texts are compared exactly afterwards.
    async fn edges_with_texts(&self, dataset: DatasetId, texts: &[String]) -> Result<Vec<Edge>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<Uuid> = texts.iter().map(|t| recall_core::ids::edge_type_key(Some(t), "")).collect();
        let projection = EdgeProjection::Only(&[]);
        let sql = format!(
            "{} WHERE dataset_id = $1 AND type_key IN ({})",
            self.edge_rows_json(projection),
            self.db.id_set(2)
        );
        let mut edges =
            self.read_edges_json(&sql, vec![dataset.to_string().into(), id_array(&keys)], projection).await?;
        let wanted: HashSet<&str> = texts.iter().map(String::as_str).collect();
        edges.retain(|e| e.edge_text.as_deref().is_some_and(|t| wanted.contains(t)));
        Ok(edges)
    }

    /// One grouped join: the entities' `contains` edges by the target index,
    /// each chunk's `is_part_of` edge by the primary key.
    async fn document_mentions(&self, dataset: DatasetId, entities: &[Uuid]) -> Result<Vec<Mentions>> {
        if entities.is_empty() {
            return Ok(Vec::new());
        }
        let grouped = format!(
            "(SELECT c.target_id AS entity, p.target_id AS document, COUNT(*) AS chunks FROM graph_edges c \
             JOIN graph_edges p ON p.dataset_id = c.dataset_id AND p.source_id = c.source_id \
             AND p.relationship_name = 'is_part_of' \
             WHERE c.dataset_id = $1 AND c.target_id IN ({}) AND c.relationship_name = 'contains' \
             GROUP BY c.target_id, p.target_id) mentions",
            self.db.id_set(2)
        );
        let sql = self.json_rows_select(&["entity", "document", "chunks"], &grouped);
        let rows: Vec<(String, String, u64)> =
            self.json_rows(&sql, vec![dataset.to_string().into(), id_array(entities)], "mention counts").await?;
        rows.iter()
            .map(|(entity, document, chunks)| {
                Ok(Mentions { entity: parse_uuid(entity)?, document: parse_uuid(document)?, chunks: *chunks })
            })
            .collect()
    }

    /// Counted on the `graph_edges_target_relationship` index alone.
    async fn count_edges_into(
        &self,
        dataset: DatasetId,
        targets: &[Uuid],
        relationship: &str,
    ) -> Result<Vec<(Uuid, u64)>> {
        if targets.is_empty() {
            return Ok(Vec::new());
        }
        let grouped = format!(
            "(SELECT target_id, COUNT(*) AS n FROM graph_edges WHERE dataset_id = $1 AND target_id IN ({}) \
             AND relationship_name = $3 GROUP BY target_id) counted",
            self.db.id_set(2)
        );
        let sql = self.json_rows_select(&["target_id", "n"], &grouped);
        let values = vec![dataset.to_string().into(), id_array(targets), relationship.into()];
        let rows: Vec<(String, u64)> = self.json_rows(&sql, values, "edge counts").await?;
        rows.iter().map(|(target, n)| Ok((parse_uuid(target)?, *n))).collect()
    }

    async fn delete_edges(&self, dataset: DatasetId, keys: &[EdgeKey]) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        self.clear_provenance(&txn, dataset, keys).await?;
        for (source, rel, target) in keys {
            txn.execute_raw(self.db.stmt(
                "DELETE FROM graph_edges WHERE dataset_id = $1 AND source_id = $2 AND relationship_name = $3 \
                 AND target_id = $4",
                vec![
                    dataset.to_string().into(),
                    source.to_string().into(),
                    rel.clone().into(),
                    target.to_string().into(),
                ],
            ))
            .await
            .map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)
    }

    async fn count(&self, dataset: DatasetId) -> Result<(u64, u64)> {
        let sql = "SELECT (SELECT COUNT(*) FROM graph_nodes WHERE dataset_id = $1) AS n, \
                   (SELECT COUNT(*) FROM graph_edges WHERE dataset_id = $1) AS e";
        let row = self
            .db
            .conn
            .query_one_raw(self.db.stmt(sql, vec![dataset.to_string().into()]))
            .await
            .map_err(db_err)?
            .ok_or_else(|| RecallError::backend_msg("COUNT returned no row"))?;
        let n: i64 = row.try_get("", "n").map_err(db_err)?;
        let e: i64 = row.try_get("", "e").map_err(db_err)?;
        Ok((n.max(0) as u64, e.max(0) as u64))
    }

    /// One index probe, not a count of the dataset's nodes and edges (it is
    /// asked on every graph search).
    async fn is_empty(&self, dataset: DatasetId) -> Result<bool> {
        let rows = self
            .db
            .conn
            .query_all_raw(self.db.stmt(
                "SELECT 1 AS one FROM graph_nodes WHERE dataset_id = $1 LIMIT 1",
                vec![dataset.to_string().into()],
            ))
            .await
            .map_err(db_err)?;
        Ok(rows.is_empty())
    }

    async fn delete_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        for chunk in ids.chunks(DELETE_BATCH) {
            let list = in_list(2, chunk.len());
            let mut values: Vec<Value> = vec![dataset.to_string().into()];
            values.extend(chunk.iter().map(|id| Value::from(id.to_string())));
            for sql in [
                // The provenance of the edges about to go: outgoing by the
                // table's key, incoming through the edges' target index.
                format!("DELETE FROM graph_edge_documents WHERE dataset_id = $1 AND source_id IN ({list})"),
                format!(
                    "DELETE FROM graph_edge_documents WHERE dataset_id = $1 AND \
                     (source_id, relationship_name, target_id) IN (SELECT source_id, relationship_name, target_id \
                     FROM graph_edges WHERE dataset_id = $1 AND target_id IN ({list}))"
                ),
                format!("DELETE FROM graph_edges WHERE dataset_id = $1 AND source_id IN ({list})"),
                format!("DELETE FROM graph_edges WHERE dataset_id = $1 AND target_id IN ({list})"),
                format!("DELETE FROM graph_nodes WHERE dataset_id = $1 AND id IN ({list})"),
            ] {
                txn.execute_raw(self.db.stmt(&sql, values.clone())).await.map_err(db_err)?;
            }
        }
        txn.commit().await.map_err(db_err)
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        for sql in [
            "DELETE FROM graph_edge_documents WHERE dataset_id = $1",
            "DELETE FROM graph_edges WHERE dataset_id = $1",
            "DELETE FROM graph_nodes WHERE dataset_id = $1",
        ] {
            txn.execute_raw(self.db.stmt(sql, vec![dataset.to_string().into()])).await.map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)
    }

    async fn healthcheck(&self) -> Result<()> {
        self.db.healthcheck().await
    }
}

/// The indexed ranking reads: sketches from the sketch index, winners by
/// primary key, hit types through the type-key index.
impl GraphCapabilities for SqlGraphStore {
    fn ranking_reads(&self) -> Option<&dyn RankingReads> {
        Some(self)
    }
}

#[async_trait]
impl RankingReads for SqlGraphStore {
    /// Two aggregated reads: node weights, then edge keys and type keys
    /// (from an index alone when no feedback weight is asked for).
    async fn sketch_between(&self, dataset: DatasetId, seeds: &[Uuid], feedback: bool) -> Result<Sketch> {
        let nodes = self.node_sketches(dataset, seeds, feedback).await?;
        let found: Vec<Uuid> = nodes.iter().map(|n| n.id).collect();
        let edges = self.edge_sketches(dataset, &found, feedback).await?;
        Ok(Sketch { nodes, edges })
    }

    /// Keyset pages: the nodes on the primary key, the edges on the
    /// `graph_edges_sketch` index alone (every column it reads is there).
    async fn whole_sketch(&self, dataset: DatasetId) -> Result<Sketch> {
        let ds: Value = dataset.to_string().into();
        let importance = self.property_cell("importance_weight");
        let mut nodes: Vec<NodeSketch> = Vec::new();
        loop {
            let mut values = vec![ds.clone(), page_limit(SKETCH_PAGE)];
            let after = match nodes.last() {
                Some(last) => {
                    values.push(last.id.to_string().into());
                    " AND id > $3"
                }
                None => "",
            };
            let page = format!(
                "(SELECT id, properties FROM graph_nodes WHERE dataset_id = $1{after} ORDER BY id LIMIT $2) page"
            );
            let sql = self.json_rows_select_ordered(&["id", &importance, self.null_cell()], &page, "id");
            let mut read = node_sketches_of(self.json_rows(&sql, values, "node sketches").await?)?;
            let full = read.len() >= SKETCH_PAGE;
            nodes.append(&mut read);
            if !full {
                break;
            }
        }
        let index = if self.db.backend() == DbBackend::Sqlite { " INDEXED BY graph_edges_sketch" } else { "" };
        let mut edges: Vec<EdgeSketch> = Vec::new();
        let mut after: Option<EdgeKey> = None;
        loop {
            let mut values = vec![ds.clone(), page_limit(SKETCH_PAGE)];
            let mut clause = String::new();
            if let Some((s, r, t)) = after.take() {
                clause.push_str(" AND (source_id, relationship_name, target_id) > ($3, $4, $5)");
                values.extend([s.to_string().into(), r.into(), t.to_string().into()]);
            }
            let page = format!(
                "(SELECT source_id, relationship_name, target_id, type_key FROM graph_edges{index} \
                 WHERE dataset_id = $1{clause} ORDER BY source_id, relationship_name, target_id LIMIT $2) page"
            );
            let sql = self.json_rows_select_ordered(
                &["source_id", "relationship_name", "target_id", "type_key", self.null_cell()],
                &page,
                "source_id, relationship_name, target_id",
            );
            let found: Vec<EdgeSketchParts> = self.json_rows(&sql, values, "edge sketches").await?;
            let full = found.len() >= SKETCH_PAGE;
            // The cursor is the page's last row in the store's order (on
            // Postgres the collation's, which need not be the ids' order).
            let last = match found.last() {
                Some((source, relationship, target, _, _)) => {
                    Some((parse_uuid(source)?, relationship.clone(), parse_uuid(target)?))
                }
                None => None,
            };
            edges.extend(self.edge_sketches_of(dataset, found, false).await?);
            match last {
                Some(last) if full => after = Some(last),
                _ => break,
            }
        }
        Ok(Sketch { nodes, edges }.in_whole_dataset_order())
    }

    /// By primary key: the sources through the index, the full keys against
    /// a JSON list of `[source, relationship, target]` (one parameter each).
    async fn get_edges(
        &self,
        dataset: DatasetId,
        keys: &[EdgeKey],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>> {
        let mut edges = Vec::new();
        for batch in keys.chunks(DELETE_BATCH) {
            let mut sources: Vec<Uuid> = batch.iter().map(|k| k.0).collect();
            sources.sort();
            sources.dedup();
            let sql = format!(
                "{} WHERE dataset_id = $1 AND source_id IN ({}) AND (source_id, relationship_name, target_id) IN \
                 (SELECT s, r, t FROM ({}) k)",
                self.edge_rows_json(edge_properties),
                self.db.id_set(2),
                self.key_set(3),
            );
            let values = vec![dataset.to_string().into(), id_array(&sources), key_list(batch).into()];
            edges.extend(self.read_edges_json(&sql, values, edge_properties).await?);
        }
        Ok(edges)
    }

    /// The matching edges through the `graph_edges_type_key` index (a hit's
    /// type has few edges, where a hub has tens of thousands), then their
    /// endpoints.
    async fn edges_around_of_types(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        type_keys: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Subgraph> {
        let nodes = self.get_nodes(dataset, ids).await?;
        if nodes.is_empty() || type_keys.is_empty() {
            return Ok(Subgraph { nodes, edges: Vec::new() });
        }
        // SQLite: the unary `+` keeps the endpoint indexes out of the plan.
        let (source, target) = if self.db.backend() == DbBackend::Sqlite {
            ("+source_id", "+target_id")
        } else {
            ("source_id", "target_id")
        };
        let seeds: Vec<Uuid> = nodes.iter().map(|n| n.id).collect();
        let sql = format!(
            "{} WHERE dataset_id = $1 AND type_key IN ({}) AND ({source} IN ({set}) OR {target} IN ({set}))",
            self.edge_rows_json(edge_properties),
            self.db.id_set(2),
            set = self.db.id_set(3),
        );
        let values = vec![dataset.to_string().into(), id_array(type_keys), id_array(&seeds)];
        let edges = self.read_edges_json(&sql, values, edge_properties).await?;
        with_endpoints(self, dataset, nodes, edges).await
    }
}

#[cfg(test)]
mod tests {
    use super::Statistics;

    /// The first refresh after 1 000 rows, then each after a fifth more;
    /// one at a time.
    #[test]
    fn statistics_refresh_after_a_fifth_more_rows() {
        let s = Statistics::default();
        assert_eq!(s.due(999), None);
        assert_eq!(s.due(1), Some(1_000));
        assert_eq!(s.due(5_000), None, "one refresh at a time");
        s.done(1_000);
        assert_eq!(s.due(0), Some(5_000), "the rows written meanwhile are due");
        s.done(5_000);
        assert_eq!(s.due(1_000), None, "6 000 rows: the next after 1 200");
        assert_eq!(s.due(200), Some(1_200));
    }
}
