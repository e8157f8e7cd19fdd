//! The greedy basis selection of Diethe (2015), Algorithm 1, in O(m²) per pick.
//!
//! The deflated kernel is never written: `K_t = K_0 − Σ_r u_r v_r'` is held as its
//! rank-one terms, and the four per-column statistics of DESIGN §2 (`a = K_t'y` as
//! `p − n`, `p = K_t'1₊`, `n = K_t'1₋`, `d_i = Σ_j D_j (K_t)_ji²`) are updated in O(m)
//! per pick from products with `K_0`:
//!
//! | deflation   | `u`              | `v`      | reads of `K_0` per pick |
//! |-------------|------------------|----------|-------------------------|
//! | hotelling   | `(x'K_t x) x`    | `x`      | one (`[x, Dx]`)         |
//! | projection  | `x`              | `K_t'x`  | one (`[x, Dx]`)         |
//! | schur       | `K_t x/(x'K_t x)`| `K_t'x`  | two (`x`, then `Du`), one when `x` came ahead with the last `Du`; `S+1` per stage; one for `pseudo` and `random` |
//!
//! with `x = τ = c_i/‖c_i‖`, or for the `ortho-*` forms `τ` Gram–Schmidt-orthogonalised
//! against the earlier directions. For the hotelling and projection families a stage of
//! `S` picks costs one read of `K_0` with `2S` right-hand sides: every direction of the
//! stage is a combination of the stage-start columns (and earlier directions, whose
//! products are kept), so each vector carries its products with `K_0` along
//! (`Tracked`). Schur's `u = K_t x/λ` leaves that span, so its picks stay sequential.
//! Its second read, `h = K_t'Du`, serves only `d`, which only ranks candidates: for the
//! criteria that need `d` just to skip numerically explained columns (`pseudo`, `random`)
//! the schur family keeps no `d` and checks the best-ranked candidates' own columns
//! instead, one read a pick. The other criteria's `h` pass also multiplies the likeliest
//! next pick (`Engine::finish_with_candidates`), whose direction needs no `h`.
//! A read with up to four right-hand sides touches only the upper triangle of the
//! symmetric `K_0` ([`passes::multiply_groups`]). With the classes contiguous (as
//! `GreedyKFDA.fit` orders them) each pass splits by class, and a wide pass also reads
//! the earlier terms as extra rows, for the stage's products with them
//! ([`passes::multiply_groups_with_rows`]). Several problems over one kernel (one-vs-rest)
//! can share their narrow passes: [`select_many`].

use crate::error::{try_zeroed, Error, Result};
use crate::passes;
use crate::real::Real;
use crate::shared::SharedPasses;
use crate::tuning::{
    COMBINE_CHUNK, MIN_CLASS_RUN, PARALLEL_WORK, SHARED_FROM_BYTES, SHARED_SELECTIONS,
    SPECULATED_CANDIDATES,
};
use ndarray::ArrayView2;
use rayon::prelude::*;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};

/// Per direction of a stage: `K_0 x`, `K_0 D x` and its stage-start products.
type StageProducts<F> = (Vec<Vec<F>>, Vec<Vec<F>>, Vec<Vec<F>>);

/// How the next basis is scored (`c_i` is column `i` of the deflated kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Criterion {
    /// Uniformly at random without replacement: the randomised Nyström method.
    Random,
    /// Maximise the Fisher ratio `(c'y)² / (c'Bc)` (MPKFDA).
    Optimal,
    /// Maximise `(c'y)²`.
    Pseudo,
    /// Minimise the Fisher ratio.
    Reverse,
    /// Minimise `(c'y)²`.
    ReversePseudo,
}

/// How the kernel is deflated after a pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Deflation {
    None,
    Hotelling,
    Projection,
    Schur,
    OrthoHotelling,
    OrthoProjection,
    OrthoSchur,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    None,
    Hotelling,
    Projection,
    Schur,
}

impl Criterion {
    /// Every criterion with its name, in the papers' order.
    pub const ALL: [(Criterion, &'static str); 5] = [
        (Criterion::Random, "random"),
        (Criterion::Optimal, "optimal"),
        (Criterion::Pseudo, "pseudo"),
        (Criterion::Reverse, "reverse"),
        (Criterion::ReversePseudo, "reverse-pseudo"),
    ];

    fn uses_denominator(self) -> bool {
        matches!(self, Criterion::Optimal | Criterion::Reverse)
    }

    /// Whether the best candidates are few to check one by one: the score needs no `d`,
    /// and the best-scored columns are rarely numerically explained (`pseudo` ranks the
    /// largest `|c'y|` first, `random` any column; `reverse-pseudo` would rank the explained
    /// columns, whose `c'y` is ~0, first).
    fn checks_candidates_one_by_one(self) -> bool {
        matches!(self, Criterion::Pseudo | Criterion::Random)
    }
}

impl Deflation {
    /// Every deflation with its name.
    pub const ALL: [(Deflation, &'static str); 7] = [
        (Deflation::None, "none"),
        (Deflation::Hotelling, "hotelling"),
        (Deflation::Projection, "projection"),
        (Deflation::Schur, "schur"),
        (Deflation::OrthoHotelling, "ortho-hotelling"),
        (Deflation::OrthoProjection, "ortho-projection"),
        (Deflation::OrthoSchur, "ortho-schur"),
    ];

    fn family(self) -> Family {
        match self {
            Deflation::None => Family::None,
            Deflation::Hotelling | Deflation::OrthoHotelling => Family::Hotelling,
            Deflation::Projection | Deflation::OrthoProjection => Family::Projection,
            Deflation::Schur | Deflation::OrthoSchur => Family::Schur,
        }
    }

    fn is_ortho(self) -> bool {
        matches!(
            self,
            Deflation::OrthoHotelling | Deflation::OrthoProjection | Deflation::OrthoSchur
        )
    }
}

fn parse_name<T: Copy>(all: &[(T, &'static str)], name: &str, argument: &'static str) -> Result<T> {
    all.iter()
        .find(|(_, n)| *n == name)
        .map(|(v, _)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|(_, n)| *n).collect();
            Error::invalid(
                argument,
                format!(
                    "unknown name {name:?}; expected one of {}",
                    names.join(", ")
                ),
            )
        })
}

impl FromStr for Criterion {
    type Err = Error;
    fn from_str(name: &str) -> Result<Self> {
        parse_name(&Criterion::ALL, name, "criterion")
    }
}

impl FromStr for Deflation {
    type Err = Error;
    fn from_str(name: &str) -> Result<Self> {
        parse_name(&Deflation::ALL, name, "deflation")
    }
}

/// Parameters of a selection, checked by [`select`] before any work.
#[derive(Debug, Clone, PartialEq)]
pub struct GreedyParams {
    /// Number of bases to choose (fewer on an early stop).
    pub k: usize,
    pub criterion: Criterion,
    pub deflation: Deflation,
    /// `S`: bases taken per stage from the stage-start scores.
    pub stages: usize,
    /// For [`Criterion::Random`]: the priority order (a permutation of `0..m`). When
    /// `None`, it is drawn from `seed`.
    pub random_order: Option<Vec<usize>>,
    pub seed: u64,
    /// Relative threshold of the numerical guards; `None` takes [`Real::DEFAULT_TOL`].
    pub tol: Option<f64>,
    /// Threads of the passes over the kernel; results do not depend on it.
    pub n_threads: usize,
}

impl Default for GreedyParams {
    fn default() -> Self {
        GreedyParams {
            k: 10,
            criterion: Criterion::Optimal,
            deflation: Deflation::Schur,
            stages: 1,
            random_order: None,
            seed: 0,
            tol: None,
            n_threads: 1,
        }
    }
}

/// The outcome of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Chosen training indices, in selection order.
    pub indices: Vec<usize>,
    /// True when no admissible candidate was left before `k` bases were chosen.
    pub stopped_early: bool,
    /// Full reads of the kernel made (the statistics' initial pass included).
    pub kernel_passes: usize,
}

/// A permutation of `0..m` from a seed (SplitMix64 driving a Fisher–Yates shuffle), for
/// Rust callers of the `random` criterion; the Python layer passes NumPy's instead.
pub fn random_order(m: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..m).collect();
    for i in (1..m).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// A vector carried with its products `K_0 x` and `K_0 D x`, and with its products
/// with the stage-start deflation terms (`U_0'x`, `U_0'Dx` and, for hotelling, `V_0'x`,
/// one after the other), so that combinations of tracked vectors need no further read of
/// `K_0`, `U_0` or `V_0`. A part is empty when not tracked.
#[derive(Clone)]
struct Tracked<F> {
    x: Vec<F>,
    k0x: Vec<F>,
    k0dx: Vec<F>,
    stage_start: Vec<F>,
}

impl<F: Real> Tracked<F> {
    fn scale(&mut self, factor: F) {
        for part in [
            &mut self.x,
            &mut self.k0x,
            &mut self.k0dx,
            &mut self.stage_start,
        ] {
            part.iter_mut().for_each(|v| *v = *v * factor);
        }
    }

    /// `self += Σ_q factors[q] · others[q]`, term after term (a product, then a sum, per
    /// term and element), in one sweep of each part per four terms ([`axpy_all`]).
    fn add_all_scaled<'o>(
        &mut self,
        factors: &[F],
        others: impl IntoIterator<Item = &'o Tracked<F>> + Clone,
    ) where
        F: 'o,
    {
        let part = |pick: fn(&Tracked<F>) -> &[F]| -> Vec<&'o [F]> {
            others.clone().into_iter().map(pick).collect()
        };
        axpy_all(&mut self.x, factors, &part(|t| &t.x));
        axpy_all(&mut self.k0x, factors, &part(|t| &t.k0x));
        axpy_all(&mut self.k0dx, factors, &part(|t| &t.k0dx));
        axpy_all(&mut self.stage_start, factors, &part(|t| &t.stage_start));
    }
}

/// A pick of a hotelling/projection stage whose term `u v'` (`u = λx`, with `λ = 1` for
/// projection) waits for the stage's one sweep over `V_0`. `U_0`, `V_0` are the terms
/// from before the stage.
struct StageTerm<F> {
    /// The pick's direction `x`, with its products.
    direction: Tracked<F>,
    /// `U_0'x` and `U_0'Dx`.
    start_x: Vec<F>,
    start_dx: Vec<F>,
    /// `u_q'x` and `u_q'Dx` for the stage's earlier terms `q`.
    earlier_x: Vec<F>,
    earlier_dx: Vec<F>,
    /// `λ = x'K_t x` for hotelling, 1 for projection.
    lambda: F,
}

/// `[x_1, …, x_n, Dx_1, …, Dx_n]` as one list of right-hand sides.
fn stacked<'v, F>(xs: &[&'v [F]], weighted: &'v [Vec<F>]) -> Vec<&'v [F]> {
    xs.iter()
        .copied()
        .chain(weighted.iter().map(Vec::as_slice))
        .collect()
}

/// Lane-parallel dot product (an iterator `sum` would be sequential and scalar).
fn dot<F: Real>(a: &[F], b: &[F]) -> F {
    crate::simd::dots(a, [b])[0]
}

fn axpy<F: Real>(y: &mut [F], factor: F, x: &[F]) {
    y.iter_mut().zip(x).for_each(|(y, x)| *y += factor * *x);
}

