#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# make bench, guest side: one round for this VM's driver ($IPOIB_DRIVER).
# Booted by tests/bench/run.sh through the test harness's /init (MODE=case,
# CASE_FILE=bench/guest). Two softib HCAs on one fabric, ib0 in netns a
# (192.0.2.1), ib1 in netns b (192.0.2.2), then:
#   - the raw ceiling: softib's debugfs "blast" sib0 -> sib1 at the frame
#     size of a 64-byte UDP datagram (96 bytes) and of a full IPoIB frame
#     (2048 bytes), no IP stack;
#   - iperf3 TCP, 1, 4 and 8 streams (enhanced: 4 on one channel too);
#     iperf3 UDP with 64-byte datagrams;
#   - ping RTT percentiles;
#   - cold resolution of N = 100 and 1000 destinations, with the SA query
#     count and the slab growth per neighbour (see resolve.c);
#   - scale (offloads on only): 10,000 destinations cold, the transmit cost
#     to 100, 1,000 and 10,000 resolved ones, and a client reregister with
#     10,000 cached paths (SA queries, their peak rate, time to the last,
#     pings lost meanwhile, then traffic to all 10,000 again).
# Every figure goes to the results port as "BENCH <name> <value>"; the host
# makes the ratios. A step that cannot run reports "not ok" and the others
# go on. Env (kernel command line): BENCH_T (seconds per iperf3 run),
# BENCH_STEPS (comma-separated subset of ceil,tcp,udp,ping,resolve,scale;
# default all), BENCH_PROFILE, BENCH_OFFLOAD.
. /tests/lib.sh

B=/tests/bench
T=${BENCH_T:-4}
RES=/tmp/bench

metric() {	# metric NAME VALUE
	echo "BENCH $1 $2" >>"$RESULTS"
	echo "BENCH $1 $2"
}

# json_get FILE BLOCK FIELD: the first FIELD after the line with BLOCK
json_get() {
	awk -v b="\"$2\"" -v f="\"$3\":" '
		index($0, b) { x = 1 }
		x && $1 == f { v = $2; sub(/,$/, "", v); print v; exit }' "$1"
}

step() {	# step NAME: is NAME in BENCH_STEPS?
	case ",${BENCH_STEPS:-all}," in
	*,all,* | *,"$1",*) return 0 ;;
	esac
	return 1
}

counter_of() {	# counter_of FILE NAME
	awk -v n="$2" '$1 == n { print $2 }' "$1"
}

mkdir -p $RES
metric driver "$IPOIB_DRIVER"
# room for 1100 permanent neighbours
echo 8192 >/proc/sys/net/ipv4/neigh/default/gc_thresh1
echo 16384 >/proc/sys/net/ipv4/neigh/default/gc_thresh2
echo 32768 >/proc/sys/net/ipv4/neigh/default/gc_thresh3

# BENCH_OFFLOAD=off: an HCA without UD checksum offload and LSO, so both
# drivers checksum and segment in software; enh: an HCA with the enhanced
# IPoIB datapath (softib's rdma_netdev provider, as a ConnectX-4's mlx5i:
# one channel per vCPU), which both drivers use, datagram mode only
offload_args=
case ${BENCH_OFFLOAD:-on} in
off) offload_args="ud_csum=0 ud_tso=0" ;;
enh) offload_args="enhanced=1" ;;
esac
ENH=0
[ "${BENCH_OFFLOAD:-on}" = enh ] && ENH=1
# shellcheck disable=SC2086
load_ib_core && load_softib ndevs=2 $offload_args && load_ipoib ||
	{ fail setup "loading modules failed"; exit 0; }
check_wait "ib0 and ib1 appear" 30 test -d /sys/class/net/ib1 || exit 0
make_host a ib0 192.0.2.1/24 && make_host b ib1 192.0.2.2/24 &&
	ip -n a addr add 198.18.0.1/15 dev ib0 || { fail "hosts" "netns setup failed"; exit 0; }
