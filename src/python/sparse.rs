//! Rows as the Python layer hands them over: a 2-D NumPy array, or a SciPy CSR matrix
//! (`csr_matrix` or `csr_array`) whose three arrays are borrowed without copying. Other
//! sparse formats are refused: the Python layer converts them to CSR first.

use super::common::{kernel_call, parse_kernel};
use super::kernels::linked;
use crate::csr::{CsrView, Indices};
use crate::error::Error;
use crate::kernel::{self, Kernel, Rows, SparseBases};
use crate::link::Link;
use crate::operator::{KernelOperator, SparseFactor};
use crate::real::Real;
use ndarray::Array2;
use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::atomic::AtomicBool;

/// The format of a SciPy sparse matrix or array (`"csr"`, `"coo"`, …), which names it in a
/// string attribute; `None` for anything else.
fn sparse_format(obj: &Bound<'_, PyAny>) -> Option<String> {
    obj.getattr("format").ok()?.extract::<String>().ok()
}

/// Whether `obj` is a SciPy sparse matrix or array, of any format.
pub(super) fn is_sparse(obj: &Bound<'_, PyAny>) -> bool {
    sparse_format(obj).is_some()
}

/// Column indices or row pointers as SciPy stores them.
enum IndexArray<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

impl<'py> IndexArray<'py> {
    fn extract(owner: &Bound<'py, PyAny>, name: &str, argument: &str) -> PyResult<Self> {
        let array = owner.getattr(name)?;
        if let Ok(array) = array.extract::<PyReadonlyArray1<'py, i32>>() {
            return Ok(IndexArray::I32(array));
        }
        if let Ok(array) = array.extract::<PyReadonlyArray1<'py, i64>>() {
            return Ok(IndexArray::I64(array));
        }
        Err(PyTypeError::new_err(format!(
            "{argument}: a sparse matrix's {name} must be a 1-D int32 or int64 array"
        )))
    }

    fn indices(&self, name: &str, argument: &str) -> PyResult<Indices<'_>> {
        let contiguous = |_| {
            PyValueError::new_err(format!(
                "{argument}: a sparse matrix's {name} must be contiguous"
            ))
        };
        Ok(match self {
            IndexArray::I32(array) => Indices::I32(array.as_slice().map_err(contiguous)?),
            IndexArray::I64(array) => Indices::I64(array.as_slice().map_err(contiguous)?),
        })
    }
}

/// A SciPy CSR matrix's arrays, borrowed.
pub(super) struct CsrArg<'py, F: numpy::Element> {
    data: PyReadonlyArray1<'py, F>,
    indices: IndexArray<'py>,
    indptr: IndexArray<'py>,
    shape: (usize, usize),
}

/// Rows given as a NumPy array or a SciPy CSR matrix.
pub(super) enum RowsArg<'py, F: numpy::Element> {
    Dense(PyReadonlyArray2<'py, F>),
    Csr(CsrArg<'py, F>),
}

impl<'py, F: Real + numpy::Element> RowsArg<'py, F> {
    /// `obj` as rows of `F`: `Ok(None)` when it holds another dtype (or is not an array at
    /// all); a `TypeError` naming `argument` for a sparse matrix that is not CSR.
    pub(super) fn extract(obj: &Bound<'py, PyAny>, argument: &str) -> PyResult<Option<Self>> {
        let Ok(format) = obj.getattr("format") else {
            return Ok(obj
                .extract::<PyReadonlyArray2<'py, F>>()
                .ok()
                .map(RowsArg::Dense));
        };
        if format.extract::<String>().ok().as_deref() != Some("csr") {
            return Err(PyTypeError::new_err(format!(
                "{argument}: a sparse matrix must be CSR (call .tocsr() first)"
            )));
        }
        let Ok(data) = obj.getattr("data")?.extract::<PyReadonlyArray1<'py, F>>() else {
            return Ok(None);
        };
        let shape: (usize, usize) = obj.getattr("shape")?.extract().map_err(|_| {
            PyTypeError::new_err(format!("{argument}: a sparse matrix must be 2-D"))
        })?;
        Ok(Some(RowsArg::Csr(CsrArg {
            data,
            indices: IndexArray::extract(obj, "indices", argument)?,
            indptr: IndexArray::extract(obj, "indptr", argument)?,
            shape,
        })))
    }

    /// The rows' view, a CSR one checked (`CsrView::new`: canonical, in range, finite).
    pub(super) fn view(&self, argument: &'static str) -> PyResult<Rows<'_, F>> {
        Ok(match self {
            RowsArg::Dense(array) => Rows::Dense(array.as_array()),
            RowsArg::Csr(csr) => {
                let data = csr.data.as_slice().map_err(|_| {
                    PyValueError::new_err(format!(
                        "{argument}: a sparse matrix's data must be contiguous"
                    ))
                })?;
                Rows::Csr(CsrView::new(
                    csr.shape,
                    csr.indptr.indices("indptr", argument)?,
                    csr.indices.indices("indices", argument)?,
                    data,
                    argument,
                )?)
            }
        })
    }

    /// The stored entries' count a call's work scales with: every entry of dense rows.
    pub(super) fn stored(&self) -> usize {
        match self {
            RowsArg::Dense(array) => array.len(),
            RowsArg::Csr(csr) => csr.data.len(),
        }
    }
}

/// The operator of a factor given as rows: `ΦΦ'` of dense rows `Φ`, or `XX'` of CSR rows
/// (`Φ = X`, the linear kernel of sparse rows), whose transpose is made into `sparse`; its
/// set-up looks at the call's `stop`.
pub(super) fn factor_operator<'a, 'r: 'a, F: Real>(
    rows: &'a Rows<'r, F>,
    sparse: &'a mut Option<SparseFactor<'a, F>>,
    n_threads: usize,
    argument: &'static str,
    stop: &'a AtomicBool,
) -> Result<KernelOperator<'a, F>, Error> {
    Ok(match rows {
        Rows::Dense(view) => KernelOperator::factored_of(view, argument)?,
        Rows::Csr(csr) => {
            KernelOperator::Sparse(sparse.insert(SparseFactor::new(csr.clone(), n_threads, stop)?))
        }
    })
}

