#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: the VM powers off before the end marker.
. /tests/lib.sh

ok "a pass"
poweroff -f
sleep 30
