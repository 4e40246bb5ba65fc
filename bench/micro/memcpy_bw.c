/*
 * bench/micro/memcpy_bw.c - memcpy reference bandwidth, single process, no MPI: copies size
 * bytes between two page-aligned buffers over and over (in cache where the size fits) and
 * prints MB/s (MB = 1e6 B) per size in the OSU column format. bench/compare uses it for the
 * "put/get bandwidth at 1 MiB at least 80% of memcpy" target.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    if (*end != '\0' || v == 0 || v > ((size_t)1 << 30))
        return -1;
    *out = (size_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    size_t min = 1, max = 4 << 20;
    double budget = 256.0 * (1 << 20); /* bytes copied per size */
    int c;
    while ((c = getopt(argc, argv, "m:b:h")) != -1) {
        char *colon;
        switch (c) {
        case 'm':
            colon = strchr(optarg, ':');
            if (colon) {
                *colon = '\0';
                if ((optarg[0] && parse_size(optarg, &min)) || parse_size(colon + 1, &max))
                    goto bad;
            } else if (parse_size(optarg, &max)) {
                goto bad;
            }
            break;
        case 'b':
            budget = atof(optarg) * (1 << 20);
            if (budget <= 0)
                goto bad;
            break;
        case 'h':
            printf("usage: %s [-m [MIN:]MAX] [-b MiB copied per size, default 256]\n", argv[0]);
            return 0;
        default:
            goto bad;
        }
    }
    if (min > max)
        goto bad;

    unsigned char *src, *dst;
    if (posix_memalign((void **)&src, 4096, max) || posix_memalign((void **)&dst, 4096, max)) {
        fprintf(stderr, "%s: cannot allocate %zu bytes\n", argv[0], max);
        return 1;
    }
    for (size_t i = 0; i < max; i++)
        src[i] = (unsigned char)(i * 7 + 1);
    memset(dst, 0, max);

    printf("# OSU memcpy Bandwidth Test (librma bench, single process reference)\n");
    printf("%-10s%20s\n", "# Size", "Bandwidth (MB/s)");
    for (size_t size = min; size <= max; size *= 2) {
        long iters = (long)(budget / (double)size);
        if (iters < 10)
            iters = 10;
        if (iters > 10000000)
            iters = 10000000;
        for (long i = 0; i < iters / 10 + 1; i++) { /* warm-up */
            memcpy(dst, src, size);
            __asm__ volatile("" ::: "memory");
        }
        double t0 = now();
        for (long i = 0; i < iters; i++) {
            memcpy(dst, src, size);
            __asm__ volatile("" ::: "memory");
        }
        double t = now() - t0;
        if (memcmp(dst, src, size) != 0) {
            fprintf(stderr, "VERIFY FAILED: memcpy of %zu bytes\n", size);
            return 3;
        }
        printf("%-10zu%20.2f\n", size, (double)size * (double)iters / (t > 0 ? t : 1e-9) / 1e6);
        fflush(stdout);
    }
    free(src);
    free(dst);
    return 0;

bad:
    fprintf(stderr, "%s: bad option (see -h)\n", argv[0]);
    return 2;
}
