//! The kernel as the selection engines read it: products `K_0 X` with several right-hand
//! sides, rows, the diagonal and the quadratic forms of the columns (docs/architecture.md,
//! "Kernel operators").
//!
//! Two implementations: the dense `m×m` kernel, read by the passes of [`crate::passes`]
//! (whose class-split and triangle-reading forms the selection engine calls directly when
//! [`KernelOperator::dense`] gives it the matrix), and a factor `K_0 = ΦΦ'` (`Φ` row-major
//! `m×p`), whose products are `Φ(Φ'X)`, O(mpr) for `r` right-hand sides instead of O(m²r).
//!
//! Every factored sum has one order whatever the thread count: `Φ'X` and `Φ'WΦ` add the
//! partial products of fixed blocks of rows in block order (each block one sequential
//! GEMM), and each row of `ΦY` is a sequential GEMM of its fixed block.

use crate::error::{try_zeroed, Error, Result};
use crate::kernel::gemm;
use crate::passes::{self, Workspace};
use crate::real::Real;
use crate::tuning::FACTOR_BLOCK_ROWS;
use ndarray::{s, Array2, ArrayView2};
use rayon::prelude::*;

/// A symmetric positive semi-definite kernel, read-only: dense or factored.
#[derive(Debug, Clone, Copy)]
pub enum KernelOperator<'a, F> {
    /// `K_0` itself, row-major `m×m`.
    Dense { kernel: &'a [F], m: usize },
    /// `K_0 = ΦΦ'`, `Φ` row-major `m×p`.
    Factored { factor: &'a [F], m: usize, p: usize },
}

impl<'a, F: Real> KernelOperator<'a, F> {
    /// The dense operator over a square, contiguous kernel (either memory order: a
    /// symmetric matrix reads the same in both); `argument` names it in errors.
    pub fn dense_of(kernel: &ArrayView2<'a, F>, argument: &'static str) -> Result<Self> {
        let (rows, cols) = kernel.dim();
        if rows != cols {
            return Err(Error::invalid(
                argument,
                format!("must be square, got shape ({rows}, {cols})"),
            ));
        }
        let data = kernel
            .to_slice()
            .or_else(|| (*kernel).reversed_axes().to_slice())
            .ok_or_else(|| Error::invalid(argument, "must be a contiguous array"))?;
        Ok(KernelOperator::Dense {
            kernel: data,
            m: rows,
        })
    }

    /// The factored operator `ΦΦ'` of a row-major (C-contiguous) `m×p` factor with finite
    /// values and `p ≥ 1`; `argument` names it in errors.
    pub fn factored_of(factor: &ArrayView2<'a, F>, argument: &'static str) -> Result<Self> {
        let (m, p) = factor.dim();
        if p == 0 || m == 0 {
            return Err(Error::invalid(
                argument,
                format!("must have at least one row and one column, got shape ({m}, {p})"),
            ));
        }
        let data = factor
            .to_slice()
            .ok_or_else(|| Error::invalid(argument, "must be a C-contiguous (row-major) array"))?;
        if !data.iter().all(|v| v.is_finite()) {
            return Err(Error::invalid(argument, "contains NaN or infinite values"));
        }
        Ok(KernelOperator::Factored { factor: data, m, p })
    }

    /// The order `m` of `K_0`.
    pub fn m(&self) -> usize {
        match *self {
            KernelOperator::Dense { m, .. } | KernelOperator::Factored { m, .. } => m,
        }
    }

    /// The dense kernel, row-major, when this is one: the specialised passes read it.
    pub fn dense(&self) -> Option<&'a [F]> {
        match *self {
            KernelOperator::Dense { kernel, .. } => Some(kernel),
            KernelOperator::Factored { .. } => None,
        }
    }

    /// Bytes the operator reads in one product.
    pub fn bytes(&self) -> usize {
        let len = match *self {
            KernelOperator::Dense { kernel, .. } => kernel.len(),
            KernelOperator::Factored { factor, .. } => factor.len(),
        };
        len.saturating_mul(std::mem::size_of::<F>())
    }

    /// `K_0 x` for each right-hand side ([`passes::multiply`] for the dense kernel).
    pub fn multiply(
        &self,
        pool: &rayon::ThreadPool,
        rhs: &[&[F]],
        workspace: &mut Workspace<F>,
    ) -> Vec<Vec<F>> {
        match *self {
            KernelOperator::Dense { kernel, m } => {
                passes::multiply(pool, kernel, m, rhs, workspace)
            }
            KernelOperator::Factored { factor, m, p } => factored_products(pool, factor, m, p, rhs),
        }
    }

    /// [`KernelOperator::multiply`] whose every product is independent of the other
    /// right-hand sides of the call ([`passes::multiply_in_order`] for the dense kernel;
    /// a factored product is one already: each output reads only its own right-hand side).
    pub fn multiply_in_order(
        &self,
        pool: &rayon::ThreadPool,
        rhs: &[&[F]],
        workspace: &mut Workspace<F>,
    ) -> Vec<Vec<F>> {
        match self.dense() {
            Some(kernel) => passes::multiply_in_order(pool, kernel, self.m(), rhs, workspace),
            None => self.multiply(pool, rhs, workspace),
        }
    }

    /// Rows `picks` of `K_0` (its columns: it is symmetric). Factored: `Φ Φ[picks]'`, one
    /// read of `Φ`.
    pub fn rows(&self, pool: &rayon::ThreadPool, picks: &[usize]) -> Vec<Vec<F>> {
        match *self {
            KernelOperator::Dense { kernel, m } => picks
                .iter()
                .map(|&i| kernel[i * m..(i + 1) * m].to_vec())
                .collect(),
            KernelOperator::Factored { factor, m, p } => {
                let ys: Vec<Vec<F>> = picks
                    .iter()
                    .map(|&i| factor[i * p..(i + 1) * p].to_vec())
                    .collect();
                times_factor(pool, factor, m, p, &ys)
            }
        }
    }

    /// The diagonal of `K_0` (factored: the squared norms of the rows of `Φ`).
    pub fn diagonal(&self) -> Vec<F> {
        match *self {
            KernelOperator::Dense { kernel, m } => (0..m).map(|i| kernel[i * m + i]).collect(),
            KernelOperator::Factored { factor, p, .. } => factor
                .chunks_exact(p)
                .map(|row| crate::simd::dots(row, [row])[0])
                .collect(),
        }
    }
}

