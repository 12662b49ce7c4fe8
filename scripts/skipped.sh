#!/bin/sh
# The tests that could not check what they are for, counted, with why
# (helpers::skip appends them to target/skipped-tests.txt).
cd "$(dirname "$0")/.."
file=target/skipped-tests.txt
n=$( [ -f "$file" ] && wc -l < "$file" | tr -d ' ' || echo 0)
if [ "$n" -eq 0 ]; then
  echo "skipped: none"
else
  echo "skipped: $n test(s) could not check what they are for:"
  sort "$file" | sed 's/^/  /'
fi
