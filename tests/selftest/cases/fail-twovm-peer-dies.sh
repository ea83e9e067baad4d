#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock/stock
# vms: 2
# timeout: 150
#
# Must fail, fast: VM1 crashes while VM0 waits for it at a barrier; the
# runner stops VM0 instead of letting it wait until its timeout.
. /tests/lib.sh

ok "a pass"
if [ "$VM_ID" = 1 ]; then
	echo c >/proc/sysrq-trigger
	sleep 30
fi
vm_barrier never 140
