#!/bin/sh
# libmarcel-dlrb preloaded into unmodified MPI programs, under mpirun on 2, 4 and 8 ranks
# (4 and 8 oversubscribed): examples/mpi-metbench with each way of meeting, and hpcc (Debian's
# package, tests/mpi-thirdparty/README.md). Asserts:
# - the programs' results are the same with and without it (metbench's checksum, hpcc's
#   residual check);
# - rank 0 reports one line per rank, and nearly every iteration is found (those before
#   the period is confirmed are counted by the collectives that end them, or missed for
#   an exchange);
# - the heavy rank's utilisation is above the light one's (loads 1 and 4);
# - a program without iterations is reported as such;
# - MARCEL_DLRB=off says nothing; a bad MARCEL_DLRB is named and the program still runs;
#   MARCEL_DLRB_REPORT=FILE writes the report there;
# - balancing (the default): on a synthetic node of 2 cores of 2 hardware threads
#   (MARCEL_TOPOLOGY, decided and reported, not bound), MetBench's 2 heavy ranks are
#   placed on different cores, each beside a light one, and raised 2 levels above it (in
#   one of up to 3 runs);
#   with no imbalance, or no iterations, nothing is decided; on this machine, ranks started
#   with both heavy ones on one CPU are rebound so that each CPU has one heavy rank (in
#   one of up to 3 runs: the utilisations are measured on a shared machine), and
#   the checksum does not change, and MARCEL_DLRB_TRACE writes a valid trace of it; a bad
#   or absent MARCEL_DLRB_HWPRIO backend is named.
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
# 9 fields, 14 when balancing (a sanitizer's tables after the report are not rows).
rows='/^libmarcel-dlrb: [0-9]+ ranks/ { on = 1; next } /^libmarcel-dlrb:/ { on = 0 } on && (NF == 9 || NF == 14) && /^ +[0-9]+ /'

# Whether the machine is busier than a test's 2 computing ranks make it: the 1-minute load
# average above the CPUs plus a half (another program then shares a rank's CPU).
busy_machine() {
	awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v n="$(nproc)" 'BEGIN { exit !(l > n + 0.5) }'
}

checksum() {
	printf '%s\n' "$1" | sed -n 's/^checksum //p'
}

for np in 2 4 8; do
	syncs="barrier exchange allreduce"
	[ "$np" -eq 8 ] && syncs=exchange # 8 ranks on 2 CPUs: one way of meeting is enough
	for sync in $syncs; do
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
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "MARCEL_DLRB=bogus: expected balance, observe or off" &&
	[ -n "$(checksum "$out")" ] || bad "MARCEL_DLRB=bogus: status $st, or not named:
$out"
run 2 -x LD_PRELOAD="$preload" -x MARCEL_DLRB_REPORT="$work/report" "$prog" --iters 20
[ $st -eq 0 ] && grep -q "^libmarcel-dlrb: 2 ranks" "$work/report" && ! printf '%s\n' "$out" | grep -q "^libmarcel-dlrb" ||
	bad "MARCEL_DLRB_REPORT=FILE: status $st, or the report not in the file"

# Balancing. The last placement of a node's log: "VP" of each local rank, by rank (a
# placement made on a round the kernel disturbed is made again at the phase change that
# follows).
placed() {
	printf '%s\n' "$1" | awk '/placed \(local rank:VP/ { p = $0; sub(/.* now /, "", p); sub(/;.*/, "", p) } END { print p }'
}
# The last levels of a node's log, the same way.
levels() {
	printf '%s\n' "$1" | awk '/levels \(local rank:level\)/ { l = $0 } END { sub(/.*level\) /, "", l); print l }'
}
# Ranks started bound by a wrapper: the light ranks (0, 1) on one CPU, the heavy ones
# (2, 3) on another (bind.sh); or each CPU a heavy rank and a light one (pair.sh, rank r on
# CPU r % 2). Bound, the utilisations measured on this shared 2-CPU machine are steady.
binder=$(dirname "$0")/../tools/mpi-rank-bind
if why=$(sh "$binder" "$work/bind.sh" half 2>&1) && sh "$binder" "$work/pair.sh" alternate; then
	args="--loads 1,1,4,4 --unit 3000 --iters 40 --chunks-per-ms 2000"
	# A synthetic node: decided and reported, not bound. Its ranks run paired on this
	# machine, so that what is measured stays what the synthetic node would see (two
	# heavy ranks time-sharing a CPU would swing between 33% and 100% busy).
	# A round the kernel disturbs late in a run can look like a phase change, which resets
	# the levels with no round left to raise them again: up to 3 runs, one of which must
	# end placed and raised right.
	tries=0
	while :; do
		run 4 -x LD_PRELOAD="$preload" -x MARCEL_TOPOLOGY="core:2 pu:2" "$work/pair.sh" $prog $args
		p=$(placed "$out")
		l=$(levels "$out")
		# VPs 2c and 2c+1 share core c: heavy 2 and 3 on different cores, light 0 and 1 too.
		placed_ok=0
		echo "$p" | awk '{ for (i = 1; i <= NF; i++) { split($i, x, ":"); c[x[1]] = int(x[2] / 2) } }
			END { exit !(c[2] != c[3] && c[0] != c[1]) }' && placed_ok=1
		[ $placed_ok = 1 ] && [ "$l" = "0:0 1:0 2:2 3:2" ] && break
		tries=$((tries + 1))
		echo "dlrb: balance on core:2 pu:2: run $tries ended placed '$p', levels '$l' (load average $(cut -d' ' -f1 /proc/loadavg))"
		[ $tries -lt 3 ] && continue
		[ $placed_ok = 1 ] || bad "balance on core:2 pu:2: heavy ranks not on different cores, each beside a light one (placed: '$p'):
