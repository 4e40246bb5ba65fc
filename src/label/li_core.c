/*
 * li_core.c - the part of librmalabel both API forms share: program start and
 * end (li_begin, li_end, li_abort, li_nprocs, li_pid, li_barrier), error
 * reporting, the registration table and its cross-rank consistency checks,
 * and the one put/get path every transfer goes through.
 */
#include "li_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

rma_li_state_t rma_li_state;

/* Largest piece one MPI_Put/MPI_Get moves (its count is an int). */
#define LI_CHUNK ((size_t)1 << 30)

const char *li_errstr(int code)
{
    switch (code) {
    case LI_OK: return "success";
    case LI_ERR_ARG: return "invalid argument";
    case LI_ERR_STATE: return "li_begin not called, called twice, or after li_end";
    case LI_ERR_NOTREG: return "address not inside a registered area";
    case LI_ERR_RANGE: return "transfer runs past the end of the registered area";
    case LI_ERR_NOTINIT: return "area not committed and initialized";
    case LI_ERR_MISMATCH: return "ranks registered or deregistered different areas";
    case LI_ERR_OVERLAP: return "area overlaps a registered area";
    case LI_ERR_PID: return "process id out of range";
    case LI_ERR_FORM: return "li_ and lio_ calls mixed on one area";
    case LI_ERR_NOMEM: return "out of memory";
    case LI_ERR_MPI: return "an MPI call failed";
    default: return "unknown error";
    }
}

static const char *code_name(int code)
{
    static const char *const names[] = {
        "LI_OK",        "LI_ERR_ARG",     "LI_ERR_STATE",    "LI_ERR_NOTREG",
        "LI_ERR_RANGE", "LI_ERR_NOTINIT", "LI_ERR_MISMATCH", "LI_ERR_OVERLAP",
        "LI_ERR_PID",   "LI_ERR_FORM",    "LI_ERR_NOMEM",    "LI_ERR_MPI",
    };

    return code <= 0 && -code < (int)(sizeof(names) / sizeof(names[0])) ? names[-code] : "?";
}

int rma_li_error(int code, const char *fn, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (rma_li_state.begun)
        fprintf(stderr, "librmalabel: %s (rank %d): %s [%s]\n", fn, rma_li_state.pid, msg,
                code_name(code));
    else
        fprintf(stderr, "librmalabel: %s: %s [%s]\n", fn, msg, code_name(code));
    return code;
}

int rma_li_mpi_error(const char *fn, const char *call, int mpi_rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(mpi_rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof(msg), "MPI error %d", mpi_rc);
    return rma_li_error(LI_ERR_MPI, fn, "%s failed: %s", call, msg);
}

/* The calls that are local (register, put, get) may come from several threads at once: the
 * address table and the pending lists are theirs under this lock. Collective calls are
 * not made concurrently with any other (rma_label.h). */
static pthread_mutex_t li_lock = PTHREAD_MUTEX_INITIALIZER;

int rma_li_check_begun(const char *fn)
{
    int fin = 0;

    if (MPI_Finalized(&fin) == MPI_SUCCESS && fin)
        return rma_li_error(LI_ERR_STATE, fn, "called after MPI_Finalize");
    if (!rma_li_state.begun)
        return rma_li_error(LI_ERR_STATE, fn,
                            rma_li_state.ended ? "called after li_end"
                                               : "li_begin has not been called");
    return LI_OK;
}

int li_begin(int *argc, char ***argv)
{
    rma_li_state_t *s = &rma_li_state;
    int flag = 0, rc;

    if (s->begun || s->ended)
        return rma_li_error(LI_ERR_STATE, "li_begin",
                            s->begun ? "called twice" : "called after li_end");
    MPI_Finalized(&flag);
    if (flag)
        return rma_li_error(LI_ERR_STATE, "li_begin", "MPI is already finalized");
    MPI_Initialized(&flag);
    if (!flag) {
        rc = MPI_Init(argc, argv);
        if (rc != MPI_SUCCESS)
            return rma_li_mpi_error("li_begin", "MPI_Init", rc);
        s->we_initialized = 1;
    }
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &s->comm);
    if (rc != MPI_SUCCESS)
        return rma_li_mpi_error("li_begin", "MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
    MPI_Comm_size(s->comm, &s->nprocs);
    MPI_Comm_rank(s->comm, &s->pid);
    rma_lwt_init(&s->table);
    for (int f = 0; f < RMA_LI_NFORMS; f++) {
        s->pending[f].head = s->pending[f].tail = NULL;
        s->pending[f].count = 0;
        s->seq_next[f] = 0;
    }
    s->swin_created = 0;
    s->s_init_pending = 0;
    s->s_epoch_open = 0;
    s->begun = 1;
    return LI_OK;
}

