#pragma once

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

// The planning wait at a server running batches of exactly `batch`, each
// taking `batch_ms`, with Poisson requests (rho = rate batch_ms /
// (1000 batch)). Batch 1 is the exact M/D/1 (MD1WaitMs). From batch 2 the
// batches arrive as Erlang-b gaps, far more regular than Poisson:
// RoundWaitMs, which bounds the simulated p99.5 of that E_b/D/1 queue from
// above for b = 2, 4, 8 and rho = 0.1 ... 0.9 (docs/scheduling.md,
// "Shared planning rules"), where the exact M/D/1 would be 2x to ten times too
// pessimistic.
// The least k with P(N > k) <= tail for N ~ Poisson(mean): the batch that
// takes a duty cycle's arrivals at the planning tail. 0 for mean <= 0.
int PoissonQuantile(double mean, double tail);

//
// With burst_tail > 0 (SharedRules.burst_bound), the burst bound as well:
// when a batch's time brings at most `batch` arrivals at that tail
// (PoissonQuantile(rho batch, burst_tail) <= batch), the work-conserving
// dispatcher takes them all in the next batch and a request waits at most
// one batch: the wait is then at most batch_ms.
double FixedBatchWaitMs(double rho, double batch_ms, int batch,
                        double tail = kQueueingTail, double burst_tail = 0);

}  // namespace tessera
