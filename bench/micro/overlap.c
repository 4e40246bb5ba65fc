/*
 * bench/micro/overlap.c - how much of a nonblocking put or get the origin hides behind its
 * own computation (the host-assisted paper's overlap measure). Rank 0 moves size bytes to
 * or from rank 1's window, contiguous or as 2-D strided rows (1 KiB rows 2 KiB apart on
 * both sides), as MPI_Rput/MPI_Rget + MPI_Wait (-c req) or MPI_Put/MPI_Get +
 * MPI_Win_flush (-c flush), inside one MPI_Win_lock_all; with -r N, as N operations of
 * size / N bytes each to consecutive parts of the target, all issued before the
 * computation and completed after it (MPI_Waitall, or one flush). Per size:
 *
 *   t_comm   median time of issue + completion, nothing in between
 *   t_total  median time of issue, computation for t_comm (no MPI call), completion
 *   overlap  100 * (t_comm + t_cpu - t_total) / t_comm, clamped to [0, 100]
 *
 * where t_cpu is the computation's own measured time. Rank 1 waits in MPI_Barrier (-B: it
 * computes without MPI calls instead). The data is verified after each size.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROW 1024

static int get, strided, by_flush, busy, iters = 20, nreq = 1;
static size_t min_size = 1024, max_size = 4 << 20;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

#define MAX_REQ 64
static MPI_Request req[MAX_REQ];
static MPI_Status sts[MAX_REQ]; /* MPI_STATUSES_IGNORE trips GCC 12's access checks */

/* One transfer: nreq operations of count t each, the k-th at byte k * step of both sides;
 * with compute > 0, that much computation between their issue and their completion (whose
 * own time is added to *cpu). Returns the elapsed seconds. */
static double transfer(MPI_Win win, unsigned char *buf, MPI_Datatype t, int count, size_t step,
                       double compute, double *cpu)
{
    double t0 = MPI_Wtime();

    for (int k = 0; k < nreq; k++) {
        unsigned char *b = buf + (size_t)k * step;
        MPI_Aint d = (MPI_Aint)((size_t)k * step);
        if (by_flush && get)
            MPI_Get(b, count, t, 1, d, count, t, win);
        else if (by_flush)
            MPI_Put(b, count, t, 1, d, count, t, win);
        else if (get)
            MPI_Rget(b, count, t, 1, d, count, t, win, &req[k]);
        else
            MPI_Rput(b, count, t, 1, d, count, t, win, &req[k]);
    }
    if (compute > 0)
        *cpu += bench_compute(compute);
    if (by_flush)
        MPI_Win_flush(1, win);
    else
        MPI_Waitall(nreq, req, sts);
    return MPI_Wtime() - t0;
}

static void usage(const char *prog)
{
    printf("usage: %s [-o put|get] [-l contig|strided] [-c req|flush] [-m MIN:MAX] [-i N] [-r N] "
           "[-B]\n"
           "  -o  operation (default put)     -l  layout (default contig)\n"
           "  -c  completion: MPI_Rput/Rget + MPI_Wait, or put/get + MPI_Win_flush (default "
           "req)\n"
           "  -m  MIN:MAX sizes, powers of two, K/M suffixes (default 1K:4M)\n"
           "  -i  timed transfers per size and mode (default 20)\n"
           "  -r  operations per transfer, each of size / N bytes (default 1, at most %d)\n"
           "  -B  the target computes without MPI calls instead of waiting in MPI_Barrier\n",
           prog, MAX_REQ);
}

static int parse(int argc, char **argv)
{
    int c;

    while ((c = getopt(argc, argv, "o:l:c:m:i:r:Bh")) != -1) {
        switch (c) {
        case 'o': get = strcmp(optarg, "get") == 0; break;
        case 'l': strided = strcmp(optarg, "strided") == 0; break;
        case 'c': by_flush = strcmp(optarg, "flush") == 0; break;
        case 'm': /* a single size is both bounds */
            if (bench_parse_range(optarg, &min_size, &max_size) != 0)
                return -1;
            if (strchr(optarg, ':') == NULL)
                min_size = max_size;
            break;
        case 'i': iters = atoi(optarg) > 2 ? atoi(optarg) : 3; break;
        case 'r': nreq = atoi(optarg); break;
        case 'B': busy = 1; break;
        default: return -1;
        }
    }
    if (nreq < 1 || nreq > MAX_REQ || min_size / (size_t)nreq < (strided ? ROW : 1) ||
        min_size % (size_t)nreq != 0)
        return -1;
    return min_size < 1024 || max_size < min_size ? -1 : 0;
}

