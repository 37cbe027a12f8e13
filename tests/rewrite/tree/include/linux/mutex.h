/* SPDX-License-Identifier: GPL-2.0 */
/* Stand-in for the 6.1 header: declarations only, for the fixtures. */
#ifndef __LINUX_MUTEX_H
#define __LINUX_MUTEX_H

struct mutex {
	long owner;
};

#define __MUTEX_INITIALIZER(name) { .owner = 0 }
#define DEFINE_MUTEX(name) struct mutex name = __MUTEX_INITIALIZER(name)

void mutex_init(struct mutex *lock);
void mutex_lock(struct mutex *lock);
int mutex_lock_interruptible(struct mutex *lock);
int mutex_lock_killable(struct mutex *lock);
int mutex_trylock(struct mutex *lock);
void mutex_unlock(struct mutex *lock);

#endif /* __LINUX_MUTEX_H */
