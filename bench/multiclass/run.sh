#!/bin/bash
# Multi-class benchmark: gpc's exact multinomial probit posteriors against
# scikit-learn's one-vs-rest and one-vs-one Laplace GP classifiers, on
# iris, wine and a digits subset (Debian's python3-sklearn data, offline),
# on the fixed splits of split.py, shipped in examples/. docs/multiclass.md has the results.
#
#   bench/multiclass/run.sh [iris|wine|digits ...]     (default: all three)
#
# Run from the repository root; builds the tools into a temporary
# directory. For each data set gpc-fit chooses alpha and beta (its
# defaults: the data's start, L-BFGS on EP's evidence and on the exact
# log marginal likelihood), as scikit-learn fits its kernel's by the
# Laplace approximation's; gpc-kernel --hyper reads them. Then the final
# run: CPU seconds of the fit and of the pipeline (user + sys), accuracy,
# mean log predictive probability of the true class, the largest standard
# error of any class probability, log_ml and its standard error.
# Environment: SAMPLES (final particles; default 100000, digits 6000),
# THREADS (default 0: all cores).
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
	iris) data=examples/iris label=species samples=${SAMPLES:-100000} ;;
	wine) data=examples/wine label=class samples=${SAMPLES:-100000} ;;
	digits) data=examples/digits label=digit samples=${SAMPLES:-6000} ;;
	*) echo "run.sh: unknown data set $name" >&2; exit 80 ;;
	esac
	kern=(gpc-kernel --standardize --label "$label" --id id --train "$data/train.csv")
	/usr/bin/time -f "%U %S" -o "$dir/fittime" gpc-fit --standardize --label "$label" --id id --train "$data/train.csv" --threads "$THREADS" --format csv > "$dir/hyper.csv"
	a=$(awk -F, '$2 == "alpha" {print $4}' "$dir/hyper.csv")
	b=$(awk -F, '$2 == "beta" {print $4}' "$dir/hyper.csv")
	fitcpu=$(awk '{printf "%.1f", $1 + $2}' "$dir/fittime")
	echo "$name fit alpha=$a beta=$b ($fitcpu CPU s)" >&2
	kern+=(--hyper "$dir/hyper.csv")
	/usr/bin/time -f "%U %S" -o "$dir/time" bash -c "set -o pipefail; ${kern[*]} --test $data/test.csv | gpc-train --threads $THREADS --samples $samples | gpc-predict --threads $THREADS --format csv > $dir/post.csv"
	"${kern[@]}" | gpc-train --threads "$THREADS" --samples "$samples" --format csv | tail -1 | cut -d, -f1,2 > "$dir/ml"
	cpu=$(awk '{printf "%.1f", $1 + $2}' "$dir/time")
	echo "data,method,alpha,beta,accuracy,mean_log_p,max_se,test_points,log_ml,se_log_ml,cpu_s,fit_cpu_s"
	echo "$name,gpc exact (M=$samples),$a,$b,$($PY "$here/score.py" "$dir/post.csv"),$(cat "$dir/ml"),$cpu,$fitcpu"
	$PY "$here/sklearn_gpc.py" "$data/train.csv" "$data/test.csv" "$label" id | tail -n +2 | while IFS=, read -r mode acc lp cpu; do
		echo "$name,scikit-learn $mode,,,$acc,$lp,,,,,$cpu"
	done
done
