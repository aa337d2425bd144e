#include "wait_trace.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "reshard/core/output_file.h"

namespace reshard {

std::string wait_trace_path(const std::string& prefix, int rank) {
  return prefix + "." + std::to_string(rank) + ".tsv";
}

std::string wait_trace_problem(const TraceOutput& out, int rank, const std::string& json_path) {
  const std::string path = wait_trace_path(out.prefix, rank);
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!json_path.empty() && fs::weakly_canonical(path, ec) == fs::weakly_canonical(json_path, ec))
    return out.flag + " " + path + ": is the --json record's path; name another prefix";
  return output_problem(out.flag, path, out.force, out.inputs);
}

void write_wait_traces(const TraceOutput& out, int rank, const std::vector<WaitTrace>& traces) noexcept {
  try {
    std::ostringstream f;
    f << "rank\twait\tstream\tops\tlaunches\tflush_begin\tflush_end\tbegin\tfirst_take\tlast_take\tfirst_launch"
         "\tlast_launch\tcopies_done\tend\n";
    f.precision(15);
    for (size_t i = 0; i < traces.size(); ++i) {
      const WaitTrace& t = traces[i];
      f << rank << '\t' << i << '\t' << t.stream << '\t' << t.ops << '\t' << t.launches << '\t' << t.flush_begin
        << '\t' << t.flush_end << '\t' << t.begin << '\t' << t.first_take << '\t' << t.last_take << '\t'
        << t.first_launch << '\t' << t.last_launch << '\t' << t.copies_done << '\t' << t.end << '\n';
    }
    write_output(out.flag, wait_trace_path(out.prefix, rank), f.str(), out.force, out.inputs);
  } catch (const std::exception& e) {  // never a crash at teardown; the trace is lost, and said so
    std::fprintf(stderr, "reshard: rank %d: %s (the trace is lost)\n", rank, e.what());
  } catch (...) {
  }
}

}  // namespace reshard
