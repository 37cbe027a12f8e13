/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _RW_RW_H
#define _RW_RW_H

#include <linux/semaphore.h>
#include <linux/types.h>

/* Used by decls.c and user.c; every member a mutex. */
struct rw_dev {
	int users;
	struct semaphore	lock;	/* protects users */
	struct semaphore slots[2];
	struct {
		struct semaphore poll_sem;
		int polls;
	} cmd;
	union {
		struct semaphore u_sem;
		long raw;
	};
};

extern struct semaphore rw_global_sem;

int rw_dev_use(struct rw_dev *dev);

#endif /* _RW_RW_H */
