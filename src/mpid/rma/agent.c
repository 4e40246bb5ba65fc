/*
 * agent.c - the progress agent's thread (see agent.h).
 */
#define _GNU_SOURCE
#include "config.h"

#include "mpid/rma/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif
#include <stdio.h>
#include <string.h>

#include "mpid/rma/env.h"
#include "mpid/rma/grow.h"
#include "sync/wait.h"
#include "windows/segment.h"
#include "windows/win.h"

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t agent_thread;
/* The agent's doorbell: a pipe it sleeps on (agent_rfd) that this process and its peers
 * write to (agent_wfd; peers duplicate it with pidfd_getfd, or open it anew through
 * /proc/<pid>/fd, which an eventfd does not allow). Nonblocking both ends: a write to a full
 * pipe fails, and the agent is being woken anyway. -1: not started. */
static int agent_rfd = -1, agent_wfd = -1;

/* Closes both ends of the doorbell: the agent is not started any more. */
static void doorbell_close(void)
{
    if (agent_wfd >= 0) {
        close(agent_rfd);
        close(agent_wfd);
    }
    agent_rfd = agent_wfd = -1;
}

static _Atomic int agent_stopping;
static _Atomic int agent_bound;  /* the agent runs bound to a core of its own */
static _Atomic int agent_placed; /* ... as far as it can: rma_agent_start waits for it */

/* peers' doorbells (agent_wfd) duplicated here, one per process */
typedef struct kick_ent {
    int pid, fd;
} kick_ent_t;
static kick_ent_t *kicks;
static int nkicks, kicks_cap;

static _Atomic int agent_again; /* a request was left for later (rma_agent_retry) */
/* 1 from before the agent's last look at the network (net_arm) until its sleep ends */
static _Atomic int agent_asleep;

void rma_agent_retry(void)
{
    atomic_store_explicit(&agent_again, 1, memory_order_relaxed);
}

/* Ordered with net_arm: the waker leaves its requests under the worker's lock, which
 * net_arm takes after agent_asleep is set; so either net_arm sees them, or the waker sees
 * agent_asleep. */
void rma_agent_wake(void)
{
    uint64_t one = 1;

    if (agent_wfd >= 0 && atomic_load_explicit(&agent_asleep, memory_order_seq_cst) &&
        write(agent_wfd, &one, sizeof(one)) < 0) {
        /* the doorbell is full: the agent is being woken anyway */
    }
}

/* ------------------------------------------------------------------ jobs */

/* Jobs leave the queue under jobs.lock only, taken by the agent (to run the oldest) or by
 * the thread that needs one done (to run it itself): whoever unlinks a job runs it, and a
 * job the agent took is waited for. The count the idle agent polls is on a line of its
 * own, raised once the job is linked and the lock let go: polled on the list's line, that
 * line went back to the agent between each of a submission's five writes (an MPI_Rput of
 * 64 KiB spent ~0.5 us there). It may read -1 a moment, when another thread takes the job
 * first (job_unlink); that is not "no job", and a look under the lock finds what is
 * there. */
static struct __attribute__((aligned(64))) { /* on the type: its size is padded too */
    pthread_mutex_t lock;
    rma_agent_job_t *head, **tail;
} jobs = {PTHREAD_MUTEX_INITIALIZER, NULL, &jobs.head};
static struct __attribute__((aligned(64))) {
    _Atomic int queued;
    _Atomic unsigned submitted; /* ever: a stream of them keeps the agent watching */
} jobs_count;
_Static_assert(sizeof(jobs) % 64 == 0 && sizeof(jobs_count) == 64, "lines of their own");
/* 1 while the agent loops without sleeping (it looks at the queue every turn); a thread
 * that queues a job wakes it otherwise. Cleared before the agent's last look at the queue
 * before a sleep, so that either it sees the job or the submitter sees it cleared. */
static _Atomic int agent_awake;

