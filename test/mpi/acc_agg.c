/*
 * acc_agg.c - accumulates held back and sent together (RMA_AGGREGATE) keep the standard's
 * default ordering (rar, raw, war, waw) and their values: every rank runs, on its own slot
 * of every other rank's window, a long pseudo-random mix of MPI_Accumulate (one element or
 * several, contiguous or strided, MPI_SUM, MPI_BXOR and MPI_REPLACE), MPI_Raccumulate,
 * MPI_Fetch_and_op, MPI_Get_accumulate, MPI_Compare_and_swap and small puts to a separate
 * area, with no flush in between, and checks every fetched value against the sequential
 * program. One location sees one-element calls (which may take network atomics) right after
 * multi-element ones (which go to the target's agent, held back), so the paths must keep
 * issue order between them. Each epoch ends with lock/unlock, lock_all/flush, fence or
 * PSCW; then the origin reads its slots back and the target checks the puts' bytes.
 */
#include "rmatest.h"

#include <stdint.h>

#define NEL    32  /* int64 elements of one origin's slot */
#define NPUT   256 /* bytes of one origin's put area */
#define STEPS  400 /* calls per target per epoch */
#define ROUNDS 3   /* epochs per mode */

enum { M_LOCK, M_LOCK_ALL, M_FENCE, M_PSCW, M_NMODES };
static const char *mode_name[] = {"lock", "lock_all+flush", "fence", "pscw"};

static int me, np, steps = STEPS, passive; /* passive: a lock or lock_all epoch */
static MPI_Win win;
static char *mem;
static MPI_Datatype every_other; /* 2 int64, stride 2 elements */

/* the model of one target's slot, and of the put area */
typedef struct model {
    int64_t el[NEL];
    unsigned char put[NPUT];
    unsigned seed;
} model_t;

static size_t slot_off(int origin)
{
    return (size_t)origin * (NEL * sizeof(int64_t) + NPUT);
}

static unsigned next(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 16;
}

static int64_t apply(int64_t t, int64_t o, MPI_Op op)
{
    return op == MPI_SUM ? t + o : op == MPI_BXOR ? t ^ o : o;
}

/* One call to target t, checked against m; returns the fetched values that differ. */
static int step(model_t *m, int t)
{
    MPI_Aint base = (MPI_Aint)slot_off(me);
    unsigned k = next(&m->seed) % 16, i = next(&m->seed) % (NEL - 4);
    int64_t v[4], r[4] = {0}, c;
    int bad = 0;
    MPI_Op op = k % 3 == 0 ? MPI_BXOR : k == 4 || k == 8 ? MPI_REPLACE : MPI_SUM;

    for (int j = 0; j < 4; j++)
        v[j] = (int64_t)(next(&m->seed) % 1000) - 300;
    switch (k) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4: /* one element */
        MPI_OK(MPI_Accumulate(v, 1, MPI_INT64_T, t, base + 8 * i, 1, MPI_INT64_T, op, win));
        m->el[i] = apply(m->el[i], v[0], op);
        break;
    case 5:
    case 6:
    case 7:
    case 8: { /* 2..4 contiguous elements */
        int n = 2 + (int)(k - 5) % 3;
        MPI_OK(MPI_Accumulate(v, n, MPI_INT64_T, t, base + 8 * i, n, MPI_INT64_T, op, win));
        for (int j = 0; j < n; j++)
            m->el[i + j] = apply(m->el[i + j], v[j], op);
        break;
    }
    case 9: /* strided: elements i and i + 2 */
        MPI_OK(MPI_Accumulate(v, 2, MPI_INT64_T, t, base + 8 * i, 1, every_other, MPI_SUM, win));
        m->el[i] += v[0];
        m->el[i + 2] += v[1];
        break;
    case 10: { /* request-based (passive target epochs only) */
        MPI_Request rq = MPI_REQUEST_NULL;
        if (passive)
            MPI_OK(MPI_Raccumulate(v, 2, MPI_INT64_T, t, base + 8 * i, 2, MPI_INT64_T, MPI_SUM, win,
                                   &rq));
        else
            MPI_OK(
                MPI_Accumulate(v, 2, MPI_INT64_T, t, base + 8 * i, 2, MPI_INT64_T, MPI_SUM, win));
        MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        m->el[i] += v[0];
        m->el[i + 1] += v[1];
        break;
    }
    case 11:
        MPI_OK(MPI_Fetch_and_op(v, r, MPI_INT64_T, t, base + 8 * i, MPI_SUM, win));
        bad += r[0] != m->el[i];
        m->el[i] += v[0];
        break;
    case 12:
        MPI_OK(MPI_Get_accumulate(v, 3, MPI_INT64_T, r, 3, MPI_INT64_T, t, base + 8 * i, 3,
                                  MPI_INT64_T, MPI_NO_OP, win));
        for (int j = 0; j < 3; j++)
            bad += r[j] != m->el[i + j];
        break;
    case 13:
        c = next(&m->seed) % 2 ? m->el[i] : m->el[i] + 1;
        MPI_OK(MPI_Compare_and_swap(v, &c, r, MPI_INT64_T, t, base + 8 * i, win));
        bad += r[0] != m->el[i];
        if (c == m->el[i])
            m->el[i] = v[0];
        break;
    default: { /* a small put to the put area: held back with the accumulates' requests */
        unsigned off = next(&m->seed) % (NPUT - 8), n = 1 + next(&m->seed) % 8;
        unsigned char b[8];
        for (unsigned j = 0; j < n; j++)
            b[j] = (unsigned char)next(&m->seed);
        MPI_OK(MPI_Put(b, (int)n, MPI_BYTE, t, base + 8 * NEL + off, (int)n, MPI_BYTE, win));
        memcpy(m->put + off, b, n);
        break;
    }
    }
    return bad;
}

