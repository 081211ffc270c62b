#!/bin/sh
# A Check test that hangs (tests/hang-target.c) must fail by its time limit, and the log
# must show marcel's threads first (tests/ma_test.h's watchdog), naming the thread the
# test waits for and why it never runs.
set -u
out=$(CK_DEFAULT_TIMEOUT=3 CK_TIMEOUT_MULTIPLIER=1 timeout 60 ./hang-target 2>&1)
st=$?
fail=0
check() { # what, pattern
	case $out in
	*"$2"*) ;;
	*) echo "hang-report: no $1 ('$2')"; fail=1 ;;
	esac
}
[ $st -ne 0 ] || { echo "hang-report: the hanging test passed"; fail=1; }
check "Check timeout" "Test timeout expired"
check "watchdog report" "this test is about to time out; marcel's threads:"
check "line for the waiting main thread" "'main': blocked"
check "line for the thread never started" "'never-started': not started; starts when its bubble"
[ $fail -eq 0 ] || printf '%s\n' "$out"
exit $fail
