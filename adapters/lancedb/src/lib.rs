//! The LanceDB vector store: one Lance table per collection
//! (`"<TypeName>_<field>"`), with a `dataset_id` column that every query
//! filters on, cosine distance, and the embedding model and width recorded in
//! the table's schema metadata.

mod cache;
mod partitions;

use std::collections::HashMap;
use std::sync::Arc;

use cache::{CachedRow, CollectionCache};

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    Array, FixedSizeListArray, Float32Array, ListArray, RecordBatch, RecordBatchIterator, RecordBatchReader,
    StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use futures::TryStreamExt;
use lancedb::index::vector::IvfSqIndexBuilder;
use lancedb::index::{Index, IndexConfig};
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::table::{CompactionOptions, OptimizeAction, OptimizeOptions};
use lancedb::{Connection, DistanceType, Table};
use recall_core::ports::{EmbeddingSpec, NodeSetFilter, ScoredResult, VectorRecord, VectorStore};
use recall_core::{DatasetId, RecallError, Result};
use serde_json::{Map, Value};
use tokio::sync::Mutex;
use uuid::Uuid;

const META_MODEL: &str = "recall.embedding_model";
const META_DIMENSIONS: &str = "recall.embedding_dimensions";

fn lance_err(err: lancedb::Error) -> RecallError {
    RecallError::backend(err)
}

fn arrow_err(err: arrow_schema::ArrowError) -> RecallError {
    RecallError::backend(err)
}

/// SQL string literal with quotes doubled.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn dataset_filter(dataset: DatasetId) -> String {
    format!("dataset_id = {}", quote(&dataset.to_string()))
}

fn schema_for(spec: &EmbeddingSpec) -> Result<SchemaRef> {
    let dims =
        i32::try_from(spec.dimensions).map_err(|_| RecallError::invalid_input("embedding dimensions too large"))?;
    let metadata = HashMap::from([
        (META_MODEL.to_string(), spec.model.clone()),
        (META_DIMENSIONS.to_string(), spec.dimensions.to_string()),
    ]);
    Ok(Arc::new(
        Schema::new(vec![
            Field::new("id", DataType::Utf8, false),
            Field::new("dataset_id", DataType::Utf8, false),
            Field::new(
                "vector",
                DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), dims),
                false,
            ),
            Field::new("payload", DataType::Utf8, false),
            Field::new("belongs_to_set", DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))), false),
        ])
        .with_metadata(metadata),
    ))
}

fn spec_of(schema: &Schema) -> Option<EmbeddingSpec> {
    let meta = schema.metadata();
    Some(EmbeddingSpec { model: meta.get(META_MODEL)?.clone(), dimensions: meta.get(META_DIMENSIONS)?.parse().ok()? })
}

/// Vector store on a LanceDB database (a local directory or an object-store URI).
/// Rows from which a collection gets an approximate (IVF_SQ, cosine)
/// vector index; smaller collections are searched exactly.
pub const DEFAULT_INDEX_THRESHOLD: usize = 2_000;

/// Small data files a collection may hold before it is compacted.
const MAX_FRAGMENTS: usize = 16;

/// How long a replaced version's files stay for readers that opened it
/// (a search in flight, a process that has not seen the newer version yet).
const VERSION_GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// Rows of a data file that compaction leaves alone. Lance's default (a
/// million) made every compaction of a growing collection rewrite its one
/// large file with the new small ones: at a write of 500 rows and a
/// compaction every 16 writes, a collection growing to a million rows
/// rewrote about 60 million. LanceDB counts a file of fewer rows than this
/// as small, so the two agree on which files a compaction merges.
const COMPACTED_FILE_ROWS: usize = 100_000;

/// Vector index segments (the first build, then a delta per fold) a
/// collection may hold before a fold merges them into one.
const MAX_INDEX_SEGMENTS: usize = 4;

pub struct LanceVectorStore {
    conn: Connection,
    /// `None`: never build a vector index (every search is exact).
    index_threshold: Option<usize>,
    /// Opened tables and their embedding specs.
    tables: Mutex<HashMap<String, (Table, EmbeddingSpec)>>,
    /// One writer per collection: Lance commits are optimistic, and serialising
    /// our own writers avoids conflict retries.
    write_locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Bytes the search cache may hold (0: every search goes to LanceDB).
    cache_budget: usize,
    /// Rows from which a collection's cache is loaded in the background
    /// (`None`: always on the first search's path).
    background_load_rows: Option<usize>,
    /// Collections held in memory for search (see `cache`), or left to
    /// LanceDB; shared with the loads running in the background.
    caches: Arc<SearchCaches>,
    /// How long a replaced version stays readable ([`prune_superseded`]).
    version_grace: std::time::Duration,
}

/// The default [`LanceVectorStore::with_background_load_rows`]: a smaller
/// collection loads in well under a tenth of a second (about a second per
/// 100 000 rows of 384 dimensions on an idle bench machine, several times
/// that while other collections load), so the first search waits for it; a
/// larger one is searched in LanceDB (through its vector index from 2 000
/// rows) until its cache is live.
pub const DEFAULT_BACKGROUND_LOAD_ROWS: usize = 5_000;

/// The bounds of Lance's own caches: the index cache (opened parts of
/// vector and scalar indexes) and the metadata cache (manifests, file and
/// fragment metadata). Lance's defaults (6 GiB and 1 GiB) let a long-lived
/// process grow by up to 7 GiB: every fold of new rows into a vector index
/// writes a new index version, every commit a new manifest, and superseded
/// entries leave only when the cache is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LanceCaches {
    pub index_bytes: usize,
    pub metadata_bytes: usize,
}

impl LanceCaches {
    /// `total` bytes: three quarters for the index cache, the rest for metadata.
    pub fn of_total(total: usize) -> Self {
        let metadata_bytes = total / 4;
        Self { index_bytes: total - metadata_bytes, metadata_bytes }
    }
}

