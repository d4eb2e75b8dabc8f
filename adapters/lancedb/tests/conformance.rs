#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The shared vector-store conformance suite against a real LanceDB directory.

use std::sync::Arc;

use recall_conformance::vector_store_conformance;
use recall_lancedb::LanceVectorStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_vector_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Exact search here (the 50k batch would otherwise be indexed, which is
    // slow in debug builds); the indexed path has its own test below.
    let store = LanceVectorStore::connect(dir.path().to_str().expect("utf8 path"))
        .await
        .expect("lancedb opens")
        .with_index_threshold(None);
    vector_store_conformance(Arc::new(store), "Lance").await;
}

/// A distinct pseudo-random 8-dimensional vector per seed (xorshift).
fn pseudo_random_vector(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..8)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 10_000) as f32 / 10_000.0 - 0.5
        })
        .collect()
}

/// Past the threshold a collection is indexed (IVF_SQ); results stay
/// exact cosine distances of the dataset's own rows, "all rows" stays exhaustive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_indexes_large_collections_and_stays_correct() {
    use recall_core::ports::{EmbeddingSpec, VectorRecord, VectorStore};
    use recall_core::DatasetId;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = LanceVectorStore::connect(dir.path().to_str().unwrap()).await.unwrap().with_index_threshold(Some(600));
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
    let (a, b) = (DatasetId(uuid::Uuid::new_v4()), DatasetId(uuid::Uuid::new_v4()));
    let vector = |i: usize| pseudo_random_vector(i as u64 + 1);
    let rows = |range: std::ops::Range<usize>| -> Vec<VectorRecord> {
        range
            .map(|i| VectorRecord {
                id: uuid::Uuid::from_u128(i as u128 + 1),
                vector: vector(i),
                payload: serde_json::json!({"i": i}).as_object().cloned().unwrap(),
                belongs_to_set: vec![],
            })
            .collect()
    };
    for ds in [a, b] {
        store.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
    }
    store.upsert(a, "Thing_text", rows(0..500)).await.unwrap();
    assert!(!store.has_vector_index("Thing_text").await.unwrap());
    store.upsert(b, "Thing_text", rows(500..700)).await.unwrap();
    assert!(store.has_vector_index("Thing_text").await.unwrap());
    // 700 rows ≥ 600: the table now has its vector index; more rows arrive unindexed.
    store.upsert(a, "Thing_text", rows(700..760)).await.unwrap();
    for probe in [3usize, 250, 730] {
        let hits = store.search(a, "Thing_text", &vector(probe), Some(5), None).await.unwrap();
        assert_eq!(hits[0].payload["i"], probe, "the stored vector itself is the nearest");
        assert!(hits[0].score.abs() < 1e-5, "exact distance after re-ranking: {}", hits[0].score);
        assert!(hits.iter().all(|h| h.payload["i"].as_u64().unwrap() < 500 || h.payload["i"].as_u64().unwrap() >= 700));
    }
    let all = store.search(a, "Thing_text", &vector(1), None, None).await.unwrap();
    assert_eq!(all.len(), 560, "limit None is exhaustive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_collection_spec_survives_reopen() {
    use recall_core::ports::{EmbeddingSpec, VectorStore};
    use recall_core::DatasetId;
    let dir = tempfile::tempdir().expect("tempdir");
    let uri = dir.path().to_str().expect("utf8 path").to_string();
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 3 };
    {
        let store = LanceVectorStore::connect(&uri).await.unwrap();
        store.ensure_collection(DatasetId(uuid::Uuid::new_v4()), "Thing_text", &spec).await.unwrap();
    }
    let store = LanceVectorStore::connect(&uri).await.unwrap();
    assert_eq!(store.collection_spec("Thing_text").await.unwrap(), Some(spec));
    let err = store
        .ensure_collection(
            DatasetId(uuid::Uuid::new_v4()),
            "Thing_text",
            &EmbeddingSpec { model: "m".into(), dimensions: 5 },
        )
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), 409);
}

