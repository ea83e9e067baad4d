#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Positive control: must pass.
. /tests/lib.sh

ok "trivially true"
check "true runs" true
check_fail "false fails" false
check_wait "wait_for sees a file" 5 test -e /proc/uptime
check "SM_MODE is embedded by default" test "$SM_MODE" = embedded
