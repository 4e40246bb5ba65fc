/*
 * request.c - MPI requests for request-based RMA operations (MPI_Rput, MPI_Rget, ...).
 *
 * They are MPICH generalized requests (MPIX_Grequest_start), so every MPI completion call
 * works on them. Operations on same-node targets have completed when the request is made,
 * so the request is completed at once. So has an off-node one that completed at the origin
 * when it was issued (a put whose data UCX or librma copied; not a get, nor a put UCX still
 * reads from: rma_nm_need_local): a request completes locally, as MPI says. For the others
 * the request starts a flush of the target without waiting, and MPI_Test/MPI_Wait drive
 * it (the poll and wait functions) until it is over, so that the transfer overlaps what
 * the caller does in between. MPI_Request_get_status drives them too (rma_request_poke),
 * through the list of those in flight.
 *
 * A request the program frees before it completes (MPI_Request_free; legal, the epoch's
 * end completes the operation) stays an MPICH object until MPI_Grequest_complete, but
 * nobody drives it any more: MPICH calls free_fn at once and never again. So req_free
 * keeps such a request among the orphans, and each new request and each MPI_Win_free drive
 * the oldest of them and complete them (request_reap), so that their number stays that of
 * the operations still under way. Before, every one was kept for good: MPICH ran out of
 * requests after about 260000 fire-and-forget MPI_Rget.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpid/rma/rma.h"
#include "netmod/netmod.h"
#include "sync/ctl.h"
#include "sync/wait.h"
#include "windows/win_error.h"

/* An off-node operation in flight: the flush that completes it. */
typedef struct req_flush {
    MPI_Request req; /* this request, completed by req_step */
    MPI_Win win;     /* the window, and its serial: freed windows flushed everything */
    uint32_t serial;
    int trank;
    unsigned seen; /* the target's count of operations issued (netmod.h) at the start */
    const rma_netmod_ops_t *ops; /* the target's transport, and its flush in progress */
    void *flush;
    rma_xfer_job_t *job;  /* or the copy the agent makes (rma_xfer_req): &xjob */
    _Atomic int stepping; /* a thread drives it (req_step): one at a time */
    _Atomic int done;     /* it is over; set by the one thread that completes it */
    int err;
    int freed;                     /* req_free came before completion: an orphan */
    int pins;                      /* pokes driving it outside flight_mtx (under it) */
    int gone;                      /* released while pinned: the last poke releases it */
    struct req_list *on;           /* `flight` or `orphans` (none while an orphan is driven) */
    struct req_flush *prev, *next; /* on it; next also links the spares (pool) */
    /* the copy's storage, which the agent writes: on lines of their own, apart from the
     * fields above that the caller writes meanwhile */
    rma_xfer_job_t xjob __attribute__((aligned(64)));
} req_flush_t;

/* Spare request blocks, kept for the next request: a block from malloc shared lines with
 * its neighbours, and an MPI_Rput + MPI_Wait of 64 KiB spent ~0.15 us more in malloc and
 * free and in lines bouncing to the agent. At most POOL_MAX kept; under pool_mtx. */
#define POOL_MAX 64
static pthread_mutex_t pool_mtx = PTHREAD_MUTEX_INITIALIZER;
static req_flush_t *pool;
static int npool;

static req_flush_t *block_get(void)
{
    req_flush_t *st;

    pthread_mutex_lock(&pool_mtx);
    if ((st = pool) != NULL) {
        pool = st->next;
        npool--;
    }
    pthread_mutex_unlock(&pool_mtx);
    if (st == NULL)
        st = aligned_alloc(_Alignof(req_flush_t), sizeof(req_flush_t));
    return st;
}

static void block_put(req_flush_t *st)
{
    pthread_mutex_lock(&pool_mtx);
    if (npool < POOL_MAX) {
        st->next = pool;
        pool = st;
        npool++;
        st = NULL;
    }
    pthread_mutex_unlock(&pool_mtx);
    free(st);
}

static req_flush_t *block_of(rma_xfer_job_t *job)
{
    return (req_flush_t *)(void *)((char *)job - offsetof(req_flush_t, xjob));
}

