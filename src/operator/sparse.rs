//! The linear kernel of sparse rows as a factor: `K_0 = XX'` with `Φ = X`, a CSR matrix
//! of `m` rows, read without ever making `X` or any `m×p` or `p×p` matrix dense. Its
//! products cost two reads of the stored entries a right-hand side, `Φ'x` by the columns
//! (the transpose, made once) and `Φ(Φ'x)` by the rows; the columns' quadratic forms come
//! from `G = Φ'WΦ` one row at a time, never held whole. Only the features some row stores
//! are indexed, so a matrix of many declared columns costs its entries alone.
//!
//! Every sum is in `f64` in an order fixed by the matrix (a row's entries in increasing
//! feature order, a column's in increasing row order), so no value depends on the thread
//! count, and a row of `K_0` is exactly its column: `K_0[i, j]` sums the products of the
//! features both rows store, in increasing feature order, whichever row is read.

use crate::csr::CsrView;
use crate::error::{check_stop, try_zeroed, Result};
use crate::real::Real;
use crate::tuning::{
    FACTOR_BLOCK_ROWS, SPARSE_FACTOR_BLOCKS_PER_THREAD, SPARSE_FACTOR_BLOCK_FEATURES,
};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// `Φ = X` of CSR rows, with its transpose: the operator of `XX'`
/// ([`super::KernelOperator::Sparse`]).
#[derive(Debug)]
pub struct SparseFactor<'a, F> {
    rows: CsrView<'a, F>,
    /// Each stored entry's feature, numbered among the features some row stores.
    feature_of_entry: Vec<usize>,
    /// The transpose: feature `f`'s entries are `feature_starts[f]..feature_starts[f + 1]`
    /// of `entry_rows` and `entry_values`, in increasing row order.
    feature_starts: Vec<usize>,
    entry_rows: Vec<usize>,
    entry_values: Vec<F>,
    /// Stored entry `e` (row order) is entry `transposed[e]` of the transpose.
    transposed: Vec<usize>,
}

impl<'a, F: Real> SparseFactor<'a, F> {
    /// The factor of the rows `rows`, its transpose made on `n_threads` threads
    /// (O(nnz log nnz), allocated fallibly: 48 bytes and a value an entry while it is made, 32
    /// and a value after). Gives up with `Error::Interrupted` between its steps once `stop`
    /// is raised, as its [`column_forms`](Self::column_forms) does.
    pub fn new(rows: CsrView<'a, F>, n_threads: usize, stop: &AtomicBool) -> Result<Self> {
        let pool = crate::pool::shared(n_threads)?;
        let nnz = rows.nnz();
        // (feature, entry) of every entry, sorted: the transpose's order. Entries are
        // distinct, so the unstable sort has one result.
        let mut order = try_zeroed::<(usize, usize)>(nnz, "the sparse factor's transpose")?;
        for i in 0..rows.nrows() {
            for at in rows.entries(i) {
                order[at] = (rows.column(at), at);
            }
        }
        check_stop(stop)?;
        pool.install(|| order.par_sort_unstable());
        check_stop(stop)?;
        let mut feature_of_entry = try_zeroed::<usize>(nnz, "the sparse factor's transpose")?;
        let mut entry_rows = try_zeroed::<usize>(nnz, "the sparse factor's transpose")?;
        let mut entry_values = try_zeroed::<F>(nnz, "the sparse factor's transpose")?;
        let mut transposed = try_zeroed::<usize>(nnz, "the sparse factor's transpose")?;
        let mut feature_starts = Vec::new();
        let mut row_of = try_zeroed::<usize>(nnz, "the sparse factor's transpose")?;
        for i in 0..rows.nrows() {
            row_of[rows.entries(i)].fill(i);
        }
        check_stop(stop)?;
        let values = rows.values();
        let mut previous = None;
        for (place, &(feature, at)) in order.iter().enumerate() {
            if previous != Some(feature) {
                feature_starts.push(place);
                previous = Some(feature);
            }
            feature_of_entry[at] = feature_starts.len() - 1;
            entry_rows[place] = row_of[at];
            entry_values[place] = values[at];
            transposed[at] = place;
        }
        feature_starts.push(nnz);
        Ok(SparseFactor {
            rows,
            feature_of_entry,
            feature_starts,
            entry_rows,
            entry_values,
            transposed,
        })
    }

    /// `m`, the rows.
    pub fn m(&self) -> usize {
        self.rows.nrows()
    }