/// Points indexed once by feature, dense or CSR (`kernel::SparseBases`), for the many kernels
/// against them a pivoted Cholesky asks for: each call then costs the rows' stored entries'
/// share of the points, not another index of them.
#[pyclass(module = "gkfda._core", name = "PreparedPoints", frozen)]
pub(super) struct PreparedPoints {
    bases: SparseBases,
    kernel: Kernel,
    dtype: &'static str,
}

#[pymethods]
impl PreparedPoints {
    #[new]
    #[pyo3(signature = (points, *, kernel="rbf", gamma=1.0, degree=3, coef0=1.0))]
    fn new(
        points: &Bound<'_, PyAny>,
        kernel: &str,
        gamma: f64,
        degree: u32,
        coef0: f64,
    ) -> PyResult<Self> {
        let kernel = parse_kernel(kernel, gamma, degree, coef0)?;
        fn indexed<F: Real + numpy::Element>(
            py: Python<'_>,
            rows: RowsArg<'_, F>,
        ) -> PyResult<SparseBases> {
            let view = rows.view("points")?;
            Ok(py.detach(|| SparseBases::from_rows(&view))?)
        }
        let py = points.py();
        if let Some(rows) = RowsArg::<f64>::extract(points, "points")? {
            let bases = indexed(py, rows)?;
            return Ok(PreparedPoints {
                bases,
                kernel,
                dtype: "float64",
            });
        }
        if let Some(rows) = RowsArg::<f32>::extract(points, "points")? {
            let bases = indexed(py, rows)?;
            return Ok(PreparedPoints {
                bases,
                kernel,
                dtype: "float32",
            });
        }
        Err(PyTypeError::new_err(
            "points: must be a 2-D float32 or float64 NumPy array or SciPy CSR matrix",
        ))
    }

    /// `K(x, points)` (`n × len(points)`) of the rows `x`, dense or CSR, of the points' dtype.
    #[pyo3(signature = (x, *, n_threads=1))]
    fn kernel<'py>(&self, x: &Bound<'py, PyAny>, n_threads: usize) -> PyResult<Bound<'py, PyAny>> {
        fn typed<'py, F: Real + numpy::Element>(
            prepared: &PreparedPoints,
            x: RowsArg<'py, F>,
            n_threads: usize,
            py: Python<'py>,
        ) -> PyResult<Bound<'py, PyAny>> {
            let rows = x.view("X")?;
            let size = (x.stored(), prepared.bases.shape().0, 1);
            let result = kernel_call(py, size, |stop| {
                kernel::cross_rows_prepared(
                    &rows,
                    &prepared.bases,
                    &prepared.kernel,
                    n_threads,
                    stop,
                )
            })?;
            Ok(result.into_pyarray(py).into_any())
        }
        let py = x.py();
        let wrong = || {
            PyTypeError::new_err(format!(
                "X: must be 2-D {} rows like the points",
                self.dtype
            ))
        };
        if self.dtype == "float64" {
            typed(
                self,
                RowsArg::<f64>::extract(x, "X")?.ok_or_else(wrong)?,
                n_threads,
                py,
            )
        } else {
            typed(
                self,
                RowsArg::<f32>::extract(x, "X")?.ok_or_else(wrong)?,
                n_threads,
                py,
            )
        }
    }

    /// `Σ_j weights[j, c] κ(x, points_j) + bias[c]` of the rows `x` (CSR or dense, of the
    /// points' dtype; float64 out), or with `link` the class probabilities: what
    /// `kernel_expansion` gives with these points, without indexing them again.
    #[pyo3(signature = (x, weights, bias, *, link="identity", n_threads=1))]
    fn expansion<'py>(
        &self,
        x: &Bound<'py, PyAny>,
        weights: PyReadonlyArray2<'py, f64>,
        bias: PyReadonlyArray1<'py, f64>,
        link: &str,
        n_threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        fn typed<'py, F: Real + numpy::Element>(
            prepared: &PreparedPoints,
            x: RowsArg<'py, F>,
            (weights, bias): (PyReadonlyArray2<'py, f64>, Vec<f64>),
            n_threads: usize,
            py: Python<'py>,
        ) -> PyResult<Array2<f64>> {
            let rows = x.view("X")?;
            let weights = weights.as_array();
            let size = (x.stored(), prepared.bases.shape().0, 1);
            kernel_call(py, size, |stop| {
                kernel::expansion_rows_prepared(
                    &rows,
                    &prepared.bases,
                    weights,
                    &bias,
                    &prepared.kernel,
                    n_threads,
                    stop,
                )
            })
        }
        let py = x.py();
        let link = Link::from_name(link)?;
        let bias = bias.as_array().to_vec();
        let wrong = || {
            PyTypeError::new_err(format!(
                "X: must be 2-D {} rows like the points",
                self.dtype
            ))
        };
        let values = if self.dtype == "float64" {
            let rows = RowsArg::<f64>::extract(x, "X")?.ok_or_else(wrong)?;
            typed(self, rows, (weights, bias), n_threads, py)?
        } else {
            let rows = RowsArg::<f32>::extract(x, "X")?.ok_or_else(wrong)?;
            typed(self, rows, (weights, bias), n_threads, py)?
        };
        Ok(linked(py, values, link))
    }

    /// `(number of points, their width)`.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        self.bases.shape()
    }
}
