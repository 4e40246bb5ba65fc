/*
 * poll_serves - a rank that polls a same-node flag through RMA serves its off-node peers
 * meanwhile, in every RMA_AGENT mode. At least 3 ranks; the point is RMA_AGENT=off in the
 * twonode topology (test/runtests), where nothing but a rank's own librma calls drives its
 * side of the network.
 *
 * Rank 0 (the poller) waits for a flag that lives in the window of a rank of its own node
 * (the holder), reading it with one of several polling idioms: MPI_Get + MPI_Win_flush,
 * MPI_Get + MPI_Win_flush_all, MPI_Fetch_and_op(MPI_NO_OP) + MPI_Win_flush_local inside
 * MPI_Win_lock_all, or MPI_Win_lock / MPI_Get / MPI_Win_unlock on the holder. A rank of the
 * other node (the writer) first writes rank 0's window (MPI_Put and MPI_Accumulate under a
 * shared lock, which rank 0's own lock_all allows; their completion needs rank 0's side of
 * the network) and only then sets the flag. Every other rank waits in MPI_Barrier. If the
 * poller's calls on a same-node target never drove the network, the writer's unlock would
 * never complete and the flag never come (MPICH's linked_list_bench tests hung that way
 * with RMA_AGENT=off): the poller gives up after POLL_SECONDS (default 20) and the test
 * fails. Then rank 0 checks what the writer left in its window. Every window flavor that
 * can run in the topology.
 *
 * In the node topology every rank is on rank 0's node (the writer is then the last rank),
 * in netmod every peer is off node (the holder is then rank 1): the data are checked all the
 * same.
 */
#include "rmatest.h"

#define N      64 /* ints rank 0 receives per round */
#define FLAG   N  /* the holder's flag, an int after the data */
#define NINTS  (N + 1)
#define NPOLLS 4

static const char *const poll_name[NPOLLS] = {"get + flush", "get + flush_all",
                                              "fetch_and_op + flush_local", "lock/get/unlock"};
static int np, holder, writer;
static double poll_seconds;

/* Rank 0: reads the holder's flag with idiom how until it is `want`; 1 when it came. */
static int poll_flag(MPI_Win win, MPI_Aint at, int how, int want)
{
    double end = MPI_Wtime() + poll_seconds;
    int f = -1, zero = 0;

    if (how != 3)
        MPI_OK(MPI_Win_lock_all(0, win));
    while (f != want && MPI_Wtime() < end) {
        switch (how) {
        case 0:
            MPI_OK(MPI_Get(&f, 1, MPI_INT, holder, at, 1, MPI_INT, win));
            MPI_OK(MPI_Win_flush(holder, win));
            break;
        case 1:
            MPI_OK(MPI_Get(&f, 1, MPI_INT, holder, at, 1, MPI_INT, win));
            MPI_OK(MPI_Win_flush_all(win));
            break;
        case 2:
            MPI_OK(MPI_Fetch_and_op(&zero, &f, MPI_INT, holder, at, MPI_NO_OP, win));
            MPI_OK(MPI_Win_flush_local(holder, win));
            break;
        default:
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, holder, 0, win));
            MPI_OK(MPI_Get(&f, 1, MPI_INT, holder, at, 1, MPI_INT, win));
            MPI_OK(MPI_Win_unlock(holder, win));
        }
    }
    if (how != 3)
        MPI_OK(MPI_Win_unlock_all(win));
    return f == want;
}

/* One round: the writer fills rank 0's data and then raises the flag; rank 0 polls. base[r]
 * is rank r's displacement of the window's start (0 but for dynamic windows). */
