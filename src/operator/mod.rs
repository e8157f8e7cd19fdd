//! The kernel as the selection engines read it: products `K_0 X` with several right-hand
//! sides, rows, the diagonal and the quadratic forms of the columns (docs/architecture.md,
//! "Kernel operators").
//!
//! Four implementations: the dense `m×m` kernel, read by the passes of [`crate::passes`]
//! (whose class-split and triangle-reading forms the selection engine calls directly when
//! [`KernelOperator::dense`] gives it the matrix); a factor `K_0 = ΦΦ'` (`Φ` row-major
//! `m×p`) in memory, whose products are `Φ(Φ'X)`, O(mpr) for `r` right-hand sides instead of
//! O(m²r); the linear kernel of sparse rows, `Φ = X` a CSR matrix ([`SparseFactor`], in
//! `sparse.rs`), O(nnz·r); and a factor held elsewhere ([`FactorSource`], e.g. by the
//! workers of a cluster, each holding some rows of `Φ`), which answers the same operations,
//! each in one round.
//!
//! Every factored sum has one order whatever the thread count: `Φ'X` and `Φ'WΦ` add the
//! partial products of fixed blocks of rows in block order (each block one sequential
//! GEMM), and each row of `ΦY` is a sequential GEMM of its fixed block. The per-block
//! kernels ([`factor_transpose_times`], [`factor_times`], [`factor_weighted_gram`],
//! [`factor_forms_with`], [`factor_row_norms`]) are public so that a [`FactorSource`] over
//! chunks of rows runs the same arithmetic on each chunk as the in-memory operator does.

use crate::error::{check_stop, try_zeroed, Error, Result};
use crate::kernel::gemm;
use crate::passes::{self, Workspace};
use crate::real::Real;
use crate::tuning::FACTOR_BLOCK_ROWS;
use ndarray::{s, Array2, ArrayView2};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

mod sparse;
pub use sparse::SparseFactor;

/// The flag of the sums that nothing interrupts: a pick's products (the pick loop looks at
/// the call's flag between picks) and the public per-chunk kernels, whose holder has none.
static NEVER_STOPPED: AtomicBool = AtomicBool::new(false);

/// A kernel `K_0 = ΦΦ'` whose factor `Φ` (`m×p`) is held elsewhere: by other processes or
/// machines, each with some of its rows. Its methods are the operations the in-memory
/// factored operator performs, each of which a holder of chunks of rows answers in one
/// round: partial sums over the chunks, reduced in a fixed chunk order, then a map over the
/// chunks. Every vector is in the engine's row order, `0..m`.
///
/// A method that fails (a lost worker, a timeout, a signal) returns an [`Error`]; the
/// engines meet it through [`ExternalFactor`], which records it and stops the selection.
pub trait FactorSource<F>: Sync {
    /// `m`, the rows of `Φ`.
    fn rows_count(&self) -> usize;
    /// `p`, the columns of `Φ`.
    fn width(&self) -> usize;
    /// `ΦΦ'x` for each right-hand side (`m` values each): `Φ'X` summed over the chunks,
    /// then `Φ(Φ'X)` chunk by chunk.
    fn multiply(&self, rhs: &[&[F]]) -> Result<Vec<Vec<F>>>;
    /// Rows `picks` of `ΦΦ'`: `Φ Φ[picks]'`, the picked rows of `Φ` gathered, then a map.
    fn rows(&self, picks: &[usize]) -> Result<Vec<Vec<F>>>;
    /// `‖Φ_i‖²` for each row.
    fn diagonal(&self) -> Result<Vec<F>>;
    /// `Φ_i G Φ_i'` for each row, `G = Φ'WΦ` with the diagonal `W = weights` (`None`: the
    /// identity): the columns' quadratic forms `K_0[:, i]'W K_0[:, i]`.
    fn column_forms(&self, weights: Option<&[F]>) -> Result<Vec<F>>;
}

