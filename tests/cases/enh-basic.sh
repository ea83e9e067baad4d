#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# vcpus: 2
# timeout: 600
# tier: 612 7
# 612-drivers: stock
#
# Enhanced IPoIB (issue 30): softib loaded with enhanced=1 offers
# rdma_netdev_get_params, as mlx5_ib does on a ConnectX-4 and newer, and the
# driver hands its datapath to softib's provider (Documentation/softib.rst,
# "Enhanced IPoIB"). The stock driver proves the model: it must run on it
# unchanged, as it runs on mlx5i. Checked, as a user of a ConnectX-4 sees it:
# ethtool -i names the provider; one channel per vCPU (ethtool -l); the
# hardware address carries the underlay QPN and no connected-mode flag;
# ping, ping6, TCP (sha256 of the data) and multicast data; RSS (eight TCP
# flows grow at least two channels' receive counters; ARP is counted on
# channel 0); ethtool -G/-C/-L (refused while a P_Key child exists); P_Key
# children by ip link and sysfs with their own QPN, moving data (a sysfs
# child of a parent inside a namespace is refused: ib_ipoib registers it in
# the initial one, where its parent's ifindex names no parent); `mode
# connected` refused with EINVAL by the stock driver (datagram only, as on
# mlx5i); and the legacy fallback: enhanced=0 on the same fabric gives the
# verbs datapath. Ours as stock, except where ours registers a sysfs child:
# in its parent's namespace, where its parent is found; and connected mode,
# which ours runs beside the provider's datagram datapath (60000-byte pings
# over RC, TCP sha256, multicast still through the provider, a switch to
# datagram and back under a TCP stream).
. /tests/lib.sh

et() {	# et NS|- ARGS...: ethtool in NS ("-": here)
	local ns=$1
	shift
	if [ "$ns" = - ]; then ethtool "$@"; else in_host "$ns" ethtool "$@"; fi
}
mode_refused() {	# writing "connected" to IF's mode fails with EINVAL
	! sh -c "echo connected >/sys/class/net/$1/mode" 2>"$_T_STATE/mode.err" &&
		grep -q 'Invalid argument' "$_T_STATE/mode.err"
}
# stat NS IF NAME: a counter of ethtool -S
stat() { et "$1" -S "$2" | awk -v n="$3:" '$1 == n { print $2; exit }'; }
drv_is() { [ "$(et "$1" -i "$2" | awk '$1 == "driver:" { print $2 }')" = "$3" ]; }
combined() { et "$1" -l "$2" | awk '/^Current/ { c = 1 } c && $1 == "Combined:" { print $2; exit }'; }
addr_of() { in_host "$1" cat "/sys/class/net/$2/address"; }
ethtool() { /usr/sbin/ethtool "$@"; }
rx_chans_grown() {	# rx_chans_grown NS IF BEFORE...: channels whose rx_packets grew
	local ns=$1 ifn=$2 n=0 q=0 v
	shift 2
	for v in "$@"; do
		[ "$(stat "$ns" "$ifn" ch${q}_rx_packets)" -gt "$v" ] && n=$((n + 1))
		q=$((q + 1))
	done
	echo $n
}

check "the guest has 2 CPUs" test "$(nproc)" -ge 2
check "load the IB core" load_ib_core
check "load softib ndevs=2 enhanced=1" load_softib ndevs=2 enhanced=1
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "ethtool -i ib0: the provider's driver (softib[ib_ipoib]), enhanced mode" \
	drv_is - ib0 'softib[ib_ipoib]'
check "ethtool -l ib0: one channel per vCPU" test "$(combined - ib0)" = "$(nproc)"
check "ib0's address: flags 00 (no connected mode), an underlay QPN" \
	sh -c "cat /sys/class/net/ib0/address | grep -q '^00:00:00:[4-9a-f]'"
if [ "$IPOIB_DRIVER" = stock ]; then
	check "echo connected >mode: EINVAL (datagram only)" mode_refused ib0
	check "ib0 stays datagram" grep -qx datagram /sys/class/net/ib0/mode
else
	check "echo connected >mode works on the enhanced datapath (ours)" \
		sh -c 'echo connected >/sys/class/net/ib0/mode'
	check "echo datagram >mode" sh -c 'echo datagram >/sys/class/net/ib0/mode'
