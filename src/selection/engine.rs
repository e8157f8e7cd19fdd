//! The selection state over a read-only kernel: `K_0`, the rank-one terms of
//! `K_t = K_0 − U V'` and the per-column statistics, with the products and sweeps
//! every family uses.

use super::shared::SharedPasses;
use crate::error::{Error, Result};
use crate::operator::KernelOperator;
use crate::params::Family;
use crate::passes;
use crate::real::Real;
use crate::tuning::{COMBINE_CHUNK, MIN_CLASS_RUN, PARALLEL_WORK};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// `[x_1, …, x_n, Dx_1, …, Dx_n]` as one list of right-hand sides.
pub(super) fn stacked<'v, F>(xs: &[&'v [F]], weighted: &'v [Vec<F>]) -> Vec<&'v [F]> {
    xs.iter()
        .copied()
        .chain(weighted.iter().map(Vec::as_slice))
        .collect()
}

/// Lane-parallel dot product (an iterator `sum` would be sequential and scalar).
pub(super) fn dot<F: Real>(a: &[F], b: &[F]) -> F {
    crate::simd::dots(a, [b])[0]
}

pub(super) fn axpy<F: Real>(y: &mut [F], factor: F, x: &[F]) {
    y.iter_mut().zip(x).for_each(|(y, x)| *y += factor * *x);
}

/// `y += factors[q] · xs[q]` for each `q` in order, with the roundings of repeated [`axpy`]
/// (a product, then a sum), four terms per sweep of `y`: a stage's in-stage deflation
/// reads and writes each tracked vector once per four earlier picks, not once per pick.
pub(super) fn axpy_all<F: Real>(y: &mut [F], factors: &[F], xs: &[&[F]]) {
    let mut q = 0;
    while q + 4 <= xs.len() {
        let (f, x) = (&factors[q..q + 4], &xs[q..q + 4]);
        let (x0, x1, x2, x3) = (
            &x[0][..y.len()],
            &x[1][..y.len()],
            &x[2][..y.len()],
            &x[3][..y.len()],
        );
        for (l, value) in y.iter_mut().enumerate() {
            let mut sum = *value;
            sum += f[0] * x0[l];
            sum += f[1] * x1[l];
            sum += f[2] * x2[l];
            sum += f[3] * x3[l];
            *value = sum;
        }
        q += 4;
    }
    for (&factor, x) in factors.iter().zip(xs).skip(q) {
        axpy(y, factor, x);
    }
}

