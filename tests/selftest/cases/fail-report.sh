#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: one test reports a failure among passes.
. /tests/lib.sh

ok "a pass"
check "a deliberate failure" false
ok "another pass"
