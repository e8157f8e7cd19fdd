"""
A decision boundary and its bases
=================================

:class:`~gkfda.GreedyKFDA` on two interleaved half moons: the discriminant is a kernel
expansion over the ``k`` training points the greedy selection chose (``support_vectors_``,
circled), and a new point costs ``k`` kernel evaluations. The colours are the decision values
(the log-odds of the second class), the black line is the boundary where they are 0.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import make_moons

from gkfda import GreedyKFDA
from gkfda.plotting import plot_decision_boundary

X, y = make_moons(300, noise=0.25, random_state=0)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
for ax, k in zip(axes, (5, 20)):
    model = GreedyKFDA(k=k, gamma=2.0).fit(X, y)
    plot_decision_boundary(ax, model, X, y)
    ax.set_title(f"k = {k}: training error {1 - model.score(X, y):.3f}")
    ax.legend(loc="lower right")
plt.show()
