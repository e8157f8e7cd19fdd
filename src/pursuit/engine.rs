//! The pursuit's state: for each view `K_0` and the rank-one terms of `K_t = K_0 − U V'`,
//! and the statistics of every column, updated pick by pick by the rules of
//! docs/architecture.md ("The matching-pursuit family"): under `K_{t+1} = K_t − u v'`,
//!
//! - linear `ℓ_c ← ℓ_c − (c'u) v`;
//! - quadratic `q_M ← q_M − 2 v∘(K_t'Mu) + (u'Mu) v∘v`, `K_t'Mu = K_0 Mu − V(U'Mu)`;
//! - diagonal `d ← d − u∘v`;
//! - cross `c ← c − v_x∘(K_{y,t}'u_x) − v_y∘(K_{x,t}'u_y) + (u_x'u_y) v_x∘v_y`.
//!
//! Every product with a `K_0` of a pick comes from one read of that kernel.
//!
//! This engine runs over dense kernels, factors held elsewhere, and factors in memory too
//! wide for `p×p` matrices; over other factors in memory the same updates run in the
//! factor's coordinates ([`super::pspace`]), with every `m`-vector `Φ` times a `p`-vector.

use super::{Deflation, Pursuit, Spec, Statistic};
use crate::error::{check_stop, Error, Result};
use crate::operator::{factored_column_forms, KernelOperator};
use crate::passes::Workspace;
use crate::real::Real;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// One kernel and its deflation terms.
struct View<'a, F: Real> {
    /// `K_0`, symmetric, never written: dense or factored.
    kernel: KernelOperator<'a, F>,
    /// `u_r` of each term; for [`Deflation::Pivot`] also `v_r` (`u = v`).
    us: Vec<Vec<F>>,
    /// `v_r` of each term of [`Deflation::Projection`]; empty for pivot.
    vs: Vec<Vec<F>>,
    workspace: Workspace<F>,
}

impl<F: Real> View<'_, F> {
    /// `v_r`, the right factor of term `r`.
    fn v(&self, r: usize) -> &[F] {
        if self.vs.is_empty() {
            &self.us[r]
        } else {
            &self.vs[r]
        }
    }

    /// `K_t[:, i] = K_0[:, i] − Σ_r u_r v_r[i]` (`K_0` symmetric: its row `i`).
    fn column(&self, i: usize, pool: &rayon::ThreadPool) -> Vec<F> {
        let mut column = self.kernel.rows(pool, &[i]).pop().unwrap_or_default();
        for (r, u) in self.us.iter().enumerate() {
            let factor = self.v(r)[i];
            column
                .iter_mut()
                .zip(u)
                .for_each(|(c, &u)| *c -= factor * u);
        }
        column
    }

    /// `K_t'x = K_0 x − V(U'x)` from the product `K_0 x`.
    fn deflated_product(&self, mut product: Vec<F>, x: &[F]) -> Vec<F> {
        for (r, u) in self.us.iter().enumerate() {
            let factor = dot(u, x);
            let v = self.v(r);
            product
                .iter_mut()
                .zip(v)
                .for_each(|(p, &v)| *p -= factor * v);
        }
        product
    }
}

/// The state of a pursuit.
pub(super) struct PursuitEngine<'a, F: Real> {
    views: Vec<View<'a, F>>,
    m: usize,
    spec: Spec<F>,
    /// `values[s][j]`: statistic `s` of column `j` of the current kernels.
    values: Vec<Vec<F>>,
    /// The statistics of `K_0`, the scale of the guards.
    initial: Vec<Vec<F>>,
    tol: F,
    pub(super) pool: std::sync::Arc<rayon::ThreadPool>,
    passes: usize,
    /// Empty vectors of capacity `m`, reserved for the terms still to be recorded.
    reserved: Vec<Vec<F>>,
}

/// Lane-parallel dot product.
fn dot<F: Real>(a: &[F], b: &[F]) -> F {
    crate::simd::dots(a, [b])[0]
}

fn scaled<F: Real>(x: &[F], factor: F) -> Vec<F> {
    x.iter().map(|&x| x * factor).collect()
}

