#!/usr/bin/env bash
# A sharded gpc-orthant, gpc-train, gpc-predict or gpc-tune run on Slurm,
# that fails when any part of it fails and resumes where it stopped:
#
#   examples/slurm/run.sh [--shards DIR] TOOL K OUTPUT [TOOL's arguments...]
#   examples/slurm/run.sh gpc-orthant 4 logp.arrows --samples 1000000 cov.arrows
#   examples/slurm/run.sh gpc-train 4 cloud.arrows --samples 1000000 cov.arrows
#   examples/slurm/run.sh gpc-predict 4 posteriors.arrows cloud.arrows
#   examples/slurm/run.sh gpc-tune 4 grid.arrows --alpha 1:100:20 --beta 1:1e6:20 --exploit 0 --no-optimize --train train.csv
#
# For gpc-orthant and gpc-train one job prepares (TOOL --prepare-only: the
# plan, gpc.plan/1 for a covariance, gpc.vecchia-plan/1 for a Vecchia
# model), then a job array computes the K shards (each reading the plan),
# then a job merges them into OUTPUT (task.sbatch does each). The shards go
# to the
# shard directory: --shards DIR, or GPC_SHARDS=DIR, or else OUTPUT.shards
# beside the output. It must be on a file system the compute nodes share;
# the tasks run in the directory run.sh was called from (Slurm's default), so
# relative paths work there, and the tools must be on the compute nodes' PATH.
#
# run.sh waits for the jobs to end, checks each one's final state (scontrol,
# or sacct once the controller has forgotten it) and the files they leave,
# and prints "merged ..." (exit 0) only when the merge has succeeded and
# OUTPUT is in place. Otherwise it exits 1, naming the shards that are
# missing, the state of the jobs that failed (failed, cancelled, timed out,
# out of memory, node failure...) with the last line of their log, and the
# shard directory, which it keeps: the same command run again (with the same
# shard directory) reuses the plan and every complete shard of the same run
# (gpc-merge --check: complete; TOOL --fingerprint: the same input, flags,
# seed and K), submits only the missing shards, and merges. A directory that
# holds another run's plan or shards is refused (exit 1), not reused. On
# SIGINT or SIGTERM run.sh cancels its jobs and exits 130, keeping the
# directory. A directory run.sh chose itself is removed after a success.
# Job logs are in DIR/log. sbatch's environment variables (SBATCH_PARTITION,
# SBATCH_TIMELIMIT, SBATCH_ACCOUNT, ...) apply to every job.
#
# With GPC_CHECK=1 it also runs the unsharded TOOL here and compares the
# merged output with it byte for byte (what .ci/scale-out.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prog=run.sh
usage() {
  echo "usage: $prog [--shards DIR] TOOL K OUTPUT [TOOL's arguments...]" >&2
  exit 2
}
say() { echo "$prog: $*" >&2; }

shards=${GPC_SHARDS:-}
while [ $# -gt 0 ]; do
  case $1 in
  --shards) [ $# -ge 2 ] || usage; shards=$2; shift 2 ;;
  --shards=*) shards=${1#--shards=}; shift ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --*) usage ;;
  *) break ;;
  esac
done
[ $# -ge 3 ] || usage
tool=$1 k=$2 out=$3
shift 3
case $k in '' | *[!0-9]* | 0*) say "K must be a whole number from 1 on, not \"$k\""; exit 2 ;; esac
out=$(realpath -m -- "$out")
chosen=0
if [ -z "$shards" ]; then
  shards=$out.shards chosen=1
fi
shards=$(realpath -m -- "$shards")
mkdir -p "$shards/log" "$(dirname "$out")"
export GPC_SHARDS=$shards GPC_OUT=$out GPC_K=$k

# --- job states -------------------------------------------------------------

