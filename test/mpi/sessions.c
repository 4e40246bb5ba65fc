/*
 * sessions - RMA in a program of MPI sessions (MPI-4.0 chapter 11); the windows live on a
 * communicator made from the "mpi://WORLD" process set. For every flavor (the shared one
 * when the ranks share a node):
 *
 *   ring   a fence epoch of puts to the next rank and gets from the previous one, checked
 *          at the target and at the origin, and an accumulate of a derived type (librma
 *          asked MPI_COMM_SELF whether it was committed, which a program of sessions does
 *          not have: the job aborted); a put of a type never committed is MPI_ERR_TYPE
 *   count  a lock_all epoch in which every rank adds 1 to rank 0's counter with
 *          MPI_Fetch_and_op: the count and the fetched values are exact
 *   pscw   rank r exposes to r - 1 and accesses r + 1, each put checked
 *   send   MPI's progress rule, as in p2p_progress: rank 0 sends rank 1 1 MiB (MPI_Isend, a
 *          rendezvous) and then waits in MPI_Win_fence, or in MPI_Win_free, while rank 1
 *          receives the message before it makes its call
 *
 * SESSIONS_WORLD says what else the program does:
 *   (unset) nothing: no MPI_Init, no MPI_COMM_WORLD. librma's waits gave MPICH's progress
 *           its turn with MPI_Iprobe on MPI_COMM_WORLD, which such a program does not
 *           have: "send" hung in every topology.
 *   all     MPI_Init first and a window on MPI_COMM_WORLD (the transport starts there);
 *           every rank opens its session, its first window, and then calls MPI_Finalize,
 *           which ends the world model alone: the session, that window and the ones made
 *           after go on. librma's MPI_Finalize freed every window and ended its transport
 *           for both: the next call aborted ("not a valid window").
 *   half    as "all", but only the ranks of even world rank open a session; the others
 *           leave after MPI_Finalize, closing their connections, while the rest go on.
 * 2 to 4 ranks ("half": 4).
 */
#include "rmatest.h"

#define MSG (1 << 20)

static MPI_Comm comm;
static int nprocs;

static MPI_Win open_win(int flavor, MPI_Comm wcomm, int **mem)
{
    MPI_Win win;
    MPI_Aint bytes = 8 * sizeof(int);

    switch (flavor) {
    case RT_CREATE:
        *mem = calloc(8, sizeof(int));
        MPI_OK(MPI_Win_create(*mem, bytes, sizeof(int), MPI_INFO_NULL, wcomm, &win));
        break;
    case RT_ALLOCATE:
        MPI_OK(MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, wcomm, mem, &win));
        break;
    case RT_SHARED:
        MPI_OK(MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, wcomm, mem, &win));
        break;
    default: /* dynamic: every rank's region at displacement 0 (MPI_BOTTOM + its address) */
        *mem = calloc(8, sizeof(int));
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, wcomm, &win));
        MPI_OK(MPI_Win_attach(win, *mem, bytes));
        break;
    }
    memset(*mem, 0, (size_t)bytes);
    MPI_Barrier(wcomm);
    return win;
}

/* where rank t's int i lies in the window */
static MPI_Aint *disps;

static void exchange_disps(int flavor, int *mem)
{
    MPI_Aint mine = 0;

    if (flavor == RT_DYNAMIC)
        MPI_Get_address(mem, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, disps, 1, MPI_AINT, comm);
}

static MPI_Aint at(int flavor, int t, int i)
{
    return flavor == RT_DYNAMIC ? disps[t] + i * (MPI_Aint)sizeof(int) : i;
}

