"""Sparse input: a wide factored fit in memory proportional to the non-zeros, and a TF-IDF text
benchmark beside SVC and LinearSVC.

    python benches/bench_sparse.py --large                 # 150,000 × 200,000, ~40 non-zeros a row
    python benches/bench_sparse.py --text                  # 5,000 and 20,000 training documents
    python benches/bench_sparse.py --text --sizes 5000 --large --rows 30000
    python benches/bench_sparse.py --one-row                # one-row predictions, k = 200

``--large``: ``sparse_data.tfidf_like(m + 20,000, 200,000, 52)`` (about 40 non-zeros a row after
repeated words merge; float32 CSR), the last 20,000 rows held out.
``GreedyKFDA(solver="factored")`` with the linear kernel (``Φ = X``, the CSR itself) at k = 50
and 200, and the rbf kernel (``gamma="scale"``, factor rank ``--rank``) at k = 50, beside
``LinearSVC`` on the same rows (the baseline of the ratios).

``--text``: ``sparse_data.topic_corpus`` documents (4 classes, 30,000 pseudo-words) through
``TfidfVectorizer(sublinear_tf=True, min_df=2)`` fitted on the training documents; 5,000 test
documents. ``LinearSVC``, ``SVC`` (linear and rbf, ``gamma="scale"``), ``GreedyKFDA`` (dense
solver: linear at k = 50 and 200, rbf at k = 200; factored: linear (``Φ = X``) and rbf, k = 200),
all with default regularisation. Each fit runs in a process of its own (peak resident memory, the data
included); fit and prediction (the test set) seconds are also given as ratios to
``LinearSVC``'s, measured in the same run.

``--one-row``: a linear factored ``GreedyKFDA`` (k = 200) of ``tfidf_like(20,000, 200,000, 52)``
predicting one row at a time, its bases indexed by feature once (``decision_function``) and at
every call (``_core.kernel_expansion`` given the bases' array).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

HELD_OUT = 20_000
TEST_DOCUMENTS = 5_000


def model(method, rank):
    from sklearn.svm import SVC, LinearSVC

    from gkfda import GreedyKFDA

    if method == "linearsvc":
        return LinearSVC()
    if method == "svc_linear":
        return SVC(kernel="linear")
    if method == "svc_rbf":
        return SVC(kernel="rbf", gamma="scale")
    kernel, solver, k = method.split("_")[1:]
    return GreedyKFDA(kernel=kernel, solver=solver, k=int(k), gamma="scale", dtype="float32",
                      factor_rank=rank if solver == "factored" else "auto", random_state=0)


def worker(method, data_file, rank):
    import numpy as np
    import scipy.sparse as sp

    with np.load(data_file) as arrays:
        y, y_test = arrays["y"], arrays["y_test"]
    X = sp.load_npz(data_file + ".train.npz")
    X_test = sp.load_npz(data_file + ".test.npz")
    estimator = model(method, rank)
    start = time.perf_counter()
    estimator.fit(X, y)
    fit = time.perf_counter() - start
    start = time.perf_counter()
    predicted = estimator.predict(X_test)
    predict = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"fit": fit, "predict": predict, "accuracy": float(np.mean(predicted == y_test)),
                      "peak": peak, "bases": int(getattr(estimator, "k_", 0))}))


def save(directory, name, X, y, X_test, y_test):
    import numpy as np
    import scipy.sparse as sp

    path = os.path.join(directory, name)
    np.savez(path, y=y, y_test=y_test)
    sp.save_npz(path + ".npz.train.npz", X.tocsr(), compressed=False)
    sp.save_npz(path + ".npz.test.npz", X_test.tocsr(), compressed=False)
    return path + ".npz"


def run(method, data_file, rank):
    output = subprocess.run([sys.executable, __file__, "--worker", method, data_file, str(rank)],
                            check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def table(title, rows):
    """The rows ``(name, result)``, each time also as a ratio to the first row's (the baseline)."""
    print(f"\n{title}\n")
    print("| method | accuracy | fit (s) | × baseline | predict (s) | × baseline | peak RSS (GiB) |")
    print("|---|---|---|---|---|---|---|")
    base = rows[0][1]
    for name, r in rows:
        print(f"| {name} | {r['accuracy']:.4f} | {r['fit']:.2f} | {r['fit'] / base['fit']:.2f} | "
              f"{r['predict']:.3f} | {r['predict'] / base['predict']:.2f} | {r['peak'] / 2**30:.2f} |", flush=True)


