/*
 * next.h - the MPI library's own definitions of the calls librma wraps.
 *
 * librma answers both names of every call it implements, MPI_x and PMPI_x (RMA_PMPI in
 * binding.h): MPICH's Fortran 2008 bindings call PMPI_x directly, and so does a profiling
 * tool layered above librma. Where librma only wraps a call (MPI_Init, MPI_Finalize,
 * MPI_Session_init/finalize, MPI_Barrier, error handlers, MPI_Request_get_status), its
 * PMPI_x is librma's too, so the MPI library's own definition is reached through this
 * table, looked up past librma in the link order.
 * MPICH's Fortran bindings also reach a window's attributes through MPICH-internal calls
 * (MPII_Win_get_attr, MPII_Win_set_attr, MPII_Keyval_set_proxy), which librma answers for
 * its own windows and keyvals (win_attr.c) and passes on otherwise.
 */
#ifndef RMA_BINDING_NEXT_H
#define RMA_BINDING_NEXT_H

#include <mpi.h>

/* MPICH's attribute kinds (mpir_attr_generic.h): bit 0 set = an integer value, not a
 * pointer; what a Fortran binding asks for. */
enum { RMA_ATTR_PTR = 0, RMA_ATTR_AINT = 1, RMA_ATTR_INT = 3 };

/* MPICH's language proxies for attribute callbacks (MPII_Attr_copy_proxy/delete_proxy). */
typedef int rma_attr_copy_proxy_t(MPI_Win_copy_attr_function *fn, int handle, int keyval,
                                  void *extra_state, int kind, void *value, void **copy, int *flag);
typedef int rma_attr_delete_proxy_t(MPI_Win_delete_attr_function *fn, int handle, int keyval,
                                    int kind, void *value, void *extra_state);

typedef struct rma_mpi_next {
    __typeof__(PMPI_Init) *Init;
    __typeof__(PMPI_Init_thread) *Init_thread;
    __typeof__(PMPI_Finalize) *Finalize;
    __typeof__(PMPI_Barrier) *Barrier;
    __typeof__(PMPI_Win_create_errhandler) *Win_create_errhandler;
    __typeof__(PMPI_Errhandler_free) *Errhandler_free;
    __typeof__(PMPI_Error_string) *Error_string;
    __typeof__(PMPI_Request_get_status) *Request_get_status;
    __typeof__(PMPI_Session_init) *Session_init;
    __typeof__(PMPI_Session_finalize) *Session_finalize;
    /* MPICH-internal; NULL in an MPI library without them */
    int (*Win_get_attr)(MPI_Win win, int keyval, void *value, int *flag, int kind);
    int (*Win_set_attr)(MPI_Win win, int keyval, void *value, int kind);
    void (*Keyval_set_proxy)(int keyval, rma_attr_copy_proxy_t *copy, rma_attr_delete_proxy_t *del);
} rma_mpi_next_t;

/* MPICH's Fortran bindings' window-attribute calls, answered by librma for its own windows
 * and keyvals and passed on otherwise (win_attr.c). */
int MPII_Win_get_attr(MPI_Win win, int keyval, void *value, int *flag, int kind);
int MPII_Win_set_attr(MPI_Win win, int keyval, void *value, int kind);
void MPII_Keyval_set_proxy(int keyval, rma_attr_copy_proxy_t *copy, rma_attr_delete_proxy_t *del);

/* Filled when librma is loaded. A wrapped call whose definition is missing ends the
 * process with a message saying so (librma linked after the MPI library). */
extern rma_mpi_next_t rma_mpi;

#endif
