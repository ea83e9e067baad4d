#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: deps + lint + build + runner self-test + the DKMS package +
# the VM suite on the stock kernel + the 6.12 tier + the 7.x tier + the
# debug tier, reported in this order (the suite and the tiers run at once,
# sharing the VM slots). Every stage runs even if an earlier one failed
# (except deps), so one run shows everything; each stage counts as one test
# in the final line "N passed, N failed[, N skipped]".
# Exit status non-zero on any failure.
#
# The debug tier: the cases whose header says "# tier: debug" (the fault
# matrix and a few core cases) booted again on the debug kernel (KASAN,
# lockdep, kmemleak, UBSAN; tests/vm/kernel.sh finds it). It runs whenever
# that kernel is there and is counted as one skipped test, with the reason,
# when it is not. `make check-debug` (KERNEL=debug) runs the whole suite on
# the debug kernel instead.
#
# The 6.12 tier: the cases whose header says "# tier: 612" (the core
# functional cases) booted again on Debian's Linux 6.12 (KVER612, see
# tests/vm/kernel.sh), for the drivers of "# 612-drivers:" (default: those
# of "# drivers:") with the embedded SM only ("# 612-sm:" adds OpenSM),
# labelled "[ours@6.12]". Its test numbers follow the stock suite's, and the
# debug tier's follow its own. With no 6.12 kernel installed it counts as
# one skipped test, with the reason; with KVER=6.12 the suite itself ran
# there and the tier is not repeated.
#
# Env: CASES (subset of the VM suite; the tiers take their cases among
# them), KERNEL=stock|debug, KVER, KDIR, KVER612, KDIR612, SKIP_LINT=1 /
# SKIP_SELFTEST=1 / SKIP_DKMS=1 / DEBUG_TIER=0 / TIER612=0 / TIER7=0
# (developer shortcuts; not for CI).
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
# every tier's failures, listed again above the final total (run.sh)
export FAILS_OUT=$LOGDIR/failures
: >"$FAILS_OUT"

stage() {	# stage NAME CMD...: run a stage, print its output, record ok/not ok
	local name=$1 ts rc
	shift
	ts=$(date +%s)
	echo "=== $name"
	"$@" 2>&1 | tee "$LOGDIR/$name.log"
	rc=${PIPESTATUS[0]}
	stage_record "$name" "$rc" $(($(date +%s) - ts))
}

# stage_bg NAME CMD...: start a stage in the background, its output to its
# log only; stage_wait NAME prints that log and records it. For a stage
# that mostly computes beside one that mostly waits (the dkms stage's
# module builds beside the self-test's deliberate time-outs).
declare -A bg_pid=()
stage_bg() {
	local name=$1
	shift
	rm -f "$LOGDIR/$name.rc"
	(
		ts=$(date +%s)
		"$@" >"$LOGDIR/$name.log" 2>&1
		echo "$? $(($(date +%s) - ts))" >"$LOGDIR/$name.rc"
	) &
	bg_pid[$name]=$!
}
stage_wait() {
	local name=$1 rc secs
	wait "${bg_pid[$name]}"
	read -r rc secs <"$LOGDIR/$name.rc" || { rc=1 secs=0; }
	echo "=== $name (in the background)"
	cat "$LOGDIR/$name.log"
	stage_record "$name" "$rc" "$secs"
}

# stage_record NAME RC SECONDS (exit status 77: skipped, with the reason
# its last "skip: " line gives)
stage_record() {
	local name=$1 rc=$2
	echo "=== $name: $([ "$rc" = 0 ] && echo ok || echo FAILED) ($3 s)"
	if [ "$rc" = 0 ]; then
		echo "ok - $name" >>"$STAGES"
	elif [ "$rc" = 77 ]; then	# cannot run here: its last "skip: WHY" line
		echo "ok - $name # SKIP $(sed -n 's/^skip: //p' "$LOGDIR/$name.log" | tail -n 1)" >>"$STAGES"
	else
		echo "not ok - $name # exit $rc, see ${LOGDIR#"$REPO"/}/$name.log" >>"$STAGES"
	fi
}

# count_stages FILE: FILE's "ok - NAME" / "not ok - NAME # why" lines (a
# stage that ended after the stock suite began) as tests numbered after
# $COUNTS, as run.sh counts EXTRA_RESULTS.
count_stages() {
	local n p f s line x
	read -r n p f s <"$COUNTS"
	while IFS= read -r line; do
		n=$((n + 1))
		x=${line#*- }
		case $line in
		"not ok"*)
			f=$((f + 1))
			echo "not ok $n host - $x"
			echo "not ok $n host - $x" | cut -c1-300 >>"$FAILS_OUT"
			;;
		"ok"*"# SKIP"*) s=$((s + 1)); echo "ok $n host - $x" ;;
		"ok"*) p=$((p + 1)); echo "ok $n host - $x" ;;
		esac
	done <"$1"
	echo "$n $p $f $s" >"$COUNTS"
}

