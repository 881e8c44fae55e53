#!/usr/bin/python3
"""Write a fixed, stratified half/half train/test split of one of the data
sets Debian's python3-sklearn ships (offline), as CSV with the class name in
a column `species`/`class`/`digit`, for gpc and the scikit-learn baseline.

    split.py iris|wine|digits OUTDIR [N_TRAIN]

The split: within each class, the rows in file order are shuffled with
numpy's default_rng(20) and alternately sent to train and test (digits: the
first N_TRAIN and N_TRAIN test rows of a stratified shuffle, N_TRAIN = 500).
"""
import csv
import gzip
import os
import sys

import numpy as np

DATA = "/usr/lib/python3/dist-packages/sklearn/datasets/data"


def load(name):
    if name == "digits":
        with gzip.open(os.path.join(DATA, "digits.csv.gz"), "rt") as f:
            a = np.loadtxt(f, delimiter=",")
        x, y = a[:, :-1], a[:, -1].astype(int)
        feats = ["px%d" % i for i in range(x.shape[1])]
        return feats, x, [str(v) for v in y], "digit"
    fn = {"iris": "iris.csv", "wine": "wine_data.csv"}[name]
    with open(os.path.join(DATA, fn)) as f:
        rows = list(csv.reader(f))
    names = rows[0][2:]
    a = np.array(rows[1:], dtype=float)
    x, y = a[:, :-1], a[:, -1].astype(int)
    if name == "iris":
        feats = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
        col = "species"
    else:
        feats = ["alcohol", "malic_acid", "ash", "alcalinity", "magnesium", "phenols", "flavanoids",
                 "nonflavanoid_phenols", "proanthocyanins", "color_intensity", "hue", "od280_od315", "proline"]
        col = "class"
    return feats, x, [names[v] for v in y], col


def main():
    name, out = sys.argv[1], sys.argv[2]
    feats, x, y, col = load(name)
    rng = np.random.default_rng(20)
    train, test = [], []
    if name == "digits":
        ntr = int(sys.argv[3]) if len(sys.argv) > 3 else 500
        idx = rng.permutation(len(y))
        # Stratified: take classes in turn from the shuffled order.
        by = {}
        for i in idx:
            by.setdefault(y[i], []).append(i)
        order = []
        k = 0
        while any(by.values()):
            for c in sorted(by):
                if by[c]:
                    order.append(by[c].pop(0))
        train, test = sorted(order[:ntr]), sorted(order[ntr:2 * ntr])
    else:
        for c in sorted(set(y)):
            rows = [i for i in range(len(y)) if y[i] == c]
            rows = [rows[j] for j in rng.permutation(len(rows))]
            train += rows[0::2]
            test += rows[1::2]
        train, test = sorted(train), sorted(test)
    os.makedirs(out, exist_ok=True)
    for part, rows in (("train", train), ("test", test)):
        with open(os.path.join(out, part + ".csv"), "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["id"] + feats + [col])
            for i in rows:
                w.writerow([str(i)] + ["%.10g" % v for v in x[i]] + [y[i]])


if __name__ == "__main__":
    main()
