//! A stage of the hotelling and projection families: its picks share one pass over `K_0`,
//! each direction carried with its products (`Tracked`).

use super::engine::{axpy_all, dot, stacked, Engine};
use crate::params::{Directions, Family};
use crate::passes;
use crate::real::Real;
use crate::tuning::PARALLEL_WORK;

/// A vector carried with its products `K_0 x` and `K_0 D x`, and with its products
/// with the stage-start deflation terms (`U_0'x`, `U_0'Dx` and, for family, `V_0'x`,
/// one after the other), so that combinations of tracked vectors need no further read of
/// `K_0`, `U_0` or `V_0`. A part is empty when not tracked.
#[derive(Clone)]
pub(super) struct Tracked<F> {
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
pub(super) struct StageTerm<F> {
    /// The pick's direction `x`, with its products.
    direction: Tracked<F>,
    /// `U_0'x` and `U_0'Dx`.
    start_x: Vec<F>,
    start_dx: Vec<F>,
    /// `u_q'x` and `u_q'Dx` for the stage's earlier terms `q`.
    earlier_x: Vec<F>,
    earlier_dx: Vec<F>,
    /// `λ = x'K_t x` for family, 1 for projection.
    lambda: F,
}

/// Per direction of a stage: `K_0 x`, `K_0 D x` and its stage-start products.
type StageProducts<F> = (Vec<Vec<F>>, Vec<Vec<F>>, Vec<Vec<F>>);

impl<'a, F: Real> Engine<'a, F> {
    /// One stage of the hotelling/projection families: one read of `K_0` for all its
    /// picks, one sweep over `U_0` for their products with the stage-start terms, one
    /// sweep over `V_0` at the end for every pick's `v` and `h`; the `ortho-*` forms add
    /// two sweeps over the earlier directions, for a block Gram–Schmidt of the stage's
    /// columns before the pass.
    pub(super) fn fused_stage(
        &mut self,
        picks: &[usize],
        family: Family,
        directions: Directions,
        one_per_stage: bool,
        tol: f64,
        chosen: &mut Vec<usize>,
    ) {
        if directions.orthogonalised() && one_per_stage {
            // A lone pick's direction is known before the pass, so the pass multiplies
            // the direction itself and Gram–Schmidt need not carry products along.
            let column = self.columns(picks).remove(0);
            let Some(x) = self.direction(column, Some(self.ortho_basis(family)), tol) else {
                return;
            };
            let (mut k0x, mut k0dx, mut start) = self.stage_products(&[&x], family);
            let x = Tracked {
                x,
                k0x: k0x.remove(0),
                k0dx: k0dx.remove(0),
                stage_start: start.remove(0),
            };
            chosen.push(picks[0]);
            if chosen.len() < self.target {
                let term = self.stage_term(x, &[], family);
                self.finish_stage(vec![term], family);
            }
            return;
        }
        let columns = self.columns(picks);
        // For `ortho-*`: the columns without their parts along the earlier directions
        // (`columns` keeps them, for the thresholds and the norms of `τ`).
        let orthogonalised = directions.orthogonalised().then(|| {
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
                    picks, &columns, multiplied, products, true, family, directions, tol, chosen,
                );
                if chosen.len() == self.target {
                    return;
                }
                chosen.truncate(chosen_before);
            }
        }
        let products = self.stage_products(&rhs, family);
        let terms = self.stage_terms(
            picks, &columns, multiplied, products, false, family, directions, tol, chosen,
        );
        if chosen.len() < self.target {
            self.finish_stage(terms, family);
        }
    }

