/* SPDX-License-Identifier: MIT */
/*
 * A model of idmint's worker-id lease protocol, checked with spin.
 * tests/model/test_model.sh builds and runs it:
 *
 *   spin -DVIEW_UNIQUE -a lease.pml && cc -O1 -w -DSAFETY -o pan pan.c
 *   IDM_MODEL_OFF=R3 ./pan -m100000
 *
 * Knobs, read from the environment by init: IDM_MODEL_OFF (rules to turn
 * off, below: words split by commas or spaces), IDM_MODEL_MARGIN (R2's
 * margin, default MARGIN), IDM_MODEL_CLAIMS (claims granted in all, default
 * CLAIMS_MAX), IDM_MODEL_JUMP=1 (the coordinator's clock may jump forward
 * past an expiry once, FAULTS P6). One compile serves every run of a view.
 *
 * What is checked
 * ---------------
 * Processes mint ids (worker id, tick, sequence) under worker ids leased
 * from a coordinator. Two properties, each an assertion:
 *
 *   unique  no two generators ever mint on the same (worker id, tick). A
 *           generator is what one claim opens (an idm_snowflake under one
 *           lease): its own sequence tells its ids of one tick apart, so a
 *           tick used twice by one generator is fine, by two a duplicate.
 *   tenure  a holder's monotonic deadline check, the first check of every
 *           mint, passes only while the coordinator still holds its claim:
 *           by the time the coordinator lets the worker id go, the old
 *           holder, paused or cut off, has stopped.
 *
 * The rules, each a switch IDM_MODEL_OFF turns off:
 *
 *   R1  deadlines run from the renewal's send, not from its answer's
 *       arrival (lease.c renew_once and renewed: send_mono, send_wall; the
 *       claim's claim_mono and claim_wall in idm_lease_attach).
 *   R2  the margin: deadline = send + TTL - margin, the margin covering the
 *       clock-rate bound (lease.c lease_new, idm__lease_min_margin_ms,
 *       feed).
 *   R3  marks only rise, in two parts that can be turned off one at a time:
 *       R3w  every write of the coordinator's mark but the release's is a
 *            raise (etcd.c: put only if smaller; postgres.c: GREATEST;
 *            zookeeper.c: never below what is stored), and the keeper never
 *            sends a mark below the one recorded (renew_once: "if (mark <
 *            l->recorded)");
 *       R3r  a release records max(the previous holder's mark, the last
 *            tick minted) (idm_lease_close: final), never less.
 *   R4  a new holder starts strictly above the mark it read at claim
 *       (opts.after_ms; snowflake.c find_mark and start_above).
 *
 * and a switch that is not a rule of its own:
 *
 *   MARKGUARD  the generator refuses a tick above the mark its lease fed it
 *              (snowflake.c raise_limit, lease_limit_tick).
 *
 * What the runs show: with every rule, unique and tenure hold. Without R3,
 * without its release part alone, or without R4, two generators mint one
 * tick. Without R1 or R2, tenure fails: the old holder still passes its
 * deadline check after the coordinator let the worker id go (without R1
 * when an answer comes late; without R2 when the clocks drift). Uniqueness
 * itself does not rest on R1 or R2: a holder mints no tick above a mark the
 * coordinator recorded for its claim before the tick was minted, and every
 * later claim starts above that mark (R3, R4, and renewals and releases
 * fenced by the claim, which the model always keeps). R1 is a second line:
 * its wall deadline, from the send, lies below the mark, so without the
 * mark guard R1 still keeps ticks under the mark; only without both is a
 * duplicate minted. The deadlines keep the old holder stopped (tenure),
 * which nothing in uniqueness relies on.
 *
 * Views
 * -----
 * All of it at once is too large to explore (two processes, each with its
 * clocks, marks and requests in flight: some 20 million states for two
 * claims, and no end in sight). Each property depends on part of the state
 * only, so the model is compiled in one of two views, each keeping that
 * part exact and letting the rest do anything (every behaviour of the
 * protocol is one of the view's, so what holds in the view holds in the
 * protocol):
 *
 *   VIEW_UNIQUE  marks, ticks and wall readings; no clocks. The coordinator
 *                may let a claim go at ANY moment (any expiry, any
 *                coordinator clock: FAULTS P6 and more), and a holder mints
 *                with no monotonic deadline check at all, so at any moment
 *                its wall deadline and mark allow, however long it stalled
 *                before (FAULTS H2: a pause between the deadline check and
 *                the tick read is one such case). Checks unique.
 *   VIEW_TENURE  the monotonic and coordinator clocks, TTL, margin and
 *                drift; no marks, ticks or wall readings, which nothing in
 *                tenure looks at (a mint's later steps change nothing
 *                there). Checks tenure.
 *
 * The parts of idmint and their stand-ins
 * ---------------------------------------
 *   coordinator  one worker id's record at the coordinator (etcd.c,
 *                zookeeper.c, postgres.c, file.c): the claim holding it
 *                (its fencing token: etcd's lease and mod revision,
 *                ZooKeeper's session and czxid, PostgreSQL's generation,
 *                file://'s claim token), the time left before it expires
 *                on the coordinator's clock, the recorded mark (hwm/N, the
 *                row's mark, the marks file). A claim, a renewal and a
 *                release each apply atomically, as each is one transaction
 *                there.
 *   client(i)    one minting process (idmint next --lease, idmintd): its
 *                keeper thread (lease.c keeper, renew_once, idm_lease_close)
 *                and a minting thread (snowflake.c mint, read_guarded),
 *                interleaved at will. Any process may stall between any two
 *                of its steps for as long as it likes (SIGSTOP, a VM paused,
 *                a thread descheduled).
 *   env          time (VIEW_TENURE): a unit at a time for every clock, and
 *                the clocks' drift.
 *
 * One worker id: ids under different worker ids never collide and the
 * protocol keeps no state across worker ids, so a duplicate needs two
 * generators on one worker id; a claimant that finds it held gets no answer
 * ("no free worker id"), as if it had taken another.
 *
 * What is abstracted, and why that is sound
 * -----------------------------------------
 * - Wall readings are arbitrary: each reading (a claim's or a renewal's
 *   send, a mint) is any of 0 .. V-1, whatever came before. That covers any
 *   step of a process's wall clock back or forward, at any moment, of any
 *   size within the range, and any rate. A mark is the send's reading +
 *   LOOK: how far ahead does not matter when readings are arbitrary, only
 *   that it is ahead. The wall deadline is that mark too (no margin: for
 *   ticks a margin only moves the deadline lower).
 * - The table of minted (worker id, tick) pairs is kept for one tick: the
 *   verifier picks the watched tick first, among all ticks, and records
 *   which generator minted it. A duplicate is a fact about one tick and
 *   every tick is watched on some path, so this is the whole table, checked
 *   a column at a time.
 * - A mint's wall deadline check, mark check, compare-and-swap of the state
 *   word, the reload of the deadline after it and the hand-out are one
 *   step. idmint orders the CAS and that reload against the guard's drop
 *   (seq_cst: snowflake.c after_cas, idm_snowflake_guard_drop), so a close
 *   either sees a mint's state or the mint hands nothing out; the model
 *   takes that ordering as given (tests/unit/test_inflight.c checks it).
 * - The policy for a reading behind the generator's state is `refuse': a
 *   reading below the last tick minted, or not above the previous holder's
 *   mark, mints nothing. `logical' mints on the last tick again (one
 *   generator, so no new pair) and `wait' mints at a later reading; neither
 *   mints a pair a reading could not give, and every tick stays under the
 *   mark.
 * - Requests: at most NS in flight at once, all processes together; each
 *   may be applied at any later moment (a renewal applied after a newer
 *   one) or never (lost). An answer counts only while the process still
 *   waits for that request (lease.c drops late answers with the request),
 *   arrives at any later moment (VIEW_TENURE) or never: a process may give
 *   up waiting at any moment, which covers every timeout. In VIEW_UNIQUE an
 *   answer is taken as it is made: with no clocks nothing tells when it
 *   came, and a later arrival only delays a raise of the guard's mark.
 * - The keeper renews whenever it likes: every TTL/3, more often, never.
 * - A crash ends a process at any step: its generator stops, its claim
 *   stays at the coordinator until it expires, its requests in flight may
 *   still be applied, and the process may start again and claim anew. In
 *   VIEW_UNIQUE, where a claim may expire at any moment, a crash adds
 *   nothing a loss does not (the claim expires, the next renewal is told
 *   it is gone): CRASHES is 0 there. Resuming a saved claim after a restart
 *   (idm_lease_resume) is not modelled: it continues the same claim under
 *   the state file's mark, the claim file and the boot id, none of which is
 *   here.
 * - Clocks (VIEW_TENURE) count down: a process's time left before its
 *   guard's deadline, the coordinator's time left before the claim
 *   expires, the time since the pending request was sent. So the state is
 *   the same at every moment and the horizon is unbounded. Each unit of
 *   time moves every clock a unit; the coordinator's clock may also gain a
 *   unit on the processes' clock, at most once in any DRIFT_GAP units: that
 *   is the rate bound (a drift of up to 1 in 2), and only the difference
 *   between a holder's clock and the coordinator's matters (a holder's
 *   clock running slow and the coordinator's running fast both show as
 *   this gain; the other way round only stops the holder earlier). MARGIN,
 *   2, covers the drift over a deadline's reach; a margin of 1 does not
 *   (the test shows both).
 * - Marks (VIEW_UNIQUE) are capped at V - 1: a tick is minted only at a
 *   reading, so no reading tells marks at or above the highest apart.
 */

