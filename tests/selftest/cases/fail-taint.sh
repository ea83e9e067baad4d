#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: a taint bit other than 4096|8192 (512 = a WARN happened).
. /tests/lib.sh

ok "a pass"
echo 512 >/proc/sys/kernel/tainted
