/*
 * memreg.h - this process's memory that peers can map: MPI_Alloc_mem blocks and the pages
 * of MPI_Win_create / MPI_Win_attach memory that were moved onto a shared segment.
 *
 * Every registered range is a whole number of pages backed by one memfd segment, kept in
 * the labeled window table (address -> region) so "which segment holds this address" is
 * O(log n). Moving keeps the contents and the virtual address: the process sees no
 * difference, and peers can then load/store the pages directly. When the last window on
 * them is freed they move back to private anonymous memory (doc/protocols.md); where they
 * cannot, they stay shared and registered as orphans that the next window on them revives.
 * A child of fork() gets private copies of every registered range.
 *
 * A process alone on its node (every peer off node: rma_locality_alone) takes its
 * MPI_Alloc_mem blocks from the transport to other nodes instead (RMA_MEMREG_NET,
 * RMA_ALLOC_UCX): memory that transport reaches without this process's CPU where it can
 * (UCX maps it into peers of this machine; a NIC's RDMA reaches it registered), so that
 * create and dynamic windows on such a block get what MPI_Win_allocate windows get.
 */
#ifndef RMA_MEMREG_H
#define RMA_MEMREG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum { RMA_MEMREG_ALLOC = 1, RMA_MEMREG_REMAP = 2, RMA_MEMREG_NET = 3 };

struct rma_nm_mem;

typedef struct rma_memreg {
    uintptr_t base; /* page aligned */
    size_t len;     /* whole pages */
    int fd;         /* memfd, kept open while registered so peers can pidfd_getfd it */
    uint64_t seg_id;
    uint64_t ino; /* the memfd's inode, to recognise its pages in /proc/self/maps */
    int refcnt;   /* windows/regions using it (+1 for an MPI_Alloc_mem block); moved
                         * pages stay registered at 0 until found stale */
    int kind;
    int listed;             /* in the table (a freed MPI_Alloc_mem block is not) */
    int orphan;             /* kept at refcnt 0 (counted in memreg.c's orphans_left) */
    int unmove_rc;          /* why its pages did not move back (-errno); tried again at
                             * later frees and at MPI_Finalize when the cause can go (EBUSY,
                             * EDEADLK, ENOMEM, EAGAIN: memreg.c orphans_retry) */
    struct rma_nm_mem *net; /* RMA_MEMREG_NET: the transport's allocation (fd is -1) ... */
    void *kept;             /* ... its contents, copied aside when the transport ended;
                             * RMA_MEMREG_REMAP: the transport's block the pages were moved
                             * onto (fd is -1, ino its shmid), or NULL for a memfd ... */
    uintptr_t net_at;       /* ... and where that block's own mapping is (its key's addresses) */
} rma_memreg_t;

/* MPI_Alloc_mem: shared, registered memory at a multiple of align (a power of two). Up to a
 * page, UCX's block where the transport allocates (a rank alone on its node), else a
 * page-aligned segment; above a page always a segment, placed so. NULL on failure (errno
 * set). */
void *rma_memreg_alloc(size_t size, size_t align);

/* MPI_Free_mem: 0, or -ENOENT when ptr is not a block from rma_memreg_alloc. */
int rma_memreg_free(void *ptr);

/* The transport's exposure (its key blob) of the MPI_Alloc_mem block from the transport
 * that holds [addr, addr+len), or NULL. Valid until MPI_Free_mem of the block: a window on
 * it sends the blob at creation or attach and keeps nothing of it. */
const struct rma_nm_mem *rma_memreg_net(const void *addr, size_t len);

/* The registered range holding [addr, addr+len), with a reference taken: an MPI_Alloc_mem
 * block or pages a live window had moved (never a block from the transport, which peers of
 * this node cannot map: there are none). NULL when there is none: peers then reach the
 * memory through CMA until rma_memreg_move makes it shared. Cheap (a table lookup): this
 * is on the path of MPI_Win_create and MPI_Win_attach. */
rma_memreg_t *rma_memreg_expose(void *addr, size_t len);

/* Peers' cross-memory writes to this process (librma's CMA path, UCX's cma transport),
 * which userfaultfd's write protection does not stop: the kernel pins a page before it
 * copies, so a write under way when the pages are protected may land in the old page after
 * the move copied it. Each window whose peers may write so counts them in a pair of words
 * of its control slot, which they map: moving (raised: no new write) and count (writes in
 * flight, netmod.c rma_nm_write_begin). A page may lie under several windows (two windows
 * sharing a page; a window of another extent on an earlier window's moved pages), so every
 * move of pages, either way, raises the moving word of every window that entered its pair
 * and waits until each count is 0. A window enters before its peers can write (before its
 * creation's last agreement) and leaves once they cannot (MPI_Win_free, after its
 * barrier); a window entering while a move holds the writers is held too. */
typedef struct rma_memreg_writers {
    _Atomic uint32_t *moving, *count;
    struct rma_memreg_writers *prev, *next;
    int entered;
} rma_memreg_writers_t;

void rma_memreg_writers_enter(rma_memreg_writers_t *w, _Atomic uint32_t *moving,
                              _Atomic uint32_t *count);
void rma_memreg_writers_leave(rma_memreg_writers_t *w); /* idempotent */

/* Makes the pages holding [addr, addr+len) shared memory that peers can map, keeping their
 * address and contents, and takes a reference on the registration: revives an earlier
 * window's moved pages, or moves them onto a segment under userfaultfd write protection
 * (no concurrent write is lost). The segment is librma's memfd, which peers of this node
 * map; with net, a System V block from the transport to other nodes (reg->net, whose own
 * mapping at reg->net_at its key addresses), which UCX maps into peers of this machine
 * that it counts as off node. NULL when that is not possible or not allowed
 * (RMA_CREATE_REMAP=0, no userfaultfd, an RDMA device on the machine (RMA_MOVE_PINNED),
 * pages that are not private writable anonymous memory or are the main stack, settings a
 * segment would not keep (mlock, MADV_WIPEONFORK, ...), transparent huge
 * pages, part of another registration, pages moved onto the other kind; with net, a
 * transport that gives no System V block). Costs a copy of the pages: the progress agent
 * calls it, never a creating call. Writers wait only while the pages are copied and the
 * segment is put in place (peers' cross-memory writers too, rma_memreg_writers_t): the
 * segment's pages are allocated before. */
rma_memreg_t *rma_memreg_move(void *addr, size_t len, int net);

/* 1 when rma_memreg_move can move memory here (userfaultfd with write protection,
 * RMA_CREATE_REMAP not 0, and no RDMA device that may have pinned the pages, unless
 * RMA_MOVE_PINNED=1); else 0 and *why (when why is not NULL) says what is missing. */
int rma_memreg_can_move(const char **why);

/* Drops a reference taken by rma_memreg_expose (reg may be NULL: every window's free calls
 * it). Each call also drops orphans the program unmapped and moves back those whose pages
 * could not move back before for a cause that can go (the program's own userfaultfd held
 * them, the freeing thread's stack lay in them, memory or a thread was short). */
void rma_memreg_release(rma_memreg_t *reg);

/* MPI_Finalize, before the transport ends: copies each block from the transport aside and
 * gives the block back (the transport cannot end while it holds them). */
void rma_memreg_net_end(void);

/* Unregisters everything (MPI_Finalize, after the transport ended); memory stays mapped:
 * the copies rma_memreg_net_end made take the blocks' place, at their addresses. */
void rma_memreg_finalize(void);

#endif
