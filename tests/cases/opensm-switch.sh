#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock ours
# vms: 1
# boot: shared
# timeout: 600
#
# Three hosts through softib's simulated switch under OpenSM (ndevs=3
# external_sm=1): OpenSM discovers the switch by directed route through its
# ports, programs its linear and multicast forwarding tables and brings
# every port to ACTIVE; ibnetdiscover shows the switch and three CAs; IPoIB
# traffic (unicast by the LFT, multicast by the MFT) flows between every
# pair of hosts.
. /tests/lib.sh

SW=/sys/kernel/debug/softib/switch

sw_lft_has() {	# sw_lft_has LID: the switch's LFT routes LID
	grep -q "^lft 0x$(printf %x "$1") " "$SW"
}

check "load the IB core (with ib_umad)" load_ib_core
check "load softib ndevs=3 external_sm=1" load_softib ndevs=3 external_sm=1
check_wait "sib0, sib1, sib2 registered" 10 test -d /sys/class/infiniband/sib2
check "the switch is there" test -r "$SW"
opensm_start 0x0002c90300a00001
check_wait "OpenSM brings sib0, sib1, sib2 to ACTIVE" 120 ports_active sib0 sib1 sib2 || opensm_log_tail 40
l0=$(port_lid sib0)
l1=$(port_lid sib1)
l2=$(port_lid sib2)
echo "LIDs: sib0 $l0 sib1 $l1 sib2 $l2"
check "distinct LIDs ($l0 $l1 $l2)" sh -c "[ $l0 != $l1 ] && [ $l1 != $l2 ] && [ $l0 != $l2 ]"
check_wait "OpenSM programmed the switch LFT for all three" 30 sh -c "grep -q '^lft 0x$(printf %x "$l0") ' $SW && grep -q '^lft 0x$(printf %x "$l1") ' $SW && grep -q '^lft 0x$(printf %x "$l2") ' $SW"
cat "$SW"
out=$(ibnetdiscover -C sib0 2>&1)
echo "$out" | grep -v '^$'
check "ibnetdiscover: one switch" sh -c "echo '$out' | grep -c '^Switch' | grep -qx 1"
check "ibnetdiscover: three CAs" sh -c "echo '$out' | grep -c '^Ca' | grep -qx 3"
ibnetdiscover -C sib0 -p >/tmp/links 2>&1
cat /tmp/links
check "ibnetdiscover -p: switch ports 1-3 linked to the three CAs" \
	sh -c "[ \$(grep -c '^SW .* 4x QDR - CA ' /tmp/links) = 3 ]"
check "smpquery by directed route 0,1,3: sib2's NodeInfo through the switch" \
	sh -c "smpquery -C sib0 -D nodeinfo 0,1,3 | grep -q 'Guid:.*0x0002c90300a00003'"
check "ibswitches lists the softib switch" sh -c 'ibswitches -C sib0 | grep -q "softib switch"'
check "sminfo from sib2 (through the switch)" sh -c "sminfo -C sib2 | grep -q 'sm lid $l0 .*SMINFO_MASTER'"
check_wait "saquery -g: broadcast group" 20 sh -c "saquery -C sib0 -g | grep -q 'ff12:401b:ffff::ffff:ffff'"

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0, ib1, ib2 exist" 20 test -d /sys/class/net/ib2
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check "host c (ib2)" make_host c ib2 10.9.0.3/24 fd00:9::3/64
check_wait "carrier on ib0" 60 _t_has_carrier a ib0
check_wait "carrier on ib1" 60 _t_has_carrier b ib1
check_wait "carrier on ib2" 60 _t_has_carrier c ib2
check_wait "OpenSM programmed the MFT (broadcast group)" 30 grep -q '^mft 0xc000 ' "$SW"
check_wait "ping a -> b" 60 in_host a ping -c 1 -W 2 10.9.0.2
check_wait "ping a -> c" 60 in_host a ping -c 1 -W 2 10.9.0.3
check_wait "ping b -> c" 60 in_host b ping -c 1 -W 2 10.9.0.3
check_wait "ping c -> a" 60 in_host c ping -c 1 -W 2 10.9.0.1
check_wait "ping6 a -> c" 60 in_host a ping -6 -c 1 -W 2 fd00:9::3
check_wait "ping6 c -> b" 60 in_host c ping -6 -c 1 -W 2 fd00:9::2
check "2044-byte DF datagram a -> c" in_host a ping -M do -c 2 -W 3 -s 2016 10.9.0.3
out=$(in_host a ping -M do -c 1 -W 2 -s 2017 10.9.0.3 2>&1)
rc=$?
if [ $rc != 0 ] && echo "$out" | grep -qi "message too long\|mtu"; then
	ok "2045-byte DF datagram gets EMSGSIZE"
else
	fail "2045-byte DF datagram gets EMSGSIZE" "rc $rc: $out"
fi
in_host c iperf3 -s -D -p 5201 >/dev/null 2>&1
wait_for 10 sh -c '/usr/sbin/ip netns exec c ss -ltn | grep -q :5201'
out=$(in_host a iperf3 -c 10.9.0.3 -p 5201 -t 3 -J 2>&1)
bps=$(echo "$out" | awk -F: '/"sum_received"/ { s = 1 } s && /"bits_per_second"/ { gsub(/[^0-9.]/, "", $2); print int($2); exit }')
echo "iperf3 TCP 3 s a -> c through the switch: ${bps:-?} bit/s"
killall iperf3 2>/dev/null
tcp_echo_serve c 5202
tcp_echo_check "through the switch: TCP a -> c -> a" a 10.9.0.3 5202 4096
# The cable of sib2 goes down and up: the port comes back in INIT and the
# SM, told by the switch's PortStateChange, brings it back to ACTIVE.
echo down >"$(sib sib2 state)"
check_wait "sib2 link down: port DOWN" 10 sh -c '. /tests/lib.sh; [ "$(port_state sib2)" = DOWN ]'
check_fail "no ping a -> c while c's link is down" in_host a ping -c 1 -W 2 10.9.0.3
t0=$(_t_now_ds)
echo up >"$(sib sib2 state)"
check "sib2 link up: port back in INIT" sh -c '. /tests/lib.sh; [ "$(port_state sib2)" = INIT ]'
if check_wait "OpenSM brings sib2 back to ACTIVE" 90 ports_active sib2; then
	t=$(($(_t_now_ds) - t0))
	ok "sib2 ACTIVE again $((t / 10)).$((t % 10)) s after link up"
fi
check_wait "ping a -> c again" 60 in_host a ping -c 1 -W 2 10.9.0.3

fwd=$(awk '$1 == "forwarded" { print $2 }' "$SW")
check "the switch forwarded the traffic ($fwd packets)" test "${fwd:-0}" -gt 1000
cat "$SW"

for ns in a b c; do ip netns del $ns; done
check "unload ib_ipoib" unload_ipoib
check "rmmod softib with OpenSM running" rmmod softib
check "OpenSM stops (SIGTERM, else SIGKILL)" sh -c '. /tests/lib.sh; opensm_stop TERM || opensm_stop KILL'
check "unload the rest" unload_all
