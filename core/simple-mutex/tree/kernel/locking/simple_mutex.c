// SPDX-License-Identifier: GPL-2.0
/*
 * Simple exchange-based mutexes
 *
 * Ported to Linux 6.1 from lib/mutex-simple.c of David Howells' "MUTEX:
 * Introduce simple mutex implementation" (December 2005):
 *
 *   Copyright (C) 2005 Red Hat, Inc. All Rights Reserved.
 *   Written by David Howells (dhowells@redhat.com)
 *
 * The fast path is one xchg() of the state word.  A task that finds the
 * mutex held queues itself at the tail of wait_list under wait_lock and
 * sleeps.  Release takes wait_lock: with no waiter it clears the state
 * word, otherwise the mutex stays held and passes to the first waiter,
 * which wakes up already owning it.  Since the state word never drops to
 * zero while anybody waits, a newcomer cannot overtake a sleeping waiter:
 * hand-over is strictly FIFO.  There is no optimistic spinning.
 *
 * Differences from the 2005 code: the waiter learns of the hand-over from
 * a flag written with release semantics after the releaser is done with
 * the waiter (the original read waiter->task after unlinking it, racing
 * with the waiter's return); wake-ups go through a wake_q after wait_lock
 * is dropped; the lock is annotated for lockdep; and killable sleeps are
 * supported.
 */

#include <linux/atomic.h>
#include <linux/debug_locks.h>
#include <linux/export.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/sched/debug.h>
#include <linux/sched/signal.h>
#include <linux/sched/wake_q.h>
#include <linux/simple_mutex.h>
#include <linux/spinlock.h>
#include <trace/events/lock.h>

/*
 * A sleeping task, queued on its own stack.  ->granted is set by the
 * releaser that hands the mutex over; after that the releaser must not
 * touch the waiter again.
 */
struct simple_mutex_waiter {
	struct list_head	list;
	struct task_struct	*task;
	bool			granted;
};

#ifdef CONFIG_DEBUG_LOCK_ALLOC
# define simple_dep_map(lock)	(&(lock)->dep_map)
#else
# define simple_dep_map(lock)	NULL
#endif

static __always_inline bool simple_mutex_grab(struct simple_mutex_base *base)
{
	return xchg(&base->state, 1) == 0;
}

static __always_inline void simple_mutex_set_owner(struct simple_mutex_base *base,
						   struct task_struct *owner)
{
#ifdef CONFIG_DEBUG_MUTEX_OWNER
	WRITE_ONCE(base->owner, owner);
#endif
}

static void simple_mutex_base_init(struct simple_mutex_base *base)
{
	base->state = 0;
	raw_spin_lock_init(&base->wait_lock);
	INIT_LIST_HEAD(&base->wait_list);
	simple_mutex_set_owner(base, NULL);
}

#ifdef CONFIG_DEBUG_MUTEX_OWNER
static atomic_long_t simple_mutex_bad_releases = ATOMIC_LONG_INIT(0);

static const char *simple_mutex_name(struct lockdep_map *dep_map)
{
#ifdef CONFIG_DEBUG_LOCK_ALLOC
	if (dep_map && dep_map->name)
		return dep_map->name;
#endif
	return "?";
}

/*
 * Report a release by a task that does not own the mutex, as the original
 * did, naming both tasks on a line that starts with "BUG:" so that log
 * scanners catch it.  The owner's task_struct is only known to be valid if
 * it still holds the mutex; a mutex whose owner has exited is a bug of its
 * own.  Tests that provoke the report on purpose set debug_locks_silent, as
 * the locking selftests do, and read the counter instead.
 */
static noinline void simple_mutex_report_bad_release(struct simple_mutex_base *base,
						     struct lockdep_map *dep_map,
						     struct task_struct *owner)
{
	atomic_long_inc(&simple_mutex_bad_releases);
	if (debug_locks_silent)
		return;

	if (owner)
		pr_err("BUG: mutex %s (%p) released by %s/%d but owned by %s/%d\n",
		       simple_mutex_name(dep_map), base,
		       current->comm, task_pid_nr(current),
		       owner->comm, task_pid_nr(owner));
	else
		pr_err("BUG: mutex %s (%p) released by %s/%d but not held\n",
		       simple_mutex_name(dep_map), base,
		       current->comm, task_pid_nr(current));
	dump_stack();
}

static __always_inline void simple_mutex_check_owner(struct simple_mutex_base *base,
						     struct lockdep_map *dep_map)
{
	struct task_struct *owner = READ_ONCE(base->owner);

	if (unlikely(owner != current))
		simple_mutex_report_bad_release(base, dep_map, owner);
}

