#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `recall serve` as a process: it starts on the embedded default, a key
//! minted with `recall api-key create` works, and SIGTERM stops it cleanly.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::recall;
use serde_json::{json, Value};

#[tokio::test]
async fn serve_starts_authenticates_with_a_minted_key_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "The lighthouse keeper winds the clock every evening at six.";
    assert!(recall(d, &["remember", "--dataset", "coast", "--text", text]).status.success());
    let created = recall(d, &["api-key", "create", "--name", "ci", "--json"]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let key: Value = serde_json::from_slice(&created.stdout).unwrap();
    let key = key["key"].as_str().unwrap().to_string();

    let (mut server, base) = common::serve(d).await;
    let client = reqwest::Client::new();

    let datasets = client.get(format!("{base}/api/v1/datasets")).send().await.unwrap();
    assert_eq!(datasets.status(), 401, "authentication is on by default");
    let listed: Value = client
        .get(format!("{base}/api/v1/datasets"))
        .header("X-Api-Key", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed[0]["name"], json!("coast"));
    let results: Value = client
        .post(format!("{base}/api/v1/recall"))
        .header("X-Api-Key", &key)
        .json(&json!({"query": "When is the clock wound?", "searchType": "CHUNKS", "topK": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(results[0]["text"].as_str().unwrap().contains("lighthouse"), "{results}");

    let kill = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let stopped = Instant::now();
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(stopped.elapsed() < Duration::from_secs(20), "SIGTERM did not stop the server");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "a clean stop exits 0: {status:?}");
}
