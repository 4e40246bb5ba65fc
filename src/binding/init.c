/*
 * init.c - process start and end (MPI_Init*, MPI_Finalize; MPI_Session_init/finalize) and
 * MPI_Alloc_mem/MPI_Free_mem, whose memory librma makes shared so that windows on it get the
 * direct path.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding/binding.h"
#include "binding/next.h"
#include "mpid/rma/acc.h"
#include "mpid/rma/agent.h"
#include "mpid/rma/dtl.h"
#include "mpid/rma/env.h"
#include "mpid/rma/rma.h"
#include "netmod/netmod.h"
#include "rma_ext.h"
#include "sync/wait.h"
#include "windows/memreg.h"
#include "windows/segment.h"
#include "windows/win.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_body(void)
{
    rma_env_init();
    rma_acc_ops_probe();
    rma_seg_allow_peers();
}

void rma_init_once(void)
{
    pthread_once(&init_once, init_body);
}

static void world_end(void);

/* MPI_Finalize first frees MPI_COMM_SELF, running the delete callbacks of its attributes
 * in the reverse order of their setting, "before any other parts of MPI are affected"
 * (MPI-4.0 11.2.4): libraries free their windows there. librma's attribute, set at
 * MPI_Init before the program can set one, is deleted last, and ends librma's part of the
 * world then (before, librma's MPI_Finalize freed the windows and stopped the transport
 * first, and a program's callback found its window gone: hp54). MPICH 4.0.2 runs the
 * callbacks once its own progress thread has stopped, and only when no MPI session is
 * open; with one open, MPI_Finalize ends librma's part itself (keeping what the sessions
 * use), and the callback, run at the last MPI_Session_finalize, finds it done. */
static int self_keyval = MPI_KEYVAL_INVALID;

static int self_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)val;
    (void)extra;
    world_end();
    return MPI_SUCCESS;
}

/* What follows the MPI library's MPI_Init or MPI_Init_thread that succeeded. */
static void world_started(void)
{
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &self_keyval, NULL) !=
            MPI_SUCCESS ||
        PMPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL) != MPI_SUCCESS)
        self_keyval = MPI_KEYVAL_INVALID; /* then MPI_Finalize ends it before MPI's own end */
    rma_quiet_open(MPI_SESSION_NULL);     /* before the accumulate probe, which asks on it */
    rma_init_once();
    rma_locality_init();
    rma_barrier_init();
    rma_wait_mpi_up(1);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = rma_mpi.Init(argc, argv);
    if (rc == MPI_SUCCESS)
        world_started();
    return rc;
}
RMA_PMPI(Init);

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = rma_mpi.Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        world_started();
    return rc;
}
RMA_PMPI(Init_thread);

/* Once every process is in MPI_Finalize, while the transport still runs: windows not freed
 * (MPI does not ask for it) release what they hold, its registrations among it, then the
 * MPI_Alloc_mem blocks from the transport end. */
static void all_in_finalize(void)
{
    rma_win_free_left();
    rma_request_reap_all(); /* requests the program freed early: their windows are gone */
    rma_memreg_net_end();
}

/* MPI_Finalize ends MPI_Init's world model alone (MPI-4.0 chapter 11): an MPI session still
 * open goes on, and with it librma's windows, transport and agent, as in a program of
 * sessions alone, where the process's exit ends them. This process takes its part in the
 * world's last steps all the same (rma_net->finalize). Run once, from MPI_COMM_SELF's
 * freeing inside MPI_Finalize (self_delete), or by MPI_Finalize itself before MPI's own
 * end where that attribute could not be set. */
static void world_end(void)
{
    static int ended;
    int live, keep;

    if (ended++)
        return;
    live = rma_win_count();
    keep = rma_wait_sessions(0) > 0;

    if (live > 0 && rma_env.verbose)
        fprintf(stderr, "librma: MPI_Finalize with %d window(s) %s\n", live,
                keep ? "open, kept for the MPI sessions still open" : "not freed");
    rma_wait_mpi_up(0); /* waits from here on give MPICH's progress no turn (a session's) */
    if (!keep) {
        rma_peer_unwatch_all(); /* nor look at same-node peers, which may leave first */
        rma_expose_end();       /* the agent moves nothing onto the transport's memory now */
    }
    if (rma_net != NULL)
        rma_net->finalize(all_in_finalize, keep); /* collective over MPI_COMM_WORLD */
    else if (!keep)
        all_in_finalize();
    if (!keep) {
        rma_barrier_finalize();
        rma_agent_stop();
        rma_dtl_finalize();
        rma_seg_finalize();
        rma_memreg_finalize();
        rma_win_finalize();
    }
    rma_quiet_close(MPI_SESSION_NULL); /* made again from a session still open */
}

int MPI_Finalize(void)
{
    if (self_keyval == MPI_KEYVAL_INVALID || rma_wait_sessions(0) > 0)
        world_end();
    return rma_mpi.Finalize(); /* self_delete: world_end */
}
RMA_PMPI(Finalize);

