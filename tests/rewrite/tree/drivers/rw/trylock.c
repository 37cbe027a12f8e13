// SPDX-License-Identifier: GPL-2.0
/*
 * Every form a down_trylock() result is used in.  down_trylock() returns 0
 * when it took the semaphore, mutex_trylock() returns 1 when it took the
 * mutex: each rewrite must keep the meaning.  The instances that the
 * analysis cannot prove to be mutexes are pinned by tests/rewrite/verdicts.
 */
#include <linux/errno.h>
#include <linux/semaphore.h>

static struct semaphore try_if;
static struct semaphore try_if_not;
static struct semaphore try_assign;
static struct semaphore try_while;
static struct semaphore try_return;
static struct semaphore try_and;
static struct semaphore try_or_not;
static struct semaphore try_eq;
static struct semaphore try_ne;
static struct semaphore try_zero_eq;
static struct semaphore try_paren;
static struct semaphore try_unused;
static struct semaphore try_bool;
static struct semaphore try_cond;
static struct semaphore try_counting;

int tl_if(void)
{
	if (down_trylock(&try_if))
		return -EBUSY;
	up(&try_if);
	return 0;
}

int tl_if_not(void)
{
	if (!down_trylock(&try_if_not)) {
		up(&try_if_not);
		return 0;
	}
	return -EBUSY;
}

int tl_assign(void)
{
	int busy;

	busy = down_trylock(&try_assign);
	if (busy)
		return -EBUSY;
	up(&try_assign);
	return 0;
}

void tl_while(void)
{
	while (down_trylock(&try_while))
		cpu_relax();
	up(&try_while);
}

/* The caller releases: the analysis cannot pair it, a reviewer did. */
int tl_return(void)
{
	return down_trylock(&try_return);
}

void tl_return_done(void)
{
	up(&try_return);
}

int tl_and(int fast)
{
	if (fast && down_trylock(&try_and))
		return -EBUSY;
	if (fast)
		up(&try_and);
	return 0;
}

int tl_or_not(int skip)
{
	if (skip || !down_trylock(&try_or_not))
		return 0;
	return -EBUSY;
}

int tl_eq(void)
{
	if (down_trylock(&try_eq) == 0) {
		up(&try_eq);
		return 0;
	}
	return -EBUSY;
}

int tl_ne(void)
{
	if (down_trylock(&try_ne) != 0)
		return -EBUSY;
	up(&try_ne);
	return 0;
}

int tl_zero_eq(void)
{
	if (0 == down_trylock(&try_zero_eq)) {
		up(&try_zero_eq);
		return 0;
	}
	return -EBUSY;
}

int tl_paren(void)
{
	if (!(down_trylock(&try_paren)))
		return 0;
	return -EBUSY;
}

void tl_unused(void)
{
	down_trylock(&try_unused);
	up(&try_unused);
}

int tl_bool(void)
{
	int locked = !down_trylock(&try_bool);

	if (locked)
		up(&try_bool);
	return locked;
}

int tl_cond(int wait)
{
	int busy = wait ? 0 : down_trylock(&try_cond);

	if (!busy && !wait)
		up(&try_cond);
	return busy;
}

/* A counting semaphore keeps down_trylock()'s meaning: no inversion. */
int tl_counting(void)
{
	if (!down_trylock(&try_counting)) {
		up(&try_counting);
		return 0;
	}
	return -EBUSY;
}

void tl_init(int slots)
{
	sema_init(&try_if, 1);
	sema_init(&try_if_not, 1);
	sema_init(&try_assign, 1);
	sema_init(&try_while, 1);
	sema_init(&try_return, 1);
	sema_init(&try_and, 1);
	sema_init(&try_or_not, 1);
	sema_init(&try_eq, 1);
	sema_init(&try_ne, 1);
	sema_init(&try_zero_eq, 1);
	sema_init(&try_paren, 1);
	sema_init(&try_unused, 1);
	sema_init(&try_bool, 1);
	sema_init(&try_cond, 1);
	sema_init(&try_counting, slots);
}
