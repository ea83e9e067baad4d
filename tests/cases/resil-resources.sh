#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# timeout: 600
# tier: debug
#
# HCA resource failures injected by softib, each counted, logged (once for
# one failure; a burst is rate limited) and recovered from:
# - post_send failure: the packet is counted as dropped, "post send failed"
#   is logged, the next packets go out;
# - create_ah failure: the path is counted (tx_drop_no_ah), "cannot create
#   an address handle" is logged, the path is retried and traffic flows;
# - receive starvation: softib counts drop_no_rwqe, traffic flows again;
# - CQ overflow: softib counts cq_overflow, the driver logs the CQ error once,
#   makes a new QP and CQs (a CQ in error takes no more completions) and
#   announces its new QPN; traffic flows both ways again by itself.
. /tests/lib.sh

PING_W=1	# pings (lib.sh): wait 1 s for the reply
st() { in_host "$1" cat "/sys/class/net/$2/statistics/$3"; }
estat() { in_host "$1" ethtool -S "$2" | awk -v k="$3:" '$1 == k { print $2 }'; }
lines() { dmesg_since_mark | grep -c "$1"; }
logged() { [ "$(lines "$1")" -ge 1 ]; }

setup() {
	check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || return 1
	check_wait "ib0, ib1, ib2 exist" 20 test -d /sys/class/net/ib2 || return 1
	check "host a (ib0)" make_host a ib0 192.0.2.1/24
	check "host b (ib1)" make_host b ib1 192.0.2.2/24
	check "host c (ib2)" make_host c ib2 192.0.2.3/24
	check_wait "ping a -> b" 40 pings a 192.0.2.2
}
check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=3" load_softib ndevs=3 || exit 0
setup || exit 0

# --- post_send: one failure, then a burst of 30 ---
dmesg_mark post1
d0=$(st a ib0 tx_dropped)
echo 1 >"$(sib sib0 fail_post_send)"
in_host a ping -c 3 -i 0.2 -W 1 192.0.2.2 >/dev/null
check "fail_post_send 1: used up" grep -qx 0 "$(sib sib0 fail_post_send)"
check "fail_post_send 1: counted in tx_dropped ($d0 -> $(st a ib0 tx_dropped))" test "$(st a ib0 tx_dropped)" -gt "$d0"
check "fail_post_send 1: logged once ($(lines 'post send failed'))" test "$(lines 'post send failed')" = 1
check_wait "fail_post_send 1: a -> b works" 10 pings a 192.0.2.2
dmesg_mark post30
echo 30 >"$(sib sib0 fail_post_send)"
in_host a ping -c 40 -i 0.01 -W 1 192.0.2.2 >/dev/null
n=$(lines 'post send failed')
check "fail_post_send 30: logged, rate limited ($n lines)" test "$n" -ge 1 -a "$n" -le 10
check_wait "fail_post_send 30: a -> b works" 10 pings a 192.0.2.2

# --- create_ah: the next AH ib0 makes (a path to c) fails ---
dmesg_mark ah
a0=$(estat a ib0 tx_drop_no_ah)
echo 1 >"$(sib sib0 fail_create_ah)"
in_host a ping -c 2 -W 1 192.0.2.3 >/dev/null
check_wait "fail_create_ah: used up" 10 grep -qx 0 "$(sib sib0 fail_create_ah)"
check_wait "fail_create_ah: counted (tx_drop_no_ah $a0 -> $(estat a ib0 tx_drop_no_ah))" 10 \
	sh -c "test \"\$(/usr/sbin/ip netns exec a ethtool -S ib0 | awk '\$1 == \"tx_drop_no_ah:\" { print \$2 }')\" -gt $a0"
check "fail_create_ah: logged once ($(lines 'address handle'))" test "$(lines 'address handle')" = 1
check_wait "fail_create_ah: a -> c works (path retried)" 20 pings a 192.0.2.3

# --- receive starvation ---
r0=$(sib_counter sib1 drop_no_rwqe)
echo 5 >"$(sib sib1 rx_starve)"
in_host a ping -c 8 -i 0.2 -W 1 192.0.2.2 >/dev/null
check "rx_starve 5: counted (drop_no_rwqe $r0 -> $(sib_counter sib1 drop_no_rwqe))" \
	test "$(sib_counter sib1 drop_no_rwqe)" = $((r0 + 5))
check_wait "rx_starve 5: a -> b works" 10 pings a 192.0.2.2

# --- CQ overflow on c's port ---
# The CQ in error completes nothing more; the driver makes a new QP and new
# CQs by itself, and the new QPN (part of ib2's address) reaches a through
# a gratuitous ARP: both directions work again without reloading anything.
addr0=$(in_host c cat /sys/class/net/ib2/address)
dmesg_mark cq
echo 1 >"$(sib sib2 fail_cq_overflow)"
in_host c ping -c 3 -i 0.3 -W 1 192.0.2.1 >/dev/null
check_wait "fail_cq_overflow: counted (cq_overflow)" 10 sib_counter_ge sib2 cq_overflow 1
check_wait "fail_cq_overflow: the CQ error is logged" 10 logged 'CQ error'
check_wait "fail_cq_overflow: c -> a works again by itself" 30 pings c 192.0.2.1
check "fail_cq_overflow: the CQ error is logged once ($(lines 'CQ error'))" test "$(lines 'CQ error')" = 1
dmesg_since_mark | grep -i 'cq\|qpn' | head -n 3
addr1=$(in_host c cat /sys/class/net/ib2/address)
echo "ib2 address: $addr0 -> $addr1"
check "fail_cq_overflow: ib2 has a new QPN in its address" test "$addr0" != "$addr1"
check_wait "fail_cq_overflow: a -> c works (a learned the new address)" 30 pings a 192.0.2.3
check_wait "fail_cq_overflow: a's neighbour entry for c has the new address" 20 \
	sh -c "/usr/sbin/ip netns exec a /usr/sbin/ip neigh show 192.0.2.3 dev ib0 | grep -q '$addr1'"
check "fail_cq_overflow: 20 pings c -> a, no loss" in_host c ping -c 20 -i 0.05 -W 2 192.0.2.1
check "unload everything" unload_all
