#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# Must fail: the case reports no test at all.
. /tests/lib.sh

echo "this case forgot to report"
