/*
 * lwtable.c - the labeled window table (see lwtable.h): an AVL tree of
 * non-overlapping address ranges keyed by their start address.
 *
 * Each node stores its range as [start, last] with last inclusive, so a range
 * ending at the top of the address space needs no overflow special case.
 * Because ranges never overlap, ordering by start also orders them by last,
 * and every query reduces to one "floor" descent: the node with the largest
 * start <= some address.
 */
#include "lwtable.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

struct rma_lwt_node {
    uintptr_t start;
    uintptr_t last; /* inclusive: start + len - 1 */
    void *value;
    rma_lwt_node_t *left;
    rma_lwt_node_t *right;
    int height; /* leaf = 1 */
};

int rma_lwt_init(rma_lwt_t *t)
{
    if (t == NULL)
        return -EINVAL;
    t->root = NULL;
    t->count = 0;
    t->generation = 0;
    return 0;
}

static int node_height(const rma_lwt_node_t *n)
{
    return n != NULL ? n->height : 0;
}

static void node_update(rma_lwt_node_t *n)
{
    int hl = node_height(n->left);
    int hr = node_height(n->right);
    n->height = 1 + (hl > hr ? hl : hr);
}

static rma_lwt_node_t *rotate_right(rma_lwt_node_t *n)
{
    rma_lwt_node_t *l = n->left;
    n->left = l->right;
    l->right = n;
    node_update(n);
    node_update(l);
    return l;
}

static rma_lwt_node_t *rotate_left(rma_lwt_node_t *n)
{
    rma_lwt_node_t *r = n->right;
    n->right = r->left;
    r->left = n;
    node_update(n);
    node_update(r);
    return r;
}

/* Restore the AVL invariant at n (children are balanced); returns new root. */
static rma_lwt_node_t *rebalance(rma_lwt_node_t *n)
{
    int bal;

    node_update(n);
    bal = node_height(n->left) - node_height(n->right);
    if (bal > 1) {
        if (node_height(n->left->left) < node_height(n->left->right))
            n->left = rotate_left(n->left);
        return rotate_right(n);
    }
    if (bal < -1) {
        if (node_height(n->right->right) < node_height(n->right->left))
            n->right = rotate_right(n->right);
        return rotate_left(n);
    }
    return n;
}

/* Node with the largest start <= addr, or NULL. */
static const rma_lwt_node_t *floor_node(const rma_lwt_t *t, uintptr_t addr)
{
    const rma_lwt_node_t *n = t->root;
    const rma_lwt_node_t *best = NULL;

    while (n != NULL) {
        if (n->start <= addr) {
            best = n;
            n = n->right;
        } else {
            n = n->left;
        }
    }
    return best;
}

static rma_lwt_node_t *insert_node(rma_lwt_node_t *n, rma_lwt_node_t *nn)
{
    if (n == NULL)
        return nn;
    /* the caller has excluded overlaps, so equal starts cannot occur */
    assert(nn->start != n->start);
    if (nn->start < n->start)
        n->left = insert_node(n->left, nn);
    else
        n->right = insert_node(n->right, nn);
    return rebalance(n);
}

int rma_lwt_insert(rma_lwt_t *t, uintptr_t start, size_t len, void *value)
{
    rma_lwt_node_t *nn;

    if (t == NULL || len == 0 || (uintmax_t)(len - 1) > (uintmax_t)(UINTPTR_MAX - start))
        return -EINVAL;
    if (rma_lwt_overlaps(t, start, len))
        return -EEXIST;
    nn = malloc(sizeof(*nn));
    if (nn == NULL)
        return -ENOMEM;
    nn->start = start;
    nn->last = start + (uintptr_t)(len - 1);
    nn->value = value;
    nn->left = NULL;
    nn->right = NULL;
    nn->height = 1;
    t->root = insert_node(t->root, nn);
    t->count++;
    t->generation++;
    return 0;
}

void *rma_lwt_find(const rma_lwt_t *t, uintptr_t addr, size_t len, uintptr_t *start_p,
                   size_t *len_p)
{
    const rma_lwt_node_t *n;
    uintptr_t alast;

    if (t == NULL)
        return NULL;
    if (len == 0)
        len = 1;
    if ((uintmax_t)(len - 1) > (uintmax_t)(UINTPTR_MAX - addr))
        return NULL;
    alast = addr + (uintptr_t)(len - 1);
    n = floor_node(t, addr);
    if (n == NULL || n->last < alast)
        return NULL;
    if (start_p != NULL)
        *start_p = n->start;
    if (len_p != NULL)
        *len_p = (size_t)(n->last - n->start) + 1;
    return n->value;
}

