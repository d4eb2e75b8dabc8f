#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `recall remember` and `recall forget` killed with SIGKILL at many points,
//! on the embedded default (docs/reliability.md, "Crash-safe remember and
//! forget"): right after each kill no search returns text of a document
//! whose build did not finish (or whose forget began), and running the same
//! command again leaves the store equal to a clean run's — the same data
//! items, graph, and vector rows per collection, with no duplicate, no orphan
//! and nothing left in quarantine.
//!
//! `RECALL_CRASH_POINTS` sets the number of remember kill points (default 24;
//! a forget gets a third as many).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use recall::{build_engine, caller, OpenMode, Settings};
use recall_core::{DataStatus, RecallError, SearchType};
use recall_engine::{Engine, RecallRequest};

const DATASET: &str = "voyages";
const DOCUMENTS: usize = 12;
/// The document the forget runs delete.
const FORGOTTEN: usize = 4;

/// A word only document `k` contains (no document's marker is a prefix of another's).
fn marker(k: usize) -> String {
    format!("Zarvek{k}x")
}

/// Twelve short documents: names of their own (the marker among them) and
/// names they share (Lisbon, the Royal Library), so entities merge across
/// documents and a forget must keep what others still mention.
fn write_corpus(dir: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    (1..=DOCUMENTS)
        .map(|k| {
            let m = marker(k);
            let text = format!(
                "Captain {m} sailed from Lisbon to the island of Moravia{k}q in the spring. \
                 The crew of {m} traded pepper and cloth with the merchants of Lisbon. \
                 A storm near Moravia{k}q broke the mast of the ship Velora{k}w, and the crew \
                 rowed for two days. {m} wrote about the storm in a journal now kept at the \
                 Royal Library, beside the charts of Henrik{k}v."
            );
            let path = dir.join(format!("doc{k:02}.txt"));
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        })
        .collect()
}

/// The engine settings every process of the test uses: the hashing
/// embedder (fast), small chunks and batches (many batches to kill within).
fn settings(data_dir: &Path) -> Settings {
    let mut s = Settings::embedded(data_dir).unwrap();
    s.embedding_provider = "hashing".into();
    s.chunk_size = 24;
    s.chunks_per_batch = 3;
    s
}

