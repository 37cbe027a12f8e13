/* SPDX-License-Identifier: GPL-2.0 */
/* Stand-in for the 6.1 header: declarations only, for the fixtures. */
#ifndef __LINUX_SEMAPHORE_H
#define __LINUX_SEMAPHORE_H

struct semaphore {
	unsigned int count;
};

#define __SEMAPHORE_INITIALIZER(name, n) { .count = n }
#define DEFINE_SEMAPHORE(name) \
	struct semaphore name = __SEMAPHORE_INITIALIZER(name, 1)

void sema_init(struct semaphore *sem, int val);
void down(struct semaphore *sem);
int down_interruptible(struct semaphore *sem);
int down_killable(struct semaphore *sem);
int down_trylock(struct semaphore *sem);
int down_timeout(struct semaphore *sem, long jiffies);
void up(struct semaphore *sem);

#endif /* __LINUX_SEMAPHORE_H */
