//! Compressed sparse rows, borrowed: the three arrays of a SciPy CSR matrix (`indptr`,
//! `indices`, `data`) and its shape, checked once so that the kernels can trust them. Each
//! row's column indices must be strictly increasing (SciPy's canonical form: sorted, no
//! duplicates), which fixes the order of every sum over a row's entries, so that a value
//! does not depend on how the matrix was stored, batched or split among threads.

use crate::error::{Error, Result};
use crate::real::Real;
use std::ops::Range;

/// Column indices or row pointers as SciPy stores them: int32 while they fit, else int64.
#[derive(Debug, Clone, Copy)]
pub enum Indices<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl Indices<'_> {
    fn len(&self) -> usize {
        match self {
            Indices::I32(values) => values.len(),
            Indices::I64(values) => values.len(),
        }
    }

    /// Entry `at` as a `usize`, `None` when negative.
    fn get(&self, at: usize) -> Option<usize> {
        match self {
            Indices::I32(values) => usize::try_from(values[at]).ok(),
            Indices::I64(values) => usize::try_from(values[at]).ok(),
        }
    }
}

/// A checked, borrowed CSR matrix of `F` values.
#[derive(Debug, Clone)]
pub struct CsrView<'a, F> {
    nrows: usize,
    ncols: usize,
    /// Row `i`'s entries are `starts[i]..starts[i + 1]` of `indices` and `data`, widened
    /// once (O(m)) so that no loop converts them.
    starts: Vec<usize>,
    indices: Indices<'a>,
    data: &'a [F],
}

impl<'a, F: Real> CsrView<'a, F> {
    /// The view of a `shape` matrix, refused with an error naming `argument` when the
    /// arrays disagree with each other or the shape, a row's indices are not strictly
    /// increasing or out of range, or a value is NaN or infinite.
    pub fn new(
        shape: (usize, usize),
        indptr: Indices<'_>,
        indices: Indices<'a>,
        data: &'a [F],
        argument: &'static str,
    ) -> Result<Self> {
        let (nrows, ncols) = shape;
        let invalid = |message: String| Error::invalid(argument, message);
        if indptr.len() != nrows + 1 {
            return Err(invalid(format!(
                "a sparse matrix of {nrows} rows needs {} row pointers, got {}",
                nrows + 1,
                indptr.len()
            )));
        }
        if indices.len() != data.len() {
            return Err(invalid(format!(
                "its sparse matrix has {} column indices for {} values",
                indices.len(),
                data.len()
            )));
        }
        let mut starts = Vec::new();
        starts
            .try_reserve_exact(nrows + 1)
            .map_err(|_| Error::OutOfMemory {
                what: "the sparse matrix's row pointers",
                bytes: (nrows + 1).saturating_mul(std::mem::size_of::<usize>()),
            })?;
        for at in 0..=nrows {
            let start = indptr
                .get(at)
                .ok_or_else(|| invalid(format!("row pointer {at} is negative")))?;
            if starts.last().is_some_and(|&previous| start < previous) {
                return Err(invalid(format!("row pointer {at} decreases")));
            }
            starts.push(start);
        }
        if starts[0] != 0 || starts[nrows] != data.len() {
            return Err(invalid(format!(
                "its row pointers must run from 0 to the {} stored values, got {} to {}",
                data.len(),
                starts[0],
                starts[nrows]
            )));
        }
        for row in 0..nrows {
            let mut previous: Option<usize> = None;
            for at in starts[row]..starts[row + 1] {
                let column = indices
                    .get(at)
                    .filter(|&column| column < ncols)
                    .ok_or_else(|| {
                        invalid(format!("row {row} has a column index outside 0..{ncols}"))
                    })?;
                if previous.is_some_and(|previous| column <= previous) {
                    return Err(invalid(format!(
                        "row {row}'s column indices are not strictly increasing: call \
                         sum_duplicates() (or sort_indices()) on the sparse matrix first"
                    )));
                }
                previous = Some(column);
            }
        }
        if let Some(at) = data.iter().position(|value| !value.is_finite()) {
            let row = starts.partition_point(|&start| start <= at) - 1;
            return Err(invalid(format!("row {row} holds a NaN or infinite value")));
        }
        Ok(CsrView {
            nrows,
            ncols,
            starts,
            indices,
            data,
        })
    }

    pub fn nrows(&self) -> usize {
        self.nrows
    }

    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The stored entries, explicit zeros included.
    pub fn nnz(&self) -> usize {
        self.data.len()
    }