check_wait "carrier" 30 sh -c "/usr/sbin/ip -n a link show ib0 | grep -q LOWER_UP &&
	/usr/sbin/ip -n b link show ib1 | grep -q LOWER_UP" || exit 0
check_wait "first ping" 30 in_host a ping -c 1 -W 1 192.0.2.2 || exit 0
metric mtu "$(ip -n a -o link show ib0 | sed -n 's/.* mtu \([0-9]*\).*/\1/p')"
# what the interface uses: 1 if TSO is on
metric tso "$(in_host a ethtool -k ib0 | awk '$1 == "tcp-segmentation-offload:" { print ($2 == "on") }')"

# --- the raw ceiling of the fabric ---
blast() {	# blast SIZE TAG
	if echo "sib0 sib1 $1 100000000 ms=2000" >$SIB_DEBUGFS/blast; then
		cat $SIB_DEBUGFS/blast >$RES/blast.$2
		metric "ceil_${2}_pps" "$(counter_of $RES/blast.$2 pps)"
		metric "ceil_${2}_Bps" "$(counter_of $RES/blast.$2 bytes_per_s)"
		metric "ceil_${2}_lost" "$(counter_of $RES/blast.$2 lost)"
		ok "blast $1 bytes"
	else
		fail "blast $1 bytes" "write to $SIB_DEBUGFS/blast failed"
	fi
}
if step ceil; then
	blast 96 small
	blast 2048 big
fi

# --- iperf3 ---
in_host b iperf3 -s -D -p 5201 >/dev/null 2>&1
wait_for 10 sh -c '/usr/sbin/ip netns exec b /usr/bin/ss -Hltn | grep -q ":5201"' ||
	fail "iperf3 server" "not listening"

iperf() {	# iperf NAME ARGS...: one iperf3 client run, JSON to $RES/NAME.json
	local name=$1
	shift
	if in_host a iperf3 -c 192.0.2.2 -p 5201 -t "$T" -J "$@" >$RES/$name.json 2>&1 &&
	   [ -n "$(json_get $RES/$name.json sum_received bytes)" ]; then
		ok "iperf3 $name"
		return 0
	fi
	fail "iperf3 $name" "$(grep -m1 '"error"' $RES/$name.json)"
	return 1
}

# CPU time the whole guest spent (user, system, IRQ, softirq: both hosts,
# the driver and softib) in ns, from /proc/stat. QEMU TCG has no PMU, so
# perf stat has no cycles here: CPU time per byte stands in for cycles.
# /proc/stat counts in USER_HZ, 100 on x86.
busy_ns() {
	awk '$1 == "cpu" { printf "%.0f\n", ($2 + $3 + $4 + $7 + $8) * 1e7; exit }' /proc/stat
}
c0=$(busy_ns)
if step tcp && iperf tcp1; then
	c1=$(busy_ns)
	metric tcp1_bps "$(json_get $RES/tcp1.json sum_received bits_per_second)"
	metric tcp1_cpu_ns_per_kB "$(awk -v c="$((c1 - c0))" -v b="$(json_get $RES/tcp1.json sum_received bytes)" \
		'BEGIN { if (b > 0) printf "%.0f\n", c / b * 1000 }')"
fi
if step tcp && iperf tcp4 -P 4; then
	metric tcp4_bps "$(json_get $RES/tcp4.json sum_received bits_per_second)"
fi
if step tcp && iperf tcp8 -P 8; then
	metric tcp8_bps "$(json_get $RES/tcp8.json sum_received bits_per_second)"
