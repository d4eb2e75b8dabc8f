//! Benchmarks on the embedded default (SQLite + SQL graph + LanceDB, offline
//! extractor and embedder): ingestion throughput in chunks/s, and recall
//! latency of CHUNKS, CHUNKS_LEXICAL and GRAPH_COMPLETION with only_context.
//! Not a test; run it in release:
//!
//!     cargo run --release --bin recall-bench -- [--chunks 2400] [--queries 200] [--data-dir DIR]
//!         [--vector-cache-mb MiB] [--lance-cache-mb MiB] [--db-url postgres://…]
//!
//! With `--data-dir`, the store is kept there: a later run with the same
//! directory skips the ingestion and measures the queries only.
//!
//! `--session-turns N` (default 0: off) also fills one session with N QA
//! turns and measures the session lane over it, the session work a
//! completion adds (reading the conversation, recording the turn), and
//! GRAPH_COMPLETION only_context with and without the session.
//!
//! `--vector-partition-rows N` sets the rows from which the search cache
//! probes partitions (0: every search scans every row); `--dump FILE`
//! appends every answer to FILE, one line per query, to compare two runs.
//!
//! `--increments N` (default 1) then measures a small change to the large
//! dataset N times: remembering one short document, the first
//! CHUNKS_LEXICAL query after it, forgetting it, and the first query after
//! that (the store ends as it began).
//!
//! `--embedder hashing|local` (default hashing): the figures measure storage
//! and retrieval, so the cheap embedder keeps a 100k-chunk ingestion short;
//! `local` measures the built-in model instead (its query embedding is part
//! of every first-time question's latency).
//!
//! It also times a streamed export of the whole graph (`recall graph`'s
//! JSON; `--export 0` skips it), and how long after each first query the
//! search cache of the large collections went live (they load in the
//! background).
//!
//! The corpus is generated deterministically (same text every run).

use std::time::{Duration, Instant};

use recall::{build_engine, OpenMode, Settings};
use recall_core::SearchType;
use recall_engine::{RecallRequest, RememberInput, RememberProgress};

/// The allocator of the `recall` binary, so the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PEOPLE: &[&str] = &[
    "Ada Lovelace",
    "Alan Turing",
    "Grace Hopper",
    "Edsger Dijkstra",
    "Barbara Liskov",
    "Donald Knuth",
    "Margaret Hamilton",
    "John Backus",
    "Frances Allen",
    "Ken Thompson",
    "Dennis Ritchie",
    "Niklaus Wirth",
];
const THINGS: &[&str] = &[
    "Analytical Engine",
    "Turing Machine",
    "COBOL",
    "Structured Programming",
    "Abstract Data Types",
    "TeX",
    "Apollo Guidance Computer",
    "Fortran",
    "Optimizing Compilers",
    "Unix",
    "Pascal",
    "Modula",
];
const PLACES: &[&str] = &["London", "Cambridge", "Boston", "Eindhoven", "Stanford", "Houston", "Zurich", "Bell Labs"];
const VERBS: &[&str] = &["designed", "studied", "improved", "described", "documented", "taught", "built", "reviewed"];
const FILLER: &[&str] = &[
    "the work changed how engineers think about correctness and proof",
    "colleagues later extended the idea with careful measurements",
    "the notes survive in several archives and are still read today",
    "students reproduced the results on modern hardware without trouble",
];

/// A tiny deterministic generator (xorshift): reproducible corpora without a dependency.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() % items.len()]
    }
}

fn sentence(g: &mut Gen) -> String {
    format!(
        "{} {} the {} in {}, and {}.",
        g.pick(PEOPLE),
        g.pick(VERBS),
        g.pick(THINGS),
        g.pick(PLACES),
        g.pick(FILLER)
    )
}

/// `docs` documents of `chunks_per_doc` paragraphs of about `words` words each.
fn corpus(docs: usize, chunks_per_doc: usize, words: usize) -> Vec<RememberInput> {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    (0..docs)
        .map(|d| {
            let paragraphs: Vec<String> = (0..chunks_per_doc)
                .map(|_| {
                    let mut p = String::new();
                    while p.split_whitespace().count() + 20 < words {
                        p.push_str(&sentence(&mut g));
                        p.push(' ');
                    }
                    p.trim().to_string()
                })
                .collect();
            RememberInput::Text { text: paragraphs.join("\n\n"), name: Some(format!("doc-{d:04}.txt")) }
        })
        .collect()
}