    /// The places of row `i`'s entries among all stored entries.
    pub fn entries(&self, i: usize) -> Range<usize> {
        self.starts[i]..self.starts[i + 1]
    }

    /// The stored values, row after row.
    pub fn values(&self) -> &'a [F] {
        self.data
    }

    /// The column of stored entry `at`.
    pub fn column(&self, at: usize) -> usize {
        // Checked in `new`: every index is in 0..ncols.
        self.indices.get(at).unwrap_or_default()
    }

    /// Row `i`'s entries, `(column, value)` in increasing column order.
    pub fn row(&self, i: usize) -> impl Iterator<Item = (usize, F)> + '_ {
        let range = self.starts[i]..self.starts[i + 1];
        let indices = self.indices;
        range.map(move |at| {
            // Checked in `new`: every index is in 0..ncols.
            let column = indices.get(at).unwrap_or_default();
            (column, self.data[at])
        })
    }

    /// The rows `range` as a view of their own (row `0` of it is row `range.start`).
    pub fn rows(&self, range: Range<usize>) -> CsrView<'a, F> {
        let first = self.starts[range.start];
        let last = self.starts[range.end];
        let indices = match self.indices {
            Indices::I32(values) => Indices::I32(&values[first..last]),
            Indices::I64(values) => Indices::I64(&values[first..last]),
        };
        CsrView {
            nrows: range.len(),
            ncols: self.ncols,
            starts: self.starts[range.start..=range.end]
                .iter()
                .map(|&start| start - first)
                .collect(),
            indices,
            data: &self.data[first..last],
        }
    }

    /// Each row's squared norm, summed in `f64` in column order.
    pub fn squared_norms(&self) -> Vec<f64> {
        (0..self.nrows)
            .map(|i| self.row(i).map(|(_, v)| v.as_f64() * v.as_f64()).sum())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [[1, 0, 2], [0, 0, 0], [0, 3, 0]].
    fn example() -> (Vec<i64>, Vec<i32>, Vec<f64>) {
        (vec![0, 2, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0])
    }

    #[test]
    fn rows_and_norms_read_the_stored_entries() {
        let (indptr, indices, data) = example();
        let view = CsrView::new(
            (3, 3),
            Indices::I64(&indptr),
            Indices::I32(&indices),
            &data,
            "X",
        )
        .unwrap();
        assert_eq!(view.nnz(), 3);
        assert_eq!(view.row(0).collect::<Vec<_>>(), vec![(0, 1.0), (2, 2.0)]);
        assert_eq!(view.row(1).count(), 0);
        assert_eq!(view.squared_norms(), vec![5.0, 0.0, 9.0]);
        let tail = view.rows(1..3);
        assert_eq!(tail.nrows(), 2);
        assert_eq!(tail.row(1).collect::<Vec<_>>(), vec![(1, 3.0)]);
    }

    #[test]
    fn malformed_arrays_are_errors_naming_the_argument() {
        let (indptr, indices, data) = example();
        let refused = |indptr: &[i64], indices: &[i32], data: &[f64], shape| {
            let error = CsrView::new(
                shape,
                Indices::I64(indptr),
                Indices::I32(indices),
                data,
                "X",
            )
            .unwrap_err()
            .to_string();
            assert!(error.starts_with("X: "), "{error}");
            error
        };
        assert!(refused(&indptr[..3], &indices, &data, (3, 3)).contains("row pointers"));
        assert!(refused(&indptr, &indices[..2], &data, (3, 3)).contains("column indices"));
        assert!(refused(&[0, 3, 2, 3], &indices, &data, (3, 3)).contains("decreases"));
        assert!(refused(&[0, 2, 2, 2], &indices, &data, (3, 3)).contains("from 0 to"));
        assert!(refused(&indptr, &[0, 3, 1], &data, (3, 3)).contains("outside"));
        assert!(refused(&indptr, &[2, 0, 1], &data, (3, 3)).contains("strictly increasing"));
        assert!(refused(&indptr, &[0, 0, 1], &data, (3, 3)).contains("sum_duplicates"));
        assert!(refused(&indptr, &indices, &[1.0, f64::NAN, 3.0], (3, 3)).contains("row 0"));
        assert!(refused(&indptr, &indices, &[1.0, 2.0, f64::INFINITY], (3, 3)).contains("row 2"));
        assert!(refused(&indptr, &[0, -2, 1], &data, (3, 3)).contains("outside"));
    }
}