/// A [`FactorSource`] as the engines read it: their reads cannot fail, so the first
/// failure is kept here and raises the call's stop flag, which the engines look at before
/// every pick; until then, and after it, the reads give zeros of the right shape (a
/// selection that stops discards them). The caller takes the failure back with
/// [`ExternalFactor::outcome`], which prefers it to the engine's own `Interrupted`.
pub struct ExternalFactor<'a, F> {
    source: &'a dyn FactorSource<F>,
    stop: &'a AtomicBool,
    failure: Mutex<Option<Error>>,
}

impl<'a, F: Real> ExternalFactor<'a, F> {
    /// `source` read under the stop flag `stop` of the call that reads it.
    pub fn new(source: &'a dyn FactorSource<F>, stop: &'a AtomicBool) -> Self {
        ExternalFactor {
            source,
            stop,
            failure: Mutex::new(None),
        }
    }

    /// The operator over this source.
    pub fn operator(&'a self) -> KernelOperator<'a, F> {
        KernelOperator::External(self)
    }

    /// `result` of a call that read this source, unless a read failed: then that failure.
    pub fn outcome<T>(&self, result: Result<T>) -> Result<T> {
        let failure = self
            .failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match failure {
            Some(error) => Err(error),
            None => result,
        }
    }

    /// The source's answer, or `fallback` once the call is stopped or the source fails.
    fn read<T>(&self, call: impl FnOnce() -> Result<T>, fallback: impl FnOnce() -> T) -> T {
        if self.stop.load(Ordering::Relaxed) {
            return fallback();
        }
        match call() {
            Ok(value) => value,
            Err(error) => {
                let mut failure = self
                    .failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                failure.get_or_insert(error);
                self.stop.store(true, Ordering::Relaxed);
                fallback()
            }
        }
    }

    /// `K_0 x` for each right-hand side, checked for shape.
    fn multiply(&self, rhs: &[&[F]]) -> Vec<Vec<F>> {
        let m = self.source.rows_count();
        let zeros = || vec![vec![F::zero(); m]; rhs.len()];
        self.read(
            || checked_vectors(self.source.multiply(rhs)?, rhs.len(), m, "multiply"),
            zeros,
        )
    }

    fn rows(&self, picks: &[usize]) -> Vec<Vec<F>> {
        let m = self.source.rows_count();
        let zeros = || vec![vec![F::zero(); m]; picks.len()];
        self.read(
            || checked_vectors(self.source.rows(picks)?, picks.len(), m, "rows"),
            zeros,
        )
    }

    fn diagonal(&self) -> Vec<F> {
        let m = self.source.rows_count();
        self.read(
            || Ok(checked_vectors(vec![self.source.diagonal()?], 1, m, "diagonal")?.remove(0)),
            || vec![F::zero(); m],
        )
    }

    fn column_forms(&self, weights: Option<&[F]>) -> Vec<F> {
        let m = self.source.rows_count();
        self.read(
            || {
                let forms = self.source.column_forms(weights)?;
                Ok(checked_vectors(vec![forms], 1, m, "column_forms")?.remove(0))
            },
            || vec![F::zero(); m],
        )
    }
}

impl<F> std::fmt::Debug for ExternalFactor<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalFactor").finish_non_exhaustive()
    }
}

/// `vectors` if it is `count` vectors of `m` finite values, else an error naming the
/// source's `method`.
fn checked_vectors<F: Real>(
    vectors: Vec<Vec<F>>,
    count: usize,
    m: usize,
    method: &str,
) -> Result<Vec<Vec<F>>> {
    if vectors.len() != count || vectors.iter().any(|v| v.len() != m) {
        return Err(Error::invalid(
            "factor",
            format!("its {method} must give {count} vectors of {m} values"),
        ));
    }
    if !vectors.iter().flatten().all(|v| v.is_finite()) {
        return Err(Error::invalid(
            "factor",
            format!("its {method} gave NaN or infinite values"),
        ));
    }
    Ok(vectors)
}

