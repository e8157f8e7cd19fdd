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
