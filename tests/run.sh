#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side test runner: boots one VM (or two) per case x driver and reports.
#
#   tests/run.sh                       all of tests/cases/*.sh on the stock kernel
#   CASES='softib-*' tests/run.sh      a subset: glob(s) or regex(es) on the case
#                                      name, separated by ',' or spaces
#   KERNEL=debug tests/run.sh          on the debug kernel (2 GiB per VM)
#   tests/run.sh --parse RESULTS NONCE [CONSOLE] [LABEL]
#                                      only parse one results file (self-test)
#   tests/run.sh --list                print the boots the selected cases make,
#                                      one label a line, and boot nothing
#
# Env: CASES_DIR (default tests/cases), LOGDIR (default build/logs/<time>-...),
# EXTRA_RESULTS (a file of "ok - name" / "not ok - name # why" lines from
# earlier stages, e.g. lint, counted in the totals), NO_BUILD=1 (do not call
# tests/vm/build.sh), DRIVERS (only these boots: "ours", "stock",
# "ours/stock"...; separated by ',' or spaces), TIMEOUT_SCALE (multiplies every case's timeout),
# COUNTS_IN / COUNTS_OUT (a file "N PASS FAIL SKIP": start the numbering and
# totals from it / write them there at the end, so that tests/check.sh can
# run the suite on two kernels and print one total), NO_SUMMARY=1 (no final
# line: an earlier run of a chain of runs), FAILS_OUT (a file the failed
# tests are appended to; the summary lists them again above the total).
# Case headers (first 30 lines): "# drivers: ours stock" (a boot per driver,
# "ours/stock" pairs for two VMs), "# opensm-drivers:" (of those, the ones
# also booted under OpenSM when "# sm:" has it), "# vms: 1|2", "# timeout: S",
# "# sm: embedded opensm" (a boot per SM mode too; default embedded: the label
# of an OpenSM boot is "[driver+opensm]", the guest gets SM_MODE),
# "# debug-drivers:" / "# debug-sm:" (the same on the debug kernel),
# "# 612-drivers:" / "# 612-sm:" (in the 6.12 tier, TIER=612, whose boots
# are labelled "[driver@6.12]" through KERNEL_TAG), "# tier:", "# vm-hook:",
# "# env: VAR..." (host variables passed to the guest), "# after: VAR" (when
# the host variable VAR names a file, the case's boot starts only once it
# exists, e.g. the rc file of a stage make check runs in the background;
# it takes no VM slot meanwhile), "# vcpus: N" (a
# one-VM case about concurrency: its guest gets N vCPUs even when JOBS > 1
# gives the others one; it boots alone, not in a shared boot, and counts for
# one job: two VMs at a time then share the two cores with three vCPUs;
# never two such cases at once).
# Output: one line per test "ok N case [driver] - name", the guest's dmesg tail
# for a failed boot, and last exactly one line "N passed, N failed[, N skipped]".
# Exit status: 0 only if nothing failed and at least one test passed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

N=0 PASS=0 FAIL=0 SKIP=0
if [ -n "${COUNTS_IN:-}" ] && [ -s "$COUNTS_IN" ]; then
	read -r N PASS FAIL SKIP <"$COUNTS_IN"
fi

emit() {	# emit STATUS(ok|fail|skip) LABEL NAME [REASON]
	N=$((N + 1))
	case $1 in
	ok) PASS=$((PASS + 1)); echo "ok $N $2 - $3" ;;
	skip) SKIP=$((SKIP + 1)); echo "ok $N $2 - $3 # SKIP ${4:-}" ;;
	*) FAIL=$((FAIL + 1)); echo "not ok $N $2 - $3 # ${4:-failed}"
	   [ -n "${FAILS_OUT:-}" ] &&
		echo "not ok $N $2 - $3 # ${4:-failed}" | cut -c1-300 >>"$FAILS_OUT" ;;
	esac
}

# fails_list: the failed tests of the whole chain of runs again, just above
# the total, so that a log's last lines (all CI shows) name what failed.
fails_list() {
	[ -n "${FAILS_OUT:-}" ] && [ -s "$FAILS_OUT" ] || return 0
	echo "# the $(wc -l <"$FAILS_OUT") failed test(s) of this run:"
	tail -n 12 "$FAILS_OUT" | sed 's/^/#   /'
}

