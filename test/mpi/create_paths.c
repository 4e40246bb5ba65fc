/*
 * create_paths - MPI_Win_create on every kind of memory: page-aligned heap, a large heap
 * block, MPI_Alloc_mem memory, a small unaligned stack buffer, a small heap buffer in the
 * middle of a page, a heap page that once its window is gone is under a window of it and
 * the next page, and two heap pages that are then under a window of the second and a third
 * (memory moved for a window that is gone moves again with the new pages; with the shifted
 * one, the first page moves too). For each: the path RMAX_Win_path reports (CMA at creation
 * unless the memory is shared already, direct load/store once traffic made the owner move
 * it, CMA for good with RMA_CREATE_REMAP=0 / memory that cannot be moved), Put/Get values,
 * the bytes around the window in the same pages untouched by peers' puts, and the buffer
 * still usable with its contents after MPI_Win_free. A second window on the same memory must
 * work the same way.
 * A right neighbour on another node (or every peer, with RMA_NETMOD_ONLY=1) is reached through
 * the network transport (netmod) from creation on. When it is alone on its node and the
 * transport maps memory between the two processes (UCX's shared-memory transports; an
 * allocate window's path says so), traffic makes it move whole-page memory onto the
 * transport's shared memory, and the path becomes netmap (an MPI_Alloc_mem block is there
 * from the start); the main stack never moves. The data checks are the same. When the window
 * has off-node peers, memory that same-node peers reach through CMA may stay there (librma
 * does not move memory registered for the network): after traffic, CMA or direct are both
 * accepted.
 */
#define _GNU_SOURCE
#include <rma_ext.h> /* before rmatest.h: its rt_moves */

#include "rmatest.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int rank, nprocs, right, left, remap, right_off, spans;
static int regrow; /* userfaultfd write-protects shmem here (Linux 5.19 and later) */
static int right_moves; /* an off-node right neighbour moves its memory for us (netmap) */

enum { M_PAGE, M_LARGE, M_ALLOCMEM, M_STACK, M_INPAGE, M_GROWN, M_SHIFTED, NKINDS };
static const char *kname[] = {"heap-page",    "heap-large", "alloc_mem",   "stack-small",
                              "heap-in-page", "heap-grown", "heap-shifted"};

static unsigned char pat(int r, int k, int round, size_t i)
{
    return (unsigned char)(r * 29 + k * 7 + round * 13 + i);
}

static const char *path_name(int p)
{
    return p == RMAX_PATH_DIRECT   ? "direct"
           : p == RMAX_PATH_CMA    ? "cma"
           : p == RMAX_PATH_NETMOD ? "netmod"
           : p == RMAX_PATH_NETMAP ? "netmap"
                                   : "?";
}

/* 1 when this kernel's userfaultfd write-protects shmem (and this process may open one, as
 * librma does: the system call, else /dev/userfaultfd). */
static int kernel_wp_shmem(void)
{
    struct uffdio_api api = {.api = UFFD_API, .features = 0};
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC), ok, dev;

    if (fd < 0 && (dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC)) >= 0) {
        fd = ioctl(dev, _IO(0xAA, 0x00), O_CLOEXEC); /* USERFAULTFD_IOC_NEW */
        close(dev);
    }
    if (fd < 0)
        return 0;
    ok = ioctl(fd, UFFDIO_API, &api) == 0 && (api.features & (1u << 12)) != 0;
    close(fd);
    return ok;
}

