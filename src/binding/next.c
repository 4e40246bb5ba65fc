/*
 * next.c - finds the MPI library's own definitions of the calls librma wraps (next.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "binding/binding.h"
#include "binding/next.h"

rma_mpi_next_t rma_mpi;

/* The definition of `name` after librma in the lookup order (rmacc links librma ahead of
 * the MPI library, rmarun preloads it); else the first anywhere, unless that is librma's. */
static void *next_sym(const char *name, void *own)
{
    void *p = dlsym(RTLD_NEXT, name);

    if (p == NULL || p == own)
        p = dlsym(RTLD_DEFAULT, name);
    return p == own ? NULL : p;
}

/* rma_mpi.f: PMPI_f (librma's own is MPI_f), or MPII_f (MPICH-internal). */
#define NEXT_PMPI(f) (rma_mpi.f = (__typeof__(rma_mpi.f))next_sym("PMPI_" #f, (void *)MPI_##f))
#define NEXT_MPII(f) (rma_mpi.f = (__typeof__(rma_mpi.f))next_sym("MPII_" #f, (void *)MPII_##f))

__attribute__((constructor)) static void next_resolve(void)
{
    int found = NEXT_PMPI(Init) != NULL;

    found &= NEXT_PMPI(Init_thread) != NULL;
    found &= NEXT_PMPI(Finalize) != NULL;
    found &= NEXT_PMPI(Barrier) != NULL;
    found &= NEXT_PMPI(Win_create_errhandler) != NULL;
    found &= NEXT_PMPI(Errhandler_free) != NULL;
    found &= NEXT_PMPI(Error_string) != NULL;
    found &= NEXT_PMPI(Request_get_status) != NULL;
    found &= NEXT_PMPI(Session_init) != NULL;
    found &= NEXT_PMPI(Session_finalize) != NULL;
    if (!found) { /* every call of MPI_Init would come back to librma */
        fprintf(stderr, "librma: the MPI library's PMPI_Init, PMPI_Finalize, ... are not found "
                        "past librma: the MPI library comes first in this program's link order "
                        "(an -lmpi or -lmpich ahead of -lrma?); link with rmacc, or start with "
                        "rmarun\n");
        abort();
    }
    NEXT_MPII(Win_get_attr);
    NEXT_MPII(Win_set_attr);
    NEXT_MPII(Keyval_set_proxy);
}
