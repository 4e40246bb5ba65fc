/*
 * rma_info - prints librma's version, what this machine supports and every tunable with its
 * current value. Runs as a single MPI process.
 */
#include <mpi.h>
#include <stdio.h>

#include "mpid/rma/agent.h"
#include "mpid/rma/env.h"
#include "netmod/netmod.h"
#include "rma_ext.h"
#include "windows/memreg.h"
#include "windows/segment.h"

int main(int argc, char **argv)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;

    MPI_Init(&argc, &argv);
    MPI_Get_library_version(lib, &len);
    printf("librma %s\n", RMAX_Version());
    printf("MPI library: %.*s\n", (int)(len > 0 && lib[len - 1] == '\n' ? len - 1 : len), lib);
    printf("transports: shm (direct load/store, cross-memory attach), ucx (%s)\n",
           rma_net != NULL ? "off-node peers, or every peer with RMA_NETMOD_ONLY=1"
                           : "not built: off-node windows are refused");
    printf("shared segments (memfds, opened by peers with pidfd_getfd or /proc/<pid>/fd): %s\n",
           rma_seg_sharing_works() ? "yes" : "NO (windows use cross-memory attach)");
    {
        const char *why = NULL;
        int can = rma_memreg_can_move(&why);
        printf("create and attach memory moved onto shared memory (userfaultfd): ");
        if (can)
            printf("yes\n");
        else
            printf("NO, %s (peers use cross-memory attach or UCX, not load/store)\n", why);
    }
    printf("\nenvironment:\n");
    rma_env_print(stdout);
    {
        char where[256];
        rma_agent_placement(where, sizeof(where), 0);
        printf("\nprogress agent of this process: %s\n", where);
    }
    if (rma_net != NULL) {
        const char *why = "";
        printf("\nUCX as librma starts it (the transports and devices an endpoint to a "
               "process on this machine selects):\n");
        fflush(stdout);
        if (rma_net->start(&why) != 0)
            printf("ucx: cannot start: %s\n", why);
        else
            rma_net->print(stdout);
    }
    MPI_Finalize();
    return 0;
}
