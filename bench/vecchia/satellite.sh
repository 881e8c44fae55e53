#!/usr/bin/env bash
# Writes the real data set of docs/vecchia.md's tables: Landsat satellite
# image pixels (the UCI Statlog data, in R's mlbench package: Debian's
# r-cran-mlbench, installed here if missing), 6435 points with 36 features
# (4 spectral bands of a 3 x 3 neighbourhood), labelled +1 for the grey
# soils (grey, damp grey, very damp grey: 3492 points) and -1 for the others
# (red soil, cotton crop, vegetation stubble), split at random (R's seed 1)
# into 5000 training and 1435 test points: DIR/satellite-train.csv and
# DIR/satellite-test.csv. With a second argument 6 it writes the six
# classes by name instead (spaces as underscores: cotton_crop,
# damp_grey_soil, grey_soil, red_soil, vegetation_stubble,
# very_damp_grey_soil), the same split: DIR/satellite6-train.csv and
# DIR/satellite6-test.csv (docs/vecchia.md's multi-class section).
#
#   bench/vecchia/satellite.sh DIR [6]
set -euo pipefail
dir=${1:?usage: satellite.sh DIR [6]}
classes=${2:-2}
mkdir -p "$dir"
if ! Rscript -e 'library(mlbench)' >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq r-cran-mlbench >/dev/null
fi
if [ "$classes" = 6 ]; then
  Rscript - "$dir" <<'R'
library(mlbench)
data(Satellite)
dir <- commandArgs(trailingOnly = TRUE)[1]
x <- Satellite[, 1:36]
names(x) <- sprintf("x%d", 1:36)
d <- cbind(x, y = gsub(" ", "_", as.character(Satellite$classes)))
set.seed(1)
train <- sample(nrow(d), 5000)
write.csv(d[train, ], file.path(dir, "satellite6-train.csv"), row.names = FALSE, quote = FALSE)
write.csv(d[-train, ], file.path(dir, "satellite6-test.csv"), row.names = FALSE, quote = FALSE)
R
  exit 0
fi
Rscript - "$dir" <<'R'
library(mlbench)
data(Satellite)
dir <- commandArgs(trailingOnly = TRUE)[1]
x <- Satellite[, 1:36]
names(x) <- sprintf("x%d", 1:36)
grey <- Satellite$classes %in% c("grey soil", "damp grey soil", "very damp grey soil")
d <- cbind(x, y = ifelse(grey, 1, -1))
set.seed(1)
train <- sample(nrow(d), 5000)
write.csv(d[train, ], file.path(dir, "satellite-train.csv"), row.names = FALSE)
write.csv(d[-train, ], file.path(dir, "satellite-test.csv"), row.names = FALSE)
R
