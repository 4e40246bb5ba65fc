/*
 * win.c - the window handle table and window info keys.
 */
#include "windows/win.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

rma_win_tab_t *_Atomic rma_win_tab;
static rma_win_tab_t **retired; /* tables replaced by a larger one */
static int nretired;
static unsigned win_live;
static uint32_t win_serial; /* windows made so far (under win_lock) */
static pthread_mutex_t win_lock = PTHREAD_MUTEX_INITIALIZER;

/* A free slot index, growing the table when full (win_lock held); -1 without memory. */
static int slot_alloc(void)
{
    rma_win_tab_t *t = atomic_load_explicit(&rma_win_tab, memory_order_relaxed), *nt, **r;
    unsigned size = t ? t->size : 0, cap = size ? 2 * size : 16, idx;

    for (idx = 0; idx < size; idx++)
        if (t->slot[idx] == NULL)
            return (int)idx;
    if (cap > RMA_WIN_INDEX_MASK + 1u)
        return -1;
    nt = calloc(1, sizeof(*nt) + cap * sizeof(nt->slot[0]));
    r = realloc(retired, (size_t)(nretired + 1) * sizeof(*r));
    if (nt == NULL || r == NULL) {
        free(nt);
        retired = r ? r : retired;
        return -1;
    }
    retired = r;
    nt->size = cap;
    if (t != NULL) {
        memcpy(nt->slot, t->slot, size * sizeof(t->slot[0]));
        retired[nretired++] = t;
    }
    atomic_store_explicit(&rma_win_tab, nt, memory_order_release);
    return (int)size;
}

rma_win_t *rma_win_new(void)
{
    rma_win_t *win = calloc(1, sizeof(*win));
    int idx;

    if (win == NULL)
        return NULL;
    win->errhandler = MPI_ERRORS_ARE_FATAL;
    win->model = MPI_WIN_UNIFIED;
    win->seg_fd = -1;
    win->group = MPI_GROUP_NULL;
    {
        /* recursive: an error raised while it is held may call a handler that uses the window */
        pthread_mutexattr_t attr;
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&win->mtx, &attr);
        pthread_mutexattr_destroy(&attr);
        pthread_mutex_init(&win->dyn_mtx, NULL);
    }
    pthread_mutex_lock(&win_lock);
    idx = slot_alloc();
    if (idx < 0) {
        pthread_mutex_unlock(&win_lock);
        free(win);
        return NULL;
    }
    win->handle = (MPI_Win)(RMA_WIN_HANDLE_TAG | (unsigned)idx);
    win->serial = ++win_serial;
    atomic_load_explicit(&rma_win_tab, memory_order_relaxed)->slot[idx] = win;
    win_live++;
    pthread_mutex_unlock(&win_lock);
    return win;
}

void rma_win_retire(rma_win_t *win)
{
    rma_win_t **slot;

    pthread_mutex_lock(&win_lock);
    slot = &atomic_load_explicit(&rma_win_tab, memory_order_relaxed)
                ->slot[(unsigned)win->handle & RMA_WIN_INDEX_MASK];
    if (*slot == win) {
        *slot = NULL;
        win_live--;
    }
    pthread_mutex_unlock(&win_lock);
}

rma_win_t *rma_win_first(void)
{
    rma_win_tab_t *t;
    rma_win_t *win = NULL;

    pthread_mutex_lock(&win_lock);
    t = atomic_load_explicit(&rma_win_tab, memory_order_relaxed);
    for (unsigned i = 0; t != NULL && i < t->size && win == NULL; i++)
        win = t->slot[i];
    pthread_mutex_unlock(&win_lock);
    return win;
}

void rma_win_foreach(void (*fn)(rma_win_t *win))
{
    rma_win_tab_t *t;

    pthread_mutex_lock(&win_lock);
    t = atomic_load_explicit(&rma_win_tab, memory_order_relaxed);
    for (unsigned i = 0; t != NULL && i < t->size; i++)
        if (t->slot[i] != NULL)
            fn(t->slot[i]);
    pthread_mutex_unlock(&win_lock);
}

void rma_win_delete(rma_win_t *win)
{
    rma_win_retire(win);
    free(win->attrs);
    pthread_mutex_destroy(&win->mtx);
    pthread_mutex_destroy(&win->dyn_mtx);
    free(win);
}

