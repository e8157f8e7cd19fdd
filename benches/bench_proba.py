"""Probabilities: cross-validated log-loss of GreedyKFDA against SVC(probability=True).

As a new user would measure it: scikit-learn's bundled classification sets and a
synthetic one, StandardScaler then the model in a pipeline, 5-fold stratified
cross-validated ``predict_proba`` (``cross_val_predict``), default settings apart from
``k``. Printed per data set: log-loss and accuracy at k=10, the default k, k=100, and
SVC's, with GreedyKFDA's default log-loss as a ratio to SVC's (the project's target: at
most about 1.25), and the mean fit time of each model over the folds.

Usage: ``python benches/bench_proba.py [--sets iris wine] [--multiclass shared]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine, make_classification
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from tabulate import tabulate

from gkfda import GreedyKFDA

DATA_SETS = {
    "iris": lambda: load_iris(return_X_y=True),
    "wine": lambda: load_wine(return_X_y=True),
    "breast_cancer": lambda: load_breast_cancer(return_X_y=True),
    "digits": lambda: load_digits(return_X_y=True),
    "synthetic": lambda: make_classification(1000, 20, n_informative=5, random_state=0),
}


def cross_validated(make_model, X, y, folds):
    """Out-of-fold probabilities and the median fit seconds."""
    probabilities = np.zeros((len(y), len(np.unique(y))))
    times = []
    for train, test in folds:
        model = make_model()
        start = time.perf_counter()
        model.fit(X[train], y[train])
        times.append(time.perf_counter() - start)
        probabilities[test] = model.predict_proba(X[test])
    return probabilities, float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(DATA_SETS), choices=list(DATA_SETS))
    parser.add_argument("--multiclass", default="shared", choices=["shared", "ovr"])
    args = parser.parse_args()
    rows = []
    for name in args.sets:
        X, y = DATA_SETS[name]()
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        cells = {}
        models = {
            "k=10": lambda: make_pipeline(StandardScaler(), GreedyKFDA(k=10, multiclass=args.multiclass)),
            "default": lambda: make_pipeline(StandardScaler(), GreedyKFDA(multiclass=args.multiclass)),
            "k=100": lambda: make_pipeline(StandardScaler(), GreedyKFDA(k=100, multiclass=args.multiclass)),
            "SVC": lambda: make_pipeline(StandardScaler(), SVC(probability=True, random_state=0)),
        }
        for label, make_model in models.items():
            probabilities, fit_time = cross_validated(make_model, X, y, folds)
            cells[label] = (log_loss(y, probabilities), accuracy_score(y, probabilities.argmax(axis=1)), fit_time)
        default_k = make_pipeline(StandardScaler(), GreedyKFDA(multiclass=args.multiclass)).fit(X, y)[-1].k_
        row = [name, default_k]
        for label in models:
            loss, accuracy, _ = cells[label]
            row.append(f"{loss:.3f} / {accuracy:.3f}")
        row.append(f"{cells['default'][0] / cells['SVC'][0]:.2f}")
        row.append(f"{cells['default'][2] * 1e3:.0f} / {cells['SVC'][2] * 1e3:.0f}")
        rows.append(row)
    headers = ["data", "default k", "k=10", "default", "k=100", "SVC(probability=True)",
               "default / SVC log-loss", "fit ms default / SVC"]
    print(f"log-loss / accuracy, 5-fold cross-validated predict_proba; multiclass={args.multiclass}")
    print(tabulate(rows, headers=headers, tablefmt="github"))


if __name__ == "__main__":
    main()
