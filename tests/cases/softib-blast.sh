#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# timeout: 240
#
# softib's raw-ceiling knob (debugfs "blast", used by make bench): a blast
# between two HCAs delivers every packet and reports its rate; one to the
# device itself works too; it stops at its time limit; bad requests are
# refused with EINVAL/ENODEV/EMSGSIZE; a port that is down loses the packets
# without a warning; after all of it softib unloads (nothing left behind).
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

check_fail "unknown device refused" blast sib0 nosuchdev 64 10
check_fail "size above the MTU refused" blast sib0 sib1 8192 10
check_fail "garbage refused" blast sib0 sib1 64 10 bogus=1
check_fail "missing destination refused" blast sib0

echo down >"$(sib sib1 state)"
check "blast into a down port returns" blast sib0 sib1 64 100 ms=200
check "nothing arrived at the down port" test "$(val packets)" = 0
echo up >"$(sib sib1 state)"

check "unload softib" unload_all
