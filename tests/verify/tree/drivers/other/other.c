// SPDX-License-Identifier: GPL-2.0
#include "demo.h"

int other_demo(void)
{
	return 0;
}
