#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 400
#
# ARP requests that name a fresh GID each (review 2026-12, finding 14).
# The kernel answers an ARP request to the sender hardware address it
# names, so each request with a new random GID in it made a path and a
# PathRecord query on a's side: memory and SA load at the sender's packet
# rate. Ours keeps at most path_pending_max paths that never resolved per
# interface (set to 32 here, 4096 by default): 200 such requests cost at
# most 32 queries, the rest of the answers are dropped and counted
# (tx_drop_path_limit, a log line), a's path to c (resolved) is untouched,
# and once the flood is over the GC frees the failed paths at its next pass
# so that a reaches a host it never talked to (b). The stock driver makes a
# path and a query for every one (a stock finding: the count is printed).
. /tests/lib.sh

DEV=sib0	# a's port, LID 1
LID=1
N=200
MAX=32
. /tests/cases/wire.inc

# stat NAME: a's ethtool -S counter NAME
stat() { in_host a ethtool -S ib0 | awk -v n="$1:" '$1 == n { print $2 }'; }
stat_ge() { [ "$(stat "$1")" -ge "$2" ]; }
# our paths on ib0 (debugfs)
npaths() { grep -vc '^#' /sys/kernel/debug/ipoib/ib0/paths; }

check "load the IB core" load_ib_core
check "load softib ndevs=3" load_softib ndevs=3
if [ "$IPOIB_DRIVER" = ours ]; then
	check "load ours ib_ipoib path_pending_max=$MAX" load_ipoib path_pending_max=$MAX
else
	check "load stock ib_ipoib" load_ipoib
fi
check_wait "ib0 .. ib2 exist" 20 test -d /sys/class/net/ib2
check "host a (ib0)" make_host a ib0 10.19.0.1/24
check "host b (ib1)" make_host b ib1 10.19.0.2/24
check "host c (ib2)" make_host c ib2 10.19.0.3/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "a pings c" 30 pings a 10.19.0.3
a_addr=$(in_host a cat /sys/class/net/ib0/address)
QPN=$((0x$(echo "$a_addr" | cut -d: -f2-4 | tr -d :)))

# N ARP requests for a's address from 10.19.0.99, whose sender hardware
# address is QPN 0x48 at GID fe80::99:I (I = 1..N: GIDs nobody has); I is
# bytes 56-59 of the packet (LRH 8, BTH 12, DETH 8, encapsulation 4, ARP
# header 8, then the sender address's QPN word and first 12 GID bytes)
sha="00 00 00 48 fe 80 00 00 00 00 00 00 00 00 00 99 00 00 00 00"
p="08 06 00 00 00 20 08 00 14 04 00 01 $sha 0a 13 00 63 $(zeros 20) 0a 13 00 01"
body=$(lrh_body 0 2 $LID 0x30 "$(bth 0x64 0 0xffff "$QPN") $(deth 0x0b1b 0x48) $p")
wire_numbered $N "$body" 56 >/tmp/churn.hex
check "$N requests built" test "$(wc -l </tmp/churn.hex)" = $N
dmesg_mark churn
q0=$(sa_counter path_get)
r0=$(in_host a cat /sys/class/net/ib0/statistics/rx_packets)
t0=$(_t_now_ds)
while IFS= read -r f; do
	inject "$f"
done </tmp/churn.hex
echo "$N requests injected in $(( ($(_t_now_ds) - t0) / 10 )) s"
check_wait "a received the $N requests" 20 sh -c \
	"[ \$(/usr/sbin/ip netns exec a cat /sys/class/net/ib0/statistics/rx_packets) -ge $((r0 + N)) ]"
if [ "$IPOIB_DRIVER" = ours ]; then
	check_wait "the answers past $MAX new paths are dropped and counted" 20 \
		stat_ge tx_drop_path_limit $((N - MAX - 8))
	q1=$(sa_counter path_get)
	check "SA PathRecord queries: $((q1 - q0)) for $N new GIDs (at most $MAX + 4)" \
		test $((q1 - q0)) -le $((MAX + 4))
	np=$(npaths)
	check "a holds $np paths (at most $MAX + 2)" test "$np" -le $((MAX + 2))
	check "the bound is logged" logged "paths wait for the SA (path_pending_max)"
else
	wait_for 20 sh -c "[ \$(awk '\$1 == \"path_get\" { print \$2 }' $SIB_DEBUGFS/sa_counters) -ge $((q0 + N)) ]"
	q1=$(sa_counter path_get)
	skip "SA PathRecord queries bounded" "stock finding: $((q1 - q0)) queries for $N ARP requests naming new GIDs"
fi
check "a still pings c (its resolved path)" pings a 10.19.0.3
# the GC runs every 10 s: a pass frees the failed paths' neighbours
# unused for 2 s, the next pass the paths
check_wait "then a reaches b, never talked to, within 40 s" 40 pings a 10.19.0.2
check "unload everything" unload_all
