"""The generalisation bound: the formula against worked values and its monotonicity, and the
estimator's statistics against a recomputation from the model's support and training set."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_moons

from gkfda import GreedyKFDA
from gkfda.bounds import fisher_discriminant_bound


def _symmetric(m, k, variant="paper", margin=0.5, variance=0.05):
    """Both classes alike: m/2 points, k/2 bases each."""
    return fisher_discriminant_bound(
        (margin, margin), (variance, variance), (m // 2, m // 2), (k // 2, k // 2), delta=0.05, radius=1.0,
        variant=variant,
    )


# m, k, variant, C^j, D^j, α^j, bound: worked by hand from Diethe et al.'s (2009) Proposition 4.5 with
# R = 1, δ = 0.05, g = 0.5, v = 0.05.
VECTORS = [
    (400, 30, "paper", 0.980320, 1.969609, 0.0, 1.0),
    (400, 30, "union_bound", 1.276891, 2.560405, 0.0, 1.0),
    (10_000, 20, "paper", 0.213688, 0.428872, 0.146162, 0.853838),
    (10_000, 20, "union_bound", 0.279869, 0.560840, 0.073499, 0.926501),
    (100_000, 20, "paper", 0.075605, 0.151626, 0.471820, 0.528180),
]


@pytest.mark.parametrize("m, k, variant, C, D, alpha, value", VECTORS)
def test_the_formula_gives_the_worked_values(m, k, variant, C, D, alpha, value):
    bound = _symmetric(m, k, variant)
    for part in (bound.positive, bound.negative):
        assert part.mean_term == pytest.approx(C, abs=1e-6)
        assert part.covariance_term == pytest.approx(D, abs=1e-6)
        assert part.alpha == pytest.approx(alpha, abs=1e-6)
    assert bound.value == pytest.approx(value, abs=1e-6)
    assert (bound.m, bound.k, bound.variant) == (m, k, variant)


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1000, 10**7),
    factor=st.floats(1.1, 8.0),
    k=st.integers(2, 60),
    margin=st.floats(0.05, 2.0),
    variance=st.floats(0.0, 1.0),
    variant=st.sampled_from(["paper", "union_bound"]),
)
def test_the_bound_decreases_in_m_and_increases_in_k(m, factor, k, margin, variance, variant):
    m, k = 2 * m, 2 * k  # even, for equal halves
    small = _symmetric(m, k, variant, margin, variance)
    larger_m = _symmetric(m + 2 * max(1, int(m * (factor - 1) / 2)), k, variant, margin, variance)
    larger_k = _symmetric(m, k + 2 * max(1, int(k * (factor - 1) / 2)), variant, margin, variance)
    assert 0.0 < small.value <= 1.0
    assert larger_m.value <= small.value
    assert larger_k.value >= small.value
    # Strictly, where the bound is informative.
    if small.value < 1.0:
        assert larger_m.value < small.value
        assert larger_k.value > small.value or larger_k.value == 1.0
    # The union bound's compression term is the larger: its bound never the smaller.
    assert (_symmetric(m, k, "union_bound", margin, variance).value
            >= _symmetric(m, k, "paper", margin, variance).value)


def test_the_bound_stays_in_the_unit_interval_however_separable():
    bound = fisher_discriminant_bound((50.0, 50.0), (0.0, 0.0), (10**9, 10**9), (1, 1))
    assert 0.0 < bound.value < 1e-3


def test_a_margin_at_most_the_mean_term_gives_the_trivial_part():
    bound = _symmetric(10_000, 20, margin=0.213)  # just below C = 0.213688
    assert bound.positive.alpha == 0.0 and bound.value == 1.0
    negative = fisher_discriminant_bound((0.9, -0.3), (0.01, 0.01), (5000, 5000), (10, 10))
    assert negative.negative.alpha == 0.0 and negative.positive.alpha > 0.0 and negative.value == 1.0


def test_a_class_without_points_outside_the_bases_gives_the_trivial_part():
    bound = fisher_discriminant_bound((0.9, 0.9), (0.01, 0.01), (5000, 10), (10, 10))
    assert bound.negative.alpha == 0.0 and math.isinf(bound.negative.mean_term)
    assert bound.positive.alpha > 0.0 and bound.value == 1.0
    assert not bound.valid_sample_size


def test_the_sample_size_proviso():
    # n_j ≥ (2 + √(c + 2 ln(8m/δ)))²: with m = 400 and k = 30, 179.5 (paper) and 303.3
    # (union bound) against n_j = 185; with m = 300, 168.5 against 135.
    assert _symmetric(400, 30).valid_sample_size
    assert not _symmetric(400, 30, "union_bound").valid_sample_size
    assert not _symmetric(300, 30).valid_sample_size
    assert _symmetric(10_000, 20, "union_bound").valid_sample_size


@pytest.mark.parametrize(
    "arguments, name",
    [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": True}, "delta"),
        ({"delta": "0.05"}, "delta"),
        ({"radius": 0.0}, "radius"),
        ({"radius": -1.0}, "radius"),
        ({"radius": float("inf")}, "radius"),
        ({"variant": "union"}, "variant"),
        ({"margins": (0.5, float("nan"))}, "margins"),
        ({"margins": (0.5,)}, "margins"),
        ({"variances": (-0.1, 0.1)}, "variances"),
        ({"class_sizes": (10, 10.5)}, "class_sizes"),
        ({"class_sizes": (0, 0), "class_bases": (0, 0)}, "class_sizes"),
        ({"class_bases": (11, 0)}, "class_bases"),
    ],
)
def test_bad_arguments_of_the_formula_name_themselves(arguments, name):
    call = {"margins": (0.5, 0.5), "variances": (0.1, 0.1), "class_sizes": (10, 10), "class_bases": (1, 1)}
    call.update(arguments)
    with pytest.raises(ValueError, match=rf"^{name}: "):
        fisher_discriminant_bound(**call)


# -- the estimator ------------------------------------------------------------------------


def _independent_statistics(model, X, y):
    """g^j, v^j, m^j, k^j recomputed from the model's public attributes and the training set."""
    features = model.transform(X)
    norm = np.linalg.norm(model.coef_[0])
    margin = features @ model.coef_[0] / norm + model.intercept_[0] / norm
    outside = np.ones(len(y), dtype=bool)
    outside[model.support_] = False
    statistics = {}
    for label, sign in ((model.classes_[1], 1.0), (model.classes_[0], -1.0)):
        chosen = outside & (y == label)
        statistics[label] = (
            sign * margin[chosen].mean(), margin[chosen].var(), int(np.sum(y == label)),
            int(np.sum(y[model.support_] == label)),
        )
    return statistics


