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
use crate::error::{try_zeroed, Result};
use crate::real::Real;
use ndarray::{Array2, ArrayView2};
use std::sync::atomic::AtomicBool;

/// Points indexed by feature: for each feature, which points store a value there and the
/// value (an inverted index, `O(nnz)`), with the points' squared norms.
pub(crate) struct SparseBases {
    count: usize,
    /// Feature `f`'s entries are `starts[f]..starts[f + 1]` of `points` and `values`.
    starts: Vec<usize>,
    points: Vec<usize>,
    values: Vec<f64>,
    norms: Vec<f64>,
}

impl SparseBases {
    /// The index of the rows of `z`.
    pub(crate) fn from_csr<F: Real>(z: &CsrView<'_, F>) -> Result<Self> {
        let entries =
            || (0..z.nrows()).flat_map(move |i| z.row(i).map(move |(f, v)| (i, f, v.as_f64())));
        Self::of_entries(z.nrows(), z.ncols(), z.nnz(), entries, z.squared_norms())
    }

    /// The index of the dense rows of `z`, its zeros left out (the dense bases of a model
    /// fitted on sparse rows).
    pub(crate) fn from_dense<F: Real>(z: ArrayView2<'_, F>) -> Result<Self> {
        let stored = z.iter().filter(|v| **v != F::zero()).count();
        let entries = || {
            z.indexed_iter()
                .filter_map(|((i, f), &v)| (v != F::zero()).then_some((i, f, v.as_f64())))
        };
        let norms = z
            .rows()
            .into_iter()
            .map(|row| row.iter().map(|v| v.as_f64() * v.as_f64()).sum())
            .collect();
        Self::of_entries(z.nrows(), z.ncols(), stored, entries, norms)
    }

    /// A counting sort of the `entries()` (`(point, feature, value)` in point order) by feature,
    /// which keeps each feature's points in increasing order.
    fn of_entries<I: Iterator<Item = (usize, usize, f64)>>(
        count: usize,
        features: usize,
        stored: usize,
        entries: impl Fn() -> I,
        norms: Vec<f64>,
    ) -> Result<Self> {
        let mut starts: Vec<usize> = try_zeroed(features + 1, "the sparse points' index")?;
        for (_, f, _) in entries() {
            starts[f + 1] += 1;
        }
        for f in 0..features {
            starts[f + 1] += starts[f];
        }
        let mut next = starts.clone();
        let mut points: Vec<usize> = try_zeroed(stored, "the sparse points' index")?;
        let mut values: Vec<f64> = try_zeroed(stored, "the sparse points' index")?;
        for (i, f, v) in entries() {
            points[next[f]] = i;
            values[next[f]] = v;
            next[f] += 1;
        }
        Ok(SparseBases {
            count,
            starts,
            points,
            values,
            norms,
        })
    }

    /// `products[j] = Σ_f x_f z_{j,f}` of the sparse row `row` against every point.
    fn products<F: Real>(&self, row: impl Iterator<Item = (usize, F)>, products: &mut [f64]) {
        products.fill(0.0);
        for (f, x) in row {
            let Some(range) = self.starts.get(f..f + 2) else {
                continue; // a feature beyond the points' width: they store nothing there
            };
            let x = x.as_f64();
            for at in range[0]..range[1] {
                products[self.points[at]] += x * self.values[at];
            }
        }
    }
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
    let mut out = allocate::<F>(x.nrows(), bases.count)?;
    let norms_x = x.squared_norms();
    let rows_per_block = crate::tuning::KERNEL_BLOCK_ROWS;
    for_each_row_block(&mut out, n_threads, stop, |b, mut block| {
        let first = b * rows_per_block;
        let mut values = Array2::<f64>::zeros(block.raw_dim());
        for (r, mut products) in values.rows_mut().into_iter().enumerate() {
            let products = products.as_slice_mut().expect("a row-major block");
            bases.products(x.row(first + r), products);
        }
        let norms = &norms_x[first..first + block.nrows()];
        kernel.map_block::<f64>(values.view_mut(), norms, &bases.norms);
        block.zip_mut_with(&values, |out, &value| *out = F::from_f64(value));
    })?;
    Ok(out)
}

/// The cross kernel `K(x_i, z_j)` of the sparse rows `x` and `z`.
pub fn cross_csr_with_stop<F: Real>(
    x: &CsrView<'_, F>,
    z: &CsrView<'_, F>,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    cross_csr_prepared(x, &SparseBases::from_csr(z)?, kernel, n_threads, stop)
}

/// The cross kernel of the sparse rows `x` against the dense rows `z`.
pub fn cross_csr_dense_with_stop<F: Real>(
    x: &CsrView<'_, F>,
    z: ArrayView2<'_, F>,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    cross_csr_prepared(x, &SparseBases::from_dense(z)?, kernel, n_threads, stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csr::Indices;
    use crate::kernel::cross;

    /// A `rows × cols` matrix with about a fifth of its entries stored, as CSR arrays and
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
                if uniform() < 0.2 {
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
        let x = CsrView::new(
            (150, 40),
            Indices::I64(&indptr),
            Indices::I32(&indices),
            &data,
            "X",
        )
        .unwrap();
        let z = CsrView::new(
            (9, 40),
            Indices::I64(&z_indptr),
            Indices::I32(&z_indices),
            &z_data,
            "Z",
        )
        .unwrap();
        let stop = AtomicBool::new(false);
        for kernel in kernels() {
            let expected = cross(dense.view(), z_dense.view(), &kernel, 1).unwrap();
            let of_csr = cross_csr_with_stop(&x, &z, &kernel, 1, &stop).unwrap();
            let of_dense =
                cross_csr_dense_with_stop(&x, z_dense.view(), &kernel, 2, &stop).unwrap();
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
        let z64 = CsrView::new(
            (6, 30),
            Indices::I64(&z_indptr),
            Indices::I32(&z_indices),
            &z_data,
            "Z",
        )
        .unwrap();
        let z32 = CsrView::new(
            (6, 30),
            Indices::I64(&z_indptr),
            Indices::I32(&z_indices),
            &z_data32,
            "Z",
        )
        .unwrap();
        let stop = AtomicBool::new(false);
        for kernel in kernels() {
            let wide = cross_csr_with_stop(&x64, &z64, &kernel, 1, &stop).unwrap();
            let narrow = cross_csr_with_stop(&x32, &z32, &kernel, 2, &stop).unwrap();
            for (a, b) in wide.iter().zip(&narrow) {
                assert!(
                    (a - f64::from(*b)).abs() <= 1e-5 * a.abs().max(1.0),
                    "{kernel:?}"
                );
            }
        }
    }
}