/// The selection state over a read-only kernel.
pub(super) struct Engine<'a, F: Real> {
    /// `K_0`, symmetric, never written: dense (`m×m`, which the passes split by class and
    /// read by triangle) or factored (`ΦΦ'`).
    pub(super) kernel: KernelOperator<'a, F>,
    pub(super) m: usize,
    /// The class code of each sample, `0..C` (two classes: 1 positive, 0 negative).
    pub(super) classes: &'a [u32],
    /// The diagonal of `D`: `w_c = H/m_c` on class `c`, `H` the harmonic mean of the class
    /// sizes (two classes: `2·m₋/m` on the positive class, `2·m₊/m` on the negative).
    pub(super) weight: Vec<F>,
    /// `w_c/m_c` per class: the Fisher denominator of column `i` is
    /// `c_i'Bc_i = d_i − Σ_c (w_c/m_c) s_c[i]²` (two classes: `d_i − α p_i² − β n_i²`).
    pub(super) scatter_weights: Vec<F>,
    /// The class sums `s_c[i] = Σ_{j∈c} (K_t)_ji` of the current `K_t`, one vector per
    /// class (two classes: `n` then `p`), in every family: schur updates them as it records
    /// each term; hotelling and projection at the end of each stage (inside a stage they
    /// are the stage-start values, which rank the whole stage). After the last pick they
    /// may lag behind the last terms.
    pub(super) sums: Vec<Vec<F>>,
    /// `d_i = Σ_j D_j (K_t)_ji²` of the current `K_t` when `tracks_d`. Hotelling and
    /// projection: updated with the class sums at the end of each stage. Schur: the last
    /// recorded term's update waits for its `h = K_t'Du` (taken with the next pick's pass,
    /// or at the end of the stage), so `d` is one term behind only between a term and the
    /// next pass, and complete whenever candidates are ranked. Empty of meaning when not
    /// `tracks_d`.
    pub(super) d: Vec<F>,
    /// `tol · d_i` of `K_0`: a column whose `d` (or `c'Dc`) falls to it is numerically
    /// explained. Fixed.
    pub(super) threshold: Vec<F>,
    /// Rank-one terms, `K_t = K_0 − Σ_r u_r v_r'`, one per recorded pick `r` of direction
    /// `x_r`, by family:
    /// - hotelling: `vs[r] = x_r`, `u_r = λ_r x_r` is not stored (`us` is empty);
    /// - projection: `us[r] = x_r`, `vs[r] = K_{t_r}'x_r`;
    /// - schur: `vs[r] = K_{t_r} x_r` (`= K_{t_r}'x_r`: schur keeps `K_t` symmetric),
    ///   `us[r] = vs[r]/λ_r` with `λ_r = x_r'K_{t_r} x_r > 0`;
    /// - none: both empty.
    ///
    /// `K_{t_r}` is the kernel deflated by the terms before `r`.
    pub(super) us: Vec<Vec<F>>,
    pub(super) vs: Vec<Vec<F>>,
    /// `λ_r = x_r'K_{t_r} x_r` in the hotelling family, 1 in the projection family (one per
    /// term); empty for schur, whose `λ_r` is folded into `us`.
    pub(super) lambdas: Vec<F>,
    /// Whether `d` is kept: always, except in the schur family with the criteria that rank
    /// without it (`pseudo`, `random`), which check each candidate's own column instead
    /// ([`Engine::admissible_candidates`]) and so take one pass over `K_0` a pick, not two
    /// (`h = K_t'Du` serves only `d`).
    pub(super) tracks_d: bool,
    /// Empty vectors of capacity `m`, reserved for the picks still to be recorded
    /// ([`Engine::reserve_terms`]).
    pub(super) reserved: Vec<Vec<F>>,
    /// The earlier unit directions `q_r` of `ortho-schur`, orthonormal. Empty otherwise:
    /// those of `ortho-hotelling` are its `vs`, those of `ortho-projection` its `us`
    /// ([`Engine::ortho_basis`]), not stored twice.
    pub(super) ortho: Vec<Vec<F>>,
    /// The columns of each class, in class order, when the classes form few runs, as in
    /// the kernels `GreedyKFDA.fit` builds: passes then split by class.
    pub(super) class_groups: Option<Vec<passes::ColumnGroup>>,
    /// The diagonal of `D` on each class, `w_c`.
    pub(super) class_weights: Vec<F>,
    pub(super) pool: std::sync::Arc<rayon::ThreadPool>,
    /// The passes' buffers, kept from one pass to the next.
    pub(super) workspace: passes::Workspace<F>,
    /// Full reads of `K_0` so far (the statistics' set-up pass included).
    pub(super) passes: usize,
    /// Bases wanted: once chosen, the terms and statistics that only a next stage would
    /// read are not computed.
    pub(super) target: usize,
    /// For a selection run beside others ([`super::select_many`]): the passes it shares, and its
    /// place among them.
    pub(super) shared: Option<(&'a SharedPasses<'a, F>, usize)>,
}

