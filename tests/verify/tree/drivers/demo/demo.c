// SPDX-License-Identifier: GPL-2.0
#include "demo.h"

int demo_read(struct demo_device *demo)
{
	int value;

	down(&demo->lock);
	value = demo->value;
	up(&demo->lock);
	return value;
}