void rma_win_finalize(void)
{
    pthread_mutex_lock(&win_lock);
    for (int i = 0; i < nretired; i++)
        free(retired[i]);
    free(retired);
    retired = NULL;
    nretired = 0;
    pthread_mutex_unlock(&win_lock);
}

int rma_win_count(void)
{
    return (int)win_live;
}

static int info_bool(MPI_Info info, const char *key, int dflt)
{
    char val[16];
    int flag = 0;

    if (info == MPI_INFO_NULL)
        return dflt;
    PMPI_Info_get(info, key, sizeof(val) - 1, val, &flag);
    if (!flag)
        return dflt;
    if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0)
        return 1;
    return strcmp(val, "false") == 0 || strcmp(val, "0") == 0 ? 0 : dflt; /* else ignored */
}

static void info_str(MPI_Info info, const char *key, char *dst, size_t len)
{
    char val[128];
    int flag = 0;

    if (info == MPI_INFO_NULL)
        return;
    PMPI_Info_get(info, key, sizeof(val) - 1, val, &flag);
    if (flag && strlen(val) < len)
        strcpy(dst, val);
}

/* A non-negative decimal integer for key, else dflt (a malformed hint is ignored). */
static long info_count(MPI_Info info, const char *key, long dflt)
{
    char val[32], *end;
    long v;

    val[0] = '\0';
    info_str(info, key, val, sizeof(val));
    if (val[0] == '\0')
        return dflt;
    errno = 0;
    v = strtol(val, &end, 10);
    return errno == 0 && end != val && *end == '\0' && v >= 0 ? v : dflt;
}

size_t rma_info_alignment(MPI_Info info)
{
    char val[32], *end;
    unsigned long long a;

    val[0] = '\0';
    info_str(info, "mpi_minimum_memory_alignment", val, sizeof(val));
    if (val[0] == '\0')
        return 1;
    errno = 0;
    a = strtoull(val, &end, 0);
    return errno == 0 && end != val && *end == '\0' && a > 0 && (a & (a - 1)) == 0 &&
                   a <= RMA_ALIGN_MAX
               ? (size_t)a
               : 1;
}

/* accumulate_ordering: "none", or a comma-separated list of rar, raw, war and waw. */
static int acc_ordering_valid(const char *v)
{
    if (strcmp(v, "none") == 0)
        return 1;
    for (;;) {
        if (strncmp(v, "rar", 3) != 0 && strncmp(v, "raw", 3) != 0 && strncmp(v, "war", 3) != 0 &&
            strncmp(v, "waw", 3) != 0)
            return 0;
        v += 3;
        if (*v == '\0')
            return 1;
        if (*v++ != ',')
            return 0;
    }
}

static int acc_ops_valid(const char *v)
{
    return strcmp(v, "same_op") == 0 || strcmp(v, "same_op_no_op") == 0;
}

/* A string hint for key into dst, when valid (MPI: an invalid hint is ignored). */
static void info_choice(MPI_Info info, const char *key, char *dst, size_t len,
                        int (*valid)(const char *))
{
    char val[128];

    val[0] = '\0';
    info_str(info, key, val, sizeof(val));
    if (val[0] != '\0' && valid(val) && strlen(val) < len)
        strcpy(dst, val);
}

void rma_win_info_parse(rma_win_t *win, MPI_Info info)
{
    rma_win_info_t *wi = &win->info;

    if (wi->accumulate_ordering[0] == '\0') {
        strcpy(wi->accumulate_ordering, "rar,raw,war,waw");
        strcpy(wi->accumulate_ops, "same_op_no_op");
    }
    wi->no_locks = info_bool(info, "no_locks", wi->no_locks);
    wi->same_size = info_bool(info, "same_size", wi->same_size);
    wi->same_disp_unit = info_bool(info, "same_disp_unit", wi->same_disp_unit);
    wi->alloc_shared_noncontig =
        info_bool(info, "alloc_shared_noncontig", wi->alloc_shared_noncontig);
    info_choice(info, "accumulate_ordering", wi->accumulate_ordering,
                sizeof(wi->accumulate_ordering), acc_ordering_valid);
    info_choice(info, "accumulate_ops", wi->accumulate_ops, sizeof(wi->accumulate_ops),
                acc_ops_valid);
    wi->accumulate_granularity =
        info_count(info, "mpi_accumulate_granularity", wi->accumulate_granularity);
}
