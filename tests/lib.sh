# SPDX-License-Identifier: GPL-2.0
#
# Guest-side test library, sourced by every tests/cases/*.sh (busybox sh).
# See Documentation/testing.rst. Results go to $RESULTS (the VM's second
# serial port) as TAP-like lines that the host runner (tests/run.sh) reads:
#   ok N - name | not ok N - name # reason | ok N - name # SKIP reason
# A line is also echoed to the console, together with everything else the
# case prints, so build/logs/.../*.console has the full story.

# Debian's busybox runs its applets before searching PATH: name the real tools.
ip() { /usr/sbin/ip "$@"; }
tc() { /usr/sbin/tc "$@"; }
ping() { /usr/bin/ping "$@"; }
ping6() { /usr/bin/ping -6 "$@"; }
modprobe() { /sbin/modprobe "$@"; }
insmod() { /sbin/insmod "$@"; }
rmmod() { /sbin/rmmod "$@"; }
lsmod() { /sbin/lsmod "$@"; }
modinfo() { /sbin/modinfo "$@"; }

: "${RESULTS:=/dev/ttyS1}"
: "${KVER:=$(uname -r)}"
: "${IPOIB_DRIVER:=ours}"
: "${VM_ID:=0}"
: "${VM_COUNT:=1}"
: "${CASE_NAME:=unknown}"
_T_STATE=/run/tests
mkdir -p "$_T_STATE"

SIB_DEBUGFS=/sys/kernel/debug/softib

_t_emit() {	# _t_emit LINE: one result line to the results channel and console
	printf '%s\n' "$1" >>"$_T_STATE/results"
	printf '%s\n' "$1" >>"$RESULTS"
	printf '### %s\n' "$1"
}

_t_next() {
	local n
	n=$(cat "$_T_STATE/num" 2>/dev/null || echo 0)
	n=$((n + 1))
	echo "$n" >"$_T_STATE/num"
	echo "$n"
}

_t_clean() {	# one line, no '#' (the reason separator)
	printf '%s' "$*" | tr '\n\t#' '  _' | cut -c1-300
}

# ok NAME
ok() { _t_emit "ok $(_t_next) - $(_t_clean "$1")"; }

# fail NAME REASON
fail() {
	_t_emit "not ok $(_t_next) - $(_t_clean "$1") # $(_t_clean "${2:-failed}")"
	return 0
}

# skip NAME REASON
skip() { _t_emit "ok $(_t_next) - $(_t_clean "$1") # SKIP $(_t_clean "${2:-skipped}")"; }

# any_failed: 0 if a test of this boot failed so far
any_failed() { grep -q '^not ok' "$_T_STATE/results" 2>/dev/null; }

# check NAME CMD...: ok if CMD exits 0, else fail with the tail of its output
check() {
	local name=$1 rc out
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out"
	if [ $rc = 0 ]; then
		ok "$name"
		return 0
	fi
	fail "$name" "'$*' exited $rc: $(printf '%s\n' "$out" | tail -n 3)"
	return 1
}

# check_fail NAME CMD...: ok if CMD exits non-zero
check_fail() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		[ -n "$out" ] && printf '%s\n' "$out"
		fail "$name" "'$*' succeeded but should have failed"
		return 1
	fi
	[ -n "$out" ] && printf '%s\n' "$out"
	ok "$name"
}

_t_now_ds() {	# uptime in tenths of seconds
	awk '{ printf "%d\n", $1 * 10 }' /proc/uptime
}

# wait_for TIMEOUT_S CMD...: poll CMD every 0.2 s until it succeeds; 1 on
# timeout. The output of the last attempt is in $_T_STATE/wait_for.out.
wait_for() {
	local end
	end=$(($(_t_now_ds) + $1 * 10))
	shift
	while :; do
		if "$@" >"$_T_STATE/wait_for.out" 2>&1; then
			return 0
		fi
		[ "$(_t_now_ds)" -ge "$end" ] && return 1
		sleep 0.2
	done
}

# check_wait NAME TIMEOUT_S CMD...: ok if CMD succeeds within TIMEOUT_S
check_wait() {
	local name=$1 t=$2
	shift 2
	if wait_for "$t" "$@"; then
		ok "$name"
		return 0
	fi
	fail "$name" "'$*' not true after ${t}s: $(tail -n 3 "$_T_STATE/wait_for.out")"
	return 1
}

# --- modules ---

# load_ib_core: the IB core modules every case needs
load_ib_core() {
	modprobe -a ib_core ib_cm ib_umad
}

