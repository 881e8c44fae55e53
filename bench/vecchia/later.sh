#!/usr/bin/env bash
# Train once, predict later on the large-N issue's problem (two 2-D
# Gaussian classes, RBF alpha 1 beta 10, --vecchia M): gpc-train on the
# training rows alone, keeping particle paths (--keep K; auto: the
# default), beside the same run keeping none; the cloud's size; then the
# test rows predicted from the saved cloud (gpc-kernel --test |
# gpc-predict --cloud) against the same rows predicted in the training
# pass (gpc-kernel --test | gpc-train | gpc-predict, the same seed).
# Prints one line per step: wall and CPU seconds (user + system) and
# peak resident MB by /usr/bin/time, and the posteriors' mean and largest
# absolute difference.
#
#   bench/vecchia/later.sh 100000 10000 30 auto
#
# The data are made by bench/vecchia/twoclass (seeds 1 and 2) in DIR
# (GPC_BENCH_DIR, default a temporary directory), the tools built into it;
# with GPC_LATER_CLASSES=3 by bench/vecchia/threeclass (the same kernel),
# the posteriors compared over every class's probability.
set -euo pipefail
n=$1 t=$2 m=$3 keep=${4:-auto}
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${GPC_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
cd "$root"
gen=twoclass
[ "${GPC_LATER_CLASSES:-2}" = 3 ] && gen=threeclass
[ -x "$dir/bin/gpc-kernel" ] && [ -x "$dir/bin/$gen" ] || go build -o "$dir/bin/" ./cmd/... ./bench/vecchia/$gen
train=$dir/$gen-train-$n.csv test=$dir/$gen-test-$t.csv
[ -s "$train" ] || "$dir/bin/$gen" -n "$n" -seed 1 > "$train"
[ -s "$test" ] || "$dir/bin/$gen" -n "$t" -seed 2 > "$test"
b=$dir/bin
kernel=("$b/gpc-kernel" --alpha 1 --beta 10 --vecchia "$m")
timed() { # label, then the command: its time line
  local label=$1; shift
  /usr/bin/time -f "$label wall_s=%e cpu_s=%U+%S peak_MB=%M" "$@" 2>&1 >/dev/null | grep "^$label " || true
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"${kernel[@]}" --train "$train" > "$dir/model.arrows"
"${kernel[@]}" --train "$train" --test "$test" > "$dir/model-test.arrows"
timed "gpc-train --keep 0" "$b/gpc-train" --keep 0 "$dir/model.arrows"
/usr/bin/time -f "gpc-train --keep $keep wall_s=%e cpu_s=%U+%S peak_MB=%M" "$b/gpc-train" --keep "$keep" "$dir/model.arrows" > "$dir/cloud.arrows"
echo "cloud bytes: $(stat -c %s "$dir/cloud.arrows")"
"$b/gpc-train" "$dir/model-test.arrows" | "$b/gpc-predict" --format csv > "$dir/pass.csv"
start=$(date +%s.%N)
/usr/bin/time -f "gpc-kernel --test wall_s=%e cpu_s=%U+%S peak_MB=%M" "${kernel[@]}" --train "$train" --test "$test" |
  /usr/bin/time -f "gpc-predict --cloud wall_s=%e cpu_s=%U+%S peak_MB=%M" "$b/gpc-predict" --cloud "$dir/cloud.arrows" --format csv > "$dir/later.csv"
echo "kernel | predict --cloud: wall_s=$(echo "$(date +%s.%N) - $start" | bc)"
# The probabilities' columns (p, or p_CLASS), each against its twin.
paste -d, "$dir/pass.csv" "$dir/later.csv" | awk -F, 'NR == 1 { h = NF / 2; for (i = 1; i <= h; i++) head[i] = $i; next }
  { for (i = 1; i <= h; i++) if (head[i] ~ /^p(_|$)/) { d = $i - $(i + h); if (d < 0) d = -d; s += d; if (d > mx) mx = d; k++ } }
  END { printf "probabilities=%d mean_abs_diff=%.3g max_abs_diff=%.3g\n", k, s / k, mx }'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
