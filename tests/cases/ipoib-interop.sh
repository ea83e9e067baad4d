#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours/stock stock/ours
# vms: 2
# timeout: 480
# tier: 612 7
# 7-drivers: ours/stock
# 612-drivers: ours/stock
# sm: embedded opensm
# opensm-drivers: ours/stock
#
# Interoperability with the in-tree driver: our ib_ipoib in one VM and the
# stock one in the other (then swapped), over softib's Ethernet transport
# (SM/SA in VM0). ARP, ping, ping6, TCP data there and back (sha256) in
# both directions, and a P_Key child (0x8001) both ways; rdma_cm (UD, SIDR)
# connects each way on ib0 (IPv4, IPv6) and on the child. Then connected
# mode: both connected (60000-byte pings with DF, ping6, TCP both ways),
# mixed (VM1 datagram: ping, ping6, TCP), and VM1 switching to connected
# and back while VM0 streams TCP to it (sha256 equal).
# Under OpenSM, OpenSM runs in VM0 and manages both VMs' ports: its SMPs
# cross the Ethernet transport, VM1's port gets its LID from it and VM1's
# SA queries go to it.
. /tests/lib.sh

ME=$((VM_ID + 1))
PEER=$((2 - VM_ID))
# under OpenSM (in VM0): the default partition and 0x8001 for the child
SM_PARTITIONS='Default=0x7fff, ipoib, mtu=4, defmember=full : ALL=full ;
P1=0x0001, ipoib, mtu=4 : ALL=full ;'

check "eth0 mtu 4200" ip link set eth0 mtu 4200
check "load the IB core" load_ib_core
check "load softib ndevs=0 sm_lid=1" load_softib ndevs=0 sm_lid=1
check "rdma link add sib$VM_ID type softib netdev eth0" rdma link add "sib$VM_ID" type softib netdev eth0
check "barrier: softib bound on both VMs" vm_barrier bound 120
if [ "$SM_MODE" = opensm ]; then
	check "sib$VM_ID ACTIVE with a LID from OpenSM (in VM0)" sm_up "sib$VM_ID"
	if [ "$VM_ID" = 1 ]; then
		check "sib1: the SM is in the other VM (sm_lid $(port_sm_lid sib1), own LID $(port_lid sib1))" \
			sh -c '. /tests/lib.sh; [ "$(port_sm_lid sib1)" != 0 ] && [ "$(port_sm_lid sib1)" != "$(port_lid sib1)" ]'
		check_wait "sminfo from VM1 finds OpenSM master across the Ethernet" 30 \
			sh -c "sminfo -C sib1 | grep -q 'sm lid $(port_sm_lid sib1) .*SMINFO_MASTER'"
		check_wait "saquery from VM1: OpenSM's NodeRecords list both VMs' ports" 30 \
			sh -c "saquery -C sib1 | grep -c 'NodeRecord dump' | grep -qx 2"
	fi
fi

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 exists" 20 test -d /sys/class/net/ib0
check "ib0 addresses" sh -c "/usr/sbin/ip addr add 10.88.0.$ME/24 dev ib0 &&
	/usr/sbin/ip -6 addr add fd88::$ME/64 dev ib0 nodad && /usr/sbin/ip link set ib0 up"
check_wait "ib0 carrier up" 120 sh -c '/usr/sbin/ip -o link show dev ib0 | grep -q LOWER_UP'
check "barrier: ib0 up on both VMs" vm_barrier ib0up 180

check_wait "ping the $([ "$VM_ID" = 0 ] && echo VM1 || echo VM0) driver over ib0" 60 ping -c 1 -W 2 "10.88.0.$PEER"
check "ARP resolved the peer" sh -c "/usr/sbin/ip neigh show 10.88.0.$PEER dev ib0 | grep -q lladdr"
check_wait "ping6 the peer" 60 ping -6 -c 1 -W 2 "fd88::$PEER"
check "2044-byte datagrams with DF pass" ping -c 2 -W 3 -M do -s 2016 "10.88.0.$PEER"
check "5 pings" ping -c 5 -i 0.3 -W 3 "10.88.0.$PEER"

check "TCP echo server on ib0" tcp_echo_serve - 5202
check "barrier: echo servers up" vm_barrier tcpecho 120
# VM0 first, then VM1: one connection at a time; each one carries data
# through both drivers, both ways
for turn in 0 1; do
	if [ "$turn" = "$VM_ID" ]; then
		tcp_echo_check "TCP to the peer and back ($IPOIB_DRIVER connects)" - "10.88.0.$PEER" 5202 4096
	fi
	check "barrier: TCP turn $turn done" vm_barrier "turn$turn" 180
done

