// SPDX-License-Identifier: GPL-2.0
/* Found through -I$(srctree)/drivers in the Makefile's ccflags. */
#include "demo/demo.h"

int third_read(struct demo_device *demo)
{
	return demo_read(demo);
}
