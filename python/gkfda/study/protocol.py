"""The protocol of the study of Diethe (2015, §3.4): its grids, its splits and its configuration.

Per data set:

1. **Kernel width.** 5-fold cross-validation on each of the first five training
   realisations with the original algorithm (``optimal`` criterion, ``schur`` deflation,
   one pick per stage) over the widths ``w ∈ 2^{−5,−3,−1,1,3,5}`` (``gamma = 1/w``); each
   width is scored by its best validation error along the sparsity path; the median of
   the five chosen widths is kept. Where the best width is at an end of the grid, the
   default protocol extends the grid past that end, two octaves at a time, up to
   ``2^{±11}`` (Diethe et al., 2009, refine their width grid too): the paper's grid was too narrow for
   most of these data sets (9 of 13 chose ``w = 32``).
2. **Sparsity, per variant.** With that width, the validation error of every ``k`` from
   10 to ``min(200, m)`` in steps of 10, averaged over the same folds (one fit per fold
   and the sparsity path, not one fit per ``k``); the best ``k`` is kept.
3. **Test.** Every realisation: fit on its training set, test error, fit time, ``k``.

Baselines on the same realisations, tuned by the same cross-validation (median over the
first five realisations): full regularised KFDA (width and ridge) and scikit-learn's
``SVC`` (``C`` and width).

kFDA_q (Harrison & Pasupa's (2010) ``ParsimoniousKFDA``, q = 1 and q = 0.5) is tuned the same way, over the
widths and ``ρ ∈ 10^{−5..−1}``, and reported under Harrison & Pasupa's (2010) two selection rules: ``mcr``,
the setting of least CV error, and ``nrs``, the setting that retains the fewest training
samples among those whose CV error is within one standard error (over the folds) of the
least: the paper does not say how its NRS rule guards accuracy, and a plain NRS minimum
takes the largest ``ρ`` whatever its error.

Two protocols: ``default`` (the extended width search; the class priors of each training
set, so that a model that learned nothing predicts the majority class) and ``paper000``,
Diethe's (2015) exactly (its width grid as it is; equal class priors, the threshold of its
Fisher discriminant at the midpoint of the class means).

Examples
--------
>>> from gkfda.study.protocol import Protocol, Variant, variants
>>> Variant("optimal", "schur", 1).key
'optimal/schur/1'
>>> len(variants(stages=[1]))
35
>>> Protocol().k_grid(45).tolist()
[10, 20, 30, 40]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._core import CRITERIA, DEFLATIONS
from ..datasets import list_benchmarks
from . import StudyInputError

WIDTHS = tuple(2.0**exponent for exponent in (-5, -3, -1, 1, 3, 5))
#: How far the default protocol extends the width grid past an end that is chosen.
WIDTH_EXPONENT_LIMIT = 11
PROTOCOLS = ("default", "paper000")
STAGES = (1, 2, 5, 10)
BASELINES = ("kfda", "svm")
KFDA_REGS = (1e-6, 1e-4, 1e-3, 1e-2, 1e-1)
SVM_CS = (0.1, 1.0, 10.0, 100.0, 1000.0)
#: kFDA_q's methods and their ``q``; each task gives the rows of both selection rules.
KFDAQ_METHODS = {"kfdaq1": 1.0, "kfdaq0.5": 0.5}
KFDAQ_RULES = ("mcr", "nrs")
KFDAQ_RHOS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
#: The methods that choose their own width (no width-selection task before them).
SELF_TUNED = BASELINES + tuple(KFDAQ_METHODS)


def row_methods(method: str) -> tuple:
    """The ``method`` names of the result rows a task's ``method`` writes: kFDA_q's one
    per selection rule (``kfdaq1-mcr``, ``kfdaq1-nrs``), every other method its own."""
    return tuple(f"{method}-{rule}" for rule in KFDAQ_RULES) if method in KFDAQ_METHODS else (method,)


@dataclass(frozen=True)
class Variant:
    """One greedy algorithm of the study: a criterion, a deflation and a stage size."""

    criterion: str
    deflation: str
    stages: int

    @property
    def key(self) -> str:
        return f"{self.criterion}/{self.deflation}/{self.stages}"

    def params(self) -> dict:
        return {"criterion": self.criterion, "deflation": self.deflation, "stages": self.stages}


def variants(criteria=None, deflations=None, stages=None) -> list[Variant]:
    """Every combination of the given criteria, deflations and stage sizes (all by default)."""
    return [
        Variant(c, d, s)
        for s in (stages or STAGES)
        for d in (deflations or DEFLATIONS)
        for c in (criteria or CRITERIA)
    ]


@dataclass(frozen=True)
class Protocol:
    """Settings of the protocol; the defaults are the paper's."""

    cv_realisations: int = 5
    folds: int = 5
    k_max: int = 200
    k_step: int = 10
    widths: tuple = WIDTHS
    realisations: int | None = None  # None: every realisation (100, or 20)
    seed: int = 0
    name: str = "default"  # or "paper000": the paper's width grid and equal class priors

    @property
    def extends_widths(self) -> bool:
        return self.name == "default"

    def model_params(self, n_classes: int = 2) -> dict:
        """The parameters every model of the protocol shares: the class priors."""
        return {} if self.name == "default" else {"priors": np.full(n_classes, 1.0 / n_classes)}

    def wider_widths(self, widths, chosen) -> list:
        """The widths to add when ``chosen`` is an end of ``widths`` (empty otherwise)."""
        exponents = sorted(np.log2(widths))
        step = exponents[1] - exponents[0] if len(exponents) > 1 else 2.0
        exponent = float(np.log2(chosen))
        if not self.extends_widths or exponent not in (exponents[0], exponents[-1]) or len(exponents) < 2:
            return []
        direction = -1.0 if exponent == exponents[0] else 1.0
        further = exponent + direction * step
        return [float(2.0**further)] if abs(further) <= WIDTH_EXPONENT_LIMIT else []

    def k_grid(self, m_fit: int) -> np.ndarray:
        top = min(self.k_max, m_fit)
        grid = np.arange(self.k_step, top + 1, self.k_step)
        return grid if grid.size else np.array([top])

    def splitter(self, realisation: int):
        """The stratified folds of one training realisation (seeded by it)."""
        from sklearn.model_selection import StratifiedKFold

        return StratifiedKFold(self.folds, shuffle=True, random_state=self.seed + realisation)

    def fold_indices(self, y, realisation: int) -> list:
        return list(self.splitter(realisation).split(np.zeros(len(y)), y))

    def cv_splits(self, benchmark, realisations):
        """``(realisation, X_fit, y_fit, X_valid, y_valid)`` of every fold of ``realisations``."""
        for r in realisations:
            X, y, _, _ = benchmark.split(r)
            for train, valid in self.fold_indices(y, r):
                yield r, X[train], y[train], X[valid], y[valid]

    def cv_range(self, benchmark) -> range:
        """The training realisations the cross-validation uses: the first five."""
        return range(min(self.cv_realisations, benchmark.n_realisations))

    def test_range(self, benchmark) -> range:
        """The realisations tested: all, or the first ``realisations``."""
        total = benchmark.n_realisations
        return range(total if self.realisations is None else min(self.realisations, total))