void rma_li_area_free(rma_li_area_t *a)
{
    if (a == NULL)
        return;
    free(a->bases);
    free(a);
}

struct collect_ctx {
    rma_li_area_t **v;
    size_t n;
};

static int collect_cb(uintptr_t start, size_t len, void *value, void *arg)
{
    struct collect_ctx *c = arg;
    (void)start;
    (void)len;
    c->v[c->n++] = value;
    return 0;
}

static int by_form_seq(const void *pa, const void *pb)
{
    const rma_li_area_t *a = *(rma_li_area_t *const *)pa;
    const rma_li_area_t *b = *(rma_li_area_t *const *)pb;

    if (a->form != b->form)
        return a->form < b->form ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int li_end(void)
{
    rma_li_state_t *s = &rma_li_state;
    struct collect_ctx c = {NULL, 0};
    int rc = LI_OK, mrc;

    if ((rc = rma_li_check_begun("li_end")) != LI_OK)
        return rc;
    /* windows are freed collectively, so in registration order, never address order */
    c.v = malloc((rma_lwt_count(&s->table) + 1) * sizeof(*c.v));
    if (c.v == NULL)
        return rma_li_error(LI_ERR_NOMEM, "li_end", "no memory for the area list");
    rma_lwt_foreach(&s->table, collect_cb, &c);
    qsort(c.v, c.n, sizeof(*c.v), by_form_seq);
    for (size_t i = 0; i < c.n; i++) {
        rma_li_area_t *a = c.v[i];
        if (a->committed && a->form == RMA_LI_LABELED) {
            mrc = MPI_Win_free(&a->win);
            if (mrc != MPI_SUCCESS && rc == LI_OK)
                rc = rma_li_mpi_error("li_end", "MPI_Win_free", mrc);
        } else if (a->committed && a->form == RMA_LI_SINGLE) {
            mrc = MPI_Win_detach(s->swin, (void *)a->start);
            if (mrc != MPI_SUCCESS && rc == LI_OK)
                rc = rma_li_mpi_error("li_end", "MPI_Win_detach", mrc);
        }
    }
    free(c.v);
    rma_lwt_destroy(&s->table, (void (*)(void *))rma_li_area_free);
    if (s->swin_created) {
        mrc = MPI_Win_free(&s->swin);
        if (mrc != MPI_SUCCESS && rc == LI_OK)
            rc = rma_li_mpi_error("li_end", "MPI_Win_free", mrc);
        s->swin_created = 0;
    }
    MPI_Comm_free(&s->comm);
    s->begun = 0;
    s->ended = 1;
    if (s->we_initialized) {
        s->we_initialized = 0;
        mrc = MPI_Finalize();
        if (mrc != MPI_SUCCESS && rc == LI_OK)
            rc = rma_li_mpi_error("li_end", "MPI_Finalize", mrc);
    }
    return rc;
}

void li_abort(int code)
{
    /* What the program printed must reach the launcher before it kills the job: flush every
     * stream, then give mpiexec a moment to forward it. */
    struct timespec ts = {0, 200 * 1000 * 1000};
    fflush(NULL);
    nanosleep(&ts, NULL);
    MPI_Abort(MPI_COMM_WORLD, code);
    abort();
}

int li_nprocs(void)
{
    return rma_li_state.begun ? rma_li_state.nprocs : LI_ERR_STATE;
}

int li_pid(void)
{
    return rma_li_state.begun ? rma_li_state.pid : LI_ERR_STATE;
}

int li_barrier(void)
{
    int rc = rma_li_check_begun("li_barrier");

    if (rc != LI_OK)
        return rc;
    rc = MPI_Barrier(rma_li_state.comm);
    return rc == MPI_SUCCESS ? LI_OK : rma_li_mpi_error("li_barrier", "MPI_Barrier", rc);
}

int lio_barrier(void)
{
    return li_barrier();
}

int rma_li_register(enum rma_li_form form, void *addr, size_t len, const char *fn)
{
    rma_li_state_t *s = &rma_li_state;
    rma_li_pending_t *p = &s->pending[form];
    rma_li_area_t *a;
    int rc = rma_li_check_begun(fn);

    if (rc != LI_OK)
        return rc;
    if (addr == NULL || len == 0)
        return rma_li_error(LI_ERR_ARG, fn, "%s", addr == NULL ? "address is NULL" : "length 0");
    a = calloc(1, sizeof(*a));
    if (a == NULL)
        return rma_li_error(LI_ERR_NOMEM, fn, "no memory for an area record");
    a->start = (uintptr_t)addr;
    a->len = len;
    a->form = form;
    a->win = MPI_WIN_NULL;
    pthread_mutex_lock(&li_lock);
    rc = rma_lwt_insert(&s->table, a->start, len, a);
    if (rc == 0) {
        a->seq = s->seq_next[form]++;
        if (p->tail != NULL)
            p->tail->next = a;
        else
            p->head = a;
        p->tail = a;
        p->count++;
    }
    pthread_mutex_unlock(&li_lock);
    if (rc != 0) {
        free(a);
        if (rc == -EEXIST)
            return rma_li_error(LI_ERR_OVERLAP, fn, "[%p, +%zu) overlaps a registered area", addr,
                                len);
        if (rc == -EINVAL)
            return rma_li_error(LI_ERR_ARG, fn, "[%p, +%zu) wraps the address space", addr, len);
        return rma_li_error(LI_ERR_NOMEM, fn, "no memory for the address table");
    }
    return LI_OK;
}

static int64_t agree_mask(uint64_t v)
{
    return (int64_t)(v & (((uint64_t)1 << 62) - 1));
}

/* Collective: 1 if every rank passed the same n values, 0 if not, or LI_ERR_MPI. */
static int agree_vec(const int64_t *v, int n, const char *fn)
{
    int64_t buf[8], out[8];
    int rc;

    for (int i = 0; i < n; i++) {
        buf[i] = v[i];
        buf[n + i] = -v[i];
    }
    rc = MPI_Allreduce(buf, out, 2 * n, MPI_INT64_T, MPI_MAX, rma_li_state.comm);
    if (rc != MPI_SUCCESS)
        return rma_li_mpi_error(fn, "MPI_Allreduce", rc);
    for (int i = 0; i < n; i++)
        if (out[i] != -out[n + i])
            return 0;
    return 1;
}

int rma_li_agree(int64_t v, const char *fn)
{
    return agree_vec(&v, 1, fn);
}

int rma_li_commit_check(enum rma_li_form form, const char *fn)
{
    rma_li_state_t *s = &rma_li_state;
    rma_li_pending_t *p = &s->pending[form];
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over lengths and init flags */
    int64_t v[2];
    int ok;

    for (rma_li_area_t *a = p->head; a != NULL; a = a->next) {
        uint64_t words[2] = {(uint64_t)a->len, (uint64_t)a->init_pending};
        for (int w = 0; w < 2; w++) {
            for (int b = 0; b < 8; b++) {
                h ^= (words[w] >> (8 * b)) & 0xff;
                h *= 1099511628211ULL;
            }
        }
    }
    v[0] = p->count;
    v[1] = agree_mask(h);
    ok = agree_vec(v, 2, fn);
    if (ok == 1)
        return LI_OK;
    if (ok < 0)
        return ok;
    /* every rank reached the same verdict: drop the pending registrations everywhere */
    rma_li_error(LI_ERR_MISMATCH, fn,
                 "ranks registered different areas since the last commit (this rank: %d "
                 "pending); they were dropped",
                 p->count);
    while (p->head != NULL) {
        rma_li_area_t *a = p->head;
        p->head = a->next;
        pthread_mutex_lock(&li_lock);
        rma_lwt_remove(&s->table, a->start);
        pthread_mutex_unlock(&li_lock);
        rma_li_area_free(a);
    }
    s->seq_next[form] -= p->count;
    p->tail = NULL;
    p->count = 0;
    return LI_ERR_MISMATCH;
}

int rma_li_lookup(enum rma_li_form form, const void *addr, const char *fn, rma_li_area_t **area_p)
{
    rma_li_area_t *a;

    pthread_mutex_lock(&li_lock);
    a = rma_lwt_find(&rma_li_state.table, (uintptr_t)addr, 1, NULL, NULL);
    pthread_mutex_unlock(&li_lock);

    if (a == NULL)
        return rma_li_error(LI_ERR_NOTREG, fn, "address %p is not inside a registered area", addr);
    if (a->form != form)
        return rma_li_error(LI_ERR_FORM, fn, "area at %p was registered with %s", addr,
                            a->form == RMA_LI_SINGLE ? "li_register" : "lio_register");
    *area_p = a;
    return LI_OK;
}

int rma_li_xfer(enum rma_li_form form, int is_put, int pid, void *local, const void *raddr,
                size_t off, size_t len, const char *fn)
{
    rma_li_state_t *s = &rma_li_state;
    rma_li_area_t *a;
    MPI_Win win;
    MPI_Aint disp;
    size_t rel;
    int rc, fin = 0;

    if (!s->begun || (MPI_Finalized(&fin) == MPI_SUCCESS && fin))
        return rma_li_check_begun(fn);
    if (pid < 0 || pid >= s->nprocs)
        return rma_li_error(LI_ERR_PID, fn, "pid %d not in [0, %d)", pid, s->nprocs);
    if (local == NULL && len > 0)
        return rma_li_error(LI_ERR_ARG, fn, "local buffer is NULL");
    rc = rma_li_lookup(form, raddr, fn, &a);
    if (rc != LI_OK)
        return rc;
    if (!a->committed)
        return rma_li_error(LI_ERR_NOTINIT, fn, "area at %p is registered but not committed",
                            raddr);
    if (form == RMA_LI_SINGLE ? !s->s_epoch_open : !a->epoch_open)
        return rma_li_error(LI_ERR_NOTINIT, fn, "%s has not been called for area at %p",
                            form == RMA_LI_SINGLE ? "li_init" : "lio_init", raddr);
    rel = (size_t)((uintptr_t)raddr - a->start);
    if (off > a->len - rel || len > a->len - rel - off)
        return rma_li_error(LI_ERR_RANGE, fn,
                            "%zu bytes at offset %zu from %p pass the end of the %zu-byte "
                            "area at %p",
                            len, off, raddr, a->len, (void *)a->start);
    if (len == 0)
        return LI_OK;
    if (form == RMA_LI_SINGLE) {
        win = s->swin;
        disp = MPI_Aint_add(a->bases[pid], (MPI_Aint)(rel + off));
    } else {
        win = a->win;
        disp = (MPI_Aint)(rel + off);
    }
    for (size_t done = 0; done < len; done += LI_CHUNK) {
        int n = (int)(len - done < LI_CHUNK ? len - done : LI_CHUNK);
        char *lp = (char *)local + done;
        if (is_put)
            rc = MPI_Put(lp, n, MPI_BYTE, pid, disp + (MPI_Aint)done, n, MPI_BYTE, win);
        else
            rc = MPI_Get(lp, n, MPI_BYTE, pid, disp + (MPI_Aint)done, n, MPI_BYTE, win);
        if (rc != MPI_SUCCESS)
            return rma_li_mpi_error(fn, is_put ? "MPI_Put" : "MPI_Get", rc);
    }
    return LI_OK;
}

int rma_li_deregister_check(enum rma_li_form form, void *addr, const char *fn,
                            rma_li_area_t **area_p)
{
    rma_li_state_t *s = &rma_li_state;
    rma_li_area_t *a = NULL;
    int lrc = rma_li_check_begun(fn), ok;

    if (lrc != LI_OK)
        return lrc;
    lrc = rma_li_lookup(form, addr, fn, &a);
    if (lrc == LI_OK && a->start != (uintptr_t)addr)
        lrc = rma_li_error(LI_ERR_NOTREG, fn, "%p is inside the area at %p, not its start", addr,
                           (void *)a->start);
    if (lrc == LI_OK && !a->committed)
        lrc = rma_li_error(LI_ERR_NOTINIT, fn, "area at %p was never committed", addr);
    /* every rank joins the check, also one that failed locally, so none blocks */
    ok = rma_li_agree(lrc == LI_OK ? a->seq + 1 : 0, fn);
    if (ok < 0)
        return ok;
    if (lrc != LI_OK)
        return lrc;
    if (!ok)
        return rma_li_error(LI_ERR_MISMATCH, fn,
                            "ranks deregistered different areas (this rank: registration #%lld "
                            "at %p); nothing removed",
                            (long long)a->seq, addr);
    pthread_mutex_lock(&li_lock);
    rma_lwt_remove(&s->table, a->start);
    pthread_mutex_unlock(&li_lock);
    *area_p = a;
    return LI_OK;
}
