/* SPDX-License-Identifier: MIT */
/*
 * A model of idmint's worker-id lease protocol, checked by spin
 * (tests/model/test_model.sh; docs/ARCHITECTURE.md, "The lease protocol's
 * model").
 *
 * One worker id, two processes and a coordinator (etcd, ZooKeeper,
 * PostgreSQL or the file directory: each keeps, per worker id, a holder, an
 * expiry and a mark). The first process is the one things happen to: it
 * claims, renews (at most RENEWS times), gives up waiting for a renewal
 * (which the coordinator may then apply late, after a later one, or never),
 * mints, releases with its exact final mark, or crashes (kill -9: nothing
 * released) and claims again; its wall clock steps (STEPS steps of one
 * unit, back or forward). The second claims the worker id once it is free
 * and mints; its wall clock is behind, with, or ahead of the first's.
 * Requests and answers arrive late (any time later) or not at all; a
 * process may pause anywhere, also between its deadline check and its tick
 * read (each a step of its own: FAULTS H2).
 *
 * Time is discrete: `now` is real time, moved on by the clock process up
 * to TMAX. The processes' monotonic clocks run with real time; a drift
 * between them and the coordinator's is folded into SKEW: the coordinator
 * may free a claim up to SKEW before its expiry (a clock that runs fast).
 * A tick is a reading of the minter's wall clock. Abstracted away, as not
 * bearing on the rules: several worker ids (claims of different ids never
 * interact), sequence numbers within a tick (a tick minted by one process
 * only is enough), the generator's state file (a restart here starts from
 * the coordinator's mark, which is the weaker case).
 *
 * The rules, each removed in turn by the test (-DNO_R1 ... -DNO_R4):
 *   R1 the send-time deadline: a renewal's (or claim's) deadline is its SEND
 *      time plus the TTL less the margin (src/lease/lease.c: the keeper
 *      feeds the guard deadlines measured from when the renewal was sent);
 *      removed, from the answer's arrival.
 *   R2 the margin: MARGIN (= SKEW) off the TTL (idm_lease_opts.margin_ms);
 *      removed, none.
 *   R3 marks only rise: the coordinator keeps the larger of its mark and a
 *      renewal's (etcd's compare-and-raise in one transaction, PostgreSQL's
 *      GREATEST, the file record's raise); removed, a renewal's mark
 *      replaces it, and one applied late lowers it.
 *   R4 start above the previous mark: a new holder mints only ticks above
 *      the mark its claim read (idm_snowflake_opts.after_ms,
 *      idm_lease_wait_mark); removed, from its clock.
 * Kept always: a generator mints only ticks at or below its limit (the mark
 * of its last answered renewal, never lowered: the guard's mark), strictly
 * above its last tick; and a renewal applies only while the coordinator
 * holds the process's claim.
 *
 * Two properties, two assertions:
 *   lease  a process that passes its deadline check holds its claim at the
 *          coordinator: it stops minting before its claim could have been
 *          freed. R1 and R2 keep it.
 *   ids    no tick of the worker id is minted twice (by two processes, or
 *          by one process and its restart). R3 and R4 keep it.
 * With the lease assertion left out (-DNO_LEASE_ASSERT), ids hold with R1
 * and R2 both removed: the marks are a second wall behind the deadline.
 */

#define N 2    /* the coordinator's and the clock's branches name each */
#ifndef TTL
#define TTL 3
#endif
#ifndef TMAX
#define TMAX 3
#endif
#define SKEW 1
#ifndef W
#define W 2            /* the largest wall clock offset, either way */
#endif
#ifndef STEPS
#define STEPS 1
#endif
#ifndef CLAIMS
#define CLAIMS 2
#endif
#ifndef CRASHES
#define CRASHES 1
#endif

#ifdef NO_R2
#define MARGIN 0
#else
#define MARGIN SKEW
#endif

#define MAX(a, b) ((a) > (b) -> (a) : (b))

/* real time */
byte now;
byte steps = STEPS;
byte claims = CLAIMS;
byte crashes = CRASHES;
#ifndef RENEWS
#define RENEWS 2
#endif
byte renews = RENEWS;   /* renewals the first process sends in all */

/* the coordinator's record of the worker id */
byte holder;            /* 0: free; else the claim's number (a fencing token) */
byte expiry;            /* when it frees the claim (up to SKEW early) */
byte cmark;             /* the recorded mark */
byte ngen;              /* claims granted so far */

