/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_DEMO_API_H
#define _LINUX_DEMO_API_H

int demo_api(void);

#endif /* _LINUX_DEMO_API_H */
