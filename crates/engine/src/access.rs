//! Dataset access: every rule about who reaches which dataset, in one place
//! (docs/access.md). Every engine entry point acts for an explicit caller
//! and goes through these functions to find its datasets.
//!
//! - Owners hold read, write, delete and share on their datasets; grants give
//!   them to other users.
//! - A dataset *name* resolves only among the caller's own datasets (404
//!   `DatasetNotFoundError` when it matches none); a dataset *id* reaches
//!   any dataset the caller holds the needed permission on (403
//!   `PermissionDeniedError` otherwise, the same for an unknown id, so ids
//!   cannot be probed).
//! - A request that names no dataset covers every dataset the caller may
//!   read: owned and shared.

use std::collections::HashSet;

use recall_core::ports::RelationalPorts;
use recall_core::{Dataset, DatasetAccess, DatasetId, DatasetRef, Permission, RecallError, Result, User};

use crate::Engine;

/// A user's view of one dataset for listings: the dataset, its owner's
/// email and the caller's permissions on it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DatasetListing {
    #[serde(flatten)]
    pub dataset: Dataset,
    /// The owner's email (`None` if the owner's row is gone).
    pub owner_email: Option<String>,
    /// Whether the caller owns it (else it was shared with the caller).
    pub owned: bool,
    pub permissions: Vec<Permission>,
}

/// The access service: users, datasets and grants, and every rule about
/// who reaches which dataset. It owns nothing but the relational ports it
/// reads; the engine holds one and goes through it for every dataset.
#[derive(Clone)]
pub struct Access {
    relational: RelationalPorts,
}

impl Access {
    pub(crate) fn new(relational: RelationalPorts) -> Self {
        Self { relational }
    }

    /// The datasets `user` holds any permission on, owned and shared, oldest
    /// first, with the owner and the permissions held.
    pub async fn datasets(&self, user: &User) -> Result<Vec<DatasetListing>> {
        let access = self.relational.datasets.accessible_datasets(user).await?;
        let owner_ids: Vec<uuid::Uuid> =
            access.iter().map(|a| a.dataset.owner_id).collect::<HashSet<_>>().into_iter().collect();
        let owners = self.relational.users.get_users(&owner_ids).await?;
        Ok(access
            .into_iter()
            .map(|DatasetAccess { dataset, permissions }| DatasetListing {
                owner_email: owners.iter().find(|u| u.id == dataset.owner_id).map(|u| u.email.clone()),
                owned: dataset.owner_id == user.id,
                dataset,
                permissions,
            })
            .collect())
    }

    /// Every dataset `user` holds `permission` on, oldest first.
    pub async fn permitted(&self, user: &User, permission: Permission) -> Result<Vec<Dataset>> {
        self.relational.datasets.permitted_datasets(user, permission).await
    }

    /// Explicit ids: each must carry `permission` for the caller, else 403.
    /// Request order, each once.
    pub(crate) async fn authorize_ids(
        &self,
        user: &User,
        ids: &[DatasetId],
        permission: Permission,
    ) -> Result<Vec<Dataset>> {
        pick_ids(&self.permitted(user, permission).await?, ids, permission)
    }

    /// Names, strictly among the caller's own datasets: every name that
    /// matches none is listed in one 404; the matches must then carry
    /// `permission` (403). Request order, each once.
    pub(crate) async fn resolve_names(
        &self,
        user: &User,
        names: &[String],
        permission: Permission,
    ) -> Result<Vec<Dataset>> {
        let named = self.relational.datasets.owned_datasets_by_name(user, names).await?;
        pick_names(&named, &self.permitted(user, permission).await?, names, permission)
    }

    /// One dataset for an operation that needs `permission`: a name among the
    /// caller's own datasets (404), an id among those the caller holds
    /// `permission` on (403).
    pub async fn authorize(&self, user: &User, target: &DatasetRef, permission: Permission) -> Result<Dataset> {
        let found = match target {
            DatasetRef::Name(name) => self.resolve_names(user, std::slice::from_ref(name), permission).await?,
            DatasetRef::Id(id) => self.authorize_ids(user, std::slice::from_ref(id), permission).await?,
        };
        found.into_iter().next().ok_or_else(|| RecallError::permission_denied(permission))
    }