impl<'a, F: Real> PursuitEngine<'a, F> {
    /// The engine over `first` (and `second`, for two views), with its statistics' set-up
    /// pass over each kernel; `Err(Error::Interrupted)` once `stop` is raised during a
    /// factor's.
    pub(super) fn new(
        first: KernelOperator<'a, F>,
        second: Option<KernelOperator<'a, F>>,
        spec: Spec<F>,
        tol: F,
        n_threads: usize,
        stop: &AtomicBool,
    ) -> Result<Self> {
        let m = first.m();
        let dense = first.dense().is_some();
        if second.is_some_and(|second| second.dense().is_some() != dense) {
            return Err(Error::invalid(
                "second_kernel",
                "must be dense or factored as the first kernel is",
            ));
        }
        let external =
            |kernel: &KernelOperator<'a, F>| matches!(kernel, KernelOperator::External(_));
        let sparse = |kernel: &KernelOperator<'a, F>| matches!(kernel, KernelOperator::Sparse(_));
        if second.is_some() && (external(&first) || second.as_ref().is_some_and(external)) {
            // The cross term needs `Φ_x'Φ_y` of both factors' rows side by side.
            return Err(Error::Unsupported(
                "second_factor: the cross term of two views needs both factors in memory, not held elsewhere".into(),
            ));
        }
        if second.is_some() && (sparse(&first) || second.as_ref().is_some_and(sparse)) {
            return Err(Error::Unsupported(
                "second_factor: the cross term of two views needs dense factors, not sparse rows"
                    .into(),
            ));
        }
        let pool = crate::pool::shared(n_threads)?;
        let views: Vec<View<'a, F>> = std::iter::once(first)
            .chain(second)
            .take(spec.views)
            .map(|kernel| View {
                kernel,
                us: Vec::new(),
                vs: Vec::new(),
                workspace: Workspace::default(),
            })
            .collect();
        let mut engine = PursuitEngine {
            views,
            m,
            spec,
            values: Vec::new(),
            initial: Vec::new(),
            tol,
            pool,
            passes: 0,
            reserved: Vec::new(),
        };
        engine.values = if dense {
            engine.pool.install(|| engine.initial_statistics())
        } else {
            engine.factored_statistics(stop)?
        };
        engine.passes = engine.views.len();
        engine.initial = engine.values.clone();
        Ok(engine)
    }

    /// Every statistic of dense kernels, from one read of each: row `j` of a symmetric
    /// kernel is its column `j`, and each row's statistics are independent of the others
    /// (so of the number of threads).
    fn initial_statistics(&self) -> Vec<Vec<F>> {
        let m = self.m;
        let statistics = &self.spec.statistics;
        let dense: Vec<&[F]> = self
            .views
            .iter()
            .filter_map(|view| view.kernel.dense())
            .collect();
        let per_row: Vec<Vec<F>> = (0..m)
            .into_par_iter()
            .map(|j| {
                let rows: Vec<&[F]> = dense.iter().map(|k| &k[j * m..(j + 1) * m]).collect();
                statistics
                    .iter()
                    .map(|statistic| match statistic {
                        Statistic::Linear { view, c } => dot(rows[*view], c),
                        Statistic::Quadratic { view, weights } => match weights {
                            None => dot(rows[*view], rows[*view]),
                            Some(w) => {
                                let weighted: Vec<F> =
                                    rows[*view].iter().zip(w).map(|(&k, &w)| k * w).collect();
                                dot(rows[*view], &weighted)
                            }
                        },
                        Statistic::Diagonal { view } => rows[*view][j],
                        Statistic::Cross => dot(rows[0], rows[1]),
                    })
                    .collect()
            })
            .collect();
        (0..statistics.len())
            .map(|s| per_row.iter().map(|row| row[s]).collect())
            .collect()
    }

    /// Every statistic of factored kernels `K = ΦΦ'`: a linear one `K c` (one product),
    /// a quadratic one `diag(K W K)` and the cross term `diag(K_x K_y)` from the factors'
    /// `p×p` Gram matrices, the diagonal from the rows' norms.
    fn factored_statistics(&self, stop: &AtomicBool) -> Result<Vec<Vec<F>>> {
        let m = self.m;
        let factor = |view: usize| match self.views[view].kernel {
            KernelOperator::Factored { factor, p, .. } => (factor, p),
            // `new` refuses two views unless both are factored in memory.
            KernelOperator::Dense { .. }
            | KernelOperator::Sparse(_)
            | KernelOperator::External(_) => {
                unreachable!("the views are factored in memory")
            }
        };
        let pool = &self.pool;
        self.spec
            .statistics
            .iter()
            .map(|statistic| match statistic {
                Statistic::Linear { view, c } => {
                    let kernel = self.views[*view].kernel;
                    let product = kernel.multiply(pool, &[c], &mut Workspace::default());
                    Ok(product.into_iter().next().unwrap_or_default())
                }
                Statistic::Quadratic { view, weights } => Ok(self.views[*view]
                    .kernel
                    .column_forms(pool, weights.as_deref(), stop)?
                    .expect("the views are factored")),
                Statistic::Diagonal { view } => Ok(self.views[*view].kernel.diagonal()),
                Statistic::Cross => {
                    factored_column_forms(pool, factor(0), factor(1), m, None, stop)
                }
            })
            .collect()
    }