/// Many small writes do not leave many small files or index segments behind:
/// past 16 small fragments the table is compacted, past 4 index segments a
/// fold merges them; searches stay exact on the stored vectors throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_compacts_small_writes_and_merges_index_segments() {
    use recall_core::ports::{EmbeddingSpec, VectorStore};
    use recall_core::DatasetId;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = LanceVectorStore::connect(dir.path().to_str().unwrap()).await.unwrap().with_index_threshold(Some(300));
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
    let ds = DatasetId(uuid::Uuid::new_v4());
    store.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
    let vector = |i: usize| pseudo_random_vector(i as u64 + 7);
    let mut max_fragments = 0;
    let mut max_segments = 0;
    let mut rows = 0;
    // 60 writes of growing size: the index is built at 300 rows, then folded
    // in several times (each write adds more than a tenth of the rows).
    for write in 0..60usize {
        let n = 10 + write * 3;
        store.upsert(ds, "Thing_text", indexed_records(rows..rows + n, vector)).await.unwrap();
        rows += n;
        let (fragments, segments) = store.layout("Thing_text").await.unwrap().unwrap();
        max_fragments = max_fragments.max(fragments);
        max_segments = max_segments.max(segments);
    }
    assert!(max_fragments <= 17, "compacted past 16 small fragments (saw {max_fragments})");
    assert!((1..=4).contains(&max_segments), "indexed, at most 4 segments (saw {max_segments})");
    assert_eq!(store.count(ds, "Thing_text").await.unwrap(), rows as u64, "compaction keeps every row");
    for probe in [0usize, rows / 2, rows - 1] {
        let hits = store.search(ds, "Thing_text", &vector(probe), Some(3), None).await.unwrap();
        assert_eq!(hits[0].payload["i"], probe, "the stored vector itself is the nearest");
        assert!(hits[0].score.abs() < 1e-5);
    }
}

/// Compaction replaces versions; their files are deleted once the grace
/// period has passed since they were replaced, never sooner, and every row
/// stays searchable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaced_versions_are_pruned_after_their_grace_period() {
    use recall_core::ports::{EmbeddingSpec, VectorStore};
    use recall_core::DatasetId;
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
    let ds = DatasetId(uuid::Uuid::new_v4());
    let vector = |i: usize| pseudo_random_vector(i as u64 + 11);
    let mut kept = Vec::new();
    for grace in [std::time::Duration::ZERO, std::time::Duration::from_secs(600)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LanceVectorStore::connect(dir.path().to_str().unwrap())
            .await
            .unwrap()
            .with_index_threshold(None)
            .with_version_grace(grace);
        store.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
        // 40 writes: two compactions (past 16 small data files each).
        for write in 0..40usize {
            store.upsert(ds, "Thing_text", indexed_records(write * 10..write * 10 + 10, vector)).await.unwrap();
        }
        assert_eq!(store.count(ds, "Thing_text").await.unwrap(), 400);
        for probe in [0usize, 205, 399] {
            let hits = store.search(ds, "Thing_text", &vector(probe), Some(1), None).await.unwrap();
            assert_eq!(hits[0].payload["i"], probe);
        }
        kept.push(store.version_count("Thing_text").await.unwrap().unwrap());
    }
    // Without pruning: the create, 40 writes and two compactions.
    assert!(kept[1] >= 43, "within the grace period every version stays (kept {})", kept[1]);
    // Pruned at the last compaction: what came after it, and it.
    assert!(kept[0] < 15, "replaced versions pruned (kept {})", kept[0]);
}

/// The same suite with the search cache off: every search is a LanceDB query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_vector_store_conforms_without_search_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = LanceVectorStore::connect(dir.path().to_str().expect("utf8 path"))
        .await
        .expect("lancedb opens")
        .with_index_threshold(None)
        .with_cache_budget(0);
    vector_store_conformance(Arc::new(store), "LanceNoCache").await;
}

