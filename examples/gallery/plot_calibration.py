"""
Calibrated probabilities beside an SVM's
========================================

:meth:`~gkfda.GreedyKFDA.predict_proba` maps the discriminant to probabilities with a link
fitted on the training set. A reliability diagram bins the held-out points by their predicted
probability of the positive class and plots the fraction that is positive in each bin: a
calibrated model lies on the diagonal. Beside it, scikit-learn's ``SVC(probability=True)``
(Platt scaling by internal cross-validation), on the IDA ``banana`` benchmark.
"""

import warnings

import matplotlib.pyplot as plt
from sklearn.metrics import brier_score_loss
from sklearn.svm import SVC

from gkfda import GreedyKFDA
from gkfda.datasets import load_benchmark
from gkfda.plotting import plot_calibration

X_train, y_train, X_test, y_test = load_benchmark("banana").split(0)
positive = y_test == max(y_test)

kfda = GreedyKFDA(k=40, gamma=1.0).fit(X_train, y_train)
with warnings.catch_warnings():
    # scikit-learn 1.9 deprecates `probability=True` in favour of CalibratedClassifierCV.
    warnings.simplefilter("ignore", FutureWarning)
    svc = SVC(gamma=1.0, probability=True, random_state=0).fit(X_train, y_train)

fig, ax = plt.subplots(figsize=(5.5, 5), layout="constrained")
for name, model in (("GreedyKFDA, k = 40", kfda), (f"SVC, {svc.n_support_.sum()} support vectors", svc)):
    probability = model.predict_proba(X_test)[:, 1]
    plot_calibration(ax, y_test, probability, label=f"{name} (Brier {brier_score_loss(positive, probability):.3f})")
ax.set_title("banana: reliability on 4,900 held-out points")
ax.legend(loc="upper left", fontsize=9)
plt.show()
