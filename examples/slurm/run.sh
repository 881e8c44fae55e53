#!/usr/bin/env bash
# A sharded gpc-orthant run on Slurm: a job array of K tasks of one core,
# each estimating a K-th of the particle groups, then a merge job that
# depends on them. Adapt the partition, K and the input to your cluster;
# the tools must be on the PATH of the compute nodes and the shard
# directory on a file system they share.
#
#   examples/slurm/run.sh K INPUT OUTPUT [gpc-orthant flags...]
#
# With GPC_CHECK=1 it also runs the unsharded estimate here and compares
# the merged output with it byte for byte (what .ci/scale-out.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
k=$1 input=$(realpath "$2") out=$3
shift 3
export GPC_SHARDS=$(mktemp -d "${TMPDIR:-/tmp}/gpc-shards.XXXXXX")
export GPC_OUT=$(realpath -m "$out")
trap 'rm -rf "$GPC_SHARDS"' EXIT
array=$(sbatch --parsable --export=ALL --array=0-$((k - 1)) "$here/orthant.sbatch" "$@" "$input")
sbatch --parsable --wait --export=ALL --dependency=afterok:"$array" "$here/merge.sbatch" >/dev/null
echo "merged $k shards of job $array into $out"
if [ "${GPC_CHECK:-0}" = 1 ]; then
  gpc-orthant --format arrow "$@" "$input" | cmp - "$GPC_OUT"
  echo "byte-identical to the unsharded run"
fi
