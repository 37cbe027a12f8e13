/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _TIDY_TIDY_H
#define _TIDY_TIDY_H

#include <linux/types.h>
#include <linux/semaphore.h>
#include <linux/list.h>

/*
 * Members aligned the way hinic aligns them, with spaces and with tabs:
 * the names must stay in their columns once the type is struct mutex.
 */
struct tidy_dev {
	unsigned int                    flags;
	struct semaphore                cmd_lock;
	struct list_head                list;
	int			users;
	struct semaphore	io_lock;
	struct semaphore slot_lock;
};

int tidy_run(struct tidy_dev *dev);
int tidy_extra(struct tidy_dev *dev);

#endif /* _TIDY_TIDY_H */
