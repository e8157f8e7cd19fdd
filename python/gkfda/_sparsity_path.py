"""The sparsity path of :class:`~gkfda.GreedyKFDA`: every model its one fit holds.

The greedy selection is nested, so a model fitted with ``k`` bases holds the models of its
first ``j`` bases for every ``j ≤ k`` (the Nyström features in selection order, the
discriminant's Cholesky factor and the calibration of every prefix are kept at fit time).
:class:`SparsityPath` reads them: their decision values, probabilities and errors for each
``j`` (``decision_path``, ``proba_path``, ``error_path``), and a fitted copy truncated to
``j`` bases (``truncate``). ``GreedyKFDA`` inherits it; ``GreedyKFDACV`` scores every ``k``
of a fold from one fit through it.
"""

from __future__ import annotations

import copy

import numpy as np
from sklearn.utils._param_validation import validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ._kernels import _count
from ._discriminant import compacted, one_blas_thread
from ._validation import check_full_state


class SparsityPath:
    """The methods of a fitted :class:`~gkfda.GreedyKFDA` that read its truncated models.

    A mixin: it reads the estimator's fitted models (``_models``, each with ``truncated``,
    ``transform`` and ``linear``), the kernel to the bases (``_kernel_to_supports``), the
    link (``_probabilities``) and the bases' rows, and calls ``_set_public_attributes`` on a
    truncated copy.
    """

    def _check_ks(self, ks):
        check_is_fitted(self)
        check_full_state(self, "the sparsity path (decision_path, proba_path, error_path)")
        # Up to the k the model was fitted with: a selection that stopped early at k_ < k
        # gives the same model for every k between k_ and k, as separate fits would.
        largest = self._fitted_k
        if ks is None:
            return np.arange(1, largest + 1)
        ks = np.atleast_1d(np.asarray(ks))
        if ks.ndim != 1 or not np.issubdtype(ks.dtype, np.integer) or ks.size == 0:
            raise ValueError(f"ks: must be a non-empty list of integers, got {ks!r}")
        if ks.min() < 1 or ks.max() > largest:
            raise ValueError(f"ks: every value must be between 1 and the fitted k = {largest}, got {ks.tolist()}")
        return ks

    def decision_path(self, X, ks=None):
        """Decision values of the model truncated to its first ``k`` bases, for each ``k``.

        The greedy selection is nested, so one fit to ``k_`` holds every smaller model:
        with the Cholesky-ordered Nyström features, the discriminant's Cholesky factor
        and the calibration of every prefix kept at fit time, each truncated model is a
        ``k×k`` triangular solve, and it equals a separate fit with that ``k``,
        probabilities included (for ``stages=1``; with stages the prefix differs from a
        separate fit only if a pick inside a stage was skipped as degenerate).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        ks : sequence of int or None
            Numbers of bases, each in ``1..k`` (the fitted ``k``; beyond an early stop
            at ``k_`` the model is the full one); ``None`` means every one.

        Returns
        -------
        ndarray of shape (len(ks), n_samples), or (len(ks), n_samples, n_classes)
            What :meth:`decision_function` of each truncated model returns.

        Examples
        --------
        >>> from sklearn.datasets import make_moons
        >>> from gkfda import GreedyKFDA
        >>> X, y = make_moons(300, noise=0.2, random_state=0)
        >>> model = GreedyKFDA(k=40, gamma=2.0).fit(X, y)
        >>> model.decision_path(X, ks=[10, 20, 40]).shape
        (3, 300)
        """
        ks = self._check_ks(ks)
        kernels = self._kernel_to_supports(X)
        path = []
        with one_blas_thread():
            features = [model.transform(kernel) for model, kernel in zip(self._models, kernels)]
            for k in ks:
                outputs = []
                for model, phi in zip(self._models, features):
                    coef, intercept = model.truncated(k).linear()
                    values = phi[:, : coef.shape[0]] @ coef + intercept
                    outputs.append(values if self._shared_multiclass() else values[:, 1] - values[:, 0])
                path.append(outputs[0] if len(outputs) == 1 else np.column_stack(outputs))
        return np.stack(path)

    def proba_path(self, X, ks=None):
        """:meth:`predict_proba` of the model truncated at each ``k``: shape
        ``(len(ks), n_samples, n_classes)``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import make_moons
        >>> from gkfda import GreedyKFDA
        >>> X, y = make_moons(300, noise=0.2, random_state=0)
        >>> model = GreedyKFDA(k=40, gamma=2.0).fit(X, y)
        >>> path = model.proba_path(X, ks=[10, 40])
        >>> path.shape, bool(np.allclose(path[1], model.predict_proba(X)))
        ((2, 300, 2), True)
        """
        path = self.decision_path(X, ks)
        return self._probabilities(path if path.ndim == 3 else path[..., None])

    def error_path(self, X, y, ks=None):
        """Misclassification rate on ``(X, y)`` of the model truncated at each ``k``.

        Examples
        --------
        >>> from sklearn.datasets import make_moons
        >>> from gkfda import GreedyKFDA
        >>> X, y = make_moons(300, noise=0.2, random_state=0)
        >>> errors = GreedyKFDA(k=40, gamma=2.0).fit(X, y).error_path(X, y, ks=[1, 40])
        >>> bool(errors[1] < errors[0])
        True
        """
        path = self.decision_path(X, ks)
        y = column_or_1d(y, warn=True)
        if len(y) != path.shape[1]:
            raise ValueError(f"y: has {len(y)} labels but X has {path.shape[1]} samples")
        if path.ndim == 2:
            predictions = self.classes_[(path > 0).astype(int)]
        else:
            predictions = self.classes_[np.argmax(path, axis=2)]
        return np.mean(predictions != np.asarray(y)[None, :], axis=1)

    def truncate(self, k):
        """A fitted copy of this model that uses only its first ``k`` bases.

        Examples
        --------
        >>> from sklearn.datasets import make_moons
        >>> from gkfda import GreedyKFDA
        >>> X, y = make_moons(300, noise=0.2, random_state=0)
        >>> small = GreedyKFDA(k=40, gamma=2.0).fit(X, y).truncate(15)
        >>> small.k_, small.get_params()["k"]
        (15, 15)
        """
        check_is_fitted(self)
        check_full_state(self, "truncate")
        validate_parameter_constraints({"k": [_count(1, self._fitted_k)]}, {"k": k}, caller_name="truncate")
        k = int(k)
        truncated = copy.deepcopy(self)
        truncated.k = truncated._fitted_k = k
        # Copies, not views of the full model's arrays: a view's strides change how BLAS
        # rounds, and pickling copies it, so the predictions would change through a pickle.
        truncated._models = [compacted(model.truncated(k)) for model in self._models]
        if getattr(self, "_feature_moments", None) is not None:
            truncated._feature_moments = compacted(self._feature_moments.truncated(k))
        union = np.unique(np.concatenate([model.support for model in truncated._models]))
        truncated._union_labels = self._union_labels[np.searchsorted(self._union_support, union)]
        truncated._union_support = union
        if self._support_points is not None:
            truncated._support_points = self._support_points.subset(union)
        truncated._set_public_attributes()
        return truncated
