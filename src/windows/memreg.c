/*
 * memreg.c - registry of this process's peer-mappable memory (see memreg.h).
 */
#define _GNU_SOURCE
#include "windows/memreg.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpid/rma/env.h"
#include "windows/lwtable.h"
#include "windows/segment.h"

static pthread_mutex_t memreg_lock = PTHREAD_MUTEX_INITIALIZER;
static rma_lwt_t memreg_table;
static int memreg_ready;

static void orphans_prune(uintptr_t lo, uintptr_t hi);

static void table_ready(void)
{
    if (!memreg_ready) {
        rma_lwt_init(&memreg_table);
        memreg_ready = 1;
    }
}

static rma_memreg_t *reg_new(uintptr_t base, size_t len, int fd, int kind)
{
    rma_memreg_t *reg = calloc(1, sizeof(*reg));
    struct stat st;

    if (reg == NULL)
        return NULL;
    if (fstat(fd, &st) == 0)
        reg->ino = (uint64_t)st.st_ino;
    reg->base = base;
    reg->len = len;
    reg->fd = fd;
    reg->seg_id = rma_seg_new_id();
    reg->refcnt = 1;
    reg->kind = kind;
    if (rma_lwt_insert(&memreg_table, base, len, reg) != 0) {
        free(reg);
        return NULL;
    }
    return reg;
}

/* Removes a registration (memreg_lock held). The memory stays mapped. */
static void reg_remove(rma_memreg_t *reg)
{
    rma_lwt_remove(&memreg_table, reg->base);
    close(reg->fd);
    free(reg);
}

/* Called with memreg_lock held. Moved pages whose last window is gone stay registered as
 * orphans (refcnt 0): the next window on the same buffer reuses them after checking they
 * are still ours (see reg_still_mapped), instead of copying them again. */
static void reg_drop(rma_memreg_t *reg)
{
    if (--reg->refcnt > 0)
        return;
    if (reg->kind == RMA_MEMREG_REMAP)
        return;
    reg_remove(reg);
}

void *rma_memreg_alloc(size_t size)
{
    void *addr = NULL;
    int fd, rc;

    rc = rma_seg_create(size, NULL, &addr, &fd);
    if (rc != 0) {
        errno = -rc;
        return NULL;
    }
    pthread_mutex_lock(&memreg_lock);
    table_ready();
    size_t page = rma_page_size();
    size_t len = size ? (size + page - 1) & ~(page - 1) : page;
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
    if (reg == NULL || reg->kind != RMA_MEMREG_ALLOC || start != (uintptr_t)ptr) {
        pthread_mutex_unlock(&memreg_lock);
        return -ENOENT;
    }
    /* A window still on this block keeps the segment registered; the pages go away now
     * as MPI_Free_mem promises (using a window on freed memory is erroneous). */
    munmap((void *)reg->base, reg->len);
    reg_drop(reg);
    pthread_mutex_unlock(&memreg_lock);
    return 0;
}

/* Calls fn for each mapping of /proc/self/maps that overlaps [lo, hi), in address order,
 * until it returns 0. Returns 1 when fn accepted every mapping and they cover [lo, hi)
 * without a hole. */
typedef int (*vma_fn)(const char *perms, uint64_t offset, uint64_t ino, const char *path,
                      uintptr_t start, void *arg);

static int vmas_cover(uintptr_t lo, uintptr_t hi, vma_fn fn, void *arg)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    uintptr_t covered = lo;
    int ok = 1;

    if (f == NULL)
        return 0;
    while (ok && covered < hi && fgets(line, sizeof(line), f)) {
        unsigned long s, e, off, ino;
        char perms[8] = "", path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %lx %*s %lu %255s", &s, &e, perms, &off, &ino, path) < 5)
            continue;
        if (e <= covered || s >= hi)
            continue;
        ok = s <= covered && fn(perms, off, ino, path, s, arg);
        covered = e;
    }
    fclose(f);
    return ok && covered >= hi;
}

/* Private writable memory that may be moved onto a segment: anonymous, heap, stacks, or a
 * private writable file mapping (.data/.bss) - not device memory. */
