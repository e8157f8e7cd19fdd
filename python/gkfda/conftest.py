"""pytest's collection of the package's doctests (``--pyargs gkfda``): :mod:`gkfda.onnx`
imports the optional ``onnx`` extra, so without it the module is left out rather than
failing the collection (``tests/test_onnx.py`` skips the same way)."""

from importlib.util import find_spec

collect_ignore = [] if all(find_spec(name) for name in ("onnx", "skl2onnx")) else ["onnx.py"]
