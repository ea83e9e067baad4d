#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: a kernel report that the dmesg ring buffer no longer holds when
# the guest's kernel check reads it (here: cleared; in a chatty boot:
# overwritten) is still on the console, which the host scans.
. /tests/lib.sh

ok "a pass"
echo "<3>INFO: task selftest:1 blocked for more than 120 seconds." >/dev/kmsg
dmesg -c >/dev/null
check "the ring buffer lost the report" sh -c '! dmesg | grep -q "blocked for more than"'
