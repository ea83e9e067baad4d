#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 120
#
# A skip is counted as skipped, never as passed.
. /tests/lib.sh

skip "cannot run here" "selftest skip"