fi
# enhanced: the same 4 streams on one channel each side (ethtool -L), then
# back to one per vCPU
channels() { in_host "$1" ethtool -l "$2" | awk '/^Current/ { c = 1 } c && $1 == "Combined:" { print $2; exit }'; }
if step tcp && [ $ENH = 1 ]; then
	nch=$(channels a ib0)
	metric channels "$nch"
	if in_host a ethtool -L ib0 combined 1 && in_host b ethtool -L ib1 combined 1 &&
	   wait_for 20 in_host a ping -c 1 -W 2 192.0.2.2 && iperf tcp4_1ch -P 4; then
		metric tcp4_1ch_bps "$(json_get $RES/tcp4_1ch.json sum_received bits_per_second)"
	fi
	in_host a ethtool -L ib0 combined "$nch"
	in_host b ethtool -L ib1 combined "$nch"
	wait_for 20 in_host a ping -c 1 -W 2 192.0.2.2 || fail "channels again" "no ping"
fi
# connected mode (RFC 4755, MTU 65520), then back to datagram mode (not on
# the enhanced datapath, where both drivers refuse it)
if step tcp && [ $ENH = 0 ] && in_host a ip link set ib0 type ipoib mode connected &&
   in_host b ip link set ib1 type ipoib mode connected &&
   in_host a ip link set ib0 mtu 65520 && in_host b ip link set ib1 mtu 65520 &&
   wait_for 20 in_host a ping -c 1 -W 2 -s 60000 192.0.2.2 && iperf cm_tcp1; then
	metric cm_tcp1_bps "$(json_get $RES/cm_tcp1.json sum_received bits_per_second)"
fi
if step tcp && [ $ENH = 0 ]; then
	in_host a ip link set ib0 type ipoib mode datagram
	in_host b ip link set ib1 type ipoib mode datagram
	wait_for 20 in_host a ping -c 1 -W 2 192.0.2.2 || fail "datagram mode again" "no ping"
fi
rx_pkts() { in_host b cat /sys/class/net/ib1/statistics/rx_packets; }
r0=$(rx_pkts)
e0=$(_t_rcvbuf_errors b)
if step udp && iperf udp64 -u -l 64 -b 0; then
	# datagrams the iperf3 server's socket had no room for
	metric udp64_rcvbuf_errors_ps "$(awk -v n="$(($(_t_rcvbuf_errors b) - e0))" -v t="$T" 'BEGIN { printf "%d\n", n / t }')"
	# what the driver handed to the stack, whether or not iperf3 kept up
	metric udp64_dev_rx_pps "$(awk -v n="$(($(rx_pkts) - r0))" -v t="$T" 'BEGIN { printf "%d\n", n / t }')"
	b=$(json_get $RES/udp64.json sum_received bytes)
	s=$(json_get $RES/udp64.json sum_received seconds)
	metric udp64_pps "$(awk -v b="$b" -v s="$s" 'BEGIN { if (s > 0) printf "%d\n", b / 64 / s }')"
	metric udp64_sent_pps "$(awk -v p="$(json_get $RES/udp64.json sum_sent packets)" -v s="$s" \
		'BEGIN { if (s > 0) printf "%d\n", p / s }')"
fi

# --- ping RTT ---
if ! step ping; then
	:
elif in_host a ping -c 300 -i 0.01 -W 1 192.0.2.2 >$RES/ping.txt 2>&1; then
	sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' $RES/ping.txt | awk '{ printf "%d\n", $1 * 1000 }' |
		sort -n >$RES/rtt.us
	n=$(wc -l <$RES/rtt.us)
	metric rtt_p50_us "$(sed -n "$(( (n + 1) / 2 ))p" $RES/rtt.us)"
	metric rtt_p99_us "$(sed -n "$(( (n * 99 + 99) / 100 ))p" $RES/rtt.us)"
	ok "ping rtt ($n replies)"
else
	fail "ping rtt" "$(tail -n 2 $RES/ping.txt)"
fi

