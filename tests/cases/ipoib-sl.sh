#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
#
# The service level comes from the SA, as on a fabric with QoS: softib's SA
# gives SL 5 in every PathRecord, in the broadcast group and as the ports'
# SMSL (sa_sl=5), and the fabric drops every other SL (sl_drop 0xffdf, as
# SL-to-VL tables that map them to VL15). A driver must send unicast on its
# path's SL and multicast on its group's: ARP, ND, ping, ping6, TCP with
# its sha256 and multicast data work, and nothing is dropped for its SL.
# The control: with SL 5 dropped too, a ping fails and drop_sl counts it.
. /tests/lib.sh

SL=5
DROP=0xffdf	# every SL but 5

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2 sa_sl=$SL" load_softib ndevs=2 sa_sl=$SL || exit 0
check "sl_drop $DROP: only SL $SL gets through" sh -c "echo $DROP >$SIB_DEBUGFS/sl_drop"
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0
check "the ports' SMSL is $SL (sysfs sm_sl)" \
	test "$(cat /sys/class/infiniband/sib0/ports/1/sm_sl)" = $SL
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "carrier on ib0 and ib1 (broadcast group joined on SL $SL)" 30 sh -c \
	'/usr/sbin/ip -n a -o link show ib0 | grep -q LOWER_UP &&
	 /usr/sbin/ip -n b -o link show ib1 | grep -q LOWER_UP'
check "the SA made the broadcast group with SL $SL" sh -c \
	"awk '\$1 ~ /^ff12:401b:ffff:/ && \$NF == $SL { f = 1 } END { exit !f }' $SIB_DEBUGFS/sa_groups"
d0=$(( $(sib_counter sib0 drop_sl) + $(sib_counter sib1 drop_sl) ))
check_wait "ping a -> b" 30 pings a 10.9.0.2
check_wait "ping b -> a" 10 pings b 10.9.0.1
check_wait "ping6 a -> b" 30 pings a fd00:9::2
check "20 pings a -> b, none lost" in_host a ping -c 20 -i 0.05 -W 2 10.9.0.2
tcp_echo_serve b 5202
tcp_echo_check "TCP a -> b -> a on SL $SL" a 10.9.0.2 5202 1024
check "b joins 239.1.2.3" in_host b ip addr add 239.1.2.3/32 dev ib1 autojoin
echo 0 >/proc/sys/net/ipv4/icmp_echo_ignore_broadcasts 2>/dev/null
in_host b sh -c 'echo 0 >/proc/sys/net/ipv4/icmp_echo_ignore_broadcasts'
check_wait "multicast ping a -> 239.1.2.3 answered by b" 30 \
	in_host a ping -c 1 -W 2 -I ib0 239.1.2.3
d1=$(( $(sib_counter sib0 drop_sl) + $(sib_counter sib1 drop_sl) ))
check "nothing was sent on another SL (drop_sl $d0 -> $d1)" test "$d1" = "$d0"

# the control: SL 5 dropped as well
check "sl_drop 0xffff" sh -c "echo 0xffff >$SIB_DEBUGFS/sl_drop"
check_fail "ping a -> b fails with every SL dropped" in_host a ping -c 2 -i 0.2 -W 1 10.9.0.2
check "drop_sl counted it" test "$(( $(sib_counter sib0 drop_sl) + $(sib_counter sib1 drop_sl) ))" -gt "$d1"
check "sl_drop $DROP again" sh -c "echo $DROP >$SIB_DEBUGFS/sl_drop"
check_wait "ping a -> b again" 10 pings a 10.9.0.2
check "sl_drop 0" sh -c "echo 0 >$SIB_DEBUGFS/sl_drop"
check "unload everything" unload_all
