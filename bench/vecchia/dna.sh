#!/usr/bin/env bash
# Writes a real data set of docs/vecchia.md's tables: the StatLog DNA
# splice-junction sequences (in R's mlbench package: Debian's
# r-cran-mlbench, installed here if missing), 3186 sequences of 60
# nucleotides each coded by 3 binary indicators (180 features, 0/1, with
# repeated rows), labelled +1 for a splice junction (exon/intron or
# intron/exon boundary: 1532 sequences) and -1 for neither (1654), split at
# random (R's seed 1) into 3000 training and 186 test sequences:
# DIR/dna-train.csv and DIR/dna-test.csv. (R draws the sample one element
# at a time, so the first 1500 training rows, on which fit.sh fitted
# bench/vecchia/hyper/dna-*.csv, are those of any split with seed 1.)
#
#   bench/vecchia/dna.sh DIR
set -euo pipefail
dir=${1:?usage: dna.sh DIR}
mkdir -p "$dir"
if ! Rscript -e 'library(mlbench)' >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq r-cran-mlbench >/dev/null
fi
Rscript - "$dir" <<'R'
library(mlbench)
data(DNA)
dir <- commandArgs(trailingOnly = TRUE)[1]
x <- as.data.frame(lapply(DNA[, 1:180], function(v) as.integer(as.character(v))))
names(x) <- sprintf("x%d", 1:180)
d <- cbind(x, y = ifelse(DNA$Class == "n", -1, 1))
set.seed(1)
train <- sample(nrow(d), 3000)
write.csv(d[train, ], file.path(dir, "dna-train.csv"), row.names = FALSE)
write.csv(d[-train, ], file.path(dir, "dna-test.csv"), row.names = FALSE)
R