@dataclass
class ExperimentConfig:
    """What a run covers (data sets, variants, baselines, protocol) and how it runs."""

    datasets: list = field(default_factory=list_benchmarks)
    variants: list = field(default_factory=lambda: variants(stages=[1]))
    baselines: list = field(default_factory=lambda: list(SELF_TUNED))
    protocol: Protocol = field(default_factory=Protocol)
    jobs: int = 1
    backend: str | None = None  # joblib backend name; None: loky processes


def read_config(path) -> dict:
    """The ``config.json`` a run wrote into its results directory (``{}`` when there is none).

    Raises :class:`~gkfda.study.StudyInputError`, its message starting with the path, when the
    file is not JSON or not the record a run writes.
    """
    path = Path(path)
    if not path.exists():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise StudyInputError(f"{path}: not UTF-8 text ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise StudyInputError(f"{path}: not valid JSON ({error.msg}, line {error.lineno} column {error.colno}); "
                              f"remove it to start the record afresh") from None
    if not isinstance(record, dict):
        raise StudyInputError(f"{path}: holds a JSON {type(record).__name__}, not the object a run writes")
    expected = {"protocol": dict, "datasets": list, "variants": list, "baselines": list,
                "wall_time_s": (int, float), "runs": int}
    for key, kind in expected.items():
        if key in record and not isinstance(record[key], kind):
            raise StudyInputError(f"{path}: {key!r} is a JSON {type(record[key]).__name__}, not what a run writes")
    return record


QUICK = {
    # The README's main job: the full protocol (widths and k by 5-fold CV on the first five
    # training realisations), on the six smaller data sets, seven variants, 10 realisations.
    "datasets": ["banana", "breast_cancer", "diabetis", "heart", "thyroid", "titanic"],
    "variants": [
        Variant("optimal", "schur", 1),
        Variant("optimal", "projection", 1),
        Variant("pseudo", "hotelling", 1),
        Variant("pseudo", "ortho-schur", 1),
        Variant("pseudo", "ortho-schur", 2),
        Variant("pseudo", "ortho-schur", 5),
        Variant("random", "none", 1),
    ],
    "protocol": Protocol(realisations=10),
    # kFDA_q's grid (widths × ρ, fitted from scratch each) would take several times the
    # rest of the quick job: it runs in the full study only.
    "baselines": list(BASELINES),
}
