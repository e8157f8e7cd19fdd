//! The per-row half of the selection in the factor's coordinates ([`super::pspace`]): the
//! rows of `Φ` with their statistics, wherever the rows are held (all of them in memory, or
//! one chunk of them on a worker of a cluster). A round is one pass over the rows: every
//! term of the last stage applied to the statistics, then the best admissible candidates.
//!
//! Every value is a function of its row alone, or a sum over fixed blocks of rows added in
//! block order, so that nothing depends on the thread count or on how the rows are split
//! into chunks, except the order in which the chunks' moments are added (the driver adds
//! them in chunk order).

use crate::error::{try_zeroed, Error, Result};
use crate::kernel::{gram_lower, times_lower};
use crate::operator::fold_blocks;
use crate::params::Criterion;
use crate::real::Real;
use crate::tuning::FACTOR_BLOCK_ROWS;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// The sums over rows the driver needs once: `G = Φ'Φ`, `E = Φ'DΦ` (`D` the class weights
/// of the rows) and the class sums `σ_c = Φ'1_c`, all in `f64`, row-major `p×p` and `p`.
#[derive(Debug, Clone, PartialEq)]
pub struct Moments {
    pub p: usize,
    pub gram: Vec<f64>,
    pub weighted: Vec<f64>,
    pub class_sums: Vec<Vec<f64>>,
}

impl Moments {
    fn zeros(p: usize, n_classes: usize) -> Result<Self> {
        Ok(Moments {
            p,
            gram: try_zeroed(p * p, "the factor's Gram matrix")?,
            weighted: try_zeroed(p * p, "the factor's weighted Gram matrix")?,
            class_sums: vec![vec![0.0; p]; n_classes],
        })
    }

    /// Adds `other` (the moments of further rows) to these.
    pub fn add(&mut self, other: &Moments) {
        let pairs = [
            (&mut self.gram, &other.gram),
            (&mut self.weighted, &other.weighted),
        ];
        for (mine, theirs) in pairs {
            mine.iter_mut().zip(theirs).for_each(|(a, &b)| *a += b);
        }
        for (mine, theirs) in self.class_sums.iter_mut().zip(&other.class_sums) {
            mine.iter_mut().zip(theirs).for_each(|(a, &b)| *a += b);
        }
    }

    /// The moments of the row-major `rows×p` block `factor` whose rows have the class codes
    /// `classes` (`0..class_weights.len()`), class `c` weighing `class_weights[c]`: for each
    /// fixed block of rows, each class's rows gathered and their Gram matrix's lower triangle
    /// made in `F` (`m p²/2` multiply-adds in all), the blocks' triangles added in `f64` in
    /// block order and mirrored once. Gives up with `Error::Interrupted` once `stop` is
    /// raised, looked at before each wave of blocks: at a million rows the products take
    /// seconds, several picks' worth.
    pub fn of_rows<F: Real>(
        pool: &rayon::ThreadPool,
        factor: &[F],
        p: usize,
        classes: &[u32],
        class_weights: &[f64],
        stop: &AtomicBool,
    ) -> Result<Self> {
        let rows = classes.len();
        let n_classes = class_weights.len();
        let mut total = Moments::zeros(p, n_classes)?;
        let block_moments = |b: usize| -> Moments {
            let range = b * FACTOR_BLOCK_ROWS..((b + 1) * FACTOR_BLOCK_ROWS).min(rows);
            let mut moments = Moments {
                p,
                gram: vec![0.0; p * p],
                weighted: vec![0.0; p * p],
                class_sums: vec![vec![0.0; p]; n_classes],
            };
            let mut gathered: Vec<F> = Vec::with_capacity(range.len() * p);
            let mut product = Array2::<F>::zeros((p, p));
            for (c, &weight) in class_weights.iter().enumerate() {
                gathered.clear();
                for i in range.clone().filter(|&i| classes[i] as usize == c) {
                    gathered.extend_from_slice(&factor[i * p..(i + 1) * p]);
                }
                if gathered.is_empty() {
                    continue;
                }
                let block =
                    ArrayView2::from_shape((gathered.len() / p, p), &gathered).expect("whole rows");
                product.fill(F::zero());
                // The lower triangle alone (the rest stays 0): mirrored once in the total.
                gram_lower(product.view_mut(), block);
                let values = product.as_slice().expect("a row-major product");
                let pairs = moments.gram.iter_mut().zip(moments.weighted.iter_mut());
                for ((g, e), &value) in pairs.zip(values) {
                    *g += value.as_f64();
                    *e += weight * value.as_f64();
                }
                for row in block.rows() {
                    let sums = moments.class_sums[c].iter_mut();
                    sums.zip(row).for_each(|(s, &v)| *s += v.as_f64());
                }
            }
            moments
        };
        fold_blocks(
            pool,
            rows,
            block_moments,
            |partial| total.add(&partial),
            stop,
        )?;
        for matrix in [&mut total.gram, &mut total.weighted] {
            for i in 0..p {
                for j in 0..i {
                    matrix[j * p + i] = matrix[i * p + j];
                }
            }
        }
        Ok(total)
    }
}

