#include "common/termination_signals.h"

#include <pthread.h>
#include <signal.h>

namespace tessera {
namespace {

sigset_t TerminationSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal() {
  sigset_t set = TerminationSet();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace tessera
