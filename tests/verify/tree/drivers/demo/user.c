// SPDX-License-Identifier: GPL-2.0
#include "sub/inner.h"

int demo_user(struct demo_device *demo)
{
	return demo_read(demo);
}