$out"
		[ "$l" = "0:0 1:0 2:2 3:2" ] || bad "balance on core:2 pu:2: last levels '$l', expected 0:0 1:0 2:2 3:2:
$out"
		break
	done
	printf '%s\n' "$out" | grep -q "binding off (not this machine)" || bad "balance on core:2 pu:2: bound ranks:
$out"
	# Two balancing groups (MARCEL_DLRB_GROUP=2: the multi-node path on one machine), each a
	# light rank and a heavy one on a synthetic core of 2 hardware threads, each group's
	# ranks sharing a CPU of this machine (bind.sh): each group logs its own decisions, and
	# each raises its heavy rank 2 levels.
	# As above, a late disturbed round can reset a group's levels: up to 3 runs.
	tries=0
	while :; do
		run 4 -x LD_PRELOAD="$preload" -x MARCEL_DLRB_GROUP=2 -x MARCEL_TOPOLOGY="core:1 pu:2" "$work/bind.sh" "$prog" \
			--loads 1,4 --unit 3000 --iters 40 --chunks-per-ms 2000
		nodes=$(printf '%s\n' "$out" | grep -c "^libmarcel-dlrb: node of rank [02]: 2 ranks")
		groups_ok=$(printf '%s\n' "$out" | awk '/^libmarcel-dlrb: node of rank/ { n++ } /levels \(local rank:level\)/ { l[n] = $0 }
			END { ok = n == 2; for (i = 1; i <= 2; i++) { x = l[i]; sub(/.*level\) /, "", x); ok = ok && x == "0:0 1:2" } print ok }')
		[ $st -ne 0 ] || [ "$nodes" -ne 2 ] || [ "$groups_ok" = 1 ] && break
		tries=$((tries + 1))
		echo "dlrb: MARCEL_DLRB_GROUP=2: run $tries ended with a group's heavy rank not raised (load average $(cut -d' ' -f1 /proc/loadavg))"
		[ $tries -lt 3 ] || break
	done
	# Another program on a CPU slows that group, and the barrier then makes the other
	# group's ranks wait too: within 20 points, rightly left alone. Not asserted then.
	if [ $st -ne 0 ] || [ "$nodes" -ne 2 ]; then
		bad "MARCEL_DLRB_GROUP=2: status $st, $nodes node logs:
$out"
	elif [ "$groups_ok" != 1 ] && busy_machine; then
		echo "dlrb: MARCEL_DLRB_GROUP=2: levels not asserted: load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) CPUs"
	elif [ "$groups_ok" != 1 ]; then
		bad "MARCEL_DLRB_GROUP=2: a group whose heavy rank did not end raised:
$out"
	fi
	# This machine: rebound, each CPU runs a heavy rank; the checksum does not change.
	# The rebinding follows utilisations measured on this shared machine, which another
	# program can skew for a whole run: up to 3 runs, one of which must rebind right (the
	# checksum must be right in every one).
	run 4 "$work/bind.sh" "$prog" $args
	plain=$(checksum "$out")
	tries=0
	while :; do
		run 4 -x LD_PRELOAD="$preload" -x MARCEL_DLRB_TRACE="$work/trace.json" "$work/bind.sh" "$prog" $args
		[ $st -eq 0 ] && [ -n "$plain" ] && [ "$(checksum "$out")" = "$plain" ] ||
			bad "balance, this machine: status $st, or checksum $(checksum "$out") against $plain"
		# The trace: valid for the trace tools, a track per rank, iterations and
		# rebindings; and each CPU ends with a heavy rank and a light one.
		summary=$("$top_builddir/tools/marcel-trace-summary" "$work/trace.json" 2>&1)
		trace_ok=0
		printf '%s\n' "$summary" | grep -q "4 tracks" &&
			printf '%s\n' "$summary" | awk '/ iteration$/ { exit !($2 >= 100) } END { }' &&
			printf '%s\n' "$summary" | grep -q " rebound$" && trace_ok=1
		cpus_ok=0
		printf '%s\n' "$out" | awk "$rows"' { cpu[$1] = $11 } END { exit !(cpu[2] != cpu[3] && cpu[0] != cpu[1]) }' &&
			cpus_ok=1
		[ $trace_ok = 1 ] && [ $cpus_ok = 1 ] && break
		tries=$((tries + 1))
		echo "dlrb: balance, this machine: run $tries did not rebind right (load average $(cut -d' ' -f1 /proc/loadavg))"
		[ $tries -lt 3 ] && continue
		[ $trace_ok = 1 ] || bad "MARCEL_DLRB_TRACE: not a valid trace of 4 ranks with iterations and rebindings:
$summary"
		[ $cpus_ok = 1 ] || bad "balance, this machine: the heavy ranks, or the light ones, ended on one CPU:
$out"
		break
	done
else
	echo "dlrb: placement part skipped: $why"
fi
# No imbalance: 2 ranks of equal loads, each with a CPU of its own (rank-to-CPU time
# sharing makes the utilisations of 4 swing with the kernel's order). Another program on
# this shared machine can keep a rank off its CPU for rounds on end; the ranks are then
# imbalanced, and the balancer rightly acts. So the run is tried up to 3 times, and one
# must decide nothing, unless the machine was busier than the 2 ranks make it (load
# average above the CPUs plus one half): then it is said, not asserted.
tries=0
while :; do
	run 2 -x LD_PRELOAD="$preload" -x MARCEL_TOPOLOGY="core:2 pu:2" $prog --loads 1 --unit 3000 --iters 40
	printf '%s\n' "$out" | grep -q "^  0 decisions over [1-9][0-9]* rounds" && break
	tries=$((tries + 1))
	load=$(cut -d' ' -f1 /proc/loadavg)
	echo "dlrb: balance, no imbalance: run $tries decided something (load average $load):"
	printf '%s\n' "$out" | grep -A3 "^libmarcel-dlrb: node"
	[ $tries -lt 3 ] && continue
	if busy_machine; then
		echo "dlrb: balance, no imbalance: not asserted: load average $load on $(nproc) CPUs"
	else
		bad "balance, no imbalance: decisions taken in 3 runs, or no iteration:
$out"
	fi
	break
done
run 2 -x LD_PRELOAD="$preload" -x MARCEL_TOPOLOGY="core:2 pu:2" "$prog" --no-iterations --iters 30
printf '%s\n' "$out" | grep -q "^  0 decisions over" || bad "balance, no iterations: decisions taken:
$out"
run 2 -x LD_PRELOAD="$preload" -x MARCEL_DLRB_HWPRIO=bogus "$prog" --iters 10
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "MARCEL_DLRB_HWPRIO=bogus: 'bogus' is not a backend" ||
	bad "MARCEL_DLRB_HWPRIO=bogus: status $st, or not named:
$out"
run 2 -x LD_PRELOAD="$preload" -x MARCEL_DLRB_GROUP=zero "$prog" --iters 10
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "MARCEL_DLRB_GROUP=zero: expected a number of ranks from 1 to" ||
	bad "MARCEL_DLRB_GROUP=zero: status $st, or not named:
$out"
# Ranks that disagree on MARCEL_DLRB (an MPMD launch, a wrapper per rank) all run in the
# most careful one's mode, and nothing hangs.
printf '#!/bin/sh\n[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export MARCEL_DLRB=observe\nexec "$@"\n' >"$work/mixed.sh"
chmod +x "$work/mixed.sh"
run 2 -x LD_PRELOAD="$preload" "$work/mixed.sh" "$prog" --iters 10
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "MARCEL_DLRB differs between ranks; every rank runs as observe" &&
	printf '%s\n' "$out" | grep -q "^libmarcel-dlrb: 2 ranks, observing" ||
	bad "MARCEL_DLRB differing between ranks: status $st, or not said:
$out"
# Ranks of several threads (OMP_NUM_THREADS above 1) are not bound, and the log says why.
run 2 -x LD_PRELOAD="$preload" -x OMP_NUM_THREADS=2 "$prog" --iters 10
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "binding off (OMP_NUM_THREADS above 1" ||
	bad "OMP_NUM_THREADS=2: status $st, or binding not off:
$out"
# uclamp is absent where the kernel lacks CONFIG_UCLAMP_TASK (this VM): named as such.
if [ ! -e /proc/sys/kernel/sched_util_clamp_min ]; then
	run 2 -x LD_PRELOAD="$preload" -x MARCEL_DLRB_HWPRIO=uclamp "$prog" --iters 10
	[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "MARCEL_DLRB_HWPRIO: backend uclamp is absent" ||
		bad "MARCEL_DLRB_HWPRIO=uclamp on a kernel without it: status $st, or not named:
$out"
fi

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
