#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 400
#
# softib's SMAs (HCA ports and the switch, external_sm=1, ndevs=3) answer
# SMPs from user space (smpquery over ib_umad) the way the SM sees them, and
# refuse the wrong ones with an SMP status or drop them, counted, without a
# kernel warning: unknown attributes, out-of-range modifiers, directed routes
# through ports that do not exist or loop back.
. /tests/lib.sh

SW=/sys/kernel/debug/softib/switch
sw_counter() { awk -v n="$1" '$1 == n { print $2 }' "$SW"; }

check "load the IB core (with ib_umad)" load_ib_core
check "load softib ndevs=3 external_sm=1" load_softib ndevs=3 external_sm=1
check_wait "sib2 registered" 10 test -d /sys/class/infiniband/sib2

# before any SM: directed routes work from INIT, LID 0
check "unconfigured: NodeInfo of sib0 itself (DR 0)" sh -c "smpquery -C sib0 -D nodeinfo 0 | grep -q 'NodeType:.*Channel Adapter'"
check "unconfigured: NodeInfo of the switch (DR 0,1)" sh -c "smpquery -C sib0 -D nodeinfo 0,1 | grep -q 'NodeType:.*Switch'"
check "unconfigured: PortInfo of sib1 through the switch (DR 0,1,2) is INIT" \
	sh -c "smpquery -C sib0 -D portinfo 0,1,2 | grep -q 'LinkState:.*Initialize'"
check "unconfigured: NodeDescription of sib2 (DR 0,1,3)" sh -c "smpquery -C sib0 -D nodedesc 0,1,3 | grep -q 'softib sib2'"

opensm_start 0x0002c90300a00001
check_wait "OpenSM brings all three to ACTIVE" 120 ports_active sib0 sib1 sib2 || opensm_log_tail 40
l2=$(port_lid sib2)
smpquery -C sib0 -D switchinfo 0,1 >/tmp/swinfo 2>&1
grep -E 'LinearFdbCap|LinearFdbTop|MulticastFdbCap' /tmp/swinfo
check "SwitchInfo: LinearFdbCap 1024" grep -q 'LinearFdbCap:\.*1024$' /tmp/swinfo
check "SwitchInfo: LinearFdbTop set by OpenSM" sh -c "! grep -q 'LinearFdbTop:\.*0\$' /tmp/swinfo"
check "LID-routed PortInfo of sib2 (LID $l2)" sh -c "smpquery -C sib0 portinfo $l2 | grep -q 'LinkState:.*Active'"
check "P_KeyTable of sib1" sh -c "smpquery -C sib0 -D pkeys 0,1,2 | grep -q '0xffff'"

# refusals: an SMP status, no kernel message
dmesg_mark refusals
check_fail "SwitchInfo of a CA is refused" smpquery -C sib0 -D switchinfo 0,1,2
check_fail "PortInfo of CA port 5 is refused" smpquery -C sib0 -D portinfo 0,1,2 5
check_fail "PortInfo of switch port 9 is refused" smpquery -C sib0 -D portinfo 0,1 9
d0=$(sw_counter drop_dr)
check_fail "a directed route through switch port 9 goes nowhere" smpquery -C sib0 -t 200 -D nodeinfo 0,1,9
check_fail "a directed route out of port 0 goes nowhere" smpquery -C sib0 -t 200 -D nodeinfo 0,1,0
d1=$(sw_counter drop_dr)
dn=$(sw_counter drop_no_route)
echo "switch drop_dr $d0 -> $d1, drop_no_route $dn"
check "the switch counted the bad routes" test "$((d1 - d0 + dn))" -ge 2
check "a route that turns back (0,1,1) reaches sib0 again" sh -c "smpquery -C sib0 -D nodedesc 0,1,1 | grep -q 'softib sib0'"
no_softib_msgs() { ! dmesg_since_mark | grep -q softib; }
check "no softib kernel messages from the refusals" no_softib_msgs
dmesg_since_mark | tail -n 5
check "all three still ACTIVE" ports_active sib0 sib1 sib2
cat "$SW"

check "rmmod softib with OpenSM running" rmmod softib
check "OpenSM stops (SIGTERM, else SIGKILL)" sh -c '. /tests/lib.sh; opensm_stop TERM || opensm_stop KILL'
check "unload the rest" unload_all