# --- rdma_cm across the two drivers (tests/rdmacm/rdmacm_test.ko, UD port
# space, SIDR): each VM listens on its ib0 addresses, then each connects to
# the other in turn. The passive side's driver names the interface of the
# request (ib_client get_net_dev_by_params), the active side's neighbours
# give the peer's GID. ---
RT=/sys/kernel/debug/rdmacm_test
rt() { echo "$*" >$RT/ctl; }
# cm_established ADDR PORT: the connect ends ESTABLISHED with the server's
# QPN and Q_Key (nonzero) in the reply
cm_established() {
	local r
	rt connect "$1" "$2" || return 1
	r=$(cat $RT/result)
	echo "client: $r"
	case $r in *event=ESTABLISHED*) ;; *) return 1 ;; esac
	! echo "$r" | grep -qE ' qpn=0x000000( |$)| qkey=0x00000000( |$)'
}
cm_reqs() { grep -q "^port=$1 reqs=$2 " $RT/servers; }
check "load rdmacm_test (rdma_cm)" modprobe rdmacm_test timeout_ms=2000
check "rdma_cm: listen on 10.88.0.$ME:7001 and [fd88::$ME]:7002" sh -c \
	"echo 'listen 7001 10.88.0.$ME' >$RT/ctl && echo 'listen 7002 fd88::$ME' >$RT/ctl"
check "barrier: rdma_cm listeners up" vm_barrier cmlisten 120
for turn in 0 1; do
	if [ "$turn" = "$VM_ID" ]; then
		check "rdma_cm: $IPOIB_DRIVER connects to 10.88.0.$PEER:7001 (the other driver): established" \
			cm_established "10.88.0.$PEER" 7001
		check "rdma_cm: $IPOIB_DRIVER connects to [fd88::$PEER]:7002: established" \
			cm_established "fd88::$PEER" 7002
	fi
	check "barrier: rdma_cm turn $turn done" vm_barrier "cm$turn" 120
done
check "rdma_cm: the peer's requests reached our listeners (one each)" sh -c \
	"grep -q '^port=7001 reqs=1 ' $RT/servers && grep -q '^port=7002 reqs=1 ' $RT/servers"

# --- a P_Key child (partition 0x8001) across the two drivers ---
if [ "$SM_MODE" = opensm ]; then
	check_wait "OpenSM put 0x8001 in sib$VM_ID's P_Key table" 60 \
		sh -c "grep -qx 0x8001 /sys/class/infiniband/sib$VM_ID/ports/1/pkeys/*"
else
	check "P_Key 0x8001 at index 1 of sib$VM_ID" pkey_set "sib$VM_ID" 1 0x8001
fi
check "child ib0.8001" ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "ib0.8001 address, up" sh -c "/usr/sbin/ip addr add 10.89.0.$ME/24 dev ib0.8001 &&
	/usr/sbin/ip link set ib0.8001 up"
check_wait "ib0.8001 carrier up" 60 sh -c '/usr/sbin/ip -o link show dev ib0.8001 | grep -q LOWER_UP'
check "barrier: children up on both VMs" vm_barrier child 120
check_wait "partition 0x8001: ping the peer's child" 60 ping -c 1 -W 2 "10.89.0.$PEER"
check "rdma_cm: listen on the child's 10.89.0.$ME:7003" rt listen 7003 "10.89.0.$ME"
check "barrier: rdma_cm child listeners up" vm_barrier cmchild 120
for turn in 0 1; do
	if [ "$turn" = "$VM_ID" ]; then
		check "rdma_cm on the child: $IPOIB_DRIVER connects to 10.89.0.$PEER:7003: established" \
			cm_established "10.89.0.$PEER" 7003
	fi
	check "barrier: rdma_cm child turn $turn done" vm_barrier "cmc$turn" 120
done
check "rdma_cm: the peer's request reached the child's listener" cm_reqs 7003 1
check "barrier: children done" vm_barrier childdone 120

# --- connected mode (RFC 4755) across the two drivers: each side's RC
# connection to the other, the other's listener accepts it ---
check "ib0 to connected mode" ip link set ib0 type ipoib mode connected
check "connected: the MTU went to 65520" sh -c '/usr/sbin/ip link show ib0 | grep -q "mtu 65520"'
check "barrier: connected on both VMs" vm_barrier cmmode 120
rc0=$(sib_counter "sib$VM_ID" rc_tx)
check_wait "connected: 60000-byte ping with DF to the peer" 60 \
	ping -c 1 -W 5 -M do -s 60000 "10.88.0.$PEER"
