/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _DEMO_SUB_INNER_H
#define _DEMO_SUB_INNER_H

#include "../demo.h"

#endif /* _DEMO_SUB_INNER_H */