# --- cold resolution of N destinations ---
slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }
# learn_hosts FIRST_LID N: the SA learns N simulated hosts (resolve.c's
# learn); true once its N answers have gone nowhere (drop_no_route)
learn_hosts() {
	local d0
	d0=$(sib_counter sib0 drop_no_route)
	$B/resolve learn "$(sib sib0 inject)" 1 "$1" "$2" &&
		wait_for 60 sib_counter_ge sib0 drop_no_route $((d0 + $2))
}
resolve_n() {	# resolve_n N FIRST_LID BASE_IP
	local n=$1 lid0=$2 ip0=$3 p0 s0 ns0 out
	if ! learn_hosts "$lid0" "$n"; then
		fail "resolve $n: SA learns $n hosts" "inject failed or no answers"
		return
	fi
	$B/resolve neigh ib0 "$ip0" "$lid0" "$n" >$RES/neigh.$n
	sync
	s0=$(slab_kb)
	p0=$(sa_counter path_get)
	ns0=$(sa_counter path_get_ns)
	if ! ip -n a -batch $RES/neigh.$n; then
		fail "resolve $n: add $n neighbours" "ip -batch failed"
		return
	fi
	out=$($B/resolve /run/netns/a "$ip0" "$n" "$(sib sib0 counters)" 60000)
	echo "resolve $n: $out"
	set -- $out
	metric "resolve${n}_ms" "$(awk -v ns="$6" 'BEGIN { printf "%.1f\n", ns / 1e6 }')"
	metric "resolve${n}_send_ms" "$(awk -v ns="$8" 'BEGIN { printf "%.1f\n", ns / 1e6 }')"
	metric "resolve${n}_done" "$4"
	metric "resolve${n}_sa_queries" "$(($(sa_counter path_get) - p0))"
	# the SA's own time for those queries (softib's path_get_ns): the part
	# of the resolution no driver can take out
	metric "resolve${n}_sa_ms" "$(awk -v ns="$(($(sa_counter path_get_ns) - ns0))" \
		'BEGIN { printf "%.1f\n", ns / 1e6 }')"
	metric "resolve${n}_slab_B_per_neigh" "$(( ($(slab_kb) - s0) * 1024 / n ))"
	if [ "$4" -ge "$n" ]; then
		ok "resolve $n destinations"
	else
		fail "resolve $n destinations" "only $4 of $n resolved in 60 s"
	fi
}
# slab_shared MODE LID BASE_IP: 1000 neighbours at one GID (LID), with
# 1000 QPNs (MODE qpn: 1000 driver neighbours, one path) or one address
# (MODE same: one driver neighbour, one path); their slab growth per
# neighbour against resolve_n's (1000 GIDs) splits it into the kernel's
# neighbour, the driver's neighbour and its path with its AH (bench.rst)
slab_shared() {
	local out s0
	learn_hosts "$2" 1 || fail "slab $1: SA learns the host" "inject failed or no answer"
	$B/resolve neigh ib0 "$3" "$2" 1000 "$1" >$RES/neigh.$1
	sync
	s0=$(slab_kb)
	if ! ip -n a -batch $RES/neigh.$1; then
		fail "slab $1: add 1000 neighbours" "ip -batch failed"
		return
	fi
	# the path first (one packet), so that the 1000 do not all wait in
	# the one path's bounded queue
	$B/resolve /run/netns/a "$3" 1 "$(sib sib0 counters)" 10000 >/dev/null
	out=$($B/resolve /run/netns/a "$3" 1000 "$(sib sib0 counters)" 60000)
	set -- "$1" $out
	metric "slab1000_$1_B_per_neigh" "$(( ($(slab_kb) - s0) * 1024 / 1000 ))"
	[ "$5" -ge 1000 ] || fail "slab $1: 1000 sends" "only $5 reached the fabric"
}
if step resolve; then
	resolve_n 100 4096 198.18.16.0
	resolve_n 1000 8192 198.19.0.0
	slab_shared qpn 16128 198.19.32.0
	slab_shared same 16129 198.19.48.0
fi

