"""The empirical study of greedy KFDA that gkfda reproduces (papers 000 and 002).

Apart from the estimator library, and imported only by the ``gkfda experiment`` and
``gkfda report`` commands:

* :mod:`gkfda.study.protocol`: the grids, splits and configuration of the protocol;
* :mod:`gkfda.study.experiment`: runs it on the IDA benchmarks, resumable and parallel;
* :mod:`gkfda.study.report`: tables and figures of a results directory;
* :mod:`gkfda.study.published`: the papers' numbers, for comparison.

Examples
--------
>>> from gkfda.study import protocol
>>> protocol.MPKFDA_METHOD
'optimal/schur/1'
"""


class StudyInputError(ValueError):
    """Input that a study command cannot use: a corrupted file of a results directory, or a
    directory of another protocol. The message starts with the file or option at fault;
    ``gkfda`` prints it as one line ``gkfda: error: <message>``."""
