/*
 * memreg.c - registry of this process's peer-mappable memory (see memreg.h).
 */
#define _GNU_SOURCE
#include "windows/memreg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "mpid/rma/env.h"
#include "netmod/netmod.h"
#include "sync/wait.h"
#include "windows/lwtable.h"
#include "windows/segment.h"
#include "windows/win.h"

static pthread_mutex_t memreg_lock = PTHREAD_MUTEX_INITIALIZER;
static rma_lwt_t memreg_table;
static int memreg_ready;

/* The userfaultfd that moves pages (see "moving pages" below), opened at the first move */
static unsigned orphans_left; /* registrations kept at refcnt 0 (reg_drop; memreg_lock) */
static int uffd = -2;         /* -2 not opened yet, -1 unavailable (memreg_lock) */
static const char *uffd_why;  /* why it is unavailable */
static int uffd_wp_shmem;     /* it write-protects shmem too (moved pages moving again) */

static void orphans_prune(uintptr_t lo, uintptr_t hi);
static void orphans_retry(const rma_memreg_t *just);

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);
static int reg_still_mapped(rma_memreg_t *reg);
/* The settings of a range's pieces that a mapping swapped in would lose: protections
 * (mprotect's) and the flags of mlock and madvise the program gave them while they were
 * moved. Read before the pages move back (or are copied for a child of fork) and given
 * back after: the copy reads them (prot_open, prot_restore). */
enum {
    KEEP_LOCK = 1,       /* lo: mlock */
    KEEP_LOCK_FAULT = 2, /* lf: mlock2(MLOCK_ONFAULT) */
    KEEP_DONTDUMP = 4,   /* dd */
    KEEP_DONTFORK = 8,   /* dc */
    KEEP_HUGE = 16,      /* hg */
    KEEP_NOHUGE = 32,    /* nh */
    KEEP_SEQ = 64,       /* sr */
    KEEP_RAND = 128,     /* rr */
};
typedef struct prot_piece {
    uintptr_t at; /* where the piece begins (it ends where the next begins) */
    int prot, keep;
} prot_piece_t;
typedef struct prot_map {
    int n, cap, plain; /* plain: readable, writable, no flag to keep: nothing to do */
    prot_piece_t *p;   /* cap of them, mapped apart (never the heap the range may hold) */
} prot_map_t;
static int prot_open(uintptr_t lo, uintptr_t hi, prot_map_t *pm);
static void prot_restore(uintptr_t lo, uintptr_t hi, prot_map_t *pm);
static int pages_unmove(uintptr_t lo, size_t len, int fd);
static int unmove_refusal(const rma_memreg_t *reg);
static int pages_unmove_block(uintptr_t lo, size_t len, const char *block, int shmid);

static void table_ready(void)
{
    if (!memreg_ready) {
        rma_lwt_init(&memreg_table);
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        memreg_ready = 1;
    }
}

/* ------------------------------------------------------------------ fork
 *
 * Registered memory is shared memory, so a child of fork() would share it with its parent.
 * The child instead gets private copies at the same addresses, as a plain MPI process's
 * memory would be (MPI_Alloc_mem blocks and moved window pages alike). The parent's thread
 * that forked waits until the child has its copies, so that what the parent writes after
 * fork() returns cannot show up in the child. */

static int fork_pipe[2] = {-1, -1};

static void fork_prepare(void)
{
    pthread_mutex_lock(&memreg_lock);
    if (rma_lwt_count(&memreg_table) > 0 && pipe2(fork_pipe, O_CLOEXEC) != 0)
        fork_pipe[0] = fork_pipe[1] = -1;
}

static void fork_parent(void)
{
    char c;

    if (fork_pipe[0] >= 0) {
        close(fork_pipe[1]);
        while (read(fork_pipe[0], &c, 1) < 0 && errno == EINTR)
            ;
        close(fork_pipe[0]);
        fork_pipe[0] = fork_pipe[1] = -1;
    }
    pthread_mutex_unlock(&memreg_lock);
}

/* Copies len bytes of whole pages. Not memcpy: a sanitizer in the program (ASan, TSan)
 * intercepts memcpy and would report the bytes of the pages that belong to no object of the
 * program's, heap redzones among them, which a copy of whole pages must read. rep movsb
 * takes as long as glibc's memcpy here (4 KiB to 32 MiB). PAGES_UNCHECKED: nor are the
 * loads checked when librma itself is built with a sanitizer. */
#define PAGES_UNCHECKED __attribute__((no_sanitize_address, no_sanitize_thread))

PAGES_UNCHECKED static void pages_copy(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(len) : : "memory");
#else
    const uint64_t *s = src;
    volatile uint64_t *d = dst; /* volatile: the loop must not become a call of memcpy */

    for (size_t i = 0; i < len / sizeof(*s); i++)
        d[i] = s[i];
#endif
}

/* 1 when the page at p holds zeros alone. Unchecked, as pages_copy. */
PAGES_UNCHECKED static int page_zero(const void *p, size_t page)
{
    const volatile uint64_t *w = p;

    for (size_t i = 0; i < page / sizeof(*w); i += 8)
        if ((w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7]) !=
            0)
            return 0;
    return 1;
}

/* Calls fn(off, n) for each run of pages of [src, src+len) that hold anything but zeros
 * (and, with resident, that are resident: mincore's vector for the range). */
typedef void (*data_run_fn)(size_t off, size_t n, void *arg);

PAGES_UNCHECKED static void data_runs(const char *src, size_t len, const unsigned char *resident,
                                      data_run_fn fn, void *arg)
{
    size_t page = rma_page_size(), run = 0;

    for (size_t off = 0; off < len; off += page) {
        if ((resident == NULL || (resident[off / page] & 1)) && !page_zero(src + off, page)) {
            run += page;
            continue;
        }
        if (run > 0)
            fn(off - run, run, arg);
        run = 0;
    }
    if (run > 0)
        fn(len - run, run, arg);
}

typedef struct copy_arg {
    char *dst;
    const char *src;
} copy_arg_t;

PAGES_UNCHECKED static void copy_run(size_t off, size_t n, void *arg)
{
    copy_arg_t *c = arg;

    pages_copy(c->dst + off, c->src + off, n);
}

/* Allocates the pages of dst that a copy of src's data runs will write (MADV_POPULATE_WRITE),
 * so that their faults are not taken while writers wait. */
static void populate_run(size_t off, size_t n, void *arg)
{
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    char *dst = arg;
    size_t page = rma_page_size();

    if (madvise(dst + off, n, MADV_POPULATE_WRITE) == 0)
        return;
    for (size_t o = off; o < off + n; o += page) /* kernels before 5.14 */
        ((volatile char *)dst)[o] = 0;
}

/* [base, base+len)'s contents in new private pages, NULL when there is no memory for them.
 * Raw system calls: memory hooks of the MPI library (UCX's) must not see a remapping that
 * follows as the memory going away. */
static void *copy_aside(uintptr_t base, size_t len)
{
    void *tmp = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (tmp == MAP_FAILED)
        return NULL;
    pages_copy(tmp, (void *)base, len);
    return tmp;
}

/* Without swap, a page of memory that is not resident was never written, and mincore says
 * which those are without reading the others (a read of a hole of shared memory would
 * allocate it); with swap, a swapped-out page is not resident either. */
static int swapless(void)
{
    struct sysinfo si;

    return sysinfo(&si) == 0 && si.totalswap == 0;
}

/* Where mincore can tell (swapless), a vector for [.., +len) of *vlen bytes, mapped apart
 * (never the heap the range may hold), or MAP_FAILED without memory for it; else NULL:
 * every page is read. Unmapped by resident_free. */