/// A symmetric positive semi-definite kernel, read-only: dense or factored.
#[derive(Debug, Clone, Copy)]
pub enum KernelOperator<'a, F> {
    /// `K_0` itself, row-major `m×m`.
    Dense { kernel: &'a [F], m: usize },
    /// `K_0 = ΦΦ'`, `Φ` row-major `m×p`.
    Factored { factor: &'a [F], m: usize, p: usize },
    /// `K_0 = XX'`, `Φ = X` of CSR rows ([`SparseFactor`]).
    Sparse(&'a SparseFactor<'a, F>),
    /// `K_0 = ΦΦ'`, `Φ` held elsewhere ([`FactorSource`]).
    External(&'a ExternalFactor<'a, F>),
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
            KernelOperator::Sparse(sparse) => sparse.m(),
            KernelOperator::External(external) => external.source.rows_count(),
        }
    }

    /// The dense kernel, row-major, when this is one: the specialised passes read it.
    pub fn dense(&self) -> Option<&'a [F]> {
        match *self {
            KernelOperator::Dense { kernel, .. } => Some(kernel),
            KernelOperator::Factored { .. }
            | KernelOperator::Sparse(_)
            | KernelOperator::External(_) => None,
        }
    }

    /// Bytes the operator reads in one product (held elsewhere: those of `Φ`, as in
    /// memory, so that one-vs-rest selections share passes as they would on the factor in
    /// memory, one round for all of them).
    pub fn bytes(&self) -> usize {
        let len = match *self {
            KernelOperator::Dense { kernel, .. } => kernel.len(),
            KernelOperator::Factored { factor, .. } => factor.len(),
            KernelOperator::Sparse(sparse) => return sparse.bytes(),
            KernelOperator::External(external) => external
                .source
                .rows_count()
                .saturating_mul(external.source.width()),
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
            KernelOperator::Sparse(sparse) => sparse.multiply(pool, rhs),
            KernelOperator::External(external) => external.multiply(rhs),
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
            KernelOperator::Sparse(sparse) => sparse.rows(pool, picks),
            KernelOperator::External(external) => external.rows(picks),
        }
    }

    /// The diagonal of `K_0` (factored: the squared norms of the rows of `Φ`).
    pub fn diagonal(&self) -> Vec<F> {
        match *self {
            KernelOperator::Dense { kernel, m } => (0..m).map(|i| kernel[i * m + i]).collect(),
            KernelOperator::Factored { factor, p, .. } => factor_row_norms(factor, p),
            KernelOperator::Sparse(sparse) => sparse.diagonal(),
            KernelOperator::External(external) => external.diagonal(),
        }
    }

    /// The columns' quadratic forms `K_0[:, i]' W K_0[:, i]` (`W = diag(weights)`, `None`
    /// the identity) of a factored operator, in memory or held elsewhere: `Φ_i G Φ_i'`
    /// with `G = Φ'WΦ`. `None` for the dense kernel, whose set-up passes make them;
    /// `Err(Error::Interrupted)` once `stop` is raised (a factor in memory looks at it
    /// between its blocks of rows; one held elsewhere answers its own signals).
    pub fn column_forms(
        &self,
        pool: &rayon::ThreadPool,
        weights: Option<&[F]>,
        stop: &AtomicBool,
    ) -> Result<Option<Vec<F>>> {
        Ok(match *self {
            KernelOperator::Dense { .. } => None,
            KernelOperator::Factored { factor, m, p } => Some(factored_column_forms(
                pool,
                (factor, p),
                (factor, p),
                m,
                weights,
                stop,
            )?),
            KernelOperator::Sparse(sparse) => Some(sparse.column_forms(pool, weights, stop)?),
            KernelOperator::External(external) => Some(external.column_forms(weights)),
        })
    }
}

/// `Φ'X` (`r` vectors of `p`) of the row-major `m×p` block of rows `factor` and the columns
/// `rhs` of `X` (`m` values each, the block's rows): the partial sum of one chunk of a
/// factor held by chunks, computed as the in-memory operator computes its own.
pub fn factor_transpose_times<F: Real>(
    pool: &rayon::ThreadPool,
    factor: &[F],
    p: usize,
    rhs: &[&[F]],
) -> Vec<Vec<F>> {
    let m = rows_of(factor, p);
    transpose_times(pool, factor, m, p, rhs)
}