/// The flags (`recall-bench --help`); see the module's documentation.
#[derive(clap::Parser)]
#[command(about = "Ingestion throughput and recall latency on the embedded default (run it in release)")]
struct Args {
    /// Chunks to ingest (documents of ten chunks each).
    #[arg(long, default_value_t = 2400)]
    chunks: usize,
    /// Queries per search type.
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Keeps the store in this directory; a later run on it skips the ingestion.
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// Chunks per cognify batch (default: the configuration's, 500).
    #[arg(long)]
    chunks_per_batch: Option<usize>,
    /// `hashing` (word hashing) or `local` (the built-in model).
    #[arg(long, default_value = "hashing")]
    embedder: String,
    /// MiB of the in-process vector search cache (0: LanceDB's own search).
    #[arg(long)]
    vector_cache_mb: Option<usize>,
    /// Rows of one dataset from which the search cache probes partitions (0: never).
    #[arg(long)]
    vector_partition_rows: Option<usize>,
    /// MiB of Lance's own caches (index parts, manifests).
    #[arg(long)]
    lance_cache_mb: Option<usize>,
    /// A Postgres URL for the relational store and the graph (the vectors stay in LanceDB).
    #[arg(long)]
    db_url: Option<String>,
    /// Appends every answer to this file, one line per query.
    #[arg(long)]
    dump: Option<std::path::PathBuf>,
    /// Times the streamed graph export (0 skips it).
    #[arg(long, default_value_t = 1)]
    export: usize,
    /// Times remembering and forgetting one short document this many times.
    #[arg(long, default_value_t = 1)]
    increments: usize,
    /// Fills one session with this many QA turns and times the session lane (0: off).
    #[arg(long, default_value_t = 0)]
    session_turns: usize,
}

/// A field of `/proc/self/status` in KiB (`RssAnon`, `VmHWM`); `None` off Linux.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()
}

