// cuda_ipc_wire.h: encoding and parsing of cuda-ipc op descriptions.
#if RESHARD_HAVE_CUDA && RESHARD_HAVE_MPI
#include "cuda_ipc_wire.h"

#include <cstring>

#include "reshard/core/error.h"

namespace reshard {

void append_description(std::string& message, const OpHeader& head, const std::vector<PieceDesc>& pieces) {
  message.append(reinterpret_cast<const char*>(&head), sizeof head);
  if (!pieces.empty()) message.append(reinterpret_cast<const char*>(pieces.data()), pieces.size() * sizeof(PieceDesc));
}

std::vector<Description> parse_descriptions(const std::string& m, int peer) {
  std::vector<Description> out;
  size_t at = 0;
  while (at < m.size()) {
    Description d;
    if (m.size() - at < sizeof(OpHeader)) break;
    std::memcpy(&d.head, m.data() + at, sizeof(OpHeader));
    at += sizeof(OpHeader);
    if (d.head.pieces < 0 || (m.size() - at) / sizeof(PieceDesc) < static_cast<size_t>(d.head.pieces)) {
      at = m.size() + 1;
      break;
    }
    d.pieces.resize(static_cast<size_t>(d.head.pieces));
    if (!d.pieces.empty())
      std::memcpy(static_cast<void*>(d.pieces.data()), m.data() + at, d.pieces.size() * sizeof(PieceDesc));
    at += d.pieces.size() * sizeof(PieceDesc);
    out.push_back(std::move(d));
  }
  if (at != m.size())
    throw runtime_error("cuda-ipc: malformed message of " + std::to_string(m.size()) + " bytes from rank " +
                        std::to_string(peer) + " (do all ranks run the same reshard build?)");
  return out;
}

}  // namespace reshard
#endif