static void round_run(MPI_Win win, int *mem, const MPI_Aint *base, const char *flavor, int how,
                      int round)
{
    int data[N], one[N];

    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == writer) {
        for (int i = 0; i < N; i++) {
            data[i] = round * 1000 + i;
            one[i] = 1;
        }
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_OK(MPI_Put(data, N, MPI_INT, 0, base[0], N, MPI_INT, win));
        MPI_OK(MPI_Accumulate(one, N, MPI_INT, 0, base[0], N, MPI_INT, MPI_SUM, win));
        MPI_OK(MPI_Win_unlock(0, win));
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, holder, 0, win));
        MPI_OK(MPI_Put(&round, 1, MPI_INT, holder, base[holder] + FLAG * (MPI_Aint)sizeof(int), 1,
                       MPI_INT, win));
        MPI_OK(MPI_Win_unlock(holder, win));
    } else if (rt_rank == 0) {
        double t0 = MPI_Wtime();
        int came = poll_flag(win, base[holder] + FLAG * (MPI_Aint)sizeof(int), how, round);
        CHECK(came,
              "%s window, %s: the flag of rank %d did not come in %.0f s (rank %d's "
              "epoch on rank 0 was not served)",
              flavor, poll_name[how], holder, poll_seconds, writer);
        if (round == 1)
            printf("%s window, %s: the flag came after %.1f ms\n", flavor, poll_name[how],
                   (MPI_Wtime() - t0) * 1e3);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* serves the writer if the poller gave up */
    if (rt_rank == 0) {
        int bad = 0;
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        for (int i = 0; i < N; i++)
            if (mem[i] != round * 1000 + i + 1 && bad++ < 3)
                CHECK(0, "%s window, %s, round %d: element %d is %d, expected %d", flavor,
                      poll_name[how], round, i, mem[i], round * 1000 + i + 1);
        MPI_OK(MPI_Win_unlock(0, win));
        CHECK(bad == 0, "%s window, %s, round %d: %d elements wrong", flavor, poll_name[how], round,
              bad);
    }
}

static void run(int flavor)
{
    MPI_Aint bytes = NINTS * (MPI_Aint)sizeof(int), *base = calloc((size_t)np, sizeof(*base));
    int *mem = NULL, rounds = rt_env_int("POLL_ROUNDS", 3);
    MPI_Win win;

    if (flavor == RT_ALLOCATE) {
        MPI_OK(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else if (flavor == RT_SHARED) {
        MPI_OK(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else {
        mem = malloc((size_t)bytes);
        if (flavor == RT_CREATE) {
            MPI_OK(MPI_Win_create(mem, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        } else {
            MPI_Aint me;
            MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            MPI_OK(MPI_Win_attach(win, mem, bytes));
            MPI_Get_address(mem, &me);
            MPI_Allgather(&me, 1, MPI_AINT, base, 1, MPI_AINT, MPI_COMM_WORLD);
        }
    }
    memset(mem, 0, (size_t)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int how = 0; how < NPOLLS; how++)
        for (int r = 1; r <= rounds; r++)
            round_run(win, mem, base, rt_flavor_name[flavor], how, r);
    if (flavor == RT_DYNAMIC)
        MPI_OK(MPI_Win_detach(win, mem));
    MPI_OK(MPI_Win_free(&win));
    if (flavor == RT_CREATE || flavor == RT_DYNAMIC)
        free(mem);
    free(base);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 3) {
        if (rt_rank == 0)
            fprintf(stderr, "poll_serves: needs at least 3 ranks\n");
        MPI_Finalize();
        return 2;
    }
    poll_seconds = rt_env_int("POLL_SECONDS", 20);
    /* the holder: the first other rank of rank 0's node (else rank 1); the writer: the first
     * rank of another node (else the last rank); every rank finds its own node's, so rank 0's
     * choice is broadcast */
    holder = writer = -1;
    for (int r = 1; r < np; r++) {
        int same = rt_same_node(r);
        if (same && holder < 0)
            holder = r;
        if (!same && writer < 0)
            writer = r;
    }
    if (holder < 0)
        holder = 1;
    if (writer < 0 || writer == holder)
        writer = np - 1;
    int roles[2] = {holder, writer}; /* as rank 0 sees its node */
    MPI_Bcast(roles, 2, MPI_INT, 0, MPI_COMM_WORLD);
    holder = roles[0];
    writer = roles[1];
    if (rt_rank == 0)
        printf("poll_serves: rank 0 polls rank %d (%s), rank %d (%s) writes rank 0\n", holder,
               rt_same_node(holder) ? "same node" : "other node", writer,
               rt_same_node(writer) ? "same node" : "other node");
    rt_each_flavor(run);
    return rt_finish("poll_serves");
}