static unsigned char *resident_new(size_t len, size_t *vlen)
{
    size_t page = rma_page_size();

    *vlen = (len / page + page - 1) & ~(page - 1);
    if (!swapless())
        return NULL;
    return (void *)syscall(SYS_mmap, NULL, *vlen, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void resident_free(unsigned char *in, size_t vlen)
{
    if (in != NULL)
        syscall(SYS_munmap, in, vlen);
}

/* copy_aside for memory that goes away next (a block UCX unmaps at MPI_Finalize): a piece
 * at a time, each piece's pages given back once copied (MADV_REMOVE for shared memory, else
 * MADV_DONTNEED), so that the process never holds the block twice over. Without swap, a
 * page not in memory was never written (mincore): the copy's page stays zero, untouched. */
static void *copy_aside_releasing(uintptr_t base, size_t len)
{
    enum { PIECE = 2 << 20 };
    size_t page = rma_page_size();
    unsigned char in[PIECE / 4096];
    int skip = page == 4096 && swapless();
    char *tmp = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (tmp == MAP_FAILED)
        return NULL;
    for (size_t off = 0; off < len; off += PIECE) {
        size_t n = len - off < PIECE ? len - off : PIECE, np = (n + page - 1) / page;
        if (!skip || syscall(SYS_mincore, base + off, n, in) != 0) {
            pages_copy(tmp + off, (void *)(base + off), n);
        } else {
            for (size_t i = 0, j; i < np; i = j) { /* runs of pages in memory */
                for (j = i + 1; j < np && (in[j] & 1) == (in[i] & 1); j++)
                    ;
                if (in[i] & 1)
                    pages_copy(tmp + off + i * page, (void *)(base + off + i * page),
                               (j < np ? j * page : n) - i * page);
            }
        }
        if (syscall(SYS_madvise, base + off, n, MADV_REMOVE) != 0)
            syscall(SYS_madvise, base + off, n, MADV_DONTNEED);
    }
    return tmp;
}

/* ---- reading /proc/self/maps and smaps
 *
 * One mapping's line: its range, permissions, offset, inode and path (the first 255
 * bytes). */
typedef struct vma {
    uintptr_t start, end;
    uint64_t offset, ino;
    char perms[8];
    char path[256];
} vma_t;

typedef struct maps_reader {
    FILE *f;
    char line[512]; /* the current line (of a longer line, its start: the rest is skipped) */
} maps_reader_t;

/* Opens /proc/self/maps, or smaps with smaps set: 0 or -errno. */
static int maps_open(maps_reader_t *r, int smaps)
{
    r->f = fopen(smaps ? "/proc/self/smaps" : "/proc/self/maps", "r");
    return r->f != NULL ? 0 : -errno;
}

/* The next line: 1 a mapping's (into *v), 2 another (an smaps field, in r->line), 0 at the
 * end (the reader closed). Mappings come in address order. */
static int maps_next(maps_reader_t *r, vma_t *v)
{
    unsigned long s, e, off, ino;
    const char *dash, *space;
    int c;

    if (fgets(r->line, sizeof(r->line), r->f) == NULL) {
        fclose(r->f);
        r->f = NULL;
        return 0;
    }
    if (strchr(r->line, '\n') == NULL) /* a long path: the line's start is enough */
        while ((c = fgetc(r->f)) != EOF && c != '\n')
            ;
    dash = strchr(r->line, '-');
    space = strchr(r->line, ' ');
    v->perms[0] = v->path[0] = '\0';
    if (dash == NULL || space == NULL || dash > space ||
        sscanf(r->line, "%lx-%lx %7s %lx %*s %lu %255s", &s, &e, v->perms, &off, &ino, v->path) <
            5) {
        v->perms[0] = '\0';
        return 2;
    }
    v->start = s;
    v->end = e;
    v->offset = off;
    v->ino = ino;
    return 1;
}

/* Stops reading before the end. */
static void maps_close(maps_reader_t *r)
{
    if (r->f != NULL)
        fclose(r->f);
    r->f = NULL;
}

/* The child's pieces of [lo, hi) still mapped from reg's segment (shared, of its inode at
 * its offsets; a block from the transport has none: any shared piece): at most max, into
 * at[] and end[]. A piece the parent gave MADV_DONTFORK is not in the child at all. */
static int child_pieces(const rma_memreg_t *reg, uintptr_t lo, uintptr_t hi, uintptr_t *at,
                        uintptr_t *end, int max)
{
    maps_reader_t r;
    vma_t v;
    int n = 0, kind;

    if (maps_open(&r, 0) != 0)
        return 0;
    while (n < max && (kind = maps_next(&r, &v)) != 0) {
        if (kind != 1)
            continue;
        if (v.start >= hi)
            break;
        if (v.end <= lo || v.perms[3] != 's' ||
            (reg->ino != 0 && (v.ino != reg->ino || v.offset != v.start - reg->base)))
            continue;
        at[n] = v.start > lo ? v.start : lo;
        end[n++] = v.end < hi ? v.end : hi;
    }
    maps_close(&r);
    return n;
}

/* A private copy of [lo, hi) in place, with its protections and settings. */
static void privatize_range(uintptr_t lo, uintptr_t hi)
{
    size_t len = hi - lo;
    prot_map_t pm;
    void *tmp;
    int rc;

    if ((rc = prot_open(lo, hi, &pm)) != 0) {
        fprintf(stderr,
                "librma: fork: cannot give the child a private copy of [%p, +%zu): its "
                "protections cannot be read or opened for the copy: %s\n",
                (void *)lo, len, strerror(-rc));
        return;
    }
    if ((tmp = copy_aside(lo, len)) != NULL &&
        (void *)syscall(SYS_mremap, tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, lo) ==
            MAP_FAILED) {
        fprintf(stderr, "librma: fork: cannot give the child a private copy of [%p, +%zu): %s\n",
                (void *)lo, len, strerror(errno));
        syscall(SYS_munmap, tmp, len);
    }
    prot_restore(lo, hi, &pm);
}

/* Each piece of a registration the child has gets a private copy: moved pages the program
 * unmapped or replaced are not ours any more, and pieces it gave MADV_DONTFORK are not in
 * the child. */
static int privatize(uintptr_t base, size_t len, void *value, void *arg)
{
    uintptr_t at[64], end[64];
    int n = child_pieces(value, base, base + len, at, end, 64);

    (void)arg;
    for (int i = 0; i < n; i++)
        privatize_range(at[i], end[i]);
    return 0;
}

static void fork_child(void)
{
    rma_lwt_foreach(&memreg_table, privatize, NULL);
    if (fork_pipe[0] >= 0) {
        close(fork_pipe[0]);
        close(fork_pipe[1]); /* the parent's read returns */
        fork_pipe[0] = fork_pipe[1] = -1;
    }
    pthread_mutex_unlock(&memreg_lock);
}

/* Fills a registration and enters it in the table (memreg_lock held). 0 or -1. */
static int reg_init(rma_memreg_t *reg, uintptr_t base, size_t len, int fd, int kind)
{
    struct stat st;

    if (fd >= 0 && fstat(fd, &st) == 0)
        reg->ino = (uint64_t)st.st_ino;
    reg->base = base;
    reg->len = len;
    reg->fd = fd;
    reg->seg_id = rma_seg_new_id();
    reg->refcnt = 1;
    reg->kind = kind;
    reg->listed = rma_lwt_insert(&memreg_table, base, len, reg) == 0;
    return reg->listed ? 0 : -1;
}

static rma_memreg_t *reg_new(uintptr_t base, size_t len, int fd, int kind)
{
    rma_memreg_t *reg = calloc(1, sizeof(*reg));

    if (reg != NULL && reg_init(reg, base, len, fd, kind) != 0) {
        free(reg);
        reg = NULL;
    }
    return reg;
}

/* Removes a registration (memreg_lock held). The memory stays mapped. Never a block from
 * the transport, whose registration stays until MPI_Free_mem or MPI_Finalize. */
static void reg_remove(rma_memreg_t *reg)
{
    if (reg->orphan)
        orphans_left--;
    if (reg->listed)
        rma_lwt_remove(&memreg_table, reg->base);
    if (reg->fd >= 0)
        close(reg->fd);
    if (reg->kind == RMA_MEMREG_REMAP)
        rma_net_mem_free(reg->net); /* pages moved onto a block from the transport */
    else
        free(reg->net);
    free(reg);
}

/* Moves a registration's pages back to private anonymous memory (memreg_lock held): the
 * program may grow them with realloc (mremap, which a segment's end would make SIGBUS),
 * have MADV_DONTNEED zero them (glibc's calloc counts on it for trimmed arena heaps), and
 * their memory goes when it unmaps them. 0, or -errno: they stay where they are. */
static int reg_unmove(rma_memreg_t *reg)
{
    prot_map_t pm;
    int rc;

    if (reg->fd < 0 && reg->net == NULL) /* the transport ended: its block went with it */
        return -EOPNOTSUPP;
    if ((rc = unmove_refusal(reg)) != 0) /* before smaps is read */
        return rc;
    rc = prot_open(reg->base, reg->base + reg->len, &pm);
    if (rc == 0) {
        rc = reg->fd >= 0 ? pages_unmove(reg->base, reg->len, reg->fd)
                          : pages_unmove_block(reg->base, reg->len, (const char *)reg->net_at,
                                               (int)reg->ino);
        prot_restore(reg->base, reg->base + reg->len, &pm);
    }
    return rc;
}

/* Called with memreg_lock held. Moved pages whose last window is gone move back
 * (reg_unmove). Where they cannot, they stay registered as orphans (refcnt 0): the next
 * window on the same buffer reuses them after checking they are still ours (see
 * reg_still_mapped), and orphans_retry tries again unless this kernel cannot (no write
 * protection of shared memory, no missing-page faults across mremap): the program's own
 * userfaultfd may have held the range, or the freeing thread's stack lay in it. */
static void reg_drop(rma_memreg_t *reg)
{
    if (--reg->refcnt > 0)
        return;
    if (reg->kind == RMA_MEMREG_REMAP && reg_still_mapped(reg) &&
        (reg->unmove_rc = reg_unmove(reg)) != 0) {
        reg->orphan = 1;
        orphans_left++;
        return;
    }
    reg_remove(reg);
}

/* A block from the transport to other nodes, for a process alone on its node; NULL when
 * that is not the case or the transport cannot (librma's own segment then does). */
static void *net_alloc(size_t size)
{
    const char *why;
    rma_nm_mem_t *m;
    rma_memreg_t *reg;
    void *addr = NULL;

    if (!rma_env.ucx_alloc || rma_net == NULL || size == 0 || !rma_locality_alone() ||
        rma_net->start(&why) != 0)
        return NULL;
    if ((m = calloc(1, sizeof(*m))) == NULL || (reg = calloc(1, sizeof(*reg))) == NULL) {
        free(m);
        return NULL;
    }
    if (rma_net->expose_alloc(size, &addr, m) != 0) {
        free(m), free(reg);
        return NULL;
    }
    reg->net = m;
    pthread_mutex_lock(&memreg_lock);
    table_ready();
    orphans_prune((uintptr_t)addr, (uintptr_t)addr + size);
    if (reg_init(reg, (uintptr_t)addr, size, -1, RMA_MEMREG_NET) != 0) {
        pthread_mutex_unlock(&memreg_lock);
        rma_net_mem_free(m);
        free(reg);
        return NULL;
    }
    pthread_mutex_unlock(&memreg_lock);
    return addr;
}

void *rma_memreg_alloc(size_t size, size_t align)
{
    size_t page = rma_page_size();
    size_t len = size ? (size + page - 1) & ~(page - 1) : page;
    void *addr = align <= page ? net_alloc(size) : NULL, *at = NULL;
    int fd, rc;

    if (addr != NULL)
        return addr;
    if (align > page && (at = rma_seg_place(len, align, 0)) == NULL)
        return NULL;
    rc = rma_seg_create(size, at, &addr, &fd);
    if (rc != 0) {
        if (at != NULL)
            munmap(at, len);
        errno = -rc;
        return NULL;
    }
    pthread_mutex_lock(&memreg_lock);
    table_ready();
    orphans_prune((uintptr_t)addr, (uintptr_t)addr + len); /* the new mapping replaced them */
    if (reg_new((uintptr_t)addr, len, fd, RMA_MEMREG_ALLOC) == NULL) {
        pthread_mutex_unlock(&memreg_lock);
        munmap(addr, len);
        close(fd);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_unlock(&memreg_lock);
    return addr;
}

int rma_memreg_free(void *ptr)
{
    rma_memreg_t *reg;
    uintptr_t start;

    pthread_mutex_lock(&memreg_lock);
    table_ready();
    reg = rma_lwt_find(&memreg_table, (uintptr_t)ptr, 1, &start, NULL);
    if (reg == NULL || (reg->kind != RMA_MEMREG_ALLOC && reg->kind != RMA_MEMREG_NET) ||
        start != (uintptr_t)ptr) {
        pthread_mutex_unlock(&memreg_lock);
        return -ENOENT;
    }
    if (reg->kind == RMA_MEMREG_NET) { /* no window keeps a reference to it */
        rma_lwt_remove(&memreg_table, reg->base);
        pthread_mutex_unlock(&memreg_lock);
        rma_net_mem_free(reg->net); /* the transport's free, outside the registry's lock */
        free(reg);
        return 0;
    }
    /* The pages go away now as MPI_Free_mem promises, and so does the block's entry: memory
     * mapped at its address later is not this block (using a window on freed memory is
     * erroneous). A window still on it keeps the registration itself until its free. */
    munmap((void *)reg->base, reg->len);
    rma_lwt_remove(&memreg_table, reg->base);
    reg->listed = 0;
    reg_drop(reg);
    pthread_mutex_unlock(&memreg_lock);
    return 0;
}

/* Calls fn for each mapping of /proc/self/maps that overlaps [lo, hi), in address order,
 * until it returns 0. Returns 1 when fn accepted every mapping and they cover [lo, hi)
 * without a hole. */
typedef int (*vma_fn)(const vma_t *v, void *arg);

static int vmas_cover(uintptr_t lo, uintptr_t hi, vma_fn fn, void *arg)
{
    maps_reader_t r;
    vma_t v;
    uintptr_t covered = lo;
    int ok = 1;

    if (maps_open(&r, 0) != 0)
        return 0;
    while (ok && covered < hi && maps_next(&r, &v) != 0) {
        if (v.end <= covered || v.start >= hi || v.perms[0] == '\0')
            continue;
        ok = v.start <= covered && fn(&v, arg);
        covered = v.end;
    }
    maps_close(&r);
    return ok && covered >= hi;
}

/* Private writable anonymous memory that may be moved onto a segment: anonymous mappings
 * (named ones too), the heap, a private mapping of /dev/zero; not the main stack. Not a
 * private file mapping (.data, a program's own mmap of a file): userfaultfd write-protects
 * anonymous and shmem memory only, so it stays where it is (CMA reaches it). */
static int vma_movable(const vma_t *v, void *arg)
{
    (void)arg;
    return strcmp(v->perms, "rw-p") == 0 &&
           (v->path[0] == '\0' || strcmp(v->path, "[heap]") == 0 ||
            strcmp(v->path, "/dev/zero") == 0 || strncmp(v->path, "[anon:", 6) == 0);
}

/* Still the registration's own segment, mapped at the offsets it was moved to, with
 * whatever protection the program gave it since (mprotect: a target that is only read may
 * make its window memory read-only). */
static int vma_of_reg(const vma_t *v, void *arg)
{
    const rma_memreg_t *reg = arg;
    return v->perms[3] == 's' && v->ino == reg->ino && v->start >= reg->base &&
           v->offset == v->start - reg->base;
}

/* ... and writable too: an orphan that moves again with the memory around it. */
static int vma_of_reg_rw(const vma_t *v, void *arg)
{
    return v->perms[0] == 'r' && v->perms[1] == 'w' && vma_of_reg(v, arg);
}

/* 1 when the VmFlags line of /proc/self/smaps holds the two-letter flag name. */
static int vmflag(const char *line, const char name[3])
{
    for (const char *t = line + 8; (t = strstr(t, name)) != NULL; t++) /* after "VmFlags:" */
        if (t[-1] == ' ' && (t[2] == ' ' || t[2] == '\n' || t[2] == '\0'))
            return 1;
    return 0;
}

/* The flags of a VmFlags line that prot_restore gives back. */
static int keep_flags(const char *line)
{
    static const struct {
        char name[3];
        int flag;
    } kept[] = {{"lo", KEEP_LOCK},     {"lf", KEEP_LOCK_FAULT}, {"dd", KEEP_DONTDUMP},
                {"dc", KEEP_DONTFORK}, {"hg", KEEP_HUGE},       {"nh", KEEP_NOHUGE},
                {"sr", KEEP_SEQ},      {"rr", KEEP_RAND}};
    int keep = 0;

    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        if (vmflag(line, kept[i].name))
            keep |= kept[i].flag;
    return keep;
}

/* Appends a piece to pm, growing its table (a mapping of its own). 0 or -1. */
static int piece_add(prot_map_t *pm, uintptr_t at, int prot)
{
    if (pm->n == pm->cap) {
        size_t old = (size_t)pm->cap * sizeof(*pm->p), len = old ? 2 * old : 4096;
        void *t = old ? (void *)syscall(SYS_mremap, pm->p, old, len, MREMAP_MAYMOVE)
                      : (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t == MAP_FAILED)
            return -1;
        pm->p = t;
        pm->cap = (int)(len / sizeof(*pm->p));
    }
    pm->p[pm->n++] = (prot_piece_t){at, prot, 0};
    return 0;
}

static void prot_free(prot_map_t *pm)
{
    if (pm->cap > 0)
        syscall(SYS_munmap, pm->p, (size_t)pm->cap * sizeof(*pm->p));
    pm->cap = pm->n = 0;
}

/* [at, end) of piece i of [lo, hi) */
static uintptr_t piece_span(const prot_map_t *pm, int i, uintptr_t lo, uintptr_t hi, uintptr_t *end)
{
    *end = i + 1 < pm->n ? pm->p[i + 1].at : hi;
    return pm->p[i].at > lo ? pm->p[i].at : lo;
}

/* Reads the pieces of [lo, hi) from /proc/self/smaps into pm (one per mapping): 0, -ENOENT
 * when a hole is in it, -ENOMEM. */
static int pieces_read(uintptr_t lo, uintptr_t hi, prot_map_t *pm)
{
    maps_reader_t r;
    vma_t v;
    uintptr_t covered = lo;
    int in = 0, rc, kind;

    *pm = (prot_map_t){.plain = 1};
    if ((rc = maps_open(&r, 1)) != 0)
        return rc;
    while (rc == 0 && (kind = maps_next(&r, &v)) != 0) {
        if (kind == 1) {
            if (v.start >= hi) /* in address order: the kernel need not walk the rest */
                break;
            in = v.end > lo;
            if (!in)
                continue;
            if (v.start > covered) {
                rc = -ENOENT;
                break;
            }
            covered = v.end;
            if (piece_add(pm, v.start,
                          (v.perms[0] == 'r' ? PROT_READ : 0) |
                              (v.perms[1] == 'w' ? PROT_WRITE : 0) |
                              (v.perms[2] == 'x' ? PROT_EXEC : 0)) != 0) {
                rc = -ENOMEM;
                break;
            }
            pm->plain &= pm->p[pm->n - 1].prot == (PROT_READ | PROT_WRITE);
        } else if (in && strncmp(r.line, "VmFlags:", 8) == 0 && pm->n > 0) {
            pm->p[pm->n - 1].keep = keep_flags(r.line);
            pm->plain &= pm->p[pm->n - 1].keep == 0;
        }
    }
    maps_close(&r);
    if (rc == 0 && covered < hi)
        rc = -ENOENT;
    if (rc != 0)
        prot_free(pm);
    return rc;
}

/* Reads [lo, hi)'s pieces into pm and makes every piece readable (the copy reads them; a
 * write to a read-only piece still faults): 0, or -errno (-ENOENT: a hole in the range;
 * nothing changed). prot_restore gives them back and frees pm. */
static int prot_open(uintptr_t lo, uintptr_t hi, prot_map_t *pm)
{
    uintptr_t end;
    int i, rc = pieces_read(lo, hi, pm);

    if (rc != 0)
        return rc;
    for (i = 0; i < pm->n; i++) {
        uintptr_t at = piece_span(pm, i, lo, hi, &end);
        if (!(pm->p[i].prot & PROT_READ) &&
            syscall(SYS_mprotect, at, end - at, pm->p[i].prot | PROT_READ) != 0)
            break;
    }
    if (i == pm->n)
        return 0;
    rc = -errno;
    while (--i >= 0) { /* put back what was opened */
        uintptr_t at = piece_span(pm, i, lo, hi, &end);
        syscall(SYS_mprotect, at, end - at, pm->p[i].prot);
    }
    prot_free(pm);
    return rc;
}

/* Gives [lo, hi) back what prot_open read, and frees its table: after pages moved back,
 * every piece's protection and flags (the private memory swapped in is readable, writable
 * and plain); else the protections it opened. */
static void prot_restore(uintptr_t lo, uintptr_t hi, prot_map_t *pm)
{
    static const struct {
        int flag, advice;
    } advice[] = {{KEEP_DONTDUMP, MADV_DONTDUMP}, {KEEP_DONTFORK, MADV_DONTFORK},
                  {KEEP_HUGE, MADV_HUGEPAGE},     {KEEP_NOHUGE, MADV_NOHUGEPAGE},
                  {KEEP_SEQ, MADV_SEQUENTIAL},    {KEEP_RAND, MADV_RANDOM}};
    uintptr_t end;

    for (int i = 0; !pm->plain && i < pm->n; i++) {
        uintptr_t at = piece_span(pm, i, lo, hi, &end);
        int keep = pm->p[i].keep;
        syscall(SYS_mprotect, at, end - at, pm->p[i].prot);
        for (size_t a = 0; a < sizeof(advice) / sizeof(advice[0]); a++)
            if (keep & advice[a].flag)
                syscall(SYS_madvise, at, end - at, advice[a].advice);
        if (keep & (KEEP_LOCK | KEEP_LOCK_FAULT))
            syscall(SYS_mlock2, at, end - at, (keep & KEEP_LOCK_FAULT) ? MLOCK_ONFAULT : 0);
    }
    prot_free(pm);
}

/* An orphan registration is stale once the program unmapped or remapped its pages. */
static int reg_still_mapped(rma_memreg_t *reg)
{
    return vmas_cover(reg->base, reg->base + reg->len, vma_of_reg, reg);
}

/* The registrations overlapping [lo, hi): orphans in found, the others counted. */
typedef struct prune_arg {
    uintptr_t lo, hi;
    rma_memreg_t *found[64];
    int n;
    int others; /* in use, or more orphans than found holds */
} prune_arg_t;

static int collect_orphan(uintptr_t start, size_t len, void *value, void *arg)
{
    prune_arg_t *pa = arg;
    rma_memreg_t *reg = value;

    if (start >= pa->hi || start + len <= pa->lo)
        return 0;
    if (reg->refcnt == 0 && reg->kind == RMA_MEMREG_REMAP && pa->n < 64)
        pa->found[pa->n++] = reg;
    else
        pa->others++;
    return 0;
}

/* Movable, or the mapping of one of the orphans in arg (a prune_arg_t): moved pages of a
 * window that is gone, which move again with the rest. */
static int vma_movable_or_orphan(const vma_t *v, void *arg)
{
    const prune_arg_t *pa = arg;

    if (vma_movable(v, NULL))
        return 1;
    for (int i = 0; i < pa->n; i++)
        if (vma_of_reg_rw(v, pa->found[i]))
            return 1;
    return 0;
}

/* Whether [*lo, *hi) may move: private writable memory and, widened to hold them whole,
 * live orphans (collected in pa) on librma's memfds, where userfaultfd write-protects shmem
 * (uffd_wp_shmem). Stale orphans in it are dropped first. Not an orphan on a System V block
 * from the transport (fd -1): userfaultfd write-protects anonymous and shmem memory only
 * (EINVAL), so its pages stay on their block and the memory around them where it is.
 * uffd_open() was called. */
static int pages_movable(uintptr_t *lo, uintptr_t *hi, prune_arg_t *pa)
{
    for (;;) {
        uintptr_t wlo = *lo, whi = *hi;
        orphans_prune(*lo, *hi);
        *pa = (prune_arg_t){.lo = *lo, .hi = *hi};
        rma_lwt_foreach(&memreg_table, collect_orphan, pa);
        if (pa->others > 0)
            return 0;
        for (int i = 0; i < pa->n; i++) {
            const rma_memreg_t *o = pa->found[i];
            if (o->fd < 0 || !uffd_wp_shmem)
                return 0;
            wlo = o->base < wlo ? o->base : wlo;
            whi = o->base + o->len > whi ? o->base + o->len : whi;
        }
        if (wlo == *lo && whi == *hi) /* orphans never overlap: this ends */
            break;
        *lo = wlo;
        *hi = whi;
    }
    return vmas_cover(*lo, *hi, vma_movable_or_orphan, pa);
}

/* Drops stale orphans overlapping [lo, hi) (memreg_lock held). */
static void orphans_prune(uintptr_t lo, uintptr_t hi)
{
    prune_arg_t pa = {.lo = lo, .hi = hi, .n = 0};

    rma_lwt_foreach(&memreg_table, collect_orphan, &pa);
    for (int i = 0; i < pa.n; i++)
        if (!reg_still_mapped(pa.found[i]))
            reg_remove(pa.found[i]);
}

/* Moves orphans' pages back where an earlier try failed for a reason that may have gone:
 * the program's own userfaultfd held them, the freeing thread's stack lay in them, memory
 * ran short (memreg_lock held; every orphan is still mapped: orphans_prune ran). Not
 * `just`, which failed a moment ago. */
static void orphans_retry(const rma_memreg_t *just)
{
    prune_arg_t pa = {.lo = 0, .hi = UINTPTR_MAX, .n = 0};

    rma_lwt_foreach(&memreg_table, collect_orphan, &pa);
    for (int i = 0; i < pa.n; i++) {
        rma_memreg_t *o = pa.found[i];
        int rc = o->unmove_rc;
        if (o != just && (rc == -EBUSY || rc == -EDEADLK || rc == -ENOMEM || rc == -EAGAIN) &&
            (o->unmove_rc = reg_unmove(o)) == 0)
            reg_remove(o);
    }
}

/* Orphans go once the program has unmapped them (a program that frees each window's buffer
 * and takes a new one for the next window would otherwise keep every segment until
 * MPI_Finalize), or once their pages move back (memreg_lock held). */
static void orphans_tend(const rma_memreg_t *just)
{
    if (memreg_ready && orphans_left > 0) {
        orphans_prune(0, UINTPTR_MAX);
        orphans_retry(just);
    }
}

rma_memreg_t *rma_memreg_expose(void *addr, size_t len)
{
    size_t page = rma_page_size();
    uintptr_t lo = (uintptr_t)addr & ~(page - 1);
    uintptr_t hi = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
    rma_memreg_t *reg;

    if (len == 0)
        return NULL;
    pthread_mutex_lock(&memreg_lock);
    table_ready();
    /* an orphan of moved pages needs /proc/self/maps to tell whether it is still ours: that
     * is for the agent (rma_memreg_move), never the creating call's path */
    reg = rma_lwt_find(&memreg_table, lo, hi - lo, NULL, NULL);
    if (reg != NULL && reg->kind != RMA_MEMREG_NET &&
        (reg->refcnt > 0 || reg->kind != RMA_MEMREG_REMAP))
        reg->refcnt++;
    else
        reg = NULL;
    pthread_mutex_unlock(&memreg_lock);
    return reg;
}

const rma_nm_mem_t *rma_memreg_net(const void *addr, size_t len)
{
    const rma_memreg_t *reg = NULL;

    if (len == 0)
        return NULL;
    pthread_mutex_lock(&memreg_lock);
    if (memreg_ready)
        reg = rma_lwt_find(&memreg_table, (uintptr_t)addr, len, NULL, NULL);
    if (reg != NULL && reg->kind != RMA_MEMREG_NET)
        reg = NULL;
    pthread_mutex_unlock(&memreg_lock);
    return reg != NULL ? reg->net : NULL;
}

/* ------------------------------------------------------------------ moving pages
 *
 * Pages are moved onto a segment under userfaultfd write protection, so that no write is
 * lost: from the moment the range is write-protected until the segment is mapped over it,
 * a store by any thread of this process (or a peer's cross-memory write) waits in the
 * kernel; it is retried on the segment once the range is woken. Between protecting and
 * waking, the mover calls nothing that allocates or takes a lock: a writer that waits may
 * hold one (malloc's, for a heap page). */

#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif

#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

/* A userfaultfd: from the system call, or where that is refused from /dev/userfaultfd
 * (Linux 6.1 and later), which an administrator may open to users the sysctl keeps out.
 * -1 with uffd_why set on failure. */
static int uffd_get(void)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    int dev;

    if (fd >= 0)
        return fd;
    if (errno == ENOSYS) {
        uffd_why = "the kernel has no userfaultfd";
        return -1;
    }
    if (errno != EPERM) {
        uffd_why = "userfaultfd fails";
        return -1;
    }
    uffd_why = "userfaultfd is refused to this process (vm.unprivileged_userfaultfd=0 and no "
               "CAP_SYS_PTRACE, or a seccomp filter such as a container's; nor may it open "
               "/dev/userfaultfd)";
    if ((dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC)) < 0)
        return -1;
    fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
    close(dev);
    return fd >= 0 ? fd : -1;
}

/* A userfaultfd with the API handshake done asking for `features`; -1 on failure (uffd_why
 * says why). On success *have_p holds the features the kernel offers. */
static int uffd_new(uint64_t features, uint64_t *have_p)
{
    struct uffdio_api api = {.api = UFFD_API, .features = features};
    int fd = uffd_get();

    if (fd < 0)
        return -1;
    if (ioctl(fd, UFFDIO_API, &api) != 0) {
        uffd_why = "the kernel refuses userfaultfd's handshake";
        close(fd);
        return -1;
    }
    *have_p = api.features;
    return fd;
}

static int uffd_open(void)
{
    uint64_t have = 0;

    if (uffd != -2)
        return uffd;
    /* the handshake is once per descriptor: ask what is offered, then open the one used.
     * UFFD_FEATURE_WP_UNPOPULATED also protects a page another thread emptied (madvise)
     * after pages_move made it present */
    uffd = uffd_new(0, &have);
    if (uffd >= 0 && (have & UFFD_FEATURE_WP_UNPOPULATED)) {
        close(uffd);
        uffd = uffd_new(UFFD_FEATURE_WP_UNPOPULATED, &have);
    }
    uffd_wp_shmem = (have & UFFD_FEATURE_WP_HUGETLBFS_SHMEM) != 0; /* Linux 5.19 and later */
    if (uffd >= 0 && !(have & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
        uffd_why = "the kernel's userfaultfd cannot write-protect (Linux 5.7 and later can)";
        close(uffd);
        uffd = -1;
    }
    return uffd;
}

/* An RDMA device on this machine (a verbs device, or HPE Slingshot's cxi) may hold pages
 * of window memory pinned: the MPI library's own transport registers a buffer with it for
 * a large send or receive from it, and UCX's registration cache keeps the registration.
 * Pages moved by raw system calls, which that cache never hears of, would leave the
 * buffer's later transfers on the old pages, the network reading stale data and writing
 * where the program never looks. So where there is such a device nothing moves, unless
 * RMA_MOVE_PINNED=1 says that nothing registers window memory with it (or registers on
 * demand). The reason, or NULL. Looked up once (memreg_lock). */
static const char *pin_refusal(void)
{
    static char why[640];
    static int done;
    char dirs[512];

    if (done)
        return why[0] != '\0' ? why : NULL;
    done = 1;
    if (rma_env.move_pinned)
        return NULL;
    snprintf(dirs, sizeof(dirs), "%s", rma_env.pin_devices);
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d != NULL && why[0] == '\0';
         d = strtok_r(NULL, ":", &save)) {
        DIR *dir = opendir(d);
        struct dirent *e;
        while (dir != NULL && why[0] == '\0' && (e = readdir(dir)) != NULL)
            if (e->d_name[0] != '.')
                snprintf(why, sizeof(why),
                         "the RDMA device %.64s (%.200s) may hold window memory pinned for the MPI "
                         "library's own transfers, which would go on using the old pages "
                         "(RMA_MOVE_PINNED=1 moves it anyway)",
                         e->d_name, d);
        if (dir != NULL)
            closedir(dir);
    }
    /* The MPI library's UCX sends a large message by rendezvous. Its put schemes write
     * the receiver's buffer from the sender's process with process_vm_writev (UCX's cma),
     * which librma does not hold off while it copies the pages: such a write under way
     * would land in the old page (a receive into window memory lost bytes, 3 of 6 runs).
     * Its default (UCX 1.13) reads from the receiver instead, which a move holds off.
     * Only the environment is read: not a ucx.conf that sets them. */
    const char *rndv = rma_env.ucx_rndv, *proto = rma_env.ucx_proto;
    if (why[0] == '\0' && rndv != NULL && strcasestr(rndv, "put") != NULL)
        snprintf(why, sizeof(why),
                 "UCX_RNDV_SCHEME=%.64s: the MPI library's rendezvous may write window memory "
                 "from other processes (cross-memory attach), which a move cannot hold off "
                 "(RMA_MOVE_PINNED=1 moves it anyway)",
                 rndv);
    else if (why[0] == '\0' && proto != NULL &&
             (strcasecmp(proto, "y") == 0 || strcasecmp(proto, "yes") == 0 ||
              strcasecmp(proto, "on") == 0 || strcasecmp(proto, "true") == 0 ||
              strcmp(proto, "1") == 0))
        snprintf(why, sizeof(why),
                 "UCX_PROTO_ENABLE=%.16s: the MPI library's rendezvous may choose to write "
                 "window memory from other processes (cross-memory attach), which a move "
                 "cannot hold off (RMA_MOVE_PINNED=1 moves it anyway)",
                 proto);
    return why[0] != '\0' ? why : NULL;
}

/* Why no memory may move here, or NULL (memreg_lock held). Said once with RMA_VERBOSE. */
static const char *move_refusal(void)
{
    static int said;
    const char *why = !rma_env.create_remap   ? "RMA_CREATE_REMAP=0"
                      : pin_refusal() != NULL ? pin_refusal()
                      : uffd_open() < 0       ? uffd_why
                                              : NULL;

    if (why != NULL && rma_env.create_remap && rma_env.verbose >= 1 && !said++)
        fprintf(stderr,
                "librma: process %d cannot move window memory: %s. Peers reach its "
                "MPI_Win_create and MPI_Win_attach memory by cross-memory attach or UCX, "
                "not load/store\n",
                (int)getpid(), why);
    return why;
}

int rma_memreg_can_move(const char **why)
{
    const char *no;

    pthread_mutex_lock(&memreg_lock);
    no = move_refusal();
    pthread_mutex_unlock(&memreg_lock);
    if (why != NULL)
        *why = no;
    return no == NULL;
}

/* The flags of /proc/self/smaps (VmFlags) of memory that a segment mapped over it would not
 * keep: locked (mlock), wipe-on-fork, not copied or not dumped by fork and core dumps
 * (MADV_DONTFORK, MADV_DONTDUMP), mergeable by KSM, registered with another userfaultfd.
 * Such pages stay where they are (CMA reaches them). */
static int vmflags_kept(const char *line)
{
    static const char lost[][3] = {"lo", "wf", "dc", "dd", "mg", "um", "uw"};

    for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]); i++)
        if (vmflag(line, lost[i]))
            return 1;
    return 0;
}

