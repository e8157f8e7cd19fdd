//! The pursuit over factors in memory in the factor's coordinates (docs/architecture.md,
//! "Picks in the factor's coordinates"). Every deflated kernel of a view `K_0 = ΦΦ'` stays
//! in the span of `Φ`: `K_t = Φ S_t Φ'` with a `p×p` `S_t` (`S_0 = I`, held in `f64`), and a
//! term `K_t − u v'` with `u = Φa`, `v = Φb` is `S_{t+1} = S_t − a b'`. Column `i` of `K_t`
//! is `Φ (S_t φ_i)` (`φ_i` row `i` of `Φ`), its inner products are forms in `G = Φ'Φ`:
//!
//! - projection: `τ = S_t φ_i` orthogonalised against the earlier unit directions in the
//!   `G` inner product (`a_r'Gτ` for `u_r'K_t e_i`), `a = τ/√(τ'Gτ)`, `b = S_t'Ga`
//!   (`v = K_t'u`);
//! - pivot: `a = b = τ/√(φ_i'τ)`, `φ_i'τ = K_t[i, i]`.
//!
//! Every `m`-vector the statistics' updates of [`super::engine`] need is `Φ` times a
//! `p`-vector: `u`, `v`, `K_t'Mu = Φ S_t'(Φ'MΦ)a`, the cross term's
//! `K_{y,t}'u_x = Φ_y S_{y,t}'(Φ_x'Φ_y)'a_x`; their scalars (`c'u = (Φ'c)'a`, `u'Mu`,
//! `u_x'u_y`) are forms in the `p×p` matrices of the set-up. A pick is therefore O(p²)
//! work here and one pass over each view's `Φ` with all of the pick's right-hand sides
//! together (a GEMM a fixed block of rows), in which each row's statistics are updated and
//! the block's best candidate found. Nothing of `m×k` is held.
//!
//! Every value is a function of its row alone, or a sum over fixed blocks of rows added in
//! block order: no result depends on the thread count.

use super::{Deflation, Pursuit, Score, Spec, Statistic};
use crate::error::{check_stop, try_zeroed, Error, Result};
use crate::kernel::gemm;
use crate::operator::fold_blocks;
use crate::real::Real;
use crate::tuning::FACTOR_BLOCK_ROWS;
use ndarray::{Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// Whether a pursuit of `k` picks over factors of widths `widths` (`m` rows each) keeps
/// its deflation in the factor's coordinates: its `p×p` matrices in `f64` take no more
/// memory than the terms of the engine over the kernel (`vectors` of `m` a view a pick),
/// or at most 256 MiB. A wide factor (a sparse `X` under the linear kernel, `p` its
/// features) keeps the terms.
pub(super) fn suits<F>(m: usize, k: usize, widths: &[usize], spec: &Spec<F>) -> bool {
    let weighted = |view: usize| {
        spec.statistics
            .iter()
            .filter(
                |s| matches!(s, Statistic::Quadratic { view: v, weights: Some(_) } if *v == view),
            )
            .count()
    };
    let mut squares = 0usize;
    for (view, &p) in widths.iter().enumerate() {
        // `S`, `G` and each weighted form's `Φ'MΦ`.
        squares = squares.saturating_add((2 + weighted(view)).saturating_mul(p.saturating_mul(p)));
    }
    if let [p_x, p_y] = widths {
        squares = squares.saturating_add(p_x.saturating_mul(*p_y));
    }
    let per_view = match spec.deflation {
        Deflation::Projection => 2,
        Deflation::Pivot => 1,
    };
    let terms = (per_view * widths.len())
        .saturating_mul(k.min(m))
        .saturating_mul(m)
        .saturating_mul(std::mem::size_of::<F>());
    squares.saturating_mul(8) <= terms.max(256 << 20)
}

/// A `rows×cols` matrix of `f64` allocated fallibly.
fn zeros(rows: usize, cols: usize) -> Result<Array2<f64>> {
    let values = try_zeroed(
        rows.saturating_mul(cols),
        "the pursuit's matrices in the factor's coordinates",
    )?;
    Ok(Array2::from_shape_vec((rows, cols), values).expect("length matches shape"))
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `A x`.
fn times(a: &Array2<f64>, x: &[f64]) -> Vec<f64> {
    a.dot(&ArrayView1::from(x)).to_vec()
}

/// `A' x`.
fn transpose_times(a: &Array2<f64>, x: &[f64]) -> Vec<f64> {
    a.t().dot(&ArrayView1::from(x)).to_vec()
}

fn scaled(x: &[f64], factor: f64) -> Vec<f64> {
    x.iter().map(|v| v * factor).collect()
}

/// One view: its factor and its deflation in the factor's coordinates.
struct View<'a, F> {
    factor: &'a [F],
    p: usize,
    /// `S_t`.
    s: Array2<f64>,
    /// `G = Φ'Φ`.
    gram: Array2<f64>,
    /// The earlier unit directions `a_r` of a projection (`a_r'Ga_r = 1`), each with `Ga_r`.
    directions: Vec<(Vec<f64>, Vec<f64>)>,
}

impl<F: Real> View<'_, F> {
    fn row(&self, i: usize) -> ArrayView2<'_, F> {
        ArrayView2::from_shape((1, self.p), &self.factor[i * self.p..(i + 1) * self.p])
            .expect("a row")
    }

    fn block(&self, rows: std::ops::Range<usize>) -> ArrayView2<'_, F> {
        let block = &self.factor[rows.start * self.p..rows.end * self.p];
        ArrayView2::from_shape((rows.len(), self.p), block).expect("whole rows")
    }
}

