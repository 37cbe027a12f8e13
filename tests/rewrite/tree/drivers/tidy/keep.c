// SPDX-License-Identifier: GPL-2.0
/* A counting semaphore, declared with the struct semaphore keep.h brings. */
#include "keep.h"

static struct semaphore keep_pool;

void keep_init(struct keep_dev *dev)
{
	sema_init(&dev->lock, 1);
	sema_init(&keep_pool, 4);
}

int keep_use(struct keep_dev *dev)
{
	down(&dev->lock);
	down(&keep_pool);
	dev->count++;
	up(&keep_pool);
	up(&dev->lock);
	return 0;
}

int keep_wait(struct keep_dev *dev)
{
	if (down_killable(&keep_pool))
		return 1;
	if (down_interruptible(&keep_pool)) {
		up(&keep_pool);
		return 1;
	}
	dev->count += 2;
	up(&keep_pool);
	up(&keep_pool);
	return 0;
}
