/*
 * segment.h - shared memory segments that peers on the node can map.
 *
 * A segment is an anonymous memory file (memfd): it never has a name in the file system,
 * so nothing can be left in /dev/shm, even when a process crashes. A peer maps it by
 * duplicating the owner's descriptor with pidfd_getfd(2) (the same permission CMA needs),
 * or, where that is missing (Linux before 5.6, valgrind, seccomp), by opening it anew through
 * /proc/<pid>/fd, so a segment can be mapped lazily long after it was created (dynamic
 * windows, MPI_Alloc_mem memory).
 */
#ifndef RMA_SEGMENT_H
#define RMA_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a peer needs to map a segment. */
typedef struct rma_seg_desc {
    int32_t pid;
    int32_t fd;
    uint64_t len;
    uint64_t seg_id;
} rma_seg_desc_t;

/* Creates a segment of len bytes (rounded up to pages), mapped at `fixed` if not NULL
 * (replacing what was there) or anywhere. On success *addr_p and *fd_p are set and 0 is returned;
 * otherwise -errno and nothing is left behind. */
int rma_seg_create(size_t len, void *fixed, void **addr_p, int *fd_p);

/* Maps a peer's segment read-write. Returns the address, or NULL (errno set). */
void *rma_seg_attach(const rma_seg_desc_t *desc);

/* The same at `fixed` (replacing what is there), or anywhere when NULL. */
void *rma_seg_attach_at(const rma_seg_desc_t *desc, void *fixed);

/* A place for len bytes whose address plus skew is a multiple of align (a power of two):
 * reserved and inaccessible until a segment is mapped over it (the `fixed` argument above);
 * the caller unmaps it (rma_seg_detach) if none is. NULL (errno set) on failure. */
void *rma_seg_place(size_t len, size_t align, size_t skew);

/* Descriptor fd of process pid, here: duplicated with pidfd_getfd, or opened anew through
 * /proc/<pid>/fd (RMA_PIDFD=0, or pidfd_getfd missing or refused). -1 (errno set). */
int rma_seg_getfd(int pid, int fd);

/* 1 when this process has 32 descriptors or fewer left under its limit, after raising the
 * soft limit towards the hard one: too few to start UCX (its workers, sockets and shared
 * memory took 24 here), which 1.13 does not survive running out of in ucp_worker_create (a
 * fatal error, an assertion in tcp_iface.c). */
int rma_seg_fds_short(void);

/* A pidfd of process pid, opened on first use and kept until rma_seg_finalize (the
 * caller never closes it): readable once the process has ended. -1 (errno set). */
int rma_seg_pidfd(int pid);

/* Unmaps a mapping made by rma_seg_create or rma_seg_attach. */
void rma_seg_detach(void *addr, size_t len);

/* Lets same-node peers attach to this process as a debugger would, which pidfd_getfd and
 * cross-memory attach need, where Yama's ptrace_scope is 1 (the default of Ubuntu and
 * others: only a process's ancestors may, and sibling ranks are not): any process of the
 * same user then may, as with scope 0. UCX's cross-memory-attach transport, which MPICH's
 * UCX device loads, does the same. Scopes 2 and 3 need CAP_SYS_PTRACE, which no call gives.
 * Once, at MPI_Init. */
void rma_seg_allow_peers(void);

/* 1 when peers' segments can be mapped (rma_seg_getfd works here), else 0. Cached. */
int rma_seg_sharing_works(void);

/* A new process-unique segment id (never 0). */
uint64_t rma_seg_new_id(void);

/* Closes every cached pidfd (MPI_Finalize). */
void rma_seg_finalize(void);

size_t rma_page_size(void);

#endif
