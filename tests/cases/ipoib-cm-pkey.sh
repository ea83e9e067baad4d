#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
# tier: 612 7
#
# Partitions hold in connected mode too (review 2026-12, finding 13). b's
# port has P_Keys 0xffff and 0x8001 and a child ib1.8001 in connected mode;
# a's port has only 0xffff, so a is no member of b's child's partition. a
# learns the child's hardware address out of band (a static neighbour) and
# sends to it in connected mode: its REQ names the child's service ID but
# travels over P_Key 0xffff. The child must refuse it (a REJ; a then tries
# UD, whose packets the fabric drops for the P_Key) and receive nothing:
# before the fix it accepted the connection and took a's packets into
# partition 0x8001. The stock driver does not check either: a stock finding
# (the child counts a's pings).
. /tests/lib.sh

rx_child() { in_host b cat /sys/class/net/ib1.8001/statistics/rx_packets; }

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "P_Key 0x8001 at index 1 of sib1 (b) only" pkey_set sib1 1 0x8001
check "child ib1.8001" ip link add link ib1 name ib1.8001 type ipoib pkey 0x8001
check "host a (ib0, P_Key 0xffff)" make_host a ib0 10.16.0.1/24
check "host b (ib1.8001, P_Key 0x8001)" make_host b ib1.8001 10.16.0.2/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1.8001" 30 _t_has_carrier b ib1.8001
check "both in connected mode" sh -c '/usr/sbin/ip -n a link set ib0 type ipoib mode connected &&
	/usr/sbin/ip -n b link set ib1.8001 type ipoib mode connected'
check_wait "ib1.8001 offers RC (its address)" 10 sh -c \
	'/usr/sbin/ip netns exec b cat /sys/class/net/ib1.8001/address | grep -q "^80:"'
addr=$(in_host b cat /sys/class/net/ib1.8001/address)
check "a: a static neighbour for b's child ($addr)" \
	in_host a ip neigh replace 10.16.0.2 lladdr "$addr" dev ib0 nud permanent
dmesg_mark cmpkey
r0=$(rx_child)
in_host a ping -c 5 -i 0.3 -W 1 10.16.0.2 >/dev/null 2>&1
r1=$(rx_child)
if [ "$IPOIB_DRIVER" = ours ]; then
	check "b's child received nothing from a ($r0 -> $r1)" test "$r1" = "$r0"
	check "and logged the refused connection" logged "over P_Key 0xffff refused: not ours"
else
	check "stock finding: b's child took a's packets over RC ($r0 -> $r1)" test "$r1" -gt "$r0"
fi
check "unload everything" unload_all
