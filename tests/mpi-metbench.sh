#!/bin/sh
# examples/mpi-metbench under mpirun on 2 and 4 ranks (4 oversubscribed), with each way
# of meeting, and an unmodified third-party MPI program (tests/mpi-thirdparty):
# - every run exits 0 with a line per rank (compute and MPI times) and --check's count:
#   every value received (2 per rank and iteration for exchange, 1 for allreduce, none
#   for barrier) was what its sender computed, recomputed by the receiver;
# - the checksum depends on what is computed and delivered, never on the timing: a
#   second run with other loads, another time unit, --swap and a given rate prints the
#   same one; the values a rank computes are the same whatever the rank count and the
#   way of meeting (ranks 0 and 1 on 2 and 4 ranks, 1 rank without mpirun, and
#   --no-iterations); what is received is in the checksum (barrier, exchange and
#   allreduce differ), allreduce gives every rank the same sums, barrier none;
# - --no-iterations repeats itself for a seed, and changes with it;
# - each bad option exits with status 2, naming it;
# - hpcc (Debian's package; tests/mpi-thirdparty/README.md) runs on 2 and 4 ranks and
#   reports HPL's residual check PASSED and Success=1 (skipped, saying so, without hpcc).
# Every mpirun runs under timeout, without standard input (mpirun would forward it).
set -u
top_builddir=${top_builddir:-..}
srcdir=${srcdir:-.}
prog=$top_builddir/examples/mpi-metbench/metbench
work=mpi-metbench.d
mpirun=${MPIRUN:-$(command -v mpirun || true)}
# As tests/check_mpi.c's MPIRUN_OPTS: 4 ranks on 2 cores, shared memory only.
mpi_opts="--allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader --mca pml ob1"
limit=120
fail=0

if [ -z "$mpirun" ]; then
	echo "mpi-metbench: skipped: configure found MPI but no mpirun"
	exit 77
fi
if [ ! -x "$prog" ]; then
	echo "mpi-metbench: $prog is not built: run make in the build's examples directory"
	exit 1
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)

# An AddressSanitizer build's program: Open MPI leaves its own allocations unfreed at
# MPI_Finalize, which LeakSanitizer would report (see tests/check_mpi.c); leaks of the
# program itself are still reported. mpirun passes the environment to its ranks.
if readelf -d "$prog" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
	printf 'leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\nleak:libevent\n' \
		>"$work/lsan.supp"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
	LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$work/lsan.supp"
	export ASAN_OPTIONS LSAN_OPTIONS
fi

# run NP ARGS...: the program on NP ranks (0: alone, without mpirun), with $extra's
# options for mpirun; sets out and st.
extra=
run() {
	np=$1
	shift
	what="-np $np $*"
	if [ "$np" -eq 0 ]; then
		what="$*"
		out=$(timeout -k 5 $limit "$prog" "$@" </dev/null 2>&1)
	else
		out=$(timeout -k 5 $limit "$mpirun" $mpi_opts $extra -np "$np" "$prog" "$@" </dev/null 2>&1)
	fi
	st=$?
	[ $st -eq 124 ] && out="$out
(no result within $limit s)"
}
bad() {
	echo "mpi-metbench: FAIL: $what: $1"
	printf '%s\n' "$out" | tail -n 40
	fail=1
}
# field PATTERN: the first \1 of sed's PATTERN over the output.
field() {
	printf '%s\n' "$out" | sed -n "s/$1/\\1/p" | head -n 1
}
checksum() { field '^checksum \([0-9a-f]\{16\}\)$'; }
computed() { field "^rank $1: .*computed \\([0-9a-f]\\{16\\}\\), exchanged [0-9a-f]\\{16\\}\$"; }
exchanged() { field "^rank $1: .*computed [0-9a-f]\\{16\\}, exchanged \\([0-9a-f]\\{16\\}\\)\$"; }

