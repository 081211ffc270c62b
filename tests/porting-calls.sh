#!/bin/sh
# doc/porting.md gives the status of every pthread call: each function the system's
# <pthread.h>, <semaphore.h> and <signal.h> declare under a pthread_ or sem_ name must be
# named there (in backquotes), so that a C library that adds one makes this fail until
# the guide says what becomes of it.
# Runs from any build directory (srcdir is set by `make check`; run by hand, the
# directory of this script). CC is the C compiler (default: cc).
set -u
top=${srcdir:-$(dirname "$0")}/..
doc=$top/doc/porting.md
[ -r "$doc" ] || { echo "porting-calls: cannot read $doc" >&2; exit 1; }
names=$(printf '#define _GNU_SOURCE\n#include <pthread.h>\n#include <semaphore.h>\n#include <signal.h>\n' |
	${CC:-cc} -E -P -x c - | grep -oE '\b(pthread|sem)_[a-z_]+ *\(' | sed 's/ *($//' | sort -u)
[ -n "$names" ] || { echo "porting-calls: no pthread_* function found through ${CC:-cc} -E" >&2; exit 1; }
missing=
for n in $names; do
	grep -q "\`$n\`" "$doc" || missing="$missing $n"
done
if [ -n "$missing" ]; then
	echo "porting-calls: doc/porting.md does not give the status of:$missing" >&2
	exit 1
fi
echo "porting-calls: the $(echo "$names" | wc -l) pthread_* and sem_* functions are all in doc/porting.md"
