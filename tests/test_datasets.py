"""The packaged IDA benchmark sets (gkfda.datasets) and the loaders for the user's own data."""

import hashlib
import importlib.resources
from pathlib import Path

import numpy as np
import pytest

import gkfda
from gkfda import datasets
from gkfda.datasets import (
    Benchmark,
    list_benchmarks,
    load_benchmark,
    load_csv,
    load_file,
    load_npz,
    load_svmlight,
)

# name: (N, d, #(+1), #(-1), m_train, m_test, R, canonical realisation numbers), as the IDA
# benchmark repository describes them (python/gkfda/data/raetsch/README.md).
EXPECTED = {
    "banana": (5300, 2, 2376, 2924, 400, 4900, 100, range(1, 11)),
    "breast_cancer": (277, 9, 81, 196, 200, 77, 100, range(1, 11)),
    "diabetis": (768, 8, 268, 500, 468, 300, 100, ()),
    "flare_solar": (1066, 9, 589, 477, 666, 400, 100, ()),
    "german": (1000, 20, 300, 700, 700, 300, 100, range(1, 11)),
    "heart": (270, 13, 120, 150, 170, 100, 100, range(1, 11)),
    "image": (2310, 18, 1320, 990, 1300, 1010, 20, range(1, 11)),
    "ringnorm": (7400, 20, 3664, 3736, 400, 7000, 100, range(1, 11)),
    "splice": (3175, 60, 1527, 1648, 1000, 2175, 20, ()),
    "thyroid": (215, 5, 65, 150, 140, 75, 100, ()),
    "titanic": (2201, 3, 711, 1490, 150, 2051, 100, range(1, 11)),
    "twonorm": (7400, 20, 3703, 3697, 400, 7000, 100, (1,)),
    "waveform": (5000, 21, 1647, 3353, 400, 4600, 100, range(1, 11)),
}

SHA256 = {
    "banana": "2ef4d81100778301b97e8c5390ffd39d666fb4999d85f67c9fb5e53e7326b9d6",
    "breast_cancer": "383f510450eaf3d1318a142308a35efb60df4f6fa2360c1441c3f39f28df57f0",
    "diabetis": "0de7c2585cd9a87a8c56d324433e0180a6000570cbea71d44bf17000866e3683",
    "flare_solar": "7caf3e3ad24a6f60084ba48d19db73fa533882362330ab62742ef57f902dba2a",
    "german": "694c67500db13197b7b73906981944590314fb5c9d5c0904d6f5a364dd72bd1d",
    "heart": "6b1fc2950b0a31c9ab9f64968ffdd5ec3e638afc98fc70c7939356ae48b0c048",
    "image": "0fc3689a686d9f59943659d77cdf6aef6d6ad67cd251e86039acf746ea5494b8",
    "ringnorm": "9b425d1c98c5d5d22602a6129b45d32a05677dfee4e286649a20e7c1bd088318",
    "splice": "54a05ff95331c9ca6e229f8c01e98729f942a8f40153d6053d1a249a6cfee0a2",
    "thyroid": "bda4ecf349bb81402da6d836026cc7f7963f037acf95be1cee70b40aa720d5c2",
    "titanic": "7f699c3ee58cce2d923ca9e86c1237bbcca952e09020579615ea8b32b23cb892",
    "twonorm": "37d40b71741a27f97a1be2f52b91f0cba6a7d1dc81753b98fad7b13379f4a344",
    "waveform": "8220074e3a7b9f4597f4618940280d050601395866975cbfe23dcf5bb03dbb8f",
}

NAMES = sorted(EXPECTED)


def _packaged(name):
    return importlib.resources.files("gkfda") / "data" / "raetsch" / f"{name}.npz"


@pytest.fixture(scope="module", params=NAMES)
def bench(request):
    return load_benchmark(request.param)


# ------------------------------------------------------------------------------------ packaging


def test_list_benchmarks():
    assert list_benchmarks() == NAMES
    assert len(NAMES) == 13


def test_data_files_are_found_in_the_installed_package():
    package_dir = Path(gkfda.__file__).resolve().parent
    data_dir = importlib.resources.files("gkfda") / "data" / "raetsch"
    shipped = sorted(p.name for p in data_dir.iterdir() if p.name.endswith(".npz"))
    assert shipped == [f"{name}.npz" for name in NAMES]
    for name in NAMES:
        resource = datasets._resource(name)
        assert resource.is_file()
        with importlib.resources.as_file(resource) as path:
            path = Path(path).resolve()
            assert path == (package_dir / "data" / "raetsch" / f"{name}.npz").resolve()
            assert "shared" not in path.parts


