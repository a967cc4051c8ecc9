#include "overlap/torch_checkpoint.h"

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tessera {
namespace {

// ---- Zip (stored entries only) --------------------------------------------

uint32_t Le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  }
  return v;
}

// Entry name → contents, from the central directory.
absl::StatusOr<std::map<std::string, std::string>> ReadZip(
    const std::string& b) {
  constexpr uint32_t kEnd = 0x06054b50, kCentral = 0x02014b50,
                     kLocal = 0x04034b50;
  if (b.size() < 22) return absl::InvalidArgumentError("not a zip archive");
  size_t end = b.size() - 22;
  const size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  while (Le(b, end, 4) != kEnd) {
    if (end == lowest) {
      return absl::InvalidArgumentError("not a zip archive (no directory)");
    }
    --end;
  }
  const uint32_t entries = Le(b, end + 10, 2);
  size_t at = Le(b, end + 16, 4);
  std::map<std::string, std::string> files;
  for (uint32_t i = 0; i < entries; ++i) {
    if (at + 46 > b.size() || Le(b, at, 4) != kCentral) {
      return absl::InvalidArgumentError("corrupt zip central directory");
    }
    const uint32_t method = Le(b, at + 10, 2);
    const uint32_t size = Le(b, at + 20, 4);
    const uint32_t name_len = Le(b, at + 28, 2);
    const uint32_t extra_len = Le(b, at + 30, 2);
    const uint32_t comment_len = Le(b, at + 32, 2);
    const uint32_t local = Le(b, at + 42, 4);
    std::string name = b.substr(at + 46, name_len);
    if (method != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("zip entry ", name, " is compressed (method ", method,
                       "); only stored entries are read"));
    }
    if (local + 30 > b.size() || Le(b, local, 4) != kLocal) {
      return absl::InvalidArgumentError("corrupt zip local header");
    }
    const size_t data =
        local + 30 + Le(b, local + 26, 2) + Le(b, local + 28, 2);
    if (data + size > b.size()) {
      return absl::InvalidArgumentError("truncated zip entry " + name);
    }
    files[std::move(name)] = b.substr(data, size);
    at += 46 + name_len + extra_len + comment_len;
  }
  return files;
}

// ---- Pickle (the subset torch.save writes for a state_dict) ---------------

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  enum Kind {
    kNone,
    kInt,
    kBool,
    kString,
    kTuple,
    kDict,
    kGlobal,
    kStorage,
    kTensor,
    kMark
  };
  Kind kind = kNone;
  int64_t i = 0;
  std::string s;                // string, global "module name", storage key
  std::vector<ValuePtr> items;  // tuple; dict as key, value pairs
  std::vector<std::pair<std::string, ValuePtr>> dict;
  // Tensor.
  std::string storage;
  int64_t offset = 0;
  std::vector<int64_t> shape, stride;
};

ValuePtr Make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

absl::StatusOr<std::vector<int64_t>> Ints(const Value& tuple) {
  if (tuple.kind != Value::kTuple) {
    return absl::InvalidArgumentError("expected a tuple of integers");
  }
  std::vector<int64_t> out;
  for (const ValuePtr& v : tuple.items) {
    if (v->kind != Value::kInt) {
      return absl::InvalidArgumentError("expected a tuple of integers");
    }
    out.push_back(v->i);
  }
  return out;
}

class Unpickler {
 public:
  explicit Unpickler(const std::string& data) : d_(data) {}

  absl::StatusOr<ValuePtr> Run() {
    while (pos_ < d_.size()) {
      const uint8_t op = static_cast<uint8_t>(d_[pos_++]);
      if (op == '.') {
        if (stack_.empty()) return absl::InvalidArgumentError("empty pickle");
        return stack_.back();
      }
      RETURN_IF_ERROR(Step(op));
    }
    return absl::InvalidArgumentError("pickle ends without STOP");
  }