fi
# a sysfs child while its parent is in the initial namespace (the in-tree
# driver registers a sysfs child there, whatever the parent's namespace: a
# provider that finds the parent by ifindex, as mlx5i does, finds none
# then; softib refuses that, see below)
check "P_Key 0x8001 at index 1 of sib0" pkey_set sib0 1 0x8001
check "P_Key 0x8001 at index 1 of sib1" pkey_set sib1 1 0x8001
check "create_child 0x8001 on ib0" sh -c 'echo 0x8001 >/sys/class/net/ib0/create_child'
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "ib0.8001 moves to a" ip link set ib0.8001 netns a
dmesg_mark child
# child_in_a OP PKEY: write PKEY to ib0's create_child or delete_child in a
child_in_a() { in_host a sh -c "echo $2 >/sys/class/net/ib0/$1_child" 2>/dev/null; }
refused_in_a() { ! child_in_a create 0x8002; }
if [ "$IPOIB_DRIVER" = stock ]; then
	check "create_child 0x8002 on ib0 inside a: refused (EINVAL), no parent found" \
		refused_in_a
	check "... with a log line" logged "softib: no parent interface"
else
	check "create_child 0x8002 on ib0 inside a: made there" child_in_a create 0x8002
	check "... on the enhanced datapath" drv_is a ib0.8002 'softib[ib_ipoib]'
	check "delete_child 0x8002 inside a" child_in_a delete 0x8002
fi
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1

arp0=$(stat b ib1 ch0_rx_packets)
check_wait "ping a -> b" 30 pings a 10.9.0.2
check_wait "ping6 a -> b" 30 pings a fd00:9::2
check "b's ARP request and echo reached its channel 0" test "$(stat b ib1 ch0_rx_packets)" -gt "$arp0"
tcp_echo_serve b 5202
tcp_echo_check "TCP a -> b -> a, enhanced" a 10.9.0.2 5202 2048

# --- multicast data: an echo to a group b joined ---
in_host b sysctl -qw net.ipv4.icmp_echo_ignore_broadcasts=0
check "b joins 239.1.2.3" ip -n b addr add 239.1.2.3/32 dev ib1 autojoin
mcast0=$(stat b ib1 rx_multicast)
check_wait "a's echo to 239.1.2.3 is answered by b" 30 \
	sh -c "/usr/sbin/ip netns exec a ping -c 1 -W 2 -I ib0 239.1.2.3 2>/dev/null | grep -q 'from 10.9.0.2'"
check "b counted multicast received" test "$(stat b ib1 rx_multicast)" -gt "$mcast0"

