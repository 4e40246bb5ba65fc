/*
 * rmatest.h - tiny check harness for the MPI tests: every CHECK prints what it checked on
 * failure (and counts it); rt_finish() prints the rank's tally and returns the exit code.
 */
#ifndef RMATEST_H
#define RMATEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rt_checks, rt_fails, rt_rank = -1;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        rt_checks++;                                                                          \
        if (!(cond)) {                                                                        \
            rt_fails++;                                                                       \
            fprintf(stderr, "[%d] FAIL %s:%d: %s: ", rt_rank, __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, "\n");                                                            \
        }                                                                                     \
    } while (0)

/* An MPI call that must succeed. */
#define MPI_OK(call)                                                                          \
    do {                                                                                      \
        int rt_rc_ = (call);                                                                  \
        CHECK(rt_rc_ == MPI_SUCCESS, "%s returned %d", #call, rt_rc_);                        \
    } while (0)

/* An MPI call that must fail with error class `cls`. */
#define MPI_ERRCLASS(call, cls)                                                               \
    do {                                                                                      \
        int rt_rc_ = (call), rt_cls_ = -1;                                                    \
        if (rt_rc_ != MPI_SUCCESS)                                                            \
            MPI_Error_class(rt_rc_, &rt_cls_);                                                \
        CHECK(rt_cls_ == (cls), "%s gave class %d, expected %s (%d)", #call, rt_cls_, #cls,   \
              cls);                                                                           \
    } while (0)

static inline void rt_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
}

/* Sums failures over all ranks; rank 0 prints the summary. Returns the exit code. */
static inline int rt_finish(const char *name)
{
    int fails = 0, checks = 0;

    MPI_Allreduce(&rt_fails, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&rt_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rt_rank == 0)
        printf("%s: %d checks, %d failed\n", name, checks, fails);
    MPI_Finalize();
    return fails ? 1 : 0;
}

#endif
