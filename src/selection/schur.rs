//! A stage of the schur family: two passes a pick (`K_t x`, then `h = K_t'Du`), the
//! second shared with the next pick's first, and the next pick's product taken ahead
//! with the last `h`.

use super::engine::{dot, Engine};
use crate::params::Directions;
use crate::real::Real;
use std::sync::atomic::{AtomicBool, Ordering};

/// A likely next schur pick multiplied ahead ([`Engine::finish_with_candidates`]): its
/// direction `x` and `v = K_t x`.
pub(super) struct Speculated<F> {
    pub(super) index: usize,
    pub(super) x: Vec<F>,
    pub(super) v: Vec<F>,
}

/// What is known of a schur stage's first pick before the stage: its column (checked by
/// [`Engine::admissible_candidates`]), or its direction and `K_t x` (multiplied ahead).
pub(super) enum FirstPick<F> {
    Column(Vec<F>),
    Product { x: Vec<F>, v: Vec<F> },
}

impl<'a, F: Real> Engine<'a, F> {
    /// The deferred update of `d` for the last recorded term, given its `h` (the schur
    /// family updates `p` and `n` when it records the term).
    pub(super) fn update_d_for_last(&mut self, h: &[F]) {
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
    pub(super) fn finish_with_candidates(
        &mut self,
        du: &[F],
        candidates: &[usize],
        directions: Directions,
        tol: f64,
    ) -> Vec<Speculated<F>> {
        let columns = if candidates.is_empty() {
            Vec::new()
        } else {
            self.columns(candidates)
        };
        let earlier = directions.orthogonalised().then_some(&self.ortho[..]);
        let mut multiplied: Vec<(usize, Vec<F>)> = Vec::with_capacity(candidates.len());
        for (&index, column) in candidates.iter().zip(columns) {
            if let Some(x) = self.direction(column, earlier, tol) {
                multiplied.push((index, x));
            }
        }
        let mut rhs: Vec<&[F]> = multiplied.iter().map(|(_, x)| &x[..]).collect();
        rhs.push(du);
        let mut products = self.deflated_products(&rhs, true);
        let h = products.pop().expect("the last product is h");
        self.update_d_for_last(&h);
        multiplied
            .into_iter()
            .zip(products)
            .map(|((index, x), v)| Speculated { index, x, v })
            .collect()
    }

    /// One stage of the schur family. Each pick needs `K_0 x` before its deflation and
    /// `K_0 D u` after it, and `u = K_t x/λ` leaves every span known in advance, so the
    /// picks cannot share one read as in the other families. But a stage's picks are
    /// fixed, so the second read of a pick is shared with the first read of the next:
    /// `S + 1` reads of `K_0` per stage. The pick's statistics update waits for its `h`;
    /// nothing in between reads the statistics (columns and directions use `U`, `V`).
    /// `first` is what is already known of the first pick. The last pick's `D u`, when a next
    /// stage needs its `h`, is returned for [`Engine::finish_with_candidates`].
    pub(super) fn schur_stage(
        &mut self,
        picks: &[usize],
        mut first: Option<FirstPick<F>>,
        directions: Directions,
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
                    if directions.orthogonalised() {
                        let kept = self.kept(x.clone());
                        self.ortho.push(kept);
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
                    let ortho_basis = directions.orthogonalised().then_some(&self.ortho[..]);
                    let Some(x) = self.direction(column, ortho_basis, tol) else {
                        continue;
                    };
                    if directions.orthogonalised() {
                        let kept = self.kept(x.clone());
                        self.ortho.push(kept);
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
            let (u, v) = (self.kept(u), self.kept(v));
            self.us.push(u);
            self.vs.push(v);
        }
        // The last term's `h` only serves the statistics of a next stage.
        pending.filter(|_| chosen.len() < self.target)
    }
}
