//! Kernel values of sparse rows ([`CsrView`]) against a set of points held feature by
//! feature ([`SparseBases`]): each inner product is the sum over the row's stored entries of
//! the points' entries in those features, in `f64`, in the row's column order and then the
//! points' order, so that a value depends on neither the batch nor the thread count. The
//! kernel's map is the dense path's ([`Kernel::map_block`]), applied in `f64`; rows are not
//! moved to a centre as the dense rbf's are (that would make them dense): the `f64` sums
//! keep the digits the centre protects in `‖x‖² + ‖z‖² − 2x·z`.

use super::blocks::{allocate, for_each_row_block};
use super::Kernel;
use crate::csr::CsrView;
use crate::error::{check_stop, try_zeroed, Error, Result};
use crate::real::Real;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// No dense slot: the feature's entries are in the inverted index.
const SPARSE: u32 = u32::MAX;

/// Points indexed by feature: for each feature, which points store a value there and the
/// value (an inverted index, `O(nnz)`), with the points' squared norms. Features that many
/// of the points store (text's frequent words) are held as dense columns instead: scattering
/// a feature costs the product of its counts in the two sets, which for the few most
/// frequent words is most of the work, while a GEMM over them costs far less per product.
pub struct SparseBases {
    count: usize,
    /// Feature `f`'s entries are `starts[f]..starts[f + 1]` of `points` and `values`.
    starts: Vec<usize>,
    points: Vec<usize>,
    values: Vec<f64>,
    /// Feature `f`'s column of `dense` when it has one, else [`SPARSE`].
    slots: Vec<u32>,
    /// The points' values in the frequent features, `count × slots in use`.
    dense: Array2<f64>,
    norms: Vec<f64>,
}

impl SparseBases {
    /// The index of the rows of `z`.
    pub(crate) fn from_csr<F: Real>(z: &CsrView<'_, F>) -> Result<Self> {
        let entries =
            || (0..z.nrows()).flat_map(move |i| z.row(i).map(move |(f, v)| (i, f, v.as_f64())));
        Self::of_entries(z.nrows(), z.ncols(), entries, z.squared_norms())
    }

    /// The index of rows of either kind.
    pub fn from_rows<F: Real>(z: &Rows<'_, F>) -> Result<Self> {
        match z {
            Rows::Dense(z) => Self::from_dense(*z),
            Rows::Csr(z) => Self::from_csr(z),
        }
    }

    /// How many points, and their width.
    pub fn shape(&self) -> (usize, usize) {
        (self.count, self.slots.len())
    }

    /// The index of the rows `rows` of `z`, in that order.
    pub(crate) fn from_csr_rows<F: Real>(z: &CsrView<'_, F>, rows: &[usize]) -> Result<Self> {
        let entries = || {
            rows.iter()
                .enumerate()
                .flat_map(move |(r, &i)| z.row(i).map(move |(f, v)| (r, f, v.as_f64())))
        };
        let norms = rows
            .iter()
            .map(|&i| z.row(i).map(|(_, v)| v.as_f64() * v.as_f64()).sum())
            .collect();
        Self::of_entries(rows.len(), z.ncols(), entries, norms)
    }

    /// The index of the dense rows of `z`, its zeros left out (the dense bases of a model
    /// fitted on sparse rows).
    pub(crate) fn from_dense<F: Real>(z: ArrayView2<'_, F>) -> Result<Self> {
        let entries = || {
            z.indexed_iter()
                .filter_map(|((i, f), &v)| (v != F::zero()).then_some((i, f, v.as_f64())))
        };
        Self::of_entries(z.nrows(), z.ncols(), entries, dense_norms(z))
    }