def _expected(model, X, y, **options):
    statistics = _independent_statistics(model, X, y)
    positive, negative = statistics[model.classes_[1]], statistics[model.classes_[0]]
    return fisher_discriminant_bound(*zip(positive, negative), **options)


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(n_samples=600, noise=0.25, random_state=1)
    return X, np.where(y == 1, "yes", "no")


@pytest.mark.parametrize("variant", ["paper", "union_bound"])
def test_the_method_equals_the_formula_on_independently_computed_statistics(moons, variant):
    X, y = moons
    model = GreedyKFDA(k=12, gamma=2.0).fit(X, y)
    bound = model.generalisation_bound(delta=0.1, variant=variant)
    expected = _expected(model, X, y, delta=0.1, radius=1.0, variant=variant)
    assert 0.0 < bound.value <= 1.0
    for ours, theirs in ((bound.positive, expected.positive), (bound.negative, expected.negative)):
        assert ours.margin == pytest.approx(theirs.margin, rel=1e-9, abs=1e-12)
        assert ours.variance == pytest.approx(theirs.variance, rel=1e-8, abs=1e-12)
        assert (ours.n_samples, ours.n_bases) == (theirs.n_samples, theirs.n_bases)
        assert ours.mean_term == theirs.mean_term and ours.alpha == pytest.approx(theirs.alpha, abs=1e-12)
    assert bound.positive.label == "yes" and bound.negative.label == "no"
    assert bound.positive.n_samples + bound.negative.n_samples == len(y) == bound.m
    assert bound.positive.n_bases + bound.negative.n_bases == model.k_ == bound.k
    assert bound.value == pytest.approx(expected.value, abs=1e-12)


def test_the_margins_are_those_of_the_predictions(moons):
    # The sign convention: positive margins mean points on their own side, on average.
    X, y = moons
    model = GreedyKFDA(k=12, gamma=2.0).fit(X, y)
    bound = model.generalisation_bound()
    assert bound.positive.margin > 0.0 and bound.negative.margin > 0.0
    assert model.score(X, y) > 0.85


def test_a_separable_problem_at_ten_thousand_points_gets_an_informative_bound():
    rng = np.random.default_rng(0)
    m = 10_000
    y = rng.integers(0, 2, size=m)
    X = rng.normal(scale=0.3, size=(m, 2)) + 3.0 * y[:, None]
    model = GreedyKFDA(k=4, gamma=0.5, n_jobs=1).fit(X, y)
    bound = model.generalisation_bound()
    assert bound.valid_sample_size
    assert 0.0 < bound.value < 1.0
    assert bound.value == pytest.approx(_expected(model, X, y).value, abs=1e-9)