/// One term of a stage, as the rows apply it: `K_t − u v'` with `u = Φa`, `v = Φb`, so
/// that column `i` of the kernel loses `u·(φ_i'b)`.
#[derive(Debug, Clone, PartialEq)]
pub struct RowTerm<F> {
    /// `b`, of `v = Φb`.
    pub v: Vec<F>,
    /// `S_t'Ea` of the kernel before the term: `h = K_t'Du = Φ h`.
    pub h: Vec<F>,
    /// `1_c'u = σ_c'a`, per class.
    pub class_sums: Vec<f64>,
    /// `u'Du = a'Ea`.
    pub weighted_norm: f64,
}

/// A candidate of a round: its score, its index among all rows, its threshold and its row
/// of `Φ` (the driver needs the row to deflate by the pick).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate<F> {
    pub score: f64,
    pub index: usize,
    pub threshold: f64,
    pub row: Vec<F>,
}

/// Best first: higher score, then lower index.
fn best_first(a: &(f64, usize), b: &(f64, usize)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// The best `take` of `candidates`, best first.
pub(super) fn best_of(mut candidates: Vec<(f64, usize)>, take: usize) -> Vec<(f64, usize)> {
    if take < candidates.len() {
        candidates.select_nth_unstable_by(take, best_first);
        candidates.truncate(take);
    }
    candidates.sort_by(best_first);
    candidates
}

/// What every chunk of rows is told once, before the first round.
#[derive(Debug, Clone)]
pub struct RowsSetUp<'s> {
    /// `E = Φ'DΦ`, row-major `p×p`: `d_i = φ_i'Eφ_i`.
    pub weighted: &'s [f64],
    /// `σ_c`: the class sums of column `i` are `φ_i'σ_c`.
    pub class_sums: &'s [Vec<f64>],
    /// `w_c/m_c` per class (the Fisher denominator's weights).
    pub scatter_weights: &'s [f64],
    pub criterion: Criterion,
    pub tol: f64,
}

/// The statistics of some rows of `Φ`: the class sums and `d` of their columns of the current
/// `K_t`, the fixed thresholds, which are chosen, and for the `random` criterion their places
/// in the order. Each row is known by its index among all rows (the engine's order, by which
/// ties break): `indices`, or when that is empty, `0, 1, …` (all rows, in memory).
#[derive(Debug, Clone)]
pub struct RowStatistics {
    indices: Vec<usize>,
    /// `(index, row)` by index, to find a pick among `indices`.
    by_index: Vec<(usize, usize)>,
    classes: Vec<u32>,
    rank: Vec<usize>,
    sums: Vec<Vec<f64>>,
    d: Vec<f64>,
    threshold: Vec<f64>,
    blocked: Vec<bool>,
    scatter_weights: Vec<f64>,
    criterion: Criterion,
}

