//! What the credential store keeps: API keys (only their hashes) and
//! password hashes (docs/auth.md). Hashing and checking live in the engine;
//! a store never sees a key or a password in the clear.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::EpochMillis;

/// One API key as listed: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: Uuid,
    pub user_id: Uuid,
    /// The key's first 8 characters and `****`: enough to tell keys apart.
    pub label: String,
    pub name: Option<String>,
    pub created_at: EpochMillis,
    pub last_used_at: Option<EpochMillis>,
}

/// A key to store: its hash, never the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApiKey {
    pub id: Uuid,
    pub user_id: Uuid,
    /// The derived value lookups compare against (docs/auth.md).
    pub key_hash: String,
    pub label: String,
    pub name: Option<String>,
    pub created_at: EpochMillis,
}

impl NewApiKey {
    /// The key as listed.
    pub fn listed(&self) -> ApiKey {
        ApiKey {
            id: self.id,
            user_id: self.user_id,
            label: self.label.clone(),
            name: self.name.clone(),
            created_at: self.created_at,
            last_used_at: None,
        }
    }
}
