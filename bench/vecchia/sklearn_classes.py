#!/usr/bin/python3
"""scikit-learn's one-vs-rest GaussianProcessClassifier on a multi-class
CSV (label column y, any names), the peer of docs/vecchia.md's
multi-class table: features standardized by the training rows' means and
standard deviations (as gpc-kernel --standardize), gpc's RBF
exp(-r^2/alpha^2) with latent scale beta, i.e. ConstantKernel(beta) *
RBF(length_scale = alpha / sqrt(2)), fixed, or with --fit started there
and fitted by scikit-learn's optimizer (each one-vs-rest classifier its
own).

Usage: sklearn_classes.py TRAIN.csv TEST.csv ALPHA BETA [--fit]

Prints one CSV line: n, test rows, wall seconds (fit and predict),
accuracy, mean log predictive probability of the test labels.
"""
import sys
import time

import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel


def load(path):
    names = open(path).readline().strip().split(",")
    iy = names.index("y")
    rows = [line.strip().split(",") for line in open(path).readlines()[1:] if line.strip()]
    y = np.array([r[iy] for r in rows])
    x = np.array([[float(v) for j, v in enumerate(r) if j != iy] for r in rows])
    return x, y


def main():
    train, test, alpha, beta = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    fit = "--fit" in sys.argv[5:]
    x, y = load(train)
    xt, yt = load(test)
    mu, sd = x.mean(axis=0), x.std(axis=0, ddof=1)
    sd[sd == 0] = 1
    x, xt = (x - mu) / sd, (xt - mu) / sd
    bounds = (1e-3, 1e5) if fit else "fixed"
    kernel = ConstantKernel(beta, constant_value_bounds=bounds) * RBF(alpha / np.sqrt(2), length_scale_bounds=bounds)
    t0 = time.time()
    gpc = GaussianProcessClassifier(kernel=kernel, optimizer="fmin_l_bfgs_b" if fit else None).fit(x, y)
    p = gpc.predict_proba(xt)
    wall = time.time() - t0
    cls = list(gpc.classes_)
    idx = np.array([cls.index(v) for v in yt])
    right = np.mean(p.argmax(axis=1) == idx)
    logp = np.mean(np.log(p[np.arange(len(yt)), idx]))
    print(f"{len(y)},{len(yt)},{wall:.3f},{right:.6g},{logp:.6g}")


if __name__ == "__main__":
    main()
