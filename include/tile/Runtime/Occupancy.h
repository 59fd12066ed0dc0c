//===- Occupancy.h - how many CTAs of a kernel an SM holds ------*- C++ -*-===//
//
// The arithmetic of the CUDA occupancy calculator, for the limits that bind
// Tile's kernels: threads, registers and CTAs per SM, and shared memory.
// Pure functions of numbers the driver reports, so that they are tested
// without a GPU. The launcher uses them to decide where a register cap
// could let one more CTA per SM stay resident (Launcher.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_OCCUPANCY_H
#define TILE_RUNTIME_OCCUPANCY_H

namespace tile::rt {

/// What one SM holds, from the device's attributes (the defaults are an
/// H100's and H200's).
struct SmLimits {
  int threads = 2048;
  int registers = 65536;
  int ctas = 32;
  int sharedBytes = 233472;
  /// Shared memory the driver reserves per CTA.
  int reservedSharedBytes = 1024;
};

/// The figures of one compiled kernel that occupancy depends on.
struct KernelResources {
  int registers = 0;   ///< per thread
  int sharedBytes = 0; ///< static shared memory per CTA
};

/// CTAs of `threadsPerCta` threads that one SM holds at once.
int residentCtas(const SmLimits &sm, const KernelResources &kernel,
                 int threadsPerCta);

/// The largest register count per thread (a multiple of 8, the allocation
/// unit) at which one SM holds at least one more CTA than at
/// `kernel.registers`; 0 where registers are not what limits it (threads,
/// CTAs or shared memory bind first) or where the cap would take away
/// more than a quarter of the registers. Deeper cuts spilled where they
/// were measured (RMSNorm's forward, 94 -> 72: docs/Performance.md); the
/// launcher checks every capped kernel for spills anyway, so the bound
/// only spares the driver a compile that would be thrown away.
int registerCapForOneMoreCta(const SmLimits &sm, const KernelResources &kernel,
                             int threadsPerCta);

} // namespace tile::rt

#endif // TILE_RUNTIME_OCCUPANCY_H
