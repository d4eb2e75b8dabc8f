use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;
use recall_core::ports::{EdgeKey, EdgeProjection, GraphCapabilities, GraphStore};
use recall_core::{DatasetId, Edge, Node, Result, Subgraph};
use tokio::sync::RwLock;
use uuid::Uuid;

#[derive(Default)]
struct Partition {
    nodes: BTreeMap<Uuid, Node>,
    edges: BTreeMap<EdgeKey, Edge>,
}

/// A graph held in memory, one partition per dataset.
#[derive(Default)]
pub struct MemoryGraphStore {
    partitions: RwLock<HashMap<DatasetId, Partition>>,
}

impl MemoryGraphStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The edges of one dataset that `keep` selects, projected.
    async fn edges_where(
        &self,
        dataset: DatasetId,
        edge_properties: EdgeProjection,
        keep: impl Fn(&Edge) -> bool,
    ) -> Result<Vec<Edge>> {
        let parts = self.partitions.read().await;
        let mut edges: Vec<Edge> =
            parts.get(&dataset).map(|p| p.edges.values().filter(|e| keep(e)).cloned().collect()).unwrap_or_default();
        edge_properties.apply(&mut edges);
        Ok(edges)
    }
}

/// Every capability is the generic one.
impl GraphCapabilities for MemoryGraphStore {}

#[async_trait]
impl GraphStore for MemoryGraphStore {
    fn name(&self) -> &'static str {
        "memory-graph"
    }

    async fn upsert_nodes(&self, dataset: DatasetId, nodes: &[Node]) -> Result<()> {
        let mut parts = self.partitions.write().await;
        let part = parts.entry(dataset).or_default();
        for node in nodes {
            part.nodes.insert(node.id, node.clone());
        }
        Ok(())
    }

    async fn upsert_edges(&self, dataset: DatasetId, edges: &[Edge]) -> Result<()> {
        let mut parts = self.partitions.write().await;
        let part = parts.entry(dataset).or_default();
        for edge in edges {
            let key = (edge.source_node_id, edge.relationship_name.clone(), edge.target_node_id);
            part.edges.insert(key, edge.clone());
        }
        Ok(())
    }

    async fn get_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Node>> {
        let parts = self.partitions.read().await;
        let Some(part) = parts.get(&dataset) else {
            return Ok(Vec::new());
        };
        Ok(ids.iter().filter_map(|id| part.nodes.get(id).cloned()).collect())
    }

    async fn adjacent_ids(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<Vec<Uuid>> {
        let parts = self.partitions.read().await;
        let Some(part) = parts.get(&dataset) else {
            return Ok(Vec::new());
        };
        let set: HashSet<&Uuid> = ids.iter().collect();
        let mut out = Vec::new();
        for (source, _, target) in part.edges.keys() {
            if set.contains(source) {
                out.push(*target);
            }
            if set.contains(target) {
                out.push(*source);
            }
        }
        Ok(out)
    }

    async fn edges_between(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>> {
        let set: HashSet<&Uuid> = ids.iter().collect();
        self.edges_where(dataset, edge_properties, |e| {
            set.contains(&e.source_node_id) && set.contains(&e.target_node_id)
        })
        .await
    }

    async fn edges_touching(
        &self,
        dataset: DatasetId,
        ids: &[Uuid],
        edge_properties: EdgeProjection,
    ) -> Result<Vec<Edge>> {
        let set: HashSet<&Uuid> = ids.iter().collect();
        self.edges_where(dataset, edge_properties, |e| {
            set.contains(&e.source_node_id) || set.contains(&e.target_node_id)
        })
        .await
    }

    async fn get_graph(&self, dataset: DatasetId) -> Result<Subgraph> {
        let parts = self.partitions.read().await;
        Ok(parts
            .get(&dataset)
            .map(|p| Subgraph {
                nodes: p.nodes.values().cloned().collect(),
                edges: p.edges.values().cloned().collect(),
            })
            .unwrap_or_default())
    }

    async fn nodes_by_type(&self, dataset: DatasetId, node_type: &str) -> Result<Vec<Node>> {
        let parts = self.partitions.read().await;
        Ok(parts
            .get(&dataset)
            .map(|p| p.nodes.values().filter(|n| n.node_type == node_type).cloned().collect())
            .unwrap_or_default())
    }

    async fn delete_edges(&self, dataset: DatasetId, keys: &[EdgeKey]) -> Result<()> {
        let mut parts = self.partitions.write().await;
        if let Some(part) = parts.get_mut(&dataset) {
            for key in keys {
                part.edges.remove(key);
            }
        }
        Ok(())
    }

    async fn count(&self, dataset: DatasetId) -> Result<(u64, u64)> {
        let parts = self.partitions.read().await;
        Ok(parts.get(&dataset).map(|p| (p.nodes.len() as u64, p.edges.len() as u64)).unwrap_or((0, 0)))
    }

    async fn delete_nodes(&self, dataset: DatasetId, ids: &[Uuid]) -> Result<()> {
        let mut parts = self.partitions.write().await;
        if let Some(part) = parts.get_mut(&dataset) {
            let doomed: HashSet<&Uuid> = ids.iter().collect();
            part.nodes.retain(|id, _| !doomed.contains(id));
            part.edges.retain(|(s, _, t), _| !doomed.contains(s) && !doomed.contains(t));
        }
        Ok(())
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        self.partitions.write().await.remove(&dataset);
        Ok(())
    }
}
