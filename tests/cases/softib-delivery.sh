#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 420
#
# softib's delivery rules, one injected packet at a time into sib1 whose UD
# QP belongs to the stock ib_ipoib (ib1): a good unicast packet reaches
# ib1; a wrong Q_Key, a P_Key the port lacks, another LID, a QP in RESET, a
# port down and a starved receive queue are each dropped and counted under
# their own reason and never reach ib1; a limited-member P_Key still reaches
# a full member; multicast reaches the broadcast group's members only, with
# a multicast DQPN; GSI (QP1) checks its Q_Key.
. /tests/lib.sh

DEV=sib1
LID=2

# --- wire helpers: LRH [GRH] BTH DETH payload ICRC, as hex bytes ---
. /tests/cases/wire.inc

# pkt LNH DLID PKEY DQPN QKEY [GRH]: a UD SEND from LID 1 QP 0x48 with a
# 32-byte IPoIB payload (type IPv4, then zeros the IP layer drops)
pkt() {
	local rest body
	rest="$6 $(h8 0x64) 00 $(h16 "$3") 00 $(h24 "$4") 00 00 00 00 $(h32 "$5") 00 $(h24 0x48) 08 00 00 00 $(zeros 28)"
	set -- "$1" "$2" "$rest"
	body="00 $(h8 "$1") $(h16 "$2") $(h16 $(((8 + $(nbytes "$3") + 4) / 4))) $(h16 1) $3"
	echo "$body $(_crc32 "$body")"
}
# grh DGID_HEX: GRH from sib0's GID to DGID (32 hex digits, no separators)
grh() {
	local d=$1 out="" i=0
	while [ $i -lt 32 ]; do
		out="$out ${d:$i:2}"
		i=$((i + 2))
	done
	echo "60 00 00 00 $(h16 56) 1b 01 fe 80 00 00 00 00 00 00 00 02 c9 03 00 a0 00 01$out"
}

inject() {	# one write() of HEX to the inject knob
	printf '%s\n' "$1" >/tmp/inject.hex
	dd if=/tmp/inject.hex of="$(sib "$DEV" inject)" bs=64k 2>/dev/null
}
cnt() { sib_counter "$DEV" "$1"; }
ib1_rx() { in_host b cat /sys/class/net/ib1/statistics/rx_packets; }

# expect NAME COUNTER DELTA_IB1 HEX: injecting HEX bumps COUNTER by one and
# ib1's rx_packets by DELTA_IB1. softib's counters move within the write
# (inject is synchronous); ib1's NAPI delivers later. DELTA_IB1 1: wait for
# it. DELTA_IB1 0 (a drop): a good unicast follows as a marker (unless
# NOMARK=1: the port or ib1 is down), delivered after whatever the tested
# packet became, so once the marker is in, rx_packets must be up by one.
GOOD=
rx_reached() { [ "$(ib1_rx)" -ge "$1" ]; }
expect() {
	local c0 r0 c1 r1 want=$3
	c0=$(cnt "$2")
	r0=$(ib1_rx)
	inject "$4"
	c1=$(cnt "$2")
	if [ "$3" = 0 ] && [ "${NOMARK:-0}" = 0 ]; then
		inject "$GOOD"
		want=1
	fi
	[ "$want" = 0 ] || wait_for 5 rx_reached $((r0 + want))
	r1=$(ib1_rx)
	# the IB core's own traffic also moves rx_packets and rx_mcast: at least +1
	if { [ "$c1" = $((c0 + 1)) ] || { [ "$2" = rx_packets ] || [ "$2" = rx_mcast ]; } &&
		[ "$c1" -gt "$c0" ]; } && [ "$r1" = $((r0 + want)) ]; then
		ok "$1: $2 +$((c1 - c0)), ib1 rx +$3"
	else
		fail "$1" "$2 $c0 -> $c1, ib1 rx $r0 -> $r1 (want +1, +$3$([ "$want" != "$3" ] && echo " and +1 for the marker"))"
		grep -v ' 0$' "$(sib "$DEV" counters)"
		in_host b ip -s link show ib1
	fi
}

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib1 exists" 20 test -d /sys/class/net/ib1 || exit 0
check "host b (ib1)" make_host b ib1 10.9.0.2/24
check "ib0 up" ip link set ib0 up
check_wait "carrier on ib1" 30 _t_has_carrier b ib1

