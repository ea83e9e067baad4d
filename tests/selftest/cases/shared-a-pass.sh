#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 120
#
# The first of four cases booted together (tests/run.sh, "Shared boots"):
# must pass, and leaves behind what the reset between cases must clear: a
# process, a netns, loaded IB modules and a file in /tmp.
. /tests/lib.sh

check "CASE_NAME is this case's" test "$CASE_NAME" = shared-a-pass
check "load the IB core" load_ib_core
check "make a netns" ip netns add leftover
sleep 1000 &
echo leftover >/tmp/leftover
ok "left a process, a netns, ib_core and /tmp/leftover behind"
