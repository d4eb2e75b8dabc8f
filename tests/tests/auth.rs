#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Credentials through the accounts service (docs/auth.md): API keys
//! minted, found, limited and revoked; passwords set and checked; only
//! hashes stored. Run on the in-memory store and on SQLite.

use std::sync::Arc;

use recall_accounts::{Accounts, CredentialsConfig, PasswordCheck};
use recall_core::ports::{CredentialStore, RelationalPorts};
use recall_memory::MemoryRelationalStore;
use recall_sql::{SqlDatabase, SqlRelationalStore};

fn config() -> CredentialsConfig {
    CredentialsConfig { api_key_hash_iterations: 1_000, max_user_api_keys: 3, ..Default::default() }
}

async fn credentials_end_to_end(relational: RelationalPorts) {
    let accounts = &Accounts::new(relational.clone(), config());
    let users = &relational.users;
    let ann = users.ensure_user("ann@example.com").await.unwrap();
    let bob = users.ensure_user("bob@example.com").await.unwrap();

    let key = accounts.create_api_key(&ann, Some("  laptop ")).await.unwrap();
    assert_eq!(key.name.as_deref(), Some("laptop"));
    assert_eq!(accounts.authenticate_api_key(&key.key).await.unwrap(), Some(ann.clone()));
    // Cached or not, the same answer; surrounding blanks are forgiven.
    assert_eq!(accounts.authenticate_api_key(&format!(" {} ", key.key)).await.unwrap(), Some(ann.clone()));
    let stamped = accounts.api_keys(&ann).await.unwrap();
    assert!(stamped[0].last_used_at.is_some(), "a use is recorded");

    // Only the derivation is stored.
    let creds: &Arc<dyn CredentialStore> = &relational.credentials;
    assert!(creds.api_key_by_hash(&key.key).await.unwrap().is_none());
    assert!(creds.api_key_by_hash(&config().key_hash(&key.key)).await.unwrap().is_some());

    // Wrong, malformed and blank keys find nobody.
    let mut wrong = key.key.clone();
    wrong.replace_range(0..1, if wrong.starts_with('0') { "1" } else { "0" });
    for bad in [wrong.as_str(), "", "   ", "not-hex", &key.key[..63], &format!("{}0", key.key), "Ǆ".repeat(32).as_str()]
    {
        assert_eq!(accounts.authenticate_api_key(bad).await.unwrap(), None, "{bad:?}");
    }

    // The per-user limit, with bob unaffected.
    accounts.create_api_key(&ann, None).await.unwrap();
    accounts.create_api_key(&ann, None).await.unwrap();
    let err = accounts.create_api_key(&ann, None).await.unwrap_err();
    assert_eq!(
        (err.name(), err.to_string().as_str()),
        ("InvalidInputError", "You have reached the maximum number of API keys.")
    );
    let bobs = accounts.create_api_key(&bob, None).await.unwrap();
    assert_eq!(accounts.api_keys(&bob).await.unwrap().len(), 1);
    let err = accounts.create_api_key(&ann, Some(&"x".repeat(201))).await.unwrap_err();
    assert_eq!(err.name(), "InvalidInputError");

    // Only the owner revokes, and a revoked key stops working at once (it was cached).
    let err = accounts.revoke_api_key(&bob, key.id).await.unwrap_err();
    assert_eq!((err.name(), err.http_status()), ("NotFoundError", 404));
    accounts.revoke_api_key(&ann, key.id).await.unwrap();
    assert_eq!(accounts.authenticate_api_key(&key.key).await.unwrap(), None);
    assert_eq!(accounts.authenticate_api_key(&bobs.key).await.unwrap(), Some(bob.clone()));
    assert_eq!(accounts.api_keys(&ann).await.unwrap().len(), 2);

    // Passwords.
    assert_eq!(accounts.check_password("ann@example.com", "whatever1").await.unwrap(), PasswordCheck::NoPassword);
    assert_eq!(accounts.set_password(&ann, "short").await.unwrap_err().name(), "InvalidInputError");
    accounts.set_password(&ann, "correct horse").await.unwrap();
    assert_eq!(
        accounts.check_password("ann@example.com", "correct horse").await.unwrap(),
        PasswordCheck::Valid(ann.clone())
    );
    assert_eq!(
        accounts.check_password(" ann@example.com ", "correct horse").await.unwrap(),
        PasswordCheck::Valid(ann.clone())
    );
    assert_eq!(accounts.check_password("ann@example.com", "wrong horse").await.unwrap(), PasswordCheck::Invalid);
    assert_eq!(accounts.check_password("nobody@example.com", "correct horse").await.unwrap(), PasswordCheck::Invalid);
    let stored = creds.password_hash(ann.id).await.unwrap().unwrap();
    assert!(stored.starts_with("$argon2id$") && !stored.contains("correct horse"));
}

#[tokio::test]
async fn credentials_in_memory() {
    credentials_end_to_end(RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new()))).await;
}

#[tokio::test]
async fn credentials_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("recall.db").display());
    let db = SqlDatabase::connect(&url).await.unwrap();
    credentials_end_to_end(RelationalPorts::from_store(Arc::new(SqlRelationalStore::new(db)))).await;
}
