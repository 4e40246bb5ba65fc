/*
 * test_lwtable.c - unit test of the labeled window table (src/windows/lwtable.c)
 * without MPI: edge cases, a randomized comparison against a brute-force
 * reference, and counted-comparison checks of the O(log n) bound on 100k ranges.
 * Prints one line per check and "N passed, N failed"; exits 1 on any failure.
 */
#define _POSIX_C_SOURCE 200809L

#include "../../src/windows/lwtable.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int npass, nfail;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
    if (ok)
        npass++;
    else
        nfail++;
}

/* ---- brute-force reference ------------------------------------------------ */

#define REF_MAX 512

typedef struct {
    uintptr_t start;
    size_t len;
    void *value;
} ref_range_t;

static ref_range_t ref[REF_MAX];
static size_t nref;

static int ref_contains(const ref_range_t *r, uintptr_t a, size_t len)
{
    return a >= r->start && a - r->start < r->len && len <= r->len - (a - r->start);
}

static int ref_overlap(const ref_range_t *r, uintptr_t a, size_t len)
{
    return a < r->start + r->len && r->start < a + len;
}

static void *ref_find(uintptr_t a, size_t len, size_t *idx_p)
{
    if (len == 0)
        len = 1;
    for (size_t i = 0; i < nref; i++) {
        if (ref_contains(&ref[i], a, len)) {
            *idx_p = i;
            return ref[i].value;
        }
    }
    return NULL;
}

static int ref_overlaps(uintptr_t a, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < nref; i++)
        if (ref_overlap(&ref[i], a, len))
            return 1;
    return 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
    /* xorshift64*: fixed seed so every run does the same operations */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

struct order_ctx {
    uintptr_t prev_end;
    int first;
    int ok;
    size_t n;
};

static int order_cb(uintptr_t start, size_t len, void *value, void *arg)
{
    struct order_ctx *c = arg;
    (void)value;
    if (!c->first && start < c->prev_end)
        c->ok = 0;
    c->first = 0;
    c->prev_end = start + len;
    c->n++;
    return 0;
}

static double avl_bound(size_t n)
{
    return 1.4405 * log2((double)n + 2.0) - 0.3277;
}

/* ---- edge cases ------------------------------------------------------------ */

