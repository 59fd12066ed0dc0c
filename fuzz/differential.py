#!/usr/bin/env python3
"""Differential checks of generated kernels (fuzz/gen_kernels.py).

usage: differential.py --bin DIR --count N [--seed S] [--work DIR]
                       [--device | --device-only] [--kernels FILE...]

For each generated kernel, with the tools in DIR:
  1. the evaluator runs it (tile-run) at a small shape;
  2. its derived backward, under both recompute policies and with
     main_grad, matches finite differences (tile-run --gradient-check) at
     rows 1 and 3, widths 1 and 17;
  3. the compiler accepts what it verified and what it derived: the
     forward and both backwards lower to PTX, the manifest is written
     (tile-opt -tile-differentiate | tile-translate);
  4. with --device (on the GPU machine): the GPU's results, forward and
     backward under both policies, match the evaluator's (tile-run
     --device) at rows 1, 7 and 300 by widths 1, 13, 1000 and 4096.

--device-only runs step 4 alone (the GPU bundle carries tile-run only).
A kernel that fails any check is kept in WORK/failures with the command
that failed; the exit status is 1 if any did. The last line reads
"differential: N kernels, N checks, N failed".
"""

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import threading

GRADIENT_SHAPES = ["--rows=1,3", "--widths=1,17"]
DEVICE_SHAPES = ["--rows=1,7,300", "--widths=1,13,1000,4096"]
TIMEOUT = 120


class Runner:
    def __init__(self, args):
        self.bin = args.bin
        self.work = args.work
        self.checks = 0
        self.failed = 0
        self.lock = threading.Lock()
        self.failures = os.path.join(args.work, "failures")

    def tool(self, name):
        return os.path.join(self.bin, name)

    def check(self, kernel, what, command):
        """Runs `command` (a list, or a shell pipeline string); a failure
        (non-zero exit, signal, timeout) keeps the kernel."""
        with self.lock:
            self.checks += 1
        shell = isinstance(command, str)
        try:
            result = subprocess.run(command, shell=shell,
                                    capture_output=True, text=True,
                                    timeout=TIMEOUT)
            ok = result.returncode == 0
            output = result.stdout[-3000:] + result.stderr[-3000:]
            status = f"exit {result.returncode}"
        except subprocess.TimeoutExpired:
            ok, output, status = False, "", f"timeout after {TIMEOUT} s"
        if ok:
            return True
        with self.lock:
            self.failed += 1
            self.report(kernel, what, command, status, output)
        return False

    def report(self, kernel, what, command, status, output):
        shell = isinstance(command, str)
        os.makedirs(self.failures, exist_ok=True)
        base = os.path.join(self.failures, os.path.basename(kernel))
        shutil.copy(kernel, base)
        printed = command if shell else " ".join(command)
        with open(base + ".log", "a") as log:
            log.write(f"{what}: {status}\n$ {printed}\n{output}\n")
        print(f"FAIL {os.path.basename(kernel)}: {what} ({status})\n"
              f"  $ {printed}\n" +
              "\n".join("  " + line for line in output.splitlines()[-12:]))

    def run_kernel(self, kernel, device, host=True):
        with open(kernel) as f:
            specs = f.readline().removeprefix("// ARGS:").strip()
        if host:
            self.host_checks(kernel, specs)
        if device:
            self.device_checks(kernel, specs)

    def host_checks(self, kernel, specs):
        run = self.tool("tile-run")
        small = specs.replace("M", "7").replace("N", "13")
        if not self.check(kernel, "evaluate",
                          [run, kernel, f"--args={small}"]):
            return
        for extra in (["--policy=recompute"], ["--policy=save-row-stats"],
                      ["--main-grad"]):
            self.check(kernel, "gradient check " + " ".join(extra),
                       [run, kernel, "--gradient-check", f"--args={specs}",
                        *GRADIENT_SHAPES, *extra])
        translate, opt = self.tool("tile-translate"), self.tool("tile-opt")
        self.check(kernel, "manifest",
                   [translate, "--tile-manifest", kernel, "-o", os.devnull])
        for policy in ("recompute", "save-row-stats"):
            self.check(kernel, f"backward to PTX ({policy})",
                       f"'{opt}' '{kernel}' -tile-approximate-shifted-exponentials"
                       f" -tile-differentiate=policy={policy}"
                       f" | '{translate}' --tile-to-ptx -o {os.devnull}")

    def device_checks(self, kernel, specs):
        run = self.tool("tile-run")
        for policy in ("recompute", "save-row-stats"):
            self.check(kernel, f"device ({policy})",
                       [run, kernel, "--device", "--gradient", f"--args={specs}",
                        *DEVICE_SHAPES, f"--policy={policy}", "--seed=3"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True, help="the tools' directory")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", default="differential")
    parser.add_argument("--device", action="store_true",
                        help="also run each kernel on the GPU")
    parser.add_argument("--device-only", action="store_true",
                        help="only run each kernel on the GPU")
    parser.add_argument("--jobs", type=int, default=1,
                        help="kernels checked at once")
    parser.add_argument("--kernels", nargs="*",
                        help="check these files instead of generating")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    kernels = args.kernels
    if not kernels:
        generated = os.path.join(args.work, "kernels")
        shutil.rmtree(generated, ignore_errors=True)
        subprocess.run([sys.executable, os.path.join(here, "gen_kernels.py"),
                        "--count", str(args.count), "--seed", str(args.seed),
                        "--out", generated], check=True)
        kernels = sorted(os.path.join(generated, name)
                         for name in os.listdir(generated))
    # Tools from the fuzz build (scripts/fuzz.sh) run under ASan; its manual
    # poisoning is off for the reason fuzz/FuzzTarget.cpp gives.
    os.environ.setdefault("ASAN_OPTIONS",
                          "allow_user_poisoning=0:detect_leaks=0")
    runner = Runner(args)
    device = args.device or args.device_only
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for future in [pool.submit(runner.run_kernel, kernel, device,
                                   not args.device_only)
                       for kernel in kernels]:
            future.result()
    print(f"differential: {len(kernels)} kernels, {runner.checks} checks, "
          f"{runner.failed} failed")
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())
