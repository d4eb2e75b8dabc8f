//! Partitions of a large cached collection (an in-memory IVF): the rows are
//! grouped around centroids trained by spherical k-means, and a search with
//! a limit scans only the rows of the partitions whose centroids are
//! closest to the query. Past a few hundred thousand rows a search reads a
//! tenth of them instead of all; the price is that the result is the best
//! of the probed rows, not of every row (docs/backends.md, "Partitions").

use simsimd::SpatialSimilarity;

/// Rows per partition the training aims at.
pub(crate) const ROWS_PER_PARTITION: usize = 4_096;

/// Sample rows per centroid the training iterates on.
const SAMPLE_PER_PARTITION: usize = 32;

/// k-means iterations over the sample.
const ITERATIONS: usize = 8;

/// The least partitions a search probes, and the share of them (1 in
/// `PROBE_SHARE`) it probes when there are more.
const MIN_PROBES: usize = 8;
const PROBE_SHARE: usize = 8;

/// The partitions of one dataset's rows of a collection.
pub(crate) struct Partitions {
    dims: usize,
    /// Unit centroids, row-major.
    centroids: Vec<f32>,
    /// The rows of each partition.
    members: Vec<Vec<u32>>,
    /// The partition of each row (parallel to the index's rows).
    of_row: Vec<u32>,
    /// Rows when trained: the index retrains when it has grown well past it.
    trained_rows: usize,
}

impl Partitions {
    /// Trains on `vectors` (unit, row-major, `dims` wide) and assigns every
    /// row. Deterministic: the same rows give the same partitions.
    pub(crate) fn train(vectors: &[f32], dims: usize) -> Self {
        let rows = vectors.len() / dims.max(1);
        let k = (rows / ROWS_PER_PARTITION).clamp(1, 4_096);
        let sample: Vec<usize> = strided(rows, (k * SAMPLE_PER_PARTITION).min(rows));
        let row = |r: usize| &vectors[r * dims..(r + 1) * dims];
        // Initial centroids: k sample rows spread over the sample.
        let mut centroids: Vec<f32> =
            strided(sample.len(), k).into_iter().flat_map(|i| row(sample[i]).to_vec()).collect();
        for _ in 0..ITERATIONS {
            let mut sums = vec![0f64; k * dims];
            let mut counts = vec![0usize; k];
            for &r in &sample {
                let c = nearest(&centroids, dims, row(r));
                counts[c] += 1;
                for (s, x) in sums[c * dims..(c + 1) * dims].iter_mut().zip(row(r)) {
                    *s += f64::from(*x);
                }
            }
            for c in 0..k {
                let sum = &sums[c * dims..(c + 1) * dims];
                let norm = sum.iter().map(|s| s * s).sum::<f64>().sqrt();
                // An empty or degenerate cluster keeps its centroid.
                if counts[c] > 0 && norm > 0.0 {
                    for (x, s) in centroids[c * dims..(c + 1) * dims].iter_mut().zip(sum) {
                        *x = (s / norm) as f32;
                    }
                }
            }
        }
        let of_row = assign_all(&centroids, dims, vectors);
        let mut members = vec![Vec::new(); k];
        for (r, &c) in of_row.iter().enumerate() {
            members[c as usize].push(r as u32);
        }
        Self { dims, centroids, members, of_row, trained_rows: rows }
    }

    pub(crate) fn trained_rows(&self) -> usize {
        self.trained_rows
    }

    pub(crate) fn count(&self) -> usize {
        self.members.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.centroids.len() * 4 + self.of_row.len() * 8
    }

    /// A row appended at the end (its number is the current row count).
    pub(crate) fn push(&mut self, vector: &[f32]) {
        let c = nearest(&self.centroids, self.dims, vector) as u32;
        self.members[c as usize].push(self.of_row.len() as u32);
        self.of_row.push(c);
    }

    /// Row `at` now holds `vector`.
    pub(crate) fn replace(&mut self, at: usize, vector: &[f32]) {
        let c = nearest(&self.centroids, self.dims, vector) as u32;
        let old = self.of_row[at];
        if old != c {
            self.unlink(old, at as u32);
            self.members[c as usize].push(at as u32);
            self.of_row[at] = c;
        }
    }

    /// Row `at` removed, the last row moved into its place (as the index's
    /// `swap_remove` does).
    pub(crate) fn swap_remove(&mut self, at: usize) {
        let last = self.of_row.len() - 1;
        self.unlink(self.of_row[at], at as u32);
        if at != last {
            let moved = self.of_row[last];
            if let Some(slot) = self.members[moved as usize].iter_mut().find(|r| **r == last as u32) {
                *slot = at as u32;
            }
        }
        self.of_row.swap_remove(at);
    }

    fn unlink(&mut self, partition: u32, row: u32) {
        let list = &mut self.members[partition as usize];
        if let Some(i) = list.iter().position(|r| *r == row) {
            list.swap_remove(i);
        }
    }

    /// The rows of the partitions closest to `query`: the nearest eighth of
    /// the partitions (at least [`MIN_PROBES`]), and more while they hold
    /// fewer than `want` rows.
    pub(crate) fn probe(&self, query: &[f32], want: usize) -> Vec<u32> {
        let mut order: Vec<(f32, usize)> = (0..self.count())
            .map(|c| (f32::dot(query, &self.centroids[c * self.dims..(c + 1) * self.dims]).unwrap_or(0.0) as f32, c))
            .collect();
        order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let probes = (self.count() / PROBE_SHARE).max(MIN_PROBES);
        let mut rows = Vec::new();
        for (i, (_, c)) in order.into_iter().enumerate() {
            if i >= probes && rows.len() >= want {
                break;
            }
            rows.extend_from_slice(&self.members[c]);
        }
        rows
    }
}