static void job_unlink(rma_agent_job_t *job)
{
    rma_agent_job_t **pp = &jobs.head;

    while (*pp != job)
        pp = &(*pp)->next;
    *pp = job->next;
    if (jobs.tail == &job->next)
        jobs.tail = pp;
    atomic_fetch_sub_explicit(&jobs_count.queued, 1, memory_order_relaxed);
    atomic_store_explicit(&job->state, RMA_JOB_RUNNING, memory_order_relaxed);
}

static void job_run(rma_agent_job_t *job)
{
    job->by_agent = agent_wfd >= 0 && pthread_equal(pthread_self(), agent_thread);
    job->run(job);
    atomic_store_explicit(&job->state, RMA_JOB_DONE, memory_order_release);
}

/* Takes the oldest queued job of owner (NULL: of any owner) off the queue, or NULL. */
static rma_agent_job_t *job_take(const void *owner)
{
    rma_agent_job_t *job = NULL;

    if (atomic_load_explicit(&jobs_count.queued, memory_order_acquire) == 0)
        return NULL;
    pthread_mutex_lock(&jobs.lock);
    for (rma_agent_job_t *j = jobs.head; j != NULL && job == NULL; j = j->next)
        if (owner == NULL || j->owner == owner)
            job = j;
    if (job != NULL)
        job_unlink(job);
    pthread_mutex_unlock(&jobs.lock);
    return job;
}

/* Runs the queued jobs of owner (NULL: every one), oldest first. 1 when it ran one. */
static int run_jobs(const void *owner)
{
    rma_agent_job_t *job;
    int ran = 0;

    while ((job = job_take(owner)) != NULL) {
        job_run(job);
        ran = 1;
    }
    return ran;
}

/* The agent is about to sleep: 1 when a job came in meanwhile (it must not sleep). */
static int jobs_before_sleep(void)
{
    atomic_store_explicit(&agent_awake, 0, memory_order_seq_cst);
    return atomic_load_explicit(&jobs_count.queued, memory_order_seq_cst) > 0;
}

int rma_agent_submit(rma_agent_job_t *job)
{
    uint64_t one = 1;

    if (agent_wfd < 0)
        return -1;
    job->next = NULL;
    atomic_store_explicit(&job->state, RMA_JOB_QUEUED, memory_order_relaxed);
    pthread_mutex_lock(&jobs.lock);
    *jobs.tail = job;
    jobs.tail = &job->next;
    pthread_mutex_unlock(&jobs.lock);
    atomic_fetch_add_explicit(&jobs_count.submitted, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&jobs_count.queued, 1, memory_order_seq_cst);
    if (!atomic_load_explicit(&agent_awake, memory_order_seq_cst) &&
        write(agent_wfd, &one, sizeof(one)) < 0) {
        /* the doorbell is full: the agent is being woken anyway */
    }
    return 0;
}

int rma_agent_job_test(rma_agent_job_t *job)
{
    int mine = 0, state = atomic_load_explicit(&job->state, memory_order_acquire);

    /* a job leaves QUEUED only under the lock, and never comes back: a waiter that polls
     * one the agent runs stays off the lock the agent's next take needs */
    if (state != RMA_JOB_QUEUED)
        return state == RMA_JOB_DONE;
    pthread_mutex_lock(&jobs.lock);
    if (atomic_load_explicit(&job->state, memory_order_relaxed) == RMA_JOB_QUEUED) {
        job_unlink(job);
        mine = 1;
    }
    pthread_mutex_unlock(&jobs.lock);
    if (mine)
        job_run(job);
    return atomic_load_explicit(&job->state, memory_order_acquire) == RMA_JOB_DONE;
}

void rma_agent_job_finish(rma_agent_job_t *job)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    while (!rma_agent_job_test(job))
        rma_backoff(&bo);
}

void rma_agent_job_drain(const void *owner)
{
    run_jobs(owner);
}

/* ------------------------------------------------------------------ the network */

/* the network the agent drives (rma_agent_progress_attach), or none */
static int (*net_progress)(void);
static int (*net_arm)(void);
static int net_fd = -1;

