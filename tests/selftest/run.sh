#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runner self-test: proves that tests/run.sh cannot pass a failing case.
#  1. Parser checks on hand-made results files (no VM): a stale or forged end
#     marker, a missing end marker, a missing kernel check, an empty file;
#     each kernel report pattern in a console log (KERNEL_BAD_RE);
#     the boots that case headers ask for (--list: drivers x SM modes).
#  2. The cases in tests/selftest/cases/ booted for real: pass.sh must pass;
#     every fail-*.sh must be reported as failed for its own reason (a failed
#     test, no end marker, a WARNING in dmesg, a taint, a crash, a forged end
#     marker, a hang stopped by the hard timeout, a non-zero exit, no test);
#     fail-twovm-peer-dies.sh (VM1 crashes, VM0 waits at a barrier) must fail
#     for both VMs without waiting for the timeout;
#     fail-console-only.sh (a report the ring buffer lost) must fail from the
#     console; shared-*.sh (one shared boot) must pass, fail for its own
#     reason after a clean reset, crash, and be reported not run, in order;
#     skip-counted.sh must count as skipped, not passed; fail-sm-header.sh
#     (an unknown "# sm:" mode) must fail without a boot; and the run as a whole
#     must exit non-zero with a final line that adds up.
# Prints "ok - ..." / "not ok - ..." per check; exit non-zero if any failed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=$HERE/../run.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bad=0

res() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; bad=1; fi; }

# parse_case NAME EXPECT(pass|fail) CONTENT...: feed a results file to --parse
parse_case() {
	local name=$1 expect=$2 out rc
	shift 2
	printf '%s\n' "$@" >"$T/res"
	out=$("$RUN" --parse "$T/res" 1234abcd)
	rc=$?
	if [ "$expect" = pass ]; then
		[ $rc = 0 ] && ! grep -q '^not ok' <<<"$out"
	else
		[ $rc != 0 ] && grep -q '^not ok' <<<"$out"
	fi
	res $? "parser: $name is a $expect"
}

parse_case "complete run" pass "ok 1 - a" "ok 2 - kernel clean" "END 1234abcd"
parse_case "CRLF line ends" pass $'ok 1 - a\r' $'ok 2 - kernel clean\r' $'END 1234abcd\r'
parse_case "empty results" fail ""
parse_case "no end marker" fail "ok 1 - a" "ok 2 - kernel clean"
parse_case "stale end marker of another boot" fail "ok 1 - a" "ok 2 - kernel clean" "END 99999999"
parse_case "bare end marker" fail "ok 1 - a" "ok 2 - kernel clean" "END"
parse_case "no kernel check" fail "ok 1 - a" "END 1234abcd"
parse_case "no case test" fail "ok 1 - kernel clean" "END 1234abcd"
parse_case "a failed test" fail "ok 1 - a" "not ok 2 - b # why" "ok 3 - kernel clean" "END 1234abcd"
parse_case "dirty kernel" fail "ok 1 - a" "not ok 2 - kernel clean # WARNING" "END 1234abcd"
out=$("$RUN" --parse <(printf '%s\n' "ok 1 - a # SKIP no hw" "ok 2 - kernel clean" "END 1234abcd") 1234abcd)
grep -q '^ok 1 parse - a # SKIP no hw$' <<<"$out" && [ "$(tail -n 1 <<<"$out")" = "1 passed, 0 failed, 1 skipped" ]
res $? "parser: a skip is counted as skipped, not passed"

# console_case NAME EXPECT CONSOLE_LINE: a complete, clean results file with a
# console holding LINE (among boot noise): the whole console is scanned
console_case() {
	local out rc
	printf '%s\n' "ok 1 - a" "ok 2 - kernel clean" "END 1234abcd" >"$T/res"
	printf '%s\r\n' "[    0.000000] Linux version 6.1.0" "init: case=x" "$3" \
		"### ok 1 - a" "[    9.100000] reboot: Power down" >"$T/con"
	out=$("$RUN" --parse "$T/res" 1234abcd "$T/con")
	rc=$?
	if [ "$2" = pass ]; then
		[ $rc = 0 ] && grep -q '^ok [0-9]* parse - kernel console clean$' <<<"$out"
	else
		[ $rc != 0 ] && grep -q '^not ok [0-9]* parse - kernel console clean # console: ' <<<"$out"
	fi
	res $? "console: $1 is a $2"
}
console_case "a clean console" pass "[    2.000000] ib0: something ordinary"
console_case "a case's own output naming a report" pass "case: WARNING: not a kernel line"
console_case "a WARNING" fail "[    3.123456] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x0/0x0"
console_case "a leaked netdev reference" fail \
	"[  130.000001] unregister_netdevice: waiting for ib0 to become free. Usage count = 2"
console_case "softib: a send buffer touched before its completion" fail \
	"[   42.000003] softib: sib0: QP 72: send data changed between ib_post_send and transmission (a buffer touched before its completion)"
console_case "a hung task" fail \
	"[  250.000002] INFO: task kworker/0:1:42 blocked for more than 120 seconds."
console_case "a hung task without INFO" fail \
	"[  250.000002] task:kworker/0:1 blocked for more than 120 seconds."
console_case "an RCU stall (self-detected)" fail \
	"[   60.000003] rcu: INFO: rcu_sched self-detected stall on CPU"
console_case "an RCU stall (detected)" fail \
	"[   60.000004] rcu: rcu_preempt detected stalls on CPUs/tasks:"
console_case "a report behind a partial line" fail \
	"init: ok[   61.000005] BUG: kernel NULL pointer dereference, address: 0"

