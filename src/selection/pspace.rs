//! The selection over a factor `K_0 = ΦΦ'` in the factor's coordinates (docs/architecture.md,
//! "Picks in the factor's coordinates"). Every column of every deflated kernel lies in the
//! span of `Φ`, so the deflated kernel is held as `K_t = Φ S_t Φ'` with a `p×p` matrix
//! `S_t` (`S_0 = I`), and every `m`-vector of the engine over the kernel is `Φ` times a
//! `p`-vector: a term `K_t − u v'` with `u = Φa`, `v = Φb` is `S_{t+1} = S_t − a b'`.
//!
//! The driver (this module) holds `S_t`, `G = Φ'Φ`, `E = Φ'DΦ`, the class sums `σ_c = Φ'1_c`
//! and the earlier `ortho-*` directions, all `p×p` or `p`-vectors in `f64`, and makes each
//! stage's terms from the picks' rows `φ_i` alone (O(p²) a pick): column `i` of `K_t` is
//! `Φ (S_t φ_i)`, its inner products are forms in `G`, its `c'Dc` a form in `E`. The rows
//! ([`super::rows`]) hold the per-row statistics and apply a stage's terms in one pass over
//! `Φ` with two right-hand sides a term, then give the next stage's best candidates: one
//! round a stage, wherever the rows are held. The picks are those of the engine over the
//! kernel (the same criteria, thresholds, skips and ties), up to the roundings of products
//! taken in another order.

use super::engine::class_weighting;
use super::rows::{Candidate, Moments, RowStatistics, RowTerm, RowsSetUp};
use super::{random_ranks, Selection};
use crate::error::{check_stop, try_zeroed, Error, Result};
use crate::params::{Family, ValidParams};
use crate::progress::Progress;
use crate::real::Real;
use std::sync::atomic::AtomicBool;

/// The rows of a factor `Φ` with their statistics, held in memory or elsewhere (each
/// chunk of rows by a worker of a cluster). Each method is one round over the rows.
pub trait FactorRows<F> {
    /// `m`, the rows of `Φ`.
    fn rows_count(&self) -> usize;
    /// `p`, the columns of `Φ`.
    fn width(&self) -> usize;
    /// `G`, `E` and `σ_c` of all rows, for rows of classes `classes` (in the engine's
    /// order, `m` codes), class `c` weighing `class_weights[c]`.
    fn moments(
        &mut self,
        classes: &[u32],
        class_weights: &[f64],
        stop: &AtomicBool,
    ) -> Result<Moments>;
    /// The statistics of `K_0` (`rank`: every row's place in the random order, for the
    /// `random` criterion; else empty).
    fn start(&mut self, classes: &[u32], set_up: &RowsSetUp<'_>, rank: &[usize]) -> Result<()>;
    /// A round ([`RowStatistics::advance`]): the best `take` admissible candidates of all
    /// rows, best first, ties to the lowest index.
    fn advance(
        &mut self,
        terms: &[RowTerm<F>],
        blocked: &[usize],
        take: usize,
    ) -> Result<Vec<Candidate<F>>>;
}

/// All rows of a factor in memory, row-major `m×p`.
pub(crate) struct RowsInMemory<'a, F> {
    pool: std::sync::Arc<rayon::ThreadPool>,
    factor: &'a [F],
    p: usize,
    statistics: Option<RowStatistics>,
}

impl<'a, F: Real> RowsInMemory<'a, F> {
    pub(crate) fn new(factor: &'a [F], p: usize, n_threads: usize) -> Result<Self> {
        Ok(RowsInMemory {
            pool: crate::pool::shared(n_threads)?,
            factor,
            p,
            statistics: None,
        })
    }
}

impl<F: Real> FactorRows<F> for RowsInMemory<'_, F> {
    fn rows_count(&self) -> usize {
        self.factor.len() / self.p.max(1)
    }

    fn width(&self) -> usize {
        self.p
    }

    fn moments(
        &mut self,
        classes: &[u32],
        class_weights: &[f64],
        stop: &AtomicBool,
    ) -> Result<Moments> {
        Moments::of_rows(
            &self.pool,
            self.factor,
            self.p,
            classes,
            class_weights,
            stop,
        )
    }

    fn start(&mut self, classes: &[u32], set_up: &RowsSetUp<'_>, rank: &[usize]) -> Result<()> {
        let statistics = RowStatistics::start(
            &self.pool,
            self.factor,
            self.p,
            Vec::new(),
            classes.to_vec(),
            rank.to_vec(),
            set_up,
        )?;
        self.statistics = Some(statistics);
        Ok(())
    }

    fn advance(
        &mut self,
        terms: &[RowTerm<F>],
        blocked: &[usize],
        take: usize,
    ) -> Result<Vec<Candidate<F>>> {
        let statistics = self
            .statistics
            .as_mut()
            .ok_or_else(|| Error::invalid("factor", "rows advanced before their start"))?;
        Ok(statistics.advance(&self.pool, self.factor, self.p, terms, blocked, take))
    }
}