/* Empties the doorbell: 1 when it had rung. */
static int doorbell_drain(void)
{
    char buf[256];
    ssize_t n;
    int rang = 0;

    while ((n = read(agent_rfd, buf, sizeof(buf))) > 0) {
        rang = 1;
        if (n < (ssize_t)sizeof(buf))
            break;
    }
    return rang;
}

/* Peers' requests to move memory (the doorbell) are served between network progress calls. */
static void serve_kicks(void)
{
    int kicked = doorbell_drain();

    run_jobs(NULL); /* after the read: a job whose wake-up it consumed is run here */
    /* loaded before it is cleared: an exchange in every idle turn made the cache line it
     * shares with agent_bound and agent_awake, which every copy handed over reads, bounce
     * between the cores (a 128 KiB MPI_Rput + MPI_Wait took three times as long) */
    if (kicked || (atomic_load_explicit(&agent_again, memory_order_relaxed) &&
                   atomic_exchange_explicit(&agent_again, 0, memory_order_relaxed)))
        rma_win_foreach(rma_expose_serve);
}

void rma_agent_serve_moves(void)
{
    if (agent_wfd >= 0)
        serve_kicks();
}

/* How long the agent waits for the next job, in a stream of them, before it looks at the
 * network again: a job is taken within ~0.1 us, as a copy of 64 KiB (~1.5 us) needs to be,
 * and the network waits no more than this. */
#define AGENT_JOB_WATCH_NS 5000u

/* Runs the queued jobs; within spin ns of the last job submitted (*subs: the submissions
 * seen, *last: when the last was seen), first waits a moment for one. 1 when it ran one. */
static int jobs_watch(unsigned *subs, uint64_t *last, uint64_t spin)
{
    unsigned s = atomic_load_explicit(&jobs_count.submitted, memory_order_relaxed);

    if (s != *subs) {
        *subs = s;
        *last = rma_now_ns();
    } else if (*last != 0 && rma_now_ns() - *last < spin) {
        uint64_t until = rma_now_ns() + AGENT_JOB_WATCH_NS;
        for (int k = 1; atomic_load_explicit(&jobs_count.queued, memory_order_acquire) == 0; k++) {
            rma_cpu_relax();
            if (k % 64 == 0 && rma_now_ns() > until)
                break;
        }
    }
    return run_jobs(NULL);
}

/* How long the agent sleeps while an application thread drives the network: the first
 * nap, doubled while the thread is still at it, up to the longest. */
#define AGENT_ASIDE_MIN_NS 100000L
#define AGENT_ASIDE_MAX_NS 2000000L

/* An application thread drives the network itself (it waits inside librma or MPI_Barrier):
 * the agent sleeps on its doorbell alone and looks again after a nap, for as long as the
 * thread keeps at it. Woken by every message meanwhile, it would only take turns with that
 * thread at the worker, and where every core runs a rank, each wake-up takes the core of
 * one of them for tens of microseconds; so do frequent naps (a fetch_and_op over tcp,
 * ~21 us, took 27 with 0.2 ms naps and 23 with 2 ms). The cost: an operation that arrives
 * after the thread left waits for the end of the nap, at most AGENT_ASIDE_MAX_NS. *nap:
 * the next nap's length in ns. */
static void stand_aside(long *nap)
{
    struct pollfd fd = {agent_rfd, POLLIN, 0};
    struct timespec ts = {*nap / 1000000000L, *nap % 1000000000L};

    if (jobs_before_sleep() || ppoll(&fd, 1, &ts, NULL) > 0)
        serve_kicks();
    atomic_store_explicit(&agent_awake, 1, memory_order_relaxed);
    *nap = *nap < AGENT_ASIDE_MAX_NS / 2 ? 2 * *nap : AGENT_ASIDE_MAX_NS;
}

/* Drives the network until it has been idle for RMA_AGENT_SPIN_US and the worker is armed
 * (block), or until stopped (poll). Spinning briefly after activity keeps a stream of
 * requests from paying a wake-up (~60 us) each. */