# --- ours: connected mode beside the HCA's datagram datapath (RC
# connections, their CQ, SRQ and NAPI on the provider's netdev; UD still
# through the provider), both ways, then back, a switch under traffic ---
rc_tx() { sib_counter "$1" rc_tx; }
if [ "$IPOIB_DRIVER" = ours ]; then
	check "a: ib0 to connected mode" ip -n a link set ib0 type ipoib mode connected
	check "b: ib1 to connected mode" ip -n b link set ib1 type ipoib mode connected
	check "connected: ib0's MTU is 65520" sh -c '/usr/sbin/ip -n a link show ib0 | grep -q "mtu 65520 "'
	check_wait "connected: ib0's address offers RC (flags 80)" 20 \
		sh -c "/usr/sbin/ip netns exec a cat /sys/class/net/ib0/address | grep -q '^80:'"
	check_wait "connected: ib1's address offers RC" 20 \
		sh -c "/usr/sbin/ip netns exec b cat /sys/class/net/ib1/address | grep -q '^80:'"
	in_host a ip neigh flush dev ib0
	in_host b ip neigh flush dev ib1
	rc0=$(rc_tx sib0)
	check_wait "connected: 60000-byte ping with DF a -> b" 30 \
		in_host a ping -c 1 -W 5 -M do -s 60000 10.9.0.2
	check "connected: 8000-byte ping6 b -> a" in_host b ping -6 -c 2 -W 5 -s 8000 fd00:9::1
	check "connected: a sent over RC (softib rc_tx $rc0 -> $(rc_tx sib0))" \
		test "$(rc_tx sib0)" -ge $((rc0 + 10))
	tcp_echo_serve b 5204
	tcp_echo_check "connected beside the HCA's datapath: TCP a -> b -> a" a 10.9.0.2 5204 4096
	check_wait "connected: a's echo to 239.1.2.3 still answered (UD, the provider)" 30 \
		sh -c "/usr/sbin/ip netns exec a ping -c 1 -W 2 -I ib0 239.1.2.3 2>/dev/null | grep -q 'from 10.9.0.2'"
	# b goes back to datagram and connected again while a streams to it:
	# the first half of the stream is under way at the first switch (it
	# may also be back already: a fast run did that), the second half
	# goes after it, so data must pass after each switch
	head -c $((8 * 1024 * 1024)) /dev/urandom >/tmp/sw.tx
	rm -f /tmp/sw.rx /tmp/sw.done /tmp/sw.gate
	tcp_echo_serve b 5205
	(tcp_echo_client a 10.9.0.2 5205 /tmp/sw.tx /tmp/sw.rx 120 /tmp/sw.gate 2>/dev/null
	 echo $? >/tmp/sw.done) </dev/null >/dev/null 2>&1 &
	check_wait "switch under traffic: the stream is under way" 30 test -s /tmp/sw.rx
	check "switch under traffic: b to datagram" ip -n b link set ib1 type ipoib mode datagram
	sw0=$(wc -c </tmp/sw.rx)
	[ "$sw0" -lt $((4 * 1024 * 1024)) ] || sw0=$((4 * 1024 * 1024))
	touch /tmp/sw.gate
	check_wait "switch under traffic: more of the stream echoed after it (> $sw0 bytes)" 30 \
		sh -c "[ \$(wc -c </tmp/sw.rx) -gt $sw0 ]"
	check "switch under traffic: b to connected" ip -n b link set ib1 type ipoib mode connected
	check_wait "switch under traffic: the stream ended" 120 test -e /tmp/sw.done
	check "switch under traffic: 8 MiB echoed, sha256 equal ($(wc -c </tmp/sw.rx) bytes back)" \
		sh -c '[ "$(sha256sum </tmp/sw.tx)" = "$(sha256sum </tmp/sw.rx)" ]'
	rm -f /tmp/sw.tx /tmp/sw.rx /tmp/sw.done /tmp/sw.gate
	# b's LID moves and the SM tells b's port only, as a real SM does: a's
	# path to b keeps the old DLID. On the HCA's datapath a sees no UD
	# work completion, so no SLID: b's new connection request, from its
	# new LID, is what tells it (race-stress seed 260535838: c's path to
	# d stayed on d's old LID, c's REQs went there for over 40 s)
	path_to_b() { awk '$1 == "fe80::2:c903:a0:2" { print $2 }' /sys/kernel/debug/ipoib/ib0/paths; }
	check "LID move: a's path to b is on LID $(path_to_b)" test "$(path_to_b)" = 0x0002
	echo 0x20 >"$(sib sib1 lid)"
	check_wait "LID move: ping b -> a (connected, b on its new LID 0x20)" 30 pings b 10.9.0.1
	check_wait "LID move: ping a -> b" 30 pings a 10.9.0.2
	check "LID move: a's path to b is on LID 0x0020 ($(path_to_b))" test "$(path_to_b)" = 0x0020
	rc0=$(rc_tx sib0)
	# (the outage's sends above UD's MTU got "fragmentation needed", as
	# from the in-tree driver: a's route to b remembers 2044 until flushed)
	in_host a ip route flush cache
	check_wait "LID move: 8000-byte ping with DF a -> b (more than UD carries)" 30 \
		in_host a ping -c 1 -W 5 -M do -s 8000 10.9.0.2
	check "LID move: ... over RC (softib rc_tx $rc0 -> $(rc_tx sib0))" \
		test "$(rc_tx sib0)" -ge $((rc0 + 1))
	check "LID move: a's connection to b is up" \
		grep -q ':00a0:0002 up ' /sys/kernel/debug/ipoib/ib0/connections
	check "a and b back to datagram mode" sh -c \
		'/usr/sbin/ip -n a link set ib0 type ipoib mode datagram && /usr/sbin/ip -n b link set ib1 type ipoib mode datagram'
	check "datagram: ib0's MTU back to 2044" sh -c '/usr/sbin/ip -n a link show ib0 | grep -q "mtu 2044 "'
	check_wait "datagram again: ping a -> b" 30 pings a 10.9.0.2