/* 1 when a mapping in [lo, hi) is (or may become) backed by transparent huge pages, or is
 * hugetlb memory: moving it onto a segment would make the application's own accesses
 * slower; or has settings a segment would not keep (vmflags_kept). */
static int range_has_huge(uintptr_t lo, uintptr_t hi)
{
    maps_reader_t r;
    vma_t v;
    unsigned long kb;
    int in = 0, huge = 0, kind;

    if (maps_open(&r, 1) != 0)
        return 1;
    while (!huge && (kind = maps_next(&r, &v)) != 0) {
        if (kind == 1) {
            if (v.start >= hi) /* in address order: the kernel need not walk the rest */
                break;
            in = v.end > lo;
        } else if (in && sscanf(r.line, "AnonHugePages: %lu kB", &kb) == 1 && kb > 0) {
            huge = 1;
        } else if (in && strncmp(r.line, "VmFlags:", 8) == 0 &&
                   (vmflag(r.line, "hg") || vmflag(r.line, "ht") || vmflags_kept(r.line))) {
            huge = 1;
        }
    }
    maps_close(&r);
    return huge;
}

/* Where moved pages go: a segment mapped at tmp, len bytes, that place() maps over the
 * pages as well: librma's memfd (fd), or a System V segment the transport allocated (its
 * shmid, fd -1). */