# load_softib [PARAMS...]
load_softib() {
	modprobe softib "$@"
}

# ipoib_loaded_driver: ours|stock, which ib_ipoib is loaded now (ours is
# out of tree: its taint flags have O; the stock one is in-tree), or nothing.
ipoib_loaded_driver() {
	[ -d /sys/module/ib_ipoib ] || return 1
	case $(cat /sys/module/ib_ipoib/taint 2>/dev/null) in
	*O*) echo ours ;;
	*) echo stock ;;
	esac
}

# ipoib_srcversion_of DRIVER: srcversion of our/stock ib_ipoib.ko (empty when
# the module has none: Debian's kernel only adds it for MODULE_VERSION; prefer
# ipoib_loaded_driver)
ipoib_srcversion_of() {
	case $1 in
	ours) modinfo -F srcversion "/lib/modules/$KVER/updates/ib_ipoib.ko" 2>/dev/null ;;
	stock) modinfo -F srcversion "/lib/modules/$KVER/stock/ib_ipoib.ko" 2>/dev/null ;;
	esac
}

# load_ipoib [PARAMS...]: load this VM's ib_ipoib ($IPOIB_DRIVER) and verify
# that the module the kernel loaded is really that one.
load_ipoib() {
	local got
	case $IPOIB_DRIVER in
	ours)
		[ -e "/lib/modules/$KVER/updates/ib_ipoib.ko" ] || {
			echo "load_ipoib: our ib_ipoib.ko is not in this initramfs" >&2
			return 1
		}
		modprobe ib_ipoib "$@" || return 1
		;;
	stock)
		modprobe -a ib_core ib_cm || return 1
		insmod "/lib/modules/$KVER/stock/ib_ipoib.ko" "$@" || return 1
		;;
	*)
		echo "load_ipoib: unknown IPOIB_DRIVER=$IPOIB_DRIVER" >&2
		return 1
		;;
	esac
	got=$(ipoib_loaded_driver)
	if [ "$got" != "$IPOIB_DRIVER" ]; then
		echo "load_ipoib: the kernel loaded the $got ib_ipoib, not $IPOIB_DRIVER's" >&2
		return 1
	fi
	return 0
}

_t_unload() {	# _t_unload MOD: rmmod if loaded, retrying while in use (2 s)
	[ -d "/sys/module/$1" ] || return 0
	[ -e "/sys/module/$1/initstate" ] || return 0	# built in
	wait_for 5 rmmod "$1" || { cat "$_T_STATE/wait_for.out"; return 1; }
}

unload_ipoib() {
	_t_unload ib_ipoib
}

# unload_all: delete test netns, then unload ipoib, softib and the IB core
unload_all() {
	local ns m rc=0
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		ip netns del "$ns"
	done
	for m in ib_ipoib softib rdma_ucm rdma_cm iw_cm ib_umad ib_uverbs ib_cm ib_core; do
		_t_unload "$m" || rc=1
	done
	return $rc
}

# --- hosts (network namespaces) ---

# make_host NS IFNAME ADDR4/PREFIX [ADDR6/PREFIX]
make_host() {
	local ns=$1 ifn=$2 a4=$3 a6=${4:-}
	ip netns add "$ns" || return 1
	ip link set "$ifn" netns "$ns" || return 1
	ip -n "$ns" link set lo up || return 1
	ip -n "$ns" addr add "$a4" dev "$ifn" || return 1
	if [ -n "$a6" ]; then
		ip -n "$ns" -6 addr add "$a6" dev "$ifn" nodad || return 1
	fi
	ip -n "$ns" link set "$ifn" up
}

# in_host NS CMD...: run CMD in NS (a real binary; not a function of this file)
in_host() {
	local ns=$1
	shift
	case $1 in
	ip) shift; set -- /usr/sbin/ip "$@" ;;
	ping) shift; set -- /usr/bin/ping "$@" ;;
	esac
	/usr/sbin/ip netns exec "$ns" "$@"
}

_t_has_carrier() {
	ip -n "$1" -o link show dev "$2" 2>/dev/null | grep -q 'LOWER_UP'
}

# wait_carrier NS IFNAME TIMEOUT_S
wait_carrier() {
	wait_for "$3" _t_has_carrier "$1" "$2"
}

# --- softib debugfs ---

# sib NAME FILE: path of softib debugfs file FILE of device NAME
sib() { echo "$SIB_DEBUGFS/$1/$2"; }

# sib_counter DEV NAME: value of a per-device counter
sib_counter() {
	awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) exit 1 }' "$(sib "$1" counters)"
}