    /// The features some row stores: the columns of `Φ` the operator indexes.
    pub fn features(&self) -> usize {
        self.feature_starts.len() - 1
    }

    /// The stored entries.
    pub fn nnz(&self) -> usize {
        self.rows.nnz()
    }

    /// `Σ_{e ∈ row i} value_e · y[feature_e · r + j]` for every row `i` and `j < r`, in
    /// `f64`, as `r` vectors of `m`: `Φ` times the `r` columns of the feature-major `y`.
    fn times(&self, pool: &rayon::ThreadPool, y: &[f64], r: usize) -> Vec<Vec<F>> {
        let m = self.m();
        let values = self.rows.values();
        let mut out = vec![F::zero(); m * r];
        pool.install(|| {
            out.par_chunks_mut(FACTOR_BLOCK_ROWS * r.max(1))
                .enumerate()
                .for_each(|(block, out)| {
                    let mut sums = vec![0.0f64; r];
                    for (local, out) in out.chunks_exact_mut(r).enumerate() {
                        let i = block * FACTOR_BLOCK_ROWS + local;
                        sums.fill(0.0);
                        for at in self.rows.entries(i) {
                            let value = values[at].as_f64();
                            let y = &y[self.feature_of_entry[at] * r..][..r];
                            sums.iter_mut().zip(y).for_each(|(s, &y)| *s += value * y);
                        }
                        out.iter_mut()
                            .zip(&sums)
                            .for_each(|(o, &s)| *o = F::from_f64(s));
                    }
                });
        });
        (0..r)
            .map(|j| out.iter().skip(j).step_by(r).copied().collect())
            .collect()
    }

    /// `ΦΦ'x` for each right-hand side: `Φ'X` by the transpose's features, then `Φ(Φ'X)`.
    pub fn multiply(&self, pool: &rayon::ThreadPool, rhs: &[&[F]]) -> Vec<Vec<F>> {
        let r = rhs.len();
        if r == 0 {
            return Vec::new();
        }
        let mut transposed_product = vec![0.0f64; self.features() * r];
        pool.install(|| {
            transposed_product
                .par_chunks_mut(SPARSE_FACTOR_BLOCK_FEATURES * r)
                .enumerate()
                .for_each(|(block, out)| {
                    for (local, out) in out.chunks_exact_mut(r).enumerate() {
                        let f = block * SPARSE_FACTOR_BLOCK_FEATURES + local;
                        for place in self.feature_starts[f]..self.feature_starts[f + 1] {
                            let value = self.entry_values[place].as_f64();
                            let row = self.entry_rows[place];
                            out.iter_mut()
                                .zip(rhs)
                                .for_each(|(o, x)| *o += value * x[row].as_f64());
                        }
                    }
                });
        });
        self.times(pool, &transposed_product, r)
    }

    /// Rows `picks` of `ΦΦ'`: each picked row spread over the features, then `Φ` times them.
    pub fn rows(&self, pool: &rayon::ThreadPool, picks: &[usize]) -> Vec<Vec<F>> {
        let r = picks.len();
        if r == 0 {
            return Vec::new();
        }
        let values = self.rows.values();
        let mut spread = vec![0.0f64; self.features() * r];
        for (j, &pick) in picks.iter().enumerate() {
            for at in self.rows.entries(pick) {
                spread[self.feature_of_entry[at] * r + j] = values[at].as_f64();
            }
        }
        self.times(pool, &spread, r)
    }

    /// `‖Φ_i‖²` of each row.
    pub fn diagonal(&self) -> Vec<F> {
        self.rows
            .squared_norms()
            .into_iter()
            .map(F::from_f64)
            .collect()
    }

