#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock ours
# debug-drivers: ours
# vms: 1
# boot: shared
# timeout: 600
# tier: debug
#
# softib's reliable connected QPs and SRQs (Documentation/softib.rst),
# proven with the stock driver's connected mode (RFC 4755), and our
# connected mode on them (ipoib_cm.c): ib0 and ib1 in connected mode with
# a 65520-byte MTU; ping, a 60000-byte ping with DF both ways (one message
# of 15 RC packets, acknowledged once), IPv6, 4 MiB echoed over TCP with an
# equal sha256 and iperf3; softib counted RC packets, ACKs and no NAK or
# retransmission on a clean fabric; a P_Key child made in connected mode;
# the peer's interface down and up, a port flap and an SM restart
# (connections come back); a to datagram and back while 8 MiB go over TCP
# (sha256 equal); mode switches to datagram and back while pings go on;
# RNR: with the SRQ starved the responder answers RNR NAK and the stock
# driver, which asks for no RNR retries, sees its connection fail and
# makes a new one; 3% loss and reordering: NAK-sequence errors are sent,
# stock's sends (retry_count 0) fail with retry exceeded, and connections
# come back once the loss stops; the same without
# SRQs (softib srq=0: the stock driver's per-connection receive rings);
# everything unloads.
# Ours asks for 6 retries and 6 RNR retries: there a starved receive queue
# only delays a message (no send fails), and under 5% loss and reordering
# go-back-N recovers and a TCP stream completes during the loss. The
# device is removed with connections up (rmmod softib under ib_ipoib). Passive
# connections idle for cm_rx_idle seconds are closed, and the sender's
# connection with them; the next packet makes a new one. The connections'
# CQ overflows under a TCP stream: the sends it never completes are freed
# by the driver, and connections come back.
. /tests/lib.sh

cnt() { sib_counter "$1" "$2"; }
mode_is() { [ "$(in_host "$1" cat "/sys/class/net/$2/mode")" = "$3" ]; }
# pmtu_b: the PMTU a's route to b learnt ("mtu N"), empty if none
pmtu_b() { in_host a ip route get 10.11.0.2 | grep -o 'mtu [0-9]*'; }
no_pmtu_b() { [ -z "$(pmtu_b)" ]; }
big_ping() { in_host "$1" ping -c 1 -W 5 -M "do" -s 60000 "$2" >/dev/null 2>&1; }
srqs() { rdma res show srq 2>/dev/null | grep -c "srqn"; }
rc_qps() { rdma res show qp 2>/dev/null | grep -c "type RC"; }
iperf_serve() {
	in_host "$1" iperf3 -s -D -p 5201 >/dev/null 2>&1
	wait_for 10 sh -c "/usr/sbin/ip netns exec $1 ss -ltn | grep -q :5201"
}
bulk() { in_host "$1" timeout 20 iperf3 -c "$2" -p 5201 -t 2 >/dev/null 2>&1; }
connected() {
	local ns ifn
	for ns in a b; do
		ifn=ib0
		[ $ns = b ] && ifn=ib1
		in_host $ns ip link set $ifn type ipoib mode connected || return 1
		in_host $ns ip link set $ifn mtu 65520 || return 1
	done
}

# setup SRQ: load everything, two hosts in connected mode
setup() {
	check "load the IB core" load_ib_core
	check "load softib ndevs=2 srq=$1" load_softib ndevs=2 srq="$1"
	check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
	check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
	check "host a (ib0)" make_host a ib0 10.11.0.1/24 fd00:11::1/64
	check "host b (ib1)" make_host b ib1 10.11.0.2/24 fd00:11::2/64
	check_wait "carrier on ib0" 30 _t_has_carrier a ib0
	check_wait "carrier on ib1" 30 _t_has_carrier b ib1
	check "mode connected, MTU 65520 on both" connected
	check "sysfs mode reads connected" mode_is a ib0 connected
	check "ip -d link shows mode connected" sh -c '/usr/sbin/ip -n a -d link show ib0 | grep -q "mode connected"'
	check "MTU is 65520" sh -c '/usr/sbin/ip -n a link show ib0 | grep -q "mtu 65520"'
}

