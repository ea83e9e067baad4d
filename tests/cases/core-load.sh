#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock ours
# vms: 1
# boot: shared
# timeout: 240
#
# Load and unload the IB core, then softib + this VM's ib_ipoib, twice, with
# no kernel report (the kernel check after the case fails on any).
. /tests/lib.sh

check "load ib_core ib_cm ib_umad" load_ib_core
check "ib_core ib_cm ib_umad loaded" test -d /sys/module/ib_core -a -d /sys/module/ib_cm -a -d /sys/module/ib_umad
check "unload the IB core" unload_all
check "IB core unloaded" test ! -d /sys/module/ib_core

if [ ! -e "/lib/modules/$KVER/extra/softib.ko" ]; then
	skip "softib and ib_ipoib load/unload" "softib.ko is not built"
	exit 0
fi

if [ "$IPOIB_DRIVER" = ours ]; then
	check "modprobe resolves ib_ipoib to ours in updates/" \
		sh -c '[ "$(/sbin/modinfo -F filename ib_ipoib)" = "/lib/modules/$(uname -r)/updates/ib_ipoib.ko" ]'
fi

for round in 1 2; do
	check "round $round: load softib ndevs=2" load_softib ndevs=2
	check_wait "round $round: two softib devices registered" 10 \
		sh -c '[ "$(ls /sys/class/infiniband | wc -l)" -ge 2 ]'
	check "round $round: load $IPOIB_DRIVER ib_ipoib" load_ipoib
	check "round $round: the loaded ib_ipoib is $IPOIB_DRIVER's" \
		sh -c ". /tests/lib.sh; [ \"\$(ipoib_loaded_driver)\" = $IPOIB_DRIVER ]"
	check_wait "round $round: ib0 and ib1 exist" 10 \
		sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
	check "round $round: unload ib_ipoib" unload_ipoib
	check_wait "round $round: ib0 gone" 5 test ! -d /sys/class/net/ib0
	check "round $round: unload everything" unload_all
	check "round $round: nothing left loaded" \
		sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
done
