#include "common/tls_config.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace tessera {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the TLS ", what, " file ", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (!absl::StrContains(text.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat("the TLS ", what, " file ", path, " is not PEM"));
  }
  return text.str();
}

}  // namespace

absl::StatusOr<TlsConfig> TlsConfig::Load(const TlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "a TLS certificate needs its key and a key its certificate "
        "(--tls_cert_file and --tls_key_file go together)");
  }
  TlsConfig config;
  config.files_ = files;
  if (!files.cert_file.empty()) {
    ASSIGN_OR_RETURN(auto cert, ReadPem(files.cert_file, "certificate"));
    ASSIGN_OR_RETURN(auto key, ReadPem(files.key_file, "key"));
    config.cert_pem_ = std::move(cert);
    config.key_pem_ = std::move(key);
  }
  if (!files.ca_file.empty()) {
    ASSIGN_OR_RETURN(auto ca, ReadPem(files.ca_file, "CA"));
    config.ca_pem_ = std::move(ca);
  }
  return config;
}

std::shared_ptr<grpc::ServerCredentials> TlsConfig::ServerCredentials(
    bool require_client_certificates) const {
  if (!serves_tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      require_client_certificates && verifies_peers()
          ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
          : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_root_certs = ca_pem_;
  options.pem_key_cert_pairs.push_back({key_pem_, cert_pem_});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> TlsConfig::ChannelCredentials()
    const {
  if (!verifies_peers()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ca_pem_;
  options.pem_private_key = key_pem_;
  options.pem_cert_chain = cert_pem_;
  return grpc::SslCredentials(options);
}

}  // namespace tessera