/// A cached collection answers exactly what LanceDB answers after every kind
/// of write (replace, insert, delete, dataset delete), and a collection past
/// the budget is searched in LanceDB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_search_cache_follows_writes_and_budget() {
    use recall_core::ports::{EmbeddingSpec, NodeSetFilter, VectorRecord, VectorStore};
    use recall_core::DatasetId;
    let dir = tempfile::tempdir().expect("tempdir");
    let uri = dir.path().to_str().unwrap().to_string();
    let cached = LanceVectorStore::connect(&uri).await.unwrap().with_index_threshold(None);
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
    let (a, b) = (DatasetId(uuid::Uuid::new_v4()), DatasetId(uuid::Uuid::new_v4()));
    let record = |i: usize, seed: u64| VectorRecord {
        id: uuid::Uuid::from_u128(i as u128 + 1),
        vector: pseudo_random_vector(seed),
        payload: serde_json::json!({"i": i, "seed": seed}).as_object().cloned().unwrap(),
        belongs_to_set: if i.is_multiple_of(3) { vec!["third".to_string()] } else { vec![] },
    };
    for ds in [a, b] {
        cached.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
    }
    cached.upsert(a, "Thing_text", (0..300).map(|i| record(i, i as u64 + 1)).collect()).await.unwrap();
    cached.upsert(b, "Thing_text", (300..350).map(|i| record(i, i as u64 + 1)).collect()).await.unwrap();
    assert!(!cached.is_cached("Thing_text").await, "loaded on first search only");
    assert_eq!(
        cached.search(a, "Thing_text", &pseudo_random_vector(5), Some(1), None).await.unwrap()[0].payload["i"],
        4
    );
    assert!(cached.is_cached("Thing_text").await);

    // Writes after the load: replace row 4's vector, add rows, delete rows.
    cached.upsert(a, "Thing_text", vec![record(4, 9_999), record(400, 5)]).await.unwrap();
    cached.upsert(a, "Thing_text", (401..420).map(|i| record(i, i as u64 + 1)).collect()).await.unwrap();
    let doomed: Vec<uuid::Uuid> = [7usize, 8, 299, 410].iter().map(|i| uuid::Uuid::from_u128(*i as u128 + 1)).collect();
    cached.delete(a, "Thing_text", &doomed).await.unwrap();

    // A second store on the same directory, with no cache, is the reference.
    let reference = LanceVectorStore::connect(&uri).await.unwrap().with_index_threshold(None).with_cache_budget(0);
    let third = Some(NodeSetFilter::Any(vec!["third".to_string()]));
    for (seed, limit, filter) in
        [(5u64, Some(10), None), (9_999, Some(3), None), (123, None, None), (77, Some(20), third.clone())]
    {
        for ds in [a, b] {
            let q = pseudo_random_vector(seed);
            let got = cached.search(ds, "Thing_text", &q, limit, filter.clone()).await.unwrap();
            let want = reference.search(ds, "Thing_text", &q, limit, filter.clone()).await.unwrap();
            let ids = |hits: &[recall_core::ports::ScoredResult]| hits.iter().map(|h| h.id).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&want), "seed {seed}, limit {limit:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!((g.score - w.score).abs() < 1e-5, "{} vs {}", g.score, w.score);
                assert_eq!(g.payload, w.payload);
            }
        }
    }
    // Row 400 took row 4's old vector (seed 5); row 4 moved away.
    let top = cached.search(a, "Thing_text", &pseudo_random_vector(5), Some(1), None).await.unwrap();
    assert_eq!(top[0].payload["i"], 400);
    assert!(top[0].score.abs() < 1e-5);

    cached.delete_dataset(b).await.unwrap();
    assert!(cached.search(b, "Thing_text", &pseudo_random_vector(1), None, None).await.unwrap().is_empty());
    assert!(!cached.has_collection(b, "Thing_text").await.unwrap());
    assert!(cached.has_collection(a, "Thing_text").await.unwrap());

    // 1 KiB cannot hold 315 rows: searched in LanceDB, same answers.
    let small = LanceVectorStore::connect(&uri).await.unwrap().with_index_threshold(None).with_cache_budget(1024);
    let q = pseudo_random_vector(42);
    let got = small.search(a, "Thing_text", &q, Some(5), None).await.unwrap();
    assert!(!small.is_cached("Thing_text").await);
    let want = cached.search(a, "Thing_text", &q, Some(5), None).await.unwrap();
    assert_eq!(got.iter().map(|h| h.id).collect::<Vec<_>>(), want.iter().map(|h| h.id).collect::<Vec<_>>());
}

