//! Automatic dataset routing (docs/recall.md, "The graph lane", step 3): an
//! unscoped graph search over several readable datasets searches only the
//! datasets whose global-context rows are close to the question.
//!
//! Each dataset is scored by its nearest row in the shared routing
//! collection (`DatasetRouting_text`: the root and per-document bucket rows
//! of its global context index, vectors copied from the index). Only the
//! caller's readable datasets are scored: every read is filtered by dataset.

use futures::future::join_all;
use recall_core::model::collections::DATASET_ROUTING;
use recall_core::{Dataset, Result};
use serde::Serialize;

use crate::Engine;

/// `DATASET_ROUTING_*` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetRoutingConfig {
    /// Off when backend access control is off (`ENABLE_BACKEND_ACCESS_CONTROL=false`).
    pub enabled: bool,
    /// `DATASET_ROUTING_TOP_K`: the closest datasets kept (≥ 1).
    pub top_k: usize,
    /// `DATASET_ROUTING_MAX_DISTANCE`: the cutoff, a raw cosine distance (inclusive).
    pub max_distance: f64,
    /// `DATASET_ROUTING_TIE_MARGIN`: datasets this close to the last kept one are kept too.
    pub tie_margin: f64,
}

impl Default for DatasetRoutingConfig {
    fn default() -> Self {
        Self { enabled: true, top_k: 3, max_distance: 0.8, tie_margin: 0.02 }
    }
}

/// Why the selection is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutingOutcome {
    /// Not an unscoped request over several datasets, or routing is off.
    NotApplicable,
    /// The closest datasets within the cutoff (plus those without rows).
    Routed,
    /// No dataset within the cutoff: every readable dataset.
    NothingWithinCutoff,
    /// The routing collection is missing, or scoring failed: every readable dataset.
    ScoringFailed,
    /// The routing rows were embedded with another vector width: every readable dataset.
    WidthMismatch,
}

/// One dataset's routing distance (`None`: it has no routing rows).
#[derive(Debug, Clone, Serialize)]
pub struct DatasetScore {
    pub dataset: Dataset,
    pub distance: Option<f64>,
    pub selected: bool,
}

/// The routing decision: the datasets to search first, and the rest, searched
/// when the selection retrieves nothing.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetRouting {
    pub outcome: RoutingOutcome,
    pub scores: Vec<DatasetScore>,
    #[serde(skip)]
    pub selected: Vec<Dataset>,
    #[serde(skip)]
    pub rest: Vec<Dataset>,
}

impl DatasetRouting {
    /// No narrowing: every dataset is selected.
    pub fn all(datasets: &[Dataset], outcome: RoutingOutcome, distances: Vec<Option<f64>>) -> Self {
        let scores = datasets
            .iter()
            .zip(distances.into_iter().chain(std::iter::repeat(None)))
            .map(|(d, distance)| DatasetScore { dataset: d.clone(), distance, selected: true })
            .collect();
        Self { outcome, scores, selected: datasets.to_vec(), rest: Vec::new() }
    }
}

/// The selection rule (B.3 steps 4–7) over per-dataset distances, in the
/// datasets' order: `None` when nothing is within the cutoff. Datasets with
/// no routing rows are always selected.
pub fn select(distances: &[Option<f64>], config: &DatasetRoutingConfig) -> Option<Vec<bool>> {
    let mut qualifying: Vec<(usize, f64)> = distances
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.filter(|d| *d <= config.max_distance).map(|d| (i, d)))
        .collect();
    if qualifying.is_empty() {
        return None;
    }
    qualifying.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let keep = config.top_k.max(1).min(qualifying.len());
    let last = qualifying[keep - 1].1;
    let mut selected: Vec<bool> = distances.iter().map(Option::is_none).collect();
    for (n, (i, d)) in qualifying.iter().enumerate() {
        if n < keep || *d <= last + config.tie_margin {
            selected[*i] = true;
        }
    }
    Some(selected)
}

