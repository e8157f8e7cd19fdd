//! The selection in the factor's coordinates over rows held elsewhere: what a worker runs on
//! its chunk of rows (`factor_moments`, `FactorRowStatistics`), and the driver's reading of a
//! Python holder of chunks ([`PyFactorRows`], `greedy_select(None, y, k, factor=holder)` with
//! a holder that has `advance`), one round of the holder a stage.

use super::common::reporting;
use super::selection::{selection_tuple, Problems, SelectionTuple};
use crate::error::Error;
use crate::params::Criterion;
use crate::real::Real;
use crate::selection::{
    self, Candidate, FactorRows, Moments, RowParts, RowStatistics, RowTerm, RowsSetUp,
};
use ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::{atomic::AtomicBool, Mutex};

/// `values` as indices (`argument` names them in errors): each in `0..limit`.
fn indices_of(
    values: &PyReadonlyArray1<'_, i64>,
    limit: usize,
    argument: &str,
) -> PyResult<Vec<usize>> {
    values
        .as_array()
        .iter()
        .map(|&v| {
            usize::try_from(v)
                .ok()
                .filter(|&v| v < limit)
                .ok_or_else(|| {
                    PyValueError::new_err(format!("{argument}: {v} is not in 0..{limit}"))
                })
        })
        .collect()
}

/// A row-major `(rows, cols)` array of `f64` as its rows.
fn rows_of(array: &PyReadonlyArray2<'_, f64>) -> Vec<Vec<f64>> {
    array
        .as_array()
        .outer_iter()
        .map(|row| row.to_vec())
        .collect()
}

/// `vectors` (each of `width` values) as a `(len, width)` array.
fn stacked<'py, T: Copy + numpy::Element>(
    py: Python<'py>,
    vectors: &[Vec<T>],
    width: usize,
    zero: T,
) -> Bound<'py, PyArray2<T>> {
    Array2::from_shape_fn((vectors.len(), width), |(r, c)| {
        vectors[r].get(c).copied().unwrap_or(zero)
    })
    .into_pyarray(py)
}

/// A chunk's rows of `Φ`, float64 or float32, borrowed.
enum Chunk<'py> {
    F64(PyReadonlyArray2<'py, f64>),
    F32(PyReadonlyArray2<'py, f32>),
}

impl<'py> Chunk<'py> {
    fn of(phi: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(phi) = phi.extract::<PyReadonlyArray2<f64>>() {
            return Ok(Chunk::F64(phi));
        }
        if let Ok(phi) = phi.extract::<PyReadonlyArray2<f32>>() {
            return Ok(Chunk::F32(phi));
        }
        Err(PyTypeError::new_err(
            "phi: must be a 2-D float32 or float64 NumPy array",
        ))
    }

    fn shape(&self) -> (usize, usize) {
        match self {
            Chunk::F64(phi) => (phi.shape()[0], phi.shape()[1]),
            Chunk::F32(phi) => (phi.shape()[0], phi.shape()[1]),
        }
    }
}

/// A row-major view's values, or a ValueError (a Fortran-ordered array is contiguous too,
/// but its values are not in the rows' order).
fn contiguous<'a, F: numpy::Element>(phi: &'a PyReadonlyArray2<'_, F>) -> PyResult<&'a [F]> {
    let refused = || PyValueError::new_err("phi: must be a C-contiguous, aligned array");
    if !phi.is_c_contiguous() {
        return Err(refused());
    }
    phi.as_slice().map_err(|_| refused())
}

/// `(G, E, σ)` as arrays.
type MomentArrays<'py> = (
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<f64>>,
);

