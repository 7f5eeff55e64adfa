#pragma once
// `measure torchscript`: profiles a user's TorchScript module into a profile (docs/ANY_MODEL.md).

namespace trainsim::measure {

int torchscript_main(int argc, char** argv);

}  // namespace trainsim::measure