/// A collection of `background_load_rows` rows or more is searched in
/// LanceDB while its cache loads off the search path: every answer equals
/// LanceDB's, a write racing the load is in the cache once it is live, and a
/// load overtaken by a refresh never goes live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_collection_loads_its_cache_in_the_background() {
    use recall_core::ports::{EmbeddingSpec, ScoredResult, VectorRecord, VectorStore};
    use recall_core::DatasetId;
    let dir = tempfile::tempdir().expect("tempdir");
    let uri = dir.path().to_str().unwrap().to_string();
    let store =
        LanceVectorStore::connect(&uri).await.unwrap().with_index_threshold(None).with_background_load_rows(Some(100));
    let reference = LanceVectorStore::connect(&uri).await.unwrap().with_index_threshold(None).with_cache_budget(0);
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
    let ds = DatasetId(uuid::Uuid::new_v4());
    let record = |i: u64, seed: u64| VectorRecord {
        id: uuid::Uuid::from_u128(u128::from(i) + 1),
        vector: pseudo_random_vector(seed),
        payload: serde_json::json!({"i": i}).as_object().cloned().unwrap(),
        belongs_to_set: vec![],
    };
    store.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
    store.upsert(ds, "Thing_text", (0..300).map(|i| record(i, i + 1)).collect()).await.unwrap();
    let ids = |hits: Vec<ScoredResult>| hits.into_iter().map(|h| h.id).collect::<Vec<_>>();
    let agree = |q: u64| {
        let (store, reference) = (&store, &reference);
        async move {
            let q = pseudo_random_vector(q);
            let got = ids(store.search(ds, "Thing_text", &q, Some(10), None).await.unwrap());
            reference.refresh().await.unwrap();
            assert_eq!(got, ids(reference.search(ds, "Thing_text", &q, Some(10), None).await.unwrap()));
        }
    };

    // The first search answers and starts the load; a write races it.
    agree(5).await;
    store.upsert(ds, "Thing_text", vec![record(1_000, 9_999)]).await.unwrap();
    store.settle().await;
    assert!(store.is_cached("Thing_text").await, "live once the load has finished");
    let top = store.search(ds, "Thing_text", &pseudo_random_vector(9_999), Some(1), None).await.unwrap();
    assert_eq!(top[0].payload["i"], 1_000, "the write that raced the load is in the cache");
    agree(77).await;

    // A refresh overtakes a load: that load is not kept, the next search starts another.
    store.refresh().await.unwrap();
    agree(6).await;
    store.refresh().await.unwrap();
    store.settle().await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!store.is_cached("Thing_text").await, "a load begun before a refresh never goes live");
    agree(7).await;
    store.settle().await;
    assert!(store.is_cached("Thing_text").await);
    agree(8).await;
}

/// Two stores on one directory stand for two processes: one's writes reach
/// the other's cached collection and its table handles after `refresh`, with
/// the search cache on and off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_shows_another_writers_rows() {
    use recall_core::ports::{EmbeddingSpec, VectorRecord, VectorStore};
    use recall_core::DatasetId;
    for budget in [1 << 20, 0] {
        let dir = tempfile::tempdir().expect("tempdir");
        let uri = dir.path().to_str().unwrap();
        let reader = LanceVectorStore::connect(uri).await.unwrap().with_cache_budget(budget);
        let writer = LanceVectorStore::connect(uri).await.unwrap();
        let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
        let ds = DatasetId(uuid::Uuid::new_v4());
        let record = |i: u64| VectorRecord {
            id: uuid::Uuid::from_u128(u128::from(i)),
            vector: pseudo_random_vector(i),
            payload: serde_json::Map::new(),
            belongs_to_set: vec![],
        };
        writer.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
        writer.upsert(ds, "Thing_text", vec![record(1)]).await.unwrap();
        let ids = |hits: Vec<recall_core::ports::ScoredResult>| hits.into_iter().map(|h| h.id).collect::<Vec<_>>();
        let q = pseudo_random_vector(2);
        assert_eq!(ids(reader.search(ds, "Thing_text", &q, None, None).await.unwrap()).len(), 1);
        assert_eq!(reader.is_cached("Thing_text").await, budget > 0);

        writer.upsert(ds, "Thing_text", vec![record(2)]).await.unwrap();
        writer.delete(ds, "Thing_text", &[uuid::Uuid::from_u128(1)]).await.unwrap();
        reader.refresh().await.unwrap();
        let after = ids(reader.search(ds, "Thing_text", &q, None, None).await.unwrap());
        assert_eq!(after, vec![uuid::Uuid::from_u128(2)], "budget {budget}: the new row, not the deleted one");
        assert_eq!(reader.count(ds, "Thing_text").await.unwrap(), 1);
    }
}