/// `(G, E, σ)` of a chunk's rows `phi` of class codes `classes`, class `c` weighing
/// `class_weights[c]` (float64, `p×p`, `p×p` and `C×p`): the chunk's share of the
/// selection's set-up, summed by the driver in chunk order.
#[pyfunction]
#[pyo3(signature = (phi, classes, class_weights, *, n_threads=1))]
pub(super) fn factor_moments<'py>(
    py: Python<'py>,
    phi: &Bound<'py, PyAny>,
    classes: PyReadonlyArray1<'py, i64>,
    class_weights: PyReadonlyArray1<'py, f64>,
    n_threads: usize,
) -> PyResult<MomentArrays<'py>> {
    let chunk = Chunk::of(phi)?;
    let (rows, p) = chunk.shape();
    let class_weights = class_weights.as_array().to_vec();
    let codes: Vec<u32> = indices_of(&classes, class_weights.len(), "classes")?
        .into_iter()
        .map(|c| c as u32)
        .collect();
    if codes.len() != rows {
        return Err(PyValueError::new_err(format!(
            "classes: {} codes for {rows} rows",
            codes.len()
        )));
    }
    let pool = crate::pool::shared(n_threads)?;
    // A chunk's share, a task on a worker: the driver's interrupt ends the round, not this.
    let never = AtomicBool::new(false);
    let moments = match &chunk {
        Chunk::F64(phi) => {
            let factor = contiguous(phi)?;
            py.detach(|| Moments::of_rows(&pool, factor, p, &codes, &class_weights, &never))
        }
        Chunk::F32(phi) => {
            let factor = contiguous(phi)?;
            py.detach(|| Moments::of_rows(&pool, factor, p, &codes, &class_weights, &never))
        }
    }?;
    let square = |values: Vec<f64>| {
        Array2::from_shape_vec((p, p), values)
            .expect("p×p")
            .into_pyarray(py)
    };
    let sums = stacked(py, &moments.class_sums, p, 0.0);
    Ok((square(moments.gram), square(moments.weighted), sums))
}

/// The last round's candidates: scores, indices, thresholds and rows (as float64).
#[derive(Clone, Default)]
struct Candidates {
    scores: Vec<f64>,
    indices: Vec<i64>,
    thresholds: Vec<f64>,
    rows: Vec<Vec<f64>>,
}

/// The statistics of a chunk's rows of a factor, on the worker that holds them
/// ([`RowStatistics`]); each round makes a new one ([`PyRowStatistics::advanced`]), which the
/// worker's actor (`gkfda._dask._WorkerRows`) keeps in place of the old: a round that fails
/// leaves the statistics as they were.
#[pyclass(module = "gkfda._core", name = "FactorRowStatistics", frozen)]
pub(super) struct PyRowStatistics {
    statistics: RowStatistics,
    candidates: Candidates,
}

#[pymethods]
impl PyRowStatistics {
    /// The statistics of `K_0` for the chunk's rows `phi`, the rows `indices` of all (in the
    /// engine's order) of class codes `classes`, their places `rank` in the random order
    /// (empty unless `criterion` is `random`), given the driver's `E` (`weighted`), `σ`
    /// (`class_sums`, `C×p`) and the Fisher denominator's `scatter_weights`.
    #[staticmethod]
    #[pyo3(signature = (phi, indices, classes, rank, weighted, class_sums, scatter_weights, criterion, tol, *, n_threads=1))]
    #[allow(clippy::too_many_arguments)]
    fn start(
        py: Python<'_>,
        phi: &Bound<'_, PyAny>,
        indices: PyReadonlyArray1<'_, i64>,
        classes: PyReadonlyArray1<'_, i64>,
        rank: PyReadonlyArray1<'_, i64>,
        weighted: PyReadonlyArray2<'_, f64>,
        class_sums: PyReadonlyArray2<'_, f64>,
        scatter_weights: PyReadonlyArray1<'_, f64>,
        criterion: &str,
        tol: f64,
        n_threads: usize,
    ) -> PyResult<Self> {
        let chunk = Chunk::of(phi)?;
        let (_, p) = chunk.shape();
        let criterion: Criterion = criterion.parse()?;
        let scatter_weights = scatter_weights.as_array().to_vec();
        let codes: Vec<u32> = indices_of(&classes, scatter_weights.len(), "classes")?
            .into_iter()
            .map(|c| c as u32)
            .collect();
        let indices = indices_of(&indices, usize::MAX, "indices")?;
        let rank = indices_of(&rank, usize::MAX, "rank")?;
        let weighted = weighted.as_array().iter().copied().collect::<Vec<f64>>();
        let class_sums = rows_of(&class_sums);
        let set_up = RowsSetUp {
            weighted: &weighted,
            class_sums: &class_sums,
            scatter_weights: &scatter_weights,
            criterion,
            tol,
        };
        let pool = crate::pool::shared(n_threads)?;
        let statistics = match &chunk {
            Chunk::F64(phi) => {
                let factor = contiguous(phi)?;
                py.detach(|| RowStatistics::start(&pool, factor, p, indices, codes, rank, &set_up))
            }
            Chunk::F32(phi) => {
                let factor = contiguous(phi)?;
                py.detach(|| RowStatistics::start(&pool, factor, p, indices, codes, rank, &set_up))
            }
        }?;
        Ok(PyRowStatistics {
            statistics,
            candidates: Candidates::default(),
        })
    }