# --- the boots the case headers ask for (--list, no VM) ---
mkdir -p "$T/cases"
printf '%s\n' '#!/bin/sh' '# drivers: stock ours' '# sm: embedded opensm' >"$T/cases/a.sh"
printf '%s\n' '#!/bin/sh' >"$T/cases/b.sh"
printf '%s\n' '#!/bin/sh' '# drivers: ours/stock' '# vms: 2' '# sm: opensm  # comment' >"$T/cases/c.sh"
out=$(CASES_DIR=$T/cases CASES= "$RUN" --list | tr '\n' ,)
[ "$out" = "a [stock],a [stock+opensm],a [ours],a [ours+opensm],b [ours],c [ours/stock+opensm]," ]
res $? "headers: '# sm:' adds one boot per SM mode, labelled [driver+opensm] ($out)"

# --- 2. real boots ---
if [ "${SELFTEST_VM:-1}" = 0 ]; then
	echo "selftest: VM half not run (SELFTEST_VM=0)"
	[ $bad = 0 ] && echo "selftest: all checks passed" || echo "selftest: FAILED"
	exit $bad
fi
export LOGDIR=${LOGDIR:-$(realpath -m "$HERE/../../build/logs/selftest-$$")}
LOGDIR=$LOGDIR/selftest
out=$(CASES_DIR=$HERE/cases CASES= NO_BUILD=${NO_BUILD:-1} "$RUN" 2>&1)
rc=$?
printf '%s\n' "$out" >"$T/out"
printf '%s\n' "$out" | grep -E '^(ok|not ok|# [a-z-]+ \[)' | sed 's/^/  | /'
res $((rc == 0)) "runner exits non-zero when cases fail (exit $rc)"

expect_fail() {	# expect_fail CASE REGEX-of-the-failed-line
	grep -E "^not ok [0-9]+ $1 \[stock\] - $2" "$T/out" >/dev/null
	res $? "VM: $1 is reported failed ($2)"
}
! grep -qE '^not ok [0-9]+ pass \[' "$T/out" && grep -qE '^ok [0-9]+ pass \[stock\] - kernel clean' "$T/out"
res $? "VM: pass.sh passes (positive control)"
expect_fail fail-report 'a deliberate failure'
expect_fail fail-noend 'boot completed # VM stopped without the end marker'
expect_fail fail-warn 'kernel clean # dmesg: .*WARNING'
expect_fail fail-taint 'kernel clean # tainted'
expect_fail fail-panic 'boot completed # kernel panic'
expect_fail fail-forged-end 'boot completed'
expect_fail fail-hang 'boot completed # VM killed by the hard timeout'
expect_fail fail-exit 'case script exit status'
expect_fail fail-silent 'case reported tests'
expect_fail fail-console-only 'kernel console clean # console: .*blocked for more than'
grep -qE '^ok [0-9]+ fail-console-only \[stock\] - kernel clean$' "$T/out"
res $? "VM: fail-console-only: the guest's dmesg check missed the report (cleared ring buffer), the console scan did not"
grep -qE '^not ok [0-9]+ fail-twovm-peer-dies \[stock/stock\] vm1 - boot completed # kernel panic' "$T/out" &&
	grep -qE '^not ok [0-9]+ fail-twovm-peer-dies \[stock/stock\] vm0 - boot completed # VM stopped by the runner' "$T/out" &&
	grep -qE '^# fail-twovm-peer-dies \[stock/stock\]: ([0-9]|[1-9][0-9]|1[01][0-9]) s' "$T/out"
res $? "VM: two-VM case whose peer crashes fails well before its timeout, both VMs reported"
grep -qE '^# \[stock\] shares one boot: shared-a-pass shared-b-fail shared-c-panic shared-d-after' "$T/out" &&
	! grep -qE '^not ok [0-9]+ shared-a-pass \[stock\]' "$T/out" &&
	grep -qE '^ok [0-9]+ shared-a-pass \[stock\] - kernel console clean' "$T/out"
res $? "VM: shared boot: the four shared-* cases share one boot; the first passes"
[ "$(grep -cE '^not ok [0-9]+ shared-b-fail \[stock\]' "$T/out")" = 1 ] &&
	grep -qE '^not ok [0-9]+ shared-b-fail \[stock\] - a deliberate failure' "$T/out" &&
	grep -qE '^ok [0-9]+ shared-b-fail \[stock\] - kernel clean' "$T/out"
res $? "VM: shared boot: the second fails for its own failure only (the reset cleared the first's leftovers)"
expect_fail shared-c-panic 'boot completed # kernel panic'
expect_fail shared-d-after 'run # not run: the boot it shared ended during shared-c-panic'
grep -qE '^ok [0-9]+ skip-counted \[stock\] - cannot run here # SKIP' "$T/out"
res $? "VM: skip-counted.sh's skip is reported as SKIP"
grep -qE '^not ok [0-9]+ fail-sm-header \[stock\+bogus\] - case header # unknown subnet manager' "$T/out"
res $? "VM: an unknown '# sm:' mode is a failure, not a boot"
grep -qE '^ok [0-9]+ pass \[stock\] - SM_MODE is embedded by default' "$T/out"
res $? "VM: the guest gets SM_MODE (embedded by default)"

last=$(tail -n 1 "$T/out")
nf=$(grep -c '^not ok' "$T/out")
np=$(grep -E '^ok ' "$T/out" | grep -vc '# SKIP')
ns=$(grep -E '^ok ' "$T/out" | grep -c '# SKIP')
[ "$last" = "$np passed, $nf failed, $ns skipped" ]
res $? "final line adds up: '$last' (counted $np/$nf/$ns)"

[ $bad = 0 ] && echo "selftest: all checks passed" || echo "selftest: FAILED"
exit $bad
