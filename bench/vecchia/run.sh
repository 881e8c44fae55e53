#!/usr/bin/env bash
# Times gpc's pipelines on the large-N issue's problem (two 2-D Gaussian
# classes, RBF alpha 1 beta 10) as a user runs them, one line of CSV per
# run on standard output: what, n (training points), test rows, m (--vecchia,
# 0 for the dense path), wall seconds of the whole pipeline, each tool's
# peak resident memory (MB), log marginal likelihood and its standard
# error, test accuracy and mean log predictive probability, and the Bayes
# classifier's accuracy and mean log predictive probability on the same
# test set (log odds 1.5 (x1 + x2)).
#
#   bench/vecchia/run.sh vecchia 30 100000 10000     # gpc-kernel --vecchia 30 | gpc-train | gpc-predict
#   bench/vecchia/run.sh dense 0 10000 1000          # the dense path
#   bench/vecchia/run.sh orthant 30 10000 0          # gpc-kernel --vecchia 30 | gpc-orthant
#   bench/vecchia/run.sh sklearn 0 10000 1000        # scikit-learn's GaussianProcessClassifier
#
# The data are made by bench/vecchia/twoclass (seeds 1 and 2) in DIR
# (GPC_BENCH_DIR, default a temporary directory), the tools built into it;
# scikit-learn is Debian's python3-sklearn (GPC_PYTHON, default /usr/bin/python3).
set -euo pipefail
what=$1 m=$2 n=$3 t=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${GPC_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
cd "$root"
[ -x "$dir/bin/gpc-kernel" ] || go build -o "$dir/bin/" ./cmd/... ./bench/vecchia/twoclass
train=$dir/train-$n.csv test=$dir/test-$t.csv
[ -s "$train" ] || "$dir/bin/twoclass" -n "$n" -seed 1 > "$train"
[ "$t" = 0 ] || [ -s "$test" ] || "$dir/bin/twoclass" -n "$t" -seed 2 > "$test"
bayes() { # the Bayes classifier on the test set: accuracy, mean log p
  awk -F, 'NR > 1 { z = 1.5 * ($1 + $2); p = 1 / (1 + exp(-z)); right += (p >= 0.5) == ($3 > 0); lp += log($3 > 0 ? p : 1 - p); n++ }
    END { if (n) printf "%.6g,%.6g", right / n, lp / n; else printf "," }' "$test"
}
peak() { awk '{ printf "%.0f", $1 / 1024 }' "$1"; }
b=$dir/bin tm=$dir/time
case $what in
vecchia | dense)
  vflag=()
  [ "$what" = vecchia ] && vflag=(--vecchia "$m")
  start=$(date +%s.%N)
  /usr/bin/time -f %M -o "$tm.k" "$b/gpc-kernel" --alpha 1 --beta 10 "${vflag[@]}" --train "$train" --test "$test" |
    /usr/bin/time -f %M -o "$tm.t" "$b/gpc-train" |
    /usr/bin/time -f %M -o "$tm.p" "$b/gpc-predict" --format table > "$dir/out.txt"
  end=$(date +%s.%N)
  line=$(tail -1 "$dir/out.txt")
  # "... right (accuracy A), mean log predictive probability L; log marginal likelihood M (se S)"
  acc=$(sed -E 's/.*accuracy ([^)]*)\).*/\1/' <<<"$line")
  lp=$(sed -E 's/.*probability ([^;]*);.*/\1/' <<<"$line")
  ml=$(sed -E 's/.*likelihood ([^ ]*) .*/\1/' <<<"$line")
  se=$(sed -E 's/.*\(se ([^)]*)\).*/\1/' <<<"$line")
  echo "$what,$n,$t,$m,$(awk "BEGIN { printf \"%.2f\", $end - $start }"),$(peak "$tm.k"),$(peak "$tm.t"),$(peak "$tm.p"),$ml,$se,$acc,$lp,$(bayes)"
  ;;
orthant)
  start=$(date +%s.%N)
  out=$(/usr/bin/time -f %M -o "$tm.k" "$b/gpc-kernel" --alpha 1 --beta 10 --vecchia "$m" --train "$train" |
    /usr/bin/time -f %M -o "$tm.t" "$b/gpc-orthant" --format csv)
  end=$(date +%s.%N)
  ml=$(tail -1 <<<"$out" | cut -d, -f1) se=$(tail -1 <<<"$out" | cut -d, -f2)
  echo "orthant,$n,0,$m,$(awk "BEGIN { printf \"%.2f\", $end - $start }"),$(peak "$tm.k"),$(peak "$tm.t"),,$ml,$se,,,,"
  ;;
sklearn)
  out=$(/usr/bin/time -f %M -o "$tm.s" "${GPC_PYTHON:-/usr/bin/python3}" bench/vecchia/sklearn_fixed.py "$train" "$test" 1 10)
  IFS=, read -r _ _ wall acc lp ml <<<"$out"
  echo "sklearn,$n,$t,0,$wall,,$(peak "$tm.s"),,$ml,,$acc,$lp,$(bayes)"
  ;;
*)
  echo "run.sh: unknown run $what" >&2
  exit 2
  ;;
esac