/* A program of MPI sessions: MPI is up while a session is open, for the waits' turn at
 * MPICH's progress (idle.c). What MPI_Finalize ends is left to the process's exit there,
 * also after an MPI_Finalize that a session outlived. */
int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
{
    int rc = rma_mpi.Session_init(info, errhandler, session);

    if (rc == MPI_SUCCESS) {
        rma_quiet_open(*session); /* the first session's, unless MPI_Init's is open */
        rma_wait_sessions(1);
    }
    return rc;
}
RMA_PMPI(Session_init);

int MPI_Session_finalize(MPI_Session *session)
{
    int rc;

    rma_wait_sessions(-1); /* no wait may test a request once the session is gone */
    rma_quiet_close(*session);
    rc = rma_mpi.Session_finalize(session);
    if (rc != MPI_SUCCESS)
        rma_wait_sessions(1); /* still open */
    return rc;
}
RMA_PMPI(Session_finalize);

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    void *p;

    rma_init_once();
    if (size < 0)
        return rma_err(NULL, "MPI_Alloc_mem", MPI_ERR_SIZE, "negative size %ld", (long)size);
    if (baseptr == NULL)
        return rma_err(NULL, "MPI_Alloc_mem", MPI_ERR_ARG, "baseptr is NULL");
    p = rma_memreg_alloc((size_t)size, rma_info_alignment(info));
    if (p == NULL)
        return rma_err(NULL, "MPI_Alloc_mem", MPI_ERR_NO_MEM, "cannot allocate %ld bytes: %s%s",
                       (long)size, strerror(errno), rma_err_fd_hint(errno));
    *(void **)baseptr = p;
    return MPI_SUCCESS;
}
RMA_PMPI(Alloc_mem);

int MPI_Free_mem(void *base)
{
    if (base == NULL)
        return MPI_SUCCESS;
    if (rma_memreg_free(base) != 0)
        return rma_err(NULL, "MPI_Free_mem", MPI_ERR_BASE, "%p was not returned by MPI_Alloc_mem",
                       base);
    return MPI_SUCCESS;
}
RMA_PMPI(Free_mem);

/* ------------------------------------------------------------------ extensions */

const char *RMAX_Version(void)
{
    return PACKAGE_VERSION;
}

int RMAX_Agent_copies(long long *by_agent, long long *by_caller)
{
    rma_xfer_copies(by_agent, by_caller);
    return MPI_SUCCESS;
}

int RMAX_Memory_moves(int *can, const char **why)
{
    if (can == NULL)
        return rma_err(NULL, "RMAX_Memory_moves", MPI_ERR_ARG, "can is NULL");
    rma_env_init(); /* the environment decides, also before MPI_Init (where nothing else of
                       rma_init_once may run yet: the accumulate probe needs MPI) */
    *can = rma_memreg_can_move(why);
    return MPI_SUCCESS;
}

int RMAX_Win_path(MPI_Win handle, int target, MPI_Aint disp, MPI_Aint len, int *path)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "RMAX_Win_path");
    if ((unsigned)target >= (unsigned)win->nranks || len < 0 || path == NULL)
        return rma_err(win, "RMAX_Win_path", MPI_ERR_ARG, "bad target %d or length %ld", target,
                       (long)len);
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        rma_dyn_hit_t hit;
        int n;
        if (rma_win_dyn_resolve(win, target, (uintptr_t)disp, (size_t)len, &hit, 1, &n) ==
            MPI_ERR_RMA_RANGE)
            return rma_err(win, "RMAX_Win_path", MPI_ERR_RMA_RANGE,
                           "[0x%lx, +%ld) is not in memory attached at rank %d",
                           (unsigned long)disp, (long)len, target);
        *path = n == 1 && hit.local != NULL
                    ? (win->targets[target].local ? RMAX_PATH_DIRECT : RMAX_PATH_NETMAP)
                : !win->targets[target].local ? RMAX_PATH_NETMOD
                                              : RMAX_PATH_CMA;
        return MPI_SUCCESS;
    }
    rma_target_t *tg = &win->targets[target];
    MPI_Aint off;
    if (disp < 0 || __builtin_mul_overflow(disp, (MPI_Aint)tg->disp_unit, &off) || off > tg->size ||
        len > tg->size - off)
        return rma_err(win, "RMAX_Win_path", MPI_ERR_RMA_RANGE,
                       "[%ld, +%ld) lies outside the %ld-byte window of rank %d", (long)disp,
                       (long)len, (long)tg->size, target);
    if (!tg->local) {
        *path = tg->nm.data_map != NULL ? RMAX_PATH_NETMAP : RMAX_PATH_NETMOD;
        return MPI_SUCCESS;
    }
    rma_expose_refresh(win, target); /* create memory its owner may have moved since */
    /* the hot path's own test: mapped here means load/store */
    *path = rma_direct_addr(tg, disp, (size_t)len) != NULL ? RMAX_PATH_DIRECT : RMAX_PATH_CMA;
    return MPI_SUCCESS;
}
