#include "scheduler/queue_wait.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>

namespace tessera {
namespace {

// Raises each batch time to at least the one before it: a larger batch
// never finishes sooner than a smaller one could.
void RaiseToMonotone(std::vector<double>* batch_ms) {
  for (size_t z = 1; z < batch_ms->size(); ++z) {
    (*batch_ms)[z] = std::max((*batch_ms)[z], (*batch_ms)[z - 1]);
  }
}

// The exact sum is evaluated while three bounds hold:
//  * rho u <= kExactLimit: its alternating terms grow like exp(2 rho u),
//    so long double keeps ~1e-13 absolute accuracy there (1e-7 at
//    rho u = 18, nothing at 24: checked against 60-digit arithmetic);
//  * u <= kMaxTerms, which bounds the cost for tiny rho;
//  * a tail above ~1e-8 (u <= ln(1e8) / g), so that the exponential
//    continuation starts from a value with digits left.
// The tail is exponential well before any of these points.
constexpr double kExactLimit = 8;
constexpr int kMaxTerms = 64;
constexpr double kLogTailFloor = 18.42;  // ln(1e8)

// ln k! for the terms of the exact sum.
const std::array<long double, kMaxTerms + 2>& LogFactorials() {
  static const auto* const table = [] {
    auto* t = new std::array<long double, kMaxTerms + 2>();
    for (size_t k = 1; k < t->size(); ++k) {
      (*t)[k] = (*t)[k - 1] + std::log(static_cast<long double>(k));
    }
    return t;
  }();
  return *table;
}

// P(W > u s), exact (Erlang's formula), for u <= kMaxTerms + 1.
double ExactTail(double rho, double u) {
  const auto& log_factorial = LogFactorials();
  const long double r = rho;
  const int n = static_cast<int>(std::floor(u));
  long double cdf = 0;
  for (int k = 0; k <= n; ++k) {
    const long double a = r * (u - k);  // >= 0
    if (k == 0) {
      cdf += std::exp(a);
    } else if (a > 0) {
      const long double magnitude =
          std::exp(k * std::log(a) - log_factorial[k] + a);
      cdf += (k % 2 == 0) ? magnitude : -magnitude;
    }
  }
  cdf *= 1 - r;
  return std::clamp(static_cast<double>(1 - cdf), 0.0, 1.0);
}

// Lundberg's exponent of Lindley's recursion Z' = (Z + A - cap)^+ with A ~
// Poisson(a), a < cap: the positive root of a (e^theta - 1) = theta cap.
// With cap 1 it is the decay rate g of the M/D/1 wait at rho = a.
double LundbergExponent(double a, int cap) {
  auto f = [a, cap](double th) { return a * std::expm1(th) - th * cap; };
  // f < 0 just above 0 (a < cap) and f grows without bound.
  double lo = 0, hi = 1;
  while (f(hi) < 0) {
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (f(mid) < 0 ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// The tail of one utilisation: the decay rate and hand-over point are
// computed once, then P(W > u s) for any u >= 0.
class Md1Tail {
 public:
  explicit Md1Tail(double rho) : rho_(rho) {
    const double g = LundbergExponent(rho, 1);
    g_ = g;
    u0_ = std::max(1.0,
                   std::min({kExactLimit / rho, static_cast<double>(kMaxTerms),
                             kLogTailFloor / g}));
    p0_ = ExactTail(rho, u0_);
  }
  double operator()(double u) const {
    if (u <= u0_) return ExactTail(rho_, u);
    return p0_ * std::exp(-g_ * (u - u0_));
  }

 private:
  double rho_, g_, u0_, p0_;
};

// The quantile in service times: the least u with P(W > u s) <= tail
// (to 1e-9 relative).
double QuantileInServiceTimes(double rho, double tail) {
  if (rho <= tail) return 0;
  const Md1Tail p(rho);
  double lo = 0, hi = 1;
  while (p(hi) > tail) {
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < 60 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (p(mid) > tail ? lo : hi) = mid;
  }
  return hi;
}

// The tails the planning rules use (SharedRules.queueing_tail and each
// family's) are few: each of the first kMaxTabulatedTails distinct ones
// gets a slot, and its quantiles are tabulated on first use (MD1WaitMs,
// BulkQueueWaitMs); any later tail is computed directly. Lock-free: a
// slot is claimed once and never changes.
constexpr int kMaxTabulatedTails = 8;

// The slot of `tail` (> 0), claiming a free one; -1 when all are taken.
int TabulatedTailSlot(double tail) {
  static std::array<std::atomic<double>, kMaxTabulatedTails>* const tails =
      new std::array<std::atomic<double>, kMaxTabulatedTails>();
  for (int i = 0; i < kMaxTabulatedTails; ++i) {
    std::atomic<double>& slot = (*tails)[i];
    double t = slot.load(std::memory_order_acquire);
    if (t == 0) {
      if (slot.compare_exchange_strong(t, tail, std::memory_order_acq_rel)) {
        return i;  // claimed
      }
      // Another thread claimed it first: `t` is now its tail.
    }
    if (t == tail) return i;
  }
  return -1;
}

// Builds T(args...) into `slot` on first use (a thread that loses the race
// discards its copy).
template <typename T, typename... Args>
const T& BuiltOnce(std::atomic<const T*>& slot, Args... args) {
  const T* t = slot.load(std::memory_order_acquire);
  if (t != nullptr) return *t;
  auto* built = new T(args...);
  if (slot.compare_exchange_strong(t, built, std::memory_order_acq_rel)) {
    return *built;
  }
  delete built;
  return *t;
}

// One tail's quantile, tabulated as q(rho) (1 - rho), which stays finite
// and smooth as rho -> 1 (heavy traffic: -> ln(1 / tail) / 2).
constexpr int kTableSize = 1024;

class Md1QuantileTable {
 public:
  explicit Md1QuantileTable(double tail) {
    for (int i = 0; i <= kTableSize; ++i) {
      const double rho = static_cast<double>(i) / kTableSize;
      values_[i] = i == kTableSize
                       ? 0.5 * std::log(1 / tail)
                       : QuantileInServiceTimes(rho, tail) * (1 - rho);
    }
  }
  double Quantile(double rho) const {
    const double x = rho * kTableSize;
    const int i = std::min(static_cast<int>(x), kTableSize - 1);
    const double f = x - i;
    return ((1 - f) * values_[i] + f * values_[i + 1]) / (1 - rho);
  }

 private:
  std::array<double, kTableSize + 1> values_;
};

// The table of `tail`, or null when it has no slot.
const Md1QuantileTable* Md1TableOf(double tail) {
  if (!(tail > 0)) return nullptr;
  const int slot = TabulatedTailSlot(tail);
  if (slot < 0) return nullptr;
  static std::array<std::atomic<const Md1QuantileTable*>,
                    kMaxTabulatedTails>* const tables =
      new std::array<std::atomic<const Md1QuantileTable*>,
                     kMaxTabulatedTails>();
  return &BuiltOnce((*tables)[slot], tail);
}

}  // namespace

double MD1WaitTailProbability(double rho, double service_ms, double wait_ms) {
  if (rho >= 1 - 1e-9) return 1.0;
  if (rho <= 0 || service_ms <= 0) return 0.0;
  const double u = std::max(0.0, wait_ms) / service_ms;
  if (u <= 1) return ExactTail(rho, u);  // one term, always exact
  return Md1Tail(rho)(u);
}

double MD1WaitMs(double rho, double service_ms, double tail) {
  if (rho >= 1 - 1e-9) return std::numeric_limits<double>::infinity();
  if (rho <= tail || service_ms <= 0) return 0.0;
  // The last table interval interpolates towards the heavy-traffic limit;
  // compute the quantile directly there.
  if (rho < 1 - 1.0 / kTableSize) {
    if (const Md1QuantileTable* table = Md1TableOf(tail)) {
      return service_ms * table->Quantile(rho);
    }
  }
  return service_ms * QuantileInServiceTimes(rho, tail);
}

double RoundWaitMs(double rho, double round_ms, double tail) {
  if (rho >= 1 - 1e-9) return std::numeric_limits<double>::infinity();
  static const double kLogDefault = std::log(1.0 / kQueueingTail);
  const double log_tail =
      tail == kQueueingTail ? kLogDefault : std::log(1.0 / tail);
  const double heavy = log_tail * rho * round_ms / (2 * (1 - rho));
  const double light = rho > tail ? round_ms * (1 - tail / rho) : 0.0;
  return std::max(heavy, light);
}

double RoundWaitTailProbability(double rho, double round_ms, double wait_ms) {
  if (rho >= 1 - 1e-9) return 1.0;
  if (rho <= 0 || round_ms <= 0) return 0.0;
  const double w = std::max(0.0, wait_ms);
  const double light = w < round_ms ? rho * (1 - w / round_ms) : 0.0;
  const double heavy = std::exp(-2 * (1 - rho) * w / (rho * round_ms));
  return std::min(1.0, std::max(light, heavy));
}

int PoissonQuantile(double mean, double tail) {
  if (mean <= 0) return 0;
  // Sum the pmf from k = 0, each term from the last (p_k = p_{k-1} mean /
  // k); in log space where e^-mean would underflow.
  const bool log_space = mean > 500;
  const double log_mean = log_space ? std::log(mean) : 0;
  double pmf = log_space ? 0 : std::exp(-mean);
  double cdf = 0;
  for (int k = 0;; ++k) {
    if (log_space) {
      pmf = std::exp(k * log_mean - mean - std::lgamma(k + 1.0));
    } else if (k > 0) {
      pmf *= mean / k;
    }
    cdf += pmf;
    if (1 - cdf <= tail) return k;
    if (k > 16 * (mean + 16)) return k;  // rounding; unreachable in practice
  }
}

namespace {

// 8-point Gauss-Legendre nodes and weights on [-1, 1].
constexpr std::array<double, 8> kGaussNodes = {
    -0.9602898564975363, -0.7966664774136267, -0.5255324099163290,
    -0.1834346424956498, 0.1834346424956498,  0.5255324099163290,
    0.7966664774136267,  0.9602898564975363};
constexpr std::array<double, 8> kGaussWeights = {
    0.1012285362903763, 0.2223810344533745, 0.3137066458778873,
    0.3626837833783620, 0.3626837833783620, 0.3137066458778873,
    0.2223810344533745, 0.1012285362903763};

// P(Z + N >= n) with N ~ Poisson(mean) and P(Z >= z) <= exp(-theta z):
//   sum_{k < n} P(N = k) exp(-theta (n - k)) + P(N >= n).
// The sum's terms t_k grow by mean e^theta / k from k = 0: it is taken
// from its largest term (in log space) outwards with that ratio, so no
// term that matters underflows or overflows.
double AheadAtLeast(double mean, int n, double theta) {
  if (n <= 0) return 1.0;
  if (mean <= 0) return std::exp(-theta * n);
  double pmf = std::exp(-mean);
  double below = 0;  // P(N < n)
  for (int k = 0; k < n; ++k) {
    if (k > 0) pmf *= mean / k;
    below += pmf;
  }
  const double log_ratio = std::log(mean) + theta;
  const int top =
      log_ratio >= std::log(static_cast<double>(n))
          ? n - 1
          : std::min(n - 1, static_cast<int>(std::floor(std::exp(log_ratio))));
  const double ratio = std::exp(log_ratio);
  const double t_top = std::exp(top * std::log(mean) - mean -
                                std::lgamma(top + 1.0) - theta * (n - top));
  double sum = t_top;
  double t = t_top;
  for (int k = top + 1; k < n; ++k) sum += t *= ratio / k;
  t = t_top;
  for (int k = top; k > 0; --k) sum += t *= k / ratio;
  return std::min(1.0, sum + std::max(0.0, 1 - below));
}

}  // namespace

double BulkQueueSojournTail(double arrivals_per_batch, int cap, double sigma) {
  const double a = arrivals_per_batch;
  if (cap < 1 || a >= cap) return 1.0;
  if (sigma < 1) return 1.0;
  if (a <= 0) return 0.0;
  const double theta = LundbergExponent(a, cap);
  // J(v) = floor(sigma - 1 + v): floor(sigma) - 1 below v = 1 - frac, then
  // floor(sigma).
  const double whole = std::floor(sigma);
  const double frac = sigma - whole;
  const int j_low = static_cast<int>(whole) - 1;
  double integral = 0;
  auto piece = [&](double v0, double v1, int j) {
    if (v1 <= v0) return;
    const double half = (v1 - v0) / 2, mid = (v1 + v0) / 2;
    for (size_t i = 0; i < kGaussNodes.size(); ++i) {
      const double v = mid + half * kGaussNodes[i];
      integral += half * kGaussWeights[i] * AheadAtLeast(a * v, cap * j, theta);
    }
  };
  piece(0, 1 - frac, j_low);
  piece(1 - frac, 1, j_low + 1);
  return std::clamp(std::min(1.0, a) * integral, 0.0, 1.0);
}

namespace {

// The least sigma with BulkQueueSojournTail(rho cap, cap, sigma) <= tail,
// to 1e-4 relative; +inf past 1e6.
double BulkSojournQuantile(double rho, int cap, double tail) {
  const double a = rho * cap;
  auto fits = [&](double sigma) {
    return BulkQueueSojournTail(a, cap, sigma) <= tail;
  };
  if (fits(1)) return 1.0;
  double lo = 1, hi = 2;
  while (!fits(hi)) {
    lo = hi;
    hi *= 2;
    if (hi > 1e6) return std::numeric_limits<double>::infinity();
  }
  while (hi - lo > 1e-4 * hi) {
    const double mid = (lo + hi) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  return hi;
}

// One tail's quantile of one cap, tabulated as q(rho) (1 - rho) over
// rho = i / kBulkTableSize (finite as rho -> 1) and interpolated: the
// policies ask for it in their inner loops (LAS: every (b, p) of every
// service on every GPU). Built on first use of the (tail, cap).
constexpr int kBulkTableSize = 256;
constexpr int kBulkTableMaxCap = 128;

class BulkQuantileTable {
 public:
  BulkQuantileTable(int cap, double tail) {
    for (int i = 0; i < kBulkTableSize; ++i) {
      const double rho = static_cast<double>(i) / kBulkTableSize;
      values_[i] = BulkSojournQuantile(rho, cap, tail) * (1 - rho);
    }
    // The last interval ends at rho = 1 - 1 / (4 size), computed.
    const double rho = 1 - 0.25 / kBulkTableSize;
    values_[kBulkTableSize] = BulkSojournQuantile(rho, cap, tail) * (1 - rho);
  }
  double Quantile(double rho) const {
    const double x = rho * kBulkTableSize;
    const int i = std::min(static_cast<int>(x), kBulkTableSize - 1);
    const double f = (x - i) / (i == kBulkTableSize - 1 ? 0.75 : 1.0);
    return ((1 - f) * values_[i] + f * values_[i + 1]) / (1 - rho);
  }

 private:
  std::array<double, kBulkTableSize + 1> values_;
};

// The table of (cap, tail), or null when the tail has no slot.
const BulkQuantileTable* BulkTableOf(int cap, double tail) {
  if (!(tail > 0)) return nullptr;
  const int slot = TabulatedTailSlot(tail);
  if (slot < 0) return nullptr;
  using Row =
      std::array<std::atomic<const BulkQuantileTable*>, kBulkTableMaxCap + 1>;
  static std::array<Row, kMaxTabulatedTails>* const tables =
      new std::array<Row, kMaxTabulatedTails>();
  return &BuiltOnce((*tables)[slot][cap], cap, tail);
}

}  // namespace

double BulkQueueWaitMs(double rho, double batch_ms, int cap, double tail) {
  if (rho >= 1 - 1e-9) return std::numeric_limits<double>::infinity();
  if (rho <= 0 || batch_ms <= 0) return 0.0;
  if (cap >= 2 && cap <= kBulkTableMaxCap && rho < 1 - 0.25 / kBulkTableSize) {
    if (const BulkQuantileTable* table = BulkTableOf(cap, tail)) {
      return std::max(0.0, table->Quantile(rho) - 1) * batch_ms;
    }
  }
  return (BulkSojournQuantile(rho, cap, tail) - 1) * batch_ms;
}

namespace {

// The index of state (q, j) of the queue at a batch's start: q requests
// waiting (1..n), j phases of the arrival stream since its last arrival
// (0..k - 1; always 0 for Poisson arrivals, k = 1).
inline size_t StateIndex(int q, int j, int k) {
  return static_cast<size_t>(q - 1) * k + j;
}

// The stationary distribution of a chain over the states (q, j), q = 1..n
// (StateIndex), with transition matrix p (p[from * size + to]) that lowers
// q by at most cap. Solved exactly by Grassmann, Taksar and Heyman's
// elimination, which subtracts nothing and so stays accurate at any load (a
// light load leaves state 1 with probability ~lambda^2). Eliminating a
// state touches only the (cap + 1) k states below it: O((n k)^2 cap k).
std::vector<double> StationaryByGth(std::vector<double> p, int n, int k,
                                    int cap) {
  const size_t size = static_cast<size_t>(n) * k;
  std::vector<double> out(size, 0.0);  // the probability of leaving downwards
  for (size_t s = size - 1; s >= 1; --s) {
    const int q = static_cast<int>(s / k) + 1;
    const size_t low = StateIndex(std::max(1, q - cap), 0, k);
    const double* row_s = &p[s * size];
    double sum = 0;
    for (size_t t = low; t < s; ++t) sum += row_s[t];
    out[s] = sum;
    if (sum <= 0) continue;
    for (size_t i = 0; i < s; ++i) {
      double* row_i = &p[i * size];
      const double f = row_i[s] / sum;
      if (f == 0) continue;
      for (size_t t = low; t < s; ++t) row_i[t] += f * row_s[t];
    }
  }
  std::vector<double> pi(size, 0.0);
  pi[0] = 1;
  double total = 1;
  for (size_t s = 1; s < size; ++s) {
    double v = 0;
    for (size_t i = 0; i < s; ++i) v += pi[i] * p[i * size + s];
    pi[s] = out[s] > 0 ? v / out[s] : 0;
    total += pi[s];
  }
  for (double& v : pi) v /= total;
  return pi;
}

// The stationary distribution of the queue at a batch's start over the
// states (q, j), q = 1..n (StateIndex): a batch of b = min(q, cap) takes
// s(b), during which M ~ Poisson(mu s(b)) phases pass, bringing
// floor((j + M) / k) arrivals and leaving j' = (j + M) mod k; an empty
// queue restarts at (1, 0) (the next arrival starts a batch alone, just
// after an arrival), and the states from q = n up are lumped into q = n.
// A batch lowers the queue by at most cap (StationaryByGth).
std::vector<double> BatchStartDistribution(double mu, int k,
                                           const std::vector<double>& batch_ms,
                                           int n) {
  const int cap = static_cast<int>(batch_ms.size());
  const size_t size = static_cast<size_t>(n) * k;
  std::vector<double> p(size * size, 0.0);  // p[from * size + to]
  for (int q = 1; q <= n; ++q) {
    const int b = std::min(q, cap);
    const int left = q - b;
    const double mean = mu * batch_ms[b - 1];
    for (int j = 0; j < k; ++j) {
      double* row = &p[StateIndex(q, j, k) * size];
      double pm = std::exp(-mean), total = 0;
      for (int m = 0;; ++m) {
        const int next_q = left + (j + m) / k;
        if (next_q >= n) break;  // the rest is lumped below
        row[next_q == 0 ? StateIndex(1, 0, k)
                        : StateIndex(next_q, (j + m) % k, k)] += pm;
        total += pm;
        pm *= mean / (m + 1);
        if (pm < 1e-300 && m > mean) break;
      }
      row[StateIndex(n, 0, k)] += std::max(0.0, 1 - total);
    }
  }
  return StationaryByGth(std::move(p), n, k, cap);
}

// Gauss-Legendre nodes and weights on [-1, 1]: 2 points where the arrivals
// are Poisson (the integrand is smooth over a piece), 3 on the shorter
// pieces of Erlang arrivals, whose densities peak.
constexpr std::array<double, 2> kGauss2Nodes = {-0.5773502691896258,
                                                0.5773502691896258};
constexpr std::array<double, 3> kGauss3Nodes = {-0.7745966692414834, 0.0,
                                                0.7745966692414834};
constexpr std::array<double, 3> kGauss3Weights = {
    0.5555555555555556, 0.8888888888888888, 0.5555555555555556};

// The batch queue's parameters (BatchQueueLateFraction), fixed for a call.
struct BatchQueue {
  double mu;  // phases per ms (the stream's rate; k phases per arrival)
  int k;      // phases per arrival
  const std::vector<double>& batch_ms;
  double sojourn_ms;
};

// The density, at u into a batch of `b` that started with `left` requests
// waiting behind it and phase j, of an arrival there that will be late:
// the i-th arrival of the batch comes at the (i k - j)-th phase, with
// density mu Poisson(i k - j - 1; mu u); it is the (left + i)-th in the
// queue and leaves with the jb-th next batch (every batch before its own
// is full); its own holds those of it that remain plus those who arrive
// until it starts, up to the cap: M' arrivals, M' >= m iff Poisson(mu
// before) >= m k phases (the stream restarts at the tagged arrival).
// `below` is scratch space of cap + 1 entries.
double LateArrivalDensity(const BatchQueue& queue, int b, int left, int phase,
                          double u, std::vector<double>* below) {
  const std::vector<double>& batch_ms = queue.batch_ms;
  const int cap = static_cast<int>(batch_ms.size());
  const int k = queue.k;
  const double rest = batch_ms[b - 1] - u;
  const double full = batch_ms[cap - 1];
  const double x = queue.mu * u;
  const double likely = x + 12 * std::sqrt(x) + 12;
  double pa = std::exp(-x);  // Poisson(a; x)
  int a = 0;
  double late = 0;
  int below_of = 0;  // the jb whose `below` is filled
  for (int i = 1;; ++i) {
    const int target = i * k - phase - 1;
    for (; a < target; ++a) pa *= x / (a + 1);
    if (a > likely && pa < 1e-16) return queue.mu * late;
    const int ahead = left + i;
    const int jb = (ahead + cap - 1) / cap;
    const double before = rest + (jb - 1) * full;
    if (before + batch_ms[0] > queue.sojourn_ms) {
      // This arrival is late, and so is every later one.
      for (double t = pa;;) {
        late += t;
        for (int step = 0; step < k; ++step, ++a) t *= x / (a + 1);
        if (a > likely && t < 1e-16) return queue.mu * late;
      }
    }
    const int need = ahead - (jb - 1) * cap;
    const auto first_late = std::upper_bound(
        batch_ms.begin() + need - 1, batch_ms.end(), queue.sojourn_ms - before);
    if (first_late == batch_ms.end()) continue;
    if (below_of != jb) {  // (*below)[m] = P(M' < m) = P(phases < m k)
      const double m_mean = queue.mu * before;
      double term = std::exp(-m_mean), cdf = 0;
      (*below)[0] = 0;
      int c = 0;
      for (int m = 1; m <= cap; ++m) {
        for (; c < m * k; ++c) {
          cdf += term;
          term *= m_mean / (c + 1);
        }
        (*below)[m] = cdf;
      }
      below_of = jb;
    }
    const int size = static_cast<int>(first_late - batch_ms.begin()) + 1;
    late += pa * std::max(0.0, 1 - (*below)[size - need]);
  }
}

// Expected arrivals during a batch of mean `mean` phases that starts at
// phase j: E[floor((j + M) / k)], M ~ Poisson(mean); with `none`, P(no
// arrival).
double ArrivalsInBatch(double mean, int k, int phase, double* none) {
  double pm = std::exp(-mean), expected = 0;
  *none = 0;
  for (int m = 0;; ++m) {
    const int arrivals = (phase + m) / k;
    expected += pm * arrivals;
    if (arrivals == 0) *none += pm;
    if (m > mean + 12 * std::sqrt(mean) + 12 + k) return expected;
    pm *= mean / (m + 1);
  }
}

}  // namespace

double BatchQueueLateFraction(double rate_rps, std::vector<double> batch_ms,
                              double sojourn_ms, int arrival_spacing,
                              double stop_above) {
  RaiseToMonotone(&batch_ms);
  const int cap = static_cast<int>(batch_ms.size());
  if (cap == 0) return 1;
  if (batch_ms[0] > sojourn_ms) return 1;
  if (rate_rps <= 0 || batch_ms.back() <= 0) return 0;
  const int k = std::clamp(arrival_spacing, 1, kBatchQueueMaxSpacing);
  const double lambda = rate_rps / 1000.0;
  const BatchQueue queue{lambda * k, k, batch_ms, sojourn_ms};
  const double full = batch_ms[cap - 1];
  if (lambda * full >= cap * (1 - 1e-9)) return 1;
  // From a leftover of cap * ceil(sojourn / s(cap)) every arrival is late
  // (a full batch ahead of it per cap requests): the chain's states past
  // that, with room for one batch's arrivals, are lumped.
  const int late_from =
      cap * static_cast<int>(std::ceil(sojourn_ms / full)) + cap;
  // Below that, the states the chain reaches with probability above
  // ~1e-12: the leftover of a server whose every batch takes s(cap) has
  // P(Z >= z) <= exp(-theta z) (Lundberg; Poisson arrivals bound the
  // more regular Erlang ones), and smaller batches only shorten the queue.
  // At light loads this is far fewer states.
  const double theta = LundbergExponent(lambda * full, cap);
  const int reached = cap + static_cast<int>(std::ceil(28 / theta)) + 1;
  const int n = std::min({late_from + cap + 8, reached + 8,
                          std::max(cap + 2, kBatchQueueMaxStates / k)});
  const std::vector<double> pi =
      BatchStartDistribution(queue.mu, k, batch_ms, n);
  // Arrivals per batch start: those during the batch, and the one that
  // ends an idle period after it, which starts a batch alone within the
  // sojourn (batch_ms[0] <= sojourn_ms above).
  std::vector<double> during(pi.size(), 0.0);
  double arrivals = 0;
  for (int q = 1; q <= n; ++q) {
    const int b = std::min(q, cap);
    for (int j = 0; j < k; ++j) {
      const size_t s = StateIndex(q, j, k);
      if (pi[s] == 0) continue;
      double none = 0;
      during[s] =
          pi[s] * ArrivalsInBatch(queue.mu * batch_ms[b - 1], k, j, &none);
      arrivals += during[s];
      if (q <= cap) arrivals += pi[s] * none;
    }
  }
  double late = 0;
  std::vector<double> breaks;
  std::vector<double> below(cap + 1);
  for (int q = 1; q <= n; ++q) {
    const int b = std::min(q, cap);
    const int left = q - b;
    const double s = batch_ms[b - 1];
    // Every arrival is late where even one that comes as the batch ends
    // finds full batches ahead that leave no time for its own (this
    // includes the lumped state n).
    const bool all_late =
        ((left + cap) / cap - 1) * full + batch_ms[0] > sojourn_ms || q == n;
    // None is late (but with probability < 1e-13) where even the last of
    // the batch's likely arrivals, with full batches ahead and its own
    // full, leaves within the sojourn.
    const double mean = lambda * s;
    const int likely =
        left + static_cast<int>(std::ceil(mean + 12 * std::sqrt(mean) + 12)) +
        1;
    const bool none_late = s + (likely + cap - 1) / cap * full <= sojourn_ms;
    // Whether a batch of z leaving after the jb-th next start is late
    // changes at u = s + (jb - 1) s(cap) + s(z) - sojourn; between those
    // points the integrand is smooth.
    breaks.clear();
    for (int j = 0; j < k; ++j) {
      const size_t st = StateIndex(q, j, k);
      // States too rare to move the fraction by 1e-10 are left out.
      if (during[st] < 1e-10 * arrivals) continue;
      if (all_late) {
        late += during[st];
        if (late > stop_above * arrivals) return late / arrivals;
        continue;
      }
      if (none_late) continue;
      if (breaks.empty()) {
        breaks.assign({0.0, s});
        for (int z = 1; z <= cap; ++z) {
          for (int jb = 1;; ++jb) {
            const double u = s + (jb - 1) * full + batch_ms[z - 1] - sojourn_ms;
            if (u >= s) break;
            if (u > 0) breaks.push_back(u);
          }
        }
        std::sort(breaks.begin(), breaks.end());
      }
      double integral = 0;
      for (size_t piece = 0; piece + 1 < breaks.size(); ++piece) {
        const double width = breaks[piece + 1] - breaks[piece];
        if (width <= 1e-12 * s) continue;
        if (k == 1) {
          const double mid = (breaks[piece] + breaks[piece + 1]) / 2;
          for (double node : kGauss2Nodes) {
            integral += width / 2 *
                        LateArrivalDensity(queue, b, left, 0,
                                           mid + width / 2 * node, &below);
          }
          continue;
        }
        // An Erlang density varies over about one phase: pieces of at most
        // two phases each.
        const int parts =
            std::max(1, static_cast<int>(std::ceil(queue.mu * width / 2)));
        const double h = width / parts;
        for (int part = 0; part < parts; ++part) {
          const double mid = breaks[piece] + (part + 0.5) * h;
          for (int g = 0; g < 3; ++g) {
            integral +=
                h / 2 * kGauss3Weights[g] *
                LateArrivalDensity(queue, b, left, j,
                                   mid + h / 2 * kGauss3Nodes[g], &below);
          }
        }
      }
      late += pi[st] * integral;
      if (late > stop_above * arrivals) return std::min(1.0, late / arrivals);
    }
  }
  return arrivals > 0 ? std::min(1.0, late / arrivals) : 0;
}

namespace {

// DispatchedQueueLateFraction's parameters, fixed for a call.
struct DispatchedQueue {
  double mu;  // phases per ms (k phases per arrival)
  int k;
  const std::vector<double>& batch_ms;
  double sojourn_ms;
  double margin;
  int n;  // the most that ever wait
};

// The most requests that may wait behind a batch with `rest_ms` left, the
// p-th leaving with batch jb = ceil(p / cap) as its z-th (z = p - (jb - 1)
// cap) and admitted while rest + (jb - 1) s(cap) + margin s(z) <= sojourn.
// At most `most`.
int AdmittedCeiling(const std::vector<double>& batch_ms, double sojourn_ms,
                    double margin, double rest_ms, int most) {
  const int cap = static_cast<int>(batch_ms.size());
  int ceiling = 0;
  for (int p = 1; p <= most; ++p) {
    const int jb = (p + cap - 1) / cap;
    const int z = p - (jb - 1) * cap;
    if (rest_ms + (jb - 1) * batch_ms[cap - 1] + margin * batch_ms[z - 1] >
        sojourn_ms) {
      break;
    }
    ceiling = p;
  }
  return ceiling;
}

// The points u of a batch of s ms where the ceiling changes: where
// rest + (jb - 1) s(cap) + margin s(z) meets the sojourn (with 0 and s).
void CeilingBreaks(const DispatchedQueue& queue, double s,
                   std::vector<double>* breaks) {
  const int cap = static_cast<int>(queue.batch_ms.size());
  const double full = queue.batch_ms[cap - 1];
  breaks->assign({0.0, s});
  for (int jb = 1; (jb - 1) * full <= queue.sojourn_ms; ++jb) {
    for (int z = 1; z <= cap; ++z) {
      const double u = s - queue.sojourn_ms + (jb - 1) * full +
                       queue.margin * queue.batch_ms[z - 1];
      if (u > 0 && u < s) breaks->push_back(u);
    }
  }
  std::sort(breaks->begin(), breaks->end());
}

// The queue (c, j) = (waiting, phase; index c k + j) at the end of a batch
// of s ms that started with `left` waiting at phase j0: piece by piece of
// `breaks`, arrivals join up to the piece's ceiling. Left in *now.
void QueueAfterBatch(const DispatchedQueue& queue, int left, int j0, double s,
                     const std::vector<double>& breaks,
                     std::vector<double>* now, std::vector<double>* next) {
  const int k = queue.k;
  std::fill(now->begin(), now->end(), 0.0);
  (*now)[static_cast<size_t>(left) * k + j0] = 1;
  for (size_t piece = 0; piece + 1 < breaks.size(); ++piece) {
    const double width = breaks[piece + 1] - breaks[piece];
    if (width <= 1e-12 * s) continue;
    const double rest = s - (breaks[piece] + breaks[piece + 1]) / 2;
    const int ceiling = AdmittedCeiling(queue.batch_ms, queue.sojourn_ms,
                                        queue.margin, rest, queue.n);
    const double mean = queue.mu * width;
    const double likely = mean + 12 * std::sqrt(mean) + 12 + k;
    std::fill(next->begin(), next->end(), 0.0);
    for (int c = 0; c <= queue.n; ++c) {
      const int room = std::max(0, ceiling - c);
      for (int j = 0; j < k; ++j) {
        const double from = (*now)[static_cast<size_t>(c) * k + j];
        if (from == 0) continue;
        double pm = std::exp(-mean), total = 0;
        for (int m = 0; m <= likely; ++m) {
          const int admitted = std::min((j + m) / k, room);
          (*next)[static_cast<size_t>(c + admitted) * k + (j + m) % k] +=
              from * pm;
          total += pm;
          pm *= mean / (m + 1);
        }
        // The rest (< 1e-16 or so) fills the room.
        (*next)[static_cast<size_t>(c + room) * k + j] +=
            from * std::max(0.0, 1 - total);
      }
    }
    now->swap(*next);
  }
}

}  // namespace

double DispatchedQueueLateFraction(double rate_rps,
                                   std::vector<double> batch_ms,
                                   double sojourn_ms, int arrival_spacing,
                                   double exec_margin) {
  RaiseToMonotone(&batch_ms);
  const int cap = static_cast<int>(batch_ms.size());
  if (cap == 0 || exec_margin * batch_ms[0] > sojourn_ms) return 1;
  if (rate_rps <= 0 || batch_ms.back() <= 0) return 0;
  const int k = std::clamp(arrival_spacing, 1, kBatchQueueMaxSpacing);
  // The most that ever wait: those a batch that just ended leaves room for.
  const int most =
      cap * (static_cast<int>(std::floor(sojourn_ms / batch_ms.back())) + 1);
  const int n = AdmittedCeiling(batch_ms, sojourn_ms, exec_margin, 0, most);
  const DispatchedQueue queue{rate_rps / 1000.0 * k, k, batch_ms, sojourn_ms,
                              exec_margin,           n};
  const size_t size = static_cast<size_t>(n) * k;
  std::vector<double> p(size * size, 0.0);  // p[from * size + to]
  // Per state: arrivals (during its batch, and the one that restarts an
  // emptied queue) and those of them turned away.
  std::vector<double> arrivals(size, 0.0), dropped(size, 0.0);
  std::vector<double> breaks;
  std::vector<double> now(static_cast<size_t>(n + 1) * k), next(now.size());
  for (int q = 1; q <= n; ++q) {
    const int b = std::min(q, cap);
    const int left = q - b;
    const double s = batch_ms[b - 1];
    CeilingBreaks(queue, s, &breaks);
    for (int j0 = 0; j0 < k; ++j0) {
      QueueAfterBatch(queue, left, j0, s, breaks, &now, &next);
      const size_t from = StateIndex(q, j0, k);
      double* row = &p[from * size];
      double admitted = 0, emptied = 0;
      for (int c = 0; c <= n; ++c) {
        for (int j = 0; j < k; ++j) {
          const double pr = now[static_cast<size_t>(c) * k + j];
          if (pr == 0) continue;
          admitted += pr * (c - left);
          // An emptied queue restarts with the next arrival, alone.
          if (c == 0) emptied += pr;
          row[c == 0 ? StateIndex(1, 0, k) : StateIndex(c, j, k)] += pr;
        }
      }
      double none = 0;
      const double during = ArrivalsInBatch(queue.mu * s, k, j0, &none);
      arrivals[from] = during + emptied;
      dropped[from] = std::max(0.0, during - admitted);
    }
  }
  const std::vector<double> pi = StationaryByGth(std::move(p), n, k, cap);
  double late = 0, total = 0;
  for (size_t st = 0; st < size; ++st) {
    late += pi[st] * dropped[st];
    total += pi[st] * arrivals[st];
  }
  return total > 0 ? std::min(1.0, late / total) : 0;
}

namespace {

// P(Poisson(x) < n).
double PoissonBelow(int n, double x) {
  if (n <= 0) return 0;
  double term = std::exp(-x), sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += term;
    term *= x / (i + 1);
  }
  return std::min(1.0, sum);
}

// ExpiringBatchQueueLateFraction's parameters, fixed for a call: the phase
// stream (mu phases per ms, an arrival every k-th), the batch times, the
// oldest age a batch may start at (a1 = sojourn - margin s(1)) and the
// grid of ages (step h; epoch states 0..nodes - 1, i.e. ages 0..a1).
struct OldestAgeChain {
  double mu;
  int k;
  const std::vector<double>& batch_ms;
  double sojourn_ms;
  double margin;
  double a1;
  double h;
  int nodes;

  // The largest batch the dispatcher starts with the oldest at age `a`:
  // at most the cap, and the largest whose predicted completion meets the
  // oldest's deadline (at least 1: ages up to a1 only).
  int Batch(double age) const {
    int z = 1;
    const int cap = static_cast<int>(batch_ms.size());
    while (z < cap && margin * batch_ms[z] <= sojourn_ms - age) ++z;
    return z;
  }

  // The node of age x (rounded; past a1 the pre-expiry nodes above).
  int Node(double x) const {
    return static_cast<int>(std::floor(std::max(0.0, x) / h + 0.5));
  }

  // Adds to `to` (by node) the law of a' = base - G for G with CDF
  // `cdf` over [lo, hi) (weight `weight` per unit of probability).
  template <typename Cdf>
  void Spread(double base, double lo, double hi, double weight, const Cdf& cdf,
              std::vector<double>* to) const {
    if (hi <= lo) return;
    // a' runs over (base - hi, base - lo]; cut at the node boundaries.
    const int first = Node(base - hi);
    const int last = Node(base - lo);
    double prev = cdf(lo);
    for (int j = last; j >= first; --j) {
      const double g = std::min(hi, base - (j - 0.5) * h);
      const double next = g >= hi ? cdf(hi) : cdf(g);
      if (j < static_cast<int>(to->size())) {
        (*to)[j] += weight * std::max(0.0, next - prev);
      }
      prev = next;
      if (g >= hi) break;
    }
  }

  // Where the next arrival lands after an expiry, by r, the phases left
  // to it (1..k): landing[r - 1] is the law over the nodes of a1 - R, R ~
  // Gamma(r, mu), with node 0 also taking the case R > a1 (none waits:
  // the next epoch is that arrival at an idle server, age 0).
  std::vector<std::vector<double>> Landing() const {
    std::vector<std::vector<double>> landing(k,
                                             std::vector<double>(nodes, 0.0));
    for (int r = 1; r <= k; ++r) {
      const auto cdf = [&](double x) { return 1 - PoissonBelow(r, mu * x); };
      Spread(a1, 0, a1, 1, cdf, &landing[r - 1]);
      landing[r - 1][0] += PoissonBelow(r, mu * a1);
    }
    return landing;
  }

  // The expiry of an oldest at age x > a1: it and the arrivals of the
  // excess e = x - a1 (floor(M / k), M ~ Poisson(mu e) phases) are
  // dropped, and the next arrival is r = k - (M mod k) phases on. Sets
  // P(r) (by r - 1) and returns the expected drops.
  double Expire(double x, std::vector<double>* by_r) const {
    const double e = x - a1;
    by_r->assign(k, 0.0);
    double term = std::exp(-mu * e), more = 0;
    const double likely = mu * e + 12 * std::sqrt(mu * e) + 12 + k;
    for (int m = 0; m <= likely; ++m) {
      (*by_r)[k - 1 - m % k] += term;
      more += term * (m / k);
      term *= mu * e / (m + 1);
    }
    return 1 + more;
  }

  // One batch from the oldest at age a: adds the law of the next oldest's
  // age before expiry to `after` (by node) and that of an idle server to
  // `idle`; returns the expected batch size. The arrivals after the
  // oldest are a fresh stream (the dispatcher's past decisions depend only
  // on arrivals up to the oldest's); with M of its phases before now, N =
  // floor(M / k) arrivals wait behind it.
  double Step(double a, std::vector<double>* after, double* idle) const {
    const int zc = Batch(a);
    double served = 0, below = 0;
    // N + 1 <= zc: all leave in a batch of N + 1; the next arrival is r =
    // k (N + 1) - M phases on, at age s - R if before the batch ends.
    double term = std::exp(-mu * a);
    for (int m = 0; m < k * zc; ++m) {
      below += term;
      const int n = m / k;
      const double s = batch_ms[n];
      const int r = k * (n + 1) - m;
      const auto cdf = [&](double x) { return 1 - PoissonBelow(r, mu * x); };
      Spread(s, 0, s, term, cdf, after);
      *idle += term * PoissonBelow(r, mu * s);
      served += term * (n + 1);
      term *= mu * a / (m + 1);
    }
    // N >= zc: a batch of zc; the zc-th arrival after the oldest, at
    // offset G ~ Erlang(k zc) below a, is the next oldest, at a + s - G.
    const double full = std::max(0.0, 1 - below);
    if (full > 1e-15) {
      const double s = batch_ms[zc - 1];
      const auto cdf = [&](double g) {
        return 1 - PoissonBelow(k * zc, mu * g);
      };
      Spread(a + s, 0, a, 1, cdf, after);
      served += full * zc;
    }
    return served;
  }
};

}  // namespace

double ExpiringBatchQueueLateFraction(double rate_rps,
                                      std::vector<double> batch_ms,
                                      double sojourn_ms, int arrival_spacing,
                                      double exec_margin, int grid) {
  RaiseToMonotone(&batch_ms);
  const int cap = static_cast<int>(batch_ms.size());
  if (cap == 0 || exec_margin * batch_ms[0] > sojourn_ms) return 1;
  if (rate_rps <= 0 || batch_ms.back() <= 0) return 0;
  const int k = std::clamp(arrival_spacing, 1, kBatchQueueMaxSpacing);
  const double a1 = sojourn_ms - exec_margin * batch_ms[0];
  const int nodes = std::max(2, grid) + 1;
  const OldestAgeChain chain{rate_rps / 1000.0 * k,
                             k,
                             batch_ms,
                             sojourn_ms,
                             exec_margin,
                             a1,
                             std::max(a1, 1e-9) / (nodes - 1),
                             nodes};
  // Ages after a batch reach a1 + s(cap); those past a1 expire.
  const int all_nodes = chain.Node(a1 + batch_ms.back()) + 2;
  const std::vector<std::vector<double>> landing = chain.Landing();
  std::vector<std::vector<double>> expiry_r(all_nodes);
  std::vector<double> expiry_drops(all_nodes, 0.0);
  for (int j = nodes; j < all_nodes; ++j) {
    expiry_drops[j] = chain.Expire(j * chain.h, &expiry_r[j]);
  }
  // The epoch chain: from the oldest at node i, the batch, the ages after
  // it, then expiry (where the next arrival lands depends on the node
  // past a1 only through r: folded by r).
  std::vector<double> p(static_cast<size_t>(nodes) * nodes, 0.0);
  std::vector<double> served(nodes, 0.0), dropped(nodes, 0.0);
  std::vector<double> after(all_nodes), lands(k);
  for (int i = 0; i < nodes; ++i) {
    std::fill(after.begin(), after.end(), 0.0);
    std::fill(lands.begin(), lands.end(), 0.0);
    double* row = &p[static_cast<size_t>(i) * nodes];
    served[i] = chain.Step(i * chain.h, &after, &row[0]);
    for (int j = 0; j < all_nodes; ++j) {
      if (after[j] == 0) continue;
      if (j < nodes) {
        row[j] += after[j];
        continue;
      }
      dropped[i] += after[j] * expiry_drops[j];
      for (int r = 0; r < k; ++r) lands[r] += after[j] * expiry_r[j][r];
    }
    for (int r = 0; r < k; ++r) {
      if (lands[r] == 0) continue;
      for (int t = 0; t < nodes; ++t) row[t] += lands[r] * landing[r][t];
    }
    // Truncation and rounding leave rows a little off 1.
    double sum = 0;
    for (int t = 0; t < nodes; ++t) sum += row[t];
    if (sum > 0) {
      for (int t = 0; t < nodes; ++t) row[t] /= sum;
    }
  }
  const std::vector<double> pi = StationaryByGth(std::move(p), nodes, 1, nodes);
  double late = 0, total = 0;
  for (int i = 0; i < nodes; ++i) {
    late += pi[i] * dropped[i];
    total += pi[i] * (dropped[i] + served[i]);
  }
  return total > 0 ? std::min(1.0, late / total) : 0;
}

double LoneQueueLateFraction(bool expiry, double rate_rps,
                             std::vector<double> batch_ms, double sojourn_ms,
                             int arrival_spacing, double stop_above) {
  const int cap = static_cast<int>(batch_ms.size());
  return expiry && cap <= 1
             ? DispatchedQueueLateFraction(rate_rps, std::move(batch_ms),
                                           sojourn_ms, arrival_spacing)
             : BatchQueueLateFraction(rate_rps, std::move(batch_ms), sojourn_ms,
                                      arrival_spacing, stop_above);
}

double FixedBatchWaitMs(double rho, double batch_ms, int batch, double tail,
                        double burst_tail, bool bulk_queue,
                        int arrival_spacing) {
  if (bulk_queue && batch >= 2) {
    return BulkQueueWaitMs(rho, batch_ms, batch, tail);
  }
  const double wait = batch <= 1 && arrival_spacing < 2
                          ? MD1WaitMs(rho, batch_ms, tail)
                          : RoundWaitMs(rho, batch_ms, tail);
  if (burst_tail > 0 && rho < 1 &&
      PoissonQuantile(rho * batch, burst_tail) <= batch) {
    return std::min(wait, batch_ms);
  }
  return wait;
}

}  // namespace tessera