/* One minted tick is watched (chosen nondeterministically when it is
 * minted: any tick may be the one, so checking the watched one checks them
 * all, at a fraction of the states of a table of every tick): watch is it
 * plus 1 (0: none chosen yet). Minting it again is the violation. */
byte watch;

/* one request and one answer in flight per process */
#define RQ_NONE 0
#define RQ_CLAIM 1
#define RQ_RENEW 2
byte rq[N];             /* RQ_* */
byte rq_c[N];           /* the claim a renewal is for */
byte rq_mark[N];        /* the mark it asks for: send wall + TTL */
bool an[N];             /* an answer arrived */
bool an_ok[N];
byte an_c[N];           /* a claim's answer: its number */
byte an_prev[N];        /* and the mark it read */
/* A renewal the first process gave up waiting for (its request timed out)
 * may still be applied, late, after a later one: its claim and mark. */
byte late_c;
byte late_mark;

/* each process */
byte woff[N];           /* wall clock offset, stored + W (0 .. 2W) */
byte c[N];              /* the claim held (0: none) */
byte deadline[N];       /* mints only while now < deadline */
byte limit[N];          /* mints only ticks <= limit */
byte floor_[N];         /* mints only ticks > floor_ (R4) */
byte last[N];           /* the last tick minted, + 1 (0: none) */
byte send_now[N];       /* the request's send time, real (monotonic) */
byte send_wall[N];
bool checked[N];        /* passed the deadline check, tick not read yet */

#define WALL(i) (now + woff[i] >= W -> now + woff[i] - W : 0)

active proctype clock()
{
end:
    do
    :: atomic { now < TMAX -> now++ }
    :: atomic { steps > 0 ->
        steps--;
        if
        :: woff[0] > 0 -> woff[0]--
        :: woff[0] < 2 * W -> woff[0]++
        fi }
    od
}

/* The coordinator applies a request (any time after it was sent, or never:
 * the request lost), or frees an expired claim. */
inline apply(i)
{
    if
    :: rq[i] == RQ_CLAIM && holder == 0 ->
        ngen++;
        holder = ngen;
        expiry = now + TTL;
        an_c[i] = ngen;
        an_prev[i] = cmark;
        cmark = MAX(cmark, rq_mark[i]);
        an_ok[i] = true
    :: rq[i] == RQ_CLAIM && holder != 0 -> an_ok[i] = false
    :: rq[i] == RQ_RENEW && holder == rq_c[i] ->
        expiry = now + TTL;
#ifdef NO_R3
        cmark = rq_mark[i];
#else
        cmark = MAX(cmark, rq_mark[i]);
#endif
        an_ok[i] = true
    :: rq[i] == RQ_RENEW && holder != rq_c[i] -> an_ok[i] = false
    fi;
    if
    :: an[i] = true       /* answered (read by the process any time later) */
    :: skip               /* the answer lost */
    fi;
    rq[i] = RQ_NONE
}

active proctype coordinator()
{
end:
    do
    :: atomic { holder != 0 && now + SKEW >= expiry -> holder = 0 }
    :: atomic { rq[0] != RQ_NONE -> apply(0) }
    :: atomic { late_c != 0 ->           /* the late renewal applied */
        if
        :: holder == late_c ->
            expiry = MAX(expiry, now + TTL);
#ifdef NO_R3
            cmark = late_mark;
#else
            cmark = MAX(cmark, late_mark);
#endif
        :: else -> skip
        fi;
        late_c = 0; late_mark = 0 }
    :: atomic { late_c != 0 -> late_c = 0; late_mark = 0 }   /* or lost */
    :: atomic { rq[1] != RQ_NONE -> apply(1) }
    od
}

/* Release with the exact final mark: the last tick minted (idm_lease_close
 * after the generator's close; nothing is minted after it). */
inline release()
{
    if
    :: holder == c[i] -> holder = 0;
        if
        :: last[i] > 0 -> cmark = MAX(last[i] - 1, floor_[i])
        :: else -> cmark = MAX(cmark, floor_[i])   /* nothing minted */
        fi
    :: else -> skip
    fi
}

inline forget()
{
    c[i] = 0; deadline[i] = 0; limit[i] = 0; floor_[i] = 0; last[i] = 0;
    rq[i] = RQ_NONE; an[i] = false; an_ok[i] = false; an_c[i] = 0; an_prev[i] = 0;
    rq_c[i] = 0; rq_mark[i] = 0; send_now[i] = 0; send_wall[i] = 0; checked[i] = false
}