static void drive_network(void)
{
    uint64_t last = rma_now_ns(), spin = (uint64_t)rma_env.agent_spin_us * 1000u, last_job = 0;
    unsigned subs = 0;
    long nap = AGENT_ASIDE_MIN_NS;

    while (!atomic_load_explicit(&agent_stopping, memory_order_acquire)) {
        int n = net_progress();
        if (jobs_watch(&subs, &last_job, spin)) {
            last = rma_now_ns();
            continue;
        }
        if (n > 0) {
            last = rma_now_ns();
            continue;
        }
        serve_kicks();
        if (n < 0 && rma_now_ns() - last_job < spin) {
            sched_yield(); /* the ranks drive the network, the jobs are still the agent's */
            continue;
        }
        if (n < 0) {
            stand_aside(&nap);
            last = rma_now_ns();
            continue;
        }
        nap = AGENT_ASIDE_MIN_NS;
        if (rma_env.agent == RMA_AGENT_POLL || rma_now_ns() - last < spin) {
            sched_yield();
            continue;
        }
        atomic_store_explicit(&agent_asleep, 1, memory_order_seq_cst);
        if (!jobs_before_sleep() && net_arm() == 0)
            return; /* asleep until agent_main's poll ends */
        atomic_store_explicit(&agent_asleep, 0, memory_order_relaxed);
        atomic_store_explicit(&agent_awake, 1, memory_order_relaxed);
    }
}

/* RMA_AGENT_CPU=auto: the cores (hwloc) none of whose CPUs a rank of this node may run
 * on, and all of whose CPUs the launcher (the parent process: MPICH's proxy) may: a job
 * started under taskset or numactl got those CPUs alone, and the agent must not run on
 * another job's core (`taskset -c 0 mpiexec` bound every agent to CPU 1). The agent of the
 * node's k-th rank takes the (k mod n)-th of them. 0 and the core's CPUs in *set, or -1
 * with the reason in why. */
static int free_core(cpu_set_t *set, const char **why)
{
#ifdef HAVE_HWLOC
    cpu_set_t used, job;
    hwloc_topology_t topo;
    hwloc_obj_t core = NULL;
    int rank, nfree = 0, pick, cpu;

    *why = "MPI_Init was not intercepted (no view of the node's ranks)";
    if (rma_locality_cpus(&used, sizeof(used), &rank) != 0)
        return -1;
    /* a parent outside our PID namespace is 0 (and the namespace's init 1): unknown, no
     * limit */
    if (getppid() > 1 && sched_getaffinity(getppid(), sizeof(job), &job) == 0)
        for (cpu = 0; cpu < CPU_SETSIZE; cpu++) /* outside the job: as if used */
            if (!CPU_ISSET(cpu, &job))
                CPU_SET(cpu, &used);
    *why = "hwloc cannot read the topology";
    if (hwloc_topology_init(&topo) != 0)
        return -1;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return -1;
    }
    /* pass 0 counts the free cores, pass 1 takes the (rank mod count)-th */
    for (int pass = 0, k = 0; pass < 2 && core == NULL; pass++) {
        hwloc_obj_t c = NULL;
        pick = nfree > 0 ? rank % nfree : 0;
        while ((c = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, c)) != NULL) {
            int busy = 0;
            hwloc_bitmap_foreach_begin(cpu, c->cpuset) busy |=
                cpu >= CPU_SETSIZE || CPU_ISSET(cpu, &used);
            hwloc_bitmap_foreach_end();
            if (busy)
                continue;
            if (pass == 0)
                nfree++;
            else if (k++ == pick) {
                core = c;
                break;
            }
        }
        if (nfree == 0)
            break;
    }
    if (core != NULL) {
        CPU_ZERO(set);
        hwloc_bitmap_foreach_begin(cpu, core->cpuset) CPU_SET(cpu, set);
        hwloc_bitmap_foreach_end();
    }
    hwloc_topology_destroy(topo);
    *why = "no core of the job's CPUs (the launcher's) is free of this node's ranks (or they "
           "are not bound)";
    return core != NULL ? 0 : -1;
#else
    (void)set;
    *why = "librma was built without hwloc";
    return -1;
#endif
}

