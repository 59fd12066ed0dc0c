//===- Occupancy.cpp - how many CTAs of a kernel an SM holds -------------===//

#include "tile/Runtime/Occupancy.h"

#include <algorithm>

namespace tile::rt {

namespace {
// Registers are allocated per warp, in units of 256 (8 a thread), from four
// sub-partitions of the register file: a warp's registers all come from
// the one it runs on (the rule of the toolkit's cuda_occupancy.h).
constexpr int kSubPartitions = 4;
constexpr int kRegisterUnit = 8;
constexpr int kMaxRegisters = 255;

int roundUp(int value, int unit) { return (value + unit - 1) / unit * unit; }

int ctasByRegisters(const SmLimits &sm, int registers, int warpsPerCta) {
  int perWarp = roundUp(std::max(registers, 1), kRegisterUnit) * 32;
  int warps = sm.registers / kSubPartitions / perWarp * kSubPartitions;
  return warps / warpsPerCta;
}

int ctasByOtherLimits(const SmLimits &sm, const KernelResources &kernel,
                      int threadsPerCta) {
  int ctas = std::min(sm.threads / threadsPerCta, sm.ctas);
  int shared = kernel.sharedBytes + sm.reservedSharedBytes;
  return std::min(ctas, sm.sharedBytes / shared);
}
} // namespace

int residentCtas(const SmLimits &sm, const KernelResources &kernel,
                 int threadsPerCta) {
  if (threadsPerCta <= 0)
    return 0;
  int warpsPerCta = (threadsPerCta + 31) / 32;
  return std::min(ctasByRegisters(sm, kernel.registers, warpsPerCta),
                  ctasByOtherLimits(sm, kernel, threadsPerCta));
}

int registerCapForOneMoreCta(const SmLimits &sm, const KernelResources &kernel,
                             int threadsPerCta) {
  int now = residentCtas(sm, kernel, threadsPerCta);
  if (now >= ctasByOtherLimits(sm, kernel, threadsPerCta))
    return 0;
  int warpsPerCta = (threadsPerCta + 31) / 32;
  for (int cap = std::min(roundUp(kernel.registers, kRegisterUnit),
                          kMaxRegisters / kRegisterUnit * kRegisterUnit);
       cap >= kRegisterUnit; cap -= kRegisterUnit)
    if (ctasByRegisters(sm, cap, warpsPerCta) > now)
      // A deeper cut is likely to spill (Occupancy.h): not worth a compile.
      return 4 * cap >= 3 * kernel.registers ? cap : 0;
  return 0;
}

} // namespace tile::rt
