// Errors: one type for everything the library reports. The library never exits; the CLI maps
// Error::code() to the process exit status (2 usage/config, 3 runtime, 1 verification failed).
#pragma once
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace reshard {

enum class ErrorCode : int { Verify = 1, Config = 2, Runtime = 3 };

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }
  int exit_code() const { return static_cast<int>(code_); }

 private:
  ErrorCode code_;
};

inline Error config_error(const std::string& message) { return Error(ErrorCode::Config, message); }
inline Error runtime_error(const std::string& message) { return Error(ErrorCode::Runtime, message); }

// Collects every violation of a config before failing, so a user fixes them all in one pass.
class Problems {
 public:
  void add(std::string problem) { list_.push_back(std::move(problem)); }
  bool empty() const { return list_.empty(); }
  const std::vector<std::string>& list() const { return list_; }
  // Throws one Error(Config) listing every problem, headed by `what`, when any were added.
  void throw_if_any(const std::string& what) const;

 private:
  std::vector<std::string> list_;
};

// Groups repeated problems: one line per distinct message, naming the first place it holds for and
// how many more ("... (model.layers.0.mlp.up_proj.weight and 47 more)").
class GroupedProblems {
 public:
  void add(const std::string& message, const std::string& where) { by_message_[message].insert(where); }
  void flush(Problems& problems) const;

 private:
  std::map<std::string, std::set<std::string>> by_message_;
};

}  // namespace reshard