static void ring(int flavor, MPI_Win win, int *mem)
{
    int next = (rt_rank + 1) % nprocs, prev = (rt_rank + nprocs - 1) % nprocs;
    int val = 1000 + rt_rank, got = -1, two[2] = {4000 + rt_rank, 4000 + rt_rank};
    MPI_Datatype every_other;

    MPI_Type_vector(2, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    mem[1] = 2000 + rt_rank;
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Put(&val, 1, MPI_INT, next, at(flavor, next, 0), 1, MPI_INT, win));
    MPI_OK(MPI_Get(&got, 1, MPI_INT, prev, at(flavor, prev, 1), 1, MPI_INT, win));
    MPI_OK(
        MPI_Accumulate(two, 2, MPI_INT, next, at(flavor, next, 4), 1, every_other, MPI_SUM, win));
    MPI_OK(MPI_Win_fence(0, win));
    CHECK(mem[0] == 1000 + prev, "ring: put from rank %d read %d", prev, mem[0]);
    CHECK(got == 2000 + prev, "ring: get from rank %d read %d", prev, got);
    for (int i = 4; i < 8; i++)
        CHECK(mem[i] == (i % 2 == 0 ? 4000 + prev : 0), "ring: accumulate of rank %d: int %d is %d",
              prev, i, mem[i]);
    MPI_Type_free(&every_other);
    /* the communicator librma asks whether a type is committed comes from the session once
     * MPI_Finalize has ended MPI_Init's world: without one, every type passed as committed */
    MPI_Type_vector(2, 1, 2, MPI_INT, &every_other); /* not committed */
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    got = MPI_Put(two, 2, MPI_INT, next, at(flavor, next, 4), 1, every_other, win);
    MPI_OK(MPI_Win_unlock(next, win));
    MPI_Error_class(got, &val);
    CHECK(val == MPI_ERR_TYPE, "ring: a put of a type never committed gave class %d", val);
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL));
    MPI_Type_free(&every_other);
}

static void count(int flavor, MPI_Win win, int *mem)
{
    int one = 1, old = -1, all[4];

    MPI_Barrier(comm); /* nobody adds before rank 0 has read the ring */
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, at(flavor, 0, 2), MPI_SUM, win));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Allgather(&old, 1, MPI_INT, all, 1, MPI_INT, comm);
    if (rt_rank == 0) {
        int seen = 0;

        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win)); /* its memory, synchronized */
        CHECK(mem[2] == nprocs, "count: %d adds of 1 made %d", nprocs, mem[2]);
        MPI_OK(MPI_Win_unlock(0, win));
        for (int r = 0; r < nprocs; r++)
            if (all[r] >= 0 && all[r] < nprocs)
                seen |= 1 << all[r];
        CHECK(seen == (1 << nprocs) - 1, "count: fetched values are not 0..%d", nprocs - 1);
    }
}

static MPI_Group one_rank(int r)
{
    MPI_Group all, g;

    MPI_Comm_group(comm, &all);
    MPI_Group_incl(all, 1, &r, &g);
    MPI_Group_free(&all);
    return g;
}

static void pscw(int flavor, MPI_Win win, int *mem)
{
    int next = (rt_rank + 1) % nprocs, prev = (rt_rank + nprocs - 1) % nprocs;
    int val = 3000 + rt_rank;
    MPI_Group to = one_rank(next), from = one_rank(prev);

    MPI_OK(MPI_Win_post(from, 0, win));
    MPI_OK(MPI_Win_start(to, 0, win));
    MPI_OK(MPI_Put(&val, 1, MPI_INT, next, at(flavor, next, 3), 1, MPI_INT, win));
    MPI_OK(MPI_Win_complete(win));
    MPI_OK(MPI_Win_wait(win));
    CHECK(mem[3] == 3000 + prev, "pscw: put from rank %d read %d", prev, mem[3]);
    MPI_Group_free(&to);
    MPI_Group_free(&from);
}