# traffic SRQ: what connected mode must carry
traffic() {
	local tx0 ack0
	tx0=$(cnt sib0 rc_tx)
	ack0=$(cnt sib1 rc_ack)
	check_wait "[srq=$1] ping a -> b" 20 pings a 10.11.0.2
	check_wait "[srq=$1] ping b -> a" 20 pings b 10.11.0.1
	check_wait "[srq=$1] 60000-byte ping with DF a -> b" 30 big_ping a 10.11.0.2
	check_wait "[srq=$1] 60000-byte ping with DF b -> a" 30 big_ping b 10.11.0.1
	check "[srq=$1] softib sent RC packets from sib0 ($tx0 -> $(cnt sib0 rc_tx))" \
		test "$(cnt sib0 rc_tx)" -ge $((tx0 + 15))
	check "[srq=$1] sib1 acknowledged them ($ack0 -> $(cnt sib1 rc_ack))" \
		test "$(cnt sib1 rc_ack)" -gt "$ack0"
	check_wait "[srq=$1] ping6 a -> b (8000 bytes)" 20 \
		in_host a ping -6 -c 1 -W 5 -s 8000 fd00:11::2
	tcp_echo_serve b 7001
	tcp_echo_check "[srq=$1] connected" a 10.11.0.2 7001 4096
	iperf_serve b
	check "[srq=$1] iperf3 TCP a -> b for 2 s" bulk a 10.11.0.2
	kill $(ip netns pids b) 2>/dev/null	# iperf3 -s (busybox has no pkill)
	check "[srq=$1] clean fabric: no NAK" test "$(cnt sib0 rc_nak)$(cnt sib1 rc_nak)" = 00
	# The ACK timeout is 134 ms (softib's SA: packet life 2^14 x 4 us);
	# a KASAN kernel under TCG at full load may not run the responder for
	# that long (CI saw one timeout in a 2-s iperf3 once): there the count
	# measures the host, not softib.
	case $KVER in
	*debug*) skip "[srq=$1] clean fabric: no retransmission, no timeout" \
		"debug kernel: the host's speed, not softib's RC (retrans $(cnt sib0 rc_retrans), timeouts $(cnt sib0 rc_timeout))" ;;
	*) check "[srq=$1] clean fabric: no retransmission, no timeout" \
		test "$(cnt sib0 rc_retrans)$(cnt sib1 rc_retrans)$(cnt sib0 rc_timeout)" = 000 ;;
	esac
	check "[srq=$1] every RC receive was accepted in order (no rc_drop)" \
		test "$(cnt sib0 rc_drop)$(cnt sib1 rc_drop)" = 00
}

setup 1
check "srq=1: $IPOIB_DRIVER made its SRQs (rdma res: $(srqs))" test "$(srqs)" -ge 2
traffic 1

# --- a P_Key child made in connected mode (rtnetlink), both ways ---
check "P_Key 0x8001 at index 1 of sib0" pkey_set sib0 1 0x8001
check "P_Key 0x8001 at index 1 of sib1" pkey_set sib1 1 0x8001
check "child ib0.8001 in connected mode (ip link add ... mode connected)" \
	in_host a ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001 mode connected
check "child ib1.8001 in connected mode" \
	in_host b ip link add link ib1 name ib1.8001 type ipoib pkey 0x8001 mode connected
check "child: ip -d link reads mode connected, MTU 65520" sh -c \
	'/usr/sbin/ip -n a -d link show ib0.8001 | grep -q "mode connected" &&
	 /usr/sbin/ip -n a link show ib0.8001 | grep -q "mtu 65520"'
check "children addressed and up" sh -c \
	'/usr/sbin/ip -n a addr add 10.12.0.1/24 dev ib0.8001 && /usr/sbin/ip -n a link set ib0.8001 up &&
	 /usr/sbin/ip -n b addr add 10.12.0.2/24 dev ib1.8001 && /usr/sbin/ip -n b link set ib1.8001 up'
check_wait "child: 60000-byte ping with DF a -> b on partition 0x8001" 30 big_ping a 10.12.0.2
check_wait "child: 60000-byte ping with DF b -> a" 30 big_ping b 10.12.0.1
check "children deleted" sh -c \
	'/usr/sbin/ip -n a link del ib0.8001 && /usr/sbin/ip -n b link del ib1.8001'

