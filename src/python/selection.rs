//! The greedy basis selection (`GreedyKFDA`, `GreedyNystroem`): over a kernel, over its
//! factor `ΦΦ'` in memory, or over a factor held elsewhere; one selection over class codes,
//! or one-vs-rest selections that share their passes.

use super::common::{class_codes, kernel_or_factor, order_of, reporting};
use super::factor::{holder_dtype, is_factor_holder};
use super::rows::select_over_holder;
use super::sparse::{factor_operator, is_sparse, RowsArg};
use crate::kernel::Rows;
use crate::operator::KernelOperator;
use crate::real::Real;
use crate::selection;
use crate::GreedyParams;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A selection's indices, whether it stopped early, and its passes over the kernel.
pub(super) type SelectionTuple<'py> = (Bound<'py, PyArray1<i64>>, bool, usize);
/// The selections of one call, one per problem.
type Selections<'py> = Vec<SelectionTuple<'py>>;

pub(super) fn selection_tuple(
    py: Python<'_>,
    selection: selection::Selection,
) -> SelectionTuple<'_> {
    let indices: Vec<i64> = selection.indices.iter().map(|&i| i as i64).collect();
    (
        indices.into_pyarray(py),
        selection.stopped_early,
        selection.kernel_passes,
    )
}

/// The selections a call asks for: one over class codes ([`selection::select_classes`]),
/// or two-class problems that may share passes ([`selection::select_many`]).
pub(super) enum Problems<'a> {
    Classes(&'a [u32], GreedyParams),
    TwoClass(&'a [(&'a [bool], GreedyParams)]),
}

fn select_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    kernel: RowsArg<'py, F>,
    factored: bool,
    problems: &Problems<'_>,
    report: Option<&Bound<'py, PyAny>>,
) -> PyResult<Selections<'py>> {
    let rows = kernel.view(if factored { "factor" } else { "K" })?;
    let n_threads = match problems {
        Problems::Classes(_, params) => params.n_threads,
        Problems::TwoClass(problems) => problems.first().map_or(1, |(_, p)| p.n_threads),
    };
    // Always watched: a selection's length depends on more than the kernel's size (k,
    // stages, deflation), and a thread spawn is little beside even a small one.
    let selections = reporting(py, report, |stop, progress| {
        let mut sparse = None;
        let operator = match &rows {
            Rows::Dense(view) if !factored => KernelOperator::dense_of(view, "K")?,
            rows => factor_operator(rows, &mut sparse, n_threads, "factor", stop)?,
        };
        match problems {
            Problems::Classes(classes, params) => {
                Ok(vec![selection::select_classes_with_progress(
                    operator, classes, params, stop, progress,
                )?])
            }
            Problems::TwoClass(problems) => {
                selection::select_many_with_progress(operator, problems, stop, progress)
            }
        }
    })?;
    Ok(selections
        .into_iter()
        .map(|selection| selection_tuple(py, selection))
        .collect())
}

/// The selections of `problems` over `kernel` or, given instead, over the kernel `ΦΦ'` of
/// `factor` (a NumPy array `Φ`, or a SciPy CSR matrix `X` for `XX'`); float64 or float32.
/// `progress(done, total)`, when given, is called as picks are made ([`reporting`]).
fn select_any<'py>(
    py: Python<'py>,
    kernel: Option<&Bound<'py, PyAny>>,
    factor: Option<&Bound<'py, PyAny>>,
    problems: &Problems<'_>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Selections<'py>> {
    let (array, factored) = kernel_or_factor(kernel, factor)?;
    if factored && is_factor_holder(array) {
        return match holder_dtype(array)?.as_str() {
            "float64" => select_over_holder::<f64>(py, array, problems, progress),
            "float32" => select_over_holder::<f32>(py, array, problems, progress),
            other => Err(PyTypeError::new_err(format!(
                "factor: its dtype must be float32 or float64, got {other}"
            ))),
        };
    }
    let argument = if factored { "factor" } else { "K" };
    if factored || !is_sparse(array) {
        if let Some(rows) = RowsArg::<f64>::extract(array, argument)? {
            return select_typed(py, rows, factored, problems, progress);
        }
        if let Some(rows) = RowsArg::<f32>::extract(array, argument)? {
            return select_typed(py, rows, factored, problems, progress);
        }
    }
    let sparse = if factored { " or SciPy CSR matrix" } else { "" };
    Err(PyTypeError::new_err(format!(
        "{argument}: must be a 2-D float32 or float64 NumPy array{sparse}"
    )))
}

/// One selection function of `_core`: `greedy_select` and `greedy_select_many` take the
/// same arguments with the same defaults, written once here; only what `y` and
/// `random_order` hold differs, which `$select` reads.
macro_rules! selection_function {
    ($(#[$doc:meta])* $name:ident($order:ident) -> $returns:ident by $select:ident) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (kernel, y, k, *, criterion="optimal", deflation="projection", stages=1, random_order=None, seed=0, tol=None, n_threads=1, factor=None, progress=None))]
        #[allow(clippy::too_many_arguments)]
        fn $name<'py>(
            py: Python<'py>,
            kernel: Option<&Bound<'py, PyAny>>,
            y: &Bound<'py, PyAny>,
            k: i64,
            criterion: &str,
            deflation: &str,
            stages: i64,
            random_order: Option<$order<'py, i64>>,
            seed: u64,
            tol: Option<f64>,
            n_threads: i64,
            factor: Option<&Bound<'py, PyAny>>,
            progress: Option<&Bound<'py, PyAny>>,
        ) -> PyResult<$returns<'py>> {
            let request = Request {
                kernel,
                factor,
                progress,
                k,
                criterion,
                deflation,
                stages,
                seed,
                tol,
                n_threads,
            };
            $select(py, &request, y, random_order)
        }
    };
}