def large(directory, rows, rank):
    from sparse_data import tfidf_like

    X, y = tfidf_like(rows + HELD_OUT, 200_000, 52, seed=0)
    print(f"{rows:,} training rows × {X.shape[1]:,} features, {X[:rows].nnz / rows:.1f} non-zeros a row "
          f"(dense float32 would be {rows * X.shape[1] * 4 / 2**30:.0f} GiB), {HELD_OUT:,} held out")
    path = save(directory, "large", X[:rows], y[:rows], X[rows:], y[rows:])
    del X
    results = [("LinearSVC", run("linearsvc", path, rank))]
    for k in (50, 200):
        result = run(f"gkfda_linear_factored_{k}", path, rank)
        results.append((f"GreedyKFDA linear, factored (Φ = X), k = {k} (k_ = {result['bases']})", result))
    result = run("gkfda_rbf_factored_50", path, rank)
    results.append((f"GreedyKFDA rbf, factored, k = 50 (k_ = {result['bases']}), p = {rank}", result))
    table("Wide sparse fit", results)


def text(directory, sizes):
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    from sparse_data import topic_corpus

    for m in sizes:
        documents, labels = topic_corpus(m + TEST_DOCUMENTS, seed=1)
        vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=2, dtype=np.float32)
        X = vectorizer.fit_transform(documents[:m])
        X_test = vectorizer.transform(documents[m:])
        print(f"\n{m:,} training documents, {TEST_DOCUMENTS:,} test: {X.shape[1]:,} terms, "
              f"{X.nnz / m:.0f} non-zeros a document")
        path = save(directory, f"text{m}", X, labels[:m], X_test, labels[m:])
        methods = [("LinearSVC", "linearsvc"), ("SVC linear", "svc_linear"), ("SVC rbf", "svc_rbf"),
                   ("GreedyKFDA linear, k = 50", "gkfda_linear_dense_50"),
                   ("GreedyKFDA linear, k = 200", "gkfda_linear_dense_200"),
                   ("GreedyKFDA linear, factored (Φ = X), k = 200", "gkfda_linear_factored_200"),
                   ("GreedyKFDA rbf, k = 200", "gkfda_rbf_dense_200"),
                   ("GreedyKFDA rbf, factored, k = 200, p = 1000", "gkfda_rbf_factored_200")]
        table(f"TF-IDF text, m = {m:,}", [(name, run(method, path, 1000)) for name, method in methods])


def one_row(rows, k):
    """One-row predictions of wide sparse rows: the model's bases indexed by feature once and kept
    (what ``decision_function`` does) against indexing them at every call (``_core.kernel_expansion``
    with the bases' array), medians of 7 rounds of 20 calls, the same rows and model."""
    import numpy as np

    from gkfda import GreedyKFDA, _core
    from sparse_data import tfidf_like

    X, y = tfidf_like(rows, 200_000, 52, seed=0)
    model = GreedyKFDA(kernel="linear", solver="factored", k=k, dtype="float32", random_state=0).fit(X, y)
    params = dict(kernel="linear", gamma=1.0, degree=3, coef0=1.0)
    queries = [X[i] for i in range(20)]

    def indexed_each_call():
        for row in queries:
            _core.kernel_expansion(row, model._union_points, model._expansion_weights, model._expansion_bias, **params)

    def indexed_once():
        for row in queries:
            model.decision_function(row)

    medians = {}
    for name, calls in (("bases indexed at every call", indexed_each_call), ("bases indexed once", indexed_once)):
        rounds = []
        for _ in range(7):
            start = time.perf_counter()
            calls()
            rounds.append((time.perf_counter() - start) / len(queries))
        medians[name] = float(np.median(rounds))
    base = medians["bases indexed at every call"]
    print(f"\nOne-row predictions, {rows:,} × 200,000 training rows, linear, k = {model.k_}\n")
    print("| prediction | median a call (ms) | × indexed at every call |")
    print("|---|---|---|")
    for name, value in medians.items():
        print(f"| {name} | {value * 1e3:.3f} | {value / base:.4f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="the wide factored fit")
    parser.add_argument("--rows", type=int, default=150_000, help="--large's training rows")
    parser.add_argument("--rank", type=int, default=1000, help="--large's factor_rank")
    parser.add_argument("--text", action="store_true", help="the TF-IDF text benchmark")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 20_000], help="--text's training sizes")
    parser.add_argument("--one-row", action="store_true", help="one-row predictions of wide sparse rows")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        method, data_file, rank = args.worker
        worker(method, data_file, int(rank))
        return
    with tempfile.TemporaryDirectory() as directory:
        if args.large:
            large(directory, args.rows, args.rank)
        if args.text:
            text(directory, args.sizes)
    if args.one_row:
        one_row(20_000, 200)


if __name__ == "__main__":
    main()
