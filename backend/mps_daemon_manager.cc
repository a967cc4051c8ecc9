#include "backend/mps_daemon_manager.h"

#include <sys/wait.h>

#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "spdlog/spdlog.h"

namespace tessera {

std::string MpsDaemonManager::PipeDir(int gpu) const {
  return absl::StrCat(options_.base_dir, "/gpu", gpu, "/pipe");
}

std::string MpsDaemonManager::LogDir(int gpu) const {
  return absl::StrCat(options_.base_dir, "/gpu", gpu, "/log");
}

absl::StatusOr<int> MpsDaemonManager::Control(int gpu, const std::string& args,
                                              const std::string& input) const {
  // Through the shell: it finds the binary on PATH and pipes the command.
  Subprocess::Options o;
  const std::string run = absl::StrCat("\"$0\" ", args);
  o.argv = {"/bin/sh", "-c",
            input.empty() ? absl::StrCat("exec ", run)
                          : absl::StrCat("echo '", input, "' | ", run),
            options_.control_binary};
  o.env = {{"CUDA_VISIBLE_DEVICES", absl::StrCat(gpu)},
           {"CUDA_MPS_PIPE_DIRECTORY", PipeDir(gpu)},
           {"CUDA_MPS_LOG_DIRECTORY", LogDir(gpu)}};
  ASSIGN_OR_RETURN(auto process, Subprocess::Spawn(o));
  ASSIGN_OR_RETURN(auto status, process->Wait(absl::Seconds(30)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

absl::Status MpsDaemonManager::Ensure(int gpu) {
  absl::MutexLock lock(&mu_);
  if (running_.count(gpu)) return absl::OkStatus();
  auto answered = Control(gpu, "", "get_server_list");
  if (answered.ok() && *answered == 0) {
    spdlog::info("MPS control daemon of GPU {} already runs (pipe {})", gpu,
                 PipeDir(gpu));
    running_.insert(gpu);
    return absl::OkStatus();
  }
  std::error_code ec;
  std::filesystem::create_directories(PipeDir(gpu), ec);
  std::filesystem::create_directories(LogDir(gpu), ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(
        "cannot create the MPS directories of GPU ", gpu, ": ", ec.message()));
  }
  auto started = Control(gpu, "-d", "");
  if (!started.ok() || *started != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot start the MPS control daemon of GPU ", gpu, " (",
                     options_.control_binary, " -d): ",
                     started.ok() ? absl::StrCat("exit code ", *started)
                                  : started.status().ToString()));
  }
  answered = Control(gpu, "", "get_server_list");
  if (!answered.ok() || *answered != 0) {
    return absl::UnavailableError(absl::StrCat(
        "the MPS control daemon of GPU ", gpu, " does not answer after start"));
  }
  spdlog::info("started the MPS control daemon of GPU {} (pipe {}, log {})",
               gpu, PipeDir(gpu), LogDir(gpu));
  running_.insert(gpu);
  return absl::OkStatus();
}

std::map<std::string, std::string> MpsDaemonManager::ProxyEnv(
    int gpu, double share_percent) const {
  const double rounded = std::round(share_percent);
  const std::string share = std::fabs(rounded - share_percent) < 1e-9
                                ? absl::StrCat(static_cast<int>(rounded))
                                : absl::StrFormat("%.1f", share_percent);
  return {{"CUDA_VISIBLE_DEVICES", absl::StrCat(gpu)},
          {"CUDA_MPS_PIPE_DIRECTORY", PipeDir(gpu)},
          {"CUDA_MPS_LOG_DIRECTORY", LogDir(gpu)},
          {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", share}};
}

}  // namespace tessera