/* Reads every slot back (its own lock_all epoch) and compares it with the models. */
static int read_back(model_t *models)
{
    int64_t got[NEL];
    int bad = 0;

    MPI_OK(MPI_Win_lock_all(0, win));
    for (int t = 0; t < np; t++) {
        if (t == me)
            continue;
        MPI_OK(MPI_Get(got, NEL, MPI_INT64_T, t, (MPI_Aint)slot_off(me), NEL, MPI_INT64_T, win));
        MPI_OK(MPI_Win_flush(t, win));
        for (int j = 0; j < NEL; j++)
            bad += got[j] != models[t].el[j];
    }
    MPI_OK(MPI_Win_unlock_all(win));
    return bad;
}

static void run(int mode, model_t *models)
{
    MPI_Group world, others;
    int fbad = 0, rbad = 0;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_excl(world, 1, &me, &others);
    passive = mode == M_LOCK || mode == M_LOCK_ALL;
    for (int round = 0; round < ROUNDS; round++) {
        if (mode == M_LOCK) {
            for (int t = 0; t < np; t++) {
                if (t == me)
                    continue;
                MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
                for (int s = 0; s < steps; s++)
                    fbad += step(&models[t], t);
                MPI_OK(MPI_Win_unlock(t, win));
            }
        } else {
            if (mode == M_LOCK_ALL)
                MPI_OK(MPI_Win_lock_all(0, win));
            else if (mode == M_FENCE)
                MPI_OK(MPI_Win_fence(0, win));
            else {
                MPI_OK(MPI_Win_post(others, 0, win));
                MPI_OK(MPI_Win_start(others, 0, win));
            }
            for (int s = 0; s < steps; s++)
                for (int t = 0; t < np; t++) {
                    if (t == me)
                        continue;
                    fbad += step(&models[t], t);
                    if (mode == M_LOCK_ALL && s == steps / 2)
                        MPI_OK(MPI_Win_flush(t, win));
                }
            if (mode == M_LOCK_ALL)
                MPI_OK(MPI_Win_unlock_all(win));
            else if (mode == M_FENCE)
                MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
            else {
                MPI_OK(MPI_Win_complete(win));
                MPI_OK(MPI_Win_wait(win));
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        rbad += read_back(models);
    }
    CHECK(fbad == 0, "%s: %d fetched values differ from the sequential program", mode_name[mode],
          fbad);
    CHECK(rbad == 0, "%s: %d elements read back differ from the sequential program",
          mode_name[mode], rbad);
    MPI_Group_free(&others);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    model_t *models;
    size_t bytes;
    const char *s = getenv("ACC_AGG_STEPS");

    rt_init(&argc, &argv);
    me = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (s != NULL && atoi(s) > 0)
        steps = atoi(s);
    MPI_Type_vector(2, 1, 2, MPI_INT64_T, &every_other);
    MPI_Type_commit(&every_other);
    bytes = slot_off(np);
    models = calloc((size_t)np, sizeof(*models));
    for (int t = 0; t < np; t++)
        models[t].seed = (unsigned)(me * 7919 + t * 104729 + 1);
    MPI_OK(MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    memset(mem, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int mode = 0; mode < M_NMODES; mode++)
        run(mode, models);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the put areas: every origin sends its model of this rank's */
    {
        unsigned char *sent = calloc((size_t)np, NPUT), *want = calloc((size_t)np, NPUT);
        for (int t = 0; t < np; t++)
            memcpy(sent + (size_t)t * NPUT, models[t].put, NPUT);
        MPI_Alltoall(sent, NPUT, MPI_BYTE, want, NPUT, MPI_BYTE, MPI_COMM_WORLD);
        for (int o = 0; o < np; o++)
            CHECK(o == me ||
                      memcmp(mem + slot_off(o) + 8 * NEL, want + (size_t)o * NPUT, NPUT) == 0,
                  "the put area of origin %d differs from its puts", o);
        free(sent);
        free(want);
    }
    MPI_OK(MPI_Win_free(&win));
    MPI_Type_free(&every_other);
    free(models);
    return rt_finish("acc_agg");
}