/// `Φ y_j` (`m` values) for the row-major `m×p` block `factor` and each `y_j` (`p` values).
pub fn factor_times<F: Real>(
    pool: &rayon::ThreadPool,
    factor: &[F],
    p: usize,
    ys: &[Vec<F>],
) -> Vec<Vec<F>> {
    let m = rows_of(factor, p);
    times_factor(pool, factor, m, p, ys)
}

/// `Φ'WΦ` (`p×p`, row-major) of the row-major `m×p` block `factor` and the diagonal `W`
/// (`None`: the identity) of its rows: one chunk's part of `G`.
pub fn factor_weighted_gram<F: Real>(
    pool: &rayon::ThreadPool,
    factor: &[F],
    p: usize,
    weights: Option<&[F]>,
) -> Array2<F> {
    let m = rows_of(factor, p);
    weighted_gram(pool, (factor, p), (factor, p), m, weights, &NEVER_STOPPED).unwrap_or_default()
}

/// `Φ_i G Φ_i'` for each row of the row-major `m×p` block `factor`, given `G` (`p×p`).
pub fn factor_forms_with<F: Real>(
    pool: &rayon::ThreadPool,
    factor: &[F],
    p: usize,
    gram: ArrayView2<F>,
) -> Vec<F> {
    let m = rows_of(factor, p);
    forms_with_gram(pool, (factor, p), (factor, p), m, gram, &NEVER_STOPPED).unwrap_or_default()
}

/// `‖Φ_i‖²` for each row of the row-major block `factor` of width `p`.
pub fn factor_row_norms<F: Real>(factor: &[F], p: usize) -> Vec<F> {
    factor
        .chunks_exact(p.max(1))
        .map(|row| crate::simd::dots(row, [row])[0])
        .collect()
}

/// The rows of a row-major block of width `p`.
fn rows_of<F>(factor: &[F], p: usize) -> usize {
    assert!(
        p > 0 && factor.len().is_multiple_of(p),
        "a factor block of width {p} has a whole number of rows"
    );
    factor.len() / p
}

/// `Φ'X` (`r` vectors of `p`) for the row-major `m×p` factor `Φ` and the columns `rhs` of
/// `X`: each fixed block of rows a running sum over its rows in order, the blocks' partial
/// sums added in block order (a wave of blocks at a time in parallel, so that only a few
/// partials are held). Each output reads only its own right-hand side, in one order.
fn transpose_times<F: Real>(
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
    sum_blocks(pool, m, partial, &NEVER_STOPPED).unwrap_or_default()
}

/// `Σ_b partial(b)` over the fixed blocks of `m` rows, in block order ([`fold_blocks`]).
fn sum_blocks<F: Real>(
    pool: &rayon::ThreadPool,
    m: usize,
    partial: impl Fn(usize) -> Vec<Vec<F>> + Sync,
    stop: &AtomicBool,
) -> Result<Vec<Vec<F>>> {
    let mut total: Option<Vec<Vec<F>>> = None;
    fold_blocks(
        pool,
        m,
        partial,
        |part| match total.as_mut() {
            None => total = Some(part),
            Some(total) => {
                for (t, v) in total.iter_mut().zip(&part) {
                    t.iter_mut().zip(v).for_each(|(t, &v)| *t += v);
                }
            }
        },
        stop,
    )?;
    Ok(total.unwrap_or_default())
}