impl<'a, F: Real> Engine<'a, F> {
    /// Reserves, fallibly, the storage of `terms` recorded picks of `vectors_per_term`
    /// `m`-vectors each: the memory a selection keeps grows with `k`, which the caller
    /// chooses, so it is claimed before the first pick, and a refusal is
    /// [`Error::OutOfMemory`], not an abort in the middle of the selection. A pick's
    /// vectors are moved into this storage as they are recorded ([`Engine::kept`]).
    pub(super) fn reserve_terms(&mut self, terms: usize, vectors_per_term: usize) -> Result<()> {
        let count = terms.saturating_mul(vectors_per_term);
        let refused = || Error::OutOfMemory {
            what: "the selection's rank-one terms",
            bytes: count
                .saturating_mul(self.m)
                .saturating_mul(std::mem::size_of::<F>()),
        };
        self.reserved
            .try_reserve_exact(count)
            .map_err(|_| refused())?;
        for list in [&mut self.us, &mut self.vs, &mut self.ortho] {
            list.try_reserve_exact(terms).map_err(|_| refused())?;
        }
        self.lambdas
            .try_reserve_exact(terms)
            .map_err(|_| refused())?;
        for _ in 0..count {
            let mut slot = Vec::new();
            slot.try_reserve_exact(self.m).map_err(|_| refused())?;
            self.reserved.push(slot);
        }
        Ok(())
    }

    /// `values` in storage reserved by [`Engine::reserve_terms`] (a copy, O(m)), or as
    /// they are once that is used up.
    pub(super) fn kept(&mut self, values: Vec<F>) -> Vec<F> {
        match self.reserved.pop() {
            Some(mut slot) => {
                slot.extend_from_slice(&values);
                slot
            }
            None => values,
        }
    }

    /// The engine of the checked problem `classes` (codes `0..n_classes`, every class
    /// present) over `kernel`, with its statistics' set-up pass; `Err(Error::Interrupted)`
    /// once `stop` is raised during a factor's.
    pub(super) fn new(
        kernel: KernelOperator<'a, F>,
        classes: &'a [u32],
        tol: f64,
        n_threads: usize,
        stop: &AtomicBool,
    ) -> Result<Self> {
        let m = kernel.m();
        let (class_weights, scatter_weights) = class_weighting(classes);
        let n_classes = class_weights.len();
        let class_weights: Vec<F> = class_weights.into_iter().map(F::from_f64).collect();
        let scatter_weights = scatter_weights.into_iter().map(F::from_f64).collect();
        let weight: Vec<F> = classes.iter().map(|&c| class_weights[c as usize]).collect();
        // Only the dense passes split by class: a factored product costs the same either way.
        let split = kernel.dense().is_some()
            && passes::ColumnGroup::count_runs(classes) * MIN_CLASS_RUN <= m;
        let class_groups = split.then(|| {
            (0..n_classes as u32)
                .map(|c| passes::ColumnGroup::of_code::<F>(classes, c))
                .collect::<Vec<_>>()
        });
        let pool = crate::pool::shared(n_threads)?;
        let (sums, d, set_up_passes) = initial_statistics(
            &pool,
            kernel,
            classes,
            class_groups.as_deref(),
            &class_weights,
            &weight,
            stop,
        )?;
        // Any NaN or infinity in K reaches these sums: refuse it rather than select noise.
        if !sums.iter().flatten().chain(&d).all(|v| v.is_finite()) {
            return Err(Error::invalid(
                "K",
                "contains NaN or infinite values, or values whose squares overflow",
            ));
        }
        let threshold = d.iter().map(|&d0| F::from_f64(tol) * d0).collect();
        Ok(Engine {
            kernel,
            m,
            classes,
            weight,
            scatter_weights,
            sums,
            d,
            threshold,
            us: Vec::new(),
            vs: Vec::new(),
            lambdas: Vec::new(),
            ortho: Vec::new(),
            reserved: Vec::new(),
            tracks_d: true,
            class_groups,
            class_weights,
            pool,
            workspace: passes::Workspace::default(),
            passes: set_up_passes,
            target: usize::MAX,
            shared: None,
        })
    }