fi

# --- RSS: eight TCP flows spread over b's channels ---
before=
q=0
while [ $q -lt "$(combined b ib1)" ]; do
	before="$before $(stat b ib1 ch${q}_rx_packets)"
	q=$((q + 1))
done
in_host b iperf3 -s -D -p 5201 >/dev/null 2>&1
check_wait "iperf3 server in b" 10 sh -c "/usr/sbin/ip netns exec b ss -ltn | grep -q :5201"
check "8 parallel TCP flows a -> b" in_host a timeout 30 iperf3 -c 10.9.0.2 -p 5201 -t 2 -P 8
# shellcheck disable=SC2086
check "RSS: at least two of b's channels received" test "$(rx_chans_grown b ib1 $before)" -ge 2

# --- ring and coalescing settings ---
check "ethtool -G ib1 rx 1024 tx 2048" et b -G ib1 rx 1024 tx 2048
check "ethtool -g ib1 shows them" sh -c \
	"/usr/sbin/ip netns exec b ethtool -g ib1 | awk '/^Current/ { c = 1 } c && /^RX:/ { r = \$2 } c && /^TX:/ { t = \$2 } END { exit !(r == 1024 && t == 2048) }'"
check "ethtool -G ib1 rx 16: refused" sh -c "! /usr/sbin/ip netns exec b ethtool -G ib1 rx 16 2>/dev/null"
check "ethtool -C ib1 adaptive-rx off rx-usecs 64" et b -C ib1 adaptive-rx off rx-usecs 64
check "ethtool -c ib1 shows rx-usecs 64" sh -c \
	"/usr/sbin/ip netns exec b ethtool -c ib1 | grep -qx 'rx-usecs:[[:space:]]*64'"
check "ping a -> b after -G/-C" pings a 10.9.0.2

# --- P_Key children, their own QPN; -L refused while one exists ---
check "ip link add ib1.8001 (pkey 0x8001)" ip -n b link add link ib1 name ib1.8001 type ipoib pkey 0x8001
check "children: ethtool -i names the provider" drv_is b ib1.8001 'softib[ib_ipoib]'
check "the child's QPN differs from its parent's" \
	test "$(addr_of b ib1.8001 | cut -d: -f2-4)" != "$(addr_of b ib1 | cut -d: -f2-4)"
in_host a ip addr add 10.9.1.1/24 dev ib0.8001
in_host b ip addr add 10.9.1.2/24 dev ib1.8001
in_host a ip link set ib0.8001 up
in_host b ip link set ib1.8001 up
check_wait "carrier on ib0.8001" 30 _t_has_carrier a ib0.8001
check_wait "carrier on ib1.8001" 30 _t_has_carrier b ib1.8001
check_wait "ping over the children a -> b" 30 pings a 10.9.1.2
check "ethtool -L ib1 combined 1: refused while ib1 has a child" \
	sh -c "! /usr/sbin/ip netns exec b ethtool -L ib1 combined 1 2>/dev/null"
check "... with a log line" sh -c "dmesg | grep -q 'channels cannot change while the interface has 1 child'"
check "delete the children" sh -c \
	"/usr/sbin/ip -n b link del ib1.8001 && /usr/sbin/ip netns exec a sh -c 'echo 0x8001 >/sys/class/net/ib0/delete_child'"
check "ethtool -L ib1 combined 1" et b -L ib1 combined 1
check "ethtool -l ib1: 1 channel" test "$(combined b ib1)" = 1
check_wait "ping a -> b on one channel" 10 pings a 10.9.0.2
check "ethtool -L ib1 combined 2" et b -L ib1 combined 2
tcp_echo_serve b 5203
tcp_echo_check "TCP a -> b -> a after -L" a 10.9.0.2 5203 1024

# --- the legacy fallback: the same fabric without the provider ---
check "unload everything" unload_all
check "load softib ndevs=2 enhanced=0" load_softib ndevs=2 enhanced=0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 exists" 20 test -d /sys/class/net/ib0
check "ethtool -i ib0: ib_ipoib's own datapath" drv_is - ib0 ib_ipoib
check "echo connected >mode works on the legacy datapath" sh -c 'echo connected >/sys/class/net/ib0/mode'
check "unload everything" unload_all