/// Whether the selection over an `m×p` factor keeps its deflation in the factor's
/// coordinates: its `p×p` matrices (three, in `f64`) take no more memory than the rank-one
/// terms of the engine over the kernel (`vectors_per_term · k` vectors of `m`), or at most
/// 256 MiB. A wide factor (a sparse `X` under the linear kernel, `p` the features) keeps
/// the terms instead.
pub(crate) fn suits<F>(m: usize, p: usize, params: &ValidParams) -> bool {
    let square = 3usize.saturating_mul(p).saturating_mul(p).saturating_mul(8);
    let terms = params
        .vectors_per_term()
        .max(1)
        .saturating_mul(params.k.min(m))
        .saturating_mul(m)
        .saturating_mul(std::mem::size_of::<F>());
    square <= terms.max(256 << 20)
}

/// A row-major `n×n` matrix of `f64`.
struct Square {
    n: usize,
    values: Vec<f64>,
}

impl Square {
    fn identity(n: usize) -> Result<Self> {
        let mut values = try_zeroed(n * n, "the deflation in the factor's coordinates")?;
        for i in 0..n {
            values[i * n + i] = 1.0;
        }
        Ok(Square { n, values })
    }

    fn of(n: usize, values: Vec<f64>) -> Self {
        Square { n, values }
    }

    /// `A x`.
    fn times(&self, x: &[f64]) -> Vec<f64> {
        self.values
            .chunks_exact(self.n)
            .map(|row| dot(row, x))
            .collect()
    }

