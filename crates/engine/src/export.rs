//! A dataset's graph read a page at a time, so an export (`recall graph`,
//! `GET /api/v1/datasets/{id}/graph`) holds one page in memory, not the graph.

use std::sync::Arc;

use recall_core::ports::{EdgeKey, GraphStore, PageCursor};
use recall_core::{Dataset, DatasetId, DatasetRef, Edge, Node, Result, User};
use uuid::Uuid;

use crate::Engine;

/// Nodes and edges per page of an export.
pub const EXPORT_PAGE: usize = 2_000;

/// Where a paged read stands.
#[derive(Debug, Clone)]
enum Cursor<K> {
    Start,
    After(PageCursor<K>),
    Done,
}

impl<K: Clone> Cursor<K> {
    /// Where the next page starts; `None` once the read is done.
    fn after(&self) -> Option<Option<PageCursor<K>>> {
        match self {
            Self::Start => Some(None),
            Self::After(k) => Some(Some(k.clone())),
            Self::Done => None,
        }
    }

    /// Moves past a page that ended at `next`.
    fn advance(&mut self, next: Option<PageCursor<K>>) {
        *self = next.map_or(Self::Done, Self::After);
    }
}

/// One dataset's nodes, then its edges, a page at a time in the order the
/// store reads fastest (`GraphStore::nodes_page`). Each page is one indexed
/// read; a write between two pages shows in the pages read after it (an
/// export is not a snapshot).
pub struct GraphPages {
    graph: Arc<dyn GraphStore>,
    dataset: DatasetId,
    page: usize,
    nodes: Cursor<Uuid>,
    edges: Cursor<EdgeKey>,
}

impl GraphPages {
    pub fn new(graph: Arc<dyn GraphStore>, dataset: DatasetId, page: usize) -> Self {
        Self { graph, dataset, page: page.max(1), nodes: Cursor::Start, edges: Cursor::Start }
    }

    /// The next page of nodes; `None` once every node was read.
    pub async fn next_nodes(&mut self) -> Result<Option<Vec<Node>>> {
        while let Some(after) = self.nodes.after() {
            let page = self.graph.nodes_page(self.dataset, after, self.page).await?;
            self.nodes.advance(page.next);
            if !page.items.is_empty() {
                return Ok(Some(page.items));
            }
        }
        Ok(None)
    }

    /// The next page of edges; `None` once every edge was read.
    pub async fn next_edges(&mut self) -> Result<Option<Vec<Edge>>> {
        while let Some(after) = self.edges.after() {
            let page = self.graph.edges_page(self.dataset, after, self.page).await?;
            self.edges.advance(page.next);
            if !page.items.is_empty() {
                return Ok(Some(page.items));
            }
        }
        Ok(None)
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
        let dataset = self.access.dataset(user, dataset).await?;
        let pages = GraphPages::new(self.graph.clone(), dataset.id, page);
        Ok((dataset, pages))
    }
}
