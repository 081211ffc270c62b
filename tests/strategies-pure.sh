#!/bin/sh
# The strategies decide and reach nothing of the runtime (doc/architecture.md §5): their
# objects (strategies/libstrategies.la, all but the registry) may use only one another,
# the topology's library, and the C library. A name of the runtime (ma_*, marcel_*) that
# neither of those two libraries defines is a strategy calling into the runtime: this
# fails and names it. Their include paths already keep the runtime's headers out; this
# checks the objects themselves (a declaration written by hand would slip past those).
# Runs from the build tree's tests/ (make check), or with BUILD_DIR set to the build's top.
set -u
build=${BUILD_DIR:-..}
strat=$build/strategies/.libs/libstrategies.a
topo=$build/topology/.libs/libtopology.a
for lib in "$strat" "$topo"; do
	[ -r "$lib" ] || { echo "strategies-pure: cannot read $lib (build first)" >&2; exit 1; }
done
tmp=${TMPDIR:-/tmp}/strategies-pure.$$
trap 'rm -f "$tmp".*' EXIT
nm --defined-only "$strat" "$topo" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$tmp.defined"
nm -u "$strat" | awk 'NF == 2 { print $2 }' | sort -u >"$tmp.undefined"
[ -s "$tmp.defined" ] || { echo "strategies-pure: no symbol defined in $strat" >&2; exit 1; }
comm -23 "$tmp.undefined" "$tmp.defined" | grep -E '^(ma_|marcel_)' >"$tmp.bad"
if [ -s "$tmp.bad" ]; then
	echo "strategies-pure: strategy objects reference the runtime:" >&2
	for name in $(cat "$tmp.bad"); do
		echo "  $name, used by: $(nm -A -u "$strat" | awk -v n="$name" '$NF == n { sub(/:.*/, "", $1); split($1, p, "[][]"); print p[2] }' | sort -u | tr '\n' ' ')" >&2
	done
	exit 1
fi
echo "strategies-pure: $(wc -l <"$tmp.undefined") names used, none of the runtime"
