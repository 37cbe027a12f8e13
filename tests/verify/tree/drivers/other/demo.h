/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OTHER_DEMO_H
#define _OTHER_DEMO_H

int other_demo(void);

#endif /* _OTHER_DEMO_H */