# sa_counter NAME: value of an SA counter
sa_counter() {
	awk -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) exit 1 }' "$SIB_DEBUGFS/sa_counters"
}

# --- dmesg ---

# dmesg_mark [NAME]: put a mark in the kernel log
dmesg_mark() {
	_T_MARK="tests-mark-${1:-x}-$(_t_now_ds)"
	echo "$_T_MARK" >/dev/kmsg
}

# dmesg_since_mark: the kernel log after the last dmesg_mark
dmesg_since_mark() {
	dmesg | sed -n "/$_T_MARK/,\$p" | sed 1d
}

# --- two-VM cases ---

_T_BARRIER_PORT=7777

# peer_ll: the other VM's IPv6 link-local address on eth0
peer_ll() {
	echo "fe80::5054:ff:fe00:$(( (VM_ID == 0) + 1 ))%eth0"
}

_t_barrier_send() {
	echo "$1" | nc -w 2 "$(peer_ll)" "$_T_BARRIER_PORT" >/dev/null 2>&1
}

_t_barrier_seen() {
	grep -qx "$1" "$_T_STATE/barriers" 2>/dev/null
}

# vm_barrier NAME TIMEOUT_S: return when the other VM has reached the same
# barrier (the Nth call of each VM is matched with the other's Nth call), 1 on
# timeout.
vm_barrier() {
	local n tok
	n=$(cat "$_T_STATE/barrier_seq" 2>/dev/null || echo 0)
	n=$((n + 1))
	echo "$n" >"$_T_STATE/barrier_seq"
	tok="$n:$1"
	echo "vm_barrier: $tok"
	wait_for "$2" _t_barrier_send "$tok" || {
		echo "vm_barrier: could not reach the peer for $tok" >&2
		return 1
	}
	wait_for "$2" _t_barrier_seen "$tok" || {
		echo "vm_barrier: peer did not reach $tok" >&2
		return 1
	}
}

# vm_net_setup: (init, two-VM mode) bring up eth0 and the barrier listener
vm_net_setup() {
	modprobe -a virtio_pci virtio_net 2>/dev/null
	wait_for 20 ip link show dev eth0 || { echo "vm_net_setup: no eth0" >&2; return 1; }
	ip link set eth0 up
	wait_for 20 sh -c "/usr/sbin/ip -6 addr show dev eth0 scope link | grep -v tentative | grep -q inet6" ||
		{ echo "vm_net_setup: no link-local address on eth0" >&2; return 1; }
	: >"$_T_STATE/barriers"
	(while :; do nc -l -p "$_T_BARRIER_PORT" >>"$_T_STATE/barriers" 2>/dev/null; done) &
	return 0
}

# --- the per-boot kernel check (run by /init after the case) ---

# What a kernel report starts with: WARN (also lockdep's and RCU's reports),
# BUG (also KASAN, sleeping in atomic, bad page), Oops, UBSAN, kmemleak,
# lockdep/hung-task/RCU-stall INFO, list/refcount corruption.
KERNEL_BAD_RE='WARNING:|BUG:|Oops|Call Trace|general protection fault|UBSAN:|kmemleak: [0-9]+ new suspected|INFO: |Kernel panic|list_(add|del) corruption|refcount_t: |DEBUG_LOCKS_WARN_ON|ODEBUG: '

# kernel_check: report "kernel clean": no WARN/BUG/Oops/... in dmesg, no
# kmemleak report, no taint other than 4096|8192 (unsigned out-of-tree module).
kernel_check() {
	local bad taint other leaks=
	if [ -e /sys/kernel/debug/kmemleak ]; then
		sleep 5	# kmemleak only reports objects older than 5 s
		echo scan >/sys/kernel/debug/kmemleak
		leaks=$(head -n 20 /sys/kernel/debug/kmemleak)
		[ -n "$leaks" ] && printf 'kmemleak:\n%s\n' "$leaks"
	fi
	bad=$(dmesg | grep -E "$KERNEL_BAD_RE" | head -n 3)
	taint=$(cat /proc/sys/kernel/tainted)
	other=$((taint & ~12288))
	if [ -n "$bad" ]; then
		fail "kernel clean" "dmesg: $bad"
	elif [ -n "$leaks" ]; then
		fail "kernel clean" "kmemleak: $(echo "$leaks" | head -n 2)"
	elif [ "$other" != 0 ]; then
		fail "kernel clean" "tainted $taint (bits other than 4096|8192: $other)"
	else
		ok "kernel clean"
	fi
}
