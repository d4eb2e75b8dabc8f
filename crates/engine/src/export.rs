//! A dataset's graph read a page at a time, so an export (`recall graph`,
//! `GET /api/v1/datasets/{id}/graph`) holds two pages in memory (the one
//! being written and the next, read meanwhile), not the graph.

use std::sync::Arc;

use recall_core::ports::{EdgeKey, GraphStore};
use recall_core::{Dataset, DatasetId, DatasetRef, Edge, Node, RecallError, Result, User};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::Engine;

/// Nodes and edges per page of an export.
pub const EXPORT_PAGE: usize = 2_000;

/// Where a paged read stands.
#[derive(Debug, Clone)]
enum Cursor<K> {
    Start,
    After(K),
    Done,
}

impl<K: Clone> Cursor<K> {
    fn after(&self) -> Option<Option<K>> {
        match self {
            Self::Start => Some(None),
            Self::After(k) => Some(Some(k.clone())),
            Self::Done => None,
        }
    }

    /// Moves past a page of `read` items whose last key is `last`.
    fn advance(&mut self, read: usize, limit: usize, last: Option<K>) {
        *self = match last {
            Some(k) if read >= limit => Self::After(k),
            _ => Self::Done,
        };
    }
}

/// A read of one page, under way.
type PageRead<T> = JoinHandle<Result<Vec<T>>>;

/// One kind of item read a page at a time, the next page read ahead.
struct Pages<K, T> {
    cursor: Cursor<K>,
    /// The read of the page at `cursor`, when under way.
    ahead: Option<PageRead<T>>,
}

impl<K: Clone, T> Pages<K, T> {
    fn new() -> Self {
        Self { cursor: Cursor::Start, ahead: None }
    }

    fn done(&self) -> bool {
        matches!(self.cursor, Cursor::Done)
    }

    /// Starts reading the page at the cursor, unless it is under way or
    /// there is none.
    fn read_ahead(&mut self, read: impl FnOnce(Option<K>) -> PageRead<T>) {
        if self.ahead.is_none() {
            self.ahead = self.cursor.after().map(read);
        }
    }

    /// The page at the cursor (read now or earlier), with the read of the
    /// one after it started.
    async fn next(
        &mut self,
        page: usize,
        key: impl Fn(&T) -> K,
        read: impl Fn(Option<K>) -> PageRead<T>,
    ) -> Result<Option<Vec<T>>> {
        self.read_ahead(&read);
        let Some(pending) = self.ahead.take() else { return Ok(None) };
        let items = pending.await.map_err(stopped)??;
        self.cursor.advance(items.len(), page, items.last().map(key));
        self.read_ahead(&read);
        Ok((!items.is_empty()).then_some(items))
    }
}

/// An export dropped midway (a closed pipe, a client gone) stops its read ahead.
impl<K, T> Drop for Pages<K, T> {
    fn drop(&mut self) {
        if let Some(pending) = &self.ahead {
            pending.abort();
        }
    }
}

/// A page read that ended without an answer (its task panicked or was cancelled).
fn stopped(e: tokio::task::JoinError) -> RecallError {
    RecallError::backend_msg(format!("a graph page read stopped: {e}"))
}

/// One dataset's nodes, then its edges, a page at a time in the store's key
/// order. Each page is one indexed read; a write between two pages shows in
/// the pages read after it (an export is not a snapshot). While the caller
/// writes a page out, the next one is read by a spawned task, so reading
/// and writing overlap.
pub struct GraphPages {
    graph: Arc<dyn GraphStore>,
    dataset: DatasetId,
    page: usize,
    nodes: Pages<Uuid, Node>,
    edges: Pages<EdgeKey, Edge>,
}

impl GraphPages {
    pub fn new(graph: Arc<dyn GraphStore>, dataset: DatasetId, page: usize) -> Self {
        Self { graph, dataset, page: page.max(1), nodes: Pages::new(), edges: Pages::new() }
    }

    fn read_nodes(&self) -> impl Fn(Option<Uuid>) -> PageRead<Node> {
        let (graph, dataset, page) = (self.graph.clone(), self.dataset, self.page);
        move |after| {
            let graph = graph.clone();
            tokio::spawn(async move { graph.nodes_page(dataset, after, page).await })
        }
    }

    fn read_edges(&self) -> impl Fn(Option<EdgeKey>) -> PageRead<Edge> {
        let (graph, dataset, page) = (self.graph.clone(), self.dataset, self.page);
        move |after| {
            let graph = graph.clone();
            tokio::spawn(async move { graph.edges_page(dataset, after, page).await })
        }
    }

    /// The next page of nodes; `None` once they are all read.
    pub async fn next_nodes(&mut self) -> Result<Option<Vec<Node>>> {
        let read = self.read_nodes();
        let nodes = self.nodes.next(self.page, |n| n.id, read).await?;
        if self.nodes.done() {
            // The first edges are read while the last nodes are written.
            let read = self.read_edges();
            self.edges.read_ahead(read);
        }
        Ok(nodes)
    }

    /// The next page of edges; `None` once they are all read.
    pub async fn next_edges(&mut self) -> Result<Option<Vec<Edge>>> {
        let read = self.read_edges();
        self.edges.next(self.page, Edge::key, read).await
    }
}

impl Engine {
    /// A dataset's graph for an export that streams: the caller needs
    /// `read` on it, checked before the first page is read.
    pub async fn dataset_graph_pages(
        &self,
        user: &User,
        dataset: impl Into<DatasetRef>,
        page: usize,
    ) -> Result<(Dataset, GraphPages)> {
        let dataset = self.dataset(user, dataset).await?;
        let pages = GraphPages::new(self.graph.clone(), dataset.id, page);
        Ok((dataset, pages))
    }
}