    /// `Φ_i G Φ_i'` for each row, `G = Φ'WΦ` (`W = diag(weights)`, `None` the identity): the
    /// columns' quadratic forms `K_0[:, i]'W K_0[:, i]`. `G`'s row `a` is made for one
    /// feature at a time (`Σ_{j stores a} W_j Φ_ja Φ_j`, over the rows that store `a`), and
    /// each row `i` storing `a` takes its share `Φ_ia (G_a · Φ_i)`; a row's shares are then
    /// added in its feature order. O(Σ_i nnz_i²) in all, whatever the features' number.
    /// Gives up with `Error::Interrupted` once `stop` is raised, looked at before each range
    /// of features.
    pub fn column_forms(
        &self,
        pool: &rayon::ThreadPool,
        weights: Option<&[F]>,
        stop: &AtomicBool,
    ) -> Result<Vec<F>> {
        let n_features = self.features();
        let values = self.rows.values();
        let blocks = self.blocks_of_equal_work(pool.current_num_threads());
        let shares = pool.install(|| {
            blocks
                .par_windows(2)
                .map_init(
                    || {
                        (
                            vec![0.0f64; n_features],
                            vec![false; n_features],
                            Vec::new(),
                        )
                    },
                    |(gram_row, stored, touched), block| {
                        check_stop(stop)?;
                        let features = block[0]..block[1];
                        let places =
                            self.feature_starts[features.start]..self.feature_starts[features.end];
                        let mut shares = Vec::with_capacity(places.len());
                        for f in features {
                            let column = self.feature_starts[f]..self.feature_starts[f + 1];
                            for place in column.clone() {
                                let row = self.entry_rows[place];
                                let weight = weights.map_or(1.0, |w| w[row].as_f64());
                                let scale = weight * self.entry_values[place].as_f64();
                                for at in self.rows.entries(row) {
                                    let b = self.feature_of_entry[at];
                                    gram_row[b] += scale * values[at].as_f64();
                                    if !stored[b] {
                                        stored[b] = true;
                                        touched.push(b);
                                    }
                                }
                            }
                            for place in column.clone() {
                                let row = self.entry_rows[place];
                                let dot: f64 = self
                                    .rows
                                    .entries(row)
                                    .map(|at| {
                                        values[at].as_f64() * gram_row[self.feature_of_entry[at]]
                                    })
                                    .sum();
                                shares.push(self.entry_values[place].as_f64() * dot);
                            }
                            // Cleared by the list of what the row touched: a frequent
                            // feature's rows hold far more entries than there are features.
                            for b in touched.drain(..) {
                                gram_row[b] = 0.0;
                                stored[b] = false;
                            }
                        }
                        Ok(shares)
                    },
                )
                .collect::<Result<Vec<Vec<f64>>>>()
        })?;
        let shares: Vec<f64> = shares.into_iter().flatten().collect();
        Ok((0..self.m())
            .map(|i| {
                let form: f64 = self
                    .rows
                    .entries(i)
                    .map(|at| shares[self.transposed[at]])
                    .sum();
                F::from_f64(form)
            })
            .collect())
    }

    /// The bounds of ranges of features whose rows of `G` cost about alike (feature `f`'s
    /// costs the stored entries of the rows that store it: a frequent feature's is large),
    /// about `SPARSE_FACTOR_BLOCKS_PER_THREAD` ranges a thread, fixed by the matrix alone.
    fn blocks_of_equal_work(&self, threads: usize) -> Vec<usize> {
        let work: Vec<usize> = (0..self.features())
            .map(|f| {
                (self.feature_starts[f]..self.feature_starts[f + 1])
                    .map(|place| self.rows.entries(self.entry_rows[place]).len())
                    .sum()
            })
            .collect();
        let total: usize = work.iter().sum();
        let wanted = (threads.max(1) * SPARSE_FACTOR_BLOCKS_PER_THREAD).max(1);
        let share = total.div_ceil(wanted).max(1);
        let mut bounds = vec![0];
        let mut load = 0;
        for (f, w) in work.iter().enumerate() {
            load += w;
            if load >= share {
                bounds.push(f + 1);
                load = 0;
            }
        }
        if bounds.last() != Some(&self.features()) {
            bounds.push(self.features());
        }
        bounds
    }

    /// Bytes one product reads: the entries twice, with their indices.
    pub fn bytes(&self) -> usize {
        self.nnz()
            .saturating_mul(2 * (std::mem::size_of::<F>() + std::mem::size_of::<usize>()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csr::Indices;
    use crate::error::Error;
    use ndarray::Array2;
    use std::sync::atomic::Ordering;

    static LOWERED: AtomicBool = AtomicBool::new(false);

    /// A random CSR matrix (a third of entries stored, one empty row, one unused column)
    /// and its dense copy.
    fn example(m: usize, d: usize, seed: u64) -> (Vec<i64>, Vec<i32>, Vec<f64>, Array2<f64>) {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as f64 / (1u64 << 31) as f64
        };
        let mut dense = Array2::<f64>::zeros((m, d));
        let (mut indptr, mut indices, mut data) = (vec![0i64], Vec::new(), Vec::new());
        for i in 0..m {
            for j in 0..d - 1 {
                if i != 1 && next() < 0.33 {
                    let value = next() - 0.4;
                    dense[(i, j)] = value;
                    indices.push(j as i32);
                    data.push(value);
                }
            }
            indptr.push(indices.len() as i64);
        }
        (indptr, indices, data, dense)
    }

    fn factor_of<'a>(
        indptr: &'a [i64],
        indices: &'a [i32],
        data: &'a [f64],
        shape: (usize, usize),
    ) -> SparseFactor<'a, f64> {
        let view = CsrView::new(
            shape,
            Indices::I64(indptr),
            Indices::I32(indices),
            data,
            "X",
        )
        .unwrap();
        SparseFactor::new(view, 2, &LOWERED).unwrap()
    }