static void simple_mutex_check_destroy(struct simple_mutex_base *base)
{
	DEBUG_LOCKS_WARN_ON(simple_mutex_base_is_locked(base));
}

/**
 * simple_mutex_bad_release_count - number of releases by a non-owner
 *
 * Counts every release of a simple mutex (or, with CONFIG_MUTEX_SIMPLE, of
 * a struct mutex) by a task other than its owner since boot, whether or
 * not the report was printed.
 */
unsigned long simple_mutex_bad_release_count(void)
{
	return atomic_long_read(&simple_mutex_bad_releases);
}
EXPORT_SYMBOL_GPL(simple_mutex_bad_release_count);
#else
static __always_inline void simple_mutex_check_owner(struct simple_mutex_base *base,
						     struct lockdep_map *dep_map)
{
}

static void simple_mutex_check_destroy(struct simple_mutex_base *base)
{
}
#endif /* CONFIG_DEBUG_MUTEX_OWNER */

/*
 * A waiter gives up because of a signal.  The mutex may have been handed
 * to it meanwhile: it then keeps it and reports success, since dropping it
 * here would need another hand-over and could lose that wake-up.
 */
static int simple_mutex_abandon_wait(struct simple_mutex_base *base,
				     struct simple_mutex_waiter *waiter)
{
	unsigned long flags;
	int ret = 0;

	raw_spin_lock_irqsave(&base->wait_lock, flags);
	if (!waiter->granted) {
		list_del(&waiter->list);
		ret = -EINTR;
	}
	raw_spin_unlock_irqrestore(&base->wait_lock, flags);
	return ret;
}