# --- scale: 10,000 destinations, warm transmit cost, a reregister storm ---
# (with offloads on only: they change nothing here, and it takes a minute)
warm_n() {	# warm_n N BASE_IP: send again to N resolved destinations
	local out
	out=$($B/resolve /run/netns/a "$2" "$1" "$(sib sib0 counters)" 60000)
	echo "warm $1: $out"
	set -- "$1" $out
	metric "warm${1}_send_ns_per_pkt" "$(($9 / $1))"
	metric "warm${1}_ns_per_pkt" "$(($7 / $1))"
}
# gc_pass: how long one pass of the driver's periodic neighbour GC takes
# with 10,000 live neighbours and paths (ours every 10 s, stock every ARP
# gc_interval, 30 s): the function_graph tracer's duration of the work
# function, depth 1 (both walk their table under a spinlock with softirqs
# or interrupts off: the transmit path waits that long)
gc_pass() {
	local t=/sys/kernel/tracing fn=ipoib_neigh_gc us
	[ "$IPOIB_DRIVER" = stock ] && fn=ipoib_reap_neigh
	[ -e $t/trace ] || mount -t tracefs nodev $t 2>/dev/null
	if ! echo "$fn" >$t/set_graph_function 2>/dev/null; then
		fail "gc pass" "cannot trace $fn"
		return
	fi
	echo 1 >$t/max_graph_depth
	echo >$t/trace
	echo function_graph >$t/current_tracer
	if wait_for 40 grep -q "$fn" $t/trace; then
		us=$(grep "$fn" $t/trace | head -n 1 | sed -n 's/.* \([0-9][0-9.]*\) us .*/\1/p')
		metric gc10000_pass_us "${us:-}"
	else
		fail "gc pass" "$fn did not run within 40 s"
	fi
	echo nop >$t/current_tracer
	echo >$t/set_graph_function
	echo 0 >$t/max_graph_depth
}
if step scale && [ "${BENCH_OFFLOAD:-on}" = on ]; then
	resolve_n 10000 16384 198.18.32.0
	if step resolve; then
		warm_n 100 198.18.16.0
		warm_n 1000 198.19.0.0
	fi
	warm_n 10000 198.18.32.0
	# A client reregister at sib0 with 10,000 cached paths: SA PathRecord
	# queries from ib0 over time, sampled every 0.5 s until none came for
	# 3 s (at most 60 s), while a -> b pings at 100/s
	p0=$(sa_counter path_get)
	in_host a ping -q -c 1500 -i 0.01 -W 1 192.0.2.2 >$RES/storm.ping 2>&1 &
	ping_pid=$!
	echo 1 >"$(sib sib0 rereg)"
	t0=$(awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime)
	last=$p0; last_t=$t0; peak=0; prev2=$p0; prev1=$p0; t2=$t0; t1=$t0
	while :; do
		sleep 0.5
		now=$(awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime)
		q=$(sa_counter path_get)
		# per second over the last two samples, by the clock: a sample
		# in a TCG shell takes more than its 0.5 s
		dt=$((now - t2))
		[ "$dt" -gt 0 ] || dt=1
		r=$(((q - prev2) * 1000 / dt))
		[ "$r" -gt "$peak" ] && peak=$r
		prev2=$prev1; prev1=$q; t2=$t1; t1=$now
		if [ "$q" -ne "$last" ]; then
			last=$q; last_t=$now
		elif [ $((now - last_t)) -ge 3000 ] || [ $((now - t0)) -ge 60000 ]; then
			break
		fi
	done
	wait $ping_pid
	metric rereg_path_queries "$((last - p0))"
	metric rereg_peak_qps "$peak"
	metric rereg_settle_ms "$((last_t - t0))"
	metric rereg_ping_lost "$(sed -n 's/^\([0-9]*\) packets transmitted, \([0-9]*\) received.*/\1 \2/p' $RES/storm.ping |
		awk '{ print $1 - $2 }')"
	# then traffic to every destination again: the driver must have, or
	# get, a valid path for each
	p1=$(sa_counter path_get)
	out=$($B/resolve /run/netns/a 198.18.32.0 10000 "$(sib sib0 counters)" 60000)
	echo "after the reregister: $out"
	set -- $out
	metric rereg_resend10000_ms "$(awk -v ns="$6" 'BEGIN { printf "%.1f\n", ns / 1e6 }')"
	metric rereg_resend10000_done "$4"
	metric rereg_resend10000_queries "$(($(sa_counter path_get) - p1))"
	gc_pass
	ok "scale"
