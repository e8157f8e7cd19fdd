"""The committed model files (tests/data/models, also read by the Rust and C tests) still
load in Python and predict what Python predicted when they were written."""

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import gkfda

MODELS = Path(__file__).resolve().parent / "data" / "models"
EXPECTED = json.loads((MODELS / "expected.json").read_text())


@pytest.mark.parametrize("entry", EXPECTED["models"], ids=lambda entry: entry["file"])
def test_fixture_loads_and_predicts_as_when_written(entry):
    model = gkfda.load(MODELS / entry["file"])
    X = np.asarray(entry["X"])
    float32 = getattr(model, "dtype", "float64") == "float32"
    tolerance = 1e-6 if float32 and gkfda.simd_level() != EXPECTED["simd_level"] else 1e-12
    outputs = {"predict_proba": "predict_proba", "transform": "transform",
               "decision_function": "decision_function" if hasattr(model, "predict_proba") else "predict"}
    checked = 0
    for key, method in outputs.items():
        if key in entry:
            got = np.asarray(getattr(model, method)(X), dtype=np.float64).ravel()
            want = np.asarray(entry[key], dtype=np.float64).ravel()
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
            checked += 1
    assert checked >= 1
    if "predict" in entry:
        assert [list(model.classes_).index(label) for label in model.predict(X)] == entry["predict"]


def test_every_fixture_is_listed():
    listed = {entry["file"] for entry in EXPECTED["models"]}
    assert listed == {path.name for path in MODELS.glob("*.gkfda")}
    for path in MODELS.glob("*.gkfda"):
        size = struct.unpack("<Q", path.read_bytes()[:8])[0]
        assert size < 16 * 2**20
