#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 420
#
# Partitions are apart and follow the port's P_Key table at run time. Three
# ports; sib0 and sib1 have P_Key 0x8001, sib2 has not: the SA answers no
# PathRecord to sib2 in 0x8001. A child whose P_Key
# is not in the table comes up without carrier and gets it when the P_Key is
# added; removing the P_Key takes the carrier away again, and the frames
# still sent to that port in the partition are dropped by the HCA
# (drop_bad_pkey), none delivered. A broadcast (ARP) in partition 0x8001
# never reaches an interface of the default partition on the same port.
# The child opened without its P_Key still collects its idle paths.
# Each negative check comes after its positive control: the same pair (or
# the same sender) works where the partitions allow it.
. /tests/lib.sh

PING_W=1	# pings (lib.sh): wait 1 s for the reply
bad() { sib_counter "$1" drop_bad_pkey; }
rx_of() { in_host "$1" cat "/sys/class/net/$2/statistics/rx_packets"; }
no_carrier() { ! _t_has_carrier "$1" "$2"; }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=3" load_softib ndevs=3 || exit 0
check "P_Key 0x8001 at index 1 of sib0" pkey_set sib0 1 0x8001
check "P_Key 0x8001 at index 1 of sib1" pkey_set sib1 1 0x8001
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0..ib2 exist" 20 test -d /sys/class/net/ib2 || exit 0
for i in 0 1 2; do
	check "child ib$i.8001" ip link add link ib$i name ib$i.8001 type ipoib pkey 0x8001
done
check "host a (ib0.8001)" make_host a ib0.8001 10.41.0.1/24
check "host b (ib1.8001)" make_host b ib1.8001 10.41.0.2/24
check "host c (ib2.8001, P_Key not in sib2's table)" make_host c ib2.8001 10.41.0.3/24
# ib0 and ib1, the default partition on the same ports as ib0.8001 and
# ib1.8001, in the same subnet
check "host p0 (ib0, default partition) with 10.41.0.8" make_host p0 ib0 10.41.0.8/24
check "host p1 (ib1, default partition) with 10.41.0.9" make_host p1 ib1 10.41.0.9/24
check_wait "carrier on ib0.8001" 30 _t_has_carrier a ib0.8001
check_wait "carrier on ib1.8001" 30 _t_has_carrier b ib1.8001
check_wait "carrier on ib1" 30 _t_has_carrier p1 ib1
check "ib2.8001 is up" sh -c "/usr/sbin/ip -n c link show ib2.8001 | grep -q '<.*UP'"
check "ib2.8001 has no carrier (0x8001 not in sib2's table)" no_carrier c ib2.8001
check_wait "partition 0x8001: ping a -> b" 30 pings a 10.41.0.2

# --- the SA gives no path between ports that share no partition (as
# OpenSM): a static neighbour for c on a makes a query a -> c in 0x8001,
# which sib2's table lacks; nothing is sent to sib2 ---
C_HW=$(in_host c cat /sys/class/net/ib2.8001/address)
nr0=$(sa_counter path_no_record)
bad2=$(bad sib2)
in_host a ip neigh replace 10.41.0.3 lladdr "$C_HW" dev ib0.8001 nud permanent
check_fail "a -> c (sib2 lacks P_Key 0x8001): no reply" in_host a ping -c 2 -i 0.5 -W 1 10.41.0.3
check "the SA answered no PathRecord a -> c (path_no_record $nr0 -> $(sa_counter path_no_record))" \
	test "$(sa_counter path_no_record)" -gt "$nr0"
check "nothing reached sib2 (drop_bad_pkey $bad2 -> $(bad sib2))" test "$(bad sib2)" = "$bad2"
in_host a ip neigh del 10.41.0.3 dev ib0.8001

# --- broadcasts stay in their partition ---
# positive controls: 10.41.0.9 answers in its own (default) partition, and
# a reaches b in theirs
check_wait "default partition: ping p0 -> p1 (10.41.0.9 answers)" 30 pings p0 10.41.0.9
check "partition 0x8001: ping a -> b" pings a 10.41.0.2
rx0=$(rx_of b ib1.8001)
check_fail "ARP from partition 0x8001 does not reach ib1 (default partition)" \
	in_host a ping -c 3 -i 0.5 -W 1 10.41.0.9
