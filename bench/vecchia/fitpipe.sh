#!/usr/bin/env bash
# Times a fit and the pipeline after it on the Vecchia path, as a user runs
# them with no hyperparameter typed by hand (docs/vecchia-fit.md): gpc-fit
# --vecchia FITM --standardize on TRAIN, then gpc-kernel --hyper ...
# --vecchia auto --standardize with TEST | gpc-train | gpc-predict, the
# tools from PATH. Prints one CSV line: wall seconds of the fit and of the
# pipeline, their sum, the fit's and gpc-train's peak resident MB, the
# fitted hyperparameters, and gpc-predict's summary (accuracy, mean log
# predictive probability); the tools' stderr goes to OUT.fit.err and
# OUT.pipe.err, the fit's table to OUT.hyper.arrows.
#
#   bench/vecchia/fitpipe.sh TRAIN TEST FITM OUT
set -euo pipefail
train=${1:?usage: fitpipe.sh TRAIN TEST FITM OUT}
test=${2:?usage: fitpipe.sh TRAIN TEST FITM OUT}
m=${3:?usage: fitpipe.sh TRAIN TEST FITM OUT}
out=${4:?usage: fitpipe.sh TRAIN TEST FITM OUT}
peak() { awk '/Maximum resident/ { printf "%.0f", $NF / 1024 }' "$1"; }
t0=$(date +%s.%N)
/usr/bin/time -v -o "$out.fit.time" gpc-fit --vecchia "$m" --standardize --train "$train" --progress > "$out.hyper.arrows" 2> "$out.fit.err"
t1=$(date +%s.%N)
gpc-kernel --hyper "$out.hyper.arrows" --vecchia auto --standardize --train "$train" --test "$test" 2> "$out.pipe.err" |
  /usr/bin/time -v -o "$out.train.time" gpc-train 2>> "$out.pipe.err" |
  gpc-predict --format table > "$out.post.txt" 2>> "$out.pipe.err"
t2=$(date +%s.%N)
hyper=$(sed -n 's/.*log evidence .* at \(.*\); gradient norm.*/\1/p' "$out.fit.err")
summary=$(tail -1 "$out.post.txt")
awk -v a="$t0" -v b="$t1" -v c="$t2" -v pf="$(peak "$out.fit.time")" -v pt="$(peak "$out.train.time")" -v h="$hyper" -v s="$summary" \
  'BEGIN { printf "%.1f,%.1f,%.1f,%s,%s,%s,\"%s\"\n", b - a, c - b, c - a, pf, pt, h, s }'