static int __sched simple_mutex_lock_slowpath(struct simple_mutex_base *base,
					      unsigned int state)
{
	struct simple_mutex_waiter waiter;
	unsigned long flags;
	int ret = 0;

	raw_spin_lock_irqsave(&base->wait_lock, flags);

	/* The holder may have let go since the fast path looked. */
	if (simple_mutex_grab(base)) {
		simple_mutex_set_owner(base, current);
		raw_spin_unlock_irqrestore(&base->wait_lock, flags);
		return 0;
	}

	waiter.task = current;
	waiter.granted = false;
	list_add_tail(&waiter.list, &base->wait_list);
	set_current_state(state);
	raw_spin_unlock_irqrestore(&base->wait_lock, flags);

	for (;;) {
		/* Pairs with smp_store_release() in simple_mutex_release(). */
		if (smp_load_acquire(&waiter.granted))
			break;
		if (signal_pending_state(state, current)) {
			ret = simple_mutex_abandon_wait(base, &waiter);
			break;
		}
		schedule();
		set_current_state(state);
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

static void simple_mutex_release(struct simple_mutex_base *base,
				 struct lockdep_map *dep_map)
{
	struct simple_mutex_waiter *waiter;
	DEFINE_WAKE_Q(wake_q);
	unsigned long flags;

	simple_mutex_check_owner(base, dep_map);

	raw_spin_lock_irqsave(&base->wait_lock, flags);
	waiter = list_first_entry_or_null(&base->wait_list,
					  struct simple_mutex_waiter, list);
	if (waiter) {
		/*
		 * Hand the mutex over: the state word stays 1.  The waiter
		 * may return, and its stack frame vanish, as soon as it sees
		 * ->granted, so everything needed from it is taken first.
		 */
		list_del(&waiter->list);
		simple_mutex_set_owner(base, waiter->task);
		wake_q_add(&wake_q, waiter->task);
		/* Pairs with smp_load_acquire() in the waiter's sleep loop. */
		smp_store_release(&waiter->granted, true);
	} else {
		simple_mutex_set_owner(base, NULL);
		/* The critical section happens before the mutex looks free. */
		smp_store_release(&base->state, 0);
	}
	raw_spin_unlock_irqrestore(&base->wait_lock, flags);

	wake_up_q(&wake_q);
}

static __always_inline int __sched
__simple_mutex_lock(struct simple_mutex_base *base, struct lockdep_map *dep_map,
		    unsigned int state, unsigned int subclass,
		    struct lockdep_map *nest_lock, unsigned long ip)
{
	int ret;

	might_sleep();
	mutex_acquire_nest(dep_map, subclass, 0, nest_lock, ip);

	if (likely(simple_mutex_grab(base))) {
		simple_mutex_set_owner(base, current);
		lock_acquired(dep_map, ip);
		return 0;
	}

	lock_contended(dep_map, ip);
	trace_contention_begin(base, LCB_F_MUTEX);
	ret = simple_mutex_lock_slowpath(base, state);
	trace_contention_end(base, ret);
	if (unlikely(ret)) {
		mutex_release(dep_map, ip);
		return ret;
	}
	lock_acquired(dep_map, ip);
	return 0;
}

static __always_inline int
__simple_mutex_trylock(struct simple_mutex_base *base,
		       struct lockdep_map *dep_map, unsigned long ip)
{
	if (!simple_mutex_grab(base))
		return 0;

	simple_mutex_set_owner(base, current);
	mutex_acquire(dep_map, 0, 1, ip);
	return 1;
}

static __always_inline void
__simple_mutex_unlock(struct simple_mutex_base *base,
		      struct lockdep_map *dep_map, unsigned long ip)
{
	mutex_release(dep_map, ip);
	simple_mutex_release(base, dep_map);
}

void __simple_mutex_init(struct simple_mutex *lock, const char *name,
			 struct lock_class_key *key)
{
	simple_mutex_base_init(&lock->base);
#ifdef CONFIG_DEBUG_LOCK_ALLOC
	debug_check_no_locks_freed((void *)lock, sizeof(*lock));
	lockdep_init_map_wait(&lock->dep_map, name, key, 0, LD_WAIT_SLEEP);
#endif
}
EXPORT_SYMBOL_GPL(__simple_mutex_init);

/**
 * simple_mutex_lock_nested - acquire a simple mutex
 * @lock: the mutex to be acquired
 * @subclass: lockdep subclass, for nesting mutexes of the same class
 *
 * Sleeps uninterruptibly until the mutex is handed over.  Waiters are
 * served in the order they arrived.
 */
void __sched simple_mutex_lock_nested(struct simple_mutex *lock,
				      unsigned int subclass)
{
	__simple_mutex_lock(&lock->base, simple_dep_map(lock),
			    TASK_UNINTERRUPTIBLE, subclass, NULL, _RET_IP_);
}
EXPORT_SYMBOL_GPL(simple_mutex_lock_nested);

/**
 * simple_mutex_lock_interruptible_nested - acquire a simple mutex, or give up on a signal
 * @lock: the mutex to be acquired
 * @subclass: lockdep subclass
 *
 * Returns 0 once the mutex is held, -EINTR if a signal arrived first.
 */
int __sched simple_mutex_lock_interruptible_nested(struct simple_mutex *lock,
						   unsigned int subclass)
{
	return __simple_mutex_lock(&lock->base, simple_dep_map(lock),
				   TASK_INTERRUPTIBLE, subclass, NULL, _RET_IP_);
}
EXPORT_SYMBOL_GPL(simple_mutex_lock_interruptible_nested);

/**
 * simple_mutex_lock_killable_nested - acquire a simple mutex, or give up on a fatal signal
 * @lock: the mutex to be acquired
 * @subclass: lockdep subclass
 *
 * Returns 0 once the mutex is held, -EINTR if a fatal signal arrived first.
 */
int __sched simple_mutex_lock_killable_nested(struct simple_mutex *lock,
					      unsigned int subclass)
{
	return __simple_mutex_lock(&lock->base, simple_dep_map(lock),
				   TASK_KILLABLE, subclass, NULL, _RET_IP_);
}
EXPORT_SYMBOL_GPL(simple_mutex_lock_killable_nested);

/**
 * simple_mutex_trylock - try to acquire a simple mutex without sleeping
 * @lock: the mutex to be acquired
 *
 * Returns 1 if the mutex was acquired, 0 if it is held (mutex_trylock()
 * convention, not down_trylock()'s).
 */
int simple_mutex_trylock(struct simple_mutex *lock)
{
	return __simple_mutex_trylock(&lock->base, simple_dep_map(lock),
				      _RET_IP_);
}
EXPORT_SYMBOL_GPL(simple_mutex_trylock);

/**
 * simple_mutex_unlock - release a simple mutex
 * @lock: the mutex to be released
 *
 * Hands the mutex to the longest waiting task, if any.
 */
void __sched simple_mutex_unlock(struct simple_mutex *lock)
{
	__simple_mutex_unlock(&lock->base, simple_dep_map(lock), _RET_IP_);
}
EXPORT_SYMBOL_GPL(simple_mutex_unlock);

/**
 * simple_mutex_destroy - mark a simple mutex unusable
 * @lock: the mutex, which must not be held
 */
void simple_mutex_destroy(struct simple_mutex *lock)
{
	simple_mutex_check_destroy(&lock->base);
}
EXPORT_SYMBOL_GPL(simple_mutex_destroy);

#ifdef CONFIG_MUTEX_SIMPLE
/*
 * struct mutex on top of the simple mutex.  See kernel/locking/mutex.c for
 * the documentation of these functions; the semantics are the same except
 * that there is no optimistic spinning and waiters are served in FIFO order.
 */

void __mutex_init(struct mutex *lock, const char *name,
		  struct lock_class_key *key)
{
	simple_mutex_base_init(&lock->base);
#ifdef CONFIG_DEBUG_LOCK_ALLOC
	debug_check_no_locks_freed((void *)lock, sizeof(*lock));
	lockdep_init_map_wait(&lock->dep_map, name, key, 0, LD_WAIT_SLEEP);
#endif
}
EXPORT_SYMBOL(__mutex_init);

#ifdef CONFIG_DEBUG_LOCK_ALLOC
void __sched mutex_lock_nested(struct mutex *lock, unsigned int subclass)
{
	__simple_mutex_lock(&lock->base, &lock->dep_map, TASK_UNINTERRUPTIBLE,
			    subclass, NULL, _RET_IP_);
}
EXPORT_SYMBOL_GPL(mutex_lock_nested);

void __sched _mutex_lock_nest_lock(struct mutex *lock,
				   struct lockdep_map *nest_lock)
{
	__simple_mutex_lock(&lock->base, &lock->dep_map, TASK_UNINTERRUPTIBLE,
			    0, nest_lock, _RET_IP_);
}
EXPORT_SYMBOL_GPL(_mutex_lock_nest_lock);

int __sched mutex_lock_interruptible_nested(struct mutex *lock,
					    unsigned int subclass)
{
	return __simple_mutex_lock(&lock->base, &lock->dep_map,
				   TASK_INTERRUPTIBLE, subclass, NULL,
				   _RET_IP_);
}
EXPORT_SYMBOL_GPL(mutex_lock_interruptible_nested);

int __sched mutex_lock_killable_nested(struct mutex *lock,
				       unsigned int subclass)
{
	return __simple_mutex_lock(&lock->base, &lock->dep_map, TASK_KILLABLE,
				   subclass, NULL, _RET_IP_);
}
EXPORT_SYMBOL_GPL(mutex_lock_killable_nested);

void __sched mutex_lock_io_nested(struct mutex *lock, unsigned int subclass)
{
	int token;

	might_sleep();

	token = io_schedule_prepare();
	__simple_mutex_lock(&lock->base, &lock->dep_map, TASK_UNINTERRUPTIBLE,
			    subclass, NULL, _RET_IP_);
	io_schedule_finish(token);
}
EXPORT_SYMBOL_GPL(mutex_lock_io_nested);

#else /* CONFIG_DEBUG_LOCK_ALLOC */

void __sched mutex_lock(struct mutex *lock)
{
	__simple_mutex_lock(&lock->base, NULL, TASK_UNINTERRUPTIBLE, 0, NULL,
			    _RET_IP_);
}
EXPORT_SYMBOL(mutex_lock);

int __sched mutex_lock_interruptible(struct mutex *lock)
{
	return __simple_mutex_lock(&lock->base, NULL, TASK_INTERRUPTIBLE, 0,
				   NULL, _RET_IP_);
}
EXPORT_SYMBOL(mutex_lock_interruptible);

int __sched mutex_lock_killable(struct mutex *lock)
{
	return __simple_mutex_lock(&lock->base, NULL, TASK_KILLABLE, 0, NULL,
				   _RET_IP_);
}
EXPORT_SYMBOL(mutex_lock_killable);

void __sched mutex_lock_io(struct mutex *lock)
{
	int token = io_schedule_prepare();

	__simple_mutex_lock(&lock->base, NULL, TASK_UNINTERRUPTIBLE, 0, NULL,
			    _RET_IP_);
	io_schedule_finish(token);
}
EXPORT_SYMBOL_GPL(mutex_lock_io);
#endif /* !CONFIG_DEBUG_LOCK_ALLOC */

int mutex_trylock(struct mutex *lock)
{
	return __simple_mutex_trylock(&lock->base, simple_dep_map(lock),
				      _RET_IP_);
}
EXPORT_SYMBOL(mutex_trylock);

void __sched mutex_unlock(struct mutex *lock)
{
	__simple_mutex_unlock(&lock->base, simple_dep_map(lock), _RET_IP_);
}
EXPORT_SYMBOL(mutex_unlock);

#ifdef CONFIG_DEBUG_MUTEX_OWNER
void mutex_destroy(struct mutex *lock)
{
	simple_mutex_check_destroy(&lock->base);
}
EXPORT_SYMBOL_GPL(mutex_destroy);
#endif

#endif /* CONFIG_MUTEX_SIMPLE */
