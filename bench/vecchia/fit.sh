#!/usr/bin/env bash
# Fits the hyperparameters of docs/vecchia.md's real data tables, as
# bench/vecchia/hyper/NAME-KERNEL.csv holds them: gpc-fit (on PATH) on the
# first 1500 training rows of DIR/NAME-train.csv (satellite.sh, dna.sh,
# spam.sh write them; their rows are in random order), --standardize, for
# the rbf kernel or ard (one length scale per feature, gpc-fit's default
# prior). Satellite's rbf fit took 3 minutes, DNA's ard 39 (2 cores, other
# jobs running).
#
#   bench/vecchia/fit.sh DIR NAME KERNEL > bench/vecchia/hyper/NAME-KERNEL.csv
set -euo pipefail
dir=${1:?usage: fit.sh DIR NAME KERNEL}
name=${2:?usage: fit.sh DIR NAME KERNEL}
kernel=${3:?usage: fit.sh DIR NAME KERNEL}
sub=$(mktemp)
trap 'rm -f "$sub"' EXIT
head -1501 "$dir/$name-train.csv" > "$sub"
gpc-fit --standardize --kernel "$kernel" --train "$sub" --format csv
