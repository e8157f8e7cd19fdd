//! The factors the tests draw, their explicit kernels, and how two selections' picks are
//! compared: equal, or parted at a tie.

use crate::common::{explicit_scores, uniform_stream};
use gkfda::{Criterion, Deflation, GreedyParams};
use ndarray::Array2;

/// A factor of one of three kinds: 0 full rank (`m×p`), 1 rank `p/4` (`AB`), 2 with a
/// quarter of its rows copies of others.
pub fn factor(m: usize, p: usize, kind: usize, seed: u64) -> Array2<f64> {
    let mut uniform = uniform_stream(seed.wrapping_mul(31).wrapping_add(kind as u64));
    let mut normal = move || {
        // Box–Muller from the uniform stream.
        let (a, b) = (uniform().max(1e-300), uniform());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    };
    // Clustered rows, so that the criteria have something to separate.
    let centres = Array2::from_shape_fn((4, p), |_| normal());
    let mut phi = Array2::from_shape_fn((m, p), |(i, l)| centres[[i % 4, l]] + normal());
    phi.mapv_inplace(|v| v / (p as f64).sqrt());
    match kind {
        1 => {
            let r = (p / 4).max(1);
            let a = phi.slice(ndarray::s![.., ..r]).to_owned();
            let b = Array2::from_shape_fn((r, p), |_| normal() / (r as f64).sqrt());
            a.dot(&b)
        }
        2 => {
            for i in (3 * m / 4)..m {
                let source = (i * 7) % (3 * m / 4);
                let row = phi.row(source).to_owned();
                phi.row_mut(i).assign(&row);
            }
            phi
        }
        _ => phi,
    }
}

/// `ΦΦ'`, exactly symmetric (each entry one running sum, the same for `(i, j)` and `(j, i)`).
pub fn explicit(phi: &Array2<f64>) -> Array2<f64> {
    let m = phi.nrows();
    let mut k = Array2::zeros((m, m));
    for i in 0..m {
        for j in 0..=i {
            let value: f64 = phi.row(i).iter().zip(phi.row(j)).map(|(a, b)| a * b).sum();
            k[[i, j]] = value;
            k[[j, i]] = value;
        }
    }
    k
}

/// The first row of `phi` equal to each row: the basis each index stands for.
pub fn representatives(phi: &Array2<f64>) -> Vec<usize> {
    (0..phi.nrows())
        .map(|i| (0..=i).find(|&j| phi.row(j) == phi.row(i)).unwrap_or(i))
        .collect()
}

/// Class codes: two or three classes, sorted (runs, as `fit` orders them) or interleaved.
pub fn classes(m: usize, n_classes: u32, sorted: bool, seed: u64) -> Vec<u32> {
    let mut uniform = uniform_stream(seed.wrapping_add(7));
    let mut codes: Vec<u32> = (0..m)
        .map(|i| {
            // The clusters decide most labels; some noise.
            let c = (i % 4) as u32 % n_classes;
            if uniform() < 0.15 {
                (c + 1) % n_classes
            } else {
                c
            }
        })
        .collect();
    if sorted {
        codes.sort_unstable();
    }
    codes
}

/// Whether two selections agree: the same bases, or, past a tie at the rank of the kernel,
/// the same bases before it and as many picks. With a rank-`r` kernel the projection and
/// schur families leave a rank-one residual after `r − 1` picks, whose columns are all
/// multiples `a_j ρ` of one vector: their Fisher ratios `a_j²(ρ'y)²/(a_j² ρ'Bρ)` are all
/// equal, and the ratio criteria's `r`-th pick is an exact tie that rounding breaks.
pub fn agree(dense: &[usize], factored: &[usize], tie_at: Option<usize>) -> bool {
    match tie_at {
        Some(r) if dense.len() == factored.len() && dense.len() >= r => {
            dense[..r - 1] == factored[..r - 1] && dense[r..] == factored[r..]
        }
        _ => dense == factored,
    }
}

/// The pick that ties for `criterion` and `deflation` on a kernel of rank `rank` (`None`
/// when the kernel has full rank or nothing ties).
pub fn tie_at(rank: Option<usize>, criterion: Criterion, deflation: Deflation) -> Option<usize> {
    let ratio = criterion.uses_ratio();
    let exhausts = !matches!(
        deflation,
        Deflation::None | Deflation::Hotelling | Deflation::OrthoHotelling
    );
    rank.filter(|_| ratio && exhausts)
}

