// SPDX-License-Identifier: GPL-2.0
/* Includes <linux/mutex.h> already: <linux/semaphore.h> just goes. */
#include <linux/mutex.h>
#include <linux/semaphore.h>

#include "tidy.h"

int tidy_extra(struct tidy_dev *dev)
{
	down(&dev->io_lock);
	down(&dev->slot_lock);
	dev->users--;
	up(&dev->slot_lock);
	up(&dev->io_lock);
	return 0;
}