    /// These statistics after a round: the picks `blocked` (indices among all rows) taken
    /// out, the terms (`v`, `h` of `T×p` in `phi`'s dtype, `class_sums` of `T×C`,
    /// `weighted_norms` of `T`) applied in one pass over `phi`, and the best `take`
    /// admissible candidates of these rows kept for [`PyRowStatistics::candidates`].
    #[pyo3(signature = (phi, v, h, class_sums, weighted_norms, blocked, take, *, n_threads=1))]
    #[allow(clippy::too_many_arguments)]
    fn advanced(
        &self,
        py: Python<'_>,
        phi: &Bound<'_, PyAny>,
        v: &Bound<'_, PyAny>,
        h: &Bound<'_, PyAny>,
        class_sums: PyReadonlyArray2<'_, f64>,
        weighted_norms: PyReadonlyArray1<'_, f64>,
        blocked: PyReadonlyArray1<'_, i64>,
        take: usize,
        n_threads: usize,
    ) -> PyResult<Self> {
        let chunk = Chunk::of(phi)?;
        let (_, p) = chunk.shape();
        let blocked = indices_of(&blocked, usize::MAX, "blocked")?;
        let class_sums = rows_of(&class_sums);
        let norms = weighted_norms.as_array().to_vec();
        let pool = crate::pool::shared(n_threads)?;
        let mut statistics = self.statistics.clone();
        fn terms<F: Real + numpy::Element>(
            v: &Bound<'_, PyAny>,
            h: &Bound<'_, PyAny>,
            class_sums: &[Vec<f64>],
            norms: &[f64],
            p: usize,
        ) -> PyResult<Vec<RowTerm<F>>> {
            let (v, h) = (
                v.extract::<PyReadonlyArray2<F>>()?,
                h.extract::<PyReadonlyArray2<F>>()?,
            );
            let (v, h) = (v.as_array(), h.as_array());
            let count = norms.len();
            if v.dim() != (count, p) || h.dim() != (count, p) || class_sums.len() != count {
                return Err(PyValueError::new_err(format!(
                    "terms: v and h must be ({count}, {p}) arrays of phi's dtype, with {count} class sums"
                )));
            }
            Ok((0..count)
                .map(|t| RowTerm {
                    v: v.row(t).to_vec(),
                    h: h.row(t).to_vec(),
                    class_sums: class_sums[t].clone(),
                    weighted_norm: norms[t],
                })
                .collect())
        }
        fn found<F: Real>(candidates: Vec<Candidate<F>>) -> Candidates {
            Candidates {
                scores: candidates.iter().map(|c| c.score).collect(),
                indices: candidates.iter().map(|c| c.index as i64).collect(),
                thresholds: candidates.iter().map(|c| c.threshold).collect(),
                rows: candidates
                    .iter()
                    .map(|c| c.row.iter().map(|v| v.as_f64()).collect())
                    .collect(),
            }
        }
        let candidates = match &chunk {
            Chunk::F64(phi) => {
                let factor = contiguous(phi)?;
                let terms = terms::<f64>(v, h, &class_sums, &norms, p)?;
                found(py.detach(|| statistics.advance(&pool, factor, p, &terms, &blocked, take)))
            }
            Chunk::F32(phi) => {
                let factor = contiguous(phi)?;
                let terms = terms::<f32>(v, h, &class_sums, &norms, p)?;
                found(py.detach(|| statistics.advance(&pool, factor, p, &terms, &blocked, take)))
            }
        };
        Ok(PyRowStatistics {
            statistics,
            candidates,
        })
    }

