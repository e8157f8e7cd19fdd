"""The model file: :func:`save` and :func:`load` (specified in ``docs/model-format.md``).

A file is a safetensors file: tensors, and the metadata as JSON. Loading runs no code the
file names: the metadata is parsed and checked field by field, objects are built only from
gkfda's own types, and every tensor is checked for its dtype, its shape, its finiteness and
its agreement with the others before an estimator is made of them.

The Python state
----------------
``metadata["state"]`` maps attribute names to JSON values, with these encodings (a JSON
object is always one of them, so none is ambiguous):

- ``null``, ``true``/``false``, a string, an integer, a finite number: itself;
- ``{"__float__": "nan" | "inf" | "-inf"}``: a non-finite float;
- ``{"__scalar__": dtype, "value": v}``: a NumPy scalar (``float64``, ``float32``,
  ``int64``, ``int32``, ``bool``);
- a JSON list: a list; ``{"__tuple__": [...]}``: a tuple; ``{"__dict__": {...}}``: a dict
  with string keys;
- ``{"__tensor__": name}``: an array, the tensor ``name``; optional ``"shape"`` (the
  tensor reshaped, in C order), ``"transpose": true`` (then transposed) with ``"order"``
  (``"C"``: a C-contiguous copy of the transpose; ``"F"``: the transpose itself, a
  Fortran-ordered array), and ``"dtype"`` (an integer dtype the ``I64`` tensor is cast to);
- ``{"__array__": {"dtype": "<U5" | "|O", "values": [...]}}``: a 1-D array of strings
  (``|O``: an object array of strings, numbers or nulls);
- ``{"__object__": "Discriminant" | "FeatureMoments" | "_IndexedRows", "fields": {...}}``:
  one of gkfda's records, built from exactly its fields;
- ``{"__estimator__": "GreedyKFDA", "params": {...}, "state": {...}}``: the refitted model
  of a :class:`~gkfda.GreedyKFDACV`.

What the predictor holds (the labels, ``n_features_in_``, the kernel's ``gamma``, the
arrays prediction reads) is taken from it and not repeated in the state; the attributes
an estimator derives from the rest (``GreedyKFDA.coef_``, ``ParsimoniousKFDA.support_``, ...)
are derived again on loading, by the estimator's own code.
"""

from .reading import load
from .writing import save
from ._common import FORMAT, FORMAT_VERSION, HEADER_LIMIT

__all__ = ["save", "load", "FORMAT", "FORMAT_VERSION", "HEADER_LIMIT"]
