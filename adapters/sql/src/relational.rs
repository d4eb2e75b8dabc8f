use async_trait::async_trait;
use recall_core::ports::{
    CredentialStore, DataStore, DataVersionBump, DataVersions, DatasetStore, PipelineRunStore, RelationalStore,
    ScopeRead, SearchHistoryStore, UserStore,
};
use recall_core::{
    ids, now_millis, ApiKey, DataItem, DataStatus, Dataset, DatasetAccess, DatasetId, EpochMillis, Grant,
    GraphBuildStatus, HistoryRow, NewApiKey, Permission, PipelineRun, PipelineRunStatus, RecallError, Result,
    SearchRecord, User,
};
use sea_orm::{ConnectionTrait, QueryResult, TransactionTrait, Value};
use uuid::Uuid;

use crate::history::HistoryWriter;
use crate::{db_err, in_list, SqlDatabase};

/// Users, datasets, grants, data items and pipeline runs on SQL tables.
#[derive(Clone)]
pub struct SqlRelationalStore {
    db: SqlDatabase,
    history: HistoryWriter,
}

impl SqlRelationalStore {
    pub fn new(db: SqlDatabase) -> Self {
        Self { db, history: HistoryWriter::default() }
    }
}

impl RelationalStore for SqlRelationalStore {
    fn name(&self) -> &'static str {
        "sql-relational"
    }
}

fn uuid_col(row: &QueryResult, col: &str) -> Result<Uuid> {
    let s: String = row.try_get("", col).map_err(db_err)?;
    Uuid::parse_str(&s).map_err(|e| RecallError::backend_msg(format!("corrupt uuid in column {col}: {e}")))
}

fn opt_uuid_col(row: &QueryResult, col: &str) -> Result<Option<Uuid>> {
    let s: Option<String> = row.try_get("", col).map_err(db_err)?;
    s.map(|s| Uuid::parse_str(&s).map_err(|e| RecallError::backend_msg(format!("corrupt uuid in column {col}: {e}"))))
        .transpose()
}

fn user_from_row(row: &QueryResult) -> Result<User> {
    Ok(User {
        id: uuid_col(row, "id")?,
        email: row.try_get("", "email").map_err(db_err)?,
        tenant_id: opt_uuid_col(row, "tenant_id")?,
    })
}

fn dataset_from_row(row: &QueryResult) -> Result<Dataset> {
    Ok(Dataset {
        id: DatasetId(uuid_col(row, "id")?),
        name: row.try_get("", "name").map_err(db_err)?,
        owner_id: uuid_col(row, "owner_id")?,
        tenant_id: opt_uuid_col(row, "tenant_id")?,
        created_at: row.try_get("", "created_at").map_err(db_err)?,
    })
}

fn data_from_row(row: &QueryResult) -> Result<DataItem> {
    let status: String = row.try_get("", "status").map_err(db_err)?;
    Ok(DataItem {
        id: uuid_col(row, "id")?,
        dataset_id: DatasetId(uuid_col(row, "dataset_id")?),
        name: row.try_get("", "name").map_err(db_err)?,
        extension: row.try_get("", "extension").map_err(db_err)?,
        mime_type: row.try_get("", "mime_type").map_err(db_err)?,
        content_hash: row.try_get("", "content_hash").map_err(db_err)?,
        raw_data_location: row.try_get("", "raw_data_location").map_err(db_err)?,
        owner_id: uuid_col(row, "owner_id")?,
        status: DataStatus::parse(&status),
        created_at: row.try_get("", "created_at").map_err(db_err)?,
    })
}

