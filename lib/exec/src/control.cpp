// Control plane over MPI (a duplicated world with errors returned), or a stub that refuses to
// start when MPI support was not built.
#include "reshard/exec/control.h"

#include "reshard/core/error.h"

#ifdef RESHARD_HAVE_MPI
#include <algorithm>
#include <climits>
#include <cstdio>
#include <deque>

#include "mpi_wait.h"
#include "mpi_check.h"

namespace reshard {
namespace {
constexpr int kArrivalTag = 1;
}  // namespace

// Every collective is non-blocking and polled (mpi_wait.h), bounded by the timeout once one is set.
// So that a timeout can name the missing ranks, every rank tells rank 0 the number of each collective
// it enters (one tiny eager message on a separate communicator); rank 0 keeps the highest number seen
// per rank and, on a timeout, names the ranks that never reached the collective.
struct Control::Impl {
  MPI_Comm comm = MPI_COMM_NULL, arrivals = MPI_COMM_NULL;
  bool finalize = false;
  int rank = 0, size = 1;
  double timeout_s = 0;  // 0: no limit
  int64_t seq = 0;       // collectives entered
  std::vector<int64_t> arrived;  // rank 0: highest collective each rank announced
  struct Token {
    int64_t seq;
    MPI_Request req;
  };
  std::deque<Token> tokens;  // announcements in flight (a deque keeps their addresses stable)

  void announce() {
    ++seq;
    while (!tokens.empty()) {
      int flag = 0;
      RESHARD_MPI_CHECK(MPI_Test(&tokens.front().req, &flag, MPI_STATUS_IGNORE));
      if (!flag) break;
      tokens.pop_front();
    }
    if (rank == 0) return;
    tokens.push_back(Token{seq, MPI_REQUEST_NULL});
    RESHARD_MPI_CHECK(MPI_Isend(&tokens.back().seq, 1, MPI_INT64_T, 0, kArrivalTag, arrivals, &tokens.back().req));
  }

  void drain() {  // rank 0
    for (;;) {
      int flag = 0;
      MPI_Status st;
      RESHARD_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kArrivalTag, arrivals, &flag, &st));
      if (!flag) return;
      int64_t n = 0;
      RESHARD_MPI_CHECK(MPI_Recv(&n, 1, MPI_INT64_T, st.MPI_SOURCE, kArrivalTag, arrivals, MPI_STATUS_IGNORE));
      arrived[static_cast<size_t>(st.MPI_SOURCE)] = std::max(arrived[static_cast<size_t>(st.MPI_SOURCE)], n);
    }
  }

  Waiting missing(const char* what) {
    const std::string where = std::string("control-plane ") + what + " #" + std::to_string(seq);
    if (rank != 0) return Waiting{"another rank", where + " (rank 0 names the ranks that never reached it)"};
    drain();
    std::vector<int> late;
    for (int r = 1; r < size; ++r)
      if (arrived[static_cast<size_t>(r)] < seq) late.push_back(r);
    if (late.empty()) return Waiting{"the other ranks", where + " (every rank reached it)"};
    return Waiting{rank_list(late), where + ", which " + (late.size() == 1 ? "it" : "they") + " never reached"};
  }

  // Completes the collective `r` posted after announce(). Only rank 0 can name the missing ranks, so
  // the others give up a moment later (a fifth of the timeout, at most 1 s) and its message comes first.
  void finish(MPI_Request r, const char* what) {
    std::vector<MPI_Request> reqs{r};
    MPI_Status st;
    const double limit = rank == 0 || timeout_s <= 0 ? timeout_s : timeout_s + std::min(1.0, timeout_s / 5);
    const int rc = wait_bounded(reqs, &st, limit, [&](const std::vector<bool>&) { return missing(what); });
    if (rc != MPI_SUCCESS) throw_mpi_error(what, __FILE__, __LINE__, rc == MPI_ERR_IN_STATUS ? st.MPI_ERROR : rc);
    if (rank == 0) drain();
  }

  template <class T>
  T reduce(T v, MPI_Datatype type, MPI_Op op) {
    T out{};
    announce();
    MPI_Request r;
    RESHARD_MPI_CHECK(MPI_Iallreduce(&v, &out, 1, type, op, comm, &r));
    finish(r, "allreduce");
    return out;
  }
  void reduce_in_place(std::vector<int64_t>& v, MPI_Op op) {
    if (v.empty()) return;
    announce();
    MPI_Request r;
    RESHARD_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT64_T, op, comm, &r));
    finish(r, "allreduce");
  }
};

