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

/*
 * Topology. test/runtests runs every test in several topologies and tells it which one in
 * RMA_TEST_TOPOLOGY (node, netmod-tcp, netmod, twonode; "node" when unset). Locality is what
 * librma uses too: the ranks that MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) puts together.
 */
static inline const char *rt_topology(void)
{
    const char *t = getenv("RMA_TEST_TOPOLOGY");
    return t != NULL && *t != '\0' ? t : "node";
}

/* The ranks of MPI_COMM_WORLD on this node. Collective on the first call. */
static inline MPI_Comm rt_node_comm(void)
{
    static MPI_Comm node = MPI_COMM_NULL;
    if (node == MPI_COMM_NULL)
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    return node;
}

/* 1 when MPI_COMM_WORLD spans several nodes: there MPI_Win_allocate_shared on it is erroneous
 * (the standard asks for a communicator whose processes can share memory), so the tests
 * create shared windows on rt_node_comm() or skip that flavor. Collective on the first call. */
static inline int rt_world_spans_nodes(void)
{
    int n, world;
    MPI_Comm_size(rt_node_comm(), &n);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    return n != world; /* the same answer on every rank */
}

/* 1 when world rank `r` is on this process's node. Collective on the first call. */
static inline int rt_same_node(int r)
{
    MPI_Group wg, ng;
    int nr = MPI_UNDEFINED;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(rt_node_comm(), &ng);
    MPI_Group_translate_ranks(wg, 1, &r, ng, &nr);
    MPI_Group_free(&wg);
    MPI_Group_free(&ng);
    return nr != MPI_UNDEFINED;
}

/* 1 when librma is asked to reach every peer through the network (RMA_NETMOD_ONLY=1). */
static inline int rt_netmod_only(void)
{
    const char *e = getenv("RMA_NETMOD_ONLY");
    return e != NULL && atoi(e) != 0;
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