fn run_from_row(row: &QueryResult) -> Result<PipelineRun> {
    let status: Option<String> = row.try_get("", "status").map_err(db_err)?;
    let status = status
        .as_deref()
        .and_then(PipelineRunStatus::parse)
        .ok_or_else(|| RecallError::backend_msg("pipeline run with an unknown status"))?;
    let info: String = row.try_get("", "run_info").map_err(db_err)?;
    let pipeline_name: Option<String> = row.try_get("", "pipeline_name").map_err(db_err)?;
    Ok(PipelineRun {
        id: uuid_col(row, "id")?,
        pipeline_run_id: uuid_col(row, "pipeline_run_id")?,
        pipeline_name: pipeline_name.unwrap_or_default(),
        dataset_id: DatasetId(uuid_col(row, "dataset_id")?),
        status,
        error_class: row.try_get("", "error_class").map_err(db_err)?,
        error_message: row.try_get("", "error_message").map_err(db_err)?,
        run_info: serde_json::from_str(&info).unwrap_or(serde_json::Value::Null),
        created_at: row.try_get("", "created_at").map_err(db_err)?,
    })
}

/// One grant row; granting twice is a no-op.
const GRANT_SQL: &str =
    "INSERT INTO acls (principal_id, dataset_id, permission) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";

fn grant_values(dataset: DatasetId, principal: Uuid, permission: Permission) -> Vec<Value> {
    vec![principal.to_string().into(), dataset.to_string().into(), permission.as_str().into()]
}

fn version_col(row: &QueryResult) -> Result<u64> {
    let v: i64 = row.try_get("", "version").map_err(db_err)?;
    u64::try_from(v).map_err(|_| RecallError::backend_msg(format!("corrupt data version {v}")))
}

fn permission_col(row: &QueryResult) -> Result<Permission> {
    let name: String = row.try_get("", "permission").map_err(db_err)?;
    name.parse().map_err(|_| RecallError::backend_msg(format!("corrupt grant: unknown permission '{name}'")))
}

const DATASET_COLS: &str = "id, name, owner_id, tenant_id, created_at";
const DATA_COLS: &str =
    "dataset_id, id, name, extension, mime_type, content_hash, raw_data_location, owner_id, status, created_at";

impl SqlRelationalStore {
    async fn query(&self, sql: &str, values: Vec<Value>) -> Result<Vec<QueryResult>> {
        self.db.conn.query_all_raw(self.db.stmt(sql, values)).await.map_err(db_err)
    }

    async fn get_dataset(&self, id: DatasetId) -> Result<Option<Dataset>> {
        let rows = self
            .query(&format!("SELECT {DATASET_COLS} FROM datasets WHERE id = $1"), vec![id.to_string().into()])
            .await?;
        rows.first().map(dataset_from_row).transpose()
    }

    /// Quarantine rows for `item`, many per statement, inside `txn`.
    async fn insert_quarantine(
        &self,
        txn: &sea_orm::DatabaseTransaction,
        dataset: DatasetId,
        item: Uuid,
        ids: &[Uuid],
    ) -> Result<()> {
        for part in ids.chunks(QUARANTINE_ROWS) {
            let sql = format!(
                "INSERT INTO data_quarantine (dataset_id, node_id, data_id) VALUES {} ON CONFLICT DO NOTHING",
                crate::placeholders(part.len(), 3)
            );
            let values: Vec<Value> = part
                .iter()
                .flat_map(|id| [dataset.to_string().into(), id.to_string().into(), item.to_string().into()])
                .collect();
            txn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        }
        Ok(())
    }
}

#[async_trait]
impl UserStore for SqlRelationalStore {
    async fn find_user(&self, email: &str) -> Result<Option<User>> {
        let rows = self.query("SELECT id, email, tenant_id FROM users WHERE email = $1", vec![email.into()]).await?;
        rows.first().map(user_from_row).transpose()
    }

    async fn ensure_user(&self, email: &str) -> Result<User> {
        // Concurrent callers race on the unique email: DO NOTHING, then read back.
        self.db
            .conn
            .execute_raw(self.db.stmt(
                "INSERT INTO users (id, email, tenant_id, created_at) VALUES ($1, $2, NULL, $3) \
                 ON CONFLICT (email) DO NOTHING",
                vec![Uuid::new_v4().to_string().into(), email.into(), now_millis().into()],
            ))
            .await
            .map_err(db_err)?;
        self.find_user(email)
            .await?
            .ok_or_else(|| RecallError::backend_msg(format!("user {email} vanished after insert")))
    }

