/*
 * bench/micro/win_create.c - window creation cost: the time of one collective window
 * creation plus its MPI_Win_free (MPI_Win_attach plus MPI_Win_detach for dynamic windows,
 * on a window created once), for window sizes from 4 KiB to 1 GiB, median over the
 * iterations, on rank 0.
 *
 * Flavors (-w): create (on memory the program allocated and wrote, as an application's
 * data is), allocate, shared (MPI_Win_allocate_shared), dynamic. A plain MPI program: the
 * same binary runs on MPICH's own RMA or, preloaded, on librma. After each window it checks
 * that the memory still holds what was written (create, dynamic) or is usable (allocate).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);

    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    else if (*end == 'G' || *end == 'g')
        v <<= 30;
    return v;
}

/* One creation and free of a `size`-byte window of `flavor`; returns seconds. */
static double once(const char *flavor, size_t size, char *mem, MPI_Win dyn)
{
    double t0;
    MPI_Win win;
    void *base;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (strcmp(flavor, "create") == 0) {
        MPI_Win_create(mem, (MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_free(&win);
    } else if (strcmp(flavor, "allocate") == 0) {
        MPI_Win_allocate((MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        ((char *)base)[size - 1] = 1;
        MPI_Win_free(&win);
    } else if (strcmp(flavor, "shared") == 0) {
        MPI_Win_allocate_shared((MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        ((char *)base)[size - 1] = 1;
        MPI_Win_free(&win);
    } else {
        MPI_Win_attach(dyn, mem, (MPI_Aint)size);
        MPI_Barrier(MPI_COMM_WORLD); /* peers may target it from here on */
        MPI_Win_detach(dyn, mem);
    }
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    const char *flavor = "create";
    size_t lo = 4096, hi = (size_t)1 << 30;
    int iters = 20, rank, opt;
    MPI_Win dyn = MPI_WIN_NULL;

    while ((opt = getopt(argc, argv, "w:s:m:i:x:L")) != -1) {
        switch (opt) {
        case 'w': flavor = optarg; break;
        case 's': break; /* no synchronization mode: creation is collective */
        case 'x': break;
        case 'i': iters = atoi(optarg); break;
        case 'm': {
            char *colon = strchr(optarg, ':');
            lo = parse_size(optarg);
            hi = colon ? parse_size(colon + 1) : lo;
            break;
        }
        case 'L': printf("flavors: create allocate shared dynamic\nsyncs: none\n"); return 0;
        default:
            fprintf(stderr, "usage: %s [-w create|allocate|shared|dynamic] [-m min:max] [-i n]\n",
                    argv[0]);
            return 2;
        }
    }
    if (iters < 1 || lo < 1 || hi < lo) {
        fprintf(stderr, "win_create: bad -i or -m\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (strcmp(flavor, "dynamic") == 0)
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    if (rank == 0)
        printf("# librma bench: Window Creation Test (%s)\n# Size      Latency (us)\n", flavor);
    for (size_t size = lo; size <= hi; size *= 4) {
        char *mem = NULL;
        double *t = malloc((size_t)iters * sizeof(*t));
        int bad = 0;

        if (strcmp(flavor, "create") == 0 || strcmp(flavor, "dynamic") == 0) {
            mem = malloc(size);
            if (mem == NULL) {
                fprintf(stderr, "win_create: out of memory for %zu bytes\n", size);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            for (size_t i = 0; i < size; i += 4096)
                mem[i] = (char)(i >> 12);
        }
        once(flavor, size, mem, dyn); /* warm-up */
        for (int i = 0; i < iters; i++)
            t[i] = once(flavor, size, mem, dyn);
        for (size_t i = 0; mem != NULL && i < size; i += 4096)
            bad += mem[i] != (char)(i >> 12);
        if (bad) {
            fprintf(stderr, "VERIFY FAILED: %d pages of the %zu-byte buffer changed\n", bad, size);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        qsort(t, (size_t)iters, sizeof(*t), cmp_double);
        if (rank == 0)
            printf("%-10zu %12.2f\n", size, t[iters / 2] * 1e6);
        fflush(stdout);
        free(t);
        free(mem);
    }
    if (dyn != MPI_WIN_NULL)
        MPI_Win_free(&dyn);
    MPI_Finalize();
    return 0;
}
