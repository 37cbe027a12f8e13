// SPDX-License-Identifier: GPL-2.0
#include "../../../drivers/demo/demo.h"

int board_read(struct demo_device *demo)
{
	return demo_read(demo);
}