/// `Φ'X` (`r` vectors of `p`) for the row-major `m×p` factor `Φ` and the columns `rhs` of
/// `X`: each fixed block of rows a running sum over its rows in order, the blocks' partial
/// sums added in block order (a wave of blocks at a time in parallel, so that only a few
/// partials are held). Each output reads only its own right-hand side, in one order.
fn factor_transpose_times<F: Real>(
    pool: &rayon::ThreadPool,
    factor: &[F],
    m: usize,
    p: usize,
    rhs: &[&[F]],
) -> Vec<Vec<F>> {
    let r = rhs.len();
    let partial = |b: usize| -> Vec<Vec<F>> {
        let rows = b * FACTOR_BLOCK_ROWS..((b + 1) * FACTOR_BLOCK_ROWS).min(m);
        let mut out = vec![vec![F::zero(); p]; r];
        for i in rows {
            let phi = &factor[i * p..(i + 1) * p];
            for (y, x) in out.iter_mut().zip(rhs) {
                let xi = x[i];
                y.iter_mut().zip(phi).for_each(|(y, &f)| *y += xi * f);
            }
        }
        out
    };
    sum_blocks(pool, m, partial)
}

/// `Σ_b partial(b)` over the fixed blocks of `m` rows, in block order, computed a wave of
/// as many blocks as `pool` has threads at a time.
fn sum_blocks<F: Real>(
    pool: &rayon::ThreadPool,
    m: usize,
    partial: impl Fn(usize) -> Vec<Vec<F>> + Sync,
) -> Vec<Vec<F>> {
    let n_blocks = m.div_ceil(FACTOR_BLOCK_ROWS);
    let wave = pool.current_num_threads().max(1);
    let mut total: Option<Vec<Vec<F>>> = None;
    let mut start = 0;
    while start < n_blocks {
        let end = (start + wave).min(n_blocks);
        let partials: Vec<Vec<Vec<F>>> = if end - start == 1 {
            vec![partial(start)]
        } else {
            pool.install(|| (start..end).into_par_iter().map(&partial).collect())
        };
        for part in partials {
            match total.as_mut() {
                None => total = Some(part),
                Some(total) => {
                    for (t, v) in total.iter_mut().zip(&part) {
                        t.iter_mut().zip(v).for_each(|(t, &v)| *t += v);
                    }
                }
            }
        }
        start = end;
    }
    total.unwrap_or_default()
}

/// `Φ y_j` for the row-major `m×p` factor and each `y_j` (`p` values): one dot product
/// per row and output, in the fixed order of [`crate::simd::dots`].
fn times_factor<F: Real>(
    pool: &rayon::ThreadPool,
    factor: &[F],
    m: usize,
    p: usize,
    ys: &[Vec<F>],
) -> Vec<Vec<F>> {
    let r = ys.len();
    let mut out = vec![F::zero(); m * r];
    pool.install(|| {
        out.par_chunks_mut(FACTOR_BLOCK_ROWS * r)
            .enumerate()
            .for_each(|(b, block)| {
                for (local, values) in block.chunks_exact_mut(r).enumerate() {
                    let i = b * FACTOR_BLOCK_ROWS + local;
                    let phi = &factor[i * p..(i + 1) * p];
                    for (value, y) in values.iter_mut().zip(ys) {
                        *value = crate::simd::dots(phi, [&y[..]])[0];
                    }
                }
            });
    });
    (0..r)
        .map(|j| out.iter().skip(j).step_by(r).copied().collect())
        .collect()
}

