/*
 * win_error.c - error raising and the registry of window error handlers.
 */
#include "windows/win_error.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "binding/next.h"
#include "mpid/rma/env.h"
#include "mpid/rma/grow.h"

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
    int rc;

    pthread_mutex_lock(&errh_lock);
    rc = rma_grow(&errhs, &errhs_cap, nerrhs, sizeof(*errhs), 8);
    if (rc == 0)
        errhs[nerrhs++] = (errh_ent_t){eh, fn, 1};
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
        rma_mpi.Errhandler_free(&eh);
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

/* ------------------------------------------------------------------ error codes
 *
 * Every error librma raises gets an MPI error code of its class (MPI_Add_error_code), so
 * that MPI_Error_class answers the standard class and MPI_Error_string (interposed) the
 * precise reason. Each class has a small ring of codes reused in turn: a code keeps its
 * text until RMA_ERR_RING later errors of the same class were raised. */

#define RMA_ERR_RING    16
#define RMA_ERR_CLASSES 128
#define RMA_ERR_TEXT    640

typedef struct err_slot {
    int code; /* 0: not created yet */
    char text[RMA_ERR_TEXT];
} err_slot_t;

static pthread_mutex_t code_lock = PTHREAD_MUTEX_INITIALIZER;
static err_slot_t *err_slots; /* [RMA_ERR_CLASSES][RMA_ERR_RING], allocated on first error */
static unsigned err_next[RMA_ERR_CLASSES];

/* An error code of errclass that MPI_Error_string will describe with `text`; errclass
 * itself when no code can be made (MPI not initialized, codes exhausted). */
static int err_code(int errclass, const char *text)
{
    err_slot_t *slot;
    int code = errclass, init = 0, fini = 0;

    if (errclass <= MPI_SUCCESS || errclass >= RMA_ERR_CLASSES ||
        PMPI_Initialized(&init) != MPI_SUCCESS || !init || PMPI_Finalized(&fini) != MPI_SUCCESS ||
        fini)
        return errclass;
    pthread_mutex_lock(&code_lock);
    if (err_slots == NULL)
        err_slots = calloc((size_t)RMA_ERR_CLASSES * RMA_ERR_RING, sizeof(*err_slots));
    if (err_slots == NULL)
        goto out;
    /* a slot without a code gets one made outside code_lock: MPI_Add_error_code takes
     * MPICH's lock, which MPICH holds while it runs an error handler, and a handler may call
     * MPI_Error_string (rma_err_string takes code_lock): the two deadlocked (hp54). The slot
     * is looked up again after: another thread may have taken it meanwhile (its code made
     * there, or the ring moved on); a code made and not needed stays unused (at most one
     * for each thread that met an empty slot, while a class's ring first fills). */
    for (int made = 0;;) {
        int rc;
        slot = &err_slots[errclass * RMA_ERR_RING + err_next[errclass] % RMA_ERR_RING];
        if (slot->code == 0)
            slot->code = made; /* 0 until a code is made */
        if (slot->code != 0)
            break;
        pthread_mutex_unlock(&code_lock);
        rc = PMPI_Add_error_code(errclass, &made);
        pthread_mutex_lock(&code_lock);
        if (rc != MPI_SUCCESS)
            goto out;
    }
    err_next[errclass]++;
    snprintf(slot->text, sizeof(slot->text), "%s", text);
    code = slot->code;
out:
    pthread_mutex_unlock(&code_lock);
    return code;
}

int rma_err_string(int code, char *out, int *len)
{
    int cls = code & 0x7f, found = 0;

    if (code <= MPI_SUCCESS || cls >= RMA_ERR_CLASSES)
        return 0;
    pthread_mutex_lock(&code_lock);
    for (int i = 0; err_slots != NULL && i < RMA_ERR_RING && !found; i++) {
        const err_slot_t *slot = &err_slots[cls * RMA_ERR_RING + i];
        if (slot->code == code) {
            *len = snprintf(out, MPI_MAX_ERROR_STRING, "%s", slot->text);
            if (*len >= MPI_MAX_ERROR_STRING)
                *len = MPI_MAX_ERROR_STRING - 1;
            found = 1;
        }
    }
    pthread_mutex_unlock(&code_lock);
    return found;
}

static __thread MPI_Comm err_comm = MPI_COMM_NULL; /* rma_err_comm_set */

static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static MPI_Comm quiet = MPI_COMM_NULL;
static MPI_Session quiet_session = MPI_SESSION_NULL; /* where it came from */
static int quiet_world;                              /* MPI_Init's world is up */
static MPI_Session *quiet_from;                      /* the sessions open, oldest first */
static int quiet_nfrom, quiet_cap;

/* Makes the quiet communicator from MPI_Init's world if it is up, else from the oldest
 * session open; MPI_COMM_NULL when neither is (or MPI refused). Under quiet_lock. */
static void quiet_make(void)
{
    MPI_Session session = quiet_world || quiet_nfrom == 0 ? MPI_SESSION_NULL : quiet_from[0];
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Group self;

    if (quiet_world) {
        if (PMPI_Comm_dup(MPI_COMM_SELF, &comm) == MPI_SUCCESS &&
            PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN) != MPI_SUCCESS)
            PMPI_Comm_free(&comm);
    } else if (session != MPI_SESSION_NULL &&
               PMPI_Group_from_session_pset(session, "mpi://SELF", &self) == MPI_SUCCESS) {
        if (PMPI_Comm_create_from_group(self, "org.librma.quiet", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                        &comm) != MPI_SUCCESS)
            comm = MPI_COMM_NULL;
        PMPI_Group_free(&self);
    }
    quiet = comm;
    quiet_session = session;
}