/* ---------------------------------------------------------------- views */

#if defined(VIEW_UNIQUE) == defined(VIEW_TENURE)
#error "compile with -DVIEW_UNIQUE or -DVIEW_TENURE"
#endif
#ifdef VIEW_UNIQUE
#define MARKS
#else
#define TIMED
#endif

/* ----------------------------------------------------------- parameters */

#define N 2               /* minting processes */
#define NS 2              /* requests in flight at once, all processes */
#define CLAIMS_MAX 3      /* claims the coordinator grants in all (default) */
#ifdef VIEW_UNIQUE
#define CRASHES 0
#else
#define CRASHES 1
#endif

#define TTL 4             /* lease TTL, in units of time (VIEW_TENURE) */
#define MARGIN 2          /* R2's margin (IDM_MODEL_MARGIN changes it) */
#define DRIFT_GAP 2       /* one unit of drift in any DRIFT_GAP units, at most */

#ifdef MARKS
#define V 3               /* wall readings: 0 .. V-1 */
#define LOOK 1            /* a mark is the send's reading + LOOK */
#define MARK_OF(r) ((r) + LOOK < V - 1 -> (r) + LOOK : V - 1)
#endif

/* ---------------------------------------------------------------- knobs */

c_decl {
    /* 1 if name is a word of IDM_MODEL_OFF (words split by spaces or
     * commas). */
    static int knob_off(const char *name)
    {
        const char *e = getenv("IDM_MODEL_OFF"), *p;
        size_t n = strlen(name);
        if (e == NULL)
            return 0;
        for (p = e; (p = strstr(p, name)) != NULL; p += n)
            if ((p == e || p[-1] == ' ' || p[-1] == ',') &&
                (p[n] == '\0' || p[n] == ' ' || p[n] == ','))
                return 1;
        return 0;
    }

    /* The number in environment variable var, or dflt if unset. */
    static int knob_num(const char *var, int dflt)
    {
        const char *e = getenv(var);
        return e != NULL && *e != '\0' ? atoi(e) : dflt;
    }
}

