#!/usr/bin/env bash
# CPU seconds (user+system), wall seconds and peak memory of each tool of
# gpc-kernel --vecchia M | gpc-train | gpc-predict for each M given, on the
# large-N problem (bench/vecchia/twoclass, seeds 1 and 2: N training and
# 10^4 test points, RBF alpha 1 beta 10), with the load after each: the
# cost of --vecchia auto beside --vecchia 30, side by side in one run
# (docs/vecchia.md, "--vecchia auto"). The tools are built into DIR.
#
#   bench/vecchia/autocost.sh DIR 100000 30 auto
set -euo pipefail
dir=${1:?usage: autocost.sh DIR N M...}
n=${2:?usage: autocost.sh DIR N M...}
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$dir"
(cd "$root" && go build -o "$dir/bin/" ./cmd/... ./bench/vecchia/twoclass)
export PATH=$dir/bin:$PATH
cd "$dir"
[ -s "train-$n.csv" ] || twoclass -n "$n" -seed 1 > "train-$n.csv"
[ -s test.csv ] || twoclass -n 10000 -seed 2 > test.csv
for m in "$@"; do
  /usr/bin/time -f "kernel $m %e wall %U+%S cpu %M KB" gpc-kernel --alpha 1 --beta 10 --vecchia "$m" --train "train-$n.csv" --test test.csv > "model-$m.arrows"
  /usr/bin/time -f "train $m %e wall %U+%S cpu %M KB" gpc-train "model-$m.arrows" > "cloud-$m.arrows"
  /usr/bin/time -f "predict $m %e wall %U+%S cpu %M KB" gpc-predict --format csv "cloud-$m.arrows" > "post-$m.csv"
  uptime
done
