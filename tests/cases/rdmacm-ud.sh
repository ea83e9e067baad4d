#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 480
# sm: embedded opensm
# debug-drivers: ours
# debug-sm: embedded
#
# rdma_cm over our interfaces, as RDMA consumers (NFS/RDMA, iSER, RDS, MPI)
# use it: tests/rdmacm/rdmacm_test.ko, a kernel rdma_cm consumer in the UD
# port space (RDMA_PS_UDP, SIDR), resolves an IP address to a GID through
# the interface's neighbours, resolves the route through the SA and
# connects; the server's QP number and Q_Key must reach the client. On the
# passive side rdma_cm asks the IPoIB driver (ib_client
# get_net_dev_by_params) which interface a request belongs to: that picks
# the namespace and the listener. Checked on the port interface and on a
# P_Key child, over IPv4, IPv6 global and IPv6 link-local with a scope id,
# with a specific and a wildcard listener; a listener in another namespace
# is not reached; an address nobody has gives ADDR_ERROR in bounded time;
# deleting the interfaces while ids are bound to them neither hangs nor
# leaks.
. /tests/lib.sh

SM_PARTITIONS='Default=0x7fff, ipoib, mtu=4, defmember=full : ALL=full ;
P1=0x0001, ipoib, mtu=4, rate=7 : ALL=full ;'
RT=/sys/kernel/debug/rdmacm_test
TMO_MS=2000

