//! Runs the `recall` binary as a user would, with none of the developer's
//! own model or user settings leaking in.

pub mod mcp;

use std::path::Path;
use std::process::{Command, Output};

#[allow(dead_code)] // not every test binary runs the plain CLI
pub fn recall(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env_remove("LLM_API_KEY")
        .env_remove("EMBEDDING_API_KEY")
        .env_remove("EMBEDDING_ENDPOINT")
        .env_remove("RECALL_CHUNK_SIZE")
        .env_remove("RECALL_USER")
        .output()
        .unwrap()
}

/// `recall serve` on a free port over `data_dir`, with authentication in its
/// default posture, once its `/health` answers 200; the process and the base URL.
#[allow(dead_code)] // not every test binary starts a server
pub async fn serve(data_dir: &Path) -> (std::process::Child, String) {
    serve_with(data_dir, &[]).await
}

/// [`serve`] with extra environment (another store's settings, say).
#[allow(dead_code)]
pub async fn serve_with(data_dir: &Path, env: &[(String, String)]) -> (std::process::Child, String) {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(["serve", "--port", &port.to_string()])
        .env_remove("LLM_API_KEY")
        .env_remove("EMBEDDING_API_KEY")
        .env_remove("EMBEDDING_ENDPOINT")
        .env_remove("RECALL_USER")
        .env_remove("ENABLE_BACKEND_ACCESS_CONTROL")
        .env_remove("REQUIRE_AUTHENTICATION")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        if let Ok(r) = client.get(format!("{base}/health")).send().await {
            assert_eq!(r.status(), 200);
            return (server, base);
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the server did not start");
        assert!(server.try_wait().unwrap().is_none(), "the server exited early");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