/* The rules in force and the knobs: set once by init, constant after. */
bool r1, r2, r3w, r3r, r4, mguard;
bool jump;                /* IDM_MODEL_JUMP=1: the coordinator's clock jumps */
byte margin;              /* IDM_MODEL_MARGIN, MARGIN if unset */
byte claims;              /* IDM_MODEL_CLAIMS, CLAIMS_MAX if unset */

/* R3w: a mark written over the recorded one. */
#define RAISE(old, m) (r3w && (old) > (m) -> (old) : (m))

/* ------------------------------------------------------------ the state */

#define RQ_CLAIM 1
#define RQ_RENEW 2
#define RQ_RELEASE 3

#define AN_OK 1
#define AN_LOST 2

/* The keeper (lease.c): no claim, a claim sent, holding, a renewal sent.
 * The generator may mint while holding or renewing. */
#define K_IDLE 0
#define K_CLAIMING 1
#define K_HELD 2
#define K_RENEWING 3
#define LIVE(i) (kpc[i] == K_HELD || kpc[i] == K_RENEWING)

/* The coordinator's record of the worker id. */
byte holder;              /* the claim holding it, its fencing token; 0: none */
byte nclaim;              /* claims granted so far: ids 1 .. claims */
#ifdef TIMED
byte cleft;               /* its time left before expiry; 0: expired */
#endif
#ifdef MARKS
byte cmark;               /* the recorded mark */
#endif