typedef struct seg_dest {
    void *tmp;
    int fd, shmid;
} seg_dest_t;

/* Maps d's segment over [lo, lo+len), replacing what is there. A raw system call: the MPI
 * library's memory hooks (UCX's) take locks a waiting writer may hold. 0 or -errno. */
static int seg_place(const seg_dest_t *d, uintptr_t lo, size_t len)
{
    long at;

    if (d->fd >= 0)
        at = syscall(SYS_mmap, lo, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, d->fd, 0);
    else
        at = syscall(SYS_shmat, d->shmid, lo, SHM_REMAP);
    return at == (long)lo ? 0 : -errno;
}

/* Windows whose peers may write here by CMA (memreg.h rma_memreg_writers_t), and whether a
 * move holds them off now. Lock order: memreg_lock, then writers_lock. */
static pthread_mutex_t writers_lock = PTHREAD_MUTEX_INITIALIZER;
static rma_memreg_writers_t *writers_list;
static int writers_held;

void rma_memreg_writers_enter(rma_memreg_writers_t *w, _Atomic uint32_t *moving,
                              _Atomic uint32_t *count)
{
    pthread_mutex_lock(&writers_lock);
    if (!w->entered) {
        w->moving = moving;
        w->count = count;
        w->prev = NULL;
        w->next = writers_list;
        if (writers_list != NULL)
            writers_list->prev = w;
        writers_list = w;
        w->entered = 1;
        if (writers_held)
            atomic_store_explicit(moving, 1, memory_order_seq_cst);
    }
    pthread_mutex_unlock(&writers_lock);
}