/// What the set-up gives each statistic besides its values: the `p`-space matrices of its
/// updates.
enum Prepared {
    /// `Φ'c`.
    Linear(Vec<f64>),
    /// `Φ'MΦ` of a weighted form (`None`: the view's `G`).
    Quadratic(Option<Array2<f64>>),
    Diagonal,
    Cross,
}

/// How each statistic is updated by a pick, from the columns (`slot`s) of the views'
/// products `Φ P` of the pick's pass.
#[derive(Clone, Copy)]
enum Update<F> {
    /// `ℓ −= factor · v`.
    Linear { view: usize, v: usize, factor: F },
    /// `q ← max(q − 2 v h + scale v², 0)`.
    Quadratic {
        view: usize,
        v: usize,
        h: usize,
        scale: F,
    },
    /// `d −= u v`.
    Diagonal { view: usize, u: usize, v: usize },
    /// `c ← c − v_x (K_{y,t}'u_x) − v_y (K_{x,t}'u_y) + overlap v_x v_y`.
    Cross {
        v: usize,
        y_of_x: usize,
        x_of_y: usize,
        overlap: F,
    },
}

/// The state of a pursuit over factors in memory.
pub(super) struct CoordinatesEngine<'a, F: Real> {
    views: Vec<View<'a, F>>,
    m: usize,
    spec: Spec<F>,
    prepared: Vec<Prepared>,
    /// `C = Φ_x'Φ_y` of two views.
    cross: Option<Array2<f64>>,
    /// `values[s][j]`: statistic `s` of column `j` of the current kernels.
    values: Vec<Vec<F>>,
    /// The statistics of `K_0`, the scale of the guards.
    initial: Vec<Vec<F>>,
    tol: F,
    pub(super) pool: std::sync::Arc<rayon::ThreadPool>,
    passes: usize,
}

/// The sums of `partial(b)` over the fixed blocks of `m` rows (each a list of matrices
/// in `F`, added in `f64`), in block order ([`fold_blocks`]).
fn sum_blocks<F: Real>(
    pool: &rayon::ThreadPool,
    m: usize,
    totals: &mut [Array2<f64>],
    partial: impl Fn(usize) -> Vec<Array2<F>> + Sync,
    stop: &AtomicBool,
) -> Result<()> {
    fold_blocks(
        pool,
        m,
        partial,
        |part| {
            for (total, part) in totals.iter_mut().zip(part) {
                total.zip_mut_with(&part, |t, &v| *t += v.as_f64());
            }
        },
        stop,
    )
}