/* Requests in flight: kind, sender, claim (fencing token), mark. */
byte rq_kind[NS];
byte rq_who[NS];
byte rq_c[NS];
#ifdef MARKS
byte rq_m[NS];
#endif

/* Each process's keeper and its claim's generator (lease.c struct idm_lease,
 * snowflake.c's guard). */
byte kpc[N];
byte cur[N];              /* the request waited for: its slot + 1; 0: none */
byte an_kind[N];          /* the answer to it, once it came */
byte an_c[N];
byte c[N];                /* the claim held */
#ifdef MARKS
byte an_prev[N];
byte swall[N];            /* the pending request's send: wall reading */
byte prevm[N];            /* the previous holder's mark, read at claim */
byte limit[N];            /* the guard's mark: no tick above it */
byte lastm[N];            /* the last tick minted; 0 before the first */
byte wdl[N];              /* the guard's wall deadline */
#endif
#ifdef TIMED
byte age[N];              /* monotonic time since the pending request's send */
byte rem[N];              /* monotonic time left before the guard's deadline */
#endif
byte crashes_left = CRASHES;

/* The clocks' drift (VIEW_TENURE). */
#ifdef TIMED
byte drift_wait;          /* units until the coordinator may gain again */
bool jumped;
#endif

/* The property. */
#ifdef MARKS
byte watch;               /* the watched tick */
byte wown;                /* the claim whose generator minted it; 0: none */
#endif

/* Scratch: set and cleared within one atomic step, so always 0 in a
 * state. */
byte tmp;
byte sl;
byte rd;
byte unique;
byte tenure;

/* ---------------------------------------------------------- coordinator */

/* R3w on the keeper's side: never ask for less than already recorded. */
#ifdef MARKS
#define RENEW_MARK(ci) (r3w && limit[ci] > MARK_OF(swall[ci]) -> limit[ci] : MARK_OF(swall[ci]))
#endif

/* The request waited for is over: forget it and its send. */
inline done(ci)
{
    cur[ci] = 0;
    an_kind[ci] = 0;
    an_c[ci] = 0;
#ifdef MARKS
    an_prev[ci] = 0;
    swall[ci] = 0;
#endif
#ifdef TIMED
    age[ci] = 0;
#endif
    skip
}

/* The generator is gone (lost, closed or crashed): its guard dropped, so a
 * mint in flight fails its next check. */
inline retire(ci)
{
    c[ci] = 0;
#ifdef TIMED
    rem[ci] = 0;
#endif
#ifdef MARKS
    prevm[ci] = 0;
    limit[ci] = 0;
    lastm[ci] = 0;
    wdl[ci] = 0;
#endif
    skip
}

/* The guard fed after a renewal (or the claim) that recorded mark tmp
 * (lease.c feed, idm_snowflake_guard: the mark is never lowered there). */
