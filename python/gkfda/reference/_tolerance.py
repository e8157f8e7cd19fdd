"""The numerical guards' threshold every oracle of :mod:`gkfda.reference` shares with the engine."""

import numpy as np


def default_tol(dtype) -> float:
    """Relative threshold below which a column counts as numerically explained."""
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-9
