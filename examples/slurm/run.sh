#!/usr/bin/env bash
# A sharded gpc-orthant, gpc-train, gpc-predict or gpc-tune run on Slurm:
# for gpc-orthant and gpc-train first one job that prepares (prepare.sbatch),
# then a job array of K tasks of one core, each computing a K-th of the
# particle groups (of the test rows for gpc-predict, of the grid points
# for gpc-tune), then a merge job that depends on them. Adapt the partition, K and the input to your
# cluster; the tools must be on the PATH of the compute nodes and the
# shard directory on a file system they share.
#
#   examples/slurm/run.sh TOOL K OUTPUT [TOOL's arguments...]
#   examples/slurm/run.sh gpc-orthant 4 logp.arrows --samples 1000000 cov.arrows
#   examples/slurm/run.sh gpc-train 4 cloud.arrows --samples 1000000 cov.arrows
#   examples/slurm/run.sh gpc-predict 4 posteriors.arrows cloud.arrows
#   examples/slurm/run.sh gpc-tune 4 grid.arrows --alpha 1:100:20 --beta 1:1e6:20 --exploit 0 --no-optimize --train train.csv
#
# The tasks run in the directory sbatch was called from (Slurm's default),
# so relative paths work where it is on the shared file system.
#
# With GPC_CHECK=1 it also runs the unsharded TOOL here and compares the
# merged output with it byte for byte (what .ci/scale-out.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tool=$1 k=$2 out=$3
shift 3
export GPC_SHARDS=$(mktemp -d "${TMPDIR:-/tmp}/gpc-shards.XXXXXX")
export GPC_OUT=$(realpath -m "$out")
trap 'rm -rf "$GPC_SHARDS"' EXIT
# gpc-orthant and gpc-train prepare once, in a job of its own, and the
# array's tasks read its plan (--plan): no shard redoes the preparation.
plan=() after=()
case $tool in
gpc-orthant | gpc-train)
  prepare=$(sbatch --parsable --export=ALL "$here/prepare.sbatch" "$tool" "$@")
  plan=(--plan "$GPC_SHARDS/plan.arrows")
  after=(--dependency=afterok:"$prepare")
  ;;
esac
array=$(sbatch --parsable --export=ALL --kill-on-invalid-dep=yes "${after[@]}" --array=0-$((k - 1)) "$here/shard.sbatch" "$tool" "${plan[@]}" "$@")
sbatch --parsable --wait --export=ALL --kill-on-invalid-dep=yes --dependency=afterok:"$array" "$here/merge.sbatch" >/dev/null
echo "merged $k shards of $tool (job $array) into $out"
if [ "${GPC_CHECK:-0}" = 1 ]; then
  "$tool" --format arrow "$@" | cmp - "$GPC_OUT"
  echo "byte-identical to the unsharded run"
fi
