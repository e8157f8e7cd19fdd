//! Scores and the choice of candidates: the best admissible columns, ties to the lowest
//! index.

use super::engine::Engine;
use crate::params::Criterion;
use crate::real::Real;

impl<'a, F: Real> Engine<'a, F> {
    /// The `take` best admissible candidates (higher score is better), best first, ties
    /// to the lowest index.
    pub(super) fn ranked_candidates(
        &self,
        criterion: Criterion,
        blocked: &[bool],
        rank: &[usize],
        take: usize,
    ) -> Vec<usize> {
        let mut scored: Vec<(F, usize)> = Vec::new();
        // Two classes: each candidate's terms on their own, in the binary criterion's
        // expressions (so its picks to the last bit); more: every column's, class by class.
        let two_class = match (&self.sums[..], &self.scatter_weights[..]) {
            ([n, p], &[beta, alpha]) => Some((p, n, alpha, beta)),
            _ => None,
        };
        let class_terms = two_class.is_none().then(|| self.class_fisher_terms());
        for i in 0..self.m {
            if blocked[i] || (self.tracks_d && self.d[i] <= self.threshold[i]) {
                continue;
            }
            let (numerator, denominator) = match (two_class, &class_terms) {
                (Some((p, n, alpha, beta)), _) => {
                    let (p, n) = (p[i], n[i]);
                    let a = p - n;
                    (a * a, self.d[i] - alpha * p * p - beta * n * n)
                }
                (None, Some((numerators, denominators))) => (numerators[i], denominators[i]),
                (None, None) => unreachable!("the terms of more than two classes are formed"),
            };
            let place = rank.get(i).copied().unwrap_or(0);
            if let Some(score) = criterion.score(numerator, denominator, self.threshold[i], place) {
                scored.push((score, i));
            }
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

    /// The numerator `Σ_{c<c'} (s_c[i] − s_{c'}[i])²` and the denominator
    /// `d_i − Σ_c (w_c/m_c) s_c[i]²` of each column's Fisher score for more than two
    /// classes, `(numerators, denominators)` (two classes: `(p − n)²` and
    /// `d − αp² − βn²`, in [`Engine::ranked_candidates`]). The numerator as
    /// `C Σ_c (s_c − s̄)²`, the same sum of squared differences in O(C) (`s̄` the mean of the
    /// class sums), the denominator's terms subtracted from the last class down (as the
    /// two-class expression subtracts the positive class, code 1, first); class by class,
    /// each loop along contiguous vectors.
    pub(super) fn class_fisher_terms(&self) -> (Vec<F>, Vec<F>) {
        let n_classes = F::from_f64(self.sums.len() as f64);
        let mut mean = vec![F::zero(); self.m];
        for sum in &self.sums {
            mean.iter_mut().zip(sum).for_each(|(total, &s)| *total += s);
        }
        mean.iter_mut()
            .for_each(|total| *total = *total / n_classes);
        let mut spread = vec![F::zero(); self.m];
        let mut denominator = self.d.clone();
        for (sum, &scatter) in self.sums.iter().zip(&self.scatter_weights).rev() {
            let columns = spread.iter_mut().zip(&mut denominator).zip(sum).zip(&mean);
            for (((spread, denominator), &s), &mean) in columns {
                *spread += (s - mean) * (s - mean);
                *denominator -= scatter * s * s;
            }
        }
        spread
            .iter_mut()
            .for_each(|spread| *spread = n_classes * *spread);
        (spread, denominator)
    }

    /// [`Engine::ranked_candidates`](super::engine::Engine::ranked_candidates) without `d`: every unblocked candidate ranked by its
    /// score, then taken in that order while its own column `c` of `K_t` is not numerically
    /// explained (`c'Dc`, the `d` it would have, above its threshold), until `take` are
    /// found; the same candidates as with `d` kept. Returns them, best first, and the first
    /// one's column.
    pub(super) fn admissible_candidates(
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
}
