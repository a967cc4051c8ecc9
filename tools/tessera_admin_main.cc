// tessera_admin: the operator's view of a running frontend through its
// AdminService (--admin_listen of tessera_frontend, loopback by default):
// the plan in force as a table, planned and observed rates, backends, and
// commands to switch the policy or re-plan; and model load/unload through
// the KServe v2 repository RPCs of the inference port (token required).
#include <cstdio>
#include <set>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/clock.h"
#include "admin.grpc.pb.h"
#include "common/shared_secret.h"
#include "common/status_macros.h"
#include "common/tls_config.h"
#include "common/usage.h"
#include "grpc_service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

ABSL_FLAG(std::string, server, "127.0.0.1:8190",
          "The frontend's admin address (--admin_listen).");
ABSL_FLAG(int, timeout_s, 10,
          "Deadline of the RPC (load/unload: of the wait for the new plan).");
ABSL_FLAG(std::string, inference_server, "127.0.0.1:8100",
          "load/unload: the frontend's inference address (KServe v2 "
          "repository RPCs).");
ABSL_FLAG(std::string, token_file, "",
          "File with the frontend's admin token (its --admin_token_file); "
          "every command needs it.");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA of the frontend's certificate when its ports serve TLS "
          "(its --tls_cert_file); empty: plaintext.");

namespace tessera {
namespace {

// How to reach the frontend: its token and the channel credentials.
struct Connection {
  SharedSecret secret;
  std::shared_ptr<grpc::ChannelCredentials> credentials;

  std::unique_ptr<grpc::ClientContext> Context() const {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(absl::ToChronoTime(
        absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_timeout_s))));
    secret.Attach(c.get());
    return c;
  }
};

absl::StatusOr<Connection> ConnectionFromFlags() {
  Connection c;
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    ASSIGN_OR_RETURN(c.secret,
                     SharedSecret::FromFile(absl::GetFlag(FLAGS_token_file)));
  }
  ASSIGN_OR_RETURN(TlsConfig tls,
                   TlsConfig::Load({"", "", absl::GetFlag(FLAGS_tls_ca_file)}));
  c.credentials = tls.ChannelCredentials();
  return c;
}

int Fail(const char* what, const grpc::Status& s) {
  std::fprintf(stderr, "%s failed: %s (code %d)\n", what,
               s.error_message().c_str(), static_cast<int>(s.error_code()));
  return 1;
}

void PrintStatus(const AdminStatus& st) {
  const Plan& plan = st.plan();
  std::printf(
      "policy %s, plan epoch %lld (%lld installed, %lld failed "
      "attempts)\nreason: %s\n\n",
      st.policy().c_str(), static_cast<long long>(plan.epoch()),
      static_cast<long long>(st.plans_installed()),
      static_cast<long long>(st.plan_failures()),
      plan.reason().empty() ? "-" : plan.reason().c_str());
  std::printf("%-10s %-8s %-26s %7s  %-20s %6s %9s %9s\n", "node", "device",
              "gpulet", "share%", "model", "batch", "duty ms", "rate/s");
  for (const DevicePlan& d : plan.devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      bool first = true;
      for (const ModelAssignment& a : g.models()) {
        std::printf("%-10s %-8s %-26s %7.0f  %-20s %6d %9.2f %9.1f\n",
                    first ? d.backend_id().c_str() : "",
                    first ? d.device_id().c_str() : "",
                    first ? g.gpulet_id().c_str() : "",
                    first ? g.share_percent() : 0.0, a.model().c_str(),
                    a.batch_size(), a.duty_cycle_ms(), a.rate_rps());
        first = false;
      }
    }
  }
  std::set<std::string> models;
  for (const auto& [m, r] : st.planned_rates_rps()) models.insert(m);
  for (const auto& [m, r] : st.observed_rates_rps()) models.insert(m);
  std::printf("\n%-20s %12s %12s\n", "model", "planned/s", "observed/s");
  for (const std::string& m : models) {
    auto p = st.planned_rates_rps().find(m);
    auto o = st.observed_rates_rps().find(m);
    std::printf("%-20s %12.1f %12.1f\n", m.c_str(),
                p == st.planned_rates_rps().end() ? 0.0 : p->second,
                o == st.observed_rates_rps().end() ? 0.0 : o->second);
  }
  std::printf("\nbackends:");
  for (const auto& [id, up] : st.backends_up()) {
    std::printf(" %s=%s", id.c_str(), up ? "up" : "DOWN");
  }
  std::printf("\n");
  if (st.gpulets_on_standby_size() > 0) {
    std::printf("on their standby proxy (missed their SLO):");
    for (const std::string& g : st.gpulets_on_standby()) {
      std::printf(" %s", g.c_str());
    }
    std::printf("\n");
  }
}

