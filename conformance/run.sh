#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the conformance tests and print KTAP, as kselftest's runner does.
#
#   run.sh [-t SECONDS] [-l] [TEST...]
#
#   -t SECONDS  per-test timeout (default $CT_TIMEOUT or 120); the test gets
#               SIGTERM, then SIGKILL 5 s later.  Each test also has its own
#               internal watchdog, shorter than this.
#   -l          list the tests and exit
#   TEST        run only these (names as in bin/, e.g. pipe_order)
#
# Environment:
#   CT_BINDIR          where the binaries are (default: bin/ beside this script)
#   CT_TMPDIR          parent for temporary files (default: $TMPDIR or /tmp)
#   CT_STRESS_ARGS     extra options for the stress_* tests, e.g.
#                      "--duration 30 --writers 16 --readers 4 --tolerate-enomem"
#   CT_ARGS_<test>     extra options for that test alone, after CT_STRESS_ARGS,
#                      e.g. CT_ARGS_stress_pipe_integrity="--record-size 65536
#                      --writers 1 --readers 1"
#   CT_WATCHDOG_SCALE  multiply every internal watchdog and the per-test timeout
#                      (default 25 when IPCBENCH_ACCEL=tcg, as the lab sets in guests)
#   CT_SEED            seed for the tests that draw random numbers
#
# Exit status: 0 when nothing failed, 1 otherwise.  Works read-only: it writes
# only under the temporary directory, so it runs inside a virtme-ng guest.
set -u

here=$(cd "$(dirname "$0")" && pwd)
bindir=${CT_BINDIR:-$here/bin}
timeout_s=${CT_TIMEOUT:-120}
list=0

usage() {
	echo "usage: run.sh [-t SECONDS] [-l] [TEST...]" >&2
	exit 2
}

while getopts "t:lh" opt; do
	case $opt in
	t) timeout_s=$OPTARG ;;
	l) list=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))

case $timeout_s in
''|*[!0-9]*) echo "run.sh: -t wants whole seconds, got '$timeout_s'" >&2; exit 2 ;;
esac

if [ ! -d "$bindir" ]; then
	echo "run.sh: no binaries in $bindir; run 'make -C conformance' first" >&2
	exit 2
fi

tests=()
if [ $# -gt 0 ]; then
	for t in "$@"; do
		t=$(basename "$t")
		if [ ! -x "$bindir/$t" ]; then
			echo "run.sh: no such test: $t" >&2
			exit 2
		fi
		tests+=("$t")
	done
else
	for f in "$bindir"/*; do
		[ -f "$f" ] && [ -x "$f" ] && tests+=("$(basename "$f")")
	done
fi

if [ $list -eq 1 ]; then
	printf '%s\n' "${tests[@]}"
	exit 0
fi

tmp_parent=${CT_TMPDIR:-${TMPDIR:-/tmp}}
work=$(mktemp -d "$tmp_parent/ipclab-conformance.XXXXXX") || {
	echo "run.sh: cannot create a temporary directory under $tmp_parent" >&2
	exit 2
}
trap 'rm -rf "$work"' EXIT
export CT_TMPDIR=$work

read -r -a stress_args <<< "${CT_STRESS_ARGS:-}"

# Under QEMU TCG everything runs about 25x slower (docs/lab.md): stretch the
# tests' own watchdogs and our per-test timeout by the same factor, unless told.
if [ -z "${CT_WATCHDOG_SCALE:-}" ] && [ "${IPCBENCH_ACCEL:-}" = tcg ]; then
	export CT_WATCHDOG_SCALE=25
fi
if [ -n "${CT_WATCHDOG_SCALE:-}" ]; then
	timeout_s=$(awk -v t="$timeout_s" -v k="$CT_WATCHDOG_SCALE" \
		'BEGIN { k = k + 0; if (k < 1) k = 1; printf "%d", t * k + 0.5 }')
fi

pass=0 fail=0 skip=0 error=0 n=0
echo "TAP version 13"
echo "1..${#tests[@]}"
for t in "${tests[@]}"; do
	n=$((n + 1))
	out=$work/$t.out
	args=()
	case $t in stress_*) args=("${stress_args[@]}") ;; esac
	own_var=CT_ARGS_$t
	read -r -a own_args <<< "${!own_var:-}"
	args+=("${own_args[@]}")
	echo "# $t"
	# The subshell keeps bash's own "Segmentation fault" notices out of the KTAP.
	( timeout -k 5 "$timeout_s" "$bindir/$t" "${args[@]}" > "$out" 2>&1 < /dev/null; exit $? ) 2> /dev/null
	rc=$?
	while IFS= read -r line; do
		case $line in
		'#'*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done < "$out"
	case $rc in
	0)	echo "ok $n $t"; pass=$((pass + 1)) ;;
	77)	reason=$(sed -n 's/^# SKIP //p' "$out" | head -n 1)
		echo "ok $n $t # SKIP ${reason:-skipped}"; skip=$((skip + 1)) ;;
	1)	echo "not ok $n $t"; fail=$((fail + 1)) ;;
	124|137)
		echo "not ok $n $t # TIMEOUT $timeout_s seconds"; fail=$((fail + 1)) ;;
	*)	if [ "$rc" -gt 128 ]; then
			echo "not ok $n $t # killed by signal $((rc - 128))"
			fail=$((fail + 1))
		else
			echo "not ok $n $t # error: exit $rc"
			error=$((error + 1))
		fi ;;
	esac
done
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:$error"
[ $fail -eq 0 ] && [ $error -eq 0 ]