    /// The `ortho-*` direction of a stage's pick from its column `c` (deflated by the
    /// stage's earlier terms) with its part along the directions from before the stage
    /// already removed, in one block for the whole stage (`column`, tracked): classical
    /// Gram–Schmidt against the stage's earlier directions finishes `q = (I − QQ')τ`,
    /// `τ = c/‖c‖`, on tracked vectors, so no pick sweeps the earlier directions.
    pub(super) fn stage_direction(
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

    /// A stage's products for its directions `xs`: `K_0 x`, `K_0 D x` and the stage-start
    /// products `[U_0'x | U_0'Dx | V_0'x (family)]` of each. With the classes contiguous,
    /// in one call: the pass splits by class and reads the earlier terms as extra rows, so
    /// that `W'x` and `W'Dx` come from one multiply-add per element as `K_0 x` and
    /// `K_0 D x` do, and for hotelling `U_0 = V_0 Λ` gives `U_0'x` and `U_0'Dx` from `V_0`.
    pub(super) fn stage_products(&mut self, xs: &[&[F]], family: Family) -> StageProducts<F> {
        let basis = if family == Family::Hotelling {
            &self.vs
        } else {
            &self.us
        };
        // A narrow pass reads the terms in a sweep of its own, not worth the threads when
        // small; a wide one reads them with its packed blocks at no extra cost.
        let small_sweep = xs.len() <= 2 && basis.len() * self.m < PARALLEL_WORK;
        let dense = self.kernel.dense().zip(self.class_groups.as_ref());
        let Some((kernel, groups)) = dense.filter(|_| !small_sweep) else {
            let (k0x, k0dx) = self.products_with_weighted(xs);
            return (k0x, k0dx, self.stage_start_products(xs, family));
        };
        self.passes += 1;
        let (by_class_k, by_class_basis) = passes::multiply_groups_with_rows(
            &self.pool,
            kernel,
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
            self.stage_start_from_basis(by_class_basis, family),
        )
    }

    /// The stage-start products `[U_0'x | U_0'Dx | V_0'x (family)]` of each `x` from
    /// the products of the basis (`V_0` for family, else `U_0`) split by class.
    pub(super) fn stage_start_from_basis(
        &self,
        by_class_basis: Vec<Vec<Vec<F>>>,
        family: Family,
    ) -> Vec<Vec<F>> {
        let (basis_x, basis_dx) = self.plain_and_weighted(by_class_basis);
        basis_x
            .iter()
            .zip(&basis_dx)
            .map(|(bx, bdx)| self.stage_start(bx, bdx, family))
            .collect()
    }

    /// `[U_0'x | U_0'Dx | V_0'x (family)]` from the basis' `B'x` and `B'Dx` (`B = V_0`
    /// for family, whose `U_0 = V_0 Λ`; else `U_0`).
    pub(super) fn stage_start(&self, bx: &[F], bdx: &[F], family: Family) -> Vec<F> {
        if family != Family::Hotelling {
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
    pub(super) fn stage_products_at_picks(
        &mut self,
        picks: &[usize],
        xs: &[&[F]],
    ) -> Option<StageProducts<F>> {
        let full_rows = xs.len() >= 3 && !passes::reads_triangle(self.m, xs.len());
        let kernel = self.kernel.dense()?;
        let groups = self.class_groups.as_ref().filter(|_| full_rows)?;
        let (by_class_picks, by_class_basis) = passes::multiply_groups_at_rows(
            &self.pool,
            kernel,
            self.m,
            picks,
            &self.us,
            xs,
            groups,
            &mut self.workspace,
        );
        let (k0x, _) = self.plain_and_weighted(by_class_picks);
        let start = self.stage_start_from_basis(by_class_basis, Family::Projection);
        Some((k0x, vec![Vec::new(); xs.len()], start))
    }

    /// The stage's picks in order, from its columns (`columns`, and `multiplied` the
    /// directions its products were taken of) and their products: each pick's column
    /// deflated by the stage's earlier terms, skipped if numerically explained, else its
    /// term. `at_picks`: `K_0 x` is known only at the picks' rows, in their order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stage_terms(
        &mut self,
        picks: &[usize],
        columns: &[Vec<F>],
        multiplied: &[Vec<F>],
        (k0_columns, k0_weighted, start_products): StageProducts<F>,
        at_picks: bool,
        family: Family,
        directions: Directions,
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
                .zip(self.stage_v_at(&terms, i, row, family))
                .map(|(term, v_at_i)| -(v_at_i * term.lambda))
                .collect();
            column.add_all_scaled(&factors, terms.iter().map(|term| &term.direction));
            let mut whole = directions.orthogonalised().then(|| columns[s].clone());
            if let Some(whole) = whole.as_mut() {
                let directions: Vec<&[F]> =
                    terms.iter().map(|term| &term.direction.x[..]).collect();
                axpy_all(whole, &factors, &directions);
            }
            let deflated = whole.as_ref().unwrap_or(&column.x);
            if s > 0 && self.weighted_norm2(deflated) <= self.threshold[i] {
                continue;
            }
            let direction = if directions.orthogonalised() {
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
            let term = self.stage_term(x, &terms, family);
            terms.push(term);
        }
        terms
    }

    /// `[U_0'x | U_0'Dx | V_0'x (family)]` for each `x`: one sweep over `U_0` (over
    /// `V_0` for family, with `U_0 = V_0 Λ`).
    pub(super) fn stage_start_products(&self, xs: &[&[F]], family: Family) -> Vec<Vec<F>> {
        let weighted: Vec<Vec<F>> = xs.iter().map(|x| self.weighted(x)).collect();
        let rhs = stacked(xs, &weighted);
        let basis = if family == Family::Hotelling {
            &self.vs
        } else {
            &self.us
        };
        let products = self.dots_with(basis, &rhs);
        (0..xs.len())
            .map(|s| self.stage_start(&products[s], &products[xs.len() + s], family))
            .collect()
    }

    /// `v_q[i]` for the stage's terms so far (`v_q = x_q` for hotelling; for projection
    /// `v_q = K_0 x_q − V_0 (U_0'x_q) − Σ_{p<q} v_p (u_p'x_q)`, with the multiply-adds in
    /// the order of [`Engine::finish_stage`], so the value is the one it will store), with
    /// `K_0 x_q` read at `row` (`i`, or the pick's place when only the picks' rows are known).
    pub(super) fn stage_v_at(
        &self,
        terms: &[StageTerm<F>],
        i: usize,
        row: usize,
        family: Family,
    ) -> Vec<F> {
        let mut values: Vec<F> = Vec::with_capacity(terms.len());
        for term in terms {
            let value = if family == Family::Hotelling {
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
    pub(super) fn stage_term(
        &self,
        x: Tracked<F>,
        earlier: &[StageTerm<F>],
        family: Family,
    ) -> StageTerm<F> {
        let t0 = self.vs.len();
        let dx = self.weighted(&x.x);
        let start = if x.stage_start.is_empty() {
            self.stage_start_products(&[&x.x], family).remove(0)
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
        let lambda = if family == Family::Hotelling {
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
    pub(super) fn finish_stage(&mut self, mut terms: Vec<StageTerm<F>>, family: Family) {
        let n = terms.len();
        // The products become `v` and `h` in place: the terms need them no more.
        let mut outs: Vec<Vec<F>> = Vec::with_capacity(2 * n);
        if family != Family::Hotelling {
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
        if family != Family::Hotelling {
            coefficients.extend(terms.iter().map(|term| &term.start_x[..]));
        }
        coefficients.extend(terms.iter().map(|term| &term.start_dx[..]));
        self.subtract_combinations(&mut outs, &self.vs, &coefficients);
        let mut hs = outs.split_off(outs.len() - n);
        let mut vs = if family == Family::Hotelling {
            terms
                .iter_mut()
                .map(|term| std::mem::take(&mut term.direction.x))
                .collect()
        } else {
            outs
        };
        for (s, term) in terms.iter().enumerate() {
            let (earlier, rest) = vs.split_at_mut(s);
            if family != Family::Hotelling {
                self.subtract_combinations(&mut rest[..1], earlier, &[&term.earlier_x[..]]);
            }
            self.subtract_combinations(&mut hs[s..s + 1], earlier, &[&term.earlier_dx[..]]);
        }
        for ((term, v), mut h) in terms.into_iter().zip(vs).zip(hs) {
            h.iter_mut().for_each(|value| *value = term.lambda * *value);
            if family == Family::Hotelling {
                let u: Vec<F> = v.iter().map(|&value| value * term.lambda).collect();
                self.update_statistics(&u, &v, &h);
            } else {
                let u = term.direction.x;
                self.update_statistics(&u, &v, &h);
                let u = self.kept(u);
                self.us.push(u);
            }
            let v = self.kept(v);
            self.vs.push(v);
            self.lambdas.push(term.lambda);
        }
    }
}
