#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# make demo, guest side: two softib HCAs on one simulated fabric, this VM's
# ib_ipoib on top, ib0 and ib1 in two network namespaces, then a look around
# and some traffic. Results (ok/not ok) also go to the results port.
. /tests/lib.sh

say() { printf '\n===== %s\n' "$*"; }
run() { echo "\$ $*"; "$@"; }

if [ ! -e "/lib/modules/$KVER/extra/softib.ko" ]; then
	fail "demo" "softib.ko is not built: nothing to show"
	exit 0
fi
if [ "$IPOIB_DRIVER" = stock ]; then
	say "NOTE: our ib_ipoib.ko is not built yet: showing the STOCK Debian ib_ipoib"
else
	say "Using OUR ib_ipoib.ko (/lib/modules/$KVER/updates/ib_ipoib.ko)"
fi

say "Load the IB core, softib (2 HCAs, fabric + SM/SA) and ib_ipoib"
check "load IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 appear" 20 test -d /sys/class/net/ib1 || exit 0
run /usr/bin/rdma link show
run /usr/sbin/ibstat -s 2>/dev/null || true

say "Two hosts: hostA has ib0, hostB has ib1"
check "make hostA" make_host hostA ib0 192.0.2.1/24 2001:db8::1/64
check "make hostB" make_host hostB ib1 192.0.2.2/24 2001:db8::2/64
check_wait "hostA ib0 carrier" 30 _t_has_carrier hostA ib0
check_wait "hostB ib1 carrier" 30 _t_has_carrier hostB ib1

say "hostA: ip -d link show ib0"
run in_host hostA ip -d link show ib0
say "hostA: ip addr"
run in_host hostA ip addr show dev ib0

say "ping hostA -> hostB over IPoIB"
check "ping 192.0.2.2" in_host hostA ping -c 3 -W 2 192.0.2.2
check "ping6 2001:db8::2" in_host hostA ping -6 -c 3 -W 2 2001:db8::2
say "hostA: ip neigh (IPoIB hardware addresses are 20 bytes: QPN + GID)"
run in_host hostA ip neigh show dev ib0

say "iperf3 hostA -> hostB, 3 s"
in_host hostB iperf3 -s -D -1 >/dev/null 2>&1
wait_for 10 sh -c '/usr/sbin/ip netns exec hostB /usr/bin/ss -Hltn | grep -q ":5201"'
check "iperf3 3 s" in_host hostA iperf3 -c 192.0.2.2 -t 3 -f m

say "Tear down"
check "unload everything" unload_all