/// `ΦΦ'x` for each right-hand side: `Φ'X`, then `Φ(Φ'X)`.
pub(crate) fn factored_products<F: Real>(
    pool: &rayon::ThreadPool,
    factor: &[F],
    m: usize,
    p: usize,
    rhs: &[&[F]],
) -> Vec<Vec<F>> {
    if rhs.is_empty() {
        return Vec::new();
    }
    let ys = factor_transpose_times(pool, factor, m, p, rhs);
    times_factor(pool, factor, m, p, &ys)
}

/// `Φ_a' W Φ_b` (`p_a × p_b`) for two row-major factors of `m` rows and the diagonal `W`
/// (`None`: the identity), by fixed blocks of rows added in order.
fn weighted_gram<F: Real>(
    pool: &rayon::ThreadPool,
    (a, p_a): (&[F], usize),
    (b, p_b): (&[F], usize),
    m: usize,
    weights: Option<&[F]>,
) -> Array2<F> {
    let phi_a = ArrayView2::from_shape((m, p_a), a).expect("an m×p factor");
    let phi_b = ArrayView2::from_shape((m, p_b), b).expect("an m×p factor");
    let partial = |block: usize| -> Vec<Vec<F>> {
        let rows = block * FACTOR_BLOCK_ROWS..((block + 1) * FACTOR_BLOCK_ROWS).min(m);
        let right = phi_b.slice(s![rows.clone(), ..]);
        let mut out = Array2::<F>::zeros((p_a, p_b));
        match weights {
            None => gemm(out.view_mut(), phi_a.slice(s![rows, ..]).t(), right),
            Some(w) => {
                let mut scaled = right.to_owned();
                for (mut row, &w) in scaled.rows_mut().into_iter().zip(&w[rows.clone()]) {
                    row.iter_mut().for_each(|v| *v = *v * w);
                }
                gemm(out.view_mut(), phi_a.slice(s![rows, ..]).t(), scaled.view());
            }
        }
        vec![out.into_raw_vec_and_offset().0]
    };
    let total = sum_blocks(pool, m, partial).pop().unwrap_or_default();
    Array2::from_shape_vec((p_a, p_b), total).expect("a p_a×p_b Gram matrix")
}

/// `diag(K_a W K_b)` for `K_a = Φ_aΦ_a'` and `K_b = Φ_bΦ_b'`: row `i` is
/// `Φ_a[i] G Φ_b[i]'` with `G = Φ_a'WΦ_b`, each fixed block of rows one GEMM. With
/// `K_a = K_b` these are the columns' quadratic forms `K[:, i]'W K[:, i]`; with two views,
/// the cross term `K_a[:, i]'K_b[:, i]`.
pub(crate) fn factored_column_forms<F: Real>(
    pool: &rayon::ThreadPool,
    (a, p_a): (&[F], usize),
    (b, p_b): (&[F], usize),
    m: usize,
    weights: Option<&[F]>,
) -> Vec<F> {
    let gram = weighted_gram(pool, (a, p_a), (b, p_b), m, weights);
    let phi_a = ArrayView2::from_shape((m, p_a), a).expect("an m×p factor");
    let mut out = vec![F::zero(); m];
    pool.install(|| {
        out.par_chunks_mut(FACTOR_BLOCK_ROWS)
            .enumerate()
            .for_each(|(block, out)| {
                let rows = block * FACTOR_BLOCK_ROWS..block * FACTOR_BLOCK_ROWS + out.len();
                let mut t = Array2::<F>::zeros((rows.len(), p_b));
                gemm(t.view_mut(), phi_a.slice(s![rows.clone(), ..]), gram.view());
                for ((value, t), i) in out.iter_mut().zip(t.rows()).zip(rows) {
                    let t = t.as_slice().expect("a row-major block");
                    *value = crate::simd::dots(t, [&b[i * p_b..(i + 1) * p_b]])[0];
                }
            });
    });
    out
}

/// A zeroed `m×p` row-major factor, allocated fallibly.
pub(crate) fn allocate_factor<F: Real>(m: usize, p: usize) -> Result<Array2<F>> {
    let len = m.checked_mul(p).ok_or(Error::OutOfMemory {
        what: "the kernel factor",
        bytes: usize::MAX,
    })?;
    let buffer = try_zeroed::<F>(len, "the kernel factor")?;
    Ok(Array2::from_shape_vec((m, p), buffer).expect("length matches shape"))
}
