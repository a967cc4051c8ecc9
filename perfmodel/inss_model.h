#pragma once

namespace tessera {

// InSS's interference-aware latency model (Zhang et al., seeds/digests/
// inss.md Sec. 2), times in ms. Of the execution latency (Sec. 2.2)
//   t_inf = t_d + t_s + t_r + t_f,  t_r = o_r(b, rho) (1 + sum of the
//   co-runners' interference)
// Tessera keeps o_r and the co-runner term: o_r(b, rho) is the profile's
// L(b, p) (the paper's LWR over (b, rho C_k) on a homogeneous cluster:
// a regression over measured cells, here the monotone interpolation of
// perfmodel/latency_model.h), and the co-runner term is the summed excess
// (factor - 1) of the configured interference model, which, like the
// paper's alpha_cache sum l_i', adds up over co-runners. Switched off
// explicitly because profiles do not carry their inputs: the PCIe terms
// t_d, t_f (no measured B_k; profiles time the whole batch) and the
// per-kernel scheduling delay t_s (no kernel counts n_i,k).
//
// Task latency (Eq. 2) is evaluated for the worst task the digest names
// (pitfall 4): the first task of a batch, arriving behind a backlog G of
// queued tasks, with arrivals evenly spaced at rate lambda (InSS's own
// environment).
class InssModel {
 public:
  // t_inf: solo latency times 1 + the co-runners' summed excess.
  static double ExecMs(double solo_ms, double interference_excess) {
    return solo_ms * (1.0 + interference_excess);
  }
  // Eq. 2 for the first task of a batch of `batch` with `backlog` tasks
  // ahead of it:
  //  * W = backlog + 1 >= batch: it waits for the batch in flight
  //    (exec_k) and ceil(W / batch) executions, its own included;
  //  * W < batch: it waits for the later of the GPU becoming free and
  //    the batch filling ((batch - W) / lambda), then one execution.
  // exec_k, the remaining time of the model's own batch in flight
  // (pitfall 3), is what is left of the previous batch when this one
  // fills: max(0, t_inf - batch / lambda) in steady state.
  static double WorstTaskMs(int batch, double rate_rps, double exec_ms,
                            double backlog);
  // Capacity b / t_inf in requests per second.
  static double CapacityRps(int batch, double exec_ms) {
    return exec_ms > 0 ? 1000.0 * batch / exec_ms : 0;
  }
};

}  // namespace tessera
