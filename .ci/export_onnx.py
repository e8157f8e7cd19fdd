"""Exports gkfda estimators to ONNX graphs and writes what each should output, for
tools/tract-check (run by .ci/run): every kernel, link and dtype that tract must run.

    python .ci/export_onnx.py DIR
"""

import json
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_iris, load_wine, make_moons
from sklearn.preprocessing import StandardScaler

import gkfda

directory = Path(sys.argv[1])
directory.mkdir(parents=True, exist_ok=True)
X2, y2 = make_moons(200, noise=0.25, random_state=0)
X3, y3 = load_wine(return_X_y=True)
X3 = StandardScaler().fit_transform(X3)
Xi, yi = load_iris(return_X_y=True)
Xi = StandardScaler().fit_transform(Xi)
models = [
    ("binary_rbf", gkfda.GreedyKFDA(k=20, gamma=2.0).fit(X2, y2), X2),
    ("binary_linear", gkfda.GreedyKFDA(k=2, kernel="linear").fit(X2, y2), X2),
    ("binary_poly", gkfda.GreedyKFDA(k=8, kernel="poly", degree=2, gamma=0.5).fit(X2, y2), X2),
    ("shared_rbf", gkfda.GreedyKFDA(k=20).fit(X3, y3), X3),
    ("ovr_rbf", gkfda.GreedyKFDA(k=10, multiclass="ovr").fit(Xi, yi), Xi),
    ("string_labels", gkfda.GreedyKFDA(k=10).fit(Xi, np.array(["setosa", "versicolor", "virginica"])[yi]), Xi),
    ("parsimonious", gkfda.ParsimoniousKFDA(gamma=2.0).fit(X2, y2), X2),
    ("matching_pursuit", gkfda.KernelMatchingPursuit(k=10, gamma=2.0).fit(X2, X2[:, 0] * X2[:, 1]), X2),
    ("nystroem", gkfda.GreedyNystroem(n_components=10, gamma=0.5).fit(X3), X3),
    ("pca", gkfda.SparseKernelPCA(n_components=8, gamma=0.5).fit(X3), X3),
]
cases = []
for name, model, X in models:
    for dtype in (np.float64, np.float32):
        X_test = np.ascontiguousarray(X[:25], dtype=dtype)
        file = f"{name}_{np.dtype(dtype).name}.onnx"
        (directory / file).write_bytes(gkfda.to_onnx(model, X_test[:1]).SerializeToString())
        if hasattr(model, "predict_proba") and model.classes_.dtype.kind in "UO":
            # tract runs the string labels' Gather; the comparison reads numbers only.
            outputs = [(1, model.predict_proba(X_test), None)]
        elif hasattr(model, "predict_proba"):
            outputs = [(0, model.predict(X_test), 0.0), (1, model.predict_proba(X_test), None)]
        elif hasattr(model, "transform"):
            outputs = [(0, model.transform(X_test), None)]
        else:
            outputs = [(0, model.predict(X_test), None)]
        for output, values, tolerance in outputs:
            cases.append({
                "file": file, "dtype": np.dtype(dtype).name, "X": X_test.astype(np.float64).tolist(),
                "output": output, "values": np.asarray(values, dtype=np.float64).ravel().tolist(),
                "tolerance": (1e-9 if dtype == np.float64 else 1e-5) if tolerance is None else tolerance,
            })
(directory / "expected.json").write_text(json.dumps({"cases": cases}))
print(f"{len(models) * 2} graphs exported to {directory}, {len(cases)} outputs to compare")
