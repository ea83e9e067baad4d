#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: our ib_ipoib against the stock one on the same softib fabric,
# and both against the fabric's raw ceiling. See Documentation/testing.rst,
# section "Benchmark (make bench)".
#
#   tests/bench/run.sh
#
# Env: BENCH_ROUNDS (default 5): rounds; each round boots one VM with ours,
# then one with stock (A B A B ...), so drift over the run shows in both.
# BENCH_T (default 4): seconds per iperf3 run. BENCH_ONLY=ours|stock: one
# driver only (no ratios). BENCH_REPORT=FILE: no boots, only the table of
# an earlier run's rounds.txt. BENCH_PROFILE=1: after the measurements, one
# more TCP run under `perf record -a` in each boot; the top of the profile
# goes to build/bench/profile.<driver>.txt. BENCH_STEPS: comma-separated
# subset of ceil,tcp,udp,ping,resolve,scale (default all), for quick
# experiments.
# BENCH_OFFLOADS (default "on off enh"): softib with its UD checksum offload
# and LSO (what a ConnectX-3 user has), without them, with the enhanced
# IPoIB datapath (enhanced=1: what a ConnectX-4 and newer user has, one
# channel per vCPU, the guests have 2), or a subset; each round boots every
# driver in every mode, and each mode gets its own table; with "on" and
# "enh" both, a last table gives each driver's gain from the one to the
# other.
# KERNEL/KVER/KDIR as for make check.
# Output: a table of medians with ours/stock and ours/ceiling ratios, the
# same in build/bench/results.json, per-round figures in
# build/bench/rounds.txt, logs in build/bench/logs/. Never fails on a number:
# exits non-zero only if it could not measure (build, boot, or no round
# produced figures for a driver).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# Like make check: install what is missing first (apt-get, as root; a no-op
# when everything is there), before kernel.sh looks for headers and image.
if [ -z "${BENCH_REPORT:-}" ]; then
	extra_pkgs=""
	[ "${BENCH_PROFILE:-0}" = 1 ] && extra_pkgs=linux-perf
	DEPS_EXTRA=$extra_pkgs "$HERE/../../scripts/deps.sh" ||
		{ echo "bench: deps failed" >&2; exit 1; }
fi
. "$HERE/../vm/kernel.sh" || exit 1
. "$HERE/../vm/qemu.sh"

ROUNDS=${BENCH_ROUNDS:-5}
BT=${BENCH_T:-4}
DRIVERS="ours stock"
[ -n "${BENCH_ONLY:-}" ] && DRIVERS=$BENCH_ONLY
OFFLOADS=${BENCH_OFFLOADS:-on off enh}
# label DRIVER MODE: how rounds.txt names a driver in an offload mode
label() { if [ "$2" = on ]; then echo "$1"; else echo "$1-$2"; fi; }
OUT=$BUILD/bench
LOGDIR=$OUT/logs/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$LOGDIR"
T0=$(date +%s)

die() { echo "bench: $*" >&2; exit 1; }

ROUNDS_TXT=$LOGDIR/rounds.txt
if [ -n "${BENCH_REPORT:-}" ]; then
	# only the table, from an earlier run's rounds.txt
	cp "$BENCH_REPORT" "$ROUNDS_TXT" || die "no $BENCH_REPORT"
	ROUNDS=$(awk '$1 > n { n = $1 } END { print n + 0 }' "$ROUNDS_TXT")
	DRIVERS=$(awk '{ sub(/-(off|enh)$/, "", $2); print $2 }' "$ROUNDS_TXT" | sort -u | tr '\n' ' ')
	DRIVERS=${DRIVERS% }
	OFFLOADS=$(awk '{ m = "on"; if (match($2, /-(off|enh)$/)) m = substr($2, RSTART + 1); print m }' \
		"$ROUNDS_TXT" | sort -ru | tr '\n' ' ')
