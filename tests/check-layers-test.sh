#!/bin/bash
# tools/check-layers must be able to fail, for each kind of violation, and must let its
# baseline only shrink. Each case edits a fresh copy of the layer folders and the
# baseline (in a temporary directory, never the tree) and runs the check on it with
# --root. The probes are functions and files made up here, so the cases do not depend
# on which violations the tree still has. Run by tests/run-all after the check itself;
# by hand: tests/check-layers-test.sh.
# shellcheck disable=SC2016 # the $(...) of makefile lines are literal
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# The pristine copy every case starts from.
mkdir -p "$work/orig/tools"
for d in topology marcel bubbles strategies hwprio sim; do
	[ -d "$top/$d" ] && cp -r "$top/$d" "$work/orig/"
done
cp "$top/tools/layers.baseline" "$work/orig/tools/"
t="$work/t"

# A fresh copy in $t, plus an upper-layer file the probes call: a public function, a
# variable and a static function (which the core cannot reach, so naming it is no
# violation).
fresh() {
	rm -rf "$t"
	cp -r "$work/orig" "$t"
	cat >"$t/strategies/zz_probe.c" <<'EOF'
static int ma_probe_static(void) { return 0; }
int ma_probe_public(void) { return ma_probe_static(); }
int ma_probe_var;
EOF
}

# expect DESCRIPTION RC [TEXT...]: runs the check on $t; it must exit with RC and print
# every TEXT (fixed strings).
expect() {
	local what=$1 want=$2 out rc s ok=1
	shift 2
	out=$("$top/tools/check-layers" --root "$t" 2>&1)
	rc=$?
	[ "$rc" -eq "$want" ] || ok=0
	for s in "$@"; do
		grep -qF -- "$s" <<<"$out" || ok=0
	done
	if [ $ok -eq 1 ]; then
		echo "ok: $what"
	else
		echo "FAILED: $what (exit $rc, wanted $want and: $*)"
		sed 's/^/    /' <<<"$out"
		failed=1
	fi
}

# Runs `tools/check-layers --update` on $t.
update() {
	"$top/tools/check-layers" --root "$t" --update >/dev/null 2>&1 || { echo "FAILED: --update"; failed=1; }
}

fresh
expect "the unchanged copy passes" 0 "none new, none gone"

fresh
sed -i '0,/^#include "/s//#include "ma_bubble.h"\n#include "/' "$t/marcel/futex.c"
expect "the core including a bubbles header fails, naming file and line" 1 \
	"new: include marcel/futex.c -> bubbles/ma_bubble.h" "at marcel/futex.c:"

fresh
echo 'libtopology_la_CPPFLAGS = -I$(top_srcdir)/strategies' >>"$t/topology/Makefile.am"
expect "topology with -I to strategies fails" 1 "new: flag topology/Makefile.am -I\$(top_srcdir)/strategies"

fresh
echo 'void ma_probe_x(void) { (void)ma_probe_public(); }' >>"$t/marcel/futex.c"
echo 'int ma_probe_public(void);' >>"$t/marcel/ma_sync.h"
expect "the core calling and declaring an upper function fails" 1 \
	"new: call marcel/futex.c ma_probe_public (strategies/zz_probe.c)" \
	"new: declare marcel/ma_sync.h ma_probe_public (strategies/zz_probe.c)"

fresh
printf '#define MA_PROBE_M() \\\n\t ma_probe_public()\n' >>"$t/marcel/futex.c"
expect "a macro of the core calling an upper function fails" 1 "new: call marcel/futex.c ma_probe_public (strategies/zz_probe.c)"

fresh
echo 'int ma_probe_y(void) { return ma_probe_var; }' >>"$t/marcel/futex.c"
expect "the core using an upper variable fails" 1 "new: use marcel/futex.c ma_probe_var (strategies/zz_probe.c)"

fresh
cat >>"$t/marcel/futex.c" <<'EOF'
/* ma_probe_public(x) in a comment, */ static const char *ma_probe_s = "ma_probe_public(y)";
// ma_probe_public(z)
static int ma_probe_static(void) { return 1; }
int ma_probe_z(struct ma_probe_ops *o) { return ma_probe_static() + o->ma_probe_public() + (ma_probe_s != 0); }
EOF
expect "comments, strings, fields and a static of an upper layer are not uses" 0 "none new, none gone"

