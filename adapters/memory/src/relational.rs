use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use recall_core::ports::{
    CredentialStore, DataStore, DataVersionBump, DataVersions, DatasetStore, PipelineRunStore, RelationalStore,
    ScopeRead, SearchHistoryStore, UserStore,
};
use recall_core::{
    ids, now_millis, ApiKey, DataItem, DataStatus, Dataset, DatasetAccess, DatasetId, EpochMillis, Grant, HistoryRow,
    NewApiKey, Permission, PipelineRun, Result, SearchRecord, User,
};
use tokio::sync::RwLock;
use uuid::Uuid;

#[derive(Default)]
struct State {
    users: BTreeMap<String, User>,
    datasets: BTreeMap<DatasetId, Dataset>,
    /// Grant rows.
    acls: BTreeSet<(DatasetId, Uuid, Permission)>,
    data: BTreeMap<(DatasetId, Uuid), DataItem>,
    /// (dataset, hidden id, data item) rows.
    quarantine: BTreeSet<(DatasetId, Uuid, Uuid)>,
    store_version: u64,
    versions: BTreeMap<DatasetId, u64>,
    runs: Vec<PipelineRun>,
    history: Vec<(Uuid, HistoryRow)>,
    /// API keys by hash, in insertion order within a user.
    api_keys: Vec<(String, ApiKey)>,
    passwords: BTreeMap<Uuid, String>,
}

/// Users, datasets, data items and pipeline runs held in memory.
#[derive(Default)]
pub struct MemoryRelationalStore {
    state: RwLock<State>,
}

impl MemoryRelationalStore {
    pub fn new() -> Self {
        Self::default()
    }
}

impl State {
    fn owned_by_name(&self, owner: &User, names: &[String]) -> Vec<Dataset> {
        self.datasets
            .values()
            .filter(|d| d.owner_id == owner.id && d.tenant_id == owner.tenant_id && names.contains(&d.name))
            .cloned()
            .collect()
    }

    fn accessible(&self, user: &User) -> Vec<DatasetAccess> {
        let mut out: Vec<DatasetAccess> = self
            .datasets
            .values()
            .filter(|d| d.tenant_id == user.tenant_id)
            .filter_map(|d| {
                let permissions: Vec<Permission> =
                    Permission::ALL.into_iter().filter(|p| self.acls.contains(&(d.id, user.id, *p))).collect();
                (!permissions.is_empty()).then(|| DatasetAccess { dataset: d.clone(), permissions })
            })
            .collect();
        out.sort_by(|a, b| {
            a.dataset.created_at.cmp(&b.dataset.created_at).then_with(|| a.dataset.name.cmp(&b.dataset.name))
        });
        out
    }

    fn data_versions<'a>(&self, datasets: impl Iterator<Item = &'a DatasetId>) -> DataVersions {
        DataVersions {
            store: self.store_version,
            datasets: datasets
                .filter(|d| self.datasets.contains_key(d))
                .map(|d| (*d, self.versions.get(d).copied().unwrap_or(0)))
                .collect(),
        }
    }
}

impl RelationalStore for MemoryRelationalStore {
    fn name(&self) -> &'static str {
        "memory-relational"
    }
}

#[async_trait]
impl UserStore for MemoryRelationalStore {
    async fn find_user(&self, email: &str) -> Result<Option<User>> {
        Ok(self.state.read().await.users.get(email).cloned())
    }

    async fn ensure_user(&self, email: &str) -> Result<User> {
        let mut state = self.state.write().await;
        let user = state.users.entry(email.to_string()).or_insert_with(|| User {
            id: Uuid::new_v4(),
            email: email.to_string(),
            tenant_id: None,
        });
        Ok(user.clone())
    }

    async fn get_users(&self, ids: &[Uuid]) -> Result<Vec<User>> {
        Ok(self.state.read().await.users.values().filter(|u| ids.contains(&u.id)).cloned().collect())
    }
}

#[async_trait]
impl DatasetStore for MemoryRelationalStore {
    async fn ensure_dataset(&self, owner: &User, name: &str) -> Result<Dataset> {
        let mut state = self.state.write().await;
        let id = DatasetId(ids::dataset_id(name, owner.id));
        if let Some(existing) = state.datasets.get(&id) {
            return Ok(existing.clone());
        }
        let dataset = Dataset {
            id,
            name: name.to_string(),
            owner_id: owner.id,
            tenant_id: owner.tenant_id,
            created_at: now_millis(),
        };
        state.datasets.insert(id, dataset.clone());
        for p in Permission::ALL {
            state.acls.insert((id, owner.id, p));
        }
        Ok(dataset)
    }

    async fn owned_datasets_by_name(&self, owner: &User, names: &[String]) -> Result<Vec<Dataset>> {
        Ok(self.state.read().await.owned_by_name(owner, names))
    }

