#pragma once

#include <vector>

namespace tessera {

// Queueing waits the policies plan with (queueing_check): how long a
// request waits for the batches ahead of it under Poisson arrivals, at a
// tail quantile. Three servers:
//  * RoundWaitMs: a time-shared gpulet whose dispatcher merges a burst into
//    the next batch up to a cap (gpulet, greedy, sbp, ideal);
//  * MD1WaitMs: one request per service (batch 1, exact M/D/1);
//  * FixedBatchWaitMs: batches of exactly b (igniter, las, inss: their
//    batch size is also the dispatcher's cap).
//
// The M/D/1 distribution is exact (Erlang's / Crommelin's formula, with u =
// w/s):
//   P(W <= w) = (1 - rho) sum_{k=0}^{floor(u)} (rho (k - u))^k / k!
//                                              * exp(rho (u - k))
// evaluated in long double while rho u <= 16, where the alternating sum is
// still well conditioned. Beyond, the tail continues from there as
// exp(-g u), g the positive root of rho (e^g - 1) = g (the Cramer-Lundberg
// decay rate of the M/D/1 wait, which the tail reaches long before).
//
// Why exact: the approximations used before (a light-traffic "at most one
// batch ahead" form and the heavy-traffic exponential) both missed the
// light-load tail. At rho = 0.24 the exact p99.5 wait is 1.9 s where the
// light-traffic form said 0.98 s, and iGniter's plans of that kind
// violated their SLOs at light loads in simulation.

// The tail the queueing checks plan for: a request may wait longer than
// the planned wait with probability 0.5 %. Planning at the 99th
// percentile left no margin under the 1 % violation budget: the
// simulated violations of plans made that way reached 1-2 % at light
// loads, chiefly where collection and queueing are a large part of the
// SLO (docs/scheduling.md, "Planning tail").
constexpr double kQueueingTail = 0.005;

// P(W > wait_ms) with utilisation `rho` and service time `service_ms`;
// 1 at rho >= 1, 0 for rho <= 0. At wait 0 it is rho.
double MD1WaitTailProbability(double rho, double service_ms, double wait_ms);

// The (1 - tail) quantile of the wait: the least w with
// P(W > w) <= tail; 0 when rho <= tail, +inf at rho >= 1. For the default
// tail it interpolates a table built once (relative error < 0.1 %), as the
// duty-cycle searches call it in their inner loop.
double MD1WaitMs(double rho, double service_ms, double tail = kQueueingTail);

// The planning wait of a time-shared gpulet whose dispatcher merges
// queued requests into the next batch up to each model's cap (the caps
// of GpuletSchedule): the larger of a light-traffic form (an arrival finds
// the round busy with probability rho and then waits a uniform residual
// of it, s (1 - tail / rho) once rho > tail; a burst does not queue
// further rounds, it joins the next batch) and the heavy-traffic M/D/1
// form (about exponential: ln(1 / tail) rho s / (2 (1 - rho))); +inf at
// rho >= 1. Validated against the simulator's dispatcher: the plans made
// with it hold <= 1 % violations (docs/scheduling.md).
double RoundWaitMs(double rho, double round_ms, double tail = kQueueingTail);
// Its tail: the larger of rho (1 - w / s) for w < s and
// exp(-2 (1 - rho) w / (rho s)); 1 at rho >= 1. At RoundWaitMs(rho, s,
// tail) it is `tail`.
double RoundWaitTailProbability(double rho, double round_ms, double wait_ms);

// The least k with P(N > k) <= tail for N ~ Poisson(mean): the batch that
// takes a duty cycle's arrivals at the planning tail. 0 for mean <= 0.
int PoissonQuantile(double mean, double tail);

// The bulk-service queue of a fixed-batch server (SharedRules.
// bulk_queue_wait): Poisson requests, `arrivals_per_batch` = lambda t of
// them per batch time t on average, and a work-conserving dispatcher that
// starts a batch of min(queue, cap) requests whenever the server is free
// (FIFO), every batch taking t (the planned L(cap); a smaller batch is
// faster, so this bounds it from above). It returns an upper bound on
// P(T > sigma t), T a request's sojourn (wait plus its own batch):
//  * the leftover Z = (X - cap)^+ at a batch's start (X: the queue then)
//    follows Lindley's recursion Z' = (Z + A - cap)^+, A ~ Poisson(lambda
//    t), so Lundberg's inequality bounds it: P(Z >= z) <= exp(-theta z),
//    theta > 0 the root of lambda t (e^theta - 1) = theta cap;
//  * an arrival finds the server busy with probability at most
//    min(1, lambda t) (at most one batch starts per request), at a
//    uniform point v t of the batch (all batches take t), with Z + N(v)
//    requests ahead, N(v) ~ Poisson(lambda t v) those that arrived since
//    the batch started; it leaves with the j-th next batch, j =
//    ceil((Z + N(v) + 1) / cap), at T = (1 - v + j) t; so T > sigma t iff
//    Z + N(v) >= cap floor(sigma - 1 + v);
//  * an arrival to an idle server leaves after t.
// The integral over v is Gauss-Legendre on the two pieces where the floor
// is constant. 1 when lambda t >= cap (unstable) and 0 for sigma >= 1 when
// lambda t = 0.
//
// Why: RoundWaitMs charges a fixed-batch server as an M/D/1 queue of whole
// batches (decay 2 (1 - rho) / (rho t) per ms), but a batch takes up to
// `cap` waiting requests at once, so the wait's tail decays about `cap`
// times faster (theta cap / t). At cap 8 and rho 0.7 the heavy-traffic
// p99.5 wait is 6.2 batch times; this bound puts it at 1.7 (a simulated
// queue: 1.5). Checked against simulated queues in queue_wait_test.cc.
double BulkQueueSojournTail(double arrivals_per_batch, int cap, double sigma);
// The planning wait from that bound: (q - 1) t, q the least sigma with
// BulkQueueSojournTail(rho cap, cap, sigma) <= tail (to 1e-4 relative);
// +inf at rho >= 1. A check `t + W <= SLO` then holds iff the bound on
// P(T > SLO) is within the tail. For the default tail and caps up to 128
// it interpolates a table built once per cap (relative error < 1 %).
double BulkQueueWaitMs(double rho, double batch_ms, int cap,
                       double tail = kQueueingTail);

// The largest queue BatchQueueLateFraction models before lumping the rest
// (its cost grows as the cube of the states).
constexpr int kBatchQueueMaxStates = 512;
// The most regular arrivals BatchQueueLateFraction models (Erlang-k gaps).
constexpr int kBatchQueueMaxSpacing = 4;

// A model alone on a partition, served by the work-conserving dispatcher:
// whenever the partition is free and requests wait, it starts a batch of
// min(queue, cap) of them (FIFO), and a batch of k takes batch_ms[k - 1]
// (cap = batch_ms.size(); a latency below a smaller batch's is raised to
// it, as no batch finishes sooner than a smaller one). Requests arrive
// as a Poisson stream of rate_rps. Returns the fraction of requests whose
// sojourn (wait plus their own batch) exceeds sojourn_ms.
//
// Unlike BulkQueueSojournTail, which charges every batch the time of a full
// one, each batch here takes its own latency, so a lightly loaded server
// whose batches are mostly small is not charged for full ones. Computed
// from the queue at a batch's start, a Markov chain (Q' = Q - min(Q, cap)
// + A, A ~ Poisson(lambda s(min(Q, cap)))) solved exactly over its states
// up to where every arrival is late, or where a queue whose every batch
// takes s(cap) has probability below 1e-12 (Lundberg's bound), whichever
// comes first; the rest is lumped and counted late. A request that arrives u
// into a batch of b with l requests left behind it, and n ~ Poisson(lambda u)
// before it since, is the (l + n + 1)-th in the queue: it leaves with the j-th
// next batch (every batch before its own is full), and its own holds those of
// it that remain plus those who arrive until it starts, up to the cap.
// The integral over u is Gauss-Legendre. Checked against simulated queues
// in queue_wait_test.cc. 1 when the server is unstable (lambda s(cap) >=
// cap) or batch_ms[0] > sojourn_ms; 0 with no requests or batches that
// take no time.
//
// `arrival_spacing` k >= 2 (SharedRules.round_robin_arrivals): the server
// is one of k equal replicas that a round robin feeds from one Poisson
// stream of k rate_rps, so its gaps are Erlang-k, far more regular than
// Poisson. The chain then also carries the stream's phase since the
// server's last arrival (k phases per arrival), and a tagged arrival
// restarts the phases. Its cost grows as k^3, so a spacing above
// kBatchQueueMaxSpacing is planned as that one (less regular, so no fewer
// late).
//
// `stop_above`: the computation may stop, returning a value above it, as
// soon as the late fraction is known to exceed it (a check against a tail
// needs no more).
double BatchQueueLateFraction(double rate_rps, std::vector<double> batch_ms,
                              double sojourn_ms, int arrival_spacing = 1,
                              double stop_above = 1);

// The serving dispatcher's exec_margin_fraction (Dispatcher::Options): it
// predicts every batch at 1.1 times its estimate.
constexpr double kDispatcherExecMargin = 1.1;

// The batch queue of BatchQueueLateFraction as the serving dispatcher runs
// it (SharedRules.lone_queue_expiry): a request that cannot meet its
// deadline is expired before it takes any of the server's time, and a batch
// leaves only with requests that meet their deadlines. Modelled at the
// arrival: the p-th request waiting behind a batch with r ms left leaves
// with the jb-th next batch (jb = ceil(p / cap), every one ahead full) as
// its z-th (z = p - (jb - 1) cap), and is admitted only while
//   r + (jb - 1) s(cap) + exec_margin s(z) <= sojourn_ms
// (the dispatcher's own check, at its margin); the others leave unserved
// and are the late ones. The queue at a batch's start is then at most the
// ceiling at r = 0, so the chain is finite at any load (no instability: an
// overloaded server turns away its excess) and is solved exactly
// (StationaryByGth), the admissions during a batch by the pieces of u over
// which the ceiling is constant. Erlang-k gaps (`arrival_spacing`) as in
// BatchQueueLateFraction.
//
// Why: the plain batch queue serves every request, so a late one delays
// all behind it; the dispatcher drops it instead. Against the simulator's
// dispatcher on the V100 data at cap 1 (vgg19 at SLO 3x and 5x, ssd at 3x,
// resnet50 at 10x; Poisson and Erlang-2, -3 gaps; 60 s per point, late
// fractions between 0.4 % and 2 %), this one is within 0.85x to 1.25x of
// the simulated late fraction where the plain queue overstates it 1.1x to
// 6x. At cap 1 the model is the dispatcher's rule itself (a request whose
// start is known at its arrival). From cap 2 it understates it: 0.45x to
// 0.85x at cap 2, 0.55x at cap 3, 0.15x at cap 8, because the dispatcher also
// sends a smaller batch when the oldest request could not wait for a full
// one, which this does not model, and a backlog of small batches then
// drops more. So the planners use it at cap 1 only (and the shared solver
// ExpiringBatchQueueLateFraction from cap 2 on a whole GPU).
// 1 when even a lone request cannot meet the sojourn; 0 with no requests.
double DispatchedQueueLateFraction(double rate_rps,
                                   std::vector<double> batch_ms,
                                   double sojourn_ms, int arrival_spacing = 1,
                                   double exec_margin = kDispatcherExecMargin);

// The points of ExpiringBatchQueueLateFraction's grid of ages.
constexpr int kExpiringQueueGrid = 64;

// The lone model's queue exactly as the serving dispatcher runs it
// (Dispatcher: one batch in flight, estimates equal to batch_ms at
// `exec_margin`), at any cap. Whenever the partition is free the
// dispatcher expires every request that could not meet its deadline even
// alone (age > a1 = sojourn - margin s(1)), then starts the largest batch,
// up to min(queue, cap), whose predicted completion meets the oldest
// request's deadline. Every batch it starts meets every deadline in it, so
// the late requests are the expired ones.
//
// A Markov chain over the oldest waiting request's age a at each batch
// start, on a grid of `grid` steps over [0, a1]. The arrivals after the
// oldest one are a fresh stream (Poisson, or Erlang-k gaps for
// `arrival_spacing` k), since every earlier decision depended only on
// arrivals up to the oldest's; so a alone is the state: behind the oldest
// wait N ~ floor(Poisson(mu a) / k) requests, the batch takes min(N + 1,
// cap, the deadline's limit), and the next oldest is the first one left
// (its age a + s - G, G its arrival's offset) or the first arrival
// during the batch, after which expiry drops every arrival older than a1.
// Against the Dispatcher itself (queue_wait_test.cc), at caps 2-8: within
// 20 % (plus sampling noise) where L grows with the batch (vgg19, ssd),
// where the plain batch queue overstates 2x-6x and
// DispatchedQueueLateFraction understates; 1.2x-1.6x above it where L is
// flat. At kExpiringQueueGrid steps within 6 % of a 400-step grid near a
// 1 % late share.
// 1 when even a lone request cannot meet the sojourn; 0 with no requests.
double ExpiringBatchQueueLateFraction(
    double rate_rps, std::vector<double> batch_ms, double sojourn_ms,
    int arrival_spacing = 1, double exec_margin = kDispatcherExecMargin,
    int grid = kExpiringQueueGrid);

// A lone partition's late fraction as igniter and las check it: the
// dispatcher's queue (DispatchedQueueLateFraction) with `expiry`
// (SharedRules.lone_queue_expiry) at cap 1, the plain one
// (BatchQueueLateFraction, which may stop above `stop_above`) otherwise.
// The shared solver uses ExpiringBatchQueueLateFraction from cap 2 on a
// whole GPU instead (SharedRules.lone_queue_dispatcher).
double LoneQueueLateFraction(bool expiry, double rate_rps,
                             std::vector<double> batch_ms, double sojourn_ms,
                             int arrival_spacing, double stop_above);

// The planning wait at a server running batches of exactly `batch`, each
// taking `batch_ms`, with Poisson requests (rho = rate batch_ms /
// (1000 batch)). Batch 1 is the exact M/D/1 (MD1WaitMs). From batch 2 the
// batches arrive as Erlang-b gaps, far more regular than Poisson:
// RoundWaitMs, which bounds the simulated p99.5 of that E_b/D/1 queue from
// above for b = 2, 4, 8 and rho = 0.1 ... 0.9 (docs/scheduling.md,
// "Shared planning rules"), where the exact M/D/1 would be 2x to ten times too
// pessimistic.
//
// With burst_tail > 0 (SharedRules.burst_bound), the burst bound as well:
// when a batch's time brings at most `batch` arrivals at that tail
// (PoissonQuantile(rho batch, burst_tail) <= batch), the work-conserving
// dispatcher takes them all in the next batch and a request waits at most
// one batch: the wait is then at most batch_ms.
// With `bulk_queue` (SharedRules.bulk_queue_wait), batches from 2 up are
// planned with BulkQueueWaitMs instead (and no burst bound, which it
// subsumes); batch 1 stays the exact M/D/1.
//
// `arrival_spacing` k >= 2 (SharedRules.round_robin_arrivals): the server
// is one of several that a round robin feeds from one Poisson stream, and
// every gap between two of its requests spans at least k gaps of that
// stream (MinRoundRobinSpacings). `rho` is then lambda batch_ms / (k
// batch), lambda the whole stream's rate: the load of a server fed every
// k-th request exactly (Erlang-k gaps), which for equal replicas is each
// one's own load. At batch 1 that server is an E_k/D/1 queue, planned with
// RoundWaitMs (which bounds E_b/D/1 from b = 2 up, as above), and the real
// one waits no longer: its gaps are at least those of the E_k stream, and
// Lindley's recursion only shortens waits as gaps grow. From batch 2 the
// spacing changes nothing (the forms above already bound it).
double FixedBatchWaitMs(double rho, double batch_ms, int batch,
                        double tail = kQueueingTail, double burst_tail = 0,
                        bool bulk_queue = false, int arrival_spacing = 1);

}  // namespace tessera
