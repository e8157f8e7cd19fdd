"""The empirical study of greedy KFDA that gkfda reproduces (papers 000 and 002).

Apart from the estimator library, and imported only by the ``gkfda experiment`` and
``gkfda report`` commands:

* :mod:`gkfda.study.protocol`: the grids, splits and configuration of the protocol;
* :mod:`gkfda.study.experiment`: runs it on the IDA benchmarks, resumable and parallel;
* :mod:`gkfda.study.report`: the report of a results directory (``report.md``), made of
  :mod:`~gkfda.study.results` (the directory read, statistics per method and data set),
  :mod:`~gkfda.study.tables` (its tables), :mod:`~gkfda.study.comparison` (beside the papers'),
  :mod:`~gkfda.study.figures` (its PNG figures, by :mod:`gkfda.plotting`) and
  :mod:`~gkfda.study.markdown` (the Markdown and CSV of a table);
* :mod:`gkfda.study.published`: the papers' numbers, for comparison;
* :mod:`gkfda.study.bound`: the generalisation bound beside the test error;
* :mod:`gkfda.study.arguments`: the arguments ``gkfda`` and the study's programs share.

Examples
--------
>>> from gkfda import study
>>> study.MPKFDA_METHOD
'optimal/schur/1'
"""


class StudyInputError(ValueError):
    """Input that a study command cannot use: a corrupted file of a results directory, or a
    directory of another protocol. The message starts with the file or option at fault;
    ``gkfda`` prints it as one line ``gkfda: error: <message>``."""


#: The algorithm of Diethe et al. (2009) as a method of the study (criterion, deflation,
#: stages): it selects the width, and the report shows it as MPKFDA.
ORIGINAL = ("optimal", "schur", 1)
#: The method reported as MPKFDA.
MPKFDA_METHOD = "/".join(map(str, ORIGINAL))