static void test_edges(void)
{
    rma_lwt_t t;
    uintptr_t s = 0;
    size_t l = 0;
    int a, b, c, d;

    check(rma_lwt_init(&t) == 0 && rma_lwt_count(&t) == 0 && rma_lwt_generation(&t) == 0,
          "init gives an empty table, generation 0");
    check(rma_lwt_init(NULL) == -EINVAL, "init(NULL) returns -EINVAL");
    check(rma_lwt_find(&t, 100, 1, NULL, NULL) == NULL, "find in empty table is NULL");
    check(rma_lwt_overlaps(&t, 0, SIZE_MAX) == 0, "overlaps in empty table is 0");
    check(rma_lwt_remove(&t, 0) == NULL && rma_lwt_generation(&t) == 0,
          "remove from empty table is NULL and keeps the generation");
    check(rma_lwt_insert(&t, 100, 0, &a) == -EINVAL, "insert of length 0 returns -EINVAL");
    check(rma_lwt_insert(&t, UINTPTR_MAX, 2, &a) == -EINVAL,
          "insert wrapping past the top returns -EINVAL");

    check(rma_lwt_insert(&t, 100, 50, &a) == 0, "insert [100,150)");
    check(rma_lwt_insert(&t, 150, 50, &b) == 0, "insert adjacent [150,200)");
    check(rma_lwt_insert(&t, 50, 50, &c) == 0, "insert adjacent [50,100)");
    check(rma_lwt_generation(&t) == 3 && rma_lwt_count(&t) == 3,
          "generation 3 and count 3 after three inserts");
    check(rma_lwt_insert(&t, 149, 1, &d) == -EEXIST, "insert of last byte of a range: -EEXIST");
    check(rma_lwt_insert(&t, 10, 41, &d) == -EEXIST, "insert overlapping first byte: -EEXIST");
    check(rma_lwt_insert(&t, 0, 1000, &d) == -EEXIST, "insert covering all: -EEXIST");
    check(rma_lwt_insert(&t, 120, 5, &d) == -EEXIST, "insert strictly inside: -EEXIST");
    check(rma_lwt_generation(&t) == 3 && rma_lwt_count(&t) == 3,
          "failed inserts change neither generation nor count");

    check(rma_lwt_find(&t, 100, 1, &s, &l) == &a && s == 100 && l == 50,
          "find of a range's first byte gives its start and length");
    check(rma_lwt_find(&t, 149, 1, NULL, NULL) == &a, "find of a range's last byte");
    check(rma_lwt_find(&t, 150, 0, NULL, NULL) == &b, "find with len 0 acts as len 1");
    check(rma_lwt_find(&t, 100, 50, NULL, NULL) == &a, "find of exactly the whole range");
    check(rma_lwt_find(&t, 100, 51, NULL, NULL) == NULL,
          "find one byte past the range end is NULL");
    check(rma_lwt_find(&t, 140, 20, NULL, NULL) == NULL,
          "find straddling two adjacent ranges is NULL");
    check(rma_lwt_find(&t, 49, 1, NULL, NULL) == NULL && rma_lwt_find(&t, 200, 1, NULL, NULL)
          == NULL, "find just outside the outer ranges is NULL");
    check(rma_lwt_overlaps(&t, 140, 20) == 1, "overlaps straddling two ranges");
    check(rma_lwt_overlaps(&t, 200, 10) == 0 && rma_lwt_overlaps(&t, 0, 50) == 0,
          "no overlap with spans touching only the outer edges");
    check(rma_lwt_overlaps(&t, 199, 1) == 1 && rma_lwt_overlaps(&t, 0, 51) == 1,
          "overlap with a single shared byte at each edge");
    check(rma_lwt_overlaps(&t, 0, SIZE_MAX) == 1, "overlap of a huge span (clipped at the top)");
    check(rma_lwt_overlaps(&t, 120, 0) == 0, "overlap of an empty span is 0");

    check(rma_lwt_insert(&t, 0, 10, &d) == 0 && rma_lwt_find(&t, 0, 1, &s, &l) == &d
          && s == 0 && l == 10, "range at address 0 is found at address 0");
    check(rma_lwt_insert(&t, UINTPTR_MAX - 9, 10, &d) == 0, "insert range ending at max address");
    check(rma_lwt_find(&t, UINTPTR_MAX, 1, &s, &l) == &d && s == UINTPTR_MAX - 9 && l == 10,
          "find of the max address");
    check(rma_lwt_find(&t, UINTPTR_MAX, 2, NULL, NULL) == NULL,
          "find of a span wrapping past the top is NULL");
    check(rma_lwt_overlaps(&t, UINTPTR_MAX - 20, 100) == 1, "overlap of wrapping span at the top");
    check(rma_lwt_insert(&t, UINTPTR_MAX, 1, &d) == -EEXIST, "insert of max address: -EEXIST");

    check(rma_lwt_remove(&t, 101) == NULL, "remove by a non-start address is NULL");
    check(rma_lwt_remove(&t, 100) == &a && rma_lwt_find(&t, 120, 1, NULL, NULL) == NULL,
          "remove by start returns the value and the range is gone");
    check(rma_lwt_find(&t, 99, 1, NULL, NULL) == &c && rma_lwt_find(&t, 150, 1, NULL, NULL) == &b,
          "neighbours survive the removal");
    check(rma_lwt_insert(&t, 100, 50, &d) == 0, "the freed hole can be filled again");
    check(rma_lwt_generation(&t) == 7 && rma_lwt_count(&t) == 5,
          "generation counts every insert and remove");
    rma_lwt_destroy(&t, NULL);
    check(rma_lwt_count(&t) == 0 && rma_lwt_find(&t, 120, 1, NULL, NULL) == NULL,
          "destroy empties the table");
}

static int nfreed;

static void count_free(void *v)
{
    free(v);
    nfreed++;
}

static int stop_cb(uintptr_t start, size_t len, void *value, void *arg)
{
    (void)len;
    (void)value;
    *(uintptr_t *)arg = start;
    return start >= 30 ? 7 : 0;
}

static void test_destroy_foreach(void)
{
    rma_lwt_t t;
    uintptr_t where = 0;
    int ok = 1;

    rma_lwt_init(&t);
    for (int i = 0; i < 10; i++)
        ok &= rma_lwt_insert(&t, (uintptr_t)(90 - i * 10), 5, malloc(4)) == 0;
    check(ok, "ten inserts in descending order");
    check(rma_lwt_foreach(&t, stop_cb, &where) == 7 && where == 30,
          "foreach visits in address order and stops on non-zero");
    nfreed = 0;
    rma_lwt_destroy(&t, count_free);
    check(nfreed == 10, "destroy calls free_value once per range");
}

/* ---- randomized against the reference -------------------------------------- */

