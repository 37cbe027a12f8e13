/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ASM_RW_H
#define _ASM_RW_H

#define RW_TIMEOUT_MS 100

#endif /* _ASM_RW_H */