static int vma_movable(const char *perms, uint64_t offset, uint64_t ino, const char *path,
                       uintptr_t start, void *arg)
{
    (void)offset, (void)ino, (void)start, (void)arg;
    return strcmp(perms, "rw-p") == 0 &&
           !(strncmp(path, "/dev/", 5) == 0 && strcmp(path, "/dev/zero") != 0) &&
           strcmp(path, "[vvar]") != 0 && strcmp(path, "[vsyscall]") != 0;
}

/* Still the registration's own segment, mapped at the offsets it was moved to. */
static int vma_of_reg(const char *perms, uint64_t offset, uint64_t ino, const char *path,
                      uintptr_t start, void *arg)
{
    const rma_memreg_t *reg = arg;
    (void)path;
    return strcmp(perms, "rw-s") == 0 && ino == reg->ino && start >= reg->base &&
           offset == start - reg->base;
}

static int pages_movable(uintptr_t lo, uintptr_t hi)
{
    return vmas_cover(lo, hi, vma_movable, NULL);
}

/* An orphan registration is stale once the program unmapped or remapped its pages. */
static int reg_still_mapped(rma_memreg_t *reg)
{
    return vmas_cover(reg->base, reg->base + reg->len, vma_of_reg, reg);
}

typedef struct prune_arg {
    uintptr_t lo, hi;
    rma_memreg_t *found[64];
    int n;
} prune_arg_t;

static int collect_orphan(uintptr_t start, size_t len, void *value, void *arg)
{
    prune_arg_t *pa = arg;
    rma_memreg_t *reg = value;

    if (start < pa->hi && start + len > pa->lo && reg->refcnt == 0 && pa->n < 64)
        pa->found[pa->n++] = reg;
    return 0;
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

/* Moves [lo, hi) onto a new segment in place: copy out, map the segment over the same
 * addresses. Nothing this thread does between the copy and the map may touch those pages,
 * which is why the caller refuses ranges near its own stack. */
static int pages_move(uintptr_t lo, size_t len, int *fd_p)
{
    void *tmp, *addr;
    int fd, rc;

    rc = rma_seg_create(len, NULL, &tmp, &fd);
    if (rc != 0)
        return rc;
    memcpy(tmp, (void *)lo, len);
    addr = mmap((void *)lo, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    rc = addr == MAP_FAILED ? -errno : 0;
    munmap(tmp, len);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    *fd_p = fd;
    return 0;
}

rma_memreg_t *rma_memreg_expose(void *addr, size_t len)
{
    size_t page = rma_page_size();
    uintptr_t lo = (uintptr_t)addr & ~(page - 1);
    uintptr_t hi = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    rma_memreg_t *reg = NULL;
    int fd;

    if (len == 0)
        return NULL;
    pthread_mutex_lock(&memreg_lock);
    table_ready();
    reg = rma_lwt_find(&memreg_table, lo, hi - lo, NULL, NULL);
    if (reg != NULL &&
        (reg->refcnt > 0 || reg->kind != RMA_MEMREG_REMAP || reg_still_mapped(reg))) {
        reg->refcnt++;
        goto out;
    }
    reg = NULL;
    if (!rma_env.create_remap)
        goto out;
    if (rma_lwt_overlaps(&memreg_table, lo, hi - lo))
        orphans_prune(lo, hi);
    if (rma_lwt_overlaps(&memreg_table, lo, hi - lo))
        goto out;
    /* our own stack frames below sp are written while the pages move */
    if (lo < sp + page && hi + (1u << 20) > sp)
        goto out;
    if (!pages_movable(lo, hi) || pages_move(lo, hi - lo, &fd) != 0)
        goto out;
    reg = reg_new(lo, hi - lo, fd, RMA_MEMREG_REMAP);
    if (reg == NULL)
        close(fd);
out:
    pthread_mutex_unlock(&memreg_lock);
    return reg;
}

void rma_memreg_release(rma_memreg_t *reg)
{
    if (reg == NULL)
        return;
    pthread_mutex_lock(&memreg_lock);
    reg_drop(reg);
    pthread_mutex_unlock(&memreg_lock);
}

static void free_reg(void *value)
{
    rma_memreg_t *reg = value;
    close(reg->fd);
    free(reg);
}

void rma_memreg_finalize(void)
{
    pthread_mutex_lock(&memreg_lock);
    if (memreg_ready)
        rma_lwt_destroy(&memreg_table, free_reg);
    pthread_mutex_unlock(&memreg_lock);
}
