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
depmod() { /sbin/depmod "$@"; }	# busybox's applet writes no modules.dep.bin

: "${RESULTS:=/dev/ttyS1}"
: "${KVER:=$(uname -r)}"
: "${IPOIB_DRIVER:=ours}"
: "${VM_ID:=0}"
: "${VM_COUNT:=1}"
: "${CASE_NAME:=unknown}"
: "${SM_MODE:=embedded}"	# embedded (softib's SM/SA) | opensm (see sm_up)
_T_STATE=/run/tests
mkdir -p "$_T_STATE"

SIB_DEBUGFS=/sys/kernel/debug/softib

# _t_emit LINE: one result line to the results channel, and to the console
# with the guest's uptime (where a case spends its time: "### 12.34 ok 5 -")
_t_emit() {
	local up _
	printf '%s\n' "$1" >>"$_T_STATE/results"
	printf '%s\n' "$1" >>"$RESULTS"
	read -r up _ </proc/uptime
	printf '### %s %s\n' "$up" "$1"
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

# check_wait NAME TIMEOUT_S CMD...: ok if CMD succeeds within TIMEOUT_S.
# The shell expands CMD's arguments once, before the wait: a "$(...)" in them
# is a frozen value. Put a condition that must be read again at every poll
# in a function (or sh -c '...').
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

# load_softib [PARAMS...]: with SM_MODE=opensm also external_sm=1, and
# OpenSM brings every in-kernel port to ACTIVE (sm_up) before it returns
load_softib() {
	case $SM_MODE in
	embedded)
		modprobe softib "$@"
		;;
	opensm)
		modprobe softib "$@" external_sm=1 || return 1
		# shellcheck disable=SC2046
		sm_up $(_t_sib_devs)
		;;
	*)
		echo "load_softib: unknown SM_MODE=$SM_MODE" >&2
		return 1
		;;
	esac
}