impl RowStatistics {
    /// The statistics of `K_0` for the row-major block `factor` of width `p`, whose rows are
    /// the rows `indices` of all (empty: `0..`) of classes `classes`; `rank` their places in
    /// the random order (for [`Criterion::Random`], else empty). One pass: `Φ tril(E)` by
    /// blocks of rows (half a GEMM each) for `d`, and the rows' products with `σ_c`.
    pub fn start<F: Real>(
        pool: &rayon::ThreadPool,
        factor: &[F],
        p: usize,
        indices: Vec<usize>,
        classes: Vec<u32>,
        rank: Vec<usize>,
        set_up: &RowsSetUp<'_>,
    ) -> Result<Self> {
        let rows = classes.len();
        let sized = |len: usize| len == 0 || len == rows;
        if factor.len() != rows * p
            || set_up.weighted.len() != p * p
            || !sized(indices.len())
            || !sized(rank.len())
            || set_up.class_sums.iter().any(|sum| sum.len() != p)
        {
            return Err(Error::invalid(
                "factor",
                format!("a chunk of {rows} rows of width {p} has the wrong size"),
            ));
        }
        let n_classes = set_up.class_sums.len();
        let mut sums: Vec<Vec<f64>> = Vec::with_capacity(n_classes);
        for _ in 0..n_classes {
            sums.push(try_zeroed(rows, "the selection's class sums")?);
        }
        let mut d: Vec<f64> = try_zeroed(rows, "the selection's statistics")?;
        // `φ'Eφ = 2 φ'Lφ` with `L` the lower triangle of `E`, its diagonal halved: half the
        // multiply-adds of `ΦE`.
        let halved = |(at, &v): (usize, &f64)| {
            let (i, j) = (at / p, at % p);
            F::from_f64(match j.cmp(&i) {
                std::cmp::Ordering::Less => v,
                std::cmp::Ordering::Equal => 0.5 * v,
                std::cmp::Ordering::Greater => 0.0,
            })
        };
        let lower: Vec<F> = set_up.weighted.iter().enumerate().map(halved).collect();
        let lower = ArrayView2::from_shape((p, p), &lower).expect("a p×p matrix");
        let class_sums: Vec<Vec<F>> = set_up
            .class_sums
            .iter()
            .map(|s| s.iter().map(|&v| F::from_f64(v)).collect())
            .collect();
        let n_blocks = rows.div_ceil(FACTOR_BLOCK_ROWS);
        let per_block: Vec<(Vec<f64>, Vec<Vec<f64>>)> = pool.install(|| {
            (0..n_blocks)
                .into_par_iter()
                .map(|b| {
                    let range = b * FACTOR_BLOCK_ROWS..((b + 1) * FACTOR_BLOCK_ROWS).min(rows);
                    let block = &factor[range.start * p..range.end * p];
                    let block = ArrayView2::from_shape((range.len(), p), block).expect("rows");
                    let mut times = Array2::<F>::zeros((range.len(), p));
                    times_lower(times.view_mut(), block, lower);
                    let d: Vec<f64> = block
                        .rows()
                        .into_iter()
                        .zip(times.rows())
                        .map(|(phi, t)| {
                            let (phi, t) =
                                (phi.as_slice().expect("row"), t.as_slice().expect("row"));
                            2.0 * crate::simd::dots(phi, [t])[0].as_f64()
                        })
                        .collect();
                    let sums = class_sums
                        .iter()
                        .map(|sigma| {
                            block
                                .rows()
                                .into_iter()
                                .map(|phi| {
                                    let phi = phi.as_slice().expect("row");
                                    crate::simd::dots(phi, [&sigma[..]])[0].as_f64()
                                })
                                .collect()
                        })
                        .collect();
                    (d, sums)
                })
                .collect()
        });
        for (b, (block_d, block_sums)) in per_block.into_iter().enumerate() {
            let start = b * FACTOR_BLOCK_ROWS;
            d[start..start + block_d.len()].copy_from_slice(&block_d);
            for (sum, block_sum) in sums.iter_mut().zip(block_sums) {
                sum[start..start + block_sum.len()].copy_from_slice(&block_sum);
            }
        }
        if !sums.iter().flatten().chain(&d).all(|v| v.is_finite()) {
            return Err(Error::invalid(
                "factor",
                "gives NaN or infinite kernel statistics, or values whose squares overflow",
            ));
        }
        let threshold = d.iter().map(|&d0| set_up.tol * d0).collect();
        RowStatistics::from_parts(RowParts {
            indices,
            classes,
            rank,
            sums,
            d,
            threshold,
            blocked: vec![false; rows],
            scatter_weights: set_up.scatter_weights.to_vec(),
            criterion: set_up.criterion,
        })
    }

