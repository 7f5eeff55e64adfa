#pragma once
// What a sweep needs from its profile: the check simulate makes before it simulates anything.

#include "format/profile.h"
#include "io/config.h"

namespace trainsim {

// Checks that `profile` was measured in the config's precision and has what a sweep described by
// `config` needs: config.model with >= 1 measured batch and its layers, the device memory capacity
// (OOM boundary), a loader curve, and, when more than one GPU is swept and the config gives no
// `interconnect:` assumption, an all_reduce curve for some rank count >= 2 (other rank counts are
// fitted from it; broadcast and reduce may be derived from it too, so they are not required).
// Throws InputError at config.file:config.profile_line, key "profile", naming config.profile_path
// (another precision: at the `precision:` line and key where the config gives one).
// When the config asks for large-batch predictions (config.large_batch), the profile must also
// hold a baseline training curve with >= 1 epoch for config.model; otherwise InputError at the
// line of the `large_batch:` (or `lr_rule:`) key: "profile P has no baseline training curve for M
// (run measure baseline)".
void require_for_model(const Profile& profile, const SweepConfig& config);

}  // namespace trainsim
