#!/bin/sh
# Runs gdb in batch mode on gdb-target (see gdb-target.c), stopped in
# ma_gdb_breakpoint_here(), and checks what tools/marcel-gdb.py reports:
#  - `marcel threads` lists every named thread with its state and where it is (the
#    function it is blocked, queued or running in);
#  - `marcel threads -bt` and `marcel bt NAME` give backtraces holding each thread's own
#    function;
#  - the registers of the kernel thread borrowed for those backtraces are restored and
#    the selected frame is unchanged;
#  - the same from a core file of that moment (gcore), where registers are read-only.
# Skipped (77) without gdb, or when gdb cannot trace programs here.
set -u
srcdir=${srcdir:-.}
script="$srcdir/../tools/marcel-gdb.py"
target=./gdb-target

if ! command -v gdb >/dev/null 2>&1; then
	echo "gdb-helper: gdb not found: skipped"
	exit 77
fi
if [ ! -x "$target" ]; then
	echo "gdb-helper: $target not built (make gdb-target)" >&2
	exit 1
fi
out=gdb-helper.out
core_out=gdb-helper.core.out
core=gdb-helper.core
rm -f "$out" "$core_out" "$core"
# Under AddressSanitizer or ThreadSanitizer the address space holds terabytes of shadow
# memory: no core then.
gcore="gcore $core"
if grep -q "__asan_init\|__tsan_init" "$target"; then
	gcore="echo (no core file under a sanitizer)\n"
fi
# A synthetic topology with 4 VPs, so the spinner can keep one VP to itself.
MARCEL_TOPOLOGY="pack:1 core:4 pu:1"
export MARCEL_TOPOLOGY
unset MARCEL_NVP

gdb -nx -batch \
	-ex "set pagination off" \
	-ex "set width 0" \
	-ex "set confirm off" \
	-ex "set disable-randomization off" \
	-ex "source $script" \
	-ex "break ma_gdb_breakpoint_here" \
	-ex "run" \
	-ex "echo @@regs-before\n" \
	-ex "info registers" \
	-ex "echo @@threads\n" \
	-ex "marcel threads" \
	-ex "echo @@info\n" \
	-ex "info marcel-threads -nowhere" \
	-ex "echo @@bt\n" \
	-ex "marcel threads -bt -nowhere" \
	-ex "echo @@bt-one\n" \
	-ex "marcel bt cond-waiter" \
	-ex "echo @@regs-after\n" \
	-ex "info registers" \
	-ex "echo @@frame\n" \
	-ex "frame" \
	-ex "echo @@end\n" \
	-ex "$gcore" \
	-ex "kill" \
	"$target" >"$out" 2>&1
status=$?

if grep -q "ptrace: Operation not permitted\|Could not trace the inferior\|not permitted to trace\|Couldn't get registers" "$out"; then
	echo "gdb-helper: gdb may not trace processes here: skipped"
	exit 77
fi
fail=0
failed() {
	echo "gdb-helper: FAIL ($file): $*"
	fail=1
}

# Section $1 of $file (between @@$1 and the next @@ marker).
section() {
	awk -v s="@@$1" '$0 == s { on = 1; next } /^@@/ { on = 0 } on' "$file"
}

check_line() { # name state where-pattern
	line=$(printf '%s\n' "$threads" | grep -E "^[0-9]+ .* $1( |\$)" | head -n 1)
	[ -n "$line" ] || { failed "marcel threads does not list '$1'"; return; }
	printf '%s\n' "$line" | grep -q " $2 " || failed "'$1' is not $2: $line"
	[ -z "$3" ] || printf '%s\n' "$line" | grep -q "$3" || failed "'$1' is not in $3: $line"
}

check_bt() { # name function
	body=$(printf '%s\n' "$bt" | awk -v n="'$1'" '/^marcel thread / { on = index($0, n) > 0; next } on')
	# gdb writes a frame without " in " when its pc is exact: frame #0, and the frame a
	# signal interrupted (a time-slice tick caught the spinner in the preemption handler).
	printf '%s\n' "$body" | grep -qE "in $2 |^#[0-9]+ +$2 " ||
		failed "backtrace of '$1' lacks $2: $(printf '%s\n' "$body" | head -n 3)"
}

