#!/usr/bin/env bash
# A one-node Slurm for the tests, started and stopped here (as root,
# without systemd): munged as the munge user, slurmctld and slurmd, on
# free ports of their own, with their configuration, state and logs in a
# temporary directory (SLURM_CONF points the clients at it). Then the
# sharded runs of examples/slurm/run.sh on it, each merged and compared byte
# for byte with the unsharded run (gpc-orthant, gpc-train then gpc-predict,
# gpc-predict by test rows, gpc-tune's grid and then gpc-tune --from); the
# faults of docs/scale-out.md, each run.sh's exit status, report and files
# checked (a task killed, resumed; a directory of another run refused; a task
# sent SIGTERM; a task requeued; the node lost; the array cancelled; a task
# past its time limit); and the orthant run driven by GNU parallel, killed
# and resumed. Installs Debian's Slurm, munge and parallel if missing.
# Usage: .ci/scale-out.sh (with the tools built in bin/).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/bin:$PATH
run=$PWD/examples/slurm/run.sh

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null || ! command -v parallel >/dev/null; then
  apt-get update -qq && apt-get install -y -qq slurmctld slurmd slurm-client munge parallel >/dev/null
fi

d=$(mktemp -d /tmp/gpc-slurm.XXXXXX)
chmod 755 "$d"
host=$(hostname -s)
pids=() bgpids=()
stop() {
  rc=$?
  if [ "$rc" -ne 0 ]; then # the daemons' logs, to see why
    for f in "$d"/*.out "$d"/*.log "$d"/munge/munged.log "$d"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done
  fi
  # Any run still going and its jobs (their steps outlive slurmd), then
  # slurmd and slurmctld, then munged (by its pid file, so that su, its
  # parent here, sees it exit), and wait for each.
  for p in "${bgpids[@]}"; do pkill -TERM -P "$p" 2>/dev/null || true; done
  if [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
    # shellcheck disable=SC2046 # one argument per job
    scancel $(squeue -h -o %i) 2>/dev/null || true
    for _ in $(seq 150); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -s "$d/munge/munged.pid" ] && kill "$(cat "$d/munge/munged.pid")" 2>/dev/null || true
  wait || true
  rm -rf "$d"
}
trap stop EXIT

# Two free ports (another Slurm of these tests may run on the machine).
free_port() {
  local p
  for p in $(seq "$1" 2 $(($1 + 200))); do
    if ! (: </dev/tcp/127.0.0.1/"$p") 2>/dev/null && ! (: </dev/tcp/127.0.0.1/$((p + 1))) 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo "no free port" >&2
  return 1
}
port=$(free_port 16817)

# munge: its own key, socket and files, run as the munge user.
# (The socket's directory must be open to all, the key's to munge only.)
mkdir -p "$d/munge" "$d/sock"
dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
chown -R munge: "$d/munge" "$d/sock"
chmod 700 "$d/munge"
chmod 755 "$d/sock"
chmod 400 "$d/munge/munge.key"
su -s /bin/sh munge -c "exec munged --foreground --key-file=$d/munge/munge.key --socket=$d/sock/munge.socket --pid-file=$d/munge/munged.pid --log-file=$d/munge/munged.log --seed-file=$d/munge/munged.seed" >"$d/munged.out" 2>&1 &
for _ in $(seq 50); do [ -S "$d/sock/munge.socket" ] && break; sleep 0.1; done
[ -S "$d/sock/munge.socket" ] || { echo "munged did not start"; exit 1; }

# The node offers one CPU more than the machine has (config_overrides): the
# time-limit test's task idles on a FIFO, and the others keep every core.
mkdir -p "$d/state" "$d/spool"
export SLURM_CONF=$d/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=gpcci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$d/sock/munge.socket
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
KillWait=5
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(($(nproc) + 1)) State=UNKNOWN
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
touch "$d/plugstack.conf"
slurmctld -D -i >"$d/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D >"$d/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do sinfo -h -o %T 2>/dev/null | grep -qx idle && break; sleep 0.2; done
sinfo -h -o %T | grep -qx idle || { echo "the Slurm node did not come up"; cat "$d"/slurm*.log; exit 1; }
sinfo

# --- helpers of the fault runs ------------------------------------------------

fail() {
  echo "FAILED: $*" >&2
  exit 1
}
# bg NAME COMMAND...: runs COMMAND in the background, its output in
# $d/NAME.out and .err and its exit status in .rc.
bg() {
  local name=$1
  shift
  (
    rc=0
    "$@" >"$d/$name.out" 2>"$d/$name.err" || rc=$?
    echo "$rc" >"$d/$name.rc"
  ) &
  bgpids+=($!)
}
# finish NAME RC: waits for the background run NAME and checks its exit status.
finish() {
  for _ in $(seq 1500); do [ -s "$d/$1.rc" ] && break; sleep 0.2; done
  [ -s "$d/$1.rc" ] || fail "$1 did not end in 5 minutes"
  cat "$d/$1.out" "$d/$1.err"
  [ "$(cat "$d/$1.rc")" = "$2" ] || fail "$1: exit $(cat "$d/$1.rc"), want $2"
}
# running TOOL I/K: waits until the tool computes shard I/K, and prints its pid.
running() {
  local p
  for _ in $(seq 600); do
    p=$({ pgrep -a -x "$1" || true; } | awk -v s="$2" '{ for (i = 1; i < NF; i++) if ($i == "--shard" && $(i + 1) == s) { print $1; exit } }')
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.05
  done
  fail "$1 --shard $2 did not start"
}
# array NAME: the job id of the job array of the run NAME (from run.sh's report).
array() {
  for _ in $(seq 200); do
    sed -n 's/^run\.sh: job \([0-9]*\): shards .*/\1/p' "$d/$1.err" | grep . && return
    sleep 0.05
  done
  fail "$1: no job array"
}
# pending JOB: waits until the job (a task) is pending again, requeued.
pending() {
  for _ in $(seq 200); do
    scontrol show job -o "$1" | grep -q 'JobState=PENDING' && return
    sleep 0.05
  done
  fail "$1 was not requeued"
}
# restarted NAME TASK: the run NAME succeeded, TASK ran twice, and the
# output is the unsharded run's.
restarted() {
  finish "$1" 0
  scontrol show job -o "$2" | grep -q 'Restarts=1' || fail "$2 was not restarted"
  cmp "$out" "$d/ref.arrows"
  echo "byte-identical to the unsharded run"
}
has() { grep -qF -- "$2" "$d/$1.err" || fail "$1: the report does not say \"$2\""; }
# signalled PID: waits until a process held by SIGSTOP has been sent
# SIGTERM (pending: bit 15 of its shared pending signals in /proc), or
# runs again (Slurm's cancel sends SIGCONT before SIGTERM), or has ended.
signalled() {
  local m st
  for _ in $(seq 200); do
    m=$(awk '$1 == "ShdPnd:" { print $2 }' "/proc/$1/status" 2>/dev/null || true)
    st=$(awk '$1 == "State:" { print $2 }' "/proc/$1/status" 2>/dev/null || true)
    [ -z "$st" ] || [ "$st" != T ] && return
    [ -n "$m" ] && (((0x$m & 0x4000) != 0)) && return
    sleep 0.05
  done
  fail "SIGTERM did not reach process $1"
}
# busy PID: waits until the tool has used 200 ms of CPU time (utime and
# stime, /proc/PID/stat), past its start, where it begins to catch SIGINT
# and SIGTERM, and before its end: a fixed sleep of 0.3 s let a shard that
# computes in half a second end before hold (CI, 2026-12-01); 50 ms was
# too close to the start, whose package initialisation alone takes 40 ms
# of CPU time on an idle 2-core EPYC (GODEBUG=inittrace=1), and a shard
# cancelled then died of the SIGTERM, exit 143 (CI, 2026-12-02). A shard
# of these runs takes about 650 ms of CPU time.
busy() {
  local ticks t
  ticks=$(( $(getconf CLK_TCK) / 5 ))
  for _ in $(seq 2000); do
    t=$(awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || true)
    [ -z "$t" ] && fail "process $1 ended before it was busy"
    [ "$t" -ge "$ticks" ] && return
    sleep 0.005
  done
  fail "process $1 did not use $ticks clock ticks of CPU"
}
# hold PID: stops the tool (SIGSTOP) before a signal is sent through
# Slurm, so that a shard that computes fast, or a slow scancel, cannot let
# it finish first (under load it did: exit 0); release PID: lets it go on
# once the signal has reached it.
hold() {
  kill -STOP "$1" || fail "process $1 ended before the signal could be sent"
  for _ in $(seq 200); do
    [ "$(awk '$1 == "State:" { print $2 }' "/proc/$1/status" 2>/dev/null || true)" = T ] && return
    sleep 0.01
  done
  fail "process $1 did not stop"
}
release() {
  signalled "$1"
  kill -CONT "$1" 2>/dev/null || true
}