    /// The dataset a write goes to: a name is the caller's own dataset,
    /// created (with the owner's four grants) when missing; an id must carry
    /// `write` for the caller.
    pub async fn writable(&self, user: &User, target: &DatasetRef) -> Result<Dataset> {
        match target {
            DatasetRef::Name(name) => {
                crate::ingest::remember::validate_dataset_name(name)?;
                self.relational.datasets.ensure_dataset(user, name).await
            }
            DatasetRef::Id(_) => self.authorize(user, target, Permission::Write).await,
        }
    }

    /// The dataset a delete goes to: a name the caller does not own (or that
    /// does not exist) is `Dataset '<name>' not found or not accessible.`
    /// (404); an id without `delete` is 403.
    pub async fn deletable(&self, user: &User, target: &DatasetRef) -> Result<Dataset> {
        match self.authorize(user, target, Permission::Delete).await {
            Err(RecallError::DatasetNotFound { .. }) => Err(RecallError::DatasetNotAccessible(target.label())),
            other => other,
        }
    }

    /// A dataset the caller may read, by name or id (graph export, skill
    /// listings).
    pub async fn dataset(&self, user: &User, target: impl Into<DatasetRef>) -> Result<Dataset> {
        self.authorize(user, &target.into(), Permission::Read).await
    }

    /// Gives `grantee` `permission` on a dataset; the caller needs `share` on it.
    /// Granting twice changes nothing.
    pub async fn share(
        &self,
        user: &User,
        target: impl Into<DatasetRef>,
        grantee: &User,
        permission: Permission,
    ) -> Result<Dataset> {
        let dataset = self.authorize(user, &target.into(), Permission::Share).await?;
        self.give(&dataset, grantee, permission).await?;
        Ok(dataset)
    }

    /// Takes `permission` on a dataset away from `grantee`; the caller needs
    /// `share` on it. The owner's own permissions cannot be taken away.
    pub async fn unshare(
        &self,
        user: &User,
        target: impl Into<DatasetRef>,
        grantee: &User,
        permission: Permission,
    ) -> Result<Dataset> {
        let dataset = self.authorize(user, &target.into(), Permission::Share).await?;
        self.revoke(&dataset, grantee, permission).await?;
        Ok(dataset)
    }

    /// A grant on an authorized dataset; grants stay within its tenant.
    async fn give(&self, dataset: &Dataset, grantee: &User, permission: Permission) -> Result<()> {
        check_same_tenant(dataset, grantee)?;
        self.relational.datasets.grant(dataset.id, grantee.id, permission).await
    }

    /// A revoke on an authorized dataset; the owner's own permissions stay.
    async fn revoke(&self, dataset: &Dataset, grantee: &User, permission: Permission) -> Result<()> {
        if grantee.id == dataset.owner_id {
            return Err(RecallError::invalid_input(format!(
                "{} owns dataset '{}': an owner's permissions cannot be revoked.",
                grantee.email, dataset.name
            )));
        }
        self.relational.datasets.revoke(dataset.id, grantee.id, permission).await
    }
}

impl Access {
    /// The caller's own dataset with this name, created (with the owner's
    /// four permissions) when missing.
    pub async fn create_dataset(&self, user: &User, name: &str) -> Result<Dataset> {
        self.writable(user, &DatasetRef::Name(name.to_string())).await
    }

    /// Gives (`grant`) or takes away a permission on several datasets: the
    /// caller needs `share` on every one (a name among the caller's own:
    /// 404; an id: 403) before anything changes. The datasets changed.
    pub async fn set_permission(
        &self,
        user: &User,
        targets: &[DatasetRef],
        grantee: &User,
        permission: Permission,
        grant: bool,
    ) -> Result<Vec<Dataset>> {
        let mut checked = Vec::with_capacity(targets.len());
        for target in targets {
            checked.push(self.authorize(user, target, Permission::Share).await?);
        }
        for dataset in &checked {
            if grant {
                self.give(dataset, grantee, permission).await?;
            } else {
                self.revoke(dataset, grantee, permission).await?;
            }
        }
        Ok(checked)
    }
}

