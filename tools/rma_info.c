/*
 * rma_info - prints librma's version, what this machine supports and every tunable with its
 * current value. Runs as a single MPI process.
 */
#include <mpi.h>
#include <stdio.h>

#include "mpid/rma/env.h"
#include "rma_ext.h"
#include "windows/segment.h"

int main(int argc, char **argv)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;

    MPI_Init(&argc, &argv);
    MPI_Get_library_version(lib, &len);
    printf("librma %s\n", RMAX_Version());
    printf("MPI library: %.*s\n", (int)(len > 0 && lib[len - 1] == '\n' ? len - 1 : len), lib);
    printf("transports: shm (direct load/store, cross-memory attach)\n");
    printf("shared segments (memfd + pidfd_getfd): %s\n",
           rma_seg_sharing_works() ? "yes" : "NO (windows use cross-memory attach)");
    printf("\nenvironment:\n");
    rma_env_print(stdout);
    MPI_Finalize();
    return 0;
}
