//! gkfda — sparse greedy Kernel Fisher Discriminant Analysis (matching-pursuit KFDA).
//!
//! The Rust core: kernel matrices ([`kernel`]) and the greedy basis selection of
//! Diethe (2015), Algorithm 1 ([`selection`]), with every selection criterion, deflation
//! and stage count, in O(m²) per pick over a read-only kernel; the matching-pursuit family
//! (kernel matching pursuit, sparse kernel PCA and CCA) on one engine of general per-column
//! statistics ([`pursuit`]); kFDA_q's majorize–minimize ([`parsimonious`]); and the
//! temperatures of the models' probability calibration ([`calibration`]). It knows nothing
//! of Python; the optional `python` feature adds the one binding module.
//!
//! ```
//! use gkfda::{kernel, selection, Criterion, Deflation, GreedyParams, Kernel};
//! use ndarray::array;
//!
//! let x = array![[0.0, 0.1], [0.2, 0.0], [1.0, 1.1], [1.2, 0.9], [0.1, 0.2], [1.1, 1.0]];
//! let labels = [false, false, true, true, false, true];
//! let k = kernel::gram(x.view(), &Kernel::Rbf { gamma: 1.0 }, 1).unwrap();
//! let params = GreedyParams { k: 3, criterion: Criterion::Optimal,
//!                             deflation: Deflation::Schur, ..GreedyParams::default() };
//! let selection = selection::select(k.view(), &labels, &params).unwrap();
//! assert_eq!(selection.indices.len(), 3);
//! ```

// Lets the test helpers shared with `tests/` name the crate `gkfda` in its unit tests too.
#[cfg(test)]
extern crate self as gkfda;
// The helpers of tests/common, for the unit tests of the selection and the passes.
#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod test_common;

pub mod calibration;
pub mod capi;
pub mod checks;
pub mod csr;
pub mod error;
pub mod factor;
pub mod kernel;
pub mod link;
pub mod model;
pub mod operator;
mod params;
pub mod parsimonious;
pub mod passes;
mod pool;
pub mod progress;
pub mod pursuit;
mod real;
pub mod selection;
pub mod simd;
mod tuning;

#[cfg(feature = "python")]
mod python;

pub use error::{Error, Result};
pub use kernel::Kernel;
pub use link::Link;
pub use model::{Model, Task};
pub use params::{Criterion, Deflation, GreedyParams};
pub use progress::Progress;
pub use real::Real;
pub use selection::Selection;
