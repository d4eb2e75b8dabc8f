#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Many processes on one store (docs/reliability.md): `recall serve`
//! answering HTTP recalls while CLI writers remember and CLI readers recall
//! on the same store, for a bounded time — the embedded default (one data
//! directory; a server, two writers, four readers), Postgres + LanceDB
//! (eight clients: the server's, three writers, four readers), and the
//! embedded relational store with LanceDB on S3 (a server, two writers, two
//! readers; `RECALL_TEST_S3_ENDPOINT`). No command
//! fails, no "database is locked" or commit conflict reaches a user, and
//! every write is there at the end. `RECALL_CONCURRENCY_SECONDS` sets the
//! length (default 20).

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn recall_cmd(data_dir: &std::path::Path, env: &[(String, String)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_recall"));
    c.arg("--data-dir").arg(data_dir).envs(env.iter().map(|(k, v)| (k, v)));
    c.env_remove("LLM_API_KEY")
        .env_remove("EMBEDDING_API_KEY")
        .env_remove("EMBEDDING_ENDPOINT")
        .env_remove("RECALL_USER");
    c.env_remove("ENABLE_BACKEND_ACCESS_CONTROL").env_remove("REQUIRE_AUTHENTICATION");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_two_writers_and_four_readers_share_one_store() {
    share_one_store(&[], 2, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_share_postgres_and_lancedb() {
    let Some((url, name)) = recall_conformance::postgres::throwaway_database("many").await else {
        return;
    };
    share_one_store(&[("RECALL_DB_URL".to_string(), url)], 3, 4).await;
    recall_conformance::postgres::drop_database(&name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_share_lancedb_on_s3() {
    let Some(bucket) = recall_conformance::s3::throwaway_bucket("many").await else {
        return;
    };
    // What a user sets: the URL and the standard AWS variables.
    let mut env = bucket.env();
    env.push(("RECALL_VECTOR_URL".to_string(), bucket.uri("lancedb")));
    share_one_store(&env, 2, 2).await;
}

/// The stores take turns: two such loads at once on two cores starve both.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A server, `writers` CLI writers and `readers` CLI readers on one store
/// (the data directory, plus `env`'s settings) for the bounded time.
async fn share_one_store(env: &[(String, String)], writers: usize, readers: usize) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let seconds: u64 = std::env::var("RECALL_CONCURRENCY_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let cli = |args: &[&str]| recall_cmd(&d, env).args(args).output().unwrap();
    let seed = cli(&["remember", "--dataset", "seed", "--text", "The lighthouse keeper winds the clock."]);
    assert!(seed.status.success(), "{}", String::from_utf8_lossy(&seed.stderr));
    let created = cli(&["api-key", "create", "--json"]);
    let key: Value = serde_json::from_slice(&created.stdout).unwrap();
    let key = key["key"].as_str().unwrap().to_string();

    let (mut server, base) = common::serve_with(&d, env).await;
    let client = reqwest::Client::new();

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut threads = Vec::new();
    let written: Vec<Arc<AtomicUsize>> = (0..writers).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    for (w, count) in written.iter().enumerate() {
        let (d, count, failures, env) = (d.clone(), count.clone(), failures.clone(), env.to_vec());
        threads.push(std::thread::spawn(move || {
            while Instant::now() < deadline {
                let n = count.load(Ordering::SeqCst) + 1;
                let text = format!("Writer {w} fact {n}: the harbour bell rings {n} times.");
                let o = recall_cmd(&d, &env)
                    .args(["remember", "--dataset", &format!("w{w}"), "--text", &text])
                    .output()
                    .unwrap();
                if o.status.success() {
                    count.store(n, Ordering::SeqCst);
                } else {
                    failures.lock().unwrap().push(format!("writer {w}: {}", String::from_utf8_lossy(&o.stderr)));
                }
            }
        }));
    }
    let reads = Arc::new(AtomicUsize::new(0));
    for r in 0..readers {
        let (d, reads, failures, env) = (d.clone(), reads.clone(), failures.clone(), env.to_vec());
        threads.push(std::thread::spawn(move || {
            while Instant::now() < deadline {
                let o = recall_cmd(&d, &env)
                    .args(["recall", "harbour bell", "--type", "CHUNKS", "--json"])
                    .output()
                    .unwrap();
                match serde_json::from_slice::<Value>(&o.stdout) {
                    Ok(Value::Array(_)) if o.status.success() => {
                        reads.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => failures.lock().unwrap().push(format!("reader {r}: {}", String::from_utf8_lossy(&o.stderr))),
                }
            }
        }));
    }
    let mut http_calls = 0;
    let mut slowest = Duration::ZERO;
    while Instant::now() < deadline {
        let sent = Instant::now();
        let response = client
            .post(format!("{base}/api/v1/recall"))
            .header("X-Api-Key", &key)
            .json(&json!({"query": "harbour bell", "searchType": "CHUNKS"}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        if status != 200 {
            let body = response.text().await.unwrap_or_default();
            failures.lock().unwrap().push(format!("HTTP {status}: {body}"));
        }
        http_calls += 1;
        slowest = slowest.max(sent.elapsed());
    }
    for t in threads {
        t.join().unwrap();
    }
    let writes: usize = written.iter().map(|c| c.load(Ordering::SeqCst)).sum();
    eprintln!(
        "{seconds} s: {writes} CLI remembers, {} CLI recalls, {http_calls} HTTP recalls (slowest {slowest:?})",
        reads.load(Ordering::SeqCst)
    );
    let failures = failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "{} failures, e.g. {:?}", failures.len(), &failures[..failures.len().min(3)]);
    assert!(reads.load(Ordering::SeqCst) >= readers && http_calls >= 10, "the readers ran");

    // Every write is there, in the CLI and through the server.
    for (w, count) in written.iter().enumerate() {
        let n = count.load(Ordering::SeqCst);
        assert!(n >= 1, "writer {w} wrote nothing");
        let o = cli(&[
            "recall",
            &format!("Writer {w} fact"),
            "-d",
            &format!("w{w}"),
            "--type",
            "CHUNKS",
            "--top-k",
            "1000",
            "--json",
        ]);
        let found: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(found.as_array().unwrap().len(), n, "writer {w}: every remembered fact is found");
        let over_http: Value = client
            .post(format!("{base}/api/v1/recall"))
            .header("X-Api-Key", &key)
            .json(&json!({"query": format!("Writer {w} fact"), "searchType": "CHUNKS", "datasets": [format!("w{w}")], "topK": 1000}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(over_http.as_array().unwrap().len(), n, "writer {w}: the long-lived server sees every write");
    }
    let _ = Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
    let status = server.wait().unwrap();
    let mut log = String::new();
    if let Some(mut err) = server.stderr.take() {
        use std::io::Read;
        let _ = err.read_to_string(&mut log);
    }
    assert!(status.success(), "{log}");
    assert!(!log.to_lowercase().contains("database is locked"), "{log}");
}