bool Control::built() { return true; }

void Control::abort_launch(int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

Control::Control() : impl_(std::make_unique<Impl>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw runtime_error("MPI_Init_thread failed");
    impl_->finalize = true;
  }
  RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  RESHARD_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm));
  RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN));
  RESHARD_MPI_CHECK(MPI_Comm_dup(impl_->comm, &impl_->arrivals));
  RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(impl_->arrivals, MPI_ERRORS_RETURN));
  RESHARD_MPI_CHECK(MPI_Comm_rank(impl_->comm, &impl_->rank));
  RESHARD_MPI_CHECK(MPI_Comm_size(impl_->comm, &impl_->size));
  if (impl_->rank == 0) impl_->arrived.assign(static_cast<size_t>(impl_->size), 0);
}

Control::~Control() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // someone else owned MPI and already shut it down
  for (Impl::Token& t : impl_->tokens)  // eager and long delivered; never wait on them here
    if (t.req != MPI_REQUEST_NULL) MPI_Request_free(&t.req);
  if (impl_->rank == 0 && impl_->arrivals != MPI_COMM_NULL) impl_->drain();
  if (impl_->arrivals != MPI_COMM_NULL) MPI_Comm_free(&impl_->arrivals);
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  if (impl_->finalize) MPI_Finalize();
}

int Control::rank() const { return impl_->rank; }
int Control::size() const { return impl_->size; }
double Control::now() const { return MPI_Wtime(); }
void Control::set_timeout(double seconds) { impl_->timeout_s = seconds > 0 ? seconds : 0; }
double Control::timeout() const { return impl_->timeout_s; }

void Control::barrier() {
  impl_->announce();
  MPI_Request r;
  RESHARD_MPI_CHECK(MPI_Ibarrier(impl_->comm, &r));
  impl_->finish(r, "barrier");
}

int64_t Control::sum(int64_t v) { return impl_->reduce(v, MPI_INT64_T, MPI_SUM); }
int64_t Control::max(int64_t v) { return impl_->reduce(v, MPI_INT64_T, MPI_MAX); }
int64_t Control::min(int64_t v) { return impl_->reduce(v, MPI_INT64_T, MPI_MIN); }
double Control::max(double v) { return impl_->reduce(v, MPI_DOUBLE, MPI_MAX); }
double Control::min(double v) { return impl_->reduce(v, MPI_DOUBLE, MPI_MIN); }
void Control::sum(std::vector<int64_t>& v) { impl_->reduce_in_place(v, MPI_SUM); }
void Control::max(std::vector<int64_t>& v) { impl_->reduce_in_place(v, MPI_MAX); }

std::vector<int64_t> Control::gather(int64_t v) {
  std::vector<int64_t> out(impl_->rank == 0 ? impl_->size : 0);
  impl_->announce();
  MPI_Request r;
  RESHARD_MPI_CHECK(MPI_Igather(&v, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, 0, impl_->comm, &r));
  impl_->finish(r, "gather");
  return out;
}

