"""The arguments of the study's commands that ``gkfda`` and the study's own programs share.

``gkfda report`` and ``python -m gkfda.study.report`` take the same arguments, from
:func:`add_report_arguments`. The command line is built on top of the study, so this module
imports nothing heavy (no NumPy, no pandas): ``gkfda --help`` stays as fast as ``import gkfda``.

Examples
--------
>>> import argparse
>>> from gkfda.study.arguments import add_report_arguments
>>> args = add_report_arguments(argparse.ArgumentParser()).parse_args(["results"])
>>> args.results_dir, args.mpkfda
('results', 'optimal/schur/1')
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from . import MPKFDA_METHOD


def output_directory(text: str) -> str:
    """A directory that exists or can be created, and can be written into (argparse ``type``).

    Checked before any work starts, so that a long run does not fail at its first write.
    """
    path = Path(text)
    if path.exists():
        if not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a file, not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{text} is not writable")
        return text
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text} cannot be created: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text} cannot be created: {parent} is not writable")
    return text


def add_report_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of ``gkfda report`` (also those of ``python -m gkfda.study.report``)."""
    parser.add_argument("results_dir", metavar="RESULTS_DIR",
                        help="results directory of `gkfda experiment` to read; the report is written to --out")
    parser.add_argument("--out", type=output_directory, default=None, metavar="DIR",
                        help="output directory (default: RESULTS_DIR/report)")
    parser.add_argument("--canonical-only", action="store_true", help="report only the canonical IDA splits")
    parser.add_argument("--no-figures", action="store_true", help="do not draw the PNG figures")
    parser.add_argument("--also", nargs="+", default=[], metavar="DIR",
                        help="more results directories whose rows join the report, e.g. a kFDA_q run "
                             "(default: none)")
    parser.add_argument("--mpkfda", default=MPKFDA_METHOD, metavar="METHOD",
                        help="method shown as MPKFDA beside Table 1 of Diethe et al. (2009)")
    return parser
