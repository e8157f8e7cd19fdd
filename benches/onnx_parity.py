"""ONNX export: how far ONNX Runtime's outputs are from the estimators' own.

For each case an estimator is fitted on scikit-learn's bundled data (standardised; the
first 70 % of the rows), exported with ``gkfda.to_onnx`` for float32 and float64 input,
and run under ONNX Runtime on the rest. Printed: a markdown table of the largest absolute
difference from ``predict_proba`` (classifiers), ``predict`` or ``transform``, whether
the labels equal ``predict``, and the largest ℓ1 norm of an output's weights over the
bases (float32's rounding is amplified by it); then the operators of two graphs.

Usage: ``python benches/onnx_parity.py``
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnxruntime as ort
import skl2onnx
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, load_wine, make_moons
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from tabulate import tabulate

from gkfda import GreedyKFDA, GreedyKFDACV, GreedyNystroem, KernelMatchingPursuit, ParsimoniousKFDA, SparseKernelPCA
from gkfda.onnx import _predictor, to_onnx

DATA = {
    "breast_cancer": lambda: load_breast_cancer(return_X_y=True),
    "iris": lambda: load_iris(return_X_y=True),
    "wine": lambda: load_wine(return_X_y=True),
    "diabetes": lambda: load_diabetes(return_X_y=True),
    "moons": lambda: make_moons(300, noise=0.3, random_state=0),
}

CASES = [
    ("GreedyKFDA binary rbf", "breast_cancer", lambda: GreedyKFDA(k=20)),
    ("GreedyKFDA binary linear", "breast_cancer", lambda: GreedyKFDA(k=20, kernel="linear")),
    ("GreedyKFDA binary poly", "breast_cancer", lambda: GreedyKFDA(k=20, kernel="poly", degree=2)),
    ("GreedyKFDA shared rbf", "wine", lambda: GreedyKFDA(k=15)),
    ("GreedyKFDA ovr rbf", "wine", lambda: GreedyKFDA(k=15, multiclass="ovr")),
    ("GreedyKFDA ovr poly, str labels", "iris", lambda: GreedyKFDA(k=10, kernel="poly", multiclass="ovr")),
    ("GreedyKFDACV rbf", "wine", lambda: GreedyKFDACV(gammas=3, max_k=15, cv=3)),
    ("ParsimoniousKFDA binary rbf", "breast_cancer", lambda: ParsimoniousKFDA(rho=1e-2)),
    ("ParsimoniousKFDA ovr rbf", "wine", lambda: ParsimoniousKFDA(rho=1e-2)),
    ("KernelMatchingPursuit rbf", "diabetes", lambda: KernelMatchingPursuit(k=20, fit_intercept=True)),
    ("GreedyNystroem rbf", "wine", lambda: GreedyNystroem(n_components=20)),
    ("SparseKernelPCA rbf", "wine", lambda: SparseKernelPCA(n_components=20)),
    ("GreedyKFDA binary rbf gamma=0.2 (ill-conditioned)", "moons", lambda: GreedyKFDA(k=10, gamma=0.2)),
]


def inference(onx):
    return ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])


def parity(name, data, make_model):
    X, y = DATA[data]()
    X = StandardScaler().fit_transform(X)
    if data == "diabetes":
        y = (y - y.mean()) / y.std()
    if "str labels" in name:
        y = np.array(["setosa", "versicolor", "virginica"])[y]
    cut = int(0.7 * len(X))
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order]
    model = make_model().fit(X[:cut], y[:cut])
    row = {"case": name, "data": data}
    for dtype in (np.float32, np.float64):
        test = X[cut:].astype(dtype)
        outputs = inference(to_onnx(model, test[:1])).run(None, {"X": test})
        if hasattr(model, "predict_proba"):
            label, probabilities = outputs
            difference = np.abs(probabilities - model.predict_proba(test)).max()
            row[f"labels equal ({np.dtype(dtype).name})"] = bool((label == model.predict(test)).all())
        else:
            expected = model.predict(test) if hasattr(model, "predict") else model.transform(test)
            difference = np.abs(outputs[0] - expected.reshape(outputs[0].shape)).max()
        row[f"max abs diff {np.dtype(dtype).name}"] = f"{difference:.1e}"
    row["max ‖weights‖₁"] = f"{np.abs(_predictor(model).weights).sum(axis=0).max():.3g}"
    return row


def operators(onx):
    counts = Counter((node.domain or "ai.onnx", node.op_type) for node in onx.graph.node)
    return ", ".join(f"{op} ×{n}" if domain == "ai.onnx" else f"{domain}.{op} ×{n}" for (domain, op), n in sorted(counts.items()))


def main():
    rows = [parity(*case) for case in CASES]
    columns = ["case", "data", "max abs diff float32", "labels equal (float32)", "max abs diff float64",
               "labels equal (float64)", "max ‖weights‖₁"]
    print(tabulate([[row.get(c, "") for c in columns] for row in rows], headers=columns, tablefmt="github"))
    X, y = load_wine(return_X_y=True)
    model = GreedyKFDA(k=15, multiclass="ovr").fit(StandardScaler().fit_transform(X), y)
    print(f"\nOperators of GreedyKFDA(k=15, multiclass='ovr'), rbf, wine: {operators(to_onnx(model, X[:1]))}")
    pipeline = make_pipeline(StandardScaler(), GreedyKFDA(k=15)).fit(X, y)
    for dtype in (np.float32, np.float64):
        onx = skl2onnx.to_onnx(pipeline, X[:1].astype(dtype))
        print(f"Operators of make_pipeline(StandardScaler(), GreedyKFDA(k=15)), {np.dtype(dtype).name}: {operators(onx)}")


if __name__ == "__main__":
    main()