/// The default bound of Lance's caches: 1 GiB.
pub const DEFAULT_LANCE_CACHE_BYTES: usize = 1 << 30;

impl Default for LanceCaches {
    fn default() -> Self {
        Self::of_total(DEFAULT_LANCE_CACHE_BYTES)
    }
}

/// The default search cache budget: 1 GiB.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// Rows past which a collection is left to LanceDB's vector index whatever
/// the budget: the cache's search is linear. Its int8 first pass reads a
/// quarter of the f32 scan's bytes (on the bench machine a 770 000-row,
/// 384-wide collection: ~60 ms scanned in f32, ~45 ms in LanceDB's index,
/// see docs/backends.md for the int8 figure).
pub const MAX_CACHED_ROWS: usize = 2_000_000;

/// The default [`LanceVectorStore::with_partition_rows`]: 0, never, so every
/// cached search is exact. Partitions are opt-in: at 300 000 chunks they
/// found two thirds of the exact top 10 for no clear gain in speed
/// (docs/scale.md, "Partitions at 300 000 chunks").
pub const DEFAULT_PARTITION_ROWS: usize = 0;

/// Bytes a cached row's vector costs at least: its two int8 codes (past
/// `cache::CODED_ROWS` rows of a dataset; below, f32 and one code take 5).
const CACHED_BYTES_PER_DIMENSION: usize = 2;

#[derive(Clone)]
enum CacheSlot {
    Loaded(Arc<CollectionCache>),
    /// Being loaded in the background: searched in LanceDB meanwhile.
    Loading,
    /// Past the budget: searched in LanceDB.
    Skipped,
}

/// The search caches of a store's collections.
struct SearchCaches {
    slots: Mutex<HashMap<String, CacheSlot>>,
    /// Bumped whenever a slot is dropped (a refresh, a conflicting write, a
    /// replaced collection): a load begun before it is never kept.
    generation: std::sync::atomic::AtomicU64,
    /// Background loads run one at a time: on a small machine the searches
    /// they stand aside for keep the other cores.
    background: tokio::sync::Semaphore,
    /// Rows of one dataset from which a cached collection's searches probe
    /// partitions (0: never; [`LanceVectorStore::with_partition_rows`]).
    partition_rows: std::sync::atomic::AtomicUsize,
}

impl Default for SearchCaches {
    fn default() -> Self {
        Self {
            slots: Mutex::default(),
            generation: std::sync::atomic::AtomicU64::default(),
            background: tokio::sync::Semaphore::new(1),
            partition_rows: std::sync::atomic::AtomicUsize::new(DEFAULT_PARTITION_ROWS),
        }
    }
}

impl SearchCaches {
    fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn partition_rows(&self) -> Option<usize> {
        Some(self.partition_rows.load(std::sync::atomic::Ordering::Relaxed)).filter(|rows| *rows > 0)
    }

    async fn slot(&self, collection: &str) -> Option<CacheSlot> {
        self.slots.lock().await.get(collection).cloned()
    }

    async fn loaded(&self, collection: &str) -> Option<Arc<CollectionCache>> {
        match self.slot(collection).await {
            Some(CacheSlot::Loaded(cache)) => Some(cache),
            _ => None,
        }
    }

    /// Drops one collection's slot (`None`: every slot); a load under way is not kept.
    async fn forget(&self, collection: Option<&str>) {
        self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut slots = self.slots.lock().await;
        match collection {
            Some(c) => {
                slots.remove(c);
            }
            None => slots.clear(),
        }
    }

    async fn bytes(&self) -> usize {
        let loaded: Vec<Arc<CollectionCache>> = self
            .slots
            .lock()
            .await
            .values()
            .filter_map(|slot| match slot {
                CacheSlot::Loaded(cache) => Some(Arc::clone(cache)),
                CacheSlot::Loading | CacheSlot::Skipped => None,
            })
            .collect();
        loaded.iter().map(|c| c.bytes()).sum()
    }

    async fn skip(&self, collection: &str, rows: usize, budget: usize) {
        tracing::info!(collection, rows, budget, "collection past the search cache budget; searched in LanceDB");
        self.slots.lock().await.insert(collection.to_string(), CacheSlot::Skipped);
    }

    /// Marks a collection as loading, if it still has no slot and nothing
    /// was dropped since `generation`; whether the caller should load it.
    async fn start_loading(&self, collection: &str, generation: u64) -> bool {
        let mut slots = self.slots.lock().await;
        if self.generation() != generation || slots.contains_key(collection) {
            return false;
        }
        slots.insert(collection.to_string(), CacheSlot::Loading);
        true
    }

    /// Scans `table` into a cache and makes it live, unless it does not fit
    /// the budget (the collection is then left to LanceDB) or a slot was
    /// dropped since `generation` (the scan may predate another process's
    /// write: it is returned for one search, never kept). The caller holds
    /// the collection's write lock, so no write lands between the scan and
    /// the cache going live.
    async fn load(
        &self,
        collection: &str,
        table: &Table,
        dims: usize,
        budget: usize,
        generation: u64,
    ) -> Result<Option<Arc<CollectionCache>>> {
        let used = self.bytes().await;
        let rows = table.count_rows(None).await.map_err(lance_err)?;
        // Vectors alone, before reading anything: a collection that cannot fit is never scanned.
        if rows > MAX_CACHED_ROWS || used + rows * dims * CACHED_BYTES_PER_DIMENSION > budget {
            self.skip(collection, rows, budget).await;
            return Ok(None);
        }
        let started = std::time::Instant::now();
        // Batch by batch into the cache, so a load holds the cache and one
        // batch, not every row twice over. Decoding rows and computing their
        // codes (and at the end the partitions) is CPU work: off the async
        // workers, so the searches in flight keep running.
        let loaded = Arc::new(CollectionCache::new(dims, Vec::new(), self.partition_rows()));
        let mut batches = scan_query(table).execute().await.map_err(lance_err)?;
        while let Some(batch) = batches.try_next().await.map_err(lance_err)? {
            let cache = Arc::clone(&loaded);
            let decoded = tokio::task::spawn_blocking(move || {
                cache.upsert_rows(rows_of(&[batch], dims)?);
                Ok::<_, RecallError>(())
            });
            decoded.await.map_err(|e| RecallError::backend_msg(format!("the search cache load stopped: {e}")))??;
            if used + loaded.bytes() > budget {
                self.skip(collection, rows, budget).await;
                return Ok(None);
            }
        }
        let cache = Arc::clone(&loaded);
        tokio::task::spawn_blocking(move || cache.partition())
            .await
            .map_err(|e| RecallError::backend_msg(format!("the search cache load stopped: {e}")))?;
        tracing::debug!(collection, rows, ms = started.elapsed().as_secs_f64() * 1e3, "search cache loaded");
        let mut slots = self.slots.lock().await;
        if self.generation() == generation {
            slots.insert(collection.to_string(), CacheSlot::Loaded(Arc::clone(&loaded)));
        }
        Ok(Some(loaded))
    }
}