# --- the peer's interface goes down and up: its connections go (DREQ),
# the sender's come back on their own ---
check_wait "before: 60000-byte ping a -> b" 30 big_ping a 10.11.0.2
check "ib1 down" in_host b ip link set ib1 down
check "ib1 up" in_host b ip link set ib1 up
check_wait "carrier on ib1 again" 30 _t_has_carrier b ib1
check_wait "after the peer's restart: 60000-byte ping a -> b" 60 big_ping a 10.11.0.2
check_wait "after the peer's restart: 60000-byte ping b -> a" 60 big_ping b 10.11.0.1


# --- mode switches while pings run ---
in_host a ping -i 0.2 -c 100000 10.11.0.2 >/dev/null 2>&1 &
pinger=$!
check "ib0 to datagram" in_host a ip link set ib0 type ipoib mode datagram
check "sysfs mode reads datagram" mode_is a ib0 datagram
check "datagram: MTU back to 2044" sh -c '/usr/sbin/ip -n a link show ib0 | grep -q "mtu 2044"'
check_wait "datagram a <-> connected b: ping a -> b" 20 pings a 10.11.0.2
check_wait "datagram a <-> connected b: ping b -> a" 20 pings b 10.11.0.1
check "ib0 back to connected through sysfs, MTU 65520" sh -c \
	'/usr/sbin/ip netns exec a sh -c "echo connected >/sys/class/net/ib0/mode" && /usr/sbin/ip -n a link set ib0 mtu 65520'
check_wait "connected again: 60000-byte ping a -> b" 30 big_ping a 10.11.0.2
kill $pinger 2>/dev/null
wait $pinger 2>/dev/null
# in_host's ping outlives the shell killed above: end what runs in host a
kill $(ip netns pids a) 2>/dev/null
check_wait "the pinger is gone (no process in host a)" 10 sh -c '[ -z "$(ip netns pids a)" ]'

if [ "$IPOIB_DRIVER" = stock ]; then
# --- RNR: the SRQ looks empty for the next 40 messages ---
r0=$(cnt sib1 rc_rnr_nak)
x0=$(cnt sib0 rc_retry_exc)
echo 40 >"$(sib sib1 rx_starve)"
in_host a ping -c 20 -i 0.2 -W 1 10.11.0.2 >/dev/null 2>&1
check "rx_starve: sib1 answered RNR NAK ($r0 -> $(cnt sib1 rc_rnr_nak))" \
	test "$(cnt sib1 rc_rnr_nak)" -gt "$r0"
check "rx_starve: stock asks for 0 RNR retries, the send failed (rc_retry_exc $x0 -> $(cnt sib0 rc_retry_exc))" \
	test "$(cnt sib0 rc_retry_exc)" -gt "$x0"
echo 0 >"$(sib sib1 rx_starve)"
check_wait "after RNR: a new connection carries a 60000-byte ping" 60 big_ping a 10.11.0.2

# --- loss and reordering on RC ---
# The stock driver asks ib_cm for retry_count 0 (the RFC draft warns against
# retries): the first NAK-sequence error or ACK timeout fails its send with
# IB_WC_RETRY_EXC_ERR and it connects again. Go-back-N retransmission with
# retries is proven by rdmacm-rc (retry_count 7). Finding: a 2 MiB TCP echo
# over stock connected mode at 3% loss did not finish in 120 s (197 KiB).
x0=$(cnt sib0 rc_retry_exc)
echo 3 >"$SIB_DEBUGFS/loss_pct"
echo 3 >"$SIB_DEBUGFS/reorder_pct"
in_host a ping -c 30 -i 0.2 -W 1 -s 60000 10.11.0.2 >/dev/null 2>&1
echo 0 >"$SIB_DEBUGFS/loss_pct"
echo 0 >"$SIB_DEBUGFS/reorder_pct"
grep -E '^(rc_|drop_fault|reorder_fault)' "$(sib sib0 counters)" "$(sib sib1 counters)"
check "loss: the responder sent NAK-sequence errors (rc_nak $(cnt sib1 rc_nak))" \
	test "$(cnt sib1 rc_nak)" -gt 0
