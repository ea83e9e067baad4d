#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: the case script exits non-zero.
. /tests/lib.sh

ok "a pass"
exit 3
