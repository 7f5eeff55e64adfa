#pragma once
// Reading, validating and writing the profile (docs/PROFILE.md).

#include <string>

#include "io/profile.h"

namespace trainsim {

// Reads a profile. Throws InputError naming file, line and key on a malformed profile
// (unknown key, wrong type, arrays whose lengths disagree with `batches`, negative times,
// unsupported schema_version). A missing file: InputError with line 0.
Profile load_profile(const std::string& path);

// Serialises to YAML text (deterministic: same struct, same bytes).
std::string profile_to_yaml(const Profile& profile);

// Writes atomically: PATH.tmp.<pid> then rename(2), so a reader never sees a torn file.
void write_profile_atomic(const Profile& profile, const std::string& path);

// Checks that `profile` has what a sweep over `model` needs: the model with >= 1 measured batch,
// a loader curve, and (when ranks > 1 are swept) an all-reduce curve or enough to fit one.
// Throws InputError attributed to config_file:config_line, key "profile".
void require_for_model(const Profile& profile, const std::string& model, int max_gpus,
                       const std::string& config_file, int config_line);

}  // namespace trainsim
