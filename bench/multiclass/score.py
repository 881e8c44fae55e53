#!/usr/bin/python3
"""Score gpc-predict's multi-class CSV output (p_<class>, se_<class>,
label, y): prints accuracy, the mean log predictive probability of the
true class, the largest standard error of any probability, and the number
of test points, as one CSV row."""
import csv
import math
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
right, lp, se = 0, 0.0, 0.0
for r in rows:
    right += r["label"] == r["y"]
    lp += math.log(max(float(r["p_" + r["y"]]), 1e-300))
    se = max(se, max(float(v) for k, v in r.items() if k.startswith("se_")))
print("%.4f,%.4f,%.2g,%d" % (right / len(rows), lp / len(rows), se, len(rows)))
