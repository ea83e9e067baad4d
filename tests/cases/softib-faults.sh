#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 420
#
# softib's fault knobs under the stock ib_ipoib: fabric loss, duplication,
# reordering and corruption (counted, and the traffic recovers when they are
# cleared), receive starvation, one-shot post_send/create_ah failures, a send
# stall that reaches the TX watchdog, a CQ overflow (its QPs go to ERR),
# QP_FATAL and DEVICE_FATAL; none of them may make the kernel warn.
. /tests/lib.sh

PING_W=1	# pings (lib.sh): wait 1 s for the reply
knob() { echo "$2" >"$SIB_DEBUGFS/$1"; }
cnt() { sib_counter "$1" "$2"; }
above() { [ "$(cnt "$1" "$2")" -gt "$3" ]; }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0
check "host a (ib0)" make_host a ib0 10.9.0.1/24
check "host b (ib1)" make_host b ib1 10.9.0.2/24
check_wait "ping a -> b" 40 pings a 10.9.0.2

check_fail "loss_pct refuses 101" sh -c "echo 101 >$SIB_DEBUGFS/loss_pct"
knob seed 42
check "seed reads back 42" grep -qx 42 "$SIB_DEBUGFS/seed"

# --- loss ---
n0=$(cnt sib0 drop_fault)
knob loss_pct 100
check_fail "loss_pct 100: ping a -> b fails" in_host a ping -c 2 -W 1 10.9.0.2
check "loss_pct 100: drop_fault counted ($n0 -> $(cnt sib0 drop_fault))" above sib0 drop_fault "$n0"
knob loss_pct 0
check_wait "loss_pct 0: ping recovers" 20 pings a 10.9.0.2

# --- duplication ---
knob dup_pct 100
out=$(in_host a ping -c 3 -i 0.3 -W 2 10.9.0.2 2>&1)
echo "$out"
knob dup_pct 0
if echo "$out" | grep -q 'DUP!'; then ok "dup_pct 100: ping sees duplicates"; else fail "dup_pct 100: ping sees duplicates" "$(echo "$out" | tail -n 2)"; fi
check "dup_pct 100: dup_fault counted ($(cnt sib0 dup_fault))" above sib0 dup_fault 0

# --- reordering ---
knob reorder_pct 50
check "reorder_pct 50: ping a -> b, 10 replies" in_host a ping -c 10 -i 0.1 -W 2 10.9.0.2
check "reorder_pct 50: reorder_fault counted ($(cnt sib0 reorder_fault))" above sib0 reorder_fault 0
knob reorder_pct 0

# --- corruption: the receiver's ICRC check drops it ---
i0=$(cnt sib1 drop_icrc)
knob corrupt_pct 100
check_fail "corrupt_pct 100: ping a -> b fails" in_host a ping -c 2 -W 1 10.9.0.2
knob corrupt_pct 0
check "corrupt_pct 100: corrupt_fault counted ($(cnt sib0 corrupt_fault))" above sib0 corrupt_fault 0
check "corrupt_pct 100: sib1 drop_icrc counted ($i0 -> $(cnt sib1 drop_icrc))" above sib1 drop_icrc "$i0"
check_wait "corrupt_pct 0: ping recovers" 20 pings a 10.9.0.2

# --- receive starvation: the next 3 packets at sib1 find no receive WQE ---
r0=$(cnt sib1 drop_no_rwqe)
echo 3 >"$(sib sib1 rx_starve)"
in_host a ping -c 5 -i 0.2 -W 1 10.9.0.2
check "rx_starve 3: exactly 3 drop_no_rwqe ($r0 -> $(cnt sib1 drop_no_rwqe))" test "$(cnt sib1 drop_no_rwqe)" = $((r0 + 3))
check "rx_starve is used up" grep -qx 0 "$(sib sib1 rx_starve)"
check_wait "rx_starve: ping recovers" 10 pings a 10.9.0.2

# --- one-shot post_send failure. The knob is per device: any post on sib0
# (a MAD of QP1 too) may take it, so ib0 must show that its own post got
# it: the stock driver counts it in tx_errors and logs "post_send failed"
# (6.1 ipoib_send) ---
a_stat() { in_host a cat "/sys/class/net/ib0/statistics/$1"; }
a_stat_above() { [ "$(a_stat "$1")" -gt "$2" ]; }
te0=$(a_stat tx_errors)
dmesg_mark post_send
echo 1 >"$(sib sib0 fail_post_send)"
in_host a ping -c 3 -i 0.2 -W 1 10.9.0.2
check "fail_post_send is used up" grep -qx 0 "$(sib sib0 fail_post_send)"
check_wait "fail_post_send: ib0's post failed (tx_errors $te0 -> $(a_stat tx_errors))" 10 \
	a_stat_above tx_errors "$te0"