int rma_lwt_overlaps(const rma_lwt_t *t, uintptr_t addr, size_t len)
{
    const rma_lwt_node_t *n;
    uintptr_t alast;

    if (t == NULL || len == 0)
        return 0;
    if ((uintmax_t)(len - 1) > (uintmax_t)(UINTPTR_MAX - addr))
        alast = UINTPTR_MAX;
    else
        alast = addr + (uintptr_t)(len - 1);
    /* the last range starting inside or before the span is the only candidate */
    n = floor_node(t, alast);
    return n != NULL && n->last >= addr;
}

/* Detach the minimum node of subtree n into *min_p; returns the new subtree. */
static rma_lwt_node_t *detach_min(rma_lwt_node_t *n, rma_lwt_node_t **min_p)
{
    if (n->left == NULL) {
        *min_p = n;
        return n->right;
    }
    n->left = detach_min(n->left, min_p);
    return rebalance(n);
}

static rma_lwt_node_t *remove_node(rma_lwt_node_t *n, uintptr_t start, rma_lwt_node_t **found_p)
{
    rma_lwt_node_t *succ;

    if (n == NULL)
        return NULL;
    if (start < n->start) {
        n->left = remove_node(n->left, start, found_p);
    } else if (start > n->start) {
        n->right = remove_node(n->right, start, found_p);
    } else {
        *found_p = n;
        if (n->left == NULL)
            return n->right;
        if (n->right == NULL)
            return n->left;
        n->right = detach_min(n->right, &succ);
        succ->left = n->left;
        succ->right = n->right;
        return rebalance(succ);
    }
    return *found_p != NULL ? rebalance(n) : n;
}

void *rma_lwt_remove(rma_lwt_t *t, uintptr_t start)
{
    rma_lwt_node_t *found = NULL;
    void *value;

    if (t == NULL)
        return NULL;
    t->root = remove_node(t->root, start, &found);
    if (found == NULL)
        return NULL;
    value = found->value;
    free(found);
    t->count--;
    t->generation++;
    return value;
}

uint64_t rma_lwt_generation(const rma_lwt_t *t)
{
    return t != NULL ? t->generation : 0;
}

size_t rma_lwt_count(const rma_lwt_t *t)
{
    return t != NULL ? t->count : 0;
}

static int foreach_node(const rma_lwt_node_t *n, int (*fn)(uintptr_t, size_t, void *, void *),
                        void *arg)
{
    int rc;

    if (n == NULL)
        return 0;
    rc = foreach_node(n->left, fn, arg);
    if (rc != 0)
        return rc;
    rc = fn(n->start, (size_t)(n->last - n->start) + 1, n->value, arg);
    if (rc != 0)
        return rc;
    return foreach_node(n->right, fn, arg);
}

int rma_lwt_foreach(const rma_lwt_t *t,
                    int (*fn)(uintptr_t start, size_t len, void *value, void *arg), void *arg)
{
    if (t == NULL || fn == NULL)
        return 0;
    return foreach_node(t->root, fn, arg);
}

int rma_lwt_height(const rma_lwt_t *t)
{
    return t != NULL ? node_height(t->root) : 0;
}

size_t rma_lwt_probe_cost(const rma_lwt_t *t, uintptr_t addr)
{
    const rma_lwt_node_t *n = t != NULL ? t->root : NULL;
    size_t cost = 0;

    while (n != NULL) {
        cost++;
        n = n->start <= addr ? n->right : n->left;
    }
    return cost;
}

static void free_nodes(rma_lwt_node_t *n, void (*free_value)(void *))
{
    while (n != NULL) {
        rma_lwt_node_t *right = n->right;
        free_nodes(n->left, free_value);
        if (free_value != NULL)
            free_value(n->value);
        free(n);
        n = right;
    }
}

void rma_lwt_destroy(rma_lwt_t *t, void (*free_value)(void *))
{
    if (t == NULL)
        return;
    free_nodes(t->root, free_value);
    t->root = NULL;
    t->count = 0;
}
