// SPDX-License-Identifier: GPL-2.0
#include <linux/semaphore.h>

static DEFINE_SEMAPHORE(legacy_sem);

/* A comment that says up() and down() is no call. */
int legacy_poke(void)
{
	if (down_interruptible(&legacy_sem))
		return -EINTR;
	up(&legacy_sem);
	return 0;
}