/* Send a request: its send time, on both clocks, is kept. */
inline send(kind)
{
    send_now[i] = now;
    send_wall[i] = WALL(i);
    rq_c[i] = c[i];
    rq_mark[i] = send_wall[i] + TTL;
    rq[i] = kind
}

/* A renewal's (or claim's) deadline: R1, from its send, or from the answer. */
#ifdef NO_R1
#define DEADLINE (now + TTL - MARGIN)
#else
#define DEADLINE (send_now[i] + TTL - MARGIN)
#endif

/* A claim's answer: the claim, its deadline, its mark, and (R4) the
 * previous holder's mark to start above. */
inline claimed()
{
    if
    :: an_ok[i] ->
        c[i] = an_c[i];
        deadline[i] = DEADLINE;
        limit[i] = send_wall[i] + TTL;
#ifdef NO_R4
        floor_[i] = 0;
#else
        floor_[i] = an_prev[i];
#endif
    :: else -> skip
    fi;
    an[i] = false; an_ok[i] = false
}

/* The deadline check, on the monotonic clock (the guard's first test). */
inline check()
{
#ifndef NO_LEASE_ASSERT
    assert(holder == c[i]);   /* lease: the coordinator still holds it */
#endif
    checked[i] = true
}

/* The tick read, after the check (a pause may come between): minted only
 * above the floor, at or below the limit, above the last tick. */
inline read_tick()
{
    t = WALL(i);
    if
    :: t > floor_[i] && t <= limit[i] && t + 1 > last[i] ->
        if
        :: watch == 0 -> watch = t + 1      /* watch this tick */
        :: watch == 0 -> skip               /* or not */
        :: watch == t + 1 -> assert(watch != t + 1)  /* ids: minted twice */
        :: watch != 0 && watch != t + 1 -> skip
        fi;
        last[i] = t + 1
    :: else -> skip    /* refused: below its floor, past its mark, or the
                          clock went back */
    fi;
    checked[i] = false;
    t = 0
}

/* Process 0, the holder to whom things happen: it claims, renews whenever
 * it likes (late answers, lost ones), mints, releases or crashes (kill -9:
 * nothing released), then may claim again (a restart); its wall clock
 * steps. */
proctype first()
{
    byte i = 0, t;
end:
    do
    :: atomic { c[i] == 0 && rq[i] == RQ_NONE && !an[i] && claims > 0 ->
        claims--; send(RQ_CLAIM) }
    :: atomic { c[i] == 0 && an[i] -> claimed() }
    :: atomic { c[i] != 0 && rq[i] == RQ_NONE && !an[i] && renews > 0 ->
        renews--; send(RQ_RENEW) }
    :: atomic { rq[i] == RQ_RENEW && late_c == 0 ->   /* timed out */
        late_c = rq_c[i]; late_mark = rq_mark[i]; rq[i] = RQ_NONE }
    :: atomic { c[i] != 0 && an[i] ->
        if
        :: an_ok[i] ->
            deadline[i] = DEADLINE;
            limit[i] = MAX(limit[i], send_wall[i] + TTL)
        :: else -> forget()   /* the claim is gone: stop; claim again later */
        fi;
        an[i] = false; an_ok[i] = false }
    :: atomic { c[i] != 0 && !checked[i] && now < deadline[i] -> check() }
    :: atomic { checked[i] -> read_tick() }
    :: atomic { c[i] != 0 && !checked[i] -> release(); forget() }
    :: atomic { crashes > 0 && c[i] != 0 -> crashes--; forget() }
    od
}

/* Process 1, the next holder: claims the worker id once it is free and
 * mints under it until its deadline; it must never mint a tick process 0
 * minted. Its wall clock is fixed, at an offset chosen at the start. */
proctype second()
{
    byte i = 1, t;
end:
    do
    :: atomic { c[i] == 0 && rq[i] == RQ_NONE && !an[i] && claims > 0 ->
        claims--; send(RQ_CLAIM) }
    :: atomic { c[i] == 0 && an[i] -> claimed() }
    :: atomic { c[i] != 0 && !checked[i] && now < deadline[i] -> check() }
    :: atomic { checked[i] -> read_tick() }
    od
}

init
{
    atomic {
        woff[0] = W;
        woff[1] = W;
        if
        :: woff[1] = W - 1   /* the second's wall clock behind the first's, */
        :: woff[1] = W       /* with it, */
        :: woff[1] = W + 1   /* or ahead */
        fi;
        run first();
        run second()
    }
}