fi
[ -n "$KERNEL_SKIP" ] && die "$KERNEL_SKIP"
[ -n "${BENCH_REPORT:-}" ] || {
echo "bench: building modules for $KVER"
"$HERE/../vm/build.sh" >"$LOGDIR/build.log" 2>&1 || {
	tail -n 20 "$LOGDIR/build.log"
	die "build failed (see ${LOGDIR#"$REPO"/}/build.log)"
}
[ -e "$KBUILD_DIR/ipoib/ib_ipoib.ko" ] || die "our ib_ipoib.ko was not built"

# The guest side goes in as one more initramfs layer (tests/vm/mkinitramfs.sh
# INITRAMFS_EXTRA): /tests/bench/guest.sh and the resolve tool.
extra=$LOGDIR/extra
mkdir -p "$extra/tests/bench"
install -m 0755 "$HERE/guest.sh" "$extra/tests/bench/guest.sh"
gcc -O2 -Wall -static -o "$extra/tests/bench/resolve" "$HERE/resolve.c" \
	>"$LOGDIR/resolve.log" 2>&1 || { cat "$LOGDIR/resolve.log"; die "building resolve.c failed"; }
if [ "${BENCH_PROFILE:-0}" = 1 ]; then
	# perf with its shared libraries, for one profiled TCP run per boot
	install -D -m 0755 /usr/bin/perf "$extra/usr/bin/perf" || die "BENCH_PROFILE=1 needs perf (linux-perf)"
	for lib in $(ldd /usr/bin/perf | awk '/=>/ { print $3 }'); do
		[ -e "$extra/lib/x86_64-linux-gnu/$(basename "$lib")" ] ||
			install -D -m 0644 "$lib" "$extra/lib/x86_64-linux-gnu/$(basename "$lib")"
	done
fi
INITRAMFS_EXTRA=$extra "$HERE/../vm/mkinitramfs.sh" "$LOGDIR/initrd" >"$LOGDIR/initramfs.log" 2>&1 ||
	{ tail -n 20 "$LOGDIR/initramfs.log"; die "initramfs failed"; }

# round R DRIVER MODE: one boot; appends "R LABEL NAME VALUE" lines to
# rounds.txt (LABEL: the driver, "-off" added without offloads)
: >"$ROUNDS_TXT"
round() {
	local r=$1 d=$2 m=$3 l out nonce tb res
	l=$(label "$d" "$m")
	out=$LOGDIR/r$r.$l
	nonce=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
	tb=$(date +%s)
	VM_TIMEOUT=${BENCH_VM_TIMEOUT:-600} qemu_run 0 "$LOGDIR/initrd" "$out" \
		"CASE_FILE=bench/guest CASE_NAME=bench IPOIB_DRIVER=$d VM_ID=0 VM_COUNT=1 TEST_NONCE=$nonce BENCH_T=$BT BENCH_PROFILE=${BENCH_PROFILE:-0} BENCH_STEPS=${BENCH_STEPS:-all} BENCH_OFFLOAD=$m"
	res=$(tr -d '\r' <"$out.results")
	grep '^PROF ' <<<"$res" | sed 's/^PROF //' >"$out.profile"
	[ -s "$out.profile" ] && cp "$out.profile" "$OUT/profile.$l.txt"
	printf '%s\n' "$res" | awk -v r="$r" -v d="$l" '$1 == "BENCH" && $2 != "driver" { print r, d, $2, $3 }' \
		>>"$ROUNDS_TXT"
	printf '# round %s %-9s %3s s' "$r" "$l" $(($(date +%s) - tb))
	grep -qx "END $nonce" <<<"$res" || printf ', no end marker (VM died or timed out)'
	printf ', %s figures' "$(grep -c '^BENCH ' <<<"$res")"
	grep '^not ok' <<<"$res" | sed 's/^/\n#   /' | tr -d '\n'
	echo
}

echo "bench: $ROUNDS rounds of [$DRIVERS] with offloads [$OFFLOADS], iperf3 ${BT} s, kernel $KVER, logs ${LOGDIR#"$REPO"/}"
for r in $(seq 1 "$ROUNDS"); do
	for m in $OFFLOADS; do
		for d in $DRIVERS; do
			round "$r" "$d" "$m"
		done
	done
done
cp "$ROUNDS_TXT" "$OUT/rounds.txt"
}	# not BENCH_REPORT
[ -n "${BENCH_REPORT:-}" ] && cp "$ROUNDS_TXT" "$OUT/rounds.txt"