    pub(super) fn multiply(&mut self, rhs: &[&[F]]) -> Vec<Vec<F>> {
        self.passes += 1;
        self.kernel_products(rhs)
    }

    /// `K_0 x` for each `x`: a pass of this selection's own, or its share of a pass with
    /// the selections beside it.
    pub(super) fn kernel_products(&mut self, rhs: &[&[F]]) -> Vec<Vec<F>> {
        if let Some((shared, member)) = self.shared {
            return shared.multiply(member, rhs);
        }
        self.kernel.multiply(&self.pool, rhs, &mut self.workspace)
    }

    /// Takes this selection's passes over `K_0` from `shared`, as its `member`-th. They
    /// read plain right-hand sides: the passes split by class, each selection's columns
    /// in groups of its own, are left to selections alone, so `K_0 x` and `K_0 D x` come
    /// from `[x, Dx]` (for a stage of one pick, bound by memory, the same read).
    pub(super) fn share_passes(&mut self, shared: &'a SharedPasses<'a, F>, member: usize) {
        self.shared = Some((shared, member));
        self.class_groups = None;
    }

    /// `(K_0 x, K_0 D x)` for each `x`, in one pass. With contiguous classes the pass
    /// splits the columns by class, so that each kernel element meets each `x` once.
    pub(super) fn products_with_weighted(&mut self, xs: &[&[F]]) -> (Vec<Vec<F>>, Vec<Vec<F>>) {
        self.passes += 1;
        if let (Some(groups), Some(kernel)) = (&self.class_groups, self.kernel.dense()) {
            let by_class = passes::multiply_groups(
                &self.pool,
                kernel,
                self.m,
                xs,
                groups,
                &mut self.workspace,
            );
            return self.plain_and_weighted(by_class);
        }
        let weighted: Vec<Vec<F>> = xs.iter().map(|x| self.weighted(x)).collect();
        let rhs = stacked(xs, &weighted);
        let mut products = self.kernel_products(&rhs);
        let weighted = products.split_off(xs.len());
        (products, weighted)
    }

    /// `(Σ_g out[g][j], Σ_g w_g out[g][j])` for each `j`, from products split by class
    /// (in class order, each sum from the first class on): `W x` and `W D x` for a
    /// class-constant diagonal `D`. Two classes give `p + n` and `w₊p + w₋n` to the last
    /// bit, whichever comes first (a sum of two terms is the same in either order).
    pub(super) fn plain_and_weighted(
        &self,
        by_class: Vec<Vec<Vec<F>>>,
    ) -> (Vec<Vec<F>>, Vec<Vec<F>>) {
        let mut by_class = by_class.into_iter();
        let (first, second) = (by_class.next(), by_class.next());
        let (mut plain, mut weighted) = (first.unwrap_or_default(), second.unwrap_or_default());
        let (w_first, w_second) = (self.class_weights[0], self.class_weights[1]);
        // In place: the first class's part becomes the sum, the second's the weighted sum.
        for (a, b) in plain.iter_mut().zip(weighted.iter_mut()) {
            for (a, b) in a.iter_mut().zip(b.iter_mut()) {
                let (first, second) = (*a, *b);
                *a = first + second;
                *b = w_first * first + w_second * second;
            }
        }
        for (part, &w) in by_class.zip(&self.class_weights[2..]) {
            for ((a, b), part) in plain.iter_mut().zip(weighted.iter_mut()).zip(part) {
                for ((a, b), &value) in a.iter_mut().zip(b.iter_mut()).zip(&part) {
                    *a += value;
                    *b += w * value;
                }
            }
        }
        (plain, weighted)
    }

    /// Whether the terms' `u_r = λ_r v_r` (the hotelling family) are kept as `v_r` and `λ_r`.
    pub(super) fn u_is_scaled_v(&self) -> bool {
        self.us.len() < self.vs.len()
    }