/// `fold(partial(b))` for each fixed block `b` of `m` rows, in block order: the partials are
/// computed a wave of as many blocks as `pool` has threads at a time, so that a sum over the
/// blocks has one order whatever the thread count and holds only a wave of partials.
/// `Err(Error::Interrupted)` once `stop` is raised, looked at before each wave: at a million
/// rows a set-up's products take seconds.
pub(crate) fn fold_blocks<T: Send>(
    pool: &rayon::ThreadPool,
    m: usize,
    partial: impl Fn(usize) -> T + Sync,
    mut fold: impl FnMut(T),
    stop: &AtomicBool,
) -> Result<()> {
    let n_blocks = m.div_ceil(FACTOR_BLOCK_ROWS);
    let wave = pool.current_num_threads().max(1);
    let mut start = 0;
    while start < n_blocks {
        check_stop(stop)?;
        let end = (start + wave).min(n_blocks);
        if end - start == 1 {
            fold(partial(start));
        } else {
            let partials: Vec<T> =
                pool.install(|| (start..end).into_par_iter().map(&partial).collect());
            partials.into_iter().for_each(&mut fold);
        }
        start = end;
    }
    Ok(())
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
    let ys = transpose_times(pool, factor, m, p, rhs);
    times_factor(pool, factor, m, p, &ys)
}

/// `Φ_a' W Φ_b` (`p_a × p_b`) for two row-major factors of `m` rows and the diagonal `W`
/// (`None`: the identity), by fixed blocks of rows added in order; `Err(Error::Interrupted)`
/// once `stop` is raised.
fn weighted_gram<F: Real>(
    pool: &rayon::ThreadPool,
    (a, p_a): (&[F], usize),
    (b, p_b): (&[F], usize),
    m: usize,
    weights: Option<&[F]>,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
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
    let total = sum_blocks(pool, m, partial, stop)?
        .pop()
        .unwrap_or_default();
    Ok(Array2::from_shape_vec((p_a, p_b), total).expect("a p_a×p_b Gram matrix"))
}

/// `diag(K_a W K_b)` for `K_a = Φ_aΦ_a'` and `K_b = Φ_bΦ_b'`: row `i` is
/// `Φ_a[i] G Φ_b[i]'` with `G = Φ_a'WΦ_b`, each fixed block of rows one GEMM. With
/// `K_a = K_b` these are the columns' quadratic forms `K[:, i]'W K[:, i]`; with two views,
/// the cross term `K_a[:, i]'K_b[:, i]`. O(m·p_a·p_b): a minute at a million rows and a
/// rank of thousands, so `Err(Error::Interrupted)` once `stop` is raised.
pub(crate) fn factored_column_forms<F: Real>(
    pool: &rayon::ThreadPool,
    (a, p_a): (&[F], usize),
    (b, p_b): (&[F], usize),
    m: usize,
    weights: Option<&[F]>,
    stop: &AtomicBool,
) -> Result<Vec<F>> {
    let gram = weighted_gram(pool, (a, p_a), (b, p_b), m, weights, stop)?;
    forms_with_gram(pool, (a, p_a), (b, p_b), m, gram.view(), stop)
}

/// `Φ_a[i] G Φ_b[i]'` for each row `i`, each fixed block of rows one GEMM; a block that
/// would begin once `stop` is raised does not, and the call gives `Err(Error::Interrupted)`.
fn forms_with_gram<F: Real>(
    pool: &rayon::ThreadPool,
    (a, p_a): (&[F], usize),
    (b, p_b): (&[F], usize),
    m: usize,
    gram: ArrayView2<F>,
    stop: &AtomicBool,
) -> Result<Vec<F>> {
    let phi_a = ArrayView2::from_shape((m, p_a), a).expect("an m×p factor");
    let mut out = vec![F::zero(); m];
    pool.install(|| {
        out.par_chunks_mut(FACTOR_BLOCK_ROWS)
            .enumerate()
            .for_each(|(block, out)| {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let rows = block * FACTOR_BLOCK_ROWS..block * FACTOR_BLOCK_ROWS + out.len();
                let mut t = Array2::<F>::zeros((rows.len(), p_b));
                gemm(t.view_mut(), phi_a.slice(s![rows.clone(), ..]), gram);
                for ((value, t), i) in out.iter_mut().zip(t.rows()).zip(rows) {
                    let t = t.as_slice().expect("a row-major block");
                    *value = crate::simd::dots(t, [&b[i * p_b..(i + 1) * p_b]])[0];
                }
            });
    });
    check_stop(stop)?;
    Ok(out)
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