void rma_memreg_writers_leave(rma_memreg_writers_t *w)
{
    pthread_mutex_lock(&writers_lock);
    if (w->entered) {
        if (w->prev != NULL)
            w->prev->next = w->next;
        else
            writers_list = w->next;
        if (w->next != NULL)
            w->next->prev = w->prev;
        w->entered = 0;
        if (writers_held) /* the slot may serve another window next */
            atomic_store_explicit(w->moving, 0, memory_order_release);
    }
    pthread_mutex_unlock(&writers_lock);
}

/* Lets peers' cross-memory writes in again (writers_hold). */
static void writers_release(void)
{
    pthread_mutex_lock(&writers_lock);
    writers_held = 0;
    for (rma_memreg_writers_t *w = writers_list; w != NULL; w = w->next)
        atomic_store_explicit(w->moving, 0, memory_order_release);
    pthread_mutex_unlock(&writers_lock);
}

/* Before pages are protected (memreg_lock held): 0 once no peer's cross-memory write to
 * this process is in flight, through any window, new ones kept out until writers_release;
 * -EBUSY (nothing held) when one is still in flight after a second: a peer that died
 * writing never lowers its count, and the pages then stay where they are. A quiet back-off:
 * its sleeps call no MPI, which is never called with librma's memory locks held. A waiting
 * writer holds no lock of ours. */