# expect_ok NP RECEIVED: the run exited 0, with a line per rank, the check's count and a
# checksum.
expect_ok() {
	if [ $st -ne 0 ]; then
		bad "exit status $st"
		return 1
	fi
	r=0
	while [ $r -lt "$1" ]; do
		printf '%s\n' "$out" |
			grep -q "^rank $r: .*compute [0-9]*\\.[0-9]\\{6\\} s, mpi [0-9]*\\.[0-9]\\{6\\} s, computed" ||
			{ bad "no line with rank $r's compute and MPI times"; return 1; }
		r=$((r + 1))
	done
	printf '%s\n' "$out" | grep -q "^rank $1:" && { bad "a line for rank $1 of $1"; return 1; }
	printf '%s\n' "$out" | grep -q "^check: $2 values received, $2 checked, all as sent\$" ||
		{ bad "expected 'check: $2 values received, $2 checked, all as sent'"; return 1; }
	[ -n "$(checksum)" ] || { bad "no checksum line"; return 1; }
}

iters=40
empty=cbf29ce484222325  # the hash of nothing: what barrier receives
ref0='' ref1=''         # the values ranks 0 and 1 compute over $iters iterations
same_values() {         # ranks 0 and 1 (if there is one) computed the reference values
	c0=$(computed 0) c1=$(computed 1)
	if [ -z "$ref0" ]; then
		ref0=$c0 ref1=$c1
	elif [ "$c0" != "$ref0" ] || { [ -n "$c1" ] && [ "$c1" != "$ref1" ]; }; then
		bad "ranks 0 and 1 computed $c0 and $c1, elsewhere $ref0 and $ref1"
	fi
}

for np in 2 4; do
	if [ $np -eq 2 ]; then other="--loads 3,0"; else other="--loads 0,2,5,1"; fi
	sums=
	for sync in barrier exchange allreduce; do
		case $sync in
		barrier) received=0 ;;
		exchange) received=$((2 * np * iters)) ;;
		allreduce) received=$((np * iters)) ;;
		esac
		run $np --sync $sync --iters $iters --unit 300 --check
		expect_ok $np $received || continue
		printf '%s\n' "$out" | grep -q "^mpi-metbench: $np ranks, .*, $iters iterations, sync $sync\$" ||
			bad "the header does not say '$np ranks' and 'sync $sync'"
		sum=$(checksum)
		same_values
		r=0 first=$(exchanged 0)
		while [ $r -lt $np ]; do
			x=$(exchanged $r)
			case $sync in
			barrier) [ "$x" = $empty ] || bad "barrier: rank $r received something: $x" ;;
			allreduce) [ "$x" = "$first" ] || bad "allreduce: ranks 0 and $r got other sums: $first, $x" ;;
			exchange) [ "$x" != $empty ] || bad "exchange: rank $r received nothing" ;;
			esac
			r=$((r + 1))
		done
		# Other loads, unit, swaps and rate: other timing, other work, the same values.
		run $np --sync $sync --iters $iters $other --unit 40 --swap 3 --chunks-per-ms 500 --check
		expect_ok $np $received || continue
		printf '%s\n' "$out" | grep -q "(500 chunks/ms, given), $iters iterations, sync $sync, loads reversed every 3\$" ||
			bad "the header does not give the rate and the swap period"
		[ "$(checksum)" = "$sum" ] || bad "checksum $(checksum), and $sum with other loads and timing"
		case " $sums " in
		*" $sum "*) bad "sync $sync: checksum $sum, as another way of meeting's: what is received is not in it" ;;
		esac
		sums="$sums $sum"
		echo "mpi-metbench: $np ranks, sync $sync: checksum $sum, whatever the loads and the timing"
	done

	# No iterations: the same run twice (another time unit and rate: other lengths, the
	# same draws), another seed.
	run $np --no-iterations --iters $iters --unit 200 --check
	expect_ok $np '[1-9][0-9]*' || continue
	printf '%s\n' "$out" | grep -q "^mpi-metbench: $np ranks, no iterations: $iters steps" ||
		bad "the header does not say 'no iterations'"
	printf '%s\n' "$out" | grep -q '^rank 0: load' && bad "a load without iterations"
	same_values
	sum=$(checksum)
	run $np --no-iterations --iters $iters --unit 30 --chunks-per-ms 700 --check
	expect_ok $np '[1-9][0-9]*' && [ "$(checksum)" != "$sum" ] &&
		bad "--no-iterations: checksum $(checksum), $sum the first time with the same seed"
	run $np --no-iterations --iters $iters --unit 200 --seed 2 --check
	expect_ok $np '[1-9][0-9]*' && [ "$(checksum)" = "$sum" ] &&
		bad "--no-iterations: seeds 1 and 2 give the same checksum $sum: the peers are not drawn"
	echo "mpi-metbench: $np ranks, no iterations: checksum $sum for seed 1, every run"
