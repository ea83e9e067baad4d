#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 300
#
# The softib wire parser on hostile input: malformed raw packets (truncated,
# bad LRH/GRH/BTH/DETH fields, oversize, bad ICRC, random garbage) injected
# through the per-device "inject" debugfs knob are each dropped and counted
# under the right reason; well-formed ones for an unknown QP reach delivery
# and are counted as drop_no_qp. The kernel check after the case fails on any
# warning. The packets carry a real ICRC (CRC-32, little-endian), computed
# here, so that each one is refused for the field under test.
. /tests/lib.sh

DEV=sib1	# LID 2 (ndevs=2: sib0 LID 1 is the SM)
LID=2

. /tests/cases/wire.inc

counter_ge() { [ "$(sib_counter "$1" "$2")" -ge "$3" ]; }

# expect NAME COUNTER HEX: injecting HEX bumps COUNTER by one
expect() {
	local before after
	before=$(sib_counter "$DEV" "$2")
	inject "$3"
	if wait_for 5 counter_ge "$DEV" "$2" $((before + 1)); then
		after=$(sib_counter "$DEV" "$2")
		if [ "$after" = $((before + 1)) ]; then
			ok "$1: dropped as $2"
		else
			fail "$1: dropped as $2" "$2 went from $before to $after"
		fi
	else
		fail "$1: dropped as $2" "$2 stayed at $before; counters: $(tr '\n' ' ' <"$(sib "$DEV" counters)")"
	fi
}

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
if ! check_wait "$DEV has an inject knob" 10 test -e "$(sib "$DEV" inject)"; then
	exit 0
fi

UD=0x64
UD_IMM=0x65
QKEY=0x12345678
# a well-formed UD packet for QP 0x123, which does not exist
BODY="$(bth $UD 0 0xffff 0x123) $(deth $QKEY 0x48) $(zeros 32)"
GOOD=$(wire 0 2 $LID 1 "$BODY")
WORDS=$((($(nbytes "$BODY") + 12) / 4))

expect "well-formed, unknown DQPN" drop_no_qp "$GOOD"
expect "well-formed with ImmDt, unknown DQPN" drop_no_qp \
	"$(wire 0 2 $LID 1 "$(bth $UD_IMM 0x80 0xffff 0x123) $(deth $QKEY 0x48) de ad be ef $(zeros 16)")"

expect "truncated to 5 bytes" drop_malformed "00 02 00 02 00"
expect "truncated inside the BTH" drop_malformed "$(echo "$GOOD" | cut -d' ' -f1-14)"
expect "LRH and ICRC only" drop_malformed "$(wire 0 2 $LID 1 "")"
expect "PktLen one word beyond the buffer" drop_malformed "$(wire 0 2 $LID 1 "$BODY" $((WORDS + 1)))"
expect "PktLen one word short of the buffer" drop_malformed "$(wire 0 2 $LID 1 "$BODY" $((WORDS - 1)))"
expect "PktLen 0" drop_malformed "$(wire 0 2 $LID 1 "$BODY" 0)"
expect "LRH LVer 1" drop_malformed "$(wire 1 2 $LID 1 "$BODY")"
expect "LRH LNH raw" drop_malformed "$(wire 0 0 $LID 1 "$BODY")"
expect "LRH LNH IP" drop_malformed "$(wire 0 1 $LID 1 "$BODY")"
expect "LRH DLID 0" drop_malformed "$(wire 0 2 0 1 "$BODY")"
expect "LRH SLID 0" drop_malformed "$(wire 0 2 $LID 0 "$BODY")"
expect "LRH SLID multicast" drop_malformed "$(wire 0 2 $LID 0xc001 "$BODY")"
expect "LRH global, too short for a GRH" drop_malformed \
	"$(wire 0 3 $LID 1 "$(bth $UD 0 0xffff 0x123) $(deth $QKEY 0x48)")"

PAYLEN=$(($(nbytes "$BODY") + 4))
expect "GRH next header 0x11" drop_malformed "$(wire 0 3 $LID 1 "$(grh 0x60 0x11 $PAYLEN) $BODY")"
expect "GRH IP version 4" drop_malformed "$(wire 0 3 $LID 1 "$(grh 0x40 0x1b $PAYLEN) $BODY")"
expect "GRH PayLen inconsistent" drop_malformed "$(wire 0 3 $LID 1 "$(grh 0x60 0x1b $((PAYLEN + 4))) $BODY")"

# RC is carried (softib_rc.c): to no QP it is unrouted, to QP1 refused
expect "BTH opcode RC SEND_ONLY to no QP" drop_no_qp \
	"$(wire 0 2 $LID 1 "$(bth 0x04 0 0xffff 0x123) $(zeros 32)")"
