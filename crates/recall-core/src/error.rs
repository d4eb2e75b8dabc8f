//! The public error catalogue (docs/errors.md). Each error carries its
//! public message (its `Display`), its Cognee class name and its HTTP status.

use std::error::Error as StdError;

pub type Result<T, E = RecallError> = std::result::Result<T, E>;

/// What sort of failure an error is, for callers that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    InvalidInput,
    NotFound,
    PermissionDenied,
    Unsupported,
    Conflict,
    Precondition,
    PaymentRequired,
    ScopeViolation,
    Backend,
}

/// Message of [`RecallError::RecallPrecondition`] (two lines; the back-ticks are literal).
pub const RECALL_PRECONDITION_MESSAGE: &str = "Recall prerequisites not met: no database/default user found. Initialize Cognee before recalling by:\n- running `await cognee.add(...)` followed by `await cognee.cognify()`.";

/// `SearchPreconditionError`'s message (legacy `search()` without a default user).
pub const SEARCH_PRECONDITION_MESSAGE: &str = "Search prerequisites not met: no database/default user found. Initialize Cognee before searching by:\n• running `await cognee.add(...)` followed by `await cognee.cognify()`.";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecallError {
    /// No database or default user exists yet: nothing was ever remembered.
    #[error("{}", RECALL_PRECONDITION_MESSAGE)]
    RecallPrecondition,

    #[error("{}", SEARCH_PRECONDITION_MESSAGE)]
    SearchPrecondition,

    /// Strict dataset-name resolution missed one or more names.
    #[error("{}", dataset_not_found_message(.missing))]
    DatasetNotFound { missing: Vec<String> },

    #[error("One or more of the provided dataset types is not handled: {0}")]
    DatasetType(String),

    #[error("{0}")]
    PermissionDenied(String),

    /// A permission name outside read, write, delete and share.
    #[error("{0} not found or not in allowed permission types")]
    PermissionNotFound(String),

    /// A dataset named for a delete that the caller does not own (or that
    /// does not exist): Cognee's forget-by-name 404.
    #[error("Dataset '{0}' not found or not accessible.")]
    DatasetNotAccessible(String),

    /// Empty/blank query, `top_k` ≤ 0, …
    #[error("{0}")]
    QueryValidation(String),

    /// Any `CogneeValidationError` subclass: `name` is the class name shown as `[Name]`.
    #[error("{message}")]
    Validation { name: &'static str, message: String },

    /// A request that contradicts what is stored (409): `name` is the class
    /// name shown as `[Name]`.
    #[error("{message}")]
    Conflict { name: &'static str, message: String },

    #[error("{0}")]
    NoData(String),

    #[error("{} search is disabled by default for security reasons.", .0)]
    SearchTypeDisabled(crate::SearchType),

    #[error("{0}")]
    UnsupportedSearchType(String),

    /// The backend cannot do what was asked (e.g. Cypher on a store without Cypher).
    #[error("{0}")]
    SearchTypeNotSupported(String),

    #[error("An error occurred during the execution of the Cypher query.")]
    CypherSearch,

    #[error("{0}")]
    LlmPaymentRequired(String),

    #[error("Dataset {dataset_id} was embedded with '{stored_model}' ({stored_dimensions} dimensions), but the configured embedding model '{configured_model}' produces {configured_dimensions}. A dataset's vectors must all come from one model.")]
    EmbeddingDimensionMismatch {
        dataset_id: String,
        stored_model: String,
        stored_dimensions: usize,
        configured_model: String,
        configured_dimensions: usize,
    },

    /// Same width, another model: the vectors have the right shape but live
    /// in different coordinate spaces, so comparing them would be noise.
    #[error("Dataset {dataset_id} was embedded with '{stored_model}', but the configured embedding model is '{configured_model}'. Both produce {dimensions}-dimensional vectors, but from different models, so they cannot be compared: a dataset's vectors must all come from one model.")]
    EmbeddingModelMismatch { dataset_id: String, stored_model: String, configured_model: String, dimensions: usize },

    /// A file type that cannot be ingested; rejected before anything is written.
    #[error("Unsupported file type '{extension}' for '{path}'. Supported: .txt, .md")]
    UnsupportedFileType { path: String, extension: String },

    #[error("{0}")]
    InvalidInput(String),

    /// The document an update names is not in the dataset.
    #[error("{0}")]
    UpdateTargetNotFound(String),

    #[error("{0}")]
    NotFound(String),

    /// The LLM or embedding provider failed or answered something unusable.
    #[error("{0}")]
    Provider(String),

    /// A storage or transport failure inside an adapter.
    #[error("backend error: {0}")]
    Backend(#[source] Box<dyn StdError + Send + Sync>),
}

fn dataset_not_found_message(missing: &[String]) -> String {
    if missing.is_empty() {
        return "No datasets found.".to_string();
    }
    let names = missing.iter().map(|n| python_repr(n)).collect::<Vec<_>>().join(", ");
    format!("Dataset(s) not found: {names}. Dataset names resolve only among the datasets you own in the current tenant; pass dataset_ids for datasets shared with you.")
}

/// Python's `repr()` of a str: single-quoted unless it contains a single quote
/// and no double quote.
fn python_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

impl RecallError {
    /// Wraps any backend failure.
    pub fn backend(err: impl StdError + Send + Sync + 'static) -> Self {
        RecallError::Backend(Box::new(err))
    }

    /// A backend failure described by a message.
    pub fn backend_msg(msg: impl Into<String>) -> Self {
        RecallError::Backend(msg.into().into())
    }

    pub fn invalid_input(msg: impl Into<String>) -> Self {
        RecallError::InvalidInput(msg.into())
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            RecallError::RecallPrecondition | RecallError::SearchPrecondition => ErrorKind::Precondition,
            RecallError::DatasetNotFound { .. }
            | RecallError::DatasetNotAccessible(_)
            | RecallError::NoData(_)
            | RecallError::NotFound(_)
            | RecallError::UpdateTargetNotFound(_) => ErrorKind::NotFound,
            RecallError::PermissionDenied(_)
            | RecallError::PermissionNotFound(_)
            | RecallError::SearchTypeDisabled(_) => ErrorKind::PermissionDenied,
            RecallError::UnsupportedSearchType(_)
            | RecallError::SearchTypeNotSupported(_)
            | RecallError::UnsupportedFileType { .. } => ErrorKind::Unsupported,
            RecallError::EmbeddingDimensionMismatch { .. }
            | RecallError::EmbeddingModelMismatch { .. }
            | RecallError::Conflict { .. } => ErrorKind::Conflict,
            RecallError::LlmPaymentRequired(_) => ErrorKind::PaymentRequired,
            RecallError::DatasetType(_)
            | RecallError::QueryValidation(_)
            | RecallError::Validation { .. }
            | RecallError::CypherSearch
            | RecallError::InvalidInput(_) => ErrorKind::InvalidInput,
            RecallError::Provider(_) | RecallError::Backend(_) => ErrorKind::Backend,
        }
    }

    /// The error's class name, shown as `[Name]` in HTTP error details.
    pub fn name(&self) -> &'static str {
        match self {
            RecallError::RecallPrecondition => "RecallPreconditionError",
            RecallError::SearchPrecondition => "SearchPreconditionError",
            RecallError::DatasetNotFound { .. } | RecallError::DatasetNotAccessible(_) => "DatasetNotFoundError",
            RecallError::DatasetType(_) => "DatasetTypeError",
            RecallError::PermissionDenied(_) => "PermissionDeniedError",
            RecallError::PermissionNotFound(_) => "PermissionNotFoundError",
            RecallError::QueryValidation(_) => "QueryValidationError",
            RecallError::Validation { name, .. } | RecallError::Conflict { name, .. } => name,
            RecallError::NoData(_) => "NoDataError",
            RecallError::SearchTypeDisabled(_) => "SearchTypeDisabledError",
            RecallError::UnsupportedSearchType(_) => "UnsupportedSearchTypeError",
            RecallError::SearchTypeNotSupported(_) => "SearchTypeNotSupported",
            RecallError::CypherSearch => "CypherSearchError",
            RecallError::LlmPaymentRequired(_) => "LLMPaymentRequiredError",
            RecallError::EmbeddingDimensionMismatch { .. } => "EmbeddingDimensionMismatchError",
            RecallError::EmbeddingModelMismatch { .. } => "EmbeddingModelMismatchError",
            RecallError::UnsupportedFileType { .. } => "UnsupportedFileTypeError",
            RecallError::InvalidInput(_) => "InvalidInputError",
            RecallError::NotFound(_) => "NotFoundError",
            RecallError::UpdateTargetNotFound(_) => "UpdateTargetNotFoundError",
            RecallError::Provider(_) => "ProviderError",
            RecallError::Backend(_) => "BackendError",
        }
    }

    /// What to do about it, when there is something to do: a server sends it
    /// as `remediation` beside `detail`, the CLI prints it under the error.
    pub fn remediation(&self) -> Option<String> {
        match self {
            RecallError::SearchTypeDisabled(_) => Some(
                "Set the environment variable ALLOW_CYPHER_QUERY=true, and only do so when every user of this deployment is trusted."
                    .into(),
            ),
            RecallError::EmbeddingDimensionMismatch { dataset_id, stored_model, .. }
            | RecallError::EmbeddingModelMismatch { dataset_id, stored_model, .. } => {
                let flag = if uuid::Uuid::parse_str(dataset_id).is_ok() { "--dataset-id" } else { "--dataset" };
                Some(format!(
                    "Re-embed the stored texts with the configured model (`recall reembed {flag} {dataset_id}`), or configure '{stored_model}' again."
                ))
            }
            _ => None,
        }
    }

    /// The HTTP status the spec gives this error.
    pub fn http_status(&self) -> u16 {
        match self {
            RecallError::RecallPrecondition
            | RecallError::SearchPrecondition
            | RecallError::QueryValidation(_)
            | RecallError::Validation { .. } => 422,
            RecallError::DatasetNotFound { .. }
            | RecallError::DatasetNotAccessible(_)
            | RecallError::NoData(_)
            | RecallError::NotFound(_)
            | RecallError::UpdateTargetNotFound(_) => 404,
            RecallError::DatasetType(_)
            | RecallError::UnsupportedSearchType(_)
            | RecallError::SearchTypeNotSupported(_)
            | RecallError::CypherSearch
            | RecallError::InvalidInput(_) => 400,
            RecallError::PermissionDenied(_)
            | RecallError::PermissionNotFound(_)
            | RecallError::SearchTypeDisabled(_) => 403,
            RecallError::LlmPaymentRequired(_) => 402,
            RecallError::EmbeddingDimensionMismatch { .. }
            | RecallError::EmbeddingModelMismatch { .. }
            | RecallError::Conflict { .. } => 409,
            RecallError::UnsupportedFileType { .. } => 415,
            RecallError::Provider(_) => 502,
            RecallError::Backend(_) => 500,
        }
    }

    /// `EmbeddingDimensionMismatchError`, or `EmbeddingModelMismatchError` when
    /// the widths agree: `stored` is what the collection was built with;
    /// `model`/`dimensions` what is being used now.
    pub fn embedding_mismatch(
        dataset: impl std::fmt::Display,
        stored: &crate::ports::EmbeddingSpec,
        model: &str,
        dimensions: usize,
    ) -> Self {
        if stored.dimensions == dimensions {
            return RecallError::EmbeddingModelMismatch {
                dataset_id: dataset.to_string(),
                stored_model: stored.model.clone(),
                configured_model: model.to_string(),
                dimensions,
            };
        }
        RecallError::EmbeddingDimensionMismatch {
            dataset_id: dataset.to_string(),
            stored_model: stored.model.clone(),
            stored_dimensions: stored.dimensions,
            configured_model: model.to_string(),
            configured_dimensions: dimensions,
        }
    }

    /// `PermissionDeniedError`: some dataset a request names (by id, or a
    /// name resolved to an id) is unknown or lacks `permission` for the caller.
    /// Unknown and forbidden look the same, so ids cannot be probed.
    pub fn permission_denied(permission: crate::Permission) -> Self {
        RecallError::PermissionDenied(format!(
            "Request owner does not have necessary permission: [{permission}] for all datasets requested."
        ))
    }

    /// `PermissionDeniedError`: a request that named no dataset, by a caller
    /// who holds `permission` on none.
    pub fn no_permission_on_any(permission: crate::Permission) -> Self {
        RecallError::PermissionDenied(format!(
            "Request owner does not have permission: [{permission}] for any dataset."
        ))
    }

    /// `QueryValidationError("top_k must be a positive integer.")`.
    pub fn top_k_not_positive() -> Self {
        RecallError::QueryValidation("top_k must be a positive integer.".into())
    }

    /// `QueryValidationError("The query must be a non-empty string.")`.
    pub fn empty_query() -> Self {
        RecallError::QueryValidation("The query must be a non-empty string.".into())
    }

    /// `UnsupportedSearchTypeError("Unsupported search type: SearchType.X")`.
    pub fn unsupported_search_type(t: crate::SearchType) -> Self {
        RecallError::UnsupportedSearchType(format!("Unsupported search type: SearchType.{t}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_not_found_lists_every_name_python_style() {
        let err = RecallError::DatasetNotFound { missing: vec!["a".into(), "it's".into()] };
        assert_eq!(
            err.to_string(),
            "Dataset(s) not found: 'a', \"it's\". Dataset names resolve only among the datasets you own in the current tenant; pass dataset_ids for datasets shared with you."
        );
        assert_eq!(err.http_status(), 404);
        assert_eq!(err.name(), "DatasetNotFoundError");
        let none = RecallError::DatasetNotFound { missing: vec![] };
        assert_eq!(none.to_string(), "No datasets found.");
    }

    #[test]
    fn permission_texts_are_exact() {
        let all = RecallError::permission_denied(crate::Permission::Read);
        assert_eq!(
            all.to_string(),
            "Request owner does not have necessary permission: [read] for all datasets requested."
        );
        assert_eq!((all.name(), all.http_status()), ("PermissionDeniedError", 403));
        assert_eq!(
            RecallError::no_permission_on_any(crate::Permission::Read).to_string(),
            "Request owner does not have permission: [read] for any dataset."
        );
        assert_eq!(
            RecallError::permission_denied(crate::Permission::Share).to_string(),
            "Request owner does not have necessary permission: [share] for all datasets requested."
        );
        let gone = RecallError::DatasetNotAccessible("docs".into());
        assert_eq!(gone.to_string(), "Dataset 'docs' not found or not accessible.");
        assert_eq!((gone.name(), gone.http_status()), ("DatasetNotFoundError", 404));
    }

    #[test]
    fn precondition_message_is_exact() {
        let err = RecallError::RecallPrecondition;
        assert_eq!(
            err.to_string(),
            "Recall prerequisites not met: no database/default user found. Initialize Cognee before recalling by:\n- running `await cognee.add(...)` followed by `await cognee.cognify()`."
        );
        assert_eq!(err.http_status(), 422);
        assert_eq!(err.kind(), ErrorKind::Precondition);
    }

    #[test]
    fn statuses_follow_the_catalogue() {
        assert_eq!(RecallError::top_k_not_positive().http_status(), 422);
        assert_eq!(RecallError::top_k_not_positive().to_string(), "top_k must be a positive integer.");
        assert_eq!(
            RecallError::unsupported_search_type(crate::SearchType::Code).to_string(),
            "Unsupported search type: SearchType.CODE"
        );
        assert_eq!(RecallError::SearchTypeDisabled(crate::SearchType::Cypher).http_status(), 403);
        let mismatch = RecallError::EmbeddingDimensionMismatch {
            dataset_id: "d".into(),
            stored_model: "a".into(),
            stored_dimensions: 3,
            configured_model: "b".into(),
            configured_dimensions: 4,
        };
        assert_eq!(mismatch.http_status(), 409);
        assert_eq!(
            mismatch.remediation().as_deref(),
            Some("Re-embed the stored texts with the configured model (`recall reembed --dataset d`), or configure 'a' again.")
        );
        // Same width, another model: its own error, which does not blame the width.
        let spec = crate::ports::EmbeddingSpec { model: "recall-hashing-v1-384".into(), dimensions: 384 };
        let same_width = RecallError::embedding_mismatch("d", &spec, "minilm", 384);
        assert_eq!(same_width.name(), "EmbeddingModelMismatchError");
        assert_eq!(same_width.http_status(), 409);
        let text = same_width.to_string();
        assert!(
            text.contains("'recall-hashing-v1-384'")
                && text.contains("'minilm'")
                && text.contains("Both produce 384-dimensional"),
            "{text}"
        );
        assert!(!text.contains("produces 384"), "{text}");
        assert!(same_width.remediation().is_some_and(|r| r.contains("recall reembed --dataset d")));
        assert_eq!(RecallError::embedding_mismatch("d", &spec, "wide", 768).name(), "EmbeddingDimensionMismatchError");
        let disabled = RecallError::SearchTypeDisabled(crate::SearchType::Cypher);
        assert_eq!(disabled.to_string(), "CYPHER search is disabled by default for security reasons.");
        assert!(disabled
            .remediation()
            .is_some_and(|r| r.starts_with("Set the environment variable ALLOW_CYPHER_QUERY=true")));
        assert_eq!(RecallError::top_k_not_positive().remediation(), None);
        assert!(mismatch.to_string().starts_with(
            "Dataset d was embedded with 'a' (3 dimensions), but the configured embedding model 'b' produces 4."
        ));
    }
}
