#!/bin/sh
# tests/mpi-thirdparty/get-and-build.sh DIR NP [N]: gets the third-party MPI program
# ready to run on NP ranks in DIR, and prints its path. The program is HPC Challenge
# (hpcc), as Debian builds it from its unchanged source (README.md says why this one and
# not a vendored copy): there is nothing to compile here, so what this builds is the run
# directory: DIR/hpccinf.txt, the input hpcc reads from its working directory, for an
# HPL problem of order N (default 1200, in 30 panel steps of 40 columns) on a P x Q grid
# of the NP ranks, and no DIR/hpccoutf.txt, which hpcc appends to.
#
# Run it as: (cd DIR && mpirun -np NP "$(get-and-build.sh DIR NP)"); its verdicts are in
# DIR/hpccoutf.txt. MARCEL_HPCC names another hpcc than the one on PATH.
# Exit status: 0 ready; 77 no hpcc here (the caller skips); 2 a bad argument; 1 an hpcc
# that a library preloaded with LD_PRELOAD could not follow (no shared libmpi).
set -eu
me=get-and-build.sh

usage() {
	echo "$me: $1" >&2
	echo "usage: $me DIR NP [N]: DIR the run directory (made if missing), NP the ranks (1 to 4096)," >&2
	echo "       N the HPL matrix order (40 to 100000, default 1200)" >&2
	exit 2
}
# A decimal number from $3 to $4, or a usage error naming argument $1.
number() {
	case $2 in
	'' | *[!0-9]* | 0?*) usage "$1 '$2' is not a number from $3 to $4" ;;
	esac
	[ ${#2} -le 6 ] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || usage "$1 '$2' is not a number from $3 to $4"
}

[ $# -ge 2 ] && [ $# -le 3 ] || usage "takes 2 or 3 arguments, not $#"
dir=$1 np=$2 n=${3:-1200}
[ -n "$dir" ] || usage "DIR is empty"
number NP "$np" 1 4096
number N "$n" 40 100000

if [ -n "${MARCEL_HPCC:-}" ]; then
	[ -f "$MARCEL_HPCC" ] && [ -x "$MARCEL_HPCC" ] || usage "MARCEL_HPCC='$MARCEL_HPCC' is not an executable file"
	hpcc=$MARCEL_HPCC
else
	hpcc=$(command -v hpcc || true)
	if [ -z "$hpcc" ]; then
		echo "$me: skipped: hpcc, the third-party MPI program, is not installed" \
			"(Debian package hpcc; tools/deps installs it) and MARCEL_HPCC names none"
		exit 77
	fi
fi
# A PMPI library preloaded into the program sees its MPI calls only if the program
# reaches MPI through the dynamic linker.
if ! readelf -d "$hpcc" 2>/dev/null | grep -q 'NEEDED.*\[libmpi\.so'; then
	echo "$me: $hpcc is not linked with a shared libmpi: a library preloaded into it could not follow its" \
		"MPI calls" >&2
	exit 1
fi

# HPL wants P <= Q: P is the largest divisor of NP not above its square root.
p=1 i=1
while [ $((i * i)) -le "$np" ]; do
	[ $((np % i)) -eq 0 ] && p=$i
	i=$((i + 1))
done
q=$((np / p))

mkdir -p "$dir"
rm -f "$dir/hpccoutf.txt"
# HPL's input format: one value per line, each followed by its description, then
# PTRANS's. The algorithm choices are those of hpcc's sample input; only the problem
# and the grid change. Line 32 is a separator that HPL skips.
cat >"$dir/hpccinf.txt" <<EOF
HPLinpack benchmark input file
written by marcel's tests/mpi-thirdparty/get-and-build.sh for $np ranks
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
$n           Ns
1            # of NBs
40           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
$p           Ps
$q           Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
EOF
echo "$hpcc"