# --- the runs -----------------------------------------------------------------

# An N = 500 GP-classification covariance: exp4's 400 patterns and 100 of
# them moved a little (one awk, not tail | head: under pipefail, head's
# early exit can end tail by SIGPIPE, and the script with status 141).
{ cat examples/exp4/train.csv; tail -n +2 examples/exp4/test.csv
  awk -F, 'NR > 1 && NR <= 101 { printf "%.6f,%.6f,%s\n", $1 + 0.01, $2 - 0.01, $3 }' examples/exp4/train.csv; } > "$d/train500.csv"
gpc-kernel --standardize --alpha 1 --beta 10 --train "$d/train500.csv" > "$d/cov500.arrows"

# The fault runs: gpc-orthant in 4 shards of 50000 particles, each a second
# or more of computing.
oargs=(--samples 200000 "$d/cov500.arrows")
gpc-orthant --format arrow "${oargs[@]}" > "$d/ref.arrows"
out=$d/faults.arrows dir=$d/faults.arrows.shards

echo "== the node lost while tasks run (slurmd stopped, the node marked DOWN, its tasks killed; then back): the tasks are requeued (--requeue) and start over; byte-identical"
rm -f "$out"
bg node "$run" gpc-orthant 4 "$out" "${oargs[@]}"
running gpc-orthant 0/4 >/dev/null
a=$(array node)
kill -STOP "${pids[1]}" # slurmd: the node does not answer
scontrol update NodeName="$host" State=DOWN Reason=ci-node-failure
pending "${a}_0"
for p in $(pgrep -x gpc-orthant); do kill -KILL "$p"; done # the tasks die with their node
kill -CONT "${pids[1]}"
# The node back, and the killed tasks' steps gone (a task launched again
# while its old step lingers drains the node: "Duplicate jobid").
for _ in $(seq 300); do
  sinfo -h -o %T | grep -qx idle && ! pgrep -f 'slurmstepd: \[' >/dev/null && break
  sleep 0.1
