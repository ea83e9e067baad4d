#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# vcpus: 2
# timeout: 300
#
# Mode switches under a TCP stream with the HCA's offloads (review 2026-12,
# finding 9). b is in connected mode; a streams to b with iperf3 (UD
# checksum and segmentation offload on: softib offers both) and switches
# datagram -> connected -> datagram six times meanwhile. Packets the stack
# built for the offloads (CHECKSUM_PARTIAL, TSO) that leave after the switch
# go over RC, which has no offload: they must be checksummed and segmented
# in software first. b's TCP counts no checksum error
# (/proc/net/snmp InCsumErrors), and the stream goes on. Before the fix the
# features were updated after connected mode started, and the packets in
# between could reach b with only the pseudo-header checksum (ours did not
# show it in 36 switches: its window was microseconds; the stock driver,
# whose RC send path has the same gap, shows 2-3 errors a run: a stock
# finding). 2 vCPUs: the switch and the stream must run at the same time.
# Then, ours only: connections attached while their neighbour entries go
# (finding 2; a fault hook in debugfs widens the window), see below.
. /tests/lib.sh

csum_errs() { in_host b awk '/^Tcp:/ { n++; if (n == 2) for (i = 1; i <= NF; i++) if (h[i] == "InCsumErrors") print $i; if (n == 1) for (i = 1; i <= NF; i++) h[i] = $i }' /proc/net/snmp; }
mode_a() { in_host a ip link set ib0 type ipoib mode "$1"; }
mode_is() { [ "$(in_host a cat /sys/class/net/ib0/mode)" = "$1" ]; }
rx_b() { in_host b cat /sys/class/net/ib1/statistics/rx_bytes; }
rx_above() { [ "$(rx_b)" -gt "$1" ]; }

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.14.0.1/24
check "host b (ib1)" make_host b ib1 10.14.0.2/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
check "b in connected mode" in_host b ip link set ib1 type ipoib mode connected
check "a offers TX checksum and TSO in datagram mode" sh -c \
	'/usr/sbin/ip netns exec a ethtool -k ib0 | grep -q "^tcp-segmentation-offload: on"'
check_wait "ping a -> b" 20 pings a 10.14.0.2
e0=$(csum_errs)
in_host b iperf3 -s -D -p 5201 >/dev/null 2>&1
wait_for 10 sh -c '/usr/sbin/ip netns exec b ss -ltn | grep -q :5201'
in_host a timeout 60 iperf3 -c 10.14.0.2 -p 5201 -t 40 >/dev/null 2>&1 &
r=$(rx_b)
check_wait "the stream runs" 20 rx_above $((r + 1000000))
bad=0
i=1
while [ $i -le 6 ]; do
	r=$(rx_b)
	mode_a connected && wait_for 10 mode_is connected || bad=$((bad + 1))
	wait_for 20 rx_above $((r + 500000)) || bad=$((bad + 1))
	r=$(rx_b)
	mode_a datagram && wait_for 10 mode_is datagram || bad=$((bad + 1))
	wait_for 20 rx_above $((r + 500000)) || bad=$((bad + 1))
	i=$((i + 1))
done
check "six switches to connected and back, the stream going on after each" test $bad = 0
e1=$(csum_errs)
if [ "$IPOIB_DRIVER" = ours ]; then
	check "b's TCP saw no checksum error ($e0 -> $e1)" test "$e1" = "$e0"
else
	# 2 and 3 errors in the two runs of 2026-12-04; how many depends on
	# what the qdisc holds at each switch (Documentation/testing.rst)
	skip "b's TCP saw no checksum error" "stock finding: $((e1 - e0)) TCP checksum errors this run"
fi
kill $(ip netns pids a) $(ip netns pids b) 2>/dev/null

# --- ours: a new connection attached to a neighbour entry that is going
# (review 2026-12, finding 2). The debugfs fault hook holds each new
# connection for 3 ms before its attach; a floods b (both connected)
# while a loop flushes a's neighbours, so entries go while connections
# for them are being attached. Each connection must belong to a live
# entry (at most one each): before the fix one attached to an unlinked
# entry stayed for good, and a's next stop wrote into the freed entry.
# There is one peer, so a has at most one entry: more than one connection
# is a leaked one.
HOOK=/sys/kernel/debug/ipoib/cm_attach_delay_us
HELD=/sys/kernel/debug/ipoib/cm_attach_delayed
nconn() { grep -vc '^#' /sys/kernel/debug/ipoib/ib0/connections; }
nneigh() { grep -vc '^#' /sys/kernel/debug/ipoib/ib0/neighs; }
conns_owned() { [ "$(nconn)" -le "$(nneigh)" ]; }
# flush_loop S N: flush a's neighbours until the hook held N connections,
# S seconds at most
flush_loop() {
	local end=$(($(_t_now_ds) + $1 * 10))
	while [ "$(_t_now_ds)" -lt $end ] && [ "$(cat $HELD)" -lt "$2" ]; do
		ip -n a neigh flush dev ib0 2>/dev/null
	done
}
if [ "$IPOIB_DRIVER" = ours ]; then
	check "a in connected mode" mode_a connected
	check_wait "a in connected mode: ping a -> b" 20 pings a 10.14.0.2
	check "the fault hook: 3 ms before each new connection's attach" sh -c "echo 3000 >$HOOK"
	echo 0 >$HELD
	c0=$(sib_counter sib0 rc_tx)
	in_host a ping -f -w 90 10.14.0.2 >/dev/null 2>&1 &
	fl=$!
	flush_loop 60 10
	kill $(ip netns pids a) 2>/dev/null
	wait $fl
	echo 0 >$HOOK
	# The premise: the window was there, at least once. The
	# flushes go on until the hook held 10 connections, a minute at most:
	# in 15 s it held 11, 15 and, in a full run under load, 4; in a minute
	# once only 7; with the neighbour test
	# removed from ipoib_cm_xmit(), 11 were enough to leave a connection
	# without its entry. How much of the flood went over RC meanwhile
	# depends on how soon each connection is up before the next flush (52
	# to 1860 packets in 15 s), so it is shown only.
	check "connections were made and attached under the flushes meanwhile ($(cat $HELD) held by the hook; softib rc_tx $c0 -> $(sib_counter sib0 rc_tx))" \
		test "$(cat $HELD)" -ge 1
	in_host a ip neigh flush dev ib0
	check_wait "every connection of a belongs to a neighbour entry ($(nconn) connections, $(nneigh) entries)" 20 \
		conns_owned
	check "a to datagram (every connection stopped)" mode_a datagram
	check_wait "datagram again: ping a -> b" 20 pings a 10.14.0.2
fi
check "unload everything" unload_all