# The kernel reports lib.sh's kernel_check looks for (its KERNEL_BAD_RE line)
KERNEL_BAD_RE=$(sed -n "s/^KERNEL_BAD_RE='\(.*\)'\$/\1/p" "$HERE/lib.sh")

# console_bad CONSOLE: the first kernel reports in the whole console log, on
# one line. The guest's own check reads dmesg, whose ring buffer may have
# lost the oldest lines, and runs before the modules are unloaded and the VM
# powers off; the console has every kernel line of loglevel < 5 (every
# report), each after its "[ seconds.micros] " time stamp.
console_bad() {
	tr -d '\r' <"$1" | grep -aE "\[ *[0-9]+\.[0-9]{6}\] .*($KERNEL_BAD_RE)" |
		sed 's/^.*\(\[ *[0-9]*\.[0-9]\{6\}\] \)/\1/' | awk '!seen[$0]++' | head -n 3 |
		tr '\n#' ' _' | cut -c1-300
}

# parse_results RESULTS NONCE CONSOLE LABEL QEMU_RC [CASE...]: count one
# boot's results. With a CONSOLE file, also "kernel console clean"
# (console_bad). With CASEs, the boot was shared by those cases, in that
# order (run_one): each one's results follow a "CASE <name>" line and are
# labelled "<name> LABEL"; each must report its own kernel check and a test,
# the console is checked section by section ("init: case <name> begins"), and
# if the boot ended early the case that was running fails "boot completed"
# and those after it fail as not run.
# Returns 1 if anything in this boot failed.
parse_results() {
	local res=$1 nonce=$2 con=$3 label=$4 qrc=${5:-0}
	shift 5 2>/dev/null || shift $#
	local cases=("$@") cur=-1 lab=$label
	local line rest name reason ended=0 clean=0 tests=0 f0=$FAIL why i c
	[ ${#cases[@]} -gt 0 ] && lab="(before the first case) $label"
	if [ ${#cases[@]} -gt 0 ] && [ -f "$con" ]; then
		rm -f "$con".sec.*
		tr -d '\r' <"$con" | awk -v out="$con.sec" \
			'/^init: case [^ ]+ begins/ { n++ } { print > (out "." (n ? n : 1)) }'
	fi
	# case_close: the checks every case (or the whole boot) must pass
	case_close() {
		local c=$con
		[ $clean = 1 ] || emit fail "$lab" "kernel clean" "the kernel check did not report"
		[ $tests -gt 0 ] || emit fail "$lab" "case reported tests" "no test result from the case"
		[ ${#cases[@]} -gt 0 ] && c=$con.sec.$((cur + 1))
		[ -f "$c" ] || return 0
		why=$(console_bad "$c")
		if [ -n "$why" ]; then
			emit fail "$lab" "kernel console clean" "console: $why"
		else
			emit ok "$lab" "kernel console clean"
		fi
	}
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%$'\r'}
		[ $ended = 1 ] && continue	# nothing counts after the end marker
		case $line in
		"END $nonce")
			ended=1 ;;
		"CASE "*)
			[ ${#cases[@]} -gt 0 ] || continue
			[ $cur -ge 0 ] && case_close
			cur=$((cur + 1))
			clean=0 tests=0
			if [ "${line#CASE }" != "${cases[cur]:-}" ]; then
				emit fail "$label" "shared boot order" \
					"case '${line#CASE }' reported where '${cases[cur]:-none}' was due"
				ended=1
				cur=${#cases[@]}
			fi
			lab="${cases[cur]:-} $label" ;;
		"not ok "*)
			rest=${line#not ok }
			rest=${rest#* - }
			name=${rest%% # *}
			reason=${rest#"$name"}
			reason=${reason# # }
			[ "$name" = "kernel clean" ] && clean=1 || tests=$((tests + 1))
			emit fail "$lab" "$name" "${reason:-failed}" ;;
		"ok "*" # SKIP"*)
			rest=${line#ok }
			rest=${rest#* - }
			name=${rest%% # SKIP*}
			reason=${rest#*# SKIP}
			reason=${reason# }
			tests=$((tests + 1))
			emit skip "$lab" "$name" "$reason" ;;
		"ok "*)
			rest=${line#ok }
			rest=${rest#* - }
			name=${rest%% # *}
			if [ "$name" = "kernel clean" ]; then
				clean=1
			else
				tests=$((tests + 1))
			fi
			emit ok "$lab" "$name" ;;
		esac
	done <"$res"
	if [ $ended = 0 ]; then
		if [ -e "${con%.console}.stopped" ]; then
			why="VM stopped by the runner: the other VM ended without its end marker"
		elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
			why="VM killed by the hard timeout (${VM_TIMEOUT:-?}s)"
		elif grep -q 'Kernel panic' "$con" 2>/dev/null; then
			why="kernel panic: $(grep -m1 -o 'Kernel panic.*' "$con" | tr -d '\r' | cut -c1-160)"
		else
			why="VM stopped without the end marker (qemu exit $qrc)"
		fi
		[ $cur -lt 0 ] && [ ${#cases[@]} -gt 0 ] && { cur=0; lab="${cases[0]} $label"; }
		emit fail "$lab" "boot completed" "$why"
		if [ ${#cases[@]} -gt 0 ]; then
			c=$con.sec.$((cur + 1))
			[ -f "$c" ] && why=$(console_bad "$c") && [ -n "$why" ] &&
				emit fail "$lab" "kernel console clean" "console: $why"
			for ((i = cur + 1; i < ${#cases[@]}; i++)); do
				emit fail "${cases[i]} $label" "run" \
					"not run: the boot it shared ended during ${cases[cur]}"
			done
		elif [ -f "$con" ]; then
			why=$(console_bad "$con")
			if [ -n "$why" ]; then
				emit fail "$label" "kernel console clean" "console: $why"
			else
				emit ok "$label" "kernel console clean"
			fi
		fi
	else
		case_close
		for ((i = cur + 1; i < ${#cases[@]}; i++)); do
			emit fail "${cases[i]} $label" "run" "not run: absent from the shared boot's results"
		done
	fi
	[ "$FAIL" = "$f0" ]
}

show_failure() {	# show_failure OUTPREFIX: guest dmesg tail, log paths
	local con=$1.console
	echo "#   --- $(basename "$1"): guest log tail ($con) ---"
	if grep -q '^--- dmesg tail ---' "$con" 2>/dev/null; then
		sed -n '/^--- dmesg tail ---/,/^--- end of dmesg tail ---/p' "$con" | tr -d '\r' |
			grep -v '^--- ' | tail -n 40 | sed 's/^/#   /'
	else
		tr -d '\r' <"$con" 2>/dev/null | tail -n 40 | sed 's/^/#   /'
	fi
	[ -s "$1.qemu" ] && sed 's/^/#   qemu: /' "$1.qemu" | tail -n 5
}

summary() {
	local s="$PASS passed, $FAIL failed"
	[ -n "${COUNTS_OUT:-}" ] && echo "$N $PASS $FAIL $SKIP" >"$COUNTS_OUT"
	if [ "${NO_SUMMARY:-0}" = 1 ]; then
		[ "$FAIL" = 0 ]
		return
	fi
	fails_list
	[ -n "${RUN_T0:-}" ] && echo "# total time $(($(date +%s) - RUN_T0)) s"
	[ "$SKIP" -gt 0 ] && s="$s, $SKIP skipped"
	echo "$s"
	[ "$FAIL" = 0 ] && [ "$PASS" -gt 0 ]
}

# case_matches NAME: does NAME match $CASES (globs or regexes, ',' or ' ')?
case_matches() {
	local p
	[ -z "${CASES:-}" ] && return 0
	for p in ${CASES//,/ }; do
		# shellcheck disable=SC2053
		[[ $1 == $p ]] && return 0
		[[ $1 =~ ^($p)$ ]] 2>/dev/null && return 0
	done
	return 1
}

hdr() {	# hdr FILE KEY: value of "# KEY: value" in the first 30 lines
	sed -n "1,30{s/^# *$2: *//p}" "$1" | head -n 1 | sed 's/[[:space:]]*#.*//; s/[[:space:]]*$//'
}

# sm_label DRIVER SM: the label inside [] of one boot; KERNEL_TAG (e.g.
# "@6.12", set by a tier of tests/check.sh) names the kernel in it, and
# with PEER_TAG (VM1 of a two-VM case on another kernel, PEER_KVER) each
# VM's kernel is named: "ours@7.2/stock@6.1".
sm_label() {
	local d=$1 tag=${KERNEL_TAG:-}
	if [ -n "${PEER_TAG:-}" ] && [[ $d == */* ]]; then
		d=${d%%/*}$tag/${d#*/}$PEER_TAG
		tag=
	fi
	if [ "$2" = embedded ]; then
		echo "$d$tag"
	else
		echo "$d+$2$tag"
	fi
}

# driver_matches D: D (e.g. "ours", "ours/stock") is among DRIVERS (words
# separated by ',' or spaces; unset: every driver)
driver_matches() {
	local w
	[ -z "${DRIVERS:-}" ] && return 0
	for w in ${DRIVERS//,/ }; do
		[ "$w" = "$1" ] && return 0
	done
	return 1
}

# case_jobs FILE: one "DRIVER SM" line per boot the case makes. On the
# (slow) debug kernel "# debug-drivers:" and "# debug-sm:" make fewer boots;
# in a kernel tier (TIER=612, TIER=7) "# TIER-drivers:" and "# TIER-sm:"
# do, and the SM defaults to the embedded one only.
case_jobs() {
	local d m drivers sms
	drivers=$(hdr "$1" drivers)
	sms=$(hdr "$1" sm)
	if [ "${KERNEL:-stock}" = debug ]; then
		[ -n "$(hdr "$1" debug-drivers)" ] && drivers=$(hdr "$1" debug-drivers)
		[ -n "$(hdr "$1" debug-sm)" ] && sms=$(hdr "$1" debug-sm)
	elif [ -n "${TIER:-}" ]; then
		[ -n "$(hdr "$1" "$TIER-drivers")" ] && drivers=$(hdr "$1" "$TIER-drivers")
		sms=$(hdr "$1" "$TIER-sm")
	fi
	for d in ${drivers:-ours}; do
		driver_matches "$d" || continue
		for m in ${sms:-embedded}; do
			# "# opensm-drivers:": under OpenSM only those
			[ "$m" = opensm ] && [ -n "$(hdr "$1" opensm-drivers)" ] &&
				[[ " $(hdr "$1" opensm-drivers) " != *" $d "* ]] && continue
			echo "$d $m"
		done
	done
}

if [ "${1:-}" = "--parse" ]; then
	parse_results "$2" "$3" "${4:-/dev/null}" "${5:-parse}" 0
	summary
	exit
fi

if [ "${1:-}" = "--list" ]; then
	for f in "${CASES_DIR:-$HERE/cases}"/*.sh; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .sh)
		case_matches "$name" || continue
		case_jobs "$f" | while read -r d m; do
			echo "$name [$(sm_label "$d" "$m")]"
		done
	done
	exit 0
fi

. "$HERE/vm/kernel.sh" || exit 1
. "$HERE/vm/qemu.sh"
. "$HERE/vm/vmhook.sh"
. "$HERE/vm/pool.sh"

CASES_DIR=${CASES_DIR:-$REPO/tests/cases}
CASES_DIR=$(cd "$CASES_DIR" && pwd)
GUEST_DIR=${CASES_DIR#"$REPO"/tests/}
LOGDIR=${LOGDIR:-$BUILD/logs/$(date +%Y%m%d-%H%M%S)-$KERNEL-$$}
mkdir -p "$LOGDIR"

if [ -n "${EXTRA_RESULTS:-}" ] && [ -e "$EXTRA_RESULTS" ]; then
	while IFS= read -r line; do
		case $line in
		"not ok"*) x=${line#*- }; emit fail "host" "${x%% # *}" "${x#*# }" ;;
		"ok"*"# SKIP"*) x=${line#*- }; emit skip "host" "${x%% # *}" "${x#*# SKIP }" ;;
		"ok"*) x=${line#*- }; emit ok "host" "$x" ;;
		esac
	done <"$EXTRA_RESULTS"
fi

if [ -n "$KERNEL_SKIP" ]; then
	emit skip "all [$KERNEL]" "VM suite" "$KERNEL_SKIP"
	summary
	exit
fi

selected=()
for f in "$CASES_DIR"/*.sh; do
	[ -e "$f" ] || continue
	name=$(basename "$f" .sh)
	case_matches "$name" && selected+=("$f")
done
if [ ${#selected[@]} = 0 ]; then
	echo "run: no case in ${CASES_DIR#"$REPO"/} matches '${CASES:-}'" >&2
	emit fail "run" "cases selected" "no case matches '${CASES:-}'"
	summary
	exit 1
fi

if [ "${NO_BUILD:-0}" != 1 ]; then
	# A module that fails to build is reported and left out; the cases
	# still run (those needing it skip or fail on their own).
	ALLOW_MISSING=${ALLOW_MISSING:-1} "$HERE/vm/build.sh" >"$LOGDIR/build.log" 2>&1 || {
		sed 's/^/#   /' "$LOGDIR/build.log" | tail -n 30
		emit fail "build" "modules build for $KVER" "see ${LOGDIR#"$REPO"/}/build.log"
	}
fi
INITRD=$LOGDIR/initrd
# The initramfs of a run is 11 MiB and can be made again: drop it at the end.
# Logs of runs older than two days go too.
trap 'rm -f "$INITRD"' EXIT
# QEMU runs under timeout(1) in its own process group: on ^C stop the VMs of
# this run (by their pid files) rather than leave them to their timeouts.
trap 'echo "run: interrupted: stopping this run'"'"'s VMs"; for p in "$LOGDIR"/*.pid; do
	[ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; exit 130' INT TERM
find "$BUILD/logs" -mindepth 1 -maxdepth 1 -type d -mmin +2880 -exec rm -rf {} + 2>/dev/null
: "${RUN_T0:=$(date +%s)}"
t0=$(date +%s.%N)
"$HERE/vm/mkinitramfs.sh" "$INITRD" || {
	emit fail "build" "initramfs for $KVER" "mkinitramfs failed"
	summary
	exit 1
}
# PEER_KVER (a release or series, as KVER): VM1 of every two-VM case boots
# that kernel instead, with its own initramfs (its modules as the build
# stage left them in build/<release>/), e.g. the 7.x tier's ours on 7.x
# against stock on 6.1. PEER_TAG is its label ("@6.1").
PEER_INITRD= PEER_VMLINUZ=
if [ -n "${PEER_KVER:-}" ]; then
	PEER_INITRD=$LOGDIR/initrd-peer
	trap 'rm -f "$INITRD" "$PEER_INITRD"' EXIT
	# shellcheck disable=SC2016
	if ! PEER_VMLINUZ=$("${KERNEL_ENV[@]}" KERNEL=stock KVER="$PEER_KVER" bash -c '
			. "$1/vm/kernel.sh" >&2 && "$1/vm/mkinitramfs.sh" "$2" >&2 &&
			echo "$VMLINUZ"' peer "$HERE" "$PEER_INITRD"); then
		emit fail "build" "initramfs for the peer kernel $PEER_KVER" "mkinitramfs failed"
		summary
		exit 1
	fi
	PEER_TAG=${PEER_TAG:-@$PEER_KVER}
	echo "# two-VM cases: VM1 boots $PEER_VMLINUZ"
fi
have_ours=0 have_softib=0
[ -e "$KBUILD_DIR/ipoib/ib_ipoib.ko" ] && have_ours=1
[ -e "$KBUILD_DIR/softib/softib.ko" ] && have_softib=1
printf '# kernel %s (%s), initramfs %s KiB in %.1f s, ours: %s, softib: %s, logs: %s\n' \
	"$KVER" "$KERNEL" $(($(stat -c %s "$INITRD") / 1024)) \
	"$(echo "$(date +%s.%N) - $t0" | bc)" \
	"$([ $have_ours = 1 ] && echo built || echo 'not built')" \
	"$([ $have_softib = 1 ] && echo built || echo 'not built')" "${LOGDIR#"$REPO"/}"

# run_one CASEFILES DRIVER SM: one boot (1 or 2 VMs) of a case for one
# driver (pair) under one subnet manager (embedded|opensm), or of several
# one-VM cases that share it (CASEFILES is then a list, see "Shared boots"
# below). Runs in a subshell: its results are printed as
# "R<TAB>status<TAB>label<TAB>name<TAB>reason" lines that the parent counts.
run_one() {
	local f=$1 d=$2 sm=$3 name vms tmo d0 d1 label out nonce common tb ok_all i l v
	local files=() names=() list= ct smp mem
	emit() {
		case $1 in
		ok) PASS=$((PASS + 1)) ;;
		skip) SKIP=$((SKIP + 1)) ;;
		*) FAIL=$((FAIL + 1)) ;;
		esac
		printf 'R\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}"
	}
	read -r -a files <<<"$f"
	f=${files[0]}
	name=$(basename "$f" .sh)
	vms=$(hdr "$f" vms)
	tmo=$(hdr "$f" timeout)
	: "${vms:=1}" "${tmo:=300}"
	if [ ${#files[@]} -gt 1 ]; then
		# a shared boot: each case gets its own timeout in the guest;
		# the VM's is their sum plus a minute a case for the reset and
		# the kernel check between them
		tmo=0
		for f in "${files[@]}"; do
			ct=$(hdr "$f" timeout)
			ct=$((${ct:-300} * ${TIMEOUT_SCALE:-1}))
			[ "$KERNEL" = debug ] && ct=$((ct * ${DEBUG_TIMEOUT_SCALE:-3}))
			names+=("$(basename "$f" .sh)")
			list="$list${list:+,}$GUEST_DIR/$(basename "$f" .sh):$ct"
			tmo=$((tmo + ct + 60))
		done
		name=${names[0]}+$((${#names[@]} - 1))
	else
		tmo=$((tmo * ${TIMEOUT_SCALE:-1}))
		[ "$KERNEL" = debug ] && tmo=$((tmo * ${DEBUG_TIMEOUT_SCALE:-3}))
	fi
	d0=${d%%/*}
	d1=${d#*/}
	label="$name [$(sm_label "$d" "$sm")]"
	[ ${#names[@]} -gt 0 ] && label="[$(sm_label "$d" "$sm")]"
	case $sm in
	embedded|opensm) ;;
	*)
		emit fail "$label" "case header" "unknown subnet manager '$sm' in '# sm:' (embedded, opensm)"
		return
		;;
	esac
	if [ "$vms" = 1 ] && [ "$d0" != "$d" ]; then
		emit fail "$label" "case header" "driver pair '$d' needs '# vms: 2'"
		return
	fi
	if [ $have_ours = 0 ] && { [ "$d0" = ours ] || { [ "$vms" = 2 ] && [ "$d1" = ours ]; }; }; then
		for v in "${names[@]:-$name}"; do
			emit skip "$v [$(sm_label "$d" "$sm")]" "all" "our ib_ipoib.ko is not built (no driver sources yet)"
		done
		return
	fi
	out=$LOGDIR/$name.${d//\//-}
	[ "$sm" = embedded ] || out=$out.$sm
	nonce=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
	if [ ${#names[@]} -gt 0 ]; then
		common="CASE_LIST=$list CASE_NAME=${names[0]} CASE_FILE=$GUEST_DIR/${names[0]}"
		echo "# $label shares one boot: ${names[*]} (logs: ${out#"$REPO"/}.vm0.*)"
	else
		common="CASE_FILE=$GUEST_DIR/$name CASE_NAME=$name"
	fi
	common="$common VM_COUNT=$vms TEST_NONCE=$nonce SM_MODE=$sm"
	# "# env: VAR...": those of the host's variables that are set (one word
	# each) go to the guest, e.g. a stress case's STRESS_S / STRESS_SEED
	for f in "${files[@]}"; do
		for v in $(hdr "$f" env); do
			[ -n "${!v:-}" ] && [[ " $common " != *" $v="* ]] && common="$common $v=${!v// /}"
		done
	done
	f=${files[0]}
	tb=$(date +%s)
	if ! case_vm_hook "$f" "$out" "$vms"; then
		emit fail "$label" "case vm-hook" "see ${out#"$REPO"/}.vm*.hook.log"
		sed 's/^/#   /' "$out".vm*.hook.log 2>/dev/null | tail -n 20
		case_vm_hook_clean "$out"
		return
	fi
	smp=$(hdr "$f" vcpus)
	mem=$(hdr "$f" mem)
	if [ "$vms" = 2 ] && [ -n "${PEER_INITRD:-}" ]; then
		VM_VMLINUZ1=$PEER_VMLINUZ
		VM_INITRD1=${VM_INITRD1:-$PEER_INITRD}
	fi
	VM_MEM=${mem:-$VM_MEM} VM_SMP=${smp:-${VM_SMP_ALL:-}} VM_TIMEOUT=$tmo vm_boot "$vms" "$INITRD" "$out" \
		"$common VM_ID=0 IPOIB_DRIVER=$d0${VM_APPEND0:+ $VM_APPEND0}" \
		"$common VM_ID=1 IPOIB_DRIVER=$d1${VM_APPEND1:+ $VM_APPEND1}"
	case_vm_hook_clean "$out"
	ok_all=1
	for i in $(seq 0 $((vms - 1))); do
		l=$label
		[ "$vms" = 2 ] && l="$label vm$i"
		[ -s "$out.vm$i.retried" ] && echo "# $l: $(tr '\n' ' ' <"$out.vm$i.retried")"
		VM_TIMEOUT=$tmo parse_results "$out.vm$i.results" "$nonce" "$out.vm$i.console" "$l" \
			"$(cat "$out.vm$i.rc" 2>/dev/null)" "${names[@]}" || {
			ok_all=0
			show_failure "$out.vm$i"
		}
	done
	[ ${#names[@]} -gt 0 ] && label="${names[*]} $label"
	echo "# $label: $(($(date +%s) - tb)) s$([ $ok_all = 1 ] || echo ", logs: ${out#"$REPO"/}.vm*")"
}

replay() {	# replay JOBFILE: count and print a finished job's lines
	local line st lab nm rs
	while IFS= read -r line; do
		if [[ $line == R$'\t'* ]]; then
			IFS=$'\t' read -r _ st lab nm rs <<<"$line"
			emit "$st" "$lab" "$nm" "$rs"
		else
			printf '%s\n' "$line"
		fi
	done <"$1"
}

# Jobs: one per case x driver, or per shared boot. JOBS (default 1, 2 when
# CI=true: the CI machine is ours alone) boots run at once, a two-VM case
# counting for two; results are printed in job order whatever the finishing
# order.
#
# Shared boots: the one-VM cases whose header says "# boot: shared" (and
# that have no vm-hook, vcpus or mem) are booted together, those of one driver and SM mode
# in one VM, one after the other, up to SHARE_TMO seconds of their summed
# timeouts a boot (default 2400, 1500 on the debug kernel, where cases take
# 5-10 times longer and fewer, shorter boots balance the two VM slots
# better; SHARE_TMO=0 boots every case alone). The
# guest's /init resets the VM between them (tests/vm/guest/init): each case
# starts with no test process, no netns and no IB module loaded, and has its
# own kernel check. A boot costs 6 s (stock) to 60 s (debug kernel) before
# /init starts.
: "${JOBS:=$([ "${CI:-}" = true ] && echo 2 || echo 1)}"
: "${SHARE_TMO:=$([ "$KERNEL" = debug ] && echo 1500 || echo 2400)}"
[ "$JOBS" -gt 1 ] && export VM_SMP_ALL=${VM_SMP:-1}
[ "$JOBS" -gt 1 ] || export VM_SMP_ALL=${VM_SMP:-}
job_f=() job_d=() job_m=() job_w=() job_t=() job_v=() job_a=()
declare -A share_f=() share_t=()
share_flush() {	# share_flush KEY: the shared boot gathered for KEY becomes a job
	local k=$1
	[ -n "$k" ] && [ -n "${share_f[$k]:-}" ] || return 0
	job_f+=("${share_f[$k]# }") job_d+=("${k% *}") job_m+=("${k#* }") job_w+=(1) job_v+=(0) job_a+=("")
	job_t+=("${share_t[$k]}")
	unset "share_f[$k]" "share_t[$k]"
}
for f in "${selected[@]}"; do
	vms=$(hdr "$f" vms)
	w=${vms:-1}
	[ "$w" -gt "$JOBS" ] && w=$JOBS
	t=$(hdr "$f" timeout)
	t=${t:-300}
	shared=0
	[ "$SHARE_TMO" -gt 0 ] && [ "${vms:-1}" = 1 ] && [ "$(hdr "$f" boot)" = shared ] &&
		[ -z "$(hdr "$f" vm-hook)" ] && [ -z "$(hdr "$f" vcpus)" ] &&
		[ -z "$(hdr "$f" mem)" ] && shared=1
	while read -r d m; do
		if [ $shared = 1 ]; then
			k="$d $m"
			[ $((${share_t[$k]:-0} + t)) -gt "$SHARE_TMO" ] && share_flush "$k"
			share_f[$k]="${share_f[$k]:-} $f"
			share_t[$k]=$((${share_t[$k]:-0} + t))
		else
			job_f+=("$f") job_d+=("$d") job_m+=("$m") job_w+=("$w") job_t+=("$t")
			job_v+=("$([ "$(hdr "$f" vcpus)" -gt 1 ] 2>/dev/null && echo 1 || echo 0)")
			a=$(hdr "$f" after)
			job_a+=("${a:+${!a:-}}")
		fi
	done < <(case_jobs "$f")
done
while read -r k; do
	share_flush "$k"
done < <(printf '%s\n' "${!share_f[@]}" | LC_ALL=C sort)
declare -A running=()
done_job=()
next=0 used=0 multi=0
flush() {
	while [ "$next" -lt ${#job_f[@]} ] && [ "${done_job[$next]:-0}" = 1 ]; do
		replay "$LOGDIR/.job.$next"
		rm -f "$LOGDIR/.job.$next"
		next=$((next + 1))
	done
}
reap() {	# wait for one running job to end
	local fin= j rc
	wait -n -p fin
	rc=$?
	if [ "$rc" = 127 ]; then	# no child left: every job has ended
		for j in "${running[@]}"; do
			done_job[j]=1
		done
		running=()
		used=0 multi=0
		flush
		return 0
	fi
	[ -n "$fin" ] && [ -n "${running[$fin]+x}" ] || return 0
	j=${running[$fin]}
	used=$((used - job_w[j]))
	multi=$((multi - job_v[j]))
	done_job[j]=1
	unset "running[$fin]"
	flush
}
# Start the longest jobs (by their timeout) first, so that with JOBS > 1 the
# last minutes are not one long case running alone. Output keeps case order.
order=$(for idx in "${!job_f[@]}"; do
	echo "${job_t[$idx]} $idx"
done | sort -s -k1,1nr | awk '{ print $2 }')
# At most one guest with several vCPUs at a time: two of them (4 vCPUs on
# the two cores) starved each other (ipoib-cm-scale's 100 peers beside
# another 2-vCPU case: RNR storms, 36 of 100 answered). While none runs,
# the first pending one that fits goes next, so that they run beside the
# one-vCPU boots all along (their guests wait more than they compute);
# by timeout alone they came after the long shared boots and ran one
# after the other at the end, 12 minutes of a full run with a core mostly
# idle (2026-12-07). Otherwise the first pending job that fits runs next.
# A job whose "# after:" file does not exist yet waits, taking no slot.
ready() {
	[ -z "${job_a[$1]}" ] || [ -e "${job_a[$1]}" ]
}
pool_scale=$([ "$KERNEL" = debug ] && echo "${DEBUG_TIMEOUT_SCALE:-3}" || echo 1)
# shellcheck disable=SC2206
pending=($order)
while [ ${#pending[@]} -gt 0 ]; do
	pick=-1
	if [ "$multi" = 0 ] && [ "$JOBS" -gt 1 ]; then
		for k in "${!pending[@]}"; do
			idx=${pending[k]}
			ready "$idx" || continue
			[ "${job_v[idx]}" = 1 ] && [ $((used + job_w[idx])) -le "$JOBS" ] || continue
			pick=$k
			break
		done
	fi
	[ "$pick" -ge 0 ] || for k in "${!pending[@]}"; do
		idx=${pending[k]}
		ready "$idx" || continue
		[ $((used + job_w[idx])) -gt "$JOBS" ] && continue
		[ "${job_v[idx]}" = 1 ] && [ "$multi" -gt 0 ] && [ "$JOBS" -gt 1 ] && continue
		pick=$k
		break
	done
	if [ "$pick" -lt 0 ]; then
		if [ ${#running[@]} -gt 0 ]; then
			reap
		else	# only jobs waiting for their "# after:" file
			sleep 2
		fi
		continue
	fi
	idx=${pending[pick]}
	unset "pending[pick]"
	pending=("${pending[@]}")
	if [ -n "${POOL:-}" ]; then
		# the slots are shared with other runs (tests/vm/pool.sh); on the
		# debug kernel a job lasts longer, as run_one scales its timeout
		(
			pool_acquire "$BASHPID" "${job_w[idx]}" "${job_v[idx]}" \
				$((job_t[idx] * pool_scale))
			run_one "${job_f[$idx]}" "${job_d[$idx]}" "${job_m[$idx]}"
			pool_release "${job_w[idx]}" "${job_v[idx]}"
		) >"$LOGDIR/.job.$idx" 2>&1 &
	else
		run_one "${job_f[$idx]}" "${job_d[$idx]}" "${job_m[$idx]}" >"$LOGDIR/.job.$idx" 2>&1 &
	fi
	running[$!]=$idx
	used=$((used + job_w[idx]))
	multi=$((multi + job_v[idx]))
done
while [ ${#running[@]} -gt 0 ]; do
	reap
done
flush
summary
