"""Sparse benchmark data, generated (nothing is downloaded): a wide TF-IDF-like matrix with a
planted linear rule, and a corpus of documents from a topic model for a TF-IDF pipeline.

    >>> from sparse_data import tfidf_like, topic_corpus
    >>> X, y = tfidf_like(1000, 5000, 20, seed=0)
    >>> X.shape, X.format, X.dtype.name
    ((1000, 5000), 'csr', 'float32')
    >>> docs, labels = topic_corpus(50, seed=0)
    >>> len(docs), sorted(set(labels.tolist()))
    (50, [0, 1, 2, 3])
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _zipf(size: int, exponent: float) -> np.ndarray:
    """The probabilities of a Zipf law over ``size`` items, the first the most frequent."""
    weights = 1.0 / np.arange(1, size + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()


def tfidf_like(m: int, d: int, words_per_row: int, seed: int, informative: int = 2000,
               noise: float = 0.05, dtype=np.float32):
    """``m`` rows of ``d`` features, about ``words_per_row`` non-zeros a row, weighted as
    ``TfidfVectorizer(sublinear_tf=True)`` weighs counts: ``(1 + log tf) · idf``, rows of unit
    norm. Each row's words are drawn (with repetition, hence the counts) from a Zipf(1.1) law
    over the features. Labels: the sign of a planted linear rule over ``informative``
    features drawn among the 20,000 most frequent, centred at its median, ``noise`` of them
    flipped. Built a chunk of rows at a time, so that the peak is about the matrix itself."""
    rng = np.random.default_rng(seed)
    law = _zipf(d, 1.1)
    chunks = []
    for start in range(0, m, 20_000):
        rows = min(20_000, m - start)
        words = rng.choice(d, size=(rows, words_per_row), p=law)
        counts = sp.csr_matrix(
            (np.ones(words.size), words.ravel(), np.arange(0, words.size + 1, words_per_row)),
            shape=(rows, d))
        counts.sum_duplicates()
        chunks.append(counts)
    X = sp.vstack(chunks, format="csr")
    document_frequency = np.bincount(X.indices, minlength=d)
    idf = np.log((1.0 + m) / (1.0 + document_frequency)) + 1.0
    X.data = (1.0 + np.log(X.data)) * idf[X.indices]
    norms = np.sqrt(np.add.reduceat(X.data ** 2, X.indptr[:-1])) if X.nnz else np.ones(m)
    X.data /= np.repeat(norms, np.diff(X.indptr))
    X = X.astype(dtype)
    rule = np.zeros(d)
    rule[rng.choice(min(d, 20_000), size=min(informative, d), replace=False)] = rng.standard_normal(
        min(informative, d))
    scores = X @ rule
    y = (scores > np.median(scores)).astype(np.int64)
    flipped = rng.random(m) < noise
    y[flipped] = 1 - y[flipped]
    return X, y


def topic_corpus(n_documents: int, seed: int, n_classes: int = 4, vocabulary: int = 30_000,
                 topic_words: int = 1500, topic_share: float = 0.06, length: int = 150):
    """``n_documents`` documents (strings of pseudo-words ``w<id>``) and their classes.

    A document mixes a background Zipf(1.05) law over the whole ``vocabulary`` with its class's
    topic, a Zipf law over ``topic_words`` words drawn (overlapping between classes) from the
    vocabulary's 8,000 most frequent after the first 100; the share of topic words is
    Beta-distributed with mean ``topic_share``, the length Poisson(``length``)."""
    rng = np.random.default_rng(seed)
    background = _zipf(vocabulary, 1.05)
    topic_law = _zipf(topic_words, 0.9)
    topics = [rng.choice(np.arange(100, min(8100, vocabulary)), size=topic_words, replace=False)
              for _ in range(n_classes)]
    labels = rng.integers(n_classes, size=n_documents)
    lengths = np.maximum(rng.poisson(length, size=n_documents), 5)
    shares = rng.beta(2.0, 2.0 * (1.0 - topic_share) / topic_share, size=n_documents)
    total = int(lengths.sum())
    background_words = rng.choice(vocabulary, size=total, p=background)
    topic_ranks = rng.choice(topic_words, size=total, p=topic_law)
    from_topic = rng.random(total) < np.repeat(shares, lengths)
    words = np.where(from_topic, np.asarray(topics)[np.repeat(labels, lengths), topic_ranks],
                     background_words)
    names = np.char.add("w", np.arange(vocabulary).astype(str))
    documents = [" ".join(names[chunk]) for chunk in np.split(words, np.cumsum(lengths)[:-1])]
    return documents, labels