done
sleep 1
scontrol update JobId="$a" StartTime=now 2>/dev/null || true # (a task not yet started when the node was lost is no longer pending)
restarted node "${a}_0"

# A time limit, in the background (the node failure above requeues every
# task on the node: this one starts after it).
echo "== (in the background) a gpc-tune shard past its time limit (SBATCH_TIMELIMIT=1 minute; it waits on a FIFO): run.sh fails, naming it TIMEOUT"
mkfifo "$d/never.csv"
bg timeout env SBATCH_TIMELIMIT=1 "$run" --shards "$d/timeout" gpc-tune 1 "$d/timeout.arrows" --beta 1,2 --exploit 0 --no-optimize --train "$d/never.csv"


echo "== gpc-orthant prepared once by a Slurm job, then a 4-task job array reading its plan (N = 500), merged, against the unsharded run"
GPC_CHECK=1 timeout 300 "$run" gpc-orthant 4 "$d/merged.arrows" "$d/cov500.arrows"
[ ! -e "$d/merged.arrows.shards" ] || fail "the shard directory run.sh chose was not removed"

echo "== gpc-train prepared once, then a 4-task job array on Slurm (4 sub-clouds), merged, predicted, against the unsharded gpc-train | gpc-predict"
gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv > "$d/crabs.arrows"
GPC_CHECK=1 timeout 300 "$run" --shards "$d/train-shards" gpc-train 4 "$d/cloud.arrows" --samples 20000 "$d/crabs.arrows"
[ -s "$d/train-shards/shard-3.arrows" ] || fail "the shard directory named by --shards was not kept"
gpc-train --samples 20000 "$d/crabs.arrows" | gpc-predict --format arrow > "$d/posteriors.arrows"
gpc-predict --format arrow "$d/cloud.arrows" | cmp - "$d/posteriors.arrows"
echo "posteriors of the merged cloud: byte-identical"
echo "== gpc-predict on the merged cloud in a 4-task job array (by test rows), merged, against the unsharded posteriors"
GPC_CHECK=1 timeout 300 "$run" gpc-predict 4 "$d/posteriors-sharded.arrows" "$d/cloud.arrows"