fi

# --- optional profile (BENCH_PROFILE=1): not part of the figures above ---
# prof TITLE CMD...: perf record -a -g while CMD runs; the busiest tasks,
# symbols and modules, and the call chains behind the busiest symbols
prof() {
	local title=$1 rep="/usr/bin/perf report -i $RES/perf.data --stdio --no-children"
	shift
	/usr/bin/perf record -q -a -g -e cpu-clock -F 2999 -o $RES/perf.data -- "$@" >/dev/null 2>&1
	{
		echo "=== $IPOIB_DRIVER: perf record -a during $title, by task"
		$rep -g none --sort comm --percent-limit 1 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12
		echo "=== $IPOIB_DRIVER: $title, top symbols"
		$rep -g none --sort sym --percent-limit 0.7 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 45
		echo "=== $IPOIB_DRIVER: $title, by module"
		$rep -g none --sort dso 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12
		echo "=== $IPOIB_DRIVER: $title, inclusive (with callees) share of driver, fabric and stack entry points"
		/usr/bin/perf report -i $RES/perf.data --stdio --children -g none --sort sym 2>/dev/null |
			grep -E '\] (ipoib|softib|ib_sa|ib_mad|ib_post|ib_poll|ib_cq|send_mad|recv_handler|__napi_poll|net_rx_action|tcp_sendmsg|tcp_v4_rcv|udp_sendmsg|icmp_rcv|__dev_queue_xmit|dev_hard_start_xmit|validate_xmit|skb_segment|napi_gro_receive|__sys_sendto|process_one_work)' |
			head -n 40
		echo "=== $IPOIB_DRIVER: $title, call chains (>= 1.5 %, idle left out)"
		$rep -g folded,1.5,caller,count --sort sym --percent-limit 1.5 2>/dev/null |
			grep -v '^#' | grep -v '^$' | grep -v 'native_safe_halt\|default_idle\|cpuidle' |
			cut -c 1-400 | head -n 40
	} | sed 's/^/PROF /' >>"$RESULTS"
}
if [ "${BENCH_PROFILE:-0}" = 1 ] && [ -x /usr/bin/perf ]; then
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	echo 0 >/proc/sys/kernel/kptr_restrict
	step tcp && prof "iperf3 TCP 1 stream ($T s)" \
		/usr/sbin/ip netns exec a iperf3 -c 192.0.2.2 -p 5201 -t "$T"
	step udp && prof "iperf3 UDP 64 B ($T s)" \
		/usr/sbin/ip netns exec a iperf3 -c 192.0.2.2 -p 5201 -u -l 64 -b 0 -t "$T"
	step ping && prof "100 pings at 10 ms" \
		/usr/sbin/ip netns exec a ping -q -c 100 -i 0.01 -W 1 192.0.2.2
	# a fresh set of 3000 destinations (LIDs 0x3000 + i), for samples enough
	if step resolve && learn_hosts 12288 3000; then
		$B/resolve neigh ib0 198.19.16.0 12288 3000 >$RES/neigh.prof &&
			ip -n a -batch $RES/neigh.prof &&
			prof "cold resolution of 3000 destinations" \
				$B/resolve /run/netns/a 198.19.16.0 3000 "$(sib sib0 counters)" 60000
	fi
	ok "profile"
fi

metric done 1
unload_all >/dev/null 2>&1
ok "bench round done"