check "fail_post_send: the driver logged 'ib0: post_send failed'" logged "ib0: post_send failed"
check_wait "fail_post_send: ping recovers" 10 pings a 10.9.0.2

# --- one-shot create_ah failure: a client reregister makes ib_sa and ipoib
# create AHs again; the first fails (ib_sa then has no SM AH until the next
# port event, as with a real HCA), the second reregister recovers ---
echo 1 >"$(sib sib0 fail_create_ah)"
echo 1 >"$(sib sib0 rereg)"
# used up: ib_sa's update for the first event has made (and lost) its
# AH; the second event is handled after it, whenever it comes
check_wait "fail_create_ah is used up" 20 grep -qx 0 "$(sib sib0 fail_create_ah)"
echo 1 >"$(sib sib0 rereg)"
check_wait "fail_create_ah: ping recovers after another reregister" 30 pings a 10.9.0.2

# --- detach goes by MGID and QP, whatever LID it is given, as ConnectX's
# does. a holds 239.8.8.8 (MLID X). With the SA's answers held back 1.5 s,
# b joins 239.7.7.7: the SA creates it under Y; a leaves, X is free. b gets
# Y, attaches, and its address handle for the group fails: the join fails,
# the SA deletes the group, and b's retry 2 s later creates it under X. The
# stock driver, attached since its first try, says "already attached" and
# detaches at the end with X. A stricter detach fails there ("ib_detach_mcast
# failed"), the QP stays attached, and destroying it WARNs ("Destroy of
# kernel CQ shouldn't fail", seen in race-stress). ---
mlid_of() { awk -v m="$1" '$1 == m && $2 == "mlid" { print $3 }' "$SIB_DEBUGFS/sa_groups"; }
has_group() { [ -n "$(mlid_of "$1")" ]; }
no_group() { [ -z "$(mlid_of "$1")" ]; }
MG7=ff12:401b:ffff:0000:0000:0000:0f07:0707
MG8=ff12:401b:ffff:0000:0000:0000:0f08:0808
# b's IGMPv3 reports go to 224.0.0.22 through a send-only join, which
# needs an address handle too: b joins another group first, so that this
# join exists and the one failure meant for 239.7.7.7 cannot hit it.
GID1=$(cat /sys/class/infiniband/sib1/ports/1/gids/0)
igmp_sendonly() { sm_members | grep -qx "ff12:401b:ffff:0000:0000:0000:0000:0016 $GID1 0x8"; }
check "b joins 239.6.6.6" /usr/sbin/ip -n b addr add 239.6.6.6/32 dev ib1 autojoin
check_wait "b's IGMP reports made its send-only join of 224.0.0.22" 20 igmp_sendonly
dmesg_mark
check "a joins 239.8.8.8" /usr/sbin/ip -n a addr add 239.8.8.8/32 dev ib0 autojoin
check_wait "239.8.8.8 has a group" 20 has_group $MG8
x=$(mlid_of $MG8)
echo 1 >"$(sib sib1 fail_create_ah)"
echo 1500 >"$SIB_DEBUGFS/sa_delay_ms"
check "b joins 239.7.7.7; sib1's next address handle fails" \
	/usr/sbin/ip -n b addr add 239.7.7.7/32 dev ib1 autojoin
check_wait "239.7.7.7 has a group" 10 has_group $MG7
y=$(mlid_of $MG7)
check "a leaves 239.8.8.8" /usr/sbin/ip -n a addr del 239.8.8.8/32 dev ib0
check_wait "239.8.8.8 is deleted: MLID $x is free" 10 no_group $MG8
echo 0 >"$SIB_DEBUGFS/sa_delay_ms"
check_wait "b's join under $y failed on the address handle" 20 grep -qx 0 "$(sib sib1 fail_create_ah)"
check_wait "b's retry: 239.7.7.7 is a group under $x" 30 sh -c \
	"grep -q '^$MG7 mlid $x ' $SIB_DEBUGFS/sa_groups"
check_wait "stock found itself still attached (under $y)" 10 sh -c \
	'dmesg | grep -q "multicast group ff12:401b:ffff:0000:0000:0000:0f07:0707 already attached"'
check "b leaves 239.7.7.7" /usr/sbin/ip -n b addr del 239.7.7.7/32 dev ib1
check_wait "239.7.7.7 is deleted" 20 no_group $MG7
check "the detach with MLID $x, not $y, worked" test -z "$(dmesg_since_mark | grep 'detach_mcast failed')"