    async fn get_users(&self, ids: &[Uuid]) -> Result<Vec<User>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!("SELECT id, email, tenant_id FROM users WHERE id IN ({})", in_list(1, ids.len()));
        let rows = self.query(&sql, ids.iter().map(|id| Value::from(id.to_string())).collect()).await?;
        rows.iter().map(user_from_row).collect()
    }
}

#[async_trait]
impl DatasetStore for SqlRelationalStore {
    async fn ensure_dataset(&self, owner: &User, name: &str) -> Result<Dataset> {
        let id = DatasetId(ids::dataset_id(name, owner.id));
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        txn.execute_raw(self.db.stmt(
            "INSERT INTO datasets (id, name, owner_id, tenant_id, created_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (id) DO NOTHING",
            vec![
                id.to_string().into(),
                name.into(),
                owner.id.to_string().into(),
                owner.tenant_id.map(|t| t.to_string()).into(),
                now_millis().into(),
            ],
        ))
        .await
        .map_err(db_err)?;
        for permission in Permission::ALL {
            txn.execute_raw(self.db.stmt(GRANT_SQL, grant_values(id, owner.id, permission))).await.map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)?;
        self.get_dataset(id)
            .await?
            .ok_or_else(|| RecallError::backend_msg(format!("dataset {name} vanished after insert")))
    }

