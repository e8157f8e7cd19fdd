//! The floating-point types the engine runs in: `f32` and `f64`, from one source.

use std::fmt::Debug;
use std::iter::Sum;

/// A floating-point scalar the engine and kernels are generic over.
pub trait Real:
    num_traits::Float
    + ndarray::LinalgScalar
    + Default
    + Debug
    + Sum
    + Send
    + Sync
    + std::ops::AddAssign
    + std::ops::SubAssign
    + crate::simd::Dots
    + bytemuck::Zeroable
    + 'static
{
    /// Relative threshold below which a column counts as numerically explained
    /// (the guards of docs/architecture.md, "Per-column statistics"); the NumPy reference
    /// uses the same values.
    const DEFAULT_TOL: f64;

    fn from_f64(value: f64) -> Self;
    fn as_f64(self) -> f64;
    /// `exp` of every element, in place (vectorised where the CPU allows; see `exp`).
    fn exp_in_place(values: &mut [Self]);
}

impl Real for f32 {
    const DEFAULT_TOL: f64 = 1e-4;
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn exp_in_place(values: &mut [Self]) {
        crate::simd::exp::exp_in_place_f32(values)
    }
}

impl Real for f64 {
    const DEFAULT_TOL: f64 = 1e-9;
    fn from_f64(value: f64) -> Self {
        value
    }
    fn as_f64(self) -> f64 {
        self
    }
    fn exp_in_place(values: &mut [Self]) {
        crate::simd::exp::exp_in_place_f64(values)
    }
}