    /// Columns `picks` of `K_t` (rows of the symmetric `K_0`, minus the rank-one terms),
    /// in one sweep over `U` (over `V`, for the hotelling family, just swept by the stage
    /// before, with coefficients `λ_r v_r[i]`).
    pub(super) fn columns(&self, picks: &[usize]) -> Vec<Vec<F>> {
        let mut columns = self.kernel.rows(&self.pool, picks);
        let scaled = self.u_is_scaled_v();
        let coefficients: Vec<Vec<F>> = picks
            .iter()
            .map(|&i| {
                let at_i = self.vs.iter().map(|v| v[i]);
                if scaled {
                    at_i.zip(&self.lambdas).map(|(v, &l)| l * v).collect()
                } else {
                    at_i.collect()
                }
            })
            .collect();
        let vectors = if scaled { &self.vs } else { &self.us };
        self.subtract_combinations(&mut columns, vectors, &coefficients);
        columns
    }

    /// `[v·x for v in vectors]` for each `x` (`out[x][v]`), in one sweep over `vectors`.
    pub(super) fn dots_with(&self, vectors: &[Vec<F>], xs: &[&[F]]) -> Vec<Vec<F>> {
        if vectors.len() * self.m < PARALLEL_WORK {
            return xs
                .iter()
                .map(|x| vectors.iter().map(|v| dot(v, x)).collect())
                .collect();
        }
        passes::dot_products(&self.pool, vectors, xs)
    }

    /// `outs[s] −= Σ_r coefficients[s][r] vectors[r]` for every `s`, in one sweep over
    /// `vectors` by chunks of rows (each element sums its terms in the order of `r`,
    /// whatever the thread count).
    pub(super) fn subtract_combinations<C: AsRef<[F]> + Sync>(
        &self,
        outs: &mut [Vec<F>],
        vectors: &[Vec<F>],
        coefficients: &[C],
    ) {
        let work = vectors.len() * outs.len() * self.m;
        let n_chunks = self.m.div_ceil(COMBINE_CHUNK);
        let mut by_chunk: Vec<Vec<&mut [F]>> = (0..n_chunks).map(|_| Vec::new()).collect();
        for out in outs.iter_mut() {
            for (chunk, piece) in by_chunk.iter_mut().zip(out.chunks_mut(COMBINE_CHUNK)) {
                chunk.push(piece);
            }
        }
        let coefficients: Vec<&[F]> = coefficients.iter().map(AsRef::as_ref).collect();
        let combine = |(chunk_index, mut pieces): (usize, Vec<&mut [F]>)| {
            let start = chunk_index * COMBINE_CHUNK;
            let rows = start..start + pieces.first().map_or(0, |piece| piece.len());
            let terms: Vec<&[F]> = vectors.iter().map(|v| &v[rows.clone()]).collect();
            passes::combine_chunk(&mut pieces, &terms, &coefficients);
        };
        if work < PARALLEL_WORK {
            by_chunk.into_iter().enumerate().for_each(combine);
        } else {
            self.pool
                .install(|| by_chunk.into_par_iter().enumerate().for_each(combine));
        }
    }

    pub(super) fn weighted(&self, x: &[F]) -> Vec<F> {
        x.iter().zip(&self.weight).map(|(x, w)| *x * *w).collect()
    }

    /// `x'Dx`, the `d` of [`crate::simd::Dots::row_statistics`] (`D x` formed in registers,
    /// the sum of `dot(D x, x)` bit for bit): no buffer for `D x`, whose allocation, freed
    /// at the top of the heap and trimmed there, would fault its pages in at every call.
    pub(super) fn weighted_norm2(&self, x: &[F]) -> F {
        F::row_statistics(x, &self.weight, &self.weight, &self.weight)[2]
    }

    /// The statistics of `K_t − u v'` from those of `K_t`, with `h = K_t' D u`.
    pub(super) fn update_statistics(&mut self, u: &[F], v: &[F], h: &[F]) {
        self.update_sums(u, v);
        self.update_d(u, v, h);
    }

