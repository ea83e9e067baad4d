# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=dash
#
# Sourced by /init (tests/vm/guest/init) after the case script, if the case
# asked to hand PID 1 over to another root filesystem as an initramfs does
# at the end of a diskless boot (tests/cases/nfsroot.sh): the case wrote
# "NEWROOT INIT" to $_T_STATE/handoff (NEWROOT a mount point, INIT a path
# in it). Then, as PID 1:
#  - every other process is killed: their programs are freed with the
#    initramfs (e.g. the vm_barrier listener; barriers end here);
#  - /dev, /proc, /sys (with debugfs) and /run (with the test state of
#    tests/lib.sh: the test numbering and the verdict go on) move into
#    NEWROOT;
#  - switch_root NEWROOT INIT, with this environment (RESULTS, TEST_NONCE..).
# INIT must finish the boot as /init does: kernel_check, "END $TEST_NONCE" on
# $RESULTS, poweroff (tests/vm/nfsroot/nfs-init). If the handoff cannot be
# done, a failed test is reported and this returns; /init then goes on.

vm_handoff() {
	local newroot init m
	read -r newroot init <"$_T_STATE/handoff"
	rm -f "$_T_STATE/handoff"
	if [ "$$" != 1 ]; then
		fail "handoff to $newroot" "not PID 1"
		return 1
	fi
	if ! awk -v d="$newroot" '$2 == d { f = 1 } END { exit !f }' /proc/mounts; then
		fail "handoff to $newroot" "$newroot is not a mount point"
		return 1
	fi
	for m in "$init" /dev /proc /sys /run; do
		if [ ! -e "$newroot$m" ]; then
			fail "handoff to $newroot" "$newroot$m does not exist"
			return 1
		fi
	done
	echo "init: handing over to $newroot $init up=$(cut -d' ' -f1 /proc/uptime)s"
	kill -KILL -1 2>/dev/null
	for m in /dev /proc /sys /run; do
		mount -o move "$m" "$newroot$m" || {
			echo "init: cannot move $m into $newroot" >&2
			break
		}
	done
	echo "init: switch_root up=$(cut -d' ' -f1 "$newroot/proc/uptime")s"
	exec switch_root "$newroot" "$init"
}

vm_handoff