/* rank 0 sends, then calls sync; rank 1 receives first; the others call sync */
static void send_then(int round, const char *what, unsigned char *msg, MPI_Win *win,
                      int (*sync)(MPI_Win *))
{
    MPI_Request req;
    int bad = 0;

    if (rt_rank == 0) {
        for (int i = 0; i < MSG; i++)
            msg[i] = (unsigned char)(i * 7 + round);
        MPI_OK(MPI_Isend(msg, MSG, MPI_BYTE, 1, round, comm, &req));
        MPI_OK(sync(win));
        MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        return;
    }
    if (rt_rank == 1) {
        memset(msg, 0, MSG);
        MPI_OK(MPI_Recv(msg, MSG, MPI_BYTE, 0, round, comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < MSG; i++)
            bad += msg[i] != (unsigned char)(i * 7 + round);
        CHECK(bad == 0, "%s: %d bytes of the message wrong", what, bad);
    }
    MPI_OK(sync(win));
}

static int fence(MPI_Win *win)
{
    return MPI_Win_fence(0, *win);
}

static int win_free(MPI_Win *win)
{
    return MPI_Win_free(win);
}

/* SESSIONS_WORLD set: MPI_Init and a fence epoch on a window of MPI_COMM_WORLD; with "half"
 * the ranks of odd world rank then leave (MPI_Finalize, exit) */
static void world_start(const char *world)
{
    int wrank, wsize, *mem, one = 1;
    MPI_Win win;

    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    /* 64 bytes: MPICH 4.0.2 misplaces the memory of sizes that are not multiples of 64 */
    MPI_OK(MPI_Win_allocate(64, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    *mem = 0;
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, (wrank + 1) % wsize, 0, 1, MPI_INT, MPI_SUM, win));
    MPI_OK(MPI_Win_fence(0, win));
    CHECK(*mem == 1, "world: the accumulate left %d", *mem);
    MPI_OK(MPI_Win_free(&win));
    if (strcmp(world, "half") == 0 && wrank % 2 == 1) {
        MPI_Finalize(); /* leaves: its connections close while the others go on */
        if (rt_fails)
            fprintf(stderr, "[world %d] %d checks failed\n", wrank, rt_fails);
        exit(rt_fails ? 1 : 0);
    }
}

int main(void)
{
    const char *world = getenv("SESSIONS_WORLD");
    MPI_Session session;
    MPI_Group group;
    MPI_Comm node;
    unsigned char *msg = malloc(MSG);
    int node_size, fails = 0, checks = 0, level = 0, world_up = world != NULL;

    if (world != NULL)
        world_start(world);
    MPI_OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    MPI_OK(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    if (world != NULL && strcmp(world, "half") == 0) { /* the even world ranks */
        MPI_Group all = group;
        int range[1][3] = {{0, 0, 2}};
        MPI_Group_size(all, &range[0][1]);
        range[0][1] -= 1;
        MPI_Group_range_incl(all, 1, range, &group);
        MPI_Group_free(&all);
    }
    MPI_OK(MPI_Comm_create_from_group(group, "librma.test.sessions", MPI_INFO_NULL,
                                      MPI_ERRORS_RETURN, &comm));
    MPI_Group_free(&group);
    MPI_Comm_rank(comm, &rt_rank);
    MPI_Comm_size(comm, &nprocs);
    MPI_Initialized(&level);
    CHECK(level == (world != NULL), "MPI_Initialized says %d", level);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    disps = calloc((size_t)nprocs, sizeof(*disps));
    for (int f = 0; f < RT_NFLAVORS && nprocs >= 2 && nprocs <= 4; f++) {
        MPI_Win win;
        int *mem;

        if (f == RT_SHARED && node_size != nprocs)
            continue; /* the ranks span nodes */
        win = open_win(f, comm, &mem);
        if (world_up) { /* the world model ends: this window lives on */
            world_up = 0;
            MPI_Finalize();
            MPI_Finalized(&level);
            CHECK(level == 1, "MPI_Finalized says %d after MPI_Finalize", level);
        }
        exchange_disps(f, mem);
        ring(f, win, mem);
        count(f, win, mem);
        MPI_Barrier(comm);
        pscw(f, win, mem);
        MPI_OK(MPI_Win_fence(0, win));
        send_then(2 * f, "send, fence", msg, &win, fence);
        MPI_OK(MPI_Win_fence(0, win));
        if (f == RT_DYNAMIC)
            MPI_OK(MPI_Win_detach(win, mem));
        send_then(2 * f + 1, "send, free", msg, &win, win_free);
        if (f == RT_CREATE || f == RT_DYNAMIC)
            free(mem);
    }
    CHECK(nprocs >= 2 && nprocs <= 4, "runs with 2 to 4 ranks, not %d", nprocs);
    if (world_up)
        MPI_Finalize();
    MPI_Allreduce(&rt_fails, &fails, 1, MPI_INT, MPI_SUM, comm);
    MPI_Allreduce(&rt_checks, &checks, 1, MPI_INT, MPI_SUM, comm);
    if (rt_rank == 0)
        printf("sessions: %d checks, %d failed\n", checks, fails);
    free(disps);
    free(msg);
    MPI_Comm_free(&node);
    MPI_Comm_free(&comm);
    MPI_OK(MPI_Session_finalize(&session));
    return fails ? 1 : 0;
}