int rma_agent_has_core(void)
{
    return atomic_load_explicit(&agent_bound, memory_order_relaxed);
}

/* A throwaway thread's binding to *arg: what the agent's would get (pthread_* error). */
static void *bind_try(void *arg)
{
    return (void *)(intptr_t)pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), arg);
}

void rma_agent_placement(char *buf, size_t len, int bind)
{
    const char *why = "RMA_AGENT_CPU=none";
    cpu_set_t set;
    pthread_t t;
    void *refused = NULL;
    int ok = 0;

    if (rma_env.agent == RMA_AGENT_OFF) {
        snprintf(buf, len, "none (RMA_AGENT=off)");
        return;
    }
    CPU_ZERO(&set);
    if (rma_env.agent_cpu >= 0 && rma_env.agent_cpu < CPU_SETSIZE) {
        CPU_SET(rma_env.agent_cpu, &set);
        ok = 1;
    } else if (rma_env.agent_cpu == -2) {
        ok = free_core(&set, &why) == 0;
    }
    if (ok && bind && pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
        ok = 0;
        why = "the binding was refused";
    } else if (ok && !bind && pthread_create(&t, NULL, bind_try, &set) == 0 &&
               (pthread_join(t, &refused), refused != NULL)) {
        ok = 0;
        why = "the binding would be refused: no CPU of the set is one this process may use";
    }
    if (!ok) {
        snprintf(buf, len, "unbound (%s)", why);
        return;
    }
    if (bind)
        atomic_store_explicit(&agent_bound, 1, memory_order_relaxed);
    size_t n = (size_t)snprintf(buf, len, "bound to CPU%s", CPU_COUNT(&set) > 1 ? "s" : "");
    for (int c = 0; c < CPU_SETSIZE && n < len; c++)
        if (CPU_ISSET(c, &set))
            n += (size_t)snprintf(buf + n, len - n, " %d", c);
}

static void *agent_main(void *arg)
{
    char where[256];

    (void)arg;
    rma_wait_no_mpi(); /* its waits (page moves) call no MPI: neither end the job nor probe */
    rma_agent_placement(where, sizeof(where), 1);
    atomic_store_explicit(&agent_placed, 1, memory_order_release);
    if (rma_env.verbose >= 1)
        fprintf(stderr, "librma: progress agent of process %d: %s\n", (int)getpid(), where);
    while (!atomic_load_explicit(&agent_stopping, memory_order_acquire)) {
        struct pollfd fds[2] = {{agent_rfd, POLLIN, 0}, {net_fd, POLLIN, 0}};
        int again = atomic_load_explicit(&agent_again, memory_order_relaxed);

        atomic_store_explicit(&agent_awake, 1, memory_order_relaxed);
        if (net_progress != NULL)
            drive_network();
        if (atomic_load_explicit(&agent_stopping, memory_order_acquire))
            break;
        /* 1 ms when a move request was left for later (rma_agent_retry) */
        if (!jobs_before_sleep() &&
            poll(fds, net_fd >= 0 && net_progress != NULL ? 2 : 1, again ? 1 : -1) < 0 &&
            errno != EINTR)
            break;
        atomic_store_explicit(&agent_asleep, 0, memory_order_relaxed);
        serve_kicks();
    }
    return NULL;
}

/* The child of a fork has no agent thread: it starts its own when it needs one. */
static void agent_forget(void)
{
    doorbell_close();
    for (int i = 0; i < nkicks; i++)
        close(kicks[i].fd);
    nkicks = 0;
    pthread_mutex_init(&agent_lock, NULL);
    /* the child has no agent and does no RMA for its parent: queued jobs are dropped, not
     * replayed into memory it may share with the target */
    pthread_mutex_init(&jobs.lock, NULL);
    for (rma_agent_job_t *j = jobs.head; j != NULL; j = j->next)
        atomic_store(&j->state, RMA_JOB_DONE);
    jobs.head = NULL;
    jobs.tail = &jobs.head;
    atomic_store(&jobs_count.queued, 0);
    atomic_store(&agent_bound, 0);
}

