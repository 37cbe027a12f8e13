/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _TIDY_KEEP_H
#define _TIDY_KEEP_H

#include <linux/semaphore.h>

/*
 * Its lock becomes a mutex, but keep.c gets struct semaphore through this
 * header: <linux/semaphore.h> stays, <linux/mutex.h> joins it.
 */
struct keep_dev {
	struct semaphore lock;
	int count;
};

#endif /* _TIDY_KEEP_H */
