//! Inputs shared by the fuzz targets: floats that reach the edges of `f64` and `f32`,
//! point sets, arrays in each memory layout the public API accepts, and selection
//! problems (labels and `GreedyParams`) with the invariants of their outcomes.

use arbitrary::{Arbitrary, Result, Unstructured};
use gkfda::pursuit::Pursuit;
use gkfda::{kernel, selection, Criterion, Deflation, GreedyParams, Kernel, Real, Selection};
use ndarray::{s, Array2, ArrayView2, ShapeBuilder};

/// Whether to take a rare branch, one time in `n`. Unlike `Unstructured::ratio`, an input
/// that has run out of bytes says no: the ordinary branch is the default.
pub fn one_in(u: &mut Unstructured, n: u32) -> Result<bool> {
    Ok(u.int_in_range(1..=n)? == n)
}

/// A float, often an ordinary one, otherwise one of the values that break arithmetic:
/// NaN, ±∞, the extremes of `f64`, values beyond `f32`'s range (infinite once narrowed),
/// subnormals, signed zeros, or any bit pattern.
pub fn real(u: &mut Unstructured) -> Result<f64> {
    let sign = if u.arbitrary()? { -1.0 } else { 1.0 };
    Ok(match u.int_in_range(0u8..=15)? {
        0..=6 => grid(u)?,
        7 => f64::NAN,
        8 => sign * f64::INFINITY,
        9 => sign * f64::MAX,
        10 => sign * f64::MIN_POSITIVE,
        11 => sign * f64::from_bits(u.int_in_range(1u64..=(1 << 52) - 1)?),
        12 => sign * 0.0,
        13 => f64::from_bits(u.arbitrary()?),
        14 => sign * f32::MAX as f64 * 2.0,
        _ => sign * 10f64.powi(u.int_in_range(-45..=45)?),
    })
}

/// A small value on a grid of eighths in [-16, 16): points whose kernels are well formed
/// (and, with few distinct values, often repeated).
pub fn grid(u: &mut Unstructured) -> Result<f64> {
    Ok(f64::from(u.arbitrary::<i8>()?) / 8.0)
}

/// `rows × cols` values, each from `value`.
pub fn matrix(
    u: &mut Unstructured,
    rows: usize,
    cols: usize,
    mut value: impl FnMut(&mut Unstructured) -> Result<f64>,
) -> Result<Array2<f64>> {
    let mut values = Vec::with_capacity(rows * cols);
    for _ in 0..rows * cols {
        values.push(value(u)?);
    }
    Ok(Array2::from_shape_vec((rows, cols), values).expect("length matches shape"))
}

/// Points for a kernel: all on the grid, all of any value, or on the grid but a few.
pub fn points(u: &mut Unstructured, rows: usize, cols: usize) -> Result<Array2<f64>> {
    match u.int_in_range(0u8..=3)? {
        0 | 1 => matrix(u, rows, cols, grid),
        2 => matrix(u, rows, cols, real),
        _ => {
            let mut x = matrix(u, rows, cols, grid)?;
            if rows * cols > 0 {
                for _ in 0..u.int_in_range(1..=3)? {
                    let (i, j) = (u.choose_index(rows)?, u.choose_index(cols)?);
                    x[[i, j]] = real(u)?;
                }
            }
            Ok(x)
        }
    }
}

/// The memory layout an array is handed over in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Layout {
    RowMajor,
    ColumnMajor,
    /// Every other column of a wider row-major array: not contiguous.
    Strided,
}

/// A layout, mostly a contiguous one: a strided array is refused, so rarely, that most
/// inputs reach the engines.
pub fn layout(u: &mut Unstructured) -> Result<Layout> {
    Ok(match u.int_in_range(0u8..=15)? {
        0..=7 => Layout::RowMajor,
        8..=14 => Layout::ColumnMajor,
        _ => Layout::Strided,
    })
}

/// An array held in some [`Layout`], viewed as the logical array it was made from.
pub struct Laid<F> {
    storage: Array2<F>,
    layout: Layout,
}

impl<F: Real> Laid<F> {
    /// `values` narrowed to `F`, stored in `layout`.
    pub fn new(values: &Array2<f64>, layout: Layout) -> Self {
        let values = values.mapv(F::from_f64);
        let (rows, cols) = values.dim();
        let storage = match layout {
            Layout::RowMajor => values,
            Layout::ColumnMajor => {
                let mut storage = Array2::from_elem((rows, cols).f(), F::from_f64(0.0));
                storage.assign(&values);
                storage
            }
            Layout::Strided => {
                let mut storage = Array2::from_elem((rows, 2 * cols), F::from_f64(0.0));
                storage.slice_mut(s![.., ..;2]).assign(&values);
                storage
            }
        };
        Laid { storage, layout }
    }

