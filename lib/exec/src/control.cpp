// Control plane over MPI (a duplicated world with errors returned), or a stub that refuses to
// start when MPI support was not built.
#include "reshard/exec/control.h"

#include "reshard/core/error.h"

#ifdef RESHARD_HAVE_MPI
#include <climits>
#include <cstdio>

#include "reshard/exec/mpi_check.h"

namespace reshard {

struct Control::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  bool finalize = false;
  int rank = 0, size = 1;
};

bool Control::built() { return true; }

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
  RESHARD_MPI_CHECK(MPI_Comm_rank(impl_->comm, &impl_->rank));
  RESHARD_MPI_CHECK(MPI_Comm_size(impl_->comm, &impl_->size));
}

Control::~Control() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // someone else owned MPI and already shut it down
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  if (impl_->finalize) MPI_Finalize();
}

int Control::rank() const { return impl_->rank; }
int Control::size() const { return impl_->size; }
double Control::now() const { return MPI_Wtime(); }
void Control::barrier() { RESHARD_MPI_CHECK(MPI_Barrier(impl_->comm)); }

namespace {
template <class T>
T reduce(MPI_Comm comm, T v, MPI_Datatype type, MPI_Op op) {
  T out{};
  RESHARD_MPI_CHECK(MPI_Allreduce(&v, &out, 1, type, op, comm));
  return out;
}
}  // namespace

int64_t Control::sum(int64_t v) { return reduce(impl_->comm, v, MPI_INT64_T, MPI_SUM); }
int64_t Control::max(int64_t v) { return reduce(impl_->comm, v, MPI_INT64_T, MPI_MAX); }
int64_t Control::min(int64_t v) { return reduce(impl_->comm, v, MPI_INT64_T, MPI_MIN); }
double Control::max(double v) { return reduce(impl_->comm, v, MPI_DOUBLE, MPI_MAX); }
double Control::min(double v) { return reduce(impl_->comm, v, MPI_DOUBLE, MPI_MIN); }

void Control::sum(std::vector<int64_t>& v) {
  if (v.empty()) return;
  RESHARD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_SUM, impl_->comm));
}
void Control::max(std::vector<int64_t>& v) {
  if (v.empty()) return;
  RESHARD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_MAX, impl_->comm));
}

std::vector<int64_t> Control::gather(int64_t v) {
  std::vector<int64_t> out(impl_->rank == 0 ? impl_->size : 0);
  RESHARD_MPI_CHECK(MPI_Gather(&v, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, 0, impl_->comm));
  return out;
}

std::vector<uint8_t> Control::allgather(const std::vector<uint8_t>& mine, int64_t bytes_each) {
  if (static_cast<int64_t>(mine.size()) != bytes_each || bytes_each > INT_MAX)
    throw runtime_error("allgather: " + std::to_string(mine.size()) + " bytes given, " + std::to_string(bytes_each) + " expected");
  std::vector<uint8_t> out(static_cast<size_t>(bytes_each) * impl_->size);
  RESHARD_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(bytes_each), MPI_BYTE, out.data(),
                                  static_cast<int>(bytes_each), MPI_BYTE, impl_->comm));
  return out;
}

std::string Control::broadcast(const std::string& s, int root) {
  int64_t n = static_cast<int64_t>(s.size());
  RESHARD_MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT64_T, root, impl_->comm));
  std::string out = impl_->rank == root ? s : std::string(static_cast<size_t>(n), '\0');
  if (n > 0) RESHARD_MPI_CHECK(MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, root, impl_->comm));
  return out;
}

void Control::agree(int code, const std::string& message) {
  const int64_t worst = max(static_cast<int64_t>(code != 0 ? 1 : 0));
  if (worst == 0) return;
  const int first = static_cast<int>(min(static_cast<int64_t>(code != 0 ? impl_->rank : impl_->size)));
  const std::string text = broadcast(message, first);
  int64_t first_code = code;
  RESHARD_MPI_CHECK(MPI_Bcast(&first_code, 1, MPI_INT64_T, first, impl_->comm));
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
Control::Control() { no_mpi(); }
Control::~Control() = default;
int Control::rank() const { return 0; }
int Control::size() const { return 1; }
double Control::now() const { return 0; }
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