inline feed(ci)
{
#ifdef TIMED
    if
    :: r1 && age[ci] + (r2 -> margin : 0) < TTL ->
        rem[ci] = TTL - (r2 -> margin : 0) - age[ci]
    :: r1 && age[ci] + (r2 -> margin : 0) >= TTL ->
        rem[ci] = 0
    :: !r1 ->
        rem[ci] = TTL - (r2 -> margin : 0)       /* from the answer's arrival */
    fi;
#endif
#ifdef MARKS
    if
    :: r1 -> wdl[ci] = swall[ci] + LOOK
    :: else ->
        select (rd : 0 .. V - 1);               /* the reading at arrival */
        wdl[ci] = rd + LOOK;
        rd = 0
    fi;
    if
    :: tmp > limit[ci] -> limit[ci] = tmp
    :: else -> skip
    fi;
    tmp = 0;
#endif
    kpc[ci] = K_HELD
}

/* A process takes the answer to the request it waits for (lease.c: the
 * claim, idm_lease_open and idm_lease_attach; renew_once, renewed,
 * renew_failed). */
inline take(ci)
{
    if
    :: kpc[ci] == K_CLAIMING && an_kind[ci] == AN_OK ->
        /* A new generator, above the previous mark (R4, in the mint); its
         * guard fed with the claim as the first renewal: the mark recorded,
         * deadlines from the claim's send. */
        c[ci] = an_c[ci];
#ifdef MARKS
        prevm[ci] = an_prev[ci];
        tmp = RAISE(prevm[ci], MARK_OF(swall[ci]));
#endif
        feed(ci)
    :: kpc[ci] == K_RENEWING && an_kind[ci] == AN_OK ->
#ifdef MARKS
        tmp = RENEW_MARK(ci);
#endif
        feed(ci)
    :: kpc[ci] == K_RENEWING && an_kind[ci] == AN_LOST ->
        /* The coordinator says the claim is gone: the guard is dropped at
         * once, not at the deadline. */
        retire(ci);
        kpc[ci] = K_IDLE
    fi;
    done(ci)
}

/* The answer to the request in slot s, for process ci if it still waits
 * for it; in VIEW_UNIQUE taken at once. */
inline answer(s, ci, kind, cc, prev)
{
    if
    :: cur[ci] == s + 1 ->
        an_kind[ci] = kind;
        an_c[ci] = cc;
#ifdef MARKS
        an_prev[ci] = prev;
#endif
#ifndef TIMED
        take(ci)
#else
        skip
#endif
    :: else -> skip
    fi
}

#ifdef TIMED
#define EXPIRED (cleft == 0)
#define SET_EXPIRY cleft = TTL
#define CLEAR_EXPIRY cleft = 0
#else
#define EXPIRED false
#define SET_EXPIRY skip
#define CLEAR_EXPIRY skip
#endif

/* Apply the request in slot s, from process ci: one transaction. */
inline apply(s, ci)
{
    if
    :: rq_kind[s] == RQ_CLAIM ->
        /* The worker id free or expired: the claim takes it, returns the
         * previous mark and raises it to its own first mark. */
        if
        :: (holder == 0 || EXPIRED) && nclaim < claims ->
            nclaim++;
            holder = nclaim;
            SET_EXPIRY;
#ifdef MARKS
            answer(s, ci, AN_OK, holder, cmark);
            cmark = RAISE(cmark, rq_m[s])
#else
            answer(s, ci, AN_OK, holder, 0)
#endif
        :: else -> skip                         /* "no free worker id" */
        fi
    :: rq_kind[s] == RQ_RENEW ->
        /* Fenced by the claim: a renewal of a claim that is no longer the
         * holder changes nothing and says so. A claim that expired but was
         * not taken by another is renewed (PostgreSQL's UPDATE looks at the
         * generation, not the expiry) or refused (etcd's lease is gone). */
        if
        :: holder == rq_c[s] && !EXPIRED ->
            SET_EXPIRY;
#ifdef MARKS
            cmark = RAISE(cmark, rq_m[s]);
#endif
            answer(s, ci, AN_OK, 0, 0)
#ifdef TIMED
        :: holder == rq_c[s] && EXPIRED ->
            SET_EXPIRY;
#ifdef MARKS
            cmark = RAISE(cmark, rq_m[s]);
#endif
            answer(s, ci, AN_OK, 0, 0)
        :: holder == rq_c[s] && EXPIRED ->
            holder = 0;
            answer(s, ci, AN_LOST, 0, 0)
#endif
        :: holder != rq_c[s] ->
            answer(s, ci, AN_LOST, 0, 0)
        fi
    :: rq_kind[s] == RQ_RELEASE ->
        /* Fenced too: records the exact final mark and frees the id. */
        if
        :: holder == rq_c[s] ->
            holder = 0;
            CLEAR_EXPIRY;
#ifdef MARKS
            cmark = rq_m[s]
#else
            skip
#endif
        :: else -> skip
        fi
    fi;
    rq_kind[s] = 0;
    rq_who[s] = 0;
    rq_c[s] = 0;
#ifdef MARKS
    rq_m[s] = 0
#else
    skip
#endif
}