static int writers_hold(void)
{
    rma_backoff_t bo = {.quiet = 1};
    uint64_t t0 = rma_now_ns();
    int rc = 0;

    pthread_mutex_lock(&writers_lock);
    writers_held = 1;
    for (rma_memreg_writers_t *w = writers_list; w != NULL; w = w->next)
        atomic_store_explicit(w->moving, 1, memory_order_seq_cst);
    for (rma_memreg_writers_t *w = writers_list; w != NULL && rc == 0; w = w->next)
        while (rc == 0 && atomic_load_explicit(w->count, memory_order_seq_cst) != 0) {
            rma_backoff(&bo);
            if (rma_now_ns() - t0 > 1000000000u)
                rc = -EBUSY;
        }
    pthread_mutex_unlock(&writers_lock);
    if (rc != 0)
        writers_release();
    return rc;
}

/* Blocks every signal the calling thread may take into *old: from the moment pages of the
 * range wait for the mover until they are released, a handler that touches one would wait
 * for its own thread. */
static void signals_hold(sigset_t *old)
{
    sigset_t all;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
}

/* Moves [lo, lo+len) onto d's segment in place, peers' cross-memory writers kept out while
 * it is write-protected. 0, or -errno (nothing moved; the segment is the caller's). */
PAGES_UNCHECKED static int pages_move(uintptr_t lo, size_t len, const seg_dest_t *d)
{
    struct uffdio_register reg = {.range = {lo, len}, .mode = UFFDIO_REGISTER_MODE_WP};
    struct uffdio_writeprotect wp = {.range = {lo, len}, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
    struct uffdio_range wake = {lo, len};
    sigset_t old;
    int rc;

    if (uffd_open() < 0)
        return -ENOSYS;
    /* Pages of zeros are not copied: a new memfd, and a block from the transport (fresh
     * pages, netmod.h expose_alloc), read zeros where nothing was written, so a sparse
     * window stays sparse (a 5.5 GiB malloc'd window holding 40 MiB took 5.8 GB onto a
     * block when all of it was copied). The pages the copy writes are allocated now.
     * Reading each page also makes every page present before writers wait: without
     * UFFD_FEATURE_WP_UNPOPULATED write protection covers present pages only, and with it
     * the copy would take a read fault on each page never touched (the zero page mapped
     * now costs none): 4 MiB of untouched window, 1.4 ms of the time writers wait */
    data_runs((const char *)lo, len, NULL, populate_run, d->tmp);
    if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0)
        return -errno;
    if ((rc = writers_hold()) != 0) {
        ioctl(uffd, UFFDIO_UNREGISTER, &wake);
        return rc;
    }
    signals_hold(&old);
    if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) != 0) {
        rc = -errno;
        ioctl(uffd, UFFDIO_UNREGISTER, &wake);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        writers_release();
        return rc;
    }
    /* writers wait from here on: copy, then put the segment in place */
    data_runs((const char *)lo, len, NULL, copy_run, &(copy_arg_t){d->tmp, (char *)lo});
    rc = seg_place(d, lo, len);
    if (rc != 0) {
        wp.mode = 0; /* leave the pages as they were */
        ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
        ioctl(uffd, UFFDIO_UNREGISTER, &wake);
    }
    ioctl(uffd, UFFDIO_WAKE, &wake);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    writers_release();
    return rc;
}

/* 1 when [lo, lo+len) holds part of the calling thread's stack (a window on it, freed by
 * the same thread), whose frames the mover's calls write while writers wait. The stack's
 * bounds come from the thread library (before anything is protected: for the main thread
 * it reads /proc/self/maps); without them, a margin around the stack pointer. */
static int holds_my_stack(uintptr_t lo, size_t len)
{
    uintptr_t sp = (uintptr_t)&len;
    pthread_attr_t a;
    void *addr;
    size_t size;

    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        int known = pthread_attr_getstack(&a, &addr, &size) == 0 && (uintptr_t)addr <= sp &&
                    sp < (uintptr_t)addr + size;
        pthread_attr_destroy(&a);
        if (known)
            return (uintptr_t)addr < lo + len && (uintptr_t)addr + size > lo;
    }
    return sp + (256u << 10) > lo && sp - (64u << 10) < lo + len;
}

/* The reasons a registration's pages cannot move back that cost little to find, looked at
 * before smaps is read (prot_open): 0, or -EDEADLK (the calling thread's stack is in them:
 * a window on a thread's stack, freed by that thread; another thread's free or
 * MPI_Finalize moves them), -EOPNOTSUPP (this kernel cannot write-protect shmem), or the
 * error of a probe registration (EBUSY: the program's own userfaultfd holds them; undone
 * at once). The agent never moves its own stack. */
static int unmove_refusal(const rma_memreg_t *reg)
{
    struct uffdio_register ureg = {.range = {reg->base, reg->len}, .mode = UFFDIO_REGISTER_MODE_WP};
    struct uffdio_range range = {reg->base, reg->len};

    if (holds_my_stack(reg->base, reg->len))
        return -EDEADLK;
    if (reg->fd < 0) /* off a block: a userfaultfd of the move's own, on fresh memory */
        return 0;
    if (uffd_open() < 0 || !uffd_wp_shmem)
        return -EOPNOTSUPP;
    if (ioctl(uffd, UFFDIO_REGISTER, &ureg) != 0)
        return -errno;
    ioctl(uffd, UFFDIO_UNREGISTER, &range);
    return 0;
}

/* Moves [lo, lo+len), pages on a registration's memfd, back to private anonymous memory in
 * place, writers held as in pages_move (peers' cross-memory writers of windows on the same
 * pages: another window sharing a page, or a window of another extent on an orphan). Only
 * the segment's pages that hold data are copied, where mincore tells (resident_new). 0, or
 * -errno (the pages stay on the segment). */