    /// The class sums of `K_t − u v'`, `s_c −= (1_c'u) v`: they need no product with `K_0`.
    pub(super) fn update_sums(&mut self, u: &[F], v: &[F]) {
        let mut u_sums = vec![F::zero(); self.sums.len()];
        for (value, &c) in u.iter().zip(self.classes) {
            u_sums[c as usize] += *value;
        }
        if let [n, p] = &mut self.sums[..] {
            // Two classes in one sweep, each sum in the binary criterion's order.
            let (u_neg, u_pos) = (u_sums[0], u_sums[1]);
            for ((p, n), &v) in p.iter_mut().zip(n.iter_mut()).zip(v) {
                *p -= v * u_pos;
                *n -= v * u_neg;
            }
            return;
        }
        for (sum, &u_c) in self.sums.iter_mut().zip(&u_sums) {
            for (s, &v) in sum.iter_mut().zip(v) {
                *s -= v * u_c;
            }
        }
    }

    /// `d` of `K_t − u v'`, with `h = K_t' D u`.
    pub(super) fn update_d(&mut self, u: &[F], v: &[F], h: &[F]) {
        if !self.tracks_d {
            return;
        }
        let udu = self.weighted_norm2(u);
        let two = F::from_f64(2.0);
        for i in 0..self.m {
            self.d[i] -= two * v[i] * h[i] - udu * v[i] * v[i];
        }
    }

    /// `K_t'x = K_0 x − V(U'x)` for each `x` in one pass, with one sweep over `U` and one
    /// over `V`; when `last_is_du`, the last `x` is `D u` of the last term and its product
    /// leaves that term out (it is the `h` of that term: `K_t` before it).
    pub(super) fn deflated_products(&mut self, xs: &[&[F]], last_is_du: bool) -> Vec<Vec<F>> {
        let mut coefficients = self.dots_with(&self.us, xs);
        if last_is_du {
            if let Some(last) = coefficients.last_mut().and_then(|c| c.last_mut()) {
                *last = F::zero(); // an exact no-op in the combination
            }
        }
        let mut products = self.multiply(xs);
        self.subtract_combinations(&mut products, &self.vs, &coefficients);
        products
    }

    /// The earlier `ortho-*` directions `q` of a family: `ortho-hotelling`'s are its `v`
    /// (`v = x = q`), `ortho-projection`'s its `u` (`u = x = q`), in the order of the picks.
    pub(super) fn ortho_basis(&self, family: Family) -> &[Vec<F>] {
        match family {
            Family::Hotelling => &self.vs,
            Family::Projection => &self.us,
            Family::Schur | Family::None => &self.ortho,
        }
    }

    /// The unit direction of a pick: `τ = c/‖c‖`, or, given the earlier directions
    /// `ortho` (`ortho-*`), its Gram–Schmidt residual against them (classical,
    /// coefficients `q'τ`), or `None` when that residual is numerically zero. Only `x` is
    /// carried: the forms that track products orthogonalise before their pass.
    pub(super) fn direction(
        &self,
        column: Vec<F>,
        ortho: Option<&[Vec<F>]>,
        tol: f64,
    ) -> Option<Vec<F>> {
        let mut tau = column;
        let norm = dot(&tau, &tau).sqrt();
        tau.iter_mut().for_each(|v| *v = *v / norm);
        let Some(earlier) = ortho else {
            return Some(tau);
        };
        let coefficients = self.dots_with(earlier, &[&tau]);
        let mut residual = [tau];
        self.subtract_combinations(&mut residual, earlier, &coefficients);
        let [mut q] = residual;
        let norm2 = dot(&q, &q);
        if norm2.as_f64() <= tol {
            return None;
        }
        let scale = F::one() / norm2.sqrt();
        q.iter_mut().for_each(|v| *v = *v * scale);
        Some(q)
    }
}

