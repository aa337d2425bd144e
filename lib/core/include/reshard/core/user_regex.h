// Regexes a user gives (--exclude, --rules "match"): RE2, linear time in the name whatever the
// pattern (no backtracking: nested quantifiers cannot hang, deep nesting cannot overflow the stack).
// RE2 syntax, searched anywhere in the name as std::regex_search did. No RE2 headers leak from here.
#pragma once
#include <memory>
#include <string>

namespace reshard {

class UserRegex {
 public:
  // Compiles `pattern`; on failure returns an empty regex and sets `error` (RE2's message, or that
  // this build has no RE2).
  static UserRegex compile(const std::string& pattern, std::string& error);
  bool valid() const { return impl_ != nullptr; }
  bool search(const std::string& text) const;  // false when !valid()

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace reshard
