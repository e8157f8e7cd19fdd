"""The matching-pursuit family: kernel matching pursuit, sparse kernel PCA and CCA, and a
greedy Nyström transformer.

Each estimator chooses training points greedily with the Rust engine
(``gkfda._core.pursuit_select``, or ``greedy_select`` for the supervised landmarks of
:class:`GreedyNystroem`): score every candidate column of the deflated kernel, take the
best, deflate, repeat. The final model is then fitted on the ORIGINAL kernel's columns of
the chosen points, so a prediction costs one kernel evaluation per chosen point.

- :class:`KernelMatchingPursuit`: least-squares regression on ``k`` kernel columns, and
  its sample-compression bound (:func:`matching_pursuit_bound`).
- :class:`SparseKernelPCA`: the subspace spanned by ``n_components`` training points
  in feature space, its Nyström features and its compression bound for every prefix.
- :class:`SparseKernelCCA`: canonical correlation of two views, each on the Nyström
  features of the same ``k`` paired points.
- :class:`GreedyNystroem`: scikit-learn's ``Nystroem`` with landmarks chosen greedily.

Examples
--------
>>> from gkfda import matching_pursuit_bound
>>> round(matching_pursuit_bound(1000, 10, 0, delta=0.05), 6)
0.43515
"""

from ._base import matching_pursuit_bound
from .cca import SparseKernelCCA
from .matching import KernelMatchingPursuit
from .nystroem import GreedyNystroem
from .pca import SparseKernelPCA

__all__ = [
    "KernelMatchingPursuit",
    "SparseKernelPCA",
    "SparseKernelCCA",
    "GreedyNystroem",
    "matching_pursuit_bound",
]
