#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
#
# A 4K fabric (softib's SA with sa_mtu=4096: the broadcast group's MTU is
# 4096, as an OpenSM with mtu 4096 in partitions.conf makes it): the
# interfaces take MTU 4092 (4096 less the 4-byte IPoIB header) from the
# group; the 4092/4093 DF boundary holds in both directions; a 4 MiB TCP
# echo arrives intact; ip link refuses an MTU above the group's.
. /tests/lib.sh

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2 sa_mtu=4096" load_softib ndevs=2 sa_mtu=4096 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
check "the broadcast group's MTU is 4096" sh -c \
	"grep -q '^ff12:401b:ffff:0000:0000:0000:ffff:ffff mlid 0x[0-9a-f]* qkey 0x00000b1b mtu 4096 ' $SIB_DEBUGFS/sa_groups"
check_wait "ib0 takes MTU 4092 from the group" 20 sh -c \
	'[ "$(/usr/sbin/ip netns exec a cat /sys/class/net/ib0/mtu)" = 4092 ]'
check_wait "ib1 takes MTU 4092 from the group" 20 sh -c \
	'[ "$(/usr/sbin/ip netns exec b cat /sys/class/net/ib1/mtu)" = 4092 ]'
check_wait "ping a -> b" 30 pings a 10.9.0.2
# 4064 bytes of ICMP payload + 8 ICMP + 20 IPv4 = 4092
check "a -> b: 4092-byte DF packet, answered" in_host a ping -c 2 -W 2 -M do -s 4064 10.9.0.2
check "b -> a: 4092-byte DF packet, answered" in_host b ping -c 2 -W 2 -M do -s 4064 10.9.0.1
check_fail "a -> b: 4093-byte DF packet refused locally (EMSGSIZE)" \
	in_host a ping -c 1 -W 2 -M do -s 4065 10.9.0.2
# 4044 bytes of ICMPv6 payload + 8 ICMPv6 + 40 IPv6 = 4092
check_wait "ping6 a -> b" 30 in_host a ping -c 1 -W 2 fd00:9::2
check "ping6 a -> b: 4092-byte packet, answered" in_host a ping -c 2 -W 2 -M do -s 4044 fd00:9::2
check_fail "MTU 4093 on ib0 refused (above the group's 4092)" in_host a ip link set ib0 mtu 4093
check "MTU 2044 on ib0 accepted" in_host a ip link set ib0 mtu 2044
check "MTU 4092 on ib0 again" in_host a ip link set ib0 mtu 4092
tcp_echo_serve b 5202
tcp_echo_check "TCP a -> b -> a at MTU 4092" a 10.9.0.2 5202 4096
check "unload everything" unload_all
