#!/bin/sh
# marcel-sim must run the library's decision code, not a copy of it (issue 22): every
# function of the strategies' objects and of hwprio's policy (policy.o) is in marcel-sim
# with the same size and the same instructions as in libmarcel.so (mnemonics compared;
# addresses and call targets differ between the two links). A function the simulator
# defined again, or an object built twice with other flags, fails here; so does a
# function that is in one program and not in the other.
# Runs from the build tree's tests/ (make check), or with BUILD_DIR set to the build's top.
set -u
build=${BUILD_DIR:-..}
sim=$build/sim/marcel-sim
[ -x "$build/sim/.libs/marcel-sim" ] && sim=$build/sim/.libs/marcel-sim
lib=$build/marcel/.libs/libmarcel.so
for f in "$sim" "$lib" "$build/strategies/.libs/libstrategies.a" "$build/hwprio/.libs/libhwprio.a"; do
	[ -r "$f" ] || { echo "sim-same-code: cannot read $f (build first)" >&2; exit 1; }
done
command -v objdump >/dev/null || { echo "sim-same-code: skipped: no objdump"; exit 77; }
tmp=${TMPDIR:-/tmp}/sim-same-code.$$
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
# The functions: every text symbol the strategies define, and hwprio's policy.
{
	nm --defined-only "$build/strategies/.libs/libstrategies.a" | awk '$2 ~ /^[Tt]$/ { print $3 }'
	nm --defined-only "$build/hwprio/.libs/libhwprio.a" 2>/dev/null | awk '
		/(^|-)policy\.o:$/ { p = 1; next } /^[^ ]+\.o:$/ { p = 0 } p && $2 ~ /^[Tt]$/ { print $3 }'
} | sort -u >"$tmp/names"
[ -s "$tmp/names" ] || { echo "sim-same-code: no function found in the strategies' objects" >&2; exit 1; }
# name -> size, for each program (local symbols too: static functions of the objects).
nm -S --defined-only "$sim" | awk 'NF == 4 && $3 ~ /^[Tt]$/ { print $4, $2 }' | sort -u >"$tmp/sim.sizes"
nm -S --defined-only "$lib" | awk 'NF == 4 && $3 ~ /^[Tt]$/ { print $4, $2 }' | sort -u >"$tmp/lib.sizes"
# Mnemonics of one function, without the padding the linker put after it (nops up to
# the next function's alignment, which differs between the two links).
body() { # body PROGRAM NAME
	objdump -d --no-show-raw-insn "$1" | awk -v n="<$2>:" '
		$2 == n { on = 1; next }
		on && NF == 0 { exit }
		on { sub(/^[^\t]*\t/, ""); split($0, w, /[ \t]/); m[++k] = w[1] }
		END {
			while (k > 0 && m[k] ~ /^(nop[wl]?|cs|data16|xchg|int3)$/) k--
			for (i = 1; i <= k; i++) print m[i]
		}'
}
status=0
checked=0
while read -r name; do
	# A static function whose name another object of either program uses too cannot be
	# told apart by name: left out.
	n1=$(awk -v n="$name" '$1 == n' "$tmp/sim.sizes" | wc -l)
	n2=$(awk -v n="$name" '$1 == n' "$tmp/lib.sizes" | wc -l)
	[ "$n1" -le 1 ] && [ "$n2" -le 1 ] || continue
	s1=$(awk -v n="$name" '$1 == n { print $2; exit }' "$tmp/sim.sizes")
	s2=$(awk -v n="$name" '$1 == n { print $2; exit }' "$tmp/lib.sizes")
	if [ -z "$s1" ] || [ -z "$s2" ]; then
		# Inlined everywhere it is used, or not linked in by either: only a function in
		# one program and not the other is a difference.
		if [ -n "$s1$s2" ]; then
			echo "sim-same-code: $name is in $([ -n "$s1" ] && echo marcel-sim || echo libmarcel.so) only" >&2
			status=1
		fi
		continue
	fi
	if [ "$s1" != "$s2" ]; then
		echo "sim-same-code: $name: $((0x$s1)) bytes in marcel-sim, $((0x$s2)) in libmarcel.so" >&2
		status=1
		continue
	fi
	body "$sim" "$name" >"$tmp/a"
	body "$lib" "$name" >"$tmp/b"
	if ! cmp -s "$tmp/a" "$tmp/b"; then
		echo "sim-same-code: $name: other instructions in marcel-sim than in libmarcel.so" >&2
		status=1
		continue
	fi
	checked=$((checked + 1))
done <"$tmp/names"
[ "$checked" -gt 0 ] || { echo "sim-same-code: no function compared" >&2; exit 1; }
[ $status -eq 0 ] && echo "sim-same-code: $checked decision functions identical in marcel-sim and libmarcel.so"
exit $status
