#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
#
# A path narrower than the broadcast group. Host c (sib2) hangs off a
# second switch whose link to the first carries 1024 bytes (softib's
# path_mtu knob), while every port's own link, and so the broadcast group,
# carry 2048: c joins the group, its interface takes MTU 2044, ARP and
# small packets pass. The SA answers PathRecords to and from c with MTU
# 1024, as OpenSM gives the smallest MTU on the route, and the switch drops
# UD packets over 1024 bytes on that link (softib counts drop_path_mtu).
#
# Ours treats such a path as a router treats a narrower next hop: a packet
# over the path's MTU is dropped before the fabric and its sender gets
# ICMP "fragmentation needed" / ICMPv6 "packet too big" with MTU 1020
# (1024 less the 4-byte IPoIB header); the kernel keeps that PMTU for the
# destination, so IPv4 without DF and IPv6 fragment at the source and TCP
# lowers its MSS. a <-> b keep the full 2044.
#
# Stock finding (Documentation/testing.rst): the in-tree driver takes the
# MTU of the broadcast group for every destination and never looks at the
# PathRecord's; what it sends to c over 1024 bytes is lost at the thin link
# with nothing to tell the sender, so large pings to c go unanswered and a
# TCP connection to c stalls once its segments grow (not run: it would only
# wait out its timeout).
. /tests/lib.sh

has() { printf '%s\n' "$1" | grep -q "$2"; }
# thin_drops: UD packets the thin link dropped, from either side
thin_drops() { echo $(($(sib_counter sib0 drop_path_mtu) + $(sib_counter sib2 drop_path_mtu))); }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=3" load_softib ndevs=3 || exit 0
check_fail "path_mtu refuses 1000 (not an IB MTU)" sh -c "echo 1000 >$(sib sib2 path_mtu)"
check "sib2 behind a 1024-byte link (path_mtu 1024)" sh -c "echo 1024 >$(sib sib2 path_mtu)"
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0, ib1, ib2 exist" 20 test -d /sys/class/net/ib2 || exit 0
check "host a (ib0)" make_host a ib0 10.72.0.1/24 fd00:72::1/64
check "host b (ib1)" make_host b ib1 10.72.0.2/24 fd00:72::2/64
check "host c (ib2)" make_host c ib2 10.72.0.3/24 fd00:72::3/64
check_wait "carrier on ib2: c joined the 2048-byte broadcast group" 30 _t_has_carrier c ib2
check "ib2 has the group's MTU, 2044" test "$(in_host c cat /sys/class/net/ib2/mtu)" = 2044
check_wait "ping a -> b" 30 pings a 10.72.0.2
check_wait "ping a -> c" 30 pings a 10.72.0.3
check_wait "ping6 a -> c" 30 in_host a ping -c 1 -W 2 fd00:72::3
# 2016 bytes of ICMP payload + 8 + 20 = 2044; 992 + 28 = 1020
check "a -> b: 2044-byte DF packet, answered (a full path)" in_host a ping -c 2 -W 2 -M do -s 2016 10.72.0.2
check "a -> c: 1020-byte DF packet, answered" in_host a ping -c 2 -W 2 -M do -s 992 10.72.0.3
x0=$(thin_drops)

if [ "$IPOIB_DRIVER" = ours ]; then
	t0=$(in_host a ethtool -S ib0 | awk '$1 == "tx_drop_too_big:" { print $2 }')
	out=$(in_host a ping -c 1 -W 2 -M do -s 1200 10.72.0.3 2>&1)
	printf '%s\n' "$out"
	check "a -> c: a 1228-byte DF ping is answered by 'Frag needed ... mtu = 1020'" \
		has "$out" "Frag needed.*mtu = 1020"
	out=$(in_host a ip route get 10.72.0.3)
	printf '%s\n' "$out"
	check "a keeps PMTU 1020 for c (ip route get)" has "$out" "mtu 1020"
	check "a -> c: DF over 1020 now refused locally (EMSGSIZE)" \
		has "$(in_host a ping -c 1 -W 2 -M do -s 1200 10.72.0.3 2>&1)" "mtu=1020"
	check "a -> c: 1228-byte ping without DF, fragmented at 1020, answered" \
		in_host a ping -c 2 -W 2 -s 1200 10.72.0.3
	check "counted in ib0's tx_drop_too_big ($t0 -> more)" test \
		"$(in_host a ethtool -S ib0 | awk '$1 == "tx_drop_too_big:" { print $2 }')" -gt "$t0"
	# IPv6: the first packet learns the PMTU (packet too big), the next
	# ones are fragmented by a itself
	check_wait "a -> c: 1248-byte ping6 answered (after 'packet too big')" 10 \
		in_host a ping -c 1 -W 2 -s 1200 fd00:72::3
	check "a keeps PMTU 1020 for c's IPv6 address" \
		has "$(in_host a ip -6 route get fd00:72::3)" "mtu 1020"
	# the other way: c learns it from its own driver as well
	check_wait "c -> b: 1228-byte ping answered (after 'Frag needed')" 10 \
		in_host c ping -c 1 -W 2 -s 1200 10.72.0.2
	tcp_echo_serve c 5203
	tcp_echo_check "TCP a -> c -> a over the 1024-byte path" a 10.72.0.3 5203 2048
	check "a -> b still carries 2044-byte DF packets" in_host a ping -c 2 -W 2 -M do -s 2016 10.72.0.2
	check "the thin link dropped nothing ours sent ($x0 -> $(thin_drops))" test "$(thin_drops)" = "$x0"
else
	check_fail "stock finding: a -> c: a 1228-byte DF ping goes unanswered" \
		in_host a ping -c 2 -W 2 -M do -s 1200 10.72.0.3
	check "stock finding: the thin link dropped it ($x0 -> $(thin_drops))" test "$(thin_drops)" -gt "$x0"
	check "stock finding: nothing told a: no PMTU for c (ip route get)" sh -c \
		"! /usr/sbin/ip netns exec a ip route get 10.72.0.3 | grep -q 'mtu 1020'"
	check_fail "stock finding: a -> c: a 1228-byte ping without DF goes unanswered too" \
		in_host a ping -c 2 -W 2 -s 1200 10.72.0.3
	check "a -> c: 1020-byte packets still pass" in_host a ping -c 2 -W 2 -M do -s 992 10.72.0.3
fi
check "unload everything" unload_all
