#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
#
# A path narrower than the broadcast group. A 4K fabric (softib's SA with
# sa_mtu=4096: the group's MTU is 4096, the interfaces take 4092) where
# host c (sib2) hangs off a second switch whose link to the first carries
# 2048 bytes (softib's path_mtu knob): c joins the group, ARP and packets
# up to 2044 bytes pass. The SA answers PathRecords to and from c with MTU
# 2048, as OpenSM gives the smallest MTU on the route, and the switch drops
# UD packets over 2048 bytes on that link (softib counts drop_path_mtu).
# (A 2K path and not a 1K one: IPv6 needs 1280 bytes on every path, and a
# 1024-byte IB MTU carries 1020.)
#
# Ours treats such a path as a router treats a narrower next hop: a packet
# over the path's MTU is dropped before the fabric and its sender gets
# ICMP "fragmentation needed" / ICMPv6 "packet too big" with MTU 2044
# (2048 less the 4-byte IPoIB header), and the route's PMTU is lowered;
# so IPv4 without DF and IPv6 fragment at the source and TCP lowers its
# MSS. a <-> b keep the full 4092.
#
# Stock finding (Documentation/testing.rst): the in-tree driver takes the
# MTU of the broadcast group for every destination and never looks at the
# PathRecord's; what it sends to c over 2048 bytes is lost at the thin link
# with nothing to tell the sender, so large pings to c go unanswered and a
# TCP connection to c stalls once its segments grow (not run: it would only
# wait out its timeout).
. /tests/lib.sh

has() { printf '%s\n' "$1" | grep -q "$2"; }
# mtu_is NS IFNAME MTU: read again at each poll of check_wait
mtu_is() { [ "$(in_host "$1" cat "/sys/class/net/$2/mtu")" = "$3" ]; }
# thin_drops: UD packets the thin link dropped, from either side
thin_drops() { echo $(($(sib_counter sib0 drop_path_mtu) + $(sib_counter sib2 drop_path_mtu))); }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=3 sa_mtu=4096" load_softib ndevs=3 sa_mtu=4096 || exit 0
check_fail "path_mtu refuses 2000 (not an IB MTU)" sh -c "echo 2000 >$(sib sib2 path_mtu)"
check "sib2 behind a 2048-byte link (path_mtu 2048)" sh -c "echo 2048 >$(sib sib2 path_mtu)"
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0, ib1, ib2 exist" 20 test -d /sys/class/net/ib2 || exit 0
check "host a (ib0)" make_host a ib0 10.72.0.1/24 fd00:72::1/64
check "host b (ib1)" make_host b ib1 10.72.0.2/24 fd00:72::2/64
check "host c (ib2)" make_host c ib2 10.72.0.3/24 fd00:72::3/64
check_wait "carrier on ib2: c joined the 4096-byte broadcast group" 30 _t_has_carrier c ib2
check_wait "ib2 has the group's MTU, 4092" 20 mtu_is c ib2 4092
check_wait "ib0 has the group's MTU, 4092" 20 mtu_is a ib0 4092
check_wait "ping a -> b" 30 pings a 10.72.0.2
check_wait "ping a -> c" 30 pings a 10.72.0.3
check_wait "ping6 a -> c" 30 in_host a ping -c 1 -W 2 fd00:72::3
# 4064 bytes of ICMP payload + 8 + 20 = 4092; 2016 + 28 = 2044
check "a -> b: 4092-byte DF packet, answered (a full path)" in_host a ping -c 2 -W 2 -M do -s 4064 10.72.0.2
check "a -> c: 2044-byte DF packet, answered" in_host a ping -c 2 -W 2 -M do -s 2016 10.72.0.3
x0=$(thin_drops)

if [ "$IPOIB_DRIVER" = ours ]; then
	t0=$(in_host a ethtool -S ib0 | awk '$1 == "tx_drop_too_big:" { print $2 }')
	out=$(in_host a ping -c 1 -W 2 -M do -s 2972 10.72.0.3 2>&1)
	printf '%s\n' "$out"
	check "a -> c: a 3000-byte DF ping is answered by 'Frag needed ... mtu = 2044'" \
		has "$out" "Frag needed.*mtu = 2044"
	out=$(in_host a ip route get 10.72.0.3)
	printf '%s\n' "$out"
	check "a keeps PMTU 2044 for c (ip route get)" has "$out" "mtu 2044"
	check "a -> c: DF over 2044 now refused locally (EMSGSIZE)" \
		has "$(in_host a ping -c 1 -W 2 -M do -s 2972 10.72.0.3 2>&1)" "mtu=2044"
	check "a -> c: 3000-byte ping without DF, fragmented at 2044, answered" \
		in_host a ping -c 2 -W 2 -s 2972 10.72.0.3
	check "counted in ib0's tx_drop_too_big ($t0 -> more)" test \
		"$(in_host a ethtool -S ib0 | awk '$1 == "tx_drop_too_big:" { print $2 }')" -gt "$t0"
	# IPv6: the first packet learns the PMTU (packet too big), the next
	# ones are fragmented by a itself
	check_wait "a -> c: 3020-byte ping6 answered (after 'packet too big')" 10 \
		in_host a ping -c 1 -W 2 -s 2972 fd00:72::3
	check "a keeps PMTU 2044 for c's IPv6 address" \
		has "$(in_host a ip -6 route get fd00:72::3)" "mtu 2044"
	# the other way: c learns it from its own driver as well
	check_wait "c -> b: 3000-byte ping answered (after 'Frag needed')" 10 \
		in_host c ping -c 1 -W 2 -s 2972 10.72.0.2
	tcp_echo_serve c 5203
	tcp_echo_check "TCP a -> c -> a over the 2048-byte path" a 10.72.0.3 5203 2048
	check "a -> b still carries 4092-byte DF packets" in_host a ping -c 2 -W 2 -M do -s 4064 10.72.0.2
	check "the thin link dropped nothing ours sent ($x0 -> $(thin_drops))" test "$(thin_drops)" = "$x0"
else
	check_fail "stock finding: a -> c: a 3000-byte DF ping goes unanswered" \
		in_host a ping -c 2 -W 2 -M do -s 2972 10.72.0.3
	check "stock finding: the thin link dropped it ($x0 -> $(thin_drops))" test "$(thin_drops)" -gt "$x0"
	check "stock finding: nothing told a: no PMTU for c (ip route get)" sh -c \
		"! /usr/sbin/ip netns exec a ip route get 10.72.0.3 | grep -q 'mtu 2044'"
	check_fail "stock finding: a -> c: a 3000-byte ping without DF goes unanswered too" \
		in_host a ping -c 2 -W 2 -s 2972 10.72.0.3
	check "a -> c: 2044-byte packets still pass" in_host a ping -c 2 -W 2 -M do -s 2016 10.72.0.3
fi
check "unload everything" unload_all
