#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# timeout: 25
#
# Must fail: the case hangs; the hard timeout stops the VM.
. /tests/lib.sh

ok "a pass"
sleep 600
