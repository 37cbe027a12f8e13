// SPDX-License-Identifier: GPL-2.0-only
/*
 * sem2mutex test fixture: the shape of a 6.1 kernel/locking/semaphore.c,
 * with toy bodies.  What matters is the layout the semantic patches rely
 * on: a kerneldoc comment, a definition taking a struct semaphore *, and an
 * EXPORT_SYMBOL() after each public function.
 */
#include <linux/export.h>
#include <linux/semaphore.h>

static void __wait_for_count(struct semaphore *sem);

/**
 * down - take the semaphore
 * @sem: the semaphore
 *
 * Sleeps until the count allows it.  Prefer down_interruptible() or
 * down_killable(); setup() and teardown() are not semaphore calls.
 */
void __sched down(struct semaphore *sem)
{
	if (sem->count > 0)
		sem->count--;
	else
		__wait_for_count(sem);
}
EXPORT_SYMBOL(down);

/**
 * down_interruptible() - take the semaphore unless a signal arrives
 * @sem: the semaphore
 *
 * Return: 0, or -EINTR.
 */
int __sched down_interruptible(struct semaphore *sem)
{
	int result = 0;

	if (sem->count > 0)
		sem->count--;
	else
		result = -EINTR;
	return result;
}
EXPORT_SYMBOL(down_interruptible);

/**
 * down_killable - take the semaphore unless a fatal signal arrives
 * @sem: the semaphore
 */
int __sched down_killable(struct semaphore *sem)
{
	return down_interruptible(sem);
}
EXPORT_SYMBOL(down_killable);

/**
 * down_trylock - take the semaphore if it is free
 * @sem: the semaphore
 *
 * Return: 0 if taken, 1 if not: the opposite of mutex_trylock().
 */
int __sched down_trylock(struct semaphore *sem)
{
	if (sem->count <= 0)
		return 1;
	sem->count--;
	return 0;
}
EXPORT_SYMBOL(down_trylock);

/**
 * down_timeout - take the semaphore within @timeout jiffies
 * @sem: the semaphore
 * @timeout: how long to wait
 */
int __sched down_timeout(struct semaphore *sem, long timeout)
{
	return down_trylock(sem) ? -ETIME : 0;
}
EXPORT_SYMBOL(down_timeout);

/**
 * up - release the semaphore
 * @sem: the semaphore
 *
 * Any task may call up(), also one that never called down().
 */
void __sched up(struct semaphore *sem)
{
	sem->count++;
}
EXPORT_SYMBOL(up);

static void __wait_for_count(struct semaphore *sem)
{
	while (sem->count <= 0)
		cpu_relax();
	sem->count--;
}
