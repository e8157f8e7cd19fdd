"""A fingerprint of the dense selection engine: one SHA-256 of the picks (and the early-stop
flags and pass counts) of many selections through ``_core.greedy_select``, so that two builds
can be shown to select alike bit for bit.

    python benches/fingerprint.py            # the installed gkfda
    /other/venv/bin/python benches/fingerprint.py

Every criterion × deflation × stages {1, 3, 10} × float32/float64 × 2 and 3 classes × 3 seeds
on fixed data: RBF kernels made by NumPy (not by the build under test), classes in runs (as
``GreedyKFDA.fit`` orders them) for seeds 0 and 1 and interleaved for seed 2. Prints the
number of selections and the hash.
"""

from __future__ import annotations

import hashlib

import numpy as np

from gkfda import CRITERIA, DEFLATIONS, _core

M, K = 400, 25


def data(seed: int, n_classes: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1000 + seed)
    x = rng.standard_normal((M, 6))
    codes = (x[:, 0] + 0.5 * np.sin(3 * x[:, 1]) + 0.3 * rng.standard_normal(M) > 0).astype(np.int64)
    if n_classes == 3:
        codes = codes + (x[:, 2] > 0.8)
    if seed < 2:
        order = np.argsort(codes, kind="stable")
        x, codes = x[order], codes[order]
    squared = (x**2).sum(1)
    distances = np.maximum(squared[:, None] + squared[None, :] - 2 * x @ x.T, 0.0)
    kernel = np.exp(-0.3 * distances)
    return np.ascontiguousarray(kernel.astype(dtype)), codes


def main() -> None:
    digest = hashlib.sha256()
    count = 0
    for dtype in (np.float64, np.float32):
        for n_classes in (2, 3):
            for seed in range(3):
                kernel, codes = data(seed, n_classes, dtype)
                y = codes.astype(bool) if n_classes == 2 else codes
                for criterion in CRITERIA:
                    for deflation in DEFLATIONS:
                        for stages in (1, 3, 10):
                            indices, stopped, passes = _core.greedy_select(
                                kernel, y, K, criterion=criterion, deflation=deflation,
                                stages=stages, seed=seed, n_threads=2,
                            )
                            record = (f"{np.dtype(dtype).name} {n_classes} {seed} {criterion} "
                                      f"{deflation} {stages}: {list(map(int, indices))} "
                                      f"{bool(stopped)} {int(passes)}\n")
                            digest.update(record.encode())
                            count += 1
    print(f"{count} selections, sha256 {digest.hexdigest()}")


if __name__ == "__main__":
    main()
