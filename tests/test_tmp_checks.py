from sklearn.utils.estimator_checks import parametrize_with_checks
from gkfda import GreedyKFDA

@parametrize_with_checks([GreedyKFDA(k=5), GreedyKFDA(k=5, deflation="projection", kernel="linear"), GreedyKFDA(k=5, dtype="float32"), GreedyKFDA(k=5, kernel="precomputed"), GreedyKFDA(k=5, criterion="random", random_state=0)])
def test_sklearn(estimator, check):
    check(estimator)
