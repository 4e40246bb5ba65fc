/*
 * binding.h - helpers shared by the MPI entry points: handle -> window translation with the
 * standard's error for a bad handle, and lazy start-up for programs that initialized MPI
 * without going through our MPI_Init (e.g. a Fortran main program).
 */
#ifndef RMA_BINDING_H
#define RMA_BINDING_H

#include <mpi.h>

#include "netmod/netmod.h"
#include "windows/win.h"
#include "windows/win_error.h"

/* Gives librma's MPI_name its profiling name PMPI_name too (next.h says who calls that). */
#define RMA_PMPI(name)                                                                             \
    extern __typeof__(MPI_##name) PMPI_##name __attribute__((alias("MPI_" #name)))

/* Sets `win` to the window behind `handle` or returns MPI_ERR_WIN raised for `func`. */
#define RMA_WIN_GET(win, handle, func)                                                             \
    do {                                                                                           \
        (win) = rma_win_lookup(handle);                                                            \
        if (rma_unlikely((win) == NULL))                                                           \
            return rma_err(NULL, (func), MPI_ERR_WIN, "0x%x is not a valid window%s",              \
                           (unsigned)(handle), (handle) == MPI_WIN_NULL ? " (MPI_WIN_NULL)" : ""); \
    } while (0)

/* RMA_WIN_GET for a synchronization call, which also serves this process's off-node peers
 * when nothing else does (RMA_AGENT=off: rma_net_poke), and first sends what the transports
 * hold back for the targets of other windows (netmod.h, held operations). */
#define RMA_SYNC_WIN_GET(win, handle, func)                                                        \
    do {                                                                                           \
        RMA_WIN_GET(win, handle, func);                                                            \
        rma_nm_release_held(win);                                                                  \
        rma_net_poke();                                                                            \
    } while (0)

/* Starts librma's process-wide state once (environment, transports). */
void rma_init_once(void);

/* MPI_Barrier's own duplicate of MPI_COMM_WORLD (barrier.c): made in MPI_Init (collective),
 * freed in MPI_Finalize before PMPI_Finalize. */
void rma_barrier_init(void);
void rma_barrier_finalize(void);

#endif
