/*
 * lt.h - tiny check harness for the labeled-window API tests: every rank
 * evaluates a check, rank 0 prints PASS/FAIL for the whole job (a failing rank
 * also prints its own line), and lt_finish() prints "N passed, N failed".
 * lt_check is collective: every rank must reach the same checks in order.
 */
#ifndef LT_H
#define LT_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>

#include "rma_label.h"

static int lt_pass, lt_fail;

static void lt_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void lt_check(int ok, const char *fmt, ...)
{
    char what[256];
    int all = 0, rank = 0;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!ok)
        printf("rank %d: FAIL: %s\n", rank, what);
    if (rank == 0)
        printf("%s: %s\n", all ? "PASS" : "FAIL", what);
    fflush(stdout);
    if (all)
        lt_pass++;
    else
        lt_fail++;
}

/* Print the summary on rank 0; returns the exit status (0 if all passed). */
static int lt_finish(int rank)
{
    if (rank == 0) {
        printf("%d passed, %d failed\n", lt_pass, lt_fail);
        fflush(stdout);
    }
    return lt_fail == 0 ? 0 : 1;
}

#endif /* LT_H */