    fn close(a: &[f64], b: &[f64]) {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    #[test]
    fn the_operator_of_csr_rows_is_that_of_their_gram_matrix() {
        let (m, d) = (37, 11);
        let (indptr, indices, data, dense) = example(m, d, 3);
        let factor = factor_of(&indptr, &indices, &data, (m, d));
        let pool = crate::pool::shared(2).unwrap();
        assert_eq!(factor.features(), d - 1);
        let kernel = dense.dot(&dense.t());
        let x: Vec<f64> = (0..m).map(|i| (i as f64 * 0.37).sin()).collect();
        let w: Vec<f64> = (0..m).map(|i| 1.0 + (i % 3) as f64).collect();
        let products = factor.multiply(&pool, &[&x, &w]);
        close(
            &products[0],
            kernel.dot(&ndarray::arr1(&x)).as_slice().unwrap(),
        );
        close(
            &products[1],
            kernel.dot(&ndarray::arr1(&w)).as_slice().unwrap(),
        );
        let rows = factor.rows(&pool, &[4, 1, 0]);
        for (row, &i) in rows.iter().zip(&[4, 1, 0]) {
            close(row, kernel.row(i).as_slice().unwrap());
        }
        close(&factor.diagonal(), &kernel.diag().to_vec());
        let forms = factor.column_forms(&pool, Some(&w), &LOWERED).unwrap();
        let expected: Vec<f64> = (0..m)
            .map(|i| (0..m).map(|j| w[j] * kernel[(j, i)].powi(2)).sum())
            .collect();
        close(&forms, &expected);
        let unweighted = factor.column_forms(&pool, None, &LOWERED).unwrap();
        close(
            &unweighted,
            &(0..m)
                .map(|i| kernel.column(i).iter().map(|v| v * v).sum())
                .collect::<Vec<f64>>(),
        );
    }

    #[test]
    fn rows_are_exactly_columns_and_nothing_depends_on_threads() {
        let (m, d) = (3000, 40);
        let (indptr, indices, data, _) = example(m, d, 7);
        let factor = factor_of(&indptr, &indices, &data, (m, d));
        let one = crate::pool::shared(1).unwrap();
        let two = crate::pool::shared(2).unwrap();
        let picks = [5, 2999, 1024];
        let rows = factor.rows(&one, &picks);
        assert_eq!(rows, factor.rows(&two, &picks));
        for (row, &i) in rows.iter().zip(&picks) {
            for (j, &other) in picks.iter().enumerate() {
                assert_eq!(row[other].to_bits(), rows[j][i].to_bits());
            }
        }
        let x: Vec<f64> = (0..m).map(|i| (i as f64).cos()).collect();
        assert_eq!(factor.multiply(&one, &[&x]), factor.multiply(&two, &[&x]));
        assert_eq!(
            factor.column_forms(&one, Some(&x), &LOWERED).unwrap(),
            factor.column_forms(&two, Some(&x), &LOWERED).unwrap()
        );
    }

    #[test]
    fn a_raised_stop_ends_the_set_up_with_interrupted() {
        let (m, d) = (200, 20);
        let (indptr, indices, data, _) = example(m, d, 5);
        let view = CsrView::new(
            (m, d),
            Indices::I64(&indptr),
            Indices::I32(&indices),
            &data,
            "X",
        )
        .unwrap();
        let raised = AtomicBool::new(true);
        assert!(matches!(
            SparseFactor::new(view.clone(), 2, &raised),
            Err(Error::Interrupted)
        ));
        let flag = AtomicBool::new(false);
        let factor = SparseFactor::new(view, 2, &flag).unwrap();
        let pool = crate::pool::shared(2).unwrap();
        assert!(factor.column_forms(&pool, None, &flag).is_ok());
        flag.store(true, Ordering::Relaxed);
        assert!(matches!(
            factor.column_forms(&pool, None, &flag),
            Err(Error::Interrupted)
        ));
    }
}