    async fn owned_datasets_by_name(&self, owner: &User, names: &[String]) -> Result<Vec<Dataset>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {DATASET_COLS} FROM datasets WHERE owner_id = $1 AND name IN ({}) ORDER BY created_at, name",
            in_list(2, names.len())
        );
        let mut values: Vec<Value> = vec![owner.id.to_string().into()];
        values.extend(names.iter().map(|n| Value::from(n.clone())));
        let rows = self.query(&sql, values).await?;
        Ok(rows
            .iter()
            .map(dataset_from_row)
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|d| d.tenant_id == owner.tenant_id)
            .collect())
    }

    async fn accessible_datasets(&self, user: &User) -> Result<Vec<DatasetAccess>> {
        let sql = "SELECT d.id, d.name, d.owner_id, d.tenant_id, d.created_at, a.permission FROM datasets d \
                   JOIN acls a ON a.dataset_id = d.id \
                   WHERE a.principal_id = $1 ORDER BY d.created_at, d.name, d.id";
        let rows = self.query(sql, vec![user.id.to_string().into()]).await?;
        let mut out: Vec<DatasetAccess> = Vec::new();
        for row in &rows {
            let dataset = dataset_from_row(row)?;
            if dataset.tenant_id != user.tenant_id {
                continue;
            }
            let permission = permission_col(row)?;
            match out.last_mut() {
                Some(last) if last.dataset.id == dataset.id => last.permissions.push(permission),
                _ => out.push(DatasetAccess { dataset, permissions: vec![permission] }),
            }
        }
        for access in &mut out {
            access.permissions.sort();
            access.permissions.dedup();
        }
        Ok(out)
    }

    async fn grant(&self, dataset: DatasetId, principal: Uuid, permission: Permission) -> Result<()> {
        self.db
            .conn
            .execute_raw(self.db.stmt(GRANT_SQL, grant_values(dataset, principal, permission)))
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn revoke(&self, dataset: DatasetId, principal: Uuid, permission: Permission) -> Result<()> {
        self.db
            .conn
            .execute_raw(self.db.stmt(
                "DELETE FROM acls WHERE principal_id = $1 AND dataset_id = $2 AND permission = $3",
                vec![principal.to_string().into(), dataset.to_string().into(), permission.as_str().into()],
            ))
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn data_versions(&self, datasets: &[DatasetId]) -> Result<DataVersions> {
        // One round trip: the store's row, then one row per dataset.
        let mut sql = "SELECT 'store' AS id, version FROM store_version WHERE id = 1".to_string();
        if !datasets.is_empty() {
            sql.push_str(&format!(
                " UNION ALL SELECT id, data_version AS version FROM datasets WHERE id IN ({})",
                in_list(1, datasets.len())
            ));
        }
        let rows = self.query(&sql, datasets.iter().map(|d| Value::from(d.to_string())).collect()).await?;
        let mut out = DataVersions::default();
        for row in &rows {
            let id: String = row.try_get("", "id").map_err(db_err)?;
            let version = version_col(row)?;
            if id == "store" {
                out.store = version;
            } else {
                let id =
                    Uuid::parse_str(&id).map_err(|e| RecallError::backend_msg(format!("corrupt dataset id: {e}")))?;
                out.datasets.push((DatasetId(id), version));
            }
        }
        Ok(out)
    }

    async fn scope_read(&self, user: &User, names: &[String], permission: Permission) -> Result<ScopeRead> {
        // One statement, so one snapshot: the store's row, the permitted
        // datasets, then the user's own datasets by name, each with its version.
        let mut sql = String::from(
            "SELECT 'store' AS kind, NULL AS id, NULL AS name, NULL AS owner_id, NULL AS tenant_id, \
             NULL AS created_at, version FROM store_version WHERE id = 1 \
             UNION ALL SELECT 'permitted', d.id, d.name, d.owner_id, d.tenant_id, d.created_at, d.data_version \
             FROM datasets d JOIN acls a ON a.dataset_id = d.id WHERE a.principal_id = $1 AND a.permission = $2",
        );
        if !names.is_empty() {
            sql.push_str(&format!(
                " UNION ALL SELECT 'named', {DATASET_COLS}, data_version FROM datasets \
                 WHERE owner_id = $1 AND name IN ({})",
                in_list(3, names.len())
            ));
        }
        let mut values: Vec<Value> = vec![user.id.to_string().into(), permission.as_str().into()];
        values.extend(names.iter().map(|n| Value::from(n.clone())));
        let mut out = ScopeRead::default();
        for row in &self.query(&sql, values).await? {
            let kind: String = row.try_get("", "kind").map_err(db_err)?;
            let version = version_col(row)?;
            if kind == "store" {
                out.versions.store = version;
                continue;
            }
            let dataset = dataset_from_row(row)?;
            if dataset.tenant_id != user.tenant_id {
                continue;
            }
            out.versions.datasets.push((dataset.id, version));
            if kind == "named" {
                out.named.push(dataset);
            } else {
                out.permitted.push(dataset);
            }
        }
        let order = |a: &Dataset, b: &Dataset| (a.created_at, &a.name, a.id).cmp(&(b.created_at, &b.name, b.id));
        out.permitted.sort_by(order);
        out.named.sort_by(order);
        // A dataset both permitted and named came twice, with one version.
        out.versions.datasets.sort_unstable();
        out.versions.datasets.dedup_by_key(|(id, _)| *id);
        Ok(out)
    }

    async fn bump_data_version(&self, dataset: DatasetId, seen: Option<u64>) -> Result<DataVersionBump> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        let bump = "UPDATE store_version SET version = version + 1 WHERE id = 1";
        let mut bumped = None;
        if let Some(seen) = seen.and_then(|s| i64::try_from(s).ok()) {
            let sql = format!("{bump} AND version = $1 RETURNING version");
            bumped = txn.query_one_raw(self.db.stmt(&sql, vec![seen.into()])).await.map_err(db_err)?;
        }
        let unseen_writes = bumped.is_none();
        if bumped.is_none() {
            bumped =
                txn.query_one_raw(self.db.stmt(&format!("{bump} RETURNING version"), vec![])).await.map_err(db_err)?;
        }
        let row = bumped.ok_or_else(|| RecallError::backend_msg("the store_version row is missing"))?;
        let version = version_col(&row)?;
        txn.execute_raw(self.db.stmt(
            "UPDATE datasets SET data_version = $1 WHERE id = $2",
            vec![i64::try_from(version).unwrap_or(i64::MAX).into(), dataset.to_string().into()],
        ))
        .await
        .map_err(db_err)?;
        txn.commit().await.map_err(db_err)?;
        Ok(DataVersionBump { version, unseen_writes })
    }

    async fn grants(&self, dataset: DatasetId) -> Result<Vec<Grant>> {
        let rows = self
            .query("SELECT principal_id, permission FROM acls WHERE dataset_id = $1", vec![dataset.to_string().into()])
            .await?;
        let mut out = rows
            .iter()
            .map(|row| {
                Ok(Grant { dataset, principal: uuid_col(row, "principal_id")?, permission: permission_col(row)? })
            })
            .collect::<Result<Vec<_>>>()?;
        out.sort();
        Ok(out)
    }

    async fn get_datasets(&self, ids: &[DatasetId]) -> Result<Vec<Dataset>> {
        let mut out = Vec::new();
        for id in ids {
            if let Some(d) = self.get_dataset(*id).await? {
                out.push(d);
            }
        }
        Ok(out)
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        for sql in ["DELETE FROM acls WHERE dataset_id = $1", "DELETE FROM datasets WHERE id = $1"] {
            txn.execute_raw(self.db.stmt(sql, vec![dataset.to_string().into()])).await.map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)
    }
}