check "loss: stock's sends failed with retry exceeded ($x0 -> $(cnt sib0 rc_retry_exc))" \
	test "$(cnt sib0 rc_retry_exc)" -gt "$x0"
check_wait "after loss: 60000-byte ping a -> b" 60 big_ping a 10.11.0.2
tcp_echo_serve b 7002
tcp_echo_check "after loss" a 10.11.0.2 7002 1024

else
# --- RNR: ours retries; 4 starved deliveries delay one ping, none fails ---
r0=$(cnt sib1 rc_rnr_nak)
x0=$(cnt sib0 rc_retry_exc)
echo 4 >"$(sib sib1 rx_starve)"
check "rx_starve 4: a 60000-byte ping still gets through" big_ping a 10.11.0.2
check "rx_starve: sib1 answered RNR NAK ($r0 -> $(cnt sib1 rc_rnr_nak))" \
	test "$(cnt sib1 rc_rnr_nak)" -gt "$r0"
check "rx_starve: ours retried, no send failed (rc_retry_exc $x0 -> $(cnt sib0 rc_retry_exc))" \
	test "$(cnt sib0 rc_retry_exc)" = "$x0"
echo 0 >"$(sib sib1 rx_starve)"
# 12 starved deliveries: one message is refused 7 times, its send fails
# (RNR retries exceeded); the next packets make a new connection, and no
# ICMP "fragmentation needed" shrank the route's PMTU meanwhile
x0=$(cnt sib0 rc_retry_exc)
echo 12 >"$(sib sib1 rx_starve)"
in_host a ping -c 1 -W 10 -s 60000 10.11.0.2 >/dev/null 2>&1
check_wait "rx_starve 12: the send failed (rc_retry_exc $x0 -> $(cnt sib0 rc_retry_exc))" 20 \
	sib_counter_ge sib0 rc_retry_exc $((x0 + 1))
echo 0 >"$(sib sib1 rx_starve)"
check_wait "after a failed send: 60000-byte pings with DF get through again" 20 big_ping a 10.11.0.2
check "no PMTU below 65520 was learnt for b" no_pmtu_b

# --- loss and reordering on RC: go-back-N, the stream completes ---
x0=$(cnt sib0 rc_retry_exc)
t0=$(cnt sib0 rc_retrans)
echo 5 >"$SIB_DEBUGFS/loss_pct"
echo 5 >"$SIB_DEBUGFS/reorder_pct"
tcp_echo_serve b 7002
tcp_echo_check "5% loss and reordering: TCP over RC" a 10.11.0.2 7002 1024
in_host a ping -c 10 -i 0.2 -W 2 -s 60000 10.11.0.2 >/dev/null 2>&1
echo 0 >"$SIB_DEBUGFS/loss_pct"
echo 0 >"$SIB_DEBUGFS/reorder_pct"
grep -E '^(rc_|drop_fault|reorder_fault)' "$(sib sib0 counters)" "$(sib sib1 counters)"
check "loss: the responder sent NAK-sequence errors (rc_nak $(cnt sib1 rc_nak))" \
	test "$(cnt sib1 rc_nak)" -gt 0
check "loss: ours retransmitted (rc_retrans $t0 -> $(cnt sib0 rc_retrans))" \
	test "$(cnt sib0 rc_retrans)" -gt "$t0"
# A send fails only after 7 ACK timeouts in a row; on the debug kernel,
# 5-10 times slower, that happens (the 268 ms timeout ib_cm computes is
# short there): then the next packet makes a new connection, and the
# 60000-byte ping (whose route must not have learnt a UD PMTU meanwhile)
# proves it.
echo "loss: sends that failed after 6 retries: $(($(cnt sib0 rc_retry_exc) - x0))"
check_wait "after loss: 60000-byte ping a -> b" 30 big_ping a 10.11.0.2
# --- idle passive connections are closed (cm_rx_idle), a peer connects again ---
P=/sys/module/ib_ipoib/parameters/cm_rx_idle
check_wait "connections exist (RC QPs: $(rc_qps))" 30 sh -c \
	'/usr/sbin/ip netns exec a ping -c 1 -W 5 -s 60000 10.11.0.2 >/dev/null && [ "$(rdma res show qp | grep -c "type RC")" -ge 2 ]'
