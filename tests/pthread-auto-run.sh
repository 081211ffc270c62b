#!/bin/sh
# tests/pthread-auto-*.c, built as a pthread program with the marcel-pthread flags (no
# marcel call in it), on one VP, on this machine and on the synthetic 32-PU machine: it
# must print its result line and exit 0 while its pool's detached workers still poll
# (they polled with usleep, which blocked the only worker, and main's end waited for them).
set -u
prog=./pthread-auto
fail=0
run() { # label, env...
	label=$1
	shift
	out=$(env "$@" timeout 120 $prog 2>&1)
	st=$?
	case $out in
	*"pthread-auto: 200 jobs, sum 20100, on marcel"*) ok=1 ;;
	*) ok=0 ;;
	esac
	if [ $st -ne 0 ] || [ $ok -ne 1 ]; then
		echo "pthread-auto ($label): exit $st"
		echo "$out"
		fail=1
	else
		echo "pthread-auto ($label): ok"
	fi
}
run "1 VP" MARCEL_NVP=1
run "default"
run "synthetic 32 PUs" MARCEL_TOPOLOGY="pack:2 numa:2 core:4 pu:2"
run "1 VP, cooperative" MARCEL_NVP=1 MARCEL_TIMESLICE=0
exit $fail
