#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock ours
# vms: 1
# boot: shared
# timeout: 500
#
# The real OpenSM manages softib (external_sm=1): two ports back to back
# start in INIT with LID 0; OpenSM, through ib_umad and softib's SMA, gives
# them LIDs and brings them to ACTIVE; sminfo, ibnetdiscover and saquery
# show the fabric; IPoIB joins OpenSM's broadcast group and ping, ping6,
# the 2044/2045 MTU boundary and iperf3 work; ib_ipoib and softib unload
# cleanly with OpenSM still running.
. /tests/lib.sh

check "load the IB core (with ib_umad)" load_ib_core
check "load softib ndevs=2 external_sm=1" load_softib ndevs=2 external_sm=1
check_wait "sib0 and sib1 registered" 10 test -d /sys/class/infiniband/sib0 -a -d /sys/class/infiniband/sib1
check "before the SM: sib0 INIT, LID 0" sh -c '. /tests/lib.sh; [ "$(port_state sib0)" = INIT ] && [ "$(port_lid sib0)" = 0 ]'
check "before the SM: sib1 INIT, LID 0" sh -c '. /tests/lib.sh; [ "$(port_state sib1)" = INIT ] && [ "$(port_lid sib1)" = 0 ]'
check "no embedded SA: no SM yet (sm_lid 0)" grep -qx 0x0 /sys/class/infiniband/sib0/ports/1/sm_lid

t0=$(_t_now_ds)
opensm_start 0x0002c90300a00001
if check_wait "OpenSM brings sib0 and sib1 to ACTIVE" 90 ports_active sib0 sib1; then
	echo "OpenSM: ports ACTIVE after $(( ($(_t_now_ds) - t0) / 10 )).$(( ($(_t_now_ds) - t0) % 10 )) s"
else
	opensm_log_tail 40
fi
l0=$(port_lid sib0)
l1=$(port_lid sib1)
sm0=$(printf '%d' "$(cat /sys/class/infiniband/sib0/ports/1/sm_lid)")
sm1=$(printf '%d' "$(cat /sys/class/infiniband/sib1/ports/1/sm_lid)")
echo "LIDs: sib0 $l0 sib1 $l1, sm_lid $sm0/$sm1"
check "OpenSM assigned distinct LIDs ($l0, $l1)" test "$l0" != 0 -a "$l1" != 0 -a "$l0" != "$l1"
check "both ports point at OpenSM's port (sm_lid $sm0)" test "$sm0" = "$l0" -a "$sm1" = "$l0"
check "ibstat: sib1 Active, base lid $l1, SM lid $l0" sh -c "ibstat sib1 | grep -q 'State: Active' && ibstat sib1 | grep -q 'Base lid: $l1' && ibstat sib1 | grep -q 'SM lid: $l0'"
rdma link show

out=$(sminfo -C sib1 2>&1)
echo "$out"
check "sminfo (from sib1) finds the master SM at LID $l0" sh -c "echo '$out' | grep -q 'sm lid $l0 .*SMINFO_MASTER'"
out=$(ibnetdiscover -C sib0 2>&1)
echo "$out" | grep -v '^#' | grep -v '^$'
check "ibnetdiscover shows the two CAs and the link" sh -c "echo '$out' | grep -c '^Ca' | grep -qx 2 && echo '$out' | grep -q '^\[1\].*lid $l1'"
check_wait "saquery NodeRecords lists both nodes" 20 sh -c "saquery -C sib0 | grep -c 'NodeRecord dump' | grep -qx 2"
out=$(saquery -C sib0 -g 2>&1)
echo "$out"
check "saquery -g: OpenSM's IPoIB broadcast group exists" sh -c "echo '$out' | grep -q 'ff12:401b:ffff::ffff:ffff'"
saquery -C sib0 -p >/tmp/pathrecords 2>&1
grep -iE 'slid|dlid|mtu|rate' /tmp/pathrecords | head -n 12
check "saquery -p: OpenSM has a PathRecord to sib1's LID" \
	grep -qiE "dlid\.+(0x0*$(printf %x "$l1")|$l1)\$" /tmp/pathrecords

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "carrier on ib0 (joined OpenSM's broadcast group)" 60 _t_has_carrier a ib0
check_wait "carrier on ib1" 60 _t_has_carrier b ib1
mtu=$(in_host a cat /sys/class/net/ib0/mtu)
check "ib0 MTU is 2044 (OpenSM's group MTU 2048): $mtu" test "$mtu" = 2044
check_wait "ping a -> b" 60 in_host a ping -c 1 -W 2 10.9.0.2
check_wait "ping b -> a" 20 in_host b ping -c 1 -W 2 10.9.0.1
check "ping a -> b, 5 replies" in_host a ping -c 5 -i 0.2 -W 2 10.9.0.2
check_wait "ping6 a -> b" 60 in_host a ping -6 -c 1 -W 2 fd00:9::2
check_wait "ping6 b -> a" 20 in_host b ping -6 -c 1 -W 2 fd00:9::1
check "2044-byte DF datagram passes" in_host a ping -M do -c 2 -W 3 -s 2016 10.9.0.2
out=$(in_host a ping -M do -c 1 -W 2 -s 2017 10.9.0.2 2>&1)
rc=$?
if [ $rc != 0 ] && echo "$out" | grep -qi "message too long\|mtu"; then
	ok "2045-byte DF datagram gets EMSGSIZE"
else
	fail "2045-byte DF datagram gets EMSGSIZE" "rc $rc: $out"
fi
out=$(saquery -C sib0 -m 2>&1)
n=$(echo "$out" | grep -c 'PortGid')
echo "$out" | grep -E 'MGID|PortGid' | head -n 12
check "saquery -m: OpenSM holds the IPoIB members ($n records)" test "$n" -ge 4

in_host b iperf3 -s -D -p 5201 >/dev/null 2>&1
wait_for 10 sh -c '/usr/sbin/ip netns exec b ss -ltn | grep -q :5201'
out=$(in_host a iperf3 -c 10.9.0.2 -p 5201 -t 3 -J 2>&1)
bps=$(echo "$out" | awk -F: '/"sum_received"/ { s = 1 } s && /"bits_per_second"/ { gsub(/[^0-9.]/, "", $2); print int($2); exit }')
echo "iperf3 TCP 3 s under OpenSM: ${bps:-?} bit/s"
killall iperf3 2>/dev/null
tcp_echo_serve b 5202
tcp_echo_check "under OpenSM: TCP a -> b -> a" a 10.9.0.2 5202 4096

check "OpenSM still running" opensm_running
dmesg_mark rmmod
check "rmmod ib_ipoib with OpenSM running" sh -c '. /tests/lib.sh; for ns in a b; do /usr/sbin/ip netns del $ns; done; unload_ipoib'
check "rmmod softib with OpenSM running" rmmod softib
check "no softib devices left" sh -c '! ls /sys/class/infiniband/ 2>/dev/null | grep -q sib'
dmesg_since_mark | tail -n 5
check "OpenSM stops (SIGTERM, else SIGKILL)" sh -c '. /tests/lib.sh; opensm_stop TERM || opensm_stop KILL'
check "unload the rest" unload_all
