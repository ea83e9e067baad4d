#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# sm: bogus
# timeout: 60
#
# Must fail: "bogus" is no subnet manager; the runner refuses the header
# and boots nothing.
. /tests/lib.sh

ok "never reached"