echo "== gpc-train on a Vecchia model (gpc-kernel --vecchia 10, N = 500: prepared once, a gpc.vecchia-plan/1 the tasks read) in a 4-task job array, merged, predicted, against the unsharded gpc-train | gpc-predict"
gpc-kernel --standardize --alpha 1 --beta 10 --vecchia 10 --train "$d/train500.csv" --test examples/exp4/test.csv > "$d/vecchia.arrows"
GPC_CHECK=1 timeout 300 "$run" gpc-train 4 "$d/vcloud.arrows" --samples 4000 "$d/vecchia.arrows"
gpc-train --samples 4000 "$d/vecchia.arrows" | gpc-predict --format arrow > "$d/vposteriors.arrows"
gpc-predict --format arrow "$d/vcloud.arrows" | cmp - "$d/vposteriors.arrows"
echo "posteriors of the merged Vecchia cloud: byte-identical"

echo "== gpc-tune's grid (6 x 5 points) in a 4-task job array on Slurm, merged, against the unsharded grid; then gpc-tune --from the merged grid, against the unsharded run's whole output"
tune=(--standardize --alpha 2:64:6 --beta 1e2:1e6:5 --samples 500 --train examples/crabs/train.csv)
GPC_CHECK=1 timeout 300 "$run" gpc-tune 4 "$d/grid.arrows" "${tune[@]}" --exploit 0 --no-optimize
gpc-tune "${tune[@]}" --exploit-samples 5000 --format arrow > "$d/tune.arrows"
gpc-tune "${tune[@]}" --exploit-samples 5000 --format arrow --from "$d/grid.arrows" | cmp - "$d/tune.arrows"
gpc-show "$d/tune.arrows" --format csv | grep '^optimum'
echo "gpc-tune --from the sharded grid: byte-identical to the unsharded run, its maximum included"