# states ID: one line "TASK STATE EXIT REASON" per job of ID (each task of
# a job array, by its index; TASK is - for a plain job), from scontrol while the
# controller knows the job, else from sacct where accounting is on; nothing
# if neither knows it; exit 1 if the controller did not answer.
states() {
  local out
  if out=$(scontrol show job -o "$1" 2>&1); then
    awk '{
      task = "-"; state = ec = reason = ""
      for (i = 1; i <= NF; i++) {
        n = index($i, "="); key = substr($i, 1, n - 1); v = substr($i, n + 1)
        if (key == "ArrayTaskId") task = v
        else if (key == "JobState") state = v
        else if (key == "ExitCode") ec = v
        else if (key == "Reason") reason = v
      }
      # Tasks not yet started share a record: ArrayTaskId=2-3,7 (%N: a limit).
      sub(/%.*/, "", task)
      n = split(task, parts, ",")
      for (p = 1; p <= n; p++) {
        if (parts[p] ~ /^[0-9]+-[0-9]+$/ && split(parts[p], r, "-") == 2) for (t = r[1] + 0; t <= r[2] + 0; t++) print t, state, ec, reason
        else print parts[p], state, ec, reason
      }
    }' <<<"$out"
    return 0
  fi
  case $out in
  *"Invalid job id"*)
    sacct -X -n -P -j "$1" -o JobID,State,ExitCode 2>/dev/null |
      awk -F'|' '{ task = "-"; if ((n = index($1, "_")) > 0) task = substr($1, n + 1); split($2, s, " "); print task, s[1], $3, "-" }' || true
    return 0
    ;;
  esac
  return 1
}

# ended STATE: whether a job in STATE has ended for good.
ended() {
  case $1 in
  COMPLETED | FAILED | CANCELLED | TIMEOUT | OUT_OF_MEMORY | NODE_FAIL | BOOT_FAIL | DEADLINE | PREEMPTED) return 0 ;;
  esac
  return 1
}

# active IDS...: whether any of the jobs is still in the queue (pending,
# running, requeued, held...). A controller that does not answer counts as
# active.
active() {
  local id lines state rest
  for id in "$@"; do
    lines=$(states "$id") || return 0
    while read -r _ state rest; do
      [ -n "$state" ] && ! ended "$state" && return 0
    done <<<"$lines"
  done
  return 1
}

# wait_jobs IDS...: waits until none of the jobs is in the queue, polling
# every second at first, then less often (a tenth of the time waited, at
# most every 30 s).
wait_jobs() {
  local t0=$SECONDS held=
  while active "$@"; do
    local h
    h=$(for id in "$@"; do states "$id" 2>/dev/null || true; done | awk '$2 ~ /HOLD|SPECIAL_EXIT|SUSPENDED/ { print $2 }' | sort -u | tr '\n' ' ')
    if [ -n "$h" ] && [ "$h" != "$held" ]; then
      say "jobs $* are held or suspended ($h): release them (scontrol release) or cancel them (scancel); waiting"
    fi
    held=$h
    sleep $((1 + (SECONDS - t0) / 10 < 30 ? 1 + (SECONDS - t0) / 10 : 30))
  done
}

# describe STATE EXIT REASON: a job's end in words.
describe() {
  local what=$1 code=${2%%:*} sig=${2#*:}
  if [ "${sig:-0}" != 0 ]; then
    what+=", killed by signal $sig"
  elif [ -n "$code" ] && [ "$code" != 0 ]; then
    what+=", exit $code"
    if [ "$code" = 130 ]; then
      what+=" (interrupted: SIGTERM or SIGINT)"
    elif [ "$code" -gt 128 ] && [ "$code" -lt 160 ]; then
      what+=" (the tool killed by signal $((code - 128)))"
    fi
  fi
  # The reasons worth saying (not those of a job that waited: Resources, ...).
  case ${3:--} in - | None | NonZeroExitCode | Resources | Priority | BeginTime | Dependency) ;; *) what+=" ($3)" ;; esac
  echo "$what"
}

# lastlog FILE: the last line of a job's log, if any.
lastlog() {
  if [ -s "$1" ]; then
    echo ": $(tail -n 1 "$1")"
  fi
}