    /// A counting sort of the `entries()` (`(point, feature, value)` in point order) by feature,
    /// which keeps each feature's points in increasing order; the frequent features'
    /// entries go to their dense columns instead.
    fn of_entries<I: Iterator<Item = (usize, usize, f64)>>(
        count: usize,
        features: usize,
        entries: impl Fn() -> I,
        norms: Vec<f64>,
    ) -> Result<Self> {
        let what = "the sparse points' index";
        let mut counts: Vec<usize> = try_zeroed(features, what)?;
        for (_, f, _) in entries() {
            counts[f] += 1;
        }
        let mut slots: Vec<u32> = try_zeroed(features, what)?;
        let mut frequent = 0usize;
        for (slot, &stored) in slots.iter_mut().zip(&counts) {
            let dense = count >= crate::tuning::SPARSE_DENSE_FROM_POINTS
                && stored * crate::tuning::SPARSE_DENSE_SHARE >= count
                && frequent < crate::tuning::SPARSE_DENSE_FEATURES;
            *slot = if dense { frequent as u32 } else { SPARSE };
            frequent += usize::from(dense);
        }
        let mut dense = Array2::from_shape_vec(
            (count, frequent),
            try_zeroed(count.saturating_mul(frequent), what)?,
        )
        .expect("length matches shape");
        let mut starts: Vec<usize> = try_zeroed(features + 1, what)?;
        for f in 0..features {
            let sparse = if slots[f] == SPARSE { counts[f] } else { 0 };
            starts[f + 1] = starts[f] + sparse;
        }
        let stored = starts[features];
        let mut next = starts.clone();
        let mut points: Vec<usize> = try_zeroed(stored, what)?;
        let mut values: Vec<f64> = try_zeroed(stored, what)?;
        for (i, f, v) in entries() {
            match slots[f] {
                SPARSE => {
                    points[next[f]] = i;
                    values[next[f]] = v;
                    next[f] += 1;
                }
                slot => dense[[i, slot as usize]] = v,
            }
        }
        Ok(SparseBases {
            count,
            starts,
            points,
            values,
            slots,
            dense,
            norms,
        })
    }

    /// `values[r, j] = Σ_f x_f z_{from + j, f}` for the sparse rows `row(first + r)` against
    /// the points from `from` on: the rare features scattered in the row's column order, then
    /// the frequent ones by one GEMM of the block (sequential: the same sums whatever the
    /// threads), added last.
    fn block_products<F: Real, I: Iterator<Item = (usize, F)>>(
        &self,
        row: impl Fn(usize) -> I,
        first: usize,
        from: usize,
        mut values: ArrayViewMut2<f64>,
    ) {
        let frequent = self.dense.ncols();
        let mut gathered = Array2::<f64>::zeros((values.nrows(), frequent));
        for (r, mut products) in values.rows_mut().into_iter().enumerate() {
            let products = products.as_slice_mut().expect("a row-major block");
            products.fill(0.0);
            for (f, x) in row(first + r) {
                let x = x.as_f64();
                match self.slots.get(f) {
                    None => {} // a feature beyond the points' width: they store nothing there
                    Some(&SPARSE) => {
                        let range = self.starts[f]..self.starts[f + 1];
                        let (points, entries) = (&self.points[range.clone()], &self.values[range]);
                        let skip = points.partition_point(|&point| point < from);
                        for (&point, &z) in points[skip..].iter().zip(&entries[skip..]) {
                            products[point - from] += x * z;
                        }
                    }
                    Some(&slot) => gathered[[r, slot as usize]] = x,
                }
            }
        }
        if frequent > 0 {
            let dense = self.dense.slice(ndarray::s![from.., ..]);
            ndarray::linalg::general_mat_mul(1.0, &gathered, &dense.t(), 1.0, &mut values);
        }
    }
}

/// Rows of either kind, as a caller holds them: dense, or sparse (CSR).
pub enum Rows<'a, F> {
    Dense(ArrayView2<'a, F>),
    Csr(CsrView<'a, F>),
}

impl<F: Real> Rows<'_, F> {
    pub fn nrows(&self) -> usize {
        match self {
            Rows::Dense(x) => x.nrows(),
            Rows::Csr(x) => x.nrows(),
        }
    }

    pub fn ncols(&self) -> usize {
        match self {
            Rows::Dense(x) => x.ncols(),
            Rows::Csr(x) => x.ncols(),
        }
    }
}

