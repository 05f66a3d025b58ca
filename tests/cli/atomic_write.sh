#!/usr/bin/env bash
# Files appear whole or not at all (oracle/atomic_file.h), seen from the command line on a full
# disk: a 1 MB tmpfs. Every write that does not fit exits 2 with a message naming the file and
# "No space left on device", leaves the older file at the path as it was, and leaves no temporary
# (.<name>.moeoracle-tmp.*) behind. Mounting needs root (CI and the dev machines run as root);
# where it is not permitted the test is skipped (exit 77) and says why.
set -u
bin=$1
dir=$(mktemp -d)
full=$dir/full
mkdir "$full"
if ! mount -t tmpfs -o size=1m tmpfs "$full" 2>"$dir/mount.err"; then
  echo "SKIP: cannot mount a 1 MB tmpfs at $full: $(cat "$dir/mount.err"); the full-disk test needs root and mount permission"
  rm -rf "$dir"
  exit 77
fi
trap 'umount -l "$full"; rm -rf "$dir"' EXIT
# check and expect_text: tests/cli/check_lib.sh
. "$(dirname "$0")/check_lib.sh"
no_temporaries() {  # no_temporaries NAME : nothing named *.moeoracle-tmp.* on the tmpfs
  local left
  left=$(find "$full" -name '*.moeoracle-tmp.*' | head -3)
  if [ -n "$left" ]; then echo "FAIL $1: temporaries left: $left"; fail=1; fi
}
unchanged() {  # unchanged NAME FILE COPY : FILE is still byte for byte COPY
  if ! cmp -s "$2" "$3"; then echo "FAIL $1: $2 changed"; fail=1; fi
}
enospc() {  # enospc NAME FILE : the last command said it could not write FILE: disk full
  expect_text "$1" "$2: cannot write"
  expect_text "$1" "No space left on device"
}

# The older files, written while there is room.
check fixture 0 "$bin" fixture --preset tiny --out "$dir/m"
check old_dump 0 "$bin" run --model "$dir/m" --tokens 1,2 --taps logits --dump "$full/d.st"
check old_snapshot 0 "$bin" run --model "$dir/m" --tokens 1,2 --snapshot-out "$full/s.bin"
cp "$full/d.st" "$dir/d.orig"
cp "$full/s.bin" "$dir/s.orig"

# Fill the disk, then give back 8 KB: new files that need more fail part-way.
cat /dev/zero >"$full/filler" 2>/dev/null
truncate -s -8K "$full/filler"

check dump_full 2 "$bin" run --model "$dir/m" --tokens 1,2,3,4,5,6,7,8 --dump "$full/d.st"
enospc dump_full "$full/d.st"
unchanged dump_full "$full/d.st" "$dir/d.orig"
check snapshot_full 2 "$bin" run --model "$dir/m" --tokens 1,2,3 --snapshot-out "$full/s.bin"
enospc snapshot_full "$full/s.bin"
unchanged snapshot_full "$full/s.bin" "$dir/s.orig"
check fixture_mlx_full 2 "$bin" fixture --preset tiny --out "$full/fx"
expect_text fixture_mlx_full "No space left on device"
[ -e "$full/fx" ] && { echo "FAIL fixture_mlx_full: $full/fx exists"; fail=1; }
check fixture_moeflux_full 2 "$bin" fixture --preset tiny --format moeflux --out "$full/fx"
expect_text fixture_moeflux_full "No space left on device"
[ -e "$full/fx" ] && { echo "FAIL fixture_moeflux_full: $full/fx exists"; fail=1; }

# The reports, where a Vulkan device (lavapipe) is there to produce one.
if "$bin" devices >/dev/null 2>&1; then
  echo '{"old": true}' >"$full/r.json"
  cp "$full/r.json" "$dir/r.orig"
  check report_full 2 "$bin" compare --ops rmsnorm --shapes remainders --no-isolate --json "$full/r.json"
  enospc report_full "$full/r.json"
  unchanged report_full "$full/r.json" "$dir/r.orig"
else
  echo "skip report_full: no Vulkan device"
fi
no_temporaries after_failures

# With room again the same commands write whole files.
rm -f "$full/filler"
check dump_room 0 "$bin" run --model "$dir/m" --tokens 1,2,3,4,5,6,7,8 --dump "$full/d.st"
check inspect 0 "$bin" inspect "$full/d.st"
no_temporaries after_success
exit $fail
