#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 420
#
# softib port and subnet events seen through the stock ib_ipoib: port
# down -> carrier off and the port DOWN in rdma link, up -> INIT, ARMED
# (no carrier in either), ACTIVE -> carrier on and ping recovers; SM restart -> the hosts rejoin and ping recovers within 20 s;
# a LID change (followed by a client reregister) -> ping recovers with the
# new LID; moving the SM to another port -> rejoin through the new SM.
. /tests/lib.sh

PING_W=1	# pings (lib.sh): wait 1 s for the reply
no_carrier() { ! _t_has_carrier "$1" "$2"; }
# no_carrier_for S NS IF: no carrier at any poll for S seconds
no_carrier_for() { ! wait_for "$1" _t_has_carrier "$2" "$3"; }
link_state() { rdma link show "$1/1" | grep -q "state $2 "; }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0
check "host a (ib0)" make_host a ib0 10.9.0.1/24
check "host b (ib1)" make_host b ib1 10.9.0.2/24
check_wait "carrier on ib0 and ib1" 30 sh -c '/usr/sbin/ip -n a link show ib0 | grep -q LOWER_UP && /usr/sbin/ip -n b link show ib1 | grep -q LOWER_UP'
check_wait "ping a -> b" 30 pings a 10.9.0.2

# --- port down / up ---
echo down >"$(sib sib1 state)"
check "sib1 state file says DOWN" grep -qx DOWN "$(sib sib1 state)"
check_wait "port down: ib1 carrier off" 10 no_carrier b ib1
check "port down: rdma link shows sib1 DOWN" link_state sib1 DOWN
check "port down: sysfs state 1: DOWN" grep -q "1: DOWN" /sys/class/infiniband/sib1/ports/1/state
check_fail "port down: ping a -> b fails" in_host a ping -c 2 -W 1 10.9.0.2
# the embedded SM sweeps the port INIT -> ARMED -> ACTIVE; only ACTIVE
# carries data and raises PORT_ACTIVE. The sweep is held at each step
# ("hold", "step") for as long as the checks take: with arm_ms apart, a
# busy machine saw ARMED pass before its check ran.
port_is() { grep -q "$1" /sys/class/infiniband/sib1/ports/1/state; }
echo hold >"$(sib sib1 state)"
check "port up: INIT first (link up, not configured)" sh -c \
	'grep -q "2: INIT" /sys/class/infiniband/sib1/ports/1/state &&
	 grep -q "5: LinkUp" /sys/class/infiniband/sib1/ports/1/phys_state'
check "port up: no carrier in INIT, for 2 s" no_carrier_for 2 b ib1
echo step >"$(sib sib1 state)"
check "port up: then ARMED" port_is "3: ARMED"
check "port up: no carrier in ARMED, for 2 s" no_carrier_for 2 b ib1
echo step >"$(sib sib1 state)"
check "port up: then ACTIVE" port_is "4: ACTIVE"
check_wait "port up: ib1 carrier on" 30 _t_has_carrier b ib1
check "port up: rdma link shows sib1 ACTIVE" link_state sib1 ACTIVE
check_wait "port up: ping a -> b recovers" 30 pings a 10.9.0.2
check_wait "port up: ping b -> a" 10 pings b 10.9.0.1

# --- SM restart: the SA forgets every group, then client reregister ---
check "broadcast group has 2 members before the SM restart" sa_bcast_members 2
echo 1 >"$SIB_DEBUGFS/sm_restart"
t0=$(_t_now_ds)
check_wait "SM restart: both hosts rejoin the broadcast group" 20 sa_bcast_members 2
check_wait "SM restart: ping a -> b recovers within 20 s" 20 pings a 10.9.0.2
echo "SM restart: recovered after $(( ($(_t_now_ds) - t0) / 10 )) s"
check_wait "SM restart: ping b -> a" 10 pings b 10.9.0.1

# --- LID change of a port: the SM tells that port only; the stock driver
# on sib0 learns it when sib0 is reregistered (a stock finding) ---
echo 0x20 >"$(sib sib1 lid)"
check "lid file reads 0x20" grep -qx 0x20 "$(sib sib1 lid)"
check_wait "LID change: rdma link shows lid 32" 10 sh -c 'rdma link show sib1/1 | grep -q "lid 32 "'
echo 1 >"$(sib sib0 rereg)"
check_wait "LID change, then a reregister of sib0: ping a -> b recovers" 30 pings a 10.9.0.2
check_wait "LID change: ping b -> a" 10 pings b 10.9.0.1

# --- SM failover: sib1 becomes the SM; its SA starts empty and every port
# is asked to reregister ---
echo sib1 >"$SIB_DEBUGFS/sm"
check "sm file names sib1" grep -qx sib1 "$SIB_DEBUGFS/sm"
check_wait "SM move: rdma link shows sm_lid 32 on sib0" 10 sh -c 'rdma link show sib0/1 | grep -q "sm_lid 32 "'
check_wait "SM move: both hosts rejoin through the new SM" 30 sa_bcast_members 2
check_wait "SM move: ping a -> b" 30 pings a 10.9.0.2
echo sib0 >"$SIB_DEBUGFS/sm"

# --- rereg alone is harmless ---
echo 1 >"$(sib sib0 rereg)"
check_wait "rereg: ping a -> b" 20 pings a 10.9.0.2

check "unload everything" unload_all
check "nothing left loaded" sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
