//! The search cache: a collection's rows held in memory and searched in full.
//!
//! Every LanceDB query has a fixed cost of several milliseconds on a small
//! machine (planning, fragment metadata, the prefilter over `dataset_id`,
//! re-ranking reads), even on a table of a few rows, and a graph search runs
//! seven of them. A scan of unit vectors in memory is a full search at
//! memory speed: ~1 ms per 10 000 rows of 384 dimensions on one core, with
//! no index to keep up. The adapter keeps each collection it has searched in
//! memory, within a byte budget, updates it under the collection's write lock
//! after each committed write, and leaves collections past the budget to
//! LanceDB.
//!
//! Up to [`CODED_ROWS`] rows of a dataset the cache holds the unit vectors in
//! f32, and its results equal LanceDB's exhaustive search. Past that it holds
//! each as two int8 codes, 2 bytes a dimension where the f32 vector and one
//! code took 5 (a million 384-wide rows: 768 MB, not 1.9 GB): the vector's
//! code (max |x| ↦ 127) and the code of what that code leaves out. The two
//! decode to within about 10⁻⁵ of the vector, renormalised, so a row's
//! distance to itself is 0 to within 10⁻⁶; every search ranks by the decoded
//! vectors, and no search of the cache differs from any other in what it
//! returns.
//!
//! Past one task's rows, a search reads the first codes only (a quarter of
//! f32's bytes) with a bound on each estimate's error, and re-scores with the
//! vectors (or both codes) only the rows whose bound lets them reach the top:
//! the result is the full scan's, at a quarter of its memory traffic.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, RwLock};

use recall_core::ports::{NodeSetFilter, ScoredResult};
use recall_core::DatasetId;
use simsimd::SpatialSimilarity;
use uuid::Uuid;

use crate::partitions::Partitions;

/// Rows scanned per task: past this a search is split across blocking
/// threads (a scan of this many 384-wide rows takes ~2 ms).
const ROWS_PER_TASK: usize = 16_384;

/// Bytes a row costs besides its vector (id, position entry, payload header).
const ROW_OVERHEAD: usize = 96;

/// A scored row: ordered by distance, then id (so every scan ranks alike).
struct Ranked(f64, Uuid, usize);

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

/// One stored row, as the cache keeps it.
pub(crate) struct CachedRow {
    pub id: Uuid,
    pub vector: Vec<f32>,
    /// The payload as stored (JSON text); parsed only for hits.
    pub payload: Box<str>,
    pub sets: Vec<String>,
}

/// A row's codes, as numbers: the vector it stands for is `u = (scale·code +
/// residual_scale·residual) × inv_norm`, a unit vector (or zero), or while
/// its index holds f32 vectors the vector itself. `error` =
/// ‖u − scale·code‖ and `norm` = ‖scale·code‖ bound what the first code alone
/// estimates (both rounded up from f64).
#[derive(Clone, Copy, Default)]
struct Coded {
    scale: f32,
    residual_scale: f32,
    inv_norm: f32,
    error: f32,
    norm: f32,
}

/// Appends the int8 code of `v` with one scale per vector (max |x| ↦ 127)
/// and returns the scale (0 for a zero or non-finite vector: all-zero code).
fn int8_code(v: &[f32], code: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        code.extend(std::iter::repeat_n(0, v.len()));
        return 0.0;
    }
    let scale = max / 127.0;
    code.extend(v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8));
    scale
}

/// ‖v − scale·code‖ and ‖scale·code‖, rounded up so they stay bounds in f32.
fn code_bounds(v: &[f32], scale: f32, code: &[i8]) -> (f32, f32) {
    let (mut error, mut norm) = (0f64, 0f64);
    for (x, c) in v.iter().zip(code) {
        let approx = f64::from(scale) * f64::from(*c);
        error += (f64::from(*x) - approx).powi(2);
        norm += approx * approx;
    }
    (next_up(error.sqrt()), next_up(norm.sqrt()))
}

/// One decoded value: the same operations in the same order everywhere, so
/// the bounds computed at encoding hold for every search.
#[inline(always)]
fn decoded(c: &Coded, code: i8, residual: i8) -> f32 {
    (c.scale * f32::from(code) + c.residual_scale * f32::from(residual)) * c.inv_norm
}

/// Encodes a unit vector: appends its two codes and returns their numbers.
fn encode(v: &[f32], code: &mut Vec<i8>, residual: &mut Vec<i8>) -> Coded {
    let start = code.len();
    let scale = int8_code(v, code);
    let first = &code[start..];
    let rest: Vec<f32> = v.iter().zip(first).map(|(x, c)| x - scale * f32::from(*c)).collect();
    let residual_scale = int8_code(&rest, residual);
    let second = &residual[start..];
    let mut c = Coded { scale, residual_scale, inv_norm: 1.0, ..Coded::default() };
    let norm = first.iter().zip(second).map(|(a, b)| f64::from(decoded(&c, *a, *b)).powi(2)).sum::<f64>().sqrt();
    c.inv_norm = if norm > 0.0 && norm.is_finite() { (1.0 / norm) as f32 } else { 0.0 };
    let u: Vec<f32> = first.iter().zip(second).map(|(a, b)| decoded(&c, *a, *b)).collect();
    (c.error, c.norm) = code_bounds(&u, scale, first);
    c
}

/// Encodes a unit vector kept in f32 beside its first code (no residual).
fn encode_exact(v: &[f32], code: &mut Vec<i8>) -> Coded {
    let start = code.len();
    let scale = int8_code(v, code);
    let (error, norm) = code_bounds(v, scale, &code[start..]);
    Coded { scale, residual_scale: 0.0, inv_norm: 1.0, error, norm }
}

