"""Which landmarks, and whether the raw features beside the map, rank better (issue 49, item 3).

On Torgo's single-ranking sets, bench_kernel_recipe.py's protocol (80/20 split by
np.random.default_rng(0), tertile labels, test pair accuracy), the recipe's map built by
hand so that only the landmarks differ: features over their training deviations, an RBF
kernel at the median heuristic's gamma (rankfast.learners.kernel_width), 500 landmarks,
the Nyström features K(x, Z) U Λ^(-1/2) (eigenvalues above 1e-10 of the largest) and
rankfast's RankSVM at C = 0.01 with the Hessian preconditioner, as rank_learn trains them.

* uniform: 500 training documents drawn without replacement (NystroemMap's landmarks);
* k-means (Zhang, Tsang & Kwok 2008, "Improved Nyström low-rank approximation"): the
  centres of seeded k-means++ then 3 or 10 Lloyd iterations over all training documents;
* uniform + linear: the uniform map with the standardised features (centred) appended,
  one linear-plus-kernel model.

Landmark CPU seconds are the k-means' alone (time.process_time()).  "error" is the map's
relative kernel error on 1,000 test documents, ‖K − ΦΦᵀ‖_F / ‖K‖_F, what k-means
landmarks are meant to lower.

    python benchmarks/bench_landmarks.py [--sets house_8L,puma8NH]
"""
import argparse
import sys
import time

import numpy as np
import scipy.linalg
from bench_kernel_recipe import SINGLE, one_ranking
from real_data import available

from rankfast import RankSVM, metrics
from rankfast.learners.kernel_width import median_gamma

LANDMARKS = 500
C = 0.01
SETS = ("house_8L", "house_16H", "puma8NH", "cpu_act", "cpu_small", "abalone", "auto_mpg",
        "boston_housing")


def kmeans_plus_plus(X, k, rng):
    """k rows of X by k-means++ seeding (each next row drawn by squared distance)."""
    chosen = [int(rng.integers(len(X)))]
    distance = ((X - X[chosen[0]]) ** 2).sum(axis=1)
    for _ in range(1, k):
        chosen.append(int(rng.choice(len(X), p=distance / distance.sum())))
        distance = np.minimum(distance, ((X - X[chosen[-1]]) ** 2).sum(axis=1))
    return X[chosen]


def lloyd(X, centres, iterations):
    """Lloyd's iterations from centres (a centre left without documents stays)."""
    for _ in range(iterations):
        nearest = squared_distances(X, centres).argmin(axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, nearest, X)
        counts = np.bincount(nearest, minlength=len(centres))
        centres = centres.copy()
        centres[counts > 0] = sums[counts > 0] / counts[counts > 0, None]
    return centres


def squared_distances(A, B):
    return np.maximum((A ** 2).sum(axis=1)[:, None] - 2.0 * A @ B.T + (B ** 2).sum(axis=1), 0.0)


def nystroem(Z, landmarks, gamma):
    """x ↦ K(x, Z_l) U Λ^(-1/2), the map of NystroemMap for these landmarks."""
    W = np.exp(-gamma * squared_distances(landmarks, landmarks))
    eigenvalues, U = scipy.linalg.eigh(0.5 * (W + W.T))
    keep = eigenvalues > 1e-10 * eigenvalues.max()
    projection = U[:, keep] / np.sqrt(eigenvalues[keep])
    return lambda rows: np.exp(-gamma * squared_distances(rows, landmarks)) @ projection


def accuracy(name, method, seed=0):
    """(test pair accuracy, kernel error, CPU seconds of choosing the landmarks) of one method
    on one set."""
    X, y, X_test, y_test = one_ranking(name)
    deviation = X.std(axis=0)
    deviation[deviation == 0] = 1.0
    Z, Z_test = X / deviation, X_test / deviation
    gamma = median_gamma(Z, seed)
    rng = np.random.default_rng(seed)
    m = min(LANDMARKS, len(Z))
    started = time.process_time()
    if method.startswith("k-means"):
        landmarks = lloyd(Z, kmeans_plus_plus(Z, m, rng), int(method.split()[1]))
    else:
        landmarks = Z[np.sort(rng.choice(len(Z), m, replace=False))]
    seconds = time.process_time() - started
    phi = nystroem(Z, landmarks, gamma)
    F, F_test = phi(Z), phi(Z_test)
    sample = Z_test[:1000]
    K = np.exp(-gamma * squared_distances(sample, sample))
    error = np.linalg.norm(K - F_test[:1000] @ F_test[:1000].T) / np.linalg.norm(K)
    if method == "uniform + linear":
        mean = Z.mean(axis=0)
        F, F_test = np.hstack([F, Z - mean]), np.hstack([F_test, Z_test - mean])
    ranker = RankSVM(C=C)
    ranker.solver_preconditioner = "hessian"
    ranker.fit(F, y, np.ones(len(y), dtype=np.int64))
    scores = ranker.predict(F_test)
    test_qid = np.ones(len(y_test), dtype=np.int64)
    return metrics.pairwise_accuracy(scores, y_test, test_qid), error, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    names = parser.parse_args(argv).sets.split(",")
    unknown = [n for n in names if n not in SINGLE]
    if unknown:
        parser.error(f"--sets: unknown {', '.join(unknown)} (sets: {', '.join(SINGLE)})")
    if not available():
        print("bench_landmarks: skipped: ../shared/data is not beside this checkout")
        return 0
    methods = ("uniform", "k-means 3", "k-means 10", "uniform + linear")
    print("| set | " + " | ".join(methods) + " |")
    print("|---|" + "---|" * len(methods))
    for name in names:
        cells = []
        for method in methods:
            value, error, seconds = accuracy(name, method)
            cells.append(f"{value:.4f}, error {error:.3f}"
                         + (f", {seconds:.2f} s" if method.startswith("k") else ""))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
