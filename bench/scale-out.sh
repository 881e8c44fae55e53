#!/usr/bin/env bash
# The scale-out figure of docs/scale-out.md: gpc-orthant on an N = 500 GPC
# covariance (method ep, greedy order, SAMPLES particles) on one core, and
# the same run in K = 2 shards of one core each (taskset -c 0 and -c 1, at
# once), and prepared once (--prepare-only) with the two shards reading the
# plan, REPS times; prints each run's wall and CPU seconds and checks
# that the merged shards are the one-core run's bytes. Needs 2 idle cores
# for wall-clock figures. Usage: bench/scale-out.sh [SAMPLES [REPS]] (the
# tools built in bin/).
set -euo pipefail
cd "$(dirname "$0")/.."
samples=${1:-400000} reps=${2:-5}
B=$PWD/bin
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
{ cat examples/exp4/train.csv; tail -n +2 examples/exp4/test.csv
  tail -n +2 examples/exp4/train.csv | head -100 | awk -F, '{ printf "%.6f,%.6f,%s\n", $1 + 0.01, $2 - 0.01, $3 }'; } > "$d/train500.csv"
"$B/gpc-kernel" --standardize --alpha 1 --beta 10 --train "$d/train500.csv" > "$d/cov.arrows"
flags=(--method ep --order greedy --samples "$samples" --threads 1 --format arrow)
t() { /usr/bin/time -f "$1 %e wall-s %U user-s %S sys-s" "${@:2}"; }
lscpu | grep -E 'Model name|^CPU\(s\)'
for rep in $(seq "$reps"); do
  echo "-- rep $rep"
  t prep taskset -c 0 "$B/gpc-orthant" --method ep --order greedy --samples 64 --groups 1 --threads 1 --quiet "$d/cov.arrows" >/dev/null
  t one-core taskset -c 0 "$B/gpc-orthant" "${flags[@]}" "$d/cov.arrows" > "$d/one.arrows"
  s=$(date +%s%N)
  t shard0 taskset -c 0 "$B/gpc-orthant" "${flags[@]}" --shard 0/2 "$d/cov.arrows" > "$d/s0.arrows" &
  t shard1 taskset -c 1 "$B/gpc-orthant" "${flags[@]}" --shard 1/2 "$d/cov.arrows" > "$d/s1.arrows" &
  wait
  e=$(date +%s%N)
  echo "sharded-K2 $(( (e - s) / 1000000 )) wall-ms"
  "$B/gpc-merge" --format arrow "$d/s0.arrows" "$d/s1.arrows" | cmp - "$d/one.arrows"
  echo "merged: byte-identical"
  # Prepared once (--prepare-only, one core), then the two shards read the plan.
  s=$(date +%s%N)
  t plan taskset -c 0 "$B/gpc-orthant" "${flags[@]}" --prepare-only "$d/cov.arrows" > "$d/plan.arrows"
  t planshard0 taskset -c 0 "$B/gpc-orthant" "${flags[@]}" --plan "$d/plan.arrows" --shard 0/2 "$d/cov.arrows" > "$d/p0.arrows" &
  t planshard1 taskset -c 1 "$B/gpc-orthant" "${flags[@]}" --plan "$d/plan.arrows" --shard 1/2 "$d/cov.arrows" > "$d/p1.arrows" &
  wait
  e=$(date +%s%N)
  echo "planned-K2 $(( (e - s) / 1000000 )) wall-ms"
  "$B/gpc-merge" --format arrow "$d/p0.arrows" "$d/p1.arrows" | cmp - "$d/one.arrows"
  echo "merged from the plan: byte-identical"
done
