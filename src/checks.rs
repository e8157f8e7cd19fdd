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
use crate::tuning::{CHECK_TILE, LANES};
use ndarray::{s, ArrayView2};
use rayon::prelude::*;

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
    let bands: Vec<usize> = (0..m.div_ceil(CHECK_TILE)).collect();
    let band = |&b: &usize| band_checks(k, &roots, b * CHECK_TILE);
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
    let rows = start..(start + CHECK_TILE).min(m);
    let mut part = Partial {
        non_finite: None,
        scale: 0.0,
        asymmetry: 0.0,
        minor_excess: f64::NEG_INFINITY,
        minor_at: (start, start),
    };
    let mut upper = [0.0f64; CHECK_TILE];
    let mut lower = [0.0f64; CHECK_TILE];
    for tile in (start..m).step_by(CHECK_TILE) {
        for i in rows.clone() {
            let first = tile.max(i);
            let width = (tile + CHECK_TILE).min(m).saturating_sub(first);
            if width == 0 {
                continue;
            }
            // The segment's pairs copied out (the lower one down a column of the tile, which
            // stays in cache), then measured by branch-free maxima that the compiler
            // vectorises; the rare segment with a non-finite value or a new worst minor is
            // read again, entry by entry, for where.
            let (row, column) = (k.row(i), k.column(i));
            let (row, column) = (
                row.slice(s![first..first + width]),
                column.slice(s![first..first + width]),
            );
            for (l, (&u, &lo)) in row.iter().zip(column.iter()).enumerate() {
                upper[l] = u.as_f64();
                lower[l] = lo.as_f64();
            }
            let (upper, lower) = (&upper[..width], &lower[..width]);
            let (finite, scale, asymmetry, excess) =
                segment_measures(upper, lower, &roots[first..first + width], roots[i]);
            if finite == 0.0 && excess <= part.minor_excess {
                part.scale = part.scale.max(scale);
                part.asymmetry = part.asymmetry.max(asymmetry);
                continue;
            }
            for (l, j) in (first..first + width).enumerate() {
                let (u, lo) = (upper[l], lower[l]);
                if !(u.is_finite() && lo.is_finite()) {
                    if part.non_finite.is_none() {
                        part.non_finite = Some(if u.is_finite() { (j, i) } else { (i, j) });
                    }
                    continue;
                }
                part.scale = part.scale.max(u.abs()).max(lo.abs());
                part.asymmetry = part.asymmetry.max((u - lo).abs());
                let excess = u.abs().max(lo.abs()) - roots[i] * roots[j];
                if excess > part.minor_excess {
                    part.minor_excess = excess;
                    part.minor_at = (i, j);
                }
            }
        }
    }
    part
}

/// `(finite, scale, asymmetry, excess)` of a segment of pairs: `finite` is 0 unless an entry
/// is NaN or infinite (then NaN), the others the maxima of `max(|u|, |l|)`, `|u − l|` and
/// `max(|u|, |l|) − root_i·root_j`.
fn segment_measures(
    upper: &[f64],
    lower: &[f64],
    roots: &[f64],
    root_i: f64,
) -> (f64, f64, f64, f64) {
    let mut finite = [0.0f64; LANES];
    let mut scale = [0.0f64; LANES];
    let mut asymmetry = [0.0f64; LANES];
    let mut excess = [f64::NEG_INFINITY; LANES];
    let mut measure = |lane: usize, u: f64, l: f64, r: f64| {
        finite[lane] += u * 0.0 + l * 0.0; // NaN once an entry is NaN or infinite
        let larger = u.abs().max(l.abs());
        scale[lane] = scale[lane].max(larger);
        asymmetry[lane] = asymmetry[lane].max((u - l).abs());
        excess[lane] = excess[lane].max(larger - root_i * r);
    };
    let chunks = upper.len() / LANES * LANES;
    for start in (0..chunks).step_by(LANES) {
        let (u, l, r) = (
            &upper[start..start + LANES],
            &lower[start..start + LANES],
            &roots[start..start + LANES],
        );
        for lane in 0..LANES {
            measure(lane, u[lane], l[lane], r[lane]);
        }
    }
    for j in chunks..upper.len() {
        measure(j - chunks, upper[j], lower[j], roots[j]);
    }
    let fold = |values: [f64; LANES], start: f64| values.iter().fold(start, |acc, &v| acc.max(v));
    (
        finite.iter().sum(),
        fold(scale, 0.0),
        fold(asymmetry, 0.0),
        fold(excess, f64::NEG_INFINITY),
    )
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

    /// The measures entry by entry, as the tiled pass must give them.
    fn naive(k: &Array2<f64>) -> KernelChecks {
        let m = k.nrows();
        let roots: Vec<f64> = (0..m).map(|i| k[[i, i]].max(0.0).sqrt()).collect();
        let mut checks = KernelChecks {
            non_finite: None,
            scale: 0.0,
            asymmetry: 0.0,
            smallest_diagonal: (0..m).map(|i| k[[i, i]]).fold(f64::INFINITY, f64::min),
            minor_excess: f64::NEG_INFINITY,
            minor_at: (0, 0),
        };
        for i in 0..m {
            for j in i..m {
                let (u, l) = (k[[i, j]], k[[j, i]]);
                checks.scale = checks.scale.max(u.abs()).max(l.abs());
                checks.asymmetry = checks.asymmetry.max((u - l).abs());
                let excess = u.abs().max(l.abs()) - roots[i] * roots[j];
                if excess > checks.minor_excess {
                    checks.minor_excess = excess;
                    checks.minor_at = (i, j);
                }
            }
        }
        checks
    }

    #[test]
    fn the_tiled_lanes_measure_what_each_entry_gives() {
        // Sizes around the tile and the lanes; faults placed in tiles after the first.
        for m in [1, 7, 8, 9, 63, 64, 65, 130, 200] {
            let x = Array2::from_shape_fn((m, 4), |(i, j)| ((i * 13 + j * 5) % 17) as f64 / 7.0);
            let mut k = x.dot(&x.t());
            if m > 3 {
                k[[m - 1, m / 2]] += 0.25;
                k[[m / 3, m - 2]] = 1e3;
            }
            for threads in [1, 2] {
                assert_eq!(
                    kernel_checks(k.view(), threads).unwrap(),
                    naive(&k),
                    "m = {m}"
                );
            }
        }
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
