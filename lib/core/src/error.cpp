#include "reshard/core/error.h"

namespace reshard {

void Problems::throw_if_any(const std::string& what) const {
  if (list_.empty()) return;
  std::string message = what;
  for (const std::string& p : list_) message += "\n  - " + p;
  throw config_error(message);
}

void GroupedProblems::flush(Problems& problems) const {
  for (const auto& [message, where] : by_message_) {
    std::string s = message + " (" + *where.begin();
    if (where.size() > 1) s += " and " + std::to_string(where.size() - 1) + " more";
    problems.add(s + ")");
  }
}

}  // namespace reshard
