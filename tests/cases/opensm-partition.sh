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

# --- the partitions change under running interfaces: OpenSM reads
# partitions.conf again at every heavy sweep, and SIGHUP starts one ---
reparts() {	# reparts LINE...: PART plus LINEs as partitions.conf, then a sweep
	printf '%s\n' "$PART" "$@" >"$OPENSM_PARTITIONS"
	kill -HUP "$(cat "$OPENSM_PID")"
}
P2ALL='P2=0x0002, ipoib, mtu=4 : ALL=full ;'
in_table() {	# in_table DEV PKEY15: an entry of DEV's table has these low 15 bits
	local f v
	for f in /sys/class/infiniband/"$1"/ports/1/pkeys/*; do
		v=$(cat "$f")
		[ $((v & 0x7fff)) -eq $(($2)) ] && return 0
	done
	return 1
}
not_in_table() { ! in_table "$@"; }
no_carrier() { ! _t_has_carrier "$@"; }
pkey_is() {	# pkey_is NS IFNAME PKEY: the interface's sysfs pkey reads PKEY
	[ "$(/usr/sbin/ip netns exec "$1" cat "/sys/class/net/$2/pkey")" = "$3" ]
}
at_index0() { [ "$(cat "/sys/class/infiniband/$1/ports/1/pkeys/0")" = "$2" ]; }
in_both() {	# in_both TEST ARG: TEST sib0 ARG and TEST sib1 ARG
	"$1" sib0 "$2" && "$1" sib1 "$2"
}
child_up() {	# child_up NS PARENT PKEY ADDR
	/usr/sbin/ip -n "$1" link add link "$2" name "$2.${3#0x}" type ipoib pkey "$3" &&
		/usr/sbin/ip -n "$1" addr add "$4" dev "$2.${3#0x}" &&
		/usr/sbin/ip -n "$1" link set "$2.${3#0x}" up
}
# members_of MGID N: the SA lists at least N members of MGID (a trusted
# query, with OpenSM's default SA key 1: an untrusted one gets one record
# per group, its PortGid zeroed)
members_of() {
	saquery -C sib0 --smkey 1 -m >/tmp/mcm 2>&1
	[ "$(grep -c "MGID.*$1\$" /tmp/mcm)" -ge "$2" ]
}
g0=$(port_guid sib0)

# 1. children made before their partition exists come up when it is added
check "ib0.8002 in host a, P_Key 0x8002 in no partition yet" child_up a ib0 0x8002 10.82.0.1/24
check "ib1.8002 in host b" child_up b ib1 0x8002 10.82.0.2/24
check "control: ping over 0x8001 a -> b meanwhile" in_host a ping -c 1 -W 2 10.81.0.2
check "no carrier on ib0.8002 without its P_Key" no_carrier a ib0.8002
check "no carrier on ib1.8002 without its P_Key" no_carrier b ib1.8002
reparts "$P2ALL"
check_wait "partition 0x8002 added, SIGHUP: its P_Key reaches sib0 and sib1" 30 in_both has_pkey 0x8002
check_wait "carrier on ib0.8002 (P_Key came, group joined)" 60 _t_has_carrier a ib0.8002
check_wait "carrier on ib1.8002" 60 _t_has_carrier b ib1.8002
check_wait "ping over 0x8002 a -> b" 60 in_host a ping -c 1 -W 2 10.82.0.2
check "ping over 0x8002 b -> a" in_host b ping -c 1 -W 2 10.82.0.1
hw_b=$(/usr/sbin/ip -n b -o link show ib1.8002 | sed -n 's/.*link\/infiniband \([0-9a-f:]*\) .*/\1/p')

# 2. isolation: sib1 is taken out of the partition; a keeps it, and the
# partition both still share (the positive control) keeps working
reparts "P2=0x0002, ipoib, mtu=4 : $g0=full ;"
check_wait "sib1 out of partition 0x0002: its P_Key left sib1's table" 30 not_in_table sib1 0x0002
check "sib0 keeps P_Key 0x8002" has_pkey sib0 0x8002
check_wait "no carrier on ib1.8002 (its P_Key left the table)" 30 no_carrier b ib1.8002
check "control: ping over 0x8001 a -> b" in_host a ping -c 1 -W 2 10.81.0.2
check "control: ib0.8002 keeps its carrier" _t_has_carrier a ib0.8002
check "a static neighbour for b on ib0.8002 ($hw_b)" in_host a ip neigh replace 10.82.0.2 lladdr "$hw_b" nud permanent dev ib0.8002
check "isolated: 3 pings over 0x8002 a -> b, no reply" sh -c '! /usr/sbin/ip netns exec a /usr/bin/ping -c 3 -i 0.3 -W 1 10.82.0.2'
in_host a ip neigh del 10.82.0.2 dev ib0.8002

# 3. sib1 back in the partition: ib1.8002 recovers by itself
reparts "$P2ALL"
check_wait "sib1 back in 0x0002: carrier on ib1.8002 again" 60 _t_has_carrier b ib1.8002
check_wait "ping over 0x8002 a -> b again" 60 in_host a ping -c 1 -W 2 10.82.0.2

# 4. the P_Key at index 0 changes (indx0 puts 0x8003 there): ib0 and ib1
# move to partition 0x8003, join its broadcast group and carry traffic;
# then the default P_Key goes back to index 0, and they follow again
reparts "$P2ALL" "P3=0x0003, indx0, ipoib, mtu=4 : ALL=full ;"
check_wait "indx0: P_Key 0x8003 at index 0 of sib0 and sib1" 30 in_both at_index0 0x8003
check_wait "ib0's P_Key follows index 0 (sysfs pkey 0x8003)" 30 pkey_is a ib0 0x8003
check_wait "ib1's P_Key follows index 0" 30 pkey_is b ib1 0x8003
in_host a ip neigh flush dev ib0
check_wait "ping a -> b in partition 0x8003 (ARP through its broadcast group)" 60 pings a 10.9.0.2
check_wait "saquery -m: a and b are members of the 0x8003 broadcast group" 30 members_of 'ff12:401b:8003::ffff:ffff' 2
grep -E 'MGID|PortGid' /tmp/mcm | grep -A1 'ff12:401b:8003::ffff:ffff'
check "control: ping over 0x8001 a -> b" in_host a ping -c 1 -W 2 10.81.0.2
PART="Default=0x7fff, indx0, ipoib, mtu=4, defmember=full : ALL=full ;
P1=0x0001, ipoib, mtu=4, rate=7 : ALL=full ;"
reparts "$P2ALL"
check_wait "the default P_Key back at index 0 of sib0 and sib1" 30 in_both at_index0 0xffff
check_wait "ib0 back on P_Key 0xffff" 30 pkey_is a ib0 0xffff
check_wait "ib1 back on P_Key 0xffff" 30 pkey_is b ib1 0xffff
in_host a ip neigh flush dev ib0
check_wait "ping a -> b in the default partition again" 60 pings a 10.9.0.2
check_wait "ping b -> a in the default partition again" 60 pings b 10.9.0.1

for ns in a b; do ip netns del $ns; done
check "unload ib_ipoib" unload_ipoib
check "rmmod softib with OpenSM running" rmmod softib
check "OpenSM stops (SIGTERM, else SIGKILL)" sh -c '. /tests/lib.sh; opensm_stop TERM || opensm_stop KILL'
check "unload the rest" unload_all