    /// The last round's best candidates of these rows, best first: `(scores, indices,
    /// thresholds, rows)` (`rows` as float64, exact for float32 factors).
    #[allow(clippy::type_complexity)]
    fn candidates<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray2<f64>>,
    ) {
        let c = &self.candidates;
        let width = c.rows.first().map_or(0, Vec::len);
        (
            c.scores.clone().into_pyarray(py),
            c.indices.clone().into_pyarray(py),
            c.thresholds.clone().into_pyarray(py),
            stacked(py, &c.rows, width, 0.0),
        )
    }

    /// Pickling (a worker may spill its memory to disk): the state as arrays.
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let parts = self.statistics.parts();
        let rows = parts.classes.len();
        let as_i64 = |values: &[usize]| -> Vec<i64> { values.iter().map(|&v| v as i64).collect() };
        let c = &self.candidates;
        let width = c.rows.first().map_or(0, Vec::len);
        let arguments = (
            as_i64(&parts.indices).into_pyarray(py),
            parts
                .classes
                .iter()
                .map(|&c| i64::from(c))
                .collect::<Vec<i64>>()
                .into_pyarray(py),
            as_i64(&parts.rank).into_pyarray(py),
            stacked(py, &parts.sums, rows, 0.0),
            (parts.d, parts.threshold),
            parts
                .blocked
                .iter()
                .map(|&b| u8::from(b))
                .collect::<Vec<u8>>()
                .into_pyarray(py),
            parts.scatter_weights.into_pyarray(py),
            parts.criterion.to_string(),
            (c.scores.clone(), c.indices.clone(), c.thresholds.clone()),
            stacked(py, &c.rows, width, 0.0),
        );
        let constructor = py
            .import("gkfda._core")?
            .getattr("_factor_row_statistics")?;
        Ok((constructor, arguments.into_pyobject(py)?))
    }
}

/// A [`PyRowStatistics`] from the state its `__reduce__` gives.
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn _factor_row_statistics(
    indices: PyReadonlyArray1<'_, i64>,
    classes: PyReadonlyArray1<'_, i64>,
    rank: PyReadonlyArray1<'_, i64>,
    sums: PyReadonlyArray2<'_, f64>,
    d_and_threshold: (Vec<f64>, Vec<f64>),
    blocked: PyReadonlyArray1<'_, u8>,
    scatter_weights: PyReadonlyArray1<'_, f64>,
    criterion: &str,
    candidate_values: (Vec<f64>, Vec<i64>, Vec<f64>),
    candidate_rows: PyReadonlyArray2<'_, f64>,
) -> PyResult<PyRowStatistics> {
    let (d, threshold) = d_and_threshold;
    let (scores, candidate_indices, thresholds) = candidate_values;
    let parts = RowParts {
        indices: indices_of(&indices, usize::MAX, "indices")?,
        classes: indices_of(&classes, u32::MAX as usize, "classes")?
            .into_iter()
            .map(|c| c as u32)
            .collect(),
        rank: indices_of(&rank, usize::MAX, "rank")?,
        sums: rows_of(&sums),
        d,
        threshold,
        blocked: blocked.as_array().iter().map(|&b| b != 0).collect(),
        scatter_weights: scatter_weights.as_array().to_vec(),
        criterion: criterion.parse()?,
    };
    Ok(PyRowStatistics {
        statistics: RowStatistics::from_parts(parts)?,
        candidates: Candidates {
            scores,
            indices: candidate_indices,
            thresholds,
            rows: rows_of(&candidate_rows),
        },
    })
}

/// The rows of a factor held by a Python object `holder`, chunk by chunk, with its methods
/// `moments(classes, class_weights)`, `start(classes, rank, weighted, class_sums,
/// scatter_weights, criterion, tol)` and `advance(v, h, class_sums, weighted_norms, blocked,
/// take)` (`gkfda._dask.ChunkedFactorRows`), called from the selection's thread. A failure
/// keeps the holder's exception and becomes [`Error::External`].
pub(super) struct PyFactorRows<F> {
    holder: Py<PyAny>,
    m: usize,
    p: usize,
    raised: Mutex<Option<PyErr>>,
    dtype: std::marker::PhantomData<F>,
}

