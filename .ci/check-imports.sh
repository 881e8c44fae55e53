#!/usr/bin/env bash
# Import rules of STYLE.md section 1: cmd -> internal/cli -> format -> core;
# format is the only importer of Arrow; core and its sub-packages do
# numerics only (no Arrow, no kong, no I/O; of the project they import only
# core's packages and internal/gemm, the matrix kernel).
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
for pkg in $(go list ./...); do
  imports=$(go list -f '{{join .Imports "\n"}}' "$pkg")
  case "$pkg" in
    github.com/gpc-mc/gpc/format) ;;
    *) if grep -q '^github.com/apache/arrow' <<<"$imports"; then echo "$pkg imports Arrow: only github.com/gpc-mc/gpc/format may"; fail=1; fi ;;
  esac
  case "$pkg" in
    github.com/gpc-mc/gpc/internal/cli) ;;
    *) if grep -q '^github.com/alecthomas/kong' <<<"$imports"; then echo "$pkg imports kong: only github.com/gpc-mc/gpc/internal/cli may"; fail=1; fi ;;
  esac
done
# core and its sub-packages (gp, fit, ...): numerics only; of the project
# they import only core's own packages and internal/gemm.
for pkg in $(go list ./core/...); do
  imports=$(go list -f '{{join .Imports "\n"}}' "$pkg")
  bad=$(grep -E '^(io|os|bufio|net|net/.*|encoding/.*|io/.*|os/.*|github.com/gpc-mc/gpc/.*|github.com/.*)$' <<<"$imports" | grep -vE '^(github.com/gpc-mc/gpc/internal/gemm|github.com/gpc-mc/gpc/core(/.*)?)$' || true)
  if [ -n "$bad" ]; then echo "$pkg imports I/O or project packages: $bad"; fail=1; fi
done
fmtimp=$(go list -f '{{join .Imports "\n"}}' ./format)
if grep -q '^github.com/gpc-mc/gpc/internal' <<<"$fmtimp"; then echo "format imports internal packages"; fail=1; fi
exit $fail
