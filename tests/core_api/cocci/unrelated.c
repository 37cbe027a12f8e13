// SPDX-License-Identifier: GPL-2.0
/*
 * sem2mutex test fixture: a driver with its own functions called up() and
 * down().  None of the counting-API semantic patches may touch it, and the
 * old-API check must not report its calls.
 */
#include <linux/export.h>

struct ladder {
	int rung;
};

static void up(struct ladder *l)
{
	l->rung++;
}

static void down(struct ladder *l)
{
	l->rung--;
}

int down_timeout(struct ladder *l, long steps)
{
	while (steps-- > 0 && l->rung > 0)
		down(l);
	return l->rung;
}
EXPORT_SYMBOL(down_timeout);

void climb(struct ladder *l, struct ladder *unknown_source)
{
	up(l);
	up(unknown_source);
	down(l);
}