/// `take` indexes spread evenly over `0..len`.
fn strided(len: usize, take: usize) -> Vec<usize> {
    if take == 0 {
        return Vec::new();
    }
    (0..take).map(|i| i * len / take).collect()
}

/// The centroid with the highest dot product (ties to the lower index).
fn nearest(centroids: &[f32], dims: usize, vector: &[f32]) -> usize {
    let mut best = (f64::NEG_INFINITY, 0);
    for (c, centroid) in centroids.chunks_exact(dims).enumerate() {
        let s = f32::dot(vector, centroid).unwrap_or(0.0);
        if s > best.0 {
            best = (s, c);
        }
    }
    best.1
}

/// Every row's partition, split over the machine's cores.
fn assign_all(centroids: &[f32], dims: usize, vectors: &[f32]) -> Vec<u32> {
    let rows = vectors.len() / dims.max(1);
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(rows.div_ceil(65_536)).max(1);
    let per = rows.div_ceil(threads).max(1);
    let assigned: Vec<u32> = std::thread::scope(|scope| {
        let parts: Vec<_> = vectors
            .chunks(per * dims)
            .map(|part| {
                scope.spawn(move || {
                    part.chunks_exact(dims).map(|v| nearest(centroids, dims, v) as u32).collect::<Vec<u32>>()
                })
            })
            .collect();
        parts.into_iter().flat_map(|p| p.join().unwrap_or_default()).collect()
    });
    if assigned.len() == rows {
        return assigned;
    }
    // A thread that failed (it only computes dot products) is made good here.
    vectors.chunks_exact(dims).map(|v| nearest(centroids, dims, v) as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dims: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let v: Vec<f32> = (0..dims)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 20_000) as f32 / 10_000.0 - 1.0
            })
            .collect();
        let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
        v.into_iter().map(|a| a / norm).collect()
    }

    /// Every row is in exactly the partition `of_row` names.
    fn assert_consistent(p: &Partitions) {
        let mut seen = vec![0usize; p.of_row.len()];
        for (c, list) in p.members.iter().enumerate() {
            for &r in list {
                assert_eq!(p.of_row[r as usize] as usize, c, "row {r} listed under {c}");
                seen[r as usize] += 1;
            }
        }
        assert!(seen.iter().all(|n| *n == 1), "every row in exactly one partition");
    }

    /// Training is deterministic, sizes the partitions from the rows, and
    /// pushes, replacements and swap-removals (the last row, a moved row)
    /// keep every row in exactly one partition.
    #[test]
    fn training_and_upkeep_keep_every_row_in_one_partition() {
        let dims = 16;
        let rows = ROWS_PER_PARTITION * 5 + 17;
        let vectors: Vec<f32> = (0..rows as u64).flat_map(|i| unit(i, dims)).collect();
        let mut p = Partitions::train(&vectors, dims);
        assert_eq!(p.count(), 5);
        assert_eq!(p.trained_rows(), rows);
        assert_eq!(Partitions::train(&vectors, dims).of_row, p.of_row, "deterministic");
        assert!(p.members.iter().all(|m| !m.is_empty()), "no partition left empty on this data");
        assert_consistent(&p);
        for i in 0..50u64 {
            p.push(&unit(1_000_000 + i, dims));
        }
        for at in [0, 7, 100, rows + 3] {
            p.replace(at, &unit(2_000_000 + at as u64, dims));
        }
        for at in [p.of_row.len() - 1, 0, 5, 5, 4_000] {
            p.swap_remove(at);
        }
        assert_eq!(p.of_row.len(), rows + 50 - 5);
        assert_consistent(&p);
        // Probing every partition returns every row once.
        let mut all = p.probe(&unit(9, dims), usize::MAX);
        all.sort_unstable();
        assert_eq!(all, (0..p.of_row.len() as u32).collect::<Vec<_>>());
    }

    /// A search probes the nearest eighth of the partitions (at least
    /// eight), more only while they hold fewer rows than it wants.
    #[test]
    fn probes_the_nearest_share_of_the_partitions() {
        let dims = 8;
        let rows = ROWS_PER_PARTITION * 80;
        let vectors: Vec<f32> = (0..rows as u64).flat_map(|i| unit(i, dims)).collect();
        let p = Partitions::train(&vectors, dims);
        assert_eq!(p.count(), 80);
        let q = unit(77, dims);
        let probed = p.probe(&q, 1);
        let partitions_probed = |rows: &[u32]| {
            let mut ps: Vec<u32> = rows.iter().map(|r| p.of_row[*r as usize]).collect();
            ps.sort_unstable();
            ps.dedup();
            ps
        };
        assert_eq!(partitions_probed(&probed).len(), 10);
        // The probed partitions are the ten whose centroids are nearest.
        let score = |c: u32| f32::dot(&q, &p.centroids[c as usize * dims..(c as usize + 1) * dims]).unwrap();
        let worst_probed = partitions_probed(&probed).into_iter().map(score).fold(f64::INFINITY, f64::min);
        for c in 0..80u32 {
            if !partitions_probed(&probed).contains(&c) {
                assert!(score(c) <= worst_probed);
            }
        }
        assert_eq!(p.probe(&q, rows).len(), rows, "wanting every row probes every partition");
    }
}