@pytest.mark.parametrize("name", NAMES)
def test_packaged_file_checksum(name):
    assert hashlib.sha256(_packaged(name).read_bytes()).hexdigest() == SHA256[name]


def test_provenance_readme_is_shipped():
    text = (importlib.resources.files("gkfda") / "data" / "raetsch" / "README.md").read_text("utf-8")
    assert "Soft margins for AdaBoost" in text and "Licence" in text


# ------------------------------------------------------------------------------------ benchmarks


def test_shapes_and_dtypes(bench):
    n, d, n_pos, n_neg, m_train, m_test, n_real, _ = EXPECTED[bench.name]
    assert isinstance(bench, Benchmark)
    assert bench.X.shape == (n, d) and bench.X.dtype == np.float64
    assert bench.y.shape == (n,) and bench.y.dtype in (np.int8, np.int64)
    assert bench.train.shape == (n_real, m_train) and bench.train.dtype == np.int64
    assert bench.test.shape == (n_real, m_test) and bench.test.dtype == np.int64
    assert bench.canonical.shape == (n_real,) and bench.canonical.dtype == bool
    assert (bench.n_samples, bench.n_features, bench.n_train, bench.n_test) == (n, d, m_train, m_test)
    assert bench.n_realisations == n_real
    assert np.all(np.isfinite(bench.X))


def test_labels_are_plus_minus_one(bench):
    _, _, n_pos, n_neg, *_ = EXPECTED[bench.name]
    assert set(np.unique(bench.y).tolist()) == {-1, 1}
    assert (np.sum(bench.y == 1), np.sum(bench.y == -1)) == (n_pos, n_neg)


def test_every_realisation_is_a_partition(bench):
    everything = np.arange(bench.n_samples)
    for r in range(bench.n_realisations):
        assert np.array_equal(np.sort(np.concatenate([bench.train[r], bench.test[r]])), everything)


def test_canonical_flags_match_the_data_notes(bench):
    canonical_numbers = EXPECTED[bench.name][-1]
    expected = np.zeros(bench.n_realisations, dtype=bool)
    expected[[k - 1 for k in canonical_numbers]] = True
    assert np.array_equal(bench.canonical, expected)
    assert bench.n_canonical == len(canonical_numbers)


@pytest.mark.parametrize(
    "name, n_canonical, n_real",
    [("banana", 10, 100), ("twonorm", 1, 100), ("diabetis", 0, 100), ("image", 10, 20), ("splice", 0, 20)],
)
def test_canonical_counts_spot_check(name, n_canonical, n_real):
    bench = load_benchmark(name)
    assert (bench.n_canonical, bench.n_realisations) == (n_canonical, n_real)


def test_canonical_rows_equal_the_stored_splits(bench):
    with importlib.resources.as_file(_packaged(bench.name)) as path, np.load(path) as raw:
        realisations = raw["realisations"]
        assert np.array_equal(realisations, np.flatnonzero(bench.canonical) + 1)
        for row, number in enumerate(realisations):
            assert np.array_equal(bench.train[number - 1], raw["train"][row])
            assert np.array_equal(bench.test[number - 1], raw["test"][row])
        assert np.array_equal(bench.X, raw["X"])
        assert np.array_equal(bench.y, raw["y"])


def test_generated_rows_are_deterministic_and_distinct(bench):
    again = load_benchmark(bench.name)
    assert np.array_equal(bench.train, again.train)
    assert np.array_equal(bench.test, again.test)
    generated = np.flatnonzero(~bench.canonical)
    assert len(generated) == bench.n_realisations - bench.n_canonical
    # every generated training set differs from every other realisation's (generated or canonical)
    train_sets = [frozenset(row.tolist()) for row in bench.train]
    for r in generated:
        assert sum(train_sets[r] == other for other in train_sets) == 1
    # The canonical ones differ too, except that the stored image realisation 10 is identical to
    # realisation 1 (same indices in the same order; a quirk of the public copy of the files).
    canonical = [train_sets[r] for r in np.flatnonzero(bench.canonical)]
    duplicates = bench.n_canonical - len(set(canonical))
    assert duplicates == (1 if bench.name == "image" else 0)
    if bench.name == "image":
        assert np.array_equal(bench.train[0], bench.train[9])