/// The peak of the process's anonymous memory (`RssAnon`: heap and stacks,
/// not the database files SQLite and LanceDB map, which the kernel reclaims
/// like any cached file), sampled every 50 ms on a thread of its own.
struct AnonPeak(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl AnonPeak {
    fn start() -> Self {
        use std::sync::atomic::Ordering;
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let sampled = peak.clone();
        std::thread::spawn(move || loop {
            if let Some(kib) = status_kib("RssAnon") {
                sampled.fetch_max(kib, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(50));
        });
        AnonPeak(peak)
    }

    /// The peak since the last take, in MiB; starts the next period.
    fn take_mib(&self) -> u64 {
        let now = status_kib("RssAnon").unwrap_or(0);
        self.0.swap(now, std::sync::atomic::Ordering::Relaxed).max(now) >> 10
    }
}

/// Prints the ingestion's progress every `every` documents: how many are
/// done, the rate of that window and of the stage so far, and the anonymous
/// memory, so a long run shows whether it slows with the dataset's size.
struct WindowProgress {
    every: usize,
    chunks_per_doc: usize,
    started: Instant,
    /// Documents done in this stage, when the stage and the window began.
    state: std::sync::Mutex<(usize, Instant, Instant)>,
}

impl RememberProgress for WindowProgress {
    fn stage(&self, name: &str, total: usize) {
        println!("    {name}: {total} documents, {:.0} s into the run", self.started.elapsed().as_secs_f64());
        if let Ok(mut state) = self.state.lock() {
            *state = (0, Instant::now(), Instant::now());
        }
    }

    fn item_done(&self, _name: &str) {
        let Ok(mut state) = self.state.lock() else { return };
        state.0 += 1;
        if state.0 % self.every == 0 {
            let chunks = |docs: usize, secs: f64| (docs * self.chunks_per_doc) as f64 / secs;
            println!(
                "    {} documents at {:.0} s: {:.0} chunks/s over the last {}, {:.0} over the stage; RssAnon {} MiB",
                state.0,
                self.started.elapsed().as_secs_f64(),
                chunks(self.every, state.2.elapsed().as_secs_f64()),
                self.every,
                chunks(state.0, state.1.elapsed().as_secs_f64()),
                status_kib("RssAnon").unwrap_or(0) >> 10
            );
            state.2 = Instant::now();
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> recall_core::Result<()> {
    // RUST_LOG=recall_retrievers=debug shows where a graph search spends its
    // time; RUST_LOG=recall_engine=debug times a remember's and a forget's
    // steps (each span's busy and idle time when it closes).
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .init();
    let args = <Args as clap::Parser>::parse();
    let target_chunks = args.chunks;
    let queries = args.queries;
    let chunks_per_doc = 10;
    let words = 60;
    let docs = target_chunks.div_ceil(chunks_per_doc);
    let kept = args.data_dir.clone();
    let dir =
        kept.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("recall-bench-{}", uuid::Uuid::new_v4())));
    let reuse = kept.is_some() && dir.exists();
    let mut settings = Settings::embedded(&dir)?;
    settings.chunk_size = words;
    settings.embedding_provider = args.embedder.clone();
    if let Some(chunks) = args.chunks_per_batch {
        settings.chunks_per_batch = chunks;
    }
    // 0 measures LanceDB's own search (no in-process search cache).
    if let Some(mb) = args.vector_cache_mb {
        settings.vector_cache_mb = Some(mb);
    }
    if let Some(rows) = args.vector_partition_rows {
        settings.vector_partition_rows = rows;
    }
    if let Some(mb) = args.lance_cache_mb {
        settings.lance_cache_mb = mb;
    }
    // A Postgres URL puts the relational store and the graph there (the
    // vectors stay in LanceDB under the data directory).
    if let Some(url) = &args.db_url {
        settings.db_url = url.clone().into();
    }
    println!("search cache budget: {} MiB", settings.vector_cache_bytes() >> 20);
    let anon = AnonPeak::start();
    let (engine, active) = build_engine(&settings, OpenMode::Create).await?;
    println!("adapters: {} | {} | {} | {}", active.relational, active.graph, active.vector, active.embedder);
    let user = recall::caller(&engine, &settings, None, true)
        .await?
        .ok_or_else(|| recall_core::RecallError::backend_msg("the bench user vanished"))?;

    let chunks = if reuse {
        let ds = engine.access().dataset(&user, "bench").await?;
        let chunks = engine.vectors().count(ds.id, recall_core::model::collections::DOCUMENT_CHUNK_TEXT).await?;
        println!("reusing {} ({chunks} chunks)", dir.display());
        chunks as usize
    } else {
        let inputs = corpus(docs, chunks_per_doc, words);
        let started = Instant::now();
        let progress = WindowProgress {
            every: (docs / 50).max(100),
            chunks_per_doc,
            started,
            state: std::sync::Mutex::new((0, started, started)),
        };
        let outcome = engine.remember_with_progress(&user, "bench", &inputs, &progress).await?;
        let elapsed = started.elapsed();
        println!(
            "ingest: {} documents, {} chunks in {:.2}s = {:.0} chunks/s",
            outcome.items_added,
            outcome.chunks_written,
            elapsed.as_secs_f64(),
            outcome.chunks_written as f64 / elapsed.as_secs_f64()
        );
        println!(
            "    peak anonymous memory {} MiB (RssAnon; VmHWM {} MiB counts the mapped store files too)",
            anon.take_mib(),
            status_kib("VmHWM").unwrap_or(0) >> 10
        );
        outcome.chunks_written
    };
    let ds = engine.access().dataset(&user, "bench").await?;
    let (nodes, edges) = engine.graph().count(ds.id).await?;
    println!("graph: {nodes} nodes, {edges} edges");

    // The first lexical query builds the BM25 index; time it on its own.
    let t = Instant::now();
    engine.recall(&user, &RecallRequest::new("Ada Lovelace").query_type(SearchType::ChunksLexical).top_k(10)).await?;
    println!("CHUNKS_LEXICAL first query (builds the BM25 index): {:.1} ms", t.elapsed().as_secs_f64() * 1e3);

    for (label, search_type, only_context) in [
        ("CHUNKS", SearchType::Chunks, false),
        ("CHUNKS_LEXICAL", SearchType::ChunksLexical, false),
        ("GRAPH_COMPLETION only_context", SearchType::GraphCompletion, true),
    ] {
        // The first query of a type loads the collections it searches into the search cache.
        let t = Instant::now();
        let warm = RecallRequest::new("What did Ada Lovelace do?").query_type(search_type).only_context(only_context);
        engine.recall(&user, &warm).await?;
        println!("{label} first query: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
        // Large collections and the graph's sketch load in the background
        // (the sketch from the second search at a data version): measure
        // once they are live.
        engine.recall(&user, &warm).await?;
        let t = Instant::now();
        engine.settle_caches().await;
        println!("    search and sketch caches live {:.1} ms after a second query", t.elapsed().as_secs_f64() * 1e3);
        let mut g = Gen(42);
        let mut latencies = Vec::with_capacity(queries);
        // Per-stage wall times, from what `recall_explained` reports.
        let mut stages: Vec<(String, Vec<f64>)> = Vec::new();
        let mut answers: Vec<String> = Vec::new();
        for _ in 0..queries {
            let q = format!("What did {} do with the {}?", g.pick(PEOPLE), g.pick(THINGS));
            let request = RecallRequest::new(q).query_type(search_type).top_k(10).only_context(only_context);
            let t = Instant::now();
            let (results, explain) = engine.recall_explained(&user, &request).await?;
            latencies.push(t.elapsed());
            for timing in explain.timings_ms {
                match stages.iter_mut().find(|(name, _)| *name == timing.stage) {
                    Some((_, times)) => times.push(timing.ms),
                    None => stages.push((timing.stage, vec![timing.ms])),
                }
            }
            if results.is_empty() {
                return Err(recall_core::RecallError::backend_msg(format!("a {label} recall returned nothing")));
            }
            answers.push(serde_json::to_string(&results).unwrap_or_default());
        }
        // `--dump FILE`: every answer, one line per query, so two runs
        // (say with and without partitions) can be compared.
        if let Some(path) = &args.dump {
            use std::io::Write;
            let failed =
                |e: std::io::Error| recall_core::RecallError::backend_msg(format!("--dump {}: {e}", path.display()));
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(failed)?;
            for answer in &answers {
                writeln!(file, "{label}\t{answer}").map_err(failed)?;
            }
        }
        latencies.sort();
        println!(
            "recall {label} top_k=10 over {} chunks: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms ({} queries)",
            chunks,
            percentile(&latencies, 0.5).as_secs_f64() * 1e3,
            percentile(&latencies, 0.95).as_secs_f64() * 1e3,
            latencies.last().map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0),
            queries
        );
        let parts: Vec<String> = stages
            .iter_mut()
            .map(|(name, times)| {
                times.sort_by(f64::total_cmp);
                format!("{name} {:.2}", times[times.len() / 2])
            })
            .collect();
        println!("    stage p50 (ms): {}", parts.join(", "));
    }
    // The export streams: one page of nodes or edges in memory at a time
    // (`--export 0` skips it: at a million chunks it takes minutes).
    if args.export > 0 {
        export_bench(&engine, &user).await?;
    }
    for k in 0..args.increments {
        increment_bench(&engine, &user, chunks, k).await?;
    }
    let turns = args.session_turns;
    if turns > 0 {
        session_bench(&engine, &user, turns, queries).await?;
    }
    println!("peak anonymous memory since the ingestion: {} MiB", anon.take_mib());
    if kept.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

/// Times a streamed JSON export of the whole graph (`recall graph`'s).
async fn export_bench(engine: &recall_engine::Engine, user: &recall_core::User) -> recall_core::Result<()> {
    let t = Instant::now();
    let (_, pages) = engine.dataset_graph_pages(user, "bench", recall_engine::EXPORT_PAGE).await?;
    let mut export = recall_api::GraphExport::new(pages, recall_api::GraphShape::Json);
    let mut bytes = 0usize;
    while let Some(piece) = export.next_piece().await? {
        bytes += piece.len();
    }
    println!("graph export (JSON, streamed): {:.2} s, {:.1} MB", t.elapsed().as_secs_f64(), bytes as f64 / 1e6);
    Ok(())
}

/// The cost of a small change to a large dataset: remember one short
/// document, the first CHUNKS_LEXICAL query after it (the BM25 index follows
/// the change), forget the document, and the first query after that. The
/// store is left as it was.
async fn increment_bench(
    engine: &recall_engine::Engine,
    user: &recall_core::User,
    chunks: usize,
    k: usize,
) -> recall_core::Result<()> {
    let name = format!("increment-{k}.txt");
    let text = format!("Increment {k}: Ada Lovelace annotated the analytical engine in {}.", 1843 + k);
    let lexical = || RecallRequest::new("Lovelace analytical engine").query_type(SearchType::ChunksLexical).top_k(10);
    let t = Instant::now();
    engine.remember(user, "bench", &[RememberInput::Text { text, name: Some(name.clone()) }]).await?;
    let remembered = t.elapsed();
    let t = Instant::now();
    engine.recall(user, &lexical()).await?;
    let first_after_remember = t.elapsed();
    let t = Instant::now();
    engine.forget_document(user, "bench", &name).await?;
    let forgotten = t.elapsed();
    let t = Instant::now();
    engine.recall(user, &lexical()).await?;
    let first_after_forget = t.elapsed();
    println!(
        "one document into {chunks} chunks: remember {:.2} s, next CHUNKS_LEXICAL {:.1} ms; \
         forget {:.2} s, next CHUNKS_LEXICAL {:.1} ms",
        remembered.as_secs_f64(),
        ms(first_after_remember),
        forgotten.as_secs_f64(),
        ms(first_after_forget)
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// p50 and p95 of `times`, in ms.
fn summary(times: &mut [Duration]) -> String {
    times.sort();
    format!("p50 {:.2} ms, p95 {:.2} ms", ms(percentile(times, 0.5)), ms(percentile(times, 0.95)))
}

/// The session figures (docs/sessions.md): one session of `turns` QA turns.
async fn session_bench(
    engine: &recall_engine::Engine,
    user: &recall_core::User,
    turns: usize,
    queries: usize,
) -> recall_core::Result<()> {
    use recall_core::session::{CompletedTurn, SessionEntry};
    let sessions = engine.session_memory()?;
    let session = format!("bench-{turns}");
    let have = sessions.qa_entries(user, &session, None).await?.len();
    let mut g = Gen(7);
    let started = Instant::now();
    for _ in have..turns {
        let entry = SessionEntry::Qa {
            question: format!("What did {} do with the {}?", g.pick(PEOPLE), g.pick(THINGS)),
            answer: sentence(&mut g),
            context: String::new(),
            qa_id: None,
            feedback_text: None,
            feedback_score: None,
            used_graph_element_ids: None,
            node_set: None,
        };
        sessions.remember_entry(user, &session, None, entry).await?;
    }
    if have < turns {
        let n = turns - have;
        let secs = started.elapsed().as_secs_f64();
        println!("session: {n} turns written in {secs:.2}s = {:.0} turns/s", n as f64 / secs);
    }

    // The first conversation read of a process also reads the session's
    // turn vectors (later reads add only what was written since).
    let t = Instant::now();
    let first = sessions.conversation(user, &session, "What did Ada Lovelace do with the engine?", true).await?;
    println!(
        "session: first conversation read {:.2} ms ({} turns carried)",
        ms(t.elapsed()),
        first.history.matches("\nQUESTION: ").count()
    );
    let (mut lane, mut conversation, mut record) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..queries {
        let q = format!("What did {} do with the {}?", g.pick(PEOPLE), g.pick(THINGS));
        let request = RecallRequest::new(q.clone()).session_id(&session).scope(["session"]).top_k(10);
        let t = Instant::now();
        let hits = engine.recall(user, &request).await?;
        lane.push(t.elapsed());
        if hits.is_empty() {
            return Err(recall_core::RecallError::backend_msg("the session lane found nothing"));
        }
        let t = Instant::now();
        sessions.conversation(user, &session, &q, true).await?;
        conversation.push(t.elapsed());
    }
    // Recording turns grows the session: into a session of its own.
    let scratch = format!("{session}-writes");
    for _ in 0..queries {
        let turn = CompletedTurn {
            question: "What did Ada Lovelace do?".into(),
            answer: sentence(&mut g),
            used_graph_element_ids: None,
            used_session_context_ids: Vec::new(),
        };
        let t = Instant::now();
        sessions.record_turn(user, &scratch, None, turn).await?;
        record.push(t.elapsed());
    }
    println!("session lane over {turns} turns, top_k=10: {} ({queries} queries)", summary(&mut lane));
    println!(
        "session work of a completion: conversation read {}, turn record {}",
        summary(&mut conversation),
        summary(&mut record)
    );

    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..queries {
        let q = format!("What did {} do with the {}?", g.pick(PEOPLE), g.pick(THINGS));
        let plain = RecallRequest::new(q.clone()).query_type(SearchType::GraphCompletion).top_k(10).only_context(true);
        let t = Instant::now();
        engine.recall(user, &plain).await?;
        without.push(t.elapsed());
        let t = Instant::now();
        engine.recall(user, &plain.session_id(&session)).await?;
        with.push(t.elapsed());
    }
    println!(
        "GRAPH_COMPLETION only_context: without a session {}; with the {turns}-turn session {}",
        summary(&mut without),
        summary(&mut with)
    );
    Ok(())
}