# ib1's QPN is in bytes 2..4 of its hardware address
QPN=0x$(in_host b cat /sys/class/net/ib1/address | cut -d: -f2-4 | tr -d :)
BC=ff12401bffff000000000000ffffffff
MLID=$(awk '$1 ~ /^ff12:401b:ffff:0*:0*:0*:ffff:ffff$/ { print $3 }' "$SIB_DEBUGFS/sa_groups")
QKEY=$(awk '$1 ~ /^ff12:401b:ffff:0*:0*:0*:ffff:ffff$/ { print $5 }' "$SIB_DEBUGFS/sa_groups")
echo "ib1 QPN $QPN, broadcast group MLID $MLID Q_Key $QKEY"
check "found ib1's QPN and the broadcast group" test -n "$MLID" -a "$QPN" != 0x

GOOD=$(pkt 2 $LID 0xffff "$QPN" "$QKEY")
expect "good unicast" rx_packets 1 "$GOOD"
expect "limited P_Key 0x7fff to a full member" rx_packets 1 "$(pkt 2 $LID 0x7fff "$QPN" "$QKEY")"
expect "wrong Q_Key" drop_bad_qkey 0 "$(pkt 2 $LID 0xffff "$QPN" 0x1234)"
expect "P_Key the port lacks" drop_bad_pkey 0 "$(pkt 2 $LID 0x8005 "$QPN" "$QKEY")"
expect "another LID" drop_no_route 0 "$(pkt 2 5 0xffff "$QPN" "$QKEY")"
# a unicast GRH must name the receiving port's GID
GIDHEX=$(tr -d : <"/sys/class/infiniband/$DEV/ports/1/gids/0")
expect "unicast with a GRH to the port's GID" rx_packets 1 \
	"$(pkt 3 $LID 0xffff "$QPN" "$QKEY" "$(grh "$GIDHEX")")"
expect "unicast with a GRH to another port's GID" drop_no_route 0 \
	"$(pkt 3 $LID 0xffff "$QPN" "$QKEY" "$(grh fe800000000000000002c90300abcdef)")"
expect "unknown QPN" drop_no_qp 0 "$(pkt 2 $LID 0xffff 0x7777 "$QKEY")"
expect "GSI with a wrong Q_Key" drop_bad_qkey 0 "$(pkt 2 $LID 0xffff 1 "$QKEY")"
expect "multicast to the broadcast group" rx_mcast 1 "$(pkt 3 "$MLID" 0xffff 0xffffff "$QKEY" "$(grh $BC)")"
expect "multicast without the multicast DQPN" drop_malformed 0 "$(pkt 3 "$MLID" 0xffff "$QPN" "$QKEY" "$(grh $BC)")"

# a group nobody here joined is filtered silently
drops() { grep -E '^(rx_mcast|drop_)' "$(sib $DEV counters)" | tr '\n' ' '; }
before=$(drops)
inject "$(pkt 3 0xc0ff 0xffff 0xffffff "$QKEY" "$(grh ff12401bffff00000000000000abcdef)")"
check "multicast to a group not joined: no drop or rx_mcast counter moves" test "$before" = "$(drops)"

echo 1 >"$(sib $DEV rx_starve)"
expect "rx_starve 1" drop_no_rwqe 0 "$(pkt 2 $LID 0xffff "$QPN" "$QKEY")"

echo down >"$(sib $DEV state)"
NOMARK=1 expect "port down" drop_link_down 0 "$(pkt 2 $LID 0xffff "$QPN" "$QKEY")"
echo up >"$(sib $DEV state)"
check_wait "port up: carrier on ib1" 30 _t_has_carrier b ib1

check "ib1 down" in_host b ip link set ib1 down
NOMARK=1 expect "ib1 down: its QP is not in RTR/RTS" drop_qp_state 0 "$(pkt 2 $LID 0xffff "$QPN" "$QKEY")"
check "ib1 up" in_host b ip link set ib1 up
check_wait "ib1 up again: carrier on" 30 _t_has_carrier b ib1
expect "ib1 up again: good unicast" rx_packets 1 "$(pkt 2 $LID 0xffff "$QPN" "$QKEY")"
check "no 'timing out' from ipoib's stop: every WQE was flushed" sh -c '! dmesg | grep -q "timing out"'

check "unload everything" unload_all