def test_generated_rows_do_not_depend_on_global_random_state():
    np.random.seed(0)
    first = load_benchmark("thyroid").train
    np.random.seed(12345)
    np.random.random(1000)
    second = load_benchmark("thyroid").train
    assert np.array_equal(first, second)


def test_generated_rows_are_pinned():
    # Golden values: the generated realisations must be the same on every machine and version.
    assert load_benchmark("banana").train[10, :5].tolist() == [1696, 203, 2674, 3911, 2991]
    assert load_benchmark("diabetis").train[0, :5].tolist() == [527, 275, 502, 610, 402]
    assert load_benchmark("splice").test[19, :5].tolist() == [3041, 926, 2458, 3029, 1509]


def test_generated_rows_differ_between_data_sets_of_equal_size():
    # ringnorm and twonorm both have N = 7400, m_train = 400: the seed includes the name.
    assert not np.array_equal(load_benchmark("ringnorm").train[50], load_benchmark("twonorm").train[50])


def test_split_and_splits(bench):
    X_train, y_train, X_test, y_test = bench.split(0)
    assert np.array_equal(X_train, bench.X[bench.train[0]])
    assert np.array_equal(y_test, bench.y[bench.test[0]])
    assert X_train.shape == (bench.n_train, bench.n_features)
    assert X_test.shape == (bench.n_test, bench.n_features)
    X_train[0, 0] = 1e9  # copies, writable
    assert bench.X.max() < 1e9
    assert np.array_equal(bench.split(-1)[0], bench.X[bench.train[-1]])
    with pytest.raises(IndexError):
        bench.split(bench.n_realisations)
    rows = [r for r, *_ in bench.splits(canonical_only=True)]
    assert rows == np.flatnonzero(bench.canonical).tolist()


def test_benchmark_is_frozen_and_read_only():
    bench = load_benchmark("heart")
    with pytest.raises(AttributeError):
        bench.X = None
    for array in (bench.X, bench.y, bench.train, bench.test, bench.canonical):
        with pytest.raises(ValueError):
            array[0] = 0
    assert "heart" in repr(bench) and "n_canonical=10" in repr(bench)


def test_name_normalisation():
    assert load_benchmark("Breast-Cancer").name == "breast_cancer"


@pytest.mark.parametrize("bad", ["nope", "", "banana.npz"])
def test_unknown_name(bad):
    with pytest.raises(ValueError) as info:
        load_benchmark(bad)
    message = str(info.value)
    assert repr(bad) in message
    assert all(name in message for name in NAMES)


def test_non_string_name():
    with pytest.raises(TypeError):
        load_benchmark(3)


# ------------------------------------------------------------------------------------ loaders


@pytest.fixture
def toy():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 4))
    X[X < -1] = 0.0  # some zeros, as in sparse files
    y = np.where(rng.random(30) < 0.5, -1, 1)
    return X, y


def test_load_svmlight_round_trip(tmp_path, toy):
    from sklearn.datasets import dump_svmlight_file

    X, y = toy
    path = tmp_path / "toy.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    X2, y2 = load_svmlight(path)
    assert isinstance(X2, np.ndarray) and X2.dtype == np.float64
    np.testing.assert_allclose(X2, X, rtol=1e-15)
    assert np.array_equal(y2, y) and y2.dtype == np.int64
    for name in ("toy.libsvm", "toy.svmlight", "toy.txt"):
        (tmp_path / name).write_bytes(path.read_bytes())
        X3, y3 = load_file(tmp_path / name)
        np.testing.assert_allclose(X3, X, rtol=1e-15)
        assert np.array_equal(y3, y)


def test_load_svmlight_keeps_non_integer_labels(tmp_path):
    path = tmp_path / "toy.svm"
    path.write_text("0.5 1:1\n2.5 2:1\n")
    _, y = load_svmlight(path)
    assert y.dtype == np.float64 and y.tolist() == [0.5, 2.5]


