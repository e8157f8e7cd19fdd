"""GreedyKFDACV (defaults) against GridSearchCV(SVC) on the same outer folds.

For each data set: StandardScaler, then an outer stratified 5-fold split; on each outer
training set one model search runs, and its refitted model is scored on the outer test
fold. Printed per data set: the mean outer test accuracy of each, the wall time of each
(all outer folds), and their ratio. The two searches alternate (which one runs first
swaps from one repeat to the next), and times are medians over ``--repeats`` runs.

The project's target: accuracy within 1.5 points of GridSearchCV(SVC), in at most twice
its wall time. ``--details`` also prints, for each outer fold, the parameters each search
chose and the share of GreedyKFDACV's time spent in fits, scoring and the refit.

``--max-k`` and ``--deflation`` set those parameters of GreedyKFDACV instead of its
defaults; several ``--max-k`` values give a row each, each search paired with its own run
of the SVC grid (the time ratio is that pair's, so that the load of a shared machine
enters both sides).

Usage: ``python benches/bench_cv.py [--repeats 3] [--sets breast_cancer digits synthetic]
[--max-k 100 200] [--deflation projection]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import wait_for_idle_cores  # noqa: E402

from gkfda import GreedyKFDACV  # noqa: E402

SVC_GRID = {"svc__gamma": np.logspace(-4, 0, 5), "svc__C": [0.1, 1.0, 10.0]}

DATA_SETS = {
    "breast_cancer": lambda: load_breast_cancer(return_X_y=True),
    "digits": lambda: load_digits(return_X_y=True),
    "synthetic": lambda: make_classification(2000, 20, random_state=0),
}


def gkfda_search(**params):
    return lambda: make_pipeline(StandardScaler(), GreedyKFDACV(**params))


def svc_search():
    return GridSearchCV(make_pipeline(StandardScaler(), SVC()), SVC_GRID, cv=5)


def run(make_search, X, y, folds):
    """Wall seconds of the search on every outer training set, the mean outer test
    accuracy, and the fitted searches."""
    fitted, accuracies = [], []
    wait_for_idle_cores()
    start = time.perf_counter()
    for train, test in folds:
        search = make_search().fit(X[train], y[train])
        accuracies.append(search.score(X[test], y[test]))
        fitted.append(search)
    return time.perf_counter() - start, float(np.mean(accuracies)), fitted


def describe(gkfda_fits, svc_fits):
    rows = []
    for fold, (ours, theirs) in enumerate(zip(gkfda_fits, svc_fits)):
        cv = ours[-1]
        results = cv.cv_results_
        fit = np.sum(results["mean_fit_time"].reshape(len(cv.gammas_), -1)[:, 0]) * cv.n_splits_
        score = np.sum(results["mean_score_time"]) * cv.n_splits_
        exponent = np.log2(cv.best_params_["gamma"] / cv.gammas_.max()) if cv.gammas_[0] is not None else None
        rows.append([
            fold,
            f"{cv.best_params_['gamma']:.3g} (top {exponent:+.0f})" if exponent is not None else "-",
            cv.best_params_["k"],
            cv.max_k_,
            f"{cv.best_score_:.4f}",
            f"{fit:.2f}",
            f"{score:.2f}",
            f"{cv.refit_time_:.2f}",
            f"{theirs.best_params_['svc__gamma']:.3g}",
            theirs.best_params_["svc__C"],
            f"{theirs.best_score_:.4f}",
        ])
    return tabulate(
        rows,
        headers=["fold", "gamma (log2 vs grid top)", "k", "max_k", "cv score", "fits s", "scoring s",
                 "refit s", "SVC gamma", "SVC C", "SVC cv score"],
        tablefmt="github",
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sets", nargs="+", default=list(DATA_SETS), choices=list(DATA_SETS))
    parser.add_argument("--max-k", nargs="+", type=int, default=[None], metavar="K",
                        help="GreedyKFDACV's max_k, a row per value (default: its default)")
    parser.add_argument("--deflation", default=None, help="GreedyKFDACV's deflation (default: its default)")
    parser.add_argument("--details", action="store_true")
    args = parser.parse_args(argv)

    deflation = {} if args.deflation is None else {"deflation": args.deflation}
    rows = []
    for name in args.sets:
        X, y = DATA_SETS[name]()
        X = np.asarray(X, dtype=np.float64)
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        for candidate, max_k in enumerate(args.max_k):
            make_gkfda = gkfda_search(max_k=max_k, **deflation)
            times = {"gkfda": [], "svc": []}
            ratios = []
            for repeat in range(args.repeats):
                order = ["gkfda", "svc"] if (repeat + candidate) % 2 == 0 else ["svc", "gkfda"]
                outcome = {}
                for which in order:
                    outcome[which] = run(make_gkfda if which == "gkfda" else svc_search, X, y, folds)
                    times[which].append(outcome[which][0])
                ratios.append(outcome["gkfda"][0] / outcome["svc"][0])
            accuracy = {which: outcome[which][1] for which in outcome}  # deterministic across repeats
            max_k_used = sorted({search[-1].max_k_ for search in outcome["gkfda"][2]})
            rows.append([
                name,
                X.shape,
                "/".join(map(str, max_k_used)),
                f"{100 * accuracy['gkfda']:.2f}",
                f"{100 * accuracy['svc']:.2f}",
                f"{100 * (accuracy['gkfda'] - accuracy['svc']):+.2f}",
                f"{statistics.median(times['gkfda']):.2f}",
                f"{statistics.median(times['svc']):.2f}",
                f"{statistics.median(ratios):.2f}",
            ])
            print(f"{name}, max_k {max_k_used}: done ({args.repeats} repeats)", file=sys.stderr, flush=True)
            if args.details:
                print(f"\n{name}, max_k {max_k_used}, the last repeat's searches:\n")
                print(describe(outcome["gkfda"][2], outcome["svc"][2]))
                print()
    print(tabulate(
        rows,
        headers=["data", "shape", "max_k_", "GreedyKFDACV acc %", "SVC grid acc %", "difference",
                 "GreedyKFDACV s", "SVC grid s", "time ratio (median of paired)"],
        tablefmt="github",
    ))

if __name__ == "__main__":
    main()