# --- medians, ratios, table, JSON ---
# The awk functions both tables use: add(KEY, V) collects a figure, median(KEY)
# is the median of those collected under KEY ("" if none).
AWK_MEDIAN='
function median(key,    n, i, j, t, a) {
	n = cnt[key]
	if (!n)
		return ""
	for (i = 1; i <= n; i++)
		a[i] = val[key, i]
	for (i = 2; i <= n; i++)	# insertion sort, n is small
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(key, v) { val[key, ++cnt[key]] = v }
'
# table MODE JSON: the table of one offload mode; A and B are the labels of
# ours and stock in rounds.txt
table() {
awk -v json="$2" -v kver="$KVER" -v rounds="$ROUNDS" -v drivers="$DRIVERS" -v mode="$1" \
	-v A="$(label ours "$1")" -v B="$(label stock "$1")" "$AWK_MEDIAN"'
function fmt(v, scale, prec) { return v == "" ? "n/a" : sprintf("%." prec "f", v / scale) }
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "" : a / b }
function jnum(v) { return v == "" ? "null" : sprintf("%.6g", v) }
{
	r = $1; d = $2; m = $3; v = $4
	if (v == "")
		next
	add(d SUBSEP m, v)
	per[r, d, m] = v
	seen[r, d] = 1
}
END {
	# per-boot ratios to the ceiling measured in that same boot
	for (k in seen) {
		split(k, p, SUBSEP)
		r = p[1]; d = p[2]
		if ((r, d, "tcp1_bps") in per && per[r, d, "ceil_big_Bps"] > 0)
			add(d SUBSEP "tcp1_ceil", per[r, d, "tcp1_bps"] / 8 / per[r, d, "ceil_big_Bps"])
		if ((r, d, "tcp4_bps") in per && per[r, d, "ceil_big_Bps"] > 0)
			add(d SUBSEP "tcp4_ceil", per[r, d, "tcp4_bps"] / 8 / per[r, d, "ceil_big_Bps"])
		if ((r, d, "udp64_pps") in per && per[r, d, "ceil_small_pps"] > 0)
			add(d SUBSEP "udp64_ceil", per[r, d, "udp64_pps"] / per[r, d, "ceil_small_pps"])
		if ((r, d, "udp64_dev_rx_pps") in per && per[r, d, "ceil_small_pps"] > 0)
			add(d SUBSEP "udp64_dev_ceil", per[r, d, "udp64_dev_rx_pps"] / per[r, d, "ceil_small_pps"])
		if ((r, d, "cm_tcp1_bps") in per && per[r, d, "tcp1_bps"] > 0)
			add(d SUBSEP "cm_over_dg", per[r, d, "cm_tcp1_bps"] / per[r, d, "tcp1_bps"])
		# the slab per neighbour split (slab_shared in guest.sh)
		if ((r, d, "resolve1000_slab_B_per_neigh") in per && (r, d, "slab1000_qpn_B_per_neigh") in per)
			add(d SUBSEP "slab_B_per_path", per[r, d, "resolve1000_slab_B_per_neigh"] - per[r, d, "slab1000_qpn_B_per_neigh"])
		if ((r, d, "slab1000_qpn_B_per_neigh") in per && (r, d, "slab1000_same_B_per_neigh") in per)
			add(d SUBSEP "slab_B_per_drv_neigh", per[r, d, "slab1000_qpn_B_per_neigh"] - per[r, d, "slab1000_same_B_per_neigh"])
		for (n = 100; n <= 10000; n *= 10)
			if ((r, d, "resolve" n "_sa_queries") in per)
				add(d SUBSEP "resolve" n "_q_per_gid", per[r, d, "resolve" n "_sa_queries"] / n)
	}
	# name, label, unit scale, precision, better (h/l), target ours/stock, ceiling key
	nm = split("tcp1_bps tcp4_bps tcp8_bps tcp4_1ch_bps cm_tcp1_bps cm_over_dg tcp1_cpu_ns_per_kB udp64_pps udp64_dev_rx_pps udp64_rcvbuf_errors_ps rtt_p50_us rtt_p99_us resolve100_ms resolve1000_ms resolve1000_send_ms resolve1000_sa_ms resolve100_q_per_gid resolve1000_q_per_gid resolve1000_slab_B_per_neigh slab_B_per_path slab_B_per_drv_neigh slab1000_same_B_per_neigh resolve10000_ms resolve10000_q_per_gid resolve10000_slab_B_per_neigh warm100_send_ns_per_pkt warm1000_send_ns_per_pkt warm10000_send_ns_per_pkt gc10000_pass_us rereg_path_queries rereg_peak_qps rereg_settle_ms rereg_ping_lost rereg_resend10000_ms rereg_resend10000_queries ceil_small_pps ceil_big_Bps", M, " ")
	L["tcp1_bps"] = "TCP 1 stream (Mbit/s)";	S["tcp1_bps"] = 1e6;	P["tcp1_bps"] = 1;	G["tcp1_bps"] = ">= 1.3";	C["tcp1_bps"] = "tcp1_ceil"
	L["tcp4_bps"] = "TCP 4 streams (Mbit/s)";	S["tcp4_bps"] = 1e6;	P["tcp4_bps"] = 1;	G["tcp4_bps"] = ">= 1.3";	C["tcp4_bps"] = "tcp4_ceil"
	L["tcp8_bps"] = "TCP 8 streams (Mbit/s)";	S["tcp8_bps"] = 1e6;	P["tcp8_bps"] = 1;	G["tcp8_bps"] = mode == "enh" ? ">= 1.0" : ""
	L["tcp4_1ch_bps"] = "TCP 4, one channel (Mbit/s)";	S["tcp4_1ch_bps"] = 1e6;	P["tcp4_1ch_bps"] = 1;	G["tcp4_1ch_bps"] = ""
	L["cm_tcp1_bps"] = "TCP 1, connected (Mbit/s)";	S["cm_tcp1_bps"] = 1e6;	P["cm_tcp1_bps"] = 1;	G["cm_tcp1_bps"] = ""
	L["cm_over_dg"] = "  connected/datagram";	S["cm_over_dg"] = 1;	P["cm_over_dg"] = 2;	G["cm_over_dg"] = ""
	L["tcp1_cpu_ns_per_kB"] = "TCP 1 CPU us/MB (guest)";	S["tcp1_cpu_ns_per_kB"] = 1;	P["tcp1_cpu_ns_per_kB"] = 0;	G["tcp1_cpu_ns_per_kB"] = "<= 0.8"
	L["udp64_pps"] = "UDP 64 B (kpps rcvd)";	S["udp64_pps"] = 1e3;	P["udp64_pps"] = 1;	G["udp64_pps"] = ">= 1.3";	C["udp64_pps"] = "udp64_ceil"
	L["udp64_dev_rx_pps"] = "UDP 64 B ib1 rx (kpps)";	S["udp64_dev_rx_pps"] = 1e3;	P["udp64_dev_rx_pps"] = 1;	G["udp64_dev_rx_pps"] = "";	C["udp64_dev_rx_pps"] = "udp64_dev_ceil"
	L["udp64_rcvbuf_errors_ps"] = "  socket full drops (kpps)";	S["udp64_rcvbuf_errors_ps"] = 1e3;	P["udp64_rcvbuf_errors_ps"] = 1;	G["udp64_rcvbuf_errors_ps"] = ""
	L["rtt_p50_us"] = "ping RTT p50 (us)";	S["rtt_p50_us"] = 1;	P["rtt_p50_us"] = 0;	G["rtt_p50_us"] = "<= 0.9"
	L["rtt_p99_us"] = "ping RTT p99 (us)";	S["rtt_p99_us"] = 1;	P["rtt_p99_us"] = 0;	G["rtt_p99_us"] = ""
	L["resolve100_ms"] = "resolve 100 dst (ms)";	S["resolve100_ms"] = 1;	P["resolve100_ms"] = 1;	G["resolve100_ms"] = ""
	L["resolve1000_ms"] = "resolve 1000 dst (ms)";	S["resolve1000_ms"] = 1;	P["resolve1000_ms"] = 1;	G["resolve1000_ms"] = "<= 0.8"
	L["resolve1000_send_ms"] = "  of which sendto loop (ms)";	S["resolve1000_send_ms"] = 1;	P["resolve1000_send_ms"] = 1;	G["resolve1000_send_ms"] = ""
	L["resolve1000_sa_ms"] = "  of which in the SA (ms)";	S["resolve1000_sa_ms"] = 1;	P["resolve1000_sa_ms"] = 1;	G["resolve1000_sa_ms"] = ""
	L["slab_B_per_path"] = "  path + AH (B)";	S["slab_B_per_path"] = 1;	P["slab_B_per_path"] = 0;	G["slab_B_per_path"] = ""
	L["slab_B_per_drv_neigh"] = "  driver neighbour (B)";	S["slab_B_per_drv_neigh"] = 1;	P["slab_B_per_drv_neigh"] = 0;	G["slab_B_per_drv_neigh"] = ""
	L["slab1000_same_B_per_neigh"] = "  kernel neighbour (B)";	S["slab1000_same_B_per_neigh"] = 1;	P["slab1000_same_B_per_neigh"] = 0;	G["slab1000_same_B_per_neigh"] = ""
	L["gc10000_pass_us"] = "GC pass, 10000 neigh (us)";	S["gc10000_pass_us"] = 1;	P["gc10000_pass_us"] = 0;	G["gc10000_pass_us"] = ""
	L["resolve100_q_per_gid"] = "SA queries/GID (100)";	S["resolve100_q_per_gid"] = 1;	P["resolve100_q_per_gid"] = 2;	G["resolve100_q_per_gid"] = "ours == 1"
	L["resolve1000_q_per_gid"] = "SA queries/GID (1000)";	S["resolve1000_q_per_gid"] = 1;	P["resolve1000_q_per_gid"] = 2;	G["resolve1000_q_per_gid"] = "ours == 1"
	L["resolve1000_slab_B_per_neigh"] = "slab B/neighbour (1000)";	S["resolve1000_slab_B_per_neigh"] = 1;	P["resolve1000_slab_B_per_neigh"] = 0;	G["resolve1000_slab_B_per_neigh"] = "<= 1.0"
	L["resolve10000_ms"] = "resolve 10000 dst (ms)";	S["resolve10000_ms"] = 1;	P["resolve10000_ms"] = 1;	G["resolve10000_ms"] = ""
	L["resolve10000_q_per_gid"] = "SA queries/GID (10000)";	S["resolve10000_q_per_gid"] = 1;	P["resolve10000_q_per_gid"] = 2;	G["resolve10000_q_per_gid"] = "ours == 1"
	L["resolve10000_slab_B_per_neigh"] = "slab B/neighbour (10000)";	S["resolve10000_slab_B_per_neigh"] = 1;	P["resolve10000_slab_B_per_neigh"] = 0;	G["resolve10000_slab_B_per_neigh"] = "<= 1.0"
	L["warm100_send_ns_per_pkt"] = "xmit ns/pkt, 100 dst";	S["warm100_send_ns_per_pkt"] = 1;	P["warm100_send_ns_per_pkt"] = 0;	G["warm100_send_ns_per_pkt"] = ""
	L["warm1000_send_ns_per_pkt"] = "xmit ns/pkt, 1000 dst";	S["warm1000_send_ns_per_pkt"] = 1;	P["warm1000_send_ns_per_pkt"] = 0;	G["warm1000_send_ns_per_pkt"] = ""
	L["warm10000_send_ns_per_pkt"] = "xmit ns/pkt, 10000 dst";	S["warm10000_send_ns_per_pkt"] = 1;	P["warm10000_send_ns_per_pkt"] = 0;	G["warm10000_send_ns_per_pkt"] = "flat"
	L["rereg_path_queries"] = "rereg: SA path queries";	S["rereg_path_queries"] = 1;	P["rereg_path_queries"] = 0;	G["rereg_path_queries"] = "1 per path"
	L["rereg_peak_qps"] = "rereg: peak queries/s";	S["rereg_peak_qps"] = 1;	P["rereg_peak_qps"] = 0;	G["rereg_peak_qps"] = "ours ~500"
	L["rereg_settle_ms"] = "rereg: last query (ms)";	S["rereg_settle_ms"] = 1;	P["rereg_settle_ms"] = 0;	G["rereg_settle_ms"] = ""
	L["rereg_ping_lost"] = "rereg: pings lost /1500";	S["rereg_ping_lost"] = 1;	P["rereg_ping_lost"] = 0;	G["rereg_ping_lost"] = "0"
	L["rereg_resend10000_ms"] = "rereg: resend 10000 (ms)";	S["rereg_resend10000_ms"] = 1;	P["rereg_resend10000_ms"] = 1;	G["rereg_resend10000_ms"] = ""
	L["rereg_resend10000_queries"] = "rereg: resend SA queries";	S["rereg_resend10000_queries"] = 1;	P["rereg_resend10000_queries"] = 0;	G["rereg_resend10000_queries"] = ""
	L["ceil_small_pps"] = "ceiling 96 B (kpps)";	S["ceil_small_pps"] = 1e3;	P["ceil_small_pps"] = 1;	G["ceil_small_pps"] = ""
	L["ceil_big_Bps"] = "ceiling 2048 B (Mbit/s)";	S["ceil_big_Bps"] = 1e6 / 8;	P["ceil_big_Bps"] = 1;	G["ceil_big_Bps"] = ""

	if (mode == "enh") {	# the provider moves the packets: parity is the goal
		G["tcp1_bps"] = G["tcp4_bps"] = G["udp64_pps"] = G["udp64_dev_rx_pps"] = ">= 1.0"
		G["tcp1_cpu_ns_per_kB"] = "<= 1.0"
	}
	if (mode == "enh")
		printf "\nenhanced IPoIB (softib enhanced=1, offloads on, 2 vCPUs: 2 channels)\n"
	else
		printf "\noffloads %s (softib ud_csum/ud_tso %s)\n", mode, mode == "on" ? "1" : "0"
	printf "%-26s %12s %12s %11s %9s %13s\n", "medians of " rounds " rounds", "ours", "stock", "ours/stock", "target", "ours/ceiling"
	printf "%-26s %12s %12s %11s %9s %13s\n", "--------------------------", "------------", "------------", "-----------", "---------", "-------------"
	printf "{\n  \"kernel\": \"%s\",\n  \"offloads\": \"%s\",\n  \"rounds\": %d,\n  \"drivers\": \"%s\",\n  \"note\": \"medians over rounds; ours/stock = ratio of the medians; ours/ceiling = median of per-boot ratios to the softib blast ceiling measured in the same boot (TCP: bytes/s at 2048-byte frames, UDP: packets/s at 96-byte frames)\",\n  \"metrics\": {\n", kver, mode, rounds, drivers >json
	for (i = 1; i <= nm; i++) {
		m = M[i]
		o = median(A SUBSEP m); s = median(B SUBSEP m)
		rt = ratio(o, s)
		ce = (m in C) ? median(A SUBSEP C[m]) : ""
		cs = (m in C) ? median(B SUBSEP C[m]) : ""
		printf "%-26s %12s %12s %11s %9s %13s\n", L[m], fmt(o, S[m], P[m]), fmt(s, S[m], P[m]),
			fmt(rt, 1, 2), G[m], (m in C) ? fmt(ce, 1, 2) " (st " fmt(cs, 1, 2) ")" : ""
		if (m in C && ratio(ce, cs) != "")
			printf "%-26s %12s %12s %11s\n", "  normalized by ceiling", "", "", fmt(ratio(ce, cs), 1, 2)
		printf "    \"%s\": {\"ours\": %s, \"stock\": %s, \"ours_over_stock\": %s, \"ours_over_ceiling\": %s, \"stock_over_ceiling\": %s, \"ours_over_stock_normalized\": %s, \"target\": \"%s\"}%s\n",
			m, jnum(o), jnum(s), jnum(rt), jnum(ce), jnum(cs), jnum(ratio(ce, cs)), G[m], i < nm ? "," : "" >json
	}
	printf "  }\n}\n" >json
	close(json)
}' "$ROUNDS_TXT"
}
for m in $OFFLOADS; do
	if [ "$m" = on ]; then
		table on "$OUT/results.json"
	else
		table "$m" "$OUT/results.$m.json"
	fi