_t_sib_devs() {	# the softib devices registered now
	local d
	for d in /sys/class/infiniband/sib*; do
		[ -e "$d" ] && basename "$d"
	done
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

# _t_stock_quiesce: the stock driver destroys its connected-mode send QPs
# from work on its own workqueue, and its unload destroys the CQs those QPs
# use before it drains that workqueue: "Destroy of kernel CQ shouldn't fail"
# when the work has not run yet (a stock finding, Documentation/testing.rst,
# softib-2vm). Before the stock module goes, bring its interfaces down and
# wait until its RC QPs are gone. Ours is unloaded as it is.
_t_stock_quiesce() {
	local d
	[ "$IPOIB_DRIVER" = stock ] && [ -d /sys/module/ib_ipoib ] || return 0
	for d in $(ip -o link show type ipoib 2>/dev/null |
		   awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
		ip link set "$d" down 2>/dev/null
	done
	_t_ipoib_rc_gone 10
}

# _t_ipoib_rc_gone SECONDS: wait until rdma shows no RC QP of ib_ipoib
_t_ipoib_rc_gone() {
	wait_for "$1" sh -c '! rdma res show qp 2>/dev/null | grep "type RC" | grep -q ipoib'
}

unload_ipoib() {
	_t_stock_quiesce
	_t_unload ib_ipoib
}

# unload_all: delete test netns, then unload ipoib and softib, stop OpenSM
# if it runs (it holds ib_umad open), and unload the IB core
unload_all() {
	local ns m rc=0
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		ip netns del "$ns"
	done
	for m in rdmacm_test ib_ipoib softib rdma_ucm rdma_cm iw_cm ib_umad ib_uverbs ib_cm ib_core; do
		if [ "$m" = rdma_ucm ] && opensm_running; then
			opensm_stop TERM || opensm_stop KILL || rc=1
		fi
		[ "$m" = ib_ipoib ] && _t_stock_quiesce
		_t_unload "$m" || rc=1
	done
	return $rc
}

# --- the subnet manager: softib's embedded SM/SA or OpenSM (SM_MODE) ---
#
# SM_MODE=embedded (the default): softib's own SM/SA. SM_MODE=opensm (a case
# with "# sm: opensm" in its header, run by tests/run.sh once per mode):
# load_softib adds external_sm=1, the ports start in INIT with LID 0 and the
# real OpenSM configures them through softib's SMA (Documentation/softib.rst).

OPENSM_LOG=/var/log/opensm.log
OPENSM_PID=/run/opensm.pid
OPENSM_PARTITIONS=/etc/opensm/partitions.conf

# opensm_start GUID [PARTITIONS_CONF_TEXT]: start OpenSM on the port with
# GUID, with partitions.conf holding the text when given. ib_umad must be
# loaded (load_ib_core).
opensm_start() {
	local guid=$1 part=${2:-} args
	mkdir -p /var/log /var/cache/opensm /etc/opensm
	args="-g $guid -f $OPENSM_LOG"
	if [ -n "$part" ]; then
		printf '%s\n' "$part" >"$OPENSM_PARTITIONS"
		args="$args -P $OPENSM_PARTITIONS"
	fi
	# shellcheck disable=SC2086
	/usr/sbin/opensm $args >/var/log/opensm.out 2>&1 </dev/null &
	echo $! >"$OPENSM_PID"
	echo "opensm: started pid $(cat "$OPENSM_PID"): opensm $args"
}

# _opensm_alive PID: the process exists and is not a zombie (its parent
# reaps it only later)
_opensm_alive() {
	[ -e "/proc/$1/stat" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat"
}

_opensm_gone() { ! _opensm_alive "$1"; }

opensm_running() {
	[ -s "$OPENSM_PID" ] && _opensm_alive "$(cat "$OPENSM_PID")"
}

# opensm_stop [SIGNAL]: stop the OpenSM opensm_start started, wait until gone
opensm_stop() {
	local pid
	opensm_running || return 0
	pid=$(cat "$OPENSM_PID")
	kill "-${1:-TERM}" "$pid"
	wait_for 10 _opensm_gone "$pid" || return 1
	rm -f "$OPENSM_PID"
}

# port_state DEV [PORT]: the state word of DEV's port PORT (default 1):
# INIT, ARMED, ACTIVE, ...
port_state() {
	sed 's/^[0-9]*: *//' "/sys/class/infiniband/$1/ports/${2:-1}/state"
}

# port_lid DEV [PORT]: DEV's port PORT (default 1) LID in decimal
port_lid() {
	printf '%d\n' "$(cat "/sys/class/infiniband/$1/ports/${2:-1}/lid")"
}

# port_sm_lid DEV: the SM LID of DEV's port 1 in decimal
port_sm_lid() {
	printf '%d\n' "$(cat "/sys/class/infiniband/$1/ports/1/sm_lid")"
}

# port_guid DEV: DEV's node (= port) GUID as 0x0002c90300a00001
port_guid() {
	echo "0x$(tr -d ':' <"/sys/class/infiniband/$1/node_guid")"
}

# ports_active DEV...: every named port is ACTIVE with a nonzero LID
ports_active() {
	local d
	for d in "$@"; do
		[ "$(port_state "$d")" = ACTIVE ] || return 1
		[ "$(port_lid "$d")" != 0 ] || return 1
	done
}

# opensm_log_tail [N]: the end of OpenSM's log (for a failure's story)
opensm_log_tail() {
	tail -n "${1:-20}" "$OPENSM_LOG" 2>/dev/null
	tail -n 5 /var/log/opensm.out 2>/dev/null
}

# sm_up DEV...: SM_MODE=opensm: start OpenSM on the first DEV's port unless
# it runs (in VM0 only: it manages the other VM's port through the Ethernet
# transport), with partitions.conf from $SM_PARTITIONS if set, and wait
# (SM_UP_TIMEOUT, 120 s) until every DEV's port is ACTIVE with a LID.
# Nothing to do in embedded mode or without a DEV.
sm_up() {
	local t0 t
	[ "$SM_MODE" = opensm ] && [ $# -gt 0 ] || return 0
	t0=$(_t_now_ds)
	if [ "$VM_ID" = 0 ] && ! opensm_running; then
		opensm_start "$(port_guid "$1")" "${SM_PARTITIONS:-}"
	fi
	if ! wait_for "${SM_UP_TIMEOUT:-120}" ports_active "$@"; then
		for t in "$@"; do
			echo "sm_up: $t $(port_state "$t") lid $(port_lid "$t")"
		done
		opensm_log_tail 20
		return 1
	fi
	t=$(($(_t_now_ds) - t0))
	echo "sm_up: $* ACTIVE under OpenSM after $((t / 10)).$((t % 10)) s"
}

# awk functions for saquery's output: full(GID) writes a GID as sysfs does
# (fe80::2:c903:a0:1 -> fe80:0000:...:0001), val(LINE) is the value of a
# "Name.......value" line
_T_SAQUERY_AWK='
function pad(x) { x = tolower(x); return substr("0000", 1, 4 - length(x)) x }
function full(g,   n, l, r, a, b, na, nb, i, o) {
	n = index(g, "::")
	if (n) { l = substr(g, 1, n - 1); r = substr(g, n + 2) } else { l = g; r = "" }
	na = l == "" ? 0 : split(l, a, ":")
	nb = r == "" ? 0 : split(r, b, ":")
	o = ""
	for (i = 1; i <= na; i++) o = o (i > 1 ? ":" : "") pad(a[i])
	if (n) for (i = na + nb; i < 8; i++) o = o (o == "" ? "" : ":") "0000"
	for (i = 1; i <= nb; i++) o = o ":" pad(b[i])
	return o
}
function val(s) { sub(/^[ \t]*[A-Za-z]+\.+/, "", s); sub(/[ \t].*/, "", s); return s }
'

# sm_members: the multicast members the SA holds, one "MGID PORTGID
# JOIN_STATE" line each, GIDs in full as in sysfs, JOIN_STATE as 0xN
# (0x1 full, 0x8 send-only full member): softib's sa_groups, or OpenSM's
# MCMemberRecords (saquery -m, through $SM_CA, default sib0).
sm_members() {
	if [ "$SM_MODE" != opensm ]; then
		awk '$1 != "member" { g = $1 } $1 == "member" { print g, $2, $4 }' \
			"$SIB_DEBUGFS/sa_groups"
		return
	fi
	saquery -C "${SM_CA:-sib0}" --smkey 1 -m 2>/dev/null | awk "$_T_SAQUERY_AWK"'
		/^[ \t]*MGID\./ { m = full(val($0)) }
		/^[ \t]*PortGid\./ { p = full(val($0)) }
		/^[ \t]*ScopeState\./ { s = val($0); print m, p, "0x" tolower(substr(s, length(s))) }'
}

# sm_groups: the multicast groups the SA holds, one "MGID MTU PKEY" line
# each (MGID in full, MTU in bytes, P_Key as 0xffff): softib's sa_groups or
# OpenSM's (saquery -g)
sm_groups() {
	if [ "$SM_MODE" != opensm ]; then
		awk '$1 != "member" && $2 == "mlid" { print $1, $7, $9 }' "$SIB_DEBUGFS/sa_groups"
		return
	fi
	saquery -C "${SM_CA:-sib0}" -g 2>/dev/null | awk "$_T_SAQUERY_AWK"'
		/^[ \t]*MGID\./ { m = full(val($0)) }
		BEGIN { split("256 512 1024 2048 4096", mtu, " ") }
		/^[ \t]*Mtu\./ { u = val($0); u = mtu[substr(u, length(u)) + 0] }
		/^[ \t]*pkey\./ { print m, u, tolower(val($0)) }'
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

# pings NS ADDR: one echo reply from ADDR within $PING_W (default 2) seconds
pings() { in_host "$1" ping -c 1 -W "${PING_W:-2}" "$2" >/dev/null 2>&1; }

# tcp_echo_serve NS|- PORT: a TCP echo server for one connection (busybox
# nc -e cat) in NS ("-": here), in the background; returns when it listens
tcp_echo_serve() {
	local pre=
	[ "$1" = - ] || pre="/usr/sbin/ip netns exec $1"
	$pre nc -l -p "$2" -e /bin/cat </dev/null >/dev/null 2>&1 &
	wait_for 10 sh -c "$pre ss -Hltn | grep -q ':$2 '"
}

# tcp_echo_client NS|- ADDR PORT TX RX SECS [GATE]: send the file TX over
# TCP from NS ("-": here) to the echo server at ADDR:PORT and write what
# comes back to RX, reading while writing; at most SECS seconds. With GATE,
# the first half of TX goes at once and the rest once the file GATE exists
# (so that a test can act while the connection carries data and see data
# pass after it, however fast the first half went). Not busybox nc's own
# pump (nc ADDR PORT <TX >RX): it blocks in its socket write and reads
# nothing meanwhile, so against an echo server both directions can fill
# up and wait for each other forever once the data outgrows the socket
# buffers (a window deadlock: seen under 6.12 with the stock driver on the
# client side, 532 KiB of 4 MiB back and then nothing). Here
# the data goes out from one process and comes back into another, both on
# the socket nc connected (-e), and a timeout takes both down.
tcp_echo_client() {
	local pre= n send
	[ "$1" = - ] || pre="/usr/sbin/ip netns exec $1"
	n=$(wc -c <"$4")
	send="cat $4"
	[ -n "${7:-}" ] && send="{ head -c $((n / 2)) $4; while [ ! -e $7 ]; do sleep 0.1; done; tail -c +$((n / 2 + 1)) $4; }"
	$pre timeout "$6" nc "$2" "$3" -e /bin/sh -c \
		"exec 3<&0; $send & c=\$!; head -c $n <&3 >$5 & h=\$!; trap 'kill \$c \$h 2>/dev/null' TERM; wait \$h; wait \$c"
}

# tcp_echo_check NAME NS|- ADDR PORT KIB: send KIB KiB of random data over
# TCP from NS ("-": here) to tcp_echo_serve at ADDR:PORT and read it back
# (within 120 s); ok if what came back has the sha256 of what was sent
tcp_echo_check() {
	local name=$1 ns=$2 addr=$3 port=$4 kib=$5 tx=$_T_STATE/tcp.tx rx=$_T_STATE/tcp.rx t0 t sa sb
	head -c $((kib * 1024)) /dev/urandom >"$tx"
	rm -f "$rx"
	t0=$(_t_now_ds)
	tcp_echo_client "$ns" "$addr" "$port" "$tx" "$rx" 120 2>/dev/null
	t=$(($(_t_now_ds) - t0))
	sa=$(sha256sum <"$tx" | cut -c1-64)
	sb=$(sha256sum <"$rx" 2>/dev/null | cut -c1-64)
	if [ "$sa" = "$sb" ]; then
		ok "$name: $kib KiB there and back over TCP, sha256 equal ($((kib * 160 / (t + 1))) kbit/s)"
		return 0
	fi
	fail "$name: $kib KiB there and back over TCP, sha256 equal" \
		"sent $(wc -c <"$tx") bytes sha256 ${sa%${sa#????????}}, got $(wc -c <"$rx" 2>/dev/null || echo 0) sha256 ${sb%${sb#????????}} in $((t / 10)) s"
	return 1
}

_t_rcvbuf_errors() {	# _t_rcvbuf_errors NS: UDP RcvbufErrors in NS
	in_host "$1" cat /proc/net/snmp | awk '$1 == "Udp:" && $2 ~ /^[0-9]/ { print $6 }'
}

# udp_loss_check NAME NS RNS ADDR PORT MAXPCT [IPERF3_ARGS...]: iperf3 UDP
# from NS to the iperf3 server at ADDR:PORT in RNS; ok if datagrams were
# sent and at most MAXPCT percent of them were lost on the way. Datagrams
# the receiving iperf3 was too slow to read (RcvbufErrors in RNS: under TCG
# it is, now and then) were delivered by the driver and are not counted.
udp_loss_check() {
	local name=$1 ns=$2 rns=$3 addr=$4 port=$5 max=$6 out pk lost n r0 r1 rb
	shift 6
	r0=$(_t_rcvbuf_errors "$rns")
	out=$(in_host "$ns" iperf3 -c "$addr" -p "$port" -u -J "$@" 2>&1)
	r1=$(_t_rcvbuf_errors "$rns")
	rb=$((r1 - r0))
	# the totals: "sum" of "end" (the first "sum" is the first interval's)
	pk=$(echo "$out" | awk -F: '/"end":[ \t]*[{]/ { e = 1 } e && /"sum":/ { s = 1 } s && /"packets"/ { gsub(/[^0-9]/, "", $2); print $2; exit }')
	lost=$(echo "$out" | awk -F: '/"end":[ \t]*[{]/ { e = 1 } e && /"sum":/ { s = 1 } s && /"lost_packets"/ { gsub(/[^0-9]/, "", $2); print $2; exit }')
	echo "UDP $*: $pk datagrams, $lost lost"
	for n in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do	# where they went
		echo "$n: $(in_host "$n" cat /proc/net/snmp | grep '^Udp:' | tail -n 1)"
		in_host "$n" tc -s qdisc 2>/dev/null | grep -m 1 'dropped'
	done
	if [ "${pk:-0}" -gt 0 ] 2>/dev/null && [ -n "$lost" ] &&
		[ $(((lost - rb) * 100)) -le $((pk * max)) ]; then
		ok "$name: $pk datagrams, $lost lost, $rb of them in the receiving socket (at most $max% elsewhere)"
		return 0
	fi
	fail "$name: at most $max% lost" "datagrams '$pk' lost '$lost', '$rb' of them in the receiving socket: $(echo "$out" | tail -n 3)"
	return 1
}

# sa_bcast_members N: softib's SA lists N members of the IPv4 broadcast
# group of the default P_Key (ff12:401b:ffff::ffff:ffff)
sa_bcast_members() {
	[ "$(awk '$1 ~ /^ff12:401b:ffff:0*:0*:0*:ffff:ffff$/ { g = 1; next }
		$1 != "member" { g = 0 } g && $1 == "member" { n++ } END { print n + 0 }' \
		"$SIB_DEBUGFS/sa_groups")" = "$1" ]
}

_t_has_carrier() {
	ip -n "$1" -o link show dev "$2" 2>/dev/null | grep -q 'LOWER_UP'
}

# wait_carrier NS IFNAME TIMEOUT_S
wait_carrier() {
	wait_for "$3" _t_has_carrier "$1" "$2"
}

# --- softib's Ethernet transport in one VM (veths on a bridge) ---

# eth_mac I / eth_lid I: host I's lower MAC, and the LID softib derives from it
eth_mac() { echo "02:00:00:00:00:1$1"; }
eth_lid() { echo $((0x10 + $1)); }

# eth_lower_add DEV PEER BRIDGE I: veth DEV (host I's lower netdev: MAC
# eth_mac I, MTU 4200 for a 4096-byte IB MTU) <-> PEER, a port of BRIDGE
eth_lower_add() {
	/usr/sbin/ip link add "$1" type veth peer name "$2" || return 1
	/usr/sbin/ip link set "$1" address "$(eth_mac "$4")" mtu 4200 || return 1
	/usr/sbin/ip link set "$2" mtu 4200 master "$3" up || return 1
	/usr/sbin/ip link set "$1" up
}

# ib_of_lid LID: the ib netdev (in this netns) of the softib port with LID
# (its hardware address ends with the port GUID, whose low 16 bits are the LID)
ib_of_lid() {
	local suffix f
	suffix=$(printf ':%02x:%02x' $(($1 >> 8)) $(($1 & 255)))
	for f in /sys/class/net/ib*; do
		case $(cat "$f/address" 2>/dev/null) in
		*"$suffix") basename "$f"; return 0 ;;
		esac
	done
	return 1
}

# --- softib debugfs ---

# sib NAME FILE: path of softib debugfs file FILE of device NAME
sib() { echo "$SIB_DEBUGFS/$1/$2"; }

# pkey_set PORT INDEX PKEY: put PKEY at INDEX of a port's P_Key table
# through softib's pkeys knob (PORT: its debugfs name, sib0, or sib0p2 for
# port 2), then wait until the IB core's cache (sysfs) shows it, 10 s at
# most; PKEY 0 empties the entry
_t_pkey_is() {	# _t_pkey_is DEV PORT INDEX PKEY
	local v
	v=$(cat "/sys/class/infiniband/$1/ports/$2/pkeys/$3") && [ $((v)) -eq $(($4)) ]
}
pkey_set() {
	local dev=$1 port=1
	case $dev in *p2) dev=${dev%p2}; port=2 ;; esac
	echo "$2 $3" >"$(sib "$1" pkeys)" || return 1
	wait_for 10 _t_pkey_is "$dev" "$port" "$2" "$3"
}

# sib_counter DEV NAME: value of a per-device counter
sib_counter() {
	awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) exit 1 }' "$(sib "$1" counters)"
}

# sib_counter_ge DEV NAME N: DEV's counter NAME is N or more (a condition
# for wait_for: unlike "test \"$(sib_counter ...)\" ...", read at each poll)
sib_counter_ge() {
	local v
	v=$(sib_counter "$1" "$2") && [ "$v" -ge "$3" ]
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

# logged PATTERN: the kernel log since the last dmesg_mark has PATTERN
logged() { dmesg_since_mark | grep -q "$1"; }

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
# BUG (also KASAN, sleeping in atomic, bad page), Oops, UBSAN,
# lockdep/hung-task/RCU-stall INFO, list/refcount corruption, a device that
# cannot be unregistered (a leaked reference), a hung task, an RCU stall,
# softib's report of a send buffer touched before its completion.
# tests/run.sh reads this line too: it scans the whole console with it.
KERNEL_BAD_RE='WARNING:|BUG:|Oops|Call Trace|general protection fault|UBSAN:|INFO: |Kernel panic|list_(add|del) corruption|refcount_t: |DEBUG_LOCKS_WARN_ON|ODEBUG: |unregister_netdevice: waiting|blocked for more than [0-9]+ seconds|self-detected stall|detected stalls on CPU|send data changed between'

# kernel_check: report "kernel clean": no WARN/BUG/Oops/... in dmesg, no
# kmemleak report, no taint other than 4096|8192 (unsigned out-of-tree module).
# kmemleak is judged by its report file, not by its "N new suspected memory
# leaks" log line: the file keeps every object found by any scan (the
# automatic ones too) until "clear", and only resil-resources' self-test
# clears it, after checking that it lists nothing but its own two objects.
# The ring buffer (log_buf_len, qemu.sh) may still have lost the oldest
# lines of a chatty boot: the host scans the whole console as well
# ("kernel console clean", tests/run.sh).
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
