#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 480
# tier: 612
#
# The stateless offloads of a ConnectX HCA, as softib offers them (UD IP
# checksum and UD LSO, Documentation/softib.rst), used by the driver:
# ethtool -k shows them on for the port interface and a P_Key child; TCP
# and UDP over them arrive with correct checksums at a receiver that checks
# them itself (rx-checksumming off: the stack verifies, InCsumErrors stays
# 0, the data's sha256 is equal), and softib counted checksums filled, LSO
# work requests and their segments, and no bad checksum; ethtool -K turns
# TSO and TX checksumming off and on again (softib's counters stop and
# start); LSO work requests with a bad mss or header length complete in
# error, are counted, and TCP recovers; and a peer HCA without any offload
# (softib plain_lids) interoperates with one that has them.
. /tests/lib.sh

et() { local ns=$1; shift; in_host "$ns" ethtool "$@"; }
# feature_is NS IF NAME VALUE: VALUE is "on", "off" or "off [fixed]"
feature_is() { [ "$(et "$1" -k "$2" | awk -v n="$3:" '$1 == n { $1 = ""; print substr($0, 2); exit }')" = "$4" ]; }
# snmp NS PROTO FIELD: a counter of /proc/net/snmp in NS (Tcp InCsumErrors)
snmp() {
	in_host "$1" cat /proc/net/snmp | awk -v p="$2:" -v f="$3" '
		$1 == p && !h { for (i = 2; i <= NF; i++) if ($i == f) c = i; h = 1; next }
		$1 == p && h { print $c + 0; exit }'
}
cnt() { sib_counter "$1" "$2"; }
grew() { [ "$(cnt "$1" "$2")" -gt "$3" ]; }
tx_errors() { in_host "$1" cat "/sys/class/net/$2/statistics/tx_errors"; }
# iperf_serve NS: an iperf3 server in NS; bulk NS ADDR: 1 s of iperf3 TCP
# from NS to it (large writes: TCP hands the driver TSO skbs far more often
# than the echo's small ones do)
iperf_serve() {
	in_host "$1" iperf3 -s -D -p 5201 >/dev/null 2>&1
	wait_for 10 sh -c "/usr/sbin/ip netns exec $1 ss -ltn | grep -q :5201"
}
bulk() { in_host "$1" timeout 15 iperf3 -c "$2" -p 5201 -t 1 >/dev/null 2>&1; }

check "load the IB core" load_ib_core
check "load softib ndevs=2 (offloads on: the default)" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1

# --- what ethtool -k shows ---
et a -k ib0
for f in rx-checksumming tx-checksum-ipv4 scatter-gather tx-tcp-segmentation; do
	check "ethtool -k ib0: $f on" feature_is a ib0 $f on
done
check "ethtool -k ib0: tx-checksum-ipv6 off [fixed] (the HCA has none)" \
	feature_is a ib0 tx-checksum-ipv6 "off [fixed]"
ip -n a link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "child ib0.8001 created" in_host a test -d /sys/class/net/ib0.8001
check "ethtool -k ib0.8001: tx-checksum-ipv4 on" feature_is a ib0.8001 tx-checksum-ipv4 on
check "ethtool -k ib0.8001: tx-tcp-segmentation on" feature_is a ib0.8001 tx-tcp-segmentation on
ip -n a link del ib0.8001

check_wait "ping a -> b" 30 pings a 10.9.0.2
check_wait "ping6 a -> b" 30 pings a fd00:9::2

# --- offloads in use, checked by a receiver that verifies in software ---
check "ethtool -K ib1 rx off: b checks checksums itself" et b -K ib1 rx off
check "ethtool -k ib1: rx-checksumming off" feature_is b ib1 rx-checksumming off
lso0=$(cnt sib0 tx_lso)
seg0=$(cnt sib0 tx_lso_segs)
cs0=$(cnt sib0 tx_csum)
ok0=$(cnt sib0 rx_csum_ok)
bad1=$(cnt sib1 rx_csum_bad)
tce=$(snmp b Tcp InCsumErrors)
check "iperf3 server in b" iperf_serve b
check "1 s of iperf3 TCP a -> b" bulk a 10.9.0.2
tcp_echo_serve b 5202
tcp_echo_check "TCP a -> b -> a, offloads on" a 10.9.0.2 5202 4096
lso=$(($(cnt sib0 tx_lso) - lso0))
seg=$(($(cnt sib0 tx_lso_segs) - seg0))
check "a sent LSO work requests ($lso), cut into more segments ($seg)" \
	test "$lso" -gt 0 -a "$seg" -gt "$lso"
