"""A fit that either completes or leaves the estimator as it was.

Every estimator's ``fit`` sets a dozen attributes, one after the other, over seconds to hours;
an exception between two of them (Ctrl-C's ``KeyboardInterrupt``, a ``MemoryError``, a bad
input found late) would leave new attributes next to old ones: ``classes_`` of the new fit
with the predictor of the old one, predicting with no error. :func:`fits_atomically` runs the
fit on a working copy and hands its state over in one assignment at the end.
"""

from __future__ import annotations

import functools


def fits_atomically(fit):
    """``fit`` run on a shallow copy of the estimator (its parameters and its current state),
    whose ``__dict__`` then replaces the estimator's in one step. Any exception raised by the
    fit, ``KeyboardInterrupt`` included, leaves the estimator untouched: fitted with its old
    state, or unfitted (``NotFittedError``)."""

    @functools.wraps(fit)
    def fit_in_one_step(self, *args, **kwargs):
        working = type(self).__new__(type(self))
        # Shallow: the fit replaces attributes, it never changes an existing one in place.
        working.__dict__.update(self.__dict__)
        result = fit(working, *args, **kwargs)
        self.__dict__ = working.__dict__  # the one step: a single attribute store
        return self if result is working else result

    return fit_in_one_step
