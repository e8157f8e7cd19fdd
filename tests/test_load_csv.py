"""load_csv: header detection, bad cells reported by file, line and column, memory of wide files."""

import gzip
import tracemalloc

import numpy as np
import pytest

from gkfda.datasets import load_csv, load_file, load_npz, load_svmlight


def write(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(loader, path, **kwargs):
    with pytest.raises(ValueError) as info:
        loader(path, **kwargs)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    return message


@pytest.mark.parametrize("first", ["NA,2.0,yes", "1.0,,yes", ",,yes", "N/A,null,yes"])
def test_a_first_row_with_missing_fields_is_data_not_a_header(tmp_path, first):
    path = write(tmp_path, f"{first}\n3.0,4.0,no\n")
    message = error_of(load_csv, path)
    assert "line 1, column" in message and "missing value" in message
    assert "skip_header=1" in message  # the way out when it was a header after all


def test_a_header_is_a_first_line_without_numbers_or_missing_fields(tmp_path):
    X, y = load_csv(write(tmp_path, "a,b,label\n1.0,2.0,yes\n3.0,4.5,no\n"))
    assert X.tolist() == [[1.0, 2.0], [3.0, 4.5]] and y.tolist() == ["yes", "no"]
    # A header with an empty name is data unless the caller says otherwise.
    path = write(tmp_path, ",a,label\n1.0,2.0,yes\n")
    assert "missing value" in error_of(load_csv, path)
    X, _ = load_csv(path, skip_header=1)
    assert X.tolist() == [[1.0, 2.0]]


def test_a_header_after_comment_lines_is_skipped(tmp_path):
    X, y = load_csv(write(tmp_path, "# made by hand\n\na,b,label\n1.0,2.0,1\n3.0,4.0,-1\n"))
    assert X.tolist() == [[1.0, 2.0], [3.0, 4.0]] and y.tolist() == [1, -1]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1,2,1\n3,1+2j,-1\n", "line 2, column 2: '1+2j' is a complex number"),
        ("1,2,1\n3,nan,-1\n", "line 2, column 2: 'nan' is not a finite number"),
        ("1,2,1\n-inf,3,-1\n", "line 2, column 1: '-inf' is not a finite number"),
        ("1,2,1\n3,oops,-1\n", "line 2, column 2: non-numeric value 'oops'"),
        ("1,2,1\n3,4\n", "line 2 has 2 fields where line 1 has 3"),
        ("a,b,c\n1,2,1\n3,4,5,-1\n", "line 3 has 4 fields where line 2 has 3"),
        ("1,2,1\n3,4,\n", "line 2, column 3: missing label ''"),
        ("1,2,1\n3,4,NA\n", "line 2, column 3: missing label 'NA'"),
        ("", "holds no data rows"),
        ("# nothing\n\n", "holds no data rows"),
        ("a,b,label\n", "only the header on line 1"),
        ("1\n2\n", "single column"),
    ],
)
def test_bad_cells_are_named_by_file_line_and_column(tmp_path, text, expected):
    assert expected in error_of(load_csv, write(tmp_path, text))


def test_label_column_out_of_range_names_the_file(tmp_path):
    assert "label_column=5 out of range for 3 columns" in error_of(load_csv, write(tmp_path, "1,2,1\n"), label_column=5)


def test_errors_in_compressed_and_whitespace_tables_name_the_file(tmp_path):
    packed = tmp_path / "data.csv.gz"
    packed.write_bytes(gzip.compress(b"1,2,1\n3,inf,-1\n"))
    assert "line 2, column 2" in error_of(load_file, packed)
    assert "line 1, column 1: non-numeric value 'x'" in error_of(load_file, write(tmp_path, "x 2 1\n", "data.txt"))


def test_other_loaders_name_the_file(tmp_path):
    assert "not an .npz archive" in error_of(load_npz, write(tmp_path, "1,2\n", "data.npz"))
    assert "not a valid svmlight file" in error_of(load_svmlight, write(tmp_path, "1 x:y\n", "data.svm"))
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe1,2,3\n")
    assert "not UTF-8 text" in error_of(load_csv, binary)


