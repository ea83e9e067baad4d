# SPDX-License-Identifier: GPL-2.0
#
# Sourced by tests/run.sh and tests/vm/demo.sh (bash): boot the test VM(s)
# under QEMU TCG. Needs kernel.sh's VMLINUZ and VM_MEM.

# qemu_run ID INITRD OUTPREFIX APPEND NETARGS...: print nothing, run QEMU
# with a hard timeout of $VM_TIMEOUT seconds. The console goes to
# OUTPREFIX.console, the second serial port (results) to OUTPREFIX.results,
# which is removed first so that a stale verdict can never be read.
# With VM_BOOT_STALL=S (single-VM boots, see vm_boot), a guest that has not
# started /init S seconds after QEMU did, or that died before it, is booted
# again, up to twice; OUTPREFIX.retried says so and run.sh prints it (the
# consoles are kept as OUTPREFIX.console.tryN). Under TCG on a loaded host
# the kernel now and then stays in early boot, or (debug kernel) KASAN
# reports an interrupt taken before its descriptor was set up; either way no
# module is loaded yet, so it is never the code under test.
# VM_CPU: QEMU's CPU model (default Westmere: SSE4.2, no AVX, RDRAND or
# 5-level paging). Under TCG every guest instruction is emulated and the
# suite is bound by the host's CPU; with "max" the guests took 15-20% more
# host CPU time for the same cases (ipoib-basic, ipoib-offload, rdmacm-rc:
# 110-113 s of user time against 87 s, 2026-12-08).
qemu_run() {
	local id=$1 initrd=$2 out=$3 append=$4 smp=${VM_SMP:-2} try qpid t0 stalled
	shift 4
	rm -f "$out.retried"
	for try in 1 2 3; do
		rm -f "$out.results" "$out.console" "$out.rc" "$out.pid" "$out.stopped"
		: >"$out.results"
		timeout -k 5 "${VM_TIMEOUT:-300}" qemu-system-x86_64 \
			-accel tcg -M pc -cpu "${VM_CPU:-Westmere}" -m "$VM_MEM" -smp "$smp" \
			-nodefaults -display none -no-reboot -name "ipoib-test-vm$id" -pidfile "$out.pid" \
			-kernel "$VMLINUZ" -initrd "$initrd" \
			-append "console=ttyS0,115200 loglevel=5 log_buf_len=8M printk.devkmsg=on panic_on_warn=1 oops=panic panic=-1 no_timer_check mitigations=off random.trust_cpu=on rdinit=/init $append" \
			-chardev "file,id=con,path=$out.console" -serial chardev:con \
			-chardev "file,id=res,path=$out.results" -serial chardev:res \
			"$@" </dev/null >"$out.qemu" 2>&1 &
		qpid=$!
		stalled=0
		if [ "${VM_BOOT_STALL:-0}" -gt 0 ] && [ "$try" -lt 3 ]; then
			t0=$SECONDS
			while kill -0 "$qpid" 2>/dev/null; do
				grep -q 'init: case=' "$out.console" 2>/dev/null && break
				if [ $((SECONDS - t0)) -ge "$VM_BOOT_STALL" ]; then
					stalled=1
					[ -s "$out.pid" ] && kill "$(cat "$out.pid")" 2>/dev/null
					break
				fi
				sleep 1
			done
		fi
		wait "$qpid"
		echo $? >"$out.rc"
		rm -f "$out.pid"
		[ "${VM_BOOT_STALL:-0}" -gt 0 ] && [ "$try" -lt 3 ] || break
		if [ $stalled = 1 ]; then
			echo "no /init ${VM_BOOT_STALL} s after QEMU started (early-boot stall: $(tr -d '\r' <"$out.console" | tail -n 1 | cut -c1-100)): booted again" >>"$out.retried"
		elif [ ! -s "$out.results" ] && ! grep -q 'init: case=' "$out.console" 2>/dev/null; then
			# died before /init: no module of ours was loaded yet
			echo "the kernel died before /init ($(tr -d '\r' <"$out.console" | grep -m1 -o 'BUG:.*\|Kernel panic.*' | cut -c1-100)): booted again" >>"$out.retried"
		else
			break
		fi
		cp "$out.console" "$out.console.try$try"
	done
}

# qemu_free_port: a TCP port on 127.0.0.1 nobody listens on
qemu_free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		ss -Hltn "( sport = :$p )" 2>/dev/null | grep -q . || { echo $p; return; }
	done
}

# qemu_wait_listen PORT PID: wait up to 20 s until PORT listens (QEMU VM0 up)
qemu_wait_listen() {
	local i
	for i in $(seq 1 100); do
		ss -Hltn "( sport = :$1 )" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

# vm_boot COUNT INITRD OUTPREFIX APPEND0 [APPEND1]: boot 1 VM, or 2 VMs linked
# by a QEMU socket netdev on 127.0.0.1 (VM0 listens, VM1 connects), MACs
# 52:54:00:00:00:01 and :02. Output files are OUTPREFIX.vmN.*.
# VM_INITRD0/VM_INITRD1, if set, replace INITRD for that VM (vmhook.sh);
# VM_VMLINUZ1, if set, replaces VMLINUZ for VM1 (a peer on another kernel,
# run.sh's PEER_KVER).
vm_boot() {
	local count=$1 initrd=$2 out=$3 port p0 p1
	if [ "$count" = 1 ]; then
		# a restart is safe only without a peer on the socket link
		VM_BOOT_STALL=${VM_BOOT_STALL:-$([ "$KERNEL" = debug ] && echo 180 || echo 90)} \
			qemu_run 0 "${VM_INITRD0:-$initrd}" "$out.vm0" "$4"
		return
	fi
	port=$(qemu_free_port)
	VM_SMP=1 qemu_run 0 "${VM_INITRD0:-$initrd}" "$out.vm0" "$4" \
		-netdev "socket,id=n0,listen=127.0.0.1:$port" \
		-device "virtio-net-pci,netdev=n0,mac=52:54:00:00:00:01" &
	p0=$!
	if ! qemu_wait_listen "$port" "$p0"; then
		echo "vm_boot: VM0 did not listen on 127.0.0.1:$port" >>"$out.vm0.qemu"
		wait "$p0"
		: >"$out.vm1.results"
		echo "VM0 failed to start" >"$out.vm1.console"
		echo 1 >"$out.vm1.rc"
		return
	fi
	VMLINUZ=${VM_VMLINUZ1:-$VMLINUZ} VM_SMP=1 qemu_run 1 "${VM_INITRD1:-$initrd}" "$out.vm1" "$5" \
		-netdev "socket,id=n0,connect=127.0.0.1:$port" \
		-device "virtio-net-pci,netdev=n0,mac=52:54:00:00:00:02" &
	p1=$!
	# If one VM ends without its end marker (panic, crash), the other would
	# wait for it until its own timeout: stop it after a short grace period.
	local fin= other=1 i
	wait -n -p fin "$p0" "$p1"
	[ "$fin" = "$p1" ] && other=0
	if ! grep -q '^END ' "$out.vm$((1 - other)).results" 2>/dev/null; then
		for i in $(seq 1 50); do
			kill -0 "$([ $other = 0 ] && echo "$p0" || echo "$p1")" 2>/dev/null || break
			sleep 0.2
		done
		if [ -s "$out.vm$other.pid" ] && kill "$(cat "$out.vm$other.pid")" 2>/dev/null; then
			echo "vm_boot: stopped VM$other: VM$((1 - other)) ended without its end marker" \
				>"$out.vm$other.stopped"
		fi
	fi
	wait "$p0" "$p1"
}