/// The same suite on an S3-compatible server (`RECALL_TEST_S3_ENDPOINT`;
/// .ci/run starts moto, which enforces the conditional puts Lance's commits
/// rely on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_on_s3_conforms() {
    let Some(bucket) = recall_conformance::s3::throwaway_bucket("conformance").await else {
        return;
    };
    let store = LanceVectorStore::connect_with_options(&bucket.uri("vectors"), bucket.options())
        .await
        .expect("lancedb opens on s3")
        .with_index_threshold(None);
    vector_store_conformance(Arc::new(store), "LanceS3").await;
}

/// Two stores on one bucket prefix stand for two processes writing one
/// collection at once: every row of both arrives (their commits race through
/// the object store's conditional puts), and each store sees the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_on_one_s3_prefix_lose_nothing() {
    use recall_core::ports::{EmbeddingSpec, VectorRecord, VectorStore};
    use recall_core::DatasetId;
    let Some(bucket) = recall_conformance::s3::throwaway_bucket("writers").await else {
        return;
    };
    let uri = bucket.uri("vectors");
    let a = Arc::new(LanceVectorStore::connect_with_options(&uri, bucket.options()).await.unwrap());
    let b = Arc::new(LanceVectorStore::connect_with_options(&uri, bucket.options()).await.unwrap());
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
    let ds = DatasetId(uuid::Uuid::new_v4());
    a.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
    b.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
    let record = |i: u64| VectorRecord {
        id: uuid::Uuid::from_u128(u128::from(i)),
        vector: pseudo_random_vector(i),
        payload: serde_json::json!({"i": i}).as_object().cloned().unwrap(),
        belongs_to_set: vec![],
    };
    let write = |store: Arc<LanceVectorStore>, first: u64| async move {
        for batch in 0..6u64 {
            let rows = (0..5).map(|k| record(first + batch * 5 + k)).collect();
            store.upsert(ds, "Thing_text", rows).await.unwrap();
        }
    };
    tokio::join!(write(a.clone(), 1_000), write(b.clone(), 2_000));
    for store in [&a, &b] {
        store.refresh().await.unwrap();
        assert_eq!(store.count(ds, "Thing_text").await.unwrap(), 60, "both writers' rows, once each");
        let hits = store.search(ds, "Thing_text", &pseudo_random_vector(2_007), Some(1), None).await.unwrap();
        assert_eq!(hits[0].payload["i"], 2_007, "the other writer's row is found");
    }
}

/// Stores that create the same new collection at the same moment and write
/// to it at once keep every row: a create that lands on top of another
/// process's (as an empty overwrite) puts that one's rows back, and writes
/// that lose a commit race are retried. On a directory, and on S3 when
/// `RECALL_TEST_S3_ENDPOINT` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_creators_keep_every_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    racing_creators(dir.path().to_str().unwrap(), Vec::new()).await;
    if let Some(bucket) = recall_conformance::s3::throwaway_bucket("race").await {
        racing_creators(&bucket.uri("vectors"), bucket.options()).await;
    }
}