impl Engine {
    /// The datasets a search reads (recall's graph lane, the legacy search):
    /// ids (each readable) take precedence over names (strict); neither
    /// means every readable dataset, which may be empty (the caller decides
    /// between the warm-up marker and [`RecallError::no_permission_on_any`]).
    /// An empty name list means "every readable one" too, but a caller who
    /// can read nothing gets `DatasetNotFoundError` ("No datasets found.").
    ///
    /// One read of the store ([`recall_core::ports::DatasetStore::scope_read`])
    /// gives the grants, the named datasets and their data versions, so a
    /// revoke is seen by the next search, in any process; the versions are
    /// observed as [`Engine::observe_data_versions`] would.
    pub(crate) async fn readable_scope(
        &self,
        user: &User,
        names: Option<&[String]>,
        ids: Option<&[DatasetId]>,
    ) -> Result<Vec<Dataset>> {
        let ids = ids.filter(|ids| !ids.is_empty());
        let names_to_read = match (ids, names) {
            (None, Some(names)) => names,
            _ => &[],
        };
        let read = self.relational.datasets.scope_read(user, names_to_read, Permission::Read).await?;
        self.observe(read.versions).await?;
        let scope = match (ids, names) {
            (Some(ids), _) => pick_ids(&read.permitted, ids, Permission::Read)?,
            (None, Some([])) if read.permitted.is_empty() => {
                return Err(RecallError::DatasetNotFound { missing: vec![] })
            }
            (None, Some([]) | None) => read.permitted,
            (None, Some(names)) => pick_names(&read.named, &read.permitted, names, Permission::Read)?,
        };
        let scope_ids: Vec<DatasetId> = scope.iter().map(|d| d.id).collect();
        self.read_quarantine(&scope_ids).await?;
        Ok(scope)
    }
}

/// Grants reach only users of the dataset's tenant.
fn check_same_tenant(dataset: &Dataset, grantee: &User) -> Result<()> {
    if dataset.tenant_id == grantee.tenant_id {
        Ok(())
    } else {
        Err(RecallError::invalid_input(format!(
            "{} is not in the tenant of dataset '{}': grants stay within a tenant.",
            grantee.email, dataset.name
        )))
    }
}

/// The named datasets in request order, each once. Every name must match
/// one of the caller's own datasets (`named`): those that match none are
/// listed in one 404, each once, in request order. The matches must then be
/// among `permitted` (else 403).
fn pick_names(
    named: &[Dataset],
    permitted: &[Dataset],
    names: &[String],
    permission: Permission,
) -> Result<Vec<Dataset>> {
    let find = |name: &String| named.iter().find(|d| &d.name == name);
    let mut seen = HashSet::new();
    let missing: Vec<String> = names.iter().filter(|n| seen.insert(n.as_str()) && find(n).is_none()).cloned().collect();
    if !missing.is_empty() {
        return Err(RecallError::DatasetNotFound { missing });
    }
    let ids: Vec<DatasetId> = names.iter().filter_map(find).map(|d| d.id).collect();
    pick_ids(permitted, &ids, permission)
}

/// The datasets of `ids` in request order, each once; each must be among
/// `permitted` (else 403, the same for an id that does not exist).
fn pick_ids(permitted: &[Dataset], ids: &[DatasetId], permission: Permission) -> Result<Vec<Dataset>> {
    pick_in_order(ids, |id| permitted.iter().find(|d| d.id == *id))
        .ok_or_else(|| RecallError::permission_denied(permission))
}

/// `pick(id)` for each id in order, each dataset once; `None` as soon as one is missing.
fn pick_in_order<'a>(ids: &[DatasetId], pick: impl Fn(&DatasetId) -> Option<&'a Dataset>) -> Option<Vec<Dataset>> {
    let mut out: Vec<Dataset> = Vec::with_capacity(ids.len());
    for id in ids {
        let d = pick(id)?;
        if !out.iter().any(|o| o.id == d.id) {
            out.push(d.clone());
        }
    }
    Some(out)
}
