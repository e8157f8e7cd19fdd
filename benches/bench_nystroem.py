"""Greedy against random Nyström landmarks on digits, each followed by an LDA.

digits (1,797 images, 10 classes, 64 features), StandardScaler then each pipeline, 5-fold
stratified cross-validation, the same folds for every pipeline and every ``gamma`` of the
RBF kernel (the same kernel for both; 1/64 is ``Nystroem``'s default on 64 features):

* ``GreedyNystroem(n)`` + ``LinearDiscriminantAnalysis``: in a Pipeline ``fit`` gets the
  labels, so the landmarks are GreedyKFDA's shared multiclass bases (``optimal``, ``schur``);
* ``GreedyNystroem(n, criterion="pca")`` + LDA: unsupervised, sparse kernel PCA's landmarks;
* scikit-learn's ``Nystroem(n)`` + LDA, random landmarks, over ``--seeds`` seeds (mean, and
  the worst and best seed).

Printed per ``gamma``: the mean accuracy over the folds, and the difference in points
between the greedy supervised pipeline and the random one (mean over seeds). The target:
at least 1 point above the random landmarks.

Usage: ``python benches/bench_nystroem.py [--n 100] [--seeds 5] [--gammas 0.0039 0.0078 0.0156 0.03]``
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.datasets import load_digits
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.kernel_approximation import Nystroem
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from tabulate import tabulate

from gkfda import GreedyNystroem


def accuracy(make, X, y, folds):
    """Mean accuracy of ``make()`` over the folds."""
    scores = []
    for train, test in folds:
        scaler = StandardScaler().fit(X[train])
        model = make().fit(scaler.transform(X[train]), y[train])
        scores.append(np.mean(model.predict(scaler.transform(X[test])) == y[test]))
    return float(np.mean(scores))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="number of landmarks")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the random landmarks")
    parser.add_argument("--gammas", type=float, nargs="+", default=[1 / 256, 1 / 128, 1 / 64, 1 / 32])
    args = parser.parse_args()
    X, y = load_digits(return_X_y=True)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    rows = []
    for gamma in args.gammas:
        greedy = accuracy(lambda: make_pipeline(GreedyNystroem(args.n, gamma=gamma), LinearDiscriminantAnalysis()),
                          X, y, folds)
        pca = accuracy(lambda: make_pipeline(GreedyNystroem(args.n, criterion="pca", gamma=gamma),
                                             LinearDiscriminantAnalysis()), X, y, folds)
        random = [
            accuracy(lambda: make_pipeline(Nystroem(gamma=gamma, n_components=args.n, random_state=seed),
                                           LinearDiscriminantAnalysis()), X, y, folds)
            for seed in range(args.seeds)
        ]
        rows.append([f"{gamma:.4g}", f"{greedy:.4f}", f"{pca:.4f}",
                     f"{np.mean(random):.4f} ({min(random):.4f}–{max(random):.4f})",
                     f"{100 * (greedy - np.mean(random)):+.2f}"])
    print(f"digits, StandardScaler, 5-fold CV (the same folds), {args.n} landmarks, LDA; "
          f"random landmarks over {args.seeds} seeds")
    print(tabulate(rows, headers=["gamma", "greedy (Fisher)", "greedy (pca)", "random: mean (worst–best)",
                                  "Fisher − random, points"], tablefmt="github", disable_numparse=True))


if __name__ == "__main__":
    main()
