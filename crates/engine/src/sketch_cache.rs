//! The sketch cache (docs/retrievers.md, "The sketch cache"): each dataset's
//! ranking sketch in memory, keyed by the dataset's data version, so a graph
//! search ranks its seeds without reading the store.
//!
//! A search that ranks the graph (`Retriever::ranks_the_graph`) asks for
//! the sketch at the version it runs at. When the cache has it, the search
//! uses it; otherwise the search reads the store as before, and from the
//! second ask at that version the cache loads it in
//! the background, one load at a time for the whole process. Every write
//! moves the data version (before and after it writes), so a sketch read
//! mid-write is never used past the write's end; while a write is
//! unfinished its rows are quarantined, and a search of a dataset with
//! quarantined rows never uses the cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use recall_core::ports::GraphStore;
use recall_core::DatasetId;
use recall_retrievers::graph::SketchIndex;

/// Bytes all cached sketches may take together (about 32 bytes an edge: a
/// 100k-chunk store of 1.1 M edges takes ~50 MB).
pub(crate) const SKETCH_CACHE_BUDGET: usize = 1 << 30;

/// A dataset's entry.
enum Slot {
    /// This version was asked for once: a second ask starts its load, so a
    /// one-shot process (a CLI recall) never reads a sketch it will not use,
    /// and a server's first search does not share the cores with the load.
    Asked(u64),
    /// A load of this version is running.
    Loading(u64),
    Ready(u64, Arc<SketchIndex>),
    /// This version could not be held (too large, or the read failed): the
    /// store answers until the version moves.
    Skipped(u64),
}

impl Slot {
    fn version(&self) -> u64 {
        match self {
            Self::Asked(v) | Self::Loading(v) | Self::Ready(v, _) | Self::Skipped(v) => *v,
        }
    }
}

/// The process's sketches, by dataset.
pub(crate) struct SketchCache {
    slots: Mutex<HashMap<DatasetId, Slot>>,
    /// One load at a time: a load takes a core for as long as it reads.
    loading: tokio::sync::Semaphore,
}

impl SketchCache {
    pub(crate) fn new() -> Self {
        Self { slots: Mutex::new(HashMap::new()), loading: tokio::sync::Semaphore::new(1) }
    }

