#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: deps + build + lint + runner self-test + the VM suite, in this
# order. Every stage runs even if an earlier one failed (except deps), so one
# run shows everything; each stage counts as one test in the final line
# "N passed, N failed[, N skipped]". Exit status non-zero on any failure.
#
# Env: CASES (subset of the VM suite), KERNEL=stock|debug, KVER, KDIR,
# SKIP_LINT=1 / SKIP_SELFTEST=1 (developer shortcuts; not for CI).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
cd "$REPO"
t0=$(date +%s)

"$REPO/scripts/deps.sh" || { echo "check: deps failed"; echo "0 passed, 1 failed"; exit 1; }
. "$HERE/vm/kernel.sh" || exit 1

LOGDIR=$BUILD/logs/$(date +%Y%m%d-%H%M%S)-check-$KERNEL-$$
mkdir -p "$LOGDIR"
STAGES=$LOGDIR/stages
: >"$STAGES"
export LOGDIR

stage() {	# stage NAME CMD...: run a stage, print its output, record ok/not ok
	local name=$1 ts rc
	shift
	ts=$(date +%s)
	echo "=== $name"
	"$@" 2>&1 | tee "$LOGDIR/$name.log"
	rc=${PIPESTATUS[0]}
	echo "=== $name: $([ "$rc" = 0 ] && echo ok || echo FAILED) ($(($(date +%s) - ts)) s)"
	if [ "$rc" = 0 ]; then
		echo "ok - $name" >>"$STAGES"
	else
		echo "not ok - $name # exit $rc, see ${LOGDIR#"$REPO"/}/$name.log" >>"$STAGES"
	fi
}

if [ -n "$KERNEL_SKIP" ]; then
	echo "check: $KERNEL kernel: $KERNEL_SKIP"
	echo "ok 1 all [$KERNEL] - $KERNEL kernel suite # SKIP $KERNEL_SKIP"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

stage build "$HERE/vm/build.sh"
[ "${SKIP_LINT:-0}" = 1 ] || stage lint "$REPO/scripts/lint.sh"
# The self-test proves the runner, which does not depend on the kernel: on
# the (slow) debug kernel only its parser half runs.
if [ "$KERNEL" = debug ]; then
	SELFTEST_VM=0 stage selftest "$HERE/selftest/run.sh"
elif [ "${SKIP_SELFTEST:-0}" != 1 ]; then
	stage selftest "$HERE/selftest/run.sh"
fi

echo "=== VM suite (${CASES:-all cases}, kernel $KVER)"
LOGDIR=$LOGDIR/suite EXTRA_RESULTS=$STAGES NO_BUILD=1 RUN_T0=$t0 exec "$HERE/run.sh"
