/*
 * rma_label.h - the labeled-window API: a small, library-independent RMA
 * interface in the style of the framework paper (LIBEGIN ... LIDEREGISTER),
 * implemented in librmalabel on plain MPI RMA calls. The same program runs on
 * MPICH's own RMA or, with librma linked or preloaded, on librma.
 *
 * Two forms:
 *  - single-window form (li_*): every registered area belongs to one window,
 *    so one li_sync() completes every put and get of the superstep;
 *  - labeled form (lio_*): every registered area owns its own window, found
 *    through an address table (any address inside a registered area resolves
 *    to it), and lio_sync(addr) completes the transfers of that area only.
 *
 * Collective calls (all ranks, same order): li_begin, li_end, li_init,
 * li_commit, li_sync, li_barrier, li_deregister and their lio_ twins.
 * li_register/lio_register are local, but the k-th registration must name an
 * area of the same length on every rank; mismatches are detected at commit.
 * A registration becomes usable after commit and, for transfers, after init.
 * Puts and gets complete (at both ends) when the area's sync returns.
 *
 * Threads (MPI_THREAD_MULTIPLE): the local calls (li_register, li_put, li_get
 * and their lio_ twins) may come from several threads at once. A collective
 * call must not run concurrently with any other call of the process, as MPI's
 * collectives on one communicator.
 *
 * Every int-returning call returns LI_OK (0) or a negative LI_ERR_* code and,
 * on error, prints one line naming the call and the reason to stderr; a failed
 * put or get transfers nothing. See doc/labeled-windows.md.
 */
#ifndef RMA_LABEL_H
#define RMA_LABEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LI_OK           0
#define LI_ERR_ARG      (-1)  /* NULL pointer or zero length where one is needed */
#define LI_ERR_STATE    (-2)  /* li_begin missing or repeated, or li_end'ed */
#define LI_ERR_NOTREG   (-3)  /* address not inside any registered area */
#define LI_ERR_RANGE    (-4)  /* transfer runs past the end of the registered area */
#define LI_ERR_NOTINIT  (-5)  /* transfer to an area not yet committed and initialized */
#define LI_ERR_MISMATCH (-6)  /* ranks registered/deregistered different areas */
#define LI_ERR_OVERLAP  (-7)  /* new area overlaps an area already registered */
#define LI_ERR_PID      (-8)  /* process id outside [0, li_nprocs()) */
#define LI_ERR_FORM     (-9)  /* li_ call on an lio_ registration or the reverse */
#define LI_ERR_NOMEM    (-10) /* out of memory */
#define LI_ERR_MPI      (-11) /* an MPI call failed (its message is printed) */

/* Short description of an LI_OK or LI_ERR_* code ("unknown error" otherwise). */
const char *li_errstr(int code);

/*
 * Start the SPMD program: MPI_Init unless MPI is already initialized, then a
 * private duplicate of MPI_COMM_WORLD. argc/argv may be NULL.
 * Returns LI_OK, LI_ERR_STATE if already begun, LI_ERR_MPI.
 */
int li_begin(int *argc, char ***argv);

/*
 * Collective: free every remaining registration and window, then MPI_Finalize
 * if li_begin called MPI_Init. Returns LI_OK, LI_ERR_STATE, LI_ERR_MPI.
 */
int li_end(void);

/* Abort every process with exit code code (MPI_Abort); does not return. */
void li_abort(int code);

/* Number of processes, or LI_ERR_STATE before li_begin. */
int li_nprocs(void);

/* This process's id in [0, li_nprocs()), or LI_ERR_STATE before li_begin. */
int li_pid(void);

/* ---- single-window form ---------------------------------------------------- */

/*
 * Register [addr, addr+len) for remote access (local; effective after
 * li_commit). Returns LI_OK, LI_ERR_ARG (NULL/len 0), LI_ERR_OVERLAP,
 * LI_ERR_NOMEM, LI_ERR_STATE.
 */
int li_register(void *addr, size_t len);

/*
 * Collective: open the communication epoch of the single window. May come
 * before li_commit (then it takes effect there) or after it.
 * Returns LI_OK, LI_ERR_STATE, LI_ERR_MPI.
 */
int li_init(void);

/*
 * Collective: make every pending li_register effective. Checks that all ranks
 * registered areas of the same lengths in the same order; on mismatch every
 * rank returns LI_ERR_MISMATCH and drops its pending registrations.
 * Returns LI_OK, LI_ERR_MISMATCH, LI_ERR_NOMEM, LI_ERR_MPI, LI_ERR_STATE.
 */
int li_commit(void);

/*
 * Copy len bytes from local src to process pid at off bytes past desaddr,
 * where desaddr lies in an area registered (by the same registration) on every
 * rank. Completes at the next li_sync(). Returns LI_OK, LI_ERR_PID,
 * LI_ERR_NOTREG, LI_ERR_RANGE, LI_ERR_NOTINIT, LI_ERR_FORM, LI_ERR_ARG,
 * LI_ERR_MPI; nothing is transferred on error.
 */
int li_put(int pid, const void *src, void *desaddr, size_t off, size_t len);

/*
 * Copy len bytes from process pid, at off bytes past registered srcaddr, into
 * local dst. Completes at the next li_sync(). Errors as li_put.
 */
int li_get(int pid, const void *srcaddr, size_t off, void *dst, size_t len);

/* Collective: complete every li_put/li_get issued so far (both ends). */
int li_sync(void);

/* Collective: a barrier of all processes. Returns LI_OK, LI_ERR_STATE, LI_ERR_MPI. */
int li_barrier(void);

/*
 * Collective: remove the area starting at addr (no transfer may be pending on
 * it: call li_sync first). Returns LI_OK, LI_ERR_NOTREG, LI_ERR_FORM,
 * LI_ERR_NOTINIT (registered, not committed yet: a pending registration goes
 * only with a commit that fails), LI_ERR_MISMATCH (ranks named different
 * registrations; nothing removed), LI_ERR_MPI, LI_ERR_STATE.
 */
int li_deregister(void *addr);

/* ---- labeled form: one window per registered area ------------------------- */

/* As li_register, for an area that will own its own window. */
int lio_register(void *addr, size_t len);

/*
 * Collective: open the epoch of the window of the area holding addr (before or
 * after lio_commit). Returns LI_OK, LI_ERR_NOTREG, LI_ERR_FORM, LI_ERR_MPI,
 * LI_ERR_STATE.
 */
int lio_init(void *addr);

/* Collective: as li_commit; creates one window per pending area. */
int lio_commit(void);

/* As li_put, through the window of the area holding desaddr. */
int lio_put(int pid, const void *src, void *desaddr, size_t off, size_t len);

/* As li_get, through the window of the area holding srcaddr. */
int lio_get(int pid, const void *srcaddr, size_t off, void *dst, size_t len);

/*
 * Collective: complete every lio_put/lio_get on the area holding addr.
 * Returns LI_OK, LI_ERR_NOTREG, LI_ERR_NOTINIT, LI_ERR_FORM, LI_ERR_MPI,
 * LI_ERR_STATE.
 */
int lio_sync(void *addr);

/* Collective: a barrier of all processes (same as li_barrier). */
int lio_barrier(void);

/* Collective: as li_deregister, and frees the area's window. */
int lio_deregister(void *addr);

#ifdef __cplusplus
}
#endif

#endif /* RMA_LABEL_H */