def test_load_svmlight_gzip(tmp_path, toy):
    import gzip

    from sklearn.datasets import dump_svmlight_file

    X, y = toy
    plain = tmp_path / "toy.svm"
    dump_svmlight_file(X, y, str(plain), zero_based=False)
    packed = tmp_path / "toy.svm.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    X2, y2 = load_file(packed)
    np.testing.assert_allclose(X2, X, rtol=1e-15)
    assert np.array_equal(y2, y)


def test_load_csv_round_trip(tmp_path, toy):
    X, y = toy
    path = tmp_path / "toy.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt="%.17g")
    for loader in (load_csv, load_file):
        X2, y2 = loader(path)
        assert np.array_equal(X2, X) and X2.dtype == np.float64
        assert np.array_equal(y2, y) and y2.dtype == np.int64


def test_load_csv_header_label_column_and_text_labels(tmp_path, toy):
    X, y = toy
    path = tmp_path / "toy.csv"
    labels = np.where(y > 0, "yes", "no")
    rows = [",".join(["class", "a", "b", "c", "d"])]
    rows += [",".join([lab] + [repr(float(v)) for v in x]) for lab, x in zip(labels, X)]
    path.write_text("\n".join(rows) + "\n")
    X2, y2 = load_csv(path, label_column=0)  # header detected automatically
    assert np.array_equal(X2, X)
    assert y2.tolist() == labels.tolist()
    X3, y3 = load_file(path, label_column=0, skip_header=1)
    assert np.array_equal(X3, X) and np.array_equal(y3, y2)


def test_load_whitespace_table_and_tsv(tmp_path, toy):
    X, y = toy
    table = np.column_stack([X, y])
    np.savetxt(tmp_path / "toy.txt", table, fmt="%.17g")  # whitespace separated
    np.savetxt(tmp_path / "toy.tsv", table, fmt="%.17g", delimiter="\t")
    np.savetxt(tmp_path / "toy.csv.gz", table, fmt="%.17g", delimiter=",")
    for name in ("toy.txt", "toy.tsv", "toy.csv.gz"):
        X2, y2 = load_file(tmp_path / name)
        assert np.array_equal(X2, X) and np.array_equal(y2, y), name


def test_load_csv_errors(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1,2,1\n3,oops,-1\n")
    with pytest.raises(ValueError, match="non-numeric"):
        load_csv(path)
    single = tmp_path / "single.csv"
    single.write_text("1\n2\n")
    with pytest.raises(ValueError, match="single column"):
        load_csv(single)
    with pytest.raises(ValueError, match="label_column"):
        load_csv(tmp_path / "bad.csv", label_column=5)


def test_load_npz_round_trip(tmp_path, toy):
    X, y = toy
    path = tmp_path / "toy.npz"
    np.savez(path, X=X, y=y, extra=np.arange(3))
    for loader in (load_npz, load_file):
        X2, y2 = loader(path)
        assert np.array_equal(X2, X) and X2.dtype == np.float64
        assert np.array_equal(y2, y) and y2.dtype == y.dtype


def test_load_npz_keeps_labels_as_given(tmp_path):
    path = tmp_path / "toy.npz"
    np.savez(path, X=np.zeros((2, 3), dtype=np.float32), y=np.array(["cat", "dog"]))
    X, y = load_npz(path)
    assert X.dtype == np.float64 and y.tolist() == ["cat", "dog"]


def test_load_npz_missing_y(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, X=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="'y'") as info:
        load_npz(path)
    assert "lacks" in str(info.value) and "found: X" in str(info.value)


@pytest.mark.parametrize(
    "arrays, match",
    [
        ({"X": np.zeros(3), "y": np.zeros(3)}, "2-D"),
        ({"X": np.zeros((3, 2)), "y": np.zeros(4)}, "3 entries"),
        ({"data": np.zeros((3, 2))}, "X, y"),
    ],
)
def test_load_npz_bad_contents(tmp_path, arrays, match):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=match):
        load_npz(path)


def test_load_npz_rejects_single_array_file(tmp_path):
    path = tmp_path / "plain.npy"
    np.save(path, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="not an .npz"):
        load_npz(path)


@pytest.mark.parametrize("name", ["data.xlsx", "data", "data.npy"])
def test_load_file_unknown_extension(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="cannot tell the format"):
        load_file(path)


def test_load_file_rejects_gzipped_npz(tmp_path):
    path = tmp_path / "data.npz.gz"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="decompressed"):
        load_file(path)
