#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock ours
# vms: 1
# boot: shared
# timeout: 600
#
# OpenSM killed and restarted: the ports stay ACTIVE with their LIDs while
# no SM runs; the new OpenSM sweeps, asks the ports to reregister, IPoIB
# rejoins its groups and traffic that needs the SA (neighbour resolution
# after a flush) recovers. Then an SM failover to a standby OpenSM on the
# other port, and a LID change OpenSM makes from its guid2lid file. Prints
# the times to recover.
. /tests/lib.sh

joined() {	# both hosts rejoined: their solicited-node groups are back in the SA
	saquery -C sib0 -m >/tmp/mcm 2>/dev/null || return 1
	grep -q 'ff12:601b:ffff::1:ff00:1$' /tmp/mcm && grep -q 'ff12:601b:ffff::1:ff00:2$' /tmp/mcm
}

lid_is() { [ "$(port_lid "$1")" = "$2" ]; }
sm_lid_is() { [ "$(port_sm_lid sib0)" = "$1" ] && [ "$(port_sm_lid sib1)" = "$1" ]; }

fresh_ping() {	# fresh_ping: flush the neighbours (new path query), ping both ways
	in_host a ip neigh flush dev ib0 >/dev/null 2>&1
	in_host b ip neigh flush dev ib1 >/dev/null 2>&1
	in_host a ping -c 1 -W 1 10.9.0.2 >/dev/null 2>&1 &&
		in_host b ping -c 1 -W 1 10.9.0.1 >/dev/null 2>&1 &&
		in_host a ping -6 -c 1 -W 1 fd00:9::2 >/dev/null 2>&1
}

check "load the IB core (with ib_umad)" load_ib_core
check "load softib ndevs=2 external_sm=1" load_softib ndevs=2 external_sm=1
check_wait "sib1 registered" 10 test -d /sys/class/infiniband/sib1
opensm_start 0x0002c90300a00001
check_wait "OpenSM brings sib0 and sib1 to ACTIVE" 90 ports_active sib0 sib1 || opensm_log_tail 40
l0=$(port_lid sib0)
l1=$(port_lid sib1)
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "ping a -> b, b -> a, ping6 a -> b" 90 fresh_ping
members=$(saquery -C sib0 -m | grep -c MGID)
echo "OpenSM holds $members multicast groups"
check "before the restart: both hosts' groups in OpenSM's SA" joined

check "kill OpenSM (SIGKILL)" opensm_stop KILL
check "without an SM: sib0 and sib1 stay ACTIVE" ports_active sib0 sib1
check_fail "without an SM: saquery fails" saquery -C sib0 -m
check "without an SM: ping a -> b (cached path)" in_host a ping -c 2 -W 2 10.9.0.2

dmesg_mark restart
t0=$(_t_now_ds)
opensm_start 0x0002c90300a00001
check_wait "restarted OpenSM is master" 60 sh -c "sminfo -C sib0 | grep -q SMINFO_MASTER"
t_sm=$(_t_now_ds)
check_wait "IPoIB rejoined: both hosts' groups are back in OpenSM's SA" 90 joined
t_join=$(_t_now_ds)
check_wait "traffic recovers: fresh neighbour resolution and ping both ways" 90 fresh_ping
t_ping=$(_t_now_ds)
fmt() { echo "$(( ($1 - t0) / 10 )).$(( ($1 - t0) % 10 ))"; }
echo "recovery after OpenSM restart: master $(fmt "$t_sm") s, groups rejoined $(fmt "$t_join") s, traffic $(fmt "$t_ping") s"
check "LIDs kept across the restart ($l0, $l1)" test "$(port_lid sib0)" = "$l0" -a "$(port_lid sib1)" = "$l1"
echo "OpenSM holds $(saquery -C sib0 -m | grep -c MGID) multicast groups (before the restart: $members)"
grep MGID /tmp/mcm
dmesg_since_mark | tail -n 8

# --- SM failover: a second OpenSM on sib1 (same priority, higher GUID)
# goes STANDBY and polls the master every second; the master dies; the
# standby takes over, every port learns the new SM LID (SM_CHANGE) and is
# asked to reregister, and IPoIB rejoins in the new master's SA, whose
# multicast state starts empty ---
printf '%s\n' 'sminfo_polling_timeout 1000' 'polling_retry_number 2' >/etc/opensm/standby.conf
/usr/sbin/opensm -g "$(port_guid sib1)" -F /etc/opensm/standby.conf -f /var/log/opensm-b.log \
	>/var/log/opensm-b.out 2>&1 </dev/null &
standby=$!
echo "opensm: standby pid $standby on sib1"
l1=$(port_lid sib1)
check_wait "the OpenSM on sib1 is STANDBY (sminfo at LID $l1)" 60 sh -c \
	"sminfo -C sib0 $l1 2>/dev/null | grep -q SMINFO_STANDBY"
check "the master is still sib0's (SM LID $l0)" test "$(port_sm_lid sib1)" = "$l0"
dmesg_mark failover
t0=$(_t_now_ds)
check "kill the master OpenSM (SIGKILL)" opensm_stop KILL
echo "$standby" >"$OPENSM_PID"
check_wait "failover: the OpenSM on sib1 is master" 60 sh -c \
	"sminfo -C sib0 $l1 2>/dev/null | grep -q SMINFO_MASTER"
check_wait "failover: both ports follow the new SM LID $l1" 30 sm_lid_is "$l1"
check_wait "failover: IPoIB rejoined in the new master's SA" 90 joined
check_wait "failover: fresh neighbour resolution and ping both ways" 90 fresh_ping
echo "recovery after the SM failover: traffic $(fmt "$(_t_now_ds)") s"
check "failover: LIDs kept ($l0, $l1)" test "$(port_lid sib0)" = "$l0" -a "$(port_lid sib1)" = "$l1"
dmesg_since_mark | tail -n 8
tail -n 5 /var/log/opensm-b.out

# --- a LID change made by OpenSM: its guid2lid file gives sib1 another
# LID; an OpenSM started on sib0 (its first sweep as master) sets it in
# sib1's PortInfo (LID_CHANGE there) and asks every port to reregister;
# traffic follows the new LID ---
G2L=/var/cache/opensm/guid2lid
g1=$(port_guid sib1)
check "stop the OpenSM on sib1" opensm_stop KILL
echo "guid2lid before:"; cat "$G2L"
check "guid2lid has sib1 ($g1)" grep -q "^$g1 " "$G2L"
sed -i "s/^\($g1\) .*/\1 0x0009 0x0009/" "$G2L"
check "guid2lid now gives sib1 LID 9" grep -q "^$g1 0x0009 0x0009" "$G2L"
opensm_start "$(port_guid sib0)"
check_wait "OpenSM set LID 9 in sib1's PortInfo" 60 lid_is sib1 9
check "sib0 keeps LID $l0" test "$(port_lid sib0)" = "$l0"
check_wait "after the LID change: IPoIB rejoined" 90 joined
check_wait "after the LID change: ping a -> b on the neighbour cached before it" 60 pings a 10.9.0.2
check_wait "after the LID change: fresh neighbour resolution and ping both ways" 90 fresh_ping

for ns in a b; do ip netns del $ns; done
check "unload ib_ipoib" unload_ipoib
check "rmmod softib with OpenSM running" rmmod softib
check "OpenSM stops (SIGTERM, else SIGKILL)" sh -c '. /tests/lib.sh; opensm_stop TERM || opensm_stop KILL'
check "unload the rest" unload_all
