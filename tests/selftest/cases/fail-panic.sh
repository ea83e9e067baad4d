#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: a kernel crash (sysrq-c: Oops, panic, reboot = QEMU exits).
. /tests/lib.sh

ok "a pass"
echo c >/proc/sysrq-trigger
sleep 30
