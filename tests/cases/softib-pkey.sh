#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 420
#
# P_Key enforcement by softib, seen through stock ib_ipoib child interfaces of
# partition 0x8001: a port whose P_Key table lacks the partition's P_Key
# receives none of its frames and its drop_bad_pkey counter counts them; two
# limited members (0x0001) cannot talk, a limited and a full member can; the
# P_Key table edits raise PKEY_CHANGE and the child follows them.
. /tests/lib.sh

PING_W=1	# pings (lib.sh): wait 1 s for the reply
cnt() { sib_counter "$1" drop_bad_pkey; }
above() { [ "$(cnt "$1")" -gt "$2" ]; }
rx_of() { in_host b cat /sys/class/net/ib1.8001/statistics/rx_packets; }
# rx_settled: ib1.8001 received nothing over half a second (what was
# delivered before the P_Key went is counted; a poll of wait_for)
rx_settled() {
	local r
	r=$(rx_of)
	sleep 0.5
	[ "$(rx_of)" = "$r" ]
}

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
echo "1 0x8001" >"$(sib sib0 pkeys)"
echo "1 0x8001" >"$(sib sib1 pkeys)"
check "sib0 P_Key table: index 0 0xffff, index 1 0x8001" \
	sh -c "grep -qx '0 0xffff' $(sib sib0 pkeys) && grep -qx '1 0x8001' $(sib sib0 pkeys)"
check_wait "sysfs pkeys/1 of sib1 is 0x8001 (PKEY_CHANGE seen)" 10 grep -qx 0x8001 /sys/class/infiniband/sib1/ports/1/pkeys/1
check_fail "index 0 cannot be cleared" sh -c "echo '0 0' >$(sib sib0 pkeys)"

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0
check "child ib0.8001" ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "child ib1.8001" ip link add link ib1 name ib1.8001 type ipoib pkey 0x8001
check "host a (ib0.8001)" make_host a ib0.8001 10.11.0.1/24
check "host b (ib1.8001)" make_host b ib1.8001 10.11.0.2/24
check_wait "carrier on ib0.8001" 30 _t_has_carrier a ib0.8001
check_wait "carrier on ib1.8001" 30 _t_has_carrier b ib1.8001
check_wait "partition 0x8001: ping a -> b" 30 pings a 10.11.0.2
check_wait "partition 0x8001: ping b -> a" 10 pings b 10.11.0.1

# --- sib1 loses the partition's P_Key ---
echo "1 0" >"$(sib sib1 pkeys)"
check "sib1 pkeys lists no index 1" sh -c "! grep -q '^1 ' $(sib sib1 pkeys)"
check_wait "ib1.8001 loses its carrier" 20 sh -c '! /usr/sbin/ip -n b link show ib1.8001 | grep -q LOWER_UP'
check_wait "ib1.8001 has counted what arrived before" 10 rx_settled
bad0=$(cnt sib1)
rx0=$(rx_of)
check_fail "no P_Key at sib1: ping a -> b fails" in_host a ping -c 3 -i 0.3 -W 1 10.11.0.2
check "sib1 drop_bad_pkey counted the frames ($bad0 -> $(cnt sib1))" above sib1 "$bad0"
check "ib1.8001 received none of them (rx_packets $rx0 -> $(rx_of))" test "$(rx_of)" = "$rx0"

# --- the P_Key comes back ---
echo "1 0x8001" >"$(sib sib1 pkeys)"
check_wait "P_Key back: ib1.8001 carrier on" 30 _t_has_carrier b ib1.8001
check_wait "P_Key back: ping a -> b recovers" 30 pings a 10.11.0.2

# --- limited membership ---
echo "1 0x0001" >"$(sib sib0 pkeys)"
check_wait "a limited (0x0001), b full: ping a -> b" 20 pings a 10.11.0.2
echo "1 0x0001" >"$(sib sib1 pkeys)"
check_wait "sysfs pkeys/1 of sib1 is 0x0001 (PKEY_CHANGE seen)" 10 \
	grep -qx 0x0001 /sys/class/infiniband/sib1/ports/1/pkeys/1
bad0=$(cnt sib1)
bad1=$(cnt sib0)
check_fail "two limited members: ping a -> b fails" in_host a ping -c 3 -i 0.3 -W 1 10.11.0.2
check "two limited members: drop_bad_pkey counted (sib1 $bad0 -> $(cnt sib1), sib0 $bad1 -> $(cnt sib0))" \
	sh -c "[ $(cnt sib1) -gt $bad0 ] || [ $(cnt sib0) -gt $bad1 ]"
echo "1 0x8001" >"$(sib sib1 pkeys)"
check_wait "b full again: ping a -> b recovers" 30 pings a 10.11.0.2

# the default partition on the parents was never affected
cat "$(sib sib1 counters)"
check "unload everything" unload_all
check "nothing left loaded" sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