if [ -n "$KERNEL_SKIP" ]; then
	echo "check: $KERNEL kernel: $KERNEL_SKIP"
	echo "ok 1 all [$KERNEL] - $KERNEL kernel suite # SKIP $KERNEL_SKIP"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

# The lint first: it compiles every module, for 6.1, 6.12 and 7.x, in the
# trees the build stage, the tiers and make install use (with sparse), so
# that they find them built (about 90 s less than compiling twice), and
# makes the sid root the dkms stage and the 7.x tier need.
[ "${SKIP_LINT:-0}" = 1 ] || stage lint "$REPO/scripts/lint.sh"
stage build "$HERE/vm/build.sh"
# The DKMS package installed, upgraded and removed by dpkg, and make
# install / uninstall, in a throw-away root on the host (tests/dkms.sh);
# tests/cases/dkms.sh loads what each left in a VM. Not on the debug
# kernel, whose kernel tree is not installed. It runs beside the self-test
# (which waits more than it computes) and the start of the VM suite, not
# beside the lint: both compile, and together they took 60 s longer than
# one after the other (2026-12-03). The suite does not wait for it: the
# dkms cases' boots do ("# after: DKMS_STAGE_RC", without a VM slot), and
# it is counted after the suite (count_stages).
late=()
if [ "$KERNEL" != debug ] && [ "${SKIP_DKMS:-0}" != 1 ]; then
	stage_bg dkms "$HERE/dkms.sh"
	late+=(dkms)
	export DKMS_STAGE_RC=$LOGDIR/dkms.rc
fi
# The self-test proves the runner, which does not depend on the kernel: on
# the (slow) debug kernel only its parser half runs. (Its deliberate
# failures are not this run's: no FAILS_OUT.)
if [ "$KERNEL" = debug ]; then
	stage selftest env -u FAILS_OUT SELFTEST_VM=0 "$HERE/selftest/run.sh"
elif [ "${SKIP_SELFTEST:-0}" != 1 ]; then
	stage selftest env -u FAILS_OUT "$HERE/selftest/run.sh"
fi

# --- the stock suite and the kernel tiers, sharing the VM slots ---
# The tiers run beside the stock suite, each a run of tests/run.sh on its
# own kernel, and all share the JOBS VM slots (tests/vm/pool.sh: the
# longest waiting job of any run goes next). One after the other, each
# tier ended with a core idle behind its last long boot: 2-3 minutes of a
# full run (2026-12-07). The stock suite prints as it goes; each tier's
# output waits in a file and is printed after it, its tests numbered after
# those before it, so that the log reads as if they ran in turn. (The host
# stages beside the VMs as well, to save their 7 minutes, was tried the
# same day and undone: the compilers beside the guests made the guests two
# times slower and ipoib-cm-scale failed.)
COUNTS=$LOGDIR/counts
: "${JOBS:=$([ "${CI:-}" = true ] && echo 2 || echo 1)}"
export JOBS POOL=$LOGDIR/pool
. "$HERE/vm/pool.sh"
pool_init "$POOL" "$JOBS"

