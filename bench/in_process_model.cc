#include "bench/in_process_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "common/data_type.h"
#include "proxy/torch_model_runner.h"

namespace tessera {

inference::ModelInferRequest RandomRequest(const ModelConfig& config) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  inference::ModelInferRequest request;
  request.set_model_name(config.name());
  for (const TensorConfig& t : config.input()) {
    auto* in = request.add_inputs();
    in->set_name(t.name());
    in->set_datatype(DataTypeWireName(t.data_type()));
    std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
    shape[0] = 1;
    for (int64_t d : shape) in->add_shape(d);
    std::string* raw = request.add_raw_input_contents();
    raw->resize(ElementCount(shape) * DataTypeSize(t.data_type()));
    float* p = reinterpret_cast<float*>(raw->data());
    for (size_t i = 0; i < raw->size() / 4; ++i) p[i] = dist(rng);
  }
  return request;
}

std::unique_ptr<InProcessModel> InProcessModel::Create(
    const ModelRepository& repo, const std::string& model, int threads) {
  const ModelConfig& config = repo.Find(model)->config;
  TorchModelRunner::Options options;
  options.num_threads = std::max(1, threads);
  auto runner = TorchModelRunner::Create({{model, repo.ModelPath(model, 1)}},
                                         {{model, config}}, options);
  if (!runner.ok()) {
    std::fprintf(stderr, "%s\n", runner.status().ToString().c_str());
    return nullptr;
  }
  std::unique_ptr<InProcessModel> m(new InProcessModel());
  m->runner_ = std::move(*runner);
  m->model_ = model;
  m->request_ = RandomRequest(config);
  for (int i = 0; i < config.input_size(); ++i) {
    TensorView v;
    v.name = config.input(i).name();
    v.data_type = config.input(i).data_type();
    v.shape.assign(m->request_.inputs(i).shape().begin(),
                   m->request_.inputs(i).shape().end());
    v.data = reinterpret_cast<uint8_t*>(
        m->request_.mutable_raw_input_contents(i)->data());
    v.size_bytes = m->request_.raw_input_contents(i).size();
    m->inputs_.push_back(v);
  }
  m->out_.resize(1 << 20);
  // Warm up as the proxy does (ProxyServer::Warmup: batch 1, then the
  // largest batch, four runs each), so that both start timing from the
  // same history (allocator state, the shapes TorchScript has seen).
  std::vector<int> sizes = {1};
  if (config.max_batch_size() > 1) sizes.push_back(config.max_batch_size());
  for (int b : sizes) {
    std::vector<uint8_t> in(TensorLayoutBytes(config.input(), b), 0);
    auto zeros = LayOutTensors(config.input(), b, in.data(), in.size());
    if (!zeros.ok()) return nullptr;
    std::vector<uint8_t> out(64 << 20);
    for (int i = 0; i < 4; ++i) {
      absl::Duration exec;
      (void)m->runner_->Run(model, *zeros, out.data(), out.size(), &exec);
    }
  }
  return m;
}

InProcessModel::~InProcessModel() = default;

double InProcessModel::Run() {
  absl::Duration exec;
  auto outputs = runner_->Run(model_, inputs_, out_.data(), out_.size(), &exec);
  return outputs.ok() ? absl::ToDoubleMicroseconds(exec) : -1;
}

BatchRequest ToBatchRequest(const std::string& model,
                            const inference::ModelInferRequest& request) {
  BatchRequest batch;
  batch.set_model(model);
  for (int i = 0; i < request.inputs_size(); ++i) {
    Tensor* t = batch.add_inputs();
    t->set_name(request.inputs(i).name());
    t->set_data_type(*DataTypeFromWireName(request.inputs(i).datatype()));
    *t->mutable_shape() = request.inputs(i).shape();
    t->set_data(request.raw_input_contents(i));
  }
  return batch;
}

double RunOn(ProxyHandle* proxy, BatchRequest batch) {
  auto response = proxy->ExecuteAndWait(std::move(batch), absl::Seconds(60));
  if (!response.ok()) {
    std::fprintf(stderr, "second proxy: %s\n",
                 response.status().ToString().c_str());
    std::exit(1);
  }
  return response->status().code() == 0
             ? static_cast<double>(response->exec_time_us())
             : -1;
}

}  // namespace tessera