impl Engine {
    /// Scores the datasets against the question and selects the ones to
    /// search. Never fails: any problem widens to every dataset.
    pub(crate) async fn route_datasets(&self, query: &str, datasets: &[Dataset]) -> DatasetRouting {
        match self.routing_distances(query, datasets).await {
            Ok(Some(distances)) => {
                for (d, distance) in datasets.iter().zip(&distances) {
                    tracing::info!(dataset = %d.name, dataset_id = %d.id, distance = ?distance, "dataset routing distance");
                }
                match select(&distances, &self.config.dataset_routing) {
                    Some(selected) => {
                        let scores: Vec<DatasetScore> = datasets
                            .iter()
                            .zip(distances)
                            .zip(&selected)
                            .map(|((d, distance), s)| DatasetScore { dataset: d.clone(), distance, selected: *s })
                            .collect();
                        let (chosen, rest): (Vec<&DatasetScore>, Vec<&DatasetScore>) =
                            scores.iter().partition(|s| s.selected);
                        let names: Vec<&str> = chosen.iter().map(|s| s.dataset.name.as_str()).collect();
                        tracing::info!(selected = ?names, "dataset routing selection");
                        DatasetRouting {
                            outcome: RoutingOutcome::Routed,
                            selected: chosen.iter().map(|s| s.dataset.clone()).collect(),
                            rest: rest.iter().map(|s| s.dataset.clone()).collect(),
                            scores,
                        }
                    }
                    None => {
                        tracing::info!(
                            "dataset routing: no dataset within the cutoff; searching every readable dataset"
                        );
                        DatasetRouting::all(datasets, RoutingOutcome::NothingWithinCutoff, distances)
                    }
                }
            }
            Ok(None) => DatasetRouting::all(datasets, RoutingOutcome::WidthMismatch, Vec::new()),
            Err(e) => {
                tracing::warn!(error = %e, "dataset routing failed; searching every readable dataset");
                DatasetRouting::all(datasets, RoutingOutcome::ScoringFailed, Vec::new())
            }
        }
    }

    /// Each dataset's nearest routing row; `Ok(None)` on a width mismatch.
    async fn routing_distances(&self, query: &str, datasets: &[Dataset]) -> Result<Option<Vec<Option<f64>>>> {
        let Some(stored) = self.vectors.collection_spec(DATASET_ROUTING).await? else {
            return Err(recall_core::RecallError::backend_msg("the routing collection does not exist"));
        };
        if stored.dimensions != self.embedder.dimensions() {
            tracing::warn!(
                stored = stored.dimensions,
                configured = self.embedder.dimensions(),
                "dataset routing rows have another embedding width; searching every readable dataset"
            );
            return Ok(None);
        }
        // The retrievers reuse this embedding (the query embedder remembers it).
        let vector = self
            .query_embedder
            .embed(&[query.to_string()])
            .await?
            .pop()
            .ok_or_else(|| recall_core::RecallError::backend_msg("the embedder returned no vector"))?;
        let searches = datasets.iter().map(|d| self.vectors.search(d.id, DATASET_ROUTING, &vector, Some(1), None));
        let mut out = Vec::with_capacity(datasets.len());
        for hits in join_all(searches).await {
            out.push(hits?.first().map(|h| h.score));
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(top_k: usize) -> DatasetRoutingConfig {
        DatasetRoutingConfig { top_k, ..Default::default() }
    }

    #[test]
    fn keeps_the_closest_within_the_cutoff_and_every_dataset_without_rows() {
        let d = [Some(0.5), Some(0.2), None, Some(0.9), Some(0.3), Some(0.6)];
        assert_eq!(select(&d, &cfg(2)), Some(vec![false, true, true, false, true, false]));
        // top_k past the qualifying count keeps every qualifying one, never 0.9.
        assert_eq!(select(&d, &cfg(10)), Some(vec![true, true, true, false, true, true]));
    }

    #[test]
    fn the_cutoff_is_inclusive_and_nothing_within_it_means_all() {
        assert_eq!(select(&[Some(0.8), Some(0.81)], &cfg(3)), Some(vec![true, false]));
        assert_eq!(select(&[Some(0.81), None, Some(1.2)], &cfg(3)), None);
        assert_eq!(select(&[None, None], &cfg(3)), None);
    }

    #[test]
    fn datasets_within_the_tie_margin_of_the_last_kept_one_are_kept() {
        let d = [Some(0.30), Some(0.10), Some(0.315), Some(0.33), Some(0.321)];
        // top 2: 0.10 and 0.30; 0.315 is within 0.02 of 0.30, 0.321 and 0.33 are not.
        assert_eq!(select(&d, &cfg(2)), Some(vec![true, true, true, false, false]));
        let wide = DatasetRoutingConfig { tie_margin: 0.05, ..cfg(2) };
        assert_eq!(select(&d, &wide), Some(vec![true, true, true, true, true]));
        let none = DatasetRoutingConfig { tie_margin: 0.0, ..cfg(2) };
        assert_eq!(select(&d, &none), Some(vec![true, true, false, false, false]));
    }
}