# --- send stall: sib0 sends nothing for 4 s; 600 preloaded pings fill the
# send ring, the queue stops and the TX watchdog fires after 1 s. The stock
# driver's ndo_tx_timeout only logs ("transmit timeout"; "XXX reset QP" in
# its source): it recovers because the stall ends and the sends complete.
dmesg_mark stall
to0=$(in_host a cat /sys/class/net/ib0/queues/tx-0/tx_timeout)
echo 4000 >"$(sib sib0 send_stall_ms)"
/usr/sbin/ip netns exec a /usr/bin/ping -q -l 600 -c 600 -i 0.01 10.9.0.2 >/dev/null 2>&1 &
pinger=$!
check_wait "send stall: the TX watchdog fired (tx_timeout $to0 -> $(in_host a cat /sys/class/net/ib0/queues/tx-0/tx_timeout))" 10 \
	sh -c "test \"\$(/usr/sbin/ip netns exec a cat /sys/class/net/ib0/queues/tx-0/tx_timeout)\" -gt $to0"
kill "$pinger" 2>/dev/null
wait "$pinger" 2>/dev/null
check_wait "send stall: stock logs 'transmit timeout'" 10 sh -c 'dmesg | grep -q "transmit timeout"'
check_wait "send stall over: ping recovers" 20 pings a 10.9.0.2

# --- CQ overflow: the next completion at sib1 overflows its CQ (CQ_ERR);
# as on an HCA, the QPs completing into it go to ERR ---
q0=$(cnt sib1 drop_qp_state)
echo 1 >"$(sib sib1 fail_cq_overflow)"
in_host b ping -c 2 -i 0.3 -W 1 10.9.0.1
check_wait "fail_cq_overflow: cq_overflow counted" 10 above sib1 cq_overflow 0
in_host a ping -c 2 -i 0.3 -W 1 10.9.0.2
check_wait "fail_cq_overflow: ib1's QP is in ERR (drop_qp_state $q0 -> $(cnt sib1 drop_qp_state))" 10 \
	above sib1 drop_qp_state "$q0"
qpn1=$((0x$(in_host b cat /sys/class/net/ib1/address | cut -d: -f2-4 | tr -d :)))
check "fail_cq_overflow: rdma res shows ib1's QP $qpn1 in ERR" \
	sh -c "rdma res show qp link sib1/1 lqpn $qpn1 | grep -q 'state ERR'"

# --- QP_FATAL on ib0's QP: it goes to ERR (the stock driver sets no QP
# event handler, so it does not hear of it: recorded, not required) ---
qpn0=$((0x$(in_host a cat /sys/class/net/ib0/address | cut -d: -f2-4 | tr -d :)))
f0=$(cnt sib0 qp_fatal)
check "qp_fatal $qpn0 (ib0's QP)" sh -c "echo $qpn0 >$(sib sib0 qp_fatal)"
check "qp_fatal: counted" test "$(cnt sib0 qp_fatal)" = $((f0 + 1))
check "qp_fatal: rdma res shows QP $qpn0 in ERR" \
	sh -c "rdma res show qp link sib0/1 lqpn $qpn0 | grep -q 'state ERR'"
# busybox sh reports a failed write as "write error: <strerror>" (a file it
# cannot open as "can't create"): the knob's own answer, ENOENT
qp_fatal_enoent() {
	local out
	if out=$(sh -c "echo 4000000 >$(sib sib0 qp_fatal)" 2>&1); then
		echo "the write succeeded"
		return 1
	fi
	echo "$out"
	case $out in
	*"write error: No such file or directory"*) return 0 ;;
	esac
	return 1
}
check "qp_fatal on a QPN that does not exist: ENOENT" qp_fatal_enoent
if in_host a ping -c 2 -W 1 10.9.0.2 >/dev/null 2>&1; then echo "stock after QP_FATAL: ping works"; else echo "stock after QP_FATAL: ping fails (no recovery without ip link down/up)"; fi

# --- DEVICE_FATAL on sib0: every QP to ERR (MAD QPs too); unloading must
# still be clean ---
check "dev_fatal on sib0" sh -c "echo 1 >$(sib sib0 dev_fatal)"
check "dev_fatal: rdma res shows no QP of sib0 outside ERR" \
	sh -c "! rdma res show qp link sib0/1 | grep -v 'state ERR' | grep -q lqpn"
cat "$(sib sib0 counters)" "$(sib sib1 counters)"

check "unload everything" unload_all
check "nothing left loaded" sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
