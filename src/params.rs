//! The parameters of a selection: criteria, deflations and their families, checked once.

use crate::error::{Error, Result};
use crate::real::Real;
use std::str::FromStr;

/// How the next basis is scored (`c_i` is column `i` of the deflated kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Criterion {
    /// Uniformly at random without replacement: the randomised Nyström method.
    Random,
    /// Maximise the Fisher ratio `(c'y)² / (c'Bc)` (MPKFDA).
    Optimal,
    /// Maximise `(c'y)²`.
    Pseudo,
    /// Minimise the Fisher ratio.
    Reverse,
    /// Minimise `(c'y)²`.
    ReversePseudo,
}

/// How the kernel is deflated after a pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Deflation {
    None,
    Hotelling,
    Projection,
    Schur,
    OrthoHotelling,
    OrthoProjection,
    OrthoSchur,
}

/// The family of a deflation: how its rank-one term `u v'` is made from a pick's direction
/// `x` (see the selection's module doc for each `u` and `v`), and so which path a pick takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// No deflation: the picks are the stage-start ranking.
    None,
    /// `u = (x'K_t x) x`, `v = x`: `u` is kept as `λ v`.
    Hotelling,
    /// `u = x`, `v = K_t'x`.
    Projection,
    /// `u = K_t x/(x'K_t x)`, `v = K_t'x`: leaves every span known in advance.
    Schur,
}

/// Whether a pick's direction is Gram–Schmidt-orthogonalised against the earlier ones
/// (the `ortho-*` deflations) or is the normalised column alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Directions {
    Normalised,
    Orthogonalised,
}

impl Directions {
    pub(crate) fn orthogonalised(self) -> bool {
        self == Directions::Orthogonalised
    }
}