/* `outer` holds the window `w` of `len` bytes at offset `off`, with guard bytes around. */
static void one(int k, int round, unsigned char *outer, size_t outer_len, size_t off, size_t len)
{
    unsigned char *w = outer + off, *src = malloc(len), *got = malloc(len);
    /* the grown and shifted second windows take over pages moved for a window that is gone */
    int reuses = (k == M_GROWN || k == M_SHIFTED) && round == 1;
    MPI_Win win;
    int path = -1, bad = 0;

    for (size_t i = 0; i < outer_len; i++)
        outer[i] = (unsigned char)(0xA5 ^ i);
    for (size_t i = 0; i < len; i++) {
        w[i] = pat(rank, k, round, i);
        src[i] = pat(rank + 100, k, round, i);
    }
    MPI_OK(MPI_Win_create(w, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (nprocs > 1) {
        /* creation touches no page: only memory that is shared already is mapped at once */
        MPI_OK(RMAX_Win_path(win, right, 0, (MPI_Aint)len, &path));
        if (right_off && k == M_ALLOCMEM && right_moves)
            CHECK(path == RMAX_PATH_NETMAP,
                  "%s round %d: path %s to an off-node peer, want netmap", kname[k], round,
                  path_name(path));
        else if (right_off)
            CHECK(path == RMAX_PATH_NETMOD, "%s round %d: path %s to an off-node peer, want netmod",
                  kname[k], round, path_name(path));
        else if (k == M_ALLOCMEM)
            CHECK(path == RMAX_PATH_DIRECT, "%s round %d: path %s, want direct", kname[k], round,
                  path_name(path));
        else
            CHECK(path == RMAX_PATH_CMA, "%s round %d: path %s at creation, want cma", kname[k],
                  round, path_name(path));
        /* traffic through CMA makes the owner's agent move whole-page memory; then the
         * path is direct (never for RMA_CREATE_REMAP=0, the stack, or a partial page) */
        if (path == RMAX_PATH_CMA && k != M_STACK && k != M_INPAGE) {
            /* memory moved for a window that is gone moves again where userfaultfd
             * write-protects shmem */
            int moves = remap && (!reuses || regrow);
            double t0 = MPI_Wtime();
            unsigned char b = 0;
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
            for (int i = 0; path == RMAX_PATH_CMA && MPI_Wtime() - t0 < 10; i++) {
                MPI_OK(MPI_Get(&b, 1, MPI_BYTE, right, (MPI_Aint)(i % len), 1, MPI_BYTE, win));
                MPI_OK(MPI_Win_flush(right, win));
                if (i % 64 == 63)
                    MPI_OK(RMAX_Win_path(win, right, 0, (MPI_Aint)len, &path));
                if ((!moves || spans) && i >= 4096)
                    break;
            }
            MPI_OK(MPI_Win_unlock(right, win));
            if (spans) /* memory registered for the network may stay where it is */
                CHECK(path == RMAX_PATH_CMA || path == RMAX_PATH_DIRECT,
                      "%s round %d: path %s after traffic, want cma or direct", kname[k], round,
                      path_name(path));
            else if (moves)
                CHECK(path == RMAX_PATH_DIRECT, "%s round %d: path %s after traffic, want direct",
                      kname[k], round, path_name(path));
            else
                CHECK(path == RMAX_PATH_CMA, "%s round %d (no move): path %s, want cma", kname[k],
                      round, path_name(path));
        }
        /* off node: traffic through the transport's emulation of RDMA makes an owner alone
         * on its node move whole pages onto the transport's shared memory */
        if (path == RMAX_PATH_NETMOD) {
            /* the grown and shifted windows too: the first window's pages moved back to
             * private memory when it was freed */
            int expect = right_moves && remap && k != M_STACK;
            double t0 = MPI_Wtime();
            unsigned char b = 0;
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
            for (int i = 0; path == RMAX_PATH_NETMOD && (expect ? MPI_Wtime() - t0 < 10 : i < 4096);
                 i++) {
                MPI_OK(MPI_Get(&b, 1, MPI_BYTE, right, (MPI_Aint)(i % len), 1, MPI_BYTE, win));
                MPI_OK(MPI_Win_flush(right, win));
                if (i % 64 == 63)
                    MPI_OK(RMAX_Win_path(win, right, 0, (MPI_Aint)len, &path));
            }
            MPI_OK(MPI_Win_unlock(right, win));
            if (expect)
                CHECK(path == RMAX_PATH_NETMAP, "%s round %d: path %s after traffic, want netmap",
                      kname[k], round, path_name(path));
            else
                CHECK(path == RMAX_PATH_NETMOD, "%s round %d: path %s after traffic, want netmod",
                      kname[k], round, path_name(path));
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    {
        int self = -1;
        MPI_OK(RMAX_Win_path(win, rank, 0, (MPI_Aint)len, &self));
        CHECK(self == RMAX_PATH_DIRECT, "%s: path to self %s", kname[k], path_name(self));
    }
    /* the owner still sees and changes its buffer while the window exists */
    for (size_t i = 0; i < len; i++)
        bad += w[i] != pat(rank, k, round, i);
    CHECK(bad == 0, "%s round %d: %d own bytes changed by MPI_Win_create", kname[k], round, bad);
    MPI_Barrier(MPI_COMM_WORLD);
    /* get right's original contents, then overwrite them */
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_OK(MPI_Get(got, (int)len, MPI_BYTE, right, 0, (int)len, MPI_BYTE, win));
    MPI_OK(MPI_Win_flush(right, win));
    MPI_OK(MPI_Put(src, (int)len, MPI_BYTE, right, 0, (int)len, MPI_BYTE, win));
    MPI_OK(MPI_Win_unlock(right, win));
    bad = 0;
    for (size_t i = 0; i < len; i++)
        bad += got[i] != pat(right, k, round, i);
    CHECK(bad == 0, "%s round %d: Get saw %d wrong bytes", kname[k], round, bad);
    MPI_Barrier(MPI_COMM_WORLD);
    bad = 0;
    for (size_t i = 0; i < len; i++)
        bad += w[i] != pat(left + 100, k, round, i);
    CHECK(bad == 0, "%s round %d: %d bytes of the window wrong after the peer's put", kname[k],
          round, bad);
    bad = 0;
    for (size_t i = 0; i < outer_len; i++)
        if ((i < off || i >= off + len) && outer[i] != (unsigned char)(0xA5 ^ i))
            bad++;
    CHECK(bad == 0, "%s round %d: %d bytes around the window changed", kname[k], round, bad);
    /* the owner writes, a peer reads it */
    w[len - 1] = 0x5a;
    MPI_OK(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_OK(MPI_Get(got, 1, MPI_BYTE, right, (MPI_Aint)len - 1, 1, MPI_BYTE, win));
    MPI_OK(MPI_Win_unlock(right, win));
    CHECK(got[0] == 0x5a, "%s: owner's store not seen by the peer: %d", kname[k], got[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
    /* after free: contents kept, buffer still usable */
    bad = 0;
    for (size_t i = 0; i + 1 < len; i++)
        bad += w[i] != pat(left + 100, k, round, i);
    CHECK(bad == 0 && w[len - 1] == 0x5a, "%s round %d: %d bytes lost at Win_free", kname[k], round,
          bad);
    for (size_t i = 0; i < outer_len; i++)
        outer[i] = (unsigned char)i;
    bad = 0;
    for (size_t i = 0; i < outer_len; i++)
        bad += outer[i] != (unsigned char)i;
    CHECK(bad == 0, "%s: buffer not writable after Win_free", kname[k]);
    if (rank == 0)
        printf("%-12s round %d: %zu bytes at offset %zu, path to peer %s: ok\n", kname[k], round,
               len, off, path_name(path));
    free(src);
    free(got);
}

/* Each kind's memory is freed at the end: moved pages of a window that is gone stay where
 * they moved to, and a later kind's memory must not take any of them by chance (heap-grown
 * does on purpose). */
static unsigned char *kept[NKINDS];

static void run_kind(int k, unsigned char *stackbuf)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *mem = NULL;

    for (int round = 0; round < 2; round++) { /* round 1: a second window on the same memory */
        switch (k) {
        case M_PAGE:
            if (round == 0 && posix_memalign((void **)&mem, page, page) != 0)
                mem = NULL;
            one(k, round, mem, page, 0, page);
            break;
        case M_LARGE:
            if (round == 0)
                mem = malloc(4u << 20);
            one(k, round, mem, 4u << 20, 0, 4u << 20);
            break;
        case M_ALLOCMEM:
            if (round == 0)
                MPI_OK(MPI_Alloc_mem(3 * page + 100, MPI_INFO_NULL, &mem));
            one(k, round, mem, 3 * page + 100, 0, 3 * page + 100);
            break;
        case M_STACK: one(k, round, stackbuf, 64, 3, 37); break;
        case M_INPAGE:
            if (round == 0 && posix_memalign((void **)&mem, page, 2 * page) != 0)
                mem = NULL;
            one(k, round, mem, 2 * page, page - 100, 300); /* straddles a page boundary */
            break;
        case M_GROWN: /* a window on a page, then on it and the next: pages moved for the
                         first window, now of none, move again with the rest */
            if (round == 0 && posix_memalign((void **)&mem, page, 2 * page) != 0)
                mem = NULL;
            one(k, round, mem, 2 * page, 0, round == 0 ? page : 2 * page);
            break;
        case M_SHIFTED: /* two pages, then the second and a third: the first moves too */
            if (round == 0 && posix_memalign((void **)&mem, page, 3 * page) != 0)
                mem = NULL;
            one(k, round, mem, 3 * page, round == 0 ? 0 : page, 2 * page);
            break;
        }
    }
    kept[k] = mem;
}

int main(int argc, char **argv)
{
    unsigned char stackbuf[64];

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    /* the right neighbour moves its memory (not with RMA_CREATE_REMAP=0, nor without
     * userfaultfd) */
    remap = rt_moves(right);
    regrow = kernel_wp_shmem(); /* the same kernel as the right neighbour's, in these tests */
    right_off = rt_netmod_only() || !rt_same_node(right);
    spans = rt_netmod_only() || rt_world_spans_nodes();
    {
        /* the transport maps memory to the right neighbour (an allocate window's path),
         * which is alone on its node (as MPI sees it, or every process with
         * RMA_NETMOD_ONLY=1) */
        MPI_Comm node;
        int nsize, *sizes = malloc((size_t)nprocs * sizeof(int)), path = 0;
        char *pm;
        MPI_Win probe;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &nsize);
        MPI_Allgather(&nsize, 1, MPI_INT, sizes, 1, MPI_INT, MPI_COMM_WORLD);
        MPI_OK(MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &pm, &probe));
        MPI_OK(RMAX_Win_path(probe, right, 0, 1, &path));
        MPI_OK(MPI_Win_free(&probe));
        right_moves = right_off && path == RMAX_PATH_NETMAP && (rt_netmod_only() || sizes[right] == 1);
        MPI_Comm_free(&node);
        free(sizes);
    }
    if (rank == 0)
        printf("memory moves %s, right neighbour %s\n", remap ? "on" : "off",
               right_moves ? "off-node, moves its memory for us (netmap)"
               : right_off ? "off-node (netmod)"
                           : "on this node");
    for (int k = 0; k < NKINDS; k++)
        run_kind(k, stackbuf);
    for (int k = 0; k < NKINDS; k++)
        if (k == M_ALLOCMEM)
            MPI_OK(MPI_Free_mem(kept[k]));
        else if (k != M_STACK)
            free(kept[k]);
    return rt_finish("create_paths");
}
