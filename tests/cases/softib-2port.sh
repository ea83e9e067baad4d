#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock ours
# vms: 1
# boot: shared
# timeout: 300
#
# Two-port HCAs (softib ports=2), as a dual-port ConnectX: sib0 has ports 1
# and 2 (LIDs 1 and 2), sib1 too (LIDs 3 and 4). One ib_device, one node
# GUID, a port GUID (and GID) per port; IPoIB makes one interface per port,
# bound to it (dev_port 0 and 1, the port's own GID in the hardware
# address), and the two ports of one HCA talk to each other and to the
# other HCA. Events are per port: port 2 of sib0 going down takes the
# carrier of its interface only, while port 1's keeps talking, and it comes
# back by itself; a P_Key added to port 2's table only brings up the child
# on port 2's interface, not the one on port 1 (the PKEY_CHANGE event names
# port 2). Unloading removes the two-port devices with both interfaces.
. /tests/lib.sh

PING_W=1	# pings (lib.sh): wait 1 s for the reply
no_carrier() { ! _t_has_carrier "$1" "$2"; }
# no_carrier_for NS IFNAME S: IFNAME gets no carrier for S seconds
no_carrier_for() { ! wait_for "$3" _t_has_carrier "$1" "$2"; }
port_gid_of() { cat "/sys/class/infiniband/$1/ports/$2/gids/0"; }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2 ports=2" load_softib ndevs=2 ports=2 || exit 0
check "two devices" test "$(_t_sib_devs | wc -l)" = 2
check "sib0 has two ports" test -d /sys/class/infiniband/sib0/ports/2
check "sib0 has no third port" test ! -e /sys/class/infiniband/sib0/ports/3
check_wait "sib0 ports 1 and 2 are ACTIVE" 20 sh -c \
	'for p in 1 2; do grep -q ACTIVE /sys/class/infiniband/sib0/ports/$p/state || exit 1; done'
check "sib0 port LIDs are 1 and 2, sib1's 3 and 4 ($(port_lid sib0 1) $(port_lid sib0 2) $(port_lid sib1 1) $(port_lid sib1 2))" \
	test "$(port_lid sib0 1) $(port_lid sib0 2) $(port_lid sib1 1) $(port_lid sib1 2)" = "1 2 3 4"
check "each port has its own GID ($(port_gid_of sib0 1) / $(port_gid_of sib0 2))" \
	test "$(port_gid_of sib0 1)" != "$(port_gid_of sib0 2)"
check "port 1's GID ends with the node GUID ($(cat /sys/class/infiniband/sib0/node_guid))" \
	test "$(port_gid_of sib0 1 | cut -d: -f5-)" = "$(cat /sys/class/infiniband/sib0/node_guid)"
check "softib's debugfs has port 2 as sib0p2 (LID 2)" grep -qx 0x2 "$(sib sib0p2 lid)"

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "four interfaces (two per HCA)" 20 test -d /sys/class/net/ib3 || exit 0
A=$(ib_of_lid 1)	# sib0 port 1
B=$(ib_of_lid 2)	# sib0 port 2
C=$(ib_of_lid 3)	# sib1 port 1
check "an interface for each port of sib0 (LID 1: $A, LID 2: $B) and for sib1 port 1 ($C)" \
	test -n "$A" -a -n "$B" -a -n "$C" -a "$A" != "$B"
check "$A is port 1 (dev_port 0), $B port 2 (dev_port 1)" \
	test "$(cat "/sys/class/net/$A/dev_port") $(cat "/sys/class/net/$B/dev_port")" = "0 1"