/// Quarantine rows per statement (3 parameters each; SQLite allows 32 766).
const QUARANTINE_ROWS: usize = 500;

#[async_trait]
impl DataStore for SqlRelationalStore {
    async fn upsert_data(&self, item: &DataItem) -> Result<DataItem> {
        let sql = format!(
            "INSERT INTO data ({DATA_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (dataset_id, id) DO NOTHING"
        );
        let values: Vec<Value> = vec![
            item.dataset_id.to_string().into(),
            item.id.to_string().into(),
            item.name.clone().into(),
            item.extension.clone().into(),
            item.mime_type.clone().into(),
            item.content_hash.clone().into(),
            item.raw_data_location.clone().into(),
            item.owner_id.to_string().into(),
            item.status.as_str().into(),
            item.created_at.into(),
        ];
        self.db.conn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        let rows = self
            .query(
                &format!("SELECT {DATA_COLS} FROM data WHERE dataset_id = $1 AND id = $2"),
                vec![item.dataset_id.to_string().into(), item.id.to_string().into()],
            )
            .await?;
        rows.first()
            .map(data_from_row)
            .transpose()?
            .ok_or_else(|| RecallError::backend_msg("data item vanished after insert"))
    }

    async fn set_data_status(&self, dataset: DatasetId, id: Uuid, status: DataStatus) -> Result<()> {
        self.db
            .conn
            .execute_raw(self.db.stmt(
                "UPDATE data SET status = $1 WHERE dataset_id = $2 AND id = $3",
                vec![status.as_str().into(), dataset.to_string().into(), id.to_string().into()],
            ))
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn list_data(&self, dataset: DatasetId) -> Result<Vec<DataItem>> {
        let rows = self
            .query(
                &format!("SELECT {DATA_COLS} FROM data WHERE dataset_id = $1 ORDER BY created_at, name"),
                vec![dataset.to_string().into()],
            )
            .await?;
        rows.iter().map(data_from_row).collect()
    }

    async fn count_data(&self, dataset: DatasetId) -> Result<u64> {
        let rows = self
            .query("SELECT COUNT(*) AS n FROM data WHERE dataset_id = $1", vec![dataset.to_string().into()])
            .await?;
        let n: i64 = rows.first().map(|r| r.try_get("", "n")).transpose().map_err(db_err)?.unwrap_or(0);
        Ok(n.max(0) as u64)
    }

    async fn quarantine(&self, dataset: DatasetId, item: Uuid, ids: &[Uuid]) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        self.insert_quarantine(&txn, dataset, item, ids).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn begin_forget(&self, dataset: DatasetId, item: Uuid, ids: &[Uuid]) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        self.insert_quarantine(&txn, dataset, item, ids).await?;
        let sql = "UPDATE data SET status = $1 WHERE dataset_id = $2 AND id = $3";
        let values = vec![DataStatus::Forgetting.as_str().into(), dataset.to_string().into(), item.to_string().into()];
        txn.execute_raw(self.db.stmt(sql, values)).await.map_err(db_err)?;
        txn.commit().await.map_err(db_err)
    }

