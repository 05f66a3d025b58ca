# Shared by the CLI test scripts (source it after setting $dir, a scratch directory):
#   check NAME WANT_RC COMMAND...   runs COMMAND, expects exit code WANT_RC, keeps its output
#   expect_text NAME TEXT           the last command's output contains TEXT
#   expect_no_text NAME TEXT        it does not
# Each failure prints FAIL with the output's last lines and sets fail=1.
fail=0
check() {
  local name=$1 want=$2
  shift 2
  "$@" >"$dir/out.txt" 2>&1
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; sed 's/^/    /' "$dir/out.txt" | tail -8; fail=1
  else
    echo "ok   $name"
  fi
}
expect_text() {
  if ! grep -qF -- "$2" "$dir/out.txt"; then
    echo "FAIL $1: output lacks '$2'"; sed 's/^/    /' "$dir/out.txt" | tail -8; fail=1
  fi
}
expect_no_text() {
  if grep -qF -- "$2" "$dir/out.txt"; then
    echo "FAIL $1: output has '$2'"; sed 's/^/    /' "$dir/out.txt" | tail -8; fail=1
  fi
}
