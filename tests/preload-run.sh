#!/bin/sh
# Unmodified binaries under LD_PRELOAD=libmarcel-preload.so: tests/preload-prog.c (C),
# preload-cxx.cc (std::thread and friends) and preload-omp.c (OpenMP), built here with
# plain `cc -pthread` / `c++ -pthread` (no marcel header, no marcel library), each mode
# on one VP, on this machine and on the synthetic 32-PU machine. Each run must exit 0
# with its "ok" line; the programs ask libmarcel (dlsym) whether their threads are
# marcel's, and fail without the preload (checked too).
set -u
top_builddir=${top_builddir:-..}
srcdir=${srcdir:-.}
lib=$top_builddir/preload/.libs/libmarcel-preload.so
libdir=$top_builddir/marcel/.libs
work=preload-run.d
fail=0

# A sanitizer build's libmarcel needs its sanitizer runtime loaded first, which a program
# built without it does not have: AddressSanitizer refuses to start ("ASan runtime does
# not come first"; preloading libasan.so first crashes in its interceptors), and with
# ThreadSanitizer the program crashes at start (its runtime is initialised too late);
# their pthread_create interceptors would also wrap marcel's threads in kernel-thread
# state of their own. The interposer is tested in the default and ucontext builds.
for so in "$lib" "$libdir/libmarcel.so"; do
	if readelf -d "$so" 2>/dev/null | grep -q 'NEEDED.*lib\(asan\|tsan\|ubsan\|hwasan\)'; then
		echo "preload-run: skipped: $(basename "$so") is built with a sanitizer runtime, which cannot be preloaded into an uninstrumented program"
		exit 77
	fi
done

rm -rf "$work" && mkdir -p "$work"
cc -O2 -Wall -Werror -pthread "$srcdir/preload-prog.c" -o "$work/prog" -ldl || exit 1
c++ -O2 -Wall -Werror -pthread "$srcdir/preload-cxx.cc" -o "$work/cxx" -ldl || exit 1
have_omp=0
cc -O2 -Wall -Werror -fopenmp "$srcdir/preload-omp.c" -o "$work/omp" 2>/dev/null && have_omp=1

check() { # label, expected text, command... (under the preload)
	label=$1 want=$2
	shift 2
	out=$(env LD_LIBRARY_PATH="$libdir" LD_PRELOAD="$lib" timeout 120 "$@" 2>&1)
	st=$?
	case $out in
	*"$want"*) ok=1 ;;
	*) ok=0 ;;
	esac
	if [ $st -ne 0 ] || [ $ok -ne 1 ]; then
		echo "preload-run ($label): exit $st, expected \"$want\""
		echo "$out"
		fail=1
	else
		echo "preload-run ($label): ok"
	fi
}

synth="pack:2 numa:2 core:4 pu:2"
for mode in handoff prodcons pool many sync mainexit; do
	check "$mode, 1 VP" "preload-prog $mode" env MARCEL_NVP=1 "$work/prog" $mode
	check "$mode, default" "preload-prog $mode" "$work/prog" $mode
	check "$mode, synthetic 32 PUs" "preload-prog $mode" env MARCEL_TOPOLOGY="$synth" "$work/prog" $mode
done
# With time slicing (the default is cooperative): threads switched out anywhere, where
# marcel can preempt (not on the portable ucontext build, which refuses it and says so).
slice="MARCEL_TIMESLICE=1000"
why=$(env LD_LIBRARY_PATH="$libdir" LD_PRELOAD="$lib" $slice MARCEL_NVP=1 timeout 120 "$work/prog" handoff 2>&1 |
	grep "$slice:")
if [ -n "$why" ]; then
	echo "preload-run (time slice): skipped: $why"
	slice=
else
	for mode in handoff prodcons sync; do
		check "$mode, 1 VP, 1 ms time slice" "preload-prog $mode" env MARCEL_NVP=1 $slice "$work/prog" $mode
	done
fi
# The threads were made by marcel (the report counts them) and the refused calls say so.
check "report" "marcel-preload: 64 threads created as marcel threads" env MARCEL_PRELOAD_REPORT=1 "$work/prog" handoff
check "refusals on stderr" "pthread_mutexattr_setrobust(PTHREAD_MUTEX_ROBUST) on marcel threads" "$work/prog" sync
check "C++, 1 VP" "preload-cxx: 57 std::threads on marcel: ok" env MARCEL_NVP=1 "$work/cxx"
check "C++, default" "preload-cxx: 57 std::threads on marcel: ok" "$work/cxx"
[ -n "$slice" ] && check "C++, 2 VPs, 1 ms time slice" "preload-cxx: 57 std::threads on marcel: ok" env MARCEL_NVP=2 $slice "$work/cxx"
check "C++, synthetic 32 PUs" "preload-cxx: 57 std::threads on marcel: ok" env MARCEL_TOPOLOGY="$synth" "$work/cxx"

# Without the preload the same binary runs on kernel threads, which it notices.
if out=$("$work/prog" handoff 2>&1); then
	echo "preload-run (no preload): passed, where it must fail"
	echo "$out"
	fail=1
else
	echo "preload-run (no preload): fails as it must"
fi

if [ $have_omp -eq 1 ]; then
	# One OpenMP thread per VP or fewer works; more hang (libgomp's futex waits block
	# the VPs, doc/porting.md), which the preload says at start-up.
	check "OpenMP, 1 thread, 1 VP" "preload-omp: 1 threads: ok" env MARCEL_NVP=1 OMP_NUM_THREADS=1 "$work/omp"
	check "OpenMP warning" "marcel-preload: warning: this program uses OpenMP" \
		env MARCEL_NVP=1 OMP_NUM_THREADS=4 "$work/omp" probe
else
	echo "preload-run (OpenMP): skipped: cc -fopenmp does not work here"
fi
[ $fail -eq 0 ] && rm -rf "$work"
exit $fail
