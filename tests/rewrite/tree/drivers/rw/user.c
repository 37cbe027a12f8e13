// SPDX-License-Identifier: GPL-2.0
/* The second user of struct rw_dev and of the global semaphore. */
#include "rw.h"

int rw_dev_use(struct rw_dev *dev)
{
	int users;

	if (down_interruptible(&dev->lock))
		return -EINTR;
	users = ++dev->users;
	up(&dev->lock);
	return users;
}

void rw_global_touch(void)
{
	down(&rw_global_sem);
	up(&rw_global_sem);
}