rma_xfer_job_t *rma_request_job_new(void)
{
    req_flush_t *st = block_get();

    return st != NULL ? &st->xjob : NULL;
}

void rma_request_job_drop(rma_xfer_job_t *job)
{
    block_put(block_of(job));
}

typedef struct req_list {
    req_flush_t *head, *tail;
} req_list_t;

/* Taken shared around a request's use of its window, exclusively by a window's free once
 * the window is out of the table (rma_request_quiesce). */
static pthread_rwlock_t win_use = PTHREAD_RWLOCK_INITIALIZER;

void rma_request_quiesce(void)
{
    pthread_rwlock_wrlock(&win_use);
    pthread_rwlock_unlock(&win_use);
}

/* Both lists, and each st->on, under flight_mtx. */
static pthread_mutex_t flight_mtx = PTHREAD_MUTEX_INITIALIZER;
static req_list_t flight, orphans;
static _Atomic int norphans;

/* Puts st at l's tail, or at its head (front). */
static void list_push(req_list_t *l, req_flush_t *st, int front)
{
    st->on = l;
    st->next = front ? l->head : NULL;
    st->prev = front ? NULL : l->tail;
    *(st->prev != NULL ? &st->prev->next : &l->head) = st;
    *(st->next != NULL ? &st->next->prev : &l->tail) = st;
}

static void list_unlink(req_flush_t *st)
{
    req_list_t *l = st->on;

    if (l == NULL)
        return;
    *(st->prev != NULL ? &st->prev->next : &l->head) = st->next;
    *(st->next != NULL ? &st->next->prev : &l->tail) = st->prev;
    st->on = NULL;
    st->prev = st->next = NULL;
}

/* Drives st's flush (or waits for its copy) once. 0 while it is not over, or while another
 * thread drives it; 1 once over. *complete is set for the one caller that found it over:
 * that caller then completes the request (req_step_complete), outside any lock of librma's,
 * since MPICH's MPI_Grequest_complete takes MPICH's own lock, which MPICH holds while it
 * calls req_free (which takes flight_mtx). Stepping is one thread at a time: a flush's
 * test is not made for two threads at once. */
static int req_step(req_flush_t *st, int *complete)
{
    rma_win_t *win;
    int rc = 0, over = 1;

    *complete = 0;
    if (atomic_load_explicit(&st->done, memory_order_acquire))
        return 1;
    if (atomic_exchange_explicit(&st->stepping, 1, memory_order_acquire))
        return atomic_load_explicit(&st->done, memory_order_acquire); /* another drives it */
    if (st->job != NULL) {
        over = rma_agent_job_test(&st->job->job);
    } else {
        /* the window, looked up and used under win_use: one freed meanwhile on another
         * thread (rma_request_quiesce) is out of the table before it goes */
        pthread_rwlock_rdlock(&win_use);
        win = rma_win_lookup(st->win);
        if (win != NULL && win->serial == st->serial) {
            rma_nm_tgt_t *nm = &win->targets[st->trank].nm;
            if (rma_nm_flushed_upto(nm, st->seen)) { /* a flush since covered the operation */
                st->ops->flush_release(st->flush);
                st->flush = NULL;
            } else if ((rc = nm->ops->flush_test(nm, &st->flush)) > 0) {
                over = 0;
            }
        } else {
            st->ops->flush_release(st->flush); /* the window's free flushed its target */
        }
        pthread_rwlock_unlock(&win_use);
        if (over)
            st->err = rc;
    }
    if (!over) {
        atomic_store_explicit(&st->stepping, 0, memory_order_release);
        return 0;
    }
    /* stepping stays set: once done, st may be released at any time, and nobody steps it
     * again (rma_request_done clears it for the block's next request) */
    atomic_store_explicit(&st->done, 1, memory_order_release);
    *complete = 1;
    return 1;
}

