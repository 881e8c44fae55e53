#!/usr/bin/env python3
"""scikit-learn's GaussianProcessClassifier on one data set, for bench/fitstudy.

Usage: fit_sklearn.py TRAIN.csv TEST.csv KERNEL  (KERNEL: rbf or ard)

Standardizes the features by the training set's mean and sample standard
deviation (as gpc-kernel --standardize), fits ConstantKernel * RBF (one
length scale, or one per feature for ard) by scikit-learn's default: L-BFGS
on the Laplace approximation of the logit model's evidence, from
beta = 1 and length scale sqrt(D), and prints one JSON object: the
hyperparameters in gpc's parametrization (beta = the constant, alpha =
sqrt(2) times the length scale, since gpc's RBF is exp(-r^2/alpha^2) and
scikit-learn's exp(-r^2/(2 l^2))), the fit's wall and CPU seconds, its own log
marginal likelihood (Laplace, logit), and its test probabilities of y = +1.
"""
import json
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
    train, test, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    x, y = load(train)
    xt, yt = load(test)
    m, s = x.mean(axis=0), x.std(axis=0, ddof=1)
    s[s == 0] = 1
    x, xt = (x - m) / s, (xt - m) / s
    d = x.shape[1]
    ls = np.full(d, np.sqrt(d)) if kind == "ard" else np.sqrt(d)
    kernel = ConstantKernel(1.0, (1e-5, 1e7)) * RBF(length_scale=ls, length_scale_bounds=(1e-3, 1e7))
    t0, c0 = time.perf_counter(), time.process_time()
    gpc = GaussianProcessClassifier(kernel=kernel, random_state=0).fit(x, y)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    k = gpc.kernel_
    beta = float(k.k1.constant_value)
    alpha = (np.sqrt(2) * np.atleast_1d(k.k2.length_scale)).tolist()
    p = gpc.predict_proba(xt)[:, list(gpc.classes_).index(1)].tolist()
    print(json.dumps({"alpha": alpha, "beta": beta, "seconds": secs, "cpu_seconds": cpu,
                      "log_ml_laplace": float(gpc.log_marginal_likelihood_value_), "test_p": p}))


if __name__ == "__main__":
    main()