check "connected: 8000-byte ping6 to the peer" ping -6 -c 2 -W 5 -s 8000 "fd88::$PEER"
check "connected: our sends went over RC (rc_tx $rc0 -> $(sib_counter "sib$VM_ID" rc_tx))" \
	test "$(sib_counter "sib$VM_ID" rc_tx)" -ge $((rc0 + 15))
check "TCP echo server on ib0 (connected)" tcp_echo_serve - 5203
check "barrier: connected echo servers up" vm_barrier cmecho 120
for turn in 0 1; do
	if [ "$turn" = "$VM_ID" ]; then
		tcp_echo_check "connected: TCP to the peer and back ($IPOIB_DRIVER connects)" - "10.88.0.$PEER" 5203 4096
	fi
	check "barrier: connected TCP turn $turn done" vm_barrier "cmturn$turn" 180
done
# VM1 back to datagram mode, VM0 stays connected: both still talk (VM0
# over RC if VM1's driver still accepts connections, else over UD)
if [ "$VM_ID" = 1 ]; then
	check "VM1: ib0 back to datagram mode" ip link set ib0 type ipoib mode datagram
	check "VM1: datagram MTU back to 2044" sh -c '/usr/sbin/ip link show ib0 | grep -q "mtu 2044"'
	check "VM1: TCP echo server for the mixed modes" tcp_echo_serve - 5204
fi
check "barrier: mixed modes" vm_barrier cmmixed 120
check_wait "mixed modes: ping the peer" 60 ping -c 1 -W 2 "10.88.0.$PEER"
check "mixed modes: 1000-byte pings" ping -c 3 -i 0.3 -W 3 -s 1000 "10.88.0.$PEER"
check_wait "mixed modes: ping6 the peer (1000 bytes)" 30 ping -6 -c 1 -W 3 -s 1000 "fd88::$PEER"
check "barrier: mixed pings done" vm_barrier cmmixedping 120
if [ "$VM_ID" = 0 ]; then
	tcp_echo_check "mixed modes: TCP from connected VM0 to datagram VM1" - "10.88.0.$PEER" 5204 1024
fi
check "barrier: mixed done" vm_barrier cmmixeddone 180

# --- mode switches while TCP runs: VM0 (connected) streams 32 MiB to VM1's
# echo server; meanwhile VM1 goes to connected and back to datagram, each
# time once more data has arrived; the stream ends with an equal sha256 ---
ib_rx() { cat /sys/class/net/ib0/statistics/rx_bytes; }
rx_grew() { [ "$(ib_rx)" -ge "$1" ]; }
if [ "$VM_ID" = 1 ]; then
	check "VM1: TCP echo server for the switches" tcp_echo_serve - 5206
fi
check "barrier: switch server up" vm_barrier swserve 120
if [ "$VM_ID" = 0 ]; then
	head -c $((32 * 1024 * 1024)) /dev/urandom >/tmp/sw.tx
	rm -f /tmp/sw.rx /tmp/sw.done
	(tcp_echo_client - "10.88.0.$PEER" 5206 /tmp/sw.tx /tmp/sw.rx 240 2>/dev/null
	 echo $? >/tmp/sw.done) </dev/null >/dev/null 2>&1 &
	check_wait "VM0: the stream is under way (bytes echoed)" 30 test -s /tmp/sw.rx
fi
check "barrier: streaming" vm_barrier swstream 120
if [ "$VM_ID" = 1 ]; then
	r=$(ib_rx)
	check_wait "VM1: 256 KiB more of the stream arrived (datagram)" 60 rx_grew $((r + 262144))
	check "VM1: to connected while the stream runs" ip link set ib0 type ipoib mode connected
	r=$(ib_rx)
	check_wait "VM1: 256 KiB more arrived (connected)" 60 rx_grew $((r + 262144))
	check "VM1: back to datagram while the stream runs" ip link set ib0 type ipoib mode datagram
	r=$(ib_rx)
	check_wait "VM1: 256 KiB more arrived (datagram again)" 60 rx_grew $((r + 262144))
fi
check "barrier: switched" vm_barrier switched 180
if [ "$VM_ID" = 0 ]; then
	check_wait "VM0: the stream ended" 240 test -e /tmp/sw.done
	check "mode switches under TCP: 32 MiB echoed, sha256 equal (nc exit $(cat /tmp/sw.done 2>/dev/null), $(wc -c </tmp/sw.rx) bytes back)" \
		sh -c '[ "$(sha256sum </tmp/sw.tx)" = "$(sha256sum </tmp/sw.rx)" ]'
	rm -f /tmp/sw.tx /tmp/sw.rx /tmp/sw.done
fi
check "barrier: switches done" vm_barrier swdone 180

check "barrier: both done" vm_barrier done 180

check "unload everything" unload_all