/// The class weights of a checked problem: `w_c = H/m_c` and `w_c/m_c` per class (`H` the
/// harmonic mean of the class sizes); for two classes `H/m_c = 2·m_other/m`, written so, the
/// binary criterion's expression: the same values to the last bit.
pub(super) fn class_weighting(classes: &[u32]) -> (Vec<f64>, Vec<f64>) {
    let m = classes.len();
    let n_classes = classes.iter().max().map_or(0, |&c| c as usize + 1);
    let mut sizes = vec![0usize; n_classes];
    for &c in classes {
        sizes[c as usize] += 1;
    }
    let mf = m as f64;
    if n_classes == 2 {
        let other = |c: usize| sizes[1 - c] as f64;
        return (0..2)
            .map(|c| {
                let size = sizes[c] as f64;
                (2.0 * other(c) / mf, 2.0 * other(c) / (mf * size))
            })
            .unzip();
    }
    let inverse_sum: f64 = sizes.iter().map(|&size| 1.0 / size as f64).sum();
    let harmonic = n_classes as f64 / inverse_sum;
    sizes
        .iter()
        .map(|&size| {
            let weight = harmonic / size as f64;
            (weight, weight / size as f64)
        })
        .unzip()
}

/// The class sums `s_c` and `d` of `K_0`, and the passes they took. Dense, two classes:
/// one pass (`p`, `n` and `d` of each row from one read). More: one pass when the classes
/// split the passes (each row's sums and squares over its runs of columns of one class),
/// else two (`s_0`, `s_1` and `d` as for two classes, then the other classes' sums,
/// `K_0 1_c`). Factored: one product for every class sum, and `d = diag(K_0 D K_0)` from
/// `Φ'DΦ` (two reads of `Φ`; two rounds over the chunks of a factor held elsewhere).
fn initial_statistics<F: Real>(
    pool: &rayon::ThreadPool,
    operator: KernelOperator<'_, F>,
    classes: &[u32],
    class_groups: Option<&[passes::ColumnGroup]>,
    class_weights: &[F],
    weight: &[F],
    stop: &AtomicBool,
) -> Result<(Vec<Vec<F>>, Vec<F>, usize)> {
    let n_classes = class_weights.len();
    let m = operator.m();
    let indicator = |class: usize| -> Vec<F> {
        classes
            .iter()
            .map(|&c| {
                if c as usize == class {
                    F::one()
                } else {
                    F::zero()
                }
            })
            .collect()
    };
    let Some(kernel) = operator.dense() else {
        // Factored, in memory or held elsewhere.
        let indicators: Vec<Vec<F>> = (0..n_classes).map(indicator).collect();
        let rhs: Vec<&[F]> = indicators.iter().map(Vec::as_slice).collect();
        let sums = operator.multiply(pool, &rhs, &mut passes::Workspace::default());
        let d = operator
            .column_forms(pool, Some(weight), stop)?
            .expect("a factored operator has column forms");
        return Ok((sums, d, 2));
    };
    if n_classes > 2 {
        if let Some(groups) = class_groups {
            let (sums, d) = passes::class_statistics(pool, kernel, m, groups, class_weights);
            return Ok((sums, d, 1));
        }
    }
    let (p, n, d) =
        passes::column_statistics(pool, kernel, m, &indicator(1), &indicator(0), weight);
    let mut sums = vec![n, p];
    if n_classes > 2 {
        let indicators: Vec<Vec<F>> = (2..n_classes).map(indicator).collect();
        let rhs: Vec<&[F]> = indicators.iter().map(Vec::as_slice).collect();
        sums.extend(passes::multiply(
            pool,
            kernel,
            m,
            &rhs,
            &mut passes::Workspace::default(),
        ));
        return Ok((sums, d, 2));
    }
    Ok((sums, d, 1))
}
