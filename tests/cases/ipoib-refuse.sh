#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
#
# What the driver refuses, it refuses at once and cleanly (review 2026-12,
# findings 3 and 12):
#
# - A SIDR REQ (the CM's datagram service lookup) for the connected-mode
#   service ID 0x1000000000000000 | QPN, injected on ib1's QP1 from the wire
#   with dynamic debug on: RFC 4755 has no datagram service there, so each
#   one is answered with a SIDR REP (ib_cm's reject) and its cm_id freed.
#   Before the fix our handler read the listener's context as a passive
#   connection (an oops with dynamic debug on) and returned 0, so ib_cm
#   kept every request's cm_id for ever and never answered. The stock
#   driver returns 0 too: a stock finding (no answer; one cm_id per request
#   leaks, from any host on the partition).
# - ip link add ... type ipoib mode connected on an HCA that cannot do
#   connected mode (softib recv_sge=8: ours needs 16 SGEs for its 64 KiB
#   receive buffers) fails with EOPNOTSUPP and leaves no interface; before
#   the fix it returned 0 with a datagram-mode child. (The stock driver
#   runs connected mode with a smaller MTU on such an HCA; ours does not.)
. /tests/lib.sh

DEV=sib1	# LID 2; sib0 (LID 1) is the SM
LID=2
. /tests/cases/wire.inc

cmctr() { cat "/sys/class/infiniband/$DEV/ports/1/$1/$2"; }
cmctr_ge() { [ "$(cmctr "$1" "$2")" -ge "$3" ]; }

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib1 exists" 20 test -d /sys/class/net/ib1
check "host b (ib1)" make_host b ib1 10.12.0.2/24
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
check "ib1 in connected mode" in_host b ip link set ib1 type ipoib mode connected
QPN=$(($(in_host b cat /sys/class/net/ib1/address | cut -d: -f2-4 | tr -d : | sed 's/^/0x/')))
echo "ib1 QPN $(printf 0x%06x $QPN)"
[ -e /proc/dynamic_debug/control ] &&
	echo 'module ib_ipoib +p' >/proc/dynamic_debug/control 2>/dev/null

# sidr_req REQID: a CM SIDR REQ from LID 1 to ib1's connected-mode service
sidr_req() { cm_sidr_req "$1" "$QPN" $LID 1; }
N=20
if [ "$IPOIB_DRIVER" = ours ]; then
	rx0=$(cmctr cm_rx_msgs sidr_req)
	rep0=$(cmctr cm_tx_msgs sidr_rep)
	i=1
	while [ $i -le $N ]; do
		inject "$(sidr_req $((0x1000 + i)))"
		i=$((i + 1))
	done
	check_wait "ib_cm on $DEV received the $N SIDR REQs" 20 cmctr_ge cm_rx_msgs sidr_req $((rx0 + N))
	check_wait "each was answered (SIDR REP sent: $rep0 -> $N more)" 20 \
		cmctr_ge cm_tx_msgs sidr_rep $((rep0 + N))
	check "ethtool -S ib1 counted them (rc_sidr_refused)" sh -c \
		"/usr/sbin/ip netns exec b ethtool -S ib1 | grep -q 'rc_sidr_refused: $N\$'"
	check "and the refusal is logged" sh -c 'dmesg | grep -q "SIDR REQ for the connected-mode service ID refused"'
else
	# Seen 2026-12-04 with this case: the stock driver answers none and
	# keeps each request's cm_id, and the unload of ib_cm at the end of
	# the case WARNs (cm.c:4548, local_id_table not empty).
	skip "SIDR REQs for the connected-mode service ID" \
		"stock finding: each leaks a cm_id, and ib_cm's unload WARNs (cm.c:4548)"
fi
check_wait "connected mode still works: ib1 pings itself" 10 in_host b ping -c 1 -W 2 10.12.0.2
[ -e /proc/dynamic_debug/control ] &&
	echo 'module ib_ipoib -p' >/proc/dynamic_debug/control 2>/dev/null
check "unload everything" unload_all

# --- an HCA without connected mode for ours: 8 receive SGEs ---
check "load the IB core" load_ib_core
check "load softib recv_sge=8" load_softib recv_sge=8
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 exists" 20 test -d /sys/class/net/ib0
if [ "$IPOIB_DRIVER" = ours ]; then
	check "echo connected > mode is refused" sh -c '! echo connected >/sys/class/net/ib0/mode 2>/dev/null'
	out=$(ip link add link ib0 name ib0.8011 type ipoib pkey 0x8011 mode connected 2>&1)
	rc=$?
	check "ip link add ... mode connected fails ($rc: $out)" test $rc != 0
	check "with the reason" sh -c "echo '$out' | grep -q 'cannot do connected mode'"
	check "and leaves no interface" test ! -e /sys/class/net/ib0.8011
	check "ip link add ... mode datagram still works" \
		ip link add link ib0 name ib0.8012 type ipoib pkey 0x8012 mode datagram
	check "ip link del it" ip link del ib0.8012
else
	skip "ip link add ... mode connected on an HCA with 8 receive SGEs" \
		"the stock driver sizes its connected-mode MTU to the SGEs instead of refusing"
fi
check "unload everything" unload_all
