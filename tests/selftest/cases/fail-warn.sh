#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: a WARNING in the kernel log.
. /tests/lib.sh

ok "a pass"
echo "WARNING: CPU: 0 PID: 1 at selftest/fake.c:1 selftest_warn+0x0/0x0" >/dev/kmsg
