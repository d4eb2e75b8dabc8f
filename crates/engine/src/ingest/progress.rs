//! How an ingestion reports its progress (the CLI draws a bar from it).

/// Progress callbacks, e.g. for a progress bar.
pub trait RememberProgress: Send + Sync {
    /// A stage ("add" or "cognify") starts with `total` items.
    fn stage(&self, _name: &str, _total: usize) {}
    fn item_done(&self, _name: &str) {}
}

/// No-op progress.
pub struct NoProgress;
impl RememberProgress for NoProgress {}