    pub fn view(&self) -> ArrayView2<'_, F> {
        match self.layout {
            Layout::RowMajor | Layout::ColumnMajor => self.storage.view(),
            Layout::Strided => self.storage.slice(s![.., ..;2]),
        }
    }
}

/// Whether `a` and `b` have the same shape and the same values bit for bit (any NaN
/// matching any NaN: payloads carry no meaning here).
pub fn same_bits<F: Real>(a: ArrayView2<F>, b: ArrayView2<F>) -> bool {
    a.dim() == b.dim()
        && a.iter().zip(b.iter()).all(|(&x, &y)| {
            let (x, y) = (x.as_f64(), y.as_f64());
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        })
}

/// An `m×m` kernel (now and then `m×(m+1)`): mostly a genuine Gram matrix, so that the
/// engine gets past its checks and picks; otherwise one scaled by a power of ten from
/// subnormal to near overflow, one with a few entries broken, or any values, symmetric
/// or not.
pub fn kernel_values(u: &mut Unstructured, m: usize) -> Result<Array2<f64>> {
    if one_in(u, 32)? {
        return matrix(u, m, m + 1, real);
    }
    Ok(match u.int_in_range(0u8..=7)? {
        5 => gram(u, m)? * 10f64.powi(u.int_in_range(-320..=308)?),
        7 => {
            let mut k = matrix(u, m, m, real)?;
            if u.arbitrary()? {
                for i in 0..m {
                    for j in 0..i {
                        k[[i, j]] = k[[j, i]];
                    }
                }
            }
            k
        }
        choice => {
            let mut k = gram(u, m)?;
            if choice == 6 && m > 0 {
                for _ in 0..u.int_in_range(1..=3)? {
                    let (i, j) = (u.choose_index(m)?, u.choose_index(m)?);
                    k[[i, j]] = real(u)?;
                    if u.arbitrary()? {
                        k[[j, i]] = k[[i, j]];
                    }
                }
            }
            k
        }
    })
}

/// The Gram matrix of `m` points on a grid (repeats and rank deficiency included) under a
/// linear, RBF or polynomial kernel of moderate parameters.
pub fn gram(u: &mut Unstructured, m: usize) -> Result<Array2<f64>> {
    let d = u.int_in_range(0..=4)?;
    let x = matrix(u, m, d, grid)?;
    let gamma = 2f64.powi(u.int_in_range(-8..=3)?);
    let kernel = match u.int_in_range(0u8..=2)? {
        0 => Kernel::Linear,
        1 => Kernel::Rbf { gamma },
        _ => Kernel::Poly {
            gamma,
            degree: u.int_in_range(1..=4)?,
            coef0: grid(u)?,
        },
    };
    Ok(kernel::gram(x.view(), &kernel, 1).expect("a valid kernel of finite points"))
}

/// Two-class labels and the parameters of one selection.
pub struct Problem {
    pub labels: Vec<bool>,
    pub params: GreedyParams,
}

/// A thread count: 1 to 4, now and then 0 (refused).
pub fn threads(u: &mut Unstructured) -> Result<usize> {
    if one_in(u, 16)? {
        Ok(0)
    } else {
        u.int_in_range(1..=4)
    }
}

/// 1 to `most` problems among `m` for `select_many`, which wants one thread count for all
/// of them: mostly `n_threads`, now and then another.
pub fn problems(
    u: &mut Unstructured,
    m: usize,
    n_threads: usize,
    most: usize,
) -> Result<Vec<Problem>> {
    let mut problems = Vec::new();
    for _ in 0..u.int_in_range(1..=most)? {
        let n_threads = if one_in(u, 16)? {
            threads(u)?
        } else {
            n_threads
        };
        problems.push(problem(u, m, n_threads)?);
    }
    Ok(problems)
}

/// Labels and parameters for a selection among `m`: each field now and then out of range
/// (about one in 16 to 32 for each), so that most problems pass the checks.
pub fn problem(u: &mut Unstructured, m: usize, n_threads: usize) -> Result<Problem> {
    let labels_len = match u.int_in_range(0u8..=63)? {
        62 => m + 1,
        63 => m.saturating_sub(1),
        _ => m,
    };
    let labels = match u.int_in_range(0u8..=2)? {
        0 => {
            let period = u.int_in_range(1..=4)?;
            (0..labels_len).map(|i| i % (2 * period) < period).collect()
        }
        // The classes contiguous, as `GreedyKFDA.fit` orders them (both present: the
        // arbitrary labels below reach one class often enough).
        1 => {
            let negatives = u.int_in_range(1..=labels_len.saturating_sub(1).max(1))?;
            (0..labels_len).map(|i| i >= negatives).collect()
        }
        _ => (0..labels_len)
            .map(|_| u.arbitrary())
            .collect::<Result<_>>()?,
    };
    let k = match u.int_in_range(0u8..=63)? {
        61 => u.arbitrary()?,
        62 => 0,
        63 => m + 1,
        _ => u.int_in_range(1..=m.max(1))?,
    };
    let criterion = u.choose(&Criterion::ALL)?.0;
    let deflation = u.choose(&Deflation::ALL)?.0;
    let stages = match u.int_in_range(0u8..=63)? {
        0..=45 => u.int_in_range(1..=4)?,
        46..=61 => u.int_in_range(1..=m + 1)?,
        62 => 0,
        _ => u.arbitrary()?,
    };
    let seed = u.arbitrary()?;
    // Mostly none for the other criteria, which refuse one.
    let random_order = if criterion == Criterion::Random || one_in(u, 32)? {
        order(u, m, seed)?
    } else {
        None
    };
    let tol = match u.int_in_range(0u8..=15)? {
        13 | 14 => Some(10f64.powi(-u.int_in_range(0..=16)?)),
        15 => Some(real(u)?),
        _ => None,
    };
    let params = GreedyParams {
        k,
        criterion,
        deflation,
        stages,
        random_order,
        seed,
        tol,
        n_threads,
    };
    Ok(Problem { labels, params })
}

