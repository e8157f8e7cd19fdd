//! The links from a model's outputs (decision values) to class probabilities.
//!
//! One implementation for every way a model predicts: the Python estimators' `predict_proba`
//! (through the binding) and the model file's [`crate::Model`]. Each follows the arithmetic
//! of SciPy's `expit`, `softmax` and `log_expit` as the estimators used it, so that a
//! probability is the same whichever way it was asked for.

use crate::error::{Error, Result};

/// How the outputs of a model become probabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The outputs are the result (a regression, features).
    Identity,
    /// One output, the log-odds of the second of two classes: `(1 − σ(z), σ(z))`.
    Logistic,
    /// One output per class, log-probabilities up to a constant: `softmax(z)`.
    Softmax,
    /// One output per class, its log-odds against the rest: `σ(z_c)` normalised to sum to 1.
    Ovr,
}

impl Link {
    /// The link of a name: `identity`, `logistic`, `softmax` or `ovr`.
    pub fn from_name(name: &str) -> Result<Link> {
        match name {
            "identity" => Ok(Link::Identity),
            "logistic" => Ok(Link::Logistic),
            "softmax" => Ok(Link::Softmax),
            "ovr" => Ok(Link::Ovr),
            other => Err(Error::invalid(
                "link",
                format!("must be identity, logistic, softmax or ovr, got {other:?}"),
            )),
        }
    }

    /// The name [`Link::from_name`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Link::Identity => "identity",
            Link::Logistic => "logistic",
            Link::Softmax => "softmax",
            Link::Ovr => "ovr",
        }
    }

    /// The number of values a row of `n_outputs` outputs becomes: two classes for the
    /// logistic link, one per output otherwise.
    pub fn width(self, n_outputs: usize) -> usize {
        match self {
            Link::Logistic => 2,
            _ => n_outputs,
        }
    }

    /// Writes the probabilities of one row of outputs `z` into `out` (`self.width(z.len())`
    /// values); the identity copies `z`.
    pub fn apply(self, z: &[f64], out: &mut [f64]) {
        debug_assert_eq!(out.len(), self.width(z.len()));
        match self {
            Link::Identity => out.copy_from_slice(z),
            Link::Logistic => {
                let positive = expit(z[0]);
                out[1] = positive;
                out[0] = 1.0 - positive;
            }
            Link::Softmax => {
                let largest = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                for (out, &value) in out.iter_mut().zip(z) {
                    *out = (value - largest).exp();
                }
                let total: f64 = out.iter().sum();
                out.iter_mut().for_each(|value| *value /= total);
            }
            Link::Ovr => {
                // Scaled by the largest in log space before normalising: where every
                // one-vs-rest log-odds is far below zero, each σ underflows to 0, and 0/0 is NaN.
                for (out, &value) in out.iter_mut().zip(z) {
                    *out = log_expit(value);
                }
                let largest = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                out.iter_mut()
                    .for_each(|value| *value = (*value - largest).exp());
                let total: f64 = out.iter().sum();
                out.iter_mut().for_each(|value| *value /= total);
            }
        }
    }

    /// The probabilities of `n_rows` rows of outputs, row-major (`n_rows × n_outputs` in,
    /// `n_rows × self.width(n_outputs)` out).
    pub fn apply_rows(self, outputs: &[f64], n_outputs: usize) -> Vec<f64> {
        let width = self.width(n_outputs);
        let rows = outputs.len().checked_div(n_outputs).unwrap_or(0);
        let mut probabilities = vec![0.0; rows * width];
        for (z, out) in outputs
            .chunks_exact(n_outputs.max(1))
            .zip(probabilities.chunks_exact_mut(width.max(1)))
        {
            self.apply(z, out);
        }
        probabilities
    }
}

/// The logistic function, as SciPy's `expit`: `1 / (1 + e^(−x))`.
pub fn expit(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `log σ(x)` without underflow, as SciPy's `log_expit`.
pub fn log_expit(x: f64) -> f64 {
    if x < 0.0 {
        x - x.exp().ln_1p()
    } else {
        -(-x).exp().ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for link in [Link::Identity, Link::Logistic, Link::Softmax, Link::Ovr] {
            assert_eq!(Link::from_name(link.name()).unwrap(), link);
        }
        assert!(Link::from_name("probit").is_err());
    }

    #[test]
    fn probabilities_sum_to_one_and_order_as_the_outputs() {
        let mut out = [0.0; 2];
        Link::Logistic.apply(&[2.0], &mut out);
        assert!((out[1] - 1.0 / (1.0 + (-2.0f64).exp())).abs() < 1e-16);
        assert!((out[0] + out[1] - 1.0).abs() < 1e-15);
        for link in [Link::Softmax, Link::Ovr] {
            let mut out = [0.0; 3];
            link.apply(&[-1.0, 3.0, 0.5], &mut out);
            assert!((out.iter().sum::<f64>() - 1.0).abs() < 1e-15);
            assert!(out[1] > out[2] && out[2] > out[0]);
        }
    }

    #[test]
    fn extreme_outputs_stay_finite() {
        let mut out = [0.0; 3];
        Link::Ovr.apply(&[-1000.0, -1200.0, -1100.0], &mut out);
        assert!((out[0] - 1.0).abs() < 1e-15 && out.iter().all(|p| p.is_finite()));
        Link::Softmax.apply(&[1e300, -1e300, 0.0], &mut out);
        assert_eq!(out, [1.0, 0.0, 0.0]);
        let mut two = [0.0; 2];
        Link::Logistic.apply(&[-800.0], &mut two);
        assert_eq!(two, [1.0, 0.0]);
        assert!(log_expit(-800.0) == -800.0 && log_expit(800.0) == 0.0);
    }
}
