// libFuzzer target: a serialized BatchRequest as a backend receives it on
// the Execute stream, laid out in a proxy slot as the backend does
// (LayOutBatch), then copied into a slot-sized buffer exactly as the
// layout says: a layout that points outside the slot is an ASan report.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend.pb.h"
#include "backend/batch_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::BatchRequest batch;
  if (!batch.ParseFromArray(data, static_cast<int>(size))) return 0;
  constexpr size_t kSlotBytes = 1 << 20;
  static std::vector<uint8_t> slot(kSlotBytes);
  for (bool fabricate : {false, true}) {
    auto layout = tessera::LayOutBatch(batch, fabricate, kSlotBytes);
    if (!layout.ok()) continue;
    for (int i = 0; i < batch.inputs_size(); ++i) {
      const auto& in = layout->inputs[i];
      if (fabricate) {
        std::memset(slot.data() + in.offset, 0, in.bytes);
      } else {
        std::memcpy(slot.data() + in.offset, batch.inputs(i).data().data(),
                    in.bytes);
      }
    }
    if (layout->output_offset > kSlotBytes) __builtin_trap();
  }
  return 0;
}
