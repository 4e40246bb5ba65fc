/*
 * netmod.h - the transport boundary. The device core moves bytes it cannot load/store
 * directly through one of these tables: `shm` (cross-memory attach to same-node processes)
 * now, `ucx` (RDMA, atomics, active messages to off-node processes) next.
 */
#ifndef RMA_NETMOD_H
#define RMA_NETMOD_H

#include <sys/uio.h>

typedef struct rma_netmod_ops {
    const char *name;
    /* Process-wide start/stop (MPI_Init / MPI_Finalize). 0 or -errno. */
    int (*init)(void);
    void (*finalize)(void);
    /* Copies local iovecs into (writev) or out of (readv) the target's remote iovecs; the
     * data has arrived when the call returns. 0, or -errno. */
    int (*writev)(int pid, const struct iovec *local, int nlocal, const struct iovec *remote,
                  int nremote);
    int (*readv)(int pid, const struct iovec *local, int nlocal, const struct iovec *remote,
                 int nremote);
} rma_netmod_ops_t;

extern const rma_netmod_ops_t rma_nm_shm_ops;

#endif
