//! The HTTP server under load, over loopback with keep-alive: start-up time
//! to a healthy `/health`, idle memory, then requests per second and latency
//! of `POST /api/v1/recall` (CHUNKS, and GRAPH_COMPLETION with only_context)
//! at several client counts. Not a test; run it in release on a store that
//! `recall-bench --data-dir DIR` built (dataset `bench`):
//!
//!     cargo run --release --bin recall-bench -- --chunks 10000 --queries 20 --data-dir /var/tmp/bench-10k
//!     cargo run --release --bin recall-http-bench -- --data-dir /var/tmp/bench-10k [--seconds 10]
//!
//! It starts the `recall` binary next to itself (`recall serve`, with
//! authentication off) as a separate process and loads it from this one.
//! `--embedder` (default hashing) must name the embedder the store was built
//! with (recall-bench's `--embedder`).
//!
//! `--soak SECONDS [--clients 16]` runs the soak instead (docs/reliability.md,
//! "Soak over HTTP"): recalls of three types and remembers, mixed, from many
//! clients for a long time; statuses, latencies and the server's memory.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

/// The flags (`recall-http-bench --help`); see the module's documentation.
#[derive(clap::Parser)]
#[command(about = "The HTTP server under load, on a store recall-bench built (run it in release)")]
struct Args {
    /// A store built by `recall-bench --data-dir DIR` (dataset `bench`).
    #[arg(long)]
    data_dir: String,
    /// Seconds of load per search type and client count.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The embedder the store was built with (recall-bench's `--embedder`).
    #[arg(long, default_value = "hashing")]
    embedder: String,
    /// Runs the soak for this many seconds instead.
    #[arg(long)]
    soak: Option<u64>,
    /// Clients of the soak.
    #[arg(long, default_value_t = 16)]
    clients: usize,
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Resident memory of a process, from /proc (Linux).
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

/// `clients` tasks posting `body` for `seconds`; (requests/s, sorted latencies, failures).
async fn load(
    client: &reqwest::Client,
    url: &str,
    body: serde_json::Value,
    clients: usize,
    seconds: u64,
) -> (f64, Vec<Duration>, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, url, body, stop) = (client.clone(), url.to_string(), body.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut latencies, mut failures) = (Vec::new(), 0usize);
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    match client.post(&url).json(&body).send().await {
                        Ok(r) if r.status().is_success() => {
                            let _ = r.bytes().await;
                            latencies.push(t.elapsed());
                        }
                        _ => failures += 1,
                    }
                }
                (latencies, failures)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut all, mut failures) = (Vec::new(), 0);
    for t in tasks {
        if let Ok((l, f)) = t.await {
            all.extend(l);
            failures += f;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort();
    (all.len() as f64 / elapsed, all, failures)
}

/// What a soak request does.
#[derive(Clone, Copy)]
enum Op {
    Chunks,
    GraphContext,
    HybridContext,
    Remember,
}

impl Op {
    const ALL: [Op; 4] = [Op::Chunks, Op::GraphContext, Op::HybridContext, Op::Remember];

    fn label(self) -> &'static str {
        match self {
            Op::Chunks => "CHUNKS",
            Op::GraphContext => "GRAPH_COMPLETION only_context",
            Op::HybridContext => "HYBRID_COMPLETION only_context",
            Op::Remember => "remember",
        }
    }

    /// The `n`-th request of a client: one remember in `REMEMBER_EVERY`,
    /// the recall types in turn otherwise.
    fn nth(n: usize) -> Op {
        if n % REMEMBER_EVERY == REMEMBER_EVERY - 1 {
            Op::Remember
        } else {
            Op::ALL[n % 3]
        }
    }
}

/// One request in this many is a remember.
const REMEMBER_EVERY: usize = 25;

const PEOPLE: &[&str] = &["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov"];
const THINGS: &[&str] = &["Analytical Engine", "Turing Machine", "COBOL", "Structured Programming", "TeX", "Unix"];

/// One soak request's outcome: what, how long, which status (0: no answer).
type Sample = (usize, Duration, u16);

async fn soak_request(client: &reqwest::Client, base: &str, op: Op, client_no: usize, n: usize) -> u16 {
    let (person, thing) = (PEOPLE[(client_no + n) % PEOPLE.len()], THINGS[n % THINGS.len()]);
    let query = format!("What did {person} do with the {thing}?");
    let request = match op {
        Op::Remember => {
            // Words only: the form body needs no escaping beyond spaces.
            let text = format!("soak note {client_no} {n}: {person} reviewed the {thing} in the soak run");
            client
                .post(format!("{base}/api/v1/remember"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(format!("datasetName=bench&raw_data={}", text.replace(' ', "+").replace(':', "%3A")))
        }
        recall => {
            let (search_type, only_context) = match recall {
                Op::Chunks => ("CHUNKS", false),
                Op::GraphContext => ("GRAPH_COMPLETION", true),
                _ => ("HYBRID_COMPLETION", true),
            };
            client.post(format!("{base}/api/v1/recall")).json(&json!({
                "query": query, "searchType": search_type, "datasets": ["bench"], "topK": 10, "onlyContext": only_context
            }))
        }
    };
    match request.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            let _ = r.bytes().await;
            status
        }
        Err(_) => 0,
    }
}