fresh
printf 'static int ma_probe_public(void) { return 2; }\nint ma_probe_w(void) { return ma_probe_public(); }\n' >>"$t/marcel/futex.c"
expect "a static namesake in the core is the core's own function" 0 "none new, none gone"

fresh
cat >>"$t/marcel/startup.c" <<'EOF'
extern int ma_bubbles_start(void);
int ma_probe_root(void) { return ma_bubbles_start(); }
EOF
expect "the composition root may start the bubbles" 0 "none new, none gone"
echo 'int ma_probe_root2(void) { return ma_probe_public(); }' >>"$t/marcel/startup.c"
expect "... and name nothing else of the upper layers" 1 "new: call marcel/startup.c ma_probe_public (strategies/zz_probe.c)"

fresh
mkdir -p "$t/marcel/mpi"
echo 'int marcel_probe_api(void) { return 0; }' >>"$t/strategies/zz_probe.c"
echo 'int ma_probe_mpi(void) { return marcel_probe_api(); }' >"$t/marcel/mpi/zz_client.c"
expect "a client library in the core's folder may call the public API of any layer" 0 "none new, none gone"
echo 'int ma_probe_mpi2(void) { return ma_probe_public(); }' >>"$t/marcel/mpi/zz_client.c"
echo 'int ma_probe_core(void) { return marcel_probe_api(); }' >>"$t/marcel/futex.c"
expect "... nothing else of the upper layers, and the core itself not even that" 1 \
	"new: call marcel/mpi/zz_client.c ma_probe_public (strategies/zz_probe.c)" \
	"new: call marcel/futex.c marcel_probe_api (strategies/zz_probe.c)"

fresh
mkdir -p "$t/hwprio"
echo '#pragma once' >"$t/hwprio/ma_x.h"
printf '#include "ma_bubble.h"\n#include "ma_topology.h"\n#include "ma_x.h"\n' >"$t/hwprio/ok.c"
expect "hwprio may include bubbles, topology and itself" 0 "none new, none gone"
echo '#include "ma_x.h"' >>"$t/strategies/zz_probe.c"
echo '#pragma once' >"$t/strategies/ma_zz_probe.h"
echo '#include "ma_zz_probe.h"' >>"$t/hwprio/ok.c"
echo 'AM_CPPFLAGS = -I$(top_srcdir)/bubbles -I$(top_srcdir)/strategies' >"$t/hwprio/Makefile.am"
expect "strategies and hwprio never include each other" 1 \
	"new: include strategies/zz_probe.c -> hwprio/ma_x.h" \
	"new: include hwprio/ok.c -> strategies/ma_zz_probe.h" \
	"new: flag hwprio/Makefile.am -I\$(top_srcdir)/strategies"

fresh
echo '#pragma once' >"$t/bubbles/ma_zz_probe.h"
echo '#pragma once' >"$t/strategies/ma_zz_probe.h"
echo '#include "ma_zz_probe.h"' >>"$t/marcel/futex.c"
expect "a header name in two layer folders is refused, not guessed" 2 "is both"

fresh
sed -i '0,/^#include "/s//#include "ma_nowhere.h"\n#include "/' "$t/marcel/futex.c"
expect "an include that resolves to no header is refused" 2 "ma_nowhere.h"

# The baseline only shrinks: a violation recorded, then removed, must be deleted.
fresh
cp "$t/marcel/futex.c" "$work/futex.c"
sed -i '0,/^#include "/s//#include "ma_bubble.h"\n#include "/' "$t/marcel/futex.c"
update
expect "a recorded violation passes" 0 "none new, none gone"
cp "$work/futex.c" "$t/marcel/futex.c"
expect "a recorded violation that is gone fails until its line is deleted" 1 \
	"gone: include marcel/futex.c -> bubbles/ma_bubble.h — delete this line from tools/layers.baseline"
update
expect "... and --update deletes it" 0 "none new, none gone"
cmp -s "$t/tools/layers.baseline" "$work/orig/tools/layers.baseline" ||
	{ echo "FAILED: --update did not give back the original baseline"; failed=1; }

out=$("$top/tools/check-layers" --bogus 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -q usage <<<"$out"; then echo "ok: a usage error exits 2"; else
	echo "FAILED: a usage error exits $rc"; failed=1; fi

[ $failed -eq 0 ] || { echo "tests/check-layers-test.sh: failed" >&2; exit 1; }
echo "tests/check-layers-test.sh: all cases passed"
