/*
 * Macro definitions for spatch (--macro-file), as `make coccicheck` users
 * keep one: kernel constructs spatch 1.1.1 cannot parse as written, each
 * reduced to a form it can.  spatch uses a definition only where the code
 * does not parse without it.
 */

/*
 * __attribute__((aligned(8))): spatch reads an attribute as one word, so
 * an attribute with arguments makes the whole struct or declaration it
 * ends unparsable (struct Scsi_Host in 2.6, uioc_t...).
 */
#define aligned(x) aligned
#define __aligned__(x) __aligned__
#define regparm(n) regparm
#define __regparm__(n) __regparm__
#define format(archetype, string_index, first_to_check) format
#define __format__(archetype, string_index, first_to_check) __format__
#define section(name) section
#define __section__(name) __section__
#define alias(target) alias
#define __alias__(target) __alias__
#define __mode__(m) __mode__
#define __cleanup__(f) __cleanup__

/*
 * Coccinelle's standard.h still describes the per-CPU declarations with
 * the per_cpu__##name form of the kernels before 2.6.34, which its own
 * parser then rejects (kernel/printk/printk.c, kernel/sched/fair.c).
 */
#define DEFINE_PER_CPU(type, name) type name
#define DECLARE_PER_CPU(type, name) extern type name
#define DEFINE_PER_CPU_SHARED_ALIGNED(type, name) type name
#define DECLARE_PER_CPU_SHARED_ALIGNED(type, name) extern type name
#define DEFINE_PER_CPU_ALIGNED(type, name) type name
#define DECLARE_PER_CPU_ALIGNED(type, name) extern type name
#define DEFINE_PER_CPU_READ_MOSTLY(type, name) type name
#define DECLARE_PER_CPU_READ_MOSTLY(type, name) extern type name
#define DEFINE_PER_CPU_PAGE_ALIGNED(type, name) type name
#define DECLARE_PER_CPU_PAGE_ALIGNED(type, name) extern type name

/*
 * The BSD queue macros of drivers/scsi/aic7xxx/queue.h: members declared
 * with them make the whole struct unparsable (struct ahd_platform_data).
 */
#define TAILQ_HEAD(name, type) struct name { struct type *tqh_first; struct type **tqh_last; }
#define TAILQ_ENTRY(type) struct { struct type *tqe_next; struct type **tqe_prev; }
#define STAILQ_HEAD(name, type) struct name { struct type *stqh_first; struct type **stqh_last; }
#define STAILQ_ENTRY(type) struct { struct type *stqe_next; }
#define LIST_HEAD(name, type) struct name { struct type *lh_first; }
#define LIST_ENTRY(type) struct { struct type *le_next; struct type **le_prev; }
#define SLIST_HEAD(name, type) struct name { struct type *slh_first; }
#define SLIST_ENTRY(type) struct { struct type *sle_next; }