/// `query · u` in f32, eight lanes at a time (the compiler vectorises it).
fn decoded_dot(query: &[f32], code: &[i8], residual: &[i8], c: &Coded) -> f32 {
    let mut lanes = [0f32; 8];
    let (q8, code8, res8) = (query.chunks_exact(8), code.chunks_exact(8), residual.chunks_exact(8));
    let tail: f32 = q8
        .remainder()
        .iter()
        .zip(code8.remainder())
        .zip(res8.remainder())
        .map(|((q, a), b)| q * decoded(c, *a, *b))
        .sum();
    for ((q, a), b) in q8.zip(code8).zip(res8) {
        for i in 0..8 {
            lanes[i] += q[i] * decoded(c, a[i], b[i]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

fn next_up(x: f64) -> f32 {
    let y = x as f32;
    if f64::from(y) >= x {
        y
    } else {
        f32::from_bits(y.to_bits() + 1)
    }
}

/// Rows of one dataset past which its vectors are held as two codes instead
/// of f32 (module docs): up to here results equal LanceDB's exhaustive search.
pub(crate) const CODED_ROWS: usize = 100_000;

/// What a search re-scores with, row-major.
enum Rescoring {
    /// The unit vectors (up to the index's `coded_from` rows).
    Vectors(Vec<f32>),
    /// The residual codes (past it).
    Residuals(Vec<i8>),
}

/// Moves row `last` of a row-major array onto row `at` and drops the last.
fn swap_remove_row<T: Copy>(values: &mut Vec<T>, dims: usize, at: usize, last: usize) {
    if at != last {
        values.copy_within(last * dims..(last + 1) * dims, at * dims);
    }
    values.truncate(last * dims);
}

/// One dataset's rows of a collection, row-major.
pub(crate) struct FlatIndex {
    dims: usize,
    ids: Vec<Uuid>,
    /// Each row's first int8 code and its numbers ([`Coded`]); an all-zero
    /// vector stays zero (distance 1 to anything).
    codes: Vec<i8>,
    coded: Vec<Coded>,
    rescoring: Rescoring,
    /// Rows past which the vectors become residual codes (one way).
    coded_from: usize,
    payloads: Vec<Box<str>>,
    sets: Vec<Vec<String>>,
    position: HashMap<Uuid, usize>,
    /// Bytes of the payloads and set names, kept up to date by every change.
    text_bytes: usize,
    /// The rows grouped around centroids, once there are enough of them
    /// (see [`FlatIndex::repartition`]).
    partitions: Option<Partitions>,
}

fn text_bytes(payload: &str, sets: &[String]) -> usize {
    payload.len() + sets.iter().map(String::len).sum::<usize>()
}

fn unit(vector: &[f32]) -> Vec<f32> {
    let norm = f32::dot(vector, vector).unwrap_or(0.0).sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return vec![0.0; vector.len()];
    }
    vector.iter().map(|x| (f64::from(*x) / norm) as f32).collect()
}

impl FlatIndex {
    /// An index whose vectors become codes past `rows` rows.
    fn coded_from(dims: usize, rows: usize) -> Self {
        Self {
            dims,
            ids: Vec::new(),
            codes: Vec::new(),
            coded: Vec::new(),
            rescoring: if rows == 0 { Rescoring::Residuals(Vec::new()) } else { Rescoring::Vectors(Vec::new()) },
            coded_from: rows,
            payloads: Vec::new(),
            sets: Vec::new(),
            position: HashMap::new(),
            text_bytes: 0,
            partitions: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Bytes held, approximately.
    pub(crate) fn bytes(&self) -> usize {
        let rescoring = match &self.rescoring {
            Rescoring::Vectors(v) => v.len() * 4,
            Rescoring::Residuals(r) => r.len(),
        };
        self.codes.len()
            + rescoring
            + self.coded.len() * std::mem::size_of::<Coded>()
            + self.text_bytes
            + self.ids.len() * ROW_OVERHEAD
            + self.partitions.as_ref().map_or(0, Partitions::bytes)
    }

    /// Whether the rows want partitions trained (again): there are
    /// `min_rows` of them (`None`: never) and no partitions, or four times
    /// as many as when they were trained.
    fn wants_partitions(&self, min_rows: Option<usize>) -> bool {
        let rows = self.len();
        min_rows.is_some_and(|m| rows >= m.max(1))
            && self.partitions.as_ref().is_none_or(|p| rows >= p.trained_rows() * 4)
    }

    /// Trains the partitions when the rows want them. Training reads every
    /// row (seconds at a million rows of 384 dimensions), so it runs when a
    /// collection is loaded, off the search path; a write that grows the rows
    /// past the point drops the cache instead (the next search reloads it in
    /// the background). Rows removed since keep the partitions they have.
    fn repartition(&mut self, min_rows: Option<usize>) {
        let rows = self.len();
        if self.wants_partitions(min_rows) {
            let started = std::time::Instant::now();
            let partitions = Partitions::train(&self.decoded_rows(), self.dims);
            tracing::debug!(
                rows,
                partitions = partitions.count(),
                ms = started.elapsed().as_secs_f64() * 1e3,
                "search cache partitioned"
            );
            self.partitions = Some(partitions);
        }
    }

    /// Inserts or replaces a row (the caller checked its width).
    pub(crate) fn upsert(&mut self, row: CachedRow) {
        let vector = unit(&row.vector);
        let (mut code, mut residual) = (Vec::with_capacity(self.dims), Vec::with_capacity(self.dims));
        let coded = match &self.rescoring {
            Rescoring::Vectors(_) => encode_exact(&vector, &mut code),
            Rescoring::Residuals(_) => encode(&vector, &mut code, &mut residual),
        };
        self.text_bytes += text_bytes(&row.payload, &row.sets);
        match self.position.get(&row.id) {
            Some(&at) => {
                self.text_bytes -= text_bytes(&self.payloads[at], &self.sets[at]);
                let span = at * self.dims..(at + 1) * self.dims;
                self.codes[span.clone()].copy_from_slice(&code);
                match &mut self.rescoring {
                    Rescoring::Vectors(v) => v[span].copy_from_slice(&vector),
                    Rescoring::Residuals(r) => r[span].copy_from_slice(&residual),
                }
                self.coded[at] = coded;
                self.payloads[at] = row.payload;
                self.sets[at] = row.sets;
                if let Some(partitions) = &mut self.partitions {
                    partitions.replace(at, &vector);
                }
            }
            None => {
                if let Some(partitions) = &mut self.partitions {
                    partitions.push(&vector);
                }
                self.position.insert(row.id, self.ids.len());
                self.ids.push(row.id);
                self.codes.extend_from_slice(&code);
                match &mut self.rescoring {
                    Rescoring::Vectors(v) => v.extend_from_slice(&vector),
                    Rescoring::Residuals(r) => r.extend_from_slice(&residual),
                }
                self.coded.push(coded);
                self.payloads.push(row.payload);
                self.sets.push(row.sets);
                if self.len() > self.coded_from {
                    self.encode_rows();
                }
            }
        }
    }

    /// Re-encodes f32 vectors as two codes (once, when the rows first pass
    /// `coded_from`; about 0.1 s per 100 000 rows of 384 dimensions).
    fn encode_rows(&mut self) {
        let Rescoring::Vectors(vectors) = &self.rescoring else { return };
        let (mut codes, mut residuals) = (Vec::with_capacity(vectors.len()), Vec::with_capacity(vectors.len()));
        if self.dims > 0 {
            self.coded = vectors.chunks_exact(self.dims).map(|v| encode(v, &mut codes, &mut residuals)).collect();
            self.codes = codes;
        }
        self.rescoring = Rescoring::Residuals(residuals);
    }

    /// Whether the vectors are held as codes (for tests).
    #[cfg(test)]
    fn is_coded(&self) -> bool {
        matches!(self.rescoring, Rescoring::Residuals(_))
    }

    pub(crate) fn remove(&mut self, id: &Uuid) {
        let Some(at) = self.position.remove(id) else { return };
        self.text_bytes -= text_bytes(&self.payloads[at], &self.sets[at]);
        if let Some(partitions) = &mut self.partitions {
            partitions.swap_remove(at);
        }
        let last = self.ids.len() - 1;
        if at != last {
            let moved = self.ids[last];
            self.position.insert(moved, at);
        }
        swap_remove_row(&mut self.codes, self.dims, at, last);
        match &mut self.rescoring {
            Rescoring::Vectors(v) => swap_remove_row(v, self.dims, at, last),
            Rescoring::Residuals(r) => swap_remove_row(r, self.dims, at, last),
        }
        self.ids.swap_remove(at);
        self.coded.swap_remove(at);
        self.payloads.swap_remove(at);
        self.sets.swap_remove(at);
    }

    /// The best `limit` rows of `range` (all of them with `None`) as
    /// (cosine distance, row), best first, ties by id; `query` is a unit
    /// vector. With a limit, a bounded heap: no allocation per row.
    fn scan(
        &self,
        query: &[f32],
        range: std::ops::Range<usize>,
        limit: Option<usize>,
        filter: Option<&NodeSetFilter>,
    ) -> Vec<(f64, usize)> {
        let zero_query = query.iter().all(|x| *x == 0.0);
        let rows = range.filter(|&row| filter.is_none_or(|f| f.matches(&self.sets[row]))).map(|row| {
            let distance = if zero_query { 1.0 } else { self.distance(query, row) };
            Ranked(distance, self.ids[row], row)
        });
        let ranked = match limit {
            Some(limit) => {
                let mut heap: BinaryHeap<Ranked> = BinaryHeap::with_capacity(limit + 1);
                for candidate in rows {
                    if heap.len() < limit {
                        heap.push(candidate);
                    } else if heap.peek().is_some_and(|worst| candidate < *worst) {
                        heap.pop();
                        heap.push(candidate);
                    }
                }
                heap.into_sorted_vec()
            }
            None => {
                let mut all: Vec<Ranked> = rows.collect();
                all.sort_unstable();
                all
            }
        };
        ranked.into_iter().map(|Ranked(score, _, row)| (score, row)).collect()
    }

    /// The first pass of a quantized search over `range`: each row's
    /// similarity estimate from the codes, ± its error bound. Keeps the
    /// `limit` best lower bounds and every row whose upper bound reaches the
    /// `limit`-th lower bound seen so far (no row left out can be in the top).
    fn estimate(
        &self,
        query: &QuantizedQuery,
        range: impl IntoIterator<Item = usize>,
        limit: usize,
        filter: Option<&NodeSetFilter>,
    ) -> Estimates {
        let mut lowers: BinaryHeap<std::cmp::Reverse<Total>> = BinaryHeap::with_capacity(limit + 1);
        let mut candidates = Vec::new();
        let mut threshold = f64::NEG_INFINITY;
        for row in range {
            if filter.is_some_and(|f| !f.matches(&self.sets[row])) {
                continue;
            }
            let (lower, upper) = self.bounds(query, row);
            if lowers.len() < limit {
                lowers.push(std::cmp::Reverse(Total(lower)));
            } else if lowers.peek().is_some_and(|m| lower > m.0 .0) {
                lowers.pop();
                lowers.push(std::cmp::Reverse(Total(lower)));
            }
            if lowers.len() == limit {
                threshold = lowers.peek().map_or(threshold, |m| m.0 .0);
            }
            if upper >= threshold {
                candidates.push((upper, row, self.ids[row]));
            }
        }
        candidates.retain(|c| c.0 >= threshold);
        Estimates { lowers: lowers.into_iter().map(|l| l.0 .0).collect(), candidates }
    }

    /// Bounds on a row's similarity to the query as the re-scoring
    /// computes it: the first code's estimate ± ‖u − v̂‖ + ‖v̂‖·‖q − q̂‖
    /// (Cauchy–Schwarz, u the decoded vector, v̂ the first code's) + the f32
    /// rounding slack.
    fn bounds(&self, query: &QuantizedQuery, row: usize) -> (f64, f64) {
        let q = self.coded[row];
        let code = &self.codes[row * self.dims..(row + 1) * self.dims];
        let estimate = f64::from(q.scale) * query.scale * i8::dot(&query.code, code).unwrap_or(0.0);
        let bound = f64::from(q.error) + f64::from(q.norm) * query.error + query.slack;
        (estimate - bound, estimate + bound)
    }

    /// The full distance of a candidate found by [`Self::estimate`], if its
    /// row still holds it (rows move when others are removed).
    fn rescore(&self, query: &[f32], (row, id): (usize, Uuid), filter: Option<&NodeSetFilter>) -> Option<Ranked> {
        let row = if self.ids.get(row) == Some(&id) { row } else { *self.position.get(&id)? };
        if filter.is_some_and(|f| !f.matches(&self.sets[row])) {
            return None;
        }
        Some(Ranked(self.distance(query, row), id, row))
    }

    /// The best `limit` of the candidates a first pass kept, by their full
    /// distance, best first (ties by id, as [`Self::scan`] ranks).
    fn rescored(
        &self,
        query: &[f32],
        candidates: Vec<(f64, usize, Uuid)>,
        limit: usize,
        filter: Option<&NodeSetFilter>,
    ) -> Vec<(f64, usize)> {
        let mut best: Vec<Ranked> =
            candidates.into_iter().filter_map(|(_, row, id)| self.rescore(query, (row, id), filter)).collect();
        best.sort_unstable();
        best.truncate(limit);
        best.into_iter().map(|Ranked(score, _, row)| (score, row)).collect()
    }

    /// A row's cosine distance to a unit query, from its vector or its
    /// decoded codes: the one computation behind both the full scan and the
    /// re-scoring, so both rank alike.
    fn distance(&self, query: &[f32], row: usize) -> f64 {
        let span = row * self.dims..(row + 1) * self.dims;
        match &self.rescoring {
            Rescoring::Vectors(v) => 1.0 - f32::dot(query, &v[span]).unwrap_or(0.0),
            Rescoring::Residuals(r) => {
                1.0 - f64::from(decoded_dot(query, &self.codes[span.clone()], &r[span], &self.coded[row]))
            }
        }
    }

    /// Every row's vector as searches see it, row-major (to train partitions on).
    fn decoded_rows(&self) -> Vec<f32> {
        let residuals = match &self.rescoring {
            Rescoring::Vectors(v) => return v.clone(),
            Rescoring::Residuals(r) => r,
        };
        let mut out = Vec::with_capacity(self.codes.len());
        for (row, c) in self.coded.iter().enumerate() {
            let span = row * self.dims..(row + 1) * self.dims;
            out.extend(self.codes[span.clone()].iter().zip(&residuals[span]).map(|(a, b)| decoded(c, *a, *b)));
        }
        out
    }

    /// The rows of the task starting at `start`, clipped to the rows still
    /// there (rows may have been removed since the search counted them).
    fn task_range(&self, start: usize) -> std::ops::Range<usize> {
        start.min(self.len())..(start + ROWS_PER_TASK).min(self.len())
    }

    /// A row as a hit; without `payloads`, its payload stays unread (empty).
    fn hit(&self, (score, row): (f64, usize), payloads: bool) -> ScoredResult {
        let payload = if payloads { crate::parse_payload(&self.payloads[row]) } else { Default::default() };
        ScoredResult { id: self.ids[row], score, payload }
    }
}

/// A total order on f64 (for heaps of bounds).
#[derive(PartialEq)]
struct Total(f64);

impl Eq for Total {}

impl PartialOrd for Total {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Total {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A unit query's int8 code, scale and error bound.
struct QuantizedQuery {
    code: Vec<i8>,
    scale: f64,
    error: f64,
    /// Covers the rounding of the f32 dot product the survivors are
    /// re-scored with: at most dims × 2⁻²³ for unit vectors.
    slack: f64,
}

impl QuantizedQuery {
    fn new(query: &[f32]) -> Self {
        let mut code = Vec::with_capacity(query.len());
        let coded = encode_exact(query, &mut code);
        let slack = 2.0 * query.len() as f64 * f64::from(f32::EPSILON);
        Self { code, scale: f64::from(coded.scale), error: f64::from(coded.error), slack }
    }
}

/// One task's first pass: its best lower bounds and its candidates
/// (upper bound, row, id).
struct Estimates {
    lowers: Vec<f64>,
    candidates: Vec<(f64, usize, Uuid)>,
}

/// The candidates of a first pass that can reach the top `limit`: those
/// whose upper bound reaches the `limit`-th best lower bound over all the
/// pass's rows (a floor of the `limit`-th exact similarity).
fn survivors(lowers: &mut [f64], mut candidates: Vec<(f64, usize, Uuid)>, limit: usize) -> Vec<(f64, usize, Uuid)> {
    if limit > 0 && lowers.len() >= limit {
        lowers.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
        let floor = lowers[limit - 1];
        candidates.retain(|c| c.0 >= floor);
    }
    candidates
}

/// A cached collection: every dataset's rows.
pub(crate) struct CollectionCache {
    dims: usize,
    datasets: RwLock<HashMap<DatasetId, FlatIndex>>,
    /// Rows of one dataset from which its searches probe partitions
    /// (`None`: every search scans every row).
    partition_rows: Option<usize>,
    /// Rows of one dataset past which its vectors become codes ([`CODED_ROWS`]).
    coded_rows: usize,
}

impl CollectionCache {
    pub(crate) fn new(dims: usize, rows: Vec<(DatasetId, CachedRow)>, partition_rows: Option<usize>) -> Self {
        Self::with_coded_rows(dims, rows, partition_rows, CODED_ROWS)
    }

    fn with_coded_rows(
        dims: usize,
        rows: Vec<(DatasetId, CachedRow)>,
        partition_rows: Option<usize>,
        coded_rows: usize,
    ) -> Self {
        let cache = Self { dims, datasets: RwLock::new(HashMap::new()), partition_rows, coded_rows };
        cache.upsert_rows(rows);
        cache.partition();
        cache
    }

    pub(crate) fn bytes(&self) -> usize {
        self.read().values().map(FlatIndex::bytes).sum()
    }

    pub(crate) fn rows(&self) -> usize {
        self.read().values().map(FlatIndex::len).sum()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<DatasetId, FlatIndex>> {
        // A panic while holding the lock cannot leave a half-applied row
        // (each mutation completes or the process aborts), so a poisoned
        // lock's data is still consistent.
        self.datasets.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<DatasetId, FlatIndex>> {
        self.datasets.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn upsert_rows(&self, rows: Vec<(DatasetId, CachedRow)>) {
        let mut datasets = self.write();
        for (dataset, row) in rows {
            datasets.entry(dataset).or_insert_with(|| FlatIndex::coded_from(self.dims, self.coded_rows)).upsert(row);
        }
    }

    /// Partitions every dataset's rows that want it (at the end of a load).
    pub(crate) fn partition(&self) {
        for index in self.write().values_mut() {
            index.repartition(self.partition_rows);
        }
    }

    /// Whether a dataset's rows have grown past their partitions (or into
    /// wanting some) since the load: the caller drops the cache so a reload
    /// trains them off the search path.
    pub(crate) fn outgrew_partitions(&self) -> bool {
        self.read().values().any(|index| index.wants_partitions(self.partition_rows))
    }

    pub(crate) fn remove(&self, dataset: DatasetId, ids: &[Uuid]) {
        if let Some(index) = self.write().get_mut(&dataset) {
            for id in ids {
                index.remove(id);
            }
        }
    }

    /// Whether a dataset's searches probe partitions (for tests and figures).
    #[cfg(test)]
    pub(crate) fn partitioned(&self, dataset: DatasetId) -> bool {
        self.read().get(&dataset).is_some_and(|index| index.partitions.is_some())
    }

    pub(crate) fn has_rows(&self, dataset: DatasetId) -> bool {
        self.read().get(&dataset).is_some_and(|index| index.len() > 0)
    }

    pub(crate) fn remove_dataset(&self, dataset: DatasetId) {
        self.write().remove(&dataset);
    }

    /// Exact cosine search of one dataset's rows, best first; large scans are
    /// split across blocking threads so they neither stall the async workers
    /// nor use one core only. Without `payloads` the hits' payloads are left
    /// empty (a ranking by id parses no payload).
    pub(crate) async fn search(
        self: &Arc<Self>,
        dataset: DatasetId,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
        payloads: bool,
    ) -> Vec<ScoredResult> {
        let query: Arc<[f32]> = unit(query).into();
        let rows = self.read().get(&dataset).map_or(0, FlatIndex::len);
        if rows == 0 || limit == Some(0) {
            return Vec::new();
        }
        let quantized_limit = limit.filter(|_| !query.iter().all(|x| *x == 0.0));
        if let (Some(limit), None) = (quantized_limit, &filter) {
            let partitioned = self.read().get(&dataset).is_some_and(|index| index.partitions.is_some());
            if partitioned {
                return self.partitioned_search(dataset, query, limit, payloads).await;
            }
        }
        if rows <= ROWS_PER_TASK {
            // One task's rows: searched here, through the codes when a limit
            // lets the first pass leave rows out.
            let datasets = self.read();
            let Some(index) = datasets.get(&dataset) else { return Vec::new() };
            let filter = filter.as_ref();
            let best = match quantized_limit {
                Some(limit) => {
                    let Estimates { mut lowers, candidates } =
                        index.estimate(&QuantizedQuery::new(&query), 0..index.len(), limit, filter);
                    index.rescored(&query, survivors(&mut lowers, candidates, limit), limit, filter)
                }
                None => index.scan(&query, 0..index.len(), limit, filter),
            };
            return best.into_iter().map(|h| index.hit(h, payloads)).collect();
        }
        let filter = Arc::new(filter);
        match quantized_limit {
            Some(limit) => self.quantized_search(dataset, query, rows, limit, filter, payloads).await,
            None => self.split_scan(dataset, query, rows, limit, filter, payloads).await,
        }
    }

    /// The best `limit` rows of the partitions nearest the query: the int8
    /// first pass and the exact re-scoring of [`Self::quantized_search`],
    /// over the probed rows only (an eighth or so of a large collection's), on
    /// one blocking thread. A search with a node-set filter scans every row
    /// instead: its matches may be few and anywhere.
    async fn partitioned_search(
        self: &Arc<Self>,
        dataset: DatasetId,
        query: Arc<[f32]>,
        limit: usize,
        payloads: bool,
    ) -> Vec<ScoredResult> {
        let cache = Arc::clone(self);
        let searched = tokio::task::spawn_blocking(move || {
            let datasets = cache.read();
            let Some(index) = datasets.get(&dataset) else { return Vec::new() };
            let Some(partitions) = &index.partitions else { return Vec::new() };
            let probed = partitions.probe(&query, limit);
            let Estimates { mut lowers, candidates } =
                index.estimate(&QuantizedQuery::new(&query), probed.iter().map(|r| *r as usize), limit, None);
            let candidates = survivors(&mut lowers, candidates, limit);
            tracing::trace!(
                rows = index.len(),
                probed = probed.len(),
                rescored = candidates.len(),
                "partitioned search"
            );
            let best = index.rescored(&query, candidates, limit, None);
            best.into_iter().map(|h| index.hit(h, payloads)).collect()
        });
        // A search cannot panic on stored data.
        searched.await.unwrap_or_default()
    }

    /// Every row scanned exactly, in tasks of [`ROWS_PER_TASK`] rows.
    async fn split_scan(
        self: &Arc<Self>,
        dataset: DatasetId,
        query: Arc<[f32]>,
        rows: usize,
        limit: Option<usize>,
        filter: Arc<Option<NodeSetFilter>>,
        payloads: bool,
    ) -> Vec<ScoredResult> {
        let tasks = (0..rows).step_by(ROWS_PER_TASK).map(|start| {
            let (cache, query, filter) = (Arc::clone(self), Arc::clone(&query), Arc::clone(&filter));
            tokio::task::spawn_blocking(move || {
                let datasets = cache.read();
                let Some(index) = datasets.get(&dataset) else { return Vec::new() };
                let best = index.scan(&query, index.task_range(start), limit, filter.as_ref().as_ref());
                best.into_iter()
                    .map(|(score, row)| (score, index.ids[row], index.hit((score, row), payloads)))
                    .collect::<Vec<_>>()
            })
        });
        let mut merged: Vec<(f64, Uuid, ScoredResult)> = Vec::new();
        for part in futures::future::join_all(tasks).await {
            // A scan cannot panic on stored data; a failed task loses only its part.
            merged.extend(part.unwrap_or_default());
        }
        merged.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some(limit) = limit {
            merged.truncate(limit);
        }
        merged.into_iter().map(|(_, _, hit)| hit).collect()
    }

    /// The exact top `limit`, found through the int8 codes: a first pass in
    /// tasks bounds every row's similarity; the `limit`-th best lower bound
    /// over all tasks is a floor of the `limit`-th exact similarity, so only
    /// rows whose upper bound reaches it are re-scored with their vectors.
    async fn quantized_search(
        self: &Arc<Self>,
        dataset: DatasetId,
        query: Arc<[f32]>,
        rows: usize,
        limit: usize,
        filter: Arc<Option<NodeSetFilter>>,
        payloads: bool,
    ) -> Vec<ScoredResult> {
        let quantized = Arc::new(QuantizedQuery::new(&query));
        let tasks = (0..rows).step_by(ROWS_PER_TASK).map(|start| {
            let (cache, quantized, filter) = (Arc::clone(self), Arc::clone(&quantized), Arc::clone(&filter));
            tokio::task::spawn_blocking(move || {
                let datasets = cache.read();
                let index = datasets.get(&dataset)?;
                Some(index.estimate(&quantized, index.task_range(start), limit, filter.as_ref().as_ref()))
            })
        });
        let mut lowers = Vec::new();
        let mut candidates = Vec::new();
        for part in futures::future::join_all(tasks).await.into_iter().flatten().flatten() {
            lowers.extend(part.lowers);
            candidates.extend(part.candidates);
        }
        let candidates = survivors(&mut lowers, candidates, limit);
        tracing::trace!(rows, limit, rescored = candidates.len(), "int8 first pass");
        let cache = Arc::clone(self);
        let rescored = tokio::task::spawn_blocking(move || {
            let datasets = cache.read();
            let Some(index) = datasets.get(&dataset) else { return Vec::new() };
            let best = index.rescored(&query, candidates, limit, filter.as_ref().as_ref());
            best.into_iter().map(|h| index.hit(h, payloads)).collect()
        });
        // A re-scoring cannot panic on stored data.
        rescored.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::HashSet;

    use super::*;

    fn row(i: u128, vector: Vec<f32>, sets: &[&str]) -> CachedRow {
        CachedRow {
            id: Uuid::from_u128(i),
            vector,
            payload: format!("{{\"i\":{i}}}").into(),
            sets: sets.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn cosine(a: &[f32], b: &[f32]) -> f64 {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
        let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        if na == 0.0 || nb == 0.0 {
            1.0
        } else {
            1.0 - dot / (na * nb)
        }
    }

    fn vector(seed: u64, dims: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..dims)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 20_000) as f32 / 10_000.0 - 1.0
            })
            .collect()
    }

    /// The split scan returns exactly the brute-force ranking, in order, with
    /// cosine distances, whatever the number of tasks; with codes, the
    /// brute-force ranking to within the codes' precision.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn split_scan_equals_brute_force() {
        let ds = DatasetId(Uuid::from_u128(9));
        let n = ROWS_PER_TASK * 2 + 123;
        let rows = || -> Vec<(DatasetId, CachedRow)> {
            (0..n as u128).map(|i| (ds, row(i + 1, vector(i as u64, 16), &[]))).collect()
        };
        let stored: Vec<Vec<f32>> = rows().iter().map(|(_, r)| r.vector.clone()).collect();
        let exact = Arc::new(CollectionCache::new(16, rows(), None));
        let coded = Arc::new(CollectionCache::with_coded_rows(16, rows(), None, 1_000));
        assert!(coded.read()[&ds].is_coded() && !exact.read()[&ds].is_coded());
        for probe in [0u64, 77, 40_000] {
            let q = vector(probe + 1_000_000, 16);
            let mut expected: Vec<(f64, usize)> = stored.iter().enumerate().map(|(i, v)| (cosine(&q, v), i)).collect();
            expected.sort_by(|a, b| a.0.total_cmp(&b.0));
            let hits = exact.search(ds, &q, Some(25), None, true).await;
            assert_eq!(hits.len(), 25);
            for (hit, (d, i)) in hits.iter().zip(&expected) {
                assert_eq!(hit.id, Uuid::from_u128(*i as u128 + 1));
                assert!((hit.score - d).abs() < 1e-5, "{} vs {d}", hit.score);
                assert_eq!(hit.payload["i"], *i as u64 + 1);
            }
            let hits = coded.search(ds, &q, Some(25), None, true).await;
            assert_eq!(hits.len(), 25);
            for (hit, (d, _)) in hits.iter().zip(&expected) {
                let i = hit.id.as_u128() as usize - 1;
                assert!((hit.score - d).abs() < 1e-4, "rank by rank: {} vs {d}", hit.score);
                assert!((hit.score - cosine(&q, &stored[i])).abs() < 1e-4, "its own distance");
                assert_eq!(hit.payload["i"], i as u64 + 1);
            }
        }
        for cache in [&exact, &coded] {
            assert_eq!(cache.search(ds, &vector(5, 16), None, None, true).await.len(), n, "no limit: every row");
            assert!(cache.search(DatasetId(Uuid::from_u128(8)), &vector(5, 16), None, None, true).await.is_empty());
        }
    }

    /// Every row's re-scored similarity lies within its int8 bounds, and the
    /// bounds are tight enough to prune: dense and sparse 384-wide rows, held
    /// in f32 and as codes.
    #[test]
    fn int8_bounds_hold() {
        let dims = 384;
        for coded_from in [0, CODED_ROWS] {
            let mut index = FlatIndex::coded_from(dims, coded_from);
            for i in 0..2_000u64 {
                let mut v = vector(i, dims);
                if i.is_multiple_of(2) {
                    // Sparse, as hashed token counts are.
                    for (j, x) in v.iter_mut().enumerate() {
                        if !(j as u64 + i).is_multiple_of(29) {
                            *x = 0.0;
                        }
                    }
                }
                index.upsert(row(u128::from(i), v, &[]));
            }
            assert_eq!(index.is_coded(), coded_from == 0);
            let mut widths = Vec::new();
            for probe in 0..20u64 {
                let q = unit(&vector(probe + 10_000, dims));
                let quantized = QuantizedQuery::new(&q);
                for r in 0..index.len() {
                    let similarity = 1.0 - index.distance(&q, r);
                    let (lower, upper) = index.bounds(&quantized, r);
                    assert!(lower <= similarity && similarity <= upper, "{lower} <= {similarity} <= {upper}");
                    widths.push(upper - lower);
                }
            }
            widths.sort_by(f64::total_cmp);
            assert!(widths[widths.len() / 2] < 0.05, "median bound width {}", widths[widths.len() / 2]);
        }
    }

    /// The two codes decode to within 1e-4 of each unit vector (dense,
    /// sparse, one-hot), a row is at distance 0 from itself to within 1e-6,
    /// and they cost 2 bytes a dimension.
    #[test]
    fn codes_decode_close_to_the_vector() {
        let dims = 384;
        let mut index = FlatIndex::coded_from(dims, 0);
        let mut originals = Vec::new();
        for i in 0..500u64 {
            let mut v = vector(i, dims);
            if i.is_multiple_of(2) {
                v.iter_mut()
                    .enumerate()
                    .filter(|(j, _)| !(*j as u64 + i).is_multiple_of(29))
                    .for_each(|(_, x)| *x = 0.0);
            }
            if i.is_multiple_of(5) {
                v = (0..dims).map(|j| if j as u64 == i % dims as u64 { 3.0 } else { 0.0 }).collect();
            }
            originals.push(unit(&v));
            index.upsert(row(u128::from(i), v, &[]));
        }
        let mut worst = (0f64, 0f64);
        let all = index.decoded_rows();
        for (r, v) in originals.iter().enumerate() {
            let decoded = &all[r * dims..(r + 1) * dims];
            let gap = v.iter().zip(decoded).map(|(a, b)| f64::from(a - b).powi(2)).sum::<f64>().sqrt();
            worst = (worst.0.max(gap), worst.1.max(index.distance(v, r).abs()));
        }
        assert!(worst.0 < 1e-4, "largest gap {}", worst.0);
        assert!(worst.1 < 1e-6, "largest self-distance {}", worst.1);
        assert!(index.bytes() < index.len() * (2 * dims + ROW_OVERHEAD + 64), "{} bytes", index.bytes());
    }

    /// The int8 first pass never changes a result: near-duplicate clusters,
    /// exact ties (ranked by id), zero rows and node-set filters give the
    /// exhaustive scan's ids and scores, bit for bit, both when one task's
    /// rows are searched in place and when the pass is split across tasks.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn quantized_search_equals_exhaustive_scan() {
        for n in [3_007, ROWS_PER_TASK * 2 + 7] {
            for coded_rows in [0, CODED_ROWS] {
                quantized_search_of(n, coded_rows).await;
            }
        }
    }

    async fn quantized_search_of(n: usize, coded_rows: usize) {
        let ds = DatasetId(Uuid::from_u128(7));
        let dims = 384;
        let rows: Vec<(DatasetId, CachedRow)> = (0..n as u64)
            .map(|i| {
                let mut v = vector(i % 40, dims);
                if !i.is_multiple_of(7) {
                    // A near-duplicate of its cluster's centre; every 7th is an exact tie.
                    v[(i % dims as u64) as usize] += (i % 1000) as f32 * 1e-4;
                }
                if i % 1000 == 999 {
                    v = vec![0.0; dims];
                }
                let sets: &[&str] = if i.is_multiple_of(3) { &["a"] } else { &["b"] };
                (ds, row(u128::from(i) + 1, v, sets))
            })
            .collect();
        let cache = Arc::new(CollectionCache::with_coded_rows(dims, rows, None, coded_rows));
        let filters = [None, Some(NodeSetFilter::Any(vec!["a".into()]))];
        for probe in [3u64, 17, 555] {
            let mut q = vector(probe, dims);
            q[0] += 0.01;
            for filter in &filters {
                let all = cache.search(ds, &q, None, filter.clone(), true).await;
                for k in [1, 10, 100, 1_000] {
                    let top = cache.search(ds, &q, Some(k), filter.clone(), true).await;
                    let want: Vec<(Uuid, f64)> = all.iter().take(k).map(|h| (h.id, h.score)).collect();
                    let got: Vec<(Uuid, f64)> = top.iter().map(|h| (h.id, h.score)).collect();
                    assert_eq!(got, want, "{n} rows, probe {probe}, k {k}, filter {filter:?}");
                }
            }
        }
    }

    /// Rows clustered around `clusters` centres (the structure real
    /// embeddings have and IVF relies on), `dims` wide.
    fn clustered(seed: u64, clusters: u64, dims: usize) -> Vec<f32> {
        let centre = vector(seed % clusters, dims);
        let noise = vector(seed + 1_000_000, dims);
        centre.iter().zip(&noise).map(|(c, n)| c + 0.35 * n).collect()
    }

    /// A search whose probes reach every partition equals the exhaustive
    /// scan, before and after rows are added, replaced and removed: the
    /// partitions' upkeep loses no row and lists none twice.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn partitioned_search_probing_every_partition_equals_the_scan() {
        let ds = DatasetId(Uuid::from_u128(5));
        let dims = 16;
        let n = crate::partitions::ROWS_PER_PARTITION * 3;
        let rows = |range: std::ops::Range<u64>, shift: u64| -> Vec<(DatasetId, CachedRow)> {
            range.map(|i| (ds, row(u128::from(i) + 1, clustered(i + shift, 50, dims), &[]))).collect()
        };
        let partitioned = Arc::new(CollectionCache::new(dims, rows(0..n as u64, 0), Some(1_000)));
        let exact = Arc::new(CollectionCache::new(dims, rows(0..n as u64, 0), None));
        assert!(partitioned.partitioned(ds) && !exact.partitioned(ds));
        let compare = |label: &'static str| {
            let (partitioned, exact) = (Arc::clone(&partitioned), Arc::clone(&exact));
            async move {
                for probe in [1u64, 33, 4_242] {
                    let q = clustered(probe + 7_000_000, 50, dims);
                    for k in [1, 10, 100] {
                        let got: Vec<(Uuid, f64)> = partitioned
                            .search(ds, &q, Some(k), None, false)
                            .await
                            .iter()
                            .map(|h| (h.id, h.score))
                            .collect();
                        let want: Vec<(Uuid, f64)> =
                            exact.search(ds, &q, Some(k), None, false).await.iter().map(|h| (h.id, h.score)).collect();
                        assert_eq!(got, want, "{label}: probe {probe}, k {k}");
                    }
                }
            }
        };
        compare("as loaded").await;
        let ids: Vec<Uuid> = [0u128, 5, 9, n as u128 - 1].iter().map(|i| Uuid::from_u128(i + 1)).collect();
        for cache in [&partitioned, &exact] {
            // New rows, rows replaced with other vectors, rows removed (the last one too).
            cache.upsert_rows(rows(n as u64..n as u64 + 500, 0));
            cache.upsert_rows(rows(100..300, 13));
            cache.remove(ds, &ids);
        }
        assert!(!partitioned.outgrew_partitions(), "grown by a few rows only");
        compare("after upkeep").await;
    }

    /// Past the partition threshold a search reads a share of the rows and
    /// still finds most true neighbours on clustered rows; under it, and
    /// after rows fourfold, the cache asks to be loaded (and partitioned) again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn partitioned_search_finds_most_true_neighbours() {
        let ds = DatasetId(Uuid::from_u128(6));
        let dims = 32;
        let n = crate::partitions::ROWS_PER_PARTITION * 40;
        let rows: Vec<(DatasetId, CachedRow)> =
            (0..n as u64).map(|i| (ds, row(u128::from(i) + 1, clustered(i, 400, dims), &[]))).collect();
        let exact = Arc::new(CollectionCache::new(dims, rows.iter().map(|(d, r)| (*d, clone_row(r))).collect(), None));
        let partitioned = Arc::new(CollectionCache::new(dims, rows, Some(n)));
        assert!(partitioned.partitioned(ds));
        let (mut found, mut wanted) = (0usize, 0usize);
        for probe in 0..40u64 {
            let q = clustered(probe * 7_919 + 3, 400, dims);
            let truth: HashSet<Uuid> = exact.search(ds, &q, Some(10), None, false).await.iter().map(|h| h.id).collect();
            let got = partitioned.search(ds, &q, Some(10), None, false).await;
            assert_eq!(got.len(), 10);
            wanted += truth.len();
            found += got.iter().filter(|h| truth.contains(&h.id)).count();
            // Whatever it returns is ranked by its exact distance.
            assert!(got.windows(2).all(|w| w[0].score <= w[1].score));
        }
        let recall = found as f64 / wanted as f64;
        assert!(recall >= 0.9, "recall@10 {recall}");
        // A node-set filter scans every row: exact.
        let filter = Some(NodeSetFilter::Any(vec!["none".into()]));
        assert!(partitioned.search(ds, &clustered(3, 400, dims), Some(10), filter, false).await.is_empty());

        let small = CollectionCache::new(
            dims,
            (0..900u64).map(|i| (ds, row(u128::from(i), clustered(i, 9, dims), &[]))).collect(),
            Some(1_000),
        );
        assert!(!small.partitioned(ds) && !small.outgrew_partitions());
        small.upsert_rows((900..1_000u64).map(|i| (ds, row(u128::from(i), clustered(i, 9, dims), &[]))).collect());
        assert!(small.outgrew_partitions(), "grown into partitions: reload");
    }

    fn clone_row(r: &CachedRow) -> CachedRow {
        CachedRow { id: r.id, vector: r.vector.clone(), payload: r.payload.clone(), sets: r.sets.clone() }
    }

    /// Past `coded_from` rows the f32 vectors become codes, once: the bytes
    /// per row fall, and searches, replacements and removals go on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn vectors_become_codes_past_the_threshold() {
        let ds = DatasetId(Uuid::from_u128(3));
        let dims = 64;
        let rows = |range: std::ops::Range<u64>| -> Vec<(DatasetId, CachedRow)> {
            range.map(|i| (ds, row(u128::from(i) + 1, vector(i, dims), &[]))).collect()
        };
        let cache = Arc::new(CollectionCache::with_coded_rows(dims, rows(0..1_000), None, 1_000));
        assert!(!cache.read()[&ds].is_coded(), "1 000 rows: still f32");
        let before = cache.bytes();
        cache.upsert_rows(rows(1_000..1_001));
        assert!(cache.read()[&ds].is_coded(), "one more: codes");
        assert!(cache.bytes() < before - 1_000 * dims, "{} bytes, were {before}", cache.bytes());
        cache.upsert_rows(vec![(ds, row(6, vector(99_999, dims), &[]))]);
        cache.remove(ds, &[Uuid::from_u128(1), Uuid::from_u128(1_001)]);
        assert_eq!(cache.rows(), 999);
        for (probe, want) in [(99_999u64, 6u128), (500, 501), (999, 1_000)] {
            let top = cache.search(ds, &vector(probe, dims), Some(3), None, false).await;
            assert_eq!(top[0].id, Uuid::from_u128(want), "probe {probe}");
            assert!(top[0].score.abs() < 1e-6, "{}", top[0].score);
        }
        assert!(cache.search(ds, &vector(0, dims), Some(1), None, false).await[0].id != Uuid::from_u128(1));
    }

    /// Replacing, removing (including the last row and a moved one) and
    /// filtering keep the index consistent.
    #[tokio::test]
    async fn updates_and_filters() {
        let ds = DatasetId(Uuid::from_u128(1));
        let cache = Arc::new(CollectionCache::new(
            2,
            vec![
                (ds, row(1, vec![1.0, 0.0], &["a"])),
                (ds, row(2, vec![0.0, 1.0], &["b"])),
                (ds, row(3, vec![1.0, 1.0], &["a", "b"])),
                (ds, row(4, vec![0.0, 0.0], &[])),
            ],
            None,
        ));
        let ids = |hits: Vec<ScoredResult>| hits.iter().map(|h| h.id.as_u128()).collect::<Vec<_>>();
        assert_eq!(ids(cache.search(ds, &[1.0, 0.1], None, None, true).await), vec![1, 3, 2, 4]);
        let zero = cache.search(ds, &[1.0, 0.1], None, None, true).await.pop().unwrap();
        assert_eq!((zero.id.as_u128(), zero.score), (4, 1.0), "a zero vector is at distance 1");
        // Row 2 now points along x; row 1 is removed (row 4 moves into its place).
        cache.upsert_rows(vec![(ds, row(2, vec![3.0, 0.0], &["b"]))]);
        cache.remove(ds, &[Uuid::from_u128(1), Uuid::from_u128(99)]);
        assert_eq!(ids(cache.search(ds, &[1.0, 0.0], None, None, true).await), vec![2, 3, 4]);
        assert!(cache.search(ds, &[1.0, 0.0], Some(1), None, true).await[0].score.abs() < 1e-6);
        let any_a = NodeSetFilter::Any(vec!["a".into()]);
        assert_eq!(ids(cache.search(ds, &[1.0, 0.0], None, Some(any_a), true).await), vec![3]);
        let all = NodeSetFilter::All(vec!["a".into(), "b".into()]);
        assert_eq!(ids(cache.search(ds, &[0.0, 1.0], Some(5), Some(all), true).await), vec![3]);
        assert_eq!(cache.rows(), 3);
        let fresh = CollectionCache::new(
            2,
            vec![
                (ds, row(2, vec![3.0, 0.0], &["b"])),
                (ds, row(3, vec![1.0, 1.0], &["a", "b"])),
                (ds, row(4, vec![0.0, 0.0], &[])),
            ],
            None,
        );
        assert_eq!(cache.bytes(), fresh.bytes(), "the byte count follows replacements and removals");
        cache.remove_dataset(ds);
        assert_eq!(cache.rows(), 0);
        assert!(cache.search(ds, &[1.0, 0.0], None, None, true).await.is_empty());
    }
}
