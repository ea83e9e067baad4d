#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 400
# tier: 612 7
#
# Fabric events go through the driver's one resync path: carrier follows the
# port (down/up), an SM restart (all groups forgotten, client reregister), a
# LID change, an SM move and a P_Key table change; after each, the broadcast
# group membership comes back (the SA gets joins again after the LID change
# and the SM move) and traffic flows again, also once the neighbours are
# flushed: that needs a new PathRecord query (to the new SM's LID after the
# move) and, after the LID change, gives the path the new DLID.
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
# carrier changes of IFNAME in NS (its netns' sysfs): a flap, however short,
# counts two
carrier_changes() { in_host "$1" cat "/sys/class/net/$2/carrier_changes"; }
# carrier_kept NS IFNAME N: the carrier is on and has not changed since N
carrier_kept() {
	local c
	c=$(carrier_changes "$1" "$2") || return 1
	echo "$2: carrier_changes $3 -> $c"
	_t_has_carrier "$1" "$2" && [ "$c" = "$3" ]
}
pings6() { in_host "$1" ping -6 -c 1 -W 2 "$2" >/dev/null 2>&1; }
sa_above() { [ "$(sa_counter "$1")" -gt "$2" ]; }
# path_dlid IFNAME GID: the DLID (0x%04x) of the driver's path to GID, from
# its debugfs ipoib/IFNAME_path (both drivers write the GID as %x groups)
path_dlid() {
	awk -v g="$(echo "$2" | sed 's/^0*\([0-9a-f]\)/\1/; s/:0*\([0-9a-f]\)/:\1/g')" '
		$1 == "GID:" { in_p = ($2 == g) } in_p && $1 == "DLID:" { print $2 }' \
		"/sys/kernel/debug/ipoib/$1_path"
}
# refresh NAME [P0]: the neighbours of both hosts flushed, so that traffic
# needs ARP and the driver's path; a -> b and b -> a must work. With P0 (the
# SA's path_get before the event, which made the paths stale) the SA must
# have answered new PathRecord queries since.
refresh() {
	in_host a ip neigh flush dev ib0
	in_host b ip neigh flush dev ib1
	check_wait "$1: ping a -> b after a neighbour flush" 30 pings a 10.9.0.2
	check_wait "$1: ping b -> a" 30 pings b 10.9.0.1
	[ -z "${2:-}" ] ||
		check "$1: the SA answered new PathRecord queries (path_get $2 -> $(sa_counter path_get))" \
			sa_above path_get "$2"
}

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
cc0=$(carrier_changes a ib0)
echo 1 >"$SA/sm_restart"
check_wait "SM restart: ib0 rejoined the broadcast group" 30 sa_member $BCAST "$GID0" 0x1
check_wait "SM restart: ib1 rejoined the broadcast group" 30 sa_member $BCAST "$GID1" 0x1
check_wait "ping a -> b after SM restart" 30 pings a 10.9.0.2
check_wait "ping6 a -> b after SM restart" 30 pings6 a fd00:9::2
check "carrier stayed on ib0 through the SM restart (no flap)" carrier_kept a ib0 "$cc0"

# --- LID change: the SM tells b's port only (LID_CHANGE), as a real SM
# does. a's path to b keeps the old DLID, so a's pings go nowhere until
# a's neighbour entry for b times out (here flushed at once) and a asks by
# ARP: b's answer comes from LID 0x20, and ours asks the SA for the path
# again (ethtool -S path_lid_moved). The stock driver never does: its path to b stays on the
# old LID (a finding, Documentation/testing.rst), so for it the case
# reregisters a's port, as its administrator would have to. ---
m0=$(sa_counter mcm_set)
p0=$(sa_counter path_get)
moved() { in_host a ethtool -S ib0 | awk '$1 == "path_lid_moved:" { print $2 }'; }
moved0=$(moved)
echo 0x20 >"$(sib sib1 lid)"
in_host a ip neigh flush dev ib0
if [ "$IPOIB_DRIVER" = stock ]; then
	skip "ping a -> b after b's LID changed to 0x20, nobody else told" \
		"stock finding: the stock driver keeps its path on the old LID"
	echo 1 >"$(sib sib0 rereg)"
	check_wait "ping a -> b after a reregister of a's port" 30 pings a 10.9.0.2
else
	check_wait "ping a -> b after b's LID changed to 0x20, nobody else told" 40 pings a 10.9.0.2
	check "a noticed b's frames from an unknown LID (path_lid_moved $moved0 -> $(moved))" \
		test "$(moved)" -gt "$moved0"
fi
check_wait "ping b -> a after the LID change" 30 pings b 10.9.0.1
check_wait "LID change: the SA got joins again (mcm_set > $m0)" 30 sa_above mcm_set "$m0"
check_wait "LID change: ib1 is in the broadcast group" 30 sa_member $BCAST "$GID1" 0x1
refresh "LID change" "$p0"
check "LID change: a's path to b has the new DLID 0x0020 ($(path_dlid ib0 "$GID1"))" \
	test "$(path_dlid ib0 "$GID1")" = 0x0020