/// `y += factors[q] · xs[q]` for each `q` in order, with the roundings of repeated [`axpy`]
/// (a product, then a sum), four terms per sweep of `y`: a stage's in-stage deflation
/// reads and writes each tracked vector once per four earlier picks, not once per pick.
fn axpy_all<F: Real>(y: &mut [F], factors: &[F], xs: &[&[F]]) {
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

/// A likely next schur pick multiplied ahead ([`Engine::finish_with_candidates`]): its
/// direction `x` and `v = K_t x`.
struct Speculated<F> {
    index: usize,
    x: Vec<F>,
    v: Vec<F>,
}

/// What is known of a schur stage's first pick before the stage: its column (checked by
/// [`Engine::admissible_candidates`]), or its direction and `K_t x` (multiplied ahead).
enum FirstPick<F> {
    Column(Vec<F>),
    Product { x: Vec<F>, v: Vec<F> },
}

/// The selection state over a read-only kernel.
struct Engine<'a, F: Real> {
    kernel: &'a [F],
    m: usize,
    positive: &'a [bool],
    weight: Vec<F>,
    alpha: F,
    beta: F,
    /// Statistics of the current deflated kernel, per column.
    p: Vec<F>,
    n: Vec<F>,
    d: Vec<F>,
    threshold: Vec<F>,
    /// Rank-one terms: `K_t = K_0 − Σ_r u_r vs[r]'`, with `u_r = us[r]`, except in the
    /// hotelling family, whose `u_r = λ_r vs[r]` is not stored (`us` stays empty).
    us: Vec<Vec<F>>,
    vs: Vec<Vec<F>>,
    /// `λ_r` of the hotelling and projection families (1 for projection).
    lambdas: Vec<F>,
    /// Whether `d` is kept: the criteria that rank without it (`pseudo`, `random`) in the
    /// schur family check each candidate's own column instead
    /// ([`Engine::admissible_candidates`]), and their picks then need one pass over `K_0`,
    /// not two (`h = K_t'Du` serves only `d`).
    tracks_d: bool,
    /// Earlier `ortho-schur` directions `q`. Those of `ortho-hotelling` are its `v`, those
    /// of `ortho-projection` its `u` ([`Engine::ortho_basis`]): not stored twice.
    ortho: Vec<Vec<F>>,
    /// The columns of each class (positive first) when the classes form few runs, as in
    /// the kernels `GreedyKFDA.fit` builds: passes then split by class.
    class_groups: Option<[passes::ColumnGroup; 2]>,
    /// The diagonal of `D` on the positive and the negative class.
    class_weights: (F, F),
    pool: std::sync::Arc<rayon::ThreadPool>,
    /// The passes' buffers, kept from one pass to the next.
    workspace: passes::Workspace<F>,
    passes: usize,
    /// Bases wanted: once chosen, the terms and statistics that only a next stage would
    /// read are not computed.
    target: usize,
    /// For a selection run beside others ([`select_many`]): the passes it shares, and its
    /// place among them.
    shared: Option<(&'a SharedPasses<'a, F>, usize)>,
}

impl<'a, F: Real> Engine<'a, F> {
    fn multiply(&mut self, rhs: &[&[F]]) -> Vec<Vec<F>> {
        self.passes += 1;
        self.kernel_products(rhs)
    }

    /// `K_0 x` for each `x`: a pass of this selection's own, or its share of a pass with
    /// the selections beside it.
    fn kernel_products(&mut self, rhs: &[&[F]]) -> Vec<Vec<F>> {
        if let Some((shared, member)) = self.shared {
            return shared.multiply(member, rhs);
        }
        passes::multiply(&self.pool, self.kernel, self.m, rhs, &mut self.workspace)
    }

    /// Takes this selection's passes over `K_0` from `shared`, as its `member`-th. They
    /// read plain right-hand sides: the passes split by class, each selection's columns
    /// in its own two groups, are left to selections alone, so `K_0 x` and `K_0 D x` come
    /// from `[x, Dx]` (for a stage of one pick, bound by memory, the same read).
    fn share_passes(&mut self, shared: &'a SharedPasses<'a, F>, member: usize) {
        self.shared = Some((shared, member));
        self.class_groups = None;
    }