static void test_random(void)
{
    rma_lwt_t t;
    int mism_ins = 0, mism_find = 0, mism_ovl = 0, mism_rem = 0, mism_cnt = 0;
    int maxh_bad = 0;
    uint64_t gen = 0;
    uintptr_t serial = 0;
    const int nops = 200000;
    const uintptr_t space = 8192;

    rma_lwt_init(&t);
    nref = 0;
    for (int op = 0; op < nops; op++) {
        unsigned kind = (unsigned)(rng() % 10);
        uintptr_t a = (uintptr_t)(rng() % space);
        size_t len = (size_t)(rng() % 64);

        if (kind < 3) {                         /* insert */
            int want = len == 0 ? -EINVAL : ref_overlaps(a, len) ? -EEXIST
                     : nref == REF_MAX ? 1 : 0;
            if (want == 1)
                continue;
            void *v = (void *)(++serial);
            int got = rma_lwt_insert(&t, a, len, v);
            if (got != want)
                mism_ins++;
            if (got == 0) {
                ref[nref].start = a;
                ref[nref].len = len;
                ref[nref].value = v;
                nref++;
                gen++;
            }
        } else if (kind < 5) {                  /* remove, usually an existing start */
            uintptr_t s = (nref > 0 && (rng() & 1)) ? ref[rng() % nref].start : a;
            void *want = NULL;
            for (size_t i = 0; i < nref; i++) {
                if (ref[i].start == s) {
                    want = ref[i].value;
                    ref[i] = ref[--nref];
                    gen++;
                    break;
                }
            }
            if (rma_lwt_remove(&t, s) != want)
                mism_rem++;
        } else if (kind < 8) {                  /* find */
            size_t idx = 0;
            uintptr_t s = 0;
            size_t l = 0;
            void *want = ref_find(a, len, &idx);
            void *got = rma_lwt_find(&t, a, len, &s, &l);
            if (got != want || (got != NULL && (s != ref[idx].start || l != ref[idx].len)))
                mism_find++;
        } else {                                /* overlaps */
            if (rma_lwt_overlaps(&t, a, len) != ref_overlaps(a, len))
                mism_ovl++;
        }
        if (rma_lwt_count(&t) != nref || rma_lwt_generation(&t) != gen)
            mism_cnt++;
        if (rma_lwt_height(&t) > avl_bound(nref) + 1e-9)
            maxh_bad++;
    }
    struct order_ctx oc = { 0, 1, 1, 0 };
    rma_lwt_foreach(&t, order_cb, &oc);
    check(mism_ins == 0, "random: insert results match the reference (200k ops)");
    check(mism_find == 0, "random: find results (value, start, len) match the reference");
    check(mism_ovl == 0, "random: overlaps results match the reference");
    check(mism_rem == 0, "random: remove results match the reference");
    check(mism_cnt == 0, "random: count and generation match after every op");
    check(maxh_bad == 0, "random: height within the AVL bound after every op");
    check(oc.ok && oc.n == nref, "random: in-order walk is sorted and non-overlapping");
    rma_lwt_destroy(&t, NULL);
}

/* ---- O(log n) on 100k ranges --------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_scale(void)
{
    const size_t n = 100000;
    rma_lwt_t t;
    int ok = 1;
    size_t maxcost = 0;
    double t0, t1, t2;

    /* ascending inserts: the worst case for an unbalanced tree */
    rma_lwt_init(&t);
    t0 = now();
    for (size_t i = 0; i < n; i++)
        ok &= rma_lwt_insert(&t, (uintptr_t)(4096 + i * 64), 48, (void *)(i + 1)) == 0;
    t1 = now();
    check(ok && rma_lwt_count(&t) == n, "scale: 100k ascending inserts succeed");
    check(rma_lwt_height(&t) <= avl_bound(n),
          "scale: height after ascending inserts within 1.44 log2(n)");
    ok = 1;
    for (size_t i = 0; i < n; i++) {
        uintptr_t a = (uintptr_t)(4096 + i * 64 + (i % 48));
        size_t c = rma_lwt_probe_cost(&t, a);
        if (c > maxcost)
            maxcost = c;
        ok &= rma_lwt_find(&t, a, 1, NULL, NULL) == (void *)(i + 1);
        ok &= rma_lwt_find(&t, a + 48, 1, NULL, NULL) == NULL || i % 48 != 0;
    }
    t2 = now();
    check(ok, "scale: every address of 100k ranges resolves to its range");
    printf("info: height %d, max probe %zu nodes (log2 n = %.1f), "
           "insert %.0f ns/op, find %.0f ns/op\n", rma_lwt_height(&t), maxcost,
           log2((double)n), (t1 - t0) / (double)n * 1e9, (t2 - t1) / (double)n * 1e9 / 2);
    check(maxcost <= (size_t)avl_bound(n) && maxcost <= 2 * (size_t)ceil(log2((double)n)),
          "scale: every lookup visits at most 1.44 log2(n) nodes (counted comparisons)");

    /* random removal of half, then re-check balance and lookups */
    ok = 1;
    size_t removed = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = (size_t)(rng() % n);
        uintptr_t s = (uintptr_t)(4096 + j * 64);
        if (rma_lwt_remove(&t, s) != NULL)
            removed++;
        if (removed == n / 2)
            break;
    }
    check(rma_lwt_count(&t) == n - removed && rma_lwt_height(&t) <= avl_bound(n - removed),
          "scale: after removing half at random, count right and height within bound");
    maxcost = 0;
    for (size_t i = 0; i < n; i += 7) {
        size_t c = rma_lwt_probe_cost(&t, (uintptr_t)(4096 + i * 64));
        if (c > maxcost)
            maxcost = c;
    }
    check(maxcost <= (size_t)avl_bound(n - removed),
          "scale: lookups after removals still O(log n)");
    rma_lwt_destroy(&t, NULL);
}

int main(void)
{
    test_edges();
    test_destroy_foreach();
    test_random();
    test_scale();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail == 0 ? 0 : 1;
}