proctype coordinator()
{
end:
    do
    :: atomic { rq_kind[0] != 0 -> apply(0, rq_who[0]) }
    :: atomic { rq_kind[1] != 0 -> apply(1, rq_who[1]) }
#ifndef TIMED
    /* No clocks: a claim may expire at any moment. */
    :: atomic { holder != 0 -> holder = 0 }
#endif
    od
}

/* ------------------------------------------------------------------ time */

#ifdef TIMED
#define DEC(x) if :: x > 0 -> x-- :: else -> skip fi
/* A process's monotonic clock moves a unit: its guard's time left shrinks,
 * its pending request ages (under R1 only, and no further than a deadline
 * from its send could reach). */
#define MONO_TICK(j) \
    DEC(rem[j]); \
    if \
    :: r1 && (kpc[j] == K_CLAIMING || kpc[j] == K_RENEWING) && \
       age[j] + (r2 -> margin : 0) < TTL -> age[j]++ \
    :: else -> skip \
    fi

proctype env()
{
end:
    do
    /* A unit of time: every clock moves a unit. */
    :: atomic { DEC(cleft); MONO_TICK(0); MONO_TICK(1); DEC(drift_wait) }
    /* The coordinator's clock gains a unit on the processes'. */
    :: atomic { drift_wait == 0 && cleft > 0 -> drift_wait = DRIFT_GAP; cleft-- }
    /* FAULTS P6: the coordinator's clock jumps ahead past the expiry. */
    :: atomic { jump && !jumped -> jumped = true; cleft = 0 }
    od
}
#endif

/* ------------------------------------------------------------ processes */

#define FREESLOT (rq_kind[0] == 0 || rq_kind[1] == 0)

/* Put a request in a free slot; wait: the process waits for its answer. */
inline send(kind, cc, m, wait)
{
    if
    :: rq_kind[0] == 0 -> sl = 0
    :: else -> sl = 1
    fi;
    rq_kind[sl] = kind;
    rq_who[sl] = i;
    rq_c[sl] = cc;
#ifdef MARKS
    rq_m[sl] = m;
#endif
    if
    :: wait -> cur[i] = sl + 1
    :: else -> skip
    fi;
    sl = 0
}

/* The send's clock readings. */
inline stamp()
{
#ifdef TIMED
    age[i] = 0;
#endif
#ifdef MARKS
    select (tmp : 0 .. V - 1);
    swall[i] = tmp;
    tmp = 0
#else
    skip
#endif
}