impl<F: Real + numpy::Element> PyFactorRows<F> {
    pub(super) fn of(holder: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (m, p): (usize, usize) = holder
            .getattr("shape")
            .and_then(|shape| shape.extract())
            .map_err(|_| PyTypeError::new_err("factor: a factor holder needs a shape (m, p)"))?;
        if m == 0 || p == 0 {
            return Err(PyValueError::new_err(format!(
                "factor: must have at least one row and one column, got shape ({m}, {p})"
            )));
        }
        Ok(PyFactorRows {
            holder: holder.clone().unbind(),
            m,
            p,
            raised: Mutex::new(None),
            dtype: std::marker::PhantomData,
        })
    }

    /// The exception a call raised, if any (the first).
    pub(super) fn take_raised(&self) -> Option<PyErr> {
        self.raised
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// `holder.method(*arguments)` read by `read`, with the GIL.
    fn call<T>(
        &self,
        method: &str,
        arguments: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyTuple>>,
        read: impl for<'py> FnOnce(&Bound<'py, PyAny>) -> PyResult<T>,
    ) -> Result<T, Error> {
        Python::attach(|py| {
            let answer = arguments(py)
                .and_then(|arguments| self.holder.bind(py).call_method1(method, arguments))
                .and_then(|result| read(&result));
            answer.map_err(|error| {
                let message = format!("its {method}: {error}");
                let mut raised = self
                    .raised
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                raised.get_or_insert(error);
                Error::External(message)
            })
        })
    }
}

fn codes_array<'py>(py: Python<'py>, classes: &[u32]) -> Bound<'py, PyArray1<i64>> {
    classes
        .iter()
        .map(|&c| i64::from(c))
        .collect::<Vec<i64>>()
        .into_pyarray(py)
}

impl<F: Real + numpy::Element> FactorRows<F> for PyFactorRows<F> {
    fn rows_count(&self) -> usize {
        self.m
    }

    fn width(&self) -> usize {
        self.p
    }

    // The holder's own call: a signal reaches its Python code while it runs.
    fn moments(
        &mut self,
        classes: &[u32],
        class_weights: &[f64],
        _stop: &AtomicBool,
    ) -> Result<Moments, Error> {
        let p = self.p;
        self.call(
            "moments",
            |py| {
                PyTuple::new(
                    py,
                    [
                        codes_array(py, classes).into_any(),
                        class_weights.to_vec().into_pyarray(py).into_any(),
                    ],
                )
            },
            |result| {
                let (gram, weighted, sums): (
                    PyReadonlyArray2<f64>,
                    PyReadonlyArray2<f64>,
                    PyReadonlyArray2<f64>,
                ) = result.extract()?;
                let flat =
                    |a: &PyReadonlyArray2<f64>| a.as_array().iter().copied().collect::<Vec<f64>>();
                Ok(Moments {
                    p,
                    gram: flat(&gram),
                    weighted: flat(&weighted),
                    class_sums: rows_of(&sums),
                })
            },
        )
    }

    fn start(
        &mut self,
        classes: &[u32],
        set_up: &RowsSetUp<'_>,
        rank: &[usize],
    ) -> Result<(), Error> {
        let p = self.p;
        self.call(
            "start",
            |py| {
                let weighted = Array2::from_shape_vec((p, p), set_up.weighted.to_vec())
                    .map_err(|_| PyValueError::new_err("weighted: must be p×p"))?;
                let rank: Vec<i64> = rank.iter().map(|&r| r as i64).collect();
                PyTuple::new(
                    py,
                    [
                        codes_array(py, classes).into_any(),
                        rank.into_pyarray(py).into_any(),
                        weighted.into_pyarray(py).into_any(),
                        stacked(py, set_up.class_sums, p, 0.0).into_any(),
                        set_up.scatter_weights.to_vec().into_pyarray(py).into_any(),
                        set_up.criterion.to_string().into_pyobject(py)?.into_any(),
                        set_up.tol.into_pyobject(py)?.into_any(),
                    ],
                )
            },
            |_| Ok(()),
        )
    }