def test_a_float32_fit_is_bounded_like_a_float64_one(moons):
    X, y = moons
    single = GreedyKFDA(k=8, gamma=2.0, dtype="float32").fit(X, y).generalisation_bound()
    double = GreedyKFDA(k=8, gamma=2.0).fit(X, y).generalisation_bound()
    assert single.positive.margin == pytest.approx(double.positive.margin, rel=1e-4)
    assert single.negative.variance == pytest.approx(double.negative.variance, rel=1e-3)


def test_a_discriminant_refitted_with_another_reg_gets_its_own_bound(moons):
    # The moments do not depend on the discriminant: a refit keeps them, with its own w.
    X, y = moons
    model = GreedyKFDA(k=12, gamma=2.0, reg=1e-4).fit(X, y)
    refitted = model._refitted_with_reg(10.0, X, y)
    ours = refitted.generalisation_bound()
    assert ours.positive.margin != pytest.approx(model.generalisation_bound().positive.margin, rel=1e-3)
    assert ours.positive.margin == pytest.approx(_expected(refitted, X, y).positive.margin, rel=1e-9)


def test_the_cross_validated_model_has_a_bound(moons):
    from gkfda import GreedyKFDACV

    X, y = moons
    search = GreedyKFDACV(max_k=10, cv=3).fit(X, y)
    bound = search.best_estimator_.generalisation_bound()
    assert bound.k == search.best_estimator_.k_ and 0.0 < bound.value <= 1.0


@pytest.mark.parametrize("name", ["gkfda.bounds", "gkfda.study.bound"])
def test_the_modules_have_examples(name):
    import doctest
    import importlib

    tests = doctest.DocTestFinder().find(importlib.import_module(name))
    assert sum(len(test.examples) for test in tests) >= 3


def test_a_model_without_bases_gets_the_trivial_bound():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)) * 1e-160, np.array([0, 1] * 10)
    with pytest.warns(UserWarning, match="chose no basis"):
        model = GreedyKFDA(k=5).fit(X, y)
    bound = model.generalisation_bound()
    assert model.k_ == 0 and bound.k == 0 and bound.value == 1.0
    assert bound.positive.alpha == bound.negative.alpha == 0.0


def test_truncation_gives_the_bound_of_the_truncated_model(moons):
    X, y = moons
    model = GreedyKFDA(k=30, gamma=2.0).fit(X, y)
    truncated = model.truncate(7)
    direct = GreedyKFDA(k=7, gamma=2.0).fit(X, y)
    ours, theirs = truncated.generalisation_bound(), direct.generalisation_bound()
    assert ours.k == 7
    assert ours.positive.margin == pytest.approx(theirs.positive.margin, rel=1e-7)
    assert ours.negative.variance == pytest.approx(theirs.negative.variance, rel=1e-7)
    assert ours.value == pytest.approx(_expected(truncated, X, y).value, abs=1e-12)


def test_the_bound_survives_pickling(moons):
    X, y = moons
    model = GreedyKFDA(k=10, gamma=2.0).fit(X, y)
    assert pickle.loads(pickle.dumps(model)).generalisation_bound() == model.generalisation_bound()


def test_a_precomputed_kernel_needs_a_radius(moons):
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = moons
    K = rbf_kernel(X, gamma=2.0)
    model = GreedyKFDA(k=10, kernel="precomputed").fit(K, y)
    with pytest.warns(UserWarning, match="radius: estimated"):
        estimated = model.generalisation_bound()
    assert estimated.radius == pytest.approx(1.0)
    given = model.generalisation_bound(radius=1.0)
    assert given.value == estimated.value
    same = GreedyKFDA(k=10, gamma=2.0).fit(X, y).generalisation_bound()
    assert given.positive.margin == pytest.approx(same.positive.margin, rel=1e-7)


def test_a_linear_kernel_warns_without_a_radius_and_rejects_one_too_small(moons):
    X, y = moons
    model = GreedyKFDA(k=2, kernel="linear").fit(X, y)
    with pytest.warns(UserWarning, match="radius"):
        estimated = model.generalisation_bound()
    assert estimated.radius == pytest.approx(np.sqrt(np.max(np.sum(X**2, axis=1))))
    with pytest.raises(ValueError, match="^radius: .* below"):
        model.generalisation_bound(radius=estimated.radius / 2)
    assert model.generalisation_bound(radius=10.0).radius == 10.0


@pytest.mark.parametrize("multiclass", ["shared", "ovr"])
def test_multiclass_models_have_no_bound(multiclass):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(90, 2)), np.repeat([0, 1, 2], 30)
    model = GreedyKFDA(k=6, multiclass=multiclass).fit(X, y)
    with pytest.raises(ValueError, match="two-class models.*3 classes"):
        model.generalisation_bound()