/* req_step, completing the request where this call found it over. */
static int req_step_complete(req_flush_t *st)
{
    MPI_Request r = st->req; /* read before it is over: then st may go */
    int complete, over = req_step(st, &complete);

    if (complete)
        PMPI_Grequest_complete(r);
    return over;
}

static int req_query(void *extra, MPI_Status *status)
{
    const req_flush_t *st = extra;

    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    if (st != NULL && st->err != 0) {
        fprintf(stderr, "librma: a request-based operation to rank %d did not complete: %s\n",
                st->trank, strerror(-st->err));
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static void req_release(req_flush_t *st)
{
    if (st->job != NULL) /* the copy may still read or write the buffers */
        rma_agent_job_finish(&st->job->job);
    block_put(st);
}

/* Under flight_mtx, where st is over and unwanted: 1 when the caller releases it now, 0
 * when a poke still drives it (that poke releases it when it is done with it). */
static int release_now(req_flush_t *st)
{
    if (st->pins > 0) {
        st->gone = 1;
        return 0;
    }
    return 1;
}

/* After completion, or at MPI_Request_free of a request still in flight, which then
 * becomes an orphan. */
static int req_free(void *extra)
{
    req_flush_t *st = extra;
    int release = 0;

    if (st == NULL || st->freed) /* a library that calls it again after the orphan's
                                    completion: request_reap releases it */
        return MPI_SUCCESS;
    pthread_mutex_lock(&flight_mtx);
    list_unlink(st);
    if (!atomic_load_explicit(&st->done, memory_order_acquire)) {
        st->freed = 1;
        list_push(&orphans, st, 0);
        atomic_fetch_add_explicit(&norphans, 1, memory_order_relaxed);
    } else {
        release = release_now(st);
    }
    pthread_mutex_unlock(&flight_mtx);
    if (release)
        req_release(st);
    return MPI_SUCCESS;
}

/* Drives the oldest orphans, at most max of them, until one is still under way (the ones
 * behind it are younger); completes and releases those that are over. Each is driven
 * outside flight_mtx, taken off the list meanwhile: its completion may call req_free. */
static void request_reap(int max)
{
    for (int i = 0; i < max && atomic_load_explicit(&norphans, memory_order_relaxed) > 0; i++) {
        req_flush_t *st;

        pthread_mutex_lock(&flight_mtx);
        if ((st = orphans.head) != NULL) {
            list_unlink(st);
            atomic_fetch_sub_explicit(&norphans, 1, memory_order_relaxed);
        }
        pthread_mutex_unlock(&flight_mtx);
        if (st == NULL)
            return;
        if (req_step_complete(st)) {
            int release;
            if (st->err != 0) /* nobody waits for it to hear */
                fprintf(stderr,
                        "librma: a request-based operation to rank %d (its request freed) did "
                        "not complete: %s\n",
                        st->trank, strerror(-st->err));
            pthread_mutex_lock(&flight_mtx);
            release = release_now(st);
            pthread_mutex_unlock(&flight_mtx);
            if (release)
                req_release(st);
            continue;
        }
        pthread_mutex_lock(&flight_mtx);
        list_push(&orphans, st, 1); /* back at the head */
        atomic_fetch_add_explicit(&norphans, 1, memory_order_relaxed);
        pthread_mutex_unlock(&flight_mtx);
        return;
    }
}

void rma_request_reap_all(void)
{
    request_reap(INT_MAX);
}

static int req_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static int req_poll(void *extra, MPI_Status *status)
{
    (void)status;
    if (extra != NULL)
        req_step_complete(extra);
    return MPI_SUCCESS;
}

/* MPICH calls this when a wait finds requests incomplete after polling. */
static int req_wait(int count, void **states, double timeout, MPI_Status *status)
{
    (void)timeout;
    (void)status;
    for (int i = 0; i < count; i++) {
        rma_backoff_t bo = RMA_BACKOFF_INIT;
        while (states[i] != NULL && !req_step_complete(states[i]))
            rma_backoff(&bo);
    }
    return MPI_SUCCESS;
}

int rma_request_check(rma_win_t *win, MPI_Request *req, int trank, const char *func)
{
    if (req == NULL)
        return rma_err(win, func, MPI_ERR_ARG, "request is NULL");
    *req = MPI_REQUEST_NULL; /* what every error path leaves */
    if (trank == MPI_PROC_NULL)
        return MPI_SUCCESS; /* no effect, in any epoch (MPI-4 12.3) */
    if (win->epoch != RMA_EPOCH_LOCK && win->epoch != RMA_EPOCH_LOCK_ALL)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "request-based operations need a passive target epoch (MPI_Win_lock or "
                       "MPI_Win_lock_all)");
    return MPI_SUCCESS;
}

int rma_request_done(rma_win_t *win, int trank, MPI_Request *req, rma_xfer_job_t *job,
                     const char *func)
{
    req_flush_t *st = job != NULL ? block_of(job) : NULL;
    MPI_Request r;
    int rc;

    /* the agent's copy completes it, or else a flush when the operation still needs one */
    int flush = job == NULL && trank != MPI_PROC_NULL && rma_nm_local_due(&win->targets[trank].nm);

    if (job != NULL || flush) {
        rma_nm_tgt_t *nm = &win->targets[trank].nm;
        if (st == NULL && (st = block_get()) == NULL)
            return rma_err(win, func, MPI_ERR_NO_MEM, "out of memory for the request");
        /* everything but the copy, which xfer_hand filled (a block is reused: nothing of the
         * last request stays) */
        memset(st, 0, offsetof(req_flush_t, xjob));
        st->win = win->handle;
        st->serial = win->serial;
        st->trank = trank;
        st->seen = atomic_load_explicit(&nm->issued, memory_order_acquire);
        st->ops = nm->ops;
        st->job = job;
        if (flush && (rc = nm->ops->flush_start(nm, &st->flush)) != 0) {
            block_put(st);
            return rma_ctl_fail(win, func, trank, rc);
        }
    }
    request_reap(2); /* two for each new one: orphans cannot pile up */
    rc = MPIX_Grequest_start(req_query, req_free, req_cancel, req_poll, req_wait, st, &r);
    if (rc == MPI_SUCCESS && st != NULL) {
        st->req = r;
        pthread_mutex_lock(&flight_mtx);
        list_push(&flight, st, 0);
        pthread_mutex_unlock(&flight_mtx);
    } else if (rc == MPI_SUCCESS)
        rc = PMPI_Grequest_complete(r);
    if (rc != MPI_SUCCESS) {
        if (st != NULL) { /* never a request: the operation's flush is left to the next one */
            pthread_mutex_lock(&flight_mtx);
            list_unlink(st);
            pthread_mutex_unlock(&flight_mtx);
            st->ops->flush_release(st->flush);
            req_release(st);
        }
        return rma_err(win, func, MPI_ERR_OTHER, "cannot create the request");
    }
    *req = r;
    return MPI_SUCCESS;
}

/* The request is found under flight_mtx and pinned there, then driven and completed
 * outside it: driving it may serve peers (progress), which takes other locks and may call
 * MPI (MPI_Reduce_local for an accumulate without a kernel of librma's), and
 * MPI_Grequest_complete takes MPICH's lock; MPICH holds that lock while it calls req_free,
 * which takes flight_mtx (MPI_Grequest_complete under flight_mtx deadlocked with another
 * thread's MPI_Wait: hp53). A pinned request that req_free or request_reap would release
 * is released here, by its last poke. */
void rma_request_poke(MPI_Request req)
{
    req_flush_t *st;
    int complete = 0, release = 0;

    pthread_mutex_lock(&flight_mtx);
    for (st = flight.head; st != NULL && st->req != req; st = st->next)
        ;
    if (st != NULL)
        st->pins++;
    pthread_mutex_unlock(&flight_mtx);
    if (st == NULL)
        return;
    req_step(st, &complete);
    pthread_mutex_lock(&flight_mtx);
    release = --st->pins == 0 && st->gone;
    pthread_mutex_unlock(&flight_mtx);
    if (complete)
        PMPI_Grequest_complete(req);
    if (release)
        req_release(st);
}
