//! One pass over a precomputed kernel for what a fit must know of it before the selection:
//! finite, symmetric, and the `O(m²)` necessary conditions of positive semi-definiteness
//! (a non-negative diagonal; every 2×2 principal minor non-negative, `|K_ij| ≤ √(K_ii K_jj)`).
//!
//! NumPy needed six passes and `m`-row temporaries for the same (a third of a precomputed
//! fit's time at m = 3,000, k = 150); here each pair `(i, j)`, `i < j`, is read once from
//! both triangles, by square tiles so that the transposed reads stay in cache, the tiles of a
//! band of rows shared among the threads. The measures are returned raw; the caller compares
//! them with its tolerance, which depends on the kernel's scale.

use crate::error::{Error, Result};
use crate::real::Real;
use ndarray::ArrayView2;
use rayon::prelude::*;

/// Side of the square tiles: two 64×64 float64 tiles fit in a core's L1 and L2.
const TILE: usize = 64;

/// What the pass measured (float64, whatever the kernel's dtype).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelChecks {
    /// A non-finite entry `(i, j)`, the first the pass meets (its order does not depend on
    /// the thread count), if any; the other measures then leave it out.
    pub non_finite: Option<(usize, usize)>,
    /// `max |K_ij|`.
    pub scale: f64,
    /// `max |K_ij − K_ji|`.
    pub asymmetry: f64,
    /// The smallest diagonal entry.
    pub smallest_diagonal: f64,
    /// `max |K_ij| − √(K_ii K_jj)` over the pairs (negative diagonals taken as 0), and where.
    pub minor_excess: f64,
    pub minor_at: (usize, usize),
}

/// The measures of a square kernel `k`, on `n_threads` threads (the result does not depend
/// on their number).
pub fn kernel_checks<F: Real>(k: ArrayView2<F>, n_threads: usize) -> Result<KernelChecks> {
    let m = k.nrows();
    if k.ncols() != m {
        return Err(Error::invalid(
            "K",
            format!(
                "a precomputed kernel must be a square matrix, got shape ({m}, {})",
                k.ncols()
            ),
        ));
    }
    let diagonal: Vec<f64> = (0..m).map(|i| k[[i, i]].as_f64()).collect();
    let roots: Vec<f64> = diagonal.iter().map(|&d| d.max(0.0).sqrt()).collect();
    let bands: Vec<usize> = (0..m.div_ceil(TILE)).collect();
    let band = |&b: &usize| band_checks(k, &roots, b * TILE);
    let partial: Vec<Partial> = if n_threads <= 1 || bands.len() <= 1 {
        bands.iter().map(band).collect()
    } else {
        crate::pool::shared(n_threads)?.install(|| bands.par_iter().map(band).collect())
    };
    // Combined in band order: the first non-finite entry and the first worst minor win ties,
    // so the result is the same for any thread count.
    let mut checks = KernelChecks {
        non_finite: None,
        scale: 0.0,
        asymmetry: 0.0,
        smallest_diagonal: diagonal.iter().copied().fold(f64::INFINITY, f64::min),
        minor_excess: f64::NEG_INFINITY,
        minor_at: (0, 0),
    };
    for part in partial {
        if checks.non_finite.is_none() {
            checks.non_finite = part.non_finite;
        }
        checks.scale = checks.scale.max(part.scale);
        checks.asymmetry = checks.asymmetry.max(part.asymmetry);
        if part.minor_excess > checks.minor_excess {
            checks.minor_excess = part.minor_excess;
            checks.minor_at = part.minor_at;
        }
    }
    if m == 0 {
        checks.smallest_diagonal = 0.0;
        checks.minor_excess = 0.0;
    }
    Ok(checks)
}

struct Partial {
    non_finite: Option<(usize, usize)>,
    scale: f64,
    asymmetry: f64,
    minor_excess: f64,
    minor_at: (usize, usize),
}

/// The measures of the pairs `(i, j)` with `i` in the band of rows from `start` and `j ≥ i`,
/// reading `K_ij` and `K_ji` by tiles.
fn band_checks<F: Real>(k: ArrayView2<F>, roots: &[f64], start: usize) -> Partial {
    let m = k.nrows();
    let rows = start..(start + TILE).min(m);
    let mut part = Partial {
        non_finite: None,
        scale: 0.0,
        asymmetry: 0.0,
        minor_excess: f64::NEG_INFINITY,
        minor_at: (start, start),
    };
    for tile in (start..m).step_by(TILE) {
        for i in rows.clone() {
            for j in tile.max(i)..(tile + TILE).min(m) {
                let (upper, lower) = (k[[i, j]].as_f64(), k[[j, i]].as_f64());
                if !(upper.is_finite() && lower.is_finite()) {
                    if part.non_finite.is_none() {
                        part.non_finite = Some(if upper.is_finite() { (j, i) } else { (i, j) });
                    }
                    continue;
                }
                part.scale = part.scale.max(upper.abs()).max(lower.abs());
                part.asymmetry = part.asymmetry.max((upper - lower).abs());
                let excess = upper.abs().max(lower.abs()) - roots[i] * roots[j];
                if excess > part.minor_excess {
                    part.minor_excess = excess;
                    part.minor_at = (i, j);
                }
            }
        }
    }
    part
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    #[test]
    fn a_gram_matrix_passes_and_its_faults_are_found() {
        let x = Array2::from_shape_fn((150, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 5.0);
        let gram = x.dot(&x.t());
        for threads in [1, 2, 3] {
            let checks = kernel_checks(gram.view(), threads).unwrap();
            assert_eq!(checks.non_finite, None);
            assert_eq!(checks.asymmetry, 0.0);
            assert!(checks.smallest_diagonal >= 0.0 && checks.minor_excess <= 1e-12);
            assert_eq!(checks, kernel_checks(gram.view(), 1).unwrap());
        }
        let mut bad = gram.clone();
        bad[[140, 3]] += 0.5;
        bad[[70, 71]] = f64::NAN;
        let checks = kernel_checks(bad.view(), 2).unwrap();
        assert_eq!(checks.non_finite, Some((70, 71)));
        assert!((checks.asymmetry - 0.5).abs() < 1e-12);
    }

    #[test]
    fn minors_and_diagonals_are_measured() {
        let k = array![[1.0f32, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, -0.5]];
        let checks = kernel_checks(k.view(), 1).unwrap();
        assert_eq!(checks.minor_at, (0, 1));
        assert!((checks.minor_excess - 1.0).abs() < 1e-12);
        assert_eq!(checks.smallest_diagonal, -0.5);
        assert!(kernel_checks(Array2::<f64>::zeros((2, 3)).view(), 1).is_err());
        let empty = kernel_checks(Array2::<f64>::zeros((0, 0)).view(), 1).unwrap();
        assert_eq!((empty.scale, empty.minor_excess), (0.0, 0.0));
    }
}
