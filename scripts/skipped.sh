#!/bin/sh
# The tests that could not check what they are for, counted, with why
# (helpers::skip appends them to target/skipped-tests.txt), then the list
# emptied for the next run. The README's test command ends with it:
# `cargo test ...; scripts/skipped.sh $?` exits with cargo's status.
status="${1:-0}"
cd "$(dirname "$0")/.."
file=target/skipped-tests.txt
echo
n=$( [ -f "$file" ] && wc -l < "$file" | tr -d ' ' || echo 0)
if [ "$n" -eq 0 ]; then
  echo "skipped: none"
else
  echo "skipped: $n test(s) could not check what they are for:"
  sort "$file" | sed 's/^/  /'
fi
rm -f "$file"
exit "$status"