int Run(const std::vector<char*>& args) {
  auto connection = ConnectionFromFlags();
  if (!connection.ok()) {
    std::fprintf(stderr, "%s\n", connection.status().ToString().c_str());
    return 2;
  }
  auto Context = [&] { return connection->Context(); };
  auto stub = AdminService::NewStub(grpc::CreateChannel(
      absl::GetFlag(FLAGS_server), connection->credentials));
  const std::string command = args.size() > 1 ? args[1] : "status";
  if (command == "status") {
    AdminStatus st;
    grpc::Status s = stub->GetStatus(Context().get(), {}, &st);
    if (!s.ok()) return Fail("GetStatus", s);
    PrintStatus(st);
    return 0;
  }
  if (command == "set-policy" && args.size() == 3) {
    SetPolicyRequest r;
    r.set_policy(args[2]);
    SetPolicyResponse out;
    grpc::Status s = stub->SetPolicy(Context().get(), r, &out);
    if (!s.ok()) return Fail("SetPolicy", s);
    std::printf("policy set to %s; re-planning\n", args[2]);
    return 0;
  }
  if (command == "replan") {
    ReplanRequest r;
    r.set_reason(args.size() > 2 ? args[2] : "tessera_admin");
    ReplanResponse out;
    grpc::Status s = stub->Replan(Context().get(), r, &out);
    if (!s.ok()) return Fail("Replan", s);
    std::printf("re-planning requested\n");
    return 0;
  }
  if ((command == "load" || command == "unload") && args.size() == 3) {
    auto inference =
        inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
            absl::GetFlag(FLAGS_inference_server), connection->credentials));
    auto context = Context();
    grpc::Status s;
    if (command == "load") {
      inference::RepositoryModelLoadRequest r;
      r.set_model_name(args[2]);
      inference::RepositoryModelLoadResponse out;
      s = inference->RepositoryModelLoad(context.get(), r, &out);
    } else {
      inference::RepositoryModelUnloadRequest r;
      r.set_model_name(args[2]);
      inference::RepositoryModelUnloadResponse out;
      s = inference->RepositoryModelUnload(context.get(), r, &out);
    }
    if (!s.ok()) return Fail(command == "load" ? "load" : "unload", s);
    std::printf("model %s %s; the plan in force reflects it\n", args[2],
                command == "load" ? "loaded" : "unloaded");
    return 0;
  }
  std::fprintf(stderr,
               "usage: tessera_admin [--server=host:port] "
               "[status | set-policy NAME | replan [REASON] | "
               "load NAME | unload NAME]\n");
  return 2;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Operator CLI of a Tessera frontend's admin service.\n"
      "Every command needs --token_file (the frontend's --admin_token_file).\n"
      "  tessera_admin status              the plan as a table, rates, "
      "backends\n"
      "  tessera_admin set-policy gpulet   switch the scheduling policy "
      "live\n"
      "  tessera_admin replan [REASON]     re-plan now\n"
      "  tessera_admin load|unload MODEL\n"
      "                                    load or unload a model through "
      "the KServe v2\n"
      "                                    repository RPCs of "
      "--inference_server");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  return tessera::Run(args);
}