# --- a run left in the directory --------------------------------------------

if [ -s "$shards/.jobs" ]; then
  read -r -a previous <"$shards/.jobs"
  if active "${previous[@]}"; then
    say "the jobs of an earlier run on $shards (${previous[*]}) are still in the queue: wait for them to end, or cancel them (scancel ${previous[*]})"
    exit 1
  fi
fi
# No job of a run on the directory is left: the hidden files of jobs that
# were killed before they could remove them go.
rm -f "$shards/.merged" "$shards/.jobs" "$shards/.jobs.new" "$shards"/.*.part "$(dirname "$out")/.$(basename "$out")".*.part

plan=()
case $tool in
gpc-orthant | gpc-train)
  plan=(--plan "$shards/plan.arrows")
  ;;
esac
submitted=()
cleanup() {
  if [ ${#submitted[@]} -gt 0 ]; then
    scancel "${submitted[@]}" 2>/dev/null || true
  fi
}
trap 'cleanup' EXIT
trap 'say "interrupted: jobs ${submitted[*]} cancelled; the complete shards are kept in $shards"; exit 130' INT TERM

# submit VAR WHAT SBATCH-ARGUMENTS...: submits a job (WHAT, in words) with
# the shared options, says so, and sets VAR to its id.
submit() {
  local id
  id=$(sbatch --parsable --export=ALL --kill-on-invalid-dep=yes "${@:3}")
  id=${id%%;*}
  submitted+=("$id")
  echo "$id" >>"$shards/.jobs.new"
  printf -v "$1" %s "$id"
  say "job $id: $2"
}
prepare=
shopt -s nullglob
files=("$shards"/shard-*.arrows)
shopt -u nullglob
done=()
if [ ${#plan[@]} -gt 0 ] && [ ! -s "$shards/plan.arrows" ] && [ ${#files[@]} -gt 0 ]; then
  # Shards without their plan: prepare first, to check them against it.
  submit prepare "the preparation ($tool --prepare-only)" --job-name=gpc-prepare --output="$shards/log/prepare.log" "$here/task.sbatch" prepare "$tool" "$@"
  say "preparing (job $prepare) to check the shards in $shards against the plan"
  wait_jobs "$prepare"
  submitted=()
  if [ ! -s "$shards/plan.arrows" ]; then
    read -r _ state code reason < <(states "$prepare" | head -n 1) || true
    say "the preparation (job $prepare) failed: $(describe "${state:-unknown}" "${code:-}" "${reason:--}")$(lastlog "$shards/log/prepare.log")"
    exit 1
  fi
  prepare=
fi
if [ ${#files[@]} -gt 0 ] || { [ ${#plan[@]} -gt 0 ] && [ -s "$shards/plan.arrows" ]; }; then
  # What this run's shards carry: a plan of another run is refused here
  # (the tool says why).
  if ! fp=$("$tool" --shard "0/$k" --fingerprint "${plan[@]}" "$@" 2>"$shards/log/fingerprint.log"); then
    say "$shards was left by another run, or the arguments are wrong$(lastlog "$shards/log/fingerprint.log"): remove the directory or name another (--shards DIR)"
    exit 1
  fi
fi
if [ ${#files[@]} -gt 0 ]; then
  checked=$(gpc-merge --check --format csv "${files[@]}" | tail -n +2)
  j=0
  while IFS=, read -r shard sfp complete _; do
    f=${files[$j]}
    j=$((j + 1))
    i=${f##*/shard-}
    i=${i%.arrows}
    if [ "$complete" != yes ]; then
      say "$f is not a complete shard: computing it again"
      rm -f -- "$f"
    elif [ "$sfp" != "$fp" ] || [ "$shard" != "$i/$k" ]; then
      say "$f is shard $shard of another run (fingerprint $sfp; this run's shards are $i/$k, $fp): remove it, or the directory, or name another (--shards DIR)"
      exit 1
    else
      done+=("$i")
    fi
  done <<<"$checked"
fi
missing=()
for ((i = 0; i < k; i++)); do
  case " ${done[*]} " in *" $i "*) ;; *) missing+=("$i") ;; esac
done
if [ ${#done[@]} -gt 0 ]; then
  say "reusing the ${#done[@]} complete shards of this run in $shards (${done[*]}); computing ${#missing[@]} (${missing[*]:-none})"
fi

# --- submit, wait, check ----------------------------------------------------

after=()
if [ ${#plan[@]} -gt 0 ] && [ ! -s "$shards/plan.arrows" ] && [ ${#missing[@]} -gt 0 ]; then
  submit prepare "the preparation ($tool --prepare-only)" --job-name=gpc-prepare --output="$shards/log/prepare.log" "$here/task.sbatch" prepare "$tool" "$@"
  after=(--dependency=afterok:"$prepare")
fi
array=
if [ ${#missing[@]} -gt 0 ]; then
  list=$(
    IFS=,
    echo "${missing[*]}"
  )
  [ ${#missing[@]} = "$k" ] && [ "$k" -gt 1 ] && list=0-$((k - 1))
  submit array "shards $list of $k ($tool)" --job-name=gpc-shard --output="$shards/log/shard-%a.log" "${after[@]}" --array="$list" "$here/task.sbatch" shard "$tool" "${plan[@]}" "$@"
  after=(--dependency=afterok:"$array")
fi
submit merge "the merge into $out" --job-name=gpc-merge --output="$shards/log/merge.log" "${after[@]}" "$here/task.sbatch" merge
mv -f "$shards/.jobs.new" "$shards/.jobs"
jobs=(${prepare:+$prepare} ${array:+$array} "$merge")
wait_jobs "${jobs[@]}"
submitted=()

merged=$(cat "$shards/.merged" 2>/dev/null || true)
read -r _ mstate mcode mreason < <(states "$merge" | head -n 1) || true
if [ "$merged" = "$merge" ] && { [ -z "${mstate:-}" ] || [ "$mstate" = COMPLETED ]; }; then
  rm -f "$shards/.jobs"
  computed=
  [ ${#done[@]} -gt 0 ] && computed=" (reused ${#done[@]}, computed ${#missing[@]}: ${missing[*]:-none})"
  echo "merged $k shards of $tool into $out$computed"
  if [ "$chosen" = 1 ]; then
    rm -rf -- "$shards"
  fi
else
  shardword=shards
  [ "$k" = 1 ] && shardword=shard
  say "$tool in $k $shardword failed; $out was not written"
  if [ -n "$prepare" ] && [ ! -s "$shards/plan.arrows" ]; then
    read -r _ state code reason < <(states "$prepare" | head -n 1) || true
    say "  the preparation (job $prepare): $(describe "${state:-unknown}" "${code:-}" "${reason:--}")$(lastlog "$shards/log/prepare.log")"
  fi
  lost=()
  for i in "${missing[@]}"; do
    [ -s "$shards/shard-$i.arrows" ] && continue
    lost+=("$i")
    line=$( [ -n "$array" ] && states "$array" | awk -v i="$i" '$1 == i' | head -n 1) || true
    read -r _ state code reason <<<"$line" || true
    say "  shard $i (job ${array}_$i): $(describe "${state:-unknown}" "${code:-}" "${reason:--}")$(lastlog "$shards/log/shard-$i.log")"
  done
  say "  the merge (job $merge): $(describe "${mstate:-unknown}" "${mcode:-}" "${mreason:--}")$(lastlog "$shards/log/merge.log")"
  if [ ${#lost[@]} -gt 0 ]; then
    say "failed shards: ${lost[*]}; the complete shards and the logs are kept in $shards: run the same command again (with --shards $shards) to compute only the missing ones"
  else
    say "every shard is complete in $shards: run the same command again (with --shards $shards) to merge them"
  fi
  exit 1
fi

if [ "${GPC_CHECK:-0}" = 1 ]; then
  "$tool" --format arrow "$@" | cmp - "$out"
  echo "byte-identical to the unsharded run"
fi