/// Loads a collection's cache off the search path. It waits for the
/// collection's write lock like a writer; a failure leaves the collection to
/// LanceDB until a later search starts another load.
async fn load_in_background(
    caches: Arc<SearchCaches>,
    lock: Arc<Mutex<()>>,
    table: Table,
    collection: String,
    dims: usize,
    budget: usize,
    generation: u64,
) {
    // The semaphore is never closed: a permit always comes.
    let Ok(_turn) = caches.background.acquire().await else { return };
    let _guard = lock.lock().await;
    if caches.generation() != generation {
        return;
    }
    if let Err(e) = caches.load(&collection, &table, dims, budget, generation).await {
        tracing::warn!(collection, error = %e, "the search cache did not load; searched in LanceDB");
        let mut slots = caches.slots.lock().await;
        if caches.generation() == generation && matches!(slots.get(&collection), Some(CacheSlot::Loading)) {
            slots.remove(&collection);
        }
    }
}

impl LanceVectorStore {
    /// Opens (or creates) the database at `uri`: a directory, or an
    /// object-store URI such as `s3://bucket/prefix`, configured by the
    /// standard `AWS_*` variables (docs/backends.md).
    pub async fn connect(uri: &str) -> Result<Self> {
        Self::connect_with(uri, Vec::<(String, String)>::new(), LanceCaches::default()).await
    }

    /// [`Self::connect`] with object-store options that take precedence over
    /// the environment (for `s3://`: `aws_endpoint`, `aws_region`,
    /// `aws_access_key_id`, `aws_secret_access_key`, `allow_http`, …).
    pub async fn connect_with_options(uri: &str, options: Vec<(String, String)>) -> Result<Self> {
        Self::connect_with(uri, options, LanceCaches::default()).await
    }

    /// [`Self::connect_with_options`] with the bounds of Lance's own caches.
    pub async fn connect_with(uri: &str, options: Vec<(String, String)>, caches: LanceCaches) -> Result<Self> {
        let session = lancedb::Session::new(
            caches.index_bytes,
            caches.metadata_bytes,
            Arc::new(lancedb::ObjectStoreRegistry::default()),
        );
        let conn = lancedb::connect(uri)
            .session(Arc::new(session))
            .storage_options(options)
            .execute()
            .await
            .map_err(|e| RecallError::backend_msg(format!("cannot open the LanceDB database at {uri}: {e}")))?;
        Ok(Self {
            conn,
            index_threshold: Some(DEFAULT_INDEX_THRESHOLD),
            tables: Mutex::new(HashMap::new()),
            write_locks: Mutex::new(HashMap::new()),
            cache_budget: DEFAULT_CACHE_BYTES,
            background_load_rows: Some(DEFAULT_BACKGROUND_LOAD_ROWS),
            caches: Arc::new(SearchCaches::default()),
            version_grace: VERSION_GRACE,
        })
    }

    /// Sets the bytes the search cache may hold (0 turns it off).
    pub fn with_cache_budget(mut self, bytes: usize) -> Self {
        self.cache_budget = bytes;
        self
    }