    /// `(K_0 x, K_0 D x)` for each `x`, in one pass. With contiguous classes the pass
    /// splits the columns by class, so that each kernel element meets each `x` once.
    fn products_with_weighted(&mut self, xs: &[&[F]]) -> (Vec<Vec<F>>, Vec<Vec<F>>) {
        self.passes += 1;
        if let Some(groups) = &self.class_groups {
            let by_class = passes::multiply_groups(
                &self.pool,
                self.kernel,
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
    /// (positive first): `W x` and `W D x` for a class-constant diagonal `D`.
    fn plain_and_weighted(&self, by_class: Vec<Vec<Vec<F>>>) -> (Vec<Vec<F>>, Vec<Vec<F>>) {
        let mut by_class = by_class.into_iter();
        let (positive, negative) = (by_class.next(), by_class.next());
        let (mut plain, mut weighted) =
            (positive.unwrap_or_default(), negative.unwrap_or_default());
        let (w_pos, w_neg) = self.class_weights;
        // In place: the positive part becomes the sum, the negative one the weighted sum.
        for (p, n) in plain.iter_mut().zip(weighted.iter_mut()) {
            for (p, n) in p.iter_mut().zip(n.iter_mut()) {
                let (positive, negative) = (*p, *n);
                *p = positive + negative;
                *n = w_pos * positive + w_neg * negative;
            }
        }
        (plain, weighted)
    }

    /// A stage's products for its directions `xs`: `K_0 x`, `K_0 D x` and the stage-start
    /// products `[U_0'x | U_0'Dx | V_0'x (hotelling)]` of each. With the classes contiguous,
    /// in one call: the pass splits by class and reads the earlier terms as extra rows, so
    /// that `W'x` and `W'Dx` come from one multiply-add per element as `K_0 x` and
    /// `K_0 D x` do, and for hotelling `U_0 = V_0 Λ` gives `U_0'x` and `U_0'Dx` from `V_0`.
    fn stage_products(&mut self, xs: &[&[F]], hotelling: bool) -> StageProducts<F> {
        let basis = if hotelling { &self.vs } else { &self.us };
        // A narrow pass reads the terms in a sweep of its own, not worth the threads when
        // small; a wide one reads them with its packed blocks at no extra cost.
        let small_sweep = xs.len() <= 2 && basis.len() * self.m < PARALLEL_WORK;
        let Some(groups) = self.class_groups.as_ref().filter(|_| !small_sweep) else {
            let (k0x, k0dx) = self.products_with_weighted(xs);
            return (k0x, k0dx, self.stage_start_products(xs, hotelling));
        };
        self.passes += 1;
        let (by_class_k, by_class_basis) = passes::multiply_groups_with_rows(
            &self.pool,
            self.kernel,
            self.m,
            basis,
            xs,
            groups,
            &mut self.workspace,
        );
        let (k0x, k0dx) = self.plain_and_weighted(by_class_k);
        (
            k0x,
            k0dx,
            self.stage_start_from_basis(by_class_basis, hotelling),
        )
    }

    /// The stage-start products `[U_0'x | U_0'Dx | V_0'x (hotelling)]` of each `x` from
    /// the products of the basis (`V_0` for hotelling, else `U_0`) split by class.
    fn stage_start_from_basis(
        &self,
        by_class_basis: Vec<Vec<Vec<F>>>,
        hotelling: bool,
    ) -> Vec<Vec<F>> {
        let (basis_x, basis_dx) = self.plain_and_weighted(by_class_basis);
        basis_x
            .iter()
            .zip(&basis_dx)
            .map(|(bx, bdx)| self.stage_start(bx, bdx, hotelling))
            .collect()
    }

    /// `[U_0'x | U_0'Dx | V_0'x (hotelling)]` from the basis' `B'x` and `B'Dx` (`B = V_0`
    /// for hotelling, whose `U_0 = V_0 Λ`; else `U_0`).
    fn stage_start(&self, bx: &[F], bdx: &[F], hotelling: bool) -> Vec<F> {
        if !hotelling {
            return [bx, bdx].concat();
        }
        let scaled =
            |b: &[F]| -> Vec<F> { b.iter().zip(&self.lambdas).map(|(&b, &l)| l * b).collect() };
        [scaled(bx), scaled(bdx), bx.to_vec()].concat()
    }

    /// [`Engine::stage_products`] of the projection family's last stage, where only the
    /// rows of `K_0 x` at the picks are read (by the later picks' deflated columns):
    /// `K_0 x` at the picks' rows, in order, no `K_0 D x`, and the stage-start products,
    /// from the picks' rows of `K_0` and the terms alone, not a pass. Each value is the
    /// one the pass would give, bit for bit (the same packed tiles, which need three or
    /// more directions, a pass reading full rows and the classes contiguous); `None`
    /// otherwise (a pass reading the upper triangle sums each row in another order).
    fn stage_products_at_picks(
        &mut self,
        picks: &[usize],
        xs: &[&[F]],
    ) -> Option<StageProducts<F>> {
        let full_rows = xs.len() >= 3 && !passes::reads_triangle(self.m, xs.len());
        let groups = self.class_groups.as_ref().filter(|_| full_rows)?;
        let (by_class_picks, by_class_basis) = passes::multiply_groups_at_rows(
            &self.pool,
            self.kernel,
            self.m,
            picks,
            &self.us,
            xs,
            groups,
            &mut self.workspace,
        );
        let (k0x, _) = self.plain_and_weighted(by_class_picks);
        let start = self.stage_start_from_basis(by_class_basis, false);
        Some((k0x, vec![Vec::new(); xs.len()], start))
    }

    /// Whether the terms' `u_r = λ_r v_r` (the hotelling family) are kept as `v_r` and `λ_r`.
    fn u_is_scaled_v(&self) -> bool {
        self.us.len() < self.vs.len()
    }

    /// Columns `picks` of `K_t` (rows of the symmetric `K_0`, minus the rank-one terms),
    /// in one sweep over `U` (over `V`, for the hotelling family, just swept by the stage
    /// before, with coefficients `λ_r v_r[i]`).
    fn columns(&self, picks: &[usize]) -> Vec<Vec<F>> {
        let mut columns: Vec<Vec<F>> = picks
            .iter()
            .map(|&i| self.kernel[i * self.m..(i + 1) * self.m].to_vec())
            .collect();
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
    fn dots_with(&self, vectors: &[Vec<F>], xs: &[&[F]]) -> Vec<Vec<F>> {
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
    fn subtract_combinations<C: AsRef<[F]> + Sync>(
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

    fn weighted(&self, x: &[F]) -> Vec<F> {
        x.iter().zip(&self.weight).map(|(x, w)| *x * *w).collect()
    }

    /// `x'Dx`, the `d` of [`passes::Dots::row_statistics`] (`D x` formed in registers,
    /// the sum of `dot(D x, x)` bit for bit): no buffer for `D x`, whose allocation, freed
    /// at the top of the heap and trimmed there, would fault its pages in at every call.
    fn weighted_norm2(&self, x: &[F]) -> F {
        F::row_statistics(x, &self.weight, &self.weight, &self.weight)[2]
    }

    /// The statistics of `K_t − u v'` from those of `K_t`, with `h = K_t' D u`.
    fn update_statistics(&mut self, u: &[F], v: &[F], h: &[F]) {
        self.update_sums(u, v);
        self.update_d(u, v, h);
    }

    /// `p` and `n` of `K_t − u v'`: they need no product with `K_0`.
    fn update_sums(&mut self, u: &[F], v: &[F]) {
        let (mut u_pos, mut u_neg) = (F::zero(), F::zero());
        for (value, &positive) in u.iter().zip(self.positive.iter()) {
            if positive {
                u_pos += *value;
            } else {
                u_neg += *value;
            }
        }
        for ((p, n), &v) in self.p.iter_mut().zip(self.n.iter_mut()).zip(v) {
            *p -= v * u_pos;
            *n -= v * u_neg;
        }
    }

    /// `d` of `K_t − u v'`, with `h = K_t' D u`.
    fn update_d(&mut self, u: &[F], v: &[F], h: &[F]) {
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
    fn deflated_products(&mut self, xs: &[&[F]], last_is_du: bool) -> Vec<Vec<F>> {
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

    /// The deferred update of `d` for the last recorded term, given its `h` (the schur
    /// family updates `p` and `n` when it records the term).
    fn update_d_for_last(&mut self, h: &[F]) {
        let (u, v) = (self.us.last().cloned(), self.vs.last().cloned());
        if let (Some(u), Some(v)) = (u, v) {
            self.update_d(&u, &v, h);
        }
    }

    /// The last schur term's `h`, in one pass with the next pick's likely candidates: their
    /// directions need the term, not `h`, so the pass that completes `d` also gives
    /// `K_t x` of each, and the next pick, ranked with the complete `d`, takes its product
    /// from here when it is one of them (one pass for the pick where it took two). With no
    /// candidates, the pass is `h`'s alone.
    fn finish_with_candidates(
        &mut self,
        du: &[F],
        candidates: &[usize],
        ortho: bool,
        tol: f64,
    ) -> Vec<Speculated<F>> {
        let columns = if candidates.is_empty() {
            Vec::new()
        } else {
            self.columns(candidates)
        };
        let mut directions: Vec<(usize, Vec<F>)> = Vec::with_capacity(candidates.len());
        for (&index, column) in candidates.iter().zip(columns) {
            if let Some(x) = self.direction(column, ortho.then_some(&self.ortho[..]), tol) {
                directions.push((index, x));
            }
        }
        let mut rhs: Vec<&[F]> = directions.iter().map(|(_, x)| &x[..]).collect();
        rhs.push(du);
        let mut products = self.deflated_products(&rhs, true);
        let h = products.pop().expect("the last product is h");
        self.update_d_for_last(&h);
        directions
            .into_iter()
            .zip(products)
            .map(|((index, x), v)| Speculated { index, x, v })
            .collect()
    }
}

impl<'a, F: Real> Engine<'a, F> {
    fn new(
        kernel: &'a [F],
        m: usize,
        positive: &'a [bool],
        tol: f64,
        n_threads: usize,
    ) -> Result<Self> {
        let m_pos = positive.iter().filter(|&&p| p).count();
        let m_neg = m - m_pos;
        let mf = m as f64;
        let weight: Vec<F> = positive
            .iter()
            .map(|&p| {
                F::from_f64(if p {
                    2.0 * m_neg as f64 / mf
                } else {
                    2.0 * m_pos as f64 / mf
                })
            })
            .collect();
        let indicator = |want: bool| -> Vec<F> {
            positive
                .iter()
                .map(|&p| if p == want { F::one() } else { F::zero() })
                .collect()
        };
        let pool = crate::pool::shared(n_threads)?;
        let (p, n, d) = passes::column_statistics(
            &pool,
            kernel,
            m,
            &indicator(true),
            &indicator(false),
            &weight,
        );
        // Any NaN or infinity in K reaches these sums: refuse it rather than select noise.
        if !p.iter().chain(&n).chain(&d).all(|v| v.is_finite()) {
            return Err(Error::invalid(
                "K",
                "contains NaN or infinite values, or values whose squares overflow",
            ));
        }
        let threshold = d.iter().map(|&d0| F::from_f64(tol) * d0).collect();
        Ok(Engine {
            kernel,
            m,
            positive,
            weight,
            alpha: F::from_f64(2.0 * m_neg as f64 / (mf * m_pos as f64)),
            beta: F::from_f64(2.0 * m_pos as f64 / (mf * m_neg as f64)),
            p,
            n,
            d,
            threshold,
            us: Vec::new(),
            vs: Vec::new(),
            lambdas: Vec::new(),
            ortho: Vec::new(),
            tracks_d: true,
            class_groups: (passes::ColumnGroup::count_runs(positive) * MIN_CLASS_RUN <= m).then(
                || {
                    [
                        passes::ColumnGroup::of_class::<F>(positive, true),
                        passes::ColumnGroup::of_class::<F>(positive, false),
                    ]
                },
            ),
            class_weights: (
                F::from_f64(2.0 * m_neg as f64 / mf),
                F::from_f64(2.0 * m_pos as f64 / mf),
            ),
            pool,
            workspace: passes::Workspace::default(),
            passes: 1,
            target: usize::MAX,
            shared: None,
        })
    }

    /// The `take` best admissible candidates (higher score is better), best first, ties
    /// to the lowest index.
    fn ranked_candidates(
        &self,
        criterion: Criterion,
        blocked: &[bool],
        rank: &[usize],
        take: usize,
    ) -> Vec<usize> {
        let mut scored: Vec<(F, usize)> = Vec::new();
        for i in 0..self.m {
            if blocked[i] || (self.tracks_d && self.d[i] <= self.threshold[i]) {
                continue;
            }
            let a = self.p[i] - self.n[i];
            let denominator =
                self.d[i] - self.alpha * self.p[i] * self.p[i] - self.beta * self.n[i] * self.n[i];
            if criterion.uses_denominator() && denominator <= self.threshold[i] {
                continue;
            }
            let score = match criterion {
                Criterion::Optimal => a * a / denominator,
                Criterion::Pseudo => a * a,
                Criterion::Reverse => -(a * a / denominator),
                Criterion::ReversePseudo => -(a * a),
                Criterion::Random => -F::from_f64(rank[i] as f64),
            };
            scored.push((score, i));
        }
        let best_first = |(sa, ia): &(F, usize), (sb, ib): &(F, usize)| {
            sb.as_f64().total_cmp(&sa.as_f64()).then(ia.cmp(ib))
        };
        // Only the best `take` are needed: an O(m) partition, then a sort of those.
        if take < scored.len() {
            scored.select_nth_unstable_by(take, best_first);
            scored.truncate(take);
        }
        scored.sort_by(best_first);
        scored.into_iter().map(|(_, i)| i).collect()
    }

    /// [`Engine::ranked_candidates`] without `d`: every unblocked candidate ranked by its
    /// score, then taken in that order while its own column `c` of `K_t` is not numerically
    /// explained (`c'Dc`, the `d` it would have, above its threshold), until `take` are
    /// found; the same candidates as with `d` kept. Returns them, best first, and the first
    /// one's column.
    fn admissible_candidates(
        &self,
        criterion: Criterion,
        blocked: &[bool],
        rank: &[usize],
        take: usize,
    ) -> (Vec<usize>, Option<Vec<F>>) {
        let mut picks = Vec::with_capacity(take);
        let mut first_column = None;
        // The best `ranking` by score, a prefix of any longer ranking (ties go to the lowest
        // index): usually the first `take` are admissible, and an O(m) selection finds
        // them where a sort of every candidate took ~0.15 ms a pick at m = 4,000.
        let (mut ranking, mut checked) = (take, 0);
        loop {
            let ranked = self.ranked_candidates(criterion, blocked, rank, ranking);
            for &i in &ranked[checked..] {
                let column = self.columns(&[i]).pop().expect("one column");
                if self.weighted_norm2(&column) <= self.threshold[i] {
                    continue;
                }
                if picks.is_empty() {
                    first_column = Some(column);
                }
                picks.push(i);
                if picks.len() == take {
                    return (picks, first_column);
                }
            }
            if ranked.len() < ranking {
                return (picks, first_column); // every candidate checked
            }
            checked = ranked.len();
            ranking = ranking.saturating_mul(4);
        }
    }

    /// The earlier `ortho-*` directions `q` of a family: `ortho-hotelling`'s are its `v`
    /// (`v = x = q`), `ortho-projection`'s its `u` (`u = x = q`), in the order of the picks.
    fn ortho_basis(&self, family: Family) -> &[Vec<F>] {
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
    fn direction(&self, column: Vec<F>, ortho: Option<&[Vec<F>]>, tol: f64) -> Option<Vec<F>> {
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

    /// The `ortho-*` direction of a stage's pick from its column `c` (deflated by the
    /// stage's earlier terms) with its part along the directions from before the stage
    /// already removed, in one block for the whole stage (`column`, tracked): classical
    /// Gram–Schmidt against the stage's earlier directions finishes `q = (I − QQ')τ`,
    /// `τ = c/‖c‖`, on tracked vectors, so no pick sweeps the earlier directions.
    fn stage_direction(
        &self,
        mut column: Tracked<F>,
        norm: F,
        earlier: &[StageTerm<F>],
        tol: f64,
    ) -> Option<Tracked<F>> {
        column.scale(F::one() / norm);
        let coefficients: Vec<F> = earlier
            .iter()
            .map(|term| dot(&term.direction.x, &column.x))
            .collect();
        let negated: Vec<F> = coefficients.iter().map(|&c| -c).collect();
        column.add_all_scaled(&negated, earlier.iter().map(|term| &term.direction));
        let norm2 = dot(&column.x, &column.x);
        if norm2.as_f64() <= tol {
            return None;
        }
        column.scale(F::one() / norm2.sqrt());
        Some(column)
    }

    /// One stage of the hotelling/projection families: one read of `K_0` for all its
    /// picks, one sweep over `U_0` for their products with the stage-start terms, one
    /// sweep over `V_0` at the end for every pick's `v` and `h`; the `ortho-*` forms add
    /// two sweeps over the earlier directions, for a block Gram–Schmidt of the stage's
    /// columns before the pass.
    fn fused_stage(
        &mut self,
        picks: &[usize],
        family: Family,
        ortho: bool,
        one_per_stage: bool,
        tol: f64,
        chosen: &mut Vec<usize>,
    ) {
        let hotelling = family == Family::Hotelling;
        if ortho && one_per_stage {
            // A lone pick's direction is known before the pass, so the pass multiplies
            // the direction itself and Gram–Schmidt need not carry products along.
            let column = self.columns(picks).remove(0);
            let Some(x) = self.direction(column, Some(self.ortho_basis(family)), tol) else {
                return;
            };
            let (mut k0x, mut k0dx, mut start) = self.stage_products(&[&x], hotelling);
            let x = Tracked {
                x,
                k0x: k0x.remove(0),
                k0dx: k0dx.remove(0),
                stage_start: start.remove(0),
            };
            chosen.push(picks[0]);
            if chosen.len() < self.target {
                let term = self.stage_term(x, &[], hotelling);
                self.finish_stage(vec![term], hotelling);
            }
            return;
        }
        let columns = self.columns(picks);
        // For `ortho-*`: the columns without their parts along the earlier directions
        // (`columns` keeps them, for the thresholds and the norms of `τ`).
        let orthogonalised = ortho.then(|| {
            let rhs: Vec<&[F]> = columns.iter().map(Vec::as_slice).collect();
            let earlier = self.ortho_basis(family);
            let coefficients = self.dots_with(earlier, &rhs);
            let mut residuals = columns.clone();
            self.subtract_combinations(&mut residuals, earlier, &coefficients);
            residuals
        });
        let multiplied = orthogonalised.as_ref().unwrap_or(&columns);
        let rhs: Vec<&[F]> = multiplied.iter().map(Vec::as_slice).collect();
        // The projection family's last stage needs `K_0 x` only where its later picks'
        // columns read it: at the picks' rows. Should a pick be skipped, the stage falls
        // short of the target and a next stage needs every statistic: it is then done
        // again from the whole pass.
        let last = family == Family::Projection && chosen.len() + picks.len() == self.target;
        if last {
            let chosen_before = chosen.len();
            if let Some(products) = self.stage_products_at_picks(picks, &rhs) {
                self.stage_terms(
                    picks, &columns, multiplied, products, true, hotelling, ortho, tol, chosen,
                );
                if chosen.len() == self.target {
                    return;
                }
                chosen.truncate(chosen_before);
            }
        }
        let products = self.stage_products(&rhs, hotelling);
        let terms = self.stage_terms(
            picks, &columns, multiplied, products, false, hotelling, ortho, tol, chosen,
        );
        if chosen.len() < self.target {
            self.finish_stage(terms, hotelling);
        }
    }

    /// The stage's picks in order, from its columns (`columns`, and `multiplied` the
    /// directions its products were taken of) and their products: each pick's column
    /// deflated by the stage's earlier terms, skipped if numerically explained, else its
    /// term. `at_picks`: `K_0 x` is known only at the picks' rows, in their order.
    #[allow(clippy::too_many_arguments)]
    fn stage_terms(
        &mut self,
        picks: &[usize],
        columns: &[Vec<F>],
        multiplied: &[Vec<F>],
        (k0_columns, k0_weighted, start_products): StageProducts<F>,
        at_picks: bool,
        hotelling: bool,
        ortho: bool,
        tol: f64,
        chosen: &mut Vec<usize>,
    ) -> Vec<StageTerm<F>> {
        let mut terms: Vec<StageTerm<F>> = Vec::new();
        let parts = multiplied
            .iter()
            .zip(k0_columns)
            .zip(k0_weighted)
            .zip(start_products);
        for (s, (&i, (((x, k0x), k0dx), stage_start))) in picks.iter().zip(parts).enumerate() {
            // Column `i` of the kernel deflated by the stage's earlier terms `u_q v_q'`.
            let mut column = Tracked {
                x: x.clone(),
                k0x,
                k0dx,
                stage_start,
            };
            let row = if at_picks { s } else { i };
            let factors: Vec<F> = terms
                .iter()
                .zip(self.stage_v_at(&terms, i, row, hotelling))
                .map(|(term, v_at_i)| -(v_at_i * term.lambda))
                .collect();
            column.add_all_scaled(&factors, terms.iter().map(|term| &term.direction));
            let mut whole = ortho.then(|| columns[s].clone());
            if let Some(whole) = whole.as_mut() {
                let directions: Vec<&[F]> =
                    terms.iter().map(|term| &term.direction.x[..]).collect();
                axpy_all(whole, &factors, &directions);
            }
            let deflated = whole.as_ref().unwrap_or(&column.x);
            if s > 0 && self.weighted_norm2(deflated) <= self.threshold[i] {
                continue;
            }
            let direction = if ortho {
                let norm = dot(deflated, deflated).sqrt();
                self.stage_direction(column, norm, &terms, tol)
            } else {
                let norm = dot(&column.x, &column.x).sqrt();
                column.scale(F::one() / norm);
                Some(column)
            };
            let Some(x) = direction else {
                continue;
            };
            chosen.push(i);
            let term = self.stage_term(x, &terms, hotelling);
            terms.push(term);
        }
        terms
    }

    /// `[U_0'x | U_0'Dx | V_0'x (hotelling)]` for each `x`: one sweep over `U_0` (over
    /// `V_0` for hotelling, with `U_0 = V_0 Λ`).
    fn stage_start_products(&self, xs: &[&[F]], hotelling: bool) -> Vec<Vec<F>> {
        let weighted: Vec<Vec<F>> = xs.iter().map(|x| self.weighted(x)).collect();
        let rhs = stacked(xs, &weighted);
        let basis = if hotelling { &self.vs } else { &self.us };
        let products = self.dots_with(basis, &rhs);
        (0..xs.len())
            .map(|s| self.stage_start(&products[s], &products[xs.len() + s], hotelling))
            .collect()
    }

    /// `v_q[i]` for the stage's terms so far (`v_q = x_q` for hotelling; for projection
    /// `v_q = K_0 x_q − V_0 (U_0'x_q) − Σ_{p<q} v_p (u_p'x_q)`, with the multiply-adds in
    /// the order of [`Engine::finish_stage`], so the value is the one it will store), with
    /// `K_0 x_q` read at `row` (`i`, or the pick's place when only the picks' rows are known).
    fn stage_v_at(&self, terms: &[StageTerm<F>], i: usize, row: usize, hotelling: bool) -> Vec<F> {
        let mut values: Vec<F> = Vec::with_capacity(terms.len());
        for term in terms {
            let value = if hotelling {
                term.direction.x[i]
            } else {
                let mut value = term.direction.k0x[row];
                for (v, &c) in self.vs.iter().zip(&term.start_x) {
                    value = (-c).mul_add(v[i], value);
                }
                for (&v, &c) in values.iter().zip(&term.earlier_x) {
                    value = (-c).mul_add(v, value);
                }
                value
            };
            values.push(value);
        }
        values
    }

    /// The pick of direction `x`: its products with every term before it, and `λ`.
    fn stage_term(&self, x: Tracked<F>, earlier: &[StageTerm<F>], hotelling: bool) -> StageTerm<F> {
        let t0 = self.vs.len();
        let dx = self.weighted(&x.x);
        let start = if x.stage_start.is_empty() {
            self.stage_start_products(&[&x.x], hotelling).remove(0)
        } else {
            x.stage_start.clone()
        };
        // `[x_q'x, x_q'Dx]` from one sweep of each earlier `x_q`; then
        // u_q'x = λ_q (x_q'x), u_q'Dx = λ_q (x_q'Dx)
        let with_earlier: Vec<[F; 2]> = earlier
            .iter()
            .map(|q| crate::simd::dots(&q.direction.x, [&x.x[..], &dx]))
            .collect();
        let earlier_x: Vec<F> = earlier
            .iter()
            .zip(&with_earlier)
            .map(|(q, products)| q.lambda * products[0])
            .collect();
        let earlier_dx: Vec<F> = earlier
            .iter()
            .zip(&with_earlier)
            .map(|(q, products)| q.lambda * products[1])
            .collect();
        let lambda = if hotelling {
            // λ = x'K_t x = x'K_0 x − (U'x)·(V'x), with V = [V_0, x_q of the stage]
            let mut lambda = dot(&x.x, &x.k0x) - dot(&start[..t0], &start[2 * t0..]);
            for (products, &u_x) in with_earlier.iter().zip(&earlier_x) {
                lambda -= u_x * products[0];
            }
            lambda
        } else {
            F::one()
        };
        StageTerm {
            direction: x,
            start_x: start[..t0].to_vec(),
            start_dx: start[t0..2 * t0].to_vec(),
            earlier_x,
            earlier_dx,
            lambda,
        }
    }

    /// The stage's `v = K_t'x` (projection) and `h = K_t'Du` in one sweep over `V_0`,
    /// then their stage terms in order; then the statistics, pick by pick.
    fn finish_stage(&mut self, mut terms: Vec<StageTerm<F>>, hotelling: bool) {
        let n = terms.len();
        // The products become `v` and `h` in place: the terms need them no more.
        let mut outs: Vec<Vec<F>> = Vec::with_capacity(2 * n);
        if !hotelling {
            outs.extend(
                terms
                    .iter_mut()
                    .map(|t| std::mem::take(&mut t.direction.k0x)),
            );
        }
        outs.extend(
            terms
                .iter_mut()
                .map(|t| std::mem::take(&mut t.direction.k0dx)),
        );
        let mut coefficients: Vec<&[F]> = Vec::with_capacity(2 * n);
        if !hotelling {
            coefficients.extend(terms.iter().map(|term| &term.start_x[..]));
        }
        coefficients.extend(terms.iter().map(|term| &term.start_dx[..]));
        self.subtract_combinations(&mut outs, &self.vs, &coefficients);
        let mut hs = outs.split_off(outs.len() - n);
        let mut vs = if hotelling {
            terms
                .iter_mut()
                .map(|term| std::mem::take(&mut term.direction.x))
                .collect()
        } else {
            outs
        };
        for (s, term) in terms.iter().enumerate() {
            let (earlier, rest) = vs.split_at_mut(s);
            if !hotelling {
                self.subtract_combinations(&mut rest[..1], earlier, &[&term.earlier_x[..]]);
            }
            self.subtract_combinations(&mut hs[s..s + 1], earlier, &[&term.earlier_dx[..]]);
        }
        for ((term, v), mut h) in terms.into_iter().zip(vs).zip(hs) {
            h.iter_mut().for_each(|value| *value = term.lambda * *value);
            if hotelling {
                let u: Vec<F> = v.iter().map(|&value| value * term.lambda).collect();
                self.update_statistics(&u, &v, &h);
            } else {
                let u = term.direction.x;
                self.update_statistics(&u, &v, &h);
                self.us.push(u);
            }
            self.vs.push(v);
            self.lambdas.push(term.lambda);
        }
    }

    /// One stage of the schur family. Each pick needs `K_0 x` before its deflation and
    /// `K_0 D u` after it, and `u = K_t x/λ` leaves every span known in advance, so the
    /// picks cannot share one read as in the other families. But a stage's picks are
    /// fixed, so the second read of a pick is shared with the first read of the next:
    /// `S + 1` reads of `K_0` per stage. The pick's statistics update waits for its `h`;
    /// nothing in between reads the statistics (columns and directions use `U`, `V`).
    /// `first` is what is already known of the first pick. The last pick's `D u`, when a next
    /// stage needs its `h`, is returned for [`Engine::finish_with_candidates`].
    fn schur_stage(
        &mut self,
        picks: &[usize],
        mut first: Option<FirstPick<F>>,
        ortho: bool,
        tol: f64,
        chosen: &mut Vec<usize>,
        stop: &AtomicBool,
    ) -> Option<Vec<F>> {
        let mut pending: Option<Vec<F>> = None; // `D u` of the last term, awaiting its `h`
        for (s, &i) in picks.iter().enumerate() {
            // Two passes a pick: a stop request is not left waiting for the whole stage
            // (the state left behind is dropped with the error).
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let (x, v) = match first.take() {
                Some(FirstPick::Product { x, v }) => {
                    if ortho {
                        self.ortho.push(x.clone());
                    }
                    chosen.push(i);
                    (x, v)
                }
                known => {
                    let column = match known {
                        Some(FirstPick::Column(column)) => column,
                        _ => self.columns(&[i]).pop().expect("one column"),
                    };
                    if s > 0 && self.weighted_norm2(&column) <= self.threshold[i] {
                        continue;
                    }
                    // Only `x` is needed here: the schur family takes no fused products.
                    let ortho_basis = ortho.then_some(&self.ortho[..]);
                    let Some(x) = self.direction(column, ortho_basis, tol) else {
                        continue;
                    };
                    if ortho {
                        self.ortho.push(x.clone());
                    }
                    chosen.push(i);
                    // One sweep over `U` for `U'x` and the last term's `U'Du`, one pass for
                    // `K_0 x` and `K_0 D u`, one sweep over `V` for `K_t'x` and the last `h`.
                    let mut rhs: Vec<&[F]> = vec![&x];
                    rhs.extend(pending.as_deref());
                    let mut products = self.deflated_products(&rhs, pending.is_some());
                    let v = products.remove(0);
                    if let Some(h) = products.pop() {
                        self.update_d_for_last(&h);
                    }
                    pending = None;
                    (x, v)
                }
            };
            let lambda = dot(&x, &v);
            if lambda <= F::zero() {
                continue; // nothing left to deflate along x
            }
            // Schur deflation keeps K_t symmetric, so K_t x = K_t'x = v and u = v/λ.
            let u: Vec<F> = v.iter().map(|&value| value / lambda).collect();
            self.update_sums(&u, &v);
            if self.tracks_d {
                pending = Some(self.weighted(&u));
            }
            self.us.push(u);
            self.vs.push(v);
        }
        // The last term's `h` only serves the statistics of a next stage.
        pending.filter(|_| chosen.len() < self.target)
    }
}

fn validate<F: Real>(
    kernel: &ArrayView2<F>,
    positive: &[bool],
    params: &GreedyParams,
) -> Result<()> {
    let (rows, cols) = kernel.dim();
    if rows != cols {
        return Err(Error::invalid(
            "K",
            format!("must be square, got shape ({rows}, {cols})"),
        ));
    }
    if positive.len() != rows {
        return Err(Error::invalid(
            "y",
            format!(
                "has {} labels but the kernel has {rows} rows",
                positive.len()
            ),
        ));
    }
    let m_pos = positive.iter().filter(|&&p| p).count();
    if m_pos == 0 || m_pos == rows {
        return Err(Error::invalid("y", "needs samples of both classes"));
    }
    if params.k == 0 || params.k > rows {
        return Err(Error::invalid(
            "k",
            format!(
                "must be between 1 and {rows} (the sample size), got {}",
                params.k
            ),
        ));
    }
    if params.stages == 0 {
        return Err(Error::invalid("stages", "must be at least 1"));
    }
    if let Some(tol) = params.tol {
        if !(tol.is_finite() && tol >= 0.0) {
            return Err(Error::invalid(
                "tol",
                format!("must be a finite non-negative number, got {tol}"),
            ));
        }
    }
    if params.n_threads == 0 {
        return Err(Error::invalid("n_jobs", "must be at least 1 thread"));
    }
    if params.random_order.is_some() && params.criterion != Criterion::Random {
        return Err(Error::invalid(
            "random_order",
            "is only used by the random criterion",
        ));
    }
    if let Some(order) = &params.random_order {
        let mut seen = vec![false; rows];
        let is_permutation = order.len() == rows
            && order
                .iter()
                .all(|&i| i < rows && !std::mem::replace(&mut seen[i], true));
        if !is_permutation {
            return Err(Error::invalid(
                "random_order",
                format!("must be a permutation of 0..{rows}"),
            ));
        }
    }
    Ok(())
}

/// Chooses up to `params.k` bases from the symmetric training kernel `kernel` (row- or
/// column-major, borrowed, never written) for labels `positive` (`true` = class +1).
pub fn select<F: Real>(
    kernel: ArrayView2<F>,
    positive: &[bool],
    params: &GreedyParams,
) -> Result<Selection> {
    select_with_stop(kernel, positive, params, &AtomicBool::new(false))
}

/// [`select`], which gives up with [`Error::Interrupted`] once `stop` is raised (from
/// another thread): it looks at the flag before each stage and, in the schur family,
/// before each pick, so it answers within one or two passes over the kernel. The
/// bindings raise it when Python's signal handlers raise (Ctrl-C).
pub fn select_with_stop<F: Real>(
    kernel: ArrayView2<F>,
    positive: &[bool],
    params: &GreedyParams,
    stop: &AtomicBool,
) -> Result<Selection> {
    let data = checked_kernel(&kernel, positive, params)?;
    select_alone(data, kernel.nrows(), positive, params, stop)
}

/// The selection of a checked problem over the row-major `m×m` `kernel`, with passes of
/// its own.
fn select_alone<F: Real>(
    kernel: &[F],
    m: usize,
    positive: &[bool],
    params: &GreedyParams,
    stop: &AtomicBool,
) -> Result<Selection> {
    let tol = params.tol.unwrap_or(F::DEFAULT_TOL);
    let mut engine = Engine::new(kernel, m, positive, tol, params.n_threads)?;
    // The whole loop runs on a worker of the engine's pool, so that a pass is shared by
    // that worker and the others (n threads in all), where a caller outside the pool
    // would wake n workers for each pass and wait: fewer wake-ups per pick, and no
    // (n + 1)-th thread on n cores.
    let pool = std::sync::Arc::clone(&engine.pool);
    pool.install(|| run_selection(&mut engine, params, tol, stop))
}

/// [`select`] for several problems over one kernel, `problems[c] = (positive, params)`
/// (the one-vs-rest problems of a multiclass fit), which give the same [`Selection`]s
/// whatever their number or order. Problems whose picks read `K` one at a time (the
/// schur family at any stage, the hotelling and projection families at stages 1) over a
/// kernel of 12 MiB or more run side by side in groups of up to 12 that share each pass
/// over `K`: `C` picks for one read of `K` where one after the other they would read it
/// `C` times. Their passes read all of `K` in a fixed order
/// ([`passes::multiply_in_order`]), where [`select`]'s narrow passes read its upper
/// triangle (split by class), so their sums, and on close calls their picks, can differ
/// from [`select`]'s in the last bits. A group's terms take at most as much memory as the
/// kernel. The others run one after the other, as [`select`]. All problems need the same
/// `n_threads`; each [`Selection::kernel_passes`] counts the passes it took part in.
pub fn select_many<F: Real>(
    kernel: ArrayView2<F>,
    problems: &[(&[bool], GreedyParams)],
) -> Result<Vec<Selection>> {
    select_many_with_stop(kernel, problems, &AtomicBool::new(false))
}

/// [`select_many`], which gives up with [`Error::Interrupted`] once `stop` is raised.
pub fn select_many_with_stop<F: Real>(
    kernel: ArrayView2<F>,
    problems: &[(&[bool], GreedyParams)],
    stop: &AtomicBool,
) -> Result<Vec<Selection>> {
    select_many_sharing_from(kernel, problems, stop, SHARED_FROM_BYTES)
}

/// [`select_many_with_stop`], sharing passes over kernels of `shared_from_bytes` or more.
fn select_many_sharing_from<F: Real>(
    kernel: ArrayView2<F>,
    problems: &[(&[bool], GreedyParams)],
    stop: &AtomicBool,
    shared_from_bytes: usize,
) -> Result<Vec<Selection>> {
    let Some((_, first)) = problems.first() else {
        return Ok(Vec::new());
    };
    let mut data: &[F] = &[];
    for (c, (positive, params)) in problems.iter().enumerate() {
        data = checked_kernel(&kernel, positive, params).map_err(|error| error.in_problem(c))?;
        if params.n_threads != first.n_threads {
            return Err(Error::invalid(
                "n_jobs",
                "must be the same for every problem of a shared selection",
            ));
        }
    }
    let m = kernel.nrows();
    let bytes = data.len().saturating_mul(std::mem::size_of::<F>());
    let sharing = |params: &GreedyParams| shares_passes(params) && bytes >= shared_from_bytes;
    let mut selections: Vec<Option<Selection>> = vec![None; problems.len()];
    for (c, (positive, params)) in problems.iter().enumerate() {
        if !sharing(params) {
            selections[c] = Some(select_alone(data, m, positive, params, stop)?);
        }
    }
    let shared: Vec<usize> = (0..problems.len())
        .filter(|&c| sharing(&problems[c].1))
        .collect();
    // Side by side, the selections hold their terms at once, `2·m·k` values each (`3·m·k`
    // with the ortho forms' directions), where one after the other they take turns: a
    // group's terms take at most as much memory as the kernel (and 12 selections at most).
    let terms = |params: &GreedyParams| {
        let vectors = if params.deflation.is_ortho() { 3 } else { 2 };
        (vectors * params.k).saturating_mul(m * std::mem::size_of::<F>())
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_bytes = 0usize;
    for &c in &shared {
        let bytes_c = terms(&problems[c].1);
        match groups.last_mut() {
            Some(group)
                if group.len() < SHARED_SELECTIONS
                    && group_bytes.saturating_add(bytes_c) <= bytes =>
            {
                group.push(c);
                group_bytes += bytes_c;
            }
            _ => {
                groups.push(vec![c]);
                group_bytes = bytes_c;
            }
        }
    }
    for group in groups {
        let members: Vec<&(&[bool], GreedyParams)> = group.iter().map(|&c| &problems[c]).collect();
        let outcomes = select_side_by_side(data, m, &members, stop)?;
        for (&c, selection) in group.iter().zip(outcomes) {
            selections[c] = Some(selection);
        }
    }
    Ok(selections.into_iter().flatten().collect())
}

/// Whether a selection's passes are worth sharing: those bound by memory, schur's (one or
/// two vectors at any stage) and the other families' at a stage of one. Their wider
/// stages' passes are bound by arithmetic, which a shared pass would not lessen (and
/// without the split by class, would double).
fn shares_passes(params: &GreedyParams) -> bool {
    match params.deflation.family() {
        Family::Schur => true,
        Family::Hotelling | Family::Projection => params.stages == 1,
        Family::None => false,
    }
}

/// The selections of `problems` (checked), each on a thread of its own, sharing their
/// passes over the row-major `m×m` `kernel`, served from this thread (or, from a rayon
/// worker, from a thread of its own, so that the worker cannot take up other jobs of its
/// pool while it waits, one of which might wait on it).
fn select_side_by_side<F: Real>(
    kernel: &[F],
    m: usize,
    problems: &[&(&[bool], GreedyParams)],
    stop: &AtomicBool,
) -> Result<Vec<Selection>> {
    let pool = crate::pool::shared(problems[0].1.n_threads)?;
    let shared = SharedPasses::new(kernel, m, pool, problems.len());
    let joined = std::thread::scope(|scope| {
        // Armed before the first member starts: should this thread unwind before serving
        // every pass, the members waiting for one panic instead of waiting for ever.
        let abandon = shared.abandon_on_unwind();
        let mut members = Vec::with_capacity(problems.len());
        for (member, &(positive, params)) in problems.iter().enumerate() {
            // Made before the spawn, so that a thread that cannot start still leaves (its
            // closure, holding the membership, is dropped).
            let membership = shared.member(member);
            let shared = &shared;
            let started = std::thread::Builder::new()
                .name(format!("gkfda-selection-{member}"))
                .spawn_scoped(scope, move || {
                    let _membership = membership;
                    shared.take_turn(member);
                    let tol = params.tol.unwrap_or(F::DEFAULT_TOL);
                    let outcome = Engine::new(kernel, m, positive, tol, params.n_threads).and_then(
                        |mut engine| {
                            engine.share_passes(shared, member);
                            run_selection(&mut engine, params, tol, shared.halt_flag())
                        },
                    );
                    if outcome.is_err() {
                        shared.halt(); // the call fails: the others' work would be lost
                    }
                    outcome
                });
            members.push(started.ok());
        }
        if rayon::current_thread_index().is_some() {
            let served = scope.spawn(|| shared.serve(stop)).join();
            served.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        } else {
            shared.serve(stop);
        }
        abandon.disarm();
        members
            .into_iter()
            .map(|thread| thread.map(|thread| thread.join()))
            .collect::<Vec<_>>()
    });
    // A panic first, then an error of a member's own, then a stop (which a failed member
    // asked of the others).
    let mut outcomes = Vec::with_capacity(joined.len());
    for joined in joined {
        match joined {
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            Some(Ok(outcome)) => outcomes.push(Some(outcome)),
            None => outcomes.push(None),
        }
    }
    if let Some(error) = outcomes.iter().flatten().find_map(|outcome| {
        outcome
            .as_ref()
            .err()
            .filter(|error| **error != Error::Interrupted)
    }) {
        return Err(error.clone());
    }
    let mut selections = Vec::with_capacity(outcomes.len());
    for (outcome, &&(positive, ref params)) in outcomes.into_iter().zip(problems) {
        selections.push(match outcome {
            Some(outcome) => outcome?,
            // The OS would not start its thread: alone, with passes of its own.
            None => select_alone(kernel, m, positive, params, stop)?,
        });
    }
    Ok(selections)
}

/// `kernel` as a row-major slice, once `(kernel, positive, params)` are checked.
fn checked_kernel<'k, F: Real>(
    kernel: &ArrayView2<'k, F>,
    positive: &[bool],
    params: &GreedyParams,
) -> Result<&'k [F]> {
    validate(kernel, positive, params)?;
    // A symmetric matrix reads the same in either memory order.
    kernel
        .to_slice()
        .or_else(|| (*kernel).reversed_axes().to_slice())
        .ok_or_else(|| Error::invalid("K", "must be a contiguous array"))
}

/// The picks of `engine` (just made) for `params`.
fn run_selection<F: Real>(
    engine: &mut Engine<'_, F>,
    params: &GreedyParams,
    tol: f64,
    stop: &AtomicBool,
) -> Result<Selection> {
    let m = engine.m;
    let mut rank = Vec::new();
    if params.criterion == Criterion::Random {
        let order = params
            .random_order
            .clone()
            .unwrap_or_else(|| random_order(m, params.seed));
        rank = try_zeroed::<usize>(m, "the random order")?;
        for (position, &i) in order.iter().enumerate() {
            rank[i] = position;
        }
    }
    engine.target = params.k;
    let family = params.deflation.family();
    let ortho = params.deflation.is_ortho();
    // The schur family's two passes a pick are `K_t x` and `h = K_t'Du`, and `h` serves
    // only `d`: criteria that rank without `d` check their candidates' own columns instead
    // and take one pass a pick.
    engine.tracks_d = !(family == Family::Schur && params.criterion.checks_candidates_one_by_one());
    // Schur picks that keep `d` multiply the next pick's likely candidates with their `h`
    // (not beside other selections: shared passes take each member's own widths).
    let speculate = family == Family::Schur && engine.tracks_d && engine.shared.is_none();
    let mut speculated: Vec<Speculated<F>> = Vec::new();
    let mut blocked = vec![false; m];
    let mut chosen = Vec::with_capacity(params.k);
    let mut stopped_early = false;
    while chosen.len() < params.k {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        let take = params.stages.min(params.k - chosen.len());
        let (picks, first_column) = if engine.tracks_d {
            let picks = engine.ranked_candidates(params.criterion, &blocked, &rank, take);
            (picks, None)
        } else {
            engine.admissible_candidates(params.criterion, &blocked, &rank, take)
        };
        let first_column = first_column.map(FirstPick::Column);
        if picks.is_empty() {
            stopped_early = true;
            break;
        }
        let picks = picks.as_slice();
        for &i in picks {
            blocked[i] = true;
        }
        match family {
            Family::None => chosen.extend_from_slice(picks),
            Family::Hotelling | Family::Projection => {
                engine.fused_stage(picks, family, ortho, params.stages == 1, tol, &mut chosen)
            }
            Family::Schur => {
                let first = std::mem::take(&mut speculated)
                    .into_iter()
                    .find(|candidate| candidate.index == picks[0])
                    .map(|Speculated { x, v, .. }| FirstPick::Product { x, v })
                    .or(first_column);
                let deferred = engine.schur_stage(picks, first, ortho, tol, &mut chosen, stop);
                if let Some(du) = deferred {
                    let candidates = if speculate {
                        let take = SPECULATED_CANDIDATES;
                        engine.ranked_candidates(params.criterion, &blocked, &rank, take)
                    } else {
                        Vec::new()
                    };
                    speculated = engine.finish_with_candidates(&du, &candidates, ortho, tol);
                }
            }
        }
    }
    Ok(Selection {
        indices: chosen,
        stopped_early,
        kernel_passes: engine.passes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{gram, Kernel};
    use ndarray::Array2;
    use proptest::prelude::*;

    /// Uniform numbers in `[0, 1)` from a seeded linear congruential generator.
    fn uniform_stream(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn problem(m: usize, d: usize, seed: u64) -> (Array2<f64>, Vec<bool>) {
        let mut uniform = uniform_stream(seed.wrapping_add(1));
        let x = Array2::from_shape_fn((m, d), |_| 2.0 * uniform() - 1.0);
        let labels = (0..m)
            .map(|i| x[[i, 0]] + 0.5 * (3.0 * x[[i, 1]]).sin() + 0.3 * (uniform() - 0.5) > 0.0)
            .collect();
        (
            gram(x.view(), &Kernel::Rbf { gamma: 1.5 }, 1).unwrap(),
            labels,
        )
    }

    /// Explicit deflation, straight from the equations: the oracle of the implicit engine.
    fn explicit_select(
        kernel: &Array2<f64>,
        positive: &[bool],
        params: &GreedyParams,
    ) -> Vec<usize> {
        let m = kernel.nrows();
        let tol = params.tol.unwrap_or(f64::DEFAULT_TOL);
        let m_pos = positive.iter().filter(|&&p| p).count() as f64;
        let m_neg = m as f64 - m_pos;
        let mf = m as f64;
        let weight: Vec<f64> = positive
            .iter()
            .map(|&p| {
                if p {
                    2.0 * m_neg / mf
                } else {
                    2.0 * m_pos / mf
                }
            })
            .collect();
        let (alpha, beta) = (2.0 * m_neg / (mf * m_pos), 2.0 * m_pos / (mf * m_neg));
        let stats = |kt: &Array2<f64>, i: usize| {
            let col = kt.column(i);
            let p: f64 = (0..m).filter(|&j| positive[j]).map(|j| col[j]).sum();
            let n: f64 = (0..m).filter(|&j| !positive[j]).map(|j| col[j]).sum();
            let d: f64 = (0..m).map(|j| weight[j] * col[j] * col[j]).sum();
            (p, n, d)
        };
        let mut kt = kernel.clone();
        let threshold: Vec<f64> = (0..m).map(|i| tol * stats(&kt, i).2).collect();
        let (mut blocked, mut chosen, mut directions) =
            (vec![false; m], Vec::new(), Vec::<Vec<f64>>::new());
        while chosen.len() < params.k {
            let mut scored = Vec::new();
            for i in (0..m).filter(|&i| !blocked[i]) {
                let (p, n, d) = stats(&kt, i);
                let (a, denominator) = (p - n, d - alpha * p * p - beta * n * n);
                if d <= threshold[i]
                    || (params.criterion.uses_denominator() && denominator <= threshold[i])
                {
                    continue;
                }
                let score = match params.criterion {
                    Criterion::Optimal => a * a / denominator,
                    Criterion::Pseudo => a * a,
                    Criterion::Reverse => -(a * a / denominator),
                    Criterion::ReversePseudo => -(a * a),
                    Criterion::Random => unreachable!("not tested here"),
                };
                scored.push((score, i));
            }
            if scored.is_empty() {
                break;
            }
            scored.sort_by(|(sa, ia), (sb, ib)| sb.total_cmp(sa).then(ia.cmp(ib)));
            let take = params.stages.min(params.k - chosen.len());
            for (s, &(_, i)) in scored.iter().take(take).enumerate() {
                blocked[i] = true;
                let column = kt.column(i).to_vec();
                if s > 0 && stats(&kt, i).2 <= threshold[i] {
                    continue;
                }
                let norm = column.iter().map(|v| v * v).sum::<f64>().sqrt();
                let tau: Vec<f64> = column.iter().map(|v| v / norm).collect();
                let mut x = tau.clone();
                if params.deflation.is_ortho() {
                    for q in &directions {
                        let c: f64 = q.iter().zip(&tau).map(|(a, b)| a * b).sum();
                        x.iter_mut().zip(q).for_each(|(x, q)| *x -= c * q);
                    }
                    let n2: f64 = x.iter().map(|v| v * v).sum();
                    if n2 <= tol {
                        continue;
                    }
                    x.iter_mut().for_each(|v| *v /= n2.sqrt());
                    directions.push(x.clone());
                }
                chosen.push(i);
                let xv = ndarray::Array1::from(x);
                let ktx = kt.dot(&xv);
                let kttx = kt.t().dot(&xv);
                let lambda = xv.dot(&ktx);
                let outer = |u: &ndarray::Array1<f64>, v: &ndarray::Array1<f64>| {
                    Array2::from_shape_fn((m, m), |(r, c)| u[r] * v[c])
                };
                match params.deflation.family() {
                    Family::None => {}
                    Family::Hotelling => kt = &kt - &(outer(&xv, &xv) * lambda),
                    Family::Projection => kt = &kt - &outer(&xv, &kttx),
                    Family::Schur if lambda > 0.0 => kt = &kt - &(outer(&ktx, &kttx) / lambda),
                    Family::Schur => {}
                }
            }
        }
        chosen
    }

    /// Every scored criterion × deflation × stage count picks what explicit deflation picks.
    fn assert_selects_as_explicit(
        kernel: &Array2<f64>,
        positive: &[bool],
        params: &GreedyParams,
        label: &str,
    ) {
        let expected = explicit_select(kernel, positive, params);
        let actual = select(kernel.view(), positive, params).unwrap().indices;
        let GreedyParams {
            criterion,
            deflation,
            stages,
            ..
        } = params;
        assert_eq!(
            actual, expected,
            "{criterion:?} {deflation:?} S={stages} {label}"
        );
    }

    fn assert_matches_explicit(
        kernel: &Array2<f64>,
        positive: &[bool],
        k: usize,
        stage_counts: &[usize],
        label: &str,
    ) {
        let criteria: Vec<Criterion> = Criterion::ALL
            .iter()
            .map(|&(c, _)| c)
            .filter(|&c| c != Criterion::Random)
            .collect();
        let deflations: Vec<Deflation> = Deflation::ALL.iter().map(|&(d, _)| d).collect();
        let cases = (&criteria[..], &deflations[..], stage_counts);
        assert_cases_match_explicit(kernel, positive, k, cases, label);
    }

    /// Every criterion × deflation × stage count of `cases` selects as explicit deflation.
    fn assert_cases_match_explicit(
        kernel: &Array2<f64>,
        positive: &[bool],
        k: usize,
        (criteria, deflations, stage_counts): (&[Criterion], &[Deflation], &[usize]),
        label: &str,
    ) {
        for &criterion in criteria {
            for &deflation in deflations {
                for &stages in stage_counts {
                    let params = GreedyParams {
                        k,
                        criterion,
                        deflation,
                        stages,
                        n_threads: 2,
                        ..GreedyParams::default()
                    };
                    assert_selects_as_explicit(kernel, positive, &params, label);
                }
            }
        }
    }

    #[test]
    fn implicit_engine_matches_explicit_deflation() {
        for seed in 0..3 {
            let (kernel, positive) = problem(61 + 10 * seed as usize, 3, seed);
            assert_matches_explicit(&kernel, &positive, 15, &[1, 2, 5], &format!("seed={seed}"));
        }
    }

    /// The problem with the positive class first, as `GreedyKFDA.fit` orders its kernel.
    fn class_sorted_problem(m: usize, d: usize, seed: u64) -> (Array2<f64>, Vec<bool>) {
        let (kernel, positive) = problem(m, d, seed);
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by_key(|&i| !positive[i]);
        let sorted = Array2::from_shape_fn((m, m), |(i, j)| kernel[[order[i], order[j]]]);
        (sorted, order.iter().map(|&i| positive[i]).collect())
    }

    #[test]
    fn passes_split_by_class_match_explicit_deflation() {
        for seed in 0..2 {
            let (kernel, positive) = class_sorted_problem(203 + seed as usize, 3, seed);
            let data = kernel.as_slice().unwrap();
            let engine = Engine::new(data, kernel.nrows(), &positive, 1e-9, 1).unwrap();
            assert!(
                engine.class_groups.is_some(),
                "two runs of labels split the passes"
            );
            assert_matches_explicit(
                &kernel,
                &positive,
                12,
                &[1, 4],
                &format!("class-sorted seed={seed}"),
            );
        }
    }

    /// The `pseudo` criterion's parameters, on two threads.
    fn pseudo_params(k: usize, deflation: Deflation, stages: usize) -> GreedyParams {
        GreedyParams {
            k,
            criterion: Criterion::Pseudo,
            deflation,
            stages,
            n_threads: 2,
            ..GreedyParams::default()
        }
    }

    #[test]
    fn a_last_stage_that_skips_a_pick_is_done_again_from_the_whole_pass() {
        // The projection family's last stage reads only its picks' rows; a copy of the best
        // point, picked with it and then explained by it, leaves the stage one short.
        let (kernel, positive) = class_sorted_problem(150, 3, 5);
        let best = select(
            kernel.view(),
            &positive,
            &pseudo_params(1, Deflation::None, 1),
        )
        .unwrap()
        .indices[0];
        let order: Vec<usize> = (0..kernel.nrows())
            .flat_map(|i| vec![i; 1 + usize::from(i == best)])
            .collect();
        let kernel = Array2::from_shape_fn((order.len(), order.len()), |(a, b)| {
            kernel[[order[a], order[b]]]
        });
        let positive: Vec<bool> = order.iter().map(|&i| positive[i]).collect();
        // A stage of 8 reads full rows on any CPU, so its last stage takes the shortcut (a
        // stage of 4 reads the triangle on AVX-512, and takes its pass there).
        let cases = [Deflation::Projection, Deflation::OrthoProjection]
            .into_iter()
            .flat_map(|deflation| [(deflation, 4), (deflation, 8)]);
        for (deflation, k) in cases {
            let params = pseudo_params(k, deflation, k);
            let selection = select(kernel.view(), &positive, &params).unwrap();
            assert!(selection.indices.contains(&best), "{deflation:?}");
            assert!(!selection.indices.contains(&(best + 1)), "{deflation:?}");
            assert_eq!(selection.indices.len(), k);
            // The statistics, the stage's whole pass, and a stage of one pick.
            assert_eq!(selection.kernel_passes, 3, "{deflation:?}");
            assert_selects_as_explicit(&kernel, &positive, &params, "a copy of the best point");
        }
    }

    #[test]
    fn stage_products_with_many_terms_match_explicit_deflation() {
        // Enough picks that a stage-1 pick's products with the earlier terms leave the
        // serial path (terms × m ≥ PARALLEL_WORK) for the sweep split by class.
        let (kernel, positive) = class_sorted_problem(520, 5, 3);
        let k = 150;
        assert!((k - 10) * kernel.nrows() >= PARALLEL_WORK);
        // Hotelling at stages 10 fails here with a 0.1 % error in the products with the
        // earlier terms.
        let deflations = [
            Deflation::Hotelling,
            Deflation::Projection,
            Deflation::OrthoHotelling,
            Deflation::OrthoProjection,
        ];
        let cases = (
            &[Criterion::Optimal, Criterion::Pseudo][..],
            &deflations[..],
            &[1, 10][..],
        );
        assert_cases_match_explicit(&kernel, &positive, k, cases, "many terms");
    }

    #[test]
    fn passes_over_the_kernel_are_one_per_stage_or_two_per_schur_pick() {
        let count = |(kernel, positive): &(Array2<f64>, Vec<bool>), deflation, stages| {
            let params = GreedyParams {
                k: 20,
                deflation,
                stages,
                ..GreedyParams::default()
            };
            select(kernel.view(), positive, &params)
                .unwrap()
                .kernel_passes
        };
        let mixed = problem(90, 3, 7);
        assert_eq!(count(&mixed, Deflation::Projection, 1), 1 + 20);
        assert_eq!(count(&mixed, Deflation::Projection, 5), 1 + 4);
        assert_eq!(count(&mixed, Deflation::OrthoHotelling, 10), 1 + 2);
        // Schur: two passes a pick, the last pick's second one skipped (it would only serve
        // a next stage), less one for each pick whose product came ahead with the previous
        // pick's `h` (a stage's first pick, when it is among the candidates multiplied).
        let schur = |deflation, stages, picks_per_stage: usize| {
            let passes = count(&mixed, deflation, stages);
            let stages_taken = 20 / picks_per_stage;
            let without = 1 + stages_taken * (picks_per_stage + 1) - 1;
            assert!(
                passes <= without && passes >= without - (stages_taken - 1),
                "{deflation:?} S={stages}: {passes}"
            );
            without - passes
        };
        assert!(schur(Deflation::Schur, 1, 1) > 0, "no product came ahead");
        schur(Deflation::Schur, 5, 5);
        schur(Deflation::OrthoSchur, 10, 10);
        assert_eq!(count(&mixed, Deflation::None, 1), 1);
        // With the classes contiguous, the projection family's last stage of three or more
        // picks reads only its picks' rows, where its pass would read full rows (a stage
        // of 5 reads the upper triangle on AVX-512: there the last stage takes its pass).
        let sorted = class_sorted_problem(150, 3, 7);
        let last_stage_read = usize::from(passes::reads_triangle(150, 5));
        assert_eq!(
            count(&sorted, Deflation::Projection, 5),
            1 + 4 - 1 + last_stage_read
        );
        assert_eq!(count(&sorted, Deflation::OrthoProjection, 10), 1 + 2 - 1);
        assert_eq!(count(&sorted, Deflation::Projection, 2), 1 + 10);
        assert_eq!(count(&sorted, Deflation::Hotelling, 5), 1 + 4);
    }

    #[test]
    fn schur_picks_ranked_without_d_take_one_pass_and_stop_as_explicit_deflation() {
        // `pseudo` and `random` rank without `d`: one pass a schur pick, none for `h`.
        let (kernel, positive) = problem(90, 3, 7);
        for (deflation, stages) in [
            (Deflation::Schur, 1),
            (Deflation::Schur, 5),
            (Deflation::OrthoSchur, 10),
        ] {
            let params = pseudo_params(20, deflation, stages);
            let selection = select(kernel.view(), &positive, &params).unwrap();
            assert_eq!(selection.kernel_passes, 1 + 20, "{deflation:?} S={stages}");
            assert_eq!(
                selection.indices,
                explicit_select(&kernel, &positive, &params),
                "{deflation:?} S={stages}"
            );
            let random = GreedyParams {
                criterion: Criterion::Random,
                ..params.clone()
            };
            assert_eq!(
                select(kernel.view(), &positive, &random)
                    .unwrap()
                    .kernel_passes,
                1 + 20
            );
        }
        // A kernel of rank 3: after three picks every column is explained, and the checks
        // one by one find no admissible candidate, as explicit deflation finds none.
        let x = Array2::from_shape_fn((60, 3), |(i, j)| ((i * 7 + j * 13) % 11) as f64 - 5.0);
        let kernel = x.dot(&x.t());
        let positive: Vec<bool> = (0..60).map(|i| i % 3 == 0).collect();
        for deflation in [Deflation::Schur, Deflation::OrthoSchur] {
            for stages in [1, 2] {
                let params = pseudo_params(10, deflation, stages);
                let selection = select(kernel.view(), &positive, &params).unwrap();
                assert!(selection.stopped_early, "{deflation:?} S={stages}");
                assert!(selection.indices.len() <= 3, "{deflation:?} S={stages}");
                assert_eq!(
                    selection.indices,
                    explicit_select(&kernel, &positive, &params),
                    "{deflation:?} S={stages}"
                );
            }
        }
    }

    #[test]
    fn f32_and_f64_choose_the_same_bases_on_a_well_conditioned_problem() {
        let (kernel, positive) = problem(80, 3, 11);
        let kernel32 = kernel.mapv(|v| v as f32);
        for &(deflation, name) in &Deflation::ALL {
            let params = GreedyParams {
                k: 8,
                deflation,
                ..GreedyParams::default()
            };
            let a = select(kernel.view(), &positive, &params).unwrap().indices;
            let b = select(kernel32.view(), &positive, &params).unwrap().indices;
            assert_eq!(a, b, "{name}");
        }
    }

    #[test]
    fn column_major_kernels_are_read_as_their_transpose() {
        let (kernel, positive) = problem(50, 2, 3);
        let fortran = kernel.t().as_standard_layout().into_owned().reversed_axes();
        assert!(fortran.as_slice().is_none());
        let params = GreedyParams {
            k: 10,
            ..GreedyParams::default()
        };
        assert_eq!(
            select(fortran.view(), &positive, &params).unwrap(),
            select(kernel.view(), &positive, &params).unwrap()
        );
    }

    /// A kernel ordered by class and the one-vs-rest labels of its `classes` classes.
    fn one_vs_rest_problem(m: usize, classes: usize, seed: u64) -> (Array2<f64>, Vec<Vec<bool>>) {
        let mut uniform = uniform_stream(seed.wrapping_add(11));
        let x = Array2::from_shape_fn((m, 3), |_| 2.0 * uniform() - 1.0);
        // Class c: the angle of (x0, x1) in the c-th of `classes` sectors, blurred by x2.
        let class_of = |i: usize| {
            let angle = x[[i, 1]].atan2(x[[i, 0]]) + 0.4 * x[[i, 2]] + std::f64::consts::PI;
            ((angle / std::f64::consts::TAU * classes as f64) as usize) % classes
        };
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by_key(|&i| class_of(i));
        let sorted = x.select(ndarray::Axis(0), &order);
        let labels = (0..classes)
            .map(|c| order.iter().map(|&i| class_of(i) == c).collect())
            .collect();
        (
            gram(sorted.view(), &Kernel::Rbf { gamma: 1.5 }, 1).unwrap(),
            labels,
        )
    }

    fn problems_of<'l>(
        labels: &'l [Vec<bool>],
        params: &GreedyParams,
    ) -> Vec<(&'l [bool], GreedyParams)> {
        labels
            .iter()
            .map(|positive| (positive.as_slice(), params.clone()))
            .collect()
    }

    /// [`select_many`] sharing passes whatever the kernel's size (the tests' are small).
    fn shared_many(
        kernel: ArrayView2<f64>,
        problems: &[(&[bool], GreedyParams)],
    ) -> Result<Vec<Selection>> {
        select_many_sharing_from(kernel, problems, &AtomicBool::new(false), 0)
    }

    #[test]
    fn shared_selections_pick_as_explicit_deflation_whatever_their_company_and_threads() {
        let (kernel, labels) = one_vs_rest_problem(240, 4, 3);
        let shared = [
            (Deflation::Schur, 1),
            (Deflation::Schur, 3),
            (Deflation::OrthoSchur, 1),
            (Deflation::OrthoSchur, 3),
            (Deflation::Hotelling, 1),
            (Deflation::Projection, 1),
            (Deflation::OrthoHotelling, 1),
            (Deflation::OrthoProjection, 1),
        ];
        for (deflation, stages) in shared {
            {
                for criterion in [Criterion::Optimal, Criterion::Pseudo] {
                    let params = GreedyParams {
                        k: 15,
                        criterion,
                        deflation,
                        stages,
                        ..GreedyParams::default()
                    };
                    let label = format!("{deflation:?} {criterion:?} S={stages}");
                    let together =
                        shared_many(kernel.view(), &problems_of(&labels, &params)).unwrap();
                    assert_eq!(together.len(), labels.len());
                    for (c, selection) in together.iter().enumerate() {
                        let expected = explicit_select(&kernel, &labels[c], &params);
                        assert_eq!(selection.indices, expected, "{label}, class {c}");
                        // Alone, or on two threads: the same selection, bit for bit.
                        let alone =
                            shared_many(kernel.view(), &problems_of(&labels[c..=c], &params));
                        assert_eq!(alone.unwrap()[0], *selection, "{label}, class {c} alone");
                        let two_threads = GreedyParams {
                            n_threads: 2,
                            ..params.clone()
                        };
                        let solo = select(kernel.view(), &labels[c], &params).unwrap();
                        // Alone, a schur selection that keeps `d` multiplies its next
                        // candidates ahead and may save passes; beside others it does not.
                        let speculates = params.deflation.family() == Family::Schur
                            && !params.criterion.checks_candidates_one_by_one();
                        if speculates {
                            assert!(solo.kernel_passes <= selection.kernel_passes, "{label}");
                        } else {
                            assert_eq!(selection.kernel_passes, solo.kernel_passes, "{label}");
                        }
                        let threaded =
                            shared_many(kernel.view(), &problems_of(&labels[c..=c], &two_threads));
                        assert_eq!(threaded.unwrap()[0], *selection, "{label}, class {c}");
                    }
                }
            }
        }
    }

    #[test]
    fn shared_selections_come_back_in_order_in_groups_and_beside_unshared_ones() {
        // More problems than share one pass (12), with other deflations among them, and
        // some whose terms fill more than half the kernel's memory (groups of their own).
        let (kernel, labels) = one_vs_rest_problem(150, 3, 8);
        let deflations = [
            Deflation::Schur,
            Deflation::Hotelling,
            Deflation::OrthoSchur,
            Deflation::Projection,
            Deflation::None,
        ];
        let problems: Vec<(&[bool], GreedyParams)> = (0..24)
            .map(|c| {
                let (deflation, stages) = if c < 14 {
                    (Deflation::Schur, 1)
                } else {
                    (deflations[c % 5], 1 + c % 2)
                };
                let params = GreedyParams {
                    // 2·60 terms of 150 values: 0.8 of the kernel's 150² values.
                    k: if c % 7 == 3 { 60 } else { 4 + c % 5 },
                    deflation,
                    stages,
                    ..GreedyParams::default()
                };
                (labels[c % 3].as_slice(), params)
            })
            .collect();
        let together = shared_many(kernel.view(), &problems).unwrap();
        assert_eq!(together.len(), problems.len());
        for (c, ((positive, params), selection)) in problems.iter().zip(&together).enumerate() {
            assert_eq!(selection.indices.len(), params.k, "problem {c}");
            if shares_passes(params) {
                let alone = shared_many(kernel.view(), &problems[c..=c]).unwrap();
                assert_eq!(alone[0], *selection, "problem {c}");
            } else {
                let solo = select(kernel.view(), positive, params).unwrap();
                assert_eq!(solo, *selection, "problem {c}");
            }
        }
        assert_eq!(select_many::<f64>(kernel.view(), &[]), Ok(Vec::new()));
        // The random criterion, each problem with its own order: the picks `select` makes.
        let random: Vec<(&[bool], GreedyParams)> = (0..3)
            .map(|c| {
                let params = GreedyParams {
                    k: 9,
                    criterion: Criterion::Random,
                    random_order: Some(random_order(kernel.nrows(), c as u64)),
                    ..GreedyParams::default()
                };
                (labels[c].as_slice(), params)
            })
            .collect();
        for ((positive, params), selection) in random
            .iter()
            .zip(shared_many(kernel.view(), &random).unwrap())
        {
            let solo = select(kernel.view(), positive, params).unwrap();
            assert_eq!(selection.indices, solo.indices);
        }
    }

    #[test]
    fn shared_selections_stop_on_request_and_name_a_bad_argument() {
        let (kernel, labels) = one_vs_rest_problem(120, 3, 2);
        let params = GreedyParams {
            k: 10,
            ..GreedyParams::default()
        };
        let problems = problems_of(&labels, &params);
        let raised = AtomicBool::new(true);
        for shared_from_bytes in [0, usize::MAX] {
            assert_eq!(
                select_many_sharing_from(kernel.view(), &problems, &raised, shared_from_bytes),
                Err(Error::Interrupted)
            );
        }
        // A kernel too small to share its passes: each problem as `select` alone, bit for bit.
        let small = select_many(kernel.view(), &problems).unwrap();
        for ((positive, params), selection) in problems.iter().zip(&small) {
            assert_eq!(*selection, select(kernel.view(), positive, params).unwrap());
        }
        let mut bad = problems.clone();
        bad[2].1.k = 0;
        let error = select_many(kernel.view(), &bad).unwrap_err();
        assert!(error.to_string().starts_with("k: "), "{error}");
        let mut bad = problems.clone();
        bad[1].1.criterion = Criterion::Random;
        bad[1].1.random_order = Some(vec![0; kernel.nrows()]);
        let error = select_many(kernel.view(), &bad).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("random_order: problem 1: must be a permutation"),
            "{error}"
        );
        let mut mixed = problems.clone();
        mixed[1].1.n_threads = 2;
        let error = select_many(kernel.view(), &mixed).unwrap_err();
        assert!(error.to_string().starts_with("n_jobs: "), "{error}");
        let nan = kernel.mapv(|v| if v < 0.3 { f64::NAN } else { v });
        for shared_from_bytes in [0, usize::MAX] {
            let stop = AtomicBool::new(false);
            let error = select_many_sharing_from(nan.view(), &problems, &stop, shared_from_bytes);
            assert!(error.unwrap_err().to_string().starts_with("K: "));
        }
    }

    #[test]
    fn a_raised_stop_flag_ends_the_selection_and_a_lowered_one_changes_nothing() {
        let (kernel, positive) = class_sorted_problem(120, 3, 5);
        for &(deflation, name) in &Deflation::ALL {
            for stages in [1, 4] {
                let params = GreedyParams {
                    k: 12,
                    deflation,
                    stages,
                    ..GreedyParams::default()
                };
                let raised = AtomicBool::new(true);
                assert_eq!(
                    select_with_stop(kernel.view(), &positive, &params, &raised),
                    Err(Error::Interrupted),
                    "{name}, stages {stages}"
                );
                let lowered = AtomicBool::new(false);
                assert_eq!(
                    select_with_stop(kernel.view(), &positive, &params, &lowered),
                    select(kernel.view(), &positive, &params),
                    "{name}, stages {stages}"
                );
            }
        }
    }

    #[test]
    fn a_schur_stage_stops_between_its_picks() {
        // One stage of every pick: only the check before each schur pick can see the flag,
        // raised while the stage runs (its 2 × 400 passes and their sweeps over up to 400
        // terms take far longer than 20 ms; 30 features: no pick is numerically explained).
        let (kernel, positive) = class_sorted_problem(400, 30, 9);
        let params = GreedyParams {
            k: 400,
            deflation: Deflation::Schur,
            stages: 400,
            ..GreedyParams::default()
        };
        let stop = AtomicBool::new(false);
        let result = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                stop.store(true, Ordering::Relaxed);
            });
            select_with_stop(kernel.view(), &positive, &params, &stop)
        });
        assert_eq!(result, Err(Error::Interrupted));
    }

    #[test]
    fn invalid_parameters_name_the_argument() {
        let (kernel, positive) = problem(20, 2, 1);
        let run = |params: GreedyParams, positive: &[bool]| {
            select(kernel.view(), positive, &params).unwrap_err()
        };
        let argument = |e: Error| match e {
            Error::InvalidArgument { argument, .. } => argument,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(
            argument(run(
                GreedyParams {
                    k: 0,
                    ..Default::default()
                },
                &positive
            )),
            "k"
        );
        assert_eq!(
            argument(run(
                GreedyParams {
                    k: 21,
                    ..Default::default()
                },
                &positive
            )),
            "k"
        );
        assert_eq!(
            argument(run(
                GreedyParams {
                    stages: 0,
                    ..Default::default()
                },
                &positive
            )),
            "stages"
        );
        assert_eq!(argument(run(GreedyParams::default(), &positive[..5])), "y");
        assert_eq!(argument(run(GreedyParams::default(), &[true; 20])), "y");
        let bad_order = GreedyParams {
            criterion: Criterion::Random,
            random_order: Some(vec![0; 20]),
            ..Default::default()
        };
        assert_eq!(argument(run(bad_order, &positive)), "random_order");
        let stray_order = GreedyParams {
            random_order: Some((0..20).collect()),
            ..Default::default()
        };
        assert_eq!(argument(run(stray_order, &positive)), "random_order");
        let no_threads = GreedyParams {
            n_threads: 0,
            ..Default::default()
        };
        assert_eq!(argument(run(no_threads, &positive)), "n_jobs");
        let mut poisoned = kernel.clone();
        poisoned[[3, 4]] = f64::NAN;
        let poisoned_error = select(poisoned.view(), &positive, &GreedyParams::default());
        assert_eq!(argument(poisoned_error.unwrap_err()), "K");
        assert_eq!(
            argument("best".parse::<Criterion>().unwrap_err()),
            "criterion"
        );
        assert_eq!(
            argument("qr".parse::<Deflation>().unwrap_err()),
            "deflation"
        );
        let rectangular = Array2::<f64>::zeros((3, 4));
        assert_eq!(
            argument(
                select(rectangular.view(), &positive[..3], &GreedyParams::default()).unwrap_err()
            ),
            "K"
        );
    }

    #[test]
    fn axpy_all_rounds_as_repeated_axpy() {
        for terms in 0..11 {
            for n in [0usize, 1, 7, 33] {
                let value = |a: usize, b: usize| ((a * 7 + b * 3) % 23) as f64 / 7.0 - 1.3;
                let xs: Vec<Vec<f64>> = (0..terms)
                    .map(|q| (0..n).map(|l| value(q, l)).collect())
                    .collect();
                let factors: Vec<f64> = (0..terms).map(|q| value(q + 5, 1) * 1.1).collect();
                let mut expected: Vec<f64> = (0..n).map(|l| value(2, l)).collect();
                let mut fused = expected.clone();
                for (&factor, x) in factors.iter().zip(&xs) {
                    axpy(&mut expected, factor, x);
                }
                let refs: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
                axpy_all(&mut fused, &factors, &refs);
                assert_eq!(fused, expected, "{terms} terms, n = {n}");
            }
        }
    }

    #[test]
    fn random_order_is_a_seeded_permutation() {
        let a = random_order(100, 5);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_eq!(a, random_order(100, 5));
        assert_ne!(a, random_order(100, 6));
    }

    #[test]
    fn public_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<GreedyParams>();
        check::<Selection>();
        check::<Kernel>();
        check::<Error>();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_problem_gives_distinct_in_range_indices_without_panicking(
            m in 2usize..40, seed in 0u64..1000, k_frac in 0.0f64..1.0, stages in 1usize..6,
            criterion in 0usize..5, deflation in 0usize..7, duplicate in proptest::bool::ANY,
        ) {
            let (mut kernel, mut positive) = problem(m, 2, seed);
            positive[0] = true;
            positive[m - 1] = false;
            if duplicate && m > 2 {
                // Two identical points: degenerate columns must be skipped, not crash.
                let row = kernel.row(0).to_owned();
                kernel.row_mut(1).assign(&row);
                let column = kernel.column(0).to_owned();
                kernel.column_mut(1).assign(&column);
            }
            let k = 1 + ((m - 1) as f64 * k_frac) as usize;
            let params = GreedyParams {
                k, stages, criterion: Criterion::ALL[criterion].0, deflation: Deflation::ALL[deflation].0,
                seed, ..GreedyParams::default()
            };
            let selection = select(kernel.view(), &positive, &params).unwrap();
            let mut seen = vec![false; m];
            prop_assert!(selection.indices.len() <= k);
            for &i in &selection.indices {
                prop_assert!(i < m && !std::mem::replace(&mut seen[i], true));
            }
        }
    }
}
