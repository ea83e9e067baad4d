#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 240
#
# softib's raw-ceiling knob (debugfs "blast", used by make bench): a blast
# between two HCAs delivers every packet and reports its rate; one to the
# device itself works too; it stops at its time limit; bad requests are
# refused with EINVAL/ENODEV/EMSGSIZE; a port that is down loses the packets
# without a warning; after all of it softib unloads (nothing left behind).
# The blast also checks softib's HCA model where it is not gentler than a
# ConnectX: a packet that finds the receive queue empty is dropped and
# counted while the sender goes on (rx=), a send completes only after its
# packet has left (a stalled device completes none) and post_send on a full
# send queue fails with ENOMEM (fill=), a QP moved to RESET leaves no
# completion on its CQ (reset=), an SGE with no key fails its WR with a
# local protection error (keys=), a send's data is read when its packet
# leaves (scribble=), and a UD packet longer than the path MTU is dropped.
# No ib_ipoib is loaded: the blast needs none.
. /tests/lib.sh

B=$SIB_DEBUGFS/blast
val() { awk -v n="$1" '$1 == n { print $2 }' "$B"; }
blast() { echo "$*" >"$B"; }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
check_wait "sib1 active" 20 sh -c "grep -q ACTIVE $(sib sib1 state)" || exit 0

if check "blast 20000 x 96 bytes sib0 -> sib1" blast sib0 sib1 96 20000; then
	echo "$(cat "$B" | tr '\n' ' ')"
	check "every packet arrived" test "$(val packets)" = 20000 -a "$(val lost)" = 0
	check "bytes = packets x size" test "$(val bytes)" = $((20000 * 96))
	check "pps reported" test "$(val pps)" -gt 0
fi
check "key=value form, to itself" blast src=sib1 dst=sib1 size=2048 count=2000 window=64
check "loopback blast delivered" test "$(val packets)" = 2000

t0=$(_t_now_ds)
check "time limit: ms=300 with a huge count" blast sib0 sib1 64 1000000000 ms=300
check "stopped within 3 s" test $(($(_t_now_ds) - t0)) -le 30

# UD has no flow control: 200 packets into 8 receive buffers that are never
# reposted; 192 are dropped at sib1 and the sender is not held up (the old
# softib held the sender's queue up to 1 s waiting for a repost).
d0=$(sib_counter sib1 drop_no_rwqe)
if check "rx=8: 200 packets into 8 receive buffers" blast sib0 sib1 64 200 rx=8; then
	echo "$(cat "$B" | tr '\n' ' ')"
	check "rx=8: 8 arrived, 192 lost ($(val packets) / $(val lost))" \
		test "$(val packets)" = 8 -a "$(val lost)" = 192
	check "rx=8: softib counted 192 drop_no_rwqe ($d0 -> $(sib_counter sib1 drop_no_rwqe))" \
		test "$(sib_counter sib1 drop_no_rwqe)" = $((d0 + 192))
	check "rx=8: the sender was not held (done in $(val elapsed_ns) ns < 0.5 s)" \
		test "$(val elapsed_ns)" -lt 500000000
fi

# A stalled device sends nothing, so no send completes: the 65th post_send on
# a send queue of 64 fails with ENOMEM (softib completed sends at post time
# and never refused one before).
echo 3000 >"$(sib sib0 send_stall_ms)"
f0=$(sib_counter sib0 post_send_full)
t0=$(sib_counter sib0 tx_packets)
check "fill: post sends into a stalled device" blast sib0 sib1 64 1000 window=64 fill=1
echo "$(cat "$B" | tr '\n' ' ')"
check "fill: ENOMEM after exactly 64 posts (full_at $(val full_at), full_err $(val full_err))" \
	test "$(val full_at)" = 64 -a "$(val full_err)" = -12
check "fill: softib counted post_send_full" test "$(sib_counter sib0 post_send_full)" = $((f0 + 1))
check "fill: 64 posted, none arrived while stalled" test "$(sib_counter sib0 tx_packets)" = $((t0 + 64)) \
	-a "$(val packets)" = 0
echo 0 >"$(sib sib0 send_stall_ms)"
check "after the stall: every packet of a blast arrives" blast sib0 sib1 96 2000
check "after the stall: 2000 delivered" test "$(val packets)" = 2000

# RESET takes a QP's completions off its CQs, as mlx5 does for a kernel
# QP (reset=1): after the blast the receiver's QP goes to ERR, which
# flushes its 256 posted receives into its CQ; one is polled, then the QP
# goes to RESET, and a poll must find none of the other 255.
if check "reset=1: a blast, then the receiver's QP to ERR and to RESET" \
	blast sib0 sib1 64 100 reset=1; then
	check "reset=1: ERR flushed the posted receives (the one polled: reset_flushed $(val reset_flushed))" \
		test "$(val reset_flushed)" = 1
	check "reset=1: RESET took the rest off the CQ (after_reset $(val after_reset))" \
		test "$(val after_reset)" = 0
fi