check "cm_rx_idle=2" sh -c "echo 2 >$P"
check_wait "idle: the passive connections were closed, the senders' followed (no RC QP left)" 30 \
	sh -c 'n=$(rdma res show qp | grep "type RC"); echo "$n"; [ -z "$n" ]'
check "cm_rx_idle back to 512" sh -c "echo 512 >$P"
check_wait "after the idle close: 60000-byte ping a -> b over a new connection" 30 big_ping a 10.11.0.2
check "ethtool -S: RC packets counted on ib0 ($(in_host a ethtool -S ib0 | grep rc_tx_packets))" \
	sh -c '/usr/sbin/ip netns exec a ethtool -S ib0 | grep -qE "rc_tx_packets: [1-9]"'

# --- the connections' CQ overflows while sends are in flight: a CQ in
# error completes nothing, not even as flushed, so the restart that
# follows must free the sends the HCA never gave back itself (before,
# their skbs leaked; kmemleak on the debug tier did not report that leak,
# so the log line below only proves the path is taken). b's port is
# stalled first: its ACKs wait in its queue, so a's sends are surely
# outstanding when the overflow comes (a stream alone may have none at
# that instant: CI saw it once). The stall ends as soon as the overflow is
# armed, well within a's retry budget; the first ACK then makes the
# completion that overflows a's CQ (before, a ping from b through a
# stalled a did it, and on a slow debug kernel the stall outlasted the
# retries: the connections failed first, CI once) ---
dmesg_mark cqovf
o0=$(cnt sib0 cq_overflow)
iperf_serve b
(in_host a timeout 60 iperf3 -c 10.11.0.2 -p 5201 -t 40 </dev/null >/dev/null 2>&1) </dev/null >/dev/null 2>&1 &
t0=$(cnt sib0 rc_tx)
check_wait "a TCP stream over RC under way (rc_tx grows by 500)" 30 sib_counter_ge sib0 rc_tx $((t0 + 500))
# In one breath: a's retry budget is 7 ACK timeouts of 134 ms, less than
# one poll of check_wait on the debug kernel.
q=$(sib sib1 txq_len) stall=$(sib sib1 send_stall_ms) ovf=$(sib sib0 fail_cq_overflow)
stalled=0 i=0
echo 20000 >"$stall"
while [ $i -lt 5000 ] && read -r stalled <"$q" && [ "$stalled" = 0 ]; do
	i=$((i + 1))
done
echo 1 >"$ovf"
echo 0 >"$stall"
check "sib1 stalled: its ACKs waited in its queue ($stalled)" test "$stalled" -gt 0
check_wait "fail_cq_overflow: sib0 counted it (cq_overflow)" 30 sib_counter_ge sib0 cq_overflow $((o0 + 1))
check_wait "fail_cq_overflow: the connected mode CQ error is logged" 10 \
	logged 'connected mode CQ error'
check_wait "fail_cq_overflow: the sends never completed were freed by the driver (logged)" 30 \
	logged 'sends to qpn .* not flushed'
dmesg_since_mark | grep -E "CQ error|not flushed|did not drain"
kill $(ip netns pids a) $(ip netns pids b) 2>/dev/null
check_wait "the stream's client and server are gone" 10 sh -c '[ -z "$(ip netns pids a)$(ip netns pids b)" ]'
check_wait "after the CQ overflow: 60000-byte ping a -> b over a new connection" 60 big_ping a 10.11.0.2
# while connected mode restarted, a's packets too big for UD were dropped;
# an ICMP "fragmentation needed" would have held b's PMTU at 2044 for
# 10 minutes (before: every 60000-byte ping with DF failed afterwards)
check "after the CQ overflow: no PMTU below 65520 was learnt for b" no_pmtu_b
fi