async fn racing_creators(uri: &str, options: Vec<(String, String)>) {
    use recall_core::ports::{EmbeddingSpec, VectorStore};
    use recall_core::DatasetId;
    const STORES: u64 = 3;
    const ROUNDS: u64 = 12;
    let mut stores = Vec::new();
    for _ in 0..STORES {
        stores.push(Arc::new(LanceVectorStore::connect_with_options(uri, options.clone()).await.unwrap()));
    }
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
    let ds = DatasetId(uuid::Uuid::new_v4());
    for round in 0..ROUNDS {
        let collection = format!("Race{round}_text");
        let writers = stores.iter().enumerate().map(|(k, store)| {
            let (store, collection, spec) = (store.clone(), collection.clone(), spec.clone());
            async move {
                store.ensure_collection(ds, &collection, &spec).await.unwrap();
                for batch in 0..2u64 {
                    let rows = (0..4u64).map(|i| numbered(k as u64 * 100 + batch * 10 + i + 1)).collect();
                    store.upsert(ds, &collection, rows).await.unwrap();
                }
            }
        });
        futures::future::join_all(writers).await;
        for store in &stores {
            store.refresh().await.unwrap();
            assert_eq!(store.count(ds, &collection).await.unwrap(), STORES * 8, "{uri}: round {round}: every row once");
        }
    }
}

/// Stores writing small batches to one collection at once cross the
/// compaction and index thresholds together, so their maintenance commits
/// race (a compaction preempted by another's): every write still succeeds —
/// maintenance after a committed write is best effort — and every row is
/// there once, found by search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_maintenance_fails_no_write() {
    use recall_core::ports::{EmbeddingSpec, VectorStore};
    use recall_core::DatasetId;
    const STORES: u64 = 3;
    const WRITES: u64 = 30;
    let dir = tempfile::tempdir().expect("tempdir");
    let uri = dir.path().to_str().unwrap();
    let mut stores = Vec::new();
    for _ in 0..STORES {
        stores.push(Arc::new(LanceVectorStore::connect(uri).await.unwrap().with_index_threshold(Some(100))));
    }
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 8 };
    let ds = DatasetId(uuid::Uuid::new_v4());
    stores[0].ensure_collection(ds, "Thing_text", &spec).await.unwrap();
    let writers = stores.iter().enumerate().map(|(k, store)| {
        let (store, spec) = (store.clone(), spec.clone());
        async move {
            store.ensure_collection(ds, "Thing_text", &spec).await.unwrap();
            for write in 0..WRITES {
                let rows = (0..3u64).map(|i| numbered(k as u64 * 1_000 + write * 10 + i + 1)).collect();
                if let Err(e) = store.upsert(ds, "Thing_text", rows).await {
                    panic!("store {k}, write {write}: {e}");
                }
            }
        }
    });
    futures::future::join_all(writers).await;
    for store in &stores {
        store.refresh().await.unwrap();
        assert_eq!(store.count(ds, "Thing_text").await.unwrap(), STORES * WRITES * 3, "every row once");
        let probe = 2_000 + 17 * 10 + 2;
        let hits = store.search(ds, "Thing_text", &pseudo_random_vector(probe), Some(1), None).await.unwrap();
        assert_eq!(hits[0].payload["n"], probe, "another store's row is found");
    }
}

/// Records `range`, each with id `i + 1`, `vector(i)` and payload `{"i": i}`.
fn indexed_records(
    range: std::ops::Range<usize>,
    vector: impl Fn(usize) -> Vec<f32>,
) -> Vec<recall_core::ports::VectorRecord> {
    range
        .map(|i| recall_core::ports::VectorRecord {
            id: uuid::Uuid::from_u128(i as u128 + 1),
            vector: vector(i),
            payload: serde_json::json!({"i": i}).as_object().cloned().unwrap(),
            belongs_to_set: vec![],
        })
        .collect()
}

/// Row `n`: id `n`, a pseudo-random vector seeded by `n`, payload `{"n": n}`.
fn numbered(n: u64) -> recall_core::ports::VectorRecord {
    recall_core::ports::VectorRecord {
        id: uuid::Uuid::from_u128(u128::from(n)),
        vector: pseudo_random_vector(n),
        payload: serde_json::json!({"n": n}).as_object().cloned().unwrap(),
        belongs_to_set: vec![],
    }
}