    /// Reserves, fallibly, the terms of `picks` picks: their number is the caller's, so
    /// their memory is claimed before the first pick, and a refusal is an error, not an
    /// abort in the middle of the pursuit. Each term's vectors are copied into this storage
    /// as they are recorded ([`PursuitEngine::kept`]).
    fn reserve(&mut self, picks: usize) -> Result<()> {
        let m = self.m;
        let per_view = match self.spec.deflation {
            Deflation::Projection => 2,
            Deflation::Pivot => 1,
        };
        let count = picks.saturating_mul(per_view * self.views.len());
        let refused = || Error::OutOfMemory {
            what: "the pursuit's deflation terms",
            bytes: count
                .saturating_mul(m)
                .saturating_mul(std::mem::size_of::<F>()),
        };
        self.reserved
            .try_reserve_exact(count)
            .map_err(|_| refused())?;
        for view in &mut self.views {
            view.us.try_reserve_exact(picks).map_err(|_| refused())?;
            view.vs.try_reserve_exact(picks).map_err(|_| refused())?;
        }
        for _ in 0..count {
            let mut vector = Vec::new();
            vector.try_reserve_exact(m).map_err(|_| refused())?;
            self.reserved.push(vector);
        }
        Ok(())
    }

    /// `x` in a reserved vector.
    fn kept(&mut self, x: &[F]) -> Vec<F> {
        let mut vector = self.reserved.pop().unwrap_or_default();
        vector.extend_from_slice(x);
        vector
    }

    /// The best admissible column not yet `chosen` (ties to the lowest index) and its score.
    fn best(&self, chosen: &[bool]) -> Option<(usize, F)> {
        let values: Vec<&[F]> = self.values.iter().map(Vec::as_slice).collect();
        let columns = (0..self.m).filter(|&j| !chosen[j]).map(|j| (j, j));
        self.spec
            .score
            .best(columns, &values, &self.initial, self.tol)
    }

    pub(super) fn run(&mut self, k: usize, stop: &AtomicBool) -> Result<Pursuit> {
        self.reserve(k)?;
        let mut chosen = vec![false; self.m];
        let (mut indices, mut scores) = (Vec::with_capacity(k), Vec::with_capacity(k));
        while indices.len() < k {
            check_stop(stop)?;
            let Some((i, score)) = self.best(&chosen) else {
                break;
            };
            chosen[i] = true;
            indices.push(i);
            scores.push(score.as_f64());
            // The last pick's deflation would serve only a next pick.
            if indices.len() < k && !self.deflate(i) {
                break;
            }
        }
        Ok(Pursuit {
            stopped_early: indices.len() < k,
            indices,
            scores,
            kernel_passes: self.passes,
        })
    }

    /// The left factor `u` of view `view`'s term for pick `i`, or `None` when its column
    /// is numerically zero.
    fn direction(&self, view: usize, i: usize) -> Option<Vec<F>> {
        let state = &self.views[view];
        let mut tau = state.column(i, &self.pool);
        match self.spec.deflation {
            Deflation::Pivot => {
                let pivot = tau[i];
                (pivot > F::zero()).then(|| scaled(&tau, F::one() / pivot.sqrt()))
            }
            Deflation::Projection => {
                // Re-orthogonalised against the earlier directions, which rounding would
                // otherwise let `q` drift from (and `q_I − v∘v` below zero).
                for u in &state.us {
                    let factor = dot(u, &tau);
                    tau.iter_mut().zip(u).for_each(|(t, &u)| *t -= factor * u);
                }
                let norm = dot(&tau, &tau).sqrt();
                (norm > F::zero()).then(|| scaled(&tau, F::one() / norm))
            }
        }
    }