check "host a ($A, sib0 port 1)" make_host a "$A" 10.52.0.1/24 fd52::1/64
check "host b ($B, sib0 port 2)" make_host b "$B" 10.52.0.2/24 fd52::2/64
check "host c ($C, sib1 port 1)" make_host c "$C" 10.52.0.3/24 fd52::3/64
check_wait "carrier on a, b, c" 30 sh -c \
	"/usr/sbin/ip -n a -o link show $A | grep -q LOWER_UP &&
	 /usr/sbin/ip -n b -o link show $B | grep -q LOWER_UP &&
	 /usr/sbin/ip -n c -o link show $C | grep -q LOWER_UP"
check_wait "port 1 -> port 2 of the same HCA: ping a -> b" 30 pings a 10.52.0.2
check_wait "port 2 -> the other HCA: ping b -> c" 30 pings b 10.52.0.3
check_wait "ping6 c -> a" 30 in_host c ping -6 -c 1 -W 2 fd52::1
check "1000-byte pings b -> a" in_host b ping -c 3 -i 0.3 -W 2 -s 1000 10.52.0.1

# --- port 2 down: its interface only ---
check "sib0 port 2 down" sh -c "echo down >$(sib sib0p2 state)"
check_wait "b ($B) loses its carrier" 20 no_carrier b "$B"
check "port 2 is DOWN, port 1 still ACTIVE ($(port_state sib0 2) / $(port_state sib0 1))" \
	test "$(port_state sib0 2) $(port_state sib0 1)" = "DOWN ACTIVE"
check "a ($A) keeps its carrier" _t_has_carrier a "$A"
check "a still pings c (port 1 unaffected)" in_host a ping -c 2 -i 0.3 -W 2 10.52.0.3
check_fail "b reaches nobody" pings b 10.52.0.3
check "sib0 port 2 up" sh -c "echo up >$(sib sib0p2 state)"
check_wait "b's carrier comes back" 30 _t_has_carrier b "$B"
check_wait "b pings c again" 30 pings b 10.52.0.3
check_wait "a pings b again" 30 pings a 10.52.0.2

# --- a P_Key on port 2 only: the event names port 2 ---
check "P_Key 0x8001 at index 1 of sib1 port 1" pkey_set sib1 1 0x8001
check "child $C.8001 on c" in_host c ip link add link "$C" name "$C.8001" type ipoib pkey 0x8001
check "child $A.8001 on a" in_host a ip link add link "$A" name "$A.8001" type ipoib pkey 0x8001
check "child $B.8001 on b" in_host b ip link add link "$B" name "$B.8001" type ipoib pkey 0x8001
check "c's child up" sh -c "/usr/sbin/ip -n c addr add 10.53.0.3/24 dev $C.8001 &&
	/usr/sbin/ip -n c link set $C.8001 up"
check "a's child up" sh -c "/usr/sbin/ip -n a addr add 10.53.0.1/24 dev $A.8001 &&
	/usr/sbin/ip -n a link set $A.8001 up"
check "b's child up" sh -c "/usr/sbin/ip -n b addr add 10.53.0.2/24 dev $B.8001 &&
	/usr/sbin/ip -n b link set $B.8001 up"
check_wait "carrier on c's child" 30 _t_has_carrier c "$C.8001"
check "b's child has no carrier for 3 s (0x8001 not in sib0 port 2's table yet)" \
	no_carrier_for b "$B.8001" 3
check "P_Key 0x8001 at index 1 of sib0 port 2 only" pkey_set sib0p2 1 0x8001
check "port 1's P_Key table has not got it" sh -c \
	'! grep -qi 0x8001 /sys/class/infiniband/sib0/ports/1/pkeys/1'
check_wait "b's child gets its carrier" 30 _t_has_carrier b "$B.8001"
check_wait "partition 0x8001: ping b -> c" 30 pings b 10.53.0.3
check "a's child still has no carrier (port 1 has no 0x8001)" no_carrier a "$A.8001"
check "the default partition still works: ping a -> b" pings a 10.52.0.2

for h in a b c; do ip netns del "$h"; done
check "unload everything" unload_all
check "no softib device left" test -z "$(_t_sib_devs)"
