#!/usr/bin/python3
"""scikit-learn's GaussianProcessClassifier with a fixed kernel, for
bench/vecchia/run.sh: the large-N issue's peer (Laplace approximation,
logit link), on gpc's RBF exp(-r^2/alpha^2) with latent scale beta, i.e.
ConstantKernel(beta) * RBF(length_scale = alpha / sqrt(2)), not fitted.

Usage: sklearn_fixed.py TRAIN.csv TEST.csv ALPHA BETA

Prints one CSV line: n, test rows, wall seconds (fit and predict),
accuracy, mean log predictive probability of the test labels, and the
Laplace log marginal likelihood (logit).
"""
import sys
import time

import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel


def load(path):
    names = open(path).readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    y = data[:, names.index("y")]
    x = np.delete(data, names.index("y"), axis=1)
    return x, y


def main():
    train, test, alpha, beta = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    x, y = load(train)
    xt, yt = load(test)
    kernel = ConstantKernel(beta, constant_value_bounds="fixed") * RBF(alpha / np.sqrt(2), length_scale_bounds="fixed")
    t0 = time.time()
    gpc = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(x, y)
    p = gpc.predict_proba(xt)[:, list(gpc.classes_).index(1)]
    wall = time.time() - t0
    right = np.mean((p >= 0.5) == (yt > 0))
    logp = np.mean(np.log(np.where(yt > 0, p, 1 - p)))
    print(f"{len(y)},{len(yt)},{wall:.3f},{right:.6g},{logp:.6g},{gpc.log_marginal_likelihood_value_:.8g}")


main()
