//! Columns of `K` that a pass multiplies together (a class, or every column).

use crate::real::Real;

/// Columns of `K` that a pass multiplies together: for the lane-wise tiles, runs whose
/// lengths are multiples of the SIMD width and the columns left over, summed last in
/// ascending order; for the packed tiles, the maximal runs themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnGroup {
    pub(super) runs: Vec<std::ops::Range<usize>>,
    pub(super) rest: Vec<usize>,
    pub(super) whole: Vec<std::ops::Range<usize>>,
}

impl ColumnGroup {
    /// Every column of an `m×m` kernel.
    pub fn all<F: Real>(m: usize) -> Self {
        Self::of_runs::<F>(std::iter::once(0..m))
    }

    /// The columns where `labels` equals `class`, as maximal runs.
    pub fn of_class<F: Real>(labels: &[bool], class: bool) -> Self {
        Self::of_label::<F, bool>(labels, class)
    }

    /// The columns of class `code` among the class codes `codes`, as maximal runs.
    pub fn of_code<F: Real>(codes: &[u32], code: u32) -> Self {
        Self::of_label::<F, u32>(codes, code)
    }

    fn of_label<F: Real, L: PartialEq>(labels: &[L], class: L) -> Self {
        let mut runs = Vec::new();
        let mut start = None;
        for (i, label) in labels.iter().enumerate() {
            match (*label == class, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    runs.push(s..i);
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            runs.push(s..labels.len());
        }
        Self::of_runs::<F>(runs.into_iter())
    }

    fn of_runs<F: Real>(runs: impl Iterator<Item = std::ops::Range<usize>>) -> Self {
        let mut group = ColumnGroup {
            runs: Vec::new(),
            rest: Vec::new(),
            whole: Vec::new(),
        };
        for run in runs {
            group.whole.push(run.clone());
            let body_end = run.end - run.len() % F::WIDTH;
            if body_end > run.start {
                group.runs.push(run.start..body_end);
            }
            group.rest.extend(body_end..run.end);
        }
        group
    }

    /// Whether column `l` is in the group.
    pub fn contains(&self, l: usize) -> bool {
        self.whole.iter().any(|run| run.contains(&l))
    }

    /// Number of maximal runs of equal labels: a pass split by class pays a little per run.
    pub fn count_runs<L: PartialEq>(labels: &[L]) -> usize {
        1 + labels.windows(2).filter(|pair| pair[0] != pair[1]).count()
    }
}
