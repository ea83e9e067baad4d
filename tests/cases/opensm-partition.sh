#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock ours
# vms: 1
# boot: shared
# timeout: 500
#
# A partition defined in OpenSM's partitions.conf (P_Key 0x8001) reaches
# the ports' P_Key tables through softib's SMA (P_KeyTable Set), OpenSM
# creates its IPoIB broadcast group, and child interfaces on it carry
# traffic between two hosts.
. /tests/lib.sh

PART='Default=0x7fff, ipoib, mtu=4, defmember=full : ALL=full ;
P1=0x0001, ipoib, mtu=4, rate=7 : ALL=full ;'

has_pkey() {	# has_pkey DEV PKEY: some entry of DEV's table is PKEY
	grep -qx "$2" /sys/class/infiniband/"$1"/ports/1/pkeys/*
}

check "load the IB core (with ib_umad)" load_ib_core
check "load softib ndevs=2 external_sm=1" load_softib ndevs=2 external_sm=1
check_wait "sib0 and sib1 registered" 10 test -d /sys/class/infiniband/sib1
check "no 0x8001 before OpenSM" sh -c '! grep -qx 0x8001 /sys/class/infiniband/sib0/ports/1/pkeys/*'
opensm_start 0x0002c90300a00001 "$PART"
check_wait "OpenSM brings sib0 and sib1 to ACTIVE" 90 ports_active sib0 sib1 || opensm_log_tail 40
check_wait "P_Key 0x8001 in sib0's table" 30 has_pkey sib0 0x8001
check_wait "P_Key 0x8001 in sib1's table" 30 has_pkey sib1 0x8001
for f in /sys/class/infiniband/sib1/ports/1/pkeys/*; do
	v=$(cat "$f")
	[ "$v" != 0x0000 ] && echo "sib1 pkey[$(basename "$f")] = $v"
done
check "softib's debugfs P_Key table shows 0x8001" grep -q '0x8001' "$(sib sib0 pkeys)"
check_wait "saquery -g: OpenSM made the 0x8001 broadcast group" 20 sh -c "saquery -C sib0 -g | grep -q 'ff12:401b:8001::ffff:ffff'"

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "child ib0.8001" ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "child ib1.8001" ip link add link ib1 name ib1.8001 type ipoib pkey 0x8001
check "host a (ib0)" make_host a ib0 10.9.0.1/24
check "host b (ib1)" make_host b ib1 10.9.0.2/24
check "ib0.8001 in host a" sh -c '/usr/sbin/ip link set ib0.8001 netns a && /usr/sbin/ip -n a addr add 10.81.0.1/24 dev ib0.8001 && /usr/sbin/ip -n a link set ib0.8001 up'
check "ib1.8001 in host b" sh -c '/usr/sbin/ip link set ib1.8001 netns b && /usr/sbin/ip -n b addr add 10.81.0.2/24 dev ib1.8001 && /usr/sbin/ip -n b link set ib1.8001 up'
check_wait "carrier on ib0.8001 (joined the 0x8001 group)" 60 _t_has_carrier a ib0.8001
check_wait "carrier on ib1.8001" 60 _t_has_carrier b ib1.8001
check_wait "ping over P_Key 0x8001 a -> b" 60 in_host a ping -c 1 -W 2 10.81.0.2
check "ping over P_Key 0x8001, 5 replies" in_host a ping -c 5 -i 0.2 -W 2 10.81.0.2
check_wait "ping over the default partition a -> b" 60 in_host a ping -c 1 -W 2 10.9.0.2
n=$(saquery -C sib0 -m | grep -c 'ff12:401b:8001')
check "saquery -m: members of the 0x8001 groups ($n)" test "$n" -ge 2

for ns in a b; do ip netns del $ns; done
check "unload ib_ipoib" unload_ipoib
check "rmmod softib with OpenSM running" rmmod softib
check "OpenSM stops (SIGTERM, else SIGKILL)" sh -c '. /tests/lib.sh; opensm_stop TERM || opensm_stop KILL'
check "unload the rest" unload_all
