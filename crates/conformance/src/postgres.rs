//! Throwaway PostgreSQL databases for the suites that run against a real
//! server (`RECALL_TEST_POSTGRES_URL`, default the local trust-auth server).
//! Outside CI a missing server skips the suite, loudly; in CI (`CI=true`) it
//! fails it.

use sea_orm::{ConnectionTrait, Database};

const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

fn admin_url() -> String {
    std::env::var("RECALL_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_ADMIN_URL.into())
}

/// A new empty database: its URL and its name (for [`drop_database`]), or
/// `None` (after saying so) when no server answers outside CI.
pub async fn throwaway_database(tag: &str) -> Option<(String, String)> {
    let admin_url = admin_url();
    let admin = match Database::connect(&admin_url).await {
        Ok(c) => c,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("PostgreSQL at {admin_url} is unreachable in CI: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: PostgreSQL suite ({tag}): no server at {admin_url}: {e}");
            return None;
        }
    };
    let name = format!("recall_test_{}_{}", tag, uuid::Uuid::new_v4().simple());
    admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await.expect("create the test database");
    let base = admin_url.rsplit_once('/').map(|(b, _)| b.to_string()).expect("a database URL");
    Some((format!("{base}/{name}"), name))
}

/// Drops a database made by [`throwaway_database`], closing its connections.
pub async fn drop_database(name: &str) {
    let admin = Database::connect(&admin_url()).await.expect("the admin connection");
    admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.expect("drop it");
}