int main(int argc, char **argv)
{
    int rank, np, bad = 0;
    unsigned char *mem, *buf;
    double *tc, *tt;
    MPI_Win win;

    if (parse(argc, argv) != 0) {
        usage(argv[0]);
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2) {
        if (rank == 0)
            fprintf(stderr, "%s: needs 2 ranks\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    MPI_Win_allocate((MPI_Aint)(2 * max_size), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    buf = malloc(2 * max_size);
    tc = malloc(sizeof(double) * (size_t)iters);
    tt = malloc(sizeof(double) * (size_t)iters);
    if (rank == 0) {
        printf("# librma bench: overlap of a nonblocking %s with computation\n",
               get ? "get" : "put");
        printf("# Layout: %s; completion: %s; %d operation%s a transfer; target %s\n",
               strided ? "2-D strided, 1 KiB rows 2 KiB apart" : "contiguous",
               by_flush ? (get ? "MPI_Get + MPI_Win_flush" : "MPI_Put + MPI_Win_flush")
                        : (get ? "MPI_Rget + MPI_Wait" : "MPI_Rput + MPI_Wait"),
               nreq, nreq > 1 ? "s" : "",
               busy ? "busy (computes without MPI calls)" : "idle (in MPI_Barrier)");
        printf("%-10s%14s%14s%12s\n", "# Size", "t_comm (us)", "t_total (us)", "overlap %");
    }
    for (size_t size = min_size; size <= max_size; size *= 2) {
        size_t piece = size / (size_t)nreq, step = strided ? 2 * piece : piece;
        MPI_Datatype t = MPI_BYTE;
        int count = (int)piece;
        double cpu = 0, comm, total, est = 0;
        if (strided) {
            MPI_Type_vector((int)(piece / ROW), ROW, 2 * ROW, MPI_BYTE, &t);
            MPI_Type_commit(&t);
            count = 1;
        }
        bench_fill(buf, 2 * size, bench_seed(size, rank), 0);
        bench_fill(mem, 2 * size, bench_seed(size, rank), 0);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            double t0 = MPI_Wtime();
            MPI_Win_lock_all(0, win);
            for (int i = 0; i < 3; i++)
                transfer(win, buf, t, count, step, 0, &cpu);
            est = (MPI_Wtime() - t0) / 3 * iters * 4;
        }
        if (busy) { /* the target computes through both timed parts (an estimate) */
            MPI_Bcast(&est, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (rank == 1)
                bench_compute(2 * est + 0.05);
        }
        if (rank == 0) {
            for (int i = 0; i < iters; i++)
                tc[i] = transfer(win, buf, t, count, step, 0, &cpu);
            comm = median(tc, iters);
            for (int i = 0; i < iters; i++) {
                cpu = 0;
                tt[i] = transfer(win, buf, t, count, step, comm, &cpu);
                tt[i] -= cpu - comm; /* as if the computation took exactly t_comm */
            }
            total = median(tt, iters);
            MPI_Win_unlock_all(win);
            double ov = 100.0 * (2 * comm - total) / comm;
            printf("%-10zu%14.2f%14.2f%12.1f\n", size, comm * 1e6, total * 1e6,
                   ov < 0     ? 0
                   : ov > 100 ? 100
                              : ov);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* a put wrote rank 0's pattern into rank 1's rows; a get read rank 1's into rank
         * 0's buffer */
        if ((rank == 1 && !get) || (rank == 0 && get)) {
            unsigned char *p = get ? buf : mem;
            int from = get ? 1 : 0;
            for (size_t r = 0; r < (strided ? size / ROW : 1) && !bad; r++) {
                size_t off = strided ? 2 * r * ROW : 0, len = strided ? ROW : size;
                const char *why = bench_verify(p + off, len, bench_seed(size, from), off);
                if (why != NULL) {
                    fprintf(stderr, "VERIFY FAILED: overlap, size %zu: %s\n", size, why);
                    bad = 1;
                }
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (strided)
            MPI_Type_free(&t);
        if (bad)
            MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Win_free(&win);
    free(buf);
    free(tc);
    free(tt);
    MPI_Finalize();
    return 0;
}
