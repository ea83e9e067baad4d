#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# boot: shared
# timeout: 300
# tier: debug
#
# Malformed and unusual input from the wire, injected through softib's
# inject knob straight into ib1's QP: frames too short for the 4-byte
# encapsulation header are dropped and counted (rx_length_errors), frames
# with an unknown encapsulation type or a garbage IPv4 header go to the
# stack like any frame, a multicast frame with our LID and QPN but another
# port's GID in its GRH is not taken for our own loopback, and nothing
# WARNs or crashes.
. /tests/lib.sh

DEV=sib1	# LID 2; sib0 (LID 1) is the SM
LID=2
. /tests/cases/wire.inc


stat() { in_host b cat "/sys/class/net/ib1/statistics/$1"; }
stat_ge() { [ "$(stat "$1")" -ge "$2" ]; }

# expect_stat NAME STAT PACKET: injecting PACKET raises ib1's STAT by one
expect_stat() {
	local before
	before=$(stat "$2")
	inject "$3"
	if wait_for 5 stat_ge "$2" $((before + 1)); then
		ok "$1: $2 $before -> $(stat "$2")"
	else
		fail "$1" "$2 stayed at $before; softib: $(tr '\n' ' ' <"$(sib "$DEV" counters)")"
	fi
}

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib1 exists" 20 test -d /sys/class/net/ib1
QPN=0x$(cut -d: -f2-4 /sys/class/net/ib1/address | tr -d :)
echo "ib1 QPN $QPN"
check "host b (ib1)" make_host b ib1 10.9.0.2/24
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
QKEY=0x0b1b
UD=0x64

# ud PADCNT PAYLOAD: a UD SEND from LID 1 QPN 0x99 to ib1's QP
ud() {
	wire 0 2 $LID 1 "$(bth $UD "$1" 0xffff "$QPN") $(deth $QKEY 0x99) $2"
}

expect_stat "empty payload is dropped" rx_length_errors "$(ud 0 "")"
expect_stat "2-byte payload is dropped" rx_length_errors "$(ud 0x20 "08 00 00 00")"
expect_stat "unknown encapsulation type 0x88b5 is delivered" rx_packets \
	"$(ud 0 "88 b5 00 00 $(zeros 20)")"
expect_stat "garbage IPv4 header is delivered (the stack drops it)" rx_packets \
	"$(ud 0 "08 00 00 00 ff ff ff ff $(zeros 16)")"
expect_stat "nonzero reserved field is delivered" rx_packets \
	"$(ud 0 "08 06 12 34 $(zeros 28)")"
# Our LID and QPN as the source are not enough to call a frame our own
# loopback: its GRH names another port (sib0's GID), so it is delivered.
MLID=$(awk '$1 ~ /^ff12:401b:ffff:0*:0*:0*:ffff:ffff$/ { print $3 }' "$SIB_DEBUGFS/sa_groups")
expect_stat "multicast from our LID and QPN but another port's GID is delivered" rx_packets \
	"$(wire 0 3 "$MLID" $LID "$(grh 0x60 0x1b 56) $(bth $UD 0 0xffff 0xffffff) $(deth $QKEY "$QPN") 08 00 00 00 $(zeros 28)")"
check "softib counted no drop for them" test "$(sib_counter $DEV drop_malformed)" = 0
check "ib1 still pings itself through the stack" in_host b ping -c 1 -W 2 10.9.0.2
check "unload everything" unload_all
