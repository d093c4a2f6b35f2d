// Running parallel_for on the OpenMP runtime that the host process (PyTorch) already has loaded.
#pragma once

namespace autofuse {

/// libgomp's entry point for `#pragma omp parallel`: runs fn(data) on a team of num_threads threads (the caller is
/// thread 0) and returns when all have finished. flags 0 = no proc_bind.
using GompParallelFn = void (*)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);

/// GOMP_parallel of a GNU OpenMP runtime already loaded in this process (PyTorch's libtorch_cpu brings one:
/// torch/lib/libgomp.so.1), found once with dlopen("libgomp.so.1", RTLD_NOLOAD), so this never loads one itself;
/// nullptr when none is loaded, when $AUTOFUSE_THREADS is "pool" (forces the own pool), or in a child process forked
/// after the team was used (libgomp's threads do not survive fork()). Sharing ATen's OpenMP team matters on a machine
/// with few cores: after each ATen call its workers spin for a while (OMP_WAIT_POLICY), and a second pool's workers
/// would then compete with them for the cores (see docs/runtime.md). $AUTOFUSE_THREADS=omp or auto (default) uses
/// the runtime when it is loaded.
GompParallelFn host_gomp_parallel();

/// Marks the host OpenMP runtime as unusable in this process (called in a forked child).
void disable_host_openmp();

}  // namespace autofuse
