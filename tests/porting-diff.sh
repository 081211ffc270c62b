#!/bin/sh
# doc/porting.md shows diffs between examples; this checks they are still the real ones.
#  - Every block between "<!-- diff: OLD NEW -->" and "<!-- end diff -->" (paths from the
#    top of the tree) must be the output of `diff -u OLD NEW`, its "---"/"+++" lines
#    naming OLD and NEW (diff adds dates there, which the doc leaves out).
#  - The conduction port (simple.c to marcel.c) must stay under 40 changed lines, as
#    issue 5 asks, and the counts quoted in doc/porting.md and doc/examples.md must be
#    that number.
# Runs from any build directory: the files are read under $srcdir/.. (srcdir is set by
# `make check`; run by hand, the directory of this script).
set -u
top=${srcdir:-$(dirname "$0")}/..
doc=$top/doc/porting.md
tmp=${TMPDIR:-/tmp}/porting-diff.$$
trap 'rm -f "$tmp".*' EXIT
status=0
fail() {
	echo "porting-diff: $*" >&2
	status=1
}

[ -r "$doc" ] || { echo "porting-diff: cannot read $doc" >&2; exit 1; }

# The blocks' markers, "LINE OLD NEW" each.
grep -n '^<!-- diff: [^ ]* [^ ]* -->$' "$doc" | sed 's/^\([0-9]*\):<!-- diff: \([^ ]*\) \([^ ]*\) -->$/\1 \2 \3/' >"$tmp.blocks"
[ -s "$tmp.blocks" ] || fail "$doc has no '<!-- diff: OLD NEW -->' block"
while read -r line old new; do
	# The block: from the marker to the next end marker, fences and marker lines left out.
	sed -n "$((line + 1)),\$p" "$doc" | sed '/^<!-- end diff -->$/,$d' | grep -v '^```' >"$tmp.doc"
	if [ ! -r "$top/$old" ] || [ ! -r "$top/$new" ]; then
		fail "$doc line $line: no file $old or $new"
		continue
	fi
	printf '%s\n' "--- $old" "+++ $new" >"$tmp.real"
	diff -u "$top/$old" "$top/$new" | sed 1,2d >>"$tmp.real"
	if ! cmp -s "$tmp.doc" "$tmp.real"; then
		fail "$doc line $line: the diff shown is not 'diff -u $old $new' (doc: -, real: +):"
		diff -u "$tmp.doc" "$tmp.real" | sed 1,2d >&2
	fi
done <"$tmp.blocks"

old=examples/conduction/simple.c new=examples/conduction/marcel.c
grep -q "^<!-- diff: $old $new -->\$" "$doc" || fail "$doc does not show the conduction port ($old to $new)"
changed=$(diff -u "$top/$old" "$top/$new" | sed 1,2d | grep -c '^[-+]')
[ "$changed" -lt 40 ] || fail "the conduction port is $changed changed lines: it must stay under 40"
for f in doc/porting.md doc/examples.md; do
	quoted=$(grep -o 'marcel\.c.* [0-9][0-9]* changed lines' "$top/$f" | sed 's/.* \([0-9][0-9]*\) changed lines$/\1/')
	[ -n "$quoted" ] || fail "$f does not quote the conduction port's count ('marcel.c ... N changed lines')"
	for n in $quoted; do
		[ "$n" = "$changed" ] || fail "$f says the conduction port is $n changed lines; it is $changed"
	done
done

[ "$status" -ne 0 ] || echo "porting-diff: the diffs of doc/porting.md are current; the conduction port is $changed changed lines"
exit "$status"
