#if defined(CONFIG_MUTEX_SIMPLE)
/*
 * The simple exchange-based mutex: see <linux/mutex-simple.h>.
 */
#include <linux/mutex-simple.h>
#elif !defined(CONFIG_PREEMPT_RT)