    /// Sets the rows of one dataset from which a cached collection's searches
    /// with a limit probe the partitions nearest the query instead of
    /// scanning every row (`None`: always scan, every search exact). Takes
    /// effect for caches loaded after the call.
    pub fn with_partition_rows(self, rows: Option<usize>) -> Self {
        self.caches.partition_rows.store(rows.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// Sets the row count from which a collection's search cache is loaded
    /// in the background rather than by the search that first needs it
    /// (`None`: always by that search).
    pub fn with_background_load_rows(mut self, rows: Option<usize>) -> Self {
        self.background_load_rows = rows;
        self
    }

    /// Whether a collection is searched in memory (it has been searched once,
    /// its load has finished and it fits the budget).
    pub async fn is_cached(&self, collection: &str) -> bool {
        self.caches.loaded(collection).await.is_some()
    }

    async fn loaded_cache(&self, collection: &str) -> Option<Arc<CollectionCache>> {
        self.caches.loaded(collection).await
    }

    /// The collection's search cache, loading it on first use if it fits the
    /// budget: on the search's path for a collection under
    /// `background_load_rows` rows, else in the background (this search and
    /// those until the load finishes go to LanceDB). Loads run under the
    /// collection's write lock, so no write lands between the scan and the
    /// cache going live; writers update it after each commit under the same
    /// lock.
    async fn cache(&self, collection: &str, spec: &EmbeddingSpec) -> Result<Option<Arc<CollectionCache>>> {
        if self.cache_budget == 0 {
            return Ok(None);
        }
        // Read before the table handle: a refresh after this point keeps the
        // load below from going live.
        let generation = self.caches.generation();
        match self.caches.slot(collection).await {
            Some(CacheSlot::Loaded(cache)) => return Ok(Some(cache)),
            Some(CacheSlot::Loading | CacheSlot::Skipped) => return Ok(None),
            None => {}
        }
        if let Some(threshold) = self.background_load_rows {
            let Some((table, _)) = self.open(collection).await? else {
                return Ok(None);
            };
            if table.count_rows(None).await.map_err(lance_err)? >= threshold {
                if self.caches.start_loading(collection, generation).await {
                    // The handle is this process's latest: its own writes go
                    // through it, another process's bump the generation.
                    let lock = self.write_lock(collection).await;
                    let (caches, name) = (Arc::clone(&self.caches), collection.to_string());
                    tokio::spawn(load_in_background(
                        caches,
                        lock,
                        table,
                        name,
                        spec.dimensions,
                        self.cache_budget,
                        generation,
                    ));
                }
                return Ok(None);
            }
        }
        let lock = self.write_lock(collection).await;
        let _guard = lock.lock().await;
        // Another task may have loaded it while we waited.
        match self.caches.slot(collection).await {
            Some(CacheSlot::Loaded(cache)) => return Ok(Some(cache)),
            Some(CacheSlot::Loading | CacheSlot::Skipped) => return Ok(None),
            None => {}
        }
        // The handle as of now: one from before a refresh may predate another process's write.
        let Some((table, _)) = self.open(collection).await? else {
            return Ok(None);
        };
        self.caches.load(collection, &table, spec.dimensions, self.cache_budget, generation).await
    }

    /// After a committed write: a cache that outgrew the budget is dropped
    /// for good; one that outgrew its partitions is dropped for the next
    /// search to load again (in the background, training them there).
    async fn check_cache_budget(&self, collection: &str, cache: &CollectionCache) {
        let total = self.caches.bytes().await;
        if total > self.cache_budget || cache.rows() > MAX_CACHED_ROWS {
            self.caches.skip(collection, cache.rows(), self.cache_budget).await;
        } else if cache.outgrew_partitions() {
            tracing::debug!(collection, rows = cache.rows(), "search cache reloads to partition its rows");
            self.caches.forget(Some(collection)).await;
        }
    }

    /// Sets the row count from which a collection is indexed (`None`: never).
    pub fn with_index_threshold(mut self, threshold: Option<usize>) -> Self {
        self.index_threshold = threshold;
        self
    }

    /// Sets how long a version replaced by a compaction or an index merge
    /// stays readable before its files are deleted (default ten minutes).
    pub fn with_version_grace(mut self, grace: std::time::Duration) -> Self {
        self.version_grace = grace;
        self
    }

    /// How many versions of a collection are kept (`None`: no such collection).
    pub async fn version_count(&self, collection: &str) -> Result<Option<usize>> {
        let Some((table, _)) = self.open(collection).await? else { return Ok(None) };
        Ok(Some(table.list_versions().await.map_err(lance_err)?.len()))
    }

    /// Whether a collection has its approximate vector index.
    pub async fn has_vector_index(&self, collection: &str) -> Result<bool> {
        let Some((table, _)) = self.open(collection).await? else { return Ok(false) };
        Ok(vector_index(&table).await?.is_some())
    }

    /// A collection's data files (fragments) and vector index segments (0
    /// without an index); `None` when it does not exist.
    pub async fn layout(&self, collection: &str) -> Result<Option<(usize, usize)>> {
        let Some((table, _)) = self.open(collection).await? else { return Ok(None) };
        let fragments = table.stats().await.map_err(lance_err)?.fragment_stats.num_fragments;
        let segments = match vector_index(&table).await? {
            Some(index) => table
                .index_stats(&index.name)
                .await
                .map_err(lance_err)?
                .map_or(0, |s| s.num_indices.unwrap_or(1) as usize),
            None => 0,
        };
        Ok(Some((fragments, segments)))
    }

    /// Keeps a collection fast to search as it grows; runs under the
    /// collection's write lock after every write.
    ///
    /// - Every write adds a data file (a fragment), and a search opens every
    ///   fragment: past `MAX_FRAGMENTS` small ones the table is compacted
    ///   (the vector index is remapped, not rebuilt).
    /// - The vector index is built once the table reaches the threshold. New
    ///   rows are searched exactly until more than a tenth of the rows are
    ///   unindexed, then folded in as a delta segment; every search walks
    ///   every segment, so past `MAX_INDEX_SEGMENTS` the fold merges them all
    ///   into one.
    ///
    /// Best effort: the write before it has committed, so a failure here is
    /// logged, not returned. Losing a commit race means another process ran
    /// the same maintenance at the same moment; the next write looks again.
    async fn maintain(&self, table: &Table) {
        match self.try_maintain(table).await {
            Ok(()) => {}
            Err(MaintainError::Conflict(e)) => {
                tracing::debug!(error = %e, "maintenance lost a commit race to another process; skipped");
            }
            Err(MaintainError::Other(e)) => {
                tracing::warn!(error = %e, "collection maintenance failed; the next write tries again");
            }
        }
    }

    async fn try_maintain(&self, table: &Table) -> std::result::Result<(), MaintainError> {
        let stats = table.stats().await?;
        if stats.fragment_stats.num_small_fragments > MAX_FRAGMENTS {
            table
                .optimize(OptimizeAction::Compact {
                    options: CompactionOptions { target_rows_per_fragment: COMPACTED_FILE_ROWS, ..Default::default() },
                    remap_options: None,
                })
                .await?;
            prune_superseded(table, self.version_grace).await?;
        }
        let Some(threshold) = self.index_threshold else { return Ok(()) };
        match vector_index(table).await.map_err(MaintainError::Other)? {
            None => {
                if stats.num_rows >= threshold {
                    // IVF_SQ, not IVF_HNSW_SQ: folding rows into an HNSW
                    // graph and merging its segments rebuilt the graphs,
                    // over half of a large ingestion's CPU (docs/backends.md).
                    let builder = IvfSqIndexBuilder::default().distance_type(DistanceType::Cosine);
                    table.create_index(&["vector"], Index::IvfSq(builder)).execute().await?;
                }
            }
            Some(index) => {
                if let Some(stats) = table.index_stats(&index.name).await? {
                    if stats.num_unindexed_rows * 10 > stats.num_indexed_rows.max(1) {
                        let segments = stats.num_indices.unwrap_or(1) as usize;
                        let merge = segments >= MAX_INDEX_SEGMENTS;
                        let options = if merge { OptimizeOptions::merge(segments) } else { OptimizeOptions::default() };
                        table.optimize(OptimizeAction::Index(options)).await?;
                        if merge {
                            prune_superseded(table, self.version_grace).await?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The search of [`VectorStore::search`]; without `payloads` the hits'
    /// payloads are neither read nor parsed (left empty).
    async fn search_hits(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
        payloads: bool,
    ) -> Result<Vec<ScoredResult>> {
        let Some((table, spec)) = self.open(collection).await? else {
            return Ok(Vec::new());
        };
        if query.len() != spec.dimensions {
            return Err(mismatch(dataset, &spec, "<query vector>", query.len()));
        }
        if let Some(cache) = self.cache(collection, &spec).await? {
            return Ok(cache.search(dataset, query, limit, filter, payloads).await);
        }
        let mut predicate = dataset_filter(dataset);
        if let Some(f) = filter {
            predicate = format!("{predicate} AND {}", filter_sql(&f));
        }
        // "All rows" must not go through an approximate index.
        let exhaustive = limit.is_none();
        let limit = match limit {
            Some(n) => n,
            // LanceDB applies a default limit; "all" means the dataset's row count.
            None => table.count_rows(Some(dataset_filter(dataset))).await.map_err(lance_err)?,
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        let columns: &[&str] = if payloads { &["id", "payload", "_distance"] } else { &["id", "_distance"] };
        let mut vector_query = table
            .query()
            .nearest_to(query)
            .map_err(lance_err)?
            .distance_type(DistanceType::Cosine)
            .only_if(predicate)
            // Never the stored vectors: only what a hit carries.
            .select(Select::columns(columns))
            .limit(limit)
            // Approximate hits are re-ranked on the exact vectors, so scores
            // stay raw cosine distances.
            .refine_factor(4);
        if exhaustive {
            vector_query = vector_query.bypass_vector_index();
        }
        let batches = collect_batches(vector_query).await?;
        let mut hits = Vec::new();
        for batch in &batches {
            let ids = string_column(batch, "id")?;
            let texts = if payloads { Some(string_column(batch, "payload")?) } else { None };
            let distances = batch
                .column_by_name("_distance")
                .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
                .ok_or_else(|| RecallError::backend_msg("LanceDB result has no _distance column"))?;
            for i in 0..batch.num_rows() {
                let id = parse_id(ids.value(i))?;
                let payload = texts.map(|t| parse_payload(t.value(i))).unwrap_or_default();
                hits.push(ScoredResult { id, score: f64::from(distances.value(i)), payload });
            }
        }
        hits.sort_by(|a, b| a.score.total_cmp(&b.score));
        Ok(hits)
    }

    async fn open(&self, collection: &str) -> Result<Option<(Table, EmbeddingSpec)>> {
        let mut tables = self.tables.lock().await;
        if let Some(found) = tables.get(collection) {
            return Ok(Some(found.clone()));
        }
        match self.conn.open_table(collection).execute().await {
            Ok(table) => {
                let schema = table.schema().await.map_err(lance_err)?;
                let spec = spec_of(&schema).ok_or_else(|| {
                    RecallError::backend_msg(format!("table '{collection}' has no embedding metadata"))
                })?;
                tables.insert(collection.to_string(), (table.clone(), spec.clone()));
                Ok(Some((table, spec)))
            }
            Err(lancedb::Error::TableNotFound { .. }) => Ok(None),
            Err(e) => Err(lance_err(e)),
        }
    }

    /// A create that raced another process's create of the same table can
    /// land as an empty overwrite on top of it (Lance rebases a create onto a
    /// table that appeared meanwhile), hiding the rows the other process wrote
    /// in between: they are put back from the version before ours, inserted
    /// where absent so a newer write of the same id wins.
    async fn put_back_overwritten_rows(&self, collection: &str, table: &Table, ours: u64) -> Result<()> {
        let before = self.conn.open_table(collection).execute().await.map_err(lance_err)?;
        before.checkout(ours - 1).await.map_err(lance_err)?;
        let batches: Vec<RecordBatch> =
            collect_batches(before.query()).await?.into_iter().filter(|b| b.num_rows() > 0).collect();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        tracing::warn!(
            collection,
            version = ours,
            rows,
            "a concurrent create overwrote the table; putting its rows back"
        );
        if rows == 0 {
            return Ok(());
        }
        let schema = batches[0].schema();
        retry_conflicts(table, || {
            let reader: Box<dyn RecordBatchReader + Send> =
                Box::new(RecordBatchIterator::new(batches.clone().into_iter().map(Ok), schema.clone()));
            let mut merge = table.merge_insert(&["dataset_id", "id"]);
            merge.when_not_matched_insert_all();
            async move { merge.execute(reader).await.map(|_| ()) }
        })
        .await?;
        self.forget_cache(collection).await;
        Ok(())
    }

    /// After a write conflicted with another process's: the collection's
    /// search cache may miss what that process changed.
    async fn forget_cache(&self, collection: &str) {
        self.caches.forget(Some(collection)).await;
    }

    async fn write_lock(&self, collection: &str) -> Arc<Mutex<()>> {
        self.write_locks.lock().await.entry(collection.to_string()).or_default().clone()
    }

    async fn existing(&self, dataset: DatasetId, collection: &str) -> Result<(Table, EmbeddingSpec)> {
        self.open(collection).await?.ok_or_else(|| {
            RecallError::NotFound(format!("Vector collection '{collection}' does not exist (dataset {dataset})."))
        })
    }
}

/// The table's index on the `vector` column, if it has one.
async fn vector_index(table: &Table) -> Result<Option<IndexConfig>> {
    let indices = table.list_indices().await.map_err(lance_err)?;
    Ok(indices.into_iter().find(|i| i.columns.iter().any(|c| c == "vector")))
}

/// An existing collection serves `spec` only if it was made for it.
fn same_spec(dataset: DatasetId, existing: &EmbeddingSpec, spec: &EmbeddingSpec) -> Result<()> {
    if existing == spec {
        Ok(())
    } else {
        Err(mismatch(dataset, existing, &spec.model, spec.dimensions))
    }
}

fn mismatch(dataset: DatasetId, stored: &EmbeddingSpec, model: &str, dims: usize) -> RecallError {
    RecallError::embedding_mismatch(dataset, stored, model, dims)
}

fn to_batch(schema: SchemaRef, dataset: DatasetId, dims: usize, records: &[VectorRecord]) -> Result<RecordBatch> {
    let ids = StringArray::from(records.iter().map(|r| r.id.to_string()).collect::<Vec<_>>());
    let datasets = StringArray::from(vec![dataset.to_string(); records.len()]);
    let flat: Vec<f32> = records.iter().flat_map(|r| r.vector.iter().copied()).collect();
    let dims_i32 = i32::try_from(dims).map_err(|_| RecallError::invalid_input("embedding dimensions too large"))?;
    let vectors = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, true)),
        dims_i32,
        Arc::new(Float32Array::from(flat)),
        None,
    )
    .map_err(arrow_err)?;
    let payloads =
        StringArray::from(records.iter().map(|r| Value::Object(r.payload.clone()).to_string()).collect::<Vec<_>>());
    let mut sets = ListBuilder::new(StringBuilder::new());
    for r in records {
        for tag in &r.belongs_to_set {
            sets.values().append_value(tag);
        }
        sets.append(true);
    }
    RecordBatch::try_new(
        schema,
        vec![Arc::new(ids), Arc::new(datasets), Arc::new(vectors), Arc::new(payloads), Arc::new(sets.finish())],
    )
    .map_err(arrow_err)
}

/// Why a collection's maintenance stopped.
enum MaintainError {
    /// Another process committed first (compaction or index build racing).
    Conflict(lancedb::Error),
    Other(RecallError),
}

impl From<lancedb::Error> for MaintainError {
    fn from(e: lancedb::Error) -> Self {
        if is_commit_conflict(&e) {
            Self::Conflict(e)
        } else {
            Self::Other(lance_err(e))
        }
    }
}

impl std::fmt::Display for MaintainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Conflict(e) => e.fmt(f),
            Self::Other(e) => e.fmt(f),
        }
    }
}

/// Attempts of a write that conflicts with other processes' commits.
const WRITE_ATTEMPTS: usize = 5;

/// A commit that lost to another process's incompatible one (Lance retries
/// compatible ones itself).
fn is_commit_conflict(err: &lancedb::Error) -> bool {
    let text = err.to_string();
    matches!(err, lancedb::Error::Lance { .. })
        && (text.contains("Incompatible transaction") || text.contains("ommit conflict"))
}

/// Runs an idempotent write, again on the table's latest version when it
/// lost a commit race to another process, up to [`WRITE_ATTEMPTS`] times.
/// `Ok(true)` when a retry happened.
async fn retry_conflicts<F, Fut>(table: &Table, mut write: F) -> Result<bool>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = lancedb::Result<()>>,
{
    let mut attempt = 1;
    loop {
        match write().await {
            Ok(()) => return Ok(attempt > 1),
            Err(e) if attempt < WRITE_ATTEMPTS && is_commit_conflict(&e) => {
                tracing::debug!(attempt, error = %e, "commit conflict; retrying on the latest version");
                table.checkout_latest().await.map_err(lance_err)?;
                attempt += 1;
            }
            Err(e) => return Err(lance_err(e)),
        }
    }
}

/// Deletes the files of the versions a newer version replaced more than
/// `grace` ago ([`VERSION_GRACE`] unless set). Lance keeps every version
/// (for time travel, which nothing here uses), so without this a collection's directory
/// holds every file compaction and index merges ever replaced: at a
/// million chunks, several times the live data. A version's own timestamp
/// is when it was written, not when it was replaced, so the cut-off is the
/// newest version written before the grace period: every version older
/// than it was replaced by it or earlier. A reader that opened a replaced
/// version less than the grace period ago keeps its files.
async fn prune_superseded(table: &Table, grace: std::time::Duration) -> std::result::Result<(), MaintainError> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    let versions = table.list_versions().await?;
    let Some(cut_ms) = versions.iter().map(|v| v.timestamp.timestamp_millis()).filter(|&t| t < now_ms - grace_ms).max()
    else {
        return Ok(());
    };
    if !versions.iter().any(|v| v.timestamp.timestamp_millis() < cut_ms) {
        return Ok(());
    }
    // Up to a second short of the cut-off, so the cut-off version itself
    // stays however long the call takes to start.
    let margin_ms = grace_ms.min(1_000);
    let Some(older_than) = lancedb::table::Duration::try_milliseconds(now_ms - cut_ms + margin_ms) else {
        return Ok(());
    };
    table
        .optimize(OptimizeAction::Prune {
            older_than: Some(older_than),
            delete_unverified: Some(false),
            error_if_tagged_old_versions: Some(false),
        })
        .await?;
    Ok(())
}

/// Runs a query and collects its record batches.
async fn collect_batches(query: impl ExecutableQuery) -> Result<Vec<RecordBatch>> {
    query.execute().await.map_err(lance_err)?.try_collect().await.map_err(lance_err)
}

fn parse_id(text: &str) -> Result<Uuid> {
    Uuid::parse_str(text).map_err(|e| RecallError::backend_msg(format!("corrupt id in LanceDB: {e}")))
}

/// A stored payload; anything but a JSON object reads as an empty one.
pub(crate) fn parse_payload(text: &str) -> Map<String, Value> {
    match serde_json::from_str(text) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Every row of a table, for the search cache.
async fn scan_rows(table: &Table, dims: usize) -> Result<Vec<(DatasetId, CachedRow)>> {
    rows_of(&collect_batches(scan_query(table)).await?, dims)
}

/// Every row of a table as Arrow batches: the columns a cached row holds.
fn scan_query(table: &Table) -> lancedb::query::Query {
    table.query().select(Select::columns(&["id", "dataset_id", "vector", "payload", "belongs_to_set"]))
}

/// The rows of batches of [`scan_query`], decoded.
fn rows_of(batches: &[RecordBatch], dims: usize) -> Result<Vec<(DatasetId, CachedRow)>> {
    let mut rows = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
    for batch in batches {
        let ids = string_column(batch, "id")?;
        let datasets = string_column(batch, "dataset_id")?;
        let payloads = string_column(batch, "payload")?;
        let vectors = batch
            .column_by_name("vector")
            .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
            .ok_or_else(|| RecallError::backend_msg("LanceDB row has no vector column"))?;
        let values = vectors
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| RecallError::backend_msg("LanceDB vectors are not f32"))?;
        let sets = batch.column_by_name("belongs_to_set").and_then(|c| c.as_any().downcast_ref::<ListArray>());
        for i in 0..batch.num_rows() {
            let id = parse_id(ids.value(i))?;
            let dataset = DatasetId(parse_id(datasets.value(i))?);
            let offset = vectors.value_offset(i) as usize;
            let vector = values.values()[offset..offset + dims].to_vec();
            let tags = match sets {
                Some(list) if !list.is_null(i) => {
                    let tags = list.value(i);
                    tags.as_any()
                        .downcast_ref::<StringArray>()
                        .map(|s| s.iter().flatten().map(str::to_string).collect())
                        .unwrap_or_default()
                }
                _ => Vec::new(),
            };
            rows.push((dataset, CachedRow { id, vector, payload: payloads.value(i).into(), sets: tags }));
        }
    }
    Ok(rows)
}

fn string_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a StringArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| RecallError::backend_msg(format!("LanceDB result has no string column '{name}'")))
}

