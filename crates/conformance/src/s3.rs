//! Throwaway buckets on an S3-compatible server (`RECALL_TEST_S3_ENDPOINT`,
//! such as `moto_server` on `http://127.0.0.1:5055`, which .ci/run starts),
//! for the suites that run LanceDB on object storage. Outside CI an unset
//! endpoint skips the suite, loudly; in CI (`CI=true`) it fails it.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A bucket made for one test, and how to reach it.
pub struct TestBucket {
    /// `http://host:port`.
    pub endpoint: String,
    pub bucket: String,
}

/// The credentials the test server is given (it checks signatures, not keys).
const KEY_ID: &str = "recall-test";
const SECRET: &str = "recall-test-secret";
const REGION: &str = "us-east-1";

impl TestBucket {
    /// `s3://<bucket>/<prefix>`.
    pub fn uri(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.bucket)
    }

    /// LanceDB storage options reaching the bucket.
    pub fn options(&self) -> Vec<(String, String)> {
        [
            ("aws_endpoint", self.endpoint.as_str()),
            ("aws_region", REGION),
            ("aws_access_key_id", KEY_ID),
            ("aws_secret_access_key", SECRET),
            ("allow_http", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The same settings as the standard AWS variables a user would set
    /// (docs/backends.md), for a child process.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
            ("AWS_REGION", REGION),
            ("AWS_ACCESS_KEY_ID", KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", SECRET),
            ("AWS_ALLOW_HTTP", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

/// A new empty bucket, or `None` (after saying so) when no endpoint is set
/// outside CI.
pub async fn throwaway_bucket(tag: &str) -> Option<TestBucket> {
    let endpoint = match std::env::var("RECALL_TEST_S3_ENDPOINT") {
        Ok(e) if !e.trim().is_empty() => e.trim().trim_end_matches('/').to_string(),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("RECALL_TEST_S3_ENDPOINT is unset in CI: .ci/run starts an S3-compatible server")
        }
        _ => {
            eprintln!("SKIPPED: object-storage suite ({tag}): RECALL_TEST_S3_ENDPOINT is unset");
            return None;
        }
    };
    let bucket = format!("recall-{tag}-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    create_bucket(&endpoint, &bucket).await;
    Some(TestBucket { endpoint, bucket })
}

/// `PUT /<bucket>` (path style; the test server accepts it unsigned).
async fn create_bucket(endpoint: &str, bucket: &str) {
    let host = endpoint.strip_prefix("http://").unwrap_or_else(|| panic!("an http:// endpoint, not {endpoint}"));
    let mut stream = tokio::net::TcpStream::connect(host)
        .await
        .unwrap_or_else(|e| panic!("the S3-compatible server at {endpoint} is unreachable: {e}"));
    let request = format!("PUT /{bucket} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send the bucket request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read the bucket answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "creating bucket {bucket} at {endpoint}: {answer}");
}
