# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034
#
# Sourced by tests/run.sh (bash): per-case, per-VM additions to a boot.
# A case may name a host-side hook in its header:
#
#   # vm-hook: tests/vm/nfsroot/vm-hook.sh
#
# For each of its VMs the runner calls `HOOK VM_ID DIR` (env of kernel.sh:
# REPO BUILD KVER MODROOT ...) with an empty DIR. The hook may create
#   DIR/root/   files for that VM's initramfs, one more layer on top of the
#               common one (see mkinitramfs.sh INITRAMFS_EXTRA); kernel
#               modules under DIR/root/lib/modules/$KVER/ are indexed by
#               depmod with the others, so that modprobe finds them;
#   DIR/append  more kernel command-line parameters for that VM.
# The hook's output goes to DIR.log.

# case_vm_hook CASEFILE OUTPREFIX VMS: run the case's hook, if any, for each
# VM; set VM_INITRD0/VM_INITRD1 (a per-VM initramfs, or empty for the
# common one, which vm_boot then uses) and VM_APPEND0/VM_APPEND1. Returns 1
# if the hook or the initramfs failed.
case_vm_hook() {
	local f=$1 out=$2 vms=$3 hook i dir
	VM_INITRD0='' VM_INITRD1='' VM_APPEND0='' VM_APPEND1=''
	hook=$(hdr "$f" vm-hook)
	[ -n "$hook" ] || return 0
	for i in $(seq 0 $((vms - 1))); do
		dir=$out.vm$i.hook
		rm -rf "$dir" && mkdir -p "$dir"
		"$REPO/$hook" "$i" "$dir" >"$dir.log" 2>&1 || return 1
		if [ -d "$dir/root" ]; then
			INITRAMFS_EXTRA=$dir/root "$REPO/tests/vm/mkinitramfs.sh" "$out.vm$i.initrd" \
				>>"$dir.log" 2>&1 || return 1
			printf -v "VM_INITRD$i" '%s' "$out.vm$i.initrd"
		fi
		[ -s "$dir/append" ] && printf -v "VM_APPEND$i" '%s' "$(tr '\n' ' ' <"$dir/append")"
	done
	return 0
}

# case_vm_hook_clean OUTPREFIX: drop what case_vm_hook made (the per-VM
# initramfs images are big and can be made again); keeps the logs.
case_vm_hook_clean() {
	rm -rf "$1".vm*.hook "$1".vm*.initrd
	VM_INITRD0='' VM_INITRD1='' VM_APPEND0='' VM_APPEND1=''
}