    /// Deflates every view by pick `i` and updates the statistics; false when a view's
    /// column was numerically zero (nothing is left to pick).
    fn deflate(&mut self, i: usize) -> bool {
        let n_views = self.views.len();
        let mut us = Vec::with_capacity(n_views);
        for view in 0..n_views {
            match self.direction(view, i) {
                Some(u) => us.push(u),
                None => return false,
            }
        }
        // The right-hand sides of each view's one read of `K_0`: `u` (for `v = K_t'u`
        // under projection, and for the quadratic forms), `Mu` for each weighted quadratic
        // form, and the other view's `u` for the cross term.
        let mut rhs: Vec<Vec<Vec<F>>> = (0..n_views).map(|view| vec![us[view].clone()]).collect();
        let mut weighted_slot = vec![None; self.spec.statistics.len()];
        for (s, statistic) in self.spec.statistics.iter().enumerate() {
            if let Statistic::Quadratic {
                view,
                weights: Some(w),
            } = statistic
            {
                weighted_slot[s] = Some(rhs[*view].len());
                let mu = us[*view].iter().zip(w).map(|(&u, &w)| u * w).collect();
                rhs[*view].push(mu);
            }
        }
        let cross = n_views == 2;
        if cross {
            rhs[0].push(us[1].clone());
            rhs[1].push(us[0].clone());
        }
        // `K_t'x` for every right-hand side, by the terms before this pick.
        let mut deflated: Vec<Vec<Vec<F>>> = Vec::with_capacity(n_views);
        for (view, xs) in rhs.iter().enumerate() {
            let state = &mut self.views[view];
            let slices: Vec<&[F]> = xs.iter().map(Vec::as_slice).collect();
            let products = state
                .kernel
                .multiply(&self.pool, &slices, &mut state.workspace);
            let state = &self.views[view];
            deflated.push(
                products
                    .into_iter()
                    .zip(xs)
                    .map(|(product, x)| state.deflated_product(product, x))
                    .collect(),
            );
        }
        self.passes += n_views;
        // `v` of each view: `K_t'u` under projection, `u` itself under pivot.
        let vs: Vec<Vec<F>> = (0..n_views)
            .map(|view| match self.spec.deflation {
                Deflation::Projection => deflated[view][0].clone(),
                Deflation::Pivot => us[view].clone(),
            })
            .collect();
        for (s, statistic) in self.spec.statistics.iter().enumerate() {
            let values = &mut self.values[s];
            match statistic {
                Statistic::Linear { view, c } => {
                    let factor = dot(c, &us[*view]);
                    values
                        .iter_mut()
                        .zip(&vs[*view])
                        .for_each(|(l, &v)| *l -= factor * v);
                }
                Statistic::Quadratic { view, weights } => {
                    let (u, v) = (&us[*view], &vs[*view]);
                    let (h, scale) = match weights {
                        // `K_t'u`, and `u'u = 1` for projection's unit `u`.
                        None => (&deflated[*view][0], dot(u, u)),
                        // `Wu` is the right-hand side the pass took at `slot`.
                        Some(_) => {
                            let slot = weighted_slot[s].unwrap_or(0);
                            (&deflated[*view][slot], dot(u, &rhs[*view][slot]))
                        }
                    };
                    let two = F::from_f64(2.0);
                    for ((q, &v), &h) in values.iter_mut().zip(v).zip(h) {
                        // Clamped: the form is a sum of squares.
                        *q = (*q - two * v * h + scale * v * v).max(F::zero());
                    }
                }
                Statistic::Diagonal { view } => {
                    let (u, v) = (&us[*view], &vs[*view]);
                    for ((d, &u), &v) in values.iter_mut().zip(u).zip(v) {
                        *d -= u * v;
                    }
                }
                Statistic::Cross => {
                    // `K_{y,t}'u_x` is view 1's last product, `K_{x,t}'u_y` view 0's.
                    let (y_of_x, x_of_y) = (
                        deflated[1].last().map_or(&[][..], Vec::as_slice),
                        deflated[0].last().map_or(&[][..], Vec::as_slice),
                    );
                    let overlap = dot(&us[0], &us[1]);
                    for (j, c) in values.iter_mut().enumerate() {
                        let (vx, vy) = (vs[0][j], vs[1][j]);
                        *c = *c - vx * y_of_x[j] - vy * x_of_y[j] + overlap * vx * vy;
                    }
                }
            }
        }
        let projection = self.spec.deflation == Deflation::Projection;
        for (view, (u, v)) in us.iter().zip(&vs).enumerate() {
            let u = self.kept(u);
            self.views[view].us.push(u);
            if projection {
                let v = self.kept(v);
                self.views[view].vs.push(v);
            }
        }
        true
    }
}