# Keys, as an HCA checks them (issue 31 item 3): a PD's local DMA key is
# not 0, and every SGE's key is checked when the WR executes (keys=1). A
# send whose SGE has lkey 0 (softib's own local_dma_lkey until 2026-12-07,
# accepted then) completes with IB_WC_LOC_PROT_ERR (4) and stops the UD
# send queue in SQE (5); a receive with lkey 0 completes with it too when
# a packet arrives, and its QP goes to ERR (6). softib counts both.
k0=$(sib_counter sib0 bad_lkey)
k1=$(sib_counter sib1 bad_lkey)
if check "keys=1: a send, then a receive, with lkey 0" blast sib0 sib1 64 1 keys=1; then
	check "keys=1: the PDs' local_dma_lkey is not 0 ($(val local_dma_lkey))" \
		test "$(val local_dma_lkey)" -gt 0
	check "keys=1: the send completed with a local protection error (status $(val key_send_status))" \
		test "$(val key_send_status)" = 4
	check "keys=1: the sender's send queue stopped in SQE (state $(val key_send_state))" \
		test "$(val key_send_state)" = 5
	check "keys=1: the receive completed with a local protection error (status $(val key_recv_status))" \
		test "$(val key_recv_status)" = 4
	check "keys=1: the receiver's QP went to ERR (state $(val key_recv_state))" \
		test "$(val key_recv_state)" = 6
	check "keys=1: softib counted bad_lkey once at each end" \
		test "$(sib_counter sib0 bad_lkey)" = $((k0 + 1)) -a "$(sib_counter sib1 bad_lkey)" = $((k1 + 1))
fi

# An HCA reads a send's data when it sends the packet, not when the WR is
# posted (scribble=1): 8 sends of 0x5a posted into a stalled device, then
# the buffer rewritten with 0xa5 before any completed (a ULP's bug). The
# receiver gets 0xa5 and softib counts the 8 in send_data_changed; until
# 2026-12-08 softib copied at post time and the receiver got 0x5a, so a
# driver that freed or reused a send buffer early stayed green.
echo 1500 >"$(sib sib0 send_stall_ms)"
c0=$(sib_counter sib0 send_data_changed)
if check "scribble=1: 8 sends, their buffer rewritten before they left" \
	blast sib0 sib1 256 8 scribble=1; then
	check "scribble=1: the receiver got the data as it was at transmission ($(val scribble_new) new, $(val scribble_old) old)" \
		test "$(val scribble_new)" = 8 -a "$(val scribble_old)" = 0
	check "scribble=1: softib counted 8 send_data_changed ($c0 -> $(sib_counter sib0 send_data_changed))" \
		test "$(sib_counter sib0 send_data_changed)" = $((c0 + 8))
fi
echo 0 >"$(sib sib0 send_stall_ms)"

# The default fabric is consistent: the embedded SA answers PathRecords of
# sa_mtu (2048) between two ports, and the fabric drops a UD packet longer
# than that on the way and counts it (drop_path_mtu), as a 2048 link lies on
# a route OpenSM gives a 2048 PathRecord. Until 2026-12-08 softib delivered
# it (4096 links everywhere, 2048 paths), which hid UD sized by the port's
# MTU instead of the path's. A port's packets to itself stay on its switch.
p0=$(sib_counter sib0 drop_path_mtu)
check "path MTU: blast 50 x 4096 bytes sib0 -> sib1" blast sib0 sib1 4096 50 ms=300
check "path MTU: none arrived, the path is 2048 ($(val packets) of $(val sent))" \
	test "$(val packets)" = 0 -a "$(val sent)" = 50
check "path MTU: softib counted 50 drop_path_mtu ($p0 -> $(sib_counter sib0 drop_path_mtu))" \
	test "$(sib_counter sib0 drop_path_mtu)" = $((p0 + 50))
check "path MTU: blast 50 x 2048 bytes sib0 -> sib1" blast sib0 sib1 2048 50
check "path MTU: 2048 bytes all arrived ($(val packets))" test "$(val packets)" = 50
check "path MTU: blast 50 x 4096 bytes sib0 -> sib0" blast sib0 sib0 4096 50
check "path MTU: to the port itself all arrived ($(val packets))" test "$(val packets)" = 50

check_fail "unknown device refused" blast sib0 nosuchdev 64 10
check_fail "size above the MTU refused" blast sib0 sib1 8192 10
check_fail "garbage refused" blast sib0 sib1 64 10 bogus=1
check_fail "missing destination refused" blast sib0

echo down >"$(sib sib1 state)"
check "blast into a down port returns" blast sib0 sib1 64 100 ms=200
check "nothing arrived at the down port" test "$(val packets)" = 0
echo up >"$(sib sib1 state)"

check "unload softib" unload_all

# sa_path_mtu=4096: the common fabric of 4K links with a 2K IPoIB broadcast
# group; 4096-byte packets between two ports arrive.
check "load softib ndevs=2 sa_path_mtu=4096" load_softib ndevs=2 sa_path_mtu=4096 || exit 0
check_wait "sib1 active" 20 sh -c "grep -q ACTIVE $(sib sib1 state)" || exit 0
check "4K links: blast 50 x 4096 bytes sib0 -> sib1" blast sib0 sib1 4096 50
check "4K links: all arrived ($(val packets)), no drop_path_mtu" \
	test "$(val packets)" = 50 -a "$(sib_counter sib0 drop_path_mtu)" = 0
check "unload softib again" unload_all
