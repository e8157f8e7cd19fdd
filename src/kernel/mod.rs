//! Kernel matrices, computed in row blocks in parallel.
//!
//! Each block is one GEMM of a slab of rows against the other set (sequential inside a
//! block so that a value never depends on the thread count; faer's for the Gram matrix,
//! ndarray's elsewhere: see `gemm`), then the kernel's elementwise map. The symmetric Gram matrix computes only the upper block triangle and
//! mirrors it, so it is exactly symmetric and costs half the exponentials.
//!
//! `mod.rs` holds the kernels, their parameters and the elementwise map every kind of
//! block ends with; `blocks.rs` what every block computation shares (row blocks run in
//! parallel, the RBF centre, prepared bases); `dense.rs` the kernel matrices of dense rows
//! (the Gram matrix, cross kernels); `expansion.rs` the kernel expansions of prediction.

use crate::error::{Error, Result};
use crate::real::Real;
use ndarray::ArrayViewMut2;

mod blocks;
mod dense;
mod expansion;
mod sparse;
#[cfg(test)]
mod tests;

pub(crate) use blocks::Bases;
pub use dense::{cross, cross_with_stop, gram, gram_into, gram_into_with_stop};
pub(crate) use dense::{cross_prepared, gemm, gram_lower, times_lower};
pub use expansion::{expansion, expansion_with_stop};
pub(crate) use expansion::{expansion_direct, expansion_prepared};
pub(crate) use sparse::{cross_csr_prepared, pool_csr};
pub use sparse::{
    cross_rows_prepared, cross_rows_with_stop, expansion_rows_prepared, expansion_rows_with_stop,
    gram_rows_into_with_stop, Rows, SparseBases,
};

/// A positive semi-definite kernel function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kernel {
    /// `x·z`
    Linear,
    /// `exp(-gamma ‖x − z‖²)` (the papers' width `w` is `1/gamma`).
    Rbf { gamma: f64 },
    /// `(gamma x·z + coef0)^degree`
    Poly { gamma: f64, degree: u32, coef0: f64 },
}

impl Kernel {
    /// The kernels' names, as [`Kernel::from_name`] reads them and the Python package lists
    /// them (`gkfda.KERNELS`).
    pub const NAMES: [&'static str; 3] = ["rbf", "linear", "poly"];

    /// The kernel called `name`, with those of the parameters it takes.
    ///
    /// ```
    /// use gkfda::Kernel;
    /// assert_eq!(Kernel::from_name("rbf", 0.5, 3, 1.0), Ok(Kernel::Rbf { gamma: 0.5 }));
    /// assert!(Kernel::from_name("sigmoid", 0.5, 3, 1.0).is_err());
    /// ```
    pub fn from_name(name: &str, gamma: f64, degree: u32, coef0: f64) -> Result<Kernel> {
        match name {
            "rbf" => Ok(Kernel::Rbf { gamma }),
            "linear" => Ok(Kernel::Linear),
            "poly" => Ok(Kernel::Poly {
                gamma,
                degree,
                coef0,
            }),
            other => Err(Error::invalid(
                "kernel",
                format!(
                    "unknown name {other:?}; expected one of {}",
                    Kernel::NAMES.join(", ")
                ),
            )),
        }
    }

    /// Checks the parameters once, before any work.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Kernel::Linear => Ok(()),
            Kernel::Rbf { gamma } | Kernel::Poly { gamma, .. }
                if !(gamma.is_finite() && gamma > 0.0) =>
            {
                Err(Error::invalid(
                    "gamma",
                    format!("must be a positive finite number, got {gamma}"),
                ))
            }
            Kernel::Poly { degree: 0, .. } => Err(Error::invalid("degree", "must be at least 1")),
            // The power is taken by `powi`, whose exponent is an i32.
            Kernel::Poly { degree, .. } if degree > i32::MAX as u32 => Err(Error::invalid(
                "degree",
                format!("must be at most {}, got {degree}", i32::MAX),
            )),
            Kernel::Poly { coef0, .. } if !coef0.is_finite() => Err(Error::invalid(
                "coef0",
                format!("must be finite, got {coef0}"),
            )),
            _ => Ok(()),
        }
    }

    /// [`Kernel::validate`], and a `gamma` that `F` can hold: a float32 `gamma` beyond
    /// `f32::MAX` would be infinite, and `∞ · 0` a NaN kernel value at distance 0.
    pub(crate) fn validate_for<F: Real>(&self) -> Result<()> {
        self.validate()?;
        match *self {
            Kernel::Rbf { gamma } | Kernel::Poly { gamma, .. }
                if gamma > F::max_value().as_f64() =>
            {
                Err(Error::invalid(
                    "gamma",
                    format!(
                        "{gamma} is beyond the range of {}; use float64",
                        std::any::type_name::<F>()
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Maps inner products (and squared norms, for the RBF) to kernel values in place.
    pub(super) fn map_block<F: Real>(
        &self,
        mut block: ArrayViewMut2<F>,
        norms_x: &[F],
        norms_z: &[F],
    ) {
        match *self {
            Kernel::Linear => {}
            Kernel::Rbf { gamma } => {
                let minus_gamma = F::from_f64(-gamma);
                let two = F::from_f64(2.0);
                for (mut row, &nx) in block.rows_mut().into_iter().zip(norms_x) {
                    // exp(−γ (|x|² + |z|² − 2 x·z)) over the row: every caller here maps
                    // blocks of row-major arrays, whose rows are contiguous.
                    let values = row
                        .as_slice_mut()
                        .expect("kernel blocks have contiguous rows");
                    for (value, &nz) in values.iter_mut().zip(norms_z) {
                        // Rounding can make a tiny distance negative: clamp it to 0, but let
                        // a NaN through (`max` would turn it into 0, and its kernel value to 1).
                        let mut distance = nx + nz - two * *value;
                        if distance.is_nan() && ((nx == F::infinity()) != (nz == F::infinity())) {
                            // One squared norm beyond `F`'s range, the other within it, and
                            // a product that overflowed too (∞ − ∞): the points are farther
                            // apart than `F` holds, at kernel value 0, as in a wider type.
                            // Both beyond it (a Gram matrix of such points, whose diagonal
                            // is 1) cannot be told apart: the NaN stays and is refused as
                            // the overflow it is. A NaN point has a NaN norm and keeps it.
                            distance = F::infinity();
                        }
                        *value = minus_gamma
                            * if distance < F::zero() {
                                F::zero()
                            } else {
                                distance
                            };
                    }
                    F::exp_in_place(values);
                }
            }
            Kernel::Poly {
                gamma,
                degree,
                coef0,
            } => {
                let (gamma, coef0) = (F::from_f64(gamma), F::from_f64(coef0));
                block.mapv_inplace(|g| (gamma * g + coef0).powi(degree as i32));
            }
        }
    }
}
