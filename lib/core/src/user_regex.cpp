#include "reshard/core/user_regex.h"

#ifdef RESHARD_HAVE_RE2
#include <re2/re2.h>
#endif

namespace reshard {

#ifdef RESHARD_HAVE_RE2
struct UserRegex::Impl {
  explicit Impl(const std::string& pattern, const RE2::Options& options) : re(pattern, options) {}
  RE2 re;
};

UserRegex UserRegex::compile(const std::string& pattern, std::string& error) {
  constexpr size_t kMaxPattern = 4096;  // a bound on the program RE2 builds, beside its max_mem
  UserRegex out;
  if (pattern.size() > kMaxPattern) {
    error = "pattern longer than " + std::to_string(kMaxPattern) + " characters";
    return out;
  }
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(int64_t{32} << 20);
  auto impl = std::make_shared<Impl>(pattern, options);
  if (!impl->re.ok()) {
    error = impl->re.error() + " (RE2 syntax)";
    return out;
  }
  out.impl_ = std::move(impl);
  return out;
}

bool UserRegex::search(const std::string& text) const { return impl_ && RE2::PartialMatch(text, impl_->re); }
#else
struct UserRegex::Impl {};

UserRegex UserRegex::compile(const std::string&, std::string& error) {
  error = "this build has no RE2 (install libre2-dev and rebuild; reshard runs user regexes only in linear time)";
  return UserRegex{};
}

bool UserRegex::search(const std::string&) const { return false; }
#endif

}  // namespace reshard
