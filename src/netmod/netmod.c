/*
 * netmod.c - which transport reaches other nodes (netmod.h).
 */
#include "config.h"

#include "netmod/netmod.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sync/wait.h"

#ifdef HAVE_UCX
extern const rma_netmod_t rma_nm_ucx;
const rma_netmod_t *const rma_net = &rma_nm_ucx;
#else
const rma_netmod_t *const rma_net = NULL;
#endif

int rma_net_unserved;

void rma_nm_write_begin(rma_nm_tgt_t *t)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    if (t->cma_writers == NULL)
        return;
    for (;;) {
        while (atomic_load_explicit(t->cma_moving, memory_order_seq_cst))
            rma_backoff(&bo);
        atomic_fetch_add_explicit(t->cma_writers, 1, memory_order_seq_cst);
        if (!atomic_load_explicit(t->cma_moving, memory_order_seq_cst))
            return;
        atomic_fetch_sub_explicit(t->cma_writers, 1, memory_order_seq_cst);
    }
}

void rma_nm_write_end(rma_nm_tgt_t *t)
{
    if (t->cma_writers != NULL)
        atomic_fetch_sub_explicit(t->cma_writers, 1, memory_order_release);
}

void rma_net_mem_free(void *m)
{
    rma_nm_mem_t *mem = m;

    if (mem != NULL && mem->handle == NULL && mem->addr == NULL)
        free(mem->blob); /* a view (or an exposure that never happened: NULL) */
    else if (mem != NULL)
        rma_net->unexpose(mem);
    free(mem);
}

rma_nm_mem_t *rma_net_mem_view(const rma_nm_mem_t *of)
{
    rma_nm_mem_t *v = calloc(1, sizeof(*v));

    if (v != NULL && (v->blob = malloc(of->blob_len)) == NULL) {
        free(v);
        return NULL;
    }
    if (v != NULL) {
        memcpy(v->blob, of->blob, of->blob_len);
        v->blob_len = of->blob_len;
    }
    return v;
}

/* ------------------------------------------------------------------ held operations */

_Atomic int rma_nm_holders;
static pthread_mutex_t hold_mtx = PTHREAD_MUTEX_INITIALIZER;
static rma_nm_tgt_t *hold_head;

int rma_nm_hold_begin(rma_nm_tgt_t *t, unsigned who)
{
    if (atomic_load_explicit(&t->holding, memory_order_relaxed) & who ||
        atomic_fetch_or_explicit(&t->holding, who, memory_order_relaxed) & who)
        return 0;
    atomic_fetch_add_explicit(&rma_nm_holders, 1, memory_order_relaxed);
    return 1;
}

void rma_nm_hold_list(rma_nm_tgt_t *t)
{
    if (atomic_load_explicit(&t->hold_listed, memory_order_relaxed))
        return; /* still listed from before: the usual case */
    pthread_mutex_lock(&hold_mtx);
    if (!atomic_load_explicit(&t->hold_listed, memory_order_relaxed)) {
        t->hold_next = hold_head;
        hold_head = t;
        atomic_store_explicit(&t->hold_listed, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&hold_mtx);
}

void rma_nm_hold_end(rma_nm_tgt_t *t, unsigned who)
{
    if (atomic_load_explicit(&t->holding, memory_order_relaxed) & who &&
        atomic_fetch_and_explicit(&t->holding, ~who, memory_order_relaxed) & who)
        atomic_fetch_sub_explicit(&rma_nm_holders, 1, memory_order_relaxed);
}

void rma_nm_hold_drop(rma_nm_tgt_t *t)
{
    pthread_mutex_lock(&hold_mtx);
    for (rma_nm_tgt_t **p = &hold_head; t->hold_listed && *p != NULL; p = &(*p)->hold_next)
        if (*p == t) {
            *p = t->hold_next;
            atomic_store_explicit(&t->hold_listed, 0, memory_order_relaxed);
            break;
        }
    rma_nm_hold_end(t, RMA_NM_HOLD_AGG);
    rma_nm_hold_end(t, RMA_NM_HOLD_SHM);
    pthread_mutex_unlock(&hold_mtx);
}

void rma_nm_release_held_slow(const void *keep)
{
    pthread_mutex_lock(&hold_mtx);
    for (rma_nm_tgt_t **p = &hold_head; *p != NULL;) {
        rma_nm_tgt_t *t = *p;
        /* a lazy lock's epoch (its gate set) sends what it holds at its unlock, and sending
         * now would wait for the lock, which a peer in this barrier may hold */
        if (t->owner == keep || rma_nm_gated(t)) {
            p = &t->hold_next;
            continue;
        }
        *p = t->hold_next;
        atomic_store_explicit(&t->hold_listed, 0, memory_order_relaxed);
        (void)t->ops->release(t); /* a failure stays with the target: its flush reports it */
    }
    pthread_mutex_unlock(&hold_mtx);
}