# --- fabric events with connections up: a port flap, an SM restart ---
echo down >"$(sib sib1 state)"
check_wait "port sib1 down: no carrier on ib1" 20 sh -c '! /usr/sbin/ip -n b -o link show ib1 | grep -q LOWER_UP'
echo up >"$(sib sib1 state)"
check_wait "port sib1 up: carrier on ib1" 30 _t_has_carrier b ib1
check_wait "after the port flap: 60000-byte ping a -> b" 60 big_ping a 10.11.0.2
check_wait "after the port flap: 60000-byte ping b -> a" 60 big_ping b 10.11.0.1
echo 1 >"$SIB_DEBUGFS/sm_restart"
check_wait "after an SM restart: 60000-byte ping a -> b" 60 big_ping a 10.11.0.2
tcp_echo_serve b 7011
tcp_echo_check "after the SM restart" a 10.11.0.2 7011 1024

# --- a mode switch while TCP runs: a to datagram and back, the stream
# goes on (the peer learns the UD MTU from an ICMP, then RC again) ---
head -c $((8 * 1024 * 1024)) /dev/urandom >/tmp/cm.tx
rm -f /tmp/cm.rx /tmp/cm.done /tmp/cm.gate
tcp_echo_serve b 7012
# the second half of the stream waits for the switch (tcp_echo_client's gate)
(tcp_echo_client a 10.11.0.2 7012 /tmp/cm.tx /tmp/cm.rx 240 /tmp/cm.gate 2>/dev/null
 echo $? >/tmp/cm.done) </dev/null >/dev/null 2>&1 &
check_wait "TCP stream under way (bytes echoed)" 30 test -s /tmp/cm.rx
check "while TCP runs: ib0 to datagram" in_host a ip link set ib0 type ipoib mode datagram
cm0=$(wc -c </tmp/cm.rx)
[ "$cm0" -lt $((4 * 1024 * 1024)) ] || cm0=$((4 * 1024 * 1024))
touch /tmp/cm.gate
check_wait "while TCP runs: more bytes echoed in datagram mode (> $cm0)" 30 \
	sh -c "[ \$(wc -c </tmp/cm.rx) -gt $cm0 ]"
check "while TCP runs: ib0 back to connected" in_host a ip link set ib0 type ipoib mode connected
check_wait "the stream ended" 240 test -e /tmp/cm.done
check "mode switches under TCP: 8 MiB echoed, sha256 equal (nc exit $(cat /tmp/cm.done), $(wc -c </tmp/cm.rx) bytes back)" sh -c \
	'[ "$(sha256sum </tmp/cm.tx)" = "$(sha256sum </tmp/cm.rx)" ]'
rm -f /tmp/cm.tx /tmp/cm.rx /tmp/cm.done /tmp/cm.gate
# Stock finding (Documentation/testing.rst, timing-dependent): a segment
# built for connected mode that reaches a neighbour still without a
# connection goes by UD, is too big for it and gets a's own TCP an ICMP
# "fragmentation needed" with 2044, which holds b's PMTU for 10 minutes.
# For stock the case records it and makes IPv4 forget the learnt PMTU
# (ip route flush cache bumps the exceptions' generation), as its
# administrator would have to; for ours it is a failure.
if [ "$IPOIB_DRIVER" = stock ] && ! no_pmtu_b; then
	skip "after the mode switches: no PMTU below 65520 was learnt for b" \
		"stock finding: $(pmtu_b) learnt after a UD send of a segment too big for it"
	in_host a ip route flush cache
	check_wait "stock: ip route flush cache forgot the learnt PMTU" 10 no_pmtu_b
else
	check "after the mode switches: no PMTU below 65520 was learnt for b" no_pmtu_b
fi
check_wait "connections up before the device goes" 30 big_ping a 10.11.0.2
check "device removal with connections up (rmmod softib, ib_ipoib stays)" rmmod softib
check "ib0 and ib1 went with it" sh -c '! /usr/sbin/ip -n a link show ib0 2>/dev/null && ! /usr/sbin/ip -n b link show ib1 2>/dev/null'
check "unload ib_ipoib" unload_ipoib
check "unload everything" unload_all

# --- the same without SRQs ---
setup 0
check "srq=0: no SRQ exists (rdma res: $(srqs))" test "$(srqs)" -eq 0
traffic 0
check "unload everything (srq=0)" unload_all