impl<'a, F: Real> CoordinatesEngine<'a, F> {
    /// The engine over the factors `views` (`(Φ, p)`, one or two, of `m` rows each), with
    /// its set-up: one pass over each factor for its `p`-space matrices, one for the
    /// statistics of `K_0`.
    pub(super) fn new(
        views: &[(&'a [F], usize)],
        m: usize,
        spec: Spec<F>,
        tol: F,
        n_threads: usize,
        stop: &AtomicBool,
    ) -> Result<Self> {
        let pool = crate::pool::shared(n_threads)?;
        let mut engine = CoordinatesEngine {
            views: Vec::with_capacity(views.len()),
            m,
            spec,
            prepared: Vec::new(),
            cross: None,
            values: Vec::new(),
            initial: Vec::new(),
            tol,
            pool,
            passes: 0,
        };
        for &(factor, p) in views.iter().take(engine.spec.views) {
            let mut s = zeros(p, p)?;
            s.diag_mut().fill(1.0);
            engine.views.push(View {
                factor,
                p,
                s,
                gram: zeros(0, 0)?,
                directions: Vec::new(),
            });
        }
        engine.moments(stop)?;
        engine.values = engine.initial_statistics()?;
        engine.passes = 2 * engine.views.len();
        engine.initial = engine.values.clone();
        Ok(engine)
    }

    /// `G` of each view, the statistics' `Φ'c` and `Φ'MΦ`, and `C = Φ_x'Φ_y`: each fixed
    /// block of rows a few GEMMs in `F` (one read of the block), added in `f64` in block
    /// order.
    fn moments(&mut self, stop: &AtomicBool) -> Result<()> {
        let m = self.m;
        let n_views = self.views.len();
        for view in 0..n_views {
            let p = self.views[view].p;
            let linear: Vec<&[F]> = self
                .spec
                .statistics
                .iter()
                .filter_map(|s| match s {
                    Statistic::Linear { view: v, c } if *v == view => Some(c.as_slice()),
                    _ => None,
                })
                .collect();
            let weighted: Vec<&[F]> = self
                .spec
                .statistics
                .iter()
                .filter_map(|s| match s {
                    Statistic::Quadratic {
                        view: v,
                        weights: Some(w),
                    } if *v == view => Some(w.as_slice()),
                    _ => None,
                })
                .collect();
            let other = (view == 0 && n_views == 2).then(|| &self.views[1]);
            let has_other = other.is_some();
            let mut totals = vec![zeros(p, p)?];
            for _ in &weighted {
                totals.push(zeros(p, p)?);
            }
            totals.push(zeros(p, linear.len())?);
            if let Some(other) = other {
                totals.push(zeros(p, other.p)?);
            }
            let this = &self.views[view];
            let partial = |b: usize| -> Vec<Array2<F>> {
                let rows = b * FACTOR_BLOCK_ROWS..((b + 1) * FACTOR_BLOCK_ROWS).min(m);
                let block = this.block(rows.clone());
                let mut out = Vec::with_capacity(3 + weighted.len());
                let mut gram = Array2::<F>::zeros((p, p));
                gemm(gram.view_mut(), block.t(), block);
                out.push(gram);
                for w in &weighted {
                    let mut right = block.to_owned();
                    for (mut row, &w) in right.rows_mut().into_iter().zip(&w[rows.clone()]) {
                        row.iter_mut().for_each(|v| *v = *v * w);
                    }
                    let mut form = Array2::<F>::zeros((p, p));
                    gemm(form.view_mut(), block.t(), right.view());
                    out.push(form);
                }
                let cs = Array2::from_shape_fn((rows.len(), linear.len()), |(j, l)| {
                    linear[l][rows.start + j]
                });
                let mut sums = Array2::<F>::zeros((p, linear.len()));
                gemm(sums.view_mut(), block.t(), cs.view());
                out.push(sums);
                if let Some(other) = other {
                    let mut cross = Array2::<F>::zeros((p, other.p));
                    gemm(cross.view_mut(), block.t(), other.block(rows));
                    out.push(cross);
                }
                out
            };
            sum_blocks(&self.pool, m, &mut totals, partial, stop)?;
            let mut totals = totals.into_iter();
            self.views[view].gram = totals.next().expect("G");
            let mut forms: Vec<Array2<f64>> = totals.by_ref().take(weighted.len()).collect();
            let sums = totals.next().expect("Φ'c");
            if has_other {
                self.cross = totals.next();
            }
            // In the statistics' order, each `Φ'c` a column of `sums`.
            let mut linear_column = 0;
            if self.prepared.is_empty() {
                self.prepared = self
                    .spec
                    .statistics
                    .iter()
                    .map(|_| Prepared::Diagonal)
                    .collect();
            }
            forms.reverse();
            for (s, statistic) in self.spec.statistics.iter().enumerate() {
                match statistic {
                    Statistic::Linear { view: v, .. } if *v == view => {
                        self.prepared[s] = Prepared::Linear(sums.column(linear_column).to_vec());
                        linear_column += 1;
                    }
                    Statistic::Quadratic { view: v, weights } if *v == view => {
                        self.prepared[s] =
                            Prepared::Quadratic(weights.as_ref().and_then(|_| forms.pop()));
                    }
                    Statistic::Cross => self.prepared[s] = Prepared::Cross,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The statistics of `K_0`: for each fixed block of rows and view one GEMM of the rows
    /// with the matrices of the view's statistics side by side (`Φ'c` for a linear one,
    /// `G` or `Φ'MΦ` for a quadratic form, `C` for the cross term), then per row a dot
    /// product or a read.
    fn initial_statistics(&self) -> Result<Vec<Vec<F>>> {
        let m = self.m;
        let n_views = self.views.len();
        // Each view's matrix of the statistics' columns, and where each statistic's are.
        let mut columns: Vec<Vec<Vec<f64>>> = vec![Vec::new(); n_views];
        let mut at = vec![(0usize, 0usize); self.spec.statistics.len()];
        let mut push =
            |view: usize, matrix: &Array2<f64>, s: usize, columns: &mut Vec<Vec<Vec<f64>>>| {
                at[s] = (view, columns[view].len());
                for column in matrix.columns() {
                    columns[view].push(column.to_vec());
                }
            };
        for (s, (statistic, prepared)) in
            self.spec.statistics.iter().zip(&self.prepared).enumerate()
        {
            match (statistic, prepared) {
                (Statistic::Linear { view, .. }, Prepared::Linear(sum)) => {
                    let column =
                        Array2::from_shape_vec((sum.len(), 1), sum.clone()).expect("a column");
                    push(*view, &column, s, &mut columns);
                }
                (Statistic::Quadratic { view, .. }, Prepared::Quadratic(form)) => {
                    let form = form.as_ref().unwrap_or(&self.views[*view].gram);
                    push(*view, form, s, &mut columns);
                }
                (Statistic::Cross, _) => {
                    let cross = self.cross.as_ref().expect("two views");
                    push(0, cross, s, &mut columns);
                }
                _ => {}
            }
        }
        let rhs: Vec<Array2<F>> = columns
            .iter()
            .zip(&self.views)
            .map(|(columns, view)| {
                Array2::from_shape_fn((view.p, columns.len()), |(r, c)| F::from_f64(columns[c][r]))
            })
            .collect();
        let n_statistics = self.spec.statistics.len();
        let mut values: Vec<Vec<F>> = Vec::with_capacity(n_statistics);
        for _ in 0..n_statistics {
            values.push(try_zeroed(m, "the pursuit's statistics")?);
        }
        let statistics = &self.spec.statistics;
        let views = &self.views;
        let mut blocks = split_blocks(&mut values, m);
        self.pool.install(|| {
            blocks.par_iter_mut().enumerate().for_each(|(b, pieces)| {
                let start = b * FACTOR_BLOCK_ROWS;
                let rows = start..start + pieces.first().map_or(0, |p| p.len());
                let products: Vec<Array2<F>> = views
                    .iter()
                    .zip(&rhs)
                    .map(|(view, rhs)| {
                        let mut out = Array2::<F>::zeros((rows.len(), rhs.ncols()));
                        gemm(out.view_mut(), view.block(rows.clone()), rhs.view());
                        out
                    })
                    .collect();
                for (local, i) in rows.clone().enumerate() {
                    for (s, statistic) in statistics.iter().enumerate() {
                        let (view, column) = at[s];
                        let product = products[view].row(local);
                        let product = product.as_slice().expect("a row-major product");
                        let phi = |v: usize| &views[v].factor[i * views[v].p..(i + 1) * views[v].p];
                        pieces[s][local] = match statistic {
                            Statistic::Linear { .. } => product[column],
                            Statistic::Quadratic { view, .. } => {
                                let p = views[*view].p;
                                crate::simd::dots(phi(*view), [&product[column..column + p]])[0]
                            }
                            Statistic::Diagonal { view } => {
                                crate::simd::dots(phi(*view), [phi(*view)])[0]
                            }
                            Statistic::Cross => {
                                let p = views[1].p;
                                crate::simd::dots(phi(1), [&product[column..column + p]])[0]
                            }
                        };
                    }
                }
            });
        });
        drop(blocks);
        if !values.iter().flatten().all(|v| v.is_finite()) {
            return Err(Error::invalid(
                "factor",
                "gives NaN or infinite kernel statistics, or values whose squares overflow",
            ));
        }
        Ok(values)
    }

    pub(super) fn run(&mut self, k: usize, stop: &AtomicBool) -> Result<Pursuit> {
        let mut chosen = vec![false; self.m];
        let (mut indices, mut scores) = (Vec::with_capacity(k), Vec::with_capacity(k));
        let mut best = None;
        let mut first = true;
        while indices.len() < k {
            check_stop(stop)?;
            if first {
                best = self.sweep(None, &chosen);
                first = false;
            }
            let Some((i, score)) = best else {
                break;
            };
            chosen[i] = true;
            indices.push(i);
            scores.push(score.as_f64());
            // The last pick's deflation would serve only a next pick.
            if indices.len() >= k {
                break;
            }
            let Some(pass) = self.deflate(i) else {
                break;
            };
            best = self.sweep(Some(&pass), &chosen);
            self.passes += self.views.len();
        }
        Ok(Pursuit {
            stopped_early: indices.len() < k,
            indices,
            scores,
            kernel_passes: self.passes,
        })
    }

    /// The coefficients `(a, b)` of view `view`'s term for pick `i` (`u = Φa`, `v = Φb`),
    /// or `None` when its column is numerically zero; a projection's direction is kept.
    fn direction(&mut self, view: usize, i: usize) -> Option<(Vec<f64>, Vec<f64>)> {
        let state = &mut self.views[view];
        let phi: Vec<f64> = state.row(i).iter().map(|v| v.as_f64()).collect();
        let mut tau = times(&state.s, &phi);
        match self.spec.deflation {
            Deflation::Pivot => {
                let pivot = dot(&phi, &tau);
                // NaN is no pivot either.
                (pivot > 0.0).then(|| {
                    let a = scaled(&tau, 1.0 / pivot.sqrt());
                    (a.clone(), a)
                })
            }
            Deflation::Projection => {
                // Re-orthogonalised against the earlier directions in turn, as the terms
                // form does in `ℝ^m` (`u_r'τ = a_r'Gτ`).
                for (a, ga) in &state.directions {
                    let factor = dot(ga, &tau);
                    tau.iter_mut().zip(a).for_each(|(t, &a)| *t -= factor * a);
                }
                let norm2 = dot(&tau, &times(&state.gram, &tau));
                if norm2.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                    return None;
                }
                let a = scaled(&tau, 1.0 / norm2.sqrt());
                let ga = times(&state.gram, &a);
                let b = transpose_times(&state.s, &ga);
                state.directions.push((a.clone(), ga));
                Some((a, b))
            }
        }
    }

    /// Deflates every view by pick `i` in the factor's coordinates: the pick's pass (each
    /// view's right-hand sides and the statistics' updates), then `S −= ab'`. `None` when a
    /// view's column was numerically zero (nothing is left to pick).
    fn deflate(&mut self, i: usize) -> Option<Pass<F>> {
        let n_views = self.views.len();
        let mut terms = Vec::with_capacity(n_views);
        for view in 0..n_views {
            terms.push(self.direction(view, i)?);
        }
        let pivot = self.spec.deflation == Deflation::Pivot;
        // Each view's right-hand sides: `a` (slot 0), `b` (slot 1; `a` itself under pivot),
        // then those the statistics add.
        let mut columns: Vec<Vec<Vec<f64>>> = terms
            .iter()
            .map(|(a, b)| {
                if pivot {
                    vec![a.clone()]
                } else {
                    vec![a.clone(), b.clone()]
                }
            })
            .collect();
        let v_slot = usize::from(!pivot);
        let add = |columns: &mut Vec<Vec<Vec<f64>>>, view: usize, x: Vec<f64>| {
            columns[view].push(x);
            columns[view].len() - 1
        };
        let mut updates = Vec::with_capacity(self.spec.statistics.len());
        for (statistic, prepared) in self.spec.statistics.iter().zip(&self.prepared) {
            let update = match (statistic, prepared) {
                (Statistic::Linear { view, .. }, Prepared::Linear(sum)) => Update::Linear {
                    view: *view,
                    v: v_slot,
                    factor: F::from_f64(dot(sum, &terms[*view].0)),
                },
                (Statistic::Quadratic { view, .. }, Prepared::Quadratic(form)) => {
                    let state = &self.views[*view];
                    let a = &terms[*view].0;
                    let ma = times(form.as_ref().unwrap_or(&state.gram), a);
                    let scale = F::from_f64(dot(a, &ma));
                    // `K_t'Mu = Φ S_t'(Φ'MΦ)a`: under projection with `M = I`, `v` itself.
                    let h = if form.is_none() && !pivot {
                        v_slot
                    } else {
                        add(&mut columns, *view, transpose_times(&state.s, &ma))
                    };
                    Update::Quadratic {
                        view: *view,
                        v: v_slot,
                        h,
                        scale,
                    }
                }
                (Statistic::Diagonal { view }, _) => Update::Diagonal {
                    view: *view,
                    u: 0,
                    v: v_slot,
                },
                (Statistic::Cross, _) => {
                    let cross = self.cross.as_ref().expect("two views");
                    let (a_x, a_y) = (&terms[0].0, &terms[1].0);
                    let c_a_y = times(cross, a_y);
                    let overlap = F::from_f64(dot(a_x, &c_a_y));
                    let y_of_x = transpose_times(&self.views[1].s, &transpose_times(cross, a_x));
                    let x_of_y = transpose_times(&self.views[0].s, &c_a_y);
                    Update::Cross {
                        v: v_slot,
                        y_of_x: add(&mut columns, 1, y_of_x),
                        x_of_y: add(&mut columns, 0, x_of_y),
                        overlap,
                    }
                }
                _ => unreachable!("each statistic is prepared by its kind"),
            };
            updates.push(update);
        }
        for (view, (a, b)) in terms.iter().enumerate() {
            let s = &mut self.views[view].s;
            for (mut row, &ai) in s.rows_mut().into_iter().zip(a) {
                row.iter_mut().zip(b).for_each(|(r, &bj)| *r -= ai * bj);
            }
        }
        let rhs = columns
            .iter()
            .zip(&self.views)
            .map(|(columns, view)| {
                Array2::from_shape_fn((view.p, columns.len()), |(r, c)| F::from_f64(columns[c][r]))
            })
            .collect();
        Some(Pass { rhs, updates })
    }

    /// One pass over the rows: with `pass`, each fixed block of rows multiplied by each
    /// view's right-hand sides (one GEMM) and its statistics updated; then the best
    /// admissible column not yet `chosen` and its score (ties to the lowest index).
    fn sweep(&mut self, pass: Option<&Pass<F>>, chosen: &[bool]) -> Option<(usize, F)> {
        let m = self.m;
        let views = &self.views;
        let spec = &self.spec;
        let initial = &self.initial;
        let tol = self.tol;
        let mut blocks = split_blocks(&mut self.values, m);
        let best: Vec<Option<(usize, F)>> = self.pool.install(|| {
            blocks
                .par_iter_mut()
                .enumerate()
                .map(|(b, pieces)| {
                    let start = b * FACTOR_BLOCK_ROWS;
                    let rows = start..start + pieces.first().map_or(0, |p| p.len());
                    if let Some(pass) = pass {
                        apply(views, pass, pieces, rows.clone());
                    }
                    block_best(&spec.score, pieces, initial, chosen, rows, tol)
                })
                .collect()
        });
        best.into_iter()
            .flatten()
            .fold(None, |best: Option<(usize, F)>, (j, score)| {
                if best.is_none_or(|(_, top)| score > top) {
                    Some((j, score))
                } else {
                    best
                }
            })
    }
}

/// A pick's pass: each view's right-hand sides (`p × r`) and each statistic's update.
struct Pass<F> {
    rhs: Vec<Array2<F>>,
    updates: Vec<Update<F>>,
}

/// Each fixed block of rows of every statistic, split off so that blocks run in parallel.
fn split_blocks<F>(values: &mut [Vec<F>], m: usize) -> Vec<Vec<&mut [F]>> {
    let n_blocks = m.div_ceil(FACTOR_BLOCK_ROWS);
    let mut blocks: Vec<Vec<&mut [F]>> = (0..n_blocks).map(|_| Vec::new()).collect();
    for statistic in values.iter_mut() {
        for (b, piece) in statistic.chunks_mut(FACTOR_BLOCK_ROWS).enumerate() {
            blocks[b].push(piece);
        }
    }
    blocks
}

/// The updates of `pass` on the block of rows `rows` of the statistics (`pieces`).
fn apply<F: Real>(
    views: &[View<'_, F>],
    pass: &Pass<F>,
    pieces: &mut [&mut [F]],
    rows: std::ops::Range<usize>,
) {
    let products: Vec<Array2<F>> = views
        .iter()
        .zip(&pass.rhs)
        .map(|(view, rhs)| {
            let mut out = Array2::<F>::zeros((rows.len(), rhs.ncols()));
            gemm(out.view_mut(), view.block(rows.clone()), rhs.view());
            out
        })
        .collect();
    let two = F::from_f64(2.0);
    for (s, update) in pass.updates.iter().enumerate() {
        let values = &mut *pieces[s];
        match *update {
            Update::Linear { view, v, factor } => {
                let v = products[view].column(v);
                values
                    .iter_mut()
                    .zip(v)
                    .for_each(|(l, &v)| *l -= factor * v);
            }
            Update::Quadratic { view, v, h, scale } => {
                let product = &products[view];
                for (local, q) in values.iter_mut().enumerate() {
                    let (v, h) = (product[[local, v]], product[[local, h]]);
                    // Clamped: the form is a sum of squares.
                    *q = (*q - two * v * h + scale * v * v).max(F::zero());
                }
            }
            Update::Diagonal { view, u, v } => {
                let product = &products[view];
                for (local, d) in values.iter_mut().enumerate() {
                    *d -= product[[local, u]] * product[[local, v]];
                }
            }
            Update::Cross {
                v,
                y_of_x,
                x_of_y,
                overlap,
            } => {
                let (x, y) = (&products[0], &products[1]);
                for (local, c) in values.iter_mut().enumerate() {
                    let (vx, vy) = (x[[local, v]], y[[local, v]]);
                    *c = *c - vx * y[[local, y_of_x]] - vy * x[[local, x_of_y]] + overlap * vx * vy;
                }
            }
        }
    }
}

/// The best admissible column of the block of rows `rows` not yet `chosen` (ties to the
/// lowest index), as [`super::engine`] scores it.
fn block_best<F: Real>(
    score: &Score<F>,
    pieces: &[&mut [F]],
    initial: &[Vec<F>],
    chosen: &[bool],
    rows: std::ops::Range<usize>,
    tol: F,
) -> Option<(usize, F)> {
    let values: Vec<&[F]> = pieces.iter().map(|piece| &**piece).collect();
    let columns = rows
        .enumerate()
        .filter(|&(_, j)| !chosen[j])
        .map(|(at, j)| (j, at));
    score.best(columns, &values, initial, tol)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_rule_keeps_wide_factors_as_terms() {
        let spec = |deflation| Spec::<f64> {
            statistics: vec![Statistic::Quadratic {
                view: 0,
                weights: None,
            }],
            deflation,
            views: 1,
            score: Score::Components,
        };
        assert!(suits(200_000, 20, &[300], &spec(Deflation::Pivot)));
        // 100,000 features: 160 GB of `p×p` against 16 MB of terms.
        assert!(!suits(
            1_000,
            1_000,
            &[100_000],
            &spec(Deflation::Projection)
        ));
    }

    #[test]
    fn a_raised_stop_ends_the_set_up_with_interrupted() {
        let (m, p) = (300, 4);
        let mut uniform = crate::test_common::uniform_stream(3);
        let factor: Vec<f64> = (0..m * p).map(|_| uniform()).collect();
        let spec = Spec::<f64> {
            statistics: vec![Statistic::Quadratic {
                view: 0,
                weights: None,
            }],
            deflation: Deflation::Projection,
            views: 1,
            score: Score::Components,
        };
        let engine =
            CoordinatesEngine::new(&[(&factor, p)], m, spec, 1e-9, 1, &AtomicBool::new(true));
        assert!(matches!(engine, Err(Error::Interrupted)));
    }
}