/// `--soak SECONDS`: `clients` clients mixing recalls (CHUNKS,
/// GRAPH_COMPLETION and HYBRID_COMPLETION with only_context) and remembers
/// into the dataset, for `seconds`; per type the count, p50, p99 and
/// statuses, and the server's RSS sampled every 10 s.
async fn soak(client: &reqwest::Client, base: &str, pid: u32, clients: usize, seconds: u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|client_no| {
            let (client, base, stop) = (client.clone(), base.to_string(), stop.clone());
            tokio::spawn(async move {
                let mut samples: Vec<Sample> = Vec::new();
                let mut n = client_no; // clients start at different points of the mix
                while !stop.load(Ordering::Relaxed) {
                    let op = Op::nth(n);
                    let t = Instant::now();
                    let status = soak_request(&client, &base, op, client_no, n).await;
                    samples.push((op as usize, t.elapsed(), status));
                    n += 1;
                }
                samples
            })
        })
        .collect();
    let mut rss = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_secs(10).min(Duration::from_secs(seconds).saturating_sub(started.elapsed())))
            .await;
        rss.push((started.elapsed().as_secs(), rss_mib(pid).unwrap_or(f64::NAN)));
    }
    stop.store(true, Ordering::Relaxed);
    let mut all: Vec<Sample> = Vec::new();
    for t in tasks {
        if let Ok(samples) = t.await {
            all.extend(samples);
        }
    }
    println!("soak: {clients} clients, {} s, {} requests", started.elapsed().as_secs(), all.len());
    for op in Op::ALL {
        let mine: Vec<&Sample> = all.iter().filter(|s| s.0 == op as usize).collect();
        let mut ok: Vec<Duration> = mine.iter().filter(|s| (200..300).contains(&s.2)).map(|s| s.1).collect();
        ok.sort();
        let server_errors = mine.iter().filter(|s| s.2 >= 500).count();
        let other = mine.iter().filter(|s| !(200..300).contains(&s.2) && s.2 < 500).count();
        println!(
            "{}: {} ok, p50 {:.2} ms, p99 {:.2} ms; {server_errors} 5xx, {other} other failures",
            op.label(),
            ok.len(),
            percentile(&ok, 0.5),
            percentile(&ok, 0.99)
        );
    }
    let timeline: Vec<String> = rss.iter().map(|(t, m)| format!("{t}s {m:.0}")).collect();
    println!("RSS (MiB) every 10 s: {}", timeline.join(", "));
}

/// Seconds of one-client requests before a type's load runs.
const WARM_UP_SECONDS: u64 = 5;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = <Args as clap::Parser>::parse();
    let (dir, seconds) = (args.data_dir.as_str(), args.seconds);
    let exe = std::env::current_exe()?.with_file_name("recall");
    let port = free_port()?;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().pool_max_idle_per_host(64).build()?;

    let started = Instant::now();
    let child = Command::new(&exe)
        .args(["serve", "--port", &port.to_string(), "--data-dir", dir])
        .env("ENABLE_BACKEND_ACCESS_CONTROL", "false")
        .env("RECALL_CHUNK_SIZE", "60")
        .env("EMBEDDING_PROVIDER", &args.embedder)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let server = Server(child);
    loop {
        if let Ok(r) = client.get(format!("{base}/health")).send().await {
            if r.status().is_success() {
                break;
            }
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err("the server did not become healthy in 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!("start to /health 200: {:.0} ms", started.elapsed().as_secs_f64() * 1e3);
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("idle RSS: {:.1} MiB", rss_mib(server.0.id()).unwrap_or(f64::NAN));

    if let Some(soak_seconds) = args.soak {
        soak(&client, &base, server.0.id(), args.clients, soak_seconds).await;
        return Ok(());
    }
    let url = format!("{base}/api/v1/recall");
    for (label, body) in [
        (
            "CHUNKS",
            json!({"query": "What did Ada Lovelace do with the Analytical Engine?", "searchType": "CHUNKS", "datasets": ["bench"], "topK": 10}),
        ),
        (
            "GRAPH_COMPLETION only_context",
            json!({"query": "What did Ada Lovelace do with the Analytical Engine?", "searchType": "GRAPH_COMPLETION", "datasets": ["bench"], "topK": 10, "onlyContext": true}),
        ),
    ] {
        // Warm the caches the first query of a type fills. A collection's
        // search cache loads in the background after that query (seconds at
        // 10k chunks for the graph's seven collections); the load figures are
        // of the warm server, so one client keeps asking until it is live.
        let warm = client.post(&url).json(&body).send().await?;
        if !warm.status().is_success() {
            return Err(format!("{label}: {} {}", warm.status(), warm.text().await?).into());
        }
        let warm_up = Instant::now();
        while warm_up.elapsed() < Duration::from_secs(WARM_UP_SECONDS) {
            client.post(&url).json(&body).send().await?.bytes().await?;
        }
        for clients in [4, 8, 16] {
            let (rps, latencies, failures) = load(&client, &url, body.clone(), clients, seconds).await;
            println!(
                "{label}, {clients} clients: {rps:.0} requests/s, p50 {:.2} ms, p95 {:.2} ms, {failures} failed",
                percentile(&latencies, 0.5),
                percentile(&latencies, 0.95)
            );
        }
    }
    println!("RSS after load: {:.1} MiB", rss_mib(server.0.id()).unwrap_or(f64::NAN));
    Ok(())
}
