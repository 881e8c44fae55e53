#!/usr/bin/env bash
# Runs one of bench/vecchia/run.sh's pipelines K times and summarizes its
# wall seconds: the median and the range, with the machine and its load,
# for the figures of docs/vecchia.md and the README (a single run is not a
# figure: on the 2-core test machines one pipeline at N = 10^5 took 52 s in
# one run and 57-75 s in five others). Each run's CSV line (run.sh's) goes
# to standard output as it ends, then one summary line:
#
#   repeat: WHAT n=N test=T m=M: wall s median MED (min MIN, max MAX) of K runs; CPU; cores; load average before LOAD0, after LOAD1
#
#   bench/vecchia/repeat.sh 5 vecchia 30 100000 10000   # the README's N = 10^5 figure
#   bench/vecchia/repeat.sh 3 vecchia 30 1000000 10000  # N = 10^6 (12 minutes a run)
#
# Run it on a quiet machine (load average under 1 before it starts: the
# summary says what it was), with GPC_BENCH_DIR set to keep the data and
# the built tools between calls. The first run also builds the tools and
# writes the data; its time is not in the summary (it is run once more).
set -euo pipefail
k=$1 what=$2 m=$3 n=$4 t=$5
here=$(cd "$(dirname "$0")" && pwd)
export GPC_BENCH_DIR=${GPC_BENCH_DIR:-$(mktemp -d)}
load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo unknown; }
# The tools and the data, untimed.
"$here/run.sh" "$what" "$m" "$n" "$t" > /dev/null
load0=$(load)
walls=()
for ((i = 1; i <= k; i++)); do
  line=$("$here/run.sh" "$what" "$m" "$n" "$t")
  echo "$line"
  walls+=("$(cut -d, -f5 <<<"$line")")
done
load1=$(load)
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || echo unknown)
printf '%s\n' "${walls[@]}" | sort -g | awk -v what="$what" -v n="$n" -v t="$t" -v m="$m" -v cpu="$cpu" -v cores="$(nproc)" -v l0="$load0" -v l1="$load1" '
  { w[NR] = $1 }
  END {
    med = NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
    printf "repeat: %s n=%s test=%s m=%s: wall s median %.1f (min %.1f, max %.1f) of %d runs; %s; %d cores; load average before %s, after %s\n", what, n, t, m, med, w[1], w[NR], NR, cpu, cores, l0, l1
  }'