    /// Its state, to be moved to another process.
    pub fn parts(&self) -> RowParts {
        RowParts {
            indices: self.indices.clone(),
            classes: self.classes.clone(),
            rank: self.rank.clone(),
            sums: self.sums.clone(),
            d: self.d.clone(),
            threshold: self.threshold.clone(),
            blocked: self.blocked.clone(),
            scatter_weights: self.scatter_weights.clone(),
            criterion: self.criterion,
        }
    }

    /// The statistics of state `parts` ([`RowStatistics::parts`]), checked for shape.
    pub fn from_parts(parts: RowParts) -> Result<Self> {
        let rows = parts.classes.len();
        let sized = |len: usize| len == 0 || len == rows;
        let shaped = sized(parts.indices.len())
            && sized(parts.rank.len())
            && parts.sums.len() == parts.scatter_weights.len()
            && parts.sums.iter().all(|sum| sum.len() == rows)
            && [parts.d.len(), parts.threshold.len(), parts.blocked.len()]
                .iter()
                .all(|&len| len == rows);
        if !shaped {
            return Err(Error::invalid(
                "statistics",
                "their parts must describe the same rows",
            ));
        }
        let mut by_index: Vec<(usize, usize)> = parts
            .indices
            .iter()
            .enumerate()
            .map(|(row, &i)| (i, row))
            .collect();
        by_index.sort_unstable();
        Ok(RowStatistics {
            indices: parts.indices,
            by_index,
            classes: parts.classes,
            rank: parts.rank,
            sums: parts.sums,
            d: parts.d,
            threshold: parts.threshold,
            blocked: parts.blocked,
            scatter_weights: parts.scatter_weights,
            criterion: parts.criterion,
        })
    }

    /// The row held of index `index` among all rows, if held here.
    fn row_of(&self, index: usize) -> Option<usize> {
        if self.indices.is_empty() {
            return (index < self.classes.len()).then_some(index);
        }
        let at = self
            .by_index
            .binary_search_by_key(&index, |&(i, _)| i)
            .ok()?;
        Some(self.by_index[at].1)
    }

