"""gkfda: sparse greedy Kernel Fisher Discriminant Analysis with a Rust core.

>>> import gkfda
>>> sorted(gkfda.CRITERIA)
['optimal', 'pseudo', 'random', 'reverse', 'reverse-pseudo']
>>> gkfda.KERNELS
('rbf', 'linear', 'poly')
"""

import os as _os
import warnings as _warnings

import importlib as _importlib

from . import _core
from ._core import CRITERIA, DEFLATIONS, KERNELS

# The estimators (and with them NumPy, SciPy and scikit-learn, most of a second to import)
# load on first use (PEP 562), so that `gkfda --help` and `import gkfda` alone answer at once.
_LAZY = {
    "GreedyKFDA": "estimator",
    "fit": "estimator",
    "ParsimoniousKFDA": "parsimonious",
    "GreedyKFDACV": "model_selection",
    "GreedyNystroem": "pursuit",
    "KernelMatchingPursuit": "pursuit",
    "SparseKernelCCA": "pursuit",
    "SparseKernelPCA": "pursuit",
    "matching_pursuit_bound": "pursuit",
    "load": "_serialization",
    "save": "_serialization",
    "Predictor": "predictor",
}
_SUBMODULES = ("reference", "datasets", "bounds", "cli", "study", "onnx")


def _installed_version() -> str:
    # importlib.metadata costs more to import than the rest of the package: read on first use.
    try:
        from importlib.metadata import version

        return version("gkfda")
    except Exception:  # pragma: no cover - running from a source tree
        return "0.0.0"


def __getattr__(name):
    if name == "__version__":
        value = _installed_version()
    elif name in _LAZY:
        value = getattr(_importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))

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
    "Predictor",
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
    (the ``onnx`` extra: ``pip install ".[onnx]"`` in the directory of a clone of gkfda).
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

