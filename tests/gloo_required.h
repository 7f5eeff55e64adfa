#pragma once
// Tests that need c10d's Gloo backend: CPU ranks (collectives, DDP, measure --device cpu's
// collectives). Built against the PyTorch 2.11 wheel's LibTorch, measure had no Gloo (its
// configure check of ProcessGroupGloo.hpp failed; measure/CMakeLists.txt now prints why): on such
// a 2.x build these tests are skipped, saying why. Against LibTorch 1.x (Debian's, CI's) Gloo is
// always expected: a build without it fails these tests instead of hiding them.
// TRAINSIM_TORCH_MAJOR: LibTorch's major version, from tests/CMakeLists.txt.
#include <gtest/gtest.h>

#if defined(TRAINSIM_HAVE_GLOO) || TRAINSIM_TORCH_MAJOR < 2
#define TRAINSIM_SKIP_WITHOUT_GLOO() static_cast<void>(0)
#else
#define TRAINSIM_SKIP_WITHOUT_GLOO() \
  GTEST_SKIP() << "this build of measure has no c10d Gloo backend (see measure/CMakeLists.txt's configure message)"
#endif