std::vector<uint8_t> Control::allgather(const std::vector<uint8_t>& mine, int64_t bytes_each) {
  if (static_cast<int64_t>(mine.size()) != bytes_each || bytes_each > INT_MAX)
    throw runtime_error("allgather: " + std::to_string(mine.size()) + " bytes given, " + std::to_string(bytes_each) + " expected");
  std::vector<uint8_t> out(static_cast<size_t>(bytes_each) * impl_->size);
  impl_->announce();
  MPI_Request r;
  RESHARD_MPI_CHECK(MPI_Iallgather(mine.data(), static_cast<int>(bytes_each), MPI_BYTE, out.data(),
                                   static_cast<int>(bytes_each), MPI_BYTE, impl_->comm, &r));
  impl_->finish(r, "allgather");
  return out;
}

std::string Control::broadcast(const std::string& s, int root) {
  int64_t n = static_cast<int64_t>(s.size());
  impl_->announce();
  MPI_Request r;
  RESHARD_MPI_CHECK(MPI_Ibcast(&n, 1, MPI_INT64_T, root, impl_->comm, &r));
  impl_->finish(r, "broadcast");
  std::string out = impl_->rank == root ? s : std::string(static_cast<size_t>(n), '\0');
  if (n > 0) {
    impl_->announce();
    RESHARD_MPI_CHECK(MPI_Ibcast(out.data(), static_cast<int>(n), MPI_CHAR, root, impl_->comm, &r));
    impl_->finish(r, "broadcast");
  }
  return out;
}

void Control::agree(int code, const std::string& message) {
  const int64_t worst = max(static_cast<int64_t>(code != 0 ? 1 : 0));
  if (worst == 0) return;
  const int first = static_cast<int>(min(static_cast<int64_t>(code != 0 ? impl_->rank : impl_->size)));
  const std::string text = broadcast(message, first);
  int64_t first_code = code;
  impl_->announce();
  MPI_Request r;
  RESHARD_MPI_CHECK(MPI_Ibcast(&first_code, 1, MPI_INT64_T, first, impl_->comm, &r));
  impl_->finish(r, "broadcast");
  throw AgreedError(static_cast<ErrorCode>(first_code), text);
}

void Control::abort(int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void* Control::native_comm() { return &impl_->comm; }

std::string Control::mpi_library_version() const {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, len);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  const size_t nl = s.find_first_of(",\n");  // Open MPI appends build details after a comma
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace reshard

#else  // no MPI

#include <cstdio>
#include <cstdlib>

namespace reshard {

struct Control::Impl {};
namespace {
[[noreturn]] void no_mpi() {
  throw config_error("MPI support was not built: reconfigure with MPI found (RESHARD_WITH_MPI=ON) to use "
                     "`reshard run` and `reshard verify --execute`");
}
}  // namespace

bool Control::built() { return false; }
void Control::abort_launch(int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(exit_code);
}
Control::Control() { no_mpi(); }
Control::~Control() = default;
int Control::rank() const { return 0; }
int Control::size() const { return 1; }
double Control::now() const { return 0; }
void Control::set_timeout(double) {}
double Control::timeout() const { return 0; }
void Control::barrier() { no_mpi(); }
int64_t Control::sum(int64_t) { no_mpi(); }
int64_t Control::max(int64_t) { no_mpi(); }
int64_t Control::min(int64_t) { no_mpi(); }
double Control::max(double) { no_mpi(); }
double Control::min(double) { no_mpi(); }
void Control::sum(std::vector<int64_t>&) { no_mpi(); }
void Control::max(std::vector<int64_t>&) { no_mpi(); }
std::vector<int64_t> Control::gather(int64_t) { no_mpi(); }
std::vector<uint8_t> Control::allgather(const std::vector<uint8_t>&, int64_t) { no_mpi(); }
std::string Control::broadcast(const std::string&, int) { no_mpi(); }
void Control::agree(int, const std::string&) { no_mpi(); }
void Control::abort(int exit_code) { std::_Exit(exit_code); }
void* Control::native_comm() { return nullptr; }
std::string Control::mpi_library_version() const { return "none"; }

}  // namespace reshard
#endif
