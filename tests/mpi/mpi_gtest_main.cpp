// Shared main for MPI gtest binaries: every rank runs the tests; only rank 0 prints gtest's
// output, and rank 0 fails when any rank failed (failure counts are summed over the world).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) {
    // Other ranks report their own failures (with the rank) but not the passing chatter.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int local = RUN_ALL_TESTS();
  const int failed_tests = ::testing::UnitTest::GetInstance()->failed_test_count();
  if (rank != 0 && failed_tests > 0) std::fprintf(stderr, "[rank %d] %d test(s) failed\n", rank, failed_tests);
  int mine = local != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && any > 0) std::fprintf(stderr, "[rank 0] %d rank(s) failed\n", any);
  MPI_Finalize();
  return any > 0 ? 1 : 0;
}
