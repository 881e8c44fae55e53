#!/usr/bin/env bash
# Writes a real data set of docs/vecchia.md's tables: the UCI spambase
# e-mails (in R's kernlab package: Debian's r-cran-kernlab, installed here
# if missing), 4601 e-mails with 57 features (word and character
# frequencies, run lengths of capitals: heavy-tailed, many zeros, 394 rows
# repeating an earlier one), labelled +1 for spam (1813) and -1 for the
# others (2788), split at random (R's seed 1) into 3601 training and 1000
# test e-mails: DIR/spam-train.csv and DIR/spam-test.csv.
#
#   bench/vecchia/spam.sh DIR
set -euo pipefail
dir=${1:?usage: spam.sh DIR}
mkdir -p "$dir"
if ! Rscript -e 'library(kernlab)' >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq r-cran-kernlab >/dev/null
fi
Rscript - "$dir" <<'R'
library(kernlab)
data(spam)
dir <- commandArgs(trailingOnly = TRUE)[1]
x <- spam[, 1:57]
names(x) <- sprintf("x%d", 1:57)
d <- cbind(x, y = ifelse(spam$type == "spam", 1, -1))
set.seed(1)
train <- sample(nrow(d), 3601)
write.csv(d[train, ], file.path(dir, "spam-train.csv"), row.names = FALSE)
write.csv(d[-train, ], file.path(dir, "spam-test.csv"), row.names = FALSE)
R
