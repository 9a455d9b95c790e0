#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run each engine test binary (exit 0 pass, 1 fail, 77 skip) under a timeout,
# print TAP-like lines, and end with the plain "N passed, N failed" line.
set -u
pass=0 fail=0 skip=0
export IPCBENCH=${IPCBENCH:-$(dirname "$0")/../ipcbench}
for t in "$@"; do
	name=$(basename "$t")
	out=$(timeout -k 5 120 "$t" 2>&1)
	rc=$?
	case $rc in
	0)	pass=$((pass + 1)); echo "ok - $name" ;;
	77)	skip=$((skip + 1)); echo "ok - $name # SKIP ${out##*$'\n'}" ;;
	*)	fail=$((fail + 1)); echo "not ok - $name (exit $rc)"; printf '%s\n' "$out" | sed 's/^/#   /' ;;
	esac
done
echo "engine tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