/// Refuses `x` and `z` of different widths, naming `X`.
fn same_width(x: usize, z: usize) -> Result<()> {
    if x != z {
        return Err(Error::invalid(
            "X",
            format!("has {x} features but the other set has {z}"),
        ));
    }
    Ok(())
}

/// `K(row(i), bases_j)` for the `norms.len()` rows `row(i)` (their stored entries, in
/// increasing feature order), whose squared norms are `norms`; one block of rows a task.
fn cross_of_stored<F: Real, I: Iterator<Item = (usize, F)>>(
    row: impl Fn(usize) -> I + Sync,
    norms: &[f64],
    bases: &SparseBases,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    let mut out = allocate::<F>(norms.len(), bases.count)?;
    let rows_per_block = crate::tuning::KERNEL_BLOCK_ROWS;
    for_each_row_block(out.view_mut(), n_threads, stop, |b, mut block| {
        let first = b * rows_per_block;
        let mut values = Array2::<f64>::zeros(block.raw_dim());
        bases.block_products(&row, first, 0, values.view_mut());
        let norms = &norms[first..first + block.nrows()];
        kernel.map_block::<f64>(values.view_mut(), norms, &bases.norms);
        block.zip_mut_with(&values, |out, &value| *out = F::from_f64(value));
    })?;
    check_stop(stop)?;
    Ok(out)
}

/// `K(x_i, z_j)` of the sparse rows `x` against the points `bases`, one block of rows a
/// task. Gives up with `Error::Interrupted` once `stop` is raised.
pub(crate) fn cross_csr_prepared<F: Real>(
    x: &CsrView<'_, F>,
    bases: &SparseBases,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    kernel.validate_for::<F>()?;
    cross_of_stored(
        |i| x.row(i),
        &x.squared_norms(),
        bases,
        kernel,
        n_threads,
        stop,
    )
}

/// Each dense row's squared norm, summed in `f64`.
fn dense_norms<F: Real>(z: ArrayView2<'_, F>) -> Vec<f64> {
    z.rows()
        .into_iter()
        .map(|row| row.iter().map(|v| v.as_f64() * v.as_f64()).sum())
        .collect()
}

/// `K(x_i, z_j)` of rows of either kind against points indexed once ([`SparseBases`]), for
/// a caller that needs many kernels against the same points (a pivoted Cholesky's columns):
/// the values [`cross_rows_with_stop`] gives with those points sparse.
pub fn cross_rows_prepared<F: Real>(
    x: &Rows<'_, F>,
    bases: &SparseBases,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    kernel.validate_for::<F>()?;
    same_width(x.ncols(), bases.shape().1)?;
    let x = match x {
        Rows::Csr(x) => return cross_csr_prepared(x, bases, kernel, n_threads, stop),
        Rows::Dense(x) => *x,
    };
    cross_of_stored(
        |i| dense_stored(x, i),
        &dense_norms(x),
        bases,
        kernel,
        n_threads,
        stop,
    )
}