expect "BTH opcode RC SEND_ONLY to QP1" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth 0x04 0 0xffff 0x1) $(zeros 32)")"
expect "BTH opcode RC RDMA WRITE ONLY to no QP" drop_no_qp \
	"$(wire 0 2 $LID 1 "$(bth 0x0a 0 0xffff 0x123) $(zeros 32)")"
expect "RC RDMA WRITE ONLY without room for its RETH" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth 0x0a 0 0xffff 0x123) $(zeros 12)")"
expect "RC FETCH ADD without room for its AtomicETH" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth 0x14 0 0xffff 0x123) $(zeros 24)")"
expect "BTH opcode RC RDMA READ RESPONSE ONLY (not carried)" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth 0x10 0 0xffff 0x123) $(zeros 32)")"
expect "BTH opcode 0xff" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth 0xff 0 0xffff 0x123) $(deth $QKEY 0x48) $(zeros 32)")"
expect "BTH TVer 1" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth $UD 0x01 0xffff 0x123) $(deth $QKEY 0x48) $(zeros 32)")"
expect "BTH PadCnt 3 with no payload" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth $UD 0x30 0xffff 0x123) $(deth $QKEY 0x48)")"
expect "ImmDt opcode without room for ImmDt" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth $UD_IMM 0 0xffff 0x123) $(deth $QKEY 0x48)")"
expect "multicast DLID without GRH" drop_malformed \
	"$(wire 0 2 0xc001 1 "$(bth $UD 0 0xffff 0xffffff) $(deth $QKEY 0x48) $(zeros 32)")"
expect "unicast DLID with the multicast QPN" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth $UD 0 0xffff 0xffffff) $(deth $QKEY 0x48) $(zeros 32)")"
expect "payload of 4100 bytes" drop_malformed \
	"$(wire 0 2 $LID 1 "$(bth $UD 0 0xffff 0x123) $(deth $QKEY 0x48) $(zeros 4100)")"

expect "bad ICRC" drop_icrc "$(lrh_body 0 2 $LID 1 "$BODY") 00 00 00 00"
expect "payload byte flipped after the ICRC" drop_icrc \
	"$(echo "$GOOD" | awk '{ $41 = "80"; print }')"

# garbage: every frame must be refused, as malformed or by its ICRC
m0=$(sib_counter $DEV drop_malformed)
i0=$(sib_counter $DEV drop_icrc)
n=0
while [ $n -lt 200 ]; do
	len=$((n % 97 + 1))
	inject "$(head -c $len /dev/urandom | od -An -tx1 -v | tr '\n' ' ')"
	n=$((n + 1))
done
m1=$(sib_counter $DEV drop_malformed)
i1=$(sib_counter $DEV drop_icrc)
if [ $((m1 - m0 + i1 - i0)) = 200 ]; then
	ok "200 random frames all refused"
else
	fail "200 random frames all refused" "malformed +$((m1 - m0)), icrc +$((i1 - i0))"
fi

# MADs longer than QP1's receive buffers (ib_mad's 256 bytes and a GRH)
# but within the port MTU: for UD the IBA's class D responder error, a
# silent drop that takes no buffer and writes no completion
# (drop_too_long). A completion in error would cost the buffer for good
# (ib_mad does not repost after one), so more of them than ib_mad's 512
# receive buffers would leave the port's QP1 with none, and the port would
# hear the SA and CM no more (softib until 2026-12-07: each one an
# IB_WC_LOC_LEN_ERR completion).
BIG=$(wire 0 2 $LID 1 "$(bth $UD 0 0xffff 1) $(deth 0x80010000 1) $(zeros 1000)")
t0=$(sib_counter $DEV drop_too_long)
e0=$(sib_counter $DEV rx_err_cqe)
n=0
while [ $n -lt 520 ]; do
	inject "$BIG"
	n=$((n + 1))
done
too_long_all() { [ "$(sib_counter $DEV drop_too_long)" -ge $((t0 + 520)) ]; }
check_wait "520 MADs longer than QP1's buffers: each dropped as drop_too_long" 10 too_long_all
check "none of them completed in error (rx_err_cqe $e0 -> $(sib_counter $DEV rx_err_cqe))" \
	test "$(sib_counter $DEV rx_err_cqe)" = "$e0"
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib1 up" 20 ip link set ib1 up
check_wait "QP1 still receives: ib1 joined its broadcast group (carrier)" 30 \
	grep -qx 1 /sys/class/net/ib1/carrier
check "no softib message flood in dmesg" \
	sh -c '[ "$(dmesg | grep -c softib)" -lt 50 ]'
check "unload everything" unload_all
