#!/bin/sh
# libmarcel-dlrb preloaded into unmodified MPI programs, under mpirun on 2 and 4 ranks
# (4 oversubscribed): examples/mpi-metbench with each way of meeting, and hpcc (Debian's
# package, tests/mpi-thirdparty/README.md). Asserts:
# - the programs' results are the same with and without it (metbench's checksum, hpcc's
#   residual check);
# - rank 0 reports one line per rank, and nearly every iteration is found (those before
#   the period is confirmed are counted by the collectives that end them, or missed for
#   an exchange);
# - the heavy rank's utilisation is above the light one's (loads 1 and 4);
# - a program without iterations is reported as such;
# - MARCEL_DLRB=off says nothing; a bad MARCEL_DLRB is named and the program still runs;
#   MARCEL_DLRB_REPORT=FILE writes the report there.
# Every mpirun runs under timeout, without standard input.
set -u
top_builddir=${top_builddir:-..}
prog=$top_builddir/examples/mpi-metbench/metbench
lib=$top_builddir/dlrb/.libs/libmarcel-dlrb.so
work=dlrb.d
mpirun=${MPIRUN:-$(command -v mpirun || true)}
mpi_opts="--allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader --mca pml ob1"
limit=120
fail=0

[ -n "$mpirun" ] || { echo "dlrb: skipped: configure found MPI but no mpirun"; exit 77; }
[ -x "$prog" ] && [ -f "$lib" ] || { echo "dlrb: $prog or $lib is not built"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")

# A sanitizer build: its runtime must be loaded first, before the library preloaded
# (which needs it); Open MPI's own allocations left at MPI_Finalize are not ours.
preload=$lib
san=$(ldd "$prog" 2>/dev/null | awk '/lib(a|t)san\.so/ { print $3; exit }')
[ -n "$san" ] && preload="$san:$lib"
if [ -n "$san" ] && ldd "$prog" | grep -q libasan; then
	printf 'leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\nleak:libevent\n' \
		>"$work/lsan.supp"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
	LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$work/lsan.supp"
	export ASAN_OPTIONS LSAN_OPTIONS
fi

bad() {
	echo "dlrb: FAIL: $*"
	fail=1
}

# mpirun NP [mpirun options...] -- PROGRAM ARGS...: sets out and st.
run() {
	np=$1
	shift
	out=$(timeout -k 5 $limit "$mpirun" $mpi_opts -np "$np" "$@" </dev/null 2>&1)
	st=$?
	[ $st -ne 124 ] || bad "-np $np $*: no end within $limit s"
}

# The awk pattern of the report's rows: from its header line to its verdict line, rows of
# 9 fields (a sanitizer's tables after the report are not rows).
rows='/^libmarcel-dlrb: [0-9]+ ranks/ { on = 1; next } /^libmarcel-dlrb:/ { on = 0 } on && NF == 9 && /^ +[0-9]+ /'

checksum() {
	printf '%s\n' "$1" | sed -n 's/^checksum //p'
}

for np in 2 4; do
	for sync in barrier exchange allreduce; do
		args="--iters 30 --unit 2000 --sync $sync --check"
		run "$np" "$prog" $args
		[ $st -eq 0 ] || { bad "-np $np $args without the library: status $st"; printf '%s\n' "$out"; continue; }
		plain=$(checksum "$out")
		run "$np" -x LD_PRELOAD="$preload" "$prog" $args
		[ $st -eq 0 ] || { bad "-np $np $args with the library: status $st"; printf '%s\n' "$out"; continue; }
		with=$(checksum "$out")
		[ -n "$plain" ] && [ "$plain" = "$with" ] ||
			bad "-np $np $args: checksum $with with the library, $plain without"
		lines=$(printf '%s\n' "$out" | awk "$rows"' { n++ } END { print n + 0 }')
		[ "$lines" -eq "$np" ] || bad "-np $np $args: $lines report lines for $np ranks"
		# iterations + by_coll: 30, less the first periods of an exchange before it is
		# confirmed (3 periods; nothing ends them, no collective).
		low=$(printf '%s\n' "$out" | awk "$rows"' { t = $3 + $4; if (min == "" || t < min) min = t } END { print min + 0 }')
		[ "$low" -ge 26 ] && [ "$low" -le 31 ] || bad "-np $np $args: a rank found $low iterations of 30"
		printf '%s\n' "$out" | grep -q "iterations found from the stream of MPI calls" ||
			bad "-np $np $args: no iterations found:
$out"
		if [ "$np" -eq 2 ] && [ "$sync" = barrier ]; then
			# Loads 1 and 4: rank 1 computes four times as long, then waits little.
			printf '%s\n' "$out" | awk "$rows"' { u[$1] = $9 + 0 } END { exit !(u[1] > u[0] + 30) }' ||
				bad "-np 2 $args: the heavy rank's utilisation is not above the light one's:
$out"
		fi
	done
done

# No iterations: said so.
run 2 -x LD_PRELOAD="$preload" "$prog" --no-iterations --iters 30
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "libmarcel-dlrb: no iterations" ||
	bad "--no-iterations: not reported as a program without iterations:
$out"

# The knobs.
run 2 -x LD_PRELOAD="$preload" -x MARCEL_DLRB=off "$prog" --iters 10
[ $st -eq 0 ] && ! printf '%s\n' "$out" | grep -q libmarcel-dlrb || bad "MARCEL_DLRB=off: status $st, or a report:
$out"
run 2 -x LD_PRELOAD="$preload" -x MARCEL_DLRB=bogus "$prog" --iters 10
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "MARCEL_DLRB=bogus: expected off or observe" &&
	[ -n "$(checksum "$out")" ] || bad "MARCEL_DLRB=bogus: status $st, or not named:
$out"
run 2 -x LD_PRELOAD="$preload" -x MARCEL_DLRB_REPORT="$work/report" "$prog" --iters 20
[ $st -eq 0 ] && grep -q "^libmarcel-dlrb: 2 ranks" "$work/report" && ! printf '%s\n' "$out" | grep -q "^libmarcel-dlrb" ||
	bad "MARCEL_DLRB_REPORT=FILE: status $st, or the report not in the file"

# hpcc, unmodified, on 4 ranks: its own checks pass with the library loaded.
getter=$(dirname "$0")/mpi-thirdparty/get-and-build.sh
if hpcc=$(sh "$getter" "$work/hpcc" 4 2>/dev/null); then
	(cd "$work/hpcc" && timeout -k 5 600 "$mpirun" $mpi_opts -np 4 -x LD_PRELOAD="$preload" \
		-x MARCEL_DLRB_REPORT="$work/hpcc-report" "$hpcc" </dev/null >"$work/hpcc.out" 2>&1)
	st=$?
	grep -q "Success=1" "$work"/hpcc/hpccoutf.txt 2>/dev/null && grep -q "PASSED" "$work"/hpcc/hpccoutf.txt &&
		grep -q "^libmarcel-dlrb: 4 ranks" "$work/hpcc-report" ||
		bad "hpcc with the library: status $st, no Success=1/PASSED, or no report"
else
	echo "dlrb: hpcc part skipped: $(sh "$getter" "$work/hpcc" 4 2>&1 | tail -1)"
fi

[ $fail -eq 0 ] && echo "dlrb: all passed"
exit $fail
