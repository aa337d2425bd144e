// Defaults of the Transport interface: box ops exist only where a transport says it supports them.
#include "transport.h"

#include "reshard/core/error.h"

namespace reshard {
namespace {

[[noreturn]] void no_boxes(const Transport& t, const char* call) {
  throw runtime_error("transport " + t.name() + " has no " + call + " (supports_boxes() is false)");
}

}  // namespace

void Transport::send_boxes(int, int, int, const Dims&, int, const std::vector<BoxPiece>&) {
  no_boxes(*this, "send_boxes");
}
void Transport::recv_boxes(int, int, int, const Dims&, int, const std::vector<BoxPiece>&) {
  no_boxes(*this, "recv_boxes");
}
void Transport::broadcast_boxes(int, int, int, const Dims&, int, const std::vector<BoxPiece>&) {
  no_boxes(*this, "broadcast_boxes");
}

}  // namespace reshard
