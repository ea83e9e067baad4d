#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: a forged end marker, then power off.
. /tests/lib.sh

ok "a pass"
echo "END 0000000000000000" >>"$RESULTS"
echo "END" >>"$RESULTS"
poweroff -f
sleep 30