    /// `A' x`, as a sum of the rows in order.
    fn transpose_times(&self, x: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.n];
        for (row, &xi) in self.values.chunks_exact(self.n).zip(x) {
            out.iter_mut().zip(row).for_each(|(o, &a)| *o += xi * a);
        }
        out
    }

    /// `A −= a b'`.
    fn subtract_outer(&mut self, a: &[f64], b: &[f64]) {
        for (row, &ai) in self.values.chunks_exact_mut(self.n).zip(a) {
            row.iter_mut().zip(b).for_each(|(r, &bj)| *r -= ai * bj);
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn scaled(x: &[f64], factor: f64) -> Vec<f64> {
    x.iter().map(|v| v * factor).collect()
}

/// The driver's state: `S_t` and what it needs beside it.
struct State {
    s: Square,
    gram: Square,
    weighted: Square,
    class_sums: Vec<Vec<f64>>,
    /// The earlier unit directions `q_r` of an `ortho-*` deflation (`q_r'Gq_r = 1`), each
    /// with `G q_r`.
    ortho: Vec<(Vec<f64>, Vec<f64>)>,
}

impl State {
    /// The unit direction of a pick of column coefficients `column` (`c = Φ column`): `τ =
    /// c/‖c‖`, or for `ortho-*` its Gram–Schmidt residual against the earlier directions
    /// (classical, coefficients `q'τ`), `None` when that is numerically zero.
    fn direction(&self, column: Vec<f64>, orthogonalised: bool, tol: f64) -> Option<Vec<f64>> {
        let norm = dot(&column, &self.gram.times(&column)).sqrt();
        let tau = scaled(&column, 1.0 / norm);
        if !orthogonalised {
            return Some(tau);
        }
        let coefficients: Vec<f64> = self.ortho.iter().map(|(_, gq)| dot(gq, &tau)).collect();
        let mut q = tau;
        for ((earlier, _), &c) in self.ortho.iter().zip(&coefficients) {
            q.iter_mut().zip(earlier).for_each(|(v, &e)| *v -= c * e);
        }
        let norm2 = dot(&q, &self.gram.times(&q));
        if norm2 <= tol {
            return None;
        }
        Some(scaled(&q, 1.0 / norm2.sqrt()))
    }

    /// Records the term `u = Φa`, `v = Φb`: its update of the rows' statistics (with
    /// `h = K_t'Du` of the kernel before it), then `S −= a b'`.
    fn record<F: Real>(&mut self, a: &[f64], b: &[f64]) -> RowTerm<F> {
        let ea = self.weighted.times(a);
        let h = self.s.transpose_times(&ea);
        let term = RowTerm {
            v: b.iter().map(|&v| F::from_f64(v)).collect(),
            h: h.iter().map(|&v| F::from_f64(v)).collect(),
            class_sums: self.class_sums.iter().map(|sigma| dot(sigma, a)).collect(),
            weighted_norm: dot(a, &ea),
        };
        self.s.subtract_outer(a, b);
        term
    }

    /// A stage's picks in order, each deflated by the stage's earlier terms: skipped when its
    /// column is numerically explained by then (from the second pick on) or its direction is
    /// numerically zero, else chosen and deflated by. Returns the stage's terms.
    fn stage<F: Real>(
        &mut self,
        picks: &[Candidate<F>],
        params: &ValidParams,
        chosen: &mut Vec<usize>,
    ) -> Vec<RowTerm<F>> {
        let orthogonalised = params.directions.orthogonalised();
        let mut terms = Vec::with_capacity(picks.len());
        for (s, pick) in picks.iter().enumerate() {
            let phi: Vec<f64> = pick.row.iter().map(|v| v.as_f64()).collect();
            let column = self.s.times(&phi);
            if s > 0 && dot(&column, &self.weighted.times(&column)) <= pick.threshold {
                continue;
            }
            let Some(x) = self.direction(column, orthogonalised, params.tol) else {
                continue;
            };
            let gx = self.gram.times(&x);
            if orthogonalised {
                self.ortho.push((x.clone(), gx.clone()));
            }
            chosen.push(pick.index);
            let (a, b) = match params.family {
                Family::Hotelling => {
                    // u = λx with λ = x'K_t x = (Gx)'S(Gx), v = x
                    let lambda = dot(&gx, &self.s.times(&gx));
                    (scaled(&x, lambda), x)
                }
                Family::Projection => (x, self.s.transpose_times(&gx)),
                Family::Schur => {
                    // v = K_t x, λ = x'K_t x, u = v/λ: nothing to deflate when λ ≤ 0
                    let v = self.s.times(&gx);
                    let lambda = dot(&gx, &v);
                    if lambda <= 0.0 {
                        continue;
                    }
                    (scaled(&v, 1.0 / lambda), v)
                }
                Family::None => continue,
            };
            terms.push(self.record(&a, &b));
        }
        terms
    }
}

/// The selection of a checked problem (`classes`) over the factor held by `rows`.
pub(crate) fn select<F: Real>(
    rows: &mut dyn FactorRows<F>,
    classes: &[u32],
    params: &ValidParams,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Selection> {
    let (m, p) = (rows.rows_count(), rows.width());
    let (class_weights, scatter_weights) = class_weighting(classes);
    if m != classes.len() || p == 0 {
        return Err(Error::invalid(
            "factor",
            format!("holds {m} rows of width {p} for {} labels", classes.len()),
        ));
    }
    let moments = rows.moments(classes, &class_weights, stop)?;
    let shaped = moments.gram.len() == p * p
        && moments.weighted.len() == p * p
        && moments.class_sums.len() == class_weights.len()
        && moments.class_sums.iter().all(|sum| sum.len() == p);
    let finite = moments
        .gram
        .iter()
        .chain(&moments.weighted)
        .chain(moments.class_sums.iter().flatten());
    if !shaped || !finite.into_iter().all(|v| v.is_finite()) {
        return Err(Error::invalid("factor", "its moments have the wrong shape"));
    }
    let rank = random_ranks(params, m)?;
    let set_up = RowsSetUp {
        weighted: &moments.weighted,
        class_sums: &moments.class_sums,
        scatter_weights: &scatter_weights,
        criterion: params.criterion,
        tol: params.tol,
    };
    rows.start(classes, &set_up, &rank)?;
    drop(rank);
    let mut passes = 2;
    let Moments {
        gram,
        weighted,
        class_sums,
        ..
    } = moments;
    let mut deflation = State {
        s: Square::identity(p)?,
        gram: Square::of(p, gram),
        weighted: Square::of(p, weighted),
        class_sums,
        ortho: Vec::new(),
    };
    let mut chosen = Vec::with_capacity(params.k.min(m));
    let mut stopped_early = false;
    let mut candidates = rows.advance(&[], &[], params.stages.min(params.k))?;
    while chosen.len() < params.k {
        check_stop(stop)?;
        if candidates.is_empty() {
            stopped_early = true;
            break;
        }
        let before = chosen.len();
        let terms = if params.family == Family::None {
            chosen.extend(candidates.iter().map(|candidate| candidate.index));
            Vec::new()
        } else {
            deflation.stage(&candidates, params, &mut chosen)
        };
        progress.advance(chosen.len() - before);
        if chosen.len() >= params.k {
            break;
        }
        let blocked: Vec<usize> = candidates.iter().map(|candidate| candidate.index).collect();
        passes += usize::from(!terms.is_empty());
        let take = params.stages.min(params.k - chosen.len());
        candidates = rows.advance(&terms, &blocked, take)?;
    }
    Ok(Selection {
        indices: chosen,
        stopped_early,
        kernel_passes: passes,
    })
}
