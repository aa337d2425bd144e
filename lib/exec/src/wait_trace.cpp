#include "wait_trace.h"

#include <fstream>

namespace reshard {

void write_wait_traces(const std::string& prefix, int rank, const std::vector<WaitTrace>& traces) noexcept {
  try {
    std::ofstream f(prefix + "." + std::to_string(rank) + ".tsv");
    f << "rank\twait\tstream\tops\tlaunches\tflush_begin\tflush_end\tbegin\tfirst_take\tlast_take\tfirst_launch"
         "\tlast_launch\tcopies_done\tend\n";
    f.precision(15);
    for (size_t i = 0; i < traces.size(); ++i) {
      const WaitTrace& t = traces[i];
      f << rank << '\t' << i << '\t' << t.stream << '\t' << t.ops << '\t' << t.launches << '\t' << t.flush_begin
        << '\t' << t.flush_end << '\t' << t.begin << '\t' << t.first_take << '\t' << t.last_take << '\t'
        << t.first_launch << '\t' << t.last_launch << '\t' << t.copies_done << '\t' << t.end << '\n';
    }
  } catch (...) {  // a trace that cannot be written is lost, never a crash at teardown
  }
}

}  // namespace reshard
