/*
 * locality.c - which processes share a node. MPI's own answer is the one that counts:
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). On a cluster it agrees with the host names;
 * with `mpiexec -launcher fork -hosts a,b` it gives two nodes on one machine, which MPICH
 * then treats as two nodes itself, so the off-node path is tested as it runs.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "mpid/rma/env.h"
#include "windows/win.h"

static int *world_node; /* node number of each MPI_COMM_WORLD rank (its node's lowest rank) */
static int world_size;
static MPI_Group world_group = MPI_GROUP_NULL;
static cpu_set_t node_used; /* CPUs some rank of this node may run on */
static int node_rank = -1;  /* this process's rank among them (-1: not known) ... */
static int node_size;       /* ... and how many they are (0: not known) */

/* The lowest MPI_COMM_WORLD rank of the calling process's node, over comm. */
static int node_of_me(MPI_Comm comm)
{
    MPI_Comm node;
    int me, low;

    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    low = me;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
        if (comm == MPI_COMM_WORLD)
            node_size = 1; /* a node of its own, as world_node says */
        return me;
    }
    PMPI_Allreduce(&me, &low, 1, MPI_INT, MPI_MIN, node);
    if (comm == MPI_COMM_WORLD) { /* where the node's ranks run (the agent's placement) */
        cpu_set_t mine;
        CPU_ZERO(&mine);
        if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
            memset(&mine, 0xff, sizeof(mine));
        PMPI_Allreduce(&mine, &node_used, (int)(sizeof(mine) / sizeof(unsigned long)),
                       MPI_UNSIGNED_LONG, MPI_BOR, node);
        PMPI_Comm_rank(node, &node_rank);
        PMPI_Comm_size(node, &node_size);
    }
    PMPI_Comm_free(&node);
    return low;
}

void rma_locality_init(void)
{
    int mine;

    if (world_node != NULL)
        return;
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    world_node = malloc((size_t)world_size * sizeof(*world_node));
    mine = node_of_me(MPI_COMM_WORLD);
    if (world_node != NULL)
        PMPI_Allgather(&mine, 1, MPI_INT, world_node, 1, MPI_INT, MPI_COMM_WORLD);
}

int rma_locality(MPI_Comm comm, MPI_Group group, int n, int real, int *world, int *node)
{
    int *idx = calloc((size_t)n + 1, sizeof(*idx)), me;

    if (idx == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        idx[i] = i;
    if (world_group == MPI_GROUP_NULL)
        PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    PMPI_Group_translate_ranks(group, n, idx, world_group, world);
    free(idx);
    for (int i = 0; i < n; i++)
        if (world[i] == MPI_UNDEFINED)
            return -1;
    if (world_node != NULL) {
        for (int i = 0; i < n; i++)
            node[i] = world_node[world[i]];
    } else { /* MPI_Init was not ours: ask over comm */
        me = node_of_me(comm);
        PMPI_Allgather(&me, 1, MPI_INT, node, 1, MPI_INT, comm);
    }
    if (rma_env.netmod_only && !real)
        for (int i = 0; i < n; i++)
            node[i] = world[i];
    return 0;
}

int rma_locality_alone(void)
{
    if (world_node == NULL || world_size < 2)
        return 0;
    return rma_env.netmod_only || node_size == 1;
}

int rma_locality_cpus(void *used, size_t len, int *rank)
{
    if (node_rank < 0 || len < sizeof(node_used))
        return -1;
    memcpy(used, &node_used, sizeof(node_used));
    *rank = node_rank;
    return 0;
}
