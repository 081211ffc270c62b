#!/bin/sh
# The strategies and hwprio's backends and policy decide, or touch the operating system,
# and reach nothing of the runtime (doc/architecture.md §5, §6): their objects
# (strategies/libstrategies.la, all but the registry; hwprio/libhwprio.la, all but its
# runtime part) may use only one another, the topology's library, and the C library. A
# name of the runtime (ma_*, marcel_*) that none of those defines is one of them calling
# into the runtime: this fails and names it. Their include paths already keep the
# runtime's headers out; this checks the objects themselves (a declaration written by
# hand would slip past those).
# Runs from the build tree's tests/ (make check), or with BUILD_DIR set to the build's top.
set -u
build=${BUILD_DIR:-..}
topo=$build/topology/.libs/libtopology.a
tmp=${TMPDIR:-/tmp}/strategies-pure.$$
trap 'rm -f "$tmp".*' EXIT
status=0
check() { # check NAME LIBRARY [LIBRARY IT MAY USE...]
	name=$1
	lib=$2
	shift 2
	for l in "$lib" "$topo" "$@"; do
		[ -r "$l" ] || { echo "strategies-pure: cannot read $l (build first)" >&2; exit 1; }
	done
	nm --defined-only "$lib" "$topo" "$@" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$tmp.defined"
	nm -u "$lib" | awk 'NF == 2 { print $2 }' | sort -u >"$tmp.undefined"
	[ -s "$tmp.defined" ] || { echo "strategies-pure: no symbol defined in $lib" >&2; exit 1; }
	comm -23 "$tmp.undefined" "$tmp.defined" | grep -E '^(ma_|marcel_)' >"$tmp.bad"
	if [ -s "$tmp.bad" ]; then
		echo "strategies-pure: $name objects reference the runtime:" >&2
		for name in $(cat "$tmp.bad"); do
			echo "  $name, used by: $(nm -A -u "$lib" | awk -v n="$name" '$NF == n { sub(/:.*/, "", $1); split($1, p, "[][]"); print p[2] }' | sort -u | tr '\n' ' ')" >&2
		done
		status=1
		return
	fi
	echo "strategies-pure: $name: $(wc -l <"$tmp.undefined") names used, none of the runtime"
}
check strategies "$build/strategies/.libs/libstrategies.a"
check hwprio "$build/hwprio/.libs/libhwprio.a"
# The simulator runs the strategies and hwprio's policy without the runtime.
check sim "$build/sim/.libs/libsim.a" "$build/strategies/.libs/libstrategies.a" "$build/hwprio/.libs/libhwprio.a"
exit $status