/// A random `m×p` factor of rank at most `rank` (`Φ = AB` through `rank` columns; Gaussian
/// rows about four centres) with `duplicated` of its rows copies of others.
pub fn random_factor(m: usize, p: usize, rank: usize, duplicated: usize, seed: u64) -> Array2<f64> {
    let mut uniform = uniform_stream(seed.wrapping_mul(97).wrapping_add(5));
    let mut normal = move || {
        let (a, b) = (uniform().max(1e-300), uniform());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    };
    let r = rank.clamp(1, p);
    let centres = Array2::from_shape_fn((4, r), |_| normal());
    let a = Array2::from_shape_fn((m, r), |(i, l)| centres[[i % 4, l]] + normal());
    let b = Array2::from_shape_fn((r, p), |_| normal() / (r as f64).sqrt());
    let mut phi = if r == p { a } else { a.dot(&b) };
    for t in 0..duplicated.min(m.saturating_sub(1)) {
        let (to, from) = (m - 1 - t, (t * 7) % (m - 1 - t).max(1));
        let row = phi.row(from).to_owned();
        phi.row_mut(to).assign(&row);
    }
    phi
}

/// The numerical rank of the rows of `phi` (Gram–Schmidt, relative threshold 1e-10).
pub fn numerical_rank(phi: &Array2<f64>) -> usize {
    let scale = phi
        .iter()
        .fold(0.0f64, |a, v| a.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    let mut basis: Vec<Vec<f64>> = Vec::new();
    for row in phi.rows() {
        let mut v: Vec<f64> = row.to_vec();
        for q in &basis {
            let c: f64 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
            v.iter_mut().zip(q).for_each(|(v, q)| *v -= c * q);
        }
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 1e-10 * scale * (phi.ncols() as f64).sqrt() {
            basis.push(v.iter().map(|x| x / norm).collect());
        }
    }
    basis.len()
}

/// Sorted class codes of `n_classes` classes, the last of them `few` points when given.
pub fn codes_with_a_small_class(m: usize, n_classes: u32, few: Option<usize>) -> Vec<u32> {
    let small = few.map_or(0, |few| few.min(m - 1));
    let rest = m - small;
    let shared = if small > 0 { n_classes - 1 } else { n_classes };
    (0..m)
        .map(|i| {
            if i >= rest {
                n_classes - 1
            } else {
                (i * shared as usize / rest) as u32
            }
        })
        .collect()
}

/// Whether the factored picks agree with the dense ones on a kernel of rank `rank`: on a
/// rank-one kernel every column of the ratio criteria ties (`a_j²(ρ'y)² / (a_j² ρ'Bρ)`),
/// so only the number of picks is compared; otherwise [`agree`] past the tie at the rank.
pub fn agree_at_rank(
    dense: &[usize],
    factored: &[usize],
    rank: usize,
    criterion: Criterion,
    deflation: Deflation,
) -> bool {
    let ratio = criterion.uses_ratio();
    if ratio && rank <= 1 {
        return dense.len() == factored.len();
    }
    agree(dense, factored, tie_at(Some(rank), criterion, deflation))
}

/// Whether two selections on one kernel first differ where their picks' scores tie
/// (relatively, to 1e-6): the scores of the stage that made the differing pick, on the kernel
/// deflated explicitly by the picks before that stage. Exact ties (duplicated rows can make
/// distinct columns tie) go to the lowest index, or to another by a rounding difference, and
/// the selections part ways from there. Picks are compared as their `reps`.
pub fn tie_at_divergence(
    kernel: &Array2<f64>,
    codes: &[u32],
    params: &GreedyParams,
    dense: &[usize],
    factored: &[usize],
    reps: &[usize],
) -> bool {
    ties_within(kernel, codes, params, (dense, factored), reps, 1e-6)
}

/// The relative difference of float64 scores within which float32 selections may part ways.
pub const FLOAT32_TIE: f64 = 1e-3;

/// [`tie_at_divergence`] with ties to the relative tolerance `tolerance`.
pub fn ties_within(
    kernel: &Array2<f64>,
    codes: &[u32],
    params: &GreedyParams,
    (dense, factored): (&[usize], &[usize]),
    reps: &[usize],
    tolerance: f64,
) -> bool {
    let Some(t) =
        (0..dense.len().min(factored.len())).find(|&t| reps[dense[t]] != reps[factored[t]])
    else {
        return false; // one is a prefix of the other: an early stop, not a tie
    };
    if params.criterion == Criterion::Random {
        return false;
    }
    let start = t - t % params.stages.max(1);
    let scores = explicit_scores(
        kernel,
        codes,
        params.criterion,
        params.deflation,
        &dense[..start],
    );
    let (a, b) = (scores[dense[t]], scores[factored[t]]);
    a.is_finite()
        && b.is_finite()
        && (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}
