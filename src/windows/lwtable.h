/*
 * lwtable.h - the labeled window table: an interval map from non-overlapping
 * address ranges [start, start+len) to a user pointer.
 *
 * Owns: the AVL tree keyed by range start, its generation counter, and the
 * queries "which range holds this address / this whole span" and "does this
 * span overlap anything". Insert, remove and every query are O(log n).
 * No MPI, no locking: callers serialize access to one table themselves.
 * A range may end at the very top of the address space (start + len == 2^N).
 */
#ifndef RMA_LWTABLE_H
#define RMA_LWTABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rma_lwt_node rma_lwt_node_t;

typedef struct rma_lwt {
    rma_lwt_node_t *root;
    size_t count;
    uint64_t generation;
} rma_lwt_t;

/* Initialize an empty table. Returns 0, or -EINVAL if t is NULL. */
int rma_lwt_init(rma_lwt_t *t);

/*
 * Map [start, start+len) to value. Returns 0; -EINVAL if len is 0 or the range
 * wraps past the top of the address space; -EEXIST if it overlaps a range
 * already present (the table is unchanged); -ENOMEM if a node cannot be
 * allocated. Bumps the generation on success.
 */
int rma_lwt_insert(rma_lwt_t *t, uintptr_t start, size_t len, void *value);

/*
 * The value of the range that holds all of [addr, addr+len) (len 0 is treated
 * as 1: the range holding addr). Stores that range's start and length in
 * *start_p and *len_p when they are not NULL. Returns NULL (outputs untouched)
 * if no single range holds the whole span.
 */
void *rma_lwt_find(const rma_lwt_t *t, uintptr_t addr, size_t len, uintptr_t *start_p,
                   size_t *len_p);

/*
 * 1 if [addr, addr+len) shares at least one byte with a range in the table,
 * 0 if not or if len is 0. A span that wraps past the top is clipped there.
 */
int rma_lwt_overlaps(const rma_lwt_t *t, uintptr_t addr, size_t len);

/*
 * Remove the range that starts exactly at start. Returns its value, or NULL
 * if no range starts there (the table and generation are unchanged).
 */
void *rma_lwt_remove(rma_lwt_t *t, uintptr_t start);

/* Counter bumped by every successful insert and remove (starts at 0). */
uint64_t rma_lwt_generation(const rma_lwt_t *t);

/* Number of ranges in the table. */
size_t rma_lwt_count(const rma_lwt_t *t);

/*
 * Call fn(start, len, value, arg) for every range in address order; stops
 * early and returns fn's value as soon as it is non-zero, else returns 0.
 * fn must not modify the table.
 */
int rma_lwt_foreach(const rma_lwt_t *t,
                    int (*fn)(uintptr_t start, size_t len, void *value, void *arg), void *arg);

/* Height of the tree (0 when empty); for tests and diagnostics. */
int rma_lwt_height(const rma_lwt_t *t);

/*
 * Number of tree nodes a lookup of addr visits (the comparisons it costs);
 * for tests of the O(log n) bound.
 */
size_t rma_lwt_probe_cost(const rma_lwt_t *t, uintptr_t addr);

/*
 * Free every node, calling free_value(value) on each value if free_value is
 * not NULL. The table is left empty and may be reused; the generation is kept.
 */
void rma_lwt_destroy(rma_lwt_t *t, void (*free_value)(void *));

#endif /* RMA_LWTABLE_H */