    async fn quarantined(&self, dataset: DatasetId) -> Result<Vec<Uuid>> {
        let rows = self
            .query(
                "SELECT DISTINCT node_id FROM data_quarantine WHERE dataset_id = $1",
                vec![dataset.to_string().into()],
            )
            .await?;
        rows.iter().map(|r| uuid_col(r, "node_id")).collect()
    }

    async fn quarantined_except(&self, dataset: DatasetId, item: Uuid) -> Result<Vec<Uuid>> {
        let rows = self
            .query(
                "SELECT DISTINCT node_id FROM data_quarantine WHERE dataset_id = $1 AND data_id <> $2",
                vec![dataset.to_string().into(), item.to_string().into()],
            )
            .await?;
        rows.iter().map(|r| uuid_col(r, "node_id")).collect()
    }

    async fn complete_data(&self, dataset: DatasetId, items: &[Uuid]) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        for part in items.chunks(QUARANTINE_ROWS) {
            let ids: Vec<Value> = part.iter().map(|id| Value::from(id.to_string())).collect();
            let mut update = vec![Value::from(DataStatus::Completed.as_str()), dataset.to_string().into()];
            update.extend(ids.iter().cloned());
            let sql =
                format!("UPDATE data SET status = $1 WHERE dataset_id = $2 AND id IN ({})", in_list(3, part.len()));
            txn.execute_raw(self.db.stmt(&sql, update)).await.map_err(db_err)?;
            let mut delete = vec![Value::from(dataset.to_string())];
            delete.extend(ids);
            let sql = format!(
                "DELETE FROM data_quarantine WHERE dataset_id = $1 AND data_id IN ({})",
                in_list(2, part.len())
            );
            txn.execute_raw(self.db.stmt(&sql, delete)).await.map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)
    }

    async fn delete_data(&self, dataset: DatasetId, id: Uuid) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        for sql in [
            "DELETE FROM data_quarantine WHERE dataset_id = $1 AND data_id = $2",
            "DELETE FROM data WHERE dataset_id = $1 AND id = $2",
        ] {
            txn.execute_raw(self.db.stmt(sql, vec![dataset.to_string().into(), id.to_string().into()]))
                .await
                .map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)
    }

    async fn delete_dataset_data(&self, dataset: DatasetId) -> Result<()> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        for sql in ["DELETE FROM data_quarantine WHERE dataset_id = $1", "DELETE FROM data WHERE dataset_id = $1"] {
            txn.execute_raw(self.db.stmt(sql, vec![dataset.to_string().into()])).await.map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)
    }
}

#[async_trait]
impl PipelineRunStore for SqlRelationalStore {
    async fn record_run(&self, run: &PipelineRun) -> Result<()> {
        self.db
            .conn
            .execute_raw(self.db.stmt(
                "INSERT INTO pipeline_runs (id, pipeline_run_id, pipeline_name, dataset_id, status, error_class, \
                 error_message, run_info, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                vec![
                    run.id.to_string().into(),
                    run.pipeline_run_id.to_string().into(),
                    run.pipeline_name.clone().into(),
                    run.dataset_id.to_string().into(),
                    run.status.as_str().into(),
                    run.error_class.clone().into(),
                    run.error_message.clone().into(),
                    run.run_info.to_string().into(),
                    run.created_at.into(),
                ],
            ))
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn list_runs(&self, dataset: DatasetId) -> Result<Vec<PipelineRun>> {
        let rows = self
            .query(
                "SELECT id, pipeline_run_id, pipeline_name, dataset_id, status, error_class, error_message, run_info, \
                 created_at FROM pipeline_runs WHERE dataset_id = $1 AND pipeline_name IS NOT NULL \
                 ORDER BY created_at, id",
                vec![dataset.to_string().into()],
            )
            .await?;
        rows.iter().map(run_from_row).collect()
    }