/// A priority order for the random criterion: none, `random_order`'s permutation, one
/// with a repeat or an index out of range, or one of the wrong length.
pub fn order(u: &mut Unstructured, m: usize, seed: u64) -> Result<Option<Vec<usize>>> {
    let mut order = selection::random_order(m, seed);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert!(
        sorted.iter().copied().eq(0..m),
        "random_order({m}, {seed}) is not a permutation"
    );
    match u.int_in_range(0u8..=7)? {
        0..=2 => return Ok(None),
        3..=5 => {}
        6 if m > 0 => {
            let i = u.choose_index(m)?;
            order[i] = if u.arbitrary()? {
                order[(i + 1) % m]
            } else {
                m + u.int_in_range(0..=usize::MAX - m)?
            };
        }
        _ => {
            if u.arbitrary()? {
                order.push(m);
            } else {
                order.pop();
            }
        }
    }
    Ok(Some(order))
}

/// The invariants of an `Ok` selection of up to `k` bases among `m`.
pub fn holds(selection: &Selection, m: usize, k: usize) {
    let indices = &selection.indices;
    assert!(
        indices.iter().all(|&i| i < m),
        "index out of range: {indices:?}, m = {m}"
    );
    let mut sorted = indices.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), indices.len(), "repeated index: {indices:?}");
    if selection.stopped_early {
        assert!(
            indices.len() < k,
            "stopped early with {} of k = {k}",
            indices.len()
        );
    } else {
        assert_eq!(indices.len(), k, "stopped short of k without saying so");
    }
}

/// The invariants of an `Ok` pursuit of up to `k` picks among `m`: distinct indices below
/// `m`, one score each, `k` of them unless it stopped early.
pub fn pursuit_holds(pursuit: &Pursuit, m: usize, k: usize) {
    let mut seen = vec![false; m];
    for &i in &pursuit.indices {
        assert!(i < m && !seen[i], "index {i} out of range or repeated");
        seen[i] = true;
    }
    assert_eq!(pursuit.scores.len(), pursuit.indices.len());
    assert!(pursuit.indices.len() == k || pursuit.stopped_early);
}

/// An `m×p` kernel factor `Φ`: mostly clustered rows on the grid, so that the selections
/// get past their checks and pick; otherwise of rank below `p` (a product through
/// `r < p` columns), with rows copied from others, scaled by a power of ten from
/// subnormal to near overflow (`ΦΦ'` then under- or overflows), with a few entries
/// broken, or of any values.
pub fn factor_values(u: &mut Unstructured, m: usize, p: usize) -> Result<Array2<f64>> {
    let mut phi = match u.int_in_range(0u8..=7)? {
        0 | 1 => matrix(u, m, p, grid)?,
        2 => {
            let r = u.int_in_range(1..=p.max(1))?;
            let a = matrix(u, m, r, grid)?;
            let b = matrix(u, r, p, grid)?;
            a.dot(&b)
        }
        3 => matrix(u, m, p, real)?,
        4 => matrix(u, m, p, grid)? * 10f64.powi(u.int_in_range(-170..=160)?),
        _ => {
            let mut phi = matrix(u, m, p, grid)?;
            if m * p > 0 {
                for _ in 0..u.int_in_range(1..=3)? {
                    let (i, j) = (u.choose_index(m)?, u.choose_index(p)?);
                    phi[[i, j]] = real(u)?;
                }
            }
            phi
        }
    };
    if m > 1 && u.arbitrary()? {
        for _ in 0..u.int_in_range(1..=m)? {
            let (to, from) = (u.choose_index(m)?, u.choose_index(m)?);
            let row = phi.row(from).to_owned();
            phi.row_mut(to).assign(&row);
        }
    }
    Ok(phi)
}
