#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 120
#
# Third in the shared boot: crashes the kernel. Must fail "boot completed",
# and shared-d-after, due next, must fail as not run.
. /tests/lib.sh

ok "a pass"
echo c >/proc/sysrq-trigger
sleep 30