fn filter_sql(filter: &NodeSetFilter) -> String {
    let (func, names) = match filter {
        NodeSetFilter::Any(n) => ("array_has_any", n),
        NodeSetFilter::All(n) => ("array_has_all", n),
    };
    let list = names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ");
    format!("{func}(belongs_to_set, make_array({list}))")
}

#[async_trait]
impl VectorStore for LanceVectorStore {
    fn name(&self) -> &'static str {
        "lancedb"
    }

    async fn ensure_collection(&self, dataset: DatasetId, collection: &str, spec: &EmbeddingSpec) -> Result<()> {
        if let Some((_, existing)) = self.open(collection).await? {
            return same_spec(dataset, &existing, spec);
        }
        let lock = self.write_lock(collection).await;
        let _guard = lock.lock().await;
        // Another task may have created it while we waited.
        if let Some((_, existing)) = self.open(collection).await? {
            return same_spec(dataset, &existing, spec);
        }
        let table = match self.conn.create_empty_table(collection, schema_for(spec)?).execute().await {
            Ok(table) => table,
            // Another process created it between our look and our create
            // (or its create, landing as an overwrite, preempted ours).
            Err(e) if matches!(e, lancedb::Error::TableAlreadyExists { .. }) || is_commit_conflict(&e) => {
                return match self.open(collection).await? {
                    Some((_, existing)) => same_spec(dataset, &existing, spec),
                    None => Err(RecallError::backend_msg(format!("table '{collection}' vanished while created"))),
                };
            }
            Err(e) => return Err(lance_err(e)),
        };
        let version = table.version().await.map_err(lance_err)?;
        if version > 1 {
            self.put_back_overwritten_rows(collection, &table, version).await?;
        }
        self.tables.lock().await.insert(collection.to_string(), (table, spec.clone()));
        Ok(())
    }

    async fn collection_spec(&self, collection: &str) -> Result<Option<EmbeddingSpec>> {
        Ok(self.open(collection).await?.map(|(_, spec)| spec))
    }

    /// Stops at the first row of the dataset instead of counting them all.
    async fn has_collection(&self, dataset: DatasetId, collection: &str) -> Result<bool> {
        let Some((table, _)) = self.open(collection).await? else {
            return Ok(false);
        };
        if let Some(cache) = self.loaded_cache(collection).await {
            return Ok(cache.has_rows(dataset));
        }
        let batches =
            collect_batches(table.query().only_if(dataset_filter(dataset)).select(Select::columns(&["id"])).limit(1))
                .await?;
        Ok(batches.iter().any(|b| b.num_rows() > 0))
    }

    /// Another process wrote: table handles are opened again (at the table's
    /// latest version) and cached collections are loaded again on their next
    /// search.
    async fn refresh(&self) -> Result<()> {
        self.caches.forget(None).await;
        self.tables.lock().await.clear();
        Ok(())
    }

    /// Until no collection's cache is loading.
    async fn settle(&self) {
        while self.caches.slots.lock().await.values().any(|slot| matches!(slot, CacheSlot::Loading)) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    async fn upsert(&self, dataset: DatasetId, collection: &str, records: Vec<VectorRecord>) -> Result<()> {
        let (table, spec) = self.existing(dataset, collection).await?;
        if let Some(bad) = records.iter().find(|r| r.vector.len() != spec.dimensions) {
            return Err(mismatch(dataset, &spec, "<input vectors>", bad.vector.len()));
        }
        if records.is_empty() {
            return Ok(());
        }
        // Last write wins for a repeated id within one call.
        let mut seen = std::collections::HashSet::new();
        let mut unique: Vec<VectorRecord> = records.into_iter().rev().filter(|r| seen.insert(r.id)).collect();
        unique.reverse();
        let schema = table.schema().await.map_err(lance_err)?;
        let batch = to_batch(schema.clone(), dataset, spec.dimensions, &unique)?;
        let lock = self.write_lock(collection).await;
        let _guard = lock.lock().await;
        let retried = retry_conflicts(&table, || {
            let reader: Box<dyn RecordBatchReader + Send> =
                Box::new(RecordBatchIterator::new(vec![Ok(batch.clone())], schema.clone()));
            let mut merge = table.merge_insert(&["dataset_id", "id"]);
            merge.when_matched_update_all(None).when_not_matched_insert_all();
            async move { merge.execute(reader).await.map(|_| ()) }
        })
        .await?;
        if retried {
            self.forget_cache(collection).await;
        } else if let Some(cache) = self.loaded_cache(collection).await {
            cache.upsert_rows(
                unique
                    .into_iter()
                    .map(|r| {
                        let payload = Value::Object(r.payload).to_string().into_boxed_str();
                        (dataset, CachedRow { id: r.id, vector: r.vector, payload, sets: r.belongs_to_set })
                    })
                    .collect(),
            );
            self.check_cache_budget(collection, &cache).await;
        }
        self.maintain(&table).await;
        Ok(())
    }

    async fn search(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
    ) -> Result<Vec<ScoredResult>> {
        self.search_hits(dataset, collection, query, limit, filter, true).await
    }

    async fn search_ids(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
    ) -> Result<Vec<(Uuid, f64)>> {
        let hits = self.search_hits(dataset, collection, query, limit, filter, false).await?;
        Ok(hits.into_iter().map(|h| (h.id, h.score)).collect())
    }

    async fn count(&self, dataset: DatasetId, collection: &str) -> Result<u64> {
        let Some((table, _)) = self.open(collection).await? else {
            return Ok(0);
        };
        Ok(table.count_rows(Some(dataset_filter(dataset))).await.map_err(lance_err)? as u64)
    }

    async fn delete(&self, dataset: DatasetId, collection: &str, ids: &[Uuid]) -> Result<()> {
        let Some((table, _)) = self.open(collection).await? else {
            return Ok(());
        };
        if ids.is_empty() {
            return Ok(());
        }
        let lock = self.write_lock(collection).await;
        let _guard = lock.lock().await;
        for chunk in ids.chunks(500) {
            let list = chunk.iter().map(|id| quote(&id.to_string())).collect::<Vec<_>>().join(", ");
            let predicate = format!("{} AND id IN ({list})", dataset_filter(dataset));
            let retried =
                retry_conflicts(&table, || async { table.delete(predicate.as_str()).await.map(|_| ()) }).await?;
            if retried {
                self.forget_cache(collection).await;
            } else if let Some(cache) = self.loaded_cache(collection).await {
                cache.remove(dataset, chunk);
            }
        }
        Ok(())
    }

    async fn collections(&self) -> Result<Vec<String>> {
        self.conn.table_names().execute().await.map_err(lance_err)
    }

    async fn rows(&self, collection: &str) -> Result<Vec<(DatasetId, VectorRecord)>> {
        let Some((table, spec)) = self.open(collection).await? else {
            return Ok(Vec::new());
        };
        Ok(scan_rows(&table, spec.dimensions)
            .await?
            .into_iter()
            .map(|(dataset, row)| {
                let record = VectorRecord {
                    id: row.id,
                    vector: row.vector,
                    payload: parse_payload(&row.payload),
                    belongs_to_set: row.sets,
                };
                (dataset, record)
            })
            .collect())
    }

    /// One overwrite commit: Lance keeps the previous version until it is
    /// cleaned up, and a reader opens one version or the other.
    async fn replace_collection(
        &self,
        collection: &str,
        spec: &EmbeddingSpec,
        rows: Vec<(DatasetId, VectorRecord)>,
    ) -> Result<()> {
        spec.check_rows(&rows)?;
        let schema = schema_for(spec)?;
        let mut by_dataset: std::collections::BTreeMap<DatasetId, Vec<VectorRecord>> = Default::default();
        for (dataset, record) in rows {
            by_dataset.entry(dataset).or_default().push(record);
        }
        let mut batches = Vec::with_capacity(by_dataset.len());
        for (dataset, records) in &by_dataset {
            for part in records.chunks(8_192) {
                batches.push(to_batch(schema.clone(), *dataset, spec.dimensions, part)?);
            }
        }
        if batches.is_empty() {
            batches.push(RecordBatch::new_empty(schema.clone()));
        }
        let reader: Box<dyn RecordBatchReader + Send> =
            Box::new(RecordBatchIterator::new(batches.into_iter().map(Ok), schema));
        let lock = self.write_lock(collection).await;
        let _guard = lock.lock().await;
        let table = self
            .conn
            .create_table(collection, reader)
            .mode(lancedb::database::CreateTableMode::Overwrite)
            .execute()
            .await
            .map_err(lance_err)?;
        self.caches.forget(Some(collection)).await;
        self.tables.lock().await.insert(collection.to_string(), (table.clone(), spec.clone()));
        self.maintain(&table).await;
        Ok(())
    }

    async fn drop_collection(&self, collection: &str) -> Result<()> {
        let lock = self.write_lock(collection).await;
        let _guard = lock.lock().await;
        match self.conn.drop_table(collection, &[]).await {
            Ok(()) | Err(lancedb::Error::TableNotFound { .. }) => {}
            Err(e) => return Err(lance_err(e)),
        }
        self.caches.forget(Some(collection)).await;
        self.tables.lock().await.remove(collection);
        Ok(())
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        let names = self.conn.table_names().execute().await.map_err(lance_err)?;
        for name in names {
            if let Some((table, _)) = self.open(&name).await? {
                let lock = self.write_lock(&name).await;
                let _guard = lock.lock().await;
                table.delete(dataset_filter(dataset).as_str()).await.map_err(lance_err)?;
                if let Some(cache) = self.loaded_cache(&name).await {
                    cache.remove_dataset(dataset);
                }
            }
        }
        Ok(())
    }

    async fn healthcheck(&self) -> Result<()> {
        self.conn.table_names().execute().await.map_err(lance_err)?;
        Ok(())
    }
}
