//! Who may do what to a dataset: the four permissions, a reference to a
//! dataset by name or id, and a dataset as one user sees it. The rules that
//! use them live in the engine's `access` module (docs/access.md).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Dataset, DatasetId, RecallError};

/// A dataset permission. Owners hold all four on their datasets; grants
/// give them to other users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    Read,
    Write,
    Delete,
    Share,
}

impl Permission {
    /// Every permission, in the order Cognee lists them.
    pub const ALL: [Permission; 4] = [Permission::Read, Permission::Write, Permission::Delete, Permission::Share];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
            Permission::Delete => "delete",
            Permission::Share => "share",
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Permission {
    type Err = RecallError;

    /// Exact names only; anything else is `PermissionNotFoundError` (403).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Permission::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| RecallError::PermissionNotFound(s.to_string()))
    }
}

/// A dataset named by the caller: a name resolves only among the caller's
/// own datasets; an id reaches any dataset the caller holds a grant on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetRef {
    Name(String),
    Id(DatasetId),
}

impl DatasetRef {
    /// How the dataset reads in messages: its name, or its id.
    pub fn label(&self) -> String {
        match self {
            DatasetRef::Name(n) => n.clone(),
            DatasetRef::Id(id) => id.to_string(),
        }
    }
}

impl From<&str> for DatasetRef {
    fn from(name: &str) -> Self {
        DatasetRef::Name(name.to_string())
    }
}

impl From<String> for DatasetRef {
    fn from(name: String) -> Self {
        DatasetRef::Name(name)
    }
}

impl From<&String> for DatasetRef {
    fn from(name: &String) -> Self {
        DatasetRef::Name(name.clone())
    }
}

impl From<DatasetId> for DatasetRef {
    fn from(id: DatasetId) -> Self {
        DatasetRef::Id(id)
    }
}

impl From<&DatasetRef> for DatasetRef {
    fn from(r: &DatasetRef) -> Self {
        r.clone()
    }
}

/// A dataset as one user sees it: the dataset and the permissions the user
/// holds on it (sorted, each once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetAccess {
    pub dataset: Dataset,
    pub permissions: Vec<Permission>,
}

impl DatasetAccess {
    pub fn allows(&self, permission: Permission) -> bool {
        self.permissions.contains(&permission)
    }
}

/// One grant row: `principal` holds `permission` on `dataset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Grant {
    pub dataset: DatasetId,
    pub principal: Uuid,
    pub permission: Permission,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_names_are_exact() {
        for p in Permission::ALL {
            assert_eq!(p.as_str().parse::<Permission>().ok(), Some(p));
        }
        let err = "READ".parse::<Permission>().unwrap_err();
        assert_eq!(err.to_string(), "READ not found or not in allowed permission types");
        assert_eq!((err.name(), err.http_status()), ("PermissionNotFoundError", 403));
    }
}