 private:
  absl::Status Need(size_t n) {
    if (pos_ + n > d_.size()) return absl::InvalidArgumentError("truncated");
    return absl::OkStatus();
  }
  absl::StatusOr<uint32_t> Arg(int bytes) {
    RETURN_IF_ERROR(Need(bytes));
    const uint32_t v = Le(d_, pos_, bytes);
    pos_ += bytes;
    return v;
  }
  absl::StatusOr<ValuePtr> Pop() {
    if (stack_.empty() || stack_.back()->kind == Value::kMark) {
      return absl::InvalidArgumentError("pickle stack underflow");
    }
    ValuePtr v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // The values above the topmost mark, which is removed.
  absl::StatusOr<std::vector<ValuePtr>> PopMark() {
    std::vector<ValuePtr> out;
    while (!stack_.empty() && stack_.back()->kind != Value::kMark) {
      out.insert(out.begin(), stack_.back());
      stack_.pop_back();
    }
    if (stack_.empty()) return absl::InvalidArgumentError("no pickle mark");
    stack_.pop_back();
    return out;
  }
  absl::Status Push(Value::Kind kind, int64_t i = 0);
  absl::Status PushTuple(size_t n) {
    ValuePtr t = Make(Value::kTuple);
    for (size_t k = 0; k < n; ++k) {
      ASSIGN_OR_RETURN(ValuePtr v, Pop());
      t->items.insert(t->items.begin(), v);
    }
    stack_.push_back(t);
    return absl::OkStatus();
  }
  absl::Status SetItems(Value& dict, const std::vector<ValuePtr>& kv) {
    if (dict.kind != Value::kDict || kv.size() % 2 != 0) {
      return absl::InvalidArgumentError("SETITEMS on a non-dict");
    }
    for (size_t k = 0; k < kv.size(); k += 2) {
      if (kv[k]->kind != Value::kString) {
        return absl::InvalidArgumentError("a dict key is not a string");
      }
      dict.dict.emplace_back(kv[k]->s, kv[k + 1]);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<ValuePtr> Reduce(const Value& callable, const Value& args);
  absl::StatusOr<ValuePtr> PersistentLoad(const Value& pid);
  absl::Status Step(uint8_t op);
  // The opcodes' bodies, each a few lines.
  absl::Status Global();
  absl::Status Memo(bool put, int key_bytes);
  absl::Status Int(int bytes, bool is_signed);
  absl::Status String(int length_bytes);
  absl::Status TupleFromMark();
  absl::Status Apply(bool persistent);
  absl::Status SetItem(bool many);

  const std::string& d_;
  size_t pos_ = 0;
  std::vector<ValuePtr> stack_;
  std::map<uint32_t, ValuePtr> memo_;
};

absl::StatusOr<ValuePtr> Unpickler::Reduce(const Value& callable,
                                           const Value& args) {
  if (callable.kind != Value::kGlobal) {
    return absl::InvalidArgumentError("REDUCE of a non-global");
  }
  if (callable.s == "collections OrderedDict") return Make(Value::kDict);
  if (callable.s == "torch._utils _rebuild_tensor_v2") {
    if (args.kind != Value::kTuple || args.items.size() < 4 ||
        args.items[0]->kind != Value::kStorage ||
        args.items[1]->kind != Value::kInt) {
      return absl::InvalidArgumentError("unexpected _rebuild_tensor_v2 args");
    }
    ValuePtr t = Make(Value::kTensor);
    t->storage = args.items[0]->s;
    t->offset = args.items[1]->i;
    ASSIGN_OR_RETURN(t->shape, Ints(*args.items[2]));
    ASSIGN_OR_RETURN(t->stride, Ints(*args.items[3]));
    return t;
  }
  return absl::InvalidArgumentError("unsupported pickle callable " +
                                    callable.s);
}

absl::StatusOr<ValuePtr> Unpickler::PersistentLoad(const Value& pid) {
  // ('storage', <global torch FloatStorage>, key, location, numel)
  if (pid.kind != Value::kTuple || pid.items.size() < 3 ||
      pid.items[1]->kind != Value::kGlobal ||
      pid.items[2]->kind != Value::kString) {
    return absl::InvalidArgumentError("unexpected persistent id");
  }
  if (pid.items[1]->s != "torch FloatStorage") {
    return absl::InvalidArgumentError("unsupported storage " + pid.items[1]->s +
                                      " (float32 only)");
  }
  ValuePtr v = Make(Value::kStorage);
  v->s = pid.items[2]->s;
  return v;
}

absl::Status Unpickler::Global() {  // "module\nname\n"
  const size_t a = d_.find('\n', pos_);
  const size_t b = a == std::string::npos ? a : d_.find('\n', a + 1);
  if (b == std::string::npos) return absl::InvalidArgumentError("GLOBAL");
  ValuePtr v = Make(Value::kGlobal);
  v->s = d_.substr(pos_, a - pos_) + " " + d_.substr(a + 1, b - a - 1);
  pos_ = b + 1;
  stack_.push_back(v);
  return absl::OkStatus();
}

absl::Status Unpickler::Memo(bool put, int key_bytes) {
  ASSIGN_OR_RETURN(uint32_t key, Arg(key_bytes));
  if (put) {
    if (stack_.empty()) return absl::InvalidArgumentError("PUT on empty");
    memo_[key] = stack_.back();
    return absl::OkStatus();
  }
  auto it = memo_.find(key);
  if (it == memo_.end()) return absl::InvalidArgumentError("bad memo");
  stack_.push_back(it->second);
  return absl::OkStatus();
}

absl::Status Unpickler::Int(int bytes, bool is_signed) {
  ASSIGN_OR_RETURN(uint32_t v, Arg(bytes));
  return Push(Value::kInt,
              is_signed ? static_cast<int32_t>(v) : static_cast<int64_t>(v));
}

absl::Status Unpickler::String(int length_bytes) {
  ASSIGN_OR_RETURN(uint32_t n, Arg(length_bytes));
  RETURN_IF_ERROR(Need(n));
  ValuePtr v = Make(Value::kString);
  v->s = d_.substr(pos_, n);
  pos_ += n;
  stack_.push_back(v);
  return absl::OkStatus();
}

absl::Status Unpickler::TupleFromMark() {
  ASSIGN_OR_RETURN(std::vector<ValuePtr> items, PopMark());
  ValuePtr t = Make(Value::kTuple);
  t->items = std::move(items);
  stack_.push_back(t);
  return absl::OkStatus();
}

absl::Status Unpickler::Apply(bool persistent) {
  if (persistent) {  // BINPERSID: a tensor's storage
    ASSIGN_OR_RETURN(ValuePtr pid, Pop());
    ASSIGN_OR_RETURN(ValuePtr v, PersistentLoad(*pid));
    stack_.push_back(v);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(ValuePtr args, Pop());  // REDUCE: callable(*args)
  ASSIGN_OR_RETURN(ValuePtr callable, Pop());
  ASSIGN_OR_RETURN(ValuePtr v, Reduce(*callable, *args));
  stack_.push_back(v);
  return absl::OkStatus();
}

absl::Status Unpickler::SetItem(bool many) {
  std::vector<ValuePtr> kv;
  if (many) {
    ASSIGN_OR_RETURN(kv, PopMark());
  } else {
    ASSIGN_OR_RETURN(ValuePtr value, Pop());
    ASSIGN_OR_RETURN(ValuePtr key, Pop());
    kv = {key, value};
  }
  if (stack_.empty()) return absl::InvalidArgumentError("SETITEM(S)");
  return SetItems(*stack_.back(), kv);
}

absl::Status Unpickler::Push(Value::Kind kind, int64_t i) {
  ValuePtr v = Make(kind);
  v->i = i;
  stack_.push_back(v);
  return absl::OkStatus();
}

absl::Status Unpickler::Step(uint8_t op) {
  switch (op) {
    case 0x80:  // PROTO
      return Arg(1).status();
    case 'c':
      return Global();
    case 'q':  // BINPUT
    case 'r':  // LONG_BINPUT
      return Memo(/*put=*/true, op == 'q' ? 1 : 4);
    case 'h':  // BINGET
    case 'j':  // LONG_BINGET
      return Memo(/*put=*/false, op == 'h' ? 1 : 4);
    case '(':
      return Push(Value::kMark);
    case ')':
      return Push(Value::kTuple);
    case '}':
      return Push(Value::kDict);
    case 'N':
      return Push(Value::kNone);
    case 0x88:  // NEWTRUE
    case 0x89:  // NEWFALSE
      return Push(Value::kBool, op == 0x88);
    case 'K':
      return Int(1, false);
    case 'M':
      return Int(2, false);
    case 'J':
      return Int(4, true);
    case 'X':  // BINUNICODE
      return String(4);
    case 0x8c:  // SHORT_BINUNICODE
      return String(1);
    case 't':
      return TupleFromMark();
    case 0x85:
    case 0x86:
    case 0x87:
      return PushTuple(op - 0x84);
    case 'Q':
      return Apply(/*persistent=*/true);
    case 'R':
      return Apply(/*persistent=*/false);
    case 's':
      return SetItem(/*many=*/false);
    case 'u':
      return SetItem(/*many=*/true);
    case 'b':  // BUILD: the state_dict's _metadata attribute; not needed.
      return Pop().status();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported pickle opcode 0x", absl::Hex(op)));
  }
}

}  // namespace

absl::StatusOr<StateDict> ParseTorchCheckpoint(const std::string& bytes) {
  ASSIGN_OR_RETURN(auto files, ReadZip(bytes));
  std::string prefix;
  for (const auto& [name, data] : files) {
    if (absl::EndsWith(name, "/data.pkl")) {
      prefix = name.substr(0, name.size() - std::strlen("data.pkl"));
    }
  }
  if (prefix.empty()) {
    return absl::InvalidArgumentError("no data.pkl: not a torch.save file");
  }
  Unpickler unpickler(files[prefix + "data.pkl"]);
  ASSIGN_OR_RETURN(ValuePtr root, unpickler.Run());
  if (root->kind != Value::kDict) {
    return absl::InvalidArgumentError("the checkpoint is not a state_dict");
  }
  StateDict out;
  for (const auto& [name, v] : root->dict) {
    if (v->kind != Value::kTensor) continue;
    auto it = files.find(prefix + "data/" + v->storage);
    if (it == files.end()) {
      return absl::InvalidArgumentError("missing storage for " + name);
    }
    CheckpointTensor t;
    t.shape = v->shape;
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    // Contiguous row-major strides are all the writer produces here.
    int64_t expect = 1;
    for (int k = static_cast<int>(t.shape.size()) - 1; k >= 0; --k) {
      if (t.shape[k] > 1 && v->stride[k] != expect) {
        return absl::InvalidArgumentError(name + " is not contiguous");
      }
      expect *= t.shape[k];
    }
    const size_t need = static_cast<size_t>(v->offset + numel) * sizeof(float);
    if (it->second.size() < need) {
      return absl::InvalidArgumentError("storage too small for " + name);
    }
    t.values.resize(numel);
    std::memcpy(t.values.data(), it->second.data() + v->offset * sizeof(float),
                numel * sizeof(float));
    out[name] = std::move(t);
  }
  return out;
}

absl::StatusOr<StateDict> ReadTorchCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto dict = ParseTorchCheckpoint(buffer.str());
  if (!dict.ok()) {
    return absl::Status(dict.status().code(),
                        path + ": " + std::string(dict.status().message()));
  }
  return dict;
}

}  // namespace tessera
