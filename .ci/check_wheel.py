"""Loads every model file of tests/data/models with the installed gkfda and checks its
predictions against expected.json (Python's, when the files were written) to 1e-12.

Run by .ci/run from outside the source tree, in a virtual environment where gkfda was
installed from its wheel and no Rust toolchain is on the path.
"""

import json
import sys
from pathlib import Path

import numpy as np

import gkfda

directory = Path(sys.argv[1])
if Path(gkfda.__file__).resolve().is_relative_to(directory.resolve().parents[2]):
    sys.exit(f"gkfda was imported from the source tree ({gkfda.__file__}), not from the wheel")
expected = json.loads((directory / "expected.json").read_text())
# A float32 model's kernel values round through the SIMD level's exp: bit for bit at the
# level that wrote expected.json, to float32's precision at another.
same_level = gkfda.simd_level() == expected["simd_level"]
checked = 0
for entry in expected["models"]:
    model = gkfda.load(directory / entry["file"])
    tolerance = 1e-12 if same_level or getattr(model, "dtype", "float64") != "float32" else 1e-6
    X = np.asarray(entry["X"], dtype=np.float64)
    for method in ("predict_proba", "decision_function", "transform"):
        if method not in entry:
            continue
        call = getattr(model, "predict" if method == "decision_function" and not hasattr(model, "predict_proba")
                       else method)
        got = np.asarray(call(X), dtype=np.float64).ravel()
        want = np.asarray(entry[method], dtype=np.float64).ravel()
        error = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))
        if not error <= tolerance:
            sys.exit(f"{entry['file']}: {method} differs from Python's by {error:.3g}")
        checked += 1
print(f"gkfda {gkfda.__version__} from {Path(gkfda.__file__).parent}: {len(expected['models'])} model "
      f"files loaded, {checked} predictions equal to Python's (1e-12; float32 at another SIMD level 1e-6)")
