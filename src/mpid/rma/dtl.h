/*
 * dtl.h - MPI datatype layout engine.
 *
 * Owns the flattened, cached layout of an MPI datatype (rma_dtl_t) and the walkers that pair
 * two layouts in type-map order (Put/Get/Accumulate between differently typed buffers).
 * A layout is a small tree of REPEAT (count, stride, item) and SEQ (list of items) nodes whose
 * leaves are contiguous byte runs, so regular strides stay compact: a vector of 1e6 doubles is
 * one repeat node. Predefined types come from static tables; derived layouts are cached on the
 * type with a PMPI attribute. Only PMPI_ calls are made (librma interposes the MPI_ names).
 *
 * Threads: rma_dtl_get on predefined types may be called from any thread; building a derived
 * layout makes MPI calls, so the first rma_dtl_get of a derived type must come from a thread
 * allowed to call MPI. A returned layout stays valid until its type is freed.
 */
#ifndef RMA_DTL_H
#define RMA_DTL_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>

struct rma_dtl_node;

typedef struct rma_dtl rma_dtl_t;
struct rma_dtl {
    MPI_Aint size; /* bytes of data in one element */
    MPI_Aint lb, extent, true_lb, true_extent;
    MPI_Datatype basic;  /* the one predefined type all data is made of, or MPI_DATATYPE_NULL */
    MPI_Aint basic_size; /* size of basic, 0 if basic is MPI_DATATYPE_NULL */
    int is_contig;       /* count elements are one block of count*size bytes at true_lb */

    /* private to dtl.c */
    _Atomic int handle_;              /* static tables: type the entry holds, 0 while empty */
    MPI_Aint root_disp_, root_len_;   /* the element's item: data at root_disp_ ... */
    struct rma_dtl_node *root_child_; /* ... contiguous root_len_ bytes when NULL */
    MPI_Aint lo_, hi_;                /* bytes one element touches, lo_ == hi_ when none */
    int depth_;                       /* nesting depth of root_child_ (0 for a leaf) */
    int simple_;                      /* one element = s_count_ runs of s_len_ bytes */
    MPI_Aint s_disp_, s_count_, s_stride_, s_len_;
    MPI_Aint nnodes_;             /* nodes + items in the representation */
    struct rma_dtl_node *allocs_; /* every node this layout owns */
};

/* 1 when a type whose envelope has this combiner is predefined: a named type, or one that
 * MPI_Type_create_f90_real/complex/integer returned (MPI-4.0 19.1.9); such a type is never
 * freed. */
static inline int rma_dtl_comb_predefined(int comb)
{
    return comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL ||
           comb == MPI_COMBINER_F90_COMPLEX || comb == MPI_COMBINER_F90_INTEGER;
}

/* The combiner of any datatype, also one an MPI-4 large-count constructor (_c) made, whose
 * classic envelope MPICH refuses. MPI_SUCCESS or an MPI error code. */
static inline int rma_dtl_combiner(MPI_Datatype t, int *comb)
{
    MPI_Count ni, na, nc, nt;

    return PMPI_Type_get_envelope_c(t, &ni, &na, &nc, &nt, comb);
}

/* Static table of builtin-kind predefined types, indexed by (handle & 0xff). */
extern rma_dtl_t rma_dtl_builtin_table_[256];

/* Called before a derived type's layout is freed (its MPI_Type_free): set by whoever may
 * still be walking layouts in another thread (rma.h, the agent's copies), to wait for it. */
extern void (*_Atomic rma_dtl_before_free)(void);

/* librma's quiet communicator (windows/win_error.h), on which the layout engine asks the
 * MPI library whether a derived type is committed; MPI_COMM_NULL: do not ask. */
MPI_Comm rma_quiet_comm(void);

/* Out-of-line part of rma_dtl_get: fills static entries, builds or finds derived layouts. */
int rma_dtl_get_slow(MPI_Datatype type, const rma_dtl_t **dtl_p);

/* rma_dtl_get's answer for a type whose map reaches past 2^56 bytes (not an MPI class) */
#define RMA_DTL_TOO_WIDE (-1)

/* Layout of `type`: MPI_SUCCESS, MPI_ERR_TYPE for MPI_DATATYPE_NULL or a handle that is not a
 * datatype, MPI_ERR_NO_MEM when building the layout runs out of memory, RMA_DTL_TOO_WIDE
 * (rma_dtl_err says so). *dtl_p is set only on success. */
static inline int rma_dtl_get(MPI_Datatype type, const rma_dtl_t **dtl_p)
{
    unsigned h = (unsigned)type;
    if ((h & 0xfc000000u) == 0x4c000000u) {
        rma_dtl_t *d = &rma_dtl_builtin_table_[h & 0xff];
        if (atomic_load_explicit(&d->handle_, memory_order_acquire) == type) {
            *dtl_p = d;
            return MPI_SUCCESS;
        }
    }
    return rma_dtl_get_slow(type, dtl_p);
}

/* Byte range [*lo_p, *hi_p) touched by `count` elements, relative to the buffer address.
 * Both are 0 when nothing is touched. -1 (and both 0) when count times the extent reaches
 * past 2^56 bytes, which no buffer or window spans: the caller refuses the operation. */
int rma_dtl_span(const rma_dtl_t *dtl, MPI_Aint count, MPI_Aint *lo_p, MPI_Aint *hi_p)
    __attribute__((warn_unused_result));

/* Called for each piece contiguous on both sides; non-zero stops the walk. */
typedef int (*rma_dtl_pair_fn)(void *arg, MPI_Aint dst_off, MPI_Aint src_off, size_t len);

/* Walk both type maps in order and call fn for each maximal piece contiguous on both sides,
 * offsets relative to each buffer's address. Stops at the end of the shorter side (the caller
 * checks that totals agree). Returns fn's first non-zero return, else 0; -1 if an iterator
 * stack cannot be allocated (only for layouts nested deeper than 32 levels). */
int rma_dtl_walk_pairs(const rma_dtl_t *dst, MPI_Aint dst_count, const rma_dtl_t *src,
                       MPI_Aint src_count, rma_dtl_pair_fn fn, void *arg);

/* memcpy-based copy of min(total) bytes between two layouts. Both contiguous: one memcpy; one
 * contiguous and the other a simple strided run: a tight loop. Never fails except as
 * rma_dtl_walk_pairs (then nothing more is copied). */
void rma_dtl_copy(char *dst, const rma_dtl_t *dst_dtl, MPI_Aint dst_count, const char *src,
                  const rma_dtl_t *src_dtl, MPI_Aint src_count);

/* Number of nodes plus items in the representation (compactness checks, diagnostics). */
MPI_Aint rma_dtl_node_count(const rma_dtl_t *dtl);

/* Frees the keyval and the static tables (called from the MPI_Finalize interposition). */
void rma_dtl_finalize(void);

#endif /* RMA_DTL_H */