impl Criterion {
    /// Every criterion with its name, in the papers' order.
    pub const ALL: [(Criterion, &'static str); 5] = [
        (Criterion::Random, "random"),
        (Criterion::Optimal, "optimal"),
        (Criterion::Pseudo, "pseudo"),
        (Criterion::Reverse, "reverse"),
        (Criterion::ReversePseudo, "reverse-pseudo"),
    ];

    /// Whether the score is a ratio over the within-class scatter
    /// `d − Σ_c (w_c/m_c) s_c²` (`optimal`, `reverse`), so that a column whose scatter is
    /// numerically zero is not admissible.
    pub fn uses_ratio(self) -> bool {
        matches!(self, Criterion::Optimal | Criterion::Reverse)
    }

    /// The score (higher is better) of a candidate column from its statistics: the Fisher
    /// numerator `Σ_{c<c'} (s_c − s_{c'})²`, the within-class scatter `denominator`, and the
    /// column's `place` in [`Criterion::Random`]'s order. `None` when the score is a ratio
    /// and the scatter is at most `threshold` (numerically zero). Every engine scores its
    /// candidates here, so that they rank alike.
    pub(crate) fn score<F: Real>(
        self,
        numerator: F,
        denominator: F,
        threshold: F,
        place: usize,
    ) -> Option<F> {
        if self.uses_ratio() && denominator <= threshold {
            return None;
        }
        Some(match self {
            Criterion::Optimal => numerator / denominator,
            Criterion::Pseudo => numerator,
            Criterion::Reverse => -(numerator / denominator),
            Criterion::ReversePseudo => -numerator,
            Criterion::Random => -F::from_f64(place as f64),
        })
    }

    /// Whether the best candidates are few to check one by one: the score needs no `d`,
    /// and the best-scored columns are rarely numerically explained (`pseudo` ranks the
    /// largest `|c'y|` first, `random` any column; `reverse-pseudo` would rank the explained
    /// columns, whose `c'y` is ~0, first).
    pub(crate) fn checks_candidates_one_by_one(self) -> bool {
        matches!(self, Criterion::Pseudo | Criterion::Random)
    }
}

impl Deflation {
    /// Every deflation with its name (from one table of each deflation's name, family and directions).
    pub const ALL: [(Deflation, &'static str); 7] = {
        let mut all = [(Deflation::None, ""); 7];
        let mut i = 0;
        while i < all.len() {
            all[i] = (Deflation::FORMS[i].0, Deflation::FORMS[i].1);
            i += 1;
        }
        all
    };

    /// Each deflation, listed once: its name, its family and its directions. A new
    /// deflation of an existing family is a row here; its family's path does the rest.
    const FORMS: [(Deflation, &'static str, Family, Directions); 7] = {
        use Directions::{Normalised as N, Orthogonalised as O};
        [
            (Deflation::None, "none", Family::None, N),
            (Deflation::Hotelling, "hotelling", Family::Hotelling, N),
            (Deflation::Projection, "projection", Family::Projection, N),
            (Deflation::Schur, "schur", Family::Schur, N),
            (
                Deflation::OrthoHotelling,
                "ortho-hotelling",
                Family::Hotelling,
                O,
            ),
            (
                Deflation::OrthoProjection,
                "ortho-projection",
                Family::Projection,
                O,
            ),
            (Deflation::OrthoSchur, "ortho-schur", Family::Schur, O),
        ]
    };

    fn form(self) -> (Family, Directions) {
        let (_, _, family, directions) = Deflation::FORMS
            .into_iter()
            .find(|(deflation, ..)| *deflation == self)
            .expect("every deflation has a form");
        (family, directions)
    }

    pub(crate) fn family(self) -> Family {
        self.form().0
    }

    pub(crate) fn directions(self) -> Directions {
        self.form().1
    }
}

fn parse_name<T: Copy>(all: &[(T, &'static str)], name: &str, argument: &'static str) -> Result<T> {
    all.iter()
        .find(|(_, n)| *n == name)
        .map(|(v, _)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|(_, n)| *n).collect();
            Error::invalid(
                argument,
                format!(
                    "unknown name {name:?}; expected one of {}",
                    names.join(", ")
                ),
            )
        })
}

fn name_of<T: Copy + PartialEq>(all: &[(T, &'static str)], value: T) -> &'static str {
    all.iter()
        .find(|(v, _)| *v == value)
        .map_or("", |(_, name)| name)
}

impl std::fmt::Display for Criterion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(name_of(&Criterion::ALL, *self))
    }
}

impl std::fmt::Display for Deflation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(name_of(&Deflation::ALL, *self))
    }
}

impl FromStr for Criterion {
    type Err = Error;
    fn from_str(name: &str) -> Result<Self> {
        parse_name(&Criterion::ALL, name, "criterion")
    }
}

impl FromStr for Deflation {
    type Err = Error;
    fn from_str(name: &str) -> Result<Self> {
        parse_name(&Deflation::ALL, name, "deflation")
    }
}

/// Parameters of a selection, checked by [`crate::selection::select`] before any work.
#[derive(Debug, Clone, PartialEq)]
pub struct GreedyParams {
    /// Number of bases to choose (fewer on an early stop).
    pub k: usize,
    pub criterion: Criterion,
    pub deflation: Deflation,
    /// `S`: bases taken per stage from the stage-start scores.
    pub stages: usize,
    /// For [`Criterion::Random`]: the priority order (a permutation of `0..m`). When
    /// `None`, it is drawn from `seed`.
    pub random_order: Option<Vec<usize>>,
    pub seed: u64,
    /// Relative threshold of the numerical guards; `None` takes [`Real::DEFAULT_TOL`].
    pub tol: Option<f64>,
    /// Threads of the passes over the kernel; results do not depend on it.
    pub n_threads: usize,
}

/// The defaults of `GreedyKFDA`: `optimal` picks, `projection` deflation (MPKFDA's own).
impl Default for GreedyParams {
    fn default() -> Self {
        GreedyParams {
            k: 10,
            criterion: Criterion::Optimal,
            deflation: Deflation::Projection,
            stages: 1,
            random_order: None,
            seed: 0,
            tol: None,
            n_threads: 1,
        }
    }
}

/// Parameters checked against their problem by [`GreedyParams::check`], with the defaults
/// resolved: what the engine takes, so that nothing checks them again.
#[derive(Debug, Clone)]
pub(crate) struct ValidParams {
    pub(crate) k: usize,
    pub(crate) criterion: Criterion,
    pub(crate) family: Family,
    pub(crate) directions: Directions,
    pub(crate) stages: usize,
    /// For [`Criterion::Random`]: the priority order given, else drawn from `seed`.
    pub(crate) random_order: Option<Vec<usize>>,
    pub(crate) seed: u64,
    /// The relative threshold of the numerical guards, its default resolved for `F`.
    pub(crate) tol: f64,
    pub(crate) n_threads: usize,
}

impl ValidParams {
    /// The `m`-vectors each recorded pick keeps for the rest of the selection: its rank-one
    /// term (`v` alone for hotelling, whose `u` is `λ v`; `u` and `v` otherwise) and, for
    /// `ortho-schur`, its unit direction.
    pub(crate) fn vectors_per_term(&self) -> usize {
        let term = match self.family {
            Family::None => 0,
            Family::Hotelling => 1,
            Family::Projection | Family::Schur => 2,
        };
        term + usize::from(self.family == Family::Schur && self.directions.orthogonalised())
    }
}

impl GreedyParams {
    /// These parameters for a selection over a kernel of shape `dim` with class codes
    /// `classes`, checked.
    pub(crate) fn check<F: Real>(
        &self,
        dim: (usize, usize),
        classes: &[u32],
    ) -> Result<ValidParams> {
        validate(dim, classes, self)?;
        Ok(ValidParams {
            k: self.k,
            criterion: self.criterion,
            family: self.deflation.family(),
            directions: self.deflation.directions(),
            stages: self.stages,
            random_order: self.random_order.clone(),
            seed: self.seed,
            tol: self.tol.unwrap_or(F::DEFAULT_TOL),
            n_threads: self.n_threads,
        })
    }
}

/// Class codes run from 0 to `C − 1`, `C ≥ 2`, every class with a sample.
pub(crate) fn validate_classes(classes: &[u32]) -> Result<()> {
    let m = classes.len();
    // A code of `m` or more leaves some code below it without a sample.
    let mut present = vec![false; m];
    for &c in classes {
        match present.get_mut(c as usize) {
            Some(seen) => *seen = true,
            None => {
                return Err(Error::invalid(
                    "y",
                    format!("class code {c} is not below the number of samples ({m}): the codes must run from 0 to C - 1, every class present"),
                ))
            }
        }
    }
    let n_classes = classes.iter().max().map_or(0, |&c| c as usize + 1);
    if n_classes <= 2 && present[..n_classes].iter().filter(|&&p| p).count() < 2 {
        return Err(Error::invalid("y", "needs samples of both classes"));
    }
    if let Some(missing) = present[..n_classes].iter().position(|&p| !p) {
        return Err(Error::invalid(
            "y",
            format!("has no sample of class {missing}: the codes must run from 0 to C - 1 = {}, every class present", n_classes - 1),
        ));
    }
    Ok(())
}

fn validate((rows, cols): (usize, usize), classes: &[u32], params: &GreedyParams) -> Result<()> {
    if rows != cols {
        return Err(Error::invalid(
            "K",
            format!("must be square, got shape ({rows}, {cols})"),
        ));
    }
    if classes.len() != rows {
        return Err(Error::invalid(
            "y",
            format!(
                "has {} labels but the kernel has {rows} rows",
                classes.len()
            ),
        ));
    }
    validate_classes(classes)?;
    if params.k == 0 || params.k > rows {
        return Err(Error::invalid(
            "k",
            format!(
                "must be between 1 and {rows} (the sample size), got {}",
                params.k
            ),
        ));
    }
    if params.stages == 0 {
        return Err(Error::invalid("stages", "must be at least 1"));
    }
    if let Some(tol) = params.tol {
        if !(tol.is_finite() && tol >= 0.0) {
            return Err(Error::invalid(
                "tol",
                format!("must be a finite non-negative number, got {tol}"),
            ));
        }
    }
    if params.n_threads == 0 {
        return Err(Error::invalid("n_jobs", "must be at least 1 thread"));
    }
    if params.random_order.is_some() && params.criterion != Criterion::Random {
        return Err(Error::invalid(
            "random_order",
            "is only used by the random criterion",
        ));
    }
    if let Some(order) = &params.random_order {
        let mut seen = vec![false; rows];
        let is_permutation = order.len() == rows
            && order
                .iter()
                .all(|&i| i < rows && !std::mem::replace(&mut seen[i], true));
        if !is_permutation {
            return Err(Error::invalid(
                "random_order",
                format!("must be a permutation of 0..{rows}"),
            ));
        }
    }
    Ok(())
}