# --- SM failover to sib1 ---
# The new master's SA knows no multicast group of the old one, and its
# first sweep sets ClientReregister on every port (softib's "sm" write does
# all of it: SM_CHANGE, the SA's groups gone, CLIENT_REREGISTER). The
# memberships the SA lists afterwards are the drivers' new joins. softib's
# SA answers only requests sent to the SM's LID: an answered PathRecord
# query after the move was sent to the new SM LID.
m0=$(sa_counter mcm_set)
p0=$(sa_counter path_get)
echo sib1 >"$SA/sm"
check_wait "SM moved: sib0's SM LID is sib1's LID 0x20" 10 sh -c '. /tests/lib.sh; [ "$(port_sm_lid sib0)" = 32 ]'
check_wait "ping a -> b after the SM moved" 30 pings a 10.9.0.2
check_wait "SM moved: both ports joined again (mcm_set > $((m0 + 1)))" 30 sa_above mcm_set $((m0 + 1))
check_wait "SM moved: ib0 is in the broadcast group" 30 sa_member $BCAST "$GID0" 0x1
check_wait "SM moved: ib1 is in the broadcast group" 30 sa_member $BCAST "$GID1" 0x1
check_wait "SM moved: ping b -> a" 30 pings b 10.9.0.1
refresh "SM moved" "$p0"

# --- P_Key table change on an unused index: nothing breaks (no path is
# stale, so no new query is required) ---
check "P_Key 0x8001 at index 1 of sib0" pkey_set sib0 1 0x8001
check_wait "ping a -> b after a P_Key table change" 30 pings a 10.9.0.2
refresh "P_Key table change"
check "index 1 of sib0 emptied again" pkey_set sib0 1 0

# --- the SM gives the subnet another GID prefix: GID 0 of every port
# changes. The IB core's cache takes softib's GID_CHANGE and tells no client
# (as with a ConnectX port); ours notices within its 10 s GC look. The
# interfaces' hardware addresses follow GID 0, their memberships are made
# again under the new GIDs, and no peer keeps an old address (a new
# address flushes the interface's own neighbours; peers whose address stayed
# get the gratuitous ARP and unsolicited NA sent, three times, once the
# broadcast group is joined again). The stock driver notices only at its next flush (a stock finding,
# Documentation/testing.rst): for it the case reregisters both ports. ---
hwaddr() { in_host "$1" cat "/sys/class/net/$2/address"; }
hw_prefix() { hwaddr "$1" "$2" | grep -q "^..:..:..:..:$3:00:00:00:00:00:00:"; }
reregister_stock() {
	[ "$IPOIB_DRIVER" = stock ] || return 0
	echo 1 >"$(sib sib0 rereg)"
	echo 1 >"$(sib sib1 rereg)"
}
A_OLD=$(hwaddr a ib0)
echo 0xfec0000000000000 >"$SA/gid_prefix"
check_wait "prefix fec0::/64: GID 0 of sib0 and sib1 changed" 10 sh -c '
	grep -q "^fec0:0000:0000:0000:" /sys/class/infiniband/sib0/ports/1/gids/0 &&
	grep -q "^fec0:0000:0000:0000:" /sys/class/infiniband/sib1/ports/1/gids/0'
NGID0=$(gid_of sib0)
NGID1=$(gid_of sib1)
[ "$IPOIB_DRIVER" = stock ] && skip "prefix fec0::/64: noticed without another event" \
	"stock finding: the stock driver looks at GID 0 only when it flushes"
reregister_stock
check_wait "prefix fec0::/64: ib0's hardware address carries it" 30 hw_prefix a ib0 fe:c0
check_wait "prefix fec0::/64: ib1's hardware address carries it" 30 hw_prefix b ib1 fe:c0
check_wait "prefix fec0::/64: ib0 is in the broadcast group under $NGID0" 30 sa_member $BCAST "$NGID0" 0x1
check_wait "prefix fec0::/64: ib1 is in the broadcast group under $NGID1" 30 sa_member $BCAST "$NGID1" 0x1
# (NETDEV_CHANGEADDR of b's own new address flushes b's ARP entries; the
# announcements then matter for peers whose address stayed.)
if [ "$IPOIB_DRIVER" = stock ]; then
	skip "prefix fec0::/64: b holds no entry with a's old address" \
		"stock finding: the stock driver changes dev_addr without NETDEV_CHANGEADDR and tells nobody"
else
	check_wait "prefix fec0::/64: b holds no entry with a's old address" 30 sh -c \
		"! /usr/sbin/ip -n b neigh show 10.9.0.1 | grep -q '$A_OLD'"
	check_wait "prefix fec0::/64: ping a -> b" 30 pings a 10.9.0.2
	check_wait "prefix fec0::/64: ping b -> a" 30 pings b 10.9.0.1
fi
refresh "prefix fec0::/64"
echo 0xfe80000000000000 >"$SA/gid_prefix"
reregister_stock
check_wait "prefix back to fe80::/64: ib0's hardware address follows" 30 hw_prefix a ib0 fe:80
refresh "prefix back to fe80::/64"

check "unload everything" unload_all
