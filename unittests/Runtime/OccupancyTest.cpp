//===- OccupancyTest.cpp - resident CTAs and register caps ---------------===//
//
// The expected figures are ncu's "Block Limit" lines for Tile's kernels on
// an H200 (docs/Performance.md), and the arithmetic of the allocation unit
// and the four register-file sub-partitions.
//
//===----------------------------------------------------------------------===//

#include "tile/Runtime/Occupancy.h"

#include "gtest/gtest.h"

using namespace tile::rt;

namespace {
const SmLimits h200;

KernelResources kernel(int registers, int sharedBytes = 256) {
  return {registers, sharedBytes};
}

TEST(OccupancyTest, ResidentCtasMatchTheProfiler) {
  // RMSNorm forward, 256 threads: 32 registers -> 8 CTAs (threads bind as
  // well), 94 -> 2 (ncu: Block Limit Registers 2).
  EXPECT_EQ(residentCtas(h200, kernel(32), 256), 8);
  EXPECT_EQ(residentCtas(h200, kernel(94), 256), 2);
  // 122 registers at 512 threads: one CTA (RMSNorm backward, 16384 cols).
  EXPECT_EQ(residentCtas(h200, kernel(122), 512), 1);
  // 128 threads, 32 registers: 16 CTAs.
  EXPECT_EQ(residentCtas(h200, kernel(32), 128), 16);
}

TEST(OccupancyTest, RegistersAreAllocatedInUnitsOfEight) {
  // 81..88 registers take 88 a thread: 2816 a warp, 5 warps a
  // sub-partition, 20 an SM: two 256-thread CTAs; 80 take 3.
  EXPECT_EQ(residentCtas(h200, kernel(81), 256), 2);
  EXPECT_EQ(residentCtas(h200, kernel(80), 256), 3);
  // Each sub-partition holds whole warps: at 144 registers (4608 a warp)
  // three each, 12 an SM, although the whole file would hold 14; so six
  // 64-thread CTAs, not seven.
  EXPECT_EQ(residentCtas(h200, kernel(144), 64), 6);
}

TEST(OccupancyTest, OtherLimitsBind) {
  EXPECT_EQ(residentCtas(h200, kernel(16), 1024), 2);       // threads
  EXPECT_EQ(residentCtas(h200, kernel(16), 32), 32);        // CTAs per SM
  EXPECT_EQ(residentCtas(h200, kernel(16, 100000), 64), 2); // shared memory
  EXPECT_EQ(residentCtas(h200, kernel(16), 0), 0);
}

TEST(OccupancyTest, CapForOneMoreCta) {
  // 94 registers at 256 threads: 80 gives a third CTA.
  EXPECT_EQ(registerCapForOneMoreCta(h200, kernel(94), 256), 80);
  EXPECT_EQ(residentCtas(h200, kernel(80), 256), 3);
  // 85 (the f16 twin): the same 80.
  EXPECT_EQ(registerCapForOneMoreCta(h200, kernel(85), 256), 80);
  // Already at the thread limit: no cap.
  EXPECT_EQ(registerCapForOneMoreCta(h200, kernel(32), 256), 0);
  // 122 at 512 threads needs 64 for a second CTA: nearly half the
  // registers, which would spill, so no cap is tried.
  EXPECT_EQ(registerCapForOneMoreCta(h200, kernel(122), 512), 0);
  // Shared memory binds, not registers: no cap.
  EXPECT_EQ(registerCapForOneMoreCta(h200, kernel(94, 100000), 256), 0);
}

TEST(OccupancyTest, CapIsAMultipleOfEightBelowTheCount) {
  for (int registers = 33; registers <= 255; ++registers)
    for (int threads : {128, 256, 512}) {
      int cap = registerCapForOneMoreCta(h200, kernel(registers), threads);
      if (!cap)
        continue;
      EXPECT_EQ(cap % 8, 0) << registers << " at " << threads;
      EXPECT_LT(cap, registers) << registers << " at " << threads;
      EXPECT_GT(residentCtas(h200, kernel(cap), threads),
                residentCtas(h200, kernel(registers), threads))
          << registers << " at " << threads;
      // The next unit up keeps the CTA count: the cap is the largest.
      EXPECT_EQ(residentCtas(h200, kernel(cap + 8), threads),
                residentCtas(h200, kernel(registers), threads))
          << registers << " at " << threads;
    }
}
} // namespace
