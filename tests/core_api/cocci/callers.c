// SPDX-License-Identifier: GPL-2.0
/*
 * sem2mutex test fixture for cocci/check/old_api_callers.cocci: calls of the
 * old counting-semaphore names whose argument spatch can type, cannot type,
 * and knows to be something else.
 */
#include <linux/semaphore.h>

struct semaphore global_sem;
static DEFINE_SEMAPHORE(defined_sem);

struct device_state {
	struct semaphore lock;
	int users;
};

struct ladder;
void down_the_ladder(struct ladder *l);

#define LOCK_STATE(s) down(&(s)->lock)

int take_everything(struct device_state *state, struct semaphore *sem,
		    struct opaque *opaque)
{
	int ret;

	down(&global_sem);
	down(&defined_sem);
	ret = down_interruptible(&state->lock);
	if (ret)
		return ret;
	if (down_trylock(sem))
		return -EBUSY;
	ret = down_killable(&opaque->sem);
	if (!ret)
		ret = down_timeout(&opaque->sem, 10);
	LOCK_STATE(state);
	return ret;
}

void give_everything(struct device_state *state, struct semaphore *sem,
		     struct opaque *opaque)
{
	up(&opaque->sem);
	up(sem);
	up(&state->lock);
	up(&defined_sem);
	up(&global_sem);
}

void not_semaphores(struct ladder *l, int *counter, struct device_state *s)
{
	down_the_ladder(l);
	s->lock.count++;
	(*counter)++;
}
