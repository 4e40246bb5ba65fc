/*
 * memreg.h - this process's memory that peers can map: MPI_Alloc_mem blocks and the pages
 * of MPI_Win_create / MPI_Win_attach memory that were moved onto a shared segment.
 *
 * Every registered range is a whole number of pages backed by one memfd segment, kept in
 * the labeled window table (address -> region) so "which segment holds this address" is
 * O(log n). Remapping keeps the contents and the virtual address: the process sees no
 * difference, and peers can then load/store the pages directly. Pages stay shared after the
 * last window on them is freed (they remain valid memory of the process); only the
 * registration ends.
 */
#ifndef RMA_MEMREG_H
#define RMA_MEMREG_H

#include <stddef.h>
#include <stdint.h>

enum { RMA_MEMREG_ALLOC = 1, RMA_MEMREG_REMAP = 2 };

typedef struct rma_memreg {
    uintptr_t base; /* page aligned */
    size_t len;     /* whole pages */
    int fd;         /* memfd, kept open while registered so peers can pidfd_getfd it */
    uint64_t seg_id;
    uint64_t ino; /* the memfd's inode, to recognise its pages in /proc/self/maps */
    int refcnt;   /* windows/regions using it (+1 for an MPI_Alloc_mem block); moved
                         * pages stay registered at 0 until found stale */
    int kind;
} rma_memreg_t;

/* MPI_Alloc_mem: shared, registered memory. NULL on failure (errno set). */
void *rma_memreg_alloc(size_t size);

/* MPI_Free_mem: 0, or -ENOENT when ptr is not a block from rma_memreg_alloc. */
int rma_memreg_free(void *ptr);

/* Makes [addr, addr+len) mappable by peers and takes a reference on the registered range
 * holding it: an existing one (Alloc_mem block, earlier window) or a new one made by moving
 * the enclosing pages onto a segment. NULL when that is not possible or not allowed
 * (RMA_CREATE_REMAP=0, pages shared with an existing range, memory that is not private
 * writable, the caller's stack): the caller then uses CMA. */
rma_memreg_t *rma_memreg_expose(void *addr, size_t len);

/* Drops a reference taken by rma_memreg_expose. */
void rma_memreg_release(rma_memreg_t *reg);

/* Unregisters everything (MPI_Finalize); memory stays mapped. */
void rma_memreg_finalize(void);

#endif
