"""gkfda: sparse greedy Kernel Fisher Discriminant Analysis with a Rust core.

>>> import gkfda
>>> sorted(gkfda.CRITERIA)
['optimal', 'pseudo', 'random', 'reverse', 'reverse-pseudo']
>>> gkfda.KERNELS
('rbf', 'linear', 'poly')
"""

import os as _os
import warnings as _warnings

from . import _core, reference
from ._core import CRITERIA, DEFLATIONS, KERNELS
from .estimator import GreedyKFDA, fit
from .parsimonious import ParsimoniousKFDA
from .model_selection import GreedyKFDACV
from .pursuit import GreedyNystroem, KernelMatchingPursuit, SparseKernelCCA, SparseKernelPCA, matching_pursuit_bound
from ._serialization import load, save

__all__ = [
    "GreedyKFDA",
    "GreedyKFDACV",
    "ParsimoniousKFDA",
    "GreedyNystroem",
    "KernelMatchingPursuit",
    "SparseKernelCCA",
    "SparseKernelPCA",
    "matching_pursuit_bound",
    "fit",
    "save",
    "load",
    "reference",
    "CRITERIA",
    "DEFLATIONS",
    "KERNELS",
    "simd_level",
    "to_onnx",
    "__version__",
]


def simd_level() -> str:
    """The instruction-set level the Rust engine runs at: ``"avx512"``, ``"avx2"`` or ``"none"``.

    The best the CPU offers, capped by the environment variable ``GKFDA_SIMD``, read once
    per process, when gkfda is imported: ``GKFDA_SIMD=avx2`` runs the code of a machine without AVX-512 (its
    selections bit for bit: on AVX-512, passes with 2 to 6 right-hand sides sum the upper
    triangle of the kernel by tiles with lanes along its columns, elsewhere those with 2 to 4
    by tiles of rows and wider ones whole rows), ``GKFDA_SIMD=none`` the portable code of
    a machine without AVX2 and FMA. The cap never raises the level above the CPU's.

    >>> import gkfda
    >>> gkfda.simd_level() in ("avx512", "avx2", "none")
    True
    """
    return _core.simd_level()


def to_onnx(estimator, X, *, target_opset=None, options=None):
    """An ONNX model of a fitted estimator: :func:`gkfda.onnx.to_onnx` (documented there).

    Imported on first call, so that ``import gkfda`` needs neither onnx nor skl2onnx
    (``pip install 'gkfda[onnx]'``).
    """
    from .onnx import to_onnx as convert

    return convert(estimator, X, target_opset=target_opset, options=options)


def _check_simd_variable() -> None:
    names, variable = _core.simd_levels()
    value = _os.environ.get(variable)
    if value and value not in names:
        _warnings.warn(
            f"{variable}={value!r} is not one of {', '.join(names)}; ignored: the engine "
            f"runs at {simd_level()!r}",
            RuntimeWarning,
            stacklevel=3,
        )


_check_simd_variable()

try:
    from importlib.metadata import version as _version

    __version__ = _version("gkfda")
except Exception:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"