/// The arguments of a selection function but `y` and `random_order`, as Python gave them.
struct Request<'a, 'py> {
    kernel: Option<&'a Bound<'py, PyAny>>,
    factor: Option<&'a Bound<'py, PyAny>>,
    progress: Option<&'a Bound<'py, PyAny>>,
    k: i64,
    criterion: &'a str,
    deflation: &'a str,
    stages: i64,
    seed: u64,
    tol: Option<f64>,
    n_threads: i64,
}

impl<'py> Request<'_, 'py> {
    /// The selection parameters of one problem, with its priority order and seed (negative
    /// counts become 0, which the core rejects with a message naming them).
    fn params(&self, random_order: Option<Vec<usize>>, seed: u64) -> PyResult<GreedyParams> {
        let count = |value: i64| usize::try_from(value).unwrap_or(0);
        Ok(GreedyParams {
            k: count(self.k),
            criterion: self.criterion.parse()?,
            deflation: self.deflation.parse()?,
            stages: count(self.stages),
            random_order,
            seed,
            tol: self.tol,
            n_threads: count(self.n_threads),
        })
    }

    /// The selections of `problems` over the kernel or factor given.
    fn select(&self, py: Python<'py>, problems: &Problems<'_>) -> PyResult<Selections<'py>> {
        select_any(py, self.kernel, self.factor, problems, self.progress)
    }
}

selection_function! {
    /// Greedy basis selection over a precomputed symmetric kernel (borrowed, not copied).
    ///
    /// `y` is either a 1-D boolean array, True for the positive class, or a 1-D integer array
    /// (int64 or int32) of class codes `0..C-1`, every class present, `C >= 2`: the `C` classes
    /// share one basis, scored by the Fisher criterion of its class sums. Two classes as codes
    /// are the boolean problem with code 1 for True and 0 for False (the same picks). Returns
    /// `(indices, stopped_early, kernel_passes)`. When the classes of `y` come in long runs (as
    /// `GreedyKFDA.fit` orders them), each pass splits the kernel's rows by class and does
    /// half the multiply-adds. With `factor` (an `m×p` C-contiguous array `Φ`, and `kernel`
    /// None) the kernel is `ΦΦ'`, never formed: each product costs O(mp). `progress`, a
    /// callable, is called `progress(picks_done, picks_to_do)` every 50 ms while the count
    /// changes, and once at the end.
    greedy_select(PyReadonlyArray1) -> SelectionTuple by select_classes
}

/// `greedy_select`'s one selection over the class codes of `y`.
fn select_classes<'py>(
    py: Python<'py>,
    request: &Request<'_, 'py>,
    y: &Bound<'py, PyAny>,
    random_order: Option<PyReadonlyArray1<'py, i64>>,
) -> PyResult<SelectionTuple<'py>> {
    let classes = class_codes(y)?;
    let random_order = random_order
        .map(|order| order_of(order.as_array().iter(), "random_order"))
        .transpose()?;
    let params = request.params(random_order, request.seed)?;
    let mut selections = request.select(py, &Problems::Classes(&classes, params))?;
    Ok(selections.remove(0))
}

selection_function! {
    /// [`greedy_select`] for the one-vs-rest problems `y[c]` (the rows of a 2-D boolean
    /// array, as the core names the labels in its errors) over one kernel: the schur family's
    /// selections run side by side and share each pass over the kernel. `random_order[c]` is
    /// problem `c`'s priority order.
    ///
    /// Returns one `(indices, stopped_early, kernel_passes)` per problem. `factor` as in
    /// `greedy_select`; `progress` counts the picks of every problem.
    greedy_select_many(PyReadonlyArray2) -> Selections by select_one_vs_rest
}

/// `greedy_select_many`'s selections, one per row of `y`.
fn select_one_vs_rest<'py>(
    py: Python<'py>,
    request: &Request<'_, 'py>,
    y: &Bound<'py, PyAny>,
    random_order: Option<PyReadonlyArray2<'py, i64>>,
) -> PyResult<Selections<'py>> {
    let y: PyReadonlyArray2<'py, bool> = y
        .extract()
        .map_err(|_| PyTypeError::new_err("y: must be a 2-D boolean NumPy array"))?;
    let y = y.as_array();
    let orders = match &random_order {
        None => None,
        Some(orders) => {
            let orders = orders.as_array();
            if orders.nrows() != y.nrows() {
                return Err(PyValueError::new_err(format!(
                    "random_order: needs one row per problem ({}), got {}",
                    y.nrows(),
                    orders.nrows()
                )));
            }
            Some(
                orders
                    .rows()
                    .into_iter()
                    .map(|row| order_of(row, "random_order"))
                    .collect::<PyResult<Vec<_>>>()?,
            )
        }
    };
    let labels: Vec<Vec<bool>> = y.rows().into_iter().map(|row| row.to_vec()).collect();
    let mut problems = Vec::with_capacity(labels.len());
    for (c, positive) in labels.iter().enumerate() {
        let order = orders.as_ref().map(|orders| orders[c].clone());
        // Without given orders, each problem's is drawn from a seed of its own.
        let seed = request.seed.wrapping_add(c as u64);
        let params = request.params(order, seed)?;
        problems.push((positive.as_slice(), params));
    }
    request.select(py, &Problems::TwoClass(&problems))
}

/// Adds the selection functions to `_core`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(greedy_select, module)?)?;
    module.add_function(wrap_pyfunction!(greedy_select_many, module)?)?;
    Ok(())
}