int rma_agent_start(void)
{
    static int atfork;
    sigset_t all, old;
    int fd, ends[2];

    pthread_mutex_lock(&agent_lock);
    if (agent_wfd >= 0)
        goto out;
    if (!atfork && pthread_atfork(NULL, NULL, agent_forget) == 0)
        atfork = 1;
    if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0)
        goto out;
    agent_rfd = ends[0];
    agent_wfd = ends[1];
    atomic_store(&agent_stopping, 0);
    /* the agent takes no signal meant for the application */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_store(&agent_placed, 0);
    if (pthread_create(&agent_thread, NULL, agent_main, NULL) != 0) {
        doorbell_close();
    } else {
        struct timespec nap = {0, 50000};
        pthread_setname_np(agent_thread, "rma-agent"); /* for top -H, ps -L, and tests */
        /* copies go to the agent only once it is bound (rma_agent_has_core): from the first
         * operation on, whatever the scheduler does with the new thread (no rma_backoff:
         * nothing here may end the job) */
        for (int n = 0; !atomic_load_explicit(&agent_placed, memory_order_acquire); n++)
            if (n < 100)
                sched_yield();
            else
                nanosleep(&nap, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
    fd = agent_wfd;
    pthread_mutex_unlock(&agent_lock);
    return fd;
}

void rma_agent_kick(int pid, int fd)
{
    uint64_t one = 1;
    int local = -1, kept = 0;

    pthread_mutex_lock(&agent_lock);
    for (int i = 0; i < nkicks && local < 0; i++)
        if (kicks[i].pid == pid)
            local = kicks[i].fd, kept = 1;
    if (local < 0 && (local = rma_seg_getfd(pid, fd)) >= 0 &&
        rma_grow(&kicks, &kicks_cap, nkicks, sizeof(*kicks), 8) == 0) {
        kicks[nkicks++] = (kick_ent_t){pid, local};
        kept = 1;
    }
    /* a failed write means the peer is gone or its doorbell is full: nothing to do */
    if (local >= 0 && write(local, &one, sizeof(one)) != sizeof(one))
        one = 0;
    if (local >= 0 && !kept)
        close(local);
    pthread_mutex_unlock(&agent_lock);
}

void rma_agent_stop(void)
{
    uint64_t one = 1;

    pthread_mutex_lock(&agent_lock);
    if (agent_wfd >= 0) {
        atomic_store_explicit(&agent_stopping, 1, memory_order_release);
        /* a full doorbell has rung already */
        if (write(agent_wfd, &one, sizeof(one)) == sizeof(one) || errno == EAGAIN)
            pthread_join(agent_thread, NULL);
        net_progress = NULL;
        net_arm = NULL;
        net_fd = -1;
        doorbell_close();
    }
    atomic_store(&agent_bound, 0);
    rma_agent_job_drain(NULL); /* none should be left: their windows were freed */
    for (int i = 0; i < nkicks; i++)
        close(kicks[i].fd);
    free(kicks);
    kicks = NULL;
    nkicks = kicks_cap = 0;
    pthread_mutex_unlock(&agent_lock);
}

int rma_agent_progress_attach(int fd, int (*progress)(void), int (*arm)(void))
{
    uint64_t one = 1;
    int efd;

    pthread_mutex_lock(&agent_lock);
    net_fd = fd;
    net_arm = arm;
    net_progress = progress;
    pthread_mutex_unlock(&agent_lock);
    efd = rma_agent_start();
    if (efd < 0) { /* no agent: a later start (a same-node move) must not drive a network
                      whose workers the caller destroys now */
        pthread_mutex_lock(&agent_lock);
        net_fd = -1;
        net_arm = NULL;
        net_progress = NULL;
        pthread_mutex_unlock(&agent_lock);
        return -1;
    }
    /* the agent may be asleep on its doorbell alone: wake it to take the network too */
    if (write(efd, &one, sizeof(one)) != sizeof(one))
        return 0;
    return 0;
}

void rma_agent_progress_detach(void)
{
    rma_agent_stop();
}