    async fn accessible_datasets(&self, user: &User) -> Result<Vec<DatasetAccess>> {
        Ok(self.state.read().await.accessible(user))
    }

    async fn grant(&self, dataset: DatasetId, principal: Uuid, permission: Permission) -> Result<()> {
        self.state.write().await.acls.insert((dataset, principal, permission));
        Ok(())
    }

    async fn revoke(&self, dataset: DatasetId, principal: Uuid, permission: Permission) -> Result<()> {
        self.state.write().await.acls.remove(&(dataset, principal, permission));
        Ok(())
    }

    async fn data_versions(&self, datasets: &[DatasetId]) -> Result<DataVersions> {
        Ok(self.state.read().await.data_versions(datasets.iter()))
    }

    async fn scope_read(&self, user: &User, names: &[String], permission: Permission) -> Result<ScopeRead> {
        let state = self.state.read().await;
        let permitted: Vec<Dataset> =
            state.accessible(user).into_iter().filter(|a| a.allows(permission)).map(|a| a.dataset).collect();
        let named = state.owned_by_name(user, names);
        let versions = state.data_versions(ScopeRead::dataset_ids(&permitted, &named).iter());
        Ok(ScopeRead { permitted, named, versions })
    }

    async fn bump_data_version(&self, dataset: DatasetId, seen: Option<u64>) -> Result<DataVersionBump> {
        let mut state = self.state.write().await;
        let unseen_writes = seen != Some(state.store_version);
        state.store_version += 1;
        let version = state.store_version;
        if state.datasets.contains_key(&dataset) {
            state.versions.insert(dataset, version);
        }
        Ok(DataVersionBump { version, unseen_writes })
    }

    async fn grants(&self, dataset: DatasetId) -> Result<Vec<Grant>> {
        let state = self.state.read().await;
        let mut out: Vec<Grant> = state
            .acls
            .iter()
            .filter(|(d, _, _)| *d == dataset)
            .map(|&(dataset, principal, permission)| Grant { dataset, principal, permission })
            .collect();
        out.sort();
        Ok(out)
    }

    async fn get_datasets(&self, ids: &[DatasetId]) -> Result<Vec<Dataset>> {
        let state = self.state.read().await;
        Ok(ids.iter().filter_map(|id| state.datasets.get(id).cloned()).collect())
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        let mut state = self.state.write().await;
        state.datasets.remove(&dataset);
        state.acls.retain(|(d, _, _)| *d != dataset);
        state.versions.remove(&dataset);
        Ok(())
    }
}

#[async_trait]
impl DataStore for MemoryRelationalStore {
    async fn upsert_data(&self, item: &DataItem) -> Result<DataItem> {
        let mut state = self.state.write().await;
        Ok(state.data.entry((item.dataset_id, item.id)).or_insert_with(|| item.clone()).clone())
    }

    async fn set_data_status(&self, dataset: DatasetId, id: Uuid, status: DataStatus) -> Result<()> {
        if let Some(item) = self.state.write().await.data.get_mut(&(dataset, id)) {
            item.status = status;
        }
        Ok(())
    }

    async fn list_data(&self, dataset: DatasetId) -> Result<Vec<DataItem>> {
        let state = self.state.read().await;
        let mut items: Vec<DataItem> = state.data.values().filter(|d| d.dataset_id == dataset).cloned().collect();
        items.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.name.cmp(&b.name)));
        Ok(items)
    }

    async fn count_data(&self, dataset: DatasetId) -> Result<u64> {
        Ok(self.state.read().await.data.keys().filter(|(d, _)| *d == dataset).count() as u64)
    }

    async fn quarantine(&self, dataset: DatasetId, item: Uuid, ids: &[Uuid]) -> Result<()> {
        self.state.write().await.quarantine.extend(ids.iter().map(|id| (dataset, *id, item)));
        Ok(())
    }

    async fn begin_forget(&self, dataset: DatasetId, item: Uuid, ids: &[Uuid]) -> Result<()> {
        let mut state = self.state.write().await;
        if let Some(row) = state.data.get_mut(&(dataset, item)) {
            row.status = DataStatus::Forgetting;
        }
        state.quarantine.extend(ids.iter().map(|id| (dataset, *id, item)));
        Ok(())
    }

    async fn quarantined(&self, dataset: DatasetId) -> Result<Vec<Uuid>> {
        let state = self.state.read().await;
        let ids: BTreeSet<Uuid> = state.quarantine.iter().filter(|(d, _, _)| *d == dataset).map(|r| r.1).collect();
        Ok(ids.into_iter().collect())
    }

    async fn quarantined_except(&self, dataset: DatasetId, item: Uuid) -> Result<Vec<Uuid>> {
        let state = self.state.read().await;
        let ids: BTreeSet<Uuid> =
            state.quarantine.iter().filter(|(d, _, i)| *d == dataset && *i != item).map(|r| r.1).collect();
        Ok(ids.into_iter().collect())
    }

    async fn complete_data(&self, dataset: DatasetId, items: &[Uuid]) -> Result<()> {
        let mut state = self.state.write().await;
        for id in items {
            if let Some(item) = state.data.get_mut(&(dataset, *id)) {
                item.status = DataStatus::Completed;
            }
        }
        state.quarantine.retain(|(d, _, item)| *d != dataset || !items.contains(item));
        Ok(())
    }

    async fn delete_data(&self, dataset: DatasetId, id: Uuid) -> Result<()> {
        let mut state = self.state.write().await;
        state.data.remove(&(dataset, id));
        state.quarantine.retain(|(d, _, item)| *d != dataset || *item != id);
        Ok(())
    }

    async fn delete_dataset_data(&self, dataset: DatasetId) -> Result<()> {
        let mut state = self.state.write().await;
        state.data.retain(|(d, _), _| *d != dataset);
        state.quarantine.retain(|(d, _, _)| *d != dataset);
        Ok(())
    }
}

