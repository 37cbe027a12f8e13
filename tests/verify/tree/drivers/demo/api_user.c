// SPDX-License-Identifier: GPL-2.0
#include <linux/demo_api.h>

int demo_api_user(void)
{
	return demo_api();
}