PAGES_UNCHECKED static int pages_unmove(uintptr_t lo, size_t len, int fd)
{
    struct uffdio_register ureg = {.range = {lo, len}, .mode = UFFDIO_REGISTER_MODE_WP};
    struct uffdio_writeprotect wp = {.range = {lo, len}, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
    struct uffdio_range wake = {lo, len};
    size_t page = rma_page_size(), inlen;
    unsigned char *in;
    sigset_t old;
    char *tmp;
    long at;
    int rc = 0, registered = 0, held = 0;

    /* unmove_refusal passed. Nothing this thread writes while writers wait may lie in the
     * range: not its stack, nor the vector mincore fills, mapped apart rather than taken
     * from the heap the range may hold. The range is registered only once the copy is
     * prepared: reading and populating run a third slower with it registered. */
    in = resident_new(len, &inlen);
    if (in == MAP_FAILED) { /* reading every page would allocate the segment's holes */
        in = NULL;
        rc = -ENOMEM;
    }
    tmp = rc != 0 ? MAP_FAILED
                  : (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (rc == 0 && tmp == MAP_FAILED)
        rc = -ENOMEM;
    if (rc == 0 && in != NULL && syscall(SYS_mincore, lo, len, in) != 0)
        rc = -errno;
    if (rc == 0) /* what the copy writes, allocated before writers wait */
        data_runs((const char *)lo, len, in, populate_run, tmp);
    if (rc == 0 && ioctl(uffd, UFFDIO_REGISTER, &ureg) != 0)
        rc = -errno; /* the program registered it since the probe */
    else if (rc == 0)
        registered = 1;
    if (rc == 0 && (rc = writers_hold()) == 0)
        held = 1;
    signals_hold(&old);
    if (rc == 0 && ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) != 0)
        rc = -errno;
    if (rc != 0) {
        if (registered) /* never another userfaultfd's registration */
            ioctl(uffd, UFFDIO_UNREGISTER, &wake);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (held)
            writers_release();
        if (tmp != MAP_FAILED)
            syscall(SYS_munmap, tmp, len);
        resident_free(in, inlen);
        return rc;
    }
    /* writers wait from here on; a page written since mincore is resident now */
    if (in != NULL && syscall(SYS_mincore, lo, len, in) != 0)
        memset(in, 1, len / page);
    data_runs((const char *)lo, len, in, copy_run, &(copy_arg_t){tmp, (char *)lo});
    at = syscall(SYS_mremap, tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, lo);
    if (at != (long)lo) {
        rc = -errno;
        wp.mode = 0;                                    /* leave the pages as they were */
        if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) != 0) /* the kernel unmapped them first */
            syscall(SYS_mmap, lo, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
        ioctl(uffd, UFFDIO_UNREGISTER, &wake);
        syscall(SYS_munmap, tmp, len);
    }
    ioctl(uffd, UFFDIO_WAKE, &wake);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    writers_release();
    resident_free(in, inlen);
    return rc;
}

/* ---- moving pages back off a block from the transport
 *
 * userfaultfd cannot write-protect System V memory (EINVAL), so pages_unmove's way (protect
 * in place, copy, swap) is closed to pages on a block from UCX. They move the other way
 * round: fresh private memory, registered for missing-page faults, is swapped in first
 * (mremap), and filled from the block's own mapping (UFFDIO_COPY). A thread that touches a
 * page not filled yet waits in the kernel until it is. The registration must survive the
 * swap, which takes UFFD_FEATURE_EVENT_REMAP; the mremap then waits until the event is
 * read, by a short-lived thread (remap_reader) on a userfaultfd of the move's own. */

typedef struct remap_read {
    int fd;
    uintptr_t from;    /* the swap's own event: another thread's mremap may come first */
    volatile int stop; /* the mremap failed: no event comes */
} remap_read_t;

static void *remap_reader(void *arg)
{
    remap_read_t *r = arg;
    struct pollfd p = {r->fd, POLLIN, 0};
    struct uffd_msg msg;

    while (!r->stop) {
        if (poll(&p, 1, 10) <= 0)
            continue;
        while (read(r->fd, &msg, sizeof(msg)) == (ssize_t)sizeof(msg))
            if (msg.event == UFFD_EVENT_REMAP && msg.arg.remap.from == r->from)
                return NULL;
    }
    return NULL;
}

typedef struct fill_arg {
    int fd;
    uintptr_t dst;
    const char *src;
    size_t lost; /* bytes that could not be filled */
} fill_arg_t;

/* UFFDIO_COPY of a run of the block into the swapped-in pages, whose block pages are then
 * given back (the move never holds the memory twice over). A page that cannot be filled
 * (no memory for it after a few tries, or the program unmapped it) reads as zeros and is
 * counted. */
PAGES_UNCHECKED static void fill_run(size_t off, size_t n, void *arg)
{
    fill_arg_t *f = arg;
    size_t page = rma_page_size(), end = off + n;
    int tries = 0;

    while (off < end) {
        struct uffdio_copy c = {
            .dst = f->dst + off, .src = (uintptr_t)f->src + off, .len = end - off};
        long done = ioctl(f->fd, UFFDIO_COPY, &c) == 0 ? (long)(end - off) : c.copy;
        if (done > 0) {
            syscall(SYS_madvise, f->src + off, (size_t)done, MADV_REMOVE);
            off += (size_t)done;
            tries = 0;
        } else if ((errno == EAGAIN || errno == ENOMEM) && ++tries < 100) {
            sched_yield(); /* the range changing under another thread, or reclaim */
        } else {
            if (errno != EEXIST) /* EEXIST: the page is there already */
                f->lost += page;
            off += page;
            tries = 0;
        }
    }
}

/* Moves [lo, lo+len), pages on the System V block shmid from the transport whose own
 * mapping is at block, back to private anonymous memory in place (see above). Only the
 * block's pages that hold data are copied (mincore, as pages_unmove). 0, or -errno (the
 * pages stay on the block). */
PAGES_UNCHECKED static int pages_unmove_block(uintptr_t lo, size_t len, const char *block,
                                              int shmid)
{
    struct uffdio_register ureg = {.mode = UFFDIO_REGISTER_MODE_MISSING};
    struct uffdio_range whole = {lo, len};
    size_t inlen;
    remap_read_t rr = {-1, 0, 0};
    fill_arg_t fill = {-1, lo, block, 0};
    uint64_t have = 0;
    unsigned char *in;
    pthread_attr_t attr;
    pthread_t reader;
    sigset_t old;
    char *tmp;
    long at;
    int rc;

    /* unmove_refusal passed: nothing this thread touches while pages are missing lies in
     * the range (the reader thread's stack is mapped before the swap) */
    if ((rr.fd = uffd_new(UFFD_FEATURE_EVENT_REMAP, &have)) < 0)
        return -EOPNOTSUPP;
    if (!(have & UFFD_FEATURE_EVENT_REMAP)) {
        close(rr.fd);
        return -EOPNOTSUPP;
    }
    if ((in = resident_new(len, &inlen)) == MAP_FAILED)
        in = NULL; /* every page is read */
    tmp = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    rc = tmp == MAP_FAILED ? -ENOMEM : 0;
    rr.from = (uintptr_t)tmp;
    ureg.range = (struct uffdio_range){(uintptr_t)tmp, len};
    if (rc == 0 && ioctl(rr.fd, UFFDIO_REGISTER, &ureg) != 0)
        rc = -errno;
    signals_hold(&old); /* the reader's for good (they are the program's threads'), ours
                           until the pages are released */
    if (rc == 0) {
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64u << 10);
        rc = -pthread_create(&reader, &attr, remap_reader, &rr);
        if (rc == -EINVAL) /* a stack too small for the program's static TLS */
            rc = -pthread_create(&reader, NULL, remap_reader, &rr);
        pthread_attr_destroy(&attr);
    }
    if (rc == 0 && (rc = writers_hold()) != 0) {
        rr.stop = 1;
        pthread_join(reader, NULL);
    }
    if (rc != 0) {
        if (tmp != MAP_FAILED)
            syscall(SYS_munmap, tmp, len);
        goto out;
    }
    /* from the swap on, a touched page waits until it is filled or the range unregistered
     * (peers' cross-memory writers until it is all filled) */
    at = syscall(SYS_mremap, tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, lo);
    if (at != (long)lo) {
        rc = -errno;
        rr.stop = 1;
        pthread_join(reader, NULL);
        syscall(SYS_munmap, tmp, len);
        /* the kernel may have unmapped the destination before failing: the block again */
        syscall(SYS_shmat, shmid, lo, SHM_REMAP);
        writers_release();
        goto out;
    }
    /* the block's data pages (nothing writes it since the swap) */
    if (in != NULL && syscall(SYS_mincore, block, len, in) != 0) {
        resident_free(in, inlen);
        in = NULL; /* every page is read */
    }
    fill.fd = rr.fd;
    data_runs(block, len, in, fill_run, &fill);
    ioctl(rr.fd, UFFDIO_UNREGISTER, &whole); /* wakes those waiting on pages of zeros */
    ioctl(rr.fd, UFFDIO_WAKE, &whole);
    writers_release();
    pthread_join(reader, NULL);
    if (fill.lost > 0)
        fprintf(stderr,
                "librma: %zu bytes of [%p, +%zu) could not be copied back from shared memory "
                "after the last window on them (out of memory?): they read as zeros\n",
                fill.lost, (void *)lo, len);