echo "== a task killed (SIGKILL) while it computes: run.sh fails, naming it and the kept shard directory; the merge cancelled; an older output left as it was"
echo "an older output" > "$out"
cp "$out" "$d/older"
bg kill "$run" gpc-orthant 4 "$out" "${oargs[@]}"
kill -KILL "$(running gpc-orthant 1/4)"
finish kill 1
has kill "shard 1 (job $(array kill)_1): FAILED, exit 137 (the tool killed by signal 9)"
has kill "the merge (job"
has kill "CANCELLED (DependencyNeverSatisfied)"
has kill "$out was not written"
has kill "failed shards: 1; the complete shards and the logs are kept in $dir"
cmp "$out" "$d/older" || fail "run.sh changed $out"
[ -s "$dir/shard-0.arrows" ] && [ -s "$dir/shard-2.arrows" ] && [ -s "$dir/shard-3.arrows" ] && [ ! -e "$dir/shard-1.arrows" ] || fail "the shards kept are not 0, 2 and 3: $(ls -A "$dir")"

echo "== the same directory for another run (another seed: its plan; another K: its shards): refused"
bg seed "$run" gpc-orthant 4 "$out" "${oargs[@]}" --seed 2
finish seed 1
has seed "$dir was left by another run"
bg k3 "$run" gpc-orthant 3 "$out" "${oargs[@]}"
finish k3 1
has k3 "$dir/shard-0.arrows is shard 0/4 of another run"
if grep -q '^run\.sh: job' "$d/seed.err" "$d/k3.err"; then fail "a refused run submitted a job"; fi

echo "== the same command again, shard 3 cut short meanwhile: only shards 1 and 3 are submitted; the merge is byte-identical to the unsharded run"
head -c 2000 "$dir/shard-3.arrows" > "$d/cut" && mv "$d/cut" "$dir/shard-3.arrows"
bg resume "$run" gpc-orthant 4 "$out" "${oargs[@]}"
finish resume 0
has resume "$dir/shard-3.arrows is not a complete shard: computing it again"
has resume "reusing the 2 complete shards of this run in $dir (0 2); computing 2 (1 3)"
tasks=$(scontrol show job -o "$(array resume)" | grep -o 'ArrayTaskId=[^ ]*' | sort | tr '\n' ' ')
[ "$tasks" = "ArrayTaskId=1 ArrayTaskId=3 " ] || fail "the resumed run's array ran $tasks"
cmp "$out" "$d/ref.arrows"
[ ! -e "$dir" ] || fail "$dir was not removed after the success"
echo "byte-identical to the unsharded run"

echo "== a task sent SIGTERM (scancel --batch --signal=TERM: what --signal=B:TERM@T delivers): the tool stops, exit 130, no shard left; resumed, byte-identical"
rm -f "$out"
bg term "$run" gpc-orthant 4 "$out" "${oargs[@]}"
p=$(running gpc-orthant 2/4)
busy "$p" # past the tool's start, when it catches signals (before, SIGTERM kills it: exit 143)
hold "$p"
scancel --batch --signal=TERM "$(array term)_2"
release "$p"
finish term 1
has term "shard 2 (job $(array term)_2): FAILED, exit 130 (interrupted: SIGTERM or SIGINT): gpc-orthant: interrupted"
! kill -0 "$p" 2>/dev/null || fail "the tool of shard 2 still runs"
if ls -A "$dir" | grep -q 'shard-2'; then fail "shard 2 left a file: $(ls -A "$dir")"; fi
bg termresume "$run" gpc-orthant 4 "$out" "${oargs[@]}"
finish termresume 0
cmp "$out" "$d/ref.arrows"
echo "byte-identical to the unsharded run"

echo "== a running task requeued (scontrol requeue; released 2 s later: StartTime=now): it starts over; byte-identical"
rm -f "$out"
bg requeue "$run" gpc-orthant 4 "$out" "${oargs[@]}"
running gpc-orthant 1/4 >/dev/null
a=$(array requeue)
scontrol requeue "${a}_1"
pending "${a}_1"
# slurmd refuses a task launched within a second or so of its requeue
# (its credential was revoked at a one-second resolution: "Job credential
# revoked", the task then fails with exit 1): release it after that.
sleep 2
scontrol update JobId="${a}_1" StartTime=now
restarted requeue "${a}_1"