check "a's HCA filled checksums ($(($(cnt sib0 tx_csum) - cs0)) sends)" grew sib0 tx_csum "$cs0"
check "a's HCA verified received checksums (rx_csum_ok)" grew sib0 rx_csum_ok "$ok0"
check "no bad checksum reached b's HCA" test "$(cnt sib1 rx_csum_bad)" = "$bad1"
check "b's TCP saw no checksum error" test "$(snmp b Tcp InCsumErrors)" = "$tce"
tcp_echo_serve b 5203
tcp_echo_check "TCP over IPv6 (no offload: the stack checksums and segments)" a fd00:9::2 5203 1024

uce=$(snmp b Udp InCsumErrors)
udi=$(snmp b Udp InDatagrams)
cs0=$(cnt sib0 tx_csum)
udp_loss_check "UDP a -> b with checksum offload" a b 10.9.0.2 5201 5 -b 5M -t 2 -l 1200
check "UDP datagrams arrived at b ($(($(snmp b Udp InDatagrams) - udi)))" \
	test "$(snmp b Udp InDatagrams)" -gt "$((udi + 100))"
check "a's HCA filled the UDP checksums (tx_csum +$(($(cnt sib0 tx_csum) - cs0)))" \
	test "$(cnt sib0 tx_csum)" -gt "$((cs0 + 100))"
check "b's UDP saw no checksum error" test "$(snmp b Udp InCsumErrors)" = "$uce"

# --- ethtool -K toggles ---
check "ethtool -K ib0 tso off" et a -K ib0 tso off
check "ethtool -k ib0: tx-tcp-segmentation off" feature_is a ib0 tx-tcp-segmentation off
lso0=$(cnt sib0 tx_lso)
check "1 s of iperf3 TCP a -> b, TSO off" bulk a 10.9.0.2
tcp_echo_serve b 5204
tcp_echo_check "TCP a -> b -> a, TSO off" a 10.9.0.2 5204 2048
check "no LSO work request from a with TSO off" test "$(cnt sib0 tx_lso)" = "$lso0"
check "ethtool -K ib0 tx off" et a -K ib0 tx off
check "ethtool -k ib0: tx-checksum-ipv4 off" feature_is a ib0 tx-checksum-ipv4 off
cs0=$(cnt sib0 tx_csum)
tcp_echo_serve b 5205
tcp_echo_check "TCP a -> b -> a, TX checksumming off" a 10.9.0.2 5205 1024
check "no checksum filled by a's HCA with tx off" test "$(cnt sib0 tx_csum)" = "$cs0"
check "ethtool -K ib0 tx on tso on" et a -K ib0 tx on tso on
check "ethtool -k ib0: tx-tcp-segmentation on again" feature_is a ib0 tx-tcp-segmentation on
check "1 s of iperf3 TCP a -> b, offloads on again" bulk a 10.9.0.2
tcp_echo_serve b 5206
tcp_echo_check "TCP a -> b -> a, offloads on again" a 10.9.0.2 5206 1024
check "LSO work requests again" grew sib0 tx_lso "$lso0"
check "b's TCP still saw no checksum error" test "$(snmp b Tcp InCsumErrors)" = "$tce"

