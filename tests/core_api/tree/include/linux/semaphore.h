/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sem2mutex test fixture: the shape of a 6.1 include/linux/semaphore.h,
 * cut down to what the counting API semantic patches touch.
 */
#ifndef __LINUX_SEMAPHORE_H
#define __LINUX_SEMAPHORE_H

struct semaphore {
	int count;
};

#define DEFINE_SEMAPHORE(name)	\
	struct semaphore name = { .count = 1 }

static inline void sema_init(struct semaphore *sem, int val)
{
	sem->count = val;
}

extern void down(struct semaphore *sem);
extern int __must_check down_interruptible(struct semaphore *sem);
extern int __must_check down_killable(struct semaphore *sem);
extern int __must_check down_trylock(struct semaphore *sem);
extern int __must_check down_timeout(struct semaphore *sem, long jiffies);
extern void up(struct semaphore *sem);

#endif /* __LINUX_SEMAPHORE_H */
