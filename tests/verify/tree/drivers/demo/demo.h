/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _DEMO_DEMO_H
#define _DEMO_DEMO_H

#include <linux/semaphore.h>

struct demo_device {
	struct semaphore lock;
	int value;
};

int demo_read(struct demo_device *demo);

#endif /* _DEMO_DEMO_H */