@pytest.mark.parametrize(
    "arguments, name",
    [({"delta": 0.0}, "delta"), ({"delta": 2}, "delta"), ({"radius": -1.0}, "radius"),
     ({"radius": "1"}, "radius"), ({"variant": "Paper"}, "variant")],
)
def test_bad_arguments_of_the_method_name_themselves(moons, arguments, name):
    X, y = moons
    model = GreedyKFDA(k=5, gamma=2.0).fit(X, y)
    with pytest.raises(ValueError, match=rf"^{name}: "):
        model.generalisation_bound(**arguments)


def test_an_unfitted_model_has_no_bound():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        GreedyKFDA().generalisation_bound()


# -- the study ------------------------------------------------------------------------------


def test_informative_size_is_where_the_projected_bound_crosses_1():
    from gkfda.study.bound import _scaled, informative_size

    bound = fisher_discriminant_bound((0.3, 0.25), (0.01, 0.02), (300, 500), (6, 4))
    size = informative_size(bound)
    assert bound.value == 1.0 and size > bound.m
    assert _scaled(bound, size).value < 1.0 <= _scaled(bound, size - 1).value
    assert informative_size(fisher_discriminant_bound((0.3, -0.1), (0.01, 0.02), (300, 500), (6, 4))) is None


@pytest.fixture
def results_dir(tmp_path):
    (tmp_path / "results.csv").write_text(
        "dataset,method,criterion,deflation,stages,realisation,canonical,gamma,k,k_used,m_train,m_test,"
        "n_features,test_error,fit_time,cv_error,params\n"
        "heart,optimal/schur/1,optimal,schur,1,1,1,0.03125,10,10,170,100,13,0.2,0.01,0.15,{}\n"
        "heart,optimal/schur/1,optimal,schur,1,2,1,0.03125,10,10,170,100,13,0.25,0.01,0.15,{}\n"
        "heart,svm,,,,1,1,0.5,83,83,170,100,13,0.2,0.01,0.15,{}\n"
    )
    return tmp_path


def test_the_benchmark_rows_bound_the_refitted_mpkfda(results_dir):
    from gkfda.datasets import load_benchmark
    from gkfda.study.bound import benchmark_bounds

    rows = benchmark_bounds(results_dir, realisations=5)
    assert rows["dataset"].tolist() == ["heart", "heart"] and rows["realisation"].tolist() == [1, 2]
    X, y, X_test, y_test = load_benchmark("heart").split(1)
    model = GreedyKFDA(k=10, criterion="optimal", deflation="schur", gamma=0.03125, n_jobs=1,
                       random_state=1).fit(X, y)
    second = rows.iloc[1]
    assert second["test_error"] == pytest.approx(1.0 - model.score(X_test, y_test))
    assert second["bound"] == model.generalisation_bound().value == 1.0
    assert second["margin_pos"] == pytest.approx(model.generalisation_bound().positive.margin, rel=1e-9)
    assert second["m_informative"] > second["m_train"]
    with pytest.raises(ValueError, match="^datasets: 'banana'"):
        benchmark_bounds(results_dir, datasets=["banana"])


def test_the_synthetic_rows_fit_then_project():
    from gkfda.study.bound import synthetic_bounds

    rows = synthetic_bounds(sizes=(400, 800), projected=(10**5, 10**6), test_size=500)
    assert rows["kind"].tolist() == ["fitted", "fitted", "projected", "projected"]
    fitted, projected = rows[rows["kind"] == "fitted"], rows[rows["kind"] == "projected"]
    assert fitted["test_error"].lt(0.05).all() and projected["test_error"].isna().all()
    assert (rows["bound"] > 0).all() and (rows["bound"] <= 1).all()
    assert projected["bound"].iloc[1] < projected["bound"].iloc[0] < 1.0
    assert (projected["margin_pos"] == fitted["margin_pos"].iloc[-1]).all()
    assert (rows["bound_union"] >= rows["bound"]).all()


def test_the_command_writes_the_table_that_the_report_shows(results_dir, capsys):
    from gkfda.cli import main
    from gkfda.study.report import write_report

    assert main(["bound", str(results_dir), "--no-synthetic", "--realisations", "1"]) == 0
    assert "| heart |" in capsys.readouterr().out
    assert len((results_dir / "bound.csv").read_text().splitlines()) == 2
    index = write_report(results_dir, figures=False)[-1].read_text()
    assert "## The generalisation bound beside the test error" in index and "| heart |" in index
    assert main(["bound", str(results_dir / "absent")]) == 2