    /// The dataset's sketch at `version` when it is in memory; otherwise
    /// `None`, and from the second ask at that version on, a load of it
    /// starts in the background.
    pub(crate) fn get(
        self: &Arc<Self>,
        graph: &Arc<dyn GraphStore>,
        dataset: DatasetId,
        version: u64,
    ) -> Option<Arc<SketchIndex>> {
        let mut slots = self.slots.lock().ok()?;
        match slots.get(&dataset) {
            Some(Slot::Ready(v, index)) if *v == version => return Some(index.clone()),
            // Asked for before: load it now.
            Some(Slot::Asked(v)) if *v == version => {}
            // Loading or skipped at this version, or anything of a newer one
            // (a reader that saw an older version never brings it back).
            Some(slot) if slot.version() >= version => return None,
            // Nothing yet, or an older version: remember the ask.
            _ => {
                slots.insert(dataset, Slot::Asked(version));
                return None;
            }
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        slots.insert(dataset, Slot::Loading(version));
        drop(slots);
        let (cache, graph) = (self.clone(), graph.clone());
        runtime.spawn(async move { cache.load(graph, dataset, version).await });
        None
    }

    async fn load(self: Arc<Self>, graph: Arc<dyn GraphStore>, dataset: DatasetId, version: u64) {
        let Ok(_one_load) = self.loading.acquire().await else { return };
        if !self.still_wanted(dataset, version) {
            return;
        }
        let started = std::time::Instant::now();
        let sketch = match graph.ranking().whole_sketch(dataset).await {
            Ok(sketch) => sketch,
            Err(e) => {
                tracing::warn!(%dataset, error = %e, "the sketch cache could not read the dataset; the store answers");
                return self.settle(dataset, Slot::Skipped(version));
            }
        };
        let built = tokio::task::spawn_blocking(move || SketchIndex::build(sketch)).await.ok().flatten();
        let slot = match built {
            Some(index) if self.fits(dataset, index.bytes()) => {
                tracing::debug!(
                    %dataset,
                    version,
                    nodes = index.len().0,
                    edges = index.len().1,
                    bytes = index.bytes(),
                    ms = started.elapsed().as_secs_f64() * 1e3,
                    "sketch cache loaded"
                );
                Slot::Ready(version, Arc::new(index))
            }
            _ => {
                tracing::info!(%dataset, version, "the dataset's sketch is past the cache's budget; the store answers");
                Slot::Skipped(version)
            }
        };
        self.settle(dataset, slot);
    }

    /// Waits until no load is under way (for benchmarks of the steady state).
    pub(crate) async fn wait_for_loads(&self) {
        loop {
            let loading = self.slots.lock().is_ok_and(|slots| slots.values().any(|s| matches!(s, Slot::Loading(_))));
            if !loading {
                return;
            }
            // The running load holds the permit until it has settled its slot.
            drop(self.loading.acquire().await);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// Whether a sketch of the dataset is in memory, at any version.
    #[cfg(test)]
    pub(crate) fn holds(&self, dataset: DatasetId) -> bool {
        self.slots.lock().is_ok_and(|slots| matches!(slots.get(&dataset), Some(Slot::Ready(..))))
    }

    /// Whether the load of `version` is still the one the dataset waits for.
    fn still_wanted(&self, dataset: DatasetId, version: u64) -> bool {
        self.slots.lock().is_ok_and(|slots| matches!(slots.get(&dataset), Some(Slot::Loading(v)) if *v == version))
    }

    /// Whether `bytes` more fit beside the other datasets' sketches.
    fn fits(&self, dataset: DatasetId, bytes: usize) -> bool {
        let others: usize = self.slots.lock().map_or(usize::MAX, |slots| {
            slots
                .iter()
                .filter(|(d, _)| **d != dataset)
                .map(|(_, s)| match s {
                    Slot::Ready(_, index) => index.bytes(),
                    _ => 0,
                })
                .sum()
        });
        others.saturating_add(bytes) <= SKETCH_CACHE_BUDGET
    }

    /// Installs a finished load, unless a newer version was asked for meanwhile.
    fn settle(&self, dataset: DatasetId, slot: Slot) {
        if let Ok(mut slots) = self.slots.lock() {
            if slots.get(&dataset).is_none_or(|current| current.version() <= slot.version()) {
                slots.insert(dataset, slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use recall_core::{Edge, Node};
    use recall_memory::MemoryGraphStore;
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    async fn ready(cache: &Arc<SketchCache>, graph: &Arc<dyn GraphStore>, ds: DatasetId, v: u64) -> Arc<SketchIndex> {
        for _ in 0..200 {
            if let Some(index) = cache.get(graph, ds, v) {
                return index;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the sketch of version {v} never loaded");
    }

    #[tokio::test]
    async fn loads_a_version_in_the_background_and_reloads_when_it_moves() {
        let graph: Arc<dyn GraphStore> = Arc::new(MemoryGraphStore::default());
        let ds = DatasetId(Uuid::new_v4());
        let node = |name: &str| {
            let mut properties = serde_json::Map::new();
            properties.insert("name".into(), json!(name));
            properties.insert("importance_weight".into(), json!(0.5));
            Node { id: Uuid::new_v4(), node_type: "Entity".into(), properties }
        };
        // The store's answer in the cache's order (nodes by id, edges by key).
        let from_store = |sketch: recall_core::ports::Sketch| {
            let mut sketch = sketch;
            sketch.nodes.sort_by_key(|n| n.id);
            sketch.edges.sort_by_key(|e| e.key());
            sketch
        };
        let (a, b, c) = (node("a"), node("b"), node("c"));
        graph.upsert_nodes(ds, &[a.clone(), b.clone()]).await.unwrap();
        graph.upsert_edges(ds, &[Edge::new(a.id, "knows", b.id)]).await.unwrap();
        let cache = Arc::new(SketchCache::new());
        assert!(cache.get(&graph, ds, 1).is_none(), "the first ask answers nothing");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            matches!(cache.slots.lock().unwrap().get(&ds), Some(Slot::Asked(1))),
            "and starts no load: a one-shot process never reads the sketch"
        );
        let v1 = ready(&cache, &graph, ds, 1).await;
        assert_eq!(v1.len(), (2, 1));
        let seeds = [a.id, b.id, c.id];
        assert_eq!(v1.between(&seeds), from_store(graph.ranking().sketch_between(ds, &seeds, false).await.unwrap()));

        // A write moves the version: the old sketch is not used for the new one.
        graph.upsert_nodes(ds, std::slice::from_ref(&c)).await.unwrap();
        graph.upsert_edges(ds, &[Edge::new(b.id, "knows", c.id)]).await.unwrap();
        assert!(cache.get(&graph, ds, 2).is_none());
        let v2 = ready(&cache, &graph, ds, 2).await;
        assert_eq!(v2.len(), (3, 2));
        assert_eq!(v2.between(&seeds), from_store(graph.ranking().sketch_between(ds, &seeds, false).await.unwrap()));
        assert!(cache.get(&graph, ds, 1).is_none(), "an older reader never brings an older sketch back");
        assert!(cache.get(&graph, ds, 2).is_some(), "nor replaces the newer one");
    }

    /// `wait_for_loads` returns once the load a second ask started has
    /// settled: the next ask finds the sketch without waiting.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waits_for_the_load_under_way() {
        let graph: Arc<dyn GraphStore> = Arc::new(MemoryGraphStore::default());
        let ds = DatasetId(Uuid::new_v4());
        let nodes: Vec<Node> = (0..2_000)
            .map(|_| Node { id: Uuid::new_v4(), node_type: "Entity".into(), properties: Default::default() })
            .collect();
        graph.upsert_nodes(ds, &nodes).await.unwrap();
        let edges: Vec<Edge> = nodes.windows(2).map(|w| Edge::new(w[0].id, "next", w[1].id)).collect();
        graph.upsert_edges(ds, &edges).await.unwrap();
        let cache = Arc::new(SketchCache::new());
        cache.wait_for_loads().await;
        assert!(cache.get(&graph, ds, 1).is_none() && cache.get(&graph, ds, 1).is_none(), "asked twice: loading");
        cache.wait_for_loads().await;
        assert_eq!(cache.get(&graph, ds, 1).map(|s| s.len()), Some((2_000, 1_999)));
    }
}
