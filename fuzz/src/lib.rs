//! Inputs shared by the fuzz targets: floats that reach the edges of `f64` and `f32`,
//! point sets, and arrays in each memory layout the public API accepts.

use arbitrary::{Arbitrary, Result, Unstructured};
use gkfda::{kernel, Kernel, Real};
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
