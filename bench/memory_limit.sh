#!/usr/bin/env bash
# Runs COMMAND in a memory cgroup limited to LIMIT_MB (page cache included: the kernel reclaims the
# group's file pages to stay under it), to show that a model larger than the memory it is given
# still runs from its memory-mapped files (docs/resources.md). Prints the group's peak usage and
# how often it hit the limit. Needs root and the cgroup memory controller (v1 or v2).
# Usage: bench/memory_limit.sh LIMIT_MB COMMAND...
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: bench/memory_limit.sh LIMIT_MB COMMAND..." >&2; exit 2; }
limit=$(( $1 * 1024 * 1024 )); shift
name=moeoracle-limit-$$
if [[ -d /sys/fs/cgroup/memory ]]; then  # v1
  cg=/sys/fs/cgroup/memory/$name
  mkdir "$cg"
  echo "$limit" > "$cg/memory.limit_in_bytes"
  peak_file=$cg/memory.max_usage_in_bytes; hits() { cat "$cg/memory.failcnt"; }
elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then  # v2
  cg=/sys/fs/cgroup/$name
  mkdir "$cg"
  echo "$limit" > "$cg/memory.max"
  peak_file=$cg/memory.peak; hits() { awk '$1 == "max" { print $2 }' "$cg/memory.events"; }
else
  echo "memory_limit.sh: no cgroup memory controller here" >&2; exit 2
fi
cleanup() { rmdir "$cg" 2>/dev/null || true; }
trap cleanup EXIT
# A page is charged to the group that first read it: with the model already in the page cache
# (read by an earlier run) the group would be charged nothing. Drop the clean page cache first.
sync
echo 1 > /proc/sys/vm/drop_caches
start=$(date +%s.%N)
rc=0
# The command joins the group before exec: everything it maps is charged there.
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "$@" || rc=$?
secs=$(echo "$(date +%s.%N) - $start" | bc)
peak=$(cat "$peak_file" 2>/dev/null || echo 0)
echo "memory_limit: limit $(( limit / 1048576 )) MB, peak $(( peak / 1048576 )) MB, limit hit $(hits) times, exit $rc, ${secs} s"
exit $rc