    /// One round: the picks `blocked` (indices among all rows; those of other chunks are
    /// ignored) are no longer candidates, every term of `terms` is applied in order (one
    /// pass over `factor`, all their right-hand sides together), and the best `take`
    /// admissible candidates are returned, best first, ties to the lowest index.
    pub fn advance<F: Real>(
        &mut self,
        pool: &rayon::ThreadPool,
        factor: &[F],
        p: usize,
        terms: &[RowTerm<F>],
        blocked: &[usize],
        take: usize,
    ) -> Vec<Candidate<F>> {
        for &index in blocked {
            if let Some(row) = self.row_of(index) {
                self.blocked[row] = true;
            }
        }
        let rows = self.classes.len();
        let n_blocks = rows.div_ceil(FACTOR_BLOCK_ROWS);
        let indices = &self.indices;
        let stats = StatisticsView {
            scatter_weights: &self.scatter_weights,
            criterion: self.criterion,
        };
        let rank = &self.rank;
        let threshold = &self.threshold;
        let blocked_rows = &self.blocked;
        // Each block's rows of every statistic, split off so that blocks run in parallel.
        let mut d_blocks: Vec<&mut [f64]> = self.d.chunks_mut(FACTOR_BLOCK_ROWS).collect();
        let mut sum_blocks: Vec<Vec<&mut [f64]>> = (0..n_blocks).map(|_| Vec::new()).collect();
        for sum in &mut self.sums {
            for (b, piece) in sum.chunks_mut(FACTOR_BLOCK_ROWS).enumerate() {
                sum_blocks[b].push(piece);
            }
        }
        let work: Vec<BlockOfRows<'_>> = d_blocks.drain(..).zip(sum_blocks).enumerate().collect();
        let best: Vec<Vec<(f64, usize)>> = pool.install(|| {
            work.into_par_iter()
                .map(|(b, (d, mut sums))| {
                    let start = b * FACTOR_BLOCK_ROWS;
                    let mut found: Vec<(f64, usize)> = Vec::new();
                    let mut at: Vec<f64> = vec![0.0; sums.len()];
                    for local in 0..d.len() {
                        let i = start + local;
                        let phi = &factor[i * p..(i + 1) * p];
                        for term in terms {
                            let [v, h] = crate::simd::dots(phi, [&term.v[..], &term.h[..]]);
                            let (v, h) = (v.as_f64(), h.as_f64());
                            for (sum, &coefficient) in sums.iter_mut().zip(&term.class_sums) {
                                sum[local] -= v * coefficient;
                            }
                            d[local] -= 2.0 * v * h - term.weighted_norm * v * v;
                        }
                        if blocked_rows[i] || d[local] <= threshold[i] {
                            continue;
                        }
                        at.iter_mut()
                            .zip(&sums)
                            .for_each(|(value, sum)| *value = sum[local]);
                        let place = rank.get(i).copied().unwrap_or(0);
                        if let Some(score) = stats.score(&at, d[local], threshold[i], place) {
                            found.push((score, indices.get(i).copied().unwrap_or(i)));
                        }
                    }
                    best_of(found, take)
                })
                .collect()
        });
        best_of(best.into_iter().flatten().collect(), take)
            .into_iter()
            .map(|(score, index)| {
                let i = self.row_of(index).expect("a candidate is a row held here");
                Candidate {
                    score,
                    index,
                    threshold: self.threshold[i],
                    row: factor[i * p..(i + 1) * p].to_vec(),
                }
            })
            .collect()
    }
}

/// A block's index with its rows of `d` and of each class sum.
type BlockOfRows<'s> = (usize, (&'s mut [f64], Vec<&'s mut [f64]>));

/// The state of a [`RowStatistics`], field by field.
#[derive(Debug, Clone, PartialEq)]
pub struct RowParts {
    pub indices: Vec<usize>,
    pub classes: Vec<u32>,
    pub rank: Vec<usize>,
    pub sums: Vec<Vec<f64>>,
    pub d: Vec<f64>,
    pub threshold: Vec<f64>,
    pub blocked: Vec<bool>,
    pub scatter_weights: Vec<f64>,
    pub criterion: Criterion,
}

/// What scoring a column needs beside its statistics.
struct StatisticsView<'s> {
    scatter_weights: &'s [f64],
    criterion: Criterion,
}

impl StatisticsView<'_> {
    /// The score of a column of class sums `sums` and `d` (higher is better), `None` when
    /// the criterion's denominator is numerically zero: the expressions of the engine over
    /// the kernel (`Engine::ranked_candidates`), in the same order.
    fn score(&self, sums: &[f64], d: f64, threshold: f64, place: usize) -> Option<f64> {
        let (numerator, denominator) = match (sums, self.scatter_weights) {
            (&[n, p], &[beta, alpha]) => {
                let a = p - n;
                (a * a, d - alpha * p * p - beta * n * n)
            }
            _ => {
                let n_classes = sums.len() as f64;
                let mut mean = 0.0;
                for &s in sums {
                    mean += s;
                }
                mean /= n_classes;
                let (mut spread, mut denominator) = (0.0, d);
                for (&s, &scatter) in sums.iter().zip(self.scatter_weights).rev() {
                    spread += (s - mean) * (s - mean);
                    denominator -= scatter * s * s;
                }
                (n_classes * spread, denominator)
            }
        };
        self.criterion
            .score(numerator, denominator, threshold, place)
    }
}
