#!/usr/bin/env bash
# The installed package as an engine's project sees it: `cmake --install` of this build into a
# fresh prefix, then examples/consumer configured with find_package(moeoracle) against that prefix
# alone (not the build tree), built, and run (the f64 truth of one op, and compare on lavapipe).
# Usage: install_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cmake --install "$build" --prefix "$dir/prefix" >/dev/null
test -x "$dir/prefix/bin/moeoracle" || { echo "FAIL: no bin/moeoracle in the prefix"; exit 1; }
test -f "$dir/prefix/lib/cmake/moeoracle/moeoracleConfig.cmake" -o -f "$dir/prefix/lib/x86_64-linux-gnu/cmake/moeoracle/moeoracleConfig.cmake" ||
  find "$dir/prefix" -name moeoracleConfig.cmake | grep -q . || { echo "FAIL: no package config"; exit 1; }
"$dir/prefix/bin/moeoracle" --version
# The source tree must not leak in: the consumer is copied out and sees only the prefix.
cp -r "$src/examples/consumer" "$dir/consumer"
cmake -S "$dir/consumer" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$dir/prefix" >/dev/null
cmake --build "$dir/build" -j2 >/dev/null
if grep -rqF "$src" "$dir/build/CMakeCache.txt" "$dir/build/CMakeFiles/consumer.dir/flags.make"; then
  echo "FAIL: the consumer's build refers to the source tree $src"; exit 1
fi
"$dir/build/consumer"
# The Python package, where the build has it, imports from the prefix alone (no build tree on the path).
if [ -d "$build/python/moeoracle" ]; then
  site=$(find "$dir/prefix" -type d -name dist-packages | head -1)
  [ -n "$site" ] && [ -d "$site/moeoracle" ] || { echo "FAIL: no moeoracle package under $dir/prefix"; exit 1; }
  (cd "$dir" && PYTHONPATH="$site" /usr/bin/python3 -c "import moeoracle, sys; assert moeoracle.__file__.startswith(sys.argv[1]), moeoracle.__file__; print('python: moeoracle from', moeoracle.__file__)" "$site")
fi
echo "install and consumer: ok"
