/*
 * li_internal.h - state shared by the files of librmalabel: the registered
 * areas (kept in a labeled window table keyed by local address), the private
 * communicator, the single window, and the helpers both API forms use.
 * Internal symbols carry the rma_li_ prefix; nothing here is public.
 */
#ifndef RMA_LI_INTERNAL_H
#define RMA_LI_INTERNAL_H

#include <mpi.h>
#include <stdint.h>

#include "rma_label.h"
#include "windows/lwtable.h"

enum rma_li_form { RMA_LI_SINGLE = 0, RMA_LI_LABELED = 1, RMA_LI_NFORMS = 2 };

/* One registered area. */
typedef struct rma_li_area {
    uintptr_t start;
    size_t len;
    enum rma_li_form form;
    int committed;            /* li_commit/lio_commit has made it effective */
    int init_pending;         /* labeled: lio_init came before lio_commit */
    int epoch_open;           /* labeled: its window's fence epoch is open */
    int64_t seq;              /* per-form registration number, same on all ranks */
    MPI_Win win;              /* labeled: the area's own window */
    MPI_Aint *bases;          /* single: the area's address on every rank */
    struct rma_li_area *next; /* pending list link (registration order) */
} rma_li_area_t;

typedef struct rma_li_pending {
    rma_li_area_t *head;
    rma_li_area_t *tail;
    int count;
} rma_li_pending_t;

typedef struct rma_li_state {
    int begun;
    int ended;          /* li_end was called (the API does not start again) */
    int we_initialized; /* li_begin called MPI_Init */
    MPI_Comm comm;
    int nprocs;
    int pid;
    rma_lwt_t table; /* local address -> rma_li_area_t */
    rma_li_pending_t pending[RMA_LI_NFORMS];
    int64_t seq_next[RMA_LI_NFORMS];
    /* single-window form */
    MPI_Win swin;
    int swin_created;
    int s_init_pending;
    int s_epoch_open;
} rma_li_state_t;

extern rma_li_state_t rma_li_state;

/* Print "librmalabel: fn (rank r): message" to stderr; returns code. */
int rma_li_error(int code, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Report a failed MPI call (with MPI's message); returns LI_ERR_MPI. */
int rma_li_mpi_error(const char *fn, const char *call, int mpi_rc);

/* LI_OK if li_begin has run, else LI_ERR_STATE with a message. */
int rma_li_check_begun(const char *fn);

/* Local part of li_register/lio_register. */
int rma_li_register(enum rma_li_form form, void *addr, size_t len, const char *fn);

/*
 * Collective: compare the pending registrations of form on all ranks (count,
 * lengths, init flags). LI_OK if identical; else drops them everywhere and
 * returns LI_ERR_MISMATCH (or LI_ERR_MPI).
 */
int rma_li_commit_check(enum rma_li_form form, const char *fn);

/*
 * Collective: 1 if every rank passed the same value v, 0 if not, or LI_ERR_MPI.
 */
int rma_li_agree(int64_t v, const char *fn);

/*
 * Find the area holding addr for a call of form fn_form. Returns LI_OK and
 * the area in *area_p, or LI_ERR_NOTREG / LI_ERR_FORM with a message.
 */
int rma_li_lookup(enum rma_li_form form, const void *addr, const char *fn, rma_li_area_t **area_p);

/*
 * Shared body of every put and get: checks pid, area, init state and range,
 * then issues MPI_Put (is_put) or MPI_Get on win at target displacement
 * base + (raddr - area start) + off. Nothing is issued on error.
 */
int rma_li_xfer(enum rma_li_form form, int is_put, int pid, void *local, const void *raddr,
                size_t off, size_t len, const char *fn);

/* Free an area's memory after it left the table (no MPI calls). */
void rma_li_area_free(rma_li_area_t *a);

/* Collective part of deregister: check seq agreement, then unlink the area. */
int rma_li_deregister_check(enum rma_li_form form, void *addr, const char *fn,
                            rma_li_area_t **area_p);

#endif /* RMA_LI_INTERNAL_H */
