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
#include <unistd.h>

#include "mpid/rma/env.h"
#include "windows/lwtable.h"
#include "windows/segment.h"

static pthread_mutex_t memreg_lock = PTHREAD_MUTEX_INITIALIZER;
static rma_lwt_t memreg_table;
static int memreg_ready;

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

    if (reg == NULL)
        return NULL;
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

/* Called with memreg_lock held. The memory itself stays mapped unless `unmap`. */
static void reg_drop(rma_memreg_t *reg, int unmap)
{
    if (--reg->refcnt > 0)
        return;
    rma_lwt_remove(&memreg_table, reg->base);
    if (unmap)
        munmap((void *)reg->base, reg->len);
    close(reg->fd);
    free(reg);
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
    reg_drop(reg, 0);
    pthread_mutex_unlock(&memreg_lock);
    return 0;
}

int rma_memreg_is_alloc(const void *ptr)
{
    rma_memreg_t *reg;
    uintptr_t start;
    int yes;

    pthread_mutex_lock(&memreg_lock);
    table_ready();
    reg = rma_lwt_find(&memreg_table, (uintptr_t)ptr, 1, &start, NULL);
    yes = reg != NULL && reg->kind == RMA_MEMREG_ALLOC && start == (uintptr_t)ptr;
    pthread_mutex_unlock(&memreg_lock);
    return yes;
}

/* 1 when every byte of [lo, hi) lies in private writable memory that may be moved onto a
 * segment: anonymous, heap, stack of another thread, or a private writable file mapping
 * (.data/.bss) - not device memory. Reads /proc/self/maps (window creation only). */
static int pages_movable(uintptr_t lo, uintptr_t hi)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    uintptr_t covered = lo;
    int ok = 1;

    if (f == NULL)
        return 0;
    while (ok && covered < hi && fgets(line, sizeof(line), f)) {
        unsigned long s, e;
        char perms[8] = "", path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &s, &e, perms, path) < 3)
            continue;
        if (e <= covered || s >= hi)
            continue;
        if (s > covered || strcmp(perms, "rw-p") != 0 ||
            (strncmp(path, "/dev/", 5) == 0 && strcmp(path, "/dev/zero") != 0) ||
            strcmp(path, "[vvar]") == 0 || strcmp(path, "[vsyscall]") == 0)
            ok = 0;
        covered = e;
    }
    fclose(f);
    return ok && covered >= hi;
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
    if (reg != NULL) {
        reg->refcnt++;
        goto out;
    }
    if (!rma_env.create_remap || rma_lwt_overlaps(&memreg_table, lo, hi - lo))
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
    reg_drop(reg, 0);
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
