#include "reshard/core/error.h"

namespace reshard {

void Problems::throw_if_any(const std::string& what) const {
  if (list_.empty()) return;
  std::string message = what;
  for (const std::string& p : list_) message += "\n  - " + p;
  throw config_error(message);
}

}  // namespace reshard
