/*
 * win_error.c - error raising and the registry of window error handlers.
 */
#include "windows/win_error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mpid/rma/env.h"

typedef struct errh_ent {
    MPI_Errhandler eh;
    MPI_Win_errhandler_function *fn;
    int refcnt;
} errh_ent_t;

static pthread_mutex_t errh_lock = PTHREAD_MUTEX_INITIALIZER;
static errh_ent_t *errhs;
static int nerrhs, errhs_cap;

static errh_ent_t *errh_find(MPI_Errhandler eh)
{
    for (int i = 0; i < nerrhs; i++)
        if (errhs[i].eh == eh && errhs[i].refcnt > 0)
            return &errhs[i];
    return NULL;
}

int rma_errh_register(MPI_Errhandler eh, MPI_Win_errhandler_function *fn)
{
    int rc = 0;

    pthread_mutex_lock(&errh_lock);
    if (nerrhs == errhs_cap) {
        int cap = errhs_cap ? 2 * errhs_cap : 8;
        errh_ent_t *p = realloc(errhs, (size_t)cap * sizeof(*p));
        if (p == NULL) {
            rc = -1;
            goto out;
        }
        errhs = p;
        errhs_cap = cap;
    }
    errhs[nerrhs++] = (errh_ent_t){eh, fn, 1};
out:
    pthread_mutex_unlock(&errh_lock);
    return rc;
}

int rma_errh_valid(MPI_Errhandler eh)
{
    int ok;

    if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_RETURN || eh == MPI_ERRORS_ABORT)
        return 1;
    pthread_mutex_lock(&errh_lock);
    ok = errh_find(eh) != NULL;
    pthread_mutex_unlock(&errh_lock);
    return ok;
}

void rma_errh_ref(MPI_Errhandler eh)
{
    pthread_mutex_lock(&errh_lock);
    errh_ent_t *e = errh_find(eh);
    if (e != NULL)
        e->refcnt++;
    pthread_mutex_unlock(&errh_lock);
}

int rma_errh_unref(MPI_Errhandler eh)
{
    int ours = 0, last = 0;

    pthread_mutex_lock(&errh_lock);
    errh_ent_t *e = errh_find(eh);
    if (e != NULL) {
        ours = 1;
        last = --e->refcnt == 0;
        if (last)
            *e = errhs[--nerrhs];
    }
    pthread_mutex_unlock(&errh_lock);
    if (last)
        PMPI_Errhandler_free(&eh);
    return ours;
}

static MPI_Win_errhandler_function *errh_fn(MPI_Errhandler eh)
{
    MPI_Win_errhandler_function *fn = NULL;

    pthread_mutex_lock(&errh_lock);
    errh_ent_t *e = errh_find(eh);
    if (e != NULL)
        fn = e->fn;
    pthread_mutex_unlock(&errh_lock);
    return fn;
}

/* Aborts the job. The launcher kills the other ranks at once and may drop what this one
 * printed last, so give it a moment to forward the message first. */
static void abort_job(int code)
{
    struct timespec ts = {0, 200 * 1000 * 1000};

    fflush(stderr);
    nanosleep(&ts, NULL);
    PMPI_Abort(MPI_COMM_WORLD, code);
}

static const char *class_name(int errclass)
{
    switch (errclass) {
    case MPI_ERR_RMA_SYNC: return "MPI_ERR_RMA_SYNC";
    case MPI_ERR_RMA_RANGE: return "MPI_ERR_RMA_RANGE";
    case MPI_ERR_RMA_CONFLICT: return "MPI_ERR_RMA_CONFLICT";
    case MPI_ERR_RMA_ATTACH: return "MPI_ERR_RMA_ATTACH";
    case MPI_ERR_RMA_SHARED: return "MPI_ERR_RMA_SHARED";
    case MPI_ERR_RMA_FLAVOR: return "MPI_ERR_RMA_FLAVOR";
    case MPI_ERR_WIN: return "MPI_ERR_WIN";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_DISP: return "MPI_ERR_DISP";
    case MPI_ERR_SIZE: return "MPI_ERR_SIZE";
    case MPI_ERR_ASSERT: return "MPI_ERR_ASSERT";
    case MPI_ERR_LOCKTYPE: return "MPI_ERR_LOCKTYPE";
    case MPI_ERR_KEYVAL: return "MPI_ERR_KEYVAL";
    case MPI_ERR_GROUP: return "MPI_ERR_GROUP";
    case MPI_ERR_INFO: return "MPI_ERR_INFO";
    case MPI_ERR_BASE: return "MPI_ERR_BASE";
    case MPI_ERR_NO_MEM: return "MPI_ERR_NO_MEM";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    default: return "MPI_ERR_OTHER";
    }
}

int rma_err(rma_win_t *win, const char *func, int errclass, const char *fmt, ...)
{
    char reason[512], where[160];
    MPI_Errhandler eh = MPI_ERRORS_ARE_FATAL;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    if (win != NULL) {
        snprintf(where, sizeof(where), " on window 0x%x%s%s%s", (unsigned)win->handle,
                 win->name[0] ? " \"" : "", win->name, win->name[0] ? "\"" : "");
        eh = win->errhandler;
    } else {
        where[0] = '\0';
        PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
        if (eh != MPI_ERRORS_RETURN && eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRORS_ABORT) {
            /* user handler on the world communicator */
            PMPI_Errhandler_free(&eh);
            PMPI_Comm_call_errhandler(MPI_COMM_WORLD, errclass);
            return errclass;
        }
    }
    if (eh == MPI_ERRORS_RETURN) {
        if (rma_env.verbose)
            fprintf(stderr, "librma: %s%s: %s [%s]\n", func, where, reason, class_name(errclass));
        return errclass;
    }
    if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT) {
        fprintf(stderr, "librma: fatal error in %s%s: %s [%s]\n", func, where, reason,
                class_name(errclass));
        abort_job(errclass);
        return errclass;
    }
    if (rma_env.verbose)
        fprintf(stderr, "librma: %s%s: %s [%s]\n", func, where, reason, class_name(errclass));
    return rma_errh_call(win, errclass);
}

int rma_errh_call(rma_win_t *win, int code)
{
    MPI_Errhandler eh = win->errhandler;
    MPI_Win_errhandler_function *fn;
    MPI_Win handle = win->handle;

    if (eh == MPI_ERRORS_RETURN)
        return code;
    if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT) {
        fprintf(stderr, "librma: MPI_Win_call_errhandler on window 0x%x: error code %d\n",
                (unsigned)handle, code);
        abort_job(code);
        return code;
    }
    fn = errh_fn(eh);
    if (fn != NULL)
        fn(&handle, &code);
    return code;
}
