#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace grpc {
class ChannelCredentials;
class ServerCredentials;
}  // namespace grpc

namespace tessera {

// Where a process finds its TLS material (PEM files).
struct TlsFiles {
  std::string cert_file;  // this process's certificate chain
  std::string key_file;   // its private key
  std::string ca_file;    // the CA that peers' certificates must chain to
};

// TLS credentials for gRPC, read and checked once at start. A process
// with a certificate serves TLS; one with a CA verifies its peers: a
// server requires client certificates signed by it (mutual TLS), a client
// verifies the server's and presents its own certificate when it has one.
// Without files everything is plaintext.
class TlsConfig {
 public:
  TlsConfig() = default;  // plaintext

  // Refuses a certificate without a key (or the reverse), an unreadable or
  // non-PEM file.
  static absl::StatusOr<TlsConfig> Load(const TlsFiles& files);

  bool serves_tls() const { return !cert_pem_.empty(); }
  bool verifies_peers() const { return !ca_pem_.empty(); }
  const TlsFiles& files() const { return files_; }

  // TLS when this process has a certificate, plaintext otherwise. With
  // `require_client_certificates` (and a CA) a client must present a
  // certificate signed by the CA (mutual TLS); a KServe client port does
  // not ask for one.
  std::shared_ptr<grpc::ServerCredentials> ServerCredentials(
      bool require_client_certificates) const;
  // TLS verifying the server against the CA when there is one (presenting
  // this process's certificate if it has one); plaintext otherwise.
  std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials() const;

 private:
  TlsFiles files_;
  std::string cert_pem_;
  std::string key_pem_;
  std::string ca_pem_;
};

}  // namespace tessera