    /// One query on the `pipeline_runs_probe` index: the best run by
    /// (completed graph run, errored graph run, any run), newest first.
    async fn graph_build_status(&self, datasets: &[DatasetId]) -> Result<GraphBuildStatus> {
        if datasets.is_empty() {
            return Ok(GraphBuildStatus::NeverBuilt);
        }
        let sql = format!(
            "SELECT status, pipeline_name, error_class, error_message FROM pipeline_runs \
             WHERE dataset_id IN ({}) AND pipeline_name IS NOT NULL \
             ORDER BY CASE WHEN pipeline_name <> '{add}' AND status = '{done}' THEN 0 \
                           WHEN pipeline_name <> '{add}' AND status = '{failed}' THEN 1 ELSE 2 END, \
                      created_at DESC, id DESC LIMIT 1",
            in_list(1, datasets.len()),
            add = recall_core::pipelines::ADD,
            done = PipelineRunStatus::Completed.as_str(),
            failed = PipelineRunStatus::Errored.as_str(),
        );
        let rows = self.query(&sql, datasets.iter().map(|d| d.to_string().into()).collect()).await?;
        let Some(row) = rows.first() else { return Ok(GraphBuildStatus::NeverBuilt) };
        let status: Option<String> = row.try_get("", "status").map_err(db_err)?;
        let pipeline: Option<String> = row.try_get("", "pipeline_name").map_err(db_err)?;
        let graph_run = pipeline.as_deref() != Some(recall_core::pipelines::ADD);
        Ok(match status.as_deref().and_then(PipelineRunStatus::parse) {
            Some(PipelineRunStatus::Errored) if graph_run => GraphBuildStatus::BuildFailed {
                error_class: row.try_get("", "error_class").map_err(db_err)?,
                error_message: row.try_get("", "error_message").map_err(db_err)?,
            },
            _ => GraphBuildStatus::Warm,
        })
    }

