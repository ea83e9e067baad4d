#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 120
#
# Second in the shared boot: must fail for its own deliberate failure only,
# and finds none of what shared-a-pass left behind.
. /tests/lib.sh

check "CASE_NAME is this case's" test "$CASE_NAME" = shared-b-fail
check "no /tmp/leftover" test ! -e /tmp/leftover
check "no netns left" test -z "$(ip netns list)"
check "ib_core not loaded" test ! -d /sys/module/ib_core
check "no sleep left running" sh -c '! pgrep -x sleep'
check "the result numbering starts again" test "$(cat "$_T_STATE/num")" = 5
fail "a deliberate failure" "shared-b-fail must fail"
