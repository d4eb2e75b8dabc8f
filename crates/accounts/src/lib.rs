//! Accounts: API keys and passwords (docs/auth.md), who a front end's
//! request acts for. A service of its own on the relational ports (users
//! and credentials), apart from the engine, so that recall and remember
//! never link the key derivation or Argon2.
//!
//! An API key is 64 random hex characters, shown once. The store keeps only
//! its PBKDF2-HMAC-SHA256 derivation (`pbkdf2_sha256$<iterations>$<hex>`, a
//! configured salt, as Cognee's `HASH_API_KEY` mode), so a lookup compares
//! derived values and a leaked table reveals no key. The derivation is
//! deliberately slow; a key that authenticated is remembered in process (by
//! its SHA-256) for a minute, and forgotten at once when any key is revoked
//! through this engine. A password is kept as an Argon2id PHC string.

use std::time::Duration;

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use recall_core::ports::RelationalPorts;
use recall_core::{now_millis, ApiKey, NewApiKey, RecallError, Result, User};
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// How keys are derived and how many a user may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialsConfig {
    /// `API_KEY_HASH_SALT`.
    pub api_key_hash_salt: String,
    /// `API_KEY_HASH_ITERATIONS` (≥ 1).
    pub api_key_hash_iterations: u32,
    /// `MAX_USER_API_KEYS`.
    pub max_user_api_keys: usize,
}

impl Default for CredentialsConfig {
    fn default() -> Self {
        Self { api_key_hash_salt: "cognee-api-key-v1".into(), api_key_hash_iterations: 600_000, max_user_api_keys: 10 }
    }
}

/// A key as created: the only time the key itself is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreatedApiKey {
    pub key: String,
    pub label: String,
    pub name: Option<String>,
    pub id: Uuid,
}

/// The outcome of a password check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordCheck {
    /// The email and password match this user.
    Valid(User),
    /// The user exists but has no password (use an API key).
    NoPassword,
    /// An unknown email or a wrong password (not told apart).
    Invalid,
}

/// The longest email a caller may have (RFC 5321's path limit).
const MAX_EMAIL_LEN: usize = 254;

/// Checks a caller's email before it reaches a store: non-empty, one `@`
/// with text on both sides, no whitespace or control characters, at most
/// 254 characters.
pub fn validate_email(email: &str) -> Result<()> {
    let bad = |why: &str| Err(RecallError::invalid_input(format!("Invalid user email '{email}': {why}.")));
    if email.is_empty() || email.len() > MAX_EMAIL_LEN {
        return bad("it must have 1 to 254 characters");
    }
    if email.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("it must not contain spaces or control characters");
    }
    match email.split_once('@') {
        Some((local, domain)) if !local.is_empty() && !domain.is_empty() && !domain.contains('@') => Ok(()),
        _ => bad("it must look like name@domain"),
    }
}

/// How long a key that authenticated is remembered in process.
const VERIFIED_KEY_TTL: Duration = Duration::from_secs(60);
/// A key's `last_used_at` is stamped at most this often.
const KEY_STAMP_INTERVAL: Duration = Duration::from_secs(300);

/// The keys that authenticated recently, by the SHA-256 of the key.
type VerifiedKeys = moka::future::Cache<[u8; 32], (ApiKey, User)>;
/// When each key was last stamped as used.
type KeyStamps = moka::future::Cache<Uuid, ()>;

/// Runs CPU-heavy work (a key derivation, a password hash) off the async threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| RecallError::backend_msg(format!("a blocking task failed: {e}")))?
}

/// 64 lowercase hex characters from the operating system's random source.
fn new_key() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// A key's label: its first 8 characters and `****`.
fn label(key: &str) -> String {
    format!("{}****", key.chars().take(8).collect::<String>())
}

impl CredentialsConfig {
    /// The stored form of a key: `pbkdf2_sha256$<iterations>$<hex digest>`.
    pub fn key_hash(&self, key: &str) -> String {
        let rounds = std::num::NonZeroU32::new(self.api_key_hash_iterations).unwrap_or(std::num::NonZeroU32::MIN);
        let mut digest = [0u8; 32];
        let salt = self.api_key_hash_salt.as_bytes();
        aws_lc_rs::pbkdf2::derive(aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA256, rounds, salt, key.as_bytes(), &mut digest);
        format!("pbkdf2_sha256${rounds}${}", hex::encode(digest))
    }
}