    async fn delete_dataset_runs(&self, dataset: DatasetId) -> Result<()> {
        self.db
            .conn
            .execute_raw(
                self.db.stmt("DELETE FROM pipeline_runs WHERE dataset_id = $1", vec![dataset.to_string().into()]),
            )
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

#[async_trait]
impl SearchHistoryStore for SqlRelationalStore {
    /// Group commit with the other recalls in flight (crate::history).
    async fn record_search(&self, record: &SearchRecord) -> Result<()> {
        self.history.record(&self.db, record).await
    }

    async fn search_history(&self, user_id: Uuid) -> Result<Vec<HistoryRow>> {
        let rows = self
            .query(
                "SELECT id, text, 'user' AS who, dataset_id, created_at FROM queries WHERE user_id = $1 \
                 UNION ALL \
                 SELECT id, value AS text, 'system' AS who, dataset_id, created_at FROM results WHERE user_id = $1 \
                 ORDER BY created_at, id",
                vec![user_id.to_string().into()],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let dataset: Option<String> = row.try_get("", "dataset_id").map_err(db_err)?;
                Ok(HistoryRow {
                    id: uuid_col(row, "id")?,
                    text: row.try_get("", "text").map_err(db_err)?,
                    user: row.try_get("", "who").map_err(db_err)?,
                    dataset_id: dataset
                        .map(|d| Uuid::parse_str(&d).map(DatasetId))
                        .transpose()
                        .map_err(|e| RecallError::backend_msg(format!("corrupt dataset id in history: {e}")))?,
                    created_at: row.try_get("", "created_at").map_err(db_err)?,
                })
            })
            .collect()
    }
}

const API_KEY_COLUMNS: &str = "id, user_id, label, name, created_at, last_used_at";

fn api_key_from_row(row: &QueryResult) -> Result<ApiKey> {
    Ok(ApiKey {
        id: uuid_col(row, "id")?,
        user_id: uuid_col(row, "user_id")?,
        label: row.try_get("", "label").map_err(db_err)?,
        name: row.try_get("", "name").map_err(db_err)?,
        created_at: row.try_get("", "created_at").map_err(db_err)?,
        last_used_at: row.try_get("", "last_used_at").map_err(db_err)?,
    })
}

#[async_trait]
impl CredentialStore for SqlRelationalStore {
    /// In one transaction that first writes the user's row: concurrent adds
    /// for one user queue behind it, so the count they check is exact.
    async fn add_api_key(&self, key: &NewApiKey, limit: usize) -> Result<Option<ApiKey>> {
        let txn = self.db.conn.begin().await.map_err(db_err)?;
        let user: Value = key.user_id.to_string().into();
        txn.execute_raw(self.db.stmt("UPDATE users SET email = email WHERE id = $1", vec![user.clone()]))
            .await
            .map_err(db_err)?;
        let row = txn
            .query_one_raw(self.db.stmt("SELECT COUNT(*) AS n FROM api_keys WHERE user_id = $1", vec![user.clone()]))
            .await
            .map_err(db_err)?;
        let held: i64 = row.map(|r| r.try_get("", "n")).transpose().map_err(db_err)?.unwrap_or(0);
        if usize::try_from(held).unwrap_or(usize::MAX) >= limit {
            return Ok(None);
        }
        txn.execute_raw(self.db.stmt(
            "INSERT INTO api_keys (id, user_id, key_hash, label, name, created_at, last_used_at) \
             VALUES ($1, $2, $3, $4, $5, $6, NULL)",
            vec![
                key.id.to_string().into(),
                user,
                key.key_hash.clone().into(),
                key.label.clone().into(),
                key.name.clone().into(),
                key.created_at.into(),
            ],
        ))
        .await
        .map_err(db_err)?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(key.listed()))
    }

    async fn api_keys(&self, user_id: Uuid) -> Result<Vec<ApiKey>> {
        let sql = format!("SELECT {API_KEY_COLUMNS} FROM api_keys WHERE user_id = $1 ORDER BY created_at, id");
        self.query(&sql, vec![user_id.to_string().into()]).await?.iter().map(api_key_from_row).collect()
    }

    async fn delete_api_key(&self, user_id: Uuid, id: Uuid) -> Result<bool> {
        let done = self
            .db
            .conn
            .execute_raw(self.db.stmt(
                "DELETE FROM api_keys WHERE user_id = $1 AND id = $2",
                vec![user_id.to_string().into(), id.to_string().into()],
            ))
            .await
            .map_err(db_err)?;
        Ok(done.rows_affected() > 0)
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKey>> {
        let sql = format!("SELECT {API_KEY_COLUMNS} FROM api_keys WHERE key_hash = $1");
        self.query(&sql, vec![key_hash.into()]).await?.first().map(api_key_from_row).transpose()
    }

    async fn touch_api_key(&self, id: Uuid, at: EpochMillis) -> Result<()> {
        self.db
            .conn
            .execute_raw(
                self.db.stmt(
                    "UPDATE api_keys SET last_used_at = $1 WHERE id = $2",
                    vec![at.into(), id.to_string().into()],
                ),
            )
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn set_password_hash(&self, user_id: Uuid, hash: &str) -> Result<()> {
        self.db
            .conn
            .execute_raw(self.db.stmt(
                "UPDATE users SET hashed_password = $1 WHERE id = $2",
                vec![hash.into(), user_id.to_string().into()],
            ))
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn password_hash(&self, user_id: Uuid) -> Result<Option<String>> {
        let rows =
            self.query("SELECT hashed_password FROM users WHERE id = $1", vec![user_id.to_string().into()]).await?;
        Ok(rows
            .first()
            .map(|r| r.try_get::<Option<String>>("", "hashed_password"))
            .transpose()
            .map_err(db_err)?
            .flatten())
    }
}