# tier_cases TIER: the cases whose header names TIER in "# tier:", among
# those CASES selects, into sel[].
tier_cases() {
	local f c p tier=()
	for f in "$REPO"/tests/cases/*.sh; do
		sed -n '1,30p' "$f" | grep -qE "^# *tier:.*\\b$1\\b" && tier+=("$(basename "$f" .sh)")
	done
	sel=()
	if [ -n "${CASES:-}" ]; then
		for c in "${tier[@]}"; do
			for p in ${CASES//,/ }; do
				# shellcheck disable=SC2053
				if [[ $c == $p ]] || { [[ $c =~ ^($p)$ ]] 2>/dev/null; }; then
					sel+=("$c")
					break
				fi
			done
		done
	else
		sel=("${tier[@]}")
	fi
}

# fails_list: the failed tests again above the total, as run.sh prints them
fails_list() {
	[ -s "$FAILS_OUT" ] || return 0
	echo "# the $(wc -l <"$FAILS_OUT") failed test(s) of this run:"
	tail -n 12 "$FAILS_OUT" | sed 's/^/#   /'
}

# count_skip LABEL NAME REASON: one skipped test, numbered after $COUNTS.
count_skip() {
	local n p f s
	read -r n p f s <"$COUNTS"
	n=$((n + 1))
	echo "ok $n $1 - $2 # SKIP $3"
	echo "$n $p $f $((s + 1))" >"$COUNTS"
}

# tier_run ENV...: tests/run.sh with the env(1) command ENV... and the
# tier's counts; if run.sh ends without writing them, tier_print counts
# one failure
tier_run() {
	mv "$COUNTS" "$COUNTS.in"
	"$@" COUNTS_IN="$COUNTS.in" COUNTS_OUT="$COUNTS" NO_SUMMARY=1 "$HERE/run.sh"
}

# tier_wanted TIER SWITCH NAME: the tier's cases into sel[]; false, saying
# why, when the variable SWITCH is 0 or CASES selects none of them
tier_wanted() {
	tier_cases "$1"
	if [ "${!2:-1}" = 0 ]; then
		echo "check: $3 tier not run ($2=0)"
		return 1
	elif [ ${#sel[@]} = 0 ]; then
		echo "check: no $3-tier case among CASES='${CASES:-}': $3 tier not run"
		return 1
	fi
}

# --- the 6.12 tier ---
tier_612() {
	tier_wanted 612 TIER612 6.12 || return 0
	if [ "$KVER" = "$KVER612" ]; then
		echo "check: the suite ran on $KVER: 6.12 tier not repeated"
	elif [ -z "$KVER612" ] || [ ! -e "/boot/vmlinuz-$KVER612" ]; then
		count_skip "all [@6.12]" "6.12 tier" \
			"no Linux 6.12 kernel and headers installed (scripts/deps.sh installs linux-image-6.12-amd64 and linux-headers-6.12-amd64)"
	else
		local t612 t612_env
		t612=$(date +%s)
		echo "=== 6.12 tier ($KVER612): ${sel[*]}"
		t612_env=("${KERNEL_ENV[@]}" KERNEL=stock KVER="$KVER612" KDIR="$KDIR612"
			  TIER=612 KERNEL_TAG=@6.12)
		stage build-612 "${t612_env[@]}" "$HERE/vm/build.sh"
		tier_run "${t612_env[@]}" CASES="${sel[*]}" \
			NO_BUILD=1 EXTRA_RESULTS="$STAGES" LOGDIR="$LOGDIR/612"
		echo "# 6.12 tier done after $(($(date +%s) - t612)) s"
	fi
}

# --- the 7.x tier ---
# The cases whose header says "# tier: 7" (a core set: datapath, multicast,
# P_Key children, connected mode, fabric events, rdma_cm, device removal,
# enhanced IPoIB) on sid's newest Linux 7.x, from scripts/sid.sh's root
# (the lint made it and built the modules there) and its image (fetched
# here, once), labelled "[ours@7.2]"; "# 7-drivers:" and "# 7-sm:" as for
# the 6.12 tier. Two-VM cases boot VM1 on the suite's kernel (6.1):
# "[ours@7.2/stock@6.1]".
tier_7() {
	local t7 kver7 tag7 t7_env
	tier_wanted 7 TIER7 7.x || return 0
	case $KVER in
	7.*) echo "check: the suite ran on $KVER: 7.x tier not repeated"; return ;;
	esac
	t7=$(date +%s)
	stage sid-image-7 bash -c '"$0/scripts/sid.sh" root >/dev/null && "$0/scripts/sid.sh" image' "$REPO"
	kver7=$("$REPO/scripts/sid.sh" kver 2>/dev/null || true)
	if [ -z "$kver7" ]; then
		count_stages "$STAGES"
		count_skip "all [@7.x]" "7.x tier" "no sid root: see the sid-image-7 stage"
		return
	fi
	tag7=@$(echo "$kver7" | cut -d. -f1,2)
	echo "=== 7.x tier ($kver7): ${sel[*]}"
	t7_env=("${KERNEL_ENV[@]}" KERNEL=stock KVER="$kver7" TIER=7
		KERNEL_TAG="$tag7" PEER_KVER="$KVER" PEER_TAG=@$(echo "$KVER" | cut -d. -f1,2))
	stage build-7 "${t7_env[@]}" "$HERE/vm/build.sh"
	tier_run "${t7_env[@]}" CASES="${sel[*]}" \
		NO_BUILD=1 EXTRA_RESULTS="$STAGES" LOGDIR="$LOGDIR/7"
	echo "# 7.x tier done after $(($(date +%s) - t7)) s"
}

# --- the debug tier ---
tier_debug() {
	local skip_why debug_env
	tier_wanted debug DEBUG_TIER debug || return 0
	# A fresh environment for the debug kernel: kernel.sh exported the stock one.
	debug_env=("${KERNEL_ENV[@]}" KERNEL=debug)
	skip_why=$("${debug_env[@]}" bash -c '. "$0/vm/kernel.sh" >/dev/null && echo "$KERNEL_SKIP"' "$HERE")
	if [ -n "$skip_why" ]; then
		echo "check: debug tier skipped: $skip_why"
		# run.sh counts the skip, with its reason
		tier_run "${debug_env[@]}" \
			CASES="${sel[*]}" NO_BUILD=1 LOGDIR="$LOGDIR/debug"
		return
	fi
	echo "=== debug tier: ${sel[*]}"
	# shellcheck disable=SC2016
	stage build-debug "${debug_env[@]}" bash -c '. "$0/vm/kernel.sh" && "$0/vm/build.sh"' "$HERE"
	tier_run "${debug_env[@]}" CASES="${sel[*]}" \
		NO_BUILD=1 EXTRA_RESULTS="$STAGES" LOGDIR="$LOGDIR/debug"
}

# tier_bg NAME: run tier_NAME in the background, its output, stages,
# counts and failures in files of its own, numbered from 1
tier_bg() {
	(
		STAGES=$LOGDIR/stages-$1 COUNTS=$LOGDIR/counts-$1 FAILS_OUT=$LOGDIR/failures-$1
		: >"$STAGES"
		: >"$FAILS_OUT"
		echo "0 0 0 0" >"$COUNTS"
		"tier_$1"
	) >"$LOGDIR/out-$1" 2>&1 &
	tier_pid[$1]=$!
}

# tier_print NAME: wait for tier NAME, print its output and failures with
# its tests numbered after $COUNTS', and add its counts to them
tier_print() {
	local n p f s tn tp tf ts renum
	wait "${tier_pid[$1]}"
	read -r n p f s <"$COUNTS"
	# "ok N ..." / "not ok N ...": N + off, the rest as it was
	renum='match($0, /^(not )?ok [0-9]+ /) { k = ($1 == "not") ? 8 : 4
		$0 = substr($0, 1, k - 1) (substr($0, k, RLENGTH - k) + off) substr($0, RLENGTH) } 1'
	awk -v off="$n" "$renum" "$LOGDIR/out-$1"
	awk -v off="$n" "$renum" "$LOGDIR/failures-$1" >>"$FAILS_OUT"
	tn=
	[ -s "$LOGDIR/counts-$1" ] && read -r tn tp tf ts <"$LOGDIR/counts-$1"
	if [ -z "$tn" ]; then	# its run.sh died before its totals: one failure
		echo "not ok $((n + 1)) run - $1 tier # tests/run.sh ended without its totals" |
			tee -a "$FAILS_OUT"
		tn=1 tp=0 tf=1 ts=0
	fi
	echo "$((n + tn)) $((p + tp)) $((f + tf)) $((s + ts))" >"$COUNTS"
}

declare -A tier_pid=()
if [ "$KERNEL" = debug ]; then
	echo "check: the suite runs on the debug kernel: no kernel tiers"
else
	tier_bg 612
	tier_bg 7
	tier_bg debug
fi

echo "=== VM suite (${CASES:-all cases}, kernel $KVER)"
LOGDIR=$LOGDIR/suite EXTRA_RESULTS=$STAGES NO_BUILD=1 COUNTS_OUT=$COUNTS NO_SUMMARY=1 \
	"$HERE/run.sh"
echo "# stock suite done after $(($(date +%s) - t0)) s"
if [ ! -s "$COUNTS" ]; then	# run.sh died before its totals: one failure
	echo "not ok 1 run - VM suite # tests/run.sh ended without its totals" | tee -a "$FAILS_OUT"
	echo "1 0 1 0" >"$COUNTS"
fi
STAGES=$LOGDIR/stages-late
: >"$STAGES"
for st in "${late[@]}"; do
	stage_wait "$st"
done
count_stages "$STAGES"
for t in 612 7 debug; do
	[ -n "${tier_pid[$t]:-}" ] && tier_print "$t"
done

read -r _ p f s <"$COUNTS"
fails_list
echo "# total time $(($(date +%s) - t0)) s"
echo "$p passed, $f failed$([ "$s" -gt 0 ] && echo ", $s skipped")"
[ "$f" = 0 ] && [ "$p" -gt 0 ]
