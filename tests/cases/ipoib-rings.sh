#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 400
#
# The in-tree driver's ring parameters (review 2026-12, finding 15; issue
# 29 item 4): recv_queue_size and send_queue_size in /etc/modprobe.d set
# the UD QP's receive and send queues with the in-tree ranges (a power of
# 2 up, receive 2-8192, send 128-8192), and the receive one also sizes the
# connected mode's shared receive queue; max_nonsrq_conn_qp bounds the
# passive connections of an HCA without SRQs. softib reports the queues of
# every QP as the vendor drivers do (rdma res show qp -dd: sq_wr, rq_wr,
# srq_wr). Ours adds ethtool -g/-G; the stock legacy datapath has neither.
# debug_level and mcast_debug_level are taken too: above 0 every debug
# message is logged, as in-tree (ours before: "unknown parameter").
. /tests/lib.sh

# qpn NS IF: the QPN in IF's hardware address, decimal
qpn() { printf '%d' "0x$(in_host "$1" cat "/sys/class/net/$2/address" | cut -d: -f2-4 | tr -d :)"; }
# qp_has DEV QPN KEY VALUE: rdma's details of the QP say KEY VALUE
qp_has() { rdma -dd res show qp link "$1/1" lqpn "$2" | grep -q " drv_$3 $4\( \|\$\)"; }
qp_show() { rdma -dd res show qp link "$1/1" lqpn "$2"; }
big() { in_host "$1" ping -c 1 -W 3 -M do -s 60000 "$2" >/dev/null 2>&1; }

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
dmesg_mark params
check "load $IPOIB_DRIVER ib_ipoib recv_queue_size=300 send_queue_size=64 debug_level=0 mcast_debug_level=0" \
	load_ipoib recv_queue_size=300 send_queue_size=64 debug_level=0 mcast_debug_level=0
unk=$(dmesg_since_mark | grep -ci 'unknown parameter')
check "no parameter unknown ($unk logged)" test "$unk" = 0
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.18.0.1/24
check "host b (ib1)" make_host b ib1 10.18.0.2/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
qa=$(qpn a ib0)
qp_show sib0 "$qa"
check "ib0's UD QP: 512 receives (300 rounded up)" qp_has sib0 "$qa" rq_wr 512
check "ib0's UD QP: 128 sends (64 raised to the minimum)" qp_has sib0 "$qa" sq_wr 128
check "a pings b" pings a 10.18.0.2

check "debug_level 1 through sysfs, as in-tree" sh -c \
	'echo 1 >/sys/module/ib_ipoib/parameters/debug_level'
dmesg_mark debug
check "both in connected mode" sh -c '/usr/sbin/ip -n a link set ib0 type ipoib mode connected &&
	/usr/sbin/ip -n b link set ib1 type ipoib mode connected &&
	/usr/sbin/ip -n a link set ib0 mtu 65520 && /usr/sbin/ip -n b link set ib1 mtu 65520'
check_wait "a reaches b with a 60000-byte ping" 30 big a 10.18.0.2
if [ "$IPOIB_DRIVER" = ours ]; then
	check "debug_level 1: the debug messages are logged" logged "connected mode on qpn"
fi
echo 0 >/sys/module/ib_ipoib/parameters/debug_level
rc_srq() { rdma -dd res show qp link sib1/1 | grep 'type RC' | grep -q ' drv_srq_wr 512'; }
rdma -dd res show qp link sib1/1 | grep 'type RC'
check "b's connected-mode QPs receive from a 512-buffer SRQ" rc_srq

if [ "$IPOIB_DRIVER" = ours ]; then
	check "ethtool -g ib0: 512 receive, 128 send, 8192 at most" sh -c \
		'/usr/sbin/ip netns exec a ethtool -g ib0 | tr -s "\t " " " > /tmp/ring &&
		 grep -q "^RX: 8192" /tmp/ring && grep -q "^TX: 8192" /tmp/ring &&
		 [ "$(grep -c "^RX: 512" /tmp/ring)" = 1 ] && [ "$(grep -c "^TX: 128" /tmp/ring)" = 1 ]'
	dmesg_mark rings
	check "ethtool -G ib0 rx 1000 tx 256" in_host a ethtool -G ib0 rx 1000 tx 256
	qp_moved() { [ "$(qpn a ib0)" != "$qa" ]; }
	check_wait "ib0's address names a new UD QP" 30 qp_moved
	check_wait "carrier on ib0 again" 30 _t_has_carrier a ib0
	qa2=$(qpn a ib0)
	check "its receive queue: 1024 (1000 rounded up)" qp_has sib0 "$qa2" rq_wr 1024
	check "its send queue: 256" qp_has sib0 "$qa2" sq_wr 256
	check "the rounding is logged" logged "rings rounded up to powers of 2: 1024/256"
	check_wait "a reaches b with a 60000-byte ping again" 30 big a 10.18.0.2
	check_wait "b reaches a in datagram-size pings too" 30 pings b 10.18.0.1
	check "ethtool -G ib0 rx 1: refused (EINVAL)" sh -c \
		'! /usr/sbin/ip netns exec a ethtool -G ib0 rx 1 2>/tmp/err && grep -q "at least" /tmp/err'
	check "ethtool -G ib0 tx 64: refused" sh -c '! /usr/sbin/ip netns exec a ethtool -G ib0 tx 64'
	check "ethtool -G ib0 rx 16384: refused (more than the maximum)" sh -c \
		'! /usr/sbin/ip netns exec a ethtool -G ib0 rx 16384'
	check "a refusal is logged" logged "rings 1/256 refused: at least 2/128"
	check "the QP stayed ($qa2)" test "$(qpn a ib0)" = "$qa2"
else
	check "stock: no ring settings on the legacy datapath (ethtool -g fails)" sh -c \
		'! /usr/sbin/ip netns exec a ethtool -g ib0'
fi
check "unload everything" unload_all

# Without SRQs, max_nonsrq_conn_qp=2 on b: the third of a's three
# children (each its own QP, namespace and address) is refused; with the
# parameter at 3 (as a check of the check) all three reach b.
nonsrq() {	# nonsrq MAX: how many of a's three children reach b
	local i n=0
	load_ib_core && load_softib ndevs=2 srq=0 &&
		load_ipoib max_nonsrq_conn_qp="$1" || return 1
	wait_for 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1' || return 1
	make_host b ib1 10.19.0.100/24 || return 1
	ip link set ib0 up
	for i in 1 2 3; do
		ip link add link ib0 name c$i type ipoib pkey 0xffff mode connected &&
			make_host c$i c$i 10.19.0.$i/24 &&
			in_host c$i ip link set c$i mtu 65520 || return 1
	done
	in_host b ip link set ib1 type ipoib mode connected &&
		in_host b ip link set ib1 mtu 65520 || return 1
	wait_carrier b ib1 30 || return 1
	for i in 1 2 3; do
		wait_carrier c$i c$i 30 || return 1
	done
	# in turn: c1 and c2 connect first
	for i in 1 2 3; do
		wait_for 20 big c$i 10.19.0.100 && n=$((n + 1))
	done
	echo "$n"
}
dmesg_mark nonsrq
n=$(nonsrq 2)
check "max_nonsrq_conn_qp=2, no SRQ: 2 of 3 children reach b with 60000 bytes ($n)" test "$n" = 2
if [ "$IPOIB_DRIVER" = ours ]; then
	check "the refusal is logged" logged "passive connections"
fi
check "unload everything" unload_all
n=$(nonsrq 3)
check "max_nonsrq_conn_qp=3: all 3 do ($n)" test "$n" = 3
check "unload everything" unload_all
