#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# boot: shared
# timeout: 400
# sm: embedded
#
# Address resolution is observable and bounded: the first ping to a new
# host is answered while its path resolves; IPv4 and IPv6 neighbours of one
# host share one path, so one SA PathRecord query per destination GID; a
# destination the SA does not know costs a handful of queries over 30 s of
# traffic and its packets are counted as dropped; a burst of 16 packets to a
# new destination, held while it resolves, is delivered whole. Under OpenSM, which has
# no query counters, the path's DLID must be the LID OpenSM gave b and
# OpenSM must have no PathRecord to the unknown GID; the rest is the same.
. /tests/lib.sh

# sa_counter NAME: softib's SA counter; under OpenSM always 0 (not checked)
sa_count() {
	if [ "$SM_MODE" = opensm ]; then
		echo 0
	else
		sa_counter "$1"
	fi
}
# embedded_only NAME CMD...: check CMD under softib's SA (its counters)
embedded_only() {
	[ "$SM_MODE" = opensm ] && return 0
	check "$@"
}

check "load the IB core" load_ib_core
check "load softib ndevs=3" load_softib ndevs=3
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0..ib2 exist" 20 test -d /sys/class/net/ib2
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check "host c (ib2)" make_host c ib2 10.9.0.3/24 fd00:9::3/64
for h in a:ib0 b:ib1 c:ib2; do
	check_wait "carrier on ${h#*:}" 30 _t_has_carrier "${h%:*}" "${h#*:}"
done

# --- first packet, IPv4 and IPv6 to one host, one query per GID ---
p0=$(sa_count path_get)
check "first ping a -> b answered (path resolved meanwhile)" in_host a ping -c 1 -W 10 10.9.0.2
check "ping6 a -> b" in_host a ping -6 -c 1 -W 10 fd00:9::2
check "ping6 link-local a -> b" in_host a ping -6 -c 1 -W 10 fe80::202:c903:a0:2%ib0
check "ping b -> a" in_host b ping -c 1 -W 10 10.9.0.1
check "ping6 b -> a" in_host b ping -6 -c 1 -W 10 fd00:9::1
p1=$(sa_count path_get)
# a asked once for b's GID, b once for a's GID: IPv4 and IPv6 share the path.
embedded_only "two PathRecord queries for two GIDs with IPv4+IPv6 both ways ($p0 -> $p1)" test $((p1 - p0)) -eq 2
if [ "$SM_MODE" = opensm ]; then
	lb=$(printf '0x%04x' "$(port_lid sib1)")
	check "debugfs ib0_path: b's path has OpenSM's LID for b ($lb)" sh -c \
		"awk '/^GID: fe80:0:0:0:2:c903:a0:2\$/ { g = 1; next } /^GID:/ { g = 0 } g && \$1 == \"DLID:\" && \$2 == \"$lb\" { f = 1 } END { exit !f }' /sys/kernel/debug/ipoib/ib0_path"
	check "saquery -p: OpenSM has the path sib0 -> sib1" sh -c \
		"saquery -C sib0 -p | grep -qiE 'dlid\.+(0x0*$(printf %x "$(port_lid sib1)")|$(port_lid sib1))\$'"
fi
check "a has IPv4 and IPv6 neighbours for b" sh -c \
	'/usr/sbin/ip -n a neigh show dev ib0 | grep -q "^10.9.0.2 " && /usr/sbin/ip -n a -6 neigh show dev ib0 | grep -q "^fd00:9::2 "'
check "debugfs ib0_path: one complete path to b's GID" sh -c \
	'grep -c "^GID: fe80:0:0:0:2:c903:a0:2\$" /sys/kernel/debug/ipoib/ib0_path | grep -qx 1 &&
	 awk "/^GID: fe80:0:0:0:2:c903:a0:2\$/ { g = 1; next } /^GID:/ { g = 0 } g && \$1 == \"complete:\" && \$2 == \"yes\" { f = 1 } END { exit !f }" /sys/kernel/debug/ipoib/ib0_path'
check "more traffic causes no more queries" in_host a ping -c 5 -i 0.2 -W 2 10.9.0.2
embedded_only "path_get still $p1" test "$(sa_count path_get)" = "$p1"
check "first ping c -> a answered" in_host c ping -c 1 -W 10 10.9.0.1
# A burst to a destination never talked to: the neighbour layer holds it
# while ARP resolves, then hands all of it to the driver at once, which holds
# it while the path resolves (IPOIB_PATH_QUEUE_LEN, 16; the stock driver
# holds 3, IPOIB_MAX_PATH_REC_QUEUE): every packet must be delivered.
burst16() {
	in_host c ping -c 16 -i 0.002 -W 10 -w 30 10.9.0.2 | tee /dev/stderr |
		grep -q '16 packets transmitted, 16 received'
}
check "a burst of 16 pings c -> b, a new destination: 16 replies" burst16

# --- a destination the SA does not know ---
# GUID 0x0002c90300a00063: no port has LID 0x63, so PathRecord says "no records".
ghost=00:ff:ff:00:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a0:00:63
check "static neighbour 10.9.0.99 with an unknown GID" \
	/usr/sbin/ip -n a neigh replace 10.9.0.99 lladdr $ghost dev ib0 nud permanent
d0=$(in_host a cat /sys/class/net/ib0/statistics/tx_dropped)
p0=$(sa_count path_get)
n0=$(sa_count path_no_record)
in_host a ping -c 150 -i 0.2 -W 1 10.9.0.99 >/dev/null 2>&1
d1=$(in_host a cat /sys/class/net/ib0/statistics/tx_dropped)
p1=$(sa_count path_get)
n1=$(sa_count path_no_record)
echo "unknown GID: path_get $p0 -> $p1, path_no_record $n0 -> $n1, tx_dropped $d0 -> $d1"
embedded_only "SA said no record ($n0 -> $n1)" test "$n1" -gt "$n0"
embedded_only "at most 6 PathRecord queries for 30 s of traffic ($((p1 - p0)))" test $((p1 - p0)) -le 6
if [ "$SM_MODE" = opensm ]; then
	check "OpenSM has no PathRecord to the unknown GID" sh -c \
		"! saquery -C sib0 -p 2>/dev/null | grep -qi 'dgid.*fe80::2:c903:a0:63'"
	check "debugfs ib0_path: the unknown GID's path is not complete" sh -c \
		"! awk '/^GID: fe80:0:0:0:2:c903:a0:63\$/ { g = 1; next } /^GID:/ { g = 0 } g && \$1 == \"complete:\" && \$2 == \"yes\" { f = 1 } END { exit !f }' /sys/kernel/debug/ipoib/ib0_path"
fi
check "its packets counted as dropped ($((d1 - d0)) of 150)" test $((d1 - d0)) -ge 100
check "traffic to b still flows" in_host a ping -c 2 -i 0.2 -W 2 10.9.0.2

# --- neighbour removal: state follows the kernel neighbour ---
check "flush a's neighbours" /usr/sbin/ip -n a neigh flush dev ib0
check "ping a -> b after the flush" in_host a ping -c 1 -W 5 10.9.0.2
in_host a ip -s link show ib0

check "unload everything" unload_all