check "ib1.8001 saw those ARP broadcasts (rx_packets $rx0 -> $(rx_of b ib1.8001))" \
	test "$(rx_of b ib1.8001)" -gt "$rx0"
check "a has no address for 10.41.0.9" sh -c \
	"! /usr/sbin/ip -n a neigh show 10.41.0.9 | grep -q lladdr"
check "default partition: ping p1 -> p0 (p1 can send)" pings p1 10.41.0.8
check_fail "and the default partition cannot reach 10.41.0.2 either" \
	in_host p1 ping -c 2 -i 0.5 -W 1 10.41.0.2

# --- P_Key added at run time: ib2.8001 comes up ---
check "P_Key 0x8001 added to sib2" pkey_set sib2 1 0x8001
check_wait "P_Key 0x8001 added to sib2: ib2.8001 carrier on" 30 _t_has_carrier c ib2.8001
check_wait "ping a -> c in the partition" 30 pings a 10.41.0.3

# --- P_Key removed at run time: ib1.8001 goes down, frames dropped ---
echo "1 0" >"$(sib sib1 pkeys)"
check_wait "P_Key 0x8001 removed from sib1: ib1.8001 carrier off" 20 no_carrier b ib1.8001
# positive control, and a barrier for the frames in flight when the P_Key went
check "partition 0x8001 still works elsewhere: ping a -> c" pings a 10.41.0.3
bad0=$(bad sib1)
rx0=$(rx_of b ib1.8001)
check_fail "no P_Key at sib1: ping a -> b fails" in_host a ping -c 3 -i 0.3 -W 1 10.41.0.2
check "sib1 drop_bad_pkey counted them ($bad0 -> $(bad sib1))" test "$(bad sib1)" -gt "$bad0"
check "ib1.8001 received none of them (rx_packets $rx0 -> $(rx_of b ib1.8001))" \
	test "$(rx_of b ib1.8001)" = "$rx0"
check "ib1 (default partition) still works: carrier" _t_has_carrier p1 ib1

# ib2.8001 was opened while its P_Key was absent: its neighbour/path
# collector must run all the same (ours; the stock driver keeps paths until
# ifdown). c's reply made a path to a's GID; without the kernel's neighbour
# for a it is idle, and goes within path_idle (module parameter, 60 s by
# default, 5 s here) + one GC period (10 s). Checked before sib2 loses the
# P_Key (which flushes paths), and after the last ping between a and c
# (the positive control above).
C_PATHS=/sys/kernel/debug/ipoib/ib2.8001_path
if [ "$IPOIB_DRIVER" = ours ]; then
	check "ib2.8001 has a path (to a)" grep -q '^GID:' "$C_PATHS"
	check "path_idle=5" sh -c 'echo 5 >/sys/module/ib_ipoib/parameters/path_idle'
	# a forgets c too, or its next probe of c makes c's neighbour again
	check "a and c forget each other (ip neigh del)" sh -c \
		"/usr/sbin/ip -n a neigh del 10.41.0.3 dev ib0.8001 &&
		 /usr/sbin/ip -n c neigh del 10.41.0.1 dev ib2.8001"
	gc_t0=$(_t_now_ds)
fi

# --- and back ---
check "P_Key 0x8001 back at sib1" pkey_set sib1 1 0x8001
check_wait "P_Key back at sib1: ib1.8001 carrier on" 30 _t_has_carrier b ib1.8001
check_wait "P_Key back: ping a -> b recovers" 30 pings a 10.41.0.2
if [ "$IPOIB_DRIVER" = ours ]; then
	gc_t=$(((250 - ($(_t_now_ds) - gc_t0)) / 10))
	[ "$gc_t" -ge 5 ] || gc_t=5
	check_wait "ib2.8001 collects its idle path (GC armed though opened without its P_Key)" \
		"$gc_t" sh -c "! grep -q '^GID:' $C_PATHS"
fi

echo "1 0" >"$(sib sib2 pkeys)"
check_wait "P_Key removed from sib2: ib2.8001 carrier off" 20 no_carrier c ib2.8001

check "unload everything" unload_all
check "nothing left loaded" sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
