#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# timeout: 400
# tier: 612
#
# Fabric events go through the driver's one resync path: carrier follows the
# port (down/up), an SM restart (all groups forgotten, client reregister), a
# LID change, an SM move and a P_Key table change; after each, the broadcast
# group membership comes back and traffic flows again.
. /tests/lib.sh

SA=$SIB_DEBUGFS
BCAST=ff12:401b:ffff:0000:0000:0000:ffff:ffff
gid_of() { cat "/sys/class/infiniband/$1/ports/1/gids/0"; }
sa_member() {	# sa_member MGID GID JOIN_STATE
	awk -v m="$1" -v g="$2" -v j="$3" '
		$1 != "member" { in_g = ($1 == m) }
		in_g && $1 == "member" && $2 == g && $4 == j { f = 1 }
		END { exit !f }' "$SA/sa_groups"
}
no_carrier() { ! _t_has_carrier "$1" "$2"; }
pings6() { in_host "$1" ping -6 -c 1 -W 2 "$2" >/dev/null 2>&1; }

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1
GID0=$(gid_of sib0)
GID1=$(gid_of sib1)
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
check_wait "ping a -> b" 30 pings a 10.9.0.2

# --- port down / up ---
echo down >"$(sib sib1 state)"
check_wait "port down: carrier off on ib1" 10 no_carrier b ib1
check_fail "no ping while the port is down" in_host a ping -c 1 -W 2 10.9.0.2
echo up >"$(sib sib1 state)"
check_wait "port up: carrier on on ib1" 30 _t_has_carrier b ib1
check_wait "ib1 is in the broadcast group again" 30 sa_member $BCAST "$GID1" 0x1
check_wait "ping a -> b after port down/up" 30 pings a 10.9.0.2
check_wait "ping6 b -> a after port down/up" 30 pings6 b fd00:9::1

# --- SM restart: the SA forgets every group, then CLIENT_REREGISTER ---
echo 1 >"$SA/sm_restart"
check_wait "SM restart: ib0 rejoined the broadcast group" 30 sa_member $BCAST "$GID0" 0x1
check_wait "SM restart: ib1 rejoined the broadcast group" 30 sa_member $BCAST "$GID1" 0x1
check_wait "ping a -> b after SM restart" 30 pings a 10.9.0.2
check_wait "ping6 a -> b after SM restart" 30 pings6 a fd00:9::2
check "carrier stayed on ib0" _t_has_carrier a ib0

# --- LID change (LID_CHANGE + CLIENT_REREGISTER): peers' paths refresh ---
echo 0x20 >"$(sib sib1 lid)"
check_wait "ping a -> b after b's LID changed to 0x20" 30 pings a 10.9.0.2
check_wait "ping b -> a after the LID change" 30 pings b 10.9.0.1

# --- SM moves to sib1 (SM_CHANGE on every port) ---
echo sib1 >"$SA/sm"
check_wait "ping a -> b after the SM moved" 30 pings a 10.9.0.2

# --- P_Key table change on an unused index: nothing breaks ---
echo "1 0x8001" >"$(sib sib0 pkeys)"
check_wait "ping a -> b after a P_Key table change" 30 pings a 10.9.0.2
echo "1 0" >"$(sib sib0 pkeys)"

check "unload everything" unload_all