done

# gain LEGACY ENH: each driver's medians on the enhanced datapath over its
# own on the verbs datapath (what a ConnectX-4 user gains over a ConnectX-3)
gain() {
awk -v rounds="$ROUNDS" -v A0="$(label ours "$1")" -v A1="$(label ours "$2")" \
	-v B0="$(label stock "$1")" -v B1="$(label stock "$2")" "$AWK_MEDIAN"'
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "n/a" : sprintf("%.2f", a / b) }
$4 != "" { add($2 SUBSEP $3, $4) }
END {
	n = split("tcp1_bps tcp4_bps tcp8_bps udp64_pps udp64_dev_rx_pps rtt_p50_us tcp1_cpu_ns_per_kB", M, " ")
	printf "\nenhanced over legacy datapath (medians of %d rounds; RTT and CPU: lower is better)\n", rounds
	printf "%-26s %12s %12s %14s\n", "", "ours", "stock", "ours/stock gain"
	for (i = 1; i <= n; i++) {
		m = M[i]
		go = ratio(median(A1 SUBSEP m), median(A0 SUBSEP m))
		gs = ratio(median(B1 SUBSEP m), median(B0 SUBSEP m))
		printf "%-26s %12s %12s %14s\n", m, go, gs, (go == "n/a" || gs == "n/a" || gs == 0) ? "n/a" : sprintf("%.2f", go / gs)
	}
}' "$ROUNDS_TXT"
}
if [[ " $OFFLOADS " == *" on "* && " $OFFLOADS " == *" enh "* ]]; then
	gain on enh
fi

echo
echo "bench: results in ${OUT#"$REPO"/}/results.json, per-round figures in ${OUT#"$REPO"/}/rounds.txt ($(($(date +%s) - T0)) s)"
echo "bench: every figure is from QEMU TCG on a shared machine: compare the ratios, not the absolute numbers"
# could not measure = some driver has no figure at all
rc=0
for m in $OFFLOADS; do
	for d in $DRIVERS; do
		grep -q " $(label "$d" "$m") tcp1_bps " "$OUT/rounds.txt" ||
			{ echo "bench: no figures for $(label "$d" "$m")" >&2; rc=1; }
	done
done
exit $rc