done

# One rank, no mpirun (MPI's singleton start): its neighbours are itself.
run 0 --sync exchange --loads 1 --iters $iters --unit 100 --check
expect_ok 1 $((2 * iters)) && same_values
echo "mpi-metbench: ranks 0 and 1 computed $ref0 and $ref1 on 1, 2 and 4 ranks, with every way of meeting"

# What the checks are for: a library between the program and MPI that alters messages
# (here one preloaded that flips a bit of every 7th value sent) changes the checksum,
# and --check names the difference and fails the run. A sanitizer build's program
# cannot take a plain library preloaded (see tests/preload-run.sh).
if readelf -d "$prog" 2>/dev/null | grep -q 'NEEDED.*lib\(asan\|tsan\|ubsan\|hwasan\)'; then
	echo "mpi-metbench: the altering library is not tried: this build's program has a sanitizer runtime"
elif ! command -v mpicc >/dev/null; then
	echo "mpi-metbench: the altering library is not tried: no mpicc to build it"
else
	cat >"$work/alter.c" <<'EOF'
#include <stdint.h>
#include <mpi.h>
int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
	static int calls;
	static uint64_t altered; /* mpi-metbench waits for its sends before the next 7 */
	if (type == MPI_UINT64_T && count == 1 && ++calls % 7 == 0) {
		altered = *(const uint64_t *)buf ^ 1;
		buf = &altered;
	}
	return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}
EOF
	if ! mpicc -shared -fPIC -Wall -Werror "$work/alter.c" -o "$work/alter.so"; then
		what="mpicc -shared $work/alter.c"
		out=
		bad "the altering library does not build"
	else
		# 2 ranks, 2 sends each per iteration: 4 * iters values, every 7th of a rank's altered.
		values=$((4 * iters)) altered=$((2 * (2 * iters / 7)))
		run 2 --sync exchange --iters $iters --unit 300 --check
		expect_ok 2 $values
		sum=$(checksum)
		extra="-x LD_PRELOAD=$work/alter.so"
		run 2 --sync exchange --iters $iters --unit 300 --check
		extra=
		case $st:$out in
		0:* | 124:*) bad "exit status $st with altered messages, expected 1" ;;
		*"check: $altered of $values values received differ from what was sent"*"checksum "*) ;;
		*) bad "expected 'check: $altered of $values values received differ from what was sent'" ;;
		esac
		printf '%s\n' "$out" | grep -q "^mpi-metbench: rank 0, iteration 3: received [0-9a-f]\{16\} from rank 1, which computed [0-9a-f]\{16\}\$" ||
			bad "no message naming the first altered value (rank 0, iteration 3, from rank 1)"
		[ -n "$sum" ] && [ "$(checksum)" = "$sum" ] && bad "the checksum $sum did not change with altered messages"
		echo "mpi-metbench: a library altering $altered of $values messages changes the checksum, and --check says where"
	fi
fi

