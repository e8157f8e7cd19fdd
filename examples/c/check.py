"""Runs the C example on every fixture of tests/data/models and compares its output with
Python's predictions in expected.json (to 1e-12, relative to the magnitude past 1; float32
models to 1e-6, since their kernel values round in float32 through the SIMD level's exp).

    python3 examples/c/check.py PATH/TO/predict
"""

import csv
import json
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "tests", "data", "models")
TOLERANCE = 1e-12
FLOAT32_TOLERANCE = 1e-6


def dtype_of(path):
    """The predictor's dtype, from the file's metadata."""
    with open(path, "rb") as file:
        (size,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(size))
    return json.loads(header["__metadata__"]["gkfda"])["predictor"]["dtype"]


def main(program):
    with open(os.path.join(MODELS, "expected.json")) as file:
        expected = json.load(file)["models"]
    failures = 0
    with tempfile.TemporaryDirectory() as folder:
        for entry in expected:
            inputs = os.path.join(folder, "x.csv")
            with open(inputs, "w", newline="") as file:
                csv.writer(file).writerows([[repr(v) for v in row] for row in entry["X"]])
            run = subprocess.run([program, os.path.join(MODELS, entry["file"]), inputs],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{entry['file']}: exit {run.returncode}: {run.stderr.strip()}")
                failures += 1
                continue
            lines = run.stdout.splitlines()
            if lines and lines[0].startswith("#"):
                if lines[0].split()[1:] != entry["classes"]:
                    print(f"{entry['file']}: labels {lines[0]!r}, expected {entry['classes']}")
                    failures += 1
                lines = lines[1:]
            key = next(k for k in ("predict_proba", "decision_function", "transform") if k in entry)
            want = entry[key]
            want = [v for row in want for v in (row if isinstance(row, list) else [row])]
            got = [float(v) for line in lines for v in line.split()]
            path = os.path.join(MODELS, entry["file"])
            tolerance = FLOAT32_TOLERANCE if dtype_of(path) == "float32" else TOLERANCE
            bad = len(got) != len(want) or any(
                abs(g - w) > tolerance * max(1.0, abs(w)) for g, w in zip(got, want))
            if bad:
                print(f"{entry['file']}: {key} differs: {got} against {want}")
                failures += 1
        missing = subprocess.run([program, os.path.join(folder, "missing.gkfda")],
                                 capture_output=True, text=True)
        if missing.returncode != 1 or "missing.gkfda" not in missing.stderr:
            print(f"a missing file: exit {missing.returncode}, {missing.stderr!r}")
            failures += 1
    print(f"C example: {len(expected)} models, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
