/*
 * win_error.h - raising MPI errors on a window through its error handler.
 *
 * An error is decided and reported once, where it is found: the caller names the MPI call
 * and the reason; the window's handler decides what happens (MPI_ERRORS_RETURN returns the
 * class, MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT print the message and abort, a user
 * handler is called). Calls without a valid window raise on MPI_COMM_WORLD's handler, but
 * the creation of a window raises on its communicator's (rma_err_comm_set).
 */
#ifndef RMA_WIN_ERROR_H
#define RMA_WIN_ERROR_H

#include <mpi.h>

#include "windows/win.h"

/* Raises errclass on win (NULL: no window) for MPI call `func`. Returns the error code the
 * handler leaves for the caller to return: a code of class errclass whose MPI_Error_string
 * is the precise reason. */
int rma_err(rma_win_t *win, const char *func, int errclass, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), cold, noinline));

/* Makes errors raised without a window, in this thread, go to comm's handler (MPI: a
 * window's creation raises its errors on its communicator) until set back; MPI_COMM_NULL
 * for MPI_COMM_WORLD's. Returns the communicator set before. */
MPI_Comm rma_err_comm_set(MPI_Comm comm);

/* What to add to the reason when reaching same-node rank memory failed with errno err: for
 * EPERM, what cross-memory attach needs and the ways around it (Yama's ptrace_scope 2 or
 * 3, or a seccomp filter, refuses it between sibling processes; under 1 librma lets its
 * peers attach, segment.h rma_seg_allow_peers); else "". */
const char *rma_err_cma_hint(int err, int local);

/* What to add to a failure's message when it was errno err: for EMFILE, why librma needs
 * descriptors and what limit was reached; else "". */
const char *rma_err_fd_hint(int err);

/* MPI_Error_string for a code rma_err returned: copies its precise text to out (at most
 * MPI_MAX_ERROR_STRING bytes with the NUL) and returns 1; 0 when the code is not librma's. */
int rma_err_string(int code, char *out, int *len);

/* A communicator of this process alone whose errors return (MPI_ERRORS_RETURN), through
 * which librma asks the MPI library questions an error may answer (is this type
 * committed, does this op apply to that type) without touching MPI_COMM_SELF's or
 * MPI_COMM_WORLD's handler: those are the program's (in MPICH a communicator without a
 * handler of its own follows MPI_COMM_WORLD's, so a handler swapped and set back stays set
 * for good), and MPI_COMM_SELF does not exist in a program of sessions alone.
 * rma_quiet_open is called at MPI_Init (session: MPI_SESSION_NULL) and at each
 * MPI_Session_init, rma_quiet_close at MPI_Finalize and at each MPI_Session_finalize. The
 * communicator is a duplicate of MPI_COMM_SELF while MPI_Init's world is up, else it comes
 * from the "mpi://SELF" of the oldest session open; it is made again when what it came
 * from ends first. MPI_COMM_NULL while there is none. */
void rma_quiet_open(MPI_Session session);
void rma_quiet_close(MPI_Session session);
MPI_Comm rma_quiet_comm(void);

/* User error handler registry: MPI_Win_create_errhandler keeps the function here. */
int rma_errh_register(MPI_Errhandler eh, MPI_Win_errhandler_function *fn);
/* 1 if eh may be set on a window (predefined or created by MPI_Win_create_errhandler). */
int rma_errh_valid(MPI_Errhandler eh);
/* Reference counting mirrors MPI's: +1 per window using it and per MPI_Win_get_errhandler. */
void rma_errh_ref(MPI_Errhandler eh);
/* Drops one reference; returns 1 when the handler is a registered one (0: not ours). */
int rma_errh_unref(MPI_Errhandler eh);
/* Calls the window's handler with code; returns what MPI_Win_call_errhandler returns. */
int rma_errh_call(rma_win_t *win, int code);

#endif