# rt NS CMD...: one command to rdmacm_test from namespace NS (its ids are
# made there); ip netns exec gives a fresh /sys, so mount debugfs in it
rt() {
	local ns=$1
	shift
	in_host "$ns" sh -c "mount -t debugfs none /sys/kernel/debug 2>/dev/null;
		echo '$*' >$RT/ctl"
}
result() { cat $RT/result; }
srv_line() { grep "^port=$1 " $RT/servers; }
# established NS ADDR PORT: connect from NS; the QPN and Q_Key the client
# got are the ones the server's reply carried (its QP, as it reports)
established() {
	local r s qpn qkey
	rt "$1" connect "$2" "$3" || return 1
	r=$(result)
	echo "client: $r"
	s=$(srv_line "$3")
	echo "server: $s"
	case $r in *event=ESTABLISHED*) ;; *) return 1 ;; esac
	qpn=$(echo "$r" | sed -n 's/.* qpn=\([^ ]*\).*/\1/p')
	qkey=$(echo "$r" | sed -n 's/.* qkey=\([^ ]*\).*/\1/p')
	[ "$qpn" != 0x000000 ] && [ "$qkey" != 0x00000000 ] &&
		echo "$s" | grep -q "qpn=$qpn qkey=$qkey"
}
# refused NS ADDR PORT "EVENT status=N" MAX_MS: the connect ends with
# EVENT and status N within MAX_MS (SIDR status 1: no such service, 2:
# rejected, here by rdma_cm finding no interface or no listener for it)
refused() {
	local r ms
	rt "$1" connect "$2" "$3" || return 1
	r=$(result)
	echo "client: $r"
	echo "$r" | grep -q "event=$4 " || return 1
	ms=$(echo "$r" | sed -n 's/.* ms=\([0-9]*\).*/\1/p')
	[ "${ms:-999999}" -le "$5" ]
}
reqs() { srv_line "$1" | grep -q " reqs=$2 "; }
ll_of() {	# ll_of NS IF: the interface's link-local address once usable
	in_host "$1" ip -6 -o addr show dev "$2" scope link |
		awk '!/tentative/ { sub(/\/.*/, "", $4); print $4; exit }'
}
has_ll() { [ -n "$(ll_of "$1" "$2")" ]; }
has_pkey() { grep -qx 0x8001 /sys/class/infiniband/"$1"/ports/1/pkeys/*; }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
if [ "$SM_MODE" = opensm ]; then
	check_wait "OpenSM put 0x8001 in the P_Key tables" 30 sh -c \
		'grep -qx 0x8001 /sys/class/infiniband/sib0/ports/1/pkeys/* &&
		 grep -qx 0x8001 /sys/class/infiniband/sib1/ports/1/pkeys/*'
else
	for d in sib0 sib1; do
		check "P_Key 0x8001 at index 1 of $d" pkey_set $d 1 0x8001
	done
fi
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check "load rdmacm_test (rdma_cm)" modprobe rdmacm_test timeout_ms=$TMO_MS || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0

check "host a: ib0" make_host a ib0 192.0.2.1/24 2001:db8::1/64
check "host b: ib1" make_host b ib1 192.0.2.2/24 2001:db8::2/64
check "a: ib0.8001" in_host a ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "b: ib1.8001" in_host b ip link add link ib1 name ib1.8001 type ipoib pkey 0x8001
in_host a ip addr add 198.51.100.1/24 dev ib0.8001
in_host a ip -6 addr add 2001:db8:1::1/64 dev ib0.8001 nodad
in_host b ip addr add 198.51.100.2/24 dev ib1.8001
in_host b ip -6 addr add 2001:db8:1::2/64 dev ib1.8001 nodad
in_host a ip link set ib0.8001 up
in_host b ip link set ib1.8001 up
check "host c: a namespace without IB interfaces" sh -c \
	'/usr/sbin/ip netns add c && /usr/sbin/ip -n c link set lo up'
check_wait "carrier on ib0, ib1, ib0.8001, ib1.8001" 30 sh -c \
	'for x in a:ib0 b:ib1 a:ib0.8001 b:ib1.8001; do
		/usr/sbin/ip -n ${x%%:*} -o link show ${x#*:} | grep -q LOWER_UP || exit 1
	done'
check_wait "ping a -> b (IP works underneath)" 30 pings a 192.0.2.2
check_wait "ping a -> b on the child" 30 pings a 198.51.100.2
check_wait "link-local address of ib1 usable" 20 has_ll b ib1
check_wait "link-local address of ib1.8001 usable" 20 has_ll b ib1.8001
ll_b=$(ll_of b ib1)
ll_bc=$(ll_of b ib1.8001)
echo "ib1 $ll_b, ib1.8001 $ll_bc"

# --- the parent interface ---
check "listen in b on 192.0.2.2:7001" rt b listen 7001 192.0.2.2
check "IPv4, ib0 -> ib1: established, server's QPN and Q_Key reach the client" \
	established a 192.0.2.2 7001
check "the server saw one request" reqs 7001 1
check "listen in b on [2001:db8::2]:7002" rt b listen 7002 2001:db8::2
check "IPv6 global, ib0 -> ib1: established" established a 2001:db8::2 7002
check "listen in b on [$ll_b%ib1]:7003" rt b listen 7003 "$ll_b%ib1"
check "IPv6 link-local with scope id, ib0 -> ib1: established" \
	established a "$ll_b%ib0" 7003

# --- the P_Key child ---
check "listen in b on 198.51.100.2:7004 (ib1.8001)" rt b listen 7004 198.51.100.2
check "IPv4, ib0.8001 -> ib1.8001: established" established a 198.51.100.2 7004
check "listen in b on [2001:db8:1::2]:7005" rt b listen 7005 2001:db8:1::2
check "IPv6 global, ib0.8001 -> ib1.8001: established" established a 2001:db8:1::2 7005
check "listen in b on [$ll_bc%ib1.8001]:7006" rt b listen 7006 "$ll_bc%ib1.8001"
check "IPv6 link-local, ib0.8001 -> ib1.8001: established" \
	established a "$ll_bc%ib0.8001" 7006
# a child shares its parent's GUID, so its link-local address too: the
# request's P_Key must pick the child, whose ifindex is not the listener's
if [ "$ll_b" = "$ll_bc" ]; then
	check "a link-local listener bound to ib1 is not reached through ib1.8001" \
		refused a "$ll_b%ib0.8001" 7003 "UNREACHABLE status=2" 20000
else
	skip "a link-local listener bound to ib1 is not reached through ib1.8001" \
		"ib1 and ib1.8001 have different link-local addresses"
fi

# --- wildcard listener ---
check "listen in b on 0.0.0.0:7010" rt b listen 7010 0.0.0.0
check "wildcard: to ib1's address: established" established a 192.0.2.2 7010
check "wildcard: to ib1.8001's address: established" established a 198.51.100.2 7010
check "the wildcard server saw two requests" reqs 7010 2
check "listen in b on [::]:7011" rt b listen 7011 ::
check "IPv6 wildcard: to ib1.8001's address: established" established a 2001:db8:1::2 7011

# --- namespaces ---
check "listen in c (no IB interface) on 0.0.0.0:7020" rt c listen 7020 0.0.0.0
check "listen in a (the client's own) on 0.0.0.0:7021" rt a listen 7021 0.0.0.0
check "a request for b's address does not reach c's listener" \
	refused a 192.0.2.2 7020 "UNREACHABLE status=2" 20000
check "nor a's" refused a 198.51.100.2 7021 "UNREACHABLE status=2" 20000
check "c's and a's listeners saw no request" sh -c \
	"grep -q '^port=7020 reqs=0 ' $RT/servers && grep -q '^port=7021 reqs=0 ' $RT/servers"

# --- nobody has the address ---
check "an address nobody has: ADDR_ERROR within the resolve timeout" \
	refused a 192.0.2.99 7001 "ADDR_ERROR status=-110" $((TMO_MS + 3000))
check "on the child too" \
	refused a 198.51.100.99 7004 "ADDR_ERROR status=-110" $((TMO_MS + 3000))
check "a port nobody listens on: UNREACHABLE" \
	refused a 192.0.2.2 7099 "UNREACHABLE status=1" 20000

# --- umcast: a group that user space joined through the SA is left to it.
# rdmacm_test joins in the IPoIB port space, which uses IPoIB's MGID for a
# group, as a user-space joiner through rdma_cm does. With umcast off the
# driver joins such a group for the stack as well (positive control); with
# umcast on it does not, as the in-tree driver does. ---
mcg_has() {	# mcg_has IFNAME MGID: the driver's group table lists MGID
	awk -v m="$2" '$1 == "GID:" && $2 == m { f = 1 } END { exit !f }' \
		"/sys/kernel/debug/ipoib/$1_mcg"
}
no_mcg() { ! mcg_has "$@"; }
umcast() { in_host a sh -c "echo $1 >/sys/class/net/ib0/umcast"; }
check "umcast 0 on ib0" umcast 0
check "rdma_cm joins 239.5.5.6 from ib0" rt a mjoin 239.5.5.6 192.0.2.1
check "the join completed (MULTICAST_JOIN)" sh -c "grep -q '^event=MULTICAST_JOIN status=0 ' $RT/result"
check "the stack joins 239.5.5.6 on ib0 too" in_host a ip addr add 239.5.5.6/32 dev ib0 autojoin
check_wait "umcast 0: the driver joined 239.5.5.6 as well" 20 mcg_has ib0 ff12:401b:ffff:0:0:0:f05:506
check "umcast 1 on ib0" umcast 1
check "rdma_cm joins 239.5.5.5 from ib0" rt a mjoin 239.5.5.5 192.0.2.1
check "the join completed (MULTICAST_JOIN)" sh -c "grep -q '^event=MULTICAST_JOIN status=0 ' $RT/result"
check "the stack joins 239.5.5.5 and 239.5.5.7 on ib0" sh -c \
	'/usr/sbin/ip -n a addr add 239.5.5.5/32 dev ib0 autojoin &&
	 /usr/sbin/ip -n a addr add 239.5.5.7/32 dev ib0 autojoin'
check_wait "umcast 1: the driver joined 239.5.5.7, which nobody else had" 20 \
	mcg_has ib0 ff12:401b:ffff:0:0:0:f05:507
check "umcast 1: the driver left 239.5.5.5 to rdma_cm" no_mcg ib0 ff12:401b:ffff:0:0:0:f05:505
check "umcast 0 on ib0 again" umcast 0
check "release the joined ids (they leave)" rt a release
in_host a ip addr del 239.5.5.5/32 dev ib0
in_host a ip addr del 239.5.5.6/32 dev ib0
in_host a ip addr del 239.5.5.7/32 dev ib0

# --- interfaces deleted while ids are bound to them ---
check "hold an id resolved through ib0.8001 -> ib1.8001" rt a hold 198.51.100.2 7004
check "deleting ib1.8001 with a listener bound to it returns" \
	timeout 30 /usr/sbin/ip -n b link del ib1.8001
check "deleting ib0.8001 with a resolved id bound to it returns" \
	timeout 30 /usr/sbin/ip -n a link del ib0.8001
check "the deleted child's subnet is gone: rdma_resolve_addr says ENETUNREACH" \
	refused a 198.51.100.2 7004 "CALL_FAILED status=-101" 1000
check "the parent still connects" established a 192.0.2.2 7001
check "release the held id" rt a release
for p in 7001 7002 7003 7004 7005 7006 7010 7011 7020 7021; do
	rt b unlisten $p 2>/dev/null
done
check "every listener is gone" sh -c "! grep -q . $RT/servers"
check "unload rdmacm_test" rmmod rdmacm_test
check "unload everything" unload_all
