/*
 * apps_common.h - shared helpers of the As, Mult and Rdx suites: the choice
 * between the single-window (li_) and labeled (lio_) form behind one set of
 * app_* wrappers, a checked-call macro, timing, and the RESULT line format
 * ("RESULT suite=... key=value ...") that bench/compare and people can parse.
 */
#ifndef APPS_COMMON_H
#define APPS_COMMON_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rma_label.h"

/* 1: single-window form (li_*), 0: labeled form (lio_*, the default). */
static int app_single;

#define APP_CHECK(call)                                                              \
    do {                                                                             \
        int app_rc_ = (call);                                                        \
        if (app_rc_ != LI_OK) {                                                      \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,     \
                    li_errstr(app_rc_));                                             \
            li_abort(2);                                                             \
        }                                                                            \
    } while (0)

static inline int app_register(void *addr, size_t len)
{
    return app_single ? li_register(addr, len) : lio_register(addr, len);
}

static inline int app_commit(void)
{
    return app_single ? li_commit() : lio_commit();
}

static inline int app_init(void *addr)
{
    return app_single ? li_init() : lio_init(addr);
}

static inline int app_put(int pid, const void *src, void *dst, size_t off, size_t len)
{
    return app_single ? li_put(pid, src, dst, off, len) : lio_put(pid, src, dst, off, len);
}

static inline int app_get(int pid, const void *src, size_t off, void *dst, size_t len)
{
    return app_single ? li_get(pid, src, off, dst, len) : lio_get(pid, src, off, dst, len);
}

/* Complete the transfers on addr's area (all areas in the single form). */
static inline int app_sync(void *addr)
{
    return app_single ? li_sync() : lio_sync(addr);
}

static inline int app_deregister(void *addr)
{
    return app_single ? li_deregister(addr) : lio_deregister(addr);
}

static inline const char *app_form_name(void)
{
    return app_single ? "single" : "labeled";
}

/* Parse "-f single|labeled"; returns 0, or -1 on an unknown name. */
static inline int app_set_form(const char *name)
{
    if (strcmp(name, "single") == 0)
        app_single = 1;
    else if (strcmp(name, "labeled") == 0)
        app_single = 0;
    else
        return -1;
    return 0;
}

/* Largest of every rank's value of t (valid on rank 0 only). */
static inline double app_max_time(double t)
{
    double m = t;
    MPI_Reduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return m;
}

/* Deterministic 32-bit mixer (splitmix-style), the same on every rank. */
static inline uint32_t app_mix32(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return (uint32_t)((x ^ (x >> 31)) >> 16);
}

#endif /* APPS_COMMON_H */
