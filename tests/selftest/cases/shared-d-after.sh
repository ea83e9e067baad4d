#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 120
#
# Last in the shared boot, after the crash: never runs, and must be
# reported failed as not run rather than be missing from the totals.
. /tests/lib.sh

ok "ran"