# --- LSO work requests the HCA refuses ---
# The next N LSO WRs of sib0 read as mss 0, then as a header one byte
# short of the TCP header's end: each completes in error (tx_lso_err) and
# stops the UD QP's send queue in SQE, as on hardware (every send is
# flushed until the QP is moved back to RTS). The driver must notice and
# move it back (ours counts a TX error and logs it; the stock driver logs
# "failed send event" and the move), and TCP retransmits the data.
err0=$(cnt sib0 tx_lso_err)
sqe0=$(cnt sib0 sq_error)
txe0=$(tx_errors a ib0)
dmesg_mark lso
echo 3 >"$(sib sib0 lso_bad_mss)"
echo 3 >"$(sib sib0 lso_bad_hlen)"
knobs_used() { [ "$(cat "$(sib sib0 lso_bad_mss)")$(cat "$(sib sib0 lso_bad_hlen)")" = 00 ]; }
n=0
while ! knobs_used && [ $n -lt 5 ]; do	# 1 s of bulk TCP takes them all
	bulk a 10.9.0.2 || echo "iperf3 failed"
	n=$((n + 1))
done
check "all six used up (in $n s of iperf3 TCP a -> b)" knobs_used
tcp_echo_serve b 5207
tcp_echo_check "TCP a -> b -> a after six refused LSO work requests" a 10.9.0.2 5207 2048
check "softib completed six LSO WRs in error (tx_lso_err +$(($(cnt sib0 tx_lso_err) - err0)))" \
	test "$(cnt sib0 tx_lso_err)" = "$((err0 + 6))"
check "each stopped the UD send queue (SQE; sq_error +$(($(cnt sib0 sq_error) - sqe0)))" \
	test "$(cnt sib0 sq_error)" = "$((sqe0 + 6))"
if [ "$IPOIB_DRIVER" = ours ]; then
	check "ib0 counted the six failed sends (tx_errors $txe0 -> $(tx_errors a ib0))" \
		test "$(tx_errors a ib0)" = "$((txe0 + 6))"
	check "ib0 logged the QP's way back to RTS" logged "send queue error: QP back to RTS"
else
	check "stock logged the failed sends" logged "failed send event"
	check "stock logged the QP's way back to RTS" logged "moved from IB_QPS_SQE to IB_QPS_RTS"
fi
check_wait "ping a -> b after the refused WRs" 10 pings a 10.9.0.2

# --- a peer HCA without offloads ---
killall iperf3 2>/dev/null
check "unload" unload_all
check "load the IB core" load_ib_core
check "load softib ndevs=2 plain_lids=2 (sib1 offers no offload)" load_softib ndevs=2 plain_lids=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.9.0.1/24
check "host b (ib1)" make_host b ib1 10.9.0.2/24
et b -k ib1
check "ethtool -k ib1: tx-checksum-ipv4 off [fixed]" feature_is b ib1 tx-checksum-ipv4 "off [fixed]"
check "ethtool -k ib1: tx-tcp-segmentation off [fixed]" feature_is b ib1 tx-tcp-segmentation "off [fixed]"
check "ethtool -k ib0: tx-tcp-segmentation on" feature_is a ib0 tx-tcp-segmentation on
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
check_wait "ping a -> b" 30 pings a 10.9.0.2
tce=$(snmp b Tcp InCsumErrors)
tca=$(snmp a Tcp InCsumErrors)
tcp_echo_serve b 5202
tcp_echo_check "TCP a (offloads) -> b (none) -> a" a 10.9.0.2 5202 4096
tcp_echo_serve a 5203
tcp_echo_check "TCP b (none) -> a (offloads) -> b" b 10.9.0.1 5203 2048
check "iperf3 server in b" iperf_serve b
check "1 s of iperf3 TCP a (offloads) -> b (none)" bulk a 10.9.0.2
check "a used LSO" grew sib0 tx_lso 0
check "b's HCA did no offload (tx_csum, tx_lso, rx_csum_ok all 0)" sh -c \
	"test \$(awk '\$1 ~ /^(tx_csum|tx_lso|rx_csum_ok)\$/ { s += \$2 } END { print s + 0 }' $(sib sib1 counters)) = 0"
check "no TCP checksum error at a or b" \
	test "$(snmp b Tcp InCsumErrors)" = "$tce" -a "$(snmp a Tcp InCsumErrors)" = "$tca"
for d in sib0 sib1; do echo "$d:"; grep -v ' 0$' "$(sib $d counters)"; done

killall iperf3 2>/dev/null
check "unload everything" unload_all