fn command(data_dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_recall"));
    c.arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env("EMBEDDING_PROVIDER", "hashing")
        .env("RECALL_CHUNK_SIZE", "24")
        .env("RECALL_CHUNKS_PER_BATCH", "3")
        .env_remove("LLM_API_KEY")
        .env_remove("EMBEDDING_API_KEY")
        .env_remove("EMBEDDING_ENDPOINT")
        .env_remove("RECALL_USER")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

fn run(data_dir: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = command(data_dir, args).output().unwrap();
    assert!(out.status.success(), "recall {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    started.elapsed()
}

/// Starts the command and kills it (SIGKILL) after `after`; whether it was
/// still running then.
fn run_and_kill(data_dir: &Path, args: &[&str], after: Duration) -> bool {
    let mut child = command(data_dir, args).spawn().unwrap();
    std::thread::sleep(after);
    let running = child.try_wait().unwrap().is_none();
    child.kill().unwrap_or(()); // SIGKILL on Unix
    let status = child.wait().unwrap();
    assert!(running || status.success(), "recall {args:?} failed on its own: {status}");
    running
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// What a store holds for the dataset, in a comparable form.
#[derive(Debug)]
struct Snapshot {
    items: BTreeSet<(String, String)>,
    nodes: BTreeSet<(String, String, String)>,
    edges: BTreeSet<(String, String, String, String, String)>,
    vectors: BTreeSet<(String, String)>,
}

impl Snapshot {
    /// Equal to `clean`, or a panic listing what differs.
    fn assert_same(&self, clean: &Snapshot, context: &str) {
        fn diff<T: Ord + std::fmt::Debug>(what: &str, got: &BTreeSet<T>, want: &BTreeSet<T>) -> String {
            let extra: Vec<&T> = got.difference(want).collect();
            let missing: Vec<&T> = want.difference(got).collect();
            if extra.is_empty() && missing.is_empty() {
                String::new()
            } else {
                format!("{what}: extra {extra:#?}\nmissing {missing:#?}\n")
            }
        }
        let report = [
            diff("items", &self.items, &clean.items),
            diff("nodes", &self.nodes, &clean.nodes),
            diff("edges", &self.edges, &clean.edges),
            diff("vector rows", &self.vectors, &clean.vectors),
        ]
        .concat();
        assert!(report.is_empty(), "{context}: the store differs from a clean run's\n{report}");
    }
}

async fn open(data_dir: &Path) -> (Engine, recall_core::User) {
    let settings = settings(data_dir);
    let (engine, _) = build_engine(&settings, OpenMode::Create).await.unwrap();
    let me = caller(&engine, &settings, None, true).await.unwrap().unwrap();
    (engine, me)
}

/// The dataset's snapshot, after checking it has no duplicate vector row,
/// no edge without both ends, no vector row without its node or edge,
/// nothing in quarantine, and no pipeline run left started.
async fn snapshot(data_dir: &Path) -> Snapshot {
    let (engine, me) = open(data_dir).await;
    let Some(dataset) = engine.access().datasets(&me).await.unwrap().into_iter().find(|d| d.dataset.name == DATASET)
    else {
        return Snapshot {
            items: BTreeSet::new(),
            nodes: BTreeSet::new(),
            edges: BTreeSet::new(),
            vectors: BTreeSet::new(),
        };
    };
    let id = dataset.dataset.id;
    let data = &engine.relational().data;
    assert!(data.quarantined(id).await.unwrap().is_empty(), "nothing is left in quarantine");
    // Every pipeline run ended: a killed one reads errored, not started.
    let mut last: std::collections::HashMap<uuid::Uuid, &recall_core::PipelineRun> = Default::default();
    let runs = engine.relational().runs.list_runs(id).await.unwrap();
    for run in &runs {
        let entry = last.entry(run.pipeline_run_id).or_insert(run);
        if (run.created_at, run.id) >= (entry.created_at, entry.id) {
            *entry = run;
        }
    }
    for run in last.values() {
        assert_ne!(run.status, recall_core::PipelineRunStatus::Started, "a run left started: {run:?}");
        if run.status == recall_core::PipelineRunStatus::Errored {
            assert_eq!(run.error_class.as_deref(), Some("PipelineRunInterrupted"), "{run:?}");
        }
    }
    let items =
        data.list_data(id).await.unwrap().into_iter().map(|i| (i.name, i.status.as_str().to_string())).collect();
    let graph = engine.graph().get_graph(id).await.unwrap();
    let node_ids: BTreeSet<uuid::Uuid> = graph.nodes.iter().map(|n| n.id).collect();
    let mut element_ids = node_ids.clone();
    for e in &graph.edges {
        assert!(node_ids.contains(&e.source_node_id) && node_ids.contains(&e.target_node_id), "orphan edge {e:?}");
        element_ids.insert(recall_core::ids::edge_object_id(e.source_node_id, &e.relationship_name, e.target_node_id));
    }
    let nodes = graph
        .nodes
        .iter()
        .map(|n| {
            let words: Vec<String> = ["name", "text", "description"]
                .iter()
                .filter_map(|k| n.properties.get(*k))
                .map(|v| v.to_string())
                .collect();
            (n.id.to_string(), n.node_type.clone(), words.join(" | "))
        })
        .collect();
    let edges = graph
        .edges
        .iter()
        .map(|e| {
            let docs = e.properties.get("document_ids").map(|v| v.to_string()).unwrap_or_default();
            (
                e.source_node_id.to_string(),
                e.relationship_name.clone(),
                e.target_node_id.to_string(),
                e.edge_text.clone().unwrap_or_default(),
                docs,
            )
        })
        .collect();
    let mut vectors = BTreeSet::new();
    for collection in engine.vectors().collections().await.unwrap() {
        let rows: Vec<_> =
            engine.vectors().rows(&collection).await.unwrap().into_iter().filter(|(d, _)| *d == id).collect();
        for (_, row) in rows {
            // EdgeType rows are keyed by their text, not by an element.
            if !collection.starts_with("EdgeType") {
                assert!(element_ids.contains(&row.id), "orphan vector row {} in {collection}", row.id);
            }
            let text = row.payload.get("text").map(|v| v.to_string()).unwrap_or_default();
            let count = row.payload.get("number_of_edges").map(|v| v.to_string()).unwrap_or_default();
            assert!(
                vectors.insert((collection.clone(), format!("{} {text} {count}", row.id))),
                "duplicate row {} in {collection}",
                row.id
            );
        }
    }
    Snapshot { items, nodes, edges, vectors }
}

/// Everything the searches return for a document's marker.
async fn found(engine: &Engine, me: &recall_core::User, k: usize) -> String {
    let query = format!("{} Moravia{k}q Velora{k}w", marker(k));
    let mut all = String::new();
    for (t, only_context) in [
        (SearchType::Chunks, false),
        (SearchType::ChunksLexical, false),
        (SearchType::Summaries, false),
        (SearchType::GraphCompletion, true),
    ] {
        let request = RecallRequest::new(&query).query_type(t).top_k(40).datasets([DATASET]).only_context(only_context);
        match engine.recall(me, &request).await {
            Ok(results) => results.iter().for_each(|r| {
                all.push_str(r.text());
                all.push('\n');
            }),
            // Nothing searchable yet: a remember killed before its first batch finished.
            Err(RecallError::NoData(_)) | Err(RecallError::NotFound(_)) => {}
            Err(e) => panic!("{t} after a kill: {e}"),
        }
    }
    // A completion's context quotes the question: only the rest counts.
    all.to_lowercase().replace(&query.to_lowercase(), "")
}

/// Right after a kill: no search shows a document that is not completed;
/// the completed ones are still found (the check can fail both ways).
async fn check_visibility(data_dir: &Path) -> usize {
    let (engine, me) = open(data_dir).await;
    if !engine.access().datasets(&me).await.unwrap().iter().any(|d| d.dataset.name == DATASET) {
        // Killed before the dataset existed: nothing to search.
        return 0;
    }
    let statuses = snapshot_items(data_dir).await;
    let mut completed = 0;
    for k in 1..=DOCUMENTS {
        let name = format!("doc{k:02}.txt");
        // Pending (being built), forgetting, or gone (forgotten): hidden.
        let done = statuses.iter().any(|(n, s)| *n == name && *s == DataStatus::Completed);
        let text = found(&engine, &me, k).await;
        let seen = text.contains(&marker(k).to_lowercase());
        if done {
            completed += 1;
            assert!(seen, "{name} is completed but no search finds it");
        } else {
            assert!(!seen, "{name} is not completed ({statuses:?}) but a search returned it:\n{text}");
        }
    }
    completed
}

fn points() -> usize {
    std::env::var("RECALL_CRASH_POINTS").ok().and_then(|v| v.parse().ok()).unwrap_or(24)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remember_and_forget_killed_at_many_points_leave_nothing_half_visible() {
    let root = tempfile::tempdir().unwrap();
    let files = write_corpus(&root.path().join("corpus"));
    let mut remember: Vec<&str> = vec!["remember", "--dataset", DATASET];
    remember.extend(files.iter().map(String::as_str));

    // Every store starts as a copy of one holding the default user (ids
    // derive from it) and another dataset.
    let base = root.path().join("base");
    run(&base, &["remember", "--dataset", "other", "--text", "The harbour master of Lisbon keeps the tide tables."]);

    // The clean runs: a remember, and a copy of it with one document forgotten.
    let clean = root.path().join("clean");
    copy_dir(&base, &clean);
    let took = run(&clean, &remember);
    // Copies are taken from a store no process has open.
    let template = root.path().join("template");
    copy_dir(&clean, &template);
    let clean_remember = snapshot(&clean).await;
    assert_eq!(clean_remember.items.len(), DOCUMENTS);
    let forgotten_name = format!("doc{FORGOTTEN:02}.txt");
    let forget: Vec<&str> = vec!["forget", "--dataset", DATASET, "--document", &forgotten_name];
    let clean_forgotten = root.path().join("clean-forgotten");
    copy_dir(&template, &clean_forgotten);
    let forget_took = run(&clean_forgotten, &forget);
    let clean_forget = snapshot(&clean_forgotten).await;
    assert_eq!(clean_forget.items.len(), DOCUMENTS - 1);
    eprintln!("clean remember {took:?}, clean forget {forget_took:?}");

    // Remember, killed at points spread over its run, then run again.
    let n = points();
    let (mut interrupted, mut partly_built) = (0, 0);
    for i in 0..n {
        let dir = root.path().join(format!("remember-{i}"));
        copy_dir(&base, &dir);
        // Over the first 85% of a clean run: later runs are often faster.
        let after = took.mul_f64(0.85 * (i as f64 + 0.5) / n as f64);
        if run_and_kill(&dir, &remember, after) {
            interrupted += 1;
        }
        let completed = check_visibility(&dir).await;
        if completed > 0 && completed < DOCUMENTS {
            partly_built += 1;
        }
        run(&dir, &remember);
        snapshot(&dir).await.assert_same(&clean_remember, &format!("remember killed after {after:?}, then run again"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    eprintln!("remember: {n} kill points, {interrupted} interrupted a run, {partly_built} left it partly built");
    assert!(interrupted >= n / 2, "most kill points must land inside the run ({interrupted} of {n})");
    assert!(partly_built >= 2, "some kills must land between batches ({partly_built})");

    // Forget, killed likewise, then run again (or already finished).
    let m = (n / 3).max(4);
    let (mut interrupted, mut midway) = (0, 0);
    for i in 0..m {
        let dir = root.path().join(format!("forget-{i}"));
        copy_dir(&template, &dir);
        let after = forget_took.mul_f64(0.85 * (i as f64 + 0.5) / m as f64);
        if run_and_kill(&dir, &forget, after) {
            interrupted += 1;
        }
        check_visibility(&dir).await;
        // Run again unless the forget had finished.
        if let Some((_, status)) = snapshot_items(&dir).await.iter().find(|(name, _)| *name == forgotten_name) {
            if *status == DataStatus::Forgetting {
                midway += 1;
            }
            run(&dir, &forget);
        }
        snapshot(&dir).await.assert_same(&clean_forget, &format!("forget killed after {after:?}, then run again"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    eprintln!("forget: {m} kill points, {interrupted} interrupted a run, {midway} left it midway");
    assert!(interrupted >= m / 2, "most kill points must land inside the forget ({interrupted} of {m})");
    assert!(midway >= 1, "some kill must land inside the forget's writes ({midway})");
}

/// The dataset's items and their statuses.
async fn snapshot_items(data_dir: &Path) -> Vec<(String, DataStatus)> {
    let (engine, me) = open(data_dir).await;
    match engine.access().datasets(&me).await.unwrap().into_iter().find(|d| d.dataset.name == DATASET) {
        Some(d) => engine
            .relational()
            .data
            .list_data(d.dataset.id)
            .await
            .unwrap()
            .into_iter()
            .map(|i| (i.name, i.status))
            .collect(),
        None => Vec::new(),
    }
}