# Bad options: read before MPI starts, so no mpirun is needed.
refuse() { # NP EXPECTED ARGS...: exit status 2 and a message holding EXPECTED
	np=$1 want=$2
	shift 2
	run "$np" "$@"
	if [ $st -ne 2 ]; then
		bad "exit status $st, expected 2"
	else
		case $out in
		*"$want"*) ;;
		*) bad "the message does not say: $want" ;;
		esac
	fi
}
refuse 0 "unknown option '--bogus'" --bogus
refuse 0 "option '--loads': '1,x' is not a comma-separated list" --loads 1,x
refuse 0 "option '--loads': '-1' is not" --loads -1
refuse 0 "option '--loads': '1,,2' is not" --loads 1,,2
refuse 0 "option '--unit': '0' is not a time in microseconds" --unit 0
refuse 0 "option '--unit' needs a value" --iters 3 --unit
refuse 0 "option '--iters': '1e3' is not an iteration count" --iters 1e3
refuse 0 "option '--swap': '-2' is not a period" --swap -2
refuse 0 "option '--sync': 'ring' is not a way to meet: barrier, exchange or allreduce" --sync ring
refuse 0 "option '--chunks-per-ms': '0' is not a rate" --chunks-per-ms 0
refuse 0 "option '--loads' describes iterations, and --no-iterations has none" --no-iterations --loads 1,2
refuse 0 "option '--sync' describes iterations" --sync barrier --no-iterations
refuse 0 "option '--seed' seeds --no-iterations' draws" --seed 5
refuse 0 "option '--seed': 'x' is not a seed" --no-iterations --seed x
# Known only once the rank count is: every rank refuses, rank 0 says why.
refuse 2 "option '--loads': 3 loads for 2 ranks" --loads 1,2,3
run 0 --help
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "^usage: mpirun -np N mpi-metbench" || bad "--help: no usage, or not status 0"
echo "mpi-metbench: bad options refused"

# The third-party program. Exit 77 from get-and-build.sh: not installed, which is said.
for np in 2 4; do
	dir=$work/hpcc-$np
	what="get-and-build.sh $dir $np"
	out=$("$srcdir/mpi-thirdparty/get-and-build.sh" "$dir" $np 2>&1)
	st=$?
	if [ $st -eq 77 ]; then
		echo "mpi-metbench: the third-party part is skipped: $out"
		break
	fi
	[ $st -eq 0 ] || { bad "exit status $st"; continue; }
	hpcc=$out
	what="-np $np $hpcc (in $dir)"
	out=$(cd "$dir" && timeout -k 5 $limit "$mpirun" $mpi_opts -np $np "$hpcc" </dev/null 2>&1)
	st=$?
	[ $st -eq 0 ] || { bad "exit status $st"; continue; }
	verdicts=$dir/hpccoutf.txt
	for want in '^||Ax-b||_oo/.*\.\.\.\.\.\. PASSED$' '^Success=1$' "^CommWorldProcs=$np\$" '^HPL_N=1200$' \
		'^End of Summary section\.$'; do
		grep -q "$want" "$verdicts" 2>/dev/null || bad "$verdicts has no line matching $want"
	done
	grep -q 'FAILED' "$verdicts" 2>/dev/null && bad "$verdicts says FAILED"
	echo "mpi-metbench: hpcc on $np ranks: HPL's residual check PASSED, Success=1"
done
# Its preparation refuses what it cannot use.
out=$("$srcdir/mpi-thirdparty/get-and-build.sh" "$work/hpcc-x" 0 2>&1)
st=$?
what="get-and-build.sh DIR 0"
case $st:$out in
2:*"NP '0' is not a number from 1 to 4096"*) ;;
*) bad "exit status $st, expected 2 and the bad NP named" ;;
esac

if [ $fail -eq 0 ]; then
	echo "mpi-metbench: all passed"
	rm -rf "$work"
fi
exit $fail