/// The non-zero entries of the dense row `i` of `x`, as a CSR row stores them: the prepared
/// kernels read dense rows by their stored entries too.
fn dense_stored<F: Real>(x: ArrayView2<'_, F>, i: usize) -> impl Iterator<Item = (usize, F)> + '_ {
    let row = x.index_axis_move(Axis(0), i);
    (0..row.len())
        .map(move |f| (f, row[f]))
        .filter(|(_, v)| *v != F::zero())
}

/// The kernel of the rows `pool` of the sparse `x` with each other (`p × p`) and those
/// rows indexed by feature: a Nyström pool, never made dense.
pub(crate) fn pool_csr<F: Real>(
    x: &CsrView<'_, F>,
    pool: &[usize],
    kernel: &Kernel,
    n_threads: usize,
) -> Result<(Array2<F>, SparseBases)> {
    kernel.validate_for::<F>()?;
    let bases = SparseBases::from_csr_rows(x, pool)?;
    let stop = AtomicBool::new(false);
    let out = cross_of_stored(
        |r| x.row(pool[r]),
        &bases.norms,
        &bases,
        kernel,
        n_threads,
        &stop,
    )?;
    Ok((out, bases))
}

/// The cross kernel `K(x_i, z_j)` of rows of either kind. Dense against dense is
/// [`cross_with_stop`](super::cross_with_stop); with a sparse side each value is summed in
/// `f64` over the features both rows store, in increasing feature order, so that `K(x, z)`
/// does not depend on the batch, and a dense row against sparse points gives what its CSR
/// copy gives.
pub fn cross_rows_with_stop<F: Real>(
    x: &Rows<'_, F>,
    z: &Rows<'_, F>,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    kernel.validate_for::<F>()?;
    same_width(x.ncols(), z.ncols())?;
    match (x, z) {
        (Rows::Dense(x), Rows::Dense(z)) => super::cross_with_stop(*x, *z, kernel, n_threads, stop),
        _ => cross_rows_prepared(x, &SparseBases::from_rows(z)?, kernel, n_threads, stop),
    }
}

/// The Gram matrix of rows of either kind into `out` (`m × m`, contiguous), exactly
/// symmetric: for sparse rows, the upper block triangle mirrored, as for dense ones.
pub fn gram_rows_into_with_stop<F: Real>(
    x: &Rows<'_, F>,
    kernel: &Kernel,
    n_threads: usize,
    mut out: ArrayViewMut2<F>,
    stop: &AtomicBool,
) -> Result<()> {
    let x = match x {
        Rows::Dense(x) => return super::gram_into_with_stop(*x, kernel, n_threads, out, stop),
        Rows::Csr(x) => x,
    };
    kernel.validate_for::<F>()?;
    let m = x.nrows();
    super::dense::check_gram_out(&out, m)?;
    let bases = SparseBases::from_csr(x)?;
    let norms = &bases.norms;
    let rows_per_block = crate::tuning::KERNEL_BLOCK_ROWS;
    crate::pool::shared(n_threads)?.install(|| {
        // Upper block triangle: block row b covers the points from its own first row on.
        out.axis_chunks_iter_mut(ndarray::Axis(0), rows_per_block)
            .into_par_iter()
            .enumerate()
            .for_each(|(b, mut block)| {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let start = b * rows_per_block;
                let rows = start..start + block.nrows();
                let mut values = Array2::<f64>::zeros((block.nrows(), m - start));
                bases.block_products(|i| x.row(i), start, start, values.view_mut());
                kernel.map_block::<f64>(values.view_mut(), &norms[rows], &norms[start..]);
                let mut upper = block.slice_mut(ndarray::s![.., start..]);
                upper.zip_mut_with(&values, |out, &value| *out = F::from_f64(value));
                if let Kernel::Rbf { .. } = kernel {
                    for local in 0..block.nrows() {
                        block[[local, start + local]] = F::one();
                    }
                }
            });
        super::dense::mirror_lower(out.view_mut(), stop);
    });
    check_stop(stop)?;
    Ok(())
}

/// Kernel expansions `Σ_j weights[j, c] κ(x_i, basis_j) + bias[c]` of rows of either kind
/// against dense bases: [`expansion_with_stop`](super::expansion_with_stop) for dense rows;
/// for sparse ones each block's kernel values are summed as [`cross_rows_with_stop`]'s, then
/// weighted in `f64` by the same GEMM.
pub fn expansion_rows_with_stop<F: Real>(
    x: &Rows<'_, F>,
    basis: ArrayView2<'_, F>,
    weights: ArrayView2<'_, f64>,
    bias: &[f64],
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<f64>> {
    if let Rows::Dense(x) = x {
        return super::expansion_with_stop(*x, basis, weights, bias, kernel, n_threads, stop);
    }
    kernel.validate_for::<F>()?;
    super::expansion::check_shapes(x.ncols(), basis.dim(), weights, bias)?;
    let bases = SparseBases::from_dense(basis)?;
    expansion_rows_prepared(x, &bases, weights, bias, kernel, n_threads, stop)
}

/// [`expansion_rows_with_stop`] against points indexed once ([`SparseBases`]), for a caller
/// that predicts many times with the same bases: a call then costs its rows' stored entries'
/// share of the bases, not another index of them (O(k·d) for `k` dense bases of width `d`,
/// which a one-row prediction of wide sparse rows would otherwise spend almost all its time on).
/// Rows of either kind; the values are those of [`expansion_rows_with_stop`] of CSR rows.
pub fn expansion_rows_prepared<F: Real>(
    x: &Rows<'_, F>,
    bases: &SparseBases,
    weights: ArrayView2<'_, f64>,
    bias: &[f64],
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<f64>> {
    kernel.validate_for::<F>()?;
    super::expansion::check_shapes(x.ncols(), bases.shape(), weights, bias)?;
    match x {
        Rows::Csr(x) => expansion_of_stored(
            |i| x.row(i),
            x.nrows(),
            &x.squared_norms(),
            bases,
            (weights, bias),
            kernel,
            (n_threads, stop),
        ),
        Rows::Dense(dense) => expansion_of_stored(
            |i| dense_stored(*dense, i),
            dense.nrows(),
            &dense_norms(*dense),
            bases,
            (weights, bias),
            kernel,
            (n_threads, stop),
        ),
    }
}

/// The expansion of `n` rows given by their stored entries (`row(i)`), a block of rows a task,
/// each kernel value rounded to `F`'s precision as the dense path's are.
fn expansion_of_stored<F: Real, R: Iterator<Item = (usize, F)>>(
    row: impl Fn(usize) -> R + Sync,
    n: usize,
    norms: &[f64],
    bases: &SparseBases,
    (weights, bias): (ArrayView2<'_, f64>, &[f64]),
    kernel: &Kernel,
    (n_threads, stop): (usize, &AtomicBool),
) -> Result<Array2<f64>> {
    let classes = weights.ncols();
    let buffer = try_zeroed::<f64>(n.saturating_mul(classes), "the decision values")?;
    let mut out = Array2::from_shape_vec((n, classes), buffer).expect("length matches shape");
    let rows_per_block = crate::tuning::KERNEL_BLOCK_ROWS;
    let bias_row = ndarray::ArrayView1::from(bias);
    for_each_row_block(out.view_mut(), n_threads, stop, |b, mut out_block| {
        let first = b * rows_per_block;
        let mut values = Array2::<f64>::zeros((out_block.nrows(), bases.count));
        bases.block_products(&row, first, 0, values.view_mut());
        let norms = &norms[first..first + out_block.nrows()];
        kernel.map_block::<f64>(values.view_mut(), norms, &bases.norms);
        // Values rounded to F first, as the dense path's are.
        values.mapv_inplace(|value| F::from_f64(value).as_f64());
        out_block.assign(&bias_row);
        ndarray::linalg::general_mat_mul(1.0, &values, &weights, 1.0, &mut out_block);
    })?;
    check_stop(stop)?;
    super::expansion::refuse_overflow::<F>(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csr::Indices;
    use crate::kernel::cross;

    /// A `rows × cols` matrix, column `f` with about `0.5 / (1 + f/3)` of its entries stored, as CSR arrays and
    /// dense.
    fn sparse(rows: usize, cols: usize, seed: u64) -> (Vec<i64>, Vec<i32>, Vec<f64>, Array2<f64>) {
        let mut state = seed;
        let mut uniform = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut dense = Array2::zeros((rows, cols));
        let (mut indptr, mut indices, mut data) = (vec![0i64], Vec::new(), Vec::new());
        for i in 0..rows {
            for f in 0..cols {
                // The first columns stored by many rows (held dense), the last by few.
                if uniform() < 0.5 / (1.0 + f as f64 / 3.0) {
                    let value = 2.0 * uniform() - 1.0;
                    dense[[i, f]] = value;
                    indices.push(f as i32);
                    data.push(value);
                }
            }
            indptr.push(indices.len() as i64);
        }
        (indptr, indices, data, dense)
    }

    /// The view of `sparse`'s arrays, of `shape`.
    fn view<'a, F: Real>(
        shape: (usize, usize),
        indptr: &'a [i64],
        indices: &'a [i32],
        data: &'a [F],
    ) -> CsrView<'a, F> {
        CsrView::new(
            shape,
            Indices::I64(indptr),
            Indices::I32(indices),
            data,
            "X",
        )
        .unwrap()
    }

    fn kernels() -> [Kernel; 3] {
        [
            Kernel::Linear,
            Kernel::Rbf { gamma: 0.3 },
            Kernel::Poly {
                gamma: 0.5,
                degree: 3,
                coef0: 1.0,
            },
        ]
    }

    #[test]
    fn sparse_rows_give_the_dense_rows_kernel() {
        let (indptr, indices, data, dense) = sparse(150, 40, 3);
        let (z_indptr, z_indices, z_data, z_dense) = sparse(9, 40, 4);
        let x = view((150, 40), &indptr, &indices, &data);
        let z = view((9, 40), &z_indptr, &z_indices, &z_data);
        let stop = AtomicBool::new(false);
        for kernel in kernels() {
            let expected = cross(dense.view(), z_dense.view(), &kernel, 1).unwrap();
            let (sparse_x, sparse_z) = (Rows::Csr(x.clone()), Rows::Csr(z.clone()));
            let of_csr = cross_rows_with_stop(&sparse_x, &sparse_z, &kernel, 1, &stop).unwrap();
            let of_dense =
                cross_rows_with_stop(&sparse_x, &Rows::Dense(z_dense.view()), &kernel, 2, &stop)
                    .unwrap();
            // Dense rows against sparse points: what their CSR copy gives, bit for bit.
            let of_dense_rows =
                cross_rows_with_stop(&Rows::Dense(z_dense.view()), &sparse_x, &kernel, 2, &stop)
                    .unwrap();
            let of_csr_rows =
                cross_rows_with_stop(&sparse_z, &sparse_x, &kernel, 1, &stop).unwrap();
            assert_eq!(of_dense_rows, of_csr_rows, "{kernel:?}");
            // Sparse against sparse or dense points: the same sums, bit for bit, whatever
            // the thread count.
            assert_eq!(of_csr, of_dense, "{kernel:?}");
            let largest = expected
                .iter()
                .zip(&of_csr)
                .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
                .fold(0.0, f64::max);
            assert!(largest < 1e-12, "{kernel:?}: {largest}");
        }
    }

    #[test]
    fn float32_rows_agree_with_float64_to_float32_rounding() {
        let (indptr, indices, data, _) = sparse(70, 30, 5);
        let (z_indptr, z_indices, z_data, _) = sparse(6, 30, 6);
        let (data32, z_data32): (Vec<f32>, Vec<f32>) = (
            data.iter().map(|&v| v as f32).collect(),
            z_data.iter().map(|&v| v as f32).collect(),
        );
        let (xp, xi) = (Indices::I64(&indptr), Indices::I32(&indices));
        let x64 = CsrView::new((70, 30), xp, xi, &data, "X").unwrap();
        let x32 = CsrView::new((70, 30), xp, xi, &data32, "X").unwrap();
        let z64 = view((6, 30), &z_indptr, &z_indices, &z_data);
        let z32 = view((6, 30), &z_indptr, &z_indices, &z_data32);
        let stop = AtomicBool::new(false);
        for kernel in kernels() {
            let wide = cross_rows_with_stop(
                &Rows::Csr(x64.clone()),
                &Rows::Csr(z64.clone()),
                &kernel,
                1,
                &stop,
            )
            .unwrap();
            let narrow = cross_rows_with_stop(
                &Rows::Csr(x32.clone()),
                &Rows::Csr(z32.clone()),
                &kernel,
                2,
                &stop,
            )
            .unwrap();
            for (a, b) in wide.iter().zip(&narrow) {
                assert!(
                    (a - f64::from(*b)).abs() <= 1e-5 * a.abs().max(1.0),
                    "{kernel:?}"
                );
            }
        }
    }

    #[test]
    fn the_gram_matrix_expansion_and_pool_of_sparse_rows_match_the_dense_paths() {
        let (indptr, indices, data, dense) = sparse(150, 40, 7);
        let x = view((150, 40), &indptr, &indices, &data);
        let stop = AtomicBool::new(false);
        let held = SparseBases::from_csr(&x).unwrap();
        let frequent = held.dense.ncols();
        assert!(
            0 < frequent && frequent < 40,
            "{frequent}: both parts are exercised"
        );
        let basis = dense.select(ndarray::Axis(0), &[3, 50, 149, 7]);
        let weights = Array2::from_shape_fn((4, 2), |(j, c)| (j as f64 - 1.5) * (c as f64 + 0.5));
        let bias = [0.25, -1.0];
        for kernel in kernels() {
            let expected = cross(dense.view(), dense.view(), &kernel, 1).unwrap();
            let mut gram = Array2::<f64>::zeros((150, 150));
            gram_rows_into_with_stop(&Rows::Csr(x.clone()), &kernel, 2, gram.view_mut(), &stop)
                .unwrap();
            assert_eq!(gram, gram.t(), "{kernel:?}: exactly symmetric");
            let mut one_thread = Array2::<f64>::zeros((150, 150));
            gram_rows_into_with_stop(
                &Rows::Csr(x.clone()),
                &kernel,
                1,
                one_thread.view_mut(),
                &stop,
            )
            .unwrap();
            assert_eq!(gram, one_thread, "{kernel:?}: whatever the thread count");
            let largest = expected
                .iter()
                .zip(&gram)
                .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
                .fold(0.0, f64::max);
            assert!(largest < 1e-12, "{kernel:?}: {largest}");

            let of_dense = crate::kernel::expansion(
                dense.view(),
                basis.view(),
                weights.view(),
                &bias,
                &kernel,
                1,
            )
            .unwrap();
            let of_csr = expansion_rows_with_stop(
                &Rows::Csr(x.clone()),
                basis.view(),
                weights.view(),
                &bias,
                &kernel,
                2,
                &stop,
            )
            .unwrap();
            let largest = of_dense
                .iter()
                .zip(&of_csr)
                .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
                .fold(0.0, f64::max);
            assert!(largest < 1e-12, "{kernel:?}: {largest}");
            // A row alone gives what it gives in the batch.
            let alone = expansion_rows_with_stop(
                &Rows::Csr(x.rows(50..51)),
                basis.view(),
                weights.view(),
                &bias,
                &kernel,
                1,
                &stop,
            )
            .unwrap();
            assert_eq!(alone.row(0), of_csr.row(50));

            let pool = [149usize, 3, 3, 80];
            let (pool_kernel, _) = pool_csr(&x, &pool, &kernel, 2).unwrap();
            let points = dense.select(ndarray::Axis(0), &pool);
            let expected = cross(points.view(), points.view(), &kernel, 1).unwrap();
            let largest = expected
                .iter()
                .zip(&pool_kernel)
                .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
                .fold(0.0, f64::max);
            assert!(largest < 1e-12, "{kernel:?}: {largest}");
        }
        // Points indexed once: the kernels of CSR and dense rows against them.
        let prepared = SparseBases::from_csr(&x).unwrap();
        for kernel in kernels() {
            let expected = cross(dense.view(), dense.view(), &kernel, 1).unwrap();
            for rows in [
                Rows::Csr(x.rows(3..40)),
                Rows::Dense(dense.slice(ndarray::s![3..40, ..])),
            ] {
                let got = cross_rows_prepared(&rows, &prepared, &kernel, 2, &stop).unwrap();
                let largest = expected
                    .slice(ndarray::s![3..40, ..])
                    .iter()
                    .zip(&got)
                    .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
                    .fold(0.0, f64::max);
                assert!(largest < 1e-12, "{kernel:?}: {largest}");
            }
        }
        let narrow = Array2::<f64>::zeros((2, 39));
        let error = cross_rows_with_stop(
            &Rows::Csr(x.clone()),
            &Rows::Dense(narrow.view()),
            &Kernel::Linear,
            1,
            &stop,
        )
        .unwrap_err();
        assert!(
            error.to_string().starts_with("X: has 40 features"),
            "{error}"
        );
    }
}
