#!/usr/bin/python3
"""scikit-learn's GaussianProcessClassifier (Laplace approximation, its
kernel's hyperparameters fitted by maximising the approximate marginal
likelihood) on a train/test split, one-vs-rest and one-vs-one, for
bench/multiclass/run.sh.

    sklearn_gpc.py TRAIN.csv TEST.csv LABEL [ID]

Features are standardized by the training mean and sd (as gpc-kernel
--standardize). The kernel is ConstantKernel * RBF, the model gpc's RBF
kernel with beta and alpha = sqrt(2) * length_scale. Prints one CSV row per
mode: mode, accuracy, mean log predictive probability of the true class,
CPU seconds. scikit-learn gives one-vs-one no class probabilities: they
are coupled here from its pairwise classifiers' probabilities r_ij =
P(i | i or j) by Price et al.'s rule, p_i proportional to
1 / (sum_{j != i} 1 / r_ij - (C - 2)) (Price, Knerr, Personnaz and Dreyfus
1995, "Pairwise neural network classifiers with probabilistic outputs",
NIPS 7).
"""
import csv
import sys
import time
import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel


def read(path, label, ident):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    feats = [k for k in rows[0] if k not in (label, ident)]
    x = np.array([[float(r[k]) for k in feats] for r in rows])
    y = np.array([r[label] for r in rows])
    return x, y


def price(gpc, x):
    """Class probabilities coupled from the one-vs-one classifiers."""
    ovo = gpc.base_estimator_
    c = len(gpc.classes_)
    inv = np.zeros((len(x), c))
    k = 0
    for i in range(c):
        for j in range(i + 1, c):
            r = np.clip(ovo.estimators_[k].predict_proba(x)[:, 0], 1e-12, 1 - 1e-12)  # P(i | i or j)
            inv[:, i] += 1 / r
            inv[:, j] += 1 / (1 - r)
            k += 1
    p = 1 / (inv - (c - 2))
    return p / p.sum(1, keepdims=True)


def main():
    train, test, label = sys.argv[1], sys.argv[2], sys.argv[3]
    ident = sys.argv[4] if len(sys.argv) > 4 else None
    xtr, ytr = read(train, label, ident)
    xte, yte = read(test, label, ident)
    mu, sd = xtr.mean(0), xtr.std(0, ddof=1)
    sd[sd == 0] = 1
    xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    print("mode,accuracy,mean_log_p,cpu_s")
    for mode in ("one_vs_rest", "one_vs_one"):
        kernel = ConstantKernel(1.0, (1e-3, 1e4)) * RBF(1.0, (1e-2, 1e3))
        gpc = GaussianProcessClassifier(kernel=kernel, multi_class=mode, random_state=0, n_restarts_optimizer=2)
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gpc.fit(xtr, ytr)
            pred = gpc.predict(xte)
            if mode == "one_vs_rest":
                p = gpc.predict_proba(xte)
            else:
                p = price(gpc, xte)
            cls = list(gpc.classes_)
            idx = np.array([cls.index(v) for v in yte])
            lp = "%.4f" % np.mean(np.log(np.maximum(p[np.arange(len(yte)), idx], 1e-300)))
        cpu = time.process_time() - t0
        print("%s,%.4f,%s,%.2f" % (mode, np.mean(pred == yte), lp, cpu))


if __name__ == "__main__":
    main()