/// A password's Argon2id PHC string (random salt).
fn hash_password(password: &str) -> Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| RecallError::backend_msg(format!("password hashing failed: {e}")))
}

/// Whether `password` matches a stored PHC string (a malformed one matches nothing).
fn password_matches(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .is_ok_and(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
}

/// The accounts service: users' keys and passwords, on the relational
/// ports, with the keys that authenticated recently in memory. Cheap to
/// clone; clones share the caches.
#[derive(Clone)]
pub struct Accounts {
    relational: RelationalPorts,
    config: CredentialsConfig,
    verified_keys: VerifiedKeys,
    key_stamps: KeyStamps,
}

impl Accounts {
    pub fn new(relational: RelationalPorts, config: CredentialsConfig) -> Self {
        Self {
            relational,
            config,
            verified_keys: moka::future::Cache::builder().max_capacity(10_000).time_to_live(VERIFIED_KEY_TTL).build(),
            key_stamps: moka::future::Cache::builder().max_capacity(10_000).time_to_live(KEY_STAMP_INTERVAL).build(),
        }
    }

    /// Mints a key for `user` (shown once in the answer) unless the user
    /// already holds `max_user_api_keys` keys: then `InvalidInputError`
    /// "You have reached the maximum number of API keys.", nothing written.
    pub async fn create_api_key(&self, user: &User, name: Option<&str>) -> Result<CreatedApiKey> {
        let name = name.map(str::trim).filter(|n| !n.is_empty()).map(str::to_string);
        if name.as_ref().is_some_and(|n| n.chars().count() > 200 || n.chars().any(char::is_control)) {
            return Err(RecallError::invalid_input(
                "An API key's name is at most 200 characters, without control characters.",
            ));
        }
        let key = new_key();
        let config = self.config.clone();
        let to_hash = key.clone();
        let key_hash = blocking(move || Ok(config.key_hash(&to_hash))).await?;
        let stored = NewApiKey {
            id: Uuid::new_v4(),
            user_id: user.id,
            key_hash,
            label: label(&key),
            name,
            created_at: now_millis(),
        };
        match self.relational.credentials.add_api_key(&stored, self.config.max_user_api_keys).await? {
            Some(listed) => Ok(CreatedApiKey { key, label: listed.label, name: listed.name, id: listed.id }),
            None => Err(RecallError::invalid_input("You have reached the maximum number of API keys.")),
        }
    }

    /// The caller's keys, oldest first (labels, never keys).
    pub async fn api_keys(&self, user: &User) -> Result<Vec<ApiKey>> {
        self.relational.credentials.api_keys(user.id).await
    }

    /// Revokes one of the caller's keys; a key that is unknown or another
    /// user's is `NotFoundError` (404), with the same text either way.
    pub async fn revoke_api_key(&self, user: &User, id: Uuid) -> Result<()> {
        if !self.relational.credentials.delete_api_key(user.id, id).await? {
            return Err(RecallError::NotFound(format!("API key {id} not found.")));
        }
        // A revoked key must stop working now, not at the end of its cache entry.
        self.verified_keys.invalidate_all();
        Ok(())
    }

    /// The user a key belongs to; `None` for a blank, malformed, unknown or
    /// revoked key, or one whose user is gone.
    pub async fn authenticate_api_key(&self, key: &str) -> Result<Option<User>> {
        let key = key.trim();
        if key.len() != 64 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let fingerprint: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let (listed, user) = match self.verified_keys.get(&fingerprint).await {
            Some(hit) => hit,
            None => {
                let config = self.config.clone();
                let owned = key.to_string();
                let key_hash = blocking(move || Ok(config.key_hash(&owned))).await?;
                let Some(listed) = self.relational.credentials.api_key_by_hash(&key_hash).await? else {
                    return Ok(None);
                };
                let Some(user) = self.relational.users.get_users(&[listed.user_id]).await?.pop() else {
                    return Ok(None);
                };
                self.verified_keys.insert(fingerprint, (listed.clone(), user.clone())).await;
                (listed, user)
            }
        };
        if self.key_stamps.get(&listed.id).await.is_none() {
            self.key_stamps.insert(listed.id, ()).await;
            // A failed stamp never fails the authentication.
            if let Err(e) = self.relational.credentials.touch_api_key(listed.id, now_millis()).await {
                tracing::warn!(error = %e, "could not record an API key's use");
            }
        }
        Ok(Some(user))
    }

    /// Sets (or replaces) the caller's password. At least 8 characters.
    pub async fn set_password(&self, user: &User, password: &str) -> Result<()> {
        if password.chars().count() < 8 {
            return Err(RecallError::invalid_input("A password has at least 8 characters."));
        }
        let owned = password.to_string();
        let hash = blocking(move || hash_password(&owned)).await?;
        self.relational.credentials.set_password_hash(user.id, &hash).await
    }

    /// A fingerprint of the user's stored password (the SHA-256 of its
    /// hash), `None` without a password: a session token carries a MAC of it,
    /// so changing the password ends every session issued before.
    pub async fn password_stamp(&self, user: &User) -> Result<Option<String>> {
        let stored = self.relational.credentials.password_hash(user.id).await?;
        Ok(stored.map(|hash| hex::encode(Sha256::digest(hash.as_bytes()))))
    }

    /// The user with this id, if any (a session token names its user by id).
    pub async fn user_by_id(&self, id: Uuid) -> Result<Option<User>> {
        Ok(self.relational.users.get_users(&[id]).await?.pop())
    }

    /// The user with this email, created when missing.
    pub async fn ensure_user(&self, email: &str) -> Result<User> {
        validate_email(email)?;
        self.relational.users.ensure_user(email).await
    }

    /// The user with this email, if any.
    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>> {
        self.relational.users.find_user(email).await
    }

    /// A new user, with a password when one is given; an error if the email is taken.
    pub async fn create_user(&self, email: &str, password: Option<&str>) -> Result<User> {
        validate_email(email)?;
        if self.relational.users.find_user(email).await?.is_some() {
            return Err(RecallError::invalid_input(format!("User '{email}' already exists.")));
        }
        let created = self.relational.users.ensure_user(email).await?;
        if let Some(password) = password {
            self.set_password(&created, password).await?;
        }
        Ok(created)
    }

    /// Creates a user with a password; `None` when the email is taken.
    pub async fn register_user(&self, email: &str, password: &str) -> Result<Option<User>> {
        validate_email(email)?;
        if self.relational.users.find_user(email).await?.is_some() {
            return Ok(None);
        }
        if password.chars().count() < 8 {
            return Err(RecallError::invalid_input("A password has at least 8 characters."));
        }
        let user = self.relational.users.ensure_user(email).await?;
        self.set_password(&user, password).await?;
        Ok(Some(user))
    }

    /// Checks an email and a password.
    pub async fn check_password(&self, email: &str, password: &str) -> Result<PasswordCheck> {
        let Some(user) = self.relational.users.find_user(email.trim()).await? else {
            return Ok(PasswordCheck::Invalid);
        };
        let Some(stored) = self.relational.credentials.password_hash(user.id).await? else {
            return Ok(PasswordCheck::NoPassword);
        };
        let owned = password.to_string();
        let matches = blocking(move || Ok(password_matches(&owned, &stored))).await?;
        Ok(if matches { PasswordCheck::Valid(user) } else { PasswordCheck::Invalid })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_64_hex_and_labelled_by_their_start() {
        let key = new_key();
        assert_eq!(key.len(), 64);
        assert!(key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_ne!(key, new_key());
        assert_eq!(label("abcdef0123456789"), "abcdef01****");
    }

    #[test]
    fn the_key_hash_is_cognees_pbkdf2_form() {
        // The PBKDF2-HMAC-SHA256 test vectors for "password" / "salt" (RFC 7914 §11's
        // construction, 32-byte output), 1 and 2 rounds.
        let config =
            CredentialsConfig { api_key_hash_salt: "salt".into(), api_key_hash_iterations: 1, ..Default::default() };
        assert_eq!(
            config.key_hash("password"),
            "pbkdf2_sha256$1$120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"
        );
        let two = CredentialsConfig { api_key_hash_iterations: 2, ..config.clone() };
        assert_eq!(
            two.key_hash("password"),
            "pbkdf2_sha256$2$ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43"
        );
        assert_eq!(config.key_hash("password"), config.key_hash("password"), "deterministic: lookups compare hashes");
        let other_salt = CredentialsConfig { api_key_hash_salt: "pepper".into(), ..config.clone() };
        assert_ne!(other_salt.key_hash("password"), config.key_hash("password"));
    }

    #[test]
    fn passwords_round_trip_and_never_match_garbage() {
        let stored = hash_password("correct horse").unwrap();
        assert!(stored.starts_with("$argon2id$"));
        assert!(password_matches("correct horse", &stored));
        assert!(!password_matches("wrong horse", &stored));
        assert!(!password_matches("correct horse", "not a phc string"));
    }
}
