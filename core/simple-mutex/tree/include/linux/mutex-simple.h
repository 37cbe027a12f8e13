/* SPDX-License-Identifier: GPL-2.0 */
/*
 * struct mutex implemented by the simple exchange-based mutex
 *
 * With CONFIG_MUTEX_SIMPLE=y, <linux/mutex.h> takes struct mutex and its
 * initializers from here instead of from the generic mutex, the way
 * CONFIG_PREEMPT_RT takes them from rtmutex.  The lock functions declared
 * by <linux/mutex.h> are then implemented in kernel/locking/simple_mutex.c.
 */
#ifndef __LINUX_MUTEX_SIMPLE_H
#define __LINUX_MUTEX_SIMPLE_H

#ifndef __LINUX_MUTEX_H
#error "linux/mutex-simple.h must not be included directly; use linux/mutex.h"
#endif

#include <linux/simple_mutex.h>

/*
 * The same lock as struct simple_mutex; a separate type so that
 * lockdep_assert_held(), mutex_lock_nest_lock() and friends find the
 * dep_map member where they look for it.
 */
struct mutex {
	struct simple_mutex_base	base;
#ifdef CONFIG_DEBUG_LOCK_ALLOC
	struct lockdep_map		dep_map;
#endif
};

#define __MUTEX_INITIALIZER(mutexname)					\
{									\
	.base = __SIMPLE_MUTEX_BASE_INITIALIZER(mutexname.base)		\
	__DEP_MAP_MUTEX_INITIALIZER(mutexname)				\
}

#define DEFINE_MUTEX(mutexname)						\
	struct mutex mutexname = __MUTEX_INITIALIZER(mutexname)

void __mutex_init(struct mutex *lock, const char *name,
		  struct lock_class_key *key);

/**
 * mutex_init - initialize the mutex
 * @mutex: the mutex to be initialized
 *
 * Initialize the mutex to unlocked state.
 *
 * It is not allowed to initialize an already locked mutex.
 */
#define mutex_init(mutex)						\
do {									\
	static struct lock_class_key __key;				\
									\
	__mutex_init((mutex), #mutex, &__key);				\
} while (0)

/**
 * mutex_is_locked - is the mutex locked
 * @lock: the mutex to be queried
 *
 * Returns true if the mutex is locked, false if unlocked.
 */
static inline bool mutex_is_locked(struct mutex *lock)
{
	return simple_mutex_base_is_locked(&lock->base);
}

#ifdef CONFIG_DEBUG_MUTEX_OWNER
void mutex_destroy(struct mutex *lock);
#else
static inline void mutex_destroy(struct mutex *lock) {}
#endif

#endif /* __LINUX_MUTEX_SIMPLE_H */
