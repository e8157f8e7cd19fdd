"""gkfda: sparse greedy Kernel Fisher Discriminant Analysis with a Rust core.

>>> import gkfda
>>> sorted(gkfda.CRITERIA)
['optimal', 'pseudo', 'random', 'reverse', 'reverse-pseudo']
"""

from . import reference
from .estimator import GreedyKFDA, fit
from .reference import CRITERIA, DEFLATIONS

__all__ = ["GreedyKFDA", "fit", "reference", "CRITERIA", "DEFLATIONS", "__version__"]

try:
    from importlib.metadata import version as _version

    __version__ = _version("gkfda")
except Exception:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"
