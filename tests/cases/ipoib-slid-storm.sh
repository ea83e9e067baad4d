#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# boot: shared
# timeout: 300
#
# Frames that name one GID from two LIDs in turn (review 2026-12, finding
# 8). a has a resolved path to c. 200 ARP requests reach a's QP whose
# sender hardware address is c's, from the SLIDs 0x20 and 0x21 in turn (as
# two hosts of the partition could send them; the GID in a frame is not
# checked against its sender). Each SLID that is not the path's DLID
# makes a ask the SA again whether c moved, once per SLID; alternating
# SLIDs defeated that, and every frame made a query. Now a path is asked
# again for a SLID at most once in 10 s: a's queries for c's path (debugfs
# ipoib/ib0/paths) grow by at most 2, and a still reaches c.
. /tests/lib.sh

DEV=sib0	# a's port, LID 1
LID=1
. /tests/cases/wire.inc

# queries GID: the SA queries of a's path to GID (debugfs ipoib/ib0/paths)
queries() { awk -v g="$1" '$1 == g { print $10 }' /sys/kernel/debug/ipoib/ib0/paths; }

check "load the IB core" load_ib_core
check "load softib ndevs=3" load_softib ndevs=3
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib2 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib2'
check "host a (ib0)" make_host a ib0 10.18.0.1/24
check "host c (ib2)" make_host c ib2 10.18.0.3/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib2" 30 _t_has_carrier c ib2
check_wait "a pings c" 20 pings a 10.18.0.3
a_addr=$(in_host a cat /sys/class/net/ib0/address)
c_addr=$(in_host c cat /sys/class/net/ib2/address)
QPN=$((0x$(echo "$a_addr" | cut -d: -f2-4 | tr -d :)))
# c's GID as the paths table prints it (compressed IPv6 notation)
c_gid=$(echo "$c_addr" | cut -d: -f5- | tr -d : | sed 's/\(....\)/\1:/g; s/:$//' |
	awk -F: '{ for (i = 1; i <= NF; i++) { sub(/^0+/, "", $i); if ($i == "") $i = "0" } print }' OFS=: |
	sed 's/:0:0:0:0:/::/; s/:0:0:0:/::/')
q0=$(queries "$c_gid")
echo "a: QPN $(printf 0x%06x $QPN), c's GID $c_gid, queries $q0"
check "a has a path to c ($c_gid)" test -n "$q0"

# arp SLID: an ARP request to a's QP, sender hardware address c's, from SLID
sha=$(echo "$c_addr" | tr : ' ')
arp() {
	local p
	p="08 06 00 00 00 20 08 00 14 04 00 01 $sha 0a 12 00 63 $(zeros 20) 0a 12 00 01"
	wire 0 2 $LID "$1" "$(bth 0x64 0 0xffff "$QPN") $(deth 0x0b1b 0x99) $p"
}
f20=$(arp 0x20)
f21=$(arp 0x21)
i=0
while [ $i -lt 100 ]; do
	inject "$f20"
	inject "$f21"
	i=$((i + 1))
done
check_wait "a received the 200 frames (path_lid_moved counted)" 10 sh -c \
	'/usr/sbin/ip netns exec a ethtool -S ib0 | awk '"'"'$1 == "path_lid_moved:" { exit !($2 >= 1) }'"'"
q1=$(queries "$c_gid")
check "a asked the SA about c at most twice more ($q0 -> $q1)" test "$q1" -le $((q0 + 2))
check_wait "a still pings c" 20 pings a 10.18.0.3
check "unload everything" unload_all
