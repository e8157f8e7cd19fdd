//! Prediction: the specification's six steps, through `&self`.

use super::{Basis, Float, Model, Task};
use crate::error::{Error, Result};
use crate::kernel::{self, Bases};
use crate::real::Real;
use crate::tuning::DIRECT_EXPANSION_ROWS;
use ndarray::{Array2, ArrayView2};
use std::any::TypeId;
use std::sync::atomic::AtomicBool;

/// The input rows of a call, in the type the caller holds them.
#[derive(Clone, Copy)]
enum Rows<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
}

impl Rows<'_> {
    fn len(&self) -> usize {
        match self {
            Rows::F64(x) => x.len(),
            Rows::F32(x) => x.len(),
        }
    }

    fn get(&self, i: usize) -> f64 {
        match self {
            Rows::F64(x) => x[i],
            Rows::F32(x) => x[i] as f64,
        }
    }
}

impl Model {
    /// `z`, the decision values of a classifier or the values of a regressor:
    /// `n_rows × n_outputs`, row-major (for a two-class model, one log-odds per row).
    pub fn decision_function(&self, x: &[f64], n_rows: usize) -> Result<Vec<f64>> {
        self.require(&[Task::Classifier, Task::Regressor], "decision_function")?;
        Ok(self
            .outputs(Rows::F64(x), n_rows)?
            .into_raw_vec_and_offset()
            .0)
    }

    /// The probabilities of the classes, `n_rows × n_classes`, row-major.
    pub fn predict_proba(&self, x: &[f64], n_rows: usize) -> Result<Vec<f64>> {
        self.require(&[Task::Classifier], "predict_proba")?;
        let z = self.outputs(Rows::F64(x), n_rows)?;
        Ok(self.probabilities(&z))
    }

    /// [`Model::predict_proba`] of `float32` rows, as `float32`. A `float32` model takes
    /// them as they are; a `float64` one widens them. The link runs in `float64`.
    pub fn predict_proba_f32(&self, x: &[f32], n_rows: usize) -> Result<Vec<f32>> {
        self.require(&[Task::Classifier], "predict_proba")?;
        let z = self.outputs(Rows::F32(x), n_rows)?;
        Ok(self.probabilities(&z).iter().map(|&p| p as f32).collect())
    }

    /// The predicted classes, as indices into [`Model::classes`]: the first class of
    /// largest probability.
    pub fn predict(&self, x: &[f64], n_rows: usize) -> Result<Vec<usize>> {
        self.require(&[Task::Classifier], "predict")?;
        let z = self.outputs(Rows::F64(x), n_rows)?;
        let classes = self.n_classes();
        Ok(self
            .probabilities(&z)
            .chunks_exact(classes)
            .map(|row| {
                let mut best = 0;
                for (c, &p) in row.iter().enumerate() {
                    if p > row[best] {
                        best = c;
                    }
                }
                best
            })
            .collect())
    }

    /// The features of a transformer, `n_rows × n_outputs`, row-major.
    pub fn transform(&self, x: &[f64], n_rows: usize) -> Result<Vec<f64>> {
        self.require(&[Task::Transformer], "transform")?;
        Ok(self
            .outputs(Rows::F64(x), n_rows)?
            .into_raw_vec_and_offset()
            .0)
    }

    fn require(&self, tasks: &[Task], method: &str) -> Result<()> {
        if tasks.contains(&self.task) {
            return Ok(());
        }
        let task = match self.task {
            Task::Classifier => "a classifier",
            Task::Regressor => "a regressor",
            Task::Transformer => "a transformer",
        };
        Err(Error::Unsupported(format!(
            "{method}: the model ({}) is {task}",
            self.estimator
        )))
    }

