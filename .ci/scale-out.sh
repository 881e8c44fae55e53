#!/usr/bin/env bash
# A one-node Slurm for the tests, started and stopped here (as root,
# without systemd): munged as the munge user, slurmctld and slurmd, on
# their own ports, with their configuration, state and logs in a
# temporary directory (SLURM_CONF points the clients at it). Then the
# sharded runs of examples/slurm/ on it, each merged and compared byte for
# byte with the unsharded run (gpc-orthant, gpc-train then gpc-predict,
# gpc-predict by test rows, gpc-tune's grid); and the orthant run driven by GNU parallel.
# Installs Debian's Slurm, munge and parallel if missing. Usage:
# .ci/scale-out.sh (with the tools built in bin/).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/bin:$PATH

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null || ! command -v parallel >/dev/null; then
  apt-get update -qq && apt-get install -y -qq slurmctld slurmd slurm-client munge parallel >/dev/null
fi

d=$(mktemp -d /tmp/gpc-slurm.XXXXXX)
chmod 755 "$d"
host=$(hostname -s)
pids=()
stop() {
  rc=$?
  if [ "$rc" -ne 0 ]; then # the daemons' logs, to see why
    for f in "$d"/*.out "$d"/*.log "$d"/munge/munged.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done
  fi
  # slurmd and slurmctld, then munged (by its pid file, so that su, its
  # parent here, sees it exit), and wait for each.
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -s "$d/munge/munged.pid" ] && kill "$(cat "$d/munge/munged.pid")" 2>/dev/null || true
  wait || true
  rm -rf "$d"
}
trap stop EXIT

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

mkdir -p "$d/state" "$d/spool"
export SLURM_CONF=$d/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=gpcci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=16817
SlurmdPort=16818
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
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
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

# An N = 500 GP-classification covariance: exp4's 400 patterns and 100 of
# them moved a little.
{ cat examples/exp4/train.csv; tail -n +2 examples/exp4/test.csv
  tail -n +2 examples/exp4/train.csv | head -100 | awk -F, '{ printf "%.6f,%.6f,%s\n", $1 + 0.01, $2 - 0.01, $3 }'; } > "$d/train500.csv"
gpc-kernel --standardize --alpha 1 --beta 10 --train "$d/train500.csv" > "$d/cov500.arrows"

echo "== gpc-orthant prepared once by a Slurm job, then a 4-task job array reading its plan (N = 500), merged, against the unsharded run"
GPC_CHECK=1 timeout 300 examples/slurm/run.sh gpc-orthant 4 "$d/merged.arrows" "$d/cov500.arrows"

echo "== gpc-train prepared once, then a 4-task job array on Slurm (4 sub-clouds), merged, predicted, against the unsharded gpc-train | gpc-predict"
gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv > "$d/crabs.arrows"
GPC_CHECK=1 timeout 300 examples/slurm/run.sh gpc-train 4 "$d/cloud.arrows" --samples 20000 "$d/crabs.arrows"
gpc-train --samples 20000 "$d/crabs.arrows" | gpc-predict --format arrow > "$d/posteriors.arrows"
gpc-predict --format arrow "$d/cloud.arrows" | cmp - "$d/posteriors.arrows"
echo "posteriors of the merged cloud: byte-identical"
echo "== gpc-predict on the merged cloud in a 4-task job array (by test rows), merged, against the unsharded posteriors"
GPC_CHECK=1 timeout 300 examples/slurm/run.sh gpc-predict 4 "$d/posteriors-sharded.arrows" "$d/cloud.arrows"

echo "== gpc-tune's grid (6 x 5 points) in a 4-task job array on Slurm, merged, against the unsharded grid"
GPC_CHECK=1 timeout 300 examples/slurm/run.sh gpc-tune 4 "$d/grid.arrows" --standardize --alpha 2:64:6 --beta 1e2:1e6:5 --samples 500 --exploit 0 --no-optimize --train examples/crabs/train.csv

echo "== the orthant run prepared once (--prepare-only), in 4 shards that read the plan, driven by GNU parallel (docs/scale-out.md), merged, against the unsharded run"
mkdir "$d/parallel"
gpc-orthant --prepare-only "$d/cov500.arrows" > "$d/plan.arrows"
parallel --will-cite "gpc-orthant --plan $d/plan.arrows --shard {}/4 --format arrow $d/cov500.arrows > $d/parallel/shard-{}.arrows" ::: 0 1 2 3
gpc-merge --format arrow "$d/parallel" | cmp - "$d/merged.arrows"
echo "byte-identical to the unsharded run"