echo "== run.sh interrupted (^C: SIGINT) while its tasks run: it cancels its jobs and exits 130, the shard directory kept"
rm -f "$out"
set -m # the run in its own process group, SIGINT not ignored, as in a terminal
bg int "$run" gpc-orthant 4 "$out" "${oargs[@]}"
set +m
running gpc-orthant 0/4 >/dev/null
a=$(array int)
kill -INT "$(pgrep -P "${bgpids[-1]}")"
finish int 130
has int "interrupted: jobs"
for _ in $(seq 100); do squeue -h -j "$a" 2>/dev/null | grep -q . || break; sleep 0.1; done
! squeue -h -j "$a" 2>/dev/null | grep -q . || fail "run.sh left its jobs in the queue: $(squeue -j "$a")"
[ -s "$dir/plan.arrows" ] || fail "the shard directory was not kept"
rm -rf "$dir"

echo "== the whole array cancelled (scancel): run.sh fails; an existing output is left as it was"
echo "an older output" > "$out"
cp "$out" "$d/older"
bg cancel "$run" gpc-orthant 4 "$out" "${oargs[@]}"
p=$(running gpc-orthant 0/4)
busy "$p" # past the tool's start, when it catches signals
hold "$p"
scancel "$(array cancel)"
release "$p"
finish cancel 1
has cancel "shard 0 (job $(array cancel)_0): CANCELLED, exit 130"
has cancel "shard 3 (job $(array cancel)_3): CANCELLED"
has cancel "$out was not written"
cmp "$out" "$d/older"
rm -rf "$dir" "$out"

echo "== GNU parallel (the docs' recipe): --halt now,fail=1 --joblog --resume-failed; a shard killed makes it fail; the same command again runs what did not finish; merged, byte-identical"
mkdir "$d/parallel"
gpc-orthant --prepare-only --samples 200000 "$d/cov500.arrows" > "$d/plan.arrows"
shard="gpc-orthant --plan $d/plan.arrows --shard {}/4 --samples 200000 --threads 1 $d/cov500.arrows > $d/parallel/.shard-{}.part && mv $d/parallel/.shard-{}.part $d/parallel/shard-{}.arrows"
bg par parallel --will-cite -j 2 --halt now,fail=1 --joblog "$d/parallel/.joblog" --resume-failed "$shard" ::: 0 1 2 3
kill -KILL "$(running gpc-orthant 2/4)"
finish par 137
alive=$(ps -C gpc-orthant -o pid=,stat= | awk '$2 !~ /Z/') || true # not counting those not yet reaped
[ -z "$alive" ] || fail "parallel left shards running: $alive"
[ ! -e "$d/parallel/shard-2.arrows" ] || fail "the killed shard 2 left a shard"
bg parresume parallel --will-cite -j 2 --halt now,fail=1 --joblog "$d/parallel/.joblog" --resume-failed "$shard" ::: 0 1 2 3
finish parresume 0
awk 'NR > 1 && $7 == 0 { print $1 }' "$d/parallel/.joblog" | sort | uniq -d | grep -q . && fail "a finished shard ran again: $(cat "$d/parallel/.joblog")"
[ "$(awk 'NR > 1 && $7 == 0' "$d/parallel/.joblog" | wc -l)" = 4 ] || fail "not 4 shards finished: $(cat "$d/parallel/.joblog")"
gpc-merge "$d"/parallel/shard-*.arrows > "$d/par.arrows.part" && mv "$d/par.arrows.part" "$d/par.arrows"
cmp "$d/par.arrows" "$d/ref.arrows"
echo "byte-identical to the unsharded run"

echo "== the time limit run, started at the beginning"
finish timeout 1
has timeout "shard 0 (job $(array timeout)_0): TIMEOUT, exit 130"
has timeout "gpc-tune: interrupted"
if ls -A "$d/timeout" | grep -q 'shard-0'; then fail "the timed-out shard left a file: $(ls -A "$d/timeout")"; fi
