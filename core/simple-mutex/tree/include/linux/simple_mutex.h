/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Simple exchange-based mutexes
 *
 * Ported to Linux 6.1 from David Howells' "MUTEX: Introduce simple mutex
 * implementation" (December 2005):
 *
 * - the mutex is grabbed with a single xchg() of its state word;
 * - a task that fails to grab it sleeps on a FIFO list under a spinlock;
 * - release hands the mutex directly to the first waiter, so a sleeping
 *   waiter can never be overtaken by a newcomer.
 *
 * struct simple_mutex is a type of its own, so that it can be used (and
 * measured) next to the generic mutex.  With CONFIG_MUTEX_SIMPLE=y the
 * same implementation also provides struct mutex, see
 * <linux/mutex-simple.h>.
 *
 * See kernel/locking/simple_mutex.c for the implementation.
 */
#ifndef __LINUX_SIMPLE_MUTEX_H
#define __LINUX_SIMPLE_MUTEX_H

#include <linux/compiler.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/spinlock_types.h>
#include <linux/types.h>

struct task_struct;

/*
 * The lock itself, without lockdep state, shared by struct simple_mutex and
 * (with CONFIG_MUTEX_SIMPLE=y) struct mutex:
 *
 * - @state is 0 when the mutex is free and 1 while it is held, including
 *   while it is being handed over to the first waiter;
 * - @wait_list holds the sleeping waiters in arrival order; it and the
 *   hand-over are protected by @wait_lock;
 * - @owner (CONFIG_DEBUG_MUTEX_OWNER) is the task holding the mutex.
 */
struct simple_mutex_base {
	int			state;
	raw_spinlock_t		wait_lock;
	struct list_head	wait_list;
#ifdef CONFIG_DEBUG_MUTEX_OWNER
	struct task_struct	*owner;
#endif
};

#define __SIMPLE_MUTEX_BASE_INITIALIZER(basename)			\
	{ .state = 0							\
	, .wait_lock = __RAW_SPIN_LOCK_UNLOCKED(basename.wait_lock)	\
	, .wait_list = LIST_HEAD_INIT(basename.wait_list) }

/**
 * simple_mutex_base_is_locked - is the mutex held
 * @base: the lock to be queried
 *
 * Returns true while the mutex is held or being handed to a waiter.
 */
static inline bool simple_mutex_base_is_locked(const struct simple_mutex_base *base)
{
	return READ_ONCE(base->state) != 0;
}

struct simple_mutex {
	struct simple_mutex_base	base;
#ifdef CONFIG_DEBUG_LOCK_ALLOC
	struct lockdep_map		dep_map;
#endif
};

#ifdef CONFIG_DEBUG_LOCK_ALLOC
# define __DEP_MAP_SIMPLE_MUTEX_INITIALIZER(lockname)			\
	, .dep_map = {							\
		.name = #lockname,					\
		.wait_type_inner = LD_WAIT_SLEEP,			\
	}
#else
# define __DEP_MAP_SIMPLE_MUTEX_INITIALIZER(lockname)
#endif

#define __SIMPLE_MUTEX_INITIALIZER(lockname)				\
	{ .base = __SIMPLE_MUTEX_BASE_INITIALIZER(lockname.base)	\
	__DEP_MAP_SIMPLE_MUTEX_INITIALIZER(lockname) }

#define DEFINE_SIMPLE_MUTEX(lockname)					\
	struct simple_mutex lockname = __SIMPLE_MUTEX_INITIALIZER(lockname)

void __simple_mutex_init(struct simple_mutex *lock, const char *name,
			 struct lock_class_key *key);

/**
 * simple_mutex_init - initialize a simple mutex to the unlocked state
 * @lock: the mutex to be initialized
 *
 * It is not allowed to initialize a mutex that is held.
 */
#define simple_mutex_init(lock)						\
do {									\
	static struct lock_class_key __key;				\
									\
	__simple_mutex_init((lock), #lock, &__key);			\
} while (0)

/**
 * simple_mutex_is_locked - is the simple mutex held
 * @lock: the mutex to be queried
 */
static inline bool simple_mutex_is_locked(struct simple_mutex *lock)
{
	return simple_mutex_base_is_locked(&lock->base);
}

void simple_mutex_lock_nested(struct simple_mutex *lock, unsigned int subclass);
int __must_check simple_mutex_lock_interruptible_nested(struct simple_mutex *lock,
							unsigned int subclass);
int __must_check simple_mutex_lock_killable_nested(struct simple_mutex *lock,
						   unsigned int subclass);
int simple_mutex_trylock(struct simple_mutex *lock);
void simple_mutex_unlock(struct simple_mutex *lock);
void simple_mutex_destroy(struct simple_mutex *lock);

#define simple_mutex_lock(lock)	simple_mutex_lock_nested(lock, 0)
#define simple_mutex_lock_interruptible(lock)				\
	simple_mutex_lock_interruptible_nested(lock, 0)
#define simple_mutex_lock_killable(lock)				\
	simple_mutex_lock_killable_nested(lock, 0)

#ifdef CONFIG_DEBUG_MUTEX_OWNER
unsigned long simple_mutex_bad_release_count(void);
#endif

#endif /* __LINUX_SIMPLE_MUTEX_H */