    /// Steps 1-5: `z`, `n_rows × n_outputs`.
    fn outputs(&self, x: Rows, n_rows: usize) -> Result<Array2<f64>> {
        let d = self.n_features;
        if n_rows.checked_mul(d) != Some(x.len()) {
            return Err(Error::invalid(
                "X",
                format!(
                    "has {} values, not n_rows × n_features = {n_rows} × {d}",
                    x.len()
                ),
            ));
        }
        if let Some(i) = (0..x.len()).find(|&i| !x.get(i).is_finite()) {
            return Err(Error::invalid(
                "X",
                format!("row {} has a non-finite value at column {}", i / d, i % d),
            ));
        }
        n_rows
            .checked_mul(self.n_outputs.max(self.n_classes()))
            .filter(|&n| n <= isize::MAX as usize / 8)
            .ok_or(Error::OutOfMemory {
                what: "the outputs",
                bytes: usize::MAX,
            })?;
        let stop = AtomicBool::new(false);
        let direct = self.lower.is_none() && self.center.is_none();
        let mut z = match &self.basis {
            Basis::F64(bases) => {
                let x = as_f64(x);
                let x = ArrayView2::from_shape((n_rows, d), &x).expect("length checked");
                if direct {
                    self.expand(x, bases, &stop)?
                } else {
                    let values = kernel::cross_prepared(
                        x,
                        bases,
                        self.kernel.as_ref().expect("named kernel"),
                        self.n_threads,
                        &stop,
                    )?;
                    self.linear(values)?
                }
            }
            Basis::F32(bases) => {
                let x = as_f32(x, d)?;
                let x = ArrayView2::from_shape((n_rows, d), &x).expect("length checked");
                if direct {
                    self.expand(x, bases, &stop)?
                } else {
                    let kernel = self.kernel.as_ref().expect("named kernel");
                    let values = kernel::cross_prepared(x, bases, kernel, self.n_threads, &stop)?;
                    self.linear(values.mapv(f64::from))?
                }
            }
            Basis::Empty => {
                if let (Float::F32, Rows::F64(x)) = (self.float, x) {
                    for (i, &v) in x.iter().enumerate() {
                        narrow(v, i / d, i % d)?;
                    }
                }
                self.linear(Array2::zeros((n_rows, 0)))?
            }
            Basis::Columns(columns) => {
                let mut values = Array2::<f64>::zeros((n_rows, columns.len()));
                for (i, mut row) in values.rows_mut().into_iter().enumerate() {
                    for (value, &j) in row.iter_mut().zip(columns) {
                        let v = x.get(i * d + j);
                        // Step 1 in `dtype`: a float32 model rounds its input first.
                        *value = match self.float {
                            Float::F32 => narrow(v, i, j)? as f64,
                            Float::F64 => v,
                        };
                    }
                }
                self.linear(values)?
            }
        };
        if let Some((slope, offset)) = &self.calibration {
            for mut row in z.rows_mut() {
                for ((value, &s), &o) in row.iter_mut().zip(slope).zip(offset) {
                    *value = s * *value + o;
                }
            }
        }
        if let Some(i) = z
            .rows()
            .into_iter()
            .position(|row| !row.iter().all(|v| v.is_finite()))
        {
            return Err(Error::invalid(
                "X",
                format!("row {i}: the model's outputs overflow; scale the features"),
            ));
        }
        Ok(z)
    }

    /// Steps 1 and 4 as one kernel expansion: Python's own call, or for a few float64 rows
    /// the direct loop (the same arithmetic to rounding).
    fn expand<F: Real>(
        &self,
        x: ArrayView2<F>,
        bases: &Bases<F>,
        stop: &AtomicBool,
    ) -> Result<Array2<f64>> {
        let kernel = self.kernel.as_ref().expect("named kernel");
        // float64 only: in float32 another order of the sums changes the kernel values by
        // float32's rounding (~1e-7), and a row would no longer agree with Python's to 1e-12.
        if x.nrows() <= DIRECT_EXPANSION_ROWS && TypeId::of::<F>() == TypeId::of::<f64>() {
            return kernel::expansion_direct(x, bases, self.weights.view(), &self.bias, kernel);
        }
        kernel::expansion_prepared(
            x,
            bases,
            self.weights.view(),
            &self.bias,
            kernel,
            self.n_threads,
            stop,
        )
    }

    /// Steps 2-4 on the kernel values `v` (`n × n_bases`, float64).
    fn linear(&self, mut v: Array2<f64>) -> Result<Array2<f64>> {
        let k = self.n_bases();
        if let Some(lower) = &self.lower {
            for mut row in v.rows_mut() {
                let row = row.as_slice_mut().expect("standard layout");
                for i in 0..k {
                    let li = &lower[i * k..i * k + i];
                    let sum: f64 = li.iter().zip(&row[..i]).map(|(l, v)| l * v).sum();
                    row[i] = (row[i] - sum) / lower[i * k + i];
                }
            }
        }
        if let Some(center) = &self.center {
            for mut row in v.rows_mut() {
                row -= &ndarray::ArrayView1::from(center);
            }
        }
        let mut z = v.dot(&self.weights);
        for mut row in z.rows_mut() {
            row += &ndarray::ArrayView1::from(&self.bias);
        }
        Ok(z)
    }

    /// Step 6 for every row of `z`, row-major `n × n_classes`.
    fn probabilities(&self, z: &Array2<f64>) -> Vec<f64> {
        let values = z.as_slice().expect("standard layout");
        self.link.apply_rows(values, self.n_outputs)
    }
}

fn as_f64(x: Rows) -> std::borrow::Cow<[f64]> {
    match x {
        Rows::F64(x) => std::borrow::Cow::Borrowed(x),
        Rows::F32(x) => std::borrow::Cow::Owned(x.iter().map(|&v| v as f64).collect()),
    }
}

fn as_f32(x: Rows, d: usize) -> Result<std::borrow::Cow<[f32]>> {
    match x {
        Rows::F32(x) => Ok(std::borrow::Cow::Borrowed(x)),
        Rows::F64(x) => x
            .iter()
            .enumerate()
            .map(|(i, &v)| narrow(v, i / d.max(1), i % d.max(1)))
            .collect::<Result<Vec<f32>>>()
            .map(std::borrow::Cow::Owned),
    }
}

/// `v` in float32, or an error naming its row and column if it is beyond float32's range
/// (the value in short scientific form: it has some 300 digits).
fn narrow(v: f64, row: usize, column: usize) -> Result<f32> {
    let narrowed = v as f32;
    if narrowed.is_finite() {
        Ok(narrowed)
    } else {
        Err(Error::invalid(
            "X",
            format!(
                "row {row} has a value ({v:.3e}) at column {column} beyond the range of the \
                 model's float32"
            ),
        ))
    }
}