proctype client(byte i)
{
end:
    do
    /* Claim (idm_lease_open): its first mark is the send's reading + the
     * lookahead; it stands as the first renewal. */
    :: atomic { kpc[i] == K_IDLE && FREESLOT && nclaim < claims ->
        stamp();
#ifdef MARKS
        tmp = MARK_OF(swall[i]);
        send(RQ_CLAIM, 0, tmp, true);
        tmp = 0;
#else
        send(RQ_CLAIM, 0, 0, true);
#endif
        kpc[i] = K_CLAIMING }

    /* Renew (keeper, renew_once). */
    :: atomic { kpc[i] == K_HELD && FREESLOT ->
        stamp();
#ifdef MARKS
        tmp = RENEW_MARK(i);
        send(RQ_RENEW, c[i], tmp, true);
        tmp = 0;
#else
        send(RQ_RENEW, c[i], 0, true);
#endif
        kpc[i] = K_RENEWING }

#ifdef TIMED
    /* The answer arrives, at any moment after it was made. */
    :: atomic { an_kind[i] != 0 -> take(i) }
#endif

    /* No answer in time: the claim failed; the renewal failed "unknown, try
     * again" and the guard keeps its deadlines. */
    :: atomic { kpc[i] == K_CLAIMING -> done(i); kpc[i] = K_IDLE }
    :: atomic { kpc[i] == K_RENEWING -> done(i); kpc[i] = K_HELD }

    /* Close (idm_lease_close): the keeper stopped, the guard dropped, the
     * state read, the release sent with the exact final mark; its answer
     * changes nothing here. */
    :: atomic { kpc[i] == K_HELD && FREESLOT ->
#ifdef MARKS
        tmp = (r3r && prevm[i] > lastm[i] -> prevm[i] : lastm[i]);
        send(RQ_RELEASE, c[i], tmp, false);
        tmp = 0;
#else
        send(RQ_RELEASE, c[i], 0, false);
#endif
        retire(i);
        kpc[i] = K_IDLE }

#ifdef TIMED
    /* Mint, its first check (read_guarded): the monotonic deadline. The
     * claim must still stand at the coordinator. */
    :: atomic { LIVE(i) && rem[i] > 0 ->
        tenure = (holder == c[i] && cleft > 0);
        assert(tenure);
        tenure = 0 }
#endif

#ifdef MARKS
    /* Mint, the rest (read_guarded, mint, raise_limit, after_cas): read the
     * wall clock, check the wall deadline, start above the previous mark,
     * refuse a tick above the guard's mark, move the state, hand out. */
    :: atomic { LIVE(i) ->
        select (rd : 0 .. V - 1);
        if
        :: rd < wdl[i] ->
            tmp = lastm[i];
            if
            :: r4 && tmp < prevm[i] + 1 -> tmp = prevm[i] + 1
            :: else -> skip
            fi;
            if
            :: rd >= tmp && (!mguard || rd <= limit[i]) ->
                if
                :: rd == watch ->
                    unique = (wown == 0 || wown == c[i]);
                    assert(unique);
                    unique = 0;
                    wown = c[i]
                :: else -> skip
                fi;
                lastm[i] = rd
            :: else -> skip
            fi;
            tmp = 0
        :: else -> skip
        fi;
        rd = 0 }
#endif

    /* Crash: the process is gone at once; it may start again and claim. */
    :: atomic { crashes_left > 0 && kpc[i] != K_IDLE ->
        crashes_left--;
        retire(i);
        done(i);
        kpc[i] = K_IDLE }
    od
}

init
{
    atomic {
        c_code {
            now.r1 = !knob_off("R1");
            now.r2 = !knob_off("R2");
            now.r3w = !knob_off("R3") && !knob_off("R3w");
            now.r3r = !knob_off("R3") && !knob_off("R3r");
            now.r4 = !knob_off("R4");
            now.mguard = !knob_off("MARKGUARD");
            now.jump = knob_num("IDM_MODEL_JUMP", 0) != 0;
            now.margin = (uchar)knob_num("IDM_MODEL_MARGIN", MARGIN);
            now.claims = (uchar)knob_num("IDM_MODEL_CLAIMS", CLAIMS_MAX);
        };
#ifdef MARKS
        select (watch : 0 .. V - 1);
#endif
        run coordinator();
#ifdef TIMED
        run env();
#endif
        run client(0);
        run client(1)
    }
}