    fn advance(
        &mut self,
        terms: &[RowTerm<F>],
        blocked: &[usize],
        take: usize,
    ) -> Result<Vec<Candidate<F>>, Error> {
        let p = self.p;
        let m = self.m;
        let candidates = self.call(
            "advance",
            |py| {
                let v: Vec<Vec<F>> = terms.iter().map(|t| t.v.clone()).collect();
                let h: Vec<Vec<F>> = terms.iter().map(|t| t.h.clone()).collect();
                let n_classes = terms.first().map_or(0, |t| t.class_sums.len());
                let sums: Vec<Vec<f64>> = terms.iter().map(|t| t.class_sums.clone()).collect();
                let norms: Vec<f64> = terms.iter().map(|t| t.weighted_norm).collect();
                let blocked: Vec<i64> = blocked.iter().map(|&i| i as i64).collect();
                PyTuple::new(
                    py,
                    [
                        stacked(py, &v, p, F::zero()).into_any(),
                        stacked(py, &h, p, F::zero()).into_any(),
                        stacked(py, &sums, n_classes, 0.0).into_any(),
                        norms.into_pyarray(py).into_any(),
                        blocked.into_pyarray(py).into_any(),
                        take.into_pyobject(py)?.into_any(),
                    ],
                )
            },
            |result| {
                let (scores, indices, thresholds, rows): (
                    PyReadonlyArray1<f64>,
                    PyReadonlyArray1<i64>,
                    PyReadonlyArray1<f64>,
                    PyReadonlyArray2<f64>,
                ) = result.extract()?;
                let indices = indices_of(&indices, m, "its advance's indices")?;
                let rows = rows_of(&rows);
                let (scores, thresholds) = (scores.as_array(), thresholds.as_array());
                let n = indices.len();
                if scores.len() != n || thresholds.len() != n || rows.len() != n || rows.iter().any(|r| r.len() != p) {
                    return Err(PyValueError::new_err(
                        "factor: its advance must give as many scores, thresholds and rows of p values as indices",
                    ));
                }
                Ok((0..n)
                    .map(|c| Candidate {
                        score: scores[c],
                        index: indices[c],
                        threshold: thresholds[c],
                        row: rows[c].iter().map(|&v| F::from_f64(v)).collect(),
                    })
                    .collect())
            },
        )?;
        Ok(candidates)
    }
}

/// The selections of `problems` over the rows a Python `holder` holds
/// ([`PyFactorRows`]), one after the other.
pub(super) fn select_over_holder<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    holder: &Bound<'py, PyAny>,
    problems: &Problems<'_>,
    report: Option<&Bound<'py, PyAny>>,
) -> PyResult<Vec<SelectionTuple<'py>>> {
    let rows = Mutex::new(PyFactorRows::<F>::of(holder)?);
    let selections = reporting(py, report, |stop, progress| {
        let mut rows = rows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match problems {
            Problems::Classes(classes, params) => {
                selection::select_classes_over_rows(&mut *rows, classes, params, stop, progress)
                    .map(|s| vec![s])
            }
            Problems::TwoClass(problems) => problems
                .iter()
                .map(|(positive, params)| {
                    let classes: Vec<u32> = positive.iter().map(|&p| u32::from(p)).collect();
                    selection::select_classes_over_rows(
                        &mut *rows, &classes, params, stop, progress,
                    )
                })
                .collect(),
        }
    });
    let raised = rows
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take_raised();
    let selections = match (selections, raised) {
        (Err(error), Some(raised)) if error.is_instance_of::<PyRuntimeError>(py) => {
            return Err(raised)
        }
        (selections, _) => selections?,
    };
    Ok(selections
        .into_iter()
        .map(|selection| selection_tuple(py, selection))
        .collect())
}

pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(factor_moments, module)?)?;
    module.add_function(wrap_pyfunction!(_factor_row_statistics, module)?)?;
    module.add_class::<PyRowStatistics>()?;
    Ok(())
}
