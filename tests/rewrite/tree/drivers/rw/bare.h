/* SPDX-License-Identifier: GPL-2.0 */
/* A header that includes nothing: its users bring the types. */
#ifndef _RW_BARE_H
#define _RW_BARE_H

struct rw_bare {
	struct semaphore bare_lock;
	int state;
};

#endif /* _RW_BARE_H */
