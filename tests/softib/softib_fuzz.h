/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib: seeded generator of malformed frames (softib_fuzz.c), behind the
 * per-device debugfs knob "inject_random".
 */
#ifndef SOFTIB_FUZZ_H
#define SOFTIB_FUZZ_H

struct dentry;
struct softib_dev;

/* Create <dir>/inject_random for sdev. */
void softib_fuzz_debugfs_add(struct softib_dev *sdev, struct dentry *dir);

#endif /* SOFTIB_FUZZ_H */
