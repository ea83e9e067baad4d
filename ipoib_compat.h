/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The only place where ib_ipoib and softib (tests/softib/, which builds
 * with a copy of this file) differ by kernel version. Debian 12's 6.1 and
 * the 6.12 of its security suite (Debian 13's kernel) are supported; each
 * entry names the kernel that changed what, and the .c files use the
 * names below without any #if of their own. Rules: Documentation/design.rst.
 */
#ifndef IPOIB_COMPAT_H
#define IPOIB_COMPAT_H

#include <linux/version.h>
#include <rdma/ib_verbs.h>

/*
 * v6.12 moved <asm/unaligned.h> to <linux/unaligned.h>; 6.1 has only the
 * former. (A version test, not __has_include(): Debian 12's sparse 0.6.4
 * cannot parse that.)
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * v6.5 moved the GSO helpers (skb_gso_validate_network_len()) out of
 * <linux/skbuff.h> into <net/gso.h>, which 6.1 does not have.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
#include <net/gso.h>
#endif

/*
 * v6.11 passes struct uverbs_attr_bundle * instead of struct ib_udata * as
 * the third argument of ib_device_ops.create_cq (NULL for kernel CQs in
 * both).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define IB_COMPAT_CREATE_CQ_ARG	struct uverbs_attr_bundle
#else
#define IB_COMPAT_CREATE_CQ_ARG	struct ib_udata
#endif

/*
 * v6.3 (the rework of multiple path records per query) made the num_prs
 * argument of the ib_sa_path_rec_get() callback unsigned int; 6.1 has int.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define IB_COMPAT_NUM_PRS	unsigned int
#else
#define IB_COMPAT_NUM_PRS	int
#endif

/*
 * v6.7 added IB_SPEED_XDR (200 Gb/s per lane) to enum ib_port_speed; 6.1
 * lacks it. An older kernel never reports it, so naming it there with the
 * newer value is harmless and keeps the speed switch whole.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0)
#define IB_SPEED_XDR	256
#endif

#endif /* IPOIB_COMPAT_H */