def test_a_wide_file_is_parsed_as_numbers(tmp_path):
    # Read as strings, 2 rows of 2,000 columns took hundreds of MB (20,000 columns: 7.6 GiB).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 2000))
    path = tmp_path / "wide.csv"
    np.savetxt(path, np.column_stack([X, [1, -1]]), delimiter=",", fmt="%.17g")
    tracemalloc.start()
    try:
        X2, y = load_csv(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(X2, X) and y.tolist() == [1, -1]
    assert peak < 5 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def test_quoted_fields_and_labels_in_any_column(tmp_path):
    X, y = load_csv(write(tmp_path, 'label,a,b\n"y,es","1",2\nno,3,"4"\n'), label_column=0)
    assert X.tolist() == [[1.0, 2.0], [3.0, 4.0]] and y.tolist() == ["y,es", "no"]


def _damaged_gzip(text: bytes) -> bytes:
    packed = gzip.compress(text * 200)
    return packed[:20] + b"\xff" * 10 + packed[30:]


@pytest.mark.parametrize(("name", "content"), [
    ("data.csv.gz", _damaged_gzip(b"1,2,0\n3,4,1\n")),  # zlib.error
    ("data.csv.gz", gzip.compress(b"1,2,0\n3,4,1\n" * 200)[:-12]),  # EOFError: cut short
    ("data.csv.gz", b"this is not gzip at all"),  # gzip.BadGzipFile
    ("data.csv.bz2", b"BZh9 not a bz2 stream"),  # bz2's OSError
    ("data.svm.gz", _damaged_gzip(b"0 1:1\n1 2:1\n")),
    ("data.txt.gz", _damaged_gzip(b"0 1:1\n1 2:1\n")),  # through load_file's sniffing
], ids=["zlib-error", "cut-short", "not-gzip", "not-bz2", "svmlight", "sniffed"])
def test_corrupt_compressed_files_name_the_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    assert "corrupt or cut-short data (" in error_of(load_file, path)


def test_a_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_csv(tmp_path / "absent.csv.gz")


def test_a_damaged_npz_names_the_file(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, X=np.eye(3), y=np.array([0, 1, 1]))
    raw = bytearray(path.read_bytes())
    raw[raw.find(b"\x93NUMPY") + 100] ^= 0x01  # a bit of X's data: its CRC no longer matches
    path.write_bytes(bytes(raw))
    assert "corrupt or cut-short data (Bad CRC-32 for file 'X.npy')" in error_of(load_npz, path)


@pytest.mark.parametrize("key", ["X", "y"])
def test_an_npz_of_python_objects_names_the_file_and_the_array(tmp_path, key):
    path = tmp_path / "data.npz"
    arrays = {"X": np.eye(2), "y": np.array([0, 1])}
    arrays[key] = np.array([[1, "a"], [2, "b"]] if key == "X" else [0, "a"], dtype=object)
    np.savez(path, **arrays)
    assert f"{key!r} is an array of Python objects" in error_of(load_npz, path)


def test_an_npz_of_complex_features_is_refused_as_load_csv_refuses_them(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, X=np.eye(2) * (1 + 2j), y=np.array([0, 1]))
    assert error_of(load_npz, path) == f"{path}: 'X' holds complex numbers; the features must be real"
    assert "is a complex number; the features must be real" in error_of(load_csv, write(tmp_path, "1+2j,0\n"))


def test_an_svmlight_index_beyond_int32_names_the_line(tmp_path):
    path = write(tmp_path, "# two samples\n1 1:1\n0 99999999999:1\n", "data.svm")
    assert error_of(load_svmlight, path) == (
        f"{path}: line 3: feature index 99999999999 is beyond the largest the svmlight reader takes (2147483647)")


def test_a_tiny_svmlight_file_cannot_ask_for_gigabytes(tmp_path):
    # 14 bytes that would make a dense X of 400,000,001 float64 (3 GiB): refused before it is made.
    path = write(tmp_path, "1 1:1\n\n0 2:3 400000000:1\n", "data.svm")
    tracemalloc.start()
    try:
        message = error_of(load_svmlight, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message.startswith(f"{path}: line 3: feature index 400000000 makes a dense X of 2 × 400000000 ")
    assert peak < 50 * 2**20
    assert error_of(load_svmlight, write(tmp_path, "1 1:1\n", "small.svm"), n_features=10**9).startswith(
        f"{tmp_path / 'small.svm'}: n_features=1000000000 makes a dense X of 1 × 1000000000 ")
    # A sparse file of a sensible size is still made dense.
    X, _ = load_svmlight(write(tmp_path, "".join(f"{i % 2} {i + 1}:1\n" for i in range(2000)), "diagonal.svm"))
    assert X.shape == (2000, 2000) and X.sum() == 2000


def test_digit_separators_are_not_called_complex_numbers(tmp_path):
    message = error_of(load_csv, write(tmp_path, "1,2,0\n1_000,4,1\n"))
    assert message.endswith("line 2, column 1: '1_000' is not a plain decimal number; digit separators '_' are "
                            "not allowed")


@pytest.mark.parametrize("name", ["data.csv", "data.csv.gz", "data.svm", "data.svm.gz", "data.txt"])
def test_a_utf8_byte_order_mark_is_skipped(tmp_path, name):
    text = "0 1:1 2:2\n1 1:3 2:4\n" if ".svm" in name else ("a,b,label\n1,2,0\n3,4,1\n" if ".csv" in name
                                                             else "1 2 0\n3 4 1\n")
    raw = text.encode("utf-8-sig")
    path = tmp_path / name
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
    X, y = load_file(path)
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(y, [0, 1])
    if name == "data.csv":  # a BOM before data, not a header, too
        path.write_bytes("1,2,0\n3,4,1\n".encode("utf-8-sig"))
        np.testing.assert_array_equal(load_csv(path)[0], [[1, 2], [3, 4]])