out:
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(rr.fd);
    resident_free(in, inlen);
    return rc;
}

/* The System V segment whose first byte is mapped at start: its id is the inode that
 * /proc/self/maps shows (*arg: -1 until found). */
static int vma_sysv(const vma_t *v, void *arg)
{
    int *id = arg;

    if (*id >= 0 || strcmp(v->perms, "rw-s") != 0 || strncmp(v->path, "/SYSV", 5) != 0 ||
        v->offset != 0 || v->ino > INT32_MAX)
        return 0;
    *id = (int)v->ino;
    return 1;
}

/* The System V segment of exactly len bytes that the transport mapped at at, or -1: shmat
 * maps a segment whole, so nothing beyond the moved pages may be replaced. */
static int sysv_id(uintptr_t at, size_t len)
{
    struct shmid_ds ds;
    int id = -1;

    if (!vmas_cover(at, at + len, vma_sysv, &id) || shmctl(id, IPC_STAT, &ds) != 0 ||
        ds.shm_segsz != len)
        return -1;
    return id;
}

/* A block from the transport of len bytes that pages can be moved onto (d filled), or
 * NULL. The block is never pooled for reuse (its addr is cleared): its pages stay mapped
 * where the moved ones were. */
static rma_nm_mem_t *net_dest(size_t len, seg_dest_t *d)
{
    rma_nm_mem_t *m = calloc(1, sizeof(*m));

    if (m == NULL || rma_net == NULL || rma_net->expose_alloc(len, &d->tmp, m) != 0) {
        free(m);
        return NULL;
    }
    m->addr = NULL;
    d->fd = -1;
    d->shmid = sysv_id((uintptr_t)d->tmp, len);
    /* UCX tries huge pages first: such a block cannot go over 4 KiB-aligned pages, nor
     * should the program's pages become huge ones (only a length of whole huge pages can) */
    if (d->shmid >= 0 && len % (2u << 20) == 0 &&
        range_has_huge((uintptr_t)d->tmp, (uintptr_t)d->tmp + len))
        d->shmid = -1;
    if (d->shmid < 0) {
        rma_net_mem_free(m);
        return NULL;
    }
    return m;
}

rma_memreg_t *rma_memreg_move(void *addr, size_t len, int net)
{
    size_t page = rma_page_size();
    uintptr_t lo = (uintptr_t)addr & ~(page - 1);
    uintptr_t hi = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
    rma_memreg_t *reg = NULL;
    rma_nm_mem_t *block = NULL;
    seg_dest_t d = {NULL, -1, -1};
    prune_arg_t orphans;

    if (len == 0 || !rma_env.create_remap)
        return NULL;
    pthread_mutex_lock(&memreg_lock);
    table_ready();
    reg = rma_lwt_find(&memreg_table, lo, hi - lo, NULL, NULL);
    if (reg != NULL && reg->kind == RMA_MEMREG_NET) {
        reg = NULL; /* the transport's memory: off-node peers reach it, nobody moves it */
        goto out;
    }
    if (reg != NULL &&
        (reg->refcnt > 0 || reg->kind != RMA_MEMREG_REMAP || reg_still_mapped(reg))) {
        /* shared already (an earlier window's pages, revived), if on the kind asked for */
        if (net && reg->net == NULL) {
            reg = NULL;
        } else {
            if (reg->orphan) { /* revived */
                reg->orphan = 0;
                orphans_left--;
            }
            reg->refcnt++;
        }
        goto out;
    }
    reg = NULL;
    /* a live orphan on a memfd here (a window's moved pages, the window gone and the memory
     * now under a window of another extent) moves along */
    if (move_refusal() != NULL || !pages_movable(&lo, &hi, &orphans) || range_has_huge(lo, hi))
        goto out;
    /* everything that allocates happens before the pages are write-protected */
    reg = calloc(1, sizeof(*reg));
    if (reg == NULL)
        goto out;
    if (net ? (block = net_dest(hi - lo, &d)) == NULL
            : rma_seg_create(hi - lo, NULL, &d.tmp, &d.fd) != 0) {
        free(reg);
        reg = NULL;
        goto out;
    }
    if (pages_move(lo, hi - lo, &d) != 0) {
        free(reg);
        reg = NULL;
        goto out_dest;
    }
    for (int i = 0; i < orphans.n; i++) /* their pages are on the new segment now */
        reg_remove(orphans.found[i]);
    if (reg_init(reg, lo, hi - lo, d.fd, RMA_MEMREG_REMAP) != 0) {
        free(reg); /* the pages stay shared memory, unregistered */
        reg = NULL;
        goto out_dest;
    }
    if (block != NULL) {
        reg->ino = (uint64_t)d.shmid;
        reg->net = block;
        reg->net_at = (uintptr_t)d.tmp;
    } else {
        munmap(d.tmp, hi - lo);
    }
    goto out;
out_dest:
    if (block != NULL)
        rma_net_mem_free(block);
    else {
        munmap(d.tmp, hi - lo);
        close(d.fd);
    }
out:
    pthread_mutex_unlock(&memreg_lock);
    return reg;
}

void rma_memreg_release(rma_memreg_t *reg)
{
    const rma_memreg_t *just = NULL;

    pthread_mutex_lock(&memreg_lock);
    if (reg != NULL) {
        if (reg->refcnt == 1 && reg->kind == RMA_MEMREG_REMAP)
            just = reg; /* tried in reg_drop: an orphan now, or gone */
        reg_drop(reg);
    }
    orphans_tend(just);
    pthread_mutex_unlock(&memreg_lock);
}

/* MPI_Finalize, first pass: a copy of every unfreed block UCX gave, made while all of them
 * are still mapped, so that no copy takes the address of a block UCX unmaps later */
static int net_keep(uintptr_t base, size_t len, void *value, void *arg)
{
    rma_memreg_t *reg = value;

    (void)base, (void)len, (void)arg;
    if (reg->kind == RMA_MEMREG_NET && reg->net != NULL &&
        (reg->kept = copy_aside_releasing(reg->base, reg->len)) == NULL)
        fprintf(stderr,
                "librma: MPI_Finalize: no memory to keep the MPI_Alloc_mem block [%p, +%zu) "
                "that was not freed: it goes away with UCX\n",
                (void *)reg->base, reg->len);
    return 0;
}

/* second pass: the transport's memory goes (moved pages keep their own mapping) */
static int net_end(uintptr_t base, size_t len, void *value, void *arg)
{
    rma_memreg_t *reg = value;

    (void)base, (void)len, (void)arg;
    if ((reg->kind == RMA_MEMREG_REMAP || reg->kind == RMA_MEMREG_NET) && reg->net != NULL) {
        rma_net_mem_free(reg->net);
        reg->net = NULL;
    }
    return 0;
}

void rma_memreg_net_end(void)
{
    pthread_mutex_lock(&memreg_lock);
    orphans_tend(NULL); /* on blocks: they go with the transport */
    if (memreg_ready) {
        rma_lwt_foreach(&memreg_table, net_keep, NULL);
        rma_lwt_foreach(&memreg_table, net_end, NULL);
    }
    pthread_mutex_unlock(&memreg_lock);
}

/* The copy of a block from the transport back at its address, if nothing took the address
 * meanwhile (the transport's end unmapped the block). */
static void net_put_back(rma_memreg_t *reg)
{
    void *at = (void *)syscall(SYS_mmap, reg->base, reg->len, PROT_NONE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

    if (at != (void *)reg->base ||
        (void *)syscall(SYS_mremap, reg->kept, reg->len, reg->len, MREMAP_MAYMOVE | MREMAP_FIXED,
                        reg->base) == MAP_FAILED) {
        if (at != MAP_FAILED && at != (void *)reg->base) /* no MAP_FIXED_NOREPLACE: a hint */
            syscall(SYS_munmap, at, reg->len);
        fprintf(stderr,
                "librma: MPI_Finalize: the MPI_Alloc_mem block [%p, +%zu) that was not freed "
                "could not be put back at its address\n",
                (void *)reg->base, reg->len);
        syscall(SYS_munmap, reg->kept, reg->len);
    }
}

/* MPI_Finalize: after the transport's end */
static void free_reg(void *value)
{
    rma_memreg_t *reg = value;
    if (reg->fd >= 0)
        close(reg->fd);
    if (reg->kept != NULL)
        net_put_back(reg);
    free(reg->net);
    free(reg);
}

void rma_memreg_finalize(void)
{
    pthread_mutex_lock(&memreg_lock);
    orphans_tend(NULL); /* on memfds: they would stay shared memory */
    if (memreg_ready)
        rma_lwt_destroy(&memreg_table, free_reg);
    pthread_mutex_unlock(&memreg_lock);
}
