#!/bin/bash
# Multi-class benchmark: gpc's exact multinomial probit posteriors against
# scikit-learn's one-vs-rest and one-vs-one Laplace GP classifiers, on
# iris, wine and a digits subset (Debian's python3-sklearn data, offline),
# on the fixed splits of split.py, shipped in examples/. docs/multiclass.md has the results.
#
#   bench/multiclass/run.sh [iris|wine|digits ...]     (default: all three)
#
# Run from the repository root; builds the tools into a temporary
# directory. For each data set gpc's alpha and beta are those of the
# largest log marginal likelihood on a grid (gpc-train --format csv, a few
# thousand particles), as scikit-learn fits its kernel's by the Laplace
# approximation's. Then the final run: CPU seconds (user + sys of the
# whole pipeline), accuracy, mean log predictive probability of the true
# class, the largest standard error of any class probability, log_ml and
# its standard error. Environment: SAMPLES (final particles; default 100000,
# digits 6000), GRID_SAMPLES (default 2000, digits 500), THREADS (default 0:
# all cores).
set -euo pipefail
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/bin/" ./cmd/...
export PATH=$dir/bin:$PATH
here=$(dirname "$0")
THREADS=${THREADS:-0}
sets=("$@")
[ ${#sets[@]} -eq 0 ] && sets=(iris wine digits)
for name in "${sets[@]}"; do
	case $name in
	iris) data=examples/iris label=species alphas="1 2 4 8" betas="16 64 256 1024" samples=${SAMPLES:-100000} grid=${GRID_SAMPLES:-2000} ;;
	wine) data=examples/wine label=class alphas="2 4 8 16" betas="16 64 256 1024" samples=${SAMPLES:-100000} grid=${GRID_SAMPLES:-2000} ;;
	digits)
		data=examples/digits label=digit alphas="8 16" betas="4 16" samples=${SAMPLES:-6000} grid=${GRID_SAMPLES:-500} ;;
	*) echo "run.sh: unknown data set $name" >&2; exit 80 ;;
	esac
	kern=(gpc-kernel --standardize --label "$label" --id id --train "$data/train.csv")
	best= bestml=
	for a in $alphas; do
		for b in $betas; do
			ml=$("${kern[@]}" --alpha "$a" --beta "$b" | gpc-train --threads "$THREADS" --samples "$grid" --format csv | tail -1 | cut -d, -f1)
			echo "$name grid alpha=$a beta=$b log_ml=$ml" >&2
			if [ -z "$best" ] || awk -v x="$ml" -v y="$bestml" 'BEGIN{exit !(x > y)}'; then
				best="$a $b" bestml=$ml
			fi
		done
	done
	set -- $best
	a=$1 b=$2
	/usr/bin/time -f "%U %S" -o "$dir/time" bash -c "set -o pipefail; ${kern[*]} --alpha $a --beta $b --test $data/test.csv | gpc-train --threads $THREADS --samples $samples | gpc-predict --threads $THREADS --format csv > $dir/post.csv"
	"${kern[@]}" --alpha "$a" --beta "$b" | gpc-train --threads "$THREADS" --samples "$samples" --format csv | tail -1 | cut -d, -f1,2 > "$dir/ml"
	cpu=$(awk '{printf "%.1f", $1 + $2}' "$dir/time")
	echo "data,method,alpha,beta,accuracy,mean_log_p,max_se,test_points,log_ml,se_log_ml,cpu_s"
	echo "$name,gpc exact (M=$samples),$a,$b,$($PY "$here/score.py" "$dir/post.csv"),$(cat "$dir/ml"),$cpu"
	$PY "$here/sklearn_gpc.py" "$data/train.csv" "$data/test.csv" "$label" id | tail -n +2 | while IFS=, read -r mode acc lp cpu; do
		echo "$name,scikit-learn $mode,,,$acc,$lp,,,,,$cpu"
	done
done
