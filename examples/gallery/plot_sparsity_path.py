"""
The sparsity path
=================

One fit of :class:`~gkfda.GreedyKFDA` chooses its bases one at a time, and the model truncated
at each ``k`` (its first ``k`` bases) is the model that a fit with that ``k`` would give. So
:meth:`~gkfda.GreedyKFDA.error_path` scores every ``k`` from one fit: here on the training set
and on a held-out validation set of the IDA ``banana`` benchmark (realisation 1: 400 training
points, 4,900 held out). The training error keeps falling; the validation error levels off
after about twenty bases. :class:`~gkfda.GreedyKFDACV` chooses ``k`` the same way, from the
paths of one fit per cross-validation fold.
"""

import matplotlib.pyplot as plt
import numpy as np

from gkfda import GreedyKFDA
from gkfda.datasets import load_benchmark
from gkfda.plotting import plot_error_path

X_train, y_train, X_valid, y_valid = load_benchmark("banana").split(0)
model = GreedyKFDA(k=80, gamma=1.0).fit(X_train, y_train)

ks = np.arange(1, model.k_ + 1)
fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
plot_error_path(ax, ks, model.error_path(X_train, y_train, ks), label="training")
plot_error_path(ax, ks, model.error_path(X_valid, y_valid, ks), label="validation", linestyle="--")
best = ks[np.argmin(model.error_path(X_valid, y_valid, ks))]
ax.axvline(best, color="grey", linewidth=0.8)
ax.set_title(f"banana: error against k, one fit (least validation error at k = {best})")
ax.legend()
plt.show()
