"""Writes the model files of tests/data/models and expected.json, Python's predictions.

Run from the repository with gkfda installed: ``python tests/data/models/make_fixtures.py``.
The Rust test tests/serving/parity.rs (``python_parity``) loads every file listed in
expected.json and checks its predictions against Python's to 1e-12.
"""

import json
import os

import numpy as np

import gkfda
from gkfda import _core

HERE = os.path.dirname(os.path.abspath(__file__))


def blobs(rng, n_per_class, n_classes, d):
    centres = rng.normal(scale=2.0, size=(n_classes, d))
    X = np.vstack([c + rng.normal(size=(n_per_class, d)) for c in centres])
    y = np.repeat(np.arange(n_classes), n_per_class)
    return X, y


def rbf(A, B, gamma):
    distances = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * distances)


def main():
    rng = np.random.default_rng(20261126)
    d = 3
    X2, y2 = blobs(rng, 20, 2, d)
    X3, y3 = blobs(rng, 15, 3, d)
    Xt = np.vstack([rng.normal(scale=2.0, size=(6, d)), [[8.0, -7.5, 9.0]]])
    Yc = X2 @ rng.normal(size=(d, 2)) + 0.1 * rng.normal(size=(len(X2), 2))
    gamma = 0.3
    K2 = rbf(X2, X2, gamma)
    Kt2 = rbf(Xt, X2, gamma)

    words = np.array(["ham", "spam"])[y2]
    models = [
        ("greedy_binary_rbf", gkfda.GreedyKFDA(k=6, gamma=gamma).fit(X2, y2), Xt, False),
        ("greedy_binary_rbf_lean", gkfda.GreedyKFDA(k=6, gamma=gamma).fit(X2, y2), Xt, True),
        ("greedy_binary_f32", gkfda.GreedyKFDA(k=6, gamma=gamma, dtype="float32").fit(X2, words), Xt, True),
        ("greedy_shared_3class", gkfda.GreedyKFDA(k=6, gamma=gamma).fit(X3, y3 * 10), Xt, False),
        ("greedy_ovr_3class", gkfda.GreedyKFDA(k=4, gamma=gamma, multiclass="ovr").fit(X3, y3), Xt, True),
        ("greedy_poly", gkfda.GreedyKFDA(k=5, kernel="poly", gamma=0.2, degree=2, coef0=1.0).fit(X2, y2 == 1),
         Xt, True),
        ("greedy_linear", gkfda.GreedyKFDA(k=3, kernel="linear").fit(X2, y2 * 2.0 - 1.0), Xt, True),
        ("greedy_precomputed", gkfda.GreedyKFDA(k=6, kernel="precomputed").fit(K2, y2), Kt2, True),
        ("parsimonious_binary", gkfda.ParsimoniousKFDA(gamma=gamma).fit(X2, y2), Xt, True),
        ("kmp", gkfda.KernelMatchingPursuit(k=6, gamma=gamma).fit(X2, X2[:, 0] - X2[:, 1] ** 2), Xt, True),
        ("nystroem", gkfda.GreedyNystroem(n_components=5, gamma=gamma).fit(X2), Xt, True),
        ("kpca", gkfda.SparseKernelPCA(n_components=4, gamma=gamma).fit(X2), Xt, True),
        ("kpca_f32", gkfda.SparseKernelPCA(n_components=4, gamma=gamma, dtype="float32").fit(X2), Xt, True),
        ("kcca", gkfda.SparseKernelCCA(k=5, n_components=2, gamma=gamma).fit(X2, Yc), Xt, True),
        ("kcca_precomputed", gkfda.SparseKernelCCA(k=5, n_components=2, kernel="precomputed").fit(K2, rbf(Yc, Yc, 0.5)), Kt2,
         True),
    ]
    expected = []
    for name, model, X, lean in models:
        filename = f"{name}.gkfda"
        gkfda.save(model, os.path.join(HERE, filename), lean=lean)
        entry = {"file": filename, "X": X.tolist()}
        if hasattr(model, "predict_proba"):
            classes = list(model.classes_)
            entry["predict_proba"] = model.predict_proba(X).tolist()
            entry["decision_function"] = np.asarray(model.decision_function(X)).ravel().tolist()
            entry["predict"] = [classes.index(label) for label in model.predict(X)]
            entry["classes"] = [label if isinstance(label, str) else json.dumps(label.item()) for label in
                                model.classes_]
        elif hasattr(model, "predict"):
            entry["decision_function"] = np.asarray(model.predict(X)).ravel().tolist()
        else:
            entry["transform"] = np.asarray(model.transform(X)).ravel().tolist()
        expected.append(entry)
    with open(os.path.join(HERE, "expected.json"), "w") as file:
        # float32 kernel values depend on the SIMD level's exp (to float32's rounding).
        json.dump({"gkfda_version": gkfda.__version__, "simd_level": _core.simd_level(), "models": expected}, file)
        file.write("\n")


if __name__ == "__main__":
    main()
