/*
 * rma_ext.h - librma extensions beyond the MPI standard. Programs that use them must link
 * librma (rmacc); check for librma at run time with dlsym(RTLD_DEFAULT, "RMAX_Version").
 */
#ifndef RMA_EXT_H
#define RMA_EXT_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The librma version string, e.g. "0.1.0". */
const char *RMAX_Version(void);

enum {
    RMAX_PATH_DIRECT = 1, /* load/store on memory mapped in this process */
    RMAX_PATH_CMA = 2,    /* cross-memory attach (process_vm_readv/writev) */
    RMAX_PATH_NETMOD = 3, /* network transport: its RDMA, atomics and requests */
    RMAX_PATH_NETMAP = 4, /* an off-node target's memory that the network transport maps
                             here (its shared-memory transports, between processes of one
                             machine): load/store, as direct */
};

/* The path an operation on [disp, disp+len) bytes of `target` takes (disp in disp_units;
 * an address for dynamic windows). MPI_SUCCESS, or an error class raised on the window. */
int RMAX_Win_path(MPI_Win win, int target, MPI_Aint disp, MPI_Aint len, int *path);

/* Whether this process moves the memory of its MPI_Win_create windows and MPI_Win_attach
 * regions onto shared memory once peers' traffic pays for it (then RMAX_PATH_DIRECT or
 * RMAX_PATH_NETMAP), which takes userfaultfd with write protection: *can is 1 or 0; *why,
 * when why is not NULL, is NULL or a sentence on what is missing. MPI_SUCCESS. May be
 * called before MPI_Init: the answer then comes from the environment, as it will after. */
int RMAX_Memory_moves(int *can, const char **why);

/* Request-based copies (MPI_Rput, MPI_Rget) this process handed to its progress agent
 * (RMA_AGENT_COPY), by who made them so far: the agent, while the caller went on, or the
 * caller, whose wait came before the agent took the copy. Either pointer may be NULL.
 * MPI_SUCCESS. */
int RMAX_Agent_copies(long long *by_agent, long long *by_caller);

#ifdef __cplusplus
}
#endif

#endif