void rma_quiet_open(MPI_Session session)
{
    pthread_mutex_lock(&quiet_lock);
    if (session == MPI_SESSION_NULL) {
        quiet_world = 1;
    } else {
        if (rma_grow(&quiet_from, &quiet_cap, quiet_nfrom, sizeof(*quiet_from), 4) == 0)
            quiet_from[quiet_nfrom++] = session; /* else no memory: not a source */
    }
    if (quiet == MPI_COMM_NULL)
        quiet_make();
    pthread_mutex_unlock(&quiet_lock);
}

void rma_quiet_close(MPI_Session session)
{
    pthread_mutex_lock(&quiet_lock);
    if (session == MPI_SESSION_NULL)
        quiet_world = 0;
    for (int i = 0; session != MPI_SESSION_NULL && i < quiet_nfrom; i++)
        if (quiet_from[i] == session) {
            memmove(&quiet_from[i], &quiet_from[i + 1],
                    (size_t)(quiet_nfrom - i - 1) * sizeof(*quiet_from));
            quiet_nfrom--;
            break;
        }
    if (quiet != MPI_COMM_NULL && quiet_session == session) {
        PMPI_Comm_free(&quiet);
        quiet_make(); /* from what is still open */
    }
    pthread_mutex_unlock(&quiet_lock);
}

MPI_Comm rma_quiet_comm(void)
{
    MPI_Comm comm;

    pthread_mutex_lock(&quiet_lock);
    comm = quiet;
    pthread_mutex_unlock(&quiet_lock);
    return comm;
}

const char *rma_err_cma_hint(int err, int local)
{
    if (!local || err != EPERM)
        return "";
    return ". Memory that is not shared is reached with cross-memory attach, which needs "
           "ptrace permission between the ranks (Yama: kernel.yama.ptrace_scope 0 or 1; a "
           "seccomp filter may refuse it too); or take the window memory from MPI_Win_allocate "
           "or MPI_Alloc_mem, or set RMA_NETMOD_ONLY=1";
}

const char *rma_err_fd_hint(int err)
{
    if (err != EMFILE)
        return "";
    return ". librma holds a descriptor for each window and each MPI_Alloc_mem block, and "
           "this process reached its hard limit (ulimit -Hn; librma raises the soft one up to "
           "it)";
}

MPI_Comm rma_err_comm_set(MPI_Comm comm)
{
    MPI_Comm prev = err_comm;

    err_comm = comm;
    return prev;
}

int rma_err(rma_win_t *win, const char *func, int errclass, const char *fmt, ...)
{
    char reason[512], where[160], text[RMA_ERR_TEXT];
    MPI_Errhandler eh = MPI_ERRORS_ARE_FATAL;
    MPI_Comm comm = err_comm != MPI_COMM_NULL ? err_comm : MPI_COMM_WORLD;
    va_list ap;
    int code;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    if (win != NULL) {
        snprintf(where, sizeof(where), " on window 0x%x%s%s%s", (unsigned)win->handle,
                 win->name[0] ? " \"" : "", win->name, win->name[0] ? "\"" : "");
        eh = win->errhandler;
    } else {
        where[0] = '\0';
    }
    if (snprintf(text, sizeof(text), "%s%s: %s [%s]", func, where, reason, class_name(errclass)) >=
        (int)sizeof(text))
        memcpy(text + sizeof(text) - 4, "...", 4); /* a reason too long for MPI's strings */
    code = err_code(errclass, text);
    if (win == NULL) {
        PMPI_Comm_get_errhandler(comm, &eh);
        if (eh != MPI_ERRORS_RETURN && eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRORS_ABORT) {
            /* a user handler on the communicator */
            PMPI_Errhandler_free(&eh);
            PMPI_Comm_call_errhandler(comm, code);
            return code;
        }
    }
    if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT) {
        fprintf(stderr, "librma: fatal error in %s\n", text);
        abort_job(errclass);
        return code;
    }
    if (rma_env.verbose)
        fprintf(stderr, "librma: %s\n", text);
    return eh == MPI_ERRORS_RETURN ? code : rma_errh_call(win, code);
}

int rma_errh_call(rma_win_t *win, int code)
{
    MPI_Errhandler eh = win->errhandler;
    MPI_Win_errhandler_function *fn;
    MPI_Win handle = win->handle;

    if (eh == MPI_ERRORS_RETURN)
        return code;
    if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0, errclass = code;
        /* librma's own text (its MPI_Error_string), or the MPI library's */
        if (PMPI_Error_class(code, &errclass) != MPI_SUCCESS)
            errclass = MPI_ERR_UNKNOWN;
        if (PMPI_Error_string(code, text, &len) != MPI_SUCCESS)
            snprintf(text, sizeof(text), "error code %d", code);
        fprintf(stderr, "librma: MPI_Win_call_errhandler on window 0x%x: %s\n", (unsigned)handle,
                text);
        abort_job(errclass);
        return code;
    }
    fn = errh_fn(eh);
    if (fn != NULL)
        fn(&handle, &code);
    return code;
}
