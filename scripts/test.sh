#!/bin/sh
# The tests of every crate, run to the end even when one fails, then the
# tests that could not check what they are for, counted with why (a
# skipped check never reads as a passed one). Arguments go to cargo test.
#
#     scripts/test.sh            # what the README and .ci/run run
#     scripts/test.sh -p wirebench-core
set -u
cd "$(dirname "$0")/.."
mkdir -p target
skipped="$(pwd)/target/skipped-tests.txt"
: > "$skipped"
WIREBENCH_SKIPPED="$skipped" cargo test --workspace --locked --no-fail-fast "$@"
status=$?
n=$(wc -l < "$skipped" | tr -d ' ')
echo
if [ "$n" -eq 0 ]; then
  echo "skipped: none"
else
  echo "skipped: $n test(s) could not check what they are for:"
  sort "$skipped" | sed 's/^/  /'
fi
if [ "$status" -eq 0 ]; then
  echo "tests: passed"
else
  echo "tests: FAILED (exit $status; each crate's tests ran to the end)"
fi
exit "$status"