# What `marcel threads` and `marcel threads -bt` must show in both the live process and
# the core file.
check_listing() {
	check_line sem-waiter BLOCKED "marcel_sem_P <- block_in_sem"
	check_line sleeper BLOCKED "marcel_usleep <- block_in_sleep"
	check_line cond-waiter BLOCKED "cond_wait <- block_in_cond"
	check_line joiner BLOCKED "marcel_join <- block_in_join"
	check_line yielder READY "marcel_yield <- yield_until_released"
	check_line spinner RUNNING "spin_until_released"
	check_line unborn BORN "not started"
	check_line reader RUNNING "marcel_read <- block_in_read"
	check_line suspended BLOCKED "marcel_suspend <- stop_in_suspend"
	printf '%s\n' "$threads" | grep -E "^[0-9]+ .* suspended " | grep -q "\[suspended\]" ||
		failed "suspended thread not flagged [suspended]"
	check_line main RUNNING "ma_gdb_breakpoint_here"
	printf '%s\n' "$threads" | grep -E "^[0-9]+ .* reader " | grep -q "in-section" ||
		failed "reader not shown in a blocking section"
	printf '%s\n' "$threads" | grep -q "^VP " || failed "no VP table"
	# The spinner keeps the last VP; some VP runs main.
	printf '%s\n' "$threads" | grep -q "^3 .*'spinner'" || failed "VP 3 does not run the spinner"
	printf '%s\n' "$threads" | grep -q "^[0-9] .*'main'" || failed "no VP runs main"

	check_bt sem-waiter block_in_sem
	check_bt sleeper block_in_sleep
	check_bt cond-waiter block_in_cond
	check_bt joiner block_in_join
	check_bt yielder yield_until_released
	check_bt spinner spin_until_released
	check_bt main ma_gdb_breakpoint_here
	check_bt reader block_in_read
	check_bt suspended stop_in_suspend
	printf '%s\n' "$bt" | awk "/^marcel thread .*'unborn'/ { getline; print }" | grep -q "not started" ||
		failed "unborn thread: no 'not started' note"
	# A blocked thread's backtrace goes down to its entry and starts at frame #0.
	sem_bt=$(printf '%s\n' "$bt" | awk "/^marcel thread .*'sem-waiter'/ { on = 1; next } /^marcel thread / { on = 0 } on")
	printf '%s\n' "$sem_bt" | grep -q "ma_task_entry" || failed "sem-waiter backtrace does not reach ma_task_entry"
	printf '%s\n' "$sem_bt" | head -n 1 | grep -q "^#0 " || failed "sem-waiter backtrace does not start at #0"
	grep -q "Python Exception\|Traceback\|could not restore" "$file" && failed "errors in the gdb output"
}

file=$out
[ "$status" -eq 0 ] || failed "gdb exited with $status"
grep -q "hit Breakpoint 1, ma_gdb_breakpoint_here\|^Breakpoint 1, ma_gdb_breakpoint_here" "$out" ||
	failed "gdb did not stop in ma_gdb_breakpoint_here"
threads=$(section threads)
bt=$(section bt)
check_listing
# info marcel-threads is the same list.
for n in sem-waiter sleeper cond-waiter joiner yielder spinner unborn reader suspended main; do
	want=$(printf '%s\n' "$threads" | grep -E "^[0-9]+ .* $n( |\$)" | awk '{ print $3 }')
	got=$(section info | grep -E "^[0-9]+ .* $n( |\$)" | awk '{ print $3 }')
	if [ -z "$got" ] || [ "$got" != "$want" ]; then
		failed "info marcel-threads: '$n' is '$got', not '$want'"
	fi
done
section bt-one | grep -q "block_in_cond" || failed "marcel bt cond-waiter lacks block_in_cond"
section bt-one | grep -q "block_in_sem" && failed "marcel bt cond-waiter shows other threads"
# The borrowed kernel thread got its registers back, and the frame selection is intact.
[ "$(section regs-before)" = "$(section regs-after)" ] || failed "registers differ after marcel bt"
section regs-before | grep -q "0x" || failed "no registers printed"
section frame | grep -q "ma_gdb_breakpoint_here" || failed "selected frame changed"

# The same moment from a core file: registers cannot be written there.
if [ -s "$core" ]; then
	gdb -nx -batch \
		-ex "set pagination off" \
		-ex "set width 0" \
		-ex "source $script" \
		-ex "echo @@threads\n" \
		-ex "marcel threads" \
		-ex "echo @@bt\n" \
		-ex "marcel threads -bt -nowhere" \
		-ex "echo @@frame\n" \
		-ex "bt 1" \
		-ex "echo @@end\n" \
		"$target" "$core" >"$core_out" 2>&1
	status=$?
	file=$core_out
	[ "$status" -eq 0 ] || failed "gdb exited with $status"
	threads=$(section threads)
	bt=$(section bt)
	check_listing
	section frame | grep -q "^#0 .*ma_gdb_breakpoint_here" || failed "core: frame 0 changed"
	rm -f "$core"
elif [ "$gcore" = "gcore $core" ]; then
	file=$out
	failed "gcore wrote no core file"
fi

if [ "$fail" -ne 0 ]; then
	for f in "$out" "$core_out"; do
		[ -f "$f" ] || continue
		echo "---- $f"
		cat "$f"
	done
	exit 1
fi
echo "gdb-helper: ok"
exit 0
