//! One module per `recall` command: its clap arguments beside its handler.
//! A handler parses its arguments into a request of the application layer
//! (`recall_api::Application`), calls it for the caller and prints the
//! outcome; what the use case does is decided there (docs/application.md).

pub(crate) mod api_key;
pub(crate) mod cognify;
pub(crate) mod datasets;
pub(crate) mod doctor;
pub(crate) mod eval;
pub(crate) mod forget;
pub(crate) mod graph;
pub(crate) mod history;
pub(crate) mod improve;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
pub(crate) mod recall;
pub(crate) mod reembed;
pub(crate) mod remember;
pub(crate) mod route;
#[cfg(feature = "server")]
pub(crate) mod serve;
pub(crate) mod session;
pub(crate) mod share;
pub(crate) mod skills;
pub(crate) mod user;

use ::recall::{build_engine, caller, OpenMode, Settings};
use indicatif::{ProgressBar, ProgressStyle};
use recall_api::{Application, RememberProgress};
use recall_core::{DatasetId, DatasetRef, Permission, RecallError, Result, User};
use uuid::Uuid;

/// Who a command acts for, and how to open the application for it (the
/// engine is built here, from the settings, and nowhere else in commands/).
#[derive(Clone, Copy)]
pub(crate) struct Who<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) email: Option<&'a str>,
}

impl Who<'_> {
    /// For writes: storage and the user are created when missing.
    pub(crate) async fn writer(self) -> Result<(Application, User)> {
        let (engine, _) = build_engine(self.settings, OpenMode::Create).await?;
        let user = caller(&engine, self.settings, self.email, true).await?;
        let user = user.ok_or_else(|| RecallError::backend_msg("the user vanished after it was created"))?;
        Ok((::recall::application(engine, self.settings)?, user))
    }

    /// For commands that act for no user (creating one).
    pub(crate) async fn anyone(self) -> Result<Application> {
        let (engine, _) = build_engine(self.settings, OpenMode::Create).await?;
        ::recall::application(engine, self.settings)
    }

    /// For reads: `None` when there is no storage or no such user yet (they
    /// can own nothing and were shared nothing).
    pub(crate) async fn reader(self) -> Result<Option<(Application, User)>> {
        let engine = match build_engine(self.settings, OpenMode::ExistingOnly).await {
            Ok((engine, _)) => engine,
            Err(RecallError::RecallPrecondition) => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(user) = caller(&engine, self.settings, self.email, false).await? else { return Ok(None) };
        Ok(Some((::recall::application(engine, self.settings)?, user)))
    }

    /// A listing for the caller: empty when there is no storage or no such
    /// user yet (they own nothing and were shared nothing).
    pub(crate) async fn list<T, F, Fut>(self, read: F) -> Result<Vec<T>>
    where
        F: FnOnce(Application, User) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<T>>>,
    {
        match self.reader().await? {
            Some((app, user)) => read(app, user).await,
            None => Ok(Vec::new()),
        }
    }

    /// For commands on one existing dataset: no storage or no user means the
    /// dataset is not there for this caller (404 by name, 403 by id).
    pub(crate) async fn reader_of(self, target: &DatasetRef) -> Result<(Application, User)> {
        self.reader().await?.ok_or_else(|| match target {
            DatasetRef::Name(name) => RecallError::DatasetNotFound { missing: vec![name.clone()] },
            DatasetRef::Id(_) => RecallError::permission_denied(Permission::Read),
        })
    }
}

/// One dataset: by name (among your own datasets) or by id (any dataset
/// shared with you).
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct Target {
    #[arg(long, short)]
    dataset: Option<String>,
    #[arg(long, value_name = "UUID")]
    dataset_id: Option<Uuid>,
}

impl Target {
    pub(crate) fn get(&self) -> DatasetRef {
        match (&self.dataset, self.dataset_id) {
            (_, Some(id)) => DatasetRef::Id(DatasetId(id)),
            (Some(name), None) => DatasetRef::Name(name.clone()),
            // clap's group makes one of them required.
            (None, None) => DatasetRef::Name(String::new()),
        }
    }
}

/// The arguments of a command whose only flag is `--json`.
#[derive(clap::Args)]
pub(crate) struct JsonOutput {
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A repeatable flag given no times is "not set".
pub(crate) fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let s = serde_json::to_string_pretty(value).map_err(|e| RecallError::backend_msg(e.to_string()))?;
    println!("{s}");
    Ok(())
}

/// One progress bar, reset at each stage ("add", then "cognify").
pub(crate) struct Bar(pub(crate) ProgressBar);

impl Bar {
    pub(crate) fn new(hidden: bool) -> Self {
        let bar = ProgressBar::new(0);
        if hidden {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        if let Ok(style) = ProgressStyle::with_template("{prefix:>8} {bar:30} {pos}/{len} {msg}") {
            bar.set_style(style);
        }
        Self(bar)
    }
}

impl recall_api::ReembedProgress for Bar {
    fn collection(&self, name: &str, total: usize, done: usize) {
        self.0.set_message(name.to_string());
        self.0.set_length(total as u64);
        self.0.set_position(done as u64);
    }

    fn embedded(&self, rows: usize) {
        self.0.inc(rows as u64);
    }
}

impl RememberProgress for Bar {
    fn stage(&self, name: &str, total: usize) {
        self.0.set_prefix(name.to_string());
        self.0.set_length(total as u64);
        self.0.set_position(0);
    }

    fn item_done(&self, name: &str) {
        self.0.set_message(name.to_string());
        self.0.inc(1);
    }
}