#[async_trait]
impl PipelineRunStore for MemoryRelationalStore {
    async fn record_run(&self, run: &PipelineRun) -> Result<()> {
        self.state.write().await.runs.push(run.clone());
        Ok(())
    }

    async fn list_runs(&self, dataset: DatasetId) -> Result<Vec<PipelineRun>> {
        let state = self.state.read().await;
        Ok(state.runs.iter().filter(|r| r.dataset_id == dataset).cloned().collect())
    }

    async fn delete_dataset_runs(&self, dataset: DatasetId) -> Result<()> {
        self.state.write().await.runs.retain(|r| r.dataset_id != dataset);
        Ok(())
    }
}

#[async_trait]
impl SearchHistoryStore for MemoryRelationalStore {
    async fn record_search(&self, record: &SearchRecord) -> Result<()> {
        let now = now_millis();
        let mut state = self.state.write().await;
        for (dataset, answer) in &record.answers {
            for (text, user) in [(&record.query_text, "user"), (answer, "system")] {
                let row = HistoryRow {
                    id: Uuid::now_v7(),
                    text: text.clone(),
                    user: user.into(),
                    dataset_id: *dataset,
                    created_at: now,
                };
                state.history.push((record.user_id, row));
            }
        }
        Ok(())
    }

    async fn search_history(&self, user_id: Uuid) -> Result<Vec<HistoryRow>> {
        let state = self.state.read().await;
        let mut rows: Vec<HistoryRow> =
            state.history.iter().filter(|(u, _)| *u == user_id).map(|(_, r)| r.clone()).collect();
        rows.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(rows)
    }
}

#[async_trait]
impl CredentialStore for MemoryRelationalStore {
    async fn add_api_key(&self, key: &NewApiKey, limit: usize) -> Result<Option<ApiKey>> {
        let mut state = self.state.write().await;
        if state.api_keys.iter().filter(|(_, k)| k.user_id == key.user_id).count() >= limit {
            return Ok(None);
        }
        let listed = key.listed();
        state.api_keys.push((key.key_hash.clone(), listed.clone()));
        Ok(Some(listed))
    }

    async fn api_keys(&self, user_id: Uuid) -> Result<Vec<ApiKey>> {
        let state = self.state.read().await;
        Ok(state.api_keys.iter().filter(|(_, k)| k.user_id == user_id).map(|(_, k)| k.clone()).collect())
    }

    async fn delete_api_key(&self, user_id: Uuid, id: Uuid) -> Result<bool> {
        let mut state = self.state.write().await;
        let before = state.api_keys.len();
        state.api_keys.retain(|(_, k)| !(k.user_id == user_id && k.id == id));
        Ok(state.api_keys.len() < before)
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKey>> {
        let state = self.state.read().await;
        Ok(state.api_keys.iter().find(|(h, _)| h == key_hash).map(|(_, k)| k.clone()))
    }

    async fn touch_api_key(&self, id: Uuid, at: EpochMillis) -> Result<()> {
        let mut state = self.state.write().await;
        for (_, k) in state.api_keys.iter_mut().filter(|(_, k)| k.id == id) {
            k.last_used_at = Some(at);
        }
        Ok(())
    }

    async fn set_password_hash(&self, user_id: Uuid, hash: &str) -> Result<()> {
        self.state.write().await.passwords.insert(user_id, hash.to_string());
        Ok(())
    }

    async fn password_hash(&self, user_id: Uuid) -> Result<Option<String>> {
        Ok(self.state.read().await.passwords.get(&user_id).cloned())
    }
}
